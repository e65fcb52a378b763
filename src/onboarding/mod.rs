//! Onboarding: finding thermostats on the network ([`scan`]) and pointing them at this server
//! ([`point`]), through the local settings API that No Longer Evil firmware serves on port
//! 8080 ([`thermostat_api`]). The CLI (`hearth scan`, `hearth point`, in
//! [`crate::admin::onboarding`]) and the control API (`POST /api/scan-network`,
//! `POST /api/configure-nest`) share these functions.

pub mod point;
pub mod scan;
pub mod thermostat_api;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use crate::state::State;
use crate::thermostat::{View, names};

/// What this server knows of the thermostat at an address: found by the `local_ip` its
/// device bucket reports.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Known {
    pub serial: String,
    pub name: Option<String>,
    /// The password of its Basic auth, which is also its settings API key.
    pub api_key: Option<String>,
}

/// The thermostats this server has seen at any of `ips`, in one pass over its thermostats
/// (where several reported one address, the most recently updated).
pub fn known_at(state: &State, ips: &[Ipv4Addr]) -> BTreeMap<Ipv4Addr, Known> {
    let mut found: BTreeMap<Ipv4Addr, (i64, Known)> = BTreeMap::new();
    if ips.is_empty() {
        return BTreeMap::new();
    }
    for serial in state.serials() {
        let seen = state.read_device(&serial, |d| {
            let device = d.buckets.get(&format!("device.{serial}"))?;
            let ip: Ipv4Addr = device.value.get("local_ip")?.as_str()?.parse().ok()?;
            if !ips.contains(&ip) {
                return None;
            }
            // Only a thermostat at one of the addresses is read whole, for its name.
            let view = View::of(&serial, d, None);
            let known = Known {
                serial: serial.clone(),
                name: names::name(&view),
                api_key: view.api_key.clone(),
            };
            Some((ip, device.updated_at, known))
        });
        if let Some(Some((ip, updated, known))) = seen {
            if found.get(&ip).is_none_or(|(newest, _)| *newest < updated) {
                found.insert(ip, (updated, known));
            }
        }
    }
    found.into_iter().map(|(ip, (_, k))| (ip, k)).collect()
}
