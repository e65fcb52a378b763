//! What the surfaces read of the energy history without touching a file: each thermostat's
//! live day and its running totals ([`Totals`]), set by the recorder's accrual.

use std::collections::HashMap;
use std::path::PathBuf;

use parking_lot::RwLock;

use super::day::Day;
use super::store;

/// Cumulative runtime of one thermostat by mode, in whole seconds: every day the energy
/// history ever counted, pruned days included (their sum is kept in the days file: see
/// [`store`]), today's live row too. It never decreases, so it serves as a counter (Prometheus'
/// `hearth_thermostat_runtime_seconds_total`, Home Assistant's `total_increasing`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub heat_s: i64,
    pub cool_s: i64,
    pub fan_s: i64,
    pub aux_s: i64,
}

impl Totals {
    /// A day's runtime in whole seconds (as its row says: each day rounded down on its own, so
    /// the total is the sum of the rows and a finished day adds exactly what its row said).
    pub fn of_day(day: &Day) -> Totals {
        Totals {
            heat_s: day.heat_ms / 1000,
            cool_s: day.cool_ms / 1000,
            fan_s: day.fan_ms / 1000,
            aux_s: day.aux_ms / 1000,
        }
    }

    pub fn plus(self, other: Totals) -> Totals {
        Totals {
            heat_s: self.heat_s.saturating_add(other.heat_s),
            cool_s: self.cool_s.saturating_add(other.cool_s),
            fan_s: self.fan_s.saturating_add(other.fan_s),
            aux_s: self.aux_s.saturating_add(other.aux_s),
        }
    }
}

/// One thermostat as the surfaces see it.
#[derive(Clone, Debug)]
struct Entry {
    /// The live day and the zone it is kept in (`None`: not observed since the start).
    today: Option<(String, Day)>,
    /// The runtime of every day before the live one (or of every stored day, without one).
    before: Totals,
}

/// Each thermostat's live day and totals (written by the recorder; a thermostat it has not
/// observed since the start is loaded from its files once, on first use).
pub struct Live {
    dir: PathBuf,
    entries: RwLock<HashMap<String, Entry>>,
}

impl Live {
    /// The live days of the energy history kept in `dir` (`DATA_DIR/energy`).
    pub fn new(dir: PathBuf) -> Live {
        Live {
            dir,
            entries: RwLock::new(HashMap::new()),
        }
    }

    /// The live day of `serial` and the name of the zone it is kept in.
    pub fn get(&self, serial: &str) -> Option<(String, Day)> {
        self.entries.read().get(serial)?.today.clone()
    }

    /// The running totals of `serial`: zero for a thermostat without history, `None` only when
    /// its stored history cannot be read (logged). Reads no file once known.
    pub fn totals(&self, serial: &str) -> Option<Totals> {
        if let Some(e) = self.entries.read().get(serial) {
            return Some(e.total());
        }
        let before = match store::read_totals(&self.dir, serial) {
            Ok(t) => t,
            Err(e) => {
                log::warn!("energy history of {serial}: {e}");
                return None;
            }
        };
        // The recorder may have started this thermostat's meter meanwhile: its word wins.
        let mut entries = self.entries.write();
        let entry = entries.entry(serial.to_string()).or_insert(Entry {
            today: None,
            before,
        });
        Some(entry.total())
    }

    /// The recorder's word: the live day, its zone and the totals of the days before it.
    pub(super) fn set(&self, serial: &str, zone: &str, day: &Day, before: Totals) {
        self.entries.write().insert(
            serial.to_string(),
            Entry {
                today: Some((zone.to_string(), day.clone())),
                before,
            },
        );
    }
}

impl Entry {
    fn total(&self) -> Totals {
        match &self.today {
            Some((_, day)) => self.before.plus(Totals::of_day(day)),
            None => self.before,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(date: i64, heat_s: i64, fan_ms: i64) -> Day {
        Day {
            heat_ms: heat_s * 1000,
            fan_ms,
            ..Day::new(date)
        }
    }

    /// Loaded from the files once; from then on the recorder's word, with no file read.
    #[test]
    fn totals_are_loaded_once_then_kept_by_the_recorder() {
        let dir = std::env::temp_dir().join(format!("hearth-live-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        store::append_day(&dir, "S", &day(1, 10, 0)).unwrap();
        store::write_today(&dir, "S", &day(2, 5, 0)).unwrap();
        let live = Live::new(dir.clone());
        assert_eq!(live.totals("S").map(|t| t.heat_s), Some(15));
        assert_eq!(live.totals("none"), Some(Totals::default()));
        assert!(live.get("S").is_none());
        // Gone from disk: still known.
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(live.totals("S").map(|t| t.heat_s), Some(15));
        // The recorder's day adds to the days before it, in whole seconds per day.
        let before = Totals {
            heat_s: 15,
            ..Totals::default()
        };
        live.set("S", "UTC", &day(3, 7, 1_999), before);
        let t = live.totals("S").unwrap();
        assert_eq!((t.heat_s, t.fan_s), (22, 1));
        assert_eq!(
            live.get("S").map(|(zone, d)| (zone, d.date)),
            Some(("UTC".into(), 3))
        );
    }
}
