//! Every way a device-protocol request can fail, mapped to its exact status and body in one place.

use crate::browser::Refusal;
use crate::http::Response;
use crate::state::TooLarge;
use crate::store::StoreError;

/// The 401 body for a request without the thermostat's pinned password (the shape of pairing's
/// "Device not authorized").
pub const WRONG_PASSWORD: &str = "Device not authorized. Wrong password for this thermostat.";

/// The 503 body when `max_pending_entry_keys` unclaimed entry keys are waiting.
pub const TOO_MANY_ENTRY_KEYS: &str =
    "Too many entry keys are waiting to be claimed; try again when one expires";

/// The 429 body when the asking client address has `max_entry_keys_per_address` unclaimed,
/// unexpired entry keys already.
pub const TOO_MANY_ENTRY_KEYS_FROM_ADDRESS: &str = "Too many entry keys are waiting for this \
     client address; claim one or try again when one expires";

/// The 429 body when `max_entry_keys_per_serial` passwords have entry keys waiting for the
/// serial.
pub const TOO_MANY_ENTRY_KEYS_FOR_SERIAL: &str = "Too many entry keys are waiting for this \
     serial with other passwords; claim one or try again when one expires";

/// The 503 body for a serial hearth has never seen, from a client address that added
/// `max_new_thermostats_per_client` new thermostats within the window already (open mode).
pub const TOO_MANY_NEW_THERMOSTATS: &str = "Too many new thermostats from this client \
     address; try again later (thermostats this server knows are not refused)";

/// The 400 body for a weather query that names no place.
pub const WEATHER_QUERY: &str =
    "Invalid weather query: expected query=<postal code>,<country> (e.g. query=94304,US)";

#[derive(Debug)]
pub enum DeviceError {
    /// No serial could be found in the request.
    SerialRequired,
    /// The bucket listing without a serial (the Python server's wording differs here).
    ListingSerialRequired,
    InvalidJson,
    NotAnObject,
    BodyNotUtf8,
    /// A header or the query string that does not decode (which one is named).
    BadEncoding(&'static str),
    /// Pairing mode: the thermostat has neither an owner nor an active entry key.
    NotPaired,
    /// A request naming this pinned thermostat without its pinned password.
    WrongPassword(String),
    /// Pairing mode: a thermostat with an entry key tried to upload logs before it was claimed.
    UploadNotAuthorized,
    NotFound,
    MethodNotAllowed,
    WeatherUnavailable,
    /// With Open-Meteo: a weather query that names no place (`query=<postal code>,<country>`).
    WeatherQuery,
    EntryKeyUnavailable,
    /// `max_pending_entry_keys` unclaimed entry keys are waiting, none expired.
    TooManyEntryKeys,
    /// The client address has `max_entry_keys_per_address` unclaimed, unexpired entry keys.
    TooManyEntryKeysFromAddress,
    /// `max_entry_keys_per_serial` passwords have entry keys waiting for the serial.
    TooManyEntryKeysForSerial,
    /// Open mode: a serial hearth has never seen, from a client address that added
    /// `max_new_thermostats_per_client` within the window; nothing was stored. A thermostat
    /// retries a 503 with backoff.
    TooManyNewThermostats {
        retry_after_secs: u64,
    },
    /// The change could not be made durable; nothing was applied.
    Storage(StoreError),
    /// An upload with an empty body (with `STORE_DEVICE_LOGS=true`); nothing is written.
    EmptyUpload,
    /// Device logs could not be written.
    UploadFailed,
    /// One log upload larger than all kept uploads may take together (`DEVICE_LOGS_MAX_MB`).
    UploadOverQuota {
        quota_mb: u64,
    },
    RandomUnavailable,
    /// A foreign `Host` (421) or a web page of another site (403): see [`crate::browser`].
    Browser(Refusal),
    /// A write that would store more than a thermostat may hold; nothing of the request was
    /// written.
    TooLarge(TooLarge),
}

impl DeviceError {
    pub fn response(&self) -> Response {
        match self {
            DeviceError::SerialRequired => Response::error(400, "Device serial required"),
            DeviceError::ListingSerialRequired => Response::error(400, "Serial required"),
            DeviceError::InvalidJson => Response::error(400, "Invalid JSON"),
            DeviceError::NotAnObject => {
                Response::error(400, "Invalid request body: expected a JSON object")
            }
            DeviceError::BodyNotUtf8 => {
                Response::error(400, "Invalid request body: not valid UTF-8")
            }
            DeviceError::BadEncoding(what) => Response::error(400, &format!("Invalid {what}")),
            DeviceError::NotPaired => {
                Response::error(401, "Device not authorized. Complete pairing first.")
            }
            DeviceError::WrongPassword(serial) => {
                log::warn!("{}", wrong_password_log(serial));
                Response::error(401, WRONG_PASSWORD)
            }
            DeviceError::UploadNotAuthorized => Response::error(401, "Not authorized"),
            DeviceError::NotFound => Response::error(404, "Not found"),
            DeviceError::MethodNotAllowed => Response::error(405, "Method not allowed"),
            DeviceError::WeatherUnavailable => Response::error(502, "Weather service unavailable"),
            DeviceError::WeatherQuery => Response::error(400, WEATHER_QUERY),
            DeviceError::EntryKeyUnavailable => {
                Response::error(503, "Entry key service unavailable")
            }
            DeviceError::TooManyEntryKeys => Response::error(503, TOO_MANY_ENTRY_KEYS),
            DeviceError::TooManyEntryKeysFromAddress => {
                Response::error(429, TOO_MANY_ENTRY_KEYS_FROM_ADDRESS)
            }
            DeviceError::TooManyEntryKeysForSerial => {
                Response::error(429, TOO_MANY_ENTRY_KEYS_FOR_SERIAL)
            }
            DeviceError::TooManyNewThermostats { retry_after_secs } => {
                let mut response = Response::error(503, TOO_MANY_NEW_THERMOSTATS);
                response
                    .headers
                    .push(("Retry-After".into(), retry_after_secs.to_string()));
                response
            }
            DeviceError::Storage(e) => {
                log::error!("refused a device write: {e}");
                Response::error(503, "Storage unavailable; the change was not saved")
            }
            DeviceError::EmptyUpload => Response::error(400, "Empty upload: no log to store"),
            DeviceError::UploadFailed => Response::error(503, "Could not store the upload"),
            DeviceError::UploadOverQuota { quota_mb } => Response::error(
                413,
                &format!(
                    "Upload larger than the device log quota ({quota_mb} MiB, DEVICE_LOGS_MAX_MB)"
                ),
            ),
            DeviceError::RandomUnavailable => Response::error(503, "Random source unavailable"),
            DeviceError::Browser(r) => Response::error(r.status(), &r.message()),
            DeviceError::TooLarge(t) => Response::error(413, &t.to_string()),
        }
    }
}

/// What the log says when a request for `serial` lacks its pinned password: which thermostat,
/// and how its owner lets it in again if it is theirs with a new password.
fn wrong_password_log(serial: &str) -> String {
    format!(
        "refused a request for {serial}: it does not carry the password pinned at the \
         thermostat's first registration (another device, or this thermostat reflashed with a \
         new password). If it is yours, remove it (the page's Remove, or DELETE /api/device \
         {{\"serial\":\"{serial}\"}} on the control port), then claim it with the entry code \
         it shows (Settings > Nest Account > Get entry key; the page's entry code form, or \
         POST /api/register): the claim pins its new password"
    )
}

impl From<TooLarge> for DeviceError {
    fn from(t: TooLarge) -> Self {
        DeviceError::TooLarge(t)
    }
}

impl From<StoreError> for DeviceError {
    fn from(e: StoreError) -> Self {
        DeviceError::Storage(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_password_is_a_401_whose_log_line_says_how_to_recover() {
        let line = wrong_password_log("02AA01AC0000SIM1");
        assert!(line.contains("02AA01AC0000SIM1"), "{line}");
        assert!(line.contains("Remove"), "{line}");
        assert!(
            line.contains(r#"DELETE /api/device {"serial":"02AA01AC0000SIM1"}"#),
            "{line}"
        );
        assert!(line.contains("the claim pins its new password"), "{line}");
        let r = DeviceError::WrongPassword("02AA01AC0000SIM1".into()).response();
        assert_eq!(r.status, 401);
    }
}
