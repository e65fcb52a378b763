//! A client for a thermostat's local settings API (`http://IP:8080/cgi-bin/api/settings`, No
//! Longer Evil firmware), with short, bounded timeouts: a scan probes hosts that may not exist.

use std::net::Ipv4Addr;
use std::time::Duration;

use serde_json::{Value, json};

pub const PATH: &str = "/cgi-bin/api/settings";
/// Connecting to an address with no host behind it gives up after this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// A whole request, answer included.
const TIMEOUT: Duration = Duration::from_secs(4);

#[derive(Clone, Debug, PartialEq)]
pub enum ApiError {
    /// No connection, or no answer in time.
    Unreachable(String),
    /// 401: the thermostat wants its API key (it always does after its first 30 minutes).
    AuthRequired,
    /// Another refusal, with the thermostat's `status` text.
    Refused { status: u16, message: String },
    /// An answer, but not the settings API's.
    NotAThermostat,
}

/// What the thermostat answered to a new endpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct Pointed {
    pub device_name: Option<String>,
    pub cloudregisterurl: Option<String>,
}

fn url(ip: Ipv4Addr, port: u16) -> String {
    format!("http://{ip}:{port}{PATH}")
}

fn agent() -> ureq::Agent {
    crate::util::outbound::agent(CONNECT_TIMEOUT, TIMEOUT)
}

/// The thermostat's current `cloudregisterurl`.
pub fn read_url(ip: Ipv4Addr, port: u16) -> Result<String, ApiError> {
    let body = json_of(agent().get(&url(ip, port)).call())?;
    body.get("cloudregisterurl")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or(ApiError::NotAThermostat)
}

/// Sets the thermostat's `cloudregisterurl` to `endpoint` + `/entry` (`endpoint`:
/// `http://IPv4:port`). Without a key, only a thermostat in its first 30 minutes accepts it.
pub fn set_endpoint(
    ip: Ipv4Addr,
    port: u16,
    endpoint: &str,
    api_key: Option<&str>,
) -> Result<Pointed, ApiError> {
    let mut body = json!({"endpoint": endpoint});
    if let Some(key) = api_key {
        body["api_key"] = json!(key);
    }
    let answer = json_of(
        agent()
            .post(&url(ip, port))
            .set("Content-Type", "application/json")
            .send_string(&body.to_string()),
    )?;
    let text = |k: &str| answer.get(k).and_then(Value::as_str).map(str::to_string);
    Ok(Pointed {
        device_name: text("device_name"),
        cloudregisterurl: text("cloudregisterurl"),
    })
}

/// A 2xx answer's JSON object, or why there is none. A redirect is not followed: the settings
/// API never sends one, so whatever did is not a thermostat's.
fn json_of(result: Result<ureq::Response, ureq::Error>) -> Result<Value, ApiError> {
    match result {
        Ok(response) if !crate::util::outbound::succeeded(response.status()) => {
            Err(ApiError::NotAThermostat)
        }
        Ok(response) => {
            let text = response
                .into_string()
                .map_err(|e| ApiError::Unreachable(e.to_string()))?;
            match serde_json::from_str::<Value>(&text) {
                Ok(v) if v.is_object() => Ok(v),
                _ => Err(ApiError::NotAThermostat),
            }
        }
        Err(ureq::Error::Status(401, _)) => Err(ApiError::AuthRequired),
        Err(ureq::Error::Status(status, response)) => {
            let body: Value = response
                .into_string()
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or(Value::Null);
            let message = body
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or("Unknown error")
                .to_string();
            Err(ApiError::Refused { status, message })
        }
        Err(ureq::Error::Transport(t)) => Err(ApiError::Unreachable(t.to_string())),
    }
}
