//! Keys, users and shares from the dashboard: `/api/keys`, `/api/users`, `/api/shares`.
//!
//! These routes give out what the whole server can do (a new key of `owner` with `write` is as
//! good as the control port itself), so they answer only callers that may already do
//! everything: anyone the control port serves without a key (open control port, or Home
//! Assistant's ingress proxy), and with `CONTROL_REQUIRE_KEY` a key of `owner` with no serial
//! limit and the `write` scope, for reads too ([`super::ControlApi`]). A web page of another
//! site never gets here (the browser rule, [`crate::browser`]). A new key is in the answer to
//! its `POST` only, marked `Cache-Control: no-store`; lists show a key's preview, never the key.
//!
//! The rules are the accounts module's, as for `hearth users|keys|share` ([`crate::admin`]).

use serde_json::{Value, json};

use super::ControlError;
use super::input;
use crate::accounts::keys::{self, KeySpec};
use crate::accounts::{self, AccountsError, effective_owner};
use crate::app::App;
use crate::http::Response;
use crate::state::{ApiKey, DEFAULT_USER, Scope, ShareAccess};
use crate::thermostat::{self, names};
use crate::util::JsonMap;
use crate::util::clock;

/// A key's label: what tells it apart in a list.
const LABEL_MAX: usize = 64;

/// `GET /api/keys`: `{"keys":[key]}`, every user's, by id; never the key itself.
pub fn list_keys(app: &App) -> Response {
    let now = app.config().clock.now_ms();
    let keys: Vec<Value> = app
        .state()
        .accounts(|a| a.api_keys.values().map(|k| key_json(k, now)).collect());
    Response::json(200, &json!({ "keys": keys }))
}

/// `POST /api/keys {"name","scopes","user"?,"serials"?,"expires_days"?}`: 201 with the key,
/// shown this once.
pub fn create_key(app: &App, body: &[u8]) -> Result<Response, ControlError> {
    let body = input::json_object(body)?;
    let name = label(&body)?;
    let user = match body.get("user") {
        None | Some(Value::Null) => DEFAULT_USER.to_string(),
        Some(Value::String(u)) => accounts::user_name(u).map_err(|_| invalid_user())?,
        Some(_) => return Err(invalid_user()),
    };
    let scopes = scopes(&body)?;
    let serials = match body.get("serials") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|s| match s {
                Value::String(s) => input::serial(s.trim()),
                _ => Err(ControlError::InvalidSerial),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => {
            return Err(ControlError::Invalid(
                "serials must be a list of serials (or left out: every thermostat of the user)"
                    .into(),
            ));
        }
    };
    let expires_days = match body.get("expires_days") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|d| u32::try_from(d).ok())
                .ok_or_else(|| ControlError::Invalid(AccountsError::InvalidExpiry.to_string()))?,
        ),
    };
    let spec = KeySpec {
        user,
        name,
        scopes,
        serials,
        expires_days,
    };
    let made = keys::create(app.state(), &spec).map_err(refusal)?;
    let mut shown = key_json(&made.record, app.config().clock.now_ms());
    shown["key"] = Value::String(made.key);
    let mut response = Response::json(201, &shown);
    response
        .headers
        .push(("Cache-Control".into(), "no-store".into()));
    Ok(response)
}

/// `DELETE /api/keys/{id}`: the key stops working at once.
pub fn revoke_key(app: &App, id: &str) -> Result<Response, ControlError> {
    let id = decode(id)?;
    let key = keys::revoke(app.state(), &id).map_err(refusal)?;
    Ok(done(format!(
        "Revoked API key {} ({}) of {}",
        key.id, key.name, key.user
    )))
}

/// `GET /api/users`: `{"users":[{"name","created","default","owns","shared","keys"}]}`.
pub fn list_users(app: &App) -> Response {
    let open_mode = !app.config().require_device_pairing;
    let serials = app.state().serials();
    let users: Vec<Value> = app.state().accounts(|a| {
        a.users
            .iter()
            .map(|(name, user)| {
                let owns: Vec<&String> = serials
                    .iter()
                    .chain(a.owners.keys().filter(|s| !serials.contains(s)))
                    .filter(|s| effective_owner(a, s, open_mode) == Some(name.as_str()))
                    .collect();
                let shared: Vec<Value> = a
                    .shares
                    .iter()
                    .filter_map(|(serial, m)| {
                        m.get(name)
                            .map(|s| json!({"serial": serial, "access": s.access.as_str()}))
                    })
                    .collect();
                json!({
                    "name": name,
                    "created": (user.created_ms > 0).then(|| clock::iso8601_ms(user.created_ms)),
                    "default": name == DEFAULT_USER,
                    "owns": owns,
                    "shared": shared,
                    "keys": a.api_keys.values().filter(|k| &k.user == name).count(),
                })
            })
            .collect()
    });
    Response::json(200, &json!({ "users": users }))
}

/// `POST /api/users {"name"}`: 201, or 409 if the user exists.
pub fn add_user(app: &App, body: &[u8]) -> Result<Response, ControlError> {
    let body = input::json_object(body)?;
    let name = user_field(&body, "name", "name required: the user's name")?;
    if accounts::add_user(app.state(), &name).map_err(refusal)? {
        Ok(Response::json(
            201,
            &json!({"success": true, "name": name, "message": format!("Added user {name}")}),
        ))
    } else {
        Err(ControlError::Conflict(format!(
            "User {name} already exists"
        )))
    }
}

/// `DELETE /api/users/{name}`: the user, its keys and the shares made to it go.
pub fn remove_user(app: &App, name: &str) -> Result<Response, ControlError> {
    let name = decode(name)?;
    let removed = accounts::users::remove_user(app.state(), &name).map_err(refusal)?;
    Ok(done(format!(
        "Removed user {}, {} API key{} and {} share{}",
        removed.name,
        removed.keys,
        plural(removed.keys),
        removed.shares,
        plural(removed.shares)
    )))
}

/// `GET /api/shares`: `{"shares":[{"serial","name","user","access","since"}]}`.
pub fn list_shares(app: &App) -> Response {
    let rows: Vec<(String, String, ShareAccess, i64)> = app.state().accounts(|a| {
        a.shares
            .iter()
            .flat_map(|(serial, m)| {
                m.iter()
                    .map(|(user, s)| (serial.clone(), user.clone(), s.access, s.since_ms))
            })
            .collect()
    });
    let shares: Vec<Value> = rows
        .into_iter()
        .map(|(serial, user, access, since)| {
            let name = thermostat::view(app.state(), &serial).and_then(|v| names::name(&v));
            json!({
                "serial": serial,
                "name": name,
                "user": user,
                "access": access.as_str(),
                "since": clock::iso8601_ms(since),
            })
        })
        .collect();
    Response::json(200, &json!({ "shares": shares }))
}

/// `POST /api/shares {"serial","user","access"}`: shares a thermostat someone owns (or changes
/// the access of a share).
pub fn share(app: &App, body: &[u8]) -> Result<Response, ControlError> {
    let body = input::json_object(body)?;
    let serial = input::body_serial(&body)?;
    let user = user_field(&body, "user", "user required: the user to share it with")?;
    let access = body
        .get("access")
        .and_then(Value::as_str)
        .and_then(ShareAccess::parse)
        .ok_or_else(|| ControlError::Invalid("Invalid access: use read or control".into()))?;
    // A thermostat nobody owns is shared with nobody: checked with the share, in one
    // transaction (see [`accounts::share`]).
    let open_mode = !app.config().require_device_pairing;
    accounts::share(app.state(), &serial, &user, access, open_mode).map_err(refusal)?;
    Ok(done(format!(
        "Shared {serial} with {user} ({})",
        access.as_str()
    )))
}

/// `DELETE /api/shares/{serial}/{user}`.
pub fn unshare(app: &App, serial: &str, user: &str) -> Result<Response, ControlError> {
    let serial = input::serial(&decode(serial)?)?;
    let user = accounts::user_name(&decode(user)?).map_err(|_| invalid_user())?;
    accounts::unshare(app.state(), &serial, &user).map_err(refusal)?;
    Ok(done(format!("{serial} is no longer shared with {user}")))
}

fn key_json(k: &ApiKey, now_ms: i64) -> Value {
    json!({
        "id": k.id,
        "name": k.name,
        "user": k.user,
        "scopes": k.scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        "serials": k.serials,
        "preview": k.preview,
        "created": clock::iso8601_ms(k.created_ms),
        "last_used": k.last_used_ms.map(clock::iso8601_ms),
        "expires": k.expires_ms.map(clock::iso8601_ms),
        "expired": k.is_expired(now_ms),
    })
}

/// `name`: required, 1 to 64 characters once trimmed, no control characters.
fn label(body: &JsonMap) -> Result<String, ControlError> {
    let bad = || {
        ControlError::Invalid(format!(
            "name required: a label of 1 to {LABEL_MAX} characters, to tell keys apart"
        ))
    };
    let name = body.get("name").and_then(Value::as_str).ok_or_else(bad)?;
    let name = name.trim();
    if name.is_empty() || name.chars().count() > LABEL_MAX || name.chars().any(char::is_control) {
        return Err(bad());
    }
    Ok(name.to_string())
}

/// `scopes`: `["read","write"]` or `"read,write"`.
fn scopes(body: &JsonMap) -> Result<Vec<Scope>, ControlError> {
    let bad = || ControlError::Invalid("Invalid scopes: use read, write, or both".into());
    let raw = match body.get("scopes") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or_else(bad))
            .collect::<Result<Vec<_>, _>>()?
            .join(","),
        _ => return Err(bad()),
    };
    keys::parse_scopes(&raw).map_err(|_| bad())
}

/// A user name in the body's `field`: `missing` when it is absent.
fn user_field(body: &JsonMap, field: &str, missing: &str) -> Result<String, ControlError> {
    match body.get(field) {
        None | Some(Value::Null) => Err(ControlError::Invalid(missing.to_string())),
        Some(Value::String(u)) => accounts::user_name(u).map_err(|_| invalid_user()),
        Some(_) => Err(invalid_user()),
    }
}

fn invalid_user() -> ControlError {
    ControlError::Invalid(
        "Invalid user name: use 1 to 64 letters, digits, '_', '-', '.' or '@'".into(),
    )
}

/// The accounts' refusals, in this API's statuses: what is missing is 404, what is in the way
/// 409, the rest of the caller's input 400.
fn refusal(e: AccountsError) -> ControlError {
    match e {
        AccountsError::UnknownUser(u) => ControlError::Missing(format!("No user named {u}")),
        AccountsError::UnknownKey(id) => ControlError::Missing(format!("No API key with id {id}")),
        AccountsError::NotShared { serial, user } => {
            ControlError::Missing(format!("{serial} is not shared with {user}"))
        }
        AccountsError::UnknownDevice(_) => ControlError::DeviceNotFound,
        e @ (AccountsError::TooMany { .. }
        | AccountsError::DefaultUserStays
        | AccountsError::UserOwns { .. }
        | AccountsError::NoOwner(_)
        | AccountsError::ShareWithOwner { .. }) => ControlError::Conflict(e.to_string()),
        AccountsError::InvalidUserName => invalid_user(),
        AccountsError::InvalidSerial(_) => ControlError::InvalidSerial,
        e @ AccountsError::InvalidExpiry => ControlError::Invalid(e.to_string()),
        e => ControlError::from(e),
    }
}

fn done(message: String) -> Response {
    Response::json(200, &json!({"success": true, "message": message}))
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A path segment, percent-decoded (a user name may hold `@`, which a page sends as `%40`).
fn decode(segment: &str) -> Result<String, ControlError> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).ok_or(ControlError::BadPath)?;
            let hex = std::str::from_utf8(hex).map_err(|_| ControlError::BadPath)?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| ControlError::BadPath)?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ControlError::BadPath)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_percent_decoded() {
        assert_eq!(decode("ha%40home").unwrap(), "ha@home");
        assert_eq!(decode("alice").unwrap(), "alice");
        for bad in ["%4", "%zz", "%ff"] {
            assert!(matches!(decode(bad), Err(ControlError::BadPath)), "{bad}");
        }
    }
}
