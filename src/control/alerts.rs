//! The alerts, as the control API shows them (docs/alerts.md).

use serde_json::{Value, json};

use super::error::ControlError;
use super::input;
use crate::accounts::Viewer;
use crate::alerts::Alert;
use crate::alerts::engine::AckError;
use crate::app::App;
use crate::http::Response;

/// `GET /api/alerts`: `{"active": [...], "recent": [...]}`, each an alert as the webhook sends
/// it (`id`, `serial`, `kind`, `started_at`, `cleared_at`, `message`); active oldest first,
/// recent newest first. A thermostat the control port may not read
/// ([`crate::accounts::visibility`]) has its alerts left out.
pub fn alerts(app: &App) -> Response {
    let seen = |list: Vec<Alert>| -> Vec<Alert> {
        list.into_iter()
            .filter(|a| app.sight(&a.serial, Viewer::Lan).addressable())
            .collect()
    };
    Response::json(
        200,
        &json!({
            "active": seen(app.alerts().active()),
            "recent": seen(app.alerts().recent()),
        }),
    )
}

/// `POST /api/alerts/ack {"id"}`: acknowledges an active `filter` alert: its thermostat's
/// filter hours start again from now (durably) and the alert clears; answers
/// `{"alert": <the cleared alert>}`. The other kinds clear by themselves once the thermostat is
/// back to normal, so acknowledging one is refused (409) and changes nothing; an id that is not
/// an active alert (never was, already cleared, or of a thermostat out of sight) is 404.
pub fn ack(app: &App, body: &[u8]) -> Result<Response, ControlError> {
    let body = input::json_object(body)?;
    let id = match body.get("id") {
        Some(Value::String(id)) if !id.is_empty() => id.as_str(),
        _ => {
            return Err(ControlError::Invalid(
                "id required: the alert's id, a string (as GET /api/alerts lists it)".into(),
            ));
        }
    };
    let unknown = || ControlError::Missing("No active alert has this id".into());
    if app
        .alerts()
        .active()
        .iter()
        .any(|a| a.id == id && !app.sight(&a.serial, Viewer::Lan).addressable())
    {
        return Err(unknown());
    }
    let outcome = app
        .alerts()
        .ack(app, id)
        .ok_or_else(|| ControlError::Refused {
            status: 503,
            message: "Alerts are off: their record could not be opened (see hearth's log)".into(),
        })?;
    match outcome {
        Ok(alert) => Ok(Response::json(200, &json!({ "alert": alert }))),
        Err(AckError::Unknown) => Err(unknown()),
        Err(AckError::NotAcknowledgeable(kind)) => Err(ControlError::Conflict(format!(
            "Only a filter alert can be acknowledged: a {} alert clears by itself once the \
             thermostat is back to normal",
            kind.as_str()
        ))),
        Err(AckError::Storage(e)) => {
            log::error!("refused an alert acknowledgement: {e}");
            Err(ControlError::Refused {
                status: 503,
                message: "Storage unavailable; the change was not saved".into(),
            })
        }
    }
}
