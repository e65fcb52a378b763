//! Asking someone over HTTP, bounded: `WEATHER_URL` (the thermostat's query appended, the
//! answer passed on), and the agent and body reader Open-Meteo's requests use too.

use std::io::Read;
use std::time::Duration;

use super::{CONNECT_TIMEOUT, MAX_BODY};

/// Asks upstream with the thermostat's query string appended; only a JSON object counts.
pub(super) fn fetch(base: &str, query: &str, timeout: Duration) -> Result<Vec<u8>, String> {
    let url = match (query.is_empty(), base.contains('?')) {
        (true, _) => base.to_string(),
        (false, true) => format!("{base}&{query}"),
        (false, false) => format!("{base}?{query}"),
    };
    let response = agent(timeout).get(&url).call().map_err(|e| e.to_string())?;
    let body = read_body(response, MAX_BODY)?;
    match serde_json::from_slice::<serde_json::Value>(&body) {
        Ok(serde_json::Value::Object(_)) => Ok(body),
        _ => Err("upstream did not answer with a JSON object".into()),
    }
}

/// An agent whose every request gives up after `timeout` (connecting: [`CONNECT_TIMEOUT`], if
/// shorter), following no redirect ([`crate::util::outbound::agent`]).
pub(super) fn agent(timeout: Duration) -> ureq::Agent {
    crate::util::outbound::agent(CONNECT_TIMEOUT, timeout)
}

/// At most `limit` bytes of a successful answer's body; any other answer (a redirect, which
/// is not followed, included) is an error.
pub(super) fn read_body(response: ureq::Response, limit: u64) -> Result<Vec<u8>, String> {
    let status = response.status();
    if !crate::util::outbound::succeeded(status) {
        return Err(format!("answered {status} (redirects are not followed)"));
    }
    let mut body = Vec::new();
    response
        .into_reader()
        .take(limit)
        .read_to_end(&mut body)
        .map_err(|e| e.to_string())?;
    Ok(body)
}
