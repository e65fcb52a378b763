//! The thermostat core, below every surface: what a person can ask of a thermostat
//! ([`Intent`]), the one planner from an intent and the thermostat's [`View`] to bucket writes
//! ([`plan()`]), its refusals ([`Refusal`]), the one commit through the state's mutation path
//! ([`commit()`]), the one reading every surface reads a thermostat through ([`Reading`], kept
//! per thermostat by [`Readings`]), and its buckets as the interface document lists them
//! ([`document`]); where its schedule stands now ([`course`]) and whether it took the latest
//! change ([`taken`]).
//!
//! A surface (the device protocol aside) only parses its own dialect into intents and maps
//! refusals to its own wire errors; a new control is one intent and one planner rule here,
//! then a line of parsing per surface.

pub(crate) mod commit;
pub(crate) mod course;
pub mod document;
pub(crate) mod intent;
pub(crate) mod names;
pub(crate) mod pin;
pub(crate) mod plan;
pub(crate) mod reading;
pub(crate) mod readings;
pub(crate) mod refusal;
pub mod schedule;
pub(crate) mod settings;
pub(crate) mod taken;
pub(crate) mod view;

/// A reading's availability (what `crate::presence` tells).
pub use crate::presence::Availability;
pub use commit::{Applied, Committed, admit, commit, commit_from};
pub use intent::{
    Fan, Intent, Lock, MAX_FAN_SECONDS, MAX_NAME_CHARS, Mode, ScheduleMode, ScheduleRevision,
    SetpointMode, Step,
};
pub use plan::{BucketKind, Write, fan_run_seconds, json_number, plan};
pub use reading::{NoWeather, Reading, Reported, read};
pub use readings::Readings;
pub use refusal::{Error, MODES, Refusal};
pub use taken::{Change, Taken};
pub use view::View;

use crate::state::State;

/// A known thermostat's view, under its owner's structure; `None` for a serial never seen.
pub fn view(state: &State, serial: &str) -> Option<View> {
    let owner = state.accounts(|a| a.owner_of(serial).map(|o| o.user.clone()));
    state.read_device(serial, |data| View::of(serial, data, owner.as_deref()))
}
