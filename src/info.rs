//! `/info` and `/health`, answered on both ports.

use serde::Serialize;

use crate::app::App;
use crate::http::Response;

/// Server connection details, in the Python server's shape (the No Longer Evil installer looks
/// for `server == "nolongerevil"` and uses `cloudregisterurl`).
#[derive(Serialize)]
struct Info<'a> {
    server: &'static str,
    implementation: &'static str,
    version: &'static str,
    api_origin: &'a str,
    cloudregisterurl: String,
    ip: &'a str,
    port: u16,
    ssl: bool,
    require_device_pairing: bool,
    entry_key_ttl_seconds: u64,
}

pub fn info(app: &App) -> Response {
    let o = &app.origin();
    Response::json(
        200,
        &Info {
            server: "nolongerevil",
            implementation: "hearth",
            version: env!("CARGO_PKG_VERSION"),
            api_origin: &o.raw,
            cloudregisterurl: o.cloud_register_url(),
            ip: &o.ip,
            port: o.port,
            ssl: o.ssl,
            require_device_pairing: app.config().require_device_pairing,
            entry_key_ttl_seconds: app.config().entry_key_ttl_secs,
        },
    )
}

pub fn health() -> Response {
    Response::json(200, &serde_json::json!({"status": "ok"}))
}
