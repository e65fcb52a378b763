//! Every way a control-API request can fail, mapped to its exact status and body in one place.
//!
//! The control API has two error shapes, kept from the Python server because clients read
//! them: the command envelope `{"success":false,"message":...}` (`/command` and the claiming
//! routes) and `{"error":...}` (status and the other reads). Which one a route uses is its
//! [`Shape`]; the status and text of each error are the same in both.

use serde_json::json;

use crate::accounts::AccountsError;
use crate::http::Response;
use crate::state::Scope;
use crate::store::StoreError;
use crate::thermostat::{self, Refusal};

/// The 503 message when half the control port's workers are waiting on thermostats already.
pub const OUTBOUND_BUSY: &str = "Busy: other requests are waiting on thermostats on this network; \
                                 try again in a few seconds";

#[derive(Debug)]
pub enum ControlError {
    InvalidJson,
    NotAnObject,
    /// `serial` missing from a JSON body.
    SerialRequired,
    /// `?serial=` missing from a query.
    SerialParameterRequired,
    InvalidSerial,
    CommandRequired,
    UnknownCommand(String),
    /// A value that does not fit its command or field; the text says what was expected.
    Invalid(String),
    /// A command that would write nothing.
    NoValues,
    DeviceNotFound,
    /// A query string that does not decode to UTF-8.
    BadEncoding,
    /// A path segment that does not percent-decode to UTF-8.
    BadPath,
    /// Something the request names does not exist (an account route's user, key or share).
    Missing(String),
    /// The request conflicts with what is stored (an account route); the text says how.
    Conflict(String),
    MissingClaimFields,
    CodeFormat,
    /// Unknown, expired or already used entry key.
    CodeNotValid,
    /// The thermostat belongs to another user, who must unlink it first.
    OwnedByOther {
        serial: String,
        owner: String,
    },
    NotRegistered {
        serial: String,
    },
    /// Pairing mode: a command for a thermostat nobody has claimed.
    NotClaimed(String),
    /// Adopting a thermostat that is not waiting to be added: `owner` has it.
    NotReleased {
        serial: String,
        owner: String,
    },
    /// Adopting a thermostat with pairing required: only a claim with its entry key links it.
    ClaimRequired(String),
    TooManyStreams,
    /// The client's address holds this many event streams already.
    TooManyStreamsFromClient(usize),
    /// `CONTROL_REQUIRE_KEY`: no valid API key.
    Unauthorized,
    /// A key of another user, or one limited to serials.
    KeyNotForControl,
    MissingScope(Scope),
    NotFound,
    MethodNotAllowed,
    /// More than a thermostat may hold (see `crate::state::limits`); the text says what.
    TooLarge(String),
    /// Refused by the listener before routing (a body too large or unreadable).
    Refused {
        status: u16,
        message: String,
    },
    /// A thermostat's history files could not be read.
    HistoryUnreadable,
    /// A thermostat's energy history could not be read.
    EnergyUnreadable,
    /// The change could not be made durable; nothing was applied.
    Storage(StoreError),
    /// `set_schedule` with `if_revision`: the stored schedule is no longer that one (its
    /// revision now, or `None`).
    ScheduleChanged(Option<i64>),
    /// Onboarding: a scan is already running.
    ScanRunning,
    /// Onboarding: half the port's workers are waiting on thermostats already.
    OutboundBusy,
    /// Onboarding: the thermostat's settings API wants its key.
    ThermostatKeyRequired,
    /// The presence URL without its person's token (or with a wrong or revoked one).
    PresenceUnauthorized,
    /// Over a request limit; the next window begins in this many milliseconds.
    RateLimited {
        wait_ms: i64,
    },
    /// Onboarding: the thermostat could not be reached or refused; `status` is passed on.
    Thermostat {
        status: u16,
        message: String,
    },
}

/// The body shape a route answers errors in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `{"success":false,"message":...}`
    Envelope,
    /// `{"error":...}`
    Error,
    /// `{"success":false,"error":...}` (`/api/configure-nest`)
    Outcome,
}

impl ControlError {
    pub fn status_and_message(&self) -> (u16, String) {
        let m = |s: &str| s.to_string();
        match self {
            ControlError::InvalidJson => (400, m("Invalid JSON")),
            ControlError::NotAnObject => (400, m("Request body must be a JSON object")),
            ControlError::SerialRequired => (400, m("Serial required")),
            ControlError::SerialParameterRequired => (400, m("Serial parameter required")),
            ControlError::InvalidSerial => (
                400,
                m("Invalid serial: expected 10 to 64 letters and digits"),
            ),
            ControlError::CommandRequired => (400, m("Command required")),
            ControlError::UnknownCommand(name) => (400, format!("Unknown command: {name}")),
            ControlError::Invalid(text) => (400, text.clone()),
            ControlError::NoValues => (400, m("No values to update")),
            ControlError::DeviceNotFound => (404, m("Device not found")),
            ControlError::BadEncoding => (400, m("Invalid query string")),
            ControlError::BadPath => (400, m("Invalid path: bad percent-encoding")),
            ControlError::Missing(text) => (404, text.clone()),
            ControlError::Conflict(text) => (409, text.clone()),
            ControlError::MissingClaimFields => (400, m("Missing required fields: code, userId")),
            ControlError::CodeFormat => (
                400,
                m("Invalid entry code format. Must be exactly 7 alphanumeric characters."),
            ),
            ControlError::CodeNotValid => {
                (400, m("Invalid, expired, or already claimed entry key"))
            }
            ControlError::OwnedByOther { serial, owner } => (
                409,
                format!(
                    "Device {serial} is linked to user {owner}; that user must unlink it before it can be claimed"
                ),
            ),
            ControlError::NotRegistered { serial } => (404, format!("Device {serial} not found")),
            ControlError::NotClaimed(serial) => (
                409,
                format!(
                    "Device {serial} is not claimed yet: pairing is required, so claim it with its entry code first"
                ),
            ),
            ControlError::NotReleased { serial, owner } => (
                409,
                format!("Device {serial} is not waiting to be added: it belongs to {owner}"),
            ),
            ControlError::ClaimRequired(serial) => (
                409,
                format!(
                    "Device {serial} cannot be added without its entry code: pairing is required, so claim it with the entry code shown on the thermostat"
                ),
            ),
            ControlError::TooManyStreams => (503, m("Too many event streams open")),
            ControlError::TooManyStreamsFromClient(limit) => (
                429,
                format!(
                    "Too many event streams open from this address (at most {limit}): close one first"
                ),
            ),
            ControlError::Unauthorized => (401, m("Unauthorized")),
            ControlError::KeyNotForControl => (
                403,
                m(
                    "Access denied: the control API takes keys of the user owner with no serial \
                   limit (use /api/v1 for other keys)",
                ),
            ),
            ControlError::MissingScope(scope) => (
                403,
                format!(
                    "Access denied: this API key lacks the {} scope",
                    scope.as_str()
                ),
            ),
            ControlError::NotFound => (404, m("Not found")),
            ControlError::MethodNotAllowed => (405, m("Method not allowed")),
            ControlError::Refused { status, message } => (*status, message.clone()),
            ControlError::TooLarge(text) => (413, text.clone()),
            ControlError::HistoryUnreadable => (500, m("Could not read the history")),
            ControlError::EnergyUnreadable => (500, m("Could not read the energy history")),
            ControlError::Storage(e) => {
                log::error!("refused a control write: {e}");
                (503, m("Storage unavailable; the change was not saved"))
            }
            ControlError::ScheduleChanged(now) => (
                409,
                match now {
                    Some(r) => format!(
                        "The schedule changed since it was read (it is now revision {r}): load it again, or send the edit with if_revision {r}"
                    ),
                    None => m(
                        "The schedule changed since it was read (it has none now): load it again, or send the edit with if_revision null",
                    ),
                },
            ),
            ControlError::ScanRunning => (409, m("A network scan is already running")),
            ControlError::OutboundBusy => (503, m(OUTBOUND_BUSY)),
            ControlError::ThermostatKeyRequired => (401, m(crate::onboarding::point::KEY_HELP)),
            ControlError::PresenceUnauthorized => {
                (401, m("This presence URL needs its person's token"))
            }
            ControlError::RateLimited { wait_ms } => (
                429,
                format!(
                    "Too many requests: try again in {} s",
                    crate::util::ratelimit::retry_after_s(*wait_ms)
                ),
            ),
            ControlError::Thermostat { status, message } => (*status, message.clone()),
        }
    }

    pub fn response(&self, shape: Shape) -> Response {
        let (status, message) = self.status_and_message();
        let mut response = match shape {
            Shape::Envelope => {
                Response::json(status, &json!({"success": false, "message": message}))
            }
            Shape::Error => Response::error(status, &message),
            Shape::Outcome => {
                let mut body = json!({"success": false, "error": message});
                if matches!(self, ControlError::ThermostatKeyRequired) {
                    body["auth_required"] = json!(true);
                }
                Response::json(status, &body)
            }
        };
        if matches!(self, ControlError::OutboundBusy) {
            response.headers.push(("Retry-After".into(), "5".into()));
        }
        match self {
            ControlError::Unauthorized => response
                .headers
                .push(("WWW-Authenticate".into(), "Bearer".into())),
            // Basic too: OwnTracks sends its credentials once challenged.
            ControlError::PresenceUnauthorized => response.headers.push((
                "WWW-Authenticate".into(),
                "Bearer, Basic realm=\"hearth\"".into(),
            )),
            ControlError::RateLimited { wait_ms } => response.headers.push((
                "Retry-After".into(),
                crate::util::ratelimit::retry_after_s(*wait_ms).to_string(),
            )),
            _ => {}
        }
        response
    }
}

impl From<AccountsError> for ControlError {
    fn from(e: AccountsError) -> Self {
        match e {
            AccountsError::CodeFormat => ControlError::CodeFormat,
            AccountsError::CodeNotValid => ControlError::CodeNotValid,
            AccountsError::OwnedByOther { serial, owner } => {
                ControlError::OwnedByOther { serial, owner }
            }
            AccountsError::NotLinked(serial) => ControlError::NotRegistered { serial },
            AccountsError::UnknownDevice(_) => ControlError::DeviceNotFound,
            AccountsError::NotReleased { serial, owner } => {
                ControlError::NotReleased { serial, owner }
            }
            AccountsError::ClaimRequired(serial) => ControlError::ClaimRequired(serial),
            AccountsError::InvalidUserName => ControlError::Invalid(
                "Invalid userId: use 1 to 64 letters, digits, '_', '-', '.' or '@'".into(),
            ),
            AccountsError::Storage(e) => ControlError::Storage(e),
            other => ControlError::Invalid(other.to_string()),
        }
    }
}

impl ControlError {
    /// Why the thermostat core did not commit a change to `serial`, in this API's words.
    pub fn of(e: thermostat::Error, serial: &str) -> ControlError {
        match e {
            thermostat::Error::NotFound => ControlError::DeviceNotFound,
            thermostat::Error::NotClaimed => ControlError::NotClaimed(serial.to_string()),
            thermostat::Error::ScheduleChanged(revision) => ControlError::ScheduleChanged(revision),
            thermostat::Error::Refused(r) => r.into(),
            thermostat::Error::Storage(e) => ControlError::Storage(e),
        }
    }
}

/// The core's words are this API's: every refusal is a 400 with its text, but for more than a
/// thermostat may hold, a 413.
impl From<Refusal> for ControlError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::NothingToChange => ControlError::NoValues,
            Refusal::TooLarge(t) => ControlError::TooLarge(t.to_string()),
            r => ControlError::Invalid(r.to_string()),
        }
    }
}

impl From<StoreError> for ControlError {
    fn from(e: StoreError) -> Self {
        ControlError::Storage(e)
    }
}
