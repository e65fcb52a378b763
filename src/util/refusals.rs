//! Refusals of one client logged at most once a minute: a flood of refused requests or
//! connections cannot fill the journal, and the line after the quiet minute says how many went
//! unlogged. Whatever refuses a client for a count or a rate (a listener's connection caps,
//! the device port's new thermostats) asks a [`RefusalLog`] whether to log.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Refusals are logged once per client per this long; the line after it says how many were
/// refused in between.
pub const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(60);
/// Clients whose refusals are remembered for [`REFUSAL_LOG_INTERVAL`]; past this (a flood from
/// many addresses) refusals from further clients are not logged until entries age out.
const REFUSAL_LOG_ADDRESSES: usize = 1024;

/// When a refusal of each client was last logged, and how many were not logged since.
#[derive(Default)]
pub(crate) struct RefusalLog {
    clients: HashMap<IpAddr, (Instant, u64)>,
}

impl RefusalLog {
    /// Notes a refusal of `client` (a [`super::client_key`]) at `now`: `Some(n)` when it is to
    /// be logged, `n` the refusals that went unlogged before it; `None` when it is only
    /// counted. The first from a client in [`REFUSAL_LOG_INTERVAL`] is logged, the rest
    /// counted.
    pub(crate) fn refused(&mut self, client: IpAddr, now: Instant) -> Option<u64> {
        let recent = |at: &Instant| now.saturating_duration_since(*at) < REFUSAL_LOG_INTERVAL;
        if let Some((at, unlogged)) = self.clients.get_mut(&client) {
            if recent(at) {
                *unlogged += 1;
                return None;
            }
            let before = *unlogged;
            (*at, *unlogged) = (now, 0);
            return Some(before);
        }
        if self.clients.len() >= REFUSAL_LOG_ADDRESSES {
            self.clients.retain(|_, (at, _)| recent(at));
            if self.clients.len() >= REFUSAL_LOG_ADDRESSES {
                return None;
            }
        }
        self.clients.insert(client, (now, 0));
        Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Refusals are logged once per address per minute, the next line counting the rest; a
    /// flood from many addresses remembers at most REFUSAL_LOG_ADDRESSES of them.
    #[test]
    fn refusals_are_logged_once_per_address_per_minute() {
        let mut log = RefusalLog::default();
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.2".parse().unwrap(), "::1".parse().unwrap());
        let t0 = crate::util::clock::ManualClock::at(0).clock().now();
        assert_eq!(log.refused(a, t0), Some(0));
        for i in 1..1000 {
            assert_eq!(log.refused(a, t0 + Duration::from_millis(i)), None);
        }
        assert_eq!(log.refused(b, t0), Some(0));
        let later = t0 + REFUSAL_LOG_INTERVAL;
        assert_eq!(log.refused(a, later), Some(999));
        assert_eq!(log.refused(a, later), None);
        for n in 0..5000u32 {
            let _ = log.refused(IpAddr::from(n.to_be_bytes()), later);
        }
        assert!(log.clients.len() <= REFUSAL_LOG_ADDRESSES);
        // Once the entries age out, new addresses are logged again.
        let much_later = later + REFUSAL_LOG_INTERVAL;
        assert_eq!(
            log.refused("10.0.0.1".parse().unwrap(), much_later),
            Some(0)
        );
    }
}
