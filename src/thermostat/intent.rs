//! What a person can ask of a thermostat, whichever surface they ask through. Each surface
//! parses its own dialect (the control API's `/command` names, the hosted API's endpoints,
//! MQTT topics) into one of these; [`super::plan()`] turns it into bucket writes.
//!
//! Where two surfaces document different behaviour for the same wish (the hosted API rounds
//! setpoints to 0.5 °C and sets the mode with a setpoint; the control API keeps the Python
//! server's exact values and leaves the mode alone), the intent says which, so the rule itself
//! is written once.

use super::course::Local;
use super::refusal::Refusal;
use crate::util::JsonMap;

/// Longest fan run a client may ask for (the hosted API's documented limit, 12 h).
pub const MAX_FAN_SECONDS: i64 = 43_200;

#[derive(Clone, Debug, PartialEq)]
pub enum Intent {
    /// One setpoint, in °C.
    Target {
        celsius: f64,
        mode: SetpointMode,
        step: Step,
    },
    /// The heat-cool setpoints, in °C; a side left out keeps its value. `switch_mode`: also
    /// switch the thermostat to heat-cool.
    Range {
        low: Option<f64>,
        high: Option<f64>,
        switch_mode: bool,
        step: Step,
    },
    Mode(Mode),
    Fan(Fan),
    /// How long "fan on" runs, in seconds (1 to [`MAX_FAN_SECONDS`]); a fan running now is
    /// restarted for the new length.
    FanRunTime(i64),
    /// Away (manual eco on the whole home) on or off.
    Away(bool),
    /// The eco (away) temperatures, in °C; a side left out keeps its value.
    EcoRange {
        low: Option<f64>,
        high: Option<f64>,
    },
    /// A whole schedule, already checked by [`super::schedule::validate`], replacing the stored
    /// one if it is still the one `only_over` names.
    Schedule {
        schedule: JsonMap,
        only_over: ScheduleRevision,
    },
    ScheduleMode(ScheduleMode),
    /// Device settings, already checked by [`super::settings::validate`].
    Settings(JsonMap),
    Lock(Lock),
    /// The name every surface shows (see [`super::names`]), already checked by
    /// [`name`]; empty clears it.
    Name(String),
    /// Empty the dialog its screen shows ("confirm pairing"), if it shows one.
    DismissDialog,
    /// End a manual hold: the setpoints the schedule has in force at this time on the
    /// structure's clock ([`super::course`]).
    ResumeSchedule(Local),
}

/// Longest name, in characters: a card title and a Home Assistant entity name stay readable.
pub const MAX_NAME_CHARS: usize = 60;

/// A name as a person typed it: trimmed, at most [`MAX_NAME_CHARS`] characters, no control
/// characters. Empty is allowed: it clears the name.
pub fn name(asked: &str) -> Result<String, Refusal> {
    let name = asked.trim();
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(Refusal::Invalid(format!(
            "A name is at most {MAX_NAME_CHARS} characters"
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(Refusal::Invalid(
            "A name cannot contain control characters (line breaks, tabs)".into(),
        ));
    }
    Ok(name.to_string())
}

/// What a single setpoint does to the mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetpointMode {
    /// Leave the mode alone: the setpoint counts when the mode uses it.
    Unchanged,
    /// Keep heat or cool, whichever the thermostat is in (refused in any other mode).
    Current,
    /// Switch to heat (or cool) with it.
    Heat,
    Cool,
}

/// How a setpoint is fitted to the thermostat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// As sent, clamped to the safety bounds.
    Exact,
    /// Rounded to the nearest 0.5 °C (what the thermostat shows) within the bounds.
    Half,
}

/// A mode the thermostat runs in, as the firmware names it in `target_temperature_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Off,
    Heat,
    Cool,
    /// Heat-cool.
    Range,
    Emergency,
}

impl Mode {
    /// A mode by any of the names clients use (any case): `heat-cool`, `heat_cool`, `range`
    /// and `auto` all mean heat-cool. `eco` is not a mode.
    pub fn parse(asked: &str) -> Result<Mode, Refusal> {
        Ok(match asked.trim().to_ascii_lowercase().as_str() {
            "off" => Mode::Off,
            "heat" => Mode::Heat,
            "cool" => Mode::Cool,
            "heat-cool" | "heat_cool" | "range" | "auto" => Mode::Range,
            "emergency" => Mode::Emergency,
            "eco" => return Err(Refusal::EcoIsNotAMode),
            _ => return Err(Refusal::UnknownMode(asked.to_string())),
        })
    }

    /// The firmware's name.
    pub fn nest(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Heat => "heat",
            Mode::Cool => "cool",
            Mode::Range => "range",
            Mode::Emergency => "emergency",
        }
    }
}

/// What a client asks of the fan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fan {
    /// Run for the thermostat's own timer length.
    On,
    /// Stop the timer (the fan follows the HVAC again).
    Auto,
    /// Run for this many seconds (1 to [`MAX_FAN_SECONDS`]).
    For(i64),
}

/// Which stored schedule a new one may replace: an editor says which one it was shown, so a
/// change it has not seen is never overwritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScheduleRevision {
    /// Whatever is stored.
    Any,
    /// Only when there is none yet.
    None,
    /// Only the schedule of this revision.
    Is(i64),
}

/// What the schedule's setpoints control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScheduleMode {
    Heat,
    Cool,
    Range,
}

impl ScheduleMode {
    /// `HEAT`, `COOL` or `RANGE`, any case.
    pub fn parse(asked: &str) -> Option<ScheduleMode> {
        match asked.to_ascii_uppercase().as_str() {
            "HEAT" => Some(ScheduleMode::Heat),
            "COOL" => Some(ScheduleMode::Cool),
            "RANGE" => Some(ScheduleMode::Range),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ScheduleMode::Heat => "HEAT",
            ScheduleMode::Cool => "COOL",
            ScheduleMode::Range => "RANGE",
        }
    }
}

/// The temperature lock: the dial stays within a range until the PIN is entered.
#[derive(Clone, Debug, PartialEq)]
pub enum Lock {
    Off,
    On {
        /// Standard Base64 of the 20-byte SHA-1 of the 4-digit PIN followed by the serial
        /// (what the firmware compares; [`super::pin::hash`] makes it from a PIN); the PIN
        /// itself is never stored.
        pin_hash: String,
        /// °C.
        low: f64,
        high: f64,
    },
}
