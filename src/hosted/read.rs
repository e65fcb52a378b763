//! The hosted API's reads: the device list, a thermostat's status (its buckets, completed as
//! the interface document lists them), its schedule, its energy history.

use serde::Serialize;
use serde_json::{Value, json};

use super::{HostedError, Target};
use crate::accounts::Viewer;
use crate::app::App;
use crate::energy::report::{self, Period, Report};
use crate::http::{Request, Response};
use crate::state::ApiKey;
use crate::thermostat::reading::{Outside, Reading};
use crate::thermostat::{self, Change, View, document, names, pin};

/// `{"id","serial","name"}`: the id is the thermostat's stable UUID (its serial if it has none
/// yet); the name is what the user called it, or null.
#[derive(Serialize)]
pub struct Summary {
    pub id: String,
    pub serial: String,
    pub name: Option<String>,
}

pub fn summary(view: &View) -> Summary {
    Summary {
        id: view.id.clone().unwrap_or_else(|| view.serial.clone()),
        serial: view.serial.clone(),
        name: names::name(view),
    }
}

/// `GET /devices`: the thermostats the key's user owns or has been shared, within the key's
/// serial list, sorted by serial.
pub fn devices(app: &App, key: &ApiKey) -> Response {
    let visibility = app.visibility();
    let listed: Vec<Value> = app
        .state()
        .serials()
        .into_iter()
        .filter_map(|serial| {
            let sight = visibility.sight(app.state(), &serial, Viewer::Key(key));
            let relation = sight.relation.filter(|_| sight.listed)?;
            let summary = summary(&thermostat::view(app.state(), &serial)?);
            Some(json!({
                "id": summary.id,
                "serial": summary.serial,
                "name": summary.name,
                "accessType": relation.access_type(),
            }))
        })
        .collect();
    Response::json(200, &json!({"devices": listed}))
}

/// `GET /thermostat/{id}/status`: `device` and `state`, the thermostat's buckets as the
/// interface document lists them (see [`document`]): `shared.S`, `device.S`, the owner's
/// `user.*` and `structure.*` (derived when not stored), and `schedule.S` when there is one,
/// each `{object_revision, object_timestamp, value}`. The lock PIN's hash is left out unless
/// `key` may change the thermostat (a write key of its owner or of a control share), who could
/// unlock and set a new PIN anyway: for anyone else the hash would give the PIN away.
/// Beside them, `outdoor_temperature` (°C or null), as the control port's `/status` has it: a
/// top-level key the hosted clients do not look for (they read `device` and `state`), so none
/// is disturbed, and not a field in a bucket, which holds only what the thermostat keeps.
pub fn status(app: &App, target: &Target, key: &ApiKey) -> Result<Response, HostedError> {
    let serial = &target.serial;
    let may_change = app.sight(serial, Viewer::Key(key)).commandable();
    let reading = app.reading(serial).ok_or(HostedError::DeviceNotFound)?;
    let beside = Beside::of(&reading);
    let owner = owner_of(app, serial);
    let now = app.config().clock.now_ms();
    let body = app
        .state()
        .read_device(serial, |d| {
            let view = View::of(serial, d, owner.as_deref());
            let state: serde_json::Map<String, Value> =
                document::entries(&view, |k| d.buckets.get(k), now)
                    .into_iter()
                    .map(|mut e| {
                        if !may_change {
                            pin::hide_hash(&mut e.value);
                        }
                        let entry = json!({
                            "object_revision": e.revision,
                            "object_timestamp": e.timestamp,
                            "value": e.value,
                        });
                        (e.key, entry)
                    })
                    .collect();
            json!({
                "device": summary(&view),
                "state": state,
                "outdoor_temperature": beside.outdoor_temperature,
                "battery_percent": beside.battery_percent,
                "last_change": beside.last_change,
            })
        })
        .ok_or(HostedError::DeviceNotFound)?;
    Ok(Response::json(200, &body))
}

/// What the hosted status carries beside the buckets: its reading's mapping, every field
/// decided (see [`crate::thermostat::reading`]); the rest of the thermostat is in its buckets.
struct Beside {
    outdoor_temperature: Option<f64>,
    battery_percent: Option<u8>,
    last_change: Option<Change>,
}

impl Beside {
    fn of(reading: &Reading) -> Beside {
        let Reading {
            serial: _,
            api_key: _,
            availability: _,
            name: _,
            room: _,
            targets: _,
            humidity: _,
            target_humidity: _,
            target_humidity_enabled: _,
            mode: _,
            hvac: _,
            fan: _,
            eco: _,
            is_online: _,
            has_leaf: _,
            scale: _,
            capabilities: _,
            safety: _,
            diagnostics: _,
            structure_id: _,
            away: _,
            sensed_away: _,
            schedule_mode: _,
            lock: _,
            bounds: _,
            outside: Outside {
                weather,
                reported: _,
            },
            time_zone: _,
            battery_volts: _,
            battery_percent,
            reported: _,
            change,
            course: _,
        } = reading;
        Beside {
            outdoor_temperature: *weather,
            battery_percent: *battery_percent,
            last_change: *change,
        }
    }
}

/// `GET /thermostat/{id}/schedule`: `device` and `schedule` (null when there is none). The
/// whole body is accepted by `PUT .../schedule`, so a schedule can be copied between
/// thermostats.
pub fn schedule(app: &App, target: &Target) -> Result<Response, HostedError> {
    let serial = &target.serial;
    let owner = owner_of(app, serial);
    let body = app
        .state()
        .read_device(serial, |d| {
            let schedule = d
                .buckets
                .get(&format!("schedule.{serial}"))
                .map(|b| Value::Object(b.value.to_map()));
            let view = View::of(serial, d, owner.as_deref());
            json!({"device": summary(&view), "schedule": schedule})
        })
        .ok_or(HostedError::DeviceNotFound)?;
    Ok(Response::json(200, &body))
}

/// `GET /thermostat/{id}/energy[?from=YYYY-MM-DD][&to=YYYY-MM-DD][&format=csv]`: the rows of
/// the control port's `GET /api/energy` (docs/energy.md), with this API's errors, in this API's
/// shape: `{"device":{"id","serial","name"},"time_zone","time_zone_source",
/// "structure_time_zone","days":[...]}` (CSV as there).
pub fn energy(app: &App, target: &Target, req: &Request) -> Result<Response, HostedError> {
    let serial = &target.serial;
    let param = |name: &str| {
        req.query_param(name)
            .map_err(|_| HostedError::Invalid("Invalid query string".into()))
    };
    let (from, to, format) = (param("from")?, param("to")?, param("format")?);
    let period = Period::parse(from.as_deref(), to.as_deref()).map_err(HostedError::Invalid)?;
    let csv =
        report::wants_csv(format.as_deref(), req.header("accept")).map_err(HostedError::Invalid)?;
    let time_zone = app.reading(serial).and_then(|r| r.time_zone.clone());
    let zoneinfo = &app.config().zoneinfo;
    let report = Report::read(app.energy(), serial, time_zone.as_deref(), zoneinfo, period)
        .map_err(|e| {
            log::warn!("could not read the energy history of {serial}: {e}");
            HostedError::EnergyUnreadable
        })?;
    Ok(if csv {
        Response {
            status: 200,
            headers: vec![("Content-Type".into(), report::CSV.into())],
            body: report.to_csv().into_bytes(),
        }
    } else {
        let view = thermostat::view(app.state(), serial).ok_or(HostedError::DeviceNotFound)?;
        let mut body = serde_json::Map::new();
        body.insert("device".into(), json!(summary(&view)));
        report.zone.put(&mut body);
        body.insert("days".into(), Value::Array(report.days_json()));
        Response::json(200, &Value::Object(body))
    })
}

fn owner_of(app: &App, serial: &str) -> Option<String> {
    app.state()
        .accounts(|a| a.owner_of(serial).map(|o| o.user.clone()))
}
