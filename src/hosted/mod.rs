//! The hosted service's REST API (`/api/v1`), served on the control port, so scripts and
//! integrations written for the hosted No Longer Evil service work by changing the base URL.
//!
//! Every request needs an API key (`Authorization: Bearer nle_…`, made with `hearth keys
//! create`); every answer carries the `X-RateLimit-*` headers. The order of checks decides the
//! answer: an address that has sent too many requests without a valid key (429, whatever it
//! sends now), key (401), rate limit (429), route (404/405), the thermostat and the caller's
//! relation to it (404), the key's serials, scopes and share (403), then the body (400).
//! Write bodies are parsed into the thermostat core's intents and committed through it, as
//! server-side changes that reach the thermostat's held subscribe at once.

mod error;
pub mod ratelimit;
mod read;
mod write;

pub use error::HostedError;
use ratelimit::RateLimiter;

use std::sync::Arc;

use crate::accounts::Viewer;
use crate::accounts::access::Need;
use crate::accounts::keys;
use crate::app::App;
use crate::http::{Method, Request, Response, percent_decode};
use crate::state::{ApiKey, Scope};
use crate::thermostat::BucketKind;
use crate::util::clock;

pub const PREFIX: &str = "/api/v1";

/// Whether a path belongs to this API.
pub fn owns(path: &str) -> bool {
    path == PREFIX || path.starts_with("/api/v1/")
}

/// The hosted API, with its per-key request counts.
pub struct HostedApi {
    app: Arc<App>,
    rate_limits: RateLimiter,
}

impl HostedApi {
    pub fn new(app: Arc<App>) -> HostedApi {
        HostedApi {
            rate_limits: RateLimiter::new(app.config.api_rate_limit_per_minute),
            app,
        }
    }

    /// Answers one `/api/v1` request (the port adds the CORS headers).
    pub fn handle(&self, req: &Request) -> Response {
        let app = &self.app;
        let now = app.config.clock.now_ms();
        let address = format!(
            "ip:{}",
            req.remote
                .map(|a| crate::util::client_key(a.ip()).to_string())
                .unwrap_or_default()
        );
        // An address that has used up its window on requests without a valid key gets 429 for
        // everything, a valid key included (see `ratelimit`); its key is not even looked up.
        if let Some(quota) = self.rate_limits.exhausted(&address, now) {
            log::debug!("hosted API: refused {address}: over its limit of requests without a key");
            let refused = HostedError::RateLimited {
                retry_at_ms: quota.reset_ms,
                wait_ms: quota.reset_ms - now,
            };
            return with_quota(refused.response(), quota);
        }
        let key = keys::authenticate(&app.state, req.api_key(), now);
        // Callers without a valid key get 401 (the seed's order: key, then rate limit) and are
        // counted by address, which limits guessing keys.
        let caller = match &key {
            Some(k) => format!("key:{}", k.id),
            None => address,
        };
        let quota = self.rate_limits.take(&caller, now);
        if key.is_none() && quota.remaining == 0 {
            // Once per window: what follows from that address is refused without a word.
            log::warn!(
                "hosted API: {} requests without a valid key from {} this minute; everything \
                 from it is refused until {}",
                quota.limit,
                caller.trim_start_matches("ip:"),
                clock::iso8601_ms(quota.reset_ms)
            );
        }
        let result = match key {
            None => Err(HostedError::Unauthorized),
            Some(_) if !quota.allowed => Err(HostedError::RateLimited {
                retry_at_ms: quota.reset_ms,
                wait_ms: quota.reset_ms - now,
            }),
            Some(key) => route(app, req, &key),
        };
        with_quota(result.unwrap_or_else(|e| e.response()), quota)
    }
}

/// The `X-RateLimit-*` headers every `/api/v1` answer carries.
fn with_quota(mut response: Response, quota: ratelimit::Quota) -> Response {
    response.headers.extend([
        ("X-RateLimit-Limit".to_string(), quota.limit.to_string()),
        (
            "X-RateLimit-Remaining".to_string(),
            quota.remaining.to_string(),
        ),
        (
            "X-RateLimit-Reset".to_string(),
            clock::iso8601_ms(quota.reset_ms),
        ),
    ]);
    response
}

/// What a request asks for, once its path and method are known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Devices,
    Status,
    GetSchedule,
    Energy,
    Write(Write),
    Unlink,
}

/// A write to a thermostat: its body becomes one of the core's intents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Write {
    Schedule,
    Temperature,
    Range,
    Away,
    /// `POST .../eco {"enabled"}`: not in the hosted documentation, but a real client sends
    /// it; eco on a Nest is away (manual eco), so it is answered as away.
    Eco,
    Lock,
    Mode,
    Fan,
}

impl Action {
    fn need(self) -> Need {
        match self {
            Action::Devices | Action::Status | Action::GetSchedule | Action::Energy => Need::Read,
            Action::Unlink => Need::Unlink,
            Action::Write(_) => Need::Write,
        }
    }
}

impl Write {
    /// The bucket the answer reports, as the hosted documentation names it.
    fn reports(self) -> BucketKind {
        match self {
            Write::Fan | Write::Lock => BucketKind::Device,
            Write::Schedule => BucketKind::Schedule,
            _ => BucketKind::Shared,
        }
    }
}

/// The action and (for thermostat routes) the `{deviceId}` of a path under `/api/v1`.
fn parse(method: Method, path: &str) -> Result<(Action, Option<String>), HostedError> {
    let rest = path.strip_prefix(PREFIX).unwrap_or(path);
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let segments: Vec<&str> = rest.split('/').skip(1).collect();
    let get = matches!(method, Method::Get | Method::Head);
    let post = method == Method::Post;
    let (action, allowed, id) = match segments.as_slice() {
        ["devices"] => (Action::Devices, get, None),
        ["thermostat", id] => (Action::Unlink, method == Method::Delete, Some(*id)),
        ["thermostat", id, "status"] => (Action::Status, get, Some(*id)),
        ["thermostat", id, "schedule"] if method == Method::Put => {
            (Action::Write(Write::Schedule), true, Some(*id))
        }
        ["thermostat", id, "schedule"] => (Action::GetSchedule, get, Some(*id)),
        ["thermostat", id, "energy"] => (Action::Energy, get, Some(*id)),
        ["thermostat", id, "temperature"] => (Action::Write(Write::Temperature), post, Some(*id)),
        ["thermostat", id, "temperature", "range"] => {
            (Action::Write(Write::Range), post, Some(*id))
        }
        ["thermostat", id, command] => {
            let write = match *command {
                "away" => Write::Away,
                "eco" => Write::Eco,
                "lock" => Write::Lock,
                "mode" => Write::Mode,
                "fan" => Write::Fan,
                _ => return Err(HostedError::NotFound),
            };
            (Action::Write(write), post, Some(*id))
        }
        _ => return Err(HostedError::NotFound),
    };
    if !allowed {
        return Err(HostedError::MethodNotAllowed);
    }
    let id = id
        .map(|raw| percent_decode(raw).map_err(|_| HostedError::DeviceNotFound))
        .transpose()?;
    Ok((action, id))
}

/// A thermostat a request may act on.
pub struct Target {
    pub serial: String,
}

fn route(app: &App, req: &Request, key: &ApiKey) -> Result<Response, HostedError> {
    let (action, id) = parse(req.method, &req.path)?;
    let Some(id) = id else {
        if !key.has_scope(Scope::Read) {
            return Err(HostedError::MissingScope(Scope::Read));
        }
        return Ok(read::devices(app, key));
    };
    let serial = app
        .state
        .find_device(&id)
        .ok_or(HostedError::DeviceNotFound)?;
    app.sight(&serial, Viewer::Key(key)).allows(action.need())?;
    let target = Target { serial };
    match action {
        Action::Devices => Ok(read::devices(app, key)),
        Action::Status => read::status(app, &target, key),
        Action::GetSchedule => read::schedule(app, &target),
        Action::Energy => read::energy(app, &target, req),
        Action::Unlink => write::unlink(app, &target, key),
        Action::Write(w) => {
            let intent = write::intent(w, &req.body, &target.serial)?;
            write::commit(app, &target, key, &intent, w.reports())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_methods() {
        let ok = |m, p| parse(m, p).unwrap();
        assert_eq!(ok(Method::Get, "/api/v1/devices"), (Action::Devices, None));
        assert_eq!(
            ok(Method::Post, "/api/v1/thermostat/abc/temperature/range"),
            (Action::Write(Write::Range), Some("abc".into()))
        );
        assert_eq!(
            ok(Method::Put, "/api/v1/thermostat/abc/schedule/"),
            (Action::Write(Write::Schedule), Some("abc".into()))
        );
        assert_eq!(
            ok(Method::Delete, "/api/v1/thermostat/abc"),
            (Action::Unlink, Some("abc".into()))
        );
        assert!(matches!(
            parse(Method::Get, "/api/v1/thermostat/abc/away"),
            Err(HostedError::MethodNotAllowed)
        ));
        assert!(matches!(
            parse(Method::Post, "/api/v1/thermostat/abc/turbo"),
            Err(HostedError::NotFound)
        ));
        assert!(matches!(
            parse(Method::Get, "/api/v1"),
            Err(HostedError::NotFound)
        ));
    }
}
