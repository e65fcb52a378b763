//! People and their homes, as they are kept: who reports presence for which home, the hash of
//! each one's presence token, the last thing each reported (home or away, when, from where: never
//! a location), and each home's vacation and the presence rule's last decision. The rules that
//! use them are in [`crate::people`].

use serde::{Deserialize, Serialize};

use crate::util::wire_words;

/// A person whose presence moves a home between Home and Away.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Person {
    /// The user whose home (structure) the person belongs to.
    pub user: String,
    /// The OwnTracks region that means home (compared without case).
    pub region: String,
    /// The presence token's hash; `None` once revoked (MQTT still moves the person).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<PresenceToken>,
    pub created_ms: i64,
    /// The last presence reported; `None` until the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<Seen>,
}

/// A presence token as kept: the SHA-256 of the whole token (prefix included) as lowercase hex,
/// and a preview (`hp_1a2b…9f0e`) to tell tokens apart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PresenceToken {
    pub hash: String,
    pub preview: String,
    pub created_ms: i64,
}

/// What a person last reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    pub home: bool,
    /// When it was reported (the server's clock), or when it happened when the report says and
    /// that is earlier (a queued OwnTracks message).
    pub at_ms: i64,
    pub source: PresenceSource,
}

/// Where a presence report came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum PresenceSource {
    /// The presence URL, from a phone's automation or a script.
    Url,
    /// OwnTracks' HTTP mode, at the presence URL.
    Owntracks,
    /// A Home Assistant `person` state over MQTT.
    HomeAssistant,
}

wire_words!(PresenceSource {
    Url => "url",
    Owntracks => "owntracks",
    HomeAssistant => "home_assistant",
});

/// A home's presence facts (one per user that has people or a vacation).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Home {
    /// Away for whole days, whoever comes and goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vacation: Option<Vacation>,
    /// When the last vacation ended (a presence change: the rule decides again then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vacation_ended_ms: Option<i64>,
    /// What the presence rule last made the home, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<Applied>,
}

/// A vacation: from 00:00 of its first day to 00:00 after its last, in the home's time zone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vacation {
    /// The first and last days as the owner named them (`YYYY-MM-DD`).
    pub from: String,
    pub to: String,
    pub from_ms: i64,
    pub to_ms: i64,
}

/// A decision of the presence rule, as it was carried out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub away: bool,
    pub at_ms: i64,
    pub why: Why,
}

/// Why the presence rule made a home away or home.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum Why {
    /// Everyone had been away for the wait.
    EveryoneLeft,
    /// Someone came home (or had never left).
    Arrived,
    Vacation,
    /// A vacation ended with nobody's presence to go by.
    VacationEnded,
}

wire_words!(Why {
    EveryoneLeft => "everyone_left",
    Arrived => "arrived",
    Vacation => "vacation",
    VacationEnded => "vacation_ended",
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::Origin;

    #[test]
    fn words_round_trip_and_unknown_ones_are_refused() {
        let seen = Seen {
            home: true,
            at_ms: 5,
            source: PresenceSource::HomeAssistant,
        };
        let text = serde_json::to_string(&seen).unwrap();
        assert_eq!(text, r#"{"home":true,"at_ms":5,"source":"home_assistant"}"#);
        assert_eq!(serde_json::from_str::<Seen>(&text).unwrap(), seen);
        let why: Why = serde_json::from_str(r#""everyone_left""#).unwrap();
        assert_eq!(why, Why::EveryoneLeft);
        assert_eq!(
            serde_json::to_string(&Origin::Presence).unwrap(),
            r#""presence""#
        );
        assert!(serde_json::from_str::<Why>(r#""gone""#).is_err());
        assert!(serde_json::from_str::<Origin>("1").is_err());
    }
}
