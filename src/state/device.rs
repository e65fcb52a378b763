//! What the server holds for one thermostat.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::bucket::Bucket;

/// A thermostat's buckets (in the order they first appeared) and its metadata.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<DeviceMeta>,
    #[serde(default)]
    pub buckets: IndexMap<String, Bucket>,
}

impl DeviceData {
    /// A serial the server has seen: it has metadata or at least one bucket.
    pub fn exists(&self) -> bool {
        self.meta.is_some() || !self.buckets.is_empty()
    }
}

/// Facts about a thermostat that are not part of its protocol state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceMeta {
    /// Stable UUID, made when the thermostat first appears (the hosted API's device id).
    pub id: String,
    /// The password of the thermostat's Basic auth: its local settings API key, needed to
    /// reconfigure it later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    pub created_ms: i64,
}
