//! Reading what control-API callers send: JSON bodies and serials.

use serde_json::Value;

use super::ControlError;
use crate::accounts::Viewer;
use crate::app::App;
use crate::http::Request;
use crate::util::JsonMap;

/// Real serials are 16 characters; the device protocol accepts 10 to 64 letters and digits.
const SERIAL_LEN: std::ops::RangeInclusive<usize> = 10..=64;

/// The body as a JSON object, whatever the Content-Type (clients differ).
pub fn json_object(body: &[u8]) -> Result<JsonMap, ControlError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ControlError::NotAnObject),
        Err(_) => Err(ControlError::InvalidJson),
    }
}

/// A serial as the thermostats send it: 10 to 64 ASCII letters and digits, upper-cased.
/// Anything else (spaces, punctuation, 200 characters) is refused rather than cleaned, so a
/// typo never addresses a different thermostat.
pub fn serial(raw: &str) -> Result<String, ControlError> {
    if SERIAL_LEN.contains(&raw.len()) && raw.bytes().all(|b| b.is_ascii_alphanumeric()) {
        Ok(raw.to_ascii_uppercase())
    } else {
        Err(ControlError::InvalidSerial)
    }
}

/// `serial` in a JSON body: required, a string, valid.
pub fn body_serial(body: &JsonMap) -> Result<String, ControlError> {
    match body.get("serial") {
        None | Some(Value::Null) => Err(ControlError::SerialRequired),
        Some(Value::String(s)) if s.is_empty() => Err(ControlError::SerialRequired),
        Some(Value::String(s)) => serial(s),
        Some(_) => Err(ControlError::InvalidSerial),
    }
}

/// `?serial=` of a query: required, valid.
pub fn query_serial(req: &Request) -> Result<String, ControlError> {
    match req.query_param("serial") {
        Err(_) => Err(ControlError::BadEncoding),
        Ok(None) => Err(ControlError::SerialParameterRequired),
        Ok(Some(s)) if s.is_empty() => Err(ControlError::SerialParameterRequired),
        Ok(Some(s)) => serial(&s),
    }
}

/// A serial the server has seen, or 404.
pub fn known(app: &App, serial: String) -> Result<String, ControlError> {
    if app.state().device_exists(&serial) {
        Ok(serial)
    } else {
        Err(ControlError::DeviceNotFound)
    }
}

/// A serial the server has seen and the control port may read, or 404 as for an unknown one
/// (with pairing required, one nobody owns is seen by nobody: [`crate::accounts::visibility`]).
pub fn shown(app: &App, serial: String) -> Result<String, ControlError> {
    if app.state().device_exists(&serial) && app.sight(&serial, Viewer::Lan).addressable() {
        Ok(serial)
    } else {
        Err(ControlError::DeviceNotFound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serials_are_validated_not_cleaned() {
        assert_eq!(serial("02aa01ac0000sim1").unwrap(), "02AA01AC0000SIM1");
        for bad in [
            "02AA 01AC0000SIM1",
            "02AA-01AC0000SIM1",
            "SHORT",
            &"A".repeat(200),
        ] {
            assert!(
                matches!(serial(bad), Err(ControlError::InvalidSerial)),
                "{bad}"
            );
        }
    }
}
