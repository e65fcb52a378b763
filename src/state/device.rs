//! What the server holds for one thermostat.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::bucket::Bucket;
use crate::hub::Origin;
use crate::util::JsonMap;

/// A thermostat's buckets (in the order they first appeared) and its metadata.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<DeviceMeta>,
    #[serde(default)]
    pub buckets: IndexMap<String, Bucket>,
    /// The latest change a person made to it, and whether it has taken it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_change: Option<LastChange>,
    /// The latest Home or Away change made to it (kept from its `last_change` when that was
    /// one): the presence rule asks whether a person made one since the last presence change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_away: Option<LastChange>,
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

/// The latest change a person made to a thermostat (through any surface), kept so every surface
/// can say whether the thermostat has taken it. What counts as taken is decided in
/// `crate::thermostat::taken`; this is only what is kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LastChange {
    pub kind: ChangeKind,
    /// When it was committed (and so pushed, or queued for the thermostat's next subscribe).
    pub sent_ms: i64,
    /// The `shared` fields whose report by the thermostat counts as taking it; empty for a kind
    /// the thermostat never confirms (then it is only ever "sent").
    #[serde(default, skip_serializing_if = "JsonMap::is_empty")]
    pub expect: JsonMap,
    /// The revision of `shared` that carried them: a report for an older one is not this
    /// change's.
    #[serde(default)]
    pub revision: i64,
    /// When the thermostat's own report showed it had taken the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_ms: Option<i64>,
    /// Who made it: a person through a surface (`server`), or the presence rule.
    #[serde(default)]
    pub origin: Origin,
}

/// What a change was, as every surface names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum ChangeKind {
    /// A setpoint, or the heat-cool pair (with the mode when it switched with them).
    Setpoint,
    Mode,
    Fan,
    /// Away (manual eco) on the thermostat's structure.
    Away,
    /// The eco temperatures.
    Eco,
    Schedule,
    /// Device settings, the fan's run time, the schedule's mode.
    Settings,
    Lock,
    Name,
    /// A dialog on its screen dismissed.
    Dialog,
}

crate::util::wire_words!(ChangeKind {
    Setpoint => "setpoint",
    Mode => "mode",
    Fan => "fan",
    Away => "away",
    Eco => "eco",
    Schedule => "schedule",
    Settings => "settings",
    Lock => "lock",
    Name => "name",
    Dialog => "dialog",
});
