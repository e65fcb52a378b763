//! Onboarding: finding thermostats on the network ([`scan`]) and pointing them at this server
//! ([`point`]), through the local settings API that No Longer Evil firmware serves on port
//! 8080 ([`thermostat_api`]). The CLI (`hearth scan`, `hearth point`) and the control API
//! (`POST /api/scan-network`, `POST /api/configure-nest`) share these functions.

pub mod command;
pub mod point;
pub mod scan;
pub mod thermostat_api;

use std::net::Ipv4Addr;

use crate::state::State;
use crate::thermostat::names;
use crate::thermostat::rules::View;

/// What this server knows of the thermostat at an address: found by the `local_ip` its
/// device bucket reports.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Known {
    pub serial: String,
    pub name: Option<String>,
    /// The password of its Basic auth, which is also its settings API key.
    pub api_key: Option<String>,
}

/// The thermostat this server has seen at `ip`, if any (the most recently updated one if
/// several reported that address).
pub fn known_at(state: &State, ip: Ipv4Addr) -> Option<Known> {
    let ip = ip.to_string();
    state
        .serials()
        .into_iter()
        .filter_map(|serial| {
            state
                .read_device(&serial, |d| {
                    let value = |k: String| d.buckets.get(&k);
                    let device_bucket = value(format!("device.{serial}"))?;
                    let device = device_bucket.value.to_map();
                    if device.get("local_ip").and_then(|v| v.as_str()) != Some(ip.as_str()) {
                        return None;
                    }
                    let shared = value(format!("shared.{serial}")).map(|b| b.value.to_map());
                    let view = View {
                        shared: shared.as_ref(),
                        device: Some(&device),
                    };
                    let known = Known {
                        serial: serial.clone(),
                        name: names::name(&view),
                        api_key: d.meta.as_ref().and_then(|m| m.api_key.clone()),
                    };
                    Some((device_bucket.updated_at, known))
                })
                .flatten()
        })
        .max_by_key(|(updated, _)| *updated)
        .map(|(_, known)| known)
}
