//! The hosted API's writes. Each reads its body, plans the bucket changes against the
//! thermostat's current state (capabilities, safety bounds), and commits them as one
//! server-side change, answering the command result for the bucket it documents:
//! `{"success":true,"message":"Command handled","device","object","revision","timestamp"}`.
//!
//! Where a real client sends a documented variant and the meaning is unambiguous, it is
//! accepted: `mode` left out of a temperature (the iOS app), `heatValue`/`coolValue` for a
//! range (hanle), fan `{"enabled"}` (the iOS app), `POST .../eco {"enabled"}` (hanle).

use base64::Engine;
use serde_json::{Value, json};

use super::{HostedError, Target};
use crate::accounts;
use crate::app::App;
use crate::http::Response;
use crate::hub::Origin;
use crate::state::{ApiKey, Stamp, structure_key};
use crate::thermostat::rules::View;
use crate::thermostat::{self, Fan, MAX_FAN_SECONDS, json_number, schedule as schedules};
use crate::util::JsonMap;

/// One bucket change of a command.
struct Change {
    key: String,
    values: JsonMap,
    /// Replace the whole value (a schedule) instead of merging.
    replace: bool,
}

impl Change {
    fn merge(key: String, values: JsonMap) -> Change {
        Change {
            key,
            values,
            replace: false,
        }
    }
}

/// What a plan sees: the thermostat's state and the time.
struct Plan<'a> {
    serial: &'a str,
    view: View<'a>,
    now_ms: i64,
}

impl Plan<'_> {
    fn shared(&self) -> String {
        format!("shared.{}", self.serial)
    }

    fn device(&self) -> String {
        format!("device.{}", self.serial)
    }
}

/// Commits the changes `plan` returns as one server-side change; the first change is the one
/// the answer reports.
fn commit(
    app: &App,
    target: &Target,
    plan: impl FnOnce(&Plan<'_>) -> Result<Vec<Change>, HostedError>,
) -> Result<Response, HostedError> {
    let serial = target.serial.as_str();
    let (key, written) = app.state.update_device(serial, Origin::Server, |txn| {
        // Checked inside the transaction, so a thermostat deleted meanwhile is not recreated.
        if !txn.exists() {
            return Err(HostedError::DeviceNotFound);
        }
        let changes = {
            let bucket = |kind: &str| {
                txn.bucket(&format!("{kind}.{serial}"))
                    .map(|b| b.value.to_map())
            };
            let (shared, device) = (bucket("shared"), bucket("device"));
            let plan_view = Plan {
                serial,
                view: View {
                    shared: shared.as_ref(),
                    device: device.as_ref(),
                },
                now_ms: txn.now_ms(),
            };
            plan(&plan_view)?
        };
        let mut first = None;
        for change in changes {
            let written = if change.replace {
                txn.replace(&change.key, change.values, Stamp::Always)
            } else {
                txn.merge(&change.key, &change.values, Stamp::Always)
            };
            first.get_or_insert((change.key, written));
        }
        first.ok_or_else(|| HostedError::Invalid("No values to update".into()))
    })?;
    log::info!("{serial}: hosted API wrote {key}");
    Ok(Response::json(
        200,
        &json!({
            "success": true,
            "message": "Command handled",
            "device": serial,
            "object": key,
            "revision": written.revision,
            "timestamp": written.timestamp,
        }),
    ))
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

/// `POST .../temperature {"value","mode"?,"scale"?}`: the heat or cool setpoint, in °C after
/// conversion, rounded to 0.5 °C within the thermostat's safety bounds. Without `mode`, the
/// thermostat's current heat or cool mode is used.
pub fn temperature(app: &App, target: &Target, bytes: &[u8]) -> Result<Response, HostedError> {
    let body = body(bytes)?;
    let value = number(&body, "value").ok_or(HostedError::TemperatureNotNumber)?;
    let convert = to_celsius(&body)?;
    let asked = match body.get("mode") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) => match m.trim().to_ascii_lowercase().as_str() {
            "heat" => Some("heat"),
            "cool" => Some("cool"),
            _ => {
                return Err(invalid(
                    "mode must be \"heat\" or \"cool\" (use /temperature/range for heat-cool)",
                ));
            }
        },
        Some(_) => return Err(invalid("mode must be \"heat\" or \"cool\"")),
    };
    commit(app, target, |p| {
        let mode = match asked {
            Some(m) => m,
            None => match p
                .view
                .field("target_temperature_type")
                .and_then(Value::as_str)
            {
                Some("heat") => "heat",
                Some("cool") => "cool",
                current => {
                    return Err(HostedError::Invalid(format!(
                        "mode is required (\"heat\" or \"cool\"): the thermostat is in {} mode",
                        current.unwrap_or("no")
                    )));
                }
            },
        };
        thermostat::can_run(mode, &p.view)?;
        let c = p.view.clamp_to_half("target_temperature", convert(value));
        let mut values = JsonMap::new();
        values.insert("target_temperature".into(), json_number(c));
        values.insert("target_temperature_type".into(), Value::from(mode));
        // The thermostat lights its display for a pushed setpoint, then acknowledges it.
        values.insert("target_change_pending".into(), Value::Bool(true));
        Ok(vec![Change::merge(p.shared(), values)])
    })
}

/// `POST .../temperature/range {"low","high","scale"?}` (or `heatValue`/`coolValue`): both
/// setpoints and heat-cool mode. Low must stay below high after rounding.
pub fn range(app: &App, target: &Target, bytes: &[u8]) -> Result<Response, HostedError> {
    const LOW_HIGH: &str = "Low temperature must be less than high temperature";
    let body = body(bytes)?;
    let read = |a: &str, b: &str| number(&body, a).or_else(|| number(&body, b));
    let (Some(low), Some(high)) = (read("low", "heatValue"), read("high", "coolValue")) else {
        return Err(invalid("low and high must be numbers"));
    };
    let convert = to_celsius(&body)?;
    let (low, high) = (convert(low), convert(high));
    if low >= high {
        return Err(invalid(LOW_HIGH));
    }
    commit(app, target, |p| {
        thermostat::can_run("range", &p.view)?;
        let low = p.view.clamp_to_half("target_temperature_low", low);
        let high = p.view.clamp_to_half("target_temperature_high", high);
        if low >= high {
            return Err(invalid(LOW_HIGH));
        }
        let mut values = JsonMap::new();
        values.insert("target_temperature_low".into(), json_number(low));
        values.insert("target_temperature_high".into(), json_number(high));
        values.insert("target_temperature_type".into(), Value::from("range"));
        values.insert("target_change_pending".into(), Value::Bool(true));
        Ok(vec![Change::merge(p.shared(), values)])
    })
}

/// `POST .../away {"away"}` (and `.../eco {"enabled"}`): manual eco on the thermostat's
/// structure, which the firmware honours, and `shared.auto_away` 2 or 0, which clients read.
pub fn away(
    app: &App,
    target: &Target,
    bytes: &[u8],
    field: &str,
) -> Result<Response, HostedError> {
    let body = body(bytes)?;
    let away = body
        .get(field)
        .and_then(Value::as_bool)
        .ok_or_else(|| HostedError::Invalid(format!("{field} must be true or false")))?;
    let owner = app
        .state
        .accounts(|a| a.owner_of(&target.serial).map(|o| o.user.clone()));
    let structure = structure_key(owner.as_deref());
    commit(app, target, |p| {
        let mut shared = JsonMap::new();
        shared.insert("auto_away".into(), Value::from(if away { 2 } else { 0 }));
        Ok(vec![
            Change::merge(p.shared(), shared),
            Change::merge(structure, thermostat::away_values(away, p.now_ms)),
        ])
    })
}

/// `POST .../lock`: `{"enabled":true,"pin_hash","temp_min","temp_max"}` locks the dial to a
/// range; `{"enabled":false}` unlocks it. `pin_hash` is stored as given (it must be standard
/// Base64 of a 20-byte SHA-1 digest, which the hosted documentation computes over the 4-digit
/// PIN followed by the serial); a plaintext `pin` is refused and never stored.
pub fn lock(app: &App, target: &Target, bytes: &[u8]) -> Result<Response, HostedError> {
    let body = body(bytes)?;
    if body.contains_key("pin") {
        return Err(invalid(
            "A plaintext pin is not accepted: send pin_hash, the standard Base64 of SHA-1 of the \
             4-digit PIN followed by the serial",
        ));
    }
    let enabled = body
        .get("enabled")
        .and_then(Value::as_bool)
        .ok_or_else(|| invalid("enabled must be true or false"))?;
    let mut values = JsonMap::new();
    if !enabled {
        values.insert("temperature_lock".into(), Value::Bool(false));
        values.insert("temperature_lock_pin_hash".into(), Value::from(""));
        return commit(app, target, |p| Ok(vec![Change::merge(p.device(), values)]));
    }
    let pin_hash = body
        .get("pin_hash")
        .and_then(Value::as_str)
        .filter(|h| {
            base64::engine::general_purpose::STANDARD
                .decode(h)
                .is_ok_and(|d| d.len() == 20)
        })
        .ok_or_else(|| invalid("pin_hash must be the standard Base64 of a 20-byte SHA-1 digest"))?;
    let (Some(min), Some(max)) = (number(&body, "temp_min"), number(&body, "temp_max")) else {
        return Err(invalid("temp_min and temp_max must be numbers (°C)"));
    };
    let pin_hash = pin_hash.to_string();
    commit(app, target, |p| {
        // Compared after clamping to the thermostat's bounds, so 36/40 °C is refused rather
        // than stored as a lock to the single value 35 °C.
        let low = p.view.clamp("temperature_lock_low_temp", min);
        let high = p.view.clamp("temperature_lock_high_temp", max);
        if low >= high {
            return Err(invalid(
                "temp_min must be less than temp_max (after clamping to the thermostat's range)",
            ));
        }
        values.insert("temperature_lock".into(), Value::Bool(true));
        values.insert("temperature_lock_pin_hash".into(), Value::String(pin_hash));
        values.insert("temperature_lock_low_temp".into(), json_number(low));
        values.insert("temperature_lock_high_temp".into(), json_number(high));
        Ok(vec![Change::merge(p.device(), values)])
    })
}

/// `POST .../mode {"mode"}`: heat, cool, heat-cool or off (and the control API's other names:
/// heat_cool, range, auto, emergency), if the thermostat's equipment can run it.
pub fn mode(app: &App, target: &Target, bytes: &[u8]) -> Result<Response, HostedError> {
    let body = body(bytes)?;
    let Some(asked) = body.get("mode").and_then(Value::as_str) else {
        return Err(invalid(
            "mode must be a string: \"heat\", \"cool\", \"heat-cool\" or \"off\"",
        ));
    };
    if asked.trim().eq_ignore_ascii_case("eco") {
        return Err(invalid(
            "Eco is not a mode: use POST /thermostat/{deviceId}/away (true turns eco on)",
        ));
    }
    commit(app, target, |p| {
        let nest = thermostat::nest_mode(asked, &p.view)?;
        let mut values = JsonMap::new();
        values.insert("target_temperature_type".into(), Value::from(nest));
        Ok(vec![Change::merge(p.shared(), values)])
    })
}

/// `POST .../fan`: `{"mode":"on"|"auto"|"off"}`, `{"duration": seconds}` (1 to 43200; with
/// `"mode":"on"` too, as some clients send) or `{"enabled": bool}`.
pub fn fan(app: &App, target: &Target, bytes: &[u8]) -> Result<Response, HostedError> {
    let body = body(bytes)?;
    let mode = match body.get("mode") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) => match m.trim().to_ascii_lowercase().as_str() {
            "on" => Some(Fan::On),
            "auto" | "off" => Some(Fan::Auto),
            _ => return Err(invalid("mode must be \"on\", \"auto\" or \"off\"")),
        },
        Some(_) => return Err(invalid("mode must be \"on\", \"auto\" or \"off\"")),
    };
    let request = match (body.get("duration"), mode) {
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
    commit(app, target, |p| {
        let until = thermostat::fan_timer_timeout(request, &p.view, p.now_ms)?;
        let mut values = JsonMap::new();
        values.insert("fan_timer_timeout".into(), Value::from(until));
        Ok(vec![Change::merge(p.device(), values)])
    })
}

/// `PUT .../schedule {"schedule":{...}}`: replaces the whole schedule. The body of `GET
/// .../schedule` (with its `device`) is accepted as is.
pub fn schedule(app: &App, target: &Target, bytes: &[u8]) -> Result<Response, HostedError> {
    let body = body(bytes)?;
    let Some(schedule) = body.get("schedule").filter(|s| s.is_object()) else {
        return Err(invalid(
            "schedule is required: send {\"schedule\": {\"ver\": 2, \"name\", \"schedule_mode\", \"days\"}}",
        ));
    };
    let values = schedules::validate(schedule, schedules::HOSTED_LAST_TIME)?;
    commit(app, target, |p| {
        Ok(vec![Change {
            key: format!("schedule.{}", p.serial),
            values,
            replace: true,
        }])
    })
}

/// `DELETE /thermostat/{id}` (owner only): unlinks the thermostat from its owner and ends every
/// share. It keeps its state and keeps working, and can be claimed again with a new entry key.
pub fn unlink(app: &App, target: &Target, key: &ApiKey) -> Result<Response, HostedError> {
    let open_mode = !app.config.require_device_pairing;
    accounts::unlink(&app.state, &target.serial, Some(&key.user), open_mode)?;
    Ok(Response::json(
        200,
        &json!({"success": true, "message": "Device deleted successfully"}),
    ))
}
