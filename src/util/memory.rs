//! Giving freed heap back to the system after a burst of requests.
//!
//! glibc keeps memory freed by a burst (a thousand thermostats booting at once, say) inside its
//! arenas, scattered between allocations that live on, so the process stays at its peak size.
//! `malloc_trim` returns those free pages. It is called from the maintenance loop once a tick
//! passes with no request after some activity, or after every [`TRIM_EVERY`] requests on a
//! server that is never quiet; never while idle (health checks, the self-probes among them,
//! are not counted).

use std::sync::atomic::{AtomicU64, Ordering};

/// Requests answered by every listener since start, health checks aside (the activity the
/// trimmer watches).
static REQUESTS: AtomicU64 = AtomicU64::new(0);

/// A busy server trims at least this often (in requests).
pub const TRIM_EVERY: u64 = 10_000;

pub fn count_request() {
    REQUESTS.fetch_add(1, Ordering::Relaxed);
}

/// Decides, tick by tick, when a burst has passed.
#[derive(Default)]
pub struct Trimmer {
    seen: u64,
    busy: bool,
    trimmed_at: u64,
}

impl Trimmer {
    /// Call once per maintenance tick; trims when the tick was quiet after a busy one.
    pub fn tick(&mut self) {
        if self.quiet_after_burst(REQUESTS.load(Ordering::Relaxed)) {
            release_free_heap();
        }
    }

    fn quiet_after_burst(&mut self, requests: u64) -> bool {
        let trim = if requests != self.seen {
            self.seen = requests;
            self.busy = true;
            requests - self.trimmed_at >= TRIM_EVERY
        } else {
            std::mem::take(&mut self.busy)
        };
        if trim {
            self.busy = false;
            self.trimmed_at = requests;
        }
        trim
    }
}

fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_once_after_a_burst_and_never_while_idle() {
        let mut t = Trimmer::default();
        assert!(!t.quiet_after_burst(0), "idle from the start");
        assert!(!t.quiet_after_burst(5), "busy");
        assert!(!t.quiet_after_burst(9), "still busy");
        assert!(t.quiet_after_burst(9), "quiet after the burst: trim");
        assert!(!t.quiet_after_burst(9), "idle: no more trims");
        assert!(!t.quiet_after_burst(10));
        assert!(t.quiet_after_burst(10));
        // Never quiet: a trim every TRIM_EVERY requests.
        assert!(!t.quiet_after_burst(10 + TRIM_EVERY - 1));
        assert!(t.quiet_after_burst(10 + TRIM_EVERY));
        assert!(!t.quiet_after_burst(10 + TRIM_EVERY + 5));
        assert!(!t.quiet_after_burst(10 + 2 * TRIM_EVERY - 1));
        assert!(t.quiet_after_burst(10 + 2 * TRIM_EVERY));
    }
}
