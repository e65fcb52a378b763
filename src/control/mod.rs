//! The control API (port 8082): what curl, dashboards, Home Assistant, Homebridge and
//! Matterbridge use. Every route is listed in docs/control-api.md with a curl example.
//!
//! Every route is one entry of one table, [`routes::ROUTES`]: its method and path, its browser
//! rule, the key scope it needs, its error shape and its handler (a plain function of one of
//! the modules below, adapted in the entry). [`routes::find`] reads it for everything that
//! depends on the route: [`crate::control_port`] asks it for the browser rule ([`guard`]),
//! [`ControlApi::handle`] for the key, the handler and the shape of the errors, 404 and 405
//! included. A new route is a new entry, and its row in docs/control-api.md's route list.
//!
//! Bodies are JSON whatever their Content-Type, and may arrive chunked. By default there is no
//! authentication on this API (an `Authorization` header is ignored); keep port 8082 on the
//! home network. With `CONTROL_REQUIRE_KEY=true` a route wants an API key of the default user
//! `owner` with no serial limit (this API has no per-user view), with the scope its entry
//! names: none for `/health`, the dashboard page and its files, `read` for the other GETs,
//! `write` for the rest, and `write` for the account routes' reads too (`/api/keys`,
//! `/api/users`, `/api/shares`: [`accounts`]; and `/api/homekit`), since they hand out what the
//! whole server can do.
//!
//! The hosted service's REST API (`/api/v1/...`, always keyed) shares this port; the two meet
//! in [`crate::control_port`], which also adds the CORS headers and answers `OPTIONS`.

mod accounts;
mod alerts;
mod claim;
pub(crate) mod command;
mod devices;
mod energy;
pub mod error;
mod history;
#[cfg(feature = "homekit")]
mod homekit;
/// A build without HomeKit (a router's): the page's panel is told so, and there is nothing to
/// unlock.
#[cfg(not(feature = "homekit"))]
mod homekit {
    use serde_json::json;

    use super::ControlError;
    use crate::app::App;
    use crate::http::Response;

    /// `{"enabled": false, "built": false}`: what `GET /api/homekit` says with HomeKit off,
    /// and that no setting turns it on in this build.
    pub fn homekit(_: &App) -> Response {
        let mut response = Response::json(200, &json!({ "enabled": false, "built": false }));
        response
            .headers
            .push(("Cache-Control".into(), "no-store".into()));
        response
    }

    pub fn unlock(_: &App) -> Result<Response, ControlError> {
        Err(ControlError::Missing(
            "this build of hearth has no HomeKit (a build for routers)".into(),
        ))
    }
}
pub(crate) mod input;
mod live;
mod metrics;
mod onboard;
mod people;

pub use people::BODY_LIMIT as PRESENCE_BODY_LIMIT;
mod routes;
pub mod status;
mod waiting;

use std::sync::Arc;

use parking_lot::Mutex;

pub use command::Command;
pub use error::{ControlError, Shape};

use crate::accounts::keys;
use crate::app::App;
use crate::browser::Guard;
use crate::http::{Method, Reply, Request, Response};
use crate::state::{DEFAULT_USER, Scope};
use crate::util::outbound::OutboundGate;
use routes::Call;

pub struct ControlApi {
    app: Arc<App>,
    local: Local,
}

/// What only the control port keeps, in memory, for this process.
pub(crate) struct Local {
    /// `GET /status`'s answers, kept between changes.
    pub status_json: status::StatusJson,
    /// Held while `/api/scan-network` runs: one scan at a time.
    pub scanning: Mutex<()>,
    /// Requests waiting on an outbound call (a scan, pointing a thermostat): at most half the
    /// port's workers.
    pub outbound: OutboundGate,
    /// The presence URL's request counts (by address without a valid token, by person with one).
    pub presence_limits: crate::util::ratelimit::RateLimiter,
}

impl ControlApi {
    /// The gate of requests waiting on an outbound call.
    pub fn outbound(&self) -> &OutboundGate {
        &self.local.outbound
    }

    pub fn new(app: Arc<App>) -> ControlApi {
        ControlApi {
            local: Local {
                status_json: status::StatusJson::default(),
                scanning: Mutex::new(()),
                outbound: OutboundGate::for_workers(app.config().http_workers),
                presence_limits: crate::util::ratelimit::RateLimiter::new(
                    app.config().api_rate_limit_per_minute,
                ),
            },
            app,
        }
    }

    /// Answers one control-API request: the key its route needs, then the route (404 and 405
    /// after the key). `cors`: the headers every answer carries, which a live event stream
    /// must send in its head.
    pub fn handle(&self, request: Request, cors: &[(String, String)]) -> Reply {
        let found = routes::find(request.method, &request.path);
        self.check_key(&request, found.key(request.method))
            .and_then(|key_id| {
                found.answer(&Call {
                    app: &self.app,
                    local: &self.local,
                    req: &request,
                    cors,
                    key_id,
                })
            })
            .unwrap_or_else(|e| Reply::Full(e.response(found.shape())))
    }

    /// A body too large or unreadable, answered in the route's own error shape (the command
    /// envelope for `/command` and the claiming routes).
    pub fn refusal(&self, method: Method, path: &str, status: u16, message: &str) -> Response {
        ControlError::Refused {
            status,
            message: message.to_string(),
        }
        .response(routes::find(method, path).shape())
    }
}

/// What the browser rule asks of a request for this API's route (its table's entry says).
pub(crate) fn guard(method: Method, path: &str) -> Guard {
    routes::find(method, path).guard()
}

impl ControlApi {
    /// With `CONTROL_REQUIRE_KEY`: a valid key of the default user with no serial limit, with
    /// `scope` (what the route's entry needs; `None`: no key, as for `/health` and the
    /// dashboard page). Home Assistant's ingress proxy (`INGRESS_PROXY`) speaks for people Home
    /// Assistant has signed in. Gives the key's id.
    fn check_key(
        &self,
        req: &Request,
        scope: Option<Scope>,
    ) -> Result<Option<String>, ControlError> {
        let Some(scope) = scope.filter(|_| self.app.config().control_require_key) else {
            return Ok(None);
        };
        let proxy = self.app.config().ingress_proxy;
        if proxy.is_some() && req.remote.map(|r| r.ip().to_canonical()) == proxy {
            return Ok(None);
        }
        let key = keys::authenticate(
            self.app.state(),
            req.api_key(),
            self.app.config().clock.now_ms(),
        )
        .ok_or(ControlError::Unauthorized)?;
        if key.user != DEFAULT_USER || !key.serials.is_empty() {
            return Err(ControlError::KeyNotForControl);
        }
        if key.has_scope(scope) {
            Ok(Some(key.id))
        } else {
            Err(ControlError::MissingScope(scope))
        }
    }
}
