//! Every route of port 8082 but `/api/v1`, in one table ([`ROUTES`]): an entry is a route's
//! method and path, its browser rule, the key scope it needs under `CONTROL_REQUIRE_KEY`, the
//! shape its errors take, and its handler. [`find`] is the only reader of the table: the port
//! asks it for a request's browser rule, [`super::ControlApi`] for its key scope, error shape
//! and handler. A new route is a new entry (and its row in docs/control-api.md's route list,
//! which the tests below compare with the table).
//!
//! What is not an entry follows from the entries, here and nowhere else: `HEAD` is answered as
//! `GET`; a path an entry has, with a method no entry of that path has, is 405 with that path's
//! browser rule, and needs a key (`read` for `GET`, `write` for the rest) unless the path's
//! entries need none; a path under the page's files that names none is 404 with their rules;
//! any other path is 404 with the strictest browser rule ([`Guard::Full`]) and a key by its
//! method. All three answer in the `{"error"}` shape.

use super::{ControlError, Shape};
use super::{accounts, alerts, claim, command, devices, energy, history, homekit, live};
use super::{metrics, onboard, people, status, waiting};
use crate::app::App;
use crate::browser::Guard;
use crate::dashboard::{self, assets::Asset};
use crate::http::{Method, Reply, Request, Response};
use crate::info;
use crate::state::Scope;

/// One route.
pub(crate) struct Route {
    /// `GET` (which serves `HEAD` too), `POST`, `PUT` or `DELETE`.
    pub method: Method,
    /// The path, where `{name}` is one segment, not empty, and a last `{name..}` the rest of
    /// the path, whatever it is (empty, or holding `/`).
    pub path: &'static str,
    /// What a web page may do with it ([`crate::browser`]).
    pub guard: Guard,
    /// The scope of the key it needs under `CONTROL_REQUIRE_KEY`; `None`: no key.
    pub key: Option<Scope>,
    /// The shape its errors take (a browser refusal, a key refusal, a body too large, and
    /// whatever its handler refuses).
    pub shape: Shape,
    pub handler: Handler,
}

/// What a handler is given, besides the path's parameters.
pub(crate) struct Call<'a> {
    pub app: &'a App,
    /// What the control port keeps for itself.
    pub local: &'a super::Local,
    pub req: &'a Request,
    /// The CORS headers every answer carries (a live event stream sends them in its head).
    pub cors: &'a [(String, String)],
    /// The id of the key the request was let in with, if one was needed.
    pub key_id: Option<String>,
}

pub(crate) type Answer = Result<Reply, ControlError>;

/// A route's handler, by the parameters its path has. Each entry adapts a plain function of
/// `control::*` (or of the dashboard and `info`) in a closure.
#[derive(Clone, Copy)]
pub(crate) enum Handler {
    /// A path without parameters.
    Plain(fn(&Call<'_>) -> Answer),
    /// A path with one parameter.
    One(fn(&Call<'_>, &str) -> Answer),
    /// A path with two parameters, in the path's order.
    Two(fn(&Call<'_>, &str, &str) -> Answer),
    /// One of the page's files, named by the path's one `{file..}`: a path that names no file
    /// is 404 whatever its method.
    File(fn(&Call<'_>, usize, &'static Asset) -> Answer),
}

fn full(response: Response) -> Answer {
    Ok(Reply::Full(response))
}

/// Every route, in no particular order (no two entries claim one method and path).
pub(crate) static ROUTES: &[Route] = &[
    // The dashboard page and its files hold no data; the page asks for a key when its requests
    // are refused.
    Route {
        method: Method::Get,
        path: "/",
        guard: Guard::Host,
        key: None,
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(dashboard::page(c.req))),
    },
    Route {
        method: Method::Get,
        path: "/ui/{file..}",
        guard: Guard::Host,
        key: None,
        shape: Shape::Error,
        handler: Handler::File(|c, index, asset| {
            full(dashboard::assets::serve(c.req, index, asset))
        }),
    },
    // Open to probes.
    Route {
        method: Method::Get,
        path: "/health",
        guard: Guard::Open,
        key: None,
        shape: Shape::Error,
        handler: Handler::Plain(|_| full(info::health())),
    },
    Route {
        method: Method::Get,
        path: "/info",
        guard: Guard::Host,
        key: Some(Scope::Read),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(info::info(c.app))),
    },
    Route {
        method: Method::Post,
        path: "/command",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Envelope,
        handler: Handler::Plain(|c| full(command::run(c.app, &c.req.body)?)),
    },
    Route {
        method: Method::Get,
        path: "/status",
        guard: Guard::Full,
        key: Some(Scope::Read),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(status::status(c.app, &c.local.status_json, c.req)?)),
    },
    Route {
        method: Method::Get,
        path: "/api/devices",
        guard: Guard::Full,
        key: Some(Scope::Read),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(status::devices(c.app))),
    },
    Route {
        method: Method::Get,
        path: "/api/stats",
        guard: Guard::Full,
        key: Some(Scope::Read),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(status::stats(c.app))),
    },
    Route {
        method: Method::Get,
        path: "/api/config",
        guard: Guard::Full,
        key: Some(Scope::Read),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(devices::config(c.app))),
    },
    Route {
        method: Method::Get,
        path: "/api/schedule",
        guard: Guard::Full,
        key: Some(Scope::Read),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(devices::schedule(c.app, c.req)?)),
    },
    Route {
        method: Method::Get,
        path: "/api/history",
        guard: Guard::Full,
        key: Some(Scope::Read),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(history::history(c.app, c.req)?)),
    },
    Route {
        method: Method::Get,
        path: "/api/energy",
        guard: Guard::Full,
        key: Some(Scope::Read),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(energy::energy(c.app, c.req)?)),
    },
    Route {
        method: Method::Get,
        path: "/api/alerts",
        guard: Guard::Full,
        key: Some(Scope::Read),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(alerts::alerts(c.app))),
    },
    Route {
        method: Method::Post,
        path: "/api/alerts/ack",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(alerts::ack(c.app, &c.req.body)?)),
    },
    // The alert settings hold the webhook's secret and the receivers' URLs, and the test calls
    // them: as the accounts, only to a key that can write, reads included.
    Route {
        method: Method::Get,
        path: "/api/alerts/settings",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(alerts::get_settings(c.app)?)),
    },
    Route {
        method: Method::Put,
        path: "/api/alerts/settings",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(alerts::put_settings(c.app, &c.req.body)?)),
    },
    Route {
        method: Method::Post,
        path: "/api/alerts/test",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(alerts::test(c.app, c.local)?)),
    },
    // People (docs/presence.md): the owner's home. A presence URL wants its person's token
    // only, no key even under CONTROL_REQUIRE_KEY; it keeps every
    // control route's Host and Origin rules (phones send no Origin).
    Route {
        method: Method::Get,
        path: "/api/people",
        guard: Guard::Full,
        key: Some(Scope::Read),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(people::list(c.app))),
    },
    Route {
        method: Method::Post,
        path: "/api/people",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(people::add(c.app, &c.req.body)?)),
    },
    Route {
        method: Method::Delete,
        path: "/api/people/{name}",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::One(|c, name| full(people::remove(c.app, name)?)),
    },
    Route {
        method: Method::Post,
        path: "/api/people/{name}/token",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::One(|c, name| full(people::token(c.app, name, false)?)),
    },
    Route {
        method: Method::Delete,
        path: "/api/people/{name}/token",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::One(|c, name| full(people::token(c.app, name, true)?)),
    },
    Route {
        method: Method::Post,
        path: "/api/presence/{person}",
        guard: Guard::Full,
        key: None,
        shape: Shape::Error,
        handler: Handler::One(|c, person| {
            full(people::report(
                c.app,
                &c.local.presence_limits,
                c.req,
                person,
            )?)
        }),
    },
    // HomeKit's setup code: whoever has it can pair a phone that controls every thermostat.
    Route {
        method: Method::Get,
        path: "/api/homekit",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(homekit::homekit(c.app))),
    },
    // Too many wrong codes lock pair-setup: the unlock hands out a new code.
    Route {
        method: Method::Post,
        path: "/api/homekit/unlock",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(homekit::unlock(c.app)?)),
    },
    Route {
        method: Method::Get,
        path: "/api/events",
        guard: Guard::Full,
        key: Some(Scope::Read),
        shape: Shape::Error,
        handler: Handler::Plain(|c| live::events(c.app, c.req, c.cors, c.key_id.clone())),
    },
    Route {
        method: Method::Get,
        path: "/metrics",
        guard: Guard::Full,
        key: Some(Scope::Read),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(metrics::metrics(c.app))),
    },
    Route {
        method: Method::Post,
        path: "/notify-device",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(devices::notify(c.app, &c.req.body)?)),
    },
    Route {
        method: Method::Delete,
        path: "/api/device",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(devices::delete(c.app, &c.req.body)?)),
    },
    // Claiming, in the Python server's envelope.
    Route {
        method: Method::Post,
        path: "/api/register",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Envelope,
        handler: Handler::Plain(|c| full(claim::register(c.app, &c.req.body)?)),
    },
    Route {
        method: Method::Post,
        path: "/api/ensure-user",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Envelope,
        handler: Handler::Plain(|c| full(claim::ensure_user(c.app, &c.req.body)?)),
    },
    Route {
        method: Method::Post,
        path: "/api/dismiss-pairing/{serial..}",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Envelope,
        handler: Handler::One(|c, serial| full(claim::dismiss_pairing(c.app, serial)?)),
    },
    Route {
        method: Method::Get,
        path: "/api/registered-devices",
        guard: Guard::Full,
        key: Some(Scope::Read),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(claim::registered(c.app, c.req)?)),
    },
    Route {
        method: Method::Delete,
        path: "/api/registered-devices/{serial..}",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Envelope,
        handler: Handler::One(|c, serial| full(claim::unregister(c.app, serial, c.req)?)),
    },
    // Onboarding.
    Route {
        method: Method::Post,
        path: "/api/scan-network",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(onboard::scan_network(c.app, c.local, &c.req.body)?)),
    },
    Route {
        method: Method::Post,
        path: "/api/configure-nest",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Outcome,
        handler: Handler::Plain(|c| full(onboard::configure_nest(c.app, c.local, &c.req.body)?)),
    },
    Route {
        method: Method::Get,
        path: "/api/waiting",
        guard: Guard::Full,
        key: Some(Scope::Read),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(waiting::waiting(c.app))),
    },
    Route {
        method: Method::Post,
        path: "/api/adopt",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(waiting::adopt(c.app, &c.req.body)?)),
    },
    // Accounts hand out what the whole server can do: only to a key that can write, reads
    // included.
    Route {
        method: Method::Get,
        path: "/api/keys",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(accounts::list_keys(c.app))),
    },
    Route {
        method: Method::Post,
        path: "/api/keys",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(accounts::create_key(c.app, &c.req.body)?)),
    },
    Route {
        method: Method::Delete,
        path: "/api/keys/{id}",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::One(|c, id| full(accounts::revoke_key(c.app, id)?)),
    },
    Route {
        method: Method::Get,
        path: "/api/users",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(accounts::list_users(c.app))),
    },
    Route {
        method: Method::Post,
        path: "/api/users",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(accounts::add_user(c.app, &c.req.body)?)),
    },
    Route {
        method: Method::Delete,
        path: "/api/users/{name}",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::One(|c, name| full(accounts::remove_user(c.app, name)?)),
    },
    Route {
        method: Method::Get,
        path: "/api/shares",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(accounts::list_shares(c.app))),
    },
    Route {
        method: Method::Post,
        path: "/api/shares",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Plain(|c| full(accounts::share(c.app, &c.req.body)?)),
    },
    Route {
        method: Method::Delete,
        path: "/api/shares/{serial}/{user}",
        guard: Guard::Full,
        key: Some(Scope::Write),
        shape: Shape::Error,
        handler: Handler::Two(|c, serial, user| full(accounts::unshare(c.app, serial, user)?)),
    },
];

/// What the table says of a request.
pub(crate) enum Found<'p> {
    /// An entry's method and path, with the path's parameters.
    Entry(&'static Route, Vec<&'p str>),
    /// A path the entry has, with a method no entry of that path has: 405.
    OtherMethod(&'static Route),
    /// A path the entry's pattern covers that names nothing (a page file there is not): 404.
    Nothing(&'static Route),
    /// No entry's path: 404.
    Unknown,
}

/// The table's answer for `method` and `path`.
pub(crate) fn find(method: Method, path: &str) -> Found<'_> {
    let mut other = None;
    for route in ROUTES {
        let Some(params) = parameters(route.path, path) else {
            continue;
        };
        if matches!(route.handler, Handler::File(..)) && dashboard::assets::find(path).is_none() {
            return Found::Nothing(route);
        }
        if route.method == method || (route.method == Method::Get && method == Method::Head) {
            return Found::Entry(route, params);
        }
        other.get_or_insert(route);
    }
    other.map_or(Found::Unknown, Found::OtherMethod)
}

/// The scope a key needs for a request no entry has, by its method.
fn by_method(method: Method) -> Scope {
    if matches!(method, Method::Get | Method::Head) {
        Scope::Read
    } else {
        Scope::Write
    }
}

impl Found<'_> {
    pub fn guard(&self) -> Guard {
        match self {
            Found::Entry(route, _) | Found::OtherMethod(route) | Found::Nothing(route) => {
                route.guard
            }
            Found::Unknown => Guard::Full,
        }
    }

    /// The scope of the key `method` needs here under `CONTROL_REQUIRE_KEY` (`None`: no key).
    pub fn key(&self, method: Method) -> Option<Scope> {
        match self {
            Found::Entry(route, _) => route.key,
            Found::OtherMethod(route) | Found::Nothing(route) => {
                route.key.map(|_| by_method(method))
            }
            Found::Unknown => Some(by_method(method)),
        }
    }

    pub fn shape(&self) -> Shape {
        match self {
            Found::Entry(route, _) => route.shape,
            _ => Shape::Error,
        }
    }

    /// Runs the route's handler, or refuses what no entry has.
    pub fn answer(&self, call: &Call<'_>) -> Answer {
        match self {
            Found::Entry(route, params) => route.run(call, params),
            Found::OtherMethod(_) => Err(ControlError::MethodNotAllowed),
            Found::Nothing(_) | Found::Unknown => Err(ControlError::NotFound),
        }
    }
}

impl Route {
    fn run(&self, call: &Call<'_>, params: &[&str]) -> Answer {
        match (self.handler, params) {
            (Handler::Plain(handler), []) => handler(call),
            (Handler::One(handler), [a]) => handler(call, a),
            (Handler::Two(handler), [a, b]) => handler(call, a, b),
            (Handler::File(handler), [_]) => match dashboard::assets::find(&call.req.path) {
                Some((index, asset)) => handler(call, index, asset),
                None => Err(ControlError::NotFound),
            },
            // A path whose parameters its handler does not take (the tests rule it out).
            _ => Err(ControlError::NotFound),
        }
    }
}

/// A `{name}` segment of a pattern.
fn is_parameter(segment: &str) -> bool {
    segment.starts_with('{') && segment.ends_with('}') && !is_rest(segment)
}

/// A `{name..}` segment of a pattern.
fn is_rest(segment: &str) -> bool {
    segment.starts_with('{') && segment.ends_with("..}")
}

/// The parameters of `path` if it matches `pattern`, in order.
fn parameters<'p>(pattern: &str, path: &'p str) -> Option<Vec<&'p str>> {
    let mut rest = path.strip_prefix('/')?;
    let mut segments = pattern.strip_prefix('/')?.split('/').peekable();
    let mut params = Vec::new();
    while let Some(segment) = segments.next() {
        if is_rest(segment) {
            params.push(rest);
            return Some(params);
        }
        let (here, next) = match rest.split_once('/') {
            Some((here, next)) => (here, Some(next)),
            None => (rest, None),
        };
        if is_parameter(segment) {
            if here.is_empty() {
                return None;
            }
            params.push(here);
        } else if segment != here {
            return None;
        }
        match (segments.peek(), next) {
            (None, None) => return Some(params),
            (Some(_), Some(next)) => rest = next,
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether some path matches both patterns.
    fn overlap(a: &str, b: &str) -> bool {
        let (a, b): (Vec<&str>, Vec<&str>) = (a.split('/').collect(), b.split('/').collect());
        for i in 0.. {
            match (a.get(i), b.get(i)) {
                (None, None) => return true,
                (Some(x), Some(y)) if is_rest(x) || is_rest(y) => return true,
                (Some(x), Some(y)) if is_parameter(x) || is_parameter(y) => {
                    // A parameter is any segment but the empty one.
                    let literal = if is_parameter(x) { y } else { x };
                    if literal.is_empty() {
                        return false;
                    }
                }
                (Some(x), Some(y)) if x == y => {}
                _ => return false,
            }
        }
        false
    }

    #[test]
    fn no_two_entries_claim_one_method_and_path() {
        for (i, a) in ROUTES.iter().enumerate() {
            for b in &ROUTES[i + 1..] {
                assert!(
                    a.method != b.method || !overlap(a.path, b.path),
                    "{} {} and {}",
                    a.method.as_str(),
                    a.path,
                    b.path
                );
            }
        }
        assert!(overlap(
            "/api/shares/{serial}/{user}",
            "/api/shares/X/{user}"
        ));
        assert!(overlap("/ui/{file..}", "/ui/a/b"));
        assert!(!overlap("/api/keys", "/api/keys/{id}"));
        assert!(!overlap("/api/keys/{id}", "/api/keys/"));
    }

    /// So that a 405 (or the 404 of a page file there is not) has one browser rule and one
    /// key rule: the entries of one path agree on them.
    #[test]
    fn entries_of_one_path_agree_on_its_browser_rule_and_key() {
        for a in ROUTES {
            for b in ROUTES.iter().filter(|b| overlap(a.path, b.path)) {
                assert_eq!(a.guard, b.guard, "{} and {}", a.path, b.path);
                assert_eq!(
                    a.key.is_none(),
                    b.key.is_none(),
                    "{} and {}",
                    a.path,
                    b.path
                );
            }
        }
    }

    #[test]
    fn every_entry_is_well_formed() {
        for route in ROUTES {
            let segments: Vec<&str> = route.path.split('/').collect();
            let count = |f: fn(&str) -> bool| segments.iter().filter(|s| f(s)).count();
            let (params, rests) = (count(is_parameter), count(is_rest));
            assert!(route.path.starts_with('/'), "{}", route.path);
            assert!(
                rests == 0 || segments.last().is_some_and(|s| is_rest(s)),
                "{}: a {{name..}} is the last segment",
                route.path
            );
            let taken = match route.handler {
                Handler::Plain(_) => 0,
                Handler::One(_) | Handler::File(_) => 1,
                Handler::Two(_) => 2,
            };
            assert_eq!(
                params + rests,
                taken,
                "{}: its handler's parameters",
                route.path
            );
            if matches!(route.handler, Handler::File(_)) {
                assert_eq!(rests, 1, "{}: a file is named by {{file..}}", route.path);
            }
            // HEAD is a GET's; OPTIONS is the port's.
            assert!(
                matches!(
                    route.method,
                    Method::Get | Method::Post | Method::Put | Method::Delete
                ),
                "{}",
                route.path
            );
            // What changes something needs a key that can write; but for the presence URL,
            // which a person's own token authorises (and which changes nothing but that
            // person's presence: `control::people::report`).
            if route.method != Method::Get && route.path != "/api/presence/{person}" {
                assert_eq!(route.key, Some(Scope::Write), "{}", route.path);
            }
        }
    }

    /// docs/control-api.md lists every route under `<!-- routes -->`, with the key it needs:
    /// one row per entry, as `` | `METHOD /path` | scope | ... | `` (a `{name..}` written
    /// `{name}`).
    #[test]
    fn every_route_is_in_the_docs_with_its_key() {
        let mut documented: Vec<String> = crate::util::doc_table("control-api.md", "<!-- routes")
            .iter()
            .map(|cells| format!("{} {}", cells[0].trim_matches('`'), cells[1]))
            .collect();
        let mut table: Vec<String> = ROUTES
            .iter()
            .map(|r| {
                let key = r.key.map_or("none", Scope::as_str);
                let path = r.path.replace("..}", "}");
                format!("{} {path} {key}", r.method.as_str())
            })
            .collect();
        documented.sort();
        table.sort();
        assert_eq!(
            documented, table,
            "docs/control-api.md's route list and src/control/routes.rs"
        );
    }

    fn route_of(method: Method, path: &str) -> Option<(&'static str, Vec<&str>)> {
        match find(method, path) {
            Found::Entry(route, params) => Some((route.path, params)),
            _ => None,
        }
    }

    /// The status of what the table refuses (what `Found::answer` answers).
    fn refusal(method: Method, path: &str) -> Option<u16> {
        match find(method, path) {
            Found::Entry(..) => None,
            Found::OtherMethod(_) => Some(405),
            Found::Nothing(_) | Found::Unknown => Some(404),
        }
    }

    #[test]
    fn routes_and_methods() {
        assert_eq!(
            route_of(Method::Post, "/command"),
            Some(("/command", vec![]))
        );
        assert_eq!(route_of(Method::Head, "/status"), Some(("/status", vec![])));
        assert_eq!(
            route_of(Method::Post, "/api/dismiss-pairing/02AA01AC0000SIM1"),
            Some(("/api/dismiss-pairing/{serial..}", vec!["02AA01AC0000SIM1"]))
        );
        // The claiming routes' serial is the rest of the path, as in the Python server (an
        // invalid serial is then a 400 in their envelope).
        assert_eq!(
            route_of(Method::Delete, "/api/registered-devices/a/b"),
            Some(("/api/registered-devices/{serial..}", vec!["a/b"]))
        );
        assert_eq!(
            route_of(Method::Delete, "/api/shares/02AA01AC0000SIM1/bob"),
            Some((
                "/api/shares/{serial}/{user}",
                vec!["02AA01AC0000SIM1", "bob"]
            ))
        );
        assert_eq!(
            route_of(Method::Delete, "/api/keys/1a2b3c4d"),
            Some(("/api/keys/{id}", vec!["1a2b3c4d"]))
        );
        assert_eq!(
            route_of(Method::Get, "/ui/api.js"),
            Some(("/ui/{file..}", vec!["api.js"]))
        );
        for (method, path) in [
            (Method::Get, "/api/alerts/ack"),
            (Method::Post, "/metrics"),
            (Method::Get, "/api/adopt"),
            (Method::Get, "/command"),
            (Method::Delete, "/api/users"),
            (Method::Post, "/ui/api.js"),
            (Method::Options, "/status"),
        ] {
            assert_eq!(refusal(method, path), Some(405), "{path}");
        }
        for path in [
            "/api/keys/",
            "/api/users/a/b",
            "/api/shares/X",
            "/api/shares/X/",
            "/api/shares//bob",
            "/ui/nope.js",
            "/ui/",
            "/nope",
            "",
        ] {
            assert_eq!(refusal(Method::Delete, path), Some(404), "{path}");
        }
    }

    #[test]
    fn what_no_entry_has_follows_from_the_entries() {
        let read = Some(Scope::Read);
        let write = Some(Scope::Write);
        let rule = |method, path| {
            let found = find(method, path);
            (found.guard(), found.key(method), found.shape())
        };
        // A path of an entry, another method: the path's browser rule, the method's key.
        assert_eq!(
            rule(Method::Post, "/info"),
            (Guard::Host, write, Shape::Error)
        );
        assert_eq!(
            rule(Method::Get, "/command"),
            (Guard::Full, read, Shape::Error)
        );
        assert_eq!(
            rule(Method::Get, "/api/keys/x"),
            (Guard::Full, read, Shape::Error)
        );
        assert_eq!(
            rule(Method::Post, "/health"),
            (Guard::Open, None, Shape::Error)
        );
        // Under the page's files, what names none: no key, a name of this server.
        assert_eq!(
            rule(Method::Post, "/ui/a/b"),
            (Guard::Host, None, Shape::Error)
        );
        // Anything else: the strictest rule.
        assert_eq!(
            rule(Method::Get, "/nope"),
            (Guard::Full, read, Shape::Error)
        );
        assert_eq!(
            rule(Method::Delete, "/ui"),
            (Guard::Full, write, Shape::Error)
        );
        assert_eq!(
            rule(Method::Post, "/command"),
            (Guard::Full, write, Shape::Envelope)
        );
    }
}
