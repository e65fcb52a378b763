//! Every way a device-protocol request can fail, mapped to its exact status and body in one place.

use crate::http::Response;
use crate::state::TooLarge;
use crate::store::StoreError;

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
    /// Pairing mode: a thermostat with an entry key tried to upload logs before it was claimed.
    UploadNotAuthorized,
    NotFound,
    MethodNotAllowed,
    WeatherUnavailable,
    EntryKeyUnavailable,
    /// The change could not be made durable; nothing was applied.
    Storage(StoreError),
    /// Device logs could not be written.
    UploadFailed,
    /// One log upload larger than all kept uploads may take together (`DEVICE_LOGS_MAX_MB`).
    UploadOverQuota {
        quota_mb: u64,
    },
    RandomUnavailable,
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
            DeviceError::UploadNotAuthorized => Response::error(401, "Not authorized"),
            DeviceError::NotFound => Response::error(404, "Not found"),
            DeviceError::MethodNotAllowed => Response::error(405, "Method not allowed"),
            DeviceError::WeatherUnavailable => Response::error(502, "Weather service unavailable"),
            DeviceError::EntryKeyUnavailable => {
                Response::error(503, "Entry key service unavailable")
            }
            DeviceError::Storage(e) => {
                log::error!("refused a device write: {e}");
                Response::error(503, "Storage unavailable; the change was not saved")
            }
            DeviceError::UploadFailed => Response::error(503, "Could not store the upload"),
            DeviceError::UploadOverQuota { quota_mb } => Response::error(
                413,
                &format!(
                    "Upload larger than the device log quota ({quota_mb} MiB, DEVICE_LOGS_MAX_MB)"
                ),
            ),
            DeviceError::RandomUnavailable => Response::error(503, "Random source unavailable"),
            DeviceError::TooLarge(t) => Response::error(413, &t.to_string()),
        }
    }
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
