//! When each thermostat was last heard from, and the Basic-auth password it uses (kept in
//! memory here; persisted in the device's metadata by the transport handlers).

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::util::clock::Clock;

pub struct Presence {
    seen: Mutex<HashMap<String, i64>>,
    available_for_ms: i64,
    clock: Clock,
}

/// Whether a thermostat is reachable, and when it was last heard from (ms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Availability {
    pub available: bool,
    pub last_seen_ms: Option<i64>,
}

impl Presence {
    /// Thermostats count as available for `available_for` after their last request, as
    /// `clock` tells the time.
    pub fn new(available_for: std::time::Duration, clock: Clock) -> Presence {
        Presence {
            seen: Mutex::new(HashMap::new()),
            available_for_ms: i64::try_from(available_for.as_millis()).unwrap_or(i64::MAX),
            clock,
        }
    }

    pub fn seen(&self, serial: &str) {
        let now = self.clock.now_ms();
        let mut seen = self.seen.lock();
        match seen.get_mut(serial) {
            Some(at) => *at = now,
            None => {
                seen.insert(serial.to_string(), now);
            }
        }
    }

    pub fn last_seen(&self, serial: &str) -> Option<i64> {
        self.seen.lock().get(serial).copied()
    }

    /// Available within the timeout of the last request, or while a subscribe is held.
    pub fn availability(&self, serial: &str, holding_subscribe: bool) -> Availability {
        let last_seen_ms = self.last_seen(serial);
        let recent = last_seen_ms.is_some_and(|t| self.clock.now_ms() - t <= self.available_for_ms);
        Availability {
            available: recent || holding_subscribe,
            last_seen_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::clock::ManualClock;
    use std::time::Duration;

    #[test]
    fn available_until_the_timeout_after_the_last_request_or_while_holding() {
        let time = ManualClock::at(1_000_000);
        let presence = Presence::new(Duration::from_secs(300), time.clock());
        assert!(!presence.availability("S", false).available, "never seen");
        presence.seen("S");
        time.advance(Duration::from_millis(300_000));
        assert_eq!(
            presence.availability("S", false),
            Availability {
                available: true,
                last_seen_ms: Some(1_000_000)
            }
        );
        time.advance(Duration::from_millis(1));
        assert!(!presence.availability("S", false).available);
        assert!(presence.availability("S", true).available);
    }
}
