//! Why the core turns an intent down, and why a commit fails. Each surface maps these to its
//! own wire errors in its one error module; the texts here are the words every surface shares,
//! and a surface that names its own fields (the hosted API's `mode`, `temp_min`) words the
//! variants that mention them itself.

use std::fmt;

use crate::state::TooLarge;
use crate::store::StoreError;

/// An intent the thermostat would not accept; every surface answers it as a 400.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A mode name nobody uses.
    UnknownMode(String),
    /// `eco` asked for as a mode: on a Nest, eco is away.
    EcoIsNotAMode,
    CannotHeat,
    CannotCool,
    NoEmergencyHeat,
    NoFan,
    /// A heat-cool or eco range whose low end is not below its high end (after clamping).
    LowNotBelowHigh,
    /// A temperature lock whose low end is not below its high end (after clamping).
    LockLowNotBelowHigh,
    /// One setpoint asked for with the mode left to the thermostat, which is not in heat or
    /// cool mode (its mode, if it has one).
    NotHeatingOrCooling(Option<String>),
    /// A lock PIN that is not exactly 4 digits (the PIN itself is never repeated back).
    PinFormat,
    /// The intent would write nothing.
    NothingToChange,
    /// A value the rules refuse (a schedule, a device setting); the text says what was expected.
    Invalid(String),
    /// More than a thermostat may hold (see [`crate::state::limits`]); surfaces answer 413.
    TooLarge(TooLarge),
}

/// The modes a client may ask for, as listed in error messages.
pub const MODES: &str = "off, heat, cool, heat-cool, heat_cool, range, auto, emergency";

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::UnknownMode(asked) => {
                write!(f, "Unknown mode '{asked}'. Valid modes: {MODES}")
            }
            Refusal::EcoIsNotAMode => f.write_str(
                "Eco is not a mode: use set_away (true turns eco on, false turns it off)",
            ),
            Refusal::CannotHeat => f.write_str("Device cannot heat (can_heat=false)"),
            Refusal::CannotCool => f.write_str("Device cannot cool (can_cool=false)"),
            Refusal::NoEmergencyHeat => {
                f.write_str("Device does not have emergency heat (has_emer_heat=false)")
            }
            Refusal::NoFan => f.write_str("Device does not have a fan (has_fan=false)"),
            Refusal::LowNotBelowHigh => {
                f.write_str("Low temperature must be less than high temperature")
            }
            Refusal::LockLowNotBelowHigh => f.write_str(
                "The lock's low temperature must be less than its high temperature (after \
                 clamping to the thermostat's range)",
            ),
            Refusal::NotHeatingOrCooling(mode) => write!(
                f,
                "A single setpoint needs heat or cool mode: the thermostat is in {} mode",
                mode.as_deref().unwrap_or("no")
            ),
            Refusal::PinFormat => f.write_str("The PIN must be exactly 4 digits (0000 to 9999)"),
            Refusal::NothingToChange => f.write_str("No values to update"),
            Refusal::Invalid(text) => f.write_str(text),
            Refusal::TooLarge(t) => write!(f, "{t}"),
        }
    }
}

/// Why a commit did not happen. Nothing was written.
#[derive(Debug)]
pub enum Error {
    /// No thermostat with this serial (or it was deleted meanwhile).
    NotFound,
    /// Pairing is required and nobody has claimed the thermostat: it stores nothing it sends,
    /// so nothing is sent to it either.
    NotClaimed,
    /// A schedule sent to replace one revision of the stored schedule, which has changed since
    /// (its revision now, or `None` if it has none).
    ScheduleChanged(Option<i64>),
    Refused(Refusal),
    /// The change could not be made durable.
    Storage(StoreError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotFound => f.write_str("Device not found"),
            Error::NotClaimed => {
                f.write_str("the thermostat is not claimed yet (pairing is required)")
            }
            Error::ScheduleChanged(_) => f.write_str(
                "The schedule changed since it was read: load it again, or send the edit for its \
                 new revision",
            ),
            Error::Refused(r) => write!(f, "{r}"),
            Error::Storage(e) => write!(f, "{e}"),
        }
    }
}

impl From<Refusal> for Error {
    fn from(r: Refusal) -> Self {
        Error::Refused(r)
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        Error::Storage(e)
    }
}
