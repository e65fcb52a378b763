//! What the hub carries: committed changes, each with who made it.

/// Who made a change. Only changes the thermostat did not make itself are pushed to it:
/// echoing a thermostat's own writes back races with its schedule and undoes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum Origin {
    /// The thermostat's own report.
    Device,
    /// A person, through any surface (the page, `/command`, `/api/v1`, MQTT, Apple Home).
    #[default]
    Server,
    /// The presence rule (`crate::people`): everyone left, someone came back, a vacation.
    Presence,
}

impl Origin {
    /// Whether the change is pushed to the thermostat's held subscribes.
    pub fn pushes(self) -> bool {
        match self {
            Origin::Device => false,
            Origin::Server | Origin::Presence => true,
        }
    }
}

// As the wire says it (the journal, the event stream, `last_change`).
crate::util::wire_words!(Origin {
    Device => "device",
    Server => "server",
    Presence => "presence",
});

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
