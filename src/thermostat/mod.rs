//! What a thermostat accepts, shared by the control API and the hosted API: its capabilities
//! and safety bounds ([`rules`]), modes, fan timers, away, and schedules ([`schedule`]). Each
//! API parses its own request shapes and words its own usage errors; the rules live here once.

pub mod names;
pub mod rules;
pub mod schedule;

use serde_json::Value;

use crate::util::JsonMap;
use rules::View;

/// A value the thermostat would not accept. The text says what was expected; every API
/// answers it as a 400 in its own error shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal(pub String);

impl Refusal {
    pub fn new(text: impl Into<String>) -> Refusal {
        Refusal(text.into())
    }
}

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

/// The modes a client may ask for, as listed in error messages.
pub const MODES: &str = "off, heat, cool, heat-cool, heat_cool, range, auto, emergency";

/// The Nest `target_temperature_type` for a requested mode (any case), if the thermostat can
/// do it. `heat-cool`, `heat_cool`, `range` and `auto` all mean `range`; `eco` is not a mode.
pub fn nest_mode(requested: &str, view: &View<'_>) -> Result<&'static str, Refusal> {
    let nest = match requested.trim().to_ascii_lowercase().as_str() {
        "off" => "off",
        "heat" => "heat",
        "cool" => "cool",
        "heat-cool" | "heat_cool" | "range" | "auto" => "range",
        "emergency" => "emergency",
        "eco" => {
            return Err(Refusal::new(
                "Eco is not a mode: use set_away (true turns eco on, false turns it off)",
            ));
        }
        _ => {
            return Err(Refusal(format!(
                "Unknown mode '{requested}'. Valid modes: {MODES}"
            )));
        }
    };
    can_run(nest, view)?;
    Ok(nest)
}

/// Whether the thermostat's equipment can run a Nest mode (`heat`, `cool`, `range`,
/// `emergency`, `off`). `can_heat` and `can_cool` default to true, `has_emer_heat` to false.
pub fn can_run(nest_mode: &str, view: &View<'_>) -> Result<(), Refusal> {
    let missing = match nest_mode {
        "heat" | "range" if !view.flag("can_heat", true) => {
            Some("Device cannot heat (can_heat=false)")
        }
        "cool" | "range" if !view.flag("can_cool", true) => {
            Some("Device cannot cool (can_cool=false)")
        }
        "emergency" if !view.flag("has_emer_heat", false) => {
            Some("Device does not have emergency heat (has_emer_heat=false)")
        }
        _ => None,
    };
    missing.map_or(Ok(()), |why| Err(Refusal::new(why)))
}

/// Longest fan run a client may ask for (the hosted API's documented limit, 12 h).
pub const MAX_FAN_SECONDS: i64 = 43_200;

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

/// `device.fan_timer_timeout` (Unix seconds; 0 stops the timer) for a fan request. The
/// thermostat must have a fan. `On` runs for [`fan_run_seconds`].
pub fn fan_timer_timeout(fan: Fan, view: &View<'_>, now_ms: i64) -> Result<i64, Refusal> {
    if !view.flag("has_fan", false) {
        return Err(Refusal::new("Device does not have a fan (has_fan=false)"));
    }
    let seconds = match fan {
        Fan::Auto => return Ok(0),
        Fan::For(s) => s.clamp(1, MAX_FAN_SECONDS),
        Fan::On => fan_run_seconds(view),
    };
    Ok(now_ms / 1000 + seconds)
}

/// How long "fan on" runs, in seconds: the thermostat's `fan_timer_duration`, else the Python
/// server's `fan_timer_duration_minutes`, else one hour; at most [`MAX_FAN_SECONDS`].
pub fn fan_run_seconds(view: &View<'_>) -> i64 {
    view.device_field("fan_timer_duration")
        .and_then(Value::as_i64)
        .filter(|s| *s > 0)
        .or_else(|| {
            view.device_field("fan_timer_duration_minutes")
                .and_then(Value::as_i64)
                .filter(|m| *m > 0)
                .map(|m| m.saturating_mul(60))
        })
        .unwrap_or(3600)
        .min(MAX_FAN_SECONDS)
}

/// The structure-bucket fields that turn away (manual eco) on or off. The firmware honours
/// manual eco (schedule preconditioning reverts auto-eco); `away` itself is not used. The
/// timestamp is in seconds and must be close to the thermostat's clock.
pub fn away_values(away: bool, now_ms: i64) -> JsonMap {
    let mut values = JsonMap::new();
    values.insert("manual_eco_all".into(), Value::Bool(away));
    values.insert("manual_eco_timestamp".into(), Value::from(now_ms / 1000));
    values
}

/// A JSON number for `x`, exact for values that came in as decimals (21.5 stays 21.5).
pub fn json_number(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn view_of(shared: &JsonMap) -> View<'_> {
        View {
            shared: Some(shared),
            device: None,
        }
    }

    #[test]
    fn modes_map_to_nest_and_respect_capabilities() {
        let none = JsonMap::new();
        for (asked, nest) in [("heat-cool", "range"), ("AUTO", "range"), ("Off", "off")] {
            assert_eq!(nest_mode(asked, &view_of(&none)), Ok(nest));
        }
        assert!(
            nest_mode("eco", &view_of(&none))
                .unwrap_err()
                .0
                .contains("set_away")
        );
        let no_cool = json!({"can_cool": false}).as_object().cloned().unwrap();
        assert_eq!(
            nest_mode("range", &view_of(&no_cool)),
            Err(Refusal::new("Device cannot cool (can_cool=false)"))
        );
        assert_eq!(nest_mode("heat", &view_of(&no_cool)), Ok("heat"));
    }

    #[test]
    fn fan_timer_needs_a_fan() {
        let fan = json!({"has_fan": true}).as_object().cloned().unwrap();
        let now = 1_000_000;
        assert_eq!(
            fan_timer_timeout(Fan::For(900), &view_of(&fan), now),
            Ok(1900)
        );
        assert_eq!(fan_timer_timeout(Fan::Auto, &view_of(&fan), now), Ok(0));
        assert_eq!(fan_timer_timeout(Fan::On, &view_of(&fan), now), Ok(4600));
        assert!(fan_timer_timeout(Fan::On, &view_of(&JsonMap::new()), now).is_err());
    }
}
