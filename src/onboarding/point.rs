//! Pointing a thermostat at this server: its `cloudregisterurl` is set to this server's
//! `/entry` through its settings API, then read back to confirm.

use std::fmt;
use std::net::Ipv4Addr;

use super::thermostat_api::{self, ApiError};
use crate::app::PublicOrigin;
use crate::config::ApiOrigin;

/// How to get past a thermostat's 401, for people rather than programs.
pub const KEY_HELP: &str = "The thermostat asks for its API key, which it requires once it has \
been powered on for more than 30 minutes. Either restart the thermostat (Settings > Restart, or \
take it off its base and put it back) and point it again within 30 minutes, when no key is \
needed; or pass the key with --api-key (\"api_key\" in the request). The key is the password \
the thermostat sends its server: if it has ever talked to this server, /status shows it as \
api_key, and hearth uses it by itself.";

#[derive(Debug, PartialEq)]
pub enum PointError {
    /// This server's origin is not something the firmware accepts.
    Origin(String),
    Api(ApiError),
    /// The thermostat said yes but still reports another URL.
    NotApplied {
        reported: String,
    },
}

impl fmt::Display for PointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PointError::Origin(why) => f.write_str(why),
            PointError::Api(ApiError::AuthRequired) => f.write_str(KEY_HELP),
            PointError::Api(ApiError::Unreachable(why)) => write!(f, "Connection failed: {why}"),
            PointError::Api(ApiError::Refused { message, .. }) => f.write_str(message),
            PointError::Api(ApiError::NotAThermostat) => {
                f.write_str("That address did not answer as a thermostat's settings API")
            }
            PointError::NotApplied { reported } => write!(
                f,
                "The thermostat accepted the change but still reports {reported}"
            ),
        }
    }
}

/// A key as a person typed it, as the Python server sends it: trimmed and upper-cased; `None`
/// if blank. (A key taken from what the thermostat sent is used as it is.)
pub fn typed_key(raw: &str) -> Option<String> {
    let key = raw.trim();
    (!key.is_empty()).then(|| key.to_ascii_uppercase())
}

/// The `endpoint` the firmware at `thermostat` is given: `http://IPv4:port` (it adds `/entry`
/// itself and accepts nothing but an IPv4 address and a port). A loopback origin is refused
/// unless the thermostat is on this machine too (a simulated one).
pub fn endpoint(origin: &PublicOrigin, thermostat: Ipv4Addr) -> Result<String, PointError> {
    if origin.ssl {
        return Err(PointError::Origin(format!(
            "API_ORIGIN is {}: a thermostat's settings API takes only http:// addresses",
            origin.raw
        )));
    }
    let ip: Ipv4Addr = origin.ip.parse().map_err(|_| {
        PointError::Origin(format!(
            "API_ORIGIN is {}, which is not an IPv4 address: set it to this machine's LAN address, e.g. http://192.168.1.10:{}",
            origin.raw, origin.port
        ))
    })?;
    if ip.is_unspecified() || (ip.is_loopback() && !thermostat.is_loopback()) {
        return Err(PointError::Origin(format!(
            "API_ORIGIN is {}, which a thermostat cannot reach: set it to this machine's LAN address",
            origin.raw
        )));
    }
    Ok(format!("http://{ip}:{}", origin.port))
}

/// Whether a `cloudregisterurl` leads to this server: same scheme, host (as configured or
/// resolved) and port.
pub fn points_here(url: &str, origin: &PublicOrigin) -> bool {
    let base = url.strip_suffix("/entry").unwrap_or(url);
    let (Ok(theirs), Ok(ours)) = (ApiOrigin::parse(base), ApiOrigin::parse(&origin.raw)) else {
        return false;
    };
    let default_port = if theirs.is_https() { 443 } else { 80 };
    theirs.scheme == ours.scheme
        && (theirs.bare_host() == ours.bare_host() || theirs.bare_host() == origin.ip)
        && theirs.port.unwrap_or(default_port) == origin.port
}

/// Points the thermostat at `ip` (settings API on `port`) at this server, then reads the
/// setting back. Gives the name the thermostat answered with.
pub fn point(
    ip: Ipv4Addr,
    port: u16,
    origin: &PublicOrigin,
    api_key: Option<&str>,
) -> Result<Option<String>, PointError> {
    let endpoint = endpoint(origin, ip)?;
    let answer =
        thermostat_api::set_endpoint(ip, port, &endpoint, api_key).map_err(PointError::Api)?;
    let reported = thermostat_api::read_url(ip, port).map_err(PointError::Api)?;
    if !points_here(&reported, origin) {
        return Err(PointError::NotApplied { reported });
    }
    Ok(answer.device_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(raw: &str) -> PublicOrigin {
        PublicOrigin::resolve(Some(&ApiOrigin::parse(raw).unwrap()), 8000, false)
    }

    #[test]
    fn urls_that_lead_here() {
        let o = origin("http://192.168.1.10:8000");
        assert!(points_here("http://192.168.1.10:8000/entry", &o));
        assert!(points_here("http://192.168.1.10:8000", &o));
        assert!(!points_here("http://192.168.1.10:9543/entry", &o));
        assert!(!points_here("https://192.168.1.10:8000/entry", &o));
        assert!(!points_here("http://192.168.1.11:8000/entry", &o));
        assert!(!points_here("https://backdoor.nolongerevil.com/entry", &o));
        assert!(!points_here("", &o));
    }

    #[test]
    fn endpoints_the_firmware_takes() {
        let lan = Ipv4Addr::new(192, 168, 1, 50);
        assert_eq!(
            endpoint(&origin("http://192.168.1.10:8000"), lan).unwrap(),
            "http://192.168.1.10:8000"
        );
        assert_eq!(
            endpoint(&origin("http://192.168.1.10"), lan).unwrap(),
            "http://192.168.1.10:8000"
        );
        assert!(endpoint(&origin("https://192.168.1.10:8000"), lan).is_err());
        assert!(endpoint(&origin("http://127.0.0.1:8000"), lan).is_err());
        assert!(endpoint(&origin("http://127.0.0.1:8000"), Ipv4Addr::LOCALHOST).is_ok());
    }
}
