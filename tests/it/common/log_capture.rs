//! The log of the test process, kept for the tests that check what a server says: once
//! [`lines`] is first called, every `info` (and more severe) line of hearth's own is kept, the
//! last [`KEPT`] of them. Tests share the process, so a test picks its own lines out by what
//! only it can have caused (an address only it connects from).

use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};

/// Lines kept at most.
const KEPT: usize = 50_000;

struct Capture(Mutex<VecDeque<String>>);

impl log::Log for Capture {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Info && metadata.target().starts_with("hearth")
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let line = format!("{} {}: {}", record.level(), record.target(), record.args());
        let mut lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() >= KEPT {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    fn flush(&self) {}
}

static CAPTURE: OnceLock<&'static Capture> = OnceLock::new();

/// Starts keeping the log (once per process).
pub fn start() {
    CAPTURE.get_or_init(|| {
        let capture: &'static Capture = Box::leak(Box::new(Capture(Mutex::new(VecDeque::new()))));
        // Only this module sets a logger in the test binary.
        let _ = log::set_logger(capture);
        log::set_max_level(log::LevelFilter::Info);
        capture
    });
}

/// The lines kept so far that contain `text`.
pub fn lines(text: &str) -> Vec<String> {
    start();
    let capture = CAPTURE.get().expect("started");
    let lines = capture.0.lock().unwrap_or_else(|e| e.into_inner());
    lines.iter().filter(|l| l.contains(text)).cloned().collect()
}
