//! What `GET /metrics` reports that no other part of the server keeps: counters and a latency
//! histogram, each a handful of atomics updated where the event happens (no lock on the hot
//! path), and the Prometheus text format they are written in ([`text`]). The route itself is
//! the control API's (`src/control/metrics.rs`); see docs/metrics.md.

pub mod text;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// HTTP statuses answered by one listener, by code: one counter per possible code, so counting
/// is a single atomic add.
pub struct StatusCounts {
    counts: Box<[AtomicU64]>,
}

/// Codes at or above this are counted as 599 (HTTP has none; a bug would show, not vanish).
const STATUS_LIMIT: usize = 600;

impl Default for StatusCounts {
    fn default() -> StatusCounts {
        StatusCounts {
            counts: (0..STATUS_LIMIT).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl fmt::Debug for StatusCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StatusCounts")
    }
}

impl StatusCounts {
    pub fn count(&self, status: u16) {
        let index = usize::from(status).min(STATUS_LIMIT - 1);
        if let Some(c) = self.counts.get(index) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The codes answered at least once, with their counts, lowest code first.
    pub fn answered(&self) -> Vec<(u16, u64)> {
        self.counts
            .iter()
            .enumerate()
            .filter_map(|(code, c)| {
                let n = c.load(Ordering::Relaxed);
                (n > 0).then_some((code as u16, n))
            })
            .collect()
    }
}

/// Upper bounds (seconds) of the fsync histogram's buckets: an SSD's fsync takes well under a
/// millisecond, an SD card's tens of milliseconds, a dying one seconds.
pub const FSYNC_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// A latency histogram over [`FSYNC_BUCKETS`]: per-bucket counts (not cumulative; the text
/// format's cumulative counts are summed when written), the number observed and their sum in
/// microseconds.
#[derive(Default)]
pub struct Histogram {
    buckets: [AtomicU64; FSYNC_BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl fmt::Debug for Histogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Histogram")
    }
}

/// A histogram as read at one moment: cumulative counts per bucket bound, count, sum.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramSnapshot {
    pub cumulative: Vec<(f64, u64)>,
    pub count: u64,
    pub sum_seconds: f64,
}

impl Histogram {
    pub fn observe(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        if let Some(i) = FSYNC_BUCKETS.iter().position(|&bound| seconds <= bound) {
            if let Some(b) = self.buckets.get(i) {
                b.fetch_add(1, Ordering::Relaxed);
            }
        }
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Read without a lock: a scrape during an observation may see the count before its
    /// bucket, which Prometheus tolerates (the next scrape agrees).
    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut running = 0;
        let cumulative = FSYNC_BUCKETS
            .iter()
            .zip(&self.buckets)
            .map(|(&bound, b)| {
                running += b.load(Ordering::Relaxed);
                (bound, running)
            })
            .collect();
        HistogramSnapshot {
            cumulative,
            count: self.count.load(Ordering::Relaxed).max(running),
            sum_seconds: self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_counted_by_code() {
        let c = StatusCounts::default();
        c.count(200);
        c.count(200);
        c.count(404);
        c.count(1000);
        assert_eq!(c.answered(), vec![(200, 2), (404, 1), (599, 1)]);
    }

    #[test]
    fn histogram_buckets_are_cumulative() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(300));
        h.observe(Duration::from_millis(3));
        h.observe(Duration::from_secs(10));
        let s = h.snapshot();
        assert_eq!(s.count, 3);
        assert_eq!(s.cumulative.first(), Some(&(0.0005, 1)));
        assert_eq!(s.cumulative.get(3), Some(&(0.005, 2)));
        assert_eq!(s.cumulative.last(), Some(&(2.5, 2)));
        assert!((s.sum_seconds - 10.0033).abs() < 1e-9);
    }
}
