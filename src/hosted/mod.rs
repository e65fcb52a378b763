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
//!
//! Every route is one entry of one table, [`routes::ROUTES`]: its method and path, what the key
//! must allow ([`Need`](crate::accounts::access::Need)) and its handler (a function of
//! [`read`] or [`write`](mod@write), or for a write the body's [`Write`] and the bucket its answer
//! reports). A new route is a new entry, and its row in docs/hosted-api.md's endpoint table.

mod error;
mod read;
mod routes;
mod write;

use crate::util::ratelimit::{self, RateLimiter};
pub use error::HostedError;

use std::sync::Arc;

use crate::accounts::Viewer;
use crate::accounts::keys;
use crate::app::App;
use crate::http::{Request, Response, percent_decode};
use crate::state::ApiKey;
use crate::util::clock;
use routes::Handler;

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
            rate_limits: RateLimiter::new(app.config().api_rate_limit_per_minute),
            app,
        }
    }

    /// Answers one `/api/v1` request (the port adds the CORS headers).
    pub fn handle(&self, req: &Request) -> Response {
        let app = &self.app;
        let now = app.config().clock.now_ms();
        let address = ratelimit::address_key(req.remote);
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
        let key = keys::authenticate(app.state(), req.api_key(), now);
        // Callers without a valid key get 401 (the seed's order: key, then rate limit) and are
        // counted by address, which limits guessing keys.
        let caller = match &key {
            Some(k) => format!("key:{}", k.id),
            None => address,
        };
        let quota = match key {
            Some(_) => self.rate_limits.take(&caller, now),
            None => self.rate_limits.take_unknown(&caller, now, "hosted API"),
        };
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

/// A thermostat a request may act on.
pub struct Target {
    pub serial: String,
}

/// A keyed request within its rate limit, in the order of checks: its route (404, 405; the
/// table's entry), the thermostat it names (404), the key's relation to it (404) and what the
/// entry needs of the key (403), then the handler (which reads the body: 400).
fn route(app: &App, req: &Request, key: &ApiKey) -> Result<Response, HostedError> {
    let (route, id) = routes::find(req.method, &req.path)?;
    let target = match id {
        None => None,
        Some(raw) => {
            let id = percent_decode(raw).map_err(|_| HostedError::DeviceNotFound)?;
            let serial = app
                .state()
                .find_device(&id)
                .ok_or(HostedError::DeviceNotFound)?;
            app.sight(&serial, Viewer::Key(key)).allows(route.need)?;
            Some(Target { serial })
        }
    };
    match (route.handler, target) {
        (Handler::Key(handler), None) => {
            let scope = route.need.scope();
            if !key.has_scope(scope) {
                return Err(HostedError::MissingScope(scope));
            }
            Ok(handler(app, key))
        }
        (Handler::Thermostat(handler), Some(target)) => handler(app, &target, req, key),
        (Handler::Write(w, reports), Some(target)) => {
            let intent = write::intent(w, &req.body, &target.serial)?;
            write::commit(app, &target, key, &intent, reports)
        }
        // An entry whose path and handler disagree on a thermostat (the tests rule it out).
        _ => Err(HostedError::NotFound),
    }
}
