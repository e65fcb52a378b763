//! `GET /nest/transport/device/{serial}` (and any other GET under `/nest/transport/`, such as
//! `/nest/transport/v7/device/device.SERIAL`): the buckets the server holds, metadata only.

use super::{DeviceError, identity, wire};
use crate::app::App;
use crate::http::Response;
use crate::state::{WireObject, WireObjects};

/// The serial after the last `/device/` in the path, without a leading `device.`.
pub fn serial_in_path(path: &str) -> Option<String> {
    let (_, tail) = path.rsplit_once("/device/")?;
    let tail = tail.strip_prefix("device.").unwrap_or(tail);
    let decoded = crate::http::percent_decode(tail).ok()?;
    identity::sanitize_serial(&decoded)
}

pub fn list(app: &App, serial: Option<String>) -> Result<Response, DeviceError> {
    let serial = serial.ok_or(DeviceError::ListingSerialRequired)?;
    let body = app
        .state()
        .read_device(&serial, |d| {
            WireObjects {
                objects: d
                    .buckets
                    .iter()
                    .map(|(k, b)| WireObject::receipt(k, b.revision, b.timestamp))
                    .collect(),
            }
            .to_bytes()
        })
        .unwrap_or_else(|| br#"{"objects":[]}"#.to_vec());
    let mut response = Response::json_bytes(200, body);
    response
        .headers
        .extend(wire::transport_headers(app.config()));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::serial_in_path;

    #[test]
    fn path_forms() {
        assert_eq!(
            serial_in_path("/nest/transport/device/02AA01AC0000SIM1").as_deref(),
            Some("02AA01AC0000SIM1")
        );
        assert_eq!(
            serial_in_path("/nest/transport/v7/device/device.02aa01ac0000sim1").as_deref(),
            Some("02AA01AC0000SIM1")
        );
        assert_eq!(serial_in_path("/nest/transport/device/abc"), None);
        assert_eq!(serial_in_path("/nest/transport/v7/other"), None);
    }
}
