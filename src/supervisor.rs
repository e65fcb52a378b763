//! Home Assistant's Supervisor, asked at start-up when hearth runs as its add-on
//! (`SUPERVISOR_TOKEN` is set): what the add-on's options leave out is filled in from it.
//!
//! - No `api_origin`: the host's LAN address (`GET /network/info`: the primary connected
//!   interface's first IPv4 address) and the host port Home Assistant maps to the device port
//!   (`GET /addons/self/info`, `network["8000/tcp"]`, 9543 unless the user changed it), so
//!   thermostats are given `http://<host>:9543/entry`, never the container's port 8000.
//!   Without an answer hearth does not start: a wrong origin handed to a thermostat would
//!   cut it off.
//! - No `mqtt_host`: the broker the Supervisor offers (`GET /services/mqtt`, the Mosquitto
//!   add-on), with its credentials; with none, hearth runs without MQTT and says so once. It
//!   is asked at start-up only: a broker installed later is used after a restart.
//! - The control port given a host port while no API key is required: a warning, since the
//!   control API is then open to the whole network (see the add-on's documentation).
//!
//! Every answer is the Supervisor's envelope `{"result": "ok", "data": {...}}`; the token goes
//! in `Authorization: Bearer`.

use std::fmt;
use std::io::Read;
use std::net::Ipv4Addr;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::config::{ApiOrigin, Config, MqttConfig, SupervisorConfig};

/// The host port the add-on's manifest maps the device port to.
pub const DEFAULT_DEVICE_HOST_PORT: u16 = 9543;

/// The Supervisor answers from the same machine; anything slower is a Supervisor in trouble.
const TIMEOUT: Duration = Duration::from_secs(10);
const MAX_ANSWER: u64 = 1 << 20;

/// Why the Supervisor gave no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SupervisorError {
    Unreachable(String),
    /// An error envelope (or a bare status): `{"result": "error", "message": ...}`.
    Refused {
        status: u16,
        message: String,
    },
    /// An answer without the fields hearth needs.
    Unexpected(String),
}

impl fmt::Display for SupervisorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SupervisorError::Unreachable(why) => write!(f, "unreachable: {why}"),
            SupervisorError::Refused { status, message } => write!(f, "{status} {message}"),
            SupervisorError::Unexpected(what) => write!(f, "unexpected answer: {what}"),
        }
    }
}

/// The broker `GET /services/mqtt` offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MqttService {
    pub host: String,
    pub port: u16,
    pub ssl: bool,
    pub username: Option<String>,
    pub password: Option<String>,
}

/// A client of the Supervisor's API.
pub struct Supervisor {
    config: SupervisorConfig,
    agent: ureq::Agent,
}

impl Supervisor {
    pub fn new(config: &SupervisorConfig) -> Supervisor {
        Supervisor {
            config: config.clone(),
            // Asked only at start-up, before either port listens; still bounded.
            agent: crate::util::outbound::agent(Duration::from_secs(3), TIMEOUT),
        }
    }

    /// The `data` of a successful answer to `GET path`.
    fn get(&self, path: &str) -> Result<Map<String, Value>, SupervisorError> {
        let result = self
            .agent
            .get(&format!("{}{path}", self.config.url))
            .set("Authorization", &format!("Bearer {}", self.config.token))
            .call();
        let (status, response) = match result {
            Ok(response) => (response.status(), response),
            Err(ureq::Error::Status(status, response)) => (status, response),
            Err(ureq::Error::Transport(t)) => {
                return Err(SupervisorError::Unreachable(t.to_string()));
            }
        };
        let mut body = Vec::new();
        response
            .into_reader()
            .take(MAX_ANSWER)
            .read_to_end(&mut body)
            .map_err(|e| SupervisorError::Unreachable(e.to_string()))?;
        let envelope: Option<Map<String, Value>> = serde_json::from_slice(&body).ok();
        let field = |k: &str| envelope.as_ref().and_then(|e| e.get(k));
        match (
            status,
            field("result").and_then(Value::as_str),
            field("data"),
        ) {
            (200, Some("ok"), Some(Value::Object(data))) => Ok(data.clone()),
            (200, Some("ok"), _) => Err(SupervisorError::Unexpected(format!(
                "{path} answered without data"
            ))),
            _ => Err(SupervisorError::Refused {
                status,
                message: field("message").and_then(Value::as_str).map_or_else(
                    || String::from_utf8_lossy(&body).into_owned(),
                    str::to_string,
                ),
            }),
        }
    }

    /// The host's LAN address: the first IPv4 address of the primary connected interface
    /// (else of any connected one).
    pub fn host_address(&self) -> Result<Ipv4Addr, SupervisorError> {
        let data = self.get("/network/info")?;
        host_address_in(&data).ok_or_else(|| {
            SupervisorError::Unexpected(
                "/network/info lists no connected interface with an IPv4 address".into(),
            )
        })
    }

    /// The host ports this add-on's container ports are mapped to (`{"8000/tcp": 9543}`, null
    /// for a port the user left unmapped).
    pub fn port_map(&self) -> Result<Map<String, Value>, SupervisorError> {
        let data = self.get("/addons/self/info")?;
        match data.get("network") {
            Some(Value::Object(network)) => Ok(network.clone()),
            // No ports in the manifest (or none kept): nothing is mapped.
            Some(Value::Null) | None => Ok(Map::new()),
            Some(other) => Err(SupervisorError::Unexpected(format!(
                "/addons/self/info's network is {other}"
            ))),
        }
    }

    /// The broker Home Assistant offers add-ons, or `None` when there is none (no MQTT add-on
    /// installed: 400 "Service not enabled"; any other refusal is an error).
    pub fn mqtt(&self) -> Result<Option<MqttService>, SupervisorError> {
        let data = match self.get("/services/mqtt") {
            Ok(data) => data,
            Err(SupervisorError::Refused {
                status: 400,
                message,
            }) if message == "Service not enabled" => {
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let text = |k: &str| {
            data.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let host = text("host").ok_or_else(|| {
            SupervisorError::Unexpected("/services/mqtt answered without a host".into())
        })?;
        let port = data
            .get("port")
            .and_then(Value::as_u64)
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p > 0)
            .ok_or_else(|| {
                SupervisorError::Unexpected("/services/mqtt answered without a port".into())
            })?;
        Ok(Some(MqttService {
            host,
            port,
            ssl: data.get("ssl").and_then(Value::as_bool).unwrap_or(false),
            username: text("username"),
            password: text("password"),
        }))
    }
}

fn host_address_in(data: &Map<String, Value>) -> Option<Ipv4Addr> {
    let interfaces = data.get("interfaces")?.as_array()?;
    let connected = interfaces.iter().filter(|i| {
        i.get("connected").and_then(Value::as_bool) == Some(true)
            && i.get("enabled").and_then(Value::as_bool) != Some(false)
    });
    let first_ipv4 = |i: &Value| {
        i.get("ipv4")?
            .get("address")?
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .find_map(|a| a.split('/').next()?.parse::<Ipv4Addr>().ok())
    };
    let primary = |i: &&Value| i.get("primary").and_then(Value::as_bool) == Some(true);
    connected
        .clone()
        .filter(primary)
        .find_map(first_ipv4)
        .or_else(|| connected.clone().find_map(first_ipv4))
}

/// The host port mapped to container port `port`/tcp: `None` when the user left it unmapped
/// (or the manifest has no such port).
pub fn host_port(map: &Map<String, Value>, port: u16) -> Option<u16> {
    [format!("{port}/tcp"), port.to_string()]
        .iter()
        .find_map(|k| map.get(k))
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
}

/// Fills in, from the Supervisor, what the add-on's options leave out (see the module's
/// comment); does nothing without one. An `Err` says why hearth cannot start.
pub fn complete(config: &mut Config) -> Result<(), String> {
    let Some(supervisor) = config.supervisor.as_ref().map(Supervisor::new) else {
        return Ok(());
    };
    let ports = supervisor.port_map();
    if config.api_origin.is_none() {
        let ask = || -> Result<ApiOrigin, SupervisorError> {
            let host = supervisor.host_address()?;
            let port = match host_port(ports.as_ref().map_err(Clone::clone)?, config.device_port) {
                Some(port) => port,
                None => {
                    log::warn!(
                        "the thermostat port ({}/tcp) has no host port, so thermostats cannot \
                         reach hearth: give it one (normally {DEFAULT_DEVICE_HOST_PORT}) in the \
                         add-on's Network section",
                        config.device_port
                    );
                    DEFAULT_DEVICE_HOST_PORT
                }
            };
            Ok(ApiOrigin {
                scheme: if config.cert_dir.is_some() {
                    "https"
                } else {
                    "http"
                }
                .into(),
                host: host.to_string(),
                port: Some(port),
            })
        };
        let origin = ask().map_err(|e| {
            format!(
                "could not learn this host's address from the Supervisor ({e}); set the option \
                 \"Address thermostats use\" (api_origin), for example \
                 http://192.168.1.10:{DEFAULT_DEVICE_HOST_PORT}"
            )
        })?;
        log::info!("address from the Supervisor: {}", origin.raw());
        config.api_origin = Some(origin);
    }
    if let Ok(ports) = &ports {
        if let Some(port) = host_port(ports, config.control_port) {
            if !config.control_require_key {
                log::warn!(
                    "the control port has host port {port}, and no API key is required: anyone \
                     on your network can control the thermostats; turn on \"Require an API key\" \
                     (control_require_key)"
                );
            }
        }
    }
    if config.mqtt.is_none() {
        config.mqtt = match supervisor.mqtt() {
            Ok(Some(service)) if service.ssl => {
                log::warn!(
                    "MQTT off: the Supervisor's broker {}:{} wants TLS, which hearth does not \
                     speak; set \"MQTT broker\" (mqtt_host) to a plain listener",
                    crate::util::logged(&service.host),
                    service.port
                );
                None
            }
            Ok(Some(service)) => {
                log::info!(
                    "MQTT: the Supervisor's broker {}:{}",
                    crate::util::logged(&service.host),
                    service.port
                );
                Some(MqttConfig {
                    user: service.username,
                    password: service.password,
                    ..config.mqtt_names.broker(service.host, service.port)
                })
            }
            Ok(None) => {
                log::info!(
                    "MQTT off: no broker is set and Home Assistant offers none (install the \
                     Mosquitto broker add-on and restart hearth, or set \"MQTT broker\")"
                );
                None
            }
            Err(e) => {
                log::warn!("MQTT off: could not ask the Supervisor for its broker ({e})");
                None
            }
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn data(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_primary_connected_interface_gives_the_address() {
        let info = data(json!({"interfaces": [
            {"interface": "wlan0", "enabled": true, "connected": true, "primary": false,
             "ipv4": {"address": ["10.0.0.7/24"]}},
            {"interface": "eth1", "enabled": true, "connected": false, "primary": true,
             "ipv4": {"address": ["10.1.1.1/24"]}},
            {"interface": "eth0", "enabled": true, "connected": true, "primary": true,
             "ipv4": {"address": ["192.168.1.10/24", "192.168.1.11/24"]}, "ipv6": null},
        ]}));
        assert_eq!(host_address_in(&info), Some(Ipv4Addr::new(192, 168, 1, 10)));
        // No primary one connected: any connected interface with an IPv4 address.
        let info = data(json!({"interfaces": [
            {"interface": "eth0", "enabled": true, "connected": true, "primary": true,
             "ipv4": null},
            {"interface": "wlan0", "enabled": true, "connected": true, "primary": false,
             "ipv4": {"address": ["10.0.0.7/24"]}},
        ]}));
        assert_eq!(host_address_in(&info), Some(Ipv4Addr::new(10, 0, 0, 7)));
        let info = data(json!({"interfaces": [
            {"interface": "eth0", "enabled": true, "connected": true, "primary": true,
             "ipv4": {"address": []}},
        ]}));
        assert_eq!(host_address_in(&info), None);
        assert_eq!(host_address_in(&data(json!({}))), None);
    }

    #[test]
    fn host_ports_by_container_port() {
        let map = data(json!({"8000/tcp": 9543, "8082/tcp": null}));
        assert_eq!(host_port(&map, 8000), Some(9543));
        assert_eq!(host_port(&map, 8082), None);
        assert_eq!(host_port(&map, 8001), None);
        assert_eq!(host_port(&data(json!({"8000": 9000})), 8000), Some(9000));
    }
}
