//! The alerts, as the control API shows them (docs/alerts.md).

use serde_json::json;

use crate::alerts::Alert;
use crate::app::App;
use crate::http::Response;

/// `GET /api/alerts`: `{"active": [...], "recent": [...]}`, each an alert as the webhook sends
/// it (`id`, `serial`, `kind`, `started_at`, `cleared_at`, `message`); active oldest first,
/// recent newest first. A thermostat the control port keeps out of sight ([`App::unseen`])
/// has its alerts left out.
pub fn alerts(app: &App) -> Response {
    let seen = |list: Vec<Alert>| -> Vec<Alert> {
        list.into_iter()
            .filter(|a| !app.unseen(&a.serial))
            .collect()
    };
    Response::json(
        200,
        &json!({
            "active": seen(app.alerts.active()),
            "recent": seen(app.alerts.recent()),
        }),
    )
}
