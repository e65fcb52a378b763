//! Outbound calls: the one agent every call to a server hearth does not run is made with
//! ([`agent`]: bounded, following no redirect), and how many of a port's request workers may
//! wait on one at once ([`OutboundGate`]).
//!
//! The gate: half of a port's workers (at least one) may wait on an outbound call (the weather
//! upstream, a thermostat's settings API) at once. A request that finds them all taken is
//! answered at once, so an upstream that accepts connections and never answers can hold at
//! most that many workers, each for a bounded time, and the other half keeps serving
//! `/health`, thermostats and everyone else.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The agent of every call hearth makes to a server it does not run: the weather (Open-Meteo,
/// `WEATHER_URL`), Home Assistant's Supervisor, a thermostat's settings API, the alerts' ntfy
/// and webhook. It gives up after `connect` connecting and `whole` for the whole request, and
/// follows no redirect: a 3xx is that server's answer, not a pointer hearth acts on (a
/// redirect to another host would send it hearth's request, headers and body included, and
/// pass its answer on as the first server's). ureq answers a 3xx as `Ok` then, so each caller
/// takes only a 2xx as success.
pub(crate) fn agent(connect: Duration, whole: Duration) -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout_connect(connect.min(whole))
        .timeout(whole)
        .redirects(0)
        .build()
}

/// Whether `status` is a success: 2xx, and nothing else (a 3xx is not followed).
pub(crate) fn succeeded(status: u16) -> bool {
    (200..300).contains(&status)
}

pub struct OutboundGate {
    in_use: AtomicUsize,
    limit: usize,
}

/// A place taken in an [`OutboundGate`], given back when dropped.
pub struct Permit<'a>(&'a OutboundGate);

impl OutboundGate {
    /// The gate of a port with `workers` request workers: `workers / 2`, at least 1.
    pub fn for_workers(workers: usize) -> OutboundGate {
        OutboundGate {
            in_use: AtomicUsize::new(0),
            limit: (workers / 2).max(1),
        }
    }

    /// A place, or `None` when every place is taken.
    pub fn try_enter(&self) -> Option<Permit<'_>> {
        self.in_use
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.limit).then_some(n + 1)
            })
            .ok()
            .map(|_| Permit(self))
    }

    /// Places taken now.
    pub fn in_use(&self) -> usize {
        self.in_use.load(Ordering::Acquire)
    }

    pub fn limit(&self) -> usize {
        self.limit
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.0.in_use.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::OutboundGate;

    #[test]
    fn half_the_workers_at_least_one() {
        assert_eq!(OutboundGate::for_workers(4).limit(), 2);
        assert_eq!(OutboundGate::for_workers(5).limit(), 2);
        assert_eq!(OutboundGate::for_workers(1).limit(), 1);
        let gate = OutboundGate::for_workers(4);
        let a = gate.try_enter().unwrap();
        let b = gate.try_enter().unwrap();
        assert!(gate.try_enter().is_none());
        assert_eq!(gate.in_use(), 2);
        drop(a);
        let c = gate.try_enter().unwrap();
        assert!(gate.try_enter().is_none());
        drop((b, c));
        assert_eq!(gate.in_use(), 0);
    }
}
