//! A stand-in for Home Assistant's Supervisor on loopback: the three calls hearth makes, in the
//! Supervisor's envelope, refused without the add-on's token (401, as the Supervisor does).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hearth::config::SupervisorConfig;
use hearth::http::Served;
use hearth::http::{self, Reply, Request, Response};
use serde_json::{Value, json};

pub const TOKEN: &str = "4d5e6f-the-add-on-token";

/// A status and a JSON body.
pub type Answer = (u16, Value);

pub fn ok(data: Value) -> Answer {
    (200, json!({"result": "ok", "data": data}))
}

pub fn error(status: u16, message: &str) -> Answer {
    (status, json!({"result": "error", "message": message}))
}

/// `GET /network/info` for a host whose Ethernet has `ip`, shaped as the Supervisor answers
/// (a disconnected Wi-Fi, the add-ons' Docker network, an IPv6 address).
pub fn network_info(ip: &str) -> Answer {
    ok(json!({
        "interfaces": [
            {"interface": "wlan0", "type": "wireless", "enabled": true, "connected": false,
             "primary": false, "mac": "B8:27:EB:00:00:02", "ipv4": null, "ipv6": null,
             "wifi": null, "vlan": null, "mdns": "announce", "llmnr": "announce"},
            {"interface": "eth0", "type": "ethernet", "enabled": true, "connected": true,
             "primary": true, "mac": "B8:27:EB:00:00:01",
             "ipv4": {"method": "auto", "address": [format!("{ip}/24")],
                      "nameservers": ["192.168.1.1"], "gateway": "192.168.1.1",
                      "route_metric": 100, "ready": true},
             "ipv6": {"method": "auto", "address": ["fd00::10/64"], "nameservers": [],
                      "gateway": null, "ready": true, "addr_gen_mode": "default",
                      "ip6_privacy": "default"},
             "wifi": null, "vlan": null, "mdns": "announce", "llmnr": "announce"}
        ],
        "docker": {"interface": "hassio", "address": "172.30.32.0/23",
                   "gateway": "172.30.32.1", "dns": "172.30.32.3"},
        "host_internet": true,
        "supervisor_internet": true
    }))
}

/// `GET /addons/self/info` for an add-on whose ports are mapped as `network` says.
pub fn addon_info(network: Value) -> Answer {
    ok(json!({
        "name": "hearth", "slug": "local_hearth", "hostname": "local-hearth",
        "state": "started", "version": "0.1.0", "ip_address": "172.30.33.4",
        "ingress": true, "ingress_port": 8082,
        "ingress_entry": "/api/hassio_ingress/0123abcd", "network": network,
        "network_description": {"8000/tcp": "Thermostats", "8082/tcp": "Control API"}
    }))
}

/// `GET /services/mqtt` for the Mosquitto add-on on `host:port`.
pub fn mqtt_service(host: &str, port: u16, user: &str, password: &str) -> Answer {
    ok(json!({
        "addon": "core_mosquitto", "host": host, "port": port, "ssl": false,
        "protocol": "3.1.1", "username": user, "password": password
    }))
}

/// The Supervisor with no MQTT broker to offer.
pub fn no_mqtt_service() -> Answer {
    error(400, "Service not enabled")
}

pub struct FakeSupervisor {
    pub url: String,
    _served: Served,
    asked: Arc<Mutex<Vec<String>>>,
}

impl FakeSupervisor {
    /// Answers each path with its answer, anything else with 404.
    pub fn start(answers: &[(&str, Answer)]) -> FakeSupervisor {
        crate::common::share_process();
        let answers: HashMap<String, Answer> = answers
            .iter()
            .map(|(p, a)| (p.to_string(), a.clone()))
            .collect();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let listener = http::serve("fake-supervisor", ([127, 0, 0, 1], 0).into(), {
            let asked = Arc::clone(&asked);
            move |request: Request| {
                let path = match request.query.as_str() {
                    "" => request.path.clone(),
                    query => format!("{}?{query}", request.path),
                };
                asked.lock().unwrap().push(path.clone());
                let token = request.header("Authorization");
                let (status, body) = if token != Some(format!("Bearer {TOKEN}").as_str()) {
                    (401, Value::String("401: Unauthorized".into()))
                } else {
                    answers
                        .get(&path)
                        .cloned()
                        .unwrap_or_else(|| error(404, "not found"))
                };
                let text = match body {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                Reply::Full(Response {
                    status,
                    headers: vec![("Content-Type".into(), "text/plain; charset=UTF-8".into())],
                    body: text.into_bytes(),
                })
            }
        })
        .unwrap();
        FakeSupervisor {
            url: format!("http://{}", listener.addr()),
            _served: listener,
            asked,
        }
    }

    /// How hearth reaches it.
    pub fn config(&self) -> SupervisorConfig {
        SupervisorConfig {
            url: self.url.clone(),
            token: TOKEN.into(),
        }
    }

    /// The paths asked so far, in order.
    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}
