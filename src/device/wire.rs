//! Request bodies of the transport protocol (both formats the firmware generations use) and
//! the headers every transport answer carries.

use serde_json::Value;

use super::DeviceError;
use crate::config::Config;
use crate::util::JsonMap;

/// Bucket types a subscribe may name as top-level keys (format B).
const KNOWN_BUCKET_TYPES: &[&str] = &[
    "device",
    "shared",
    "structure",
    "schedule",
    "custom_schedule",
    "user",
    "topaz",
    "demand_response",
    "demand_response_event",
    "where",
    "kryptonite",
    "diagnostics",
    "device_alert_dialog",
    "servicegroup",
    "link",
    "message",
    "tuneups",
    "utility",
    "diamond_sensor_config",
    "diamond_sensor_event",
    "rate_plan",
    "tou",
    "demand_charge",
    "demand_charge_event",
    "hvac_partner",
    "rcs_settings",
    "cloud_algo",
    "occupancy",
];

/// Parses a body that must be a JSON object.
pub fn json_object(body: &[u8]) -> Result<JsonMap, DeviceError> {
    let text = std::str::from_utf8(body).map_err(|_| DeviceError::BodyNotUtf8)?;
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(DeviceError::NotAnObject),
        Err(_) => Err(DeviceError::InvalidJson),
    }
}

/// One object named in a subscribe.
#[derive(Clone, Debug, PartialEq)]
pub struct SubscribeObject {
    pub key: String,
    pub revision: i64,
    pub timestamp: i64,
    /// An inline value, if the object carries one.
    pub value: Option<JsonMap>,
}

impl SubscribeObject {
    /// Revision and timestamp both 0 (or absent) with a value: an inline upload.
    pub fn is_inline_update(&self) -> bool {
        self.value.is_some() && self.revision == 0 && self.timestamp == 0
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct SubscribeBody {
    pub chunked: bool,
    pub objects: Vec<SubscribeObject>,
}

impl SubscribeBody {
    /// Format A (`objects` array) wins; otherwise format B (top-level keys named after known
    /// bucket types, each an object with `object_key`). Entries without a string `object_key`
    /// are ignored.
    pub fn parse(body: &JsonMap) -> SubscribeBody {
        let chunked = body
            .get("chunked")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let entries: Vec<&JsonMap> = match body.get("objects") {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_object).collect(),
            _ => body
                .iter()
                .filter(|(k, _)| KNOWN_BUCKET_TYPES.contains(&k.as_str()))
                .filter_map(|(_, v)| v.as_object())
                .collect(),
        };
        let objects = entries
            .into_iter()
            .filter_map(|o| {
                Some(SubscribeObject {
                    key: o.get("object_key")?.as_str()?.to_string(),
                    revision: integer(o.get("object_revision")).unwrap_or(0),
                    timestamp: integer(o.get("object_timestamp")).unwrap_or(0),
                    value: o.get("value").and_then(Value::as_object).cloned(),
                })
            })
            .collect();
        SubscribeBody { chunked, objects }
    }

    /// The timestamp the thermostat sent for a key (0 if it did not name it).
    pub fn timestamp_of(&self, key: &str) -> i64 {
        self.objects
            .iter()
            .find(|o| o.key == key)
            .map_or(0, |o| o.timestamp)
    }
}

/// One object of a PUT.
#[derive(Clone, Debug, PartialEq)]
pub struct PutObject {
    pub key: String,
    /// `if_object_revision`: write only if the stored revision equals this. `Some(None)` is a
    /// condition that cannot match (present but not an integer).
    pub if_revision: Option<Option<i64>>,
    /// The revision it says it holds (`if_object_revision`, else `base_object_revision`).
    pub holds: Option<i64>,
    pub value: JsonMap,
}

/// Format A (`objects` array of `{object_key, value, ...}`) wins; otherwise format B (any
/// top-level key but `session` whose value is an object with `object_key`; its other fields,
/// minus the revision metadata, are the value). Objects without a key are skipped.
pub fn parse_put(body: &JsonMap) -> Vec<PutObject> {
    const META: [&str; 3] = ["object_key", "base_object_revision", "if_object_revision"];
    let condition = |o: &JsonMap| match o.get("if_object_revision") {
        None | Some(Value::Null) => None,
        Some(v) => Some(integer(Some(v))),
    };
    let holds = |o: &JsonMap| {
        integer(o.get("if_object_revision")).or_else(|| integer(o.get("base_object_revision")))
    };
    match body.get("objects") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_object)
            .filter_map(|o| {
                Some(PutObject {
                    key: o.get("object_key")?.as_str()?.to_string(),
                    if_revision: condition(o),
                    holds: holds(o),
                    value: o
                        .get("value")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default(),
                })
            })
            .collect(),
        _ => body
            .iter()
            .filter(|(k, _)| k.as_str() != "session")
            .filter_map(|(_, v)| v.as_object())
            .filter_map(|o| {
                Some(PutObject {
                    key: o.get("object_key")?.as_str()?.to_string(),
                    if_revision: condition(o),
                    holds: holds(o),
                    value: o
                        .iter()
                        .filter(|(k, _)| !META.contains(&k.as_str()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                })
            })
            .collect(),
    }
}

/// An integer field; a float with no fraction counts.
fn integer(v: Option<&Value>) -> Option<i64> {
    let v = v?;
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| f as i64)
    })
}

/// `X-nl-service-timestamp`, `X-nl-suspend-time-max`, `X-nl-defer-device-window`.
pub fn transport_headers(config: &Config) -> Vec<(String, String)> {
    vec![
        (
            "X-nl-service-timestamp".to_string(),
            config.clock.now_ms().to_string(),
        ),
        (
            "X-nl-suspend-time-max".to_string(),
            config.suspend_time_max_secs.to_string(),
        ),
        (
            "X-nl-defer-device-window".to_string(),
            config.defer_device_window_secs.to_string(),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> JsonMap {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn body_errors() {
        assert!(matches!(json_object(b"{"), Err(DeviceError::InvalidJson)));
        assert!(matches!(json_object(b"[1]"), Err(DeviceError::NotAnObject)));
        assert!(matches!(json_object(b"42"), Err(DeviceError::NotAnObject)));
        assert!(matches!(
            json_object(&[0x7b, 0xff, 0x7d]),
            Err(DeviceError::BodyNotUtf8)
        ));
        assert!(json_object(b"{}").is_ok());
    }

    #[test]
    fn subscribe_formats() {
        let a = SubscribeBody::parse(&map(json!({"chunked": true, "objects": [
            {"object_key": "device.S", "object_revision": 12, "object_timestamp": 1795262612269_i64},
            {"object_revision": 1},
            {"object_key": "shared.S", "value": {"a": 1}}
        ]})));
        assert!(a.chunked);
        assert_eq!(a.objects.len(), 2);
        assert_eq!(a.objects[0].timestamp, 1795262612269);
        assert!(a.objects[1].is_inline_update());
        let b = SubscribeBody::parse(&map(json!({"session": "s",
            "device": {"object_key": "device.S", "object_revision": 1, "object_timestamp": 5},
            "bogus": {"object_key": "bogus.S"},
            "shared": {"object_revision": 1}})));
        assert!(!b.chunked);
        assert_eq!(b.objects.len(), 1);
        assert_eq!(b.timestamp_of("device.S"), 5);
        assert_eq!(b.timestamp_of("shared.S"), 0);
    }

    #[test]
    fn put_formats() {
        let a = parse_put(&map(json!({"session": "s", "objects": [
            {"object_key": "device.S", "base_object_revision": 7, "if_object_revision": 7, "value": {"h": 45}},
            {"object_key": "shared.S", "if_object_revision": null, "value": {"t": 1}},
            {"value": {"x": 1}}
        ]})));
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].if_revision, Some(Some(7)));
        assert_eq!(a[1].if_revision, None);
        let b = parse_put(&map(json!({"session": "s", "shared.S": {
            "object_key": "shared.S", "base_object_revision": 3, "target_temperature": 22.5, "if_object_revision": "x"}})));
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].value, map(json!({"target_temperature": 22.5})));
        assert_eq!(b[0].if_revision, Some(None));
    }
}
