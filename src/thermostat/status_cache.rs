//! The status record as JSON, kept per thermostat until something it was made from changes.
//!
//! `GET /status` is what dashboards and integrations poll, often every few seconds, while a
//! thermostat's state changes every few minutes. Building the record (a view over the stored
//! buckets, the record, its JSON) was half of what a `/status` cost the server; a poll between
//! changes now costs a few comparisons and a copy.
//!
//! A record depends on exactly these, and a kept one is used only while all of them still
//! match: the thermostat's data (by its [`State::device_version`], which changes with every
//! change and is never reused), its owner (whose structure and user buckets the view reads),
//! its availability (which moves with time and with held subscribes), and whether its fan
//! timer is running (the one field that depends on the clock), and the outdoor temperatures the
//! weather service last heard (by their generation).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::plan::{fan_running_until, fan_timeout};
use super::status::{Outdoor, Status, outdoor_temperature, record};
use super::view::View;
use crate::presence::Availability;
use crate::state::State;

#[derive(Default)]
pub struct StatusCache {
    kept: Mutex<HashMap<String, Kept>>,
}

/// One thermostat's record and what it was made from.
struct Kept {
    version: u64,
    owner: Option<String>,
    availability: Availability,
    fan_timeout: Option<f64>,
    fan_running: bool,
    /// [`Outdoor::generation`] when it was made.
    outdoor: u64,
    json: Arc<[u8]>,
}

impl Kept {
    fn still(
        &self,
        (version, outdoor_generation): (u64, u64),
        owner: &Option<String>,
        a: Availability,
        now_ms: i64,
    ) -> bool {
        self.version == version
            && self.outdoor == outdoor_generation
            && self.owner == *owner
            && self.availability == a
            && self.fan_running == fan_running_until(self.fan_timeout, now_ms)
    }
}

impl StatusCache {
    /// A known thermostat's status record (see [`super::status::record`]) as JSON, the same
    /// bytes `serde_json` writes for it; `None` for a serial never seen.
    pub fn json(
        &self,
        state: &State,
        serial: &str,
        availability: Availability,
        now_ms: i64,
        outdoor: &dyn Outdoor,
    ) -> Option<Arc<[u8]>> {
        // Read first: a change after this makes the record again next time.
        let outdoor_generation = outdoor.generation();
        let owner = state.accounts(|a| a.owner_of(serial).map(|o| o.user.clone()));
        let Some(version) = state.device_version(serial) else {
            self.kept.lock().remove(serial);
            return None;
        };
        if let Some(kept) = self.kept.lock().get(serial) {
            if kept.still((version, outdoor_generation), &owner, availability, now_ms) {
                return Some(Arc::clone(&kept.json));
            }
        }
        // Made from the data as it is now: its version may be newer than the one just read,
        // never older, so what is kept below is never taken for older data.
        let (version, view) = state.read_device_versioned(serial, |data, version| {
            (version, View::of(serial, data, owner.as_deref()))
        })?;
        let status = Status {
            outdoor_temperature: outdoor_temperature(&view, outdoor),
            ..record(&view, availability, now_ms)
        };
        let json: Arc<[u8]> = serde_json::to_vec(&status).ok()?.into();
        let kept = Kept {
            version,
            owner,
            availability,
            fan_timeout: fan_timeout(&view),
            fan_running: status.fan_timer_active,
            outdoor: outdoor_generation,
            json: Arc::clone(&json),
        };
        self.kept.lock().insert(serial.to_string(), kept);
        Some(json)
    }
}
