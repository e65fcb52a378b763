//! `POST /command {"serial","command","value"}`: the control API's command names and value
//! shapes, parsed into the thermostat core's intents and committed through it (so a command is
//! durable, then pushed at once to every held subscribe).
//!
//! Order of checks: the body, `serial`, `command`, the command's name, the thermostat's
//! existence (404) and, with pairing, its claim (409), then the value. Nothing is written
//! unless every check passes.

use serde::Serialize;
use serde_json::Value;

use super::ControlError;
use super::input;
use crate::accounts::Viewer;
use crate::app::App;
use crate::http::Response;
use crate::thermostat::course::Local;
use crate::thermostat::{
    self, Fan, Intent, Lock, MAX_FAN_SECONDS, MODES, Mode, ScheduleMode, ScheduleRevision,
    SetpointMode, Step, schedule, settings,
};
use crate::util::{JsonMap, number};

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
    SetName,
    SetTemperatureLock,
    ResumeSchedule,
    /// Not a change to the thermostat: a vacation for the home it belongs to
    /// ([`crate::people`]).
    SetVacation,
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
            "set_name" => Command::SetName,
            "set_temperature_lock" => Command::SetTemperatureLock,
            "resume_schedule" => Command::ResumeSchedule,
            "set_vacation" => Command::SetVacation,
            _ => return None,
        })
    }
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
    let visibility = app.visibility();
    thermostat::admit(app.state(), &serial, visibility, Viewer::Lan)
        .map_err(|e| ControlError::of(e, &serial))?;
    if command == Command::SetVacation {
        return vacation(app, &serial, value);
    }
    let mut intent = intent(command, value, || app.local_time(&serial))?;
    if let Some(asked) = body.get("if_revision") {
        let Intent::Schedule { only_over, .. } = &mut intent else {
            return Err(invalid("if_revision goes only with set_schedule"));
        };
        *only_over = match asked {
            Value::Null => ScheduleRevision::None,
            v => ScheduleRevision::Is(v.as_i64().ok_or_else(|| {
                invalid("if_revision must be the schedule's object_revision (a whole number), or null when it has none")
            })?),
        };
    }
    let committed = thermostat::commit(app.state(), &serial, &intent, visibility, Viewer::Lan)
        .map_err(|e| ControlError::of(e, &serial))?;
    // The answer names the command's own bucket, as the Python server's does.
    let Some(write) = committed.writes.first() else {
        return Err(ControlError::NoValues);
    };
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

const SET_TEMPERATURE_VALUE: &str =
    "set_temperature value must be a number (°C) or an object with \"low\" and/or \"high\" numbers";
const SET_ECO_VALUE: &str =
    "set_eco_temperatures value must be an object with \"low\" and/or \"high\" numbers (°C)";
const SET_FAN_VALUE: &str =
    "set_fan value must be \"on\", \"auto\" (or \"off\"), or a number of seconds from 1 to 43200";

fn invalid(text: &str) -> ControlError {
    ControlError::Invalid(text.to_string())
}

/// What `command` with `value` asks for. Setpoints are taken as sent (°C, clamped to the
/// thermostat's bounds, not rounded) and leave the mode alone, as the Python server did.
/// `local` is the time on the structure's clock, for `resume_schedule` (which takes no value).
pub fn intent(
    command: Command,
    value: &Value,
    local: impl FnOnce() -> Local,
) -> Result<Intent, ControlError> {
    Ok(match command {
        Command::SetTemperature => match value {
            Value::Object(range) => {
                let (low, high) = low_high(range, SET_TEMPERATURE_VALUE)?;
                Intent::Range {
                    low,
                    high,
                    switch_mode: false,
                    step: Step::Exact,
                }
            }
            v => Intent::Target {
                celsius: number(v).ok_or_else(|| invalid(SET_TEMPERATURE_VALUE))?,
                mode: SetpointMode::Unchanged,
                step: Step::Exact,
            },
        },
        Command::SetMode => {
            let Some(asked) = value.as_str() else {
                return Err(ControlError::Invalid(format!(
                    "set_mode value must be a string: one of {MODES}"
                )));
            };
            Intent::Mode(Mode::parse(asked)?)
        }
        Command::SetAway => Intent::Away(
            value
                .as_bool()
                .ok_or_else(|| invalid("set_away value must be true or false"))?,
        ),
        Command::SetFan => Intent::Fan(fan(value)?),
        Command::SetEcoTemperatures => {
            let Value::Object(range) = value else {
                return Err(invalid(SET_ECO_VALUE));
            };
            if range.is_empty() {
                return Err(ControlError::NoValues);
            }
            let (low, high) = low_high(range, SET_ECO_VALUE)?;
            Intent::EcoRange { low, high }
        }
        Command::SetSchedule => Intent::Schedule {
            schedule: schedule::validate(value, schedule::CONTROL_LAST_TIME)?,
            only_over: ScheduleRevision::Any,
        },
        Command::SetScheduleMode => Intent::ScheduleMode(
            value
                .as_str()
                .and_then(ScheduleMode::parse)
                .ok_or_else(|| invalid("set_schedule_mode value must be HEAT, COOL or RANGE"))?,
        ),
        Command::SetDeviceSetting => {
            let Value::Object(fields) = value else {
                return Err(invalid(
                    "set_device_setting value must be an object of field names to values",
                ));
            };
            Intent::Settings(settings::validate(fields)?)
        }
        Command::SetName => {
            let Some(name) = value.as_str() else {
                return Err(invalid(
                    "set_name value must be a string (an empty one clears the name)",
                ));
            };
            Intent::Name(thermostat::intent::name(name)?)
        }
        Command::SetTemperatureLock => Intent::Lock(lock(value)?),
        Command::ResumeSchedule => Intent::ResumeSchedule(local()),
        Command::SetVacation => return Err(invalid(SET_VACATION_VALUE)),
    })
}

const SET_VACATION_VALUE: &str =
    "set_vacation value must be {\"from\": \"YYYY-MM-DD\", \"to\": \"YYYY-MM-DD\"} or false";

/// `set_vacation`: away from the first day to the last (both whole days, in the thermostat's
/// structure's time zone), whoever comes and goes, for the home `serial` belongs to; `false`
/// cancels it. Answers `{"success": true, "data": {"vacation": {...} | null}}`.
fn vacation(app: &App, serial: &str, value: &Value) -> Result<Response, ControlError> {
    let asked = match value {
        Value::Bool(false) => None,
        Value::Object(days) => {
            if days.keys().any(|k| k != "from" && k != "to") {
                return Err(invalid(SET_VACATION_VALUE));
            }
            let day = |k: &str| {
                days.get(k)
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid(SET_VACATION_VALUE))
            };
            let zone = app.zone_of(serial);
            Some(crate::people::vacation(
                day("from")?,
                day("to")?,
                &zone,
                app.config().clock.now_ms(),
            )?)
        }
        _ => return Err(invalid(SET_VACATION_VALUE)),
    };
    let open_mode = !app.config().require_device_pairing;
    let user = app
        .state()
        .accounts(|a| crate::accounts::effective_owner(a, serial, open_mode).map(str::to_string))
        .ok_or_else(|| ControlError::NotClaimed(serial.to_string()))?;
    app.people()
        .set_vacation(app.state(), &user, asked.clone())?;
    log::info!("{serial}: set_vacation for {user}'s home: {asked:?}");
    Ok(Response::json(
        200,
        &serde_json::json!({
            "success": true,
            "data": {"vacation": asked},
        }),
    ))
}

/// `{"low","high"}`, either or both, numbers (or numeric strings); nothing else.
fn low_high(range: &JsonMap, usage: &str) -> Result<(Option<f64>, Option<f64>), ControlError> {
    if range.is_empty() || range.keys().any(|k| k != "low" && k != "high") {
        return Err(invalid(usage));
    }
    let side = |k: &str| {
        range
            .get(k)
            .map(|v| number(v).ok_or_else(|| invalid(usage)))
            .transpose()
    };
    Ok((side("low")?, side("high")?))
}

const SET_LOCK_VALUE: &str = "set_temperature_lock value must be {\"enabled\": false}, or \
     {\"enabled\": true, \"pin_hash\", \"low\", \"high\"} with the standard Base64 of SHA-1 over \
     the 4-digit PIN followed by the serial, and the range in °C";

/// A `set_temperature_lock` value. Only the PIN's hash is taken (the dashboard computes it), so
/// a PIN never reaches the server through this command.
fn lock(value: &Value) -> Result<Lock, ControlError> {
    let Value::Object(body) = value else {
        return Err(invalid(SET_LOCK_VALUE));
    };
    match body.get("enabled") {
        Some(Value::Bool(false)) if body.len() == 1 => return Ok(Lock::Off),
        Some(Value::Bool(true)) => {}
        _ => return Err(invalid(SET_LOCK_VALUE)),
    }
    let pin_hash = body
        .get("pin_hash")
        .and_then(Value::as_str)
        .filter(|h| thermostat::pin::is_hash(h))
        .ok_or_else(|| invalid(SET_LOCK_VALUE))?;
    let side = |k: &str| body.get(k).and_then(number);
    match (side("low"), side("high")) {
        (Some(low), Some(high)) if body.len() == 4 => Ok(Lock::On {
            pin_hash: pin_hash.to_string(),
            low,
            high,
        }),
        _ => Err(invalid(SET_LOCK_VALUE)),
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(command: &str, value: Value) -> Result<Intent, String> {
        let noon = || Local {
            day: 20_000,
            secs: 43_200,
        };
        intent(Command::of(command).unwrap(), &value, noon).map_err(|e| e.status_and_message().1)
    }

    #[test]
    fn resume_schedule_takes_the_structures_time_and_no_value() {
        let noon = Local {
            day: 20_000,
            secs: 43_200,
        };
        assert_eq!(
            parse("resume_schedule", Value::Null),
            Ok(Intent::ResumeSchedule(noon))
        );
    }

    #[test]
    fn set_temperature_is_a_setpoint_or_a_range_taken_as_sent() {
        assert_eq!(
            parse("set_temperature", json!("21.5")),
            Ok(Intent::Target {
                celsius: 21.5,
                mode: SetpointMode::Unchanged,
                step: Step::Exact
            })
        );
        assert_eq!(
            parse("set_temperature", json!({"high": 24})),
            Ok(Intent::Range {
                low: None,
                high: Some(24.0),
                switch_mode: false,
                step: Step::Exact
            })
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
                parse("set_temperature", bad),
                Err(SET_TEMPERATURE_VALUE.into())
            );
        }
    }

    #[test]
    fn modes_fans_away_and_their_usage() {
        assert_eq!(
            parse("set_mode", json!("heat_cool")),
            Ok(Intent::Mode(Mode::Range))
        );
        assert_eq!(
            parse("set_mode", json!("eco")),
            Err("Eco is not a mode: use set_away (true turns eco on, false turns it off)".into())
        );
        assert_eq!(
            parse("set_mode", json!("turbo")),
            Err(format!("Unknown mode 'turbo'. Valid modes: {MODES}"))
        );
        assert!(
            parse("set_mode", json!(1))
                .unwrap_err()
                .starts_with("set_mode value must be a string")
        );
        assert_eq!(parse("set_fan", json!("OFF")), Ok(Intent::Fan(Fan::Auto)));
        assert_eq!(parse("set_fan", json!(900)), Ok(Intent::Fan(Fan::For(900))));
        for bad in [
            json!(true),
            json!(0),
            json!(1.5),
            json!(50_000),
            json!("spin"),
        ] {
            assert_eq!(parse("set_fan", bad), Err(SET_FAN_VALUE.into()));
        }
        assert_eq!(parse("set_away", json!(true)), Ok(Intent::Away(true)));
        assert_eq!(
            parse("set_away", json!("yes")),
            Err("set_away value must be true or false".into())
        );
    }

    #[test]
    fn other_commands() {
        assert_eq!(
            parse("set_eco_temperatures", json!({"low": 3})),
            Ok(Intent::EcoRange {
                low: Some(3.0),
                high: None
            })
        );
        assert_eq!(
            parse("set_eco_temperatures", json!({})),
            Err("No values to update".into())
        );
        assert_eq!(
            parse("set_eco_temperatures", json!([1])),
            Err(SET_ECO_VALUE.into())
        );
        assert_eq!(
            parse("set_schedule_mode", json!("range")),
            Ok(Intent::ScheduleMode(ScheduleMode::Range))
        );
        assert!(matches!(
            parse(
                "set_schedule",
                json!({"ver": 2, "schedule_mode": "HEAT", "days": {}})
            ),
            Ok(Intent::Schedule { .. })
        ));
        assert_eq!(
            parse(
                "set_schedule",
                json!({"ver": 2, "schedule_mode": "HEAT",
                       "days": {"0": [{"time": 86400, "type": "HEAT", "temp": 20}]}})
            ),
            Err("Day 0 entry 0: time must be a whole number of seconds from 0 to 86399".into())
        );
        assert!(matches!(
            parse("set_device_setting", json!({"learning_mode": false})),
            Ok(Intent::Settings(_))
        ));
        assert_eq!(
            parse("set_device_setting", json!(5)),
            Err("set_device_setting value must be an object of field names to values".into())
        );
        assert_eq!(
            parse("set_device_setting", json!({})),
            Err("No values to update".into())
        );
        assert_eq!(
            parse("set_name", json!("  Upstairs hall ")),
            Ok(Intent::Name("Upstairs hall".into()))
        );
        assert_eq!(parse("set_name", json!("")), Ok(Intent::Name("".into())));
        assert_eq!(
            parse("set_name", json!(null)),
            Err("set_name value must be a string (an empty one clears the name)".into())
        );
        assert_eq!(
            parse("set_name", json!("x".repeat(61))),
            Err("A name is at most 60 characters".into())
        );
        let hash = "fEqNCco3Yq9h5ZUglD3CZJT4lBs=";
        assert_eq!(
            parse(
                "set_temperature_lock",
                json!({"enabled": true, "pin_hash": hash, "low": 18, "high": "24"})
            ),
            Ok(Intent::Lock(Lock::On {
                pin_hash: hash.into(),
                low: 18.0,
                high: 24.0
            }))
        );
        assert_eq!(
            parse("set_temperature_lock", json!({"enabled": false})),
            Ok(Intent::Lock(Lock::Off))
        );
        for bad in [
            json!(true),
            json!({"enabled": true, "pin": "1234", "low": 18, "high": 24}),
            json!({"enabled": true, "pin_hash": "abc", "low": 18, "high": 24}),
            json!({"enabled": true, "pin_hash": hash, "low": 18}),
            json!({"enabled": true, "pin_hash": hash, "low": 18, "high": 24, "x": 1}),
            json!({"enabled": false, "pin_hash": hash}),
            json!({"enabled": "yes"}),
        ] {
            assert_eq!(
                parse("set_temperature_lock", bad),
                Err(SET_LOCK_VALUE.into())
            );
        }
        assert_eq!(
            parse("set_name", json!("a\nb")),
            Err("A name cannot contain control characters (line breaks, tabs)".into())
        );
    }
}
