//! `hearth-dev simulate`: many simulated thermostats, one thread each, printing one line per event.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use crate::util::clock::Clock;

use super::{Event, Options, Thermostat};

/// `prefix` followed by a counter, 16 characters in all (longer prefixes get the counter
/// appended as is).
pub fn serial(prefix: &str, index: usize) -> String {
    let prefix: String = prefix
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_uppercase())
        .collect();
    let width = 16usize.saturating_sub(prefix.len()).max(1);
    format!("{prefix}{index:0width$}")
}

pub struct Fleet {
    pub server: String,
    pub devices: usize,
    pub serial_prefix: String,
    pub seconds: Option<u64>,
    pub drift_every: Option<Duration>,
    /// Each thermostat receives pushes but applies none ([`Options::ignore_pushes`]).
    pub ignore_pushes: bool,
}

impl Fleet {
    /// Runs the thermostats until `seconds` pass (or forever), printing events to stdout.
    pub fn run(&self) -> Result<(), String> {
        crate::http::client::Url::parse(&self.server)?;
        let stop = Arc::new(AtomicBool::new(false));
        let print: super::Observer = Arc::new(|serial: &str, event: &Event| {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{serial} {event}");
        });
        for i in 1..=self.devices {
            let mut opts = Options::new(&self.server, &serial(&self.serial_prefix, i));
            opts.ignore_pushes = self.ignore_pushes;
            let (stop, print, drift) = (Arc::clone(&stop), Arc::clone(&print), self.drift_every);
            thread::Builder::new()
                .name(format!("thermostat-{i}"))
                .stack_size(256 * 1024)
                .spawn(move || {
                    Thermostat::new(opts, print).run(&|| !stop.load(Ordering::SeqCst), drift)
                })
                .map_err(|e| e.to_string())?;
        }
        // The command line's simulator, not a server: the system clock.
        let clock = Clock::system();
        let started = clock.now();
        loop {
            thread::sleep(Duration::from_millis(200));
            if self
                .seconds
                .is_some_and(|s| clock.now() - started >= Duration::from_secs(s))
            {
                stop.store(true, Ordering::SeqCst);
                // Threads may be parked in a held subscribe; the process exit ends them.
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::serial;

    #[test]
    fn serials_are_sixteen_characters() {
        assert_eq!(serial("02AA01AC51", 7), "02AA01AC51000007");
        assert_eq!(serial("02aa-01ac-51", 12), "02AA01AC51000012");
        assert_eq!(serial("02AA01AC5100000099", 3), "02AA01AC51000000993");
    }
}
