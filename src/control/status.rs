//! `GET /status`, `GET /api/devices` and `GET /api/stats`: a thermostat's status record (the
//! core's, see [`thermostat::status`]), plus server statistics.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Value, json};

use super::ControlError;
use super::input;
use crate::accounts::Viewer;
use crate::app::App;
use crate::http::{Request, Response};
use crate::thermostat;
use crate::thermostat::status::Status;
use crate::util::clock;

pub fn status(app: &App, req: &Request) -> Result<Response, ControlError> {
    let serial = input::shown(app, input::query_serial(req)?)?;
    let availability = app.availability(&serial);
    let json = app
        .status_json
        .json(
            &app.state,
            &serial,
            availability,
            app.config.clock.now_ms(),
            &app.weather,
        )
        .ok_or(ControlError::DeviceNotFound)?;
    Ok(Response::json_bytes(200, json.to_vec()))
}

/// A thermostat in `/api/devices`: its status record, then who holds it and whether it has
/// reported its state yet.
#[derive(Serialize)]
struct Listed {
    #[serde(flatten)]
    status: Status,
    subscription_count: usize,
    owner: Option<String>,
    /// Whether the thermostat has uploaded its state at least once (see [`reported`]).
    reported: bool,
}

/// Whether `serial` has uploaded its state at least once: its `shared` bucket holds the room
/// temperature, which only the thermostat writes (a command before then may create the bucket
/// with a setpoint, not with this). Until then a page shows "Waiting for the thermostat…".
fn reported(app: &App, serial: &str) -> bool {
    let key = format!("shared.{serial}");
    app.state
        .read_device(serial, |d| {
            d.buckets
                .get(&key)
                .and_then(|b| b.value.get("current_temperature"))
                .is_some_and(|t| !t.is_null())
        })
        .unwrap_or(false)
}

/// `{"devices":[status + subscription_count + owner + reported], "total": n}`: the thermostats
/// the control port lists ([`crate::accounts::visibility`]): in pairing mode only claimed ones
/// (as the Python server does), in open mode not released ones (`/api/waiting` lists both).
/// `/status` answers for a released one in open mode (anyone on the LAN may add it), not in
/// pairing mode.
pub fn devices(app: &App) -> Response {
    let counts = app.hub().subscription_counts();
    let visibility = app.visibility();
    let serials = app.state.serials();
    let (owners, listed): (HashMap<String, String>, Vec<String>) = app.state.accounts(|a| {
        let owners = a
            .owners
            .iter()
            .map(|(s, o)| (s.clone(), o.user.clone()))
            .collect();
        let listed = serials
            .into_iter()
            .filter(|s| visibility.of(a, s, Viewer::Lan).listed)
            .collect();
        (owners, listed)
    });
    let devices: Vec<Listed> = listed
        .into_iter()
        .filter_map(|serial| {
            Some(Listed {
                status: typed_record(app, &serial)?,
                subscription_count: counts.get(&serial).copied().unwrap_or(0),
                owner: owners.get(&serial).cloned(),
                reported: reported(app, &serial),
            })
        })
        .collect();
    let total = devices.len();
    Response::json(200, &json!({"devices": devices, "total": total}))
}

pub fn stats(app: &App) -> Response {
    let serials = app.state.serials();
    let counts = app.hub().subscription_counts();
    let mut availability = serde_json::Map::new();
    let mut available = 0;
    for serial in &serials {
        let a = app.availability(serial);
        available += usize::from(a.available);
        availability.insert(
            serial.clone(),
            json!({"is_available": a.available, "last_seen": a.last_seen_ms.map(clock::iso8601_ms)}),
        );
    }
    Response::json(
        200,
        &json!({
            "devices": {"total": serials.len(), "available": available, "serials": serials},
            "subscriptions": {
                "total_subscriptions": counts.values().sum::<usize>(),
                "devices_with_subscriptions": counts.len(),
            },
            "event_streams": app.events.open_count(),
            "availability": availability,
        }),
    )
}

/// The status record of a known thermostat (see [`thermostat::status`]), as a JSON value.
pub fn record(app: &App, serial: &str) -> Option<Value> {
    typed_record(app, serial).map(|s| s.to_value())
}

/// The status record of a known thermostat.
fn typed_record(app: &App, serial: &str) -> Option<Status> {
    let view = thermostat::view(&app.state, serial)?;
    let availability = app.availability(serial);
    Some(Status {
        outdoor_temperature: thermostat::status::outdoor_temperature(&view, &app.weather),
        ..thermostat::status::record(&view, availability, app.config.clock.now_ms())
    })
}
