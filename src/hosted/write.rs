//! The hosted API's writes: each endpoint's body parsed into the thermostat core's intent,
//! committed through it as one server-side change, and answered with the command result for
//! the bucket the endpoint documents:
//! `{"success":true,"message":"Command handled","device","object","revision","timestamp"}`.
//!
//! Setpoints are in °C (or °F with `"scale":"F"`), rounded to 0.5 °C within the thermostat's
//! safety bounds. Where a real client sends a documented variant and the meaning is
//! unambiguous, it is accepted: `mode` left out of a temperature (the iOS app),
//! `heatValue`/`coolValue` for a range (hanle), fan `{"enabled"}` (the iOS app),
//! `POST .../eco {"enabled"}` (hanle), a plaintext lock `pin` with `minTemp`/`maxTemp` (hanle;
//! hashed at once, never stored).

use serde_json::{Value, json};

use super::{HostedError, Target, Write};
use crate::accounts::{self, Viewer};
use crate::app::App;
use crate::http::Response;
use crate::state::ApiKey;
use crate::thermostat::{
    self, BucketKind, Fan, Intent, Lock, MAX_FAN_SECONDS, Mode, ScheduleRevision, SetpointMode,
    Step, pin, schedule as schedules,
};
use crate::util::JsonMap;

/// Commits `intent` and answers with the write to `reported`, the bucket the endpoint documents.
pub fn commit(
    app: &App,
    target: &Target,
    key: &ApiKey,
    intent: &Intent,
    reported: BucketKind,
) -> Result<Response, HostedError> {
    let serial = target.serial.as_str();
    let committed = thermostat::commit(
        app.state(),
        serial,
        intent,
        app.visibility(),
        Viewer::Key(key),
    )?;
    let write = committed
        .write_to(reported)
        .ok_or_else(|| HostedError::Invalid("No values to update".into()))?;
    log::info!("{serial}: hosted API wrote {}", write.key);
    Ok(Response::json(
        200,
        &json!({
            "success": true,
            "message": "Command handled",
            "device": serial,
            "object": write.key,
            "revision": write.revision,
            "timestamp": write.timestamp,
        }),
    ))
}

/// What a write endpoint's body asks of the thermostat `serial` (as stored).
pub fn intent(write: Write, bytes: &[u8], serial: &str) -> Result<Intent, HostedError> {
    let body = body(bytes)?;
    match write {
        Write::Temperature => temperature(&body),
        Write::Range => range(&body),
        Write::Away => away(&body, "away"),
        Write::Eco => away(&body, "enabled"),
        Write::Lock => lock(&body, serial),
        Write::Mode => mode(&body),
        Write::Fan => fan(&body),
        Write::Schedule => schedule(&body),
    }
}

fn body(bytes: &[u8]) -> Result<JsonMap, HostedError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(HostedError::NotAnObject),
        Err(_) => Err(HostedError::InvalidJson),
    }
}

fn invalid(text: &str) -> HostedError {
    HostedError::Invalid(text.to_string())
}

/// A field that must be a finite JSON number (strings are not numbers here).
fn number(body: &JsonMap, field: &str) -> Option<f64> {
    body.get(field)
        .and_then(Value::as_f64)
        .filter(|x| x.is_finite())
}

/// `scale`: `C` (the default) or `F`, any case. Returns a function to Celsius.
fn to_celsius(body: &JsonMap) -> Result<fn(f64) -> f64, HostedError> {
    fn same(c: f64) -> f64 {
        c
    }
    fn from_f(f: f64) -> f64 {
        (f - 32.0) * 5.0 / 9.0
    }
    match body.get("scale") {
        None | Some(Value::Null) => Ok(same),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("c") => Ok(same),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("f") => Ok(from_f),
        Some(_) => Err(invalid("scale must be \"C\" or \"F\"")),
    }
}

/// `POST .../temperature {"value","mode"?,"scale"?}`: the heat or cool setpoint, with that
/// mode. Without `mode`, the thermostat's current heat or cool mode is kept.
fn temperature(body: &JsonMap) -> Result<Intent, HostedError> {
    let value = number(body, "value").ok_or(HostedError::TemperatureNotNumber)?;
    let convert = to_celsius(body)?;
    let mode = match body.get("mode") {
        None | Some(Value::Null) => SetpointMode::Current,
        Some(Value::String(m)) => match m.trim().to_ascii_lowercase().as_str() {
            "heat" => SetpointMode::Heat,
            "cool" => SetpointMode::Cool,
            _ => {
                return Err(invalid(
                    "mode must be \"heat\" or \"cool\" (use /temperature/range for heat-cool)",
                ));
            }
        },
        Some(_) => return Err(invalid("mode must be \"heat\" or \"cool\"")),
    };
    Ok(Intent::Target {
        celsius: convert(value),
        mode,
        step: Step::Half,
    })
}

/// `POST .../temperature/range {"low","high","scale"?}` (or `heatValue`/`coolValue`): both
/// setpoints and heat-cool mode.
fn range(body: &JsonMap) -> Result<Intent, HostedError> {
    let read = |a: &str, b: &str| number(body, a).or_else(|| number(body, b));
    let (Some(low), Some(high)) = (read("low", "heatValue"), read("high", "coolValue")) else {
        return Err(invalid("low and high must be numbers"));
    };
    let convert = to_celsius(body)?;
    Ok(Intent::Range {
        low: Some(convert(low)),
        high: Some(convert(high)),
        switch_mode: true,
        step: Step::Half,
    })
}

/// `POST .../away {"away"}` (and `.../eco {"enabled"}`).
fn away(body: &JsonMap, field: &str) -> Result<Intent, HostedError> {
    body.get(field)
        .and_then(Value::as_bool)
        .map(Intent::Away)
        .ok_or_else(|| HostedError::Invalid(format!("{field} must be true or false")))
}

/// `POST .../lock`: `{"enabled":true,"pin_hash","temp_min","temp_max"}` locks the dial to a
/// range; `{"enabled":false}` unlocks it (and ignores the temperatures). hanle's
/// `{"enabled":true,"pin","minTemp","maxTemp"}` is accepted too: the `pin`, a string of exactly
/// 4 digits (a JSON number would lose leading zeros, so it is refused), is hashed at once for
/// this thermostat the hosted documentation's way and only the hash is kept. A `pin_hash` is
/// stored as given; it must be standard Base64 of a 20-byte SHA-1 digest. Either is checked
/// whenever sent; both at once is refused. The temperatures are always °C (the interface
/// document says so of this endpoint), so a `scale` is ignored here.
fn lock(body: &JsonMap, serial: &str) -> Result<Intent, HostedError> {
    let pin_hash = match (body.get("pin"), body.get("pin_hash")) {
        (Some(_), Some(_)) => return Err(invalid("Send pin or pin_hash, not both")),
        (Some(Value::String(pin)), None) => Some(pin::hash(pin, serial)?),
        (Some(_), None) => return Err(thermostat::Refusal::PinFormat.into()),
        (None, Some(Value::String(h))) if pin::is_hash(h) => Some(h.clone()),
        (None, Some(_)) => {
            return Err(invalid(
                "pin_hash must be the standard Base64 of a 20-byte SHA-1 digest",
            ));
        }
        (None, None) => None,
    };
    let enabled = body
        .get("enabled")
        .and_then(Value::as_bool)
        .ok_or_else(|| invalid("enabled must be true or false"))?;
    if !enabled {
        return Ok(Intent::Lock(Lock::Off));
    }
    let pin_hash = pin_hash.ok_or_else(|| {
        invalid(
            "Send pin (4 digits, as a string) or pin_hash (the standard Base64 of SHA-1 of the \
             PIN followed by the serial)",
        )
    })?;
    let read = |a: &str, b: &str| number(body, a).or_else(|| number(body, b));
    let (Some(low), Some(high)) = (read("temp_min", "minTemp"), read("temp_max", "maxTemp")) else {
        return Err(invalid(
            "temp_min and temp_max (or minTemp and maxTemp) must be numbers (°C)",
        ));
    };
    Ok(Intent::Lock(Lock::On {
        pin_hash,
        low,
        high,
    }))
}

/// `POST .../mode {"mode"}`: heat, cool, heat-cool or off (and the control API's other names:
/// heat_cool, range, auto, emergency), if the thermostat's equipment can run it.
fn mode(body: &JsonMap) -> Result<Intent, HostedError> {
    let Some(asked) = body.get("mode").and_then(Value::as_str) else {
        return Err(invalid(
            "mode must be a string: \"heat\", \"cool\", \"heat-cool\" or \"off\"",
        ));
    };
    Ok(Intent::Mode(Mode::parse(asked)?))
}

/// `POST .../fan`: `{"mode":"on"|"auto"|"off"}`, `{"duration": seconds}` (1 to 43200; with
/// `"mode":"on"` too, as some clients send) or `{"enabled": bool}`.
fn fan(body: &JsonMap) -> Result<Intent, HostedError> {
    let mode = match body.get("mode") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) => match m.trim().to_ascii_lowercase().as_str() {
            "on" => Some(Fan::On),
            "auto" | "off" => Some(Fan::Auto),
            _ => return Err(invalid("mode must be \"on\", \"auto\" or \"off\"")),
        },
        Some(_) => return Err(invalid("mode must be \"on\", \"auto\" or \"off\"")),
    };
    let fan = match (body.get("duration"), mode) {
        (Some(d), None | Some(Fan::On)) => {
            let seconds = d
                .as_f64()
                .filter(|s| s.fract() == 0.0 && (1.0..=MAX_FAN_SECONDS as f64).contains(s))
                .ok_or_else(|| {
                    invalid("duration must be a whole number of seconds from 1 to 43200")
                })?;
            Fan::For(seconds as i64)
        }
        (Some(_), Some(_)) => {
            return Err(invalid(
                "duration goes with mode \"on\" (or no mode), not \"auto\"/\"off\"",
            ));
        }
        (None, Some(m)) => m,
        (None, None) => match body.get("enabled").and_then(Value::as_bool) {
            Some(true) => Fan::On,
            Some(false) => Fan::Auto,
            None => {
                return Err(invalid(
                    "Send mode (\"on\", \"auto\" or \"off\"), duration (seconds) or enabled \
                     (true or false)",
                ));
            }
        },
    };
    Ok(Intent::Fan(fan))
}

/// `PUT .../schedule {"schedule":{...}}`: replaces the whole schedule. The body of `GET
/// .../schedule` (with its `device`) is accepted as is; times may run to 86400 (the end of the
/// day), as the hosted documentation says.
fn schedule(body: &JsonMap) -> Result<Intent, HostedError> {
    let Some(schedule) = body.get("schedule").filter(|s| s.is_object()) else {
        return Err(invalid(
            "schedule is required: send {\"schedule\": {\"ver\": 2, \"name\", \"schedule_mode\", \"days\"}}",
        ));
    };
    Ok(Intent::Schedule {
        schedule: schedules::validate(schedule, schedules::HOSTED_LAST_TIME)?,
        only_over: ScheduleRevision::Any,
    })
}

/// `DELETE /thermostat/{id}` (owner only): unlinks the thermostat from its owner and ends every
/// share. It is released: it keeps its state and keeps working (its uploads are stored, no
/// 401), and can be claimed again with a new entry key (or adopted, in open mode), coming back
/// as it is; in open mode the default user does not take it back.
pub fn unlink(app: &App, target: &Target, key: &ApiKey) -> Result<Response, HostedError> {
    let open_mode = !app.config().require_device_pairing;
    let link = accounts::Link::User(&key.user);
    accounts::unlink(app.state(), &target.serial, link, open_mode)?;
    Ok(Response::json(
        200,
        &json!({"success": true, "message": "Device deleted successfully"}),
    ))
}
