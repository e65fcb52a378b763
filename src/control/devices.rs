//! Per-thermostat maintenance routes: its schedule, a re-push of its state, removing it.

use serde_json::json;

use super::ControlError;
use super::input;
use crate::accounts;
use crate::app::App;
use crate::http::{Request, Response};
use crate::thermostat::{self, schedule};

/// `GET /api/schedule?serial=S`: the schedule bucket, or `"schedule": null` when the
/// thermostat has none, with the `limits` a `set_schedule` from an editor should keep to.
pub fn schedule(app: &App, req: &Request) -> Result<Response, ControlError> {
    let serial = input::shown(app, input::query_serial(req)?)?;
    let key = format!("schedule.{serial}");
    let found = app
        .state()
        .read_device(&serial, |d| d.buckets.get(&key).cloned())
        .ok_or(ControlError::DeviceNotFound)?;
    let limits = thermostat::view(app.state(), &serial)
        .map(|v| schedule::limits(&v, schedule::CONTROL_LAST_TIME))
        .ok_or(ControlError::DeviceNotFound)?;
    let mut body = match found {
        Some(b) => json!({
            "serial": serial,
            "schedule": b.value,
            "object_revision": b.revision,
            "object_timestamp": b.timestamp,
            "limits": limits,
        }),
        None => json!({"serial": serial, "schedule": null, "limits": limits}),
    };
    body["now"] = now_in_week(app, &serial);
    Ok(Response::json(200, &body))
}

/// Where the thermostat's week stands now, in its structure's time zone (an editor's "today"
/// and line at now): `{"day","time","time_zone","time_zone_source","structure_time_zone"}`,
/// `day` 0 being Monday as the schedule's day keys count, `time` seconds since local midnight.
fn now_in_week(app: &App, serial: &str) -> serde_json::Value {
    let zone = app.zone_of(serial);
    let (day, time) = zone.week_time(app.config().clock.now_ms());
    let mut out = serde_json::Map::new();
    out.insert("day".into(), json!(day));
    out.insert("time".into(), json!(time));
    zone.named.put(&mut out);
    serde_json::Value::Object(out)
}

/// `POST /notify-device {"serial"}`: sends every bucket, unchanged, to the thermostat's held
/// subscribes.
pub fn notify(app: &App, body: &[u8]) -> Result<Response, ControlError> {
    let serial = input::body_serial(&input::json_object(body)?)?;
    let notified = app
        .state()
        .repush(&serial)
        .ok_or(ControlError::DeviceNotFound)?;
    Ok(Response::json(
        200,
        &json!({"success": true, "subscribers_notified": notified}),
    ))
}

/// `DELETE /api/device {"serial"}` (the page's Remove): releases the thermostat (see
/// [`mod@accounts::release`]): its owner and shares end, so it is unlisted and nobody's, but
/// nothing of it is forgotten. It keeps operating (its state, history, pin and connection
/// stay), so adding it (`POST /api/adopt`, open mode) or claiming it again with a new entry key
/// brings it back at once as it is. One nobody owns stays as it is (with pairing required,
/// one never claimed is not released: it stays unclaimed). `objects_deleted` is always 0 (the
/// Python server's field).
pub fn delete(app: &App, body: &[u8]) -> Result<Response, ControlError> {
    let serial = input::body_serial(&input::json_object(body)?)?;
    let serial = input::known(app, serial)?;
    accounts::release(app.state(), &serial, !app.config().require_device_pairing)?;
    Ok(Response::json(
        200,
        &json!({"success": true, "serial": serial, "objects_deleted": 0}),
    ))
}

/// `GET /api/config`: what the dashboard needs to tell a user how to point a thermostat here.
pub fn config(app: &App) -> Response {
    Response::json(
        200,
        &json!({
            "api_origin": app.origin().raw,
            "cloudregisterurl": app.origin().cloud_register_url(),
            // Why that address cannot work from a thermostat, if it cannot.
            "cloudregisterurl_warning": crate::app::unreachable_from_lan(
                crate::app::Reach::Thermostats,
                app.origin(),
                app.config(),
            ),
            "require_device_pairing": app.config().require_device_pairing,
            "entry_key_ttl_seconds": app.config().entry_key_ttl_secs,
        }),
    )
}
