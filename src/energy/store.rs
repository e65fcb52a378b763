//! A thermostat's energy history on disk, in `DATA_DIR/energy/`:
//! - `SERIAL.days`: finished days, one [`Day::to_line`] a line, appended (and fsynced) when a
//!   day ends: about 55 bytes a day.
//! - `SERIAL.today`: the live day's line, replaced whole (written aside, then renamed) at most
//!   once a minute while it changes, so a kill -9 loses at most the last minute.
//!
//! A day can be in both (a crash between the append and the replacement): the `days` line wins.
//! A torn or damaged line is skipped.
//!
//! Once `ENERGY_KEEP_DAYS` has pruned days, the days file begins with one more line, a JSON
//! object: `{"pruned_through":DATE,"heat_s":..,"cool_s":..,"fan_s":..,"aux_s":..}`, the runtime
//! of every day pruned so far (those up to DATE), so the running [`Totals`] never go down. It
//! is written in the same rename as the pruning, so a crash leaves the days or their sum, never
//! both or neither. A reader that knows only day lines skips it as a line it cannot read.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::Totals;
use super::day::Day;
use crate::store::files;

/// The runtime of the pruned days: those up to `through`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pruned {
    pub through: i64,
    pub totals: Totals,
}

impl Pruned {
    fn to_line(self) -> String {
        let t = self.totals;
        json!({"pruned_through": self.through, "heat_s": t.heat_s, "cool_s": t.cool_s,
               "fan_s": t.fan_s, "aux_s": t.aux_s})
        .to_string()
    }

    fn from_line(line: &[u8]) -> Option<Pruned> {
        let v: Value = serde_json::from_slice(line).ok()?;
        let int = |k: &str| v.get(k)?.as_i64().filter(|n| *n >= 0);
        Some(Pruned {
            through: v.get("pruned_through")?.as_i64()?,
            totals: Totals {
                heat_s: int("heat_s")?,
                cool_s: int("cool_s")?,
                fan_s: int("fan_s")?,
                aux_s: int("aux_s")?,
            },
        })
    }
}

/// Everything stored of one thermostat.
#[derive(Debug, Default)]
pub struct Stored {
    /// The finished days by date (after `pruned.through`).
    pub days: BTreeMap<i64, Day>,
    pub pruned: Option<Pruned>,
    /// The live day's last flush, unless its date is among `days` (which wins).
    pub today: Option<Day>,
}

impl Stored {
    /// The runtime of the finished and pruned days (not `today`).
    pub fn finished_totals(&self) -> Totals {
        let pruned = self.pruned.map(|p| p.totals).unwrap_or_default();
        self.days
            .values()
            .map(Totals::of_day)
            .fold(pruned, Totals::plus)
    }

    /// The last date a finished or pruned day has.
    pub fn last_finished(&self) -> Option<i64> {
        let pruned = self.pruned.map(|p| p.through);
        self.days.keys().next_back().copied().max(pruned)
    }
}

/// Everything stored of `serial`: finished days, the pruned days' sum and the live day's
/// last flush.
pub fn read_stored(dir: &Path, serial: &str) -> io::Result<Stored> {
    let mut stored = Stored::default();
    match fs::File::open(days_path(dir, serial)) {
        Ok(file) => {
            for line in BufReader::new(file).split(b'\n') {
                let line = line?;
                if let Some(day) = Day::from_line(&line) {
                    stored.days.insert(day.date, day);
                } else if let Some(p) = Pruned::from_line(&line) {
                    stored.pruned = Some(p);
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    if let Some(p) = stored.pruned {
        // Days the sum holds are not counted twice.
        stored.days.retain(|date, _| *date > p.through);
    }
    stored.today = read_today(dir, serial)?.filter(|t| {
        !stored.days.contains_key(&t.date) && stored.pruned.is_none_or(|p| t.date > p.through)
    });
    Ok(stored)
}

/// The running totals of `serial` as stored (every day, the last flush of the live one too).
pub fn read_totals(dir: &Path, serial: &str) -> io::Result<Totals> {
    let stored = read_stored(dir, serial)?;
    let today = stored
        .today
        .as_ref()
        .map(Totals::of_day)
        .unwrap_or_default();
    Ok(stored.finished_totals().plus(today))
}

fn days_path(dir: &Path, serial: &str) -> PathBuf {
    dir.join(format!("{serial}.days"))
}

fn today_path(dir: &Path, serial: &str) -> PathBuf {
    dir.join(format!("{serial}.today"))
}

/// Every stored day of `serial` by date: the finished days, and the live one's last flush.
pub fn read(dir: &Path, serial: &str) -> io::Result<BTreeMap<i64, Day>> {
    let stored = read_stored(dir, serial)?;
    let mut days = stored.days;
    if let Some(today) = stored.today {
        days.insert(today.date, today);
    }
    Ok(days)
}

/// The live day's last flush.
pub fn read_today(dir: &Path, serial: &str) -> io::Result<Option<Day>> {
    match fs::read(today_path(dir, serial)) {
        Ok(bytes) => Ok(Day::from_line(bytes.trim_ascii())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Appends a finished day, durably (once a day per thermostat: the fsync is cheap).
pub fn append_day(dir: &Path, serial: &str, day: &Day) -> io::Result<()> {
    let path = days_path(dir, serial);
    let mut file = files::open_append_in(dir, &path)?;
    // A torn last line (a crash mid-append) is ended first, so this line stands alone.
    let len = file.metadata()?.len();
    let mut line = Vec::with_capacity(64);
    if len > 0 && !ends_with_newline(&path)? {
        line.push(b'\n');
    }
    line.extend_from_slice(day.to_line().as_bytes());
    line.push(b'\n');
    file.write_all(&line)?;
    file.sync_data()?;
    // A new file is only durable once its directory entry is.
    if len == 0 {
        files::sync_dir(dir)?;
    }
    Ok(())
}

fn ends_with_newline(path: &Path) -> io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = fs::File::open(path)?;
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

/// Replaces the live day's line whole.
pub fn write_today(dir: &Path, serial: &str, day: &Day) -> io::Result<()> {
    let path = today_path(dir, serial);
    let aside = dir.join(format!("{serial}.today.new"));
    let write = || -> io::Result<()> {
        files::remove_if_present(&aside)?;
        let mut file = files::create_new(&aside)?;
        file.write_all(day.to_line().as_bytes())?;
        // On disk before it replaces the last flush, so a power cut leaves one or the other.
        file.sync_data()?;
        fs::rename(&aside, &path)?;
        // The rename itself on disk too, so a power cut cannot bring back an older row than
        // the running totals have already shown.
        files::sync_dir(dir)
    };
    match write() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            files::create_private_dir(dir)?;
            write()
        }
        other => other,
    }
}

/// Keeps only the finished days from `first` on (`ENERGY_KEEP_DAYS`), and the runtime of the
/// days it drops added to the pruned days' sum: rewritten aside, then renamed, so a crash
/// leaves the old file or the new one.
pub fn prune(dir: &Path, serial: &str, first: i64) -> io::Result<()> {
    let stored = read_stored(dir, serial)?;
    if stored.days.keys().next().is_none_or(|d| *d >= first) {
        return Ok(());
    }
    let mut pruned = stored.pruned.unwrap_or_default();
    let mut kept = Vec::new();
    for day in stored.days.values() {
        if day.date < first {
            pruned.totals = pruned.totals.plus(Totals::of_day(day));
            pruned.through = pruned.through.max(day.date);
        } else {
            kept.push(day.to_line());
        }
    }
    // Never below `first - 1`, so days older than it that arrive later are still dropped.
    pruned.through = pruned.through.max(first - 1);
    let mut lines = vec![pruned.to_line()];
    lines.extend(kept);
    let lines: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
    replace_lines(dir, serial, &lines)
}

/// Replaces a thermostat's finished days with `days` (ascending) at once: how `hearth demo`
/// writes the year of history it shows.
pub fn replace_days(dir: &Path, serial: &str, days: &[Day]) -> io::Result<()> {
    files::create_private_dir(dir)?;
    let lines: Vec<String> = days.iter().map(Day::to_line).collect();
    let lines: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
    replace_lines(dir, serial, &lines)
}

/// Writes the days file aside, then renames it over the old one: a crash leaves one or the
/// other.
fn replace_lines(dir: &Path, serial: &str, lines: &[&[u8]]) -> io::Result<()> {
    let aside = dir.join(format!("{serial}.days.new"));
    files::remove_if_present(&aside)?;
    let mut file = files::create_new(&aside)?;
    for line in lines {
        file.write_all(line)?;
        file.write_all(b"\n")?;
    }
    file.sync_data()?;
    fs::rename(&aside, days_path(dir, serial))?;
    files::sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("hearth-energy-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn day(date: i64, heat_s: i64) -> Day {
        Day {
            heat_ms: heat_s * 1000,
            ..Day::new(date)
        }
    }

    #[test]
    fn days_and_today_are_read_back_and_days_win() {
        let dir = temp_dir("read");
        assert!(read(&dir, "S").unwrap().is_empty());
        append_day(&dir, "S", &day(1, 10)).unwrap();
        write_today(&dir, "S", &day(1, 5)).unwrap();
        assert_eq!(read(&dir, "S").unwrap()[&1].heat_ms, 10_000);
        write_today(&dir, "S", &day(2, 7)).unwrap();
        let all = read(&dir, "S").unwrap();
        assert_eq!(all.keys().copied().collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(all[&2].heat_ms, 7_000);
    }

    #[test]
    fn a_torn_line_is_skipped_and_ended() {
        let dir = temp_dir("torn");
        fs::write(
            days_path(&dir, "S"),
            b"[1,1,0,0,0,0,null,0,null,null,0]\n[2,3,",
        )
        .unwrap();
        append_day(&dir, "S", &day(3, 9)).unwrap();
        let all = read(&dir, "S").unwrap();
        assert_eq!(all.keys().copied().collect::<Vec<_>>(), vec![1, 3]);
    }

    #[test]
    fn pruning_keeps_the_recent_days() {
        let dir = temp_dir("prune");
        for d in 1..=5 {
            append_day(&dir, "S", &day(d, d)).unwrap();
        }
        prune(&dir, "S", 4).unwrap();
        let all = read(&dir, "S").unwrap();
        assert_eq!(all.keys().copied().collect::<Vec<_>>(), vec![4, 5]);
    }

    /// The pruned days' runtime stays in the totals, through a second pruning too, and a day
    /// the sum already holds is not counted twice.
    #[test]
    fn pruning_keeps_the_pruned_days_sum() {
        let dir = temp_dir("prune-sum");
        for d in 1..=5 {
            append_day(&dir, "S", &day(d, d)).unwrap();
        }
        write_today(&dir, "S", &day(6, 100)).unwrap();
        let before = read_totals(&dir, "S").unwrap();
        assert_eq!(before.heat_s, 115);
        prune(&dir, "S", 3).unwrap();
        assert_eq!(read_totals(&dir, "S").unwrap(), before);
        prune(&dir, "S", 5).unwrap();
        assert_eq!(read_totals(&dir, "S").unwrap(), before);
        let stored = read_stored(&dir, "S").unwrap();
        assert_eq!(
            stored.pruned,
            Some(Pruned {
                through: 4,
                totals: Totals {
                    heat_s: 10,
                    ..Totals::default()
                }
            })
        );
        assert_eq!(stored.last_finished(), Some(5));
        // A day line the sum holds (the crash of an older version, say) is not counted again.
        append_day(&dir, "S", &day(2, 1000)).unwrap();
        assert_eq!(read_totals(&dir, "S").unwrap(), before);
        assert_eq!(
            read(&dir, "S").unwrap().keys().copied().collect::<Vec<_>>(),
            vec![5, 6]
        );
    }
}
