//! Claiming a thermostat with the entry key it shows (`POST /api/register`), dismissing its
//! pairing dialog, and listing or unlinking claimed thermostats.
//!
//! A claim makes the user the thermostat's owner and pushes `user.<id>` (whose `name` takes the
//! thermostat off its pairing screen) and `structure.<id>` to it in one chunk. A claim may move
//! a thermostat away from the default user of open mode (`owner`), never away from another
//! user: that user must unlink it first (`DELETE /api/registered-devices/{serial}`).

use serde_json::{Value, json};

use super::ControlError;
use super::input;
use crate::app::App;
use crate::http::{Request, Response};
use crate::hub::Origin;
use crate::state::{DEFAULT_USER, Op, Owner, Stamp, structure_id};
use crate::util::JsonMap;

pub fn register(app: &App, body: &[u8]) -> Result<Response, ControlError> {
    let body = input::json_object(body)?;
    let field = |name: &str| match body.get(name) {
        None | Some(Value::Null) => Err(ControlError::MissingClaimFields),
        Some(Value::String(s)) if s.trim().is_empty() => Err(ControlError::MissingClaimFields),
        Some(Value::String(s)) => Ok(s.trim().to_string()),
        Some(_) => Err(ControlError::Invalid(format!("{name} must be a string"))),
    };
    let (code, user) = (field("code")?, field("userId")?);
    let code = entry_code(&code)?;
    let user = user_id(&user)?;
    let serial = app.state.update_accounts(|txn| {
        let now = txn.now_ms();
        let key = txn
            .accounts()
            .entry_keys
            .get(&code)
            .filter(|k| k.is_active(now))
            .ok_or(ControlError::CodeNotValid)?;
        let serial = key.serial.clone();
        let current = txn.accounts().owner_of(&serial).map(|o| o.user.clone());
        if let Some(owner) = current
            .as_ref()
            .filter(|o| *o != DEFAULT_USER && **o != user)
        {
            return Err(ControlError::OwnedByOther {
                serial,
                owner: owner.clone(),
            });
        }
        if !txn.accounts().users.contains_key(&user) {
            txn.push(Op::AddUser {
                name: user.clone(),
                created_ms: now,
            });
        }
        txn.push(Op::ClaimEntryKey {
            code: code.clone(),
            user: user.clone(),
            at_ms: now,
        });
        if current.as_deref() != Some(user.as_str()) {
            txn.push(Op::SetOwner {
                serial: serial.clone(),
                owner: Some(Owner {
                    user: user.clone(),
                    since_ms: now,
                }),
            });
        }
        Ok(serial)
    })?;
    // A crash between the two commits leaves an owner without the pushed buckets; the next
    // subscribe creates and sends them (see the device protocol's owner buckets).
    app.state.update_device(&serial, Origin::Server, |txn| {
        let mut name = JsonMap::new();
        name.insert("name".into(), Value::String(user.clone()));
        txn.merge(&format!("user.{user}"), &name, Stamp::Always);
        let key = format!("structure.{}", structure_id(&user));
        let mut structure = JsonMap::new();
        let mut devices = txn
            .bucket(&key)
            .and_then(|b| b.value.get("devices"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !devices.iter().any(|d| d.as_str() == Some(serial.as_str())) {
            devices.push(Value::String(serial.clone()));
        }
        if txn
            .bucket(&key)
            .is_none_or(|b| !b.value.contains_key("name"))
        {
            structure.insert("name".into(), Value::from("Home"));
        }
        structure.insert("devices".into(), Value::Array(devices));
        txn.merge(&key, &structure, Stamp::Always);
        Ok::<_, ControlError>(())
    })?;
    log::info!("{serial} claimed by {user}");
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
        Some(Value::String(s)) if !s.trim().is_empty() => user_id(s.trim())?,
        _ => {
            return Err(ControlError::Invalid(
                "Missing required field: userId".into(),
            ));
        }
    };
    let created = app.state.update_accounts(|txn| {
        if txn.accounts().users.contains_key(&user) {
            return Ok::<_, ControlError>(false);
        }
        txn.push(Op::AddUser {
            name: user.clone(),
            created_ms: txn.now_ms(),
        });
        Ok(true)
    })?;
    Ok(Response::json(
        200,
        &json!({"success": true, "created": created}),
    ))
}

/// `XXX-XXXX` or `XXXXXXX`, any case: seven letters and digits, upper-cased.
fn entry_code(raw: &str) -> Result<String, ControlError> {
    let code: String = raw
        .chars()
        .filter(|c| *c != '-')
        .map(|c| c.to_ascii_uppercase())
        .collect();
    if code.len() == 7 && code.bytes().all(|b| b.is_ascii_alphanumeric()) {
        Ok(code)
    } else {
        Err(ControlError::CodeFormat)
    }
}

/// A user id: 1 to 64 letters, digits, `_`, `-`, `.` or `@`.
pub fn user_id(raw: &str) -> Result<String, ControlError> {
    let ok = (1..=64).contains(&raw.len())
        && raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.@".contains(&b));
    if ok {
        Ok(raw.to_string())
    } else {
        Err(ControlError::Invalid(
            "Invalid userId: use 1 to 64 letters, digits, '_', '-', '.' or '@'".into(),
        ))
    }
}

/// `POST /api/dismiss-pairing/{serial}`: empties the `confirm-pairing` dialog, if there is one.
pub fn dismiss_pairing(app: &App, serial: &str) -> Result<Response, ControlError> {
    let serial = input::known(app, input::serial(serial)?)?;
    let key = format!("device_alert_dialog.{serial}");
    let dismissed = app.state.update_device(&serial, Origin::Server, |txn| {
        if txn.bucket(&key).is_none() {
            return Ok::<_, ControlError>(false);
        }
        txn.replace(&key, JsonMap::new(), Stamp::Always);
        Ok(true)
    })?;
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
    let mut rows: Vec<(i64, String, String)> = app.state.accounts(|a| {
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
/// (from `U` only, when given). Its state stays; in pairing mode it needs a new entry key.
pub fn unregister(app: &App, serial: &str, req: &Request) -> Result<Response, ControlError> {
    let serial = input::serial(serial)?;
    let user = req
        .query_param("userId")
        .map_err(|_| ControlError::BadEncoding)?
        .filter(|u| !u.is_empty());
    app.state.update_accounts(|txn| {
        let owned = txn
            .accounts()
            .owner_of(&serial)
            .is_some_and(|o| user.as_ref().is_none_or(|u| *u == o.user));
        if !owned {
            return Err(ControlError::NotRegistered {
                serial: serial.clone(),
            });
        }
        txn.push(Op::SetOwner {
            serial: serial.clone(),
            owner: None,
        });
        Ok(())
    })?;
    log::info!("{serial} unlinked");
    Ok(Response::json(
        200,
        &json!({"success": true, "message": format!("Device {serial} deleted")}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_codes() {
        assert_eq!(entry_code("184-gund").unwrap(), "184GUND");
        assert_eq!(entry_code("625AZZP").unwrap(), "625AZZP");
        for bad in ["625AZZ", "625AZZPP", "625 AZZP", "62?AZZP"] {
            assert!(
                matches!(entry_code(bad), Err(ControlError::CodeFormat)),
                "{bad}"
            );
        }
    }

    #[test]
    fn user_ids() {
        assert!(user_id("homeassistant").is_ok());
        assert!(user_id("a b").is_err());
        assert!(user_id(&"x".repeat(65)).is_err());
    }
}
