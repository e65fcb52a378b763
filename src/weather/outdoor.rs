//! The outdoor temperature of each place (`94304,US`), as the last weather answer for it gave
//! it: what `/status` shows as `outdoor_temperature` and what the energy history averages.
//!
//! A reading counts only while it is fresh (younger than [`Readings::fresh_for`], at least an
//! hour), so a server whose weather service went quiet shows `null` rather than an afternoon's
//! temperature at night, and the energy rows' outdoor average is never fed a stale value.
//! Readings are kept durably (`<data dir>/weather/outdoor.json`, replaced whole: written aside,
//! fsynced, renamed, directory fsynced), so after a restart `/status` shows the last one at once
//! while it is still fresh, without waiting for a thermostat to ask for weather again. The file
//! is a cache: one that cannot be read is logged and started afresh.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Map, Value};

/// Places remembered at most (a home has one or two).
const MAX_PLACES: usize = 256;
/// A reading is shown for at least this long after it was fetched.
pub const FRESH_AT_LEAST: Duration = Duration::from_secs(3600);
const FILE: &str = "outdoor.json";

#[derive(Clone, Copy, Debug, PartialEq)]
struct Reading {
    celsius: f64,
    /// When it was fetched (ms, by the server's clock).
    at_ms: i64,
}

pub struct Readings {
    by_place: Mutex<HashMap<String, Reading>>,
    /// Bumped whenever a reading's value changes (see [`Readings::generation`]).
    changes: AtomicU64,
    /// Held while the file is replaced, so writes land in the order the readings changed.
    writing: Mutex<()>,
    /// The directory of the file; `None` keeps readings in memory only.
    dir: Option<PathBuf>,
    fresh_ms: i64,
}

impl Readings {
    /// The readings kept in `dir`, each shown for `fresh_for` (at least [`FRESH_AT_LEAST`]).
    pub fn load(dir: Option<PathBuf>, fresh_for: Duration) -> Readings {
        let by_place = dir.as_ref().map_or_else(HashMap::new, |dir| {
            let path = dir.join(FILE);
            match fs::read(&path) {
                Ok(bytes) => parse(&bytes).unwrap_or_else(|| {
                    log::warn!(
                        "weather: {} unreadable; outdoor readings start afresh",
                        path.display()
                    );
                    HashMap::new()
                }),
                Err(e) if e.kind() == io::ErrorKind::NotFound => HashMap::new(),
                Err(e) => {
                    log::warn!("weather: cannot read {} ({e})", path.display());
                    HashMap::new()
                }
            }
        });
        let fresh = fresh_for.max(FRESH_AT_LEAST);
        Readings {
            by_place: Mutex::new(by_place),
            changes: AtomicU64::new(0),
            writing: Mutex::new(()),
            dir,
            fresh_ms: i64::try_from(fresh.as_millis()).unwrap_or(i64::MAX),
        }
    }

    /// How long a reading is shown after it was fetched.
    pub fn fresh_for(&self) -> Duration {
        Duration::from_millis(u64::try_from(self.fresh_ms).unwrap_or(0))
    }

    /// Keeps these readings (place key, °C) fetched at `now_ms`, durably.
    pub fn note(&self, readings: &[(String, f64)], now_ms: i64) {
        if readings.is_empty() {
            return;
        }
        let _writing = self.writing.lock();
        let snapshot = {
            let mut by_place = self.by_place.lock();
            for (place, celsius) in readings {
                if by_place.len() >= MAX_PLACES && !by_place.contains_key(place) {
                    continue;
                }
                let new = Reading {
                    celsius: *celsius,
                    at_ms: now_ms,
                };
                let old = by_place.insert(place.clone(), new);
                // A stale reading made fresh again is a change too, even at the same value
                // (counting stale ones alone could miss it while another goes stale).
                let shown = old.filter(|o| self.fresh(*o, now_ms)).map(|o| o.celsius);
                if shown != Some(*celsius) {
                    self.changes.fetch_add(1, Ordering::Relaxed);
                }
            }
            by_place.clone()
        };
        if let Some(dir) = &self.dir {
            if let Err(e) = write(dir, &snapshot) {
                log::warn!("weather: cannot keep the outdoor readings: {e}");
            }
        }
    }

    /// °C at `place` (its key), if the reading is fresh at `now_ms`. A reading from the future
    /// (the clock stepped back) is not.
    pub fn celsius(&self, place: &str, now_ms: i64) -> Option<f64> {
        let r = *self.by_place.lock().get(place)?;
        self.fresh(r, now_ms).then_some(r.celsius)
    }

    /// A number that changes whenever any place's shown temperature does: its value, or its
    /// reading going stale (so a kept status record made with an older one is made again).
    pub fn generation(&self, now_ms: i64) -> u64 {
        let by_place = self.by_place.lock();
        let stale = by_place
            .values()
            .filter(|r| !self.fresh(**r, now_ms))
            .count() as u64;
        // Fewer than 2^16 places, so distinct pairs give distinct numbers.
        (self.changes.load(Ordering::Relaxed) << 16) | stale
    }

    fn fresh(&self, r: Reading, now_ms: i64) -> bool {
        (0..self.fresh_ms).contains(&(now_ms - r.at_ms))
    }
}

/// The file's readings: `{"94304,US": {"celsius": 10.6, "at_ms": 1766163600000}}`. (Read and
/// written through `Value`, whose code the binary has already, rather than a derived one.)
fn parse(bytes: &[u8]) -> Option<HashMap<String, Reading>> {
    let Ok(Value::Object(places)) = serde_json::from_slice(bytes) else {
        return None;
    };
    let reading = |v: &Value| {
        Some(Reading {
            celsius: v.get("celsius")?.as_f64()?,
            at_ms: v.get("at_ms")?.as_i64()?,
        })
    };
    places
        .iter()
        .map(|(place, v)| Some((place.clone(), reading(v)?)))
        .collect()
}

fn to_json(readings: &HashMap<String, Reading>) -> Vec<u8> {
    let places: Map<String, Value> = readings
        .iter()
        .map(|(place, r)| {
            let mut fields = Map::new();
            fields.insert("celsius".into(), r.celsius.into());
            fields.insert("at_ms".into(), r.at_ms.into());
            (place.clone(), Value::Object(fields))
        })
        .collect();
    Value::Object(places).to_string().into_bytes()
}

/// Replaces the file whole: a crash leaves the old one or the new one.
fn write(dir: &Path, readings: &HashMap<String, Reading>) -> io::Result<()> {
    crate::util::durable::replace(dir, FILE, &to_json(readings))
}

/// `current.temp_c` of each place in an answer keyed by queries (`{"94304,US": {...}}`, as
/// `WEATHER_URL` answers), by place key.
pub fn in_answer(body: &[u8]) -> Vec<(String, f64)> {
    let Ok(Value::Object(places)) = serde_json::from_slice(body) else {
        return Vec::new();
    };
    places
        .iter()
        .filter_map(|(query, answer)| {
            let place = super::open_meteo::Place::parse(query)?;
            Some((place.key(), current_celsius(answer)?))
        })
        .collect()
}

/// `current.temp_c` of one place's answer.
pub fn current_celsius(answer: &Value) -> Option<f64> {
    answer.pointer("/current/temp_c")?.as_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("hearth-outdoor-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_reading_is_shown_while_fresh_and_kept_across_a_restart() {
        let dir = temp_dir("fresh");
        let hour = 3_600_000;
        let r = Readings::load(Some(dir.clone()), Duration::from_secs(600));
        assert_eq!(r.fresh_for(), FRESH_AT_LEAST);
        let g0 = r.generation(1000);
        r.note(&[("94304,US".into(), 10.6)], 1000);
        assert_ne!(r.generation(1000), g0);
        assert_eq!(r.celsius("94304,US", 1000), Some(10.6));
        assert_eq!(r.celsius("94304,US", 999), None, "from the future");
        assert_eq!(r.celsius("10001,US", 1000), None);

        let again = Readings::load(Some(dir.clone()), Duration::from_secs(600));
        assert_eq!(again.celsius("94304,US", 1000 + hour - 1), Some(10.6));
        let fresh = again.generation(1000 + hour - 1);
        assert_eq!(again.celsius("94304,US", 1000 + hour), None, "stale");
        let stale = again.generation(1000 + hour);
        assert_ne!(stale, fresh, "going stale is a change");
        let _ = fs::remove_dir_all(&dir);

        // One place made fresh again (same value) while another goes stale: still a change.
        let r = Readings::load(None, Duration::ZERO);
        r.note(&[("A,US".into(), 1.0)], 0);
        r.note(&[("B,US".into(), 2.0)], 1000);
        let one_stale = r.generation(hour + 500);
        r.note(&[("A,US".into(), 1.0)], hour + 500);
        assert_eq!(r.celsius("A,US", hour + 1000), Some(1.0));
        assert_eq!(r.celsius("B,US", hour + 1000), None);
        assert_ne!(r.generation(hour + 1000), one_stale);
    }

    #[test]
    fn an_unreadable_file_starts_afresh() {
        let dir = temp_dir("torn");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(FILE), b"{\"94304,US\":{\"cel").unwrap();
        let r = Readings::load(Some(dir.clone()), Duration::ZERO);
        assert_eq!(r.celsius("94304,US", 0), None);
        r.note(&[("94304,US".into(), -3.5)], 0);
        let again = Readings::load(Some(dir.clone()), Duration::ZERO);
        assert_eq!(again.celsius("94304,US", 1), Some(-3.5));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn readings_are_found_in_an_upstream_answer_by_place() {
        let body = br#"{"94304,us":{"current":{"temp_c":9.5}},"x/y":{"current":{"temp_c":1}},
            "10001,US":{"current":{}}}"#;
        assert_eq!(in_answer(body), vec![("94304,US".to_string(), 9.5)]);
        assert!(in_answer(b"[]").is_empty());
    }
}
