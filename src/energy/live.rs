//! What the surfaces read of the energy history without touching a file: each thermostat's
//! live day and its running totals ([`Totals`]), set by the recorder's accrual; and the
//! [`Store`] the history is kept in, which the recorder writes through.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::PathBuf;

use crossbeam_channel::{Receiver, Sender, TrySendError};
use parking_lot::{Mutex, RwLock};

use super::day::Day;
use super::store::Store;
use super::zone::Named;

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
    today: Option<(Named, Day)>,
    /// Days the live day has left behind that are not written yet (usually none: they are
    /// written at the next minute's write at the latest).
    finished: Vec<Day>,
    /// Today's row as last written (`None`: none since the start).
    written: Option<Day>,
    /// The running totals as stored: what a restart reads back, so a kill -9 (which loses the
    /// live day's last minute) never shows a counter going down.
    total: Totals,
}

/// Each thermostat's live day and totals (written by the recorder; a thermostat it has not
/// observed since the start is loaded from its files once, on first use).
pub struct Live {
    store: Store,
    /// Boxed, as the recorder's meters: a map of 1,000 has 2,048 slots.
    entries: RwLock<HashMap<String, Box<Entry>>>,
    /// Told the serial whenever what is stored of it changes (at most once a minute while
    /// something runs, and when a run starts or stops).
    watchers: Mutex<Vec<Sender<String>>>,
}

/// How far a watcher may fall behind before it misses a serial (its next write tells again).
const WATCH_BUFFER: usize = 256;

impl Live {
    /// The live days of the energy history kept in `dir` (`DATA_DIR/energy`).
    pub fn new(dir: PathBuf) -> Live {
        Live {
            store: Store::new(dir),
            entries: RwLock::new(HashMap::new()),
            watchers: Mutex::new(Vec::new()),
        }
    }

    /// The serials whose stored history changes from now on (the counters built on it, such as
    /// MQTT's runtime sensors, publish then and only then).
    pub fn watch(&self) -> Receiver<String> {
        let (tx, rx) = crossbeam_channel::bounded(WATCH_BUFFER);
        self.watchers.lock().push(tx);
        rx
    }

    /// Where the energy history is kept.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The live day of `serial` and the zone it is kept in.
    pub fn get(&self, serial: &str) -> Option<(Named, Day)> {
        self.entries.read().get(serial)?.today.clone()
    }

    /// Every day of `serial` by date: the stored ones, those finished and not yet written, and
    /// the live one; and the zone the live day is kept in (`None`: not observed since the
    /// start).
    ///
    /// What the recorder has told is read before the store: a day it finishes is shown among
    /// the unwritten ones until its write, so it is in one or the other; and a live day the
    /// store has since seen finished (it holds a later date) is not shown over the stored row.
    pub fn days(&self, serial: &str) -> io::Result<(Option<Named>, BTreeMap<i64, Day>)> {
        let told = self
            .entries
            .read()
            .get(serial)
            .map(|e| (e.today.clone(), e.finished.clone()));
        let mut days = self.store.read_stored(serial)?.all_days();
        let last_stored = days.keys().next_back().copied();
        let Some((today, finished)) = told else {
            return Ok((None, days));
        };
        for day in finished {
            days.insert(day.date, day);
        }
        let Some((zone, today)) = today else {
            return Ok((None, days));
        };
        if last_stored.is_none_or(|last| today.date >= last) {
            days.insert(today.date, today);
        }
        Ok((Some(zone), days))
    }

    /// Today's row of `serial` as stored (as last written, at most a minute behind the live
    /// one; empty before its first write): what a counter of today's runtime shows, since a
    /// restart reads back this and not the live one.
    pub fn written_today(&self, serial: &str) -> Option<Day> {
        self.entries.read().get(serial)?.written.clone()
    }

    /// The running totals of `serial`: zero for a thermostat without history, `None` only when
    /// its stored history cannot be read (logged). Reads no file once known.
    pub fn totals(&self, serial: &str) -> Option<Totals> {
        if let Some(e) = self.entries.read().get(serial) {
            return Some(e.total);
        }
        let total = match self.store.read_stored(serial) {
            Ok(stored) => stored.totals(),
            Err(e) => {
                log::warn!("energy history of {serial}: {e}");
                return None;
            }
        };
        // The recorder may have started this thermostat's meter meanwhile: its word wins.
        let mut entries = self.entries.write();
        let entry = entries.entry(serial.to_string()).or_insert(Box::new(Entry {
            today: None,
            finished: Vec::new(),
            written: None,
            total,
        }));
        Some(entry.total)
    }

    /// The recorder's word: the live day and its zone, the days it finished that are not
    /// written yet, today's row as written and the totals as stored.
    pub(super) fn set(
        &self,
        serial: &str,
        zone: &Named,
        (day, finished): (&Day, &[Day]),
        written: &Day,
        total: Totals,
    ) {
        // Updated in place: this runs on every observation of every thermostat.
        let stored_changed = {
            let mut entries = self.entries.write();
            match entries.get_mut(serial) {
                Some(e) => {
                    let changed = e.total != total || e.written.as_ref() != Some(written);
                    match &mut e.today {
                        Some((z, d)) => {
                            if z != zone {
                                z.clone_from(zone);
                            }
                            d.clone_from(day);
                        }
                        None => e.today = Some((zone.clone(), day.clone())),
                    }
                    if e.finished != finished {
                        e.finished = finished.to_vec();
                    }
                    if changed {
                        e.written = Some(written.clone());
                        e.total = total;
                    }
                    changed
                }
                None => {
                    entries.insert(
                        serial.to_string(),
                        Box::new(Entry {
                            today: Some((zone.clone(), day.clone())),
                            finished: finished.to_vec(),
                            written: Some(written.clone()),
                            total,
                        }),
                    );
                    true
                }
            }
        };
        if stored_changed {
            self.watchers
                .lock()
                .retain(|w| match w.try_send(serial.to_string()) {
                    Ok(()) | Err(TrySendError::Full(_)) => true,
                    Err(TrySendError::Disconnected(_)) => false,
                });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc() -> Named {
        crate::energy::zone::Zone::utc().named
    }

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
        crate::energy::store::append_days(&dir, S, &[day(1, 10, 0)]).unwrap();
        Store::new(dir.clone())
            .write(&[(S, &day(2, 5, 0))])
            .unwrap();
        let live = Live::new(dir.clone());
        assert_eq!(live.totals(S).map(|t| t.heat_s), Some(15));
        assert_eq!(live.totals("none"), Some(Totals::default()));
        assert!(live.get(S).is_none());
        // Gone from disk: still known.
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(live.totals(S).map(|t| t.heat_s), Some(15));
        // The recorder's word: the live day for the API, the stored totals and row for the
        // counters (the live day runs ahead of them by up to a minute).
        let stored = Totals {
            heat_s: 22,
            fan_s: 1,
            ..Totals::default()
        };
        live.set(
            S,
            &utc(),
            (&day(3, 9, 1_999), &[]),
            &day(3, 7, 1_999),
            stored,
        );
        let t = live.totals(S).unwrap();
        assert_eq!((t.heat_s, t.fan_s), (22, 1));
        assert_eq!(
            live.get(S).map(|(zone, d)| (zone, d.date, d.heat_ms)),
            Some((utc(), 3, 9_000))
        );
        assert_eq!(live.written_today(S).map(|d| d.heat_ms), Some(7_000));
    }

    const S: &str = "02AA01AC0000LIVE";

    /// The rows a surface shows while a day ends: the finished day, as the recorder told it,
    /// before it is written; once written, the store's row; never the store's row of the day
    /// as it was before it ended next to the new live day, and never a live day the store has
    /// seen finished over the stored row.
    #[test]
    fn a_day_that_ends_is_shown_whole_before_and_after_its_write() {
        let dir = std::env::temp_dir().join(format!("hearth-live-end-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let live = Live::new(dir.clone());
        let shown = |live: &Live| -> Vec<(i64, i64)> {
            let (_, days) = live.days(S).unwrap();
            days.values().map(|d| (d.date, d.heat_ms / 1000)).collect()
        };
        // Day 1 as written at 23:30 (nothing yet), live.
        live.store().write(&[(S, &day(1, 0, 0))]).unwrap();
        live.set(
            S,
            &utc(),
            (&day(1, 0, 0), &[]),
            &day(1, 0, 0),
            Totals::default(),
        );
        assert_eq!(shown(&live), [(1, 0)]);
        // Past midnight: day 1 ended with 1,800 s, day 2 live; not written yet.
        let ended = [day(1, 1800, 0)];
        let t = Totals::default();
        live.set(S, &utc(), (&day(2, 1800, 0), &ended), &day(1, 0, 0), t);
        assert_eq!(shown(&live), [(1, 1800), (2, 1800)]);
        // Written: the store has both, and the recorder's word follows.
        live.store()
            .write(&[(S, &ended[0]), (S, &day(2, 1800, 0))])
            .unwrap();
        assert_eq!(shown(&live), [(1, 1800), (2, 1800)]);
        // A reader that saw the recorder's word before the day ended, the store after the
        // write: the stored rows.
        let stale = Live::new(dir.clone());
        stale.set(S, &utc(), (&day(1, 0, 0), &[]), &day(1, 0, 0), t);
        assert_eq!(shown(&stale), [(1, 1800), (2, 1800)]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
