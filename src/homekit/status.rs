//! HAP's status codes, per characteristic, and the one place the thermostat core's errors
//! become them.

use crate::thermostat::{Error, Refusal};

pub const OK: i64 = 0;
/// The thermostat cannot take it now (not claimed, or the change could not be stored).
pub const UNAVAILABLE: i64 = -70402;
pub const READ_ONLY: i64 = -70404;
pub const WRITE_ONLY: i64 = -70405;
pub const NO_NOTIFICATION: i64 = -70406;
pub const OUT_OF_RESOURCES: i64 = -70407;
pub const NOT_FOUND: i64 = -70409;
/// A value the characteristic, or the thermostat core, does not take.
pub const INVALID_VALUE: i64 = -70410;

/// A commit's failure as HAP's status for the characteristic written: the one place the core's
/// errors become this surface's.
pub fn status_of(serial: &str, e: &Error) -> i64 {
    match e {
        // Asking for what is already so is no failure to a controller.
        Error::Refused(Refusal::NothingToChange) => OK,
        Error::Refused(_) | Error::ScheduleChanged(_) => INVALID_VALUE,
        Error::NotFound => NOT_FOUND,
        Error::NotClaimed => UNAVAILABLE,
        Error::Storage(why) => {
            log::warn!("HomeKit: a write to {serial} could not be stored: {why}");
            UNAVAILABLE
        }
    }
}
