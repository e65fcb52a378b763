//! What the fuzz targets share. The handlers' targets: one in-process hearth (its data in
//! /dev/shm when there is one, where fsync costs nothing) with a thermostat and an API key,
//! and the check applied to every answer: no panic, no 5xx (the weather proxy's 502 for an
//! unreachable upstream aside), and a refusal is a JSON error. The HTTP edge's targets:
//! [`edge`]. The HomeKit pairing targets: [`controller`].

pub mod controller;
pub mod edge;

use std::sync::{Arc, OnceLock};

use hearth::accounts::keys::{self, KeySpec};
use hearth::control_port::ControlPort;
use hearth::device::DeviceApi;
use hearth::http::{Method, Reply, Request, Service};
use hearth::state::Stamp;
use hearth::{Config, Server};
use serde_json::{Value, json};

pub const SERIAL: &str = "02AA01AC0000FUZZ";

pub struct Harness {
    pub device: DeviceApi,
    pub control: ControlPort,
    pub auth: String,
    pub bearer: String,
    _server: Server,
}

pub fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            std::path::PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("hearth-fuzz-{}", std::process::id()));
        let mut config = Config::local(&dir);
        config.api_rate_limit_per_minute = 100_000;
        // Inputs mint serials from one (absent) address: lifted as for the tests and benches,
        // or the fifth new serial would be a 503.
        config.max_new_thermostats_per_client = 0;
        let server = Server::start(config).expect("hearth starts");
        let app = Arc::clone(server.app());
        for (key, fields) in [
            (
                format!("device.{SERIAL}"),
                json!({"current_temperature": 20.5, "has_fan": true, "can_heat": true, "can_cool": true}),
            ),
            (
                format!("shared.{SERIAL}"),
                json!({"target_temperature": 20.0, "target_temperature_type": "heat"}),
            ),
        ] {
            let fields = fields.as_object().cloned().unwrap_or_default();
            app.state()
                .update_device(SERIAL, hearth::hub::Origin::Server, |txn| {
                    txn.merge(&key, &fields, Stamp::Always);
                    Ok::<_, hearth::store::StoreError>(())
                })
                .expect("seeded");
        }
        let spec = KeySpec {
            user: "owner".into(),
            name: "fuzz".into(),
            scopes: keys::parse_scopes("read,write").expect("scopes"),
            serials: Vec::new(),
            expires_days: None,
        };
        let key = keys::create(app.state(), &spec).expect("key").key;
        use base64::Engine as _;
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{SERIAL}:pw"));
        Harness {
            device: DeviceApi::new(Arc::clone(&app)),
            control: ControlPort::new(app),
            auth: format!("Basic {basic}"),
            bearer: format!("Bearer {key}"),
            _server: server,
        }
    })
}

/// A POST with a JSON body.
pub fn post(path: &str, body: &[u8]) -> Request {
    let mut r = Request::new(Method::Post, path).with_header("Content-Type", "application/json");
    r.body = body.to_vec();
    r
}

/// Handles `request` and checks the answer (a panic is what libFuzzer reports).
pub fn check(service: &dyn Service, request: Request) {
    let upstream = request.path.contains("/weather");
    let Reply::Full(response) = service.handle(request) else {
        return;
    };
    assert!(
        response.status < 500 || (upstream && response.status == 502),
        "answered {}",
        response.status
    );
    if response.status >= 400 {
        let body: Value = serde_json::from_slice(&response.body).expect("a JSON error body");
        assert!(
            body["error"].is_string()
                || (body["success"] == json!(false) && body["message"].is_string()),
            "no error message in {body}"
        );
    }
}
