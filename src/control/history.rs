//! `GET /api/history?serial=S&hours=H`: a thermostat's recorded samples (see
//! [`crate::history`]) for the last `hours` (default 24, at most 168), oldest first, with the
//! heating and cooling run time over the period.

use serde_json::json;

use super::ControlError;
use super::input;
use crate::app::App;
use crate::history::{self, MAX_HOURS};
use crate::http::{Request, Response};

const DEFAULT_HOURS: i64 = 24;

pub fn history(app: &App, req: &Request) -> Result<Response, ControlError> {
    let serial = input::query_serial(req)?;
    let hours = hours(req)?;
    let serial = input::shown(app, serial)?;
    // The server's clock, as the recorder's and the energy history's (a test's manual one).
    let now = app.config().clock.now_ms().div_euclid(1000);
    let samples = history::file::read_since(
        &history::dir(&app.config().data_dir),
        &serial,
        now - hours * 3600,
    )
    .map_err(|e| {
        log::warn!("could not read the history of {serial}: {e}");
        ControlError::HistoryUnreadable
    })?;
    let interval = app.config().history_interval.as_secs() as i64;
    let (heating, cooling) = history::run_totals(&samples, interval, now);
    Ok(Response::json(
        200,
        &json!({
            "serial": serial,
            "hours": hours,
            "interval_seconds": interval,
            "heating_seconds": heating,
            "cooling_seconds": cooling,
            "samples": samples,
        }),
    ))
}

/// `?hours=`: a whole number from 1 to 168; absent or empty means 24.
fn hours(req: &Request) -> Result<i64, ControlError> {
    let raw = req
        .query_param("hours")
        .map_err(|_| ControlError::BadEncoding)?;
    match raw.as_deref() {
        None | Some("") => Ok(DEFAULT_HOURS),
        Some(text) => text
            .parse::<i64>()
            .ok()
            .filter(|h| (1..=MAX_HOURS).contains(h))
            .ok_or_else(|| {
                ControlError::Invalid(format!(
                    "hours must be a whole number from 1 to {MAX_HOURS}"
                ))
            }),
    }
}
