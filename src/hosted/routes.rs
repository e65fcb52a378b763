//! Every route of `/api/v1`, in one table ([`ROUTES`]): an entry is a route's method and path,
//! what it needs the key (and the key's user) to be allowed, and its handler. [`find`] is the
//! table's only reader; [`super::route`] runs the checks in order around it. A new route is a
//! new entry (and its row in docs/hosted-api.md's endpoint table, which the tests below compare
//! with the table).
//!
//! What is not an entry follows from the entries, here: `HEAD` is answered as `GET`, a path
//! with one trailing `/` as the path without it; a path an entry has with a method none of its
//! entries has is 405, any other path 404.

use super::{HostedError, Target, Write, read, write};
use crate::accounts::access::Need;
use crate::app::App;
use crate::http::{Method, Request, Response};
use crate::state::ApiKey;
use crate::thermostat::BucketKind;

/// One route of `/api/v1`.
pub(crate) struct Route {
    /// `GET` (which serves `HEAD` too), `POST`, `PUT` or `DELETE`.
    pub method: Method,
    /// The path under `/api/v1`, where `{deviceId}` is one segment: the thermostat's id or
    /// serial, percent-encoded.
    pub path: &'static str,
    /// What the key must allow: its scope, and for a thermostat the relation of its user.
    pub need: Need,
    pub handler: Handler,
}

/// A route's handler, by what it acts on.
#[derive(Clone, Copy)]
pub(crate) enum Handler {
    /// What the key alone decides (`GET /devices`): the key needs `need`'s scope.
    Key(fn(&App, &ApiKey) -> Response),
    /// The `{deviceId}` thermostat, once it is found and the key may act on it as `need` says.
    Thermostat(fn(&App, &Target, &Request, &ApiKey) -> Result<Response, HostedError>),
    /// A write to the `{deviceId}` thermostat, found and allowed as for `Thermostat`: the body,
    /// read as its `Write` says, becomes one of the core's intents, committed; the answer
    /// reports the bucket the hosted documentation names.
    Write(Write, BucketKind),
}

/// Every route, in no particular order (no two entries claim one method and path).
pub(crate) static ROUTES: &[Route] = &[
    Route {
        method: Method::Get,
        path: "/devices",
        need: Need::Read,
        handler: Handler::Key(read::devices),
    },
    Route {
        method: Method::Get,
        path: "/thermostat/{deviceId}/status",
        need: Need::Read,
        handler: Handler::Thermostat(|app, target, _, key| read::status(app, target, key)),
    },
    Route {
        method: Method::Get,
        path: "/thermostat/{deviceId}/schedule",
        need: Need::Read,
        handler: Handler::Thermostat(|app, target, _, _| read::schedule(app, target)),
    },
    Route {
        method: Method::Put,
        path: "/thermostat/{deviceId}/schedule",
        need: Need::Write,
        handler: Handler::Write(Write::Schedule, BucketKind::Schedule),
    },
    Route {
        method: Method::Get,
        path: "/thermostat/{deviceId}/energy",
        need: Need::Read,
        handler: Handler::Thermostat(|app, target, req, _| read::energy(app, target, req)),
    },
    Route {
        method: Method::Post,
        path: "/thermostat/{deviceId}/temperature",
        need: Need::Write,
        handler: Handler::Write(Write::Temperature, BucketKind::Shared),
    },
    Route {
        method: Method::Post,
        path: "/thermostat/{deviceId}/temperature/range",
        need: Need::Write,
        handler: Handler::Write(Write::Range, BucketKind::Shared),
    },
    Route {
        method: Method::Post,
        path: "/thermostat/{deviceId}/mode",
        need: Need::Write,
        handler: Handler::Write(Write::Mode, BucketKind::Shared),
    },
    Route {
        method: Method::Post,
        path: "/thermostat/{deviceId}/away",
        need: Need::Write,
        handler: Handler::Write(Write::Away, BucketKind::Shared),
    },
    Route {
        method: Method::Post,
        path: "/thermostat/{deviceId}/eco",
        need: Need::Write,
        handler: Handler::Write(Write::Eco, BucketKind::Shared),
    },
    Route {
        method: Method::Post,
        path: "/thermostat/{deviceId}/fan",
        need: Need::Write,
        handler: Handler::Write(Write::Fan, BucketKind::Device),
    },
    Route {
        method: Method::Post,
        path: "/thermostat/{deviceId}/lock",
        need: Need::Write,
        handler: Handler::Write(Write::Lock, BucketKind::Device),
    },
    Route {
        method: Method::Delete,
        path: "/thermostat/{deviceId}",
        need: Need::Unlink,
        handler: Handler::Thermostat(|app, target, _, key| write::unlink(app, target, key)),
    },
];

/// The one segment of a path that names a thermostat.
const DEVICE: &str = "{deviceId}";

/// The entry for `method` and `path` (a path under `/api/v1`), with the path's `{deviceId}`
/// (as sent, percent-encoded) if it has one; or 405, or 404.
pub(crate) fn find(
    method: Method,
    path: &str,
) -> Result<(&'static Route, Option<&str>), HostedError> {
    let rest = path.strip_prefix(super::PREFIX).unwrap_or(path);
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let segments: Vec<&str> = rest.split('/').skip(1).collect();
    let mut known_path = false;
    for route in ROUTES {
        let Some(id) = device_id(route.path, &segments) else {
            continue;
        };
        if route.method == method || (route.method == Method::Get && method == Method::Head) {
            return Ok((route, id));
        }
        known_path = true;
    }
    Err(if known_path {
        HostedError::MethodNotAllowed
    } else {
        HostedError::NotFound
    })
}

/// Whether `segments` match `pattern`: `Some` with the `{deviceId}` segment, if the pattern
/// has one (any segment, even an empty one, which names no thermostat).
fn device_id<'p>(pattern: &str, segments: &[&'p str]) -> Option<Option<&'p str>> {
    let parts: Vec<&str> = pattern.split('/').skip(1).collect();
    if parts.len() != segments.len() {
        return None;
    }
    let mut id = None;
    for (part, segment) in parts.iter().zip(segments) {
        if *part == DEVICE {
            id = Some(*segment);
        } else if part != segment {
            return None;
        }
    }
    Some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether some path matches both patterns.
    fn overlap(a: &str, b: &str) -> bool {
        let (a, b): (Vec<&str>, Vec<&str>) = (a.split('/').collect(), b.split('/').collect());
        a.len() == b.len()
            && a.iter()
                .zip(&b)
                .all(|(x, y)| x == y || *x == DEVICE || *y == DEVICE)
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
        assert!(overlap("/thermostat/{deviceId}/fan", "/thermostat/x/fan"));
        assert!(!overlap(
            "/thermostat/{deviceId}",
            "/thermostat/{deviceId}/fan"
        ));
    }

    #[test]
    fn every_entry_is_well_formed() {
        for route in ROUTES {
            let devices = route.path.split('/').filter(|s| *s == DEVICE).count();
            let needs_one = !matches!(route.handler, Handler::Key(_));
            assert_eq!(devices, usize::from(needs_one), "{}", route.path);
            assert!(route.path.starts_with('/'), "{}", route.path);
            assert!(!route.path.ends_with('/'), "{}", route.path);
            assert!(
                matches!(
                    route.method,
                    Method::Get | Method::Post | Method::Put | Method::Delete
                ),
                "{}",
                route.path
            );
            // What changes something needs a key that can write.
            if route.method != Method::Get {
                assert_ne!(route.need, Need::Read, "{}", route.path);
            }
            if matches!(route.handler, Handler::Write(..)) {
                assert_eq!(route.need, Need::Write, "{}", route.path);
            }
        }
    }

    /// docs/hosted-api.md's endpoint table (under `<!-- routes`) has one row per entry, as
    /// `` | `METHOD /path` | ... ``.
    #[test]
    fn every_route_is_in_the_docs() {
        let mut documented: Vec<String> = crate::util::doc_table("hosted-api.md", "<!-- routes")
            .iter()
            .map(|cells| cells[0].trim_matches('`').to_string())
            .collect();
        let mut table: Vec<String> = ROUTES
            .iter()
            .map(|r| format!("{} {}", r.method.as_str(), r.path))
            .collect();
        documented.sort();
        table.sort();
        assert_eq!(
            documented, table,
            "docs/hosted-api.md's endpoint table and src/hosted/routes.rs"
        );
    }

    #[test]
    fn paths_and_methods() {
        let ok = |m, p| {
            let (route, id) = find(m, p).unwrap();
            (route.method, route.path, id)
        };
        assert_eq!(
            ok(Method::Get, "/api/v1/devices"),
            (Method::Get, "/devices", None)
        );
        assert_eq!(
            ok(Method::Head, "/api/v1/devices/"),
            (Method::Get, "/devices", None)
        );
        assert_eq!(
            ok(Method::Post, "/api/v1/thermostat/abc/temperature/range"),
            (
                Method::Post,
                "/thermostat/{deviceId}/temperature/range",
                Some("abc")
            )
        );
        assert_eq!(
            ok(Method::Put, "/api/v1/thermostat/abc/schedule/"),
            (Method::Put, "/thermostat/{deviceId}/schedule", Some("abc"))
        );
        assert_eq!(
            ok(Method::Delete, "/api/v1/thermostat/abc"),
            (Method::Delete, "/thermostat/{deviceId}", Some("abc"))
        );
        // An empty id matches, and then names no thermostat (404 Device not found).
        assert_eq!(
            ok(Method::Get, "/api/v1/thermostat//status"),
            (Method::Get, "/thermostat/{deviceId}/status", Some(""))
        );
        for (method, path) in [
            (Method::Get, "/api/v1/thermostat/abc/away"),
            (Method::Post, "/api/v1/thermostat/abc/status"),
            (Method::Get, "/api/v1/thermostat/abc"),
        ] {
            assert!(
                matches!(find(method, path), Err(HostedError::MethodNotAllowed)),
                "{path}"
            );
        }
        for path in [
            "/api/v1/thermostat/abc/turbo",
            "/api/v1",
            "/api/v1/",
            "/api/v1/thermostat",
            "/api/v1//devices",
            "/api/v1/devices//",
        ] {
            assert!(
                matches!(find(Method::Post, path), Err(HostedError::NotFound)),
                "{path}"
            );
        }
    }
}
