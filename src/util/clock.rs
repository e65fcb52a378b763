//! Wall-clock helpers. The protocol counts object timestamps in milliseconds and a few fields
//! (`manual_eco_timestamp`, `fan_timer_timeout`) in seconds since the Unix epoch.
//!
//! The server reads the time through a [`Clock`] (`Config::clock`): the system clock, or a
//! [`ManualClock`] that a test sets and advances, so that expiry (entry keys, API keys,
//! availability, the weather cache) is tested by moving time rather than by waiting for it.
//! [`now_ms`] is the system clock, for code that is not part of a running server (the command
//! line, migration, log file names).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the clock is before 1970).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Where a running server reads the time. Cheap to clone; every clone reads the same time.
/// The default is the system clock.
#[derive(Clone, Default)]
pub struct Clock {
    /// `None`: the system clock. Otherwise the time a [`ManualClock`] holds.
    manual: Option<Arc<AtomicI64>>,
}

impl Clock {
    /// The system's wall clock.
    pub fn system() -> Clock {
        Clock::default()
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> i64 {
        match &self.manual {
            None => now_ms(),
            Some(ms) => ms.load(Ordering::SeqCst),
        }
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.manual {
            None => f.write_str("Clock(system)"),
            Some(ms) => write!(f, "Clock(manual at {})", ms.load(Ordering::SeqCst)),
        }
    }
}

/// A clock that stands still until it is set or advanced: the handle a test keeps while the
/// server reads [`ManualClock::clock`].
#[derive(Clone, Debug)]
pub struct ManualClock {
    ms: Arc<AtomicI64>,
}

impl ManualClock {
    /// Stopped at `ms` (milliseconds since the Unix epoch).
    pub fn at(ms: i64) -> ManualClock {
        ManualClock {
            ms: Arc::new(AtomicI64::new(ms)),
        }
    }

    /// Stopped at the system clock's time now, so timestamps still look current.
    pub fn starting_now() -> ManualClock {
        ManualClock::at(now_ms())
    }

    /// The clock to hand to the server; it reads this handle's time.
    pub fn clock(&self) -> Clock {
        Clock {
            manual: Some(Arc::clone(&self.ms)),
        }
    }

    pub fn now_ms(&self) -> i64 {
        self.ms.load(Ordering::SeqCst)
    }

    pub fn set_ms(&self, ms: i64) {
        self.ms.store(ms, Ordering::SeqCst);
    }

    /// Moves the time forward by `by` (whole milliseconds).
    pub fn advance(&self, by: Duration) {
        let by = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        // fetch_update never fails with a closure that always returns Some.
        let _ = self
            .ms
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |ms| {
                Some(ms.saturating_add(by))
            });
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for a millisecond timestamp (UTC).
pub fn iso8601_ms(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    match time::OffsetDateTime::from_unix_timestamp_nanos(nanos) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second(),
            t.millisecond()
        ),
        Err(_) => String::from("1970-01-01T00:00:00.000Z"),
    }
}

/// `YYYYmmddTHHMMSSZ` (UTC), for file names.
pub fn compact_utc(ms: i64) -> String {
    let iso = iso8601_ms(ms);
    // 2026-11-21T12:03:25.457Z -> 20261121T120325Z
    let digits: String = iso[..19].chars().filter(|c| c.is_ascii_digit()).collect();
    format!("{}T{}Z", &digits[..8], &digits[8..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_every_clone_sees_it() {
        let manual = ManualClock::at(1_000);
        let (a, b) = (manual.clock(), manual.clock().clone());
        assert_eq!((a.now_ms(), b.now_ms()), (1_000, 1_000));
        manual.advance(Duration::from_millis(1_500));
        assert_eq!((a.now_ms(), b.now_ms()), (2_500, 2_500));
        manual.set_ms(10);
        assert_eq!(a.now_ms(), 10);
        let system = Clock::system();
        let before = now_ms();
        let read = system.now_ms();
        assert!(read >= before && read <= now_ms());
        assert_eq!(format!("{a:?}"), "Clock(manual at 10)");
    }

    #[test]
    fn formats_utc() {
        assert_eq!(iso8601_ms(1_766_166_234_000), "2025-12-19T17:43:54.000Z");
        assert_eq!(compact_utc(1_766_166_234_000), "20251219T174354Z");
        assert_eq!(iso8601_ms(0), "1970-01-01T00:00:00.000Z");
    }
}
