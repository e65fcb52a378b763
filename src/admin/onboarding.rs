//! `hearth scan` and `hearth point`: the CLI's side of onboarding. What the server knows of a
//! thermostat (its name, the key it sent) comes from the data directory, read directly or,
//! while a server runs on it, through that server's admin socket.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;

use crate::admin::{self, AdminRequest};
use crate::app::PublicOrigin;
use crate::onboarding::Known;
use crate::onboarding::point::{self, PointError};
use crate::onboarding::scan::{self, Subnet};
use crate::onboarding::thermostat_api::ApiError;

/// What the server knows of the thermostats at `ips`; nothing if there is no data directory
/// yet or it cannot be read (a scan still lists what it finds).
fn known(data_dir: &Path, ips: Vec<Ipv4Addr>) -> BTreeMap<Ipv4Addr, Known> {
    if ips.is_empty() {
        return BTreeMap::new();
    }
    match admin::execute(data_dir, true, &AdminRequest::ThermostatsAt { ips }) {
        Ok(text) => serde_json::from_str(&text).unwrap_or_default(),
        Err(why) => {
            log::debug!("no thermostat names from {}: {why}", data_dir.display());
            BTreeMap::new()
        }
    }
}

/// Scans `subnet` (default: the /24 of the origin's address) and renders what it found.
pub fn scan(
    origin: &PublicOrigin,
    subnet: Option<&str>,
    port: u16,
    data_dir: &Path,
) -> Result<String, String> {
    let subnet = match subnet {
        Some(s) => Subnet::parse(s)?,
        None => Subnet::around(origin).ok_or_else(|| {
            format!(
                "API_ORIGIN ({}) is not an IPv4 address; give the subnet with --subnet 192.168.1.0/24",
                origin.raw
            )
        })?,
    };
    let found = scan::scan(&subnet, port);
    let known = known(data_dir, found.iter().map(|f| f.ip).collect());
    let mut t =
        admin::table::Table::new(&["IP", "NAME", "SERIAL", "CLOUD REGISTER URL", "POINTS HERE"]);
    for f in &found {
        let k = known.get(&f.ip);
        t.row(vec![
            f.ip.to_string(),
            k.and_then(|k| k.name.clone()).unwrap_or_else(|| "-".into()),
            k.map_or_else(|| "-".into(), |k| k.serial.clone()),
            f.cloudregisterurl.clone(),
            if point::points_here(&f.cloudregisterurl, origin) {
                "yes"
            } else {
                "no"
            }
            .into(),
        ]);
    }
    let summary = match found.len() {
        0 => format!("no thermostats found in {subnet} (settings API on port {port})"),
        1 => format!("1 thermostat found in {subnet}"),
        n => format!("{n} thermostats found in {subnet}"),
    };
    Ok(if found.is_empty() {
        summary
    } else {
        format!("{}\n{summary}", t.render())
    })
}

/// Points the thermostat at `ip` at this server; with no key given, uses the key it sent
/// this server, if it ever did.
pub fn point(
    origin: &PublicOrigin,
    ip: &str,
    api_key: Option<&str>,
    port: u16,
    data_dir: &Path,
) -> Result<String, String> {
    let ip: Ipv4Addr = ip
        .trim()
        .parse()
        .map_err(|_| format!("{ip:?} is not an IPv4 address like 192.168.1.50"))?;
    let key = match api_key.and_then(point::typed_key) {
        Some(typed) => Some(typed),
        None => known(data_dir, vec![ip])
            .remove(&ip)
            .and_then(|k| k.api_key),
    };
    match point::point(ip, port, origin, key.as_deref()) {
        Ok(name) => Ok(format!(
            "{} at {ip} now registers at {}",
            name.as_deref().unwrap_or("the thermostat"),
            origin.cloud_register_url()
        )),
        Err(PointError::Api(ApiError::AuthRequired)) if key.is_some() => Err(format!(
            "the thermostat at {ip} refused the API key.\n{}",
            point::KEY_HELP
        )),
        Err(e) => Err(format!("could not point the thermostat at {ip}: {e}")),
    }
}
