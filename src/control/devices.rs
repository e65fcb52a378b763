//! Per-thermostat maintenance routes: its schedule, a re-push of its state, deleting it.

use serde_json::json;

use super::ControlError;
use super::input;
use crate::accounts;
use crate::app::App;
use crate::http::{Request, Response};
use crate::hub::Origin;
use crate::thermostat::{self, schedule};

/// `GET /api/schedule?serial=S`: the schedule bucket, or `"schedule": null` when the
/// thermostat has none, with the `limits` a `set_schedule` from an editor should keep to.
pub fn schedule(app: &App, req: &Request) -> Result<Response, ControlError> {
    let serial = input::query_serial(req)?;
    let key = format!("schedule.{serial}");
    let found = app
        .state
        .read_device(&serial, |d| d.buckets.get(&key).cloned())
        .ok_or(ControlError::DeviceNotFound)?;
    let limits = thermostat::view(&app.state, &serial)
        .map(|v| schedule::limits(&v, schedule::CONTROL_LAST_TIME))
        .ok_or(ControlError::DeviceNotFound)?;
    let body = match found {
        Some(b) => json!({
            "serial": serial,
            "schedule": b.value,
            "object_revision": b.revision,
            "object_timestamp": b.timestamp,
            "limits": limits,
        }),
        None => json!({"serial": serial, "schedule": null, "limits": limits}),
    };
    Ok(Response::json(200, &body))
}

/// `POST /notify-device {"serial"}`: sends every bucket, unchanged, to the thermostat's held
/// subscribes.
pub fn notify(app: &App, body: &[u8]) -> Result<Response, ControlError> {
    let serial = input::body_serial(&input::json_object(body)?)?;
    let notified = app
        .state
        .repush(&serial)
        .ok_or(ControlError::DeviceNotFound)?;
    Ok(Response::json(
        200,
        &json!({"success": true, "subscribers_notified": notified}),
    ))
}

/// `DELETE /api/device {"serial"}`: forgets the thermostat's buckets, metadata and history,
/// and drops its owner and shares. In open mode it is also released: if it connects again it
/// is not the default user's but waits (`/api/waiting`) to be adopted or claimed; with pairing
/// required it is unclaimed, which is the same. Its entry keys are kept.
pub fn delete(app: &App, body: &[u8]) -> Result<Response, ControlError> {
    let serial = input::body_serial(&input::json_object(body)?)?;
    let serial = input::known(app, serial)?;
    // Accounts first: a crash between the two commits then leaves a released thermostat that
    // still has its state (deleting it again finishes the job), never a forgotten one with no
    // record of its release, which the default user would take when it connects again.
    let open_mode = !app.config.require_device_pairing;
    accounts::release(&app.state, &serial, open_mode)?;
    let deleted = app.state.update_device(&serial, Origin::Server, |txn| {
        if !txn.exists() {
            return Err(ControlError::DeviceNotFound);
        }
        Ok(txn.delete_all())
    })?;
    log::info!("{serial} deleted ({deleted} buckets)");
    // The history recorder also removes it on the change event; this does not depend on the
    // event reaching it.
    if let Err(e) = crate::history::file::remove(&crate::history::dir(app), &serial) {
        log::warn!("could not remove the history of {serial}: {e}");
    }
    Ok(Response::json(
        200,
        &json!({"success": true, "serial": serial, "objects_deleted": deleted}),
    ))
}

/// `GET /api/config`: what the dashboard needs to tell a user how to point a thermostat here.
pub fn config(app: &App) -> Response {
    Response::json(
        200,
        &json!({
            "api_origin": app.origin.raw,
            "cloudregisterurl": app.origin.cloud_register_url(),
            "require_device_pairing": app.config.require_device_pairing,
            "entry_key_ttl_seconds": app.config.entry_key_ttl_secs,
        }),
    )
}
