//! Seeded energy history: days written where the server keeps them
//! (`DATA_DIR/energy/SERIAL.days`), in the line format docs/energy.md states, written here by
//! hand rather than by the crate, so a change of format shows up as a failing test; and the
//! energy journal's rows (`DATA_DIR/energy/journal`) read the same way.

use std::path::Path;

const DAY_MS: i64 = 86_400_000;

/// A finished day, `days_ago` UTC days before today (the days of a thermostat with no time
/// zone), with an indoor average of 20.5 °C over 96 samples, 19.0 to 21.5.
#[derive(Clone, Copy, Debug, Default)]
pub struct SeedDay {
    pub days_ago: i64,
    pub heat_s: i64,
    pub cool_s: i64,
    pub fan_s: i64,
    pub target_changes: u32,
}

/// Today's UTC date, as days since 1970-01-01.
pub fn utc_today() -> i64 {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_millis() as i64;
    now_ms.div_euclid(DAY_MS)
}

/// Writes `days` (in the order given) as `serial`'s finished days under `data_dir`.
pub fn seed_days(data_dir: &Path, serial: &str, days: &[SeedDay]) {
    let today = utc_today();
    let text: String = days
        .iter()
        .map(|d| {
            format!(
                "[{},{},{},{},0,0,20.5,96,19.0,21.5,{}]\n",
                today - d.days_ago,
                d.heat_s,
                d.cool_s,
                d.fan_s,
                d.target_changes
            )
        })
        .collect();
    let energy = data_dir.join("energy");
    std::fs::create_dir_all(&energy).expect("the energy directory");
    std::fs::write(energy.join(format!("{serial}.days")), text).expect("the days file");
}

/// The row of `serial` for the local day `date` (days since 1970-01-01) in the energy journal
/// (`DATA_DIR/energy/journal`: lines of `SERIAL ROW`, the last one of a serial and date
/// winning), as written there.
pub fn journal_row(data_dir: &Path, serial: &str, date: i64) -> Option<String> {
    let text = std::fs::read_to_string(data_dir.join("energy").join("journal")).ok()?;
    let prefix = format!("{serial} [{date},");
    text.lines()
        .rfind(|line| line.starts_with(&prefix))
        .map(|line| line[serial.len() + 1..].to_string())
}
