//! Property tests with fixed seeds: thousands of mutated requests, made from valid ones, go
//! straight to the handlers (no sockets) for the thermostat PUT and subscribe, `/command`,
//! schedules on both APIs, `/api/v1` bodies, and paths, queries and serials. Whatever comes in,
//! no handler panics, nothing answers 5xx, and every refusal is a 4xx whose body is a JSON
//! object with an error message (`error`, or `/command`'s `success: false` and `message`)
//! and leaves the store's files as they were.

use crate::common;

use std::sync::Arc;

use common::*;
use hearth::accounts::keys::{self, KeySpec};
use hearth::control_port::ControlPort;
use hearth::device::DeviceApi;
use hearth::http::{Method, Reply, Request, Service};
use serde_json::{Map, Value, json};

/// xorshift64*: small, fast, and the same sequence on every run for a given seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn string(&mut self) -> String {
        const PIECES: &[&str] = &[
            "",
            "a",
            "Z",
            "0",
            "9",
            "-",
            "_",
            ".",
            "/",
            "%",
            "%2F",
            "%zz",
            "%00",
            "..",
            " ",
            "\"",
            "\\",
            "é",
            "😀",
            "\u{0}",
            "\n",
            "02AA01AC0000SIM1",
            "shared.",
            "device.",
            "heat",
            "cool",
            "range",
            "off",
            "eco",
            "true",
            "null",
            "-1",
            "1e999",
            "2147483648",
        ];
        let n = self.below(6);
        (0..n).map(|_| *self.pick(PIECES)).collect()
    }

    fn number(&mut self) -> Value {
        match self.below(8) {
            0 => json!(0),
            1 => json!(-1),
            2 => json!(i64::MAX),
            3 => json!(u64::MAX),
            4 => json!(1e300),
            5 => json!(-273.15),
            6 => json!((self.next() % 10_000) as f64 / 7.0),
            _ => json!(self.next() % 100),
        }
    }

    /// Any JSON value, at most `depth` deep.
    fn value(&mut self, depth: usize) -> Value {
        match self.below(if depth == 0 { 5 } else { 7 }) {
            0 => Value::Null,
            1 => json!(self.below(2) == 0),
            2 | 3 => self.number(),
            4 => json!(self.string()),
            5 => Value::Array((0..self.below(4)).map(|_| self.value(depth - 1)).collect()),
            _ => {
                let mut m = Map::new();
                for _ in 0..self.below(4) {
                    m.insert(self.string(), self.value(depth - 1));
                }
                Value::Object(m)
            }
        }
    }

    /// `v` with one node replaced, removed or added.
    fn mutate_value(&mut self, v: &mut Value) {
        let descend = self.below(3) != 0;
        match v {
            Value::Object(m) if descend && !m.is_empty() => {
                let key = m
                    .keys()
                    .nth(self.below(m.len()))
                    .cloned()
                    .unwrap_or_default();
                match self.below(5) {
                    0 => {
                        m.remove(&key);
                    }
                    1 => {
                        m.insert(self.string(), self.value(2));
                    }
                    _ => {
                        if let Some(child) = m.get_mut(&key) {
                            self.mutate_value(child);
                        }
                    }
                }
            }
            Value::Array(a) if descend && !a.is_empty() => {
                let i = self.below(a.len());
                match self.below(4) {
                    0 => {
                        a.remove(i);
                    }
                    1 => a.push(self.value(2)),
                    _ => self.mutate_value(&mut a[i]),
                }
            }
            _ => *v = self.value(2),
        }
    }

    /// A body made from `valid`: mutated as JSON, or as bytes (cut, flipped, spliced).
    fn body(&mut self, valid: &Value) -> Vec<u8> {
        let mut v = valid.clone();
        for _ in 0..1 + self.below(3) {
            self.mutate_value(&mut v);
        }
        let mut bytes = v.to_string().into_bytes();
        if self.below(3) == 0 && !bytes.is_empty() {
            let i = self.below(bytes.len());
            match self.below(3) {
                0 => bytes.truncate(i),
                1 => bytes[i] = self.next() as u8,
                _ => bytes.insert(i, *self.pick(b"{}[],:\"\\0-e.")),
            }
        }
        bytes
    }
}

fn server() -> TestServer {
    TestServer::start_with(|c| c.api_rate_limit_per_minute = 100_000)
}

/// A thermostat with state, so commands and reads have something to act on.
fn seed_thermostat(s: &TestServer) {
    s.server_change(
        SERIAL,
        &format!("device.{SERIAL}"),
        json!({"current_temperature": 20.5, "has_fan": true, "can_heat": true, "can_cool": true, "temperature_scale": "C"}),
    );
    s.server_change(
        SERIAL,
        &format!("shared.{SERIAL}"),
        json!({"target_temperature": 20.0, "target_temperature_type": "heat"}),
    );
}

/// The store's files, minus the API-key "last used" records (an authenticated request notes
/// the minute its key was used, whatever else it does).
fn store_without_key_use(s: &TestServer) -> Vec<(String, Vec<u8>)> {
    store_bytes(s.dir.path())
        .into_iter()
        .map(|(name, bytes)| {
            let kept: Vec<u8> = bytes
                .split_inclusive(|b| *b == b'\n')
                .filter(|line| !String::from_utf8_lossy(line).contains("\"op\":\"api_key_used\""))
                .flatten()
                .copied()
                .collect();
            (name, kept)
        })
        .collect()
}

/// A refusal's body: `{"error": "..."}`, or the control API's `/command` shape
/// `{"success": false, "message": "..."}` that its clients expect.
fn is_json_error(body: &Value) -> bool {
    body["error"].is_string() || (body["success"] == json!(false) && body["message"].is_string())
}

/// Sends `request` to `service` and checks the answer; returns its status (0 for a held or
/// streamed answer, which is never a refusal).
fn check(s: &TestServer, service: &dyn Service, request: Request) -> u16 {
    let what = format!(
        "{:?} {}?{} {}",
        request.method,
        request.path,
        request.query,
        String::from_utf8_lossy(&request.body)
    );
    // The weather proxy answers 502 when its upstream (none here) cannot be reached.
    let upstream = request.path.contains("/weather");
    let before = store_without_key_use(s);
    let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| service.handle(request)))
        .unwrap_or_else(|_| panic!("the handler panicked on {what}"));
    let Reply::Full(response) = reply else {
        return 0;
    };
    assert!(
        response.status < 500 || (upstream && response.status == 502),
        "{} for {what}",
        response.status
    );
    if response.status >= 400 {
        let body: Value = serde_json::from_slice(&response.body).unwrap_or_else(|_| {
            panic!(
                "{} for {what}: the body is not JSON: {}",
                response.status,
                String::from_utf8_lossy(&response.body)
            )
        });
        assert!(
            is_json_error(&body),
            "{} for {what}: no error message in {body}",
            response.status
        );
        assert_eq!(
            store_without_key_use(s),
            before,
            "{} for {what} changed the store",
            response.status
        );
    }
    response.status
}

fn post(path: &str, body: Vec<u8>) -> Request {
    let mut r = Request::new(Method::Post, path).with_header("Content-Type", "application/json");
    r.body = body;
    r
}

#[test]
fn thermostat_puts_and_subscribes() {
    let s = server();
    seed_thermostat(&s);
    let api = DeviceApi::new(Arc::clone(s.server().app()));
    let mut rng = Rng(0x5eed_0001);
    let put = json!({"objects": [{"object_key": format!("shared.{SERIAL}"), "object_revision": 1, "object_timestamp": 1, "value": {"target_temperature": 21.5, "target_temperature_type": "heat"}}]});
    let subscribe = json!({"chunked": false, "objects": [{"object_key": format!("device.{SERIAL}"), "object_revision": 0, "object_timestamp": 0}, {"object_key": format!("shared.{SERIAL}"), "object_revision": 0, "object_timestamp": 0}]});
    let auth = basic(SERIAL, "pw");
    let mut refused = 0;
    for i in 0..1500 {
        let (path, valid) = if i % 2 == 0 {
            (
                *rng.pick(&["/nest/transport/v7/put", "/transport/put", "/v5/put"]),
                &put,
            )
        } else {
            (
                *rng.pick(&[
                    "/nest/transport",
                    "/nest/transport/v7/subscribe",
                    "/czfe/transport",
                ]),
                &subscribe,
            )
        };
        let request = post(path, rng.body(valid)).with_header("Authorization", &auth);
        if check(&s, &api, request) >= 400 {
            refused += 1;
        }
    }
    assert!(
        refused > 100,
        "the mutations reach the refusals ({refused})"
    );
}

#[test]
fn control_commands_and_schedules() {
    let s = server();
    seed_thermostat(&s);
    let api = ControlPort::new(Arc::clone(s.server().app()));
    let mut rng = Rng(0x5eed_0002);
    let schedule = json!({"ver": 2, "name": "Week", "schedule_mode": "HEAT",
        "days": {"0": {"0": {"temp": 20.5, "time": 21600, "type": "HEAT", "entry_type": "setpoint"}}}});
    let valid = [
        json!({"serial": SERIAL, "command": "set_temperature", "value": 21.5}),
        json!({"serial": SERIAL, "command": "set_temperature", "value": {"low": 19, "high": 24}}),
        json!({"serial": SERIAL, "command": "set_mode", "value": "heat"}),
        json!({"serial": SERIAL, "command": "set_away", "value": true}),
        json!({"serial": SERIAL, "command": "set_fan", "value": {"mode": "on", "duration": 900}}),
        json!({"serial": SERIAL, "command": "set_eco_temperatures", "value": {"low": 10, "high": 30}}),
        json!({"serial": SERIAL, "command": "set_device_setting", "value": {"field": "temperature_lock", "value": true}}),
        json!({"serial": SERIAL, "command": "set_schedule_mode", "value": "HEAT"}),
        json!({"serial": SERIAL, "command": "set_schedule", "value": schedule}),
    ];
    let mut refused = 0;
    for _ in 0..2000 {
        let one = rng.pick(&valid);
        let body = rng.body(one);
        if check(&s, &api, post("/command", body)) >= 400 {
            refused += 1;
        }
    }
    assert!(
        refused > 200,
        "the mutations reach the refusals ({refused})"
    );
}

#[test]
fn hosted_api_bodies() {
    let s = server();
    seed_thermostat(&s);
    let spec = KeySpec {
        user: "owner".into(),
        name: "properties".into(),
        scopes: keys::parse_scopes("read,write").unwrap(),
        serials: Vec::new(),
        expires_days: None,
    };
    let key = keys::create(s.app().state(), &spec).unwrap().key;
    let auth = format!("Bearer {key}");
    let api = ControlPort::new(Arc::clone(s.server().app()));
    // The thermostat's id on /api/v1 is its serial.
    let schedule = json!({"schedule": {"ver": 2, "name": "Week", "schedule_mode": "HEAT",
        "days": {"0": {"0": {"temp": 20.5, "time": 21600, "type": "HEAT", "entry_type": "setpoint"}}}}});
    let valid = [
        (
            "temperature",
            json!({"value": 21.3, "mode": "heat", "scale": "C"}),
        ),
        (
            "temperature/range",
            json!({"low": 19, "high": 24, "scale": "C"}),
        ),
        ("away", json!({"away": true})),
        ("eco", json!({"enabled": true})),
        (
            "lock",
            json!({"enabled": true, "pin": "1234", "temp_min": 18, "temp_max": 24}),
        ),
        ("mode", json!({"mode": "heat"})),
        ("fan", json!({"mode": "on", "duration": 900})),
        ("schedule", schedule),
    ];
    let mut rng = Rng(0x5eed_0003);
    let mut refused = 0;
    for _ in 0..2000 {
        let (action, body) = rng.pick(&valid);
        let method = if *action == "schedule" {
            Method::Put
        } else {
            Method::Post
        };
        let mut request = Request::new(method, &format!("/api/v1/thermostat/{SERIAL}/{action}"))
            .with_header("Authorization", &auth)
            .with_header("Content-Type", "application/json");
        request.body = rng.body(body);
        if check(&s, &api, request) >= 400 {
            refused += 1;
        }
    }
    assert!(
        refused > 200,
        "the mutations reach the refusals ({refused})"
    );
}

#[test]
fn paths_queries_and_serials() {
    let s = server();
    seed_thermostat(&s);
    let app = Arc::clone(s.server().app());
    let device = DeviceApi::new(Arc::clone(&app));
    let control = ControlPort::new(app);
    let mut rng = Rng(0x5eed_0004);
    let device_paths = [
        "/nest/entry",
        "/nest/passphrase",
        "/nest/ping",
        "/nest/transport/device/",
        "/nest/weather/v1",
        "/nest/upload",
        "/transport/device/",
        "/v7/",
        "/czfe/",
        "/nest/pro_info/",
    ];
    let control_paths = [
        "/status",
        "/api/devices",
        "/api/schedule",
        "/api/stats",
        "/api/config",
        "/notify-device",
        "/api/dismiss-pairing/",
        "/api/device",
        "/api/registered-devices",
        "/api/v1/thermostat/",
        "/api/v1/devices",
        "/command",
    ];
    let methods = [
        Method::Get,
        Method::Post,
        Method::Put,
        Method::Delete,
        Method::Head,
        Method::Options,
        Method::Other,
    ];
    for i in 0..3000 {
        let on_device = i % 2 == 0;
        let base = if on_device {
            *rng.pick(&device_paths)
        } else {
            *rng.pick(&control_paths)
        };
        let target = format!(
            "{base}{}?serial={}&{}={}",
            rng.string(),
            rng.string(),
            rng.string(),
            rng.string()
        );
        let mut request = Request::new(*rng.pick(&methods), &target);
        if rng.below(2) == 0 {
            let user = if rng.below(2) == 0 {
                SERIAL.to_string()
            } else {
                rng.string()
            };
            request = request.with_header("Authorization", &basic(&user, &rng.string()));
        } else if rng.below(2) == 0 {
            request = request.with_header("Authorization", &format!("Bearer {}", rng.string()));
        }
        if rng.below(3) == 0 {
            request.body = rng.string().into_bytes();
        }
        if on_device {
            check(&s, &device, request);
        } else {
            check(&s, &control, request);
        }
    }
}
