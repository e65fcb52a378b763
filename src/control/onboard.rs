//! Onboarding routes, with the Python server's response shapes:
//! - `POST /api/scan-network` (optional body `{"subnet": "192.168.1.0/24"}`; by default the /24
//!   of `API_ORIGIN`'s address): `{"devices": [{"ip","device_name","serial","cloudregisterurl",
//!   "configured"}], "subnet"}`. One scan runs at a time; another gets 409.
//! - `POST /api/configure-nest {"ip", "api_key"?}`: points the thermostat at this server and
//!   reads the setting back: `{"success": true, "device_name", "cloudregisterurl"}`. Without
//!   `api_key`, the key the thermostat sent this server (if it ever did) is used.
//!
//! Both wait on thermostats' settings APIs (each request bounded: see
//! [`crate::onboarding::thermostat_api`]), so they take a place of the control port's outbound
//! gate ([`super::Local::outbound`], half its workers): with every place taken they are
//! answered 503 at once, and a thermostat that never answers cannot hold the port.

use std::net::Ipv4Addr;

use serde_json::{Value, json};

use super::input;
use super::{ControlError, Local};
use crate::app::App;
use crate::http::Response;
use crate::onboarding::point::{self, PointError};
use crate::onboarding::scan::{self, Subnet};
use crate::onboarding::thermostat_api::ApiError;
use crate::onboarding::{self as onboarding};

pub fn scan_network(app: &App, local: &Local, body: &[u8]) -> Result<Response, ControlError> {
    let subnet = match optional_object(body)?.get("subnet") {
        None | Some(Value::Null) => default_subnet(app)?,
        Some(Value::String(s)) => Subnet::parse(s).map_err(ControlError::Invalid)?,
        Some(_) => return Err(ControlError::Invalid("subnet must be a string".into())),
    };
    let _one_at_a_time = local.scanning.try_lock().ok_or(ControlError::ScanRunning)?;
    let _place = local
        .outbound
        .try_enter()
        .ok_or(ControlError::OutboundBusy)?;
    let found = scan::scan(&subnet, app.config().thermostat_api_port);
    let ips: Vec<Ipv4Addr> = found.iter().map(|f| f.ip).collect();
    let mut known_here = onboarding::known_at(app.state(), &ips);
    let devices: Vec<Value> = found
        .into_iter()
        .map(|found| {
            let known = known_here.remove(&found.ip);
            json!({
                "ip": found.ip.to_string(),
                "device_name": known.as_ref().map(|k| k.name.clone().unwrap_or_else(|| k.serial.clone())),
                "serial": known.as_ref().map(|k| k.serial.clone()),
                "configured": point::points_here(&found.cloudregisterurl, app.origin()),
                "cloudregisterurl": found.cloudregisterurl,
            })
        })
        .collect();
    Ok(Response::json(
        200,
        &json!({"devices": devices, "subnet": subnet.to_string()}),
    ))
}

/// The /24 of `API_ORIGIN`'s address.
fn default_subnet(app: &App) -> Result<Subnet, ControlError> {
    Subnet::around(app.origin()).ok_or_else(|| {
        ControlError::Invalid(format!(
            "API_ORIGIN ({}) is not an IPv4 address; send {{\"subnet\": \"192.168.1.0/24\"}}",
            app.origin().raw
        ))
    })
}

pub fn configure_nest(app: &App, local: &Local, body: &[u8]) -> Result<Response, ControlError> {
    let body = input::json_object(body)?;
    let ip = match body.get("ip") {
        None | Some(Value::Null) => return Err(ControlError::Invalid("ip required".into())),
        Some(Value::String(s)) => s.trim().parse::<Ipv4Addr>().map_err(|_| {
            ControlError::Invalid("ip must be an IPv4 address like 192.168.1.50".into())
        })?,
        Some(_) => return Err(ControlError::Invalid("ip must be a string".into())),
    };
    let given = match body.get("api_key") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => point::typed_key(s),
        Some(_) => return Err(ControlError::Invalid("api_key must be a string".into())),
    };
    let api_key = given.or_else(|| {
        onboarding::known_at(app.state(), &[ip])
            .remove(&ip)
            .and_then(|k| k.api_key)
    });
    let port = app.config().thermostat_api_port;
    let _place = local
        .outbound
        .try_enter()
        .ok_or(ControlError::OutboundBusy)?;
    let name = point::point(ip, port, app.origin(), api_key.as_deref()).map_err(to_control)?;
    Ok(Response::json(
        200,
        &json!({
            "success": true,
            "device_name": name,
            "cloudregisterurl": app.origin().cloud_register_url(),
        }),
    ))
}

fn optional_object(body: &[u8]) -> Result<serde_json::Map<String, Value>, ControlError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(serde_json::Map::new());
    }
    input::json_object(body)
}

fn to_control(e: PointError) -> ControlError {
    let message = e.to_string();
    match e {
        PointError::Origin(_) => ControlError::Thermostat {
            status: 409,
            message,
        },
        PointError::Api(ApiError::AuthRequired) => ControlError::ThermostatKeyRequired,
        PointError::Api(ApiError::Refused { status, .. }) => ControlError::Thermostat {
            status: if (400..600).contains(&status) {
                status
            } else {
                502
            },
            message,
        },
        PointError::Api(ApiError::Unreachable(_) | ApiError::NotAThermostat)
        | PointError::NotApplied { .. } => ControlError::Thermostat {
            status: 502,
            message,
        },
    }
}
