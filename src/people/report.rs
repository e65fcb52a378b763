//! What arrives at the presence URL and on the presence topic, parsed (no state, no I/O).
//! (A first cut; the full OwnTracks and Home Assistant parsing lands with its tests.)

use std::fmt;

use crate::state::PresenceSource;

/// One report: home (`Some(true)`), away, or nothing to change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    pub home: Option<bool>,
    pub source: PresenceSource,
    /// When it happened, when the report says (OwnTracks' `tst`, epoch seconds).
    pub at_s: Option<i64>,
}

impl Report {
    /// OwnTracks expects `[]` back.
    pub fn is_owntracks(&self) -> bool {
        self.source == PresenceSource::Owntracks
    }
}

/// Why a report was refused (the 400's text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadReport(pub String);

impl fmt::Display for BadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub const EXPECTED: &str =
    "Expected {\"home\": true} or {\"home\": false}, ?home=1 or ?home=0, or an OwnTracks message";

/// A report at the presence URL.
pub fn http(home_param: Option<&str>, body: &[u8], _region: &str) -> Result<Report, BadReport> {
    let bad = || BadReport(EXPECTED.to_string());
    let plain = |home| Report {
        home: Some(home),
        source: PresenceSource::Url,
        at_s: None,
    };
    if let Some(h) = home_param {
        return match h.to_ascii_lowercase().as_str() {
            "1" | "true" => Ok(plain(true)),
            "0" | "false" => Ok(plain(false)),
            _ => Err(bad()),
        };
    }
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|_| bad())?;
    match value.get("home") {
        Some(serde_json::Value::Bool(b)) => Ok(plain(*b)),
        _ => Err(bad()),
    }
}

/// A Home Assistant `person` state: home, away, or nothing.
pub fn home_assistant(payload: &[u8]) -> Option<bool> {
    let text = std::str::from_utf8(payload).ok()?.trim();
    let text = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    match text.to_ascii_lowercase().as_str() {
        "" | "unknown" | "unavailable" => None,
        "home" => Some(true),
        _ => Some(false),
    }
}
