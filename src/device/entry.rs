//! Service discovery (`/nest/entry`), `/nest/ping` and the installer stub `/nest/pro_info`.

use serde::Serialize;

use crate::app::App;
use crate::http::{Request, Response};
use crate::util::clock;

/// The URLs a thermostat uses from now on. Every one carries an explicit port: the firmware
/// finds the port by scanning for `:digits`, and without it pushes cannot wake the device.
#[derive(Serialize)]
struct Entry {
    czfe_url: String,
    transport_url: String,
    direct_transport_url: String,
    passphrase_url: String,
    /// Points at transport, as the Python server does (the firmware pings its transport host).
    ping_url: String,
    pro_info_url: String,
    /// The device appends its location, e.g. `?query=94304,US`.
    weather_url: String,
    upload_url: String,
    software_update_url: &'static str,
    server_version: &'static str,
    tier_name: &'static str,
}

pub fn entry(app: &App, req: &Request) -> Response {
    if log::log_enabled!(log::Level::Debug) && !req.body.is_empty() {
        // reset, mac, model, request_id, software_version...: informational only.
        log::debug!(
            "entry form: {}",
            crate::util::logged(&String::from_utf8_lossy(&req.body))
        );
    }
    let o = &app.origin().with_port;
    let transport = format!("{o}/nest/transport");
    Response::json(
        200,
        &Entry {
            czfe_url: transport.clone(),
            direct_transport_url: transport.clone(),
            ping_url: transport.clone(),
            transport_url: transport,
            passphrase_url: format!("{o}/nest/passphrase"),
            pro_info_url: format!("{o}/nest/pro_info"),
            weather_url: format!("{o}/nest/weather/v1?query="),
            upload_url: format!("{o}/nest/upload"),
            software_update_url: "",
            server_version: "1.0.0",
            tier_name: "local",
        },
    )
}

pub fn ping() -> Response {
    Response::json(
        200,
        &serde_json::json!({"status": "ok", "timestamp": clock::now_ms()}),
    )
}

/// A fixed installer record; the code comes from the path or `?entry_code=`.
pub fn pro_info(path: &str, req: &Request) -> Response {
    let from_path = path
        .strip_prefix("/nest/pro_info/")
        .filter(|c| !c.is_empty());
    let code = match from_path {
        Some(c) => crate::http::percent_decode(c).unwrap_or_else(|_| c.to_string()),
        None => req
            .query_param("entry_code")
            .ok()
            .flatten()
            .unwrap_or_default(),
    };
    Response::json(
        200,
        &serde_json::json!({
            "id": 1, "pro_id": code, "dba": "nolongerevil",
            "locality": "A Self-Hosted Thermostat", "website": "https://nolongerevil.com", "rating": 5.0
        }),
    )
}
