//! `GET /api/energy?serial=S[&from=YYYY-MM-DD][&to=YYYY-MM-DD][&format=csv]`: a thermostat's
//! energy history per local day (see [`crate::energy`] and docs/energy.md), as JSON or, with
//! `format=csv` or `Accept: text/csv`, as CSV. The JSON carries the period's totals, those of
//! the period before, and the same for the home: every thermostat the control port lists.

use super::ControlError;
use super::input;
use crate::accounts::Viewer;
use crate::app::App;
use crate::energy::report::{self, Home, Period, Report};
use crate::http::{Request, Response};

pub fn energy(app: &App, req: &Request) -> Result<Response, ControlError> {
    let serial = input::query_serial(req)?;
    let param = |name: &str| req.query_param(name).map_err(|_| ControlError::BadEncoding);
    let (from, to, format) = (param("from")?, param("to")?, param("format")?);
    let period = Period::parse(from.as_deref(), to.as_deref()).map_err(ControlError::Invalid)?;
    let csv = report::wants_csv(format.as_deref(), req.header("accept"))
        .map_err(ControlError::Invalid)?;
    let serial = input::shown(app, serial)?;
    let time_zone = app.reading(&serial).and_then(|r| r.time_zone.clone());
    let zoneinfo = &app.config().zoneinfo;
    let report = Report::read(
        app.energy(),
        &serial,
        time_zone.as_deref(),
        zoneinfo,
        period,
    )
    .map_err(|e| {
        log::warn!("could not read the energy history of {serial}: {e}");
        ControlError::EnergyUnreadable
    })?;
    if csv {
        return Ok(Response {
            status: 200,
            headers: vec![("Content-Type".into(), report::CSV.into())],
            body: report.to_csv().into_bytes(),
        });
    }
    let listed = app
        .visibility()
        .listed(app.state(), app.state().serials(), Viewer::Lan);
    // A thermostat whose history cannot be read leaves the home's totals out, not the answer.
    let home = Home::read(app.energy(), &listed, period).unwrap_or_else(|e| {
        log::warn!("could not read the home's energy history: {e}");
        None
    });
    Ok(Response::json(200, &report.to_json(home.as_ref())))
}
