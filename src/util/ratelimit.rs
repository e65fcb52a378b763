//! Request limits for `/api/v1` and the presence URL (`POST /api/presence/{person}`): a fixed
//! one-minute window that starts with a caller's first counted request; the limit is
//! `API_RATE_LIMIT_PER_MINUTE` (20 by default, the hosted service's figure). Windows live in
//! memory: a restart starts every count afresh.
//!
//! A valid credential is counted by what it is (a key, a person). A request without one (none,
//! an unknown one, a revoked or expired one) is counted against the client address it came
//! from ([`address_key`], [`RateLimiter::take_unknown`]). Once an address has used up its
//! window:
//! - on `/api/v1`, every request from it is answered 429 until the window ends, a valid key
//!   too: were a valid key let through, the change from 429 to 200 would tell a guesser which
//!   guess was right (keys may be chosen by whoever made them, and the limit would limit
//!   nothing);
//! - at the presence URL, only requests without a valid token are: its tokens are 256 random
//!   bits, which no 429 helps to guess, and phones behind a reverse proxy all come from the
//!   proxy's address, so refusing valid tokens there would let anyone on the internet silence
//!   every arrival with a few wrong ones.

use std::collections::HashMap;
use std::net::SocketAddr;

use parking_lot::Mutex;

pub const WINDOW_MS: i64 = 60_000;
/// Past this many tracked callers, finished windows are swept out.
const SWEEP_AT: usize = 1024;

pub struct RateLimiter {
    limit: u32,
    windows: Mutex<HashMap<String, Window>>,
}

#[derive(Clone, Copy)]
struct Window {
    start_ms: i64,
    count: u32,
}

/// One request's standing, for the `X-RateLimit-*` headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quota {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// When the window ends and the count starts again (ms).
    pub reset_ms: i64,
}

/// The key a request without a valid credential is counted by: its client address
/// ([`crate::util::client_key`]).
pub fn address_key(remote: Option<SocketAddr>) -> String {
    format!(
        "ip:{}",
        remote
            .map(|a| crate::util::client_key(a.ip()).to_string())
            .unwrap_or_default()
    )
}

/// The `Retry-After` seconds of a window that ends in `wait_ms` (at least 1).
pub fn retry_after_s(wait_ms: i64) -> i64 {
    ((wait_ms.max(0) + 999) / 1000).max(1)
}

impl RateLimiter {
    /// Counts a request without a valid credential from `address` ([`address_key`]); when it
    /// uses up the address's window, says so once (`surface` names where).
    pub fn take_unknown(&self, address: &str, now_ms: i64, surface: &str) -> Quota {
        let quota = self.take(address, now_ms);
        if quota.remaining == 0 {
            log::warn!(
                "{surface}: {} requests without a valid credential from {} this minute; \
                 those from it are refused until {}",
                quota.limit,
                address.trim_start_matches("ip:"),
                crate::util::clock::iso8601_ms(quota.reset_ms)
            );
        }
        quota
    }

    pub fn new(limit: u32) -> RateLimiter {
        RateLimiter {
            limit: limit.max(1),
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// `caller`'s standing at `now_ms` if its window is used up (its requests are refused until
    /// `reset_ms`), without counting anything.
    pub fn exhausted(&self, caller: &str, now_ms: i64) -> Option<Quota> {
        let windows = self.windows.lock();
        let window = windows.get(caller)?;
        let current = now_ms >= window.start_ms && now_ms < window.start_ms + WINDOW_MS;
        (current && window.count >= self.limit).then_some(Quota {
            allowed: false,
            limit: self.limit,
            remaining: 0,
            reset_ms: window.start_ms + WINDOW_MS,
        })
    }

    /// Counts one request by `caller` at `now_ms`. A refused request does not count.
    pub fn take(&self, caller: &str, now_ms: i64) -> Quota {
        let mut windows = self.windows.lock();
        if windows.len() >= SWEEP_AT && !windows.contains_key(caller) {
            windows.retain(|_, w| now_ms < w.start_ms + WINDOW_MS);
        }
        let window = windows.entry(caller.to_string()).or_insert(Window {
            start_ms: now_ms,
            count: 0,
        });
        if now_ms >= window.start_ms + WINDOW_MS || now_ms < window.start_ms {
            *window = Window {
                start_ms: now_ms,
                count: 0,
            };
        }
        let allowed = window.count < self.limit;
        if allowed {
            window.count += 1;
        }
        Quota {
            allowed,
            limit: self.limit,
            remaining: self.limit - window.count,
            reset_ms: window.start_ms + WINDOW_MS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_allows_the_limit_then_refuses_until_it_ends() {
        let r = RateLimiter::new(2);
        let q = r.take("k", 1_000);
        assert_eq!((q.allowed, q.remaining, q.reset_ms), (true, 1, 61_000));
        assert_eq!(r.take("k", 2_000).remaining, 0);
        let refused = r.take("k", 3_000);
        assert!(!refused.allowed);
        assert_eq!((refused.remaining, refused.reset_ms), (0, 61_000));
        // Another caller has its own window.
        assert!(r.take("other", 3_000).allowed);
        assert_eq!(r.exhausted("k", 3_000).map(|q| q.reset_ms), Some(61_000));
        assert_eq!(r.exhausted("other", 3_000), None);
        assert_eq!(r.exhausted("k", 61_000), None, "the window has ended");
        let fresh = r.take("k", 61_000);
        assert_eq!(
            (fresh.allowed, fresh.remaining, fresh.reset_ms),
            (true, 1, 121_000)
        );
    }
}
