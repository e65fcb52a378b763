//! Each thermostat's [`Reading`], kept until something it was made from changes, so a change is
//! read once whoever asks (the page's polls, MQTT, HomeKit, history, the energy history and the
//! alerts all read the same one), and a poll between changes costs a few comparisons.
//!
//! A reading depends on exactly these ([`Stamp`]), and a kept one is used only while all of
//! them still match: the thermostat's data (by its [`State::device_version`], which changes with
//! every change and is never reused), its owner (whose structure and user buckets the view
//! reads), its availability (which moves with time and with held subscribes), whether its fan
//! timer is running (the one field that depends on the clock), and the outdoor temperatures the
//! weather service last heard (by their generation). What a surface makes of a reading (the
//! control port's `/status` JSON) is kept by the same stamp.
//!
//! Readings are kept for at most [`KEPT`] thermostats, the ones read last: a home has a few,
//! all kept; a fleet of a thousand (the benchmark's) is read afresh when it is looked at again,
//! as each surface did before there was one reading, and its readings cost no memory (one is
//! about 1.5 KB).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;

use super::plan::fan_running_until;
use super::reading::{Outdoor, Reading, read};
use super::view::View;
use crate::presence::Availability;
use crate::state::State;
use crate::zone::Zone;

/// Thermostats whose readings are kept.
pub const KEPT: usize = 64;

/// What a thermostat's reading is made from, as it is now, the clock aside.
#[derive(Clone, Debug, PartialEq)]
pub struct Sources {
    version: u64,
    owner: Option<String>,
    availability: Availability,
    /// [`Outdoor::generation`].
    outdoor: u64,
}

impl Sources {
    /// What `serial`'s reading would be made from now; `None` for a serial never seen.
    pub fn now(
        state: &State,
        serial: &str,
        availability: Availability,
        outdoor: &dyn Outdoor,
    ) -> Option<Sources> {
        // Read first: a change after this makes the reading again next time.
        let outdoor = outdoor.generation();
        let owner = state.accounts(|a| a.owner_of(serial).map(|o| o.user.clone()));
        let version = state.device_version(serial)?;
        Some(Sources {
            version,
            owner,
            availability,
            outdoor,
        })
    }
}

/// What a reading was made from, clock included: whatever was made from that reading is
/// current while [`Stamp::still`] holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Stamp {
    sources: Sources,
    fan_timeout: Option<f64>,
    fan_running: bool,
    /// Until when its schedule's course stands ([`super::course::Course::until_ms`]).
    course_until: Option<i64>,
}

impl Stamp {
    /// Whether a reading made then would be the same now.
    pub fn still(&self, now: &Sources, now_ms: i64) -> bool {
        self.sources == *now
            && self.fan_running == fan_running_until(self.fan_timeout, now_ms)
            && self.course_until.is_none_or(|until| now_ms < until)
    }
}

#[derive(Default)]
pub struct Readings {
    kept: Mutex<Kept>,
    /// Time zones by name, resolved once ([`Zone::resolve`] reads the tz database).
    zones: Mutex<HashMap<String, Arc<Zone>>>,
}

/// Zone names kept resolved; a home has one, a fleet a few.
const ZONES_KEPT: usize = 32;

/// The readings kept, and a count of the reads (which of them was read last).
#[derive(Default)]
struct Kept {
    by_serial: HashMap<String, Made>,
    reads: u64,
}

/// One thermostat's reading and what it was made from.
#[derive(Clone)]
struct Made {
    /// When it was last read (in [`Kept::reads`]).
    read: u64,
    stamp: Stamp,
    reading: Arc<Reading>,
}

impl Kept {
    /// A kept reading, marked as read now.
    fn read(&mut self, serial: &str) -> Option<&Made> {
        self.reads += 1;
        let reads = self.reads;
        let made = self.by_serial.get_mut(serial)?;
        made.read = reads;
        Some(made)
    }

    /// Keeps `made`, letting the reading read longest ago go if that makes more than [`KEPT`].
    fn keep(&mut self, serial: &str, mut made: Made) {
        self.reads += 1;
        made.read = self.reads;
        self.by_serial.insert(serial.to_string(), made);
        if self.by_serial.len() > KEPT {
            let oldest = self
                .by_serial
                .iter()
                .min_by_key(|(_, m)| m.read)
                .map(|(s, _)| s.clone());
            if let Some(oldest) = oldest {
                self.by_serial.remove(&oldest);
            }
        }
    }
}

impl Readings {
    /// A known thermostat's reading now (see [`read`]) and its stamp; `None` for a serial never
    /// seen.
    pub fn get(
        &self,
        state: &State,
        serial: &str,
        availability: Availability,
        now_ms: i64,
        outdoor: &dyn Outdoor,
        zoneinfo: &Path,
    ) -> Option<(Arc<Reading>, Stamp)> {
        let Some(sources) = Sources::now(state, serial, availability, outdoor) else {
            self.kept.lock().by_serial.remove(serial);
            return None;
        };
        if let Some(made) = self.kept.lock().read(serial) {
            if made.stamp.still(&sources, now_ms) {
                return Some((Arc::clone(&made.reading), made.stamp.clone()));
            }
        }
        // Made from the data as it is now: its version may be newer than the one just read,
        // never older, so what is kept below is never taken for older data.
        let owner = sources.owner.as_deref();
        let (version, view) = state.read_device_versioned(serial, |data, version| {
            (version, View::of(serial, data, owner))
        })?;
        let zone = self.zone(
            view.device_field("time_zone").and_then(|v| v.as_str()),
            zoneinfo,
        );
        let reading = Arc::new(read(&view, availability, outdoor, &zone, now_ms));
        let fan = &reading.fan;
        let stamp = Stamp {
            sources: Sources { version, ..sources },
            fan_timeout: fan.timer_timeout.as_f64(),
            fan_running: fan.timer_active,
            course_until: reading.course.as_ref().and_then(|c| c.until_ms),
        };
        let made = Made {
            read: 0,
            stamp: stamp.clone(),
            reading: Arc::clone(&reading),
        };
        self.kept.lock().keep(serial, made);
        Some((reading, stamp))
    }
}

impl Readings {
    /// The zone `name` names (its structure's), resolved once.
    pub fn zone(&self, name: Option<&str>, zoneinfo: &Path) -> Arc<Zone> {
        let Some(name) = name else {
            return Arc::new(Zone::utc());
        };
        if let Some(zone) = self.zones.lock().get(name) {
            return Arc::clone(zone);
        }
        // Read from the tz database with no lock held: a reading of another thermostat never
        // waits on the disk for this one.
        let zone = Arc::new(Zone::resolve(Some(name), zoneinfo));
        let mut zones = self.zones.lock();
        if zones.len() >= ZONES_KEPT {
            zones.clear();
        }
        zones.insert(name.to_string(), Arc::clone(&zone));
        zone
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thermostat::reading::tests::{available, reading};
    use serde_json::json;

    fn made(serial: &str) -> Made {
        let mut r = reading(json!({}), json!({}));
        r.serial = serial.to_string();
        Made {
            read: 0,
            stamp: Stamp {
                sources: Sources {
                    version: 1,
                    owner: None,
                    availability: available(),
                    outdoor: 0,
                },
                fan_timeout: None,
                fan_running: false,
                course_until: None,
            },
            reading: Arc::new(r),
        }
    }

    #[test]
    fn the_readings_read_longest_ago_go_first() {
        let mut kept = Kept::default();
        for i in 0..KEPT {
            kept.keep(&format!("S{i}"), made(&format!("S{i}")));
        }
        // S0 is read again: S1 is now the one read longest ago.
        assert!(kept.read("S0").is_some());
        kept.keep("NEW", made("NEW"));
        assert_eq!(kept.by_serial.len(), KEPT);
        assert!(kept.by_serial.contains_key("S0") && kept.by_serial.contains_key("NEW"));
        assert!(!kept.by_serial.contains_key("S1"));
    }

    #[test]
    fn a_stamp_holds_until_a_source_or_the_fan_timer_moves() {
        let stamp = Stamp {
            fan_timeout: Some(100.0),
            fan_running: true,
            ..made("S").stamp
        };
        let now = stamp.sources.clone();
        assert!(stamp.still(&now, 99_000));
        assert!(!stamp.still(&now, 100_000), "the fan timer ended");
        for moved in [
            Sources {
                version: 2,
                ..now.clone()
            },
            Sources {
                owner: Some("alice".into()),
                ..now.clone()
            },
            Sources {
                availability: Availability {
                    available: false,
                    ..now.availability
                },
                ..now.clone()
            },
            Sources {
                outdoor: 1,
                ..now.clone()
            },
        ] {
            assert!(!stamp.still(&moved, 99_000), "{moved:?}");
        }
    }
}
