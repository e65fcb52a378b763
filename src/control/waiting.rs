//! Thermostats waiting to be added: the known thermostats nobody owns, which `/api/devices`
//! therefore leaves out (in pairing mode the unclaimed ones, in open mode the released ones),
//! and adopting a released one again. Who waits is what [`accounts::visibility`] says nobody
//! owns.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::ControlError;
use super::input;
use crate::accounts::{self, Standing, Viewer};
use crate::app::App;
use crate::http::Response;
use crate::thermostat::{self, names};
use crate::util::clock;

/// `GET /api/waiting`: `{"devices":[{"serial","name","is_available","last_seen","released"}]}`,
/// sorted by serial. A released thermostat is listed even when it has no state (an older
/// hearth deleted it; it is known by its release and its name is then null).
pub fn waiting(app: &App) -> Response {
    let visibility = app.visibility();
    let serials = app.state().serials();
    let rows: Vec<(String, bool)> = app.state().accounts(|a| {
        let known: BTreeSet<String> = serials.into_iter().chain(a.released.clone()).collect();
        known
            .into_iter()
            .filter_map(|s| {
                let standing = visibility.of(a, &s, Viewer::Lan).standing;
                (!standing.owned()).then_some((s, standing == Standing::Released))
            })
            .collect()
    });
    let devices: Vec<Value> = rows
        .into_iter()
        .map(|(serial, released)| {
            let name = thermostat::view(app.state(), &serial).and_then(|v| names::name(&v));
            let seen = app.availability(&serial);
            json!({
                "serial": serial,
                "name": name,
                "is_available": seen.available,
                "last_seen": seen.last_seen_ms.map(clock::iso8601_ms),
                "released": released,
            })
        })
        .collect();
    Response::json(200, &json!({"devices": devices}))
}

/// `POST /api/adopt {"serial"}` (open mode): a released thermostat becomes the default user's
/// again: it is listed and takes commands at once, with the state it kept reporting while it
/// waited.
pub fn adopt(app: &App, body: &[u8]) -> Result<Response, ControlError> {
    let serial = input::body_serial(&input::json_object(body)?)?;
    let open_mode = !app.config().require_device_pairing;
    accounts::adopt(app.state(), &serial, open_mode)?;
    Ok(Response::json(
        200,
        &json!({"success": true, "message": format!("Device {serial} added")}),
    ))
}
