//! Thermostats new to hearth, per client address, in open mode. Without pairing a thermostat
//! is stored by the first request that writes anything for a serial hearth has never seen, and
//! a serial is not a secret: anyone on the LAN can invent them. Each invented one would be the
//! home's (the default user's), listed on the page, in Apple Home and MQTT, and watched by the
//! alerts. So one client address ([`crate::util::client_key`]: an IPv6 client by its /64) may
//! add at most `max_new_thermostats_per_client` serials per
//! [`NEW_THERMOSTATS_WINDOW`](crate::config::NEW_THERMOSTATS_WINDOW); more are refused before
//! anything of them is stored (503, which the firmware retries with backoff), logged at most
//! once per address per minute ([`RefusalLog`]). A thermostat hearth knows is never counted or
//! refused, and pairing mode stores nothing before a claim, so it is not counted there.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

use crate::util::refusals::RefusalLog;

/// The serials each client added within the window, and what was logged of their refusals.
#[derive(Default)]
pub(crate) struct Newcomers {
    /// Client → (serial, when it was let in, ms), oldest first.
    by_client: HashMap<IpAddr, Vec<(String, i64)>>,
    refusals: RefusalLog,
}

/// A new serial refused: the client has added `added` in the window already.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    pub added: usize,
    /// Seconds until the oldest of them leaves the window (at least 1).
    pub retry_after_secs: u64,
    /// `Some(unlogged)` when this refusal is to be logged (see [`RefusalLog::refused`]).
    pub log: Option<u64>,
}

impl Newcomers {
    /// Lets `client` add `serial`, which hearth has never seen, at `now_ms` (and `now`), if it
    /// has added fewer than `cap` others within the last `window_ms`. A serial it was let in
    /// for already (a retry of a request that stored nothing) is let in again without counting.
    pub(crate) fn admit(
        &mut self,
        client: IpAddr,
        serial: &str,
        cap: usize,
        window_ms: i64,
        (now_ms, now): (i64, Instant),
    ) -> Result<(), Refused> {
        // Forget what has left the window, for every client, so the map holds no more than
        // the serials let in within it.
        let since = now_ms.saturating_sub(window_ms);
        self.by_client.retain(|_, added| {
            added.retain(|(_, at)| *at > since);
            !added.is_empty()
        });
        let added = self.by_client.entry(client).or_default();
        if added.iter().any(|(s, _)| s == serial) {
            return Ok(());
        }
        if added.len() < cap {
            added.push((serial.to_string(), now_ms));
            return Ok(());
        }
        let oldest = added.first().map_or(now_ms, |(_, at)| *at);
        let left_ms = oldest.saturating_add(window_ms).saturating_sub(now_ms);
        let left = u64::try_from(left_ms).unwrap_or(0).div_ceil(1000).max(1);
        Err(Refused {
            added: added.len(),
            retry_after_secs: left,
            log: self.refusals.refused(client, now),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::clock::ManualClock;
    use std::time::Duration;

    const DAY_MS: i64 = 24 * 3600 * 1000;

    #[test]
    fn a_client_adds_at_most_cap_serials_a_window_and_is_logged_once_a_minute() {
        let time = ManualClock::at(1_000_000);
        let at = || (time.now_ms(), time.clock().now());
        let mut n = Newcomers::default();
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.3".parse().unwrap(), "::1".parse().unwrap());
        let hour = Duration::from_secs(3600);
        for s in ["S1", "S2", "S3"] {
            assert_eq!(n.admit(a, s, 3, DAY_MS, at()), Ok(()));
            time.advance(hour);
        }
        // A retry of one let in already is not counted.
        assert_eq!(n.admit(a, "S2", 3, DAY_MS, at()), Ok(()));
        // The fourth waits until the first is a day old: 21 hours from now.
        let refused = n.admit(a, "S4", 3, DAY_MS, at()).unwrap_err();
        assert_eq!(
            refused,
            Refused {
                added: 3,
                retry_after_secs: 21 * 3600,
                log: Some(0)
            }
        );
        // The rest of the minute is counted, not logged; then the count is told.
        for i in 0..10 {
            assert_eq!(
                n.admit(a, &format!("X{i}"), 3, DAY_MS, at())
                    .unwrap_err()
                    .log,
                None
            );
        }
        time.advance(Duration::from_secs(60));
        let refused = n.admit(a, "S4", 3, DAY_MS, at()).unwrap_err();
        assert_eq!(
            (refused.log, refused.retry_after_secs),
            (Some(10), 21 * 3600 - 60)
        );
        // Another client is not held back.
        assert_eq!(n.admit(b, "S5", 3, DAY_MS, at()), Ok(()));
        // A day after the first, one place is free again, and one only.
        time.advance(Duration::from_secs(21 * 3600 - 60));
        assert_eq!(n.admit(a, "S4", 3, DAY_MS, at()), Ok(()));
        assert!(n.admit(a, "S6", 3, DAY_MS, at()).is_err());
        // What left the window is forgotten, for every client.
        time.advance(Duration::from_millis(DAY_MS as u64));
        n.admit(a, "S7", 3, DAY_MS, at()).unwrap();
        assert_eq!(n.by_client.len(), 1);
        assert_eq!(n.by_client[&a].len(), 1);
    }
}
