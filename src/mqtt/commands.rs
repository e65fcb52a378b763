//! Command topics: what a message on `{P}/{S}/ha/{cmd}/set` or `{P}/{S}/{bucket}/{field}/set`
//! asks for, as the thermostat core's intents. Parsing is pure; the bridge commits the result
//! through the core, so MQTT gets exactly the checks, clamping and mutation path of every other
//! surface. Raw field writes are limited to the fields a control sets: the Python server wrote
//! any field unchecked, which let a typo reach the thermostat. Setpoints are °C, taken as sent
//! (clamped, not rounded) and leave the mode alone, as `/command` does.

use serde_json::Value;

use crate::thermostat::{
    Fan, Intent, MAX_FAN_SECONDS, Mode, ScheduleMode, SetpointMode, Step, settings,
};
use crate::util::{JsonMap, number};

/// Longest "fan on" run the fan-duration number allows, in minutes (the fan timer's 12 h limit).
pub const FAN_MINUTES_MAX: i64 = MAX_FAN_SECONDS / 60;
const FAN_MINUTES_MIN: i64 = 15;

/// A command topic's serial and intent, or why the message is ignored.
pub fn parse(prefix: &str, topic: &str, payload: &[u8]) -> Result<(String, Intent), String> {
    let rest = topic
        .strip_prefix(prefix)
        .and_then(|r| r.strip_prefix('/'))
        .and_then(|r| r.strip_suffix("/set"))
        .ok_or_else(|| format!("{topic} is not a command topic"))?;
    let parts: Vec<&str> = rest.split('/').collect();
    let [serial, kind, name] = parts[..] else {
        return Err(format!("{topic} is not a command topic"));
    };
    let text = std::str::from_utf8(payload)
        .map_err(|_| format!("{topic}: the payload is not UTF-8"))?
        .trim();
    let serial = serial.to_ascii_uppercase();
    let intent = if kind == "ha" {
        home_assistant(name, text)
    } else {
        raw(kind, name, &raw_value(text))
    }
    .map_err(|why| format!("{topic}: {why}"))?;
    Ok((serial, intent))
}

fn target(celsius: f64) -> Intent {
    Intent::Target {
        celsius,
        mode: SetpointMode::Unchanged,
        step: Step::Exact,
    }
}

fn range(low: Option<f64>, high: Option<f64>) -> Intent {
    Intent::Range {
        low,
        high,
        switch_mode: false,
        step: Step::Exact,
    }
}

fn celsius(v: &Value) -> Result<f64, String> {
    number(v).ok_or_else(|| format!("{v} is not a number"))
}

fn mode(v: &Value) -> Result<Intent, String> {
    let asked = v.as_str().ok_or_else(|| format!("{v} is not a mode"))?;
    Mode::parse(asked)
        .map(Intent::Mode)
        .map_err(|r| r.to_string())
}

fn home_assistant(command: &str, text: &str) -> Result<Intent, String> {
    let v = Value::from(text);
    Ok(match command {
        "mode" => mode(&v)?,
        "target_temperature" => target(celsius(&v)?),
        "target_temperature_low" => range(Some(celsius(&v)?), None),
        "target_temperature_high" => range(None, Some(celsius(&v)?)),
        "fan_mode" => match text.to_ascii_lowercase().as_str() {
            "on" => Intent::Fan(Fan::On),
            "auto" | "off" => Intent::Fan(Fan::Auto),
            _ => return Err(format!("unknown fan mode {text:?} (on or auto)")),
        },
        "preset" => match text.to_ascii_lowercase().as_str() {
            // Nest's eco is what its app calls away: manual eco on the whole home.
            "away" | "eco" => Intent::Away(true),
            "home" | "none" => Intent::Away(false),
            _ => return Err(format!("unknown preset {text:?} (home, away or eco)")),
        },
        // Home Assistant's fan run time, in minutes.
        "fan_duration" => {
            let minutes = celsius(&v)?.round() as i64;
            Intent::FanRunTime(minutes.clamp(FAN_MINUTES_MIN, FAN_MINUTES_MAX) * 60)
        }
        other => return Err(format!("unknown Home Assistant command {other:?}")),
    })
}

/// A raw payload: JSON if it parses, else the text itself.
fn raw_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::from(text))
}

fn raw(bucket: &str, field: &str, v: &Value) -> Result<Intent, String> {
    Ok(match (bucket, field) {
        ("shared", "target_temperature") => target(celsius(v)?),
        ("shared", "target_temperature_low") => range(Some(celsius(v)?), None),
        ("shared", "target_temperature_high") => range(None, Some(celsius(v)?)),
        ("shared", "target_temperature_type") => mode(v)?,
        ("shared", "schedule_mode") => Intent::ScheduleMode(
            v.as_str()
                .and_then(ScheduleMode::parse)
                .ok_or_else(|| format!("{v} is not HEAT, COOL or RANGE"))?,
        ),
        ("device" | "shared" | "structure", "away") => {
            Intent::Away(v.as_bool().ok_or("away takes true or false")?)
        }
        ("device", "fan_timer_active") => match v {
            Value::Bool(true) => Intent::Fan(Fan::On),
            Value::Bool(false) => Intent::Fan(Fan::Auto),
            _ => return Err("fan_timer_active takes true or false".into()),
        },
        ("device", "away_temperature_low") => Intent::EcoRange {
            low: Some(celsius(v)?),
            high: None,
        },
        ("device", "away_temperature_high") => Intent::EcoRange {
            low: None,
            high: Some(celsius(v)?),
        },
        ("device", f) if settings::names().any(|n| n == f) => {
            let mut fields = JsonMap::new();
            fields.insert(f.to_string(), v.clone());
            Intent::Settings(settings::validate(&fields).map_err(|r| r.to_string())?)
        }
        _ => {
            return Err(format!(
                "{bucket}.{field} cannot be set over MQTT (see docs/mqtt-home-assistant.md)"
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(topic: &str, payload: &str) -> (String, Intent) {
        parse("nle", topic, payload.as_bytes()).unwrap()
    }

    #[test]
    fn home_assistant_commands_map_to_intents() {
        assert_eq!(
            ok("nle/s1/ha/mode/set", "heat_cool"),
            ("S1".into(), Intent::Mode(Mode::Range))
        );
        assert_eq!(
            ok("nle/S1/ha/target_temperature/set", "21.5").1,
            target(21.5)
        );
        assert_eq!(
            ok("nle/S1/ha/target_temperature_low/set", "18").1,
            range(Some(18.0), None)
        );
        assert_eq!(ok("nle/S1/ha/fan_mode/set", "ON").1, Intent::Fan(Fan::On));
        assert_eq!(ok("nle/S1/ha/preset/set", "eco").1, Intent::Away(true));
        assert_eq!(
            ok("nle/S1/ha/fan_duration/set", "5000").1,
            Intent::FanRunTime(FAN_MINUTES_MAX * 60)
        );
        assert_eq!(
            ok("nle/S1/ha/fan_duration/set", "29.6").1,
            Intent::FanRunTime(30 * 60)
        );
    }

    #[test]
    fn raw_fields_are_limited_to_what_a_control_sets() {
        assert_eq!(
            ok("nle/S1/shared/target_temperature_type/set", "range").1,
            Intent::Mode(Mode::Range)
        );
        assert_eq!(
            ok("nle/S1/shared/target_temperature/set", "22").1,
            target(22.0)
        );
        assert_eq!(
            ok("nle/S1/device/fan_timer_active/set", "true").1,
            Intent::Fan(Fan::On)
        );
        let setting = |field: &str, v: Value| {
            let mut m = JsonMap::new();
            m.insert(field.into(), v);
            Intent::Settings(m)
        };
        assert_eq!(
            ok("nle/S1/device/learning_mode/set", "false").1,
            setting("learning_mode", Value::Bool(false))
        );
        assert_eq!(
            ok("nle/S1/device/temperature_scale/set", "F").1,
            setting("temperature_scale", Value::from("F"))
        );
        for (topic, payload) in [
            ("nle/S1/device/current_temperature/set", "30"),
            ("nle/S1/schedule/days/set", "{}"),
            ("nle/S1/ha/turbo/set", "1"),
            ("nle/S1/ha/target_temperature/set", "warm"),
            ("nle/S1/ha/preset/set", "party"),
            ("nle/S1/device/fan_timer_active/set", "yes"),
            ("nle/S1/device/learning_mode/set", "maybe"),
            ("nle/S1/shared/target_temperature_type/set", "eco"),
            ("nle/S1/shared/set", "1"),
            ("other/S1/ha/mode/set", "heat"),
            ("nle/S1/ha/mode", "heat"),
        ] {
            assert!(parse("nle", topic, payload.as_bytes()).is_err(), "{topic}");
        }
        assert!(parse("nle", "nle/S1/ha/mode/set", &[0xff]).is_err());
    }

    #[test]
    fn a_prefix_may_have_several_levels() {
        assert_eq!(
            parse("home/nest", "home/nest/S1/ha/mode/set", b"off")
                .unwrap()
                .0,
            "S1"
        );
    }
}
