//! People and the presence URL on the control port (docs/presence.md): the page's
//! `/api/people` routes (the owner's home, as everything on this port acts for the default
//! user), and `POST /api/presence/{person}`, which phones, OwnTracks and scripts call with the
//! person's own token, which can do nothing else.

use serde_json::{Value, json};

use super::error::ControlError;
use super::input;
use crate::app::App;
use crate::http::{Request, Response};
use crate::people::{self, PeopleError, Reported};
use crate::state::DEFAULT_USER;
use crate::util::ratelimit::{self, Quota, RateLimiter};

/// The largest body the presence URL takes.
pub const BODY_LIMIT: usize = 16 * 1024;

impl From<PeopleError> for ControlError {
    fn from(e: PeopleError) -> Self {
        match e {
            PeopleError::Exists(_) => ControlError::Conflict(e.to_string()),
            PeopleError::Unknown(_) | PeopleError::UnknownUser(_) => {
                ControlError::Missing(e.to_string())
            }
            PeopleError::Storage(e) => ControlError::Storage(e),
            PeopleError::RandomUnavailable | PeopleError::Thermostat(..) => ControlError::Refused {
                status: 500,
                message: e.to_string(),
            },
            PeopleError::InvalidName
            | PeopleError::InvalidRegion
            | PeopleError::TooMany
            | PeopleError::Vacation(_) => ControlError::Invalid(e.to_string()),
        }
    }
}

/// `GET /api/people`: the owner's people (token previews only), and the home: away or not, why,
/// since when, until when, when it goes away if nobody comes back, the vacation.
pub fn list(app: &App) -> Response {
    let user = DEFAULT_USER;
    let topic = |name: &str| {
        app.config()
            .mqtt
            .as_ref()
            .map(|m| format!("{}/presence/{name}/state", m.topic_prefix))
    };
    let list: Vec<Value> = app.state().accounts(|a| {
        people::people_of(a, user)
            .map(|(name, p)| {
                json!({
                    "name": name,
                    "region": p.region,
                    "token": p.token.as_ref().map(|t| t.preview.clone()),
                    "home": p.seen.map(|s| s.home),
                    "since": p.seen.map(|s| s.at_ms),
                    "source": p.seen.map(|s| s.source.as_str()),
                    "path": people::path(name),
                    "topic": topic(name),
                })
            })
            .collect()
    });
    let home = people::status(app, user);
    Response::json(
        200,
        &json!({
            "away_after_minutes": app.people().away_after().as_secs() / 60,
            "people": list,
            "home": {
                "away": home.away,
                "why": home.why,
                "since": home.since_ms,
                "until": home.until_ms,
                "leaving_at": home.leaving_at_ms,
                "vacation": home.vacation,
            },
        }),
    )
}

fn made(token: &people::NewToken, status: u16) -> Response {
    Response::json(
        status,
        &json!({"name": token.name, "token": token.token, "path": token.path()}),
    )
}

/// `POST /api/people {"name", "region"?}`: adds a person to the owner's home; 201 with their
/// token, shown this once.
pub fn add(app: &App, body: &[u8]) -> Result<Response, ControlError> {
    let body = input::json_object(body)?;
    let text = |field: &str| match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(ControlError::Invalid(format!("{field} must be a string"))),
    };
    let name = text("name")?.ok_or_else(|| {
        ControlError::Invalid("name required: the person's name, e.g. {\"name\": \"alice\"}".into())
    })?;
    let made_token = people::add(app.state(), DEFAULT_USER, name, text("region")?)?;
    app.people().nudge();
    Ok(made(&made_token, 201))
}

/// `DELETE /api/people/{name}`.
pub fn remove(app: &App, name: &str) -> Result<Response, ControlError> {
    owned(app, name)?;
    people::remove(app.state(), name)?;
    app.people().nudge();
    Ok(Response::json(
        200,
        &json!({"removed": people::person_name(name)?}),
    ))
}

/// `POST /api/people/{name}/token` (a new token, shown once) and `DELETE` (none: revoked).
pub fn token(app: &App, name: &str, revoke: bool) -> Result<Response, ControlError> {
    owned(app, name)?;
    match people::replace_token(app.state(), name, revoke)? {
        Some(t) => Ok(made(&t, 200)),
        None => Ok(Response::json(
            200,
            &json!({"name": people::person_name(name)?, "token": null}),
        )),
    }
}

/// The control port manages the owner's people only (other users' are the command line's).
fn owned(app: &App, name: &str) -> Result<(), ControlError> {
    let name = people::person_name(name)?;
    let user = app
        .state()
        .accounts(|a| a.people.get(&name).map(|p| p.user.clone()));
    match user {
        Some(u) if u == DEFAULT_USER => Ok(()),
        _ => Err(PeopleError::Unknown(name).into()),
    }
}

/// `POST /api/presence/{person}`: a person's report, authorised by their presence token only
/// (`Authorization: Bearer`, `?token=`, or Basic's password as OwnTracks sends it). A valid token
/// is counted against its person; a request without one against its address, which, once it
/// has used up its window, gets 429 for requests without a valid token (not for valid ones:
/// `util::ratelimit` says why).
pub fn report(
    app: &App,
    limits: &RateLimiter,
    req: &Request,
    name: &str,
) -> Result<Response, ControlError> {
    let now = app.config().clock.now_ms();
    let basic = req
        .basic_credentials()
        .map_err(|_| ControlError::BadEncoding)?;
    let query_token = req
        .query_param("token")
        .map_err(|_| ControlError::BadEncoding)?;
    let presented = req
        .api_key()
        .map(str::to_string)
        .or(query_token)
        .or(basic.map(|(_, password)| password));
    let name = people::person_name(name).unwrap_or_default();
    let found = app
        .state()
        .accounts(|a| people::authenticate(a, &name, presented.as_deref()));
    let limited = |quota: Quota| ControlError::RateLimited {
        wait_ms: quota.reset_ms - now,
    };
    let Some(name) = found else {
        let address = ratelimit::address_key(req.remote);
        if let Some(quota) = limits.exhausted(&address, now) {
            return Err(limited(quota));
        }
        limits.take_unknown(&address, now, "presence URL");
        return Err(ControlError::PresenceUnauthorized);
    };
    let quota = limits.take(&format!("person:{name}"), now);
    if !quota.allowed {
        return Err(limited(quota));
    }
    let region = app
        .state()
        .accounts(|a| a.people.get(&name).map(|p| p.region.clone()))
        .unwrap_or_default();
    let home_param = req
        .query_param("home")
        .map_err(|_| ControlError::BadEncoding)?;
    // OwnTracks names its user and device in these headers; an empty body from it says nothing.
    let owntracks = req.header("x-limit-u").is_some() || req.header("x-limit-d").is_some();
    let parsed = people::report::http(home_param.as_deref(), &req.body, &region, owntracks)
        .map_err(|bad| ControlError::Invalid(bad.to_string()))?;
    let outcome = match parsed.home {
        Some(home) => Some(app.people().report(
            app.state(),
            &name,
            home,
            parsed.source,
            parsed.at_s.map(|s| s.saturating_mul(1000)),
        )?),
        None => None,
    };
    if outcome == Some(Reported::Changed) {
        log::info!(
            "presence: {name} is {} ({})",
            if parsed.home == Some(true) {
                "home"
            } else {
                "away"
            },
            parsed.source.as_str()
        );
    }
    if parsed.is_owntracks() {
        // What OwnTracks expects: a list of messages for it (none).
        return Ok(Response::json(200, &json!([])));
    }
    let home = app
        .state()
        .accounts(|a| a.people.get(&name).and_then(|p| p.seen.map(|s| s.home)));
    Ok(Response::json(
        200,
        &json!({
            "person": name,
            "home": home,
            "changed": outcome == Some(Reported::Changed),
        }),
    ))
}
