//! Alerts: a room too cold or too hot, a thermostat gone silent, heating or cooling that has no
//! effect, a filter due, and what the firmware itself reports as wrong. Each is an *episode*:
//! it starts once and clears once, and each start and clear is delivered exactly once to each
//! receiver (ntfy, a webhook), published on MQTT and shown on the page.
//!
//! This module holds what the surfaces read: the kinds, the alert as every surface shows it,
//! and the [`Alerts`] board (active alerts, recent ones, and a stream of notices). The rules
//! that start and clear episodes, their durable record and the delivery to receivers live in
//! its submodules; a surface only reads the board and watches it.

pub mod deliver;
pub mod engine;
pub mod record;
pub mod rules;
pub mod settings;

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

/// How many cleared alerts the board keeps for "recent" (newest first).
pub const RECENT_KEEP: usize = 50;
/// How many notices a watcher may fall behind by before it misses some (a watcher that
/// stopped reading must not hold memory without end).
const WATCH_BUFFER: usize = 256;

/// What an alert is about. The wire name is the snake_case of the variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum Kind {
    LowTemperature,
    HighTemperature,
    Offline,
    NotHeating,
    NotCooling,
    Filter,
    LowBattery,
    SafetyShutoff,
    /// A change the thermostat has not taken while it still reports (reads work, control
    /// does not).
    NotApplied,
}

// The wire name (`low_temperature`, …), as in `GET /api/alerts`, MQTT topics and the
// webhook's body.
crate::util::wire_words!(Kind {
    LowTemperature => "low_temperature",
    HighTemperature => "high_temperature",
    Offline => "offline",
    NotHeating => "not_heating",
    NotCooling => "not_cooling",
    Filter => "filter",
    LowBattery => "low_battery",
    SafetyShutoff => "safety_shutoff",
    NotApplied => "not_applied",
});

impl Kind {
    pub const ALL: [Kind; 9] = [
        Kind::LowTemperature,
        Kind::HighTemperature,
        Kind::Offline,
        Kind::NotHeating,
        Kind::NotCooling,
        Kind::Filter,
        Kind::LowBattery,
        Kind::SafetyShutoff,
        Kind::NotApplied,
    ];

    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// A short title a person reads first (ntfy's `Title`, Home Assistant's entity name).
    pub fn title(self) -> &'static str {
        match self {
            Kind::LowTemperature => "Too cold",
            Kind::HighTemperature => "Too hot",
            Kind::Offline => "Thermostat offline",
            Kind::NotHeating => "Not heating",
            Kind::NotCooling => "Not cooling",
            Kind::Filter => "Filter due",
            Kind::LowBattery => "Battery low",
            Kind::SafetyShutoff => "Safety shut-off",
            Kind::NotApplied => "Change not taken",
        }
    }

    /// Whether it threatens the house or the equipment (ntfy's high priority): a freezing or
    /// overheating room, heating or cooling that has failed, a safety shut-off.
    pub fn is_safety(self) -> bool {
        matches!(
            self,
            Kind::LowTemperature
                | Kind::HighTemperature
                | Kind::NotHeating
                | Kind::NotCooling
                | Kind::SafetyShutoff
        )
    }
}

/// One episode, as every surface shows it. Times are ISO 8601 UTC
/// ([`crate::util::clock::iso8601_ms`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    /// Unique per episode; stays the same from start to clear.
    pub id: String,
    pub serial: String,
    pub kind: Kind,
    pub started_at: String,
    pub cleared_at: Option<String>,
    /// What a person reads on a lock screen, naming the thermostat by its name.
    pub message: String,
}

/// Whether a notice tells of an episode's start or its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum Event {
    Started,
    Cleared,
}

crate::util::wire_words!(Event {
    Started => "started",
    Cleared => "cleared",
});

/// A start or a clear, as delivered: the webhook's body is exactly this, serialized.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Notice {
    pub event: Event,
    pub alert: Alert,
}

/// What the rules read of the running server (the server's `App`, which holds the board, so
/// this module cannot name it).
pub trait Context: Send + Sync {
    fn config(&self) -> &crate::config::Config;
    fn state(&self) -> &crate::state::State;
    fn alerts(&self) -> &Alerts;
    /// Each thermostat's live day of energy history.
    fn energy(&self) -> &crate::energy::Live;
    /// When the thermostat last made a request (ms), since this process started.
    fn last_seen(&self, serial: &str) -> Option<i64>;
    /// The thermostat's reading now (its availability included, as `/status` says it).
    fn reading(&self, serial: &str) -> Option<std::sync::Arc<crate::thermostat::Reading>>;
    /// When this process started serving (ms).
    fn started_ms(&self) -> i64;
    /// What the alerts may do with the thermostat ([`crate::accounts::Viewer::Alerts`]): one
    /// nobody owns (unclaimed with pairing required, or removed, in open mode too) is not
    /// listed. A removed thermostat keeps operating, but nobody asked to hear of it any more.
    fn sight(&self, serial: &str) -> crate::accounts::Sight;
}

/// The active and recent alerts, and who watches them. Fed by the rules once a notice is
/// durable ([`Alerts::note`]); read by the control API, the page and MQTT.
#[derive(Default)]
pub struct Alerts {
    board: Mutex<Board>,
    watchers: Mutex<Vec<Sender<Arc<Notice>>>>,
    /// The rules' engine, once started ([`engine::start`]); `POST /api/alerts/ack` uses it.
    engine: OnceLock<Arc<engine::Engine>>,
    /// The settings in force, once the rules started; the page reads and changes them.
    settings: OnceLock<Arc<settings::Settings>>,
}

#[derive(Default)]
struct Board {
    /// Oldest first.
    active: Vec<Alert>,
    /// Newest first, at most [`RECENT_KEEP`].
    recent: VecDeque<Alert>,
}

impl Alerts {
    /// The alerts now active, oldest first.
    pub fn active(&self) -> Vec<Alert> {
        self.board.lock().active.clone()
    }

    /// The alerts that have cleared, newest first (at most [`RECENT_KEEP`]).
    pub fn recent(&self) -> Vec<Alert> {
        self.board.lock().recent.iter().cloned().collect()
    }

    /// A stream of every notice from now on. A watcher more than a few hundred notices
    /// behind misses the rest until it catches up; the board stays the truth.
    pub fn watch(&self) -> Receiver<Arc<Notice>> {
        let (tx, rx) = crossbeam_channel::bounded(WATCH_BUFFER);
        self.watchers.lock().push(tx);
        rx
    }

    /// Acknowledges the active alert `id` (see [`engine::Engine::ack`]); `None` when the
    /// rules are not running (their record or settings could not be read).
    pub fn ack(&self, app: &dyn Context, id: &str) -> Option<Result<Alert, engine::AckError>> {
        self.engine.get().map(|e| e.ack(app, id))
    }

    /// The settings in force (`None` when the rules are not running: their record or settings
    /// could not be opened).
    pub fn settings(&self) -> Option<&Arc<settings::Settings>> {
        self.settings.get()
    }

    /// Puts a notice on the board and tells the watchers. Called by the rules after the
    /// notice is durable, and at start-up for the episodes still active (with no watcher yet).
    pub fn note(&self, notice: Notice) {
        {
            let mut board = self.board.lock();
            board.active.retain(|a| a.id != notice.alert.id);
            match notice.event {
                Event::Started => board.active.push(notice.alert.clone()),
                Event::Cleared => {
                    board.recent.retain(|a| a.id != notice.alert.id);
                    board.recent.push_front(notice.alert.clone());
                    board.recent.truncate(RECENT_KEEP);
                }
            }
        }
        let notice = Arc::new(notice);
        self.watchers
            .lock()
            .retain(|w| match w.try_send(Arc::clone(&notice)) {
                Ok(()) | Err(TrySendError::Full(_)) => true,
                Err(TrySendError::Disconnected(_)) => false,
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alert(id: &str, cleared: bool) -> Alert {
        Alert {
            id: id.to_string(),
            serial: "02AA01AC0000SIM1".to_string(),
            kind: Kind::LowTemperature,
            started_at: "2026-11-26T10:00:00.000Z".to_string(),
            cleared_at: cleared.then(|| "2026-11-26T11:00:00.000Z".to_string()),
            message: "Hallway is 5.8°C (below 7°C)".to_string(),
        }
    }

    #[test]
    fn a_start_is_active_until_its_clear_moves_it_to_recent() {
        let alerts = Alerts::default();
        let rx = alerts.watch();
        alerts.note(Notice {
            event: Event::Started,
            alert: alert("a1", false),
        });
        assert_eq!(alerts.active(), vec![alert("a1", false)]);
        assert!(alerts.recent().is_empty());
        alerts.note(Notice {
            event: Event::Cleared,
            alert: alert("a1", true),
        });
        assert!(alerts.active().is_empty());
        assert_eq!(alerts.recent(), vec![alert("a1", true)]);
        let seen: Vec<Event> = rx.try_iter().map(|n| n.event).collect();
        assert_eq!(seen, vec![Event::Started, Event::Cleared]);
    }

    #[test]
    fn recent_is_bounded_and_newest_first() {
        let alerts = Alerts::default();
        for i in 0..RECENT_KEEP + 5 {
            alerts.note(Notice {
                event: Event::Cleared,
                alert: alert(&format!("a{i}"), true),
            });
        }
        let recent = alerts.recent();
        assert_eq!(recent.len(), RECENT_KEEP);
        assert_eq!(recent[0].id, format!("a{}", RECENT_KEEP + 4));
    }

    /// `ALERT_RULES_OFF` (and the page's rule switches) take every kind's name.
    #[test]
    fn every_kind_is_a_rule_the_settings_can_turn_off() {
        for kind in Kind::ALL {
            assert!(
                crate::config::alerts::RULES.contains(&kind.as_str()),
                "{}",
                kind.as_str()
            );
        }
    }

    #[test]
    fn the_wire_names_round_trip_and_the_body_has_the_documented_shape() {
        for kind in Kind::ALL {
            assert_eq!(Kind::parse(kind.as_str()), Some(kind));
            assert_eq!(
                serde_json::to_value(kind).ok(),
                Some(serde_json::Value::from(kind.as_str()))
            );
        }
        let body = serde_json::to_value(Notice {
            event: Event::Started,
            alert: alert("a1", false),
        })
        .unwrap_or_default();
        assert_eq!(body["event"], "started");
        let mut keys: Vec<&String> = body["alert"]
            .as_object()
            .map_or(vec![], |o| o.keys().collect());
        keys.sort();
        assert_eq!(
            keys,
            [
                "cleared_at",
                "id",
                "kind",
                "message",
                "serial",
                "started_at"
            ]
        );
    }
}
