//! Claiming a thermostat with the entry key it shows (`POST /api/register`), dismissing its
//! pairing dialog, and listing or unlinking claimed thermostats.
//!
//! The rules (who may claim what, what a claim pushes) are in [`crate::accounts::links`]; this
//! module reads the Python server's request shapes and answers in its envelope.

use serde_json::{Value, json};

use super::ControlError;
use super::input;
use crate::accounts::{self, Viewer};
use crate::app::App;
use crate::http::{Request, Response};
use crate::thermostat::{self, Intent};

pub fn register(app: &App, body: &[u8]) -> Result<Response, ControlError> {
    let body = input::json_object(body)?;
    let field = |name: &str| match body.get(name) {
        None | Some(Value::Null) => Err(ControlError::MissingClaimFields),
        Some(Value::String(s)) if s.trim().is_empty() => Err(ControlError::MissingClaimFields),
        Some(Value::String(s)) => Ok(s.trim().to_string()),
        Some(_) => Err(ControlError::Invalid(format!("{name} must be a string"))),
    };
    let (code, user) = (field("code")?, field("userId")?);
    // The format checks come before any lookup, so a malformed request never touches the store.
    accounts::links::entry_code(&code)?;
    let user = accounts::user_name(&user)?;
    let serial = accounts::claim(app.state(), &code, &user)?;
    Ok(Response::json(
        200,
        &json!({
            "success": true,
            "message": format!("Device {serial} linked to {user}"),
            "serial": serial,
            "userId": user,
        }),
    ))
}

/// `POST /api/ensure-user {"userId"}`: creates a user if it does not exist yet (the Home
/// Assistant add-on calls this before claiming). An `email` is accepted and not stored.
pub fn ensure_user(app: &App, body: &[u8]) -> Result<Response, ControlError> {
    let body = input::json_object(body)?;
    let user = match body.get("userId") {
        Some(Value::String(s)) if !s.trim().is_empty() => accounts::user_name(s)?,
        _ => {
            return Err(ControlError::Invalid(
                "Missing required field: userId".into(),
            ));
        }
    };
    let created = accounts::add_user(app.state(), &user)?;
    Ok(Response::json(
        200,
        &json!({"success": true, "created": created}),
    ))
}

/// `POST /api/dismiss-pairing/{serial}`: empties the `confirm-pairing` dialog, if there is one,
/// through the core like every command (so a thermostat nobody owns is refused as a command
/// to it is).
pub fn dismiss_pairing(app: &App, serial: &str) -> Result<Response, ControlError> {
    let serial = input::serial(serial)?;
    let intent = Intent::DismissDialog;
    let committed =
        thermostat::commit(app.state(), &serial, &intent, app.visibility(), Viewer::Lan)
            .map_err(|e| ControlError::of(e, &serial))?;
    let dismissed = !committed.writes.is_empty();
    let message = if dismissed {
        format!("Pairing dialog dismissed for {serial}")
    } else {
        format!("No pairing dialog to dismiss for {serial}")
    };
    Ok(Response::json(
        200,
        &json!({"success": true, "message": message}),
    ))
}

/// `GET /api/registered-devices[?userId=U]`: claimed thermostats, newest first; every owner's
/// when `userId` is left out.
pub fn registered(app: &App, req: &Request) -> Result<Response, ControlError> {
    let user = req
        .query_param("userId")
        .map_err(|_| ControlError::BadEncoding)?
        .filter(|u| !u.is_empty());
    let mut rows: Vec<(i64, String, String)> = app.state().accounts(|a| {
        a.owners
            .iter()
            .filter(|(_, o)| user.as_ref().is_none_or(|u| *u == o.user))
            .map(|(s, o)| (o.since_ms, s.clone(), o.user.clone()))
            .collect()
    });
    rows.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let list: Vec<Value> = rows
        .into_iter()
        .map(|(at, serial, user)| json!({"serial": serial, "createdAt": at, "userId": user}))
        .collect();
    Ok(Response::json(200, &list))
}

/// `DELETE /api/registered-devices/{serial}[?userId=U]`: unlinks a thermostat from its owner
/// (from `U` only, when given): it is released and keeps operating (its state, pin and
/// connection stay); it needs a new entry key (or, in open mode, `POST /api/adopt`) to be
/// anyone's again, and then comes back as it is.
pub fn unregister(app: &App, serial: &str, req: &Request) -> Result<Response, ControlError> {
    let serial = input::serial(serial)?;
    let user = req
        .query_param("userId")
        .map_err(|_| ControlError::BadEncoding)?
        .filter(|u| !u.is_empty());
    // Only a claimed thermostat can be unlinked here (an unclaimed one is a 404).
    let link = accounts::Link::Claim(user.as_deref());
    let open_mode = !app.config().require_device_pairing;
    accounts::unlink(app.state(), &serial, link, open_mode)?;
    Ok(Response::json(
        200,
        &json!({"success": true, "message": format!("Device {serial} deleted")}),
    ))
}
