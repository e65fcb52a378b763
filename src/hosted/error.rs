//! Every way a hosted-API request can fail, mapped to its exact status and body in one place.
//! Bodies are `{"error": text}`; the texts in the seed's error table are copied word for word.

use serde_json::json;

use crate::accounts::AccountsError;
use crate::accounts::access::Denied;
use crate::http::Response;
use crate::state::Scope;
use crate::store::StoreError;
use crate::thermostat::{self, Refusal};
use crate::util::clock;

#[derive(Debug)]
pub enum HostedError {
    /// No key, an unknown key, a revoked or an expired one.
    Unauthorized,
    /// Over the key's limit; retry at this time (ms), which is `wait_ms` from now.
    RateLimited {
        retry_at_ms: i64,
        wait_ms: i64,
    },
    /// The key's serial list, its scopes or the share do not allow this on the thermostat.
    AccessDenied,
    /// Unlinking by a user the thermostat is only shared with.
    OwnerOnly,
    /// A request that names no thermostat (`GET /devices`) by a key without the scope.
    MissingScope(Scope),
    /// No such thermostat, or none the caller is related to.
    DeviceNotFound,
    TemperatureNotNumber,
    InvalidJson,
    NotAnObject,
    /// Any other invalid value; the text says what was expected.
    Invalid(String),
    /// More than a thermostat may hold (see `crate::state::limits`); the text says what.
    TooLarge(String),
    NotFound,
    MethodNotAllowed,
    Storage(StoreError),
    /// A thermostat's energy history could not be read.
    EnergyUnreadable,
}

impl HostedError {
    pub fn status_and_message(&self) -> (u16, String) {
        let m = |s: &str| s.to_string();
        match self {
            HostedError::Unauthorized => (401, m("Unauthorized")),
            HostedError::RateLimited { .. } => (429, m("Rate limit exceeded")),
            HostedError::AccessDenied => (403, m("Access denied to this device")),
            HostedError::OwnerOnly => (403, m("Only device owners can delete devices")),
            // The seed has one 403 text for a key that may not do something; the log says
            // which scope was missing.
            HostedError::MissingScope(scope) => {
                log::info!("hosted API: key lacks the {} scope", scope.as_str());
                (403, m("Access denied to this device"))
            }
            HostedError::DeviceNotFound => (404, m("Device not found")),
            HostedError::TemperatureNotNumber => (400, m("Temperature value must be a number")),
            HostedError::InvalidJson => (400, m("Invalid JSON")),
            HostedError::NotAnObject => (400, m("Request body must be a JSON object")),
            HostedError::Invalid(text) => (400, text.clone()),
            HostedError::TooLarge(text) => (413, text.clone()),
            HostedError::NotFound => (404, m("Not found")),
            HostedError::MethodNotAllowed => (405, m("Method not allowed")),
            HostedError::Storage(e) => {
                log::error!("refused a hosted-API write: {e}");
                (503, m("Storage unavailable; the change was not saved"))
            }
            HostedError::EnergyUnreadable => (500, m("Could not read the energy history")),
        }
    }

    pub fn response(&self) -> Response {
        let (status, message) = self.status_and_message();
        let mut response = match self {
            HostedError::RateLimited { retry_at_ms, .. } => Response::json(
                status,
                &json!({"error": message, "retryAfter": clock::iso8601_ms(*retry_at_ms)}),
            ),
            _ => Response::error(status, &message),
        };
        match self {
            HostedError::Unauthorized => response
                .headers
                .push(("WWW-Authenticate".into(), "Bearer".into())),
            HostedError::RateLimited { wait_ms, .. } => response.headers.push((
                "Retry-After".into(),
                crate::util::ratelimit::retry_after_s(*wait_ms).to_string(),
            )),
            _ => {}
        }
        response
    }
}

impl From<Denied> for HostedError {
    fn from(d: Denied) -> Self {
        match d {
            Denied::NoRelation => HostedError::DeviceNotFound,
            Denied::OwnerOnly => HostedError::OwnerOnly,
            Denied::NotAllowed => HostedError::AccessDenied,
        }
    }
}

/// The core's refusals in this API's words: where a refusal is about a field this API names
/// (`mode`, `temp_min`/`temp_max`) or an endpoint, the text says so.
impl From<Refusal> for HostedError {
    fn from(r: Refusal) -> Self {
        if let Refusal::TooLarge(t) = r {
            return HostedError::TooLarge(t.to_string());
        }
        HostedError::Invalid(match r {
            Refusal::EcoIsNotAMode => {
                "Eco is not a mode: use POST /thermostat/{deviceId}/away (true turns eco on)".into()
            }
            Refusal::NotHeatingOrCooling(mode) => format!(
                "mode is required (\"heat\" or \"cool\"): the thermostat is in {} mode",
                mode.as_deref().unwrap_or("no")
            ),
            Refusal::LockLowNotBelowHigh => {
                "temp_min must be less than temp_max (after clamping to the thermostat's range)"
                    .into()
            }
            Refusal::PinFormat => {
                "pin must be a string of exactly 4 digits (\"0000\" to \"9999\")".into()
            }
            r => r.to_string(),
        })
    }
}

impl From<thermostat::Error> for HostedError {
    fn from(e: thermostat::Error) -> Self {
        match e {
            // The caller's relation was checked first; pairing without a claim has no owner,
            // hence no relation, so it cannot reach here.
            thermostat::Error::NotFound | thermostat::Error::NotClaimed => {
                HostedError::DeviceNotFound
            }
            // The hosted API replaces whatever is stored; it never asks for a revision.
            thermostat::Error::ScheduleChanged(_) => HostedError::Invalid(e.to_string()),
            thermostat::Error::Refused(r) => r.into(),
            thermostat::Error::Storage(e) => HostedError::Storage(e),
        }
    }
}

impl From<StoreError> for HostedError {
    fn from(e: StoreError) -> Self {
        HostedError::Storage(e)
    }
}

impl From<AccountsError> for HostedError {
    fn from(e: AccountsError) -> Self {
        match e {
            AccountsError::Storage(e) => HostedError::Storage(e),
            AccountsError::NotLinked(_) | AccountsError::UnknownDevice(_) => {
                HostedError::DeviceNotFound
            }
            other => HostedError::Invalid(other.to_string()),
        }
    }
}
