//! `POST /command {"serial","command","value"}`: every command a client can send, checked
//! against the thermostat's own capabilities and bounds, then written through the one mutation
//! path as a server-side change (so it is pushed at once to every held subscribe).
//!
//! Order of checks: the body, `serial`, `command`, the command's name, the thermostat's
//! existence (404), then the value. Nothing is written unless every check passes.

use serde::Serialize;
use serde_json::Value;

use super::ControlError;
use super::input::{self, number};
use super::settings;
use crate::app::App;
use crate::http::Response;
use crate::hub::Origin;
use crate::state::{Stamp, structure_key};
use crate::thermostat::rules::View;
use crate::thermostat::{self, Fan, MAX_FAN_SECONDS, MODES, json_number, schedule};
use crate::util::JsonMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    SetTemperature,
    SetMode,
    SetAway,
    SetFan,
    SetEcoTemperatures,
    SetSchedule,
    SetScheduleMode,
    SetDeviceSetting,
}

impl Command {
    pub fn of(name: &str) -> Option<Command> {
        Some(match name {
            "set_temperature" => Command::SetTemperature,
            "set_mode" => Command::SetMode,
            "set_away" => Command::SetAway,
            "set_fan" => Command::SetFan,
            "set_eco_temperatures" => Command::SetEcoTemperatures,
            "set_schedule" => Command::SetSchedule,
            "set_schedule_mode" => Command::SetScheduleMode,
            "set_device_setting" => Command::SetDeviceSetting,
            _ => return None,
        })
    }
}

/// What a command writes: one bucket, merged into (or, for a schedule, replacing) its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Write {
    pub key: String,
    pub values: JsonMap,
    pub replace: bool,
}

/// Where a command runs: the thermostat's serial and state, its structure bucket and the time.
pub struct Target<'a> {
    pub serial: &'a str,
    pub view: View<'a>,
    /// `structure.<owner's id>` or `structure.default`.
    pub structure_key: &'a str,
    pub now_ms: i64,
}

#[derive(Serialize)]
struct Success<'a> {
    success: bool,
    data: Data<'a>,
}

#[derive(Serialize)]
struct Data<'a> {
    object_key: &'a str,
    values: &'a JsonMap,
}

pub fn run(app: &App, body: &[u8]) -> Result<Response, ControlError> {
    let body = input::json_object(body)?;
    let serial = input::body_serial(&body)?;
    let name = match body.get("command") {
        None | Some(Value::Null) => return Err(ControlError::CommandRequired),
        Some(Value::String(s)) if s.is_empty() => return Err(ControlError::CommandRequired),
        Some(Value::String(s)) => s,
        Some(_) => return Err(ControlError::Invalid("command must be a string".into())),
    };
    let command = Command::of(name).ok_or_else(|| ControlError::UnknownCommand(name.clone()))?;
    let value = body.get("value").unwrap_or(&Value::Null);
    let write = execute(app, &serial, command, value)?;
    log::info!("{serial}: {name} wrote {}", write.key);
    Ok(Response::json(
        200,
        &Success {
            success: true,
            data: Data {
                object_key: &write.key,
                values: &write.values,
            },
        },
    ))
}

/// Runs `command` with `value` on the thermostat `serial`: every check, then one write through
/// the mutation path as a server-side change. Shared by `/command` and MQTT command topics.
pub fn execute(
    app: &App,
    serial: &str,
    command: Command,
    value: &Value,
) -> Result<Write, ControlError> {
    let owner = app
        .state
        .accounts(|a| a.owner_of(serial).map(|o| o.user.clone()));
    // In pairing mode an unclaimed thermostat stores nothing it sends, so nothing is sent to it
    // either: a command would leave a partial bucket that reaches it once claimed.
    if app.config.require_device_pairing && owner.is_none() && app.state.device_exists(serial) {
        return Err(ControlError::NotClaimed(serial.to_string()));
    }
    let structure = structure_key(owner.as_deref());
    app.state.update_device(serial, Origin::Server, |txn| {
        // Checked inside the transaction, so a thermostat deleted meanwhile is not recreated.
        if !txn.exists() {
            return Err(ControlError::DeviceNotFound);
        }
        let write = {
            let bucket = |kind: &str| {
                txn.bucket(&format!("{kind}.{serial}"))
                    .map(|b| b.value.to_map())
            };
            let (shared, device) = (bucket("shared"), bucket("device"));
            let target = Target {
                serial,
                view: View {
                    shared: shared.as_ref(),
                    device: device.as_ref(),
                },
                structure_key: &structure,
                now_ms: txn.now_ms(),
            };
            plan(command, value, &target)?
        };
        if write.replace {
            txn.replace(&write.key, write.values.clone(), Stamp::Always);
        } else {
            txn.merge(&write.key, &write.values, Stamp::Always);
        }
        Ok(write)
    })
}

/// What `command` with `value` writes on `target`; pure, so every rule is testable alone.
pub fn plan(command: Command, value: &Value, target: &Target<'_>) -> Result<Write, ControlError> {
    let shared = format!("shared.{}", target.serial);
    let device = format!("device.{}", target.serial);
    let mut values = JsonMap::new();
    let mut set = |k: &str, v: Value| {
        values.insert(k.to_string(), v);
    };
    let key = match command {
        Command::SetTemperature => {
            set_temperature(value, &target.view, &mut set)?;
            shared
        }
        Command::SetMode => {
            set(
                "target_temperature_type",
                Value::String(mode(value, &target.view)?.into()),
            );
            shared
        }
        Command::SetAway => {
            let away = value
                .as_bool()
                .ok_or_else(|| invalid("set_away value must be true or false"))?;
            for (k, v) in thermostat::away_values(away, target.now_ms) {
                set(&k, v);
            }
            target.structure_key.to_string()
        }
        Command::SetFan => {
            let until = thermostat::fan_timer_timeout(fan(value)?, &target.view, target.now_ms)?;
            set("fan_timer_timeout", Value::from(until));
            device
        }
        Command::SetEcoTemperatures => {
            eco_temperatures(value, &target.view, &mut set)?;
            device
        }
        Command::SetSchedule => {
            return Ok(Write {
                key: format!("schedule.{}", target.serial),
                values: schedule::validate(value, schedule::CONTROL_LAST_TIME)?,
                replace: true,
            });
        }
        Command::SetScheduleMode => {
            let m = value
                .as_str()
                .map(str::to_ascii_uppercase)
                .filter(|m| matches!(m.as_str(), "HEAT" | "COOL" | "RANGE"))
                .ok_or_else(|| invalid("set_schedule_mode value must be HEAT, COOL or RANGE"))?;
            set("schedule_mode", Value::String(m));
            shared
        }
        Command::SetDeviceSetting => {
            return Ok(Write {
                key: device,
                values: settings::validate(value)?,
                replace: false,
            });
        }
    };
    if values.is_empty() {
        return Err(ControlError::NoValues);
    }
    Ok(Write {
        key,
        values,
        replace: false,
    })
}

fn invalid(text: &str) -> ControlError {
    ControlError::Invalid(text.to_string())
}

const SET_TEMPERATURE_VALUE: &str =
    "set_temperature value must be a number (°C) or an object with \"low\" and/or \"high\" numbers";

fn set_temperature(
    value: &Value,
    view: &View<'_>,
    set: &mut impl FnMut(&str, Value),
) -> Result<(), ControlError> {
    match value {
        Value::Object(range) => {
            let fields = ("target_temperature_low", "target_temperature_high");
            clamped_range(range, SET_TEMPERATURE_VALUE, view, fields, set)?;
        }
        v => {
            let c = number(v).ok_or_else(|| invalid(SET_TEMPERATURE_VALUE))?;
            set(
                "target_temperature",
                json_number(view.clamp("target_temperature", c)),
            );
        }
    }
    // The thermostat lights its display for a pushed setpoint, then acknowledges it.
    set("target_change_pending", Value::Bool(true));
    Ok(())
}

/// `{"low","high"}` (either or both) written to `fields` after clamping each to the
/// thermostat's bounds. Low must stay below high: the other one as sent, or else as the
/// thermostat holds it, is compared after clamping (so 36/40 °C is not stored as 35/35).
fn clamped_range(
    range: &JsonMap,
    usage: &str,
    view: &View<'_>,
    (low_field, high_field): (&str, &str),
    set: &mut impl FnMut(&str, Value),
) -> Result<(), ControlError> {
    if range.is_empty() || range.keys().any(|k| k != "low" && k != "high") {
        return Err(invalid(usage));
    }
    let read = |k: &str, field: &str| -> Result<Option<f64>, ControlError> {
        range
            .get(k)
            .map(|v| number(v).ok_or_else(|| invalid(usage)))
            .transpose()
            .map(|c| c.map(|c| view.clamp(field, c)))
    };
    let (low, high) = (read("low", low_field)?, read("high", high_field)?);
    let stored = |field: &str| view.field(field).and_then(Value::as_f64);
    let effective = (
        low.or_else(|| stored(low_field)),
        high.or_else(|| stored(high_field)),
    );
    if let (Some(l), Some(h)) = effective {
        if l >= h {
            return Err(invalid(
                "Low temperature must be less than high temperature",
            ));
        }
    }
    for (field, v) in [(low_field, low), (high_field, high)] {
        if let Some(c) = v {
            set(field, json_number(c));
        }
    }
    Ok(())
}

/// The Nest `target_temperature_type` for a requested mode, if the thermostat can do it.
fn mode(value: &Value, view: &View<'_>) -> Result<&'static str, ControlError> {
    let Some(raw) = value.as_str() else {
        return Err(ControlError::Invalid(format!(
            "set_mode value must be a string: one of {MODES}"
        )));
    };
    Ok(thermostat::nest_mode(raw, view)?)
}

const SET_FAN_VALUE: &str =
    "set_fan value must be \"on\", \"auto\" (or \"off\"), or a number of seconds from 1 to 43200";

/// A `set_fan` value: `"on"`, `"auto"` or `"off"`, or whole seconds.
fn fan(value: &Value) -> Result<Fan, ControlError> {
    match value {
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "off" => Ok(Fan::Auto),
            "on" => Ok(Fan::On),
            _ => Err(invalid(SET_FAN_VALUE)),
        },
        Value::Number(n) => n
            .as_f64()
            .filter(|s| s.fract() == 0.0 && (1.0..=MAX_FAN_SECONDS as f64).contains(s))
            .map(|s| Fan::For(s as i64))
            .ok_or_else(|| invalid(SET_FAN_VALUE)),
        _ => Err(invalid(SET_FAN_VALUE)),
    }
}

fn eco_temperatures(
    value: &Value,
    view: &View<'_>,
    set: &mut impl FnMut(&str, Value),
) -> Result<(), ControlError> {
    const USAGE: &str =
        "set_eco_temperatures value must be an object with \"low\" and/or \"high\" numbers (°C)";
    let Value::Object(range) = value else {
        return Err(invalid(USAGE));
    };
    if range.is_empty() {
        return Err(ControlError::NoValues);
    }
    let fields = ("away_temperature_low", "away_temperature_high");
    clamped_range(range, USAGE, view, fields, set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_795_262_650_000;

    fn plan_on(command: &str, value: Value, shared: Value, device: Value) -> Result<Write, String> {
        let (shared, device) = (
            shared.as_object().cloned().unwrap(),
            device.as_object().cloned().unwrap(),
        );
        let target = Target {
            serial: "S",
            view: View {
                shared: Some(&shared),
                device: Some(&device),
            },
            structure_key: "structure.default",
            now_ms: NOW,
        };
        plan(Command::of(command).unwrap(), &value, &target).map_err(|e| e.status_and_message().1)
    }

    fn run(command: &str, value: Value) -> Result<Write, String> {
        plan_on(command, value, json!({}), json!({"has_fan": true}))
    }

    fn values(w: Result<Write, String>) -> Value {
        Value::Object(w.unwrap().values)
    }

    #[test]
    fn set_temperature_clamps_and_marks_pending() {
        assert_eq!(
            values(run("set_temperature", json!(21.5))),
            json!({"target_temperature": 21.5, "target_change_pending": true})
        );
        assert_eq!(
            values(run("set_temperature", json!(40))),
            json!({"target_temperature": 35.0, "target_change_pending": true})
        );
        assert_eq!(
            values(run("set_temperature", json!({"low": 3, "high": 24}))),
            json!({"target_temperature_low": 7.222, "target_temperature_high": 24.0, "target_change_pending": true})
        );
        for bad in [
            json!(null),
            json!("abc"),
            json!(true),
            json!("NaN"),
            json!({"low": "x"}),
            json!({}),
            json!({"lo": 1}),
        ] {
            assert_eq!(
                run("set_temperature", bad).unwrap_err(),
                SET_TEMPERATURE_VALUE
            );
        }
        for clash in [
            json!({"low": 24, "high": 20}),
            // Both clamp to 35 °C.
            json!({"low": 36, "high": 40}),
        ] {
            assert_eq!(
                run("set_temperature", clash).unwrap_err(),
                "Low temperature must be less than high temperature"
            );
        }
        // One side alone is compared with the thermostat's other one.
        let shared = json!({"target_temperature_low": 19.0, "target_temperature_high": 24.0});
        assert_eq!(
            plan_on(
                "set_temperature",
                json!({"low": 25}),
                shared.clone(),
                json!({})
            )
            .unwrap_err(),
            "Low temperature must be less than high temperature"
        );
        assert!(plan_on("set_temperature", json!({"low": 20}), shared, json!({})).is_ok());
        assert_eq!(
            run("set_eco_temperatures", json!({"low": 1, "high": 5})).unwrap_err(),
            "Low temperature must be less than high temperature"
        );
    }

    #[test]
    fn set_mode_maps_and_checks_capabilities() {
        for (asked, nest) in [
            ("heat-cool", "range"),
            ("heat_cool", "range"),
            ("AUTO", "range"),
            ("off", "off"),
            ("Cool", "cool"),
        ] {
            assert_eq!(
                values(run("set_mode", json!(asked))),
                json!({"target_temperature_type": nest})
            );
        }
        assert!(
            run("set_mode", json!("eco"))
                .unwrap_err()
                .contains("set_away")
        );
        assert_eq!(
            run("set_mode", json!("turbo")).unwrap_err(),
            format!("Unknown mode 'turbo'. Valid modes: {MODES}")
        );
        assert_eq!(
            run("set_mode", json!("emergency")).unwrap_err(),
            "Device does not have emergency heat (has_emer_heat=false)"
        );
        assert_eq!(
            plan_on(
                "set_mode",
                json!("heat-cool"),
                json!({"can_cool": false}),
                json!({})
            )
            .unwrap_err(),
            "Device cannot cool (can_cool=false)"
        );
        assert!(
            run("set_mode", json!(1))
                .unwrap_err()
                .starts_with("set_mode value must be a string")
        );
    }

    #[test]
    fn set_away_writes_manual_eco_on_the_structure() {
        let w = run("set_away", json!(true)).unwrap();
        assert_eq!(w.key, "structure.default");
        assert_eq!(
            Value::Object(w.values),
            json!({"manual_eco_all": true, "manual_eco_timestamp": NOW / 1000})
        );
        assert_eq!(
            run("set_away", json!("yes")).unwrap_err(),
            "set_away value must be true or false"
        );
    }

    #[test]
    fn set_fan_needs_a_fan_and_uses_the_thermostats_timer() {
        let now = NOW / 1000;
        assert_eq!(
            values(run("set_fan", json!("auto"))),
            json!({"fan_timer_timeout": 0})
        );
        assert_eq!(
            values(run("set_fan", json!(900))),
            json!({"fan_timer_timeout": now + 900})
        );
        assert_eq!(
            values(run("set_fan", json!("on"))),
            json!({"fan_timer_timeout": now + 3600})
        );
        assert_eq!(
            values(plan_on(
                "set_fan",
                json!("on"),
                json!({}),
                json!({"has_fan": true, "fan_timer_duration": 900})
            )),
            json!({"fan_timer_timeout": now + 900})
        );
        for bad in [
            json!(true),
            json!(0),
            json!(1.5),
            json!(50_000),
            json!("spin"),
        ] {
            assert_eq!(run("set_fan", bad).unwrap_err(), SET_FAN_VALUE);
        }
        assert_eq!(
            plan_on("set_fan", json!("on"), json!({}), json!({})).unwrap_err(),
            "Device does not have a fan (has_fan=false)"
        );
    }

    #[test]
    fn other_commands() {
        assert_eq!(
            values(run("set_eco_temperatures", json!({"low": 3, "high": 40}))),
            json!({"away_temperature_low": 7.222, "away_temperature_high": 35.0})
        );
        assert_eq!(
            run("set_eco_temperatures", json!({})).unwrap_err(),
            "No values to update"
        );
        assert_eq!(
            values(run("set_schedule_mode", json!("range"))),
            json!({"schedule_mode": "RANGE"})
        );
        let w = run(
            "set_schedule",
            json!({"ver": 2, "schedule_mode": "HEAT", "days": {}}),
        )
        .unwrap();
        assert!(w.replace);
        assert_eq!(w.key, "schedule.S");
        let w = run("set_device_setting", json!({"learning_mode": false})).unwrap();
        assert_eq!((w.key.as_str(), w.replace), ("device.S", false));
    }
}
