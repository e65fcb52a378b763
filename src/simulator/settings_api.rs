//! A thermostat's local settings API, as No Longer Evil firmware serves it on port 8080
//! (`/cgi-bin/api/settings`, a BusyBox CGI), for tests and for trying `hearth scan` and
//! `hearth point` without a thermostat:
//! - `GET` answers `{"cloudregisterurl": URL}` (400 with no body when none is set);
//! - `POST {"initialize": SERIAL}` answers `{"api_key": KEY}`;
//! - `POST {"api_key": KEY, "endpoint": "http://IPv4[:port]"}` sets the URL to the endpoint
//!   plus `/entry` and answers `{"device_name","status":"new","cloudregisterurl"}`; a wrong or
//!   missing key is 401 `{"status":"Invalid or Missing API Key."}` (unless the key is not
//!   required, as in the thermostat's first 30 minutes), an endpoint that is not an IPv4
//!   address with an optional port is 400 `{"status":"Invalid IP Address/Port."}`.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::http::Served;
use crate::http::{self, Method, Reply, Request, Response};

pub const PATH: &str = "/cgi-bin/api/settings";

/// What the simulated thermostat's settings hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub serial: String,
    pub api_key: String,
    pub cloudregisterurl: Option<String>,
    /// False in the thermostat's first 30 minutes after power-on: no key is asked for.
    pub key_required: bool,
}

pub struct SettingsApi {
    addr: SocketAddr,
    settings: Arc<Mutex<Settings>>,
    /// Served by hearth's own HTTP edge; stopped when dropped.
    _served: Served,
}

impl SettingsApi {
    /// Serves `settings` on `bind` (port 0 picks a free port) until dropped.
    pub fn start(bind: SocketAddr, settings: Settings) -> io::Result<SettingsApi> {
        let settings = Arc::new(Mutex::new(settings));
        let listener = http::serve("settings-api", bind, {
            let settings = Arc::clone(&settings);
            move |rq: Request| {
                let (status, reply) = answer(&mut settings.lock(), rq.method, &rq.path, &rq.body);
                Reply::Full(response(status, reply))
            }
        })?;
        Ok(SettingsApi {
            addr: listener.addr(),
            settings,
            _served: listener,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The settings as they are now.
    pub fn settings(&self) -> Settings {
        self.settings.lock().clone()
    }

    pub fn set_key_required(&self, required: bool) {
        self.settings.lock().key_required = required;
    }
}

/// The CGI's answer: JSON (or nothing) with the firmware's `X-API-VERSION`.
fn response(status: u16, body: Option<Value>) -> Response {
    Response {
        status,
        headers: vec![
            ("Content-Type".into(), "application/json".into()),
            ("X-API-VERSION".into(), "0.0.1".into()),
        ],
        body: body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
    }
}

/// The firmware's answer to one request.
fn answer(s: &mut Settings, method: Method, path: &str, body: &[u8]) -> (u16, Option<Value>) {
    if path != PATH {
        return (404, None);
    }
    match method {
        Method::Get => match &s.cloudregisterurl {
            Some(u) => (200, Some(json!({"cloudregisterurl": u}))),
            None => (400, None),
        },
        Method::Post => {
            let req: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            if let Some(name) = req.get("initialize") {
                return if name.as_str() == Some(&s.serial) {
                    (200, Some(json!({"api_key": s.api_key})))
                } else {
                    (400, Some(json!({"status": "Invalid request."})))
                };
            }
            let key_ok = req.get("api_key").and_then(Value::as_str) == Some(s.api_key.as_str());
            if s.key_required && !key_ok {
                return (401, Some(json!({"status": "Invalid or Missing API Key."})));
            }
            let Some(endpoint) = req
                .get("endpoint")
                .and_then(Value::as_str)
                .filter(|e| valid_endpoint(e))
            else {
                return (400, Some(json!({"status": "Invalid IP Address/Port."})));
            };
            let url = format!("{endpoint}/entry");
            s.cloudregisterurl = Some(url.clone());
            (
                200,
                Some(json!({"device_name": s.serial, "status": "new", "cloudregisterurl": url})),
            )
        }
        _ => (405, None),
    }
}

/// `http://` and an IPv4 address with an optional port, as the CGI checks it.
fn valid_endpoint(endpoint: &str) -> bool {
    let Some(rest) = endpoint.strip_prefix("http://") else {
        return false;
    };
    let (host, port) = match rest.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (rest, None),
    };
    host.parse::<Ipv4Addr>().is_ok() && port.is_none_or(|p| p.parse::<u16>().is_ok_and(|p| p > 0))
}
