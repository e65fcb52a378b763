//! One bucket ("object") of a thermostat's state and the shapes it travels in.

use serde::{Deserialize, Serialize};

use super::compact::Compact;

/// A stored bucket: `object_key → {revision, timestamp, value}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    #[serde(rename = "rev")]
    pub revision: i64,
    /// Milliseconds; the protocol decides which copy is newer by this alone.
    #[serde(rename = "ts")]
    pub timestamp: i64,
    /// When this server last wrote the row (milliseconds).
    #[serde(rename = "updated")]
    pub updated_at: i64,
    /// The value's JSON text (see [`Compact`]).
    pub value: Compact,
}

/// An object as sent to a thermostat. Field order is the wire contract: the firmware's parser
/// is order-sensitive and needs revision and timestamp before the key (see
/// docs/device-protocol.md).
#[derive(Serialize)]
pub struct WireObject<'a> {
    pub object_revision: i64,
    pub object_timestamp: i64,
    pub object_key: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<&'a Compact>,
}

impl<'a> WireObject<'a> {
    pub fn with_value(key: &'a str, bucket: &'a Bucket) -> WireObject<'a> {
        WireObject {
            object_revision: bucket.revision,
            object_timestamp: bucket.timestamp,
            object_key: key,
            value: Some(&bucket.value),
        }
    }

    /// Revision, timestamp and key only: PUT receipts and bucket listings never carry a value.
    pub fn receipt(key: &'a str, revision: i64, timestamp: i64) -> WireObject<'a> {
        WireObject {
            object_revision: revision,
            object_timestamp: timestamp,
            object_key: key,
            value: None,
        }
    }
}

/// `{"objects":[...]}`, the body of every transport answer and of each pushed chunk.
#[derive(Serialize)]
pub struct WireObjects<'a> {
    pub objects: Vec<WireObject<'a>>,
}

impl WireObjects<'_> {
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serializing plain structs and maps into a Vec cannot fail.
        serde_json::to_vec(self).unwrap_or_else(|_| b"{\"objects\":[]}".to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::JsonMap;

    #[test]
    fn wire_order_is_revision_timestamp_key_value() {
        let mut value = JsonMap::new();
        value.insert("target_temperature".into(), serde_json::json!(21.5));
        let b = Bucket {
            revision: 3,
            timestamp: 1_766_166_234_000,
            updated_at: 0,
            value: Compact::from_map(&value),
        };
        let text = serde_json::to_string(&WireObject::with_value("shared.S", &b)).unwrap();
        assert_eq!(
            text,
            r#"{"object_revision":3,"object_timestamp":1766166234000,"object_key":"shared.S","value":{"target_temperature":21.5}}"#
        );
        let text = serde_json::to_string(&WireObject::receipt("shared.S", 3, 9)).unwrap();
        assert_eq!(
            text,
            r#"{"object_revision":3,"object_timestamp":9,"object_key":"shared.S"}"#
        );
    }
}
