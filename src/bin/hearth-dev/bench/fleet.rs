//! Simulated thermostats (threads of the bench process) that boot against a server and then
//! live as real ones do: hold a subscribe, apply and acknowledge what is pushed, subscribe
//! again. Pushes are reported to whoever is waiting for them, so a command's latency can be
//! timed to the moment the thermostat has read the chunk.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use hearth::util::clock::real_now;

use crossbeam_channel::{Receiver, Sender, unbounded};

use hearth::simulator::{Event, Observer, Options, Thermostat, fleet};

/// The scheduling priority of the thermostats' threads.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// As the bench's own threads: a thermostat reads a push as soon as it comes, so a
    /// command's latency is timed to the moment it is read.
    Normal,
    /// Nice 19: they run only when the server leaves a core idle. For what is timed on the
    /// server alone (its stop), where ten thousand threads waking to read the end of their
    /// subscribes would otherwise take a third of this machine's two cores from it, which
    /// ten thousand thermostats, each a box of its own, never do.
    Lowest,
}

pub struct HeldFleet {
    pub serials: Vec<String>,
    stop: Arc<AtomicBool>,
    /// Dropped to let the thermostats' threads end: until then a thermostat whose subscribe
    /// ended after [`HeldFleet::stop`] waits, so that ten thousand threads ending do not share
    /// the CPU with the server being measured (a real thermostat is a box of its own).
    release: Option<Sender<()>>,
    held: Arc<Mutex<HashSet<String>>>,
    threads: Vec<JoinHandle<()>>,
    /// `object_key`s of pushed objects, as the thermostats read them.
    pub pushes: Receiver<(String, Instant)>,
}

impl HeldFleet {
    /// Starts `count` thermostats against the device port at `origin` and waits until each has
    /// uploaded its state and holds a subscribe.
    pub fn start(origin: &str, prefix: &str, count: usize) -> Result<HeldFleet, String> {
        Self::start_with(origin, prefix, count, &|_| {}, Priority::Normal)
    }

    /// Like [`HeldFleet::start`], each thermostat first set up by `setup` (what it reports
    /// before its boot uploads it: its fan running, say), its thread at `priority`.
    pub fn start_with(
        origin: &str,
        prefix: &str,
        count: usize,
        setup: &dyn Fn(&mut Thermostat),
        priority: Priority,
    ) -> Result<HeldFleet, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let held = Arc::new(Mutex::new(HashSet::new()));
        let uploaded = Arc::new(Mutex::new(HashSet::new()));
        let (tx, pushes) = unbounded();
        let (release, released) = crossbeam_channel::bounded::<()>(0);
        let observer = observer(&stop, &held, &uploaded, tx);
        let mut serials = Vec::with_capacity(count);
        let mut threads = Vec::with_capacity(count);
        for i in 1..=count {
            let serial = fleet::serial(prefix, i);
            let mut sim = Thermostat::new(Options::new(origin, &serial), Arc::clone(&observer));
            setup(&mut sim);
            let stop = Arc::clone(&stop);
            let released = released.clone();
            let thread = thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || {
                    if priority == Priority::Lowest {
                        // On Linux the nice value is the calling thread's, not the process's.
                        if let Err(e) = rustix::process::setpriority_process(None, 19) {
                            log::warn!("a thermostat's thread keeps its priority: {e}");
                        }
                    }
                    sim.run(&|| !stop.load(Ordering::SeqCst), None);
                    // Nothing is ever sent: this returns once `release` is dropped.
                    let _ = released.recv();
                })
                .map_err(|e| e.to_string())?;
            threads.push(thread);
            serials.push(serial);
        }
        let fleet = HeldFleet {
            serials,
            stop,
            release: Some(release),
            held,
            threads,
            pushes,
        };
        let deadline = real_now() + Duration::from_secs(300);
        while fleet.held_count() < count {
            if real_now() > deadline {
                return Err(format!(
                    "only {} of {count} thermostats held a subscribe within 300 s",
                    fleet.held_count()
                ));
            }
            thread::sleep(Duration::from_millis(50));
        }
        Ok(fleet)
    }

    /// Tells the thermostats to stop; each ends when its held subscribe does.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Stops the thermostats and waits, up to `within`, until their threads have ended (call
    /// once the server is stopped under them), so that what is measured next does not share
    /// the CPU with a thousand threads winding down.
    pub fn finish(mut self, within: Duration) {
        self.stop();
        self.release = None;
        let until = real_now() + within;
        while self.threads.iter().any(|t| !t.is_finished()) && real_now() < until {
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn held_count(&self) -> usize {
        self.held.lock().map(|h| h.len()).unwrap_or(0)
    }
}

impl Drop for HeldFleet {
    /// Tells the thermostats to stop; each ends when its held subscribe does (the server is
    /// stopped under them).
    fn drop(&mut self) {
        self.stop();
        self.release = None;
    }
}

fn observer(
    stop: &Arc<AtomicBool>,
    held: &Arc<Mutex<HashSet<String>>>,
    uploaded: &Arc<Mutex<HashSet<String>>>,
    pushes: Sender<(String, Instant)>,
) -> Observer {
    let (stop, held, uploaded) = (Arc::clone(stop), Arc::clone(held), Arc::clone(uploaded));
    Arc::new(move |serial: &str, e: &Event| match e {
        Event::Uploaded { .. } => {
            uploaded
                .lock()
                .map(|mut u| u.insert(serial.to_string()))
                .ok();
        }
        // The first hold after its upload: the thermostat is settled.
        Event::Held if uploaded.lock().is_ok_and(|u| u.contains(serial)) => {
            held.lock().map(|mut h| h.insert(serial.to_string())).ok();
        }
        Event::Pushed { key, .. } => {
            let _ = pushes.send((key.clone(), real_now()));
        }
        // The server is stopped under the thermostats at the end: their complaints are noise.
        Event::Problem(why) if !stop.load(Ordering::SeqCst) => log::warn!("{serial}: {why}"),
        _ => {}
    })
}
