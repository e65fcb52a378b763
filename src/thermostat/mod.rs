//! The thermostat core, below every surface: what a person can ask of a thermostat
//! ([`Intent`]), the one planner from an intent and the thermostat's [`View`] to bucket writes
//! ([`plan()`]), its refusals ([`Refusal`]), the one commit through the state's mutation path
//! ([`commit()`]), the status a thermostat is derived to ([`status`]), and its buckets as the
//! interface document lists them ([`document`]).
//!
//! A surface (the device protocol aside) only parses its own dialect into intents and maps
//! refusals to its own wire errors; a new control is one intent and one planner rule here,
//! then a line of parsing per surface.

pub(crate) mod commit;
pub mod document;
pub(crate) mod intent;
pub(crate) mod names;
pub(crate) mod pin;
pub(crate) mod plan;
pub(crate) mod refusal;
pub mod schedule;
pub(crate) mod settings;
pub(crate) mod status;
pub(crate) mod status_cache;
pub(crate) mod view;

pub use commit::{Applied, Committed, admit, commit};
pub use intent::{
    Fan, Intent, Lock, MAX_FAN_SECONDS, MAX_NAME_CHARS, Mode, ScheduleMode, ScheduleRevision,
    SetpointMode, Step,
};
pub use plan::{BucketKind, Write, fan_run_seconds, json_number, plan};
pub use refusal::{Error, MODES, Refusal};
pub use status_cache::StatusCache;
pub use view::View;

use crate::state::State;

/// The `/status` record's `hvac` flags that mean the thermostat is heating, and cooling.
pub const HEATING_FLAGS: [&str; 6] = [
    "heater",
    "heat_x2",
    "heat_x3",
    "aux_heat",
    "alt_heat",
    "emer_heat",
];
pub const COOLING_FLAGS: [&str; 3] = ["ac", "cool_x2", "cool_x3"];

/// A known thermostat's view, under its owner's structure; `None` for a serial never seen.
pub fn view(state: &State, serial: &str) -> Option<View> {
    let owner = state.accounts(|a| a.owner_of(serial).map(|o| o.user.clone()));
    state.read_device(serial, |data| View::of(serial, data, owner.as_deref()))
}
