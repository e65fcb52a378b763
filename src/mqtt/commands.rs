//! Command topics: what a message on `{P}/{S}/ha/{cmd}/set` or `{P}/{S}/{bucket}/{field}/set`
//! asks for, as `/command` commands. Parsing is pure; the bridge runs the result through
//! [`crate::control::command::execute`], so MQTT gets exactly `/command`'s checks, clamping and
//! mutation path. Raw field writes are limited to the fields a command can set: the Python server
//! wrote any field unchecked, which let a typo reach the thermostat.

use serde_json::{Value, json};

use crate::control::command::Command;
use crate::control::input::number;
use crate::control::settings;

/// Longest "fan on" run the fan-duration number allows, in minutes (the fan timer's 12 h limit).
pub const FAN_MINUTES_MAX: i64 = crate::thermostat::MAX_FAN_SECONDS / 60;
const FAN_MINUTES_MIN: i64 = 15;

/// What one message asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// One `/command` command.
    Run(Command, Value),
    /// Home Assistant's fan run time, in minutes: stored as the thermostat's
    /// `fan_timer_duration`, and a fan already running is restarted for the new length.
    FanDuration(i64),
}

/// A command topic's serial and request, or why the message is ignored.
pub fn parse(prefix: &str, topic: &str, payload: &[u8]) -> Result<(String, Request), String> {
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
    let request = if kind == "ha" {
        home_assistant(name, text)
    } else {
        raw(kind, name, text)
    }
    .map_err(|why| format!("{topic}: {why}"))?;
    Ok((serial, request))
}

fn home_assistant(command: &str, text: &str) -> Result<Request, String> {
    let number = || number(&Value::from(text)).ok_or_else(|| format!("{text:?} is not a number"));
    Ok(match command {
        "mode" => Request::Run(Command::SetMode, Value::from(text)),
        "target_temperature" => Request::Run(Command::SetTemperature, json!(number()?)),
        "target_temperature_low" => {
            Request::Run(Command::SetTemperature, json!({"low": number()?}))
        }
        "target_temperature_high" => {
            Request::Run(Command::SetTemperature, json!({"high": number()?}))
        }
        "fan_mode" => Request::Run(Command::SetFan, Value::from(text.to_ascii_lowercase())),
        "preset" => match text.to_ascii_lowercase().as_str() {
            // Nest's eco is what its app calls away: manual eco on the whole home.
            "away" | "eco" => Request::Run(Command::SetAway, Value::Bool(true)),
            "home" | "none" => Request::Run(Command::SetAway, Value::Bool(false)),
            _ => return Err(format!("unknown preset {text:?} (home, away or eco)")),
        },
        "fan_duration" => {
            let minutes = number()?.round() as i64;
            Request::FanDuration(minutes.clamp(FAN_MINUTES_MIN, FAN_MINUTES_MAX))
        }
        other => return Err(format!("unknown Home Assistant command {other:?}")),
    })
}

/// A raw payload: JSON if it parses, else the text itself.
fn raw_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::from(text))
}

fn raw(bucket: &str, field: &str, text: &str) -> Result<Request, String> {
    let v = raw_value(text);
    let run = |c, v| Ok(Request::Run(c, v));
    match (bucket, field) {
        ("shared", "target_temperature") => run(Command::SetTemperature, v),
        ("shared", "target_temperature_low") => run(Command::SetTemperature, json!({"low": v})),
        ("shared", "target_temperature_high") => run(Command::SetTemperature, json!({"high": v})),
        ("shared", "target_temperature_type") => run(Command::SetMode, v),
        ("shared", "schedule_mode") => run(Command::SetScheduleMode, v),
        ("device" | "shared" | "structure", "away") => run(Command::SetAway, v),
        ("device", "fan_timer_active") => match v {
            Value::Bool(on) => run(Command::SetFan, Value::from(if on { "on" } else { "auto" })),
            _ => Err("fan_timer_active takes true or false".into()),
        },
        ("device", "away_temperature_low") => run(Command::SetEcoTemperatures, json!({"low": v})),
        ("device", "away_temperature_high") => run(Command::SetEcoTemperatures, json!({"high": v})),
        ("device", f) if settings::names().any(|n| n == f) => {
            run(Command::SetDeviceSetting, json!({ f: v }))
        }
        _ => Err(format!(
            "{bucket}.{field} cannot be set over MQTT (see the README's command topics)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(topic: &str, payload: &str) -> (String, Request) {
        parse("nle", topic, payload.as_bytes()).unwrap()
    }

    #[test]
    fn home_assistant_commands_map_to_control_commands() {
        assert_eq!(
            ok("nle/s1/ha/mode/set", "heat_cool"),
            (
                "S1".into(),
                Request::Run(Command::SetMode, json!("heat_cool"))
            )
        );
        assert_eq!(
            ok("nle/S1/ha/target_temperature/set", "21.5").1,
            Request::Run(Command::SetTemperature, json!(21.5))
        );
        assert_eq!(
            ok("nle/S1/ha/target_temperature_low/set", "18").1,
            Request::Run(Command::SetTemperature, json!({"low": 18.0}))
        );
        assert_eq!(
            ok("nle/S1/ha/fan_mode/set", "ON").1,
            Request::Run(Command::SetFan, json!("on"))
        );
        assert_eq!(
            ok("nle/S1/ha/preset/set", "eco").1,
            Request::Run(Command::SetAway, json!(true))
        );
        assert_eq!(
            ok("nle/S1/ha/fan_duration/set", "5000").1,
            Request::FanDuration(FAN_MINUTES_MAX)
        );
        assert_eq!(
            ok("nle/S1/ha/fan_duration/set", "29.6").1,
            Request::FanDuration(30)
        );
    }

    #[test]
    fn raw_fields_are_limited_to_what_a_command_sets() {
        assert_eq!(
            ok("nle/S1/shared/target_temperature_type/set", "range").1,
            Request::Run(Command::SetMode, json!("range"))
        );
        assert_eq!(
            ok("nle/S1/shared/target_temperature/set", "22").1,
            Request::Run(Command::SetTemperature, json!(22))
        );
        assert_eq!(
            ok("nle/S1/device/fan_timer_active/set", "true").1,
            Request::Run(Command::SetFan, json!("on"))
        );
        assert_eq!(
            ok("nle/S1/device/learning_mode/set", "false").1,
            Request::Run(Command::SetDeviceSetting, json!({"learning_mode": false}))
        );
        assert_eq!(
            ok("nle/S1/device/temperature_scale/set", "F").1,
            Request::Run(Command::SetDeviceSetting, json!({"temperature_scale": "F"}))
        );
        for (topic, payload) in [
            ("nle/S1/device/current_temperature/set", "30"),
            ("nle/S1/schedule/days/set", "{}"),
            ("nle/S1/ha/turbo/set", "1"),
            ("nle/S1/ha/target_temperature/set", "warm"),
            ("nle/S1/ha/preset/set", "party"),
            ("nle/S1/device/fan_timer_active/set", "yes"),
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
