//! The control API (port 8082): what curl, dashboards, Home Assistant, Homebridge and
//! Matterbridge use. Every route is listed in docs/control-api.md with a curl example.
//!
//! Bodies are JSON whatever their Content-Type, and may arrive chunked. By default there is no
//! authentication on this API (an `Authorization` header is ignored); keep port 8082 on the
//! home network. With `CONTROL_REQUIRE_KEY=true` every route but `/health` and the dashboard
//! page `/` wants an API key of the default user `owner` with no serial limit (this API has no
//! per-user view), with the `read` scope for GET and `write` for the rest; the account routes
//! (`/api/keys`, `/api/users`, `/api/shares`: [`accounts`]) want `write` for reads too, since
//! they hand out what the whole server can do.
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
mod homekit;
pub(crate) mod input;
mod live;
mod metrics;
mod onboard;
pub mod status;
mod waiting;

use std::sync::Arc;

pub use command::Command;
pub use error::{ControlError, Shape};

use crate::accounts::keys;
use crate::app::App;
use crate::dashboard;
use crate::http::{Method, Reply, Request, Response};
use crate::info;
use crate::state::{DEFAULT_USER, Scope};

pub struct ControlApi {
    app: Arc<App>,
    /// `GET /status`'s answers, kept between changes.
    status_json: status::StatusJson,
}

impl ControlApi {
    pub fn new(app: Arc<App>) -> ControlApi {
        ControlApi {
            app,
            status_json: status::StatusJson::default(),
        }
    }

    /// Answers one control-API request. `cors`: the headers every answer carries, which a live
    /// event stream must send in its head.
    pub fn handle(&self, request: Request, cors: &[(String, String)]) -> Reply {
        let route = Route::of(request.method, &request.path);
        let shape = route.as_ref().map_or(Shape::Error, Route::shape);
        // Account routes hand out what the whole server can do: only to a key that can write.
        let write = !matches!(request.method, Method::Get | Method::Head)
            || route.as_ref().is_ok_and(Route::manages_accounts);
        match self
            .check_key(&request, write)
            .and_then(|key| Ok((key, route?)))
        {
            Ok((key, route)) => route
                .handle(&self.app, &self.status_json, &request, cors, key)
                .unwrap_or_else(|e| Reply::Full(e.response(shape))),
            Err(e) => Reply::Full(e.response(shape)),
        }
    }

    /// A body too large or unreadable, answered in the route's own error shape (the command
    /// envelope for `/command` and the claiming routes).
    pub fn refusal(&self, method: Method, path: &str, status: u16, message: &str) -> Response {
        let shape = Route::of(method, path).map_or(Shape::Error, |r| r.shape());
        ControlError::Refused {
            status,
            message: message.to_string(),
        }
        .response(shape)
    }
}

impl ControlApi {
    /// With `CONTROL_REQUIRE_KEY`: a valid key of the default user with no serial limit, and
    /// the scope the request needs (`write`: not a plain read). `/health` stays open for
    /// probes, and Home Assistant's ingress proxy (`INGRESS_PROXY`) speaks for people Home
    /// Assistant has signed in. Gives the key's id.
    fn check_key(&self, req: &Request, write: bool) -> Result<Option<String>, ControlError> {
        // The dashboard page and its files hold no data; it asks for a key when its requests
        // are refused.
        if !self.app.config.control_require_key
            || req.path == "/health"
            || req.path == "/"
            || req.path.starts_with("/ui/")
        {
            return Ok(None);
        }
        let proxy = self.app.config.ingress_proxy;
        if proxy.is_some() && req.remote.map(|r| r.ip().to_canonical()) == proxy {
            return Ok(None);
        }
        let key = keys::authenticate(
            &self.app.state,
            req.api_key(),
            self.app.config.clock.now_ms(),
        )
        .ok_or(ControlError::Unauthorized)?;
        if key.user != DEFAULT_USER || !key.serials.is_empty() {
            return Err(ControlError::KeyNotForControl);
        }
        let scope = if write { Scope::Write } else { Scope::Read };
        if key.has_scope(scope) {
            Ok(Some(key.id))
        } else {
            Err(ControlError::MissingScope(scope))
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Route {
    Dashboard,
    /// One of the page's files (`/ui/...`).
    PagePart(usize),
    Health,
    Info,
    Command,
    Status,
    Devices,
    Stats,
    Config,
    Schedule,
    History,
    Energy,
    Alerts,
    AlertAck,
    Homekit,
    Events,
    Metrics,
    NotifyDevice,
    DeleteDevice,
    Register,
    EnsureUser,
    DismissPairing(String),
    RegisteredDevices,
    Unregister(String),
    ScanNetwork,
    ConfigureNest,
    Waiting,
    Adopt,
    Keys,
    Key(String),
    Users,
    User(String),
    Shares,
    Share(String, String),
}

impl Route {
    fn of(method: Method, path: &str) -> Result<Route, ControlError> {
        let get = matches!(method, Method::Get | Method::Head);
        let post = method == Method::Post;
        let delete = method == Method::Delete;
        let (route, allowed) = match path {
            "/" => (Route::Dashboard, get),
            "/health" => (Route::Health, get),
            "/info" => (Route::Info, get),
            "/command" => (Route::Command, post),
            "/status" => (Route::Status, get),
            "/api/devices" => (Route::Devices, get),
            "/api/stats" => (Route::Stats, get),
            "/api/config" => (Route::Config, get),
            "/api/schedule" => (Route::Schedule, get),
            "/api/history" => (Route::History, get),
            "/api/energy" => (Route::Energy, get),
            "/api/alerts" => (Route::Alerts, get),
            "/api/alerts/ack" => (Route::AlertAck, post),
            "/api/homekit" => (Route::Homekit, get),
            "/api/events" => (Route::Events, get),
            "/metrics" => (Route::Metrics, get),
            "/notify-device" => (Route::NotifyDevice, post),
            "/api/device" => (Route::DeleteDevice, delete),
            "/api/register" => (Route::Register, post),
            "/api/ensure-user" => (Route::EnsureUser, post),
            "/api/registered-devices" => (Route::RegisteredDevices, get),
            "/api/scan-network" => (Route::ScanNetwork, post),
            "/api/configure-nest" => (Route::ConfigureNest, post),
            "/api/waiting" => (Route::Waiting, get),
            "/api/adopt" => (Route::Adopt, post),
            "/api/keys" => (Route::Keys, get || post),
            "/api/users" => (Route::Users, get || post),
            "/api/shares" => (Route::Shares, get || post),
            p if p.starts_with("/ui/") => match dashboard::assets::find(p) {
                Some((index, _)) => (Route::PagePart(index), get),
                None => return Err(ControlError::NotFound),
            },
            p => match (
                p.strip_prefix("/api/dismiss-pairing/"),
                p.strip_prefix("/api/registered-devices/"),
            ) {
                (Some(serial), _) => (Route::DismissPairing(serial.to_string()), post),
                (_, Some(serial)) => (Route::Unregister(serial.to_string()), delete),
                _ => (Route::account_item(p)?, delete),
            },
        };
        if allowed {
            Ok(route)
        } else {
            Err(ControlError::MethodNotAllowed)
        }
    }

    /// `/api/keys/{id}`, `/api/users/{name}`, `/api/shares/{serial}/{user}` (one segment each,
    /// not empty).
    fn account_item(path: &str) -> Result<Route, ControlError> {
        let segments = |rest: &str, n: usize| {
            let parts: Vec<String> = rest.split('/').map(str::to_string).collect();
            (parts.len() == n && parts.iter().all(|p| !p.is_empty())).then_some(parts)
        };
        let route = if let Some(rest) = path.strip_prefix("/api/keys/") {
            segments(rest, 1).map(|mut p| Route::Key(p.remove(0)))
        } else if let Some(rest) = path.strip_prefix("/api/users/") {
            segments(rest, 1).map(|mut p| Route::User(p.remove(0)))
        } else if let Some(rest) = path.strip_prefix("/api/shares/") {
            segments(rest, 2).map(|mut p| {
                let user = p.remove(1);
                Route::Share(p.remove(0), user)
            })
        } else {
            None
        };
        route.ok_or(ControlError::NotFound)
    }

    /// Also HomeKit's setup code: whoever has it can pair a phone that controls every thermostat.
    fn manages_accounts(&self) -> bool {
        matches!(
            self,
            Route::Homekit
                | Route::Keys
                | Route::Key(_)
                | Route::Users
                | Route::User(_)
                | Route::Shares
                | Route::Share(..)
        )
    }

    /// The command envelope for commands and claims; `{"error"}` for the rest.
    fn shape(&self) -> Shape {
        match self {
            Route::Command
            | Route::Register
            | Route::EnsureUser
            | Route::DismissPairing(_)
            | Route::Unregister(_) => Shape::Envelope,
            Route::ConfigureNest => Shape::Outcome,
            _ => Shape::Error,
        }
    }

    fn handle(
        &self,
        app: &App,
        status_json: &status::StatusJson,
        req: &Request,
        cors: &[(String, String)],
        key_id: Option<String>,
    ) -> Result<Reply, ControlError> {
        let response = match self {
            Route::Dashboard => dashboard::page(req),
            Route::PagePart(index) => match dashboard::assets::ASSETS.get(*index) {
                Some(asset) => dashboard::assets::serve(req, *index, asset),
                None => return Err(ControlError::NotFound),
            },
            Route::Health => info::health(),
            Route::Info => info::info(app),
            Route::Command => command::run(app, &req.body)?,
            Route::Status => status::status(app, status_json, req)?,
            Route::Devices => status::devices(app),
            Route::Stats => status::stats(app),
            Route::Config => devices::config(app),
            Route::Schedule => devices::schedule(app, req)?,
            Route::History => history::history(app, req)?,
            Route::Energy => energy::energy(app, req)?,
            Route::Alerts => alerts::alerts(app),
            Route::AlertAck => alerts::ack(app, &req.body)?,
            Route::Homekit => homekit::homekit(app),
            Route::Events => return live::events(app, req, cors, key_id),
            Route::Metrics => metrics::metrics(app),
            Route::NotifyDevice => devices::notify(app, &req.body)?,
            Route::DeleteDevice => devices::delete(app, &req.body)?,
            Route::Register => claim::register(app, &req.body)?,
            Route::EnsureUser => claim::ensure_user(app, &req.body)?,
            Route::DismissPairing(serial) => claim::dismiss_pairing(app, serial)?,
            Route::RegisteredDevices => claim::registered(app, req)?,
            Route::Unregister(serial) => claim::unregister(app, serial, req)?,
            Route::ScanNetwork => onboard::scan_network(app, &req.body)?,
            Route::ConfigureNest => onboard::configure_nest(app, &req.body)?,
            Route::Waiting => waiting::waiting(app),
            Route::Adopt => waiting::adopt(app, &req.body)?,
            Route::Keys if req.method == Method::Post => accounts::create_key(app, &req.body)?,
            Route::Keys => accounts::list_keys(app),
            Route::Key(id) => accounts::revoke_key(app, id)?,
            Route::Users if req.method == Method::Post => accounts::add_user(app, &req.body)?,
            Route::Users => accounts::list_users(app),
            Route::User(name) => accounts::remove_user(app, name)?,
            Route::Shares if req.method == Method::Post => accounts::share(app, &req.body)?,
            Route::Shares => accounts::list_shares(app),
            Route::Share(serial, user) => accounts::unshare(app, serial, user)?,
        };
        Ok(Reply::Full(response))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_methods() {
        assert_eq!(Route::of(Method::Post, "/command").unwrap(), Route::Command);
        assert_eq!(
            Route::of(Method::Post, "/api/dismiss-pairing/02AA01AC0000SIM1").unwrap(),
            Route::DismissPairing("02AA01AC0000SIM1".into())
        );
        assert_eq!(
            Route::of(Method::Delete, "/api/registered-devices/X").unwrap(),
            Route::Unregister("X".into())
        );
        assert_eq!(
            Route::of(Method::Get, "/api/waiting").unwrap(),
            Route::Waiting
        );
        assert_eq!(Route::of(Method::Post, "/api/adopt").unwrap(), Route::Adopt);
        assert_eq!(Route::of(Method::Get, "/metrics").unwrap(), Route::Metrics);
        assert_eq!(
            Route::of(Method::Get, "/api/alerts").unwrap(),
            Route::Alerts
        );
        assert_eq!(
            Route::of(Method::Post, "/api/alerts/ack").unwrap(),
            Route::AlertAck
        );
        assert!(matches!(
            Route::of(Method::Get, "/api/alerts/ack"),
            Err(ControlError::MethodNotAllowed)
        ));
        assert!(matches!(
            Route::of(Method::Post, "/metrics"),
            Err(ControlError::MethodNotAllowed)
        ));
        assert!(matches!(
            Route::of(Method::Get, "/api/adopt"),
            Err(ControlError::MethodNotAllowed)
        ));
        assert!(matches!(
            Route::of(Method::Get, "/command"),
            Err(ControlError::MethodNotAllowed)
        ));
        assert_eq!(
            Route::of(Method::Delete, "/api/shares/02AA01AC0000SIM1/bob").unwrap(),
            Route::Share("02AA01AC0000SIM1".into(), "bob".into())
        );
        assert_eq!(
            Route::of(Method::Delete, "/api/keys/1a2b3c4d").unwrap(),
            Route::Key("1a2b3c4d".into())
        );
        for path in [
            "/api/keys/",
            "/api/users/a/b",
            "/api/shares/X",
            "/api/shares/X/",
        ] {
            assert!(
                matches!(Route::of(Method::Delete, path), Err(ControlError::NotFound)),
                "{path}"
            );
        }
        assert!(matches!(
            Route::of(Method::Delete, "/api/users"),
            Err(ControlError::MethodNotAllowed)
        ));
        assert!(matches!(
            Route::of(Method::Get, "/nope"),
            Err(ControlError::NotFound)
        ));
    }
}
