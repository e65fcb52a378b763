//! The alerts, as the control API shows them (docs/alerts.md).

use serde_json::{Value, json};

use super::error::ControlError;
use super::input;
use crate::accounts::Viewer;
use crate::alerts::Alert;
use crate::alerts::deliver::Answer;
use crate::alerts::engine::AckError;
use crate::alerts::settings::{ChangeError, Settings, TestError};
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
    let outcome = app.alerts().ack(app, id).ok_or_else(alerts_off)?;
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

/// The answer while the rules are not running (their record or settings could not be read).
fn alerts_off() -> ControlError {
    ControlError::Refused {
        status: 503,
        message: "Alerts are off: their record or settings could not be read (see hearth's log)"
            .into(),
    }
}

fn settings(app: &App) -> Result<&Settings, ControlError> {
    app.alerts()
        .settings()
        .map(|s| s.as_ref())
        .ok_or_else(alerts_off)
}

/// `GET /api/alerts/settings`: each alert setting's value in force and where it comes from
/// (`flag`, `saved`, `option`, `environment`, `default`); the webhook's secret only as set or
/// not.
pub fn get_settings(app: &App) -> Result<Response, ControlError> {
    Ok(Response::json(200, &settings(app)?.shown()))
}

/// `PUT /api/alerts/settings`: a partial object of settings by name, `null` clearing what the
/// page saved. Checked whole (400 naming the setting, 409 for one a flag sets), saved durably,
/// then in force at once; answers as `GET` does.
pub fn put_settings(app: &App, body: &[u8]) -> Result<Response, ControlError> {
    let body = input::json_object(body)?;
    let settings = settings(app)?;
    match settings.change(&body) {
        Ok(_) => Ok(Response::json(200, &settings.shown())),
        Err(ChangeError::Invalid(text)) => Err(ControlError::Invalid(text)),
        Err(ChangeError::Flagged(text)) => Err(ControlError::Conflict(text)),
        Err(ChangeError::Storage(e)) => {
            log::error!("refused a change of the alert settings: {e}");
            Err(ControlError::Refused {
                status: 503,
                message: "Storage unavailable; the change was not saved".into(),
            })
        }
    }
}

/// `POST /api/alerts/test`: a test to each receiver set, answered with each one's status (or
/// why it could not be reached, in a word) and time; never what it said. It waits on outbound
/// calls, so it takes a place of the port's outbound gate; one test at a time.
pub fn test(app: &App, local: &super::Local) -> Result<Response, ControlError> {
    let settings = settings(app)?;
    let _waiting = local
        .outbound
        .try_enter()
        .ok_or(ControlError::OutboundBusy)?;
    let id = format!("test-{:x}", app.config().clock.now_ms());
    let tried = settings.test(&id).map_err(|e| match e {
        TestError::Running => ControlError::Conflict(
            "A test is being sent already; try again once it answered".into(),
        ),
        TestError::NoReceiver => ControlError::Conflict(
            "No receiver is set: set an ntfy topic URL or a webhook URL first".into(),
        ),
    })?;
    let results: Vec<Value> = tried
        .iter()
        .map(|t| match t.answer {
            Answer::Status(status) => json!({
                "target": t.target.as_str(),
                "status": status,
                "ok": crate::util::outbound::succeeded(status),
                "ms": t.ms,
            }),
            Answer::Failed(why) => json!({
                "target": t.target.as_str(),
                "error": why,
                "ok": false,
                "ms": t.ms,
            }),
        })
        .collect();
    Ok(Response::json(200, &json!({ "results": results })))
}
