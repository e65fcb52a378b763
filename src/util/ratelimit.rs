//! Request limits for `/api/v1` and the presence URL (`POST /api/presence/{person}`): a fixed
//! one-minute window that starts with a caller's first counted request; the limit is
//! `API_RATE_LIMIT_PER_MINUTE` (20 by default, the hosted service's figure). The rules below are
//! the hosted API's; the presence URL counts the same way, by person for a valid token. A valid key is counted per key. A request without a valid key (none, an
//! unknown one, a revoked or expired one) is counted against the client address it came from;
//! once an address has used up its window, every `/api/v1` request from it is answered 429 until
//! the window ends, with a valid key too: were a valid key let through, the change from 429 to
//! 200 would tell a guesser which guess was right, and the limit would limit nothing. Windows
//! live in memory: a restart starts every count afresh.

use std::collections::HashMap;

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

impl RateLimiter {
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
