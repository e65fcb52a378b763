//! A stand-in for Home Assistant's Supervisor on loopback: the three calls hearth makes, in the
//! Supervisor's envelope, refused without the add-on's token (401, as the Supervisor does).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use hearth::config::SupervisorConfig;
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
    server: Arc<tiny_http::Server>,
    asked: Arc<Mutex<Vec<String>>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeSupervisor {
    /// Answers each path with its answer, anything else with 404.
    pub fn start(answers: &[(&str, Answer)]) -> FakeSupervisor {
        let answers: HashMap<String, Answer> = answers
            .iter()
            .map(|(p, a)| (p.to_string(), a.clone()))
            .collect();
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let url = format!("http://{}", server.server_addr().to_ip().unwrap());
        let asked = Arc::new(Mutex::new(Vec::new()));
        let thread = {
            let (server, asked) = (Arc::clone(&server), Arc::clone(&asked));
            std::thread::spawn(move || {
                for request in server.incoming_requests() {
                    let path = request.url().to_string();
                    asked.lock().unwrap().push(path.clone());
                    let token = request
                        .headers()
                        .iter()
                        .find(|h| h.field.equiv("Authorization"))
                        .map(|h| h.value.as_str().to_string());
                    let (status, body) = if token.as_deref() != Some(&format!("Bearer {TOKEN}")) {
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
                    let _ = request
                        .respond(tiny_http::Response::from_string(text).with_status_code(status));
                }
            })
        };
        FakeSupervisor {
            url,
            server,
            asked,
            thread: Some(thread),
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

impl Drop for FakeSupervisor {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
