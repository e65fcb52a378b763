//! Each thermostat's [`Reading`], kept until something it was made from changes, so a change is
//! read once whoever asks (the page's polls, MQTT, HomeKit, history, the energy history and the
//! alerts all read the same one), and a poll between changes costs a few comparisons.
//!
//! A reading depends on exactly these, and a kept one is used only while all of them still
//! match: the thermostat's data (by its [`State::device_version`], which changes with every
//! change and is never reused), its owner (whose structure and user buckets the view reads),
//! its availability (which moves with time and with held subscribes), whether its fan timer is
//! running (the one field that depends on the clock), and the outdoor temperatures the weather
//! service last heard (by their generation).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::plan::fan_running_until;
use super::reading::{Outdoor, Reading, read};
use super::view::View;
use crate::presence::Availability;
use crate::state::State;

#[derive(Default)]
pub struct Readings {
    kept: Mutex<HashMap<String, Kept>>,
}

/// One thermostat's reading and what it was made from.
struct Kept {
    version: u64,
    owner: Option<String>,
    /// [`Outdoor::generation`] when it was made.
    outdoor: u64,
    reading: Arc<Reading>,
}

impl Kept {
    fn still(
        &self,
        (version, outdoor_generation): (u64, u64),
        owner: &Option<String>,
        a: Availability,
        now_ms: i64,
    ) -> bool {
        let fan = &self.reading.fan;
        self.version == version
            && self.outdoor == outdoor_generation
            && self.owner == *owner
            && self.reading.availability == a
            && fan.timer_active == fan_running_until(fan.timer_timeout.as_f64(), now_ms)
    }
}

impl Readings {
    /// A known thermostat's reading now (see [`read`]); `None` for a serial never seen.
    pub fn get(
        &self,
        state: &State,
        serial: &str,
        availability: Availability,
        now_ms: i64,
        outdoor: &dyn Outdoor,
    ) -> Option<Arc<Reading>> {
        // Read first: a change after this makes the reading again next time.
        let outdoor_generation = outdoor.generation();
        let owner = state.accounts(|a| a.owner_of(serial).map(|o| o.user.clone()));
        let Some(version) = state.device_version(serial) else {
            self.kept.lock().remove(serial);
            return None;
        };
        if let Some(kept) = self.kept.lock().get(serial) {
            if kept.still((version, outdoor_generation), &owner, availability, now_ms) {
                return Some(Arc::clone(&kept.reading));
            }
        }
        // Made from the data as it is now: its version may be newer than the one just read,
        // never older, so what is kept below is never taken for older data.
        let (version, view) = state.read_device_versioned(serial, |data, version| {
            (version, View::of(serial, data, owner.as_deref()))
        })?;
        let reading = Arc::new(read(&view, availability, outdoor, now_ms));
        let kept = Kept {
            version,
            owner,
            outdoor: outdoor_generation,
            reading: Arc::clone(&reading),
        };
        self.kept.lock().insert(serial.to_string(), kept);
        Some(reading)
    }
}
