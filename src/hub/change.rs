//! What the hub carries: committed changes, each with who made it.

/// Who made a change. Only server-side changes are pushed to the thermostat: echoing a
/// thermostat's own writes back races with its schedule and undoes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Device,
    Server,
}

/// A summary of one committed bucket change, for pushes and the live event stream.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketChange {
    pub key: String,
    pub revision: i64,
    pub timestamp: i64,
    /// Names of the value fields whose values changed (or were removed).
    pub changed: Vec<String>,
}

/// One committed bucket change, as the live event stream sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ChangeEvent {
    pub serial: String,
    pub origin: Origin,
    pub change: BucketChange,
}
