//! `hearth bench`: figures measured with simulated thermostats on 127.0.0.1.
//!
//! 1. Idle RSS of a real `hearth serve` process (this executable) 2 s after start.
//! 2. Its RSS once N simulated thermostats (threads of this process) each hold a subscribe,
//!    6 s after the last one is held (tiny_http's spare pool threads exit after 5 s idle).
//! 3. Push latency: the time from a server-side change (through the one mutation path, journal
//!    fsync included) to a simulated thermostat reading the pushed chunk off its freshly held
//!    subscribe, one thermostat per push. Until the control API exists there is no way to make a server-side change from
//!    outside, so this phase runs the server in this process (same code, real sockets).
//!
//! Everything it starts is stopped, and its temporary directories removed, before it returns.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;

use crate::config::{ApiOrigin, Config};
use crate::hub::Origin;
use crate::process::ServerProcess;
use crate::server::Server;
use crate::simulator::{Event, Observer, Options, Thermostat, fleet};
use crate::state::Stamp;

pub struct BenchOptions {
    pub thermostats: usize,
    pub pushes: usize,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub idle_rss_kb: u64,
    pub held_thermostats: usize,
    pub held_rss_kb: u64,
    pub held_threads: u64,
    pub pushes: usize,
    pub push_median_us: u64,
    pub push_p99_us: u64,
    pub push_max_us: u64,
}

impl Report {
    pub fn table(&self) -> String {
        let ms = |us: u64| format!("{:.2} ms", us as f64 / 1000.0);
        [
            format!(
                "{:<44} {:>12}",
                "idle RSS (server process, 2 s after start)",
                format!("{} kB", self.idle_rss_kb)
            ),
            format!(
                "{:<44} {:>12}",
                format!("RSS with {} held subscribes", self.held_thermostats),
                format!("{} kB", self.held_rss_kb)
            ),
            format!(
                "{:<44} {:>12}",
                "server threads with them held", self.held_threads
            ),
            format!(
                "{:<44} {:>12}",
                format!("change -> push received, median of {}", self.pushes),
                ms(self.push_median_us)
            ),
            format!(
                "{:<44} {:>12}",
                "change -> push received, p99",
                ms(self.push_p99_us)
            ),
            format!(
                "{:<44} {:>12}",
                "change -> push received, worst",
                ms(self.push_max_us)
            ),
        ]
        .join("\n")
    }
}

pub fn run(opts: &BenchOptions) -> Result<Report, String> {
    let (idle_rss_kb, held_rss_kb, held_threads) = memory_phase(opts.thermostats)?;
    let mut latencies = latency_phase(opts.pushes)?;
    latencies.sort();
    let at = |q: f64| {
        latencies[((latencies.len() as f64 * q).ceil() as usize).clamp(1, latencies.len()) - 1]
    };
    Ok(Report {
        idle_rss_kb,
        held_thermostats: opts.thermostats,
        held_rss_kb,
        held_threads,
        pushes: latencies.len(),
        push_median_us: at(0.5),
        push_p99_us: at(0.99),
        push_max_us: latencies.last().copied().unwrap_or(0),
    })
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Result<TempDir, String> {
        let dir = std::env::temp_dir().join(format!("hearth-bench-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn memory_phase(thermostats: usize) -> Result<(u64, u64, u64), String> {
    let dir = TempDir::new("mem")?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let server = ServerProcess::start(&exe, &dir.0)
        .map_err(|log| format!("the server did not start:\n{log}"))?;
    thread::sleep(Duration::from_secs(2));
    let idle = server.status_field("VmRSS:").ok_or("no VmRSS")?;

    // Each thermostat boots (entry, sync, upload) and then holds a subscribe; count the first
    // hold after its upload.
    let stop = Arc::new(AtomicBool::new(false));
    let held = Arc::new(Mutex::new(std::collections::HashSet::new()));
    let uploaded = Arc::new(Mutex::new(std::collections::HashSet::new()));
    let observer: Observer = {
        let (held, uploaded) = (Arc::clone(&held), Arc::clone(&uploaded));
        Arc::new(move |serial: &str, e: &Event| match e {
            Event::Uploaded { .. } => {
                uploaded
                    .lock()
                    .map(|mut u| u.insert(serial.to_string()))
                    .ok();
            }
            Event::Held if uploaded.lock().map(|u| u.contains(serial)).unwrap_or(false) => {
                held.lock().map(|mut h| h.insert(serial.to_string())).ok();
            }
            Event::Problem(why) => log::warn!("{serial}: {why}"),
            _ => {}
        })
    };
    let origin = format!("http://{}", server.device);
    for i in 1..=thermostats {
        let mut sim = Thermostat::new(
            Options::new(&origin, &fleet::serial("02AA01AC99", i)),
            Arc::clone(&observer),
        );
        let stop = Arc::clone(&stop);
        thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || sim.run(&|| !stop.load(Ordering::SeqCst), None))
            .map_err(|e| e.to_string())?;
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while held.lock().map(|h| h.len()).unwrap_or(0) < thermostats {
        if Instant::now() > deadline {
            return Err("the thermostats did not all hold a subscribe within 120 s".into());
        }
        thread::sleep(Duration::from_millis(50));
    }
    // tiny_http's extra pool threads from the boot traffic exit after 5 s idle.
    thread::sleep(Duration::from_secs(6));
    let rss = server.status_field("VmRSS:").ok_or("no VmRSS")?;
    let threads = server.status_field("Threads:").unwrap_or(0);
    stop.store(true, Ordering::SeqCst);
    drop(server);
    Ok((idle, rss, threads))
}

/// One thermostat per timed push, each holding a freshly parked subscribe (the usual case:
/// a change reaches a thermostat that is asleep on its held connection).
fn latency_phase(pushes: usize) -> Result<Vec<u64>, String> {
    let dir = TempDir::new("push")?;
    let mut config = Config::local(&dir.0);
    config.api_origin = ApiOrigin::parse("http://127.0.0.1").ok();
    let server = Server::start(config).map_err(|e| e.to_string())?;
    let origin = format!("http://{}", server.device_addr());
    let quiet: Observer = Arc::new(|_: &str, _: &Event| {});
    let hub = Arc::clone(server.app().hub());
    let mut out = Vec::with_capacity(pushes);
    let mut held_streams = Vec::with_capacity(pushes);
    for i in 0..pushes {
        let mut sim = Thermostat::new(
            Options::new(&origin, &fleet::serial("02AA01AC98", i + 1)),
            Arc::clone(&quiet),
        );
        sim.boot().map_err(|e| e.to_string())?;
        let mut held = sim.open_subscribe().map_err(|e| e.to_string())?;
        let serial = sim.serial().to_string();
        let wait = Instant::now() + Duration::from_secs(5);
        while hub.subscriptions_of(&serial) == 0 {
            if Instant::now() > wait {
                return Err(format!("{serial}'s subscribe was never parked"));
            }
            thread::sleep(Duration::from_millis(1));
        }
        let fields = json!({"target_temperature": 18.0 + (i % 20) as f64 * 0.5, "target_change_pending": true});
        let fields = fields.as_object().cloned().unwrap_or_default();
        let started = Instant::now();
        server
            .app()
            .state
            .update_device(&serial, Origin::Server, |txn| {
                txn.merge(&format!("shared.{serial}"), &fields, Stamp::Always);
                Ok::<_, crate::store::StoreError>(())
            })
            .map_err(|e| e.to_string())?;
        let chunk = held
            .next_chunk()
            .map_err(|e| e.to_string())?
            .ok_or("the subscribe ended early")?;
        out.push(started.elapsed().as_micros() as u64);
        sim.apply_chunk(&chunk).map_err(|e| e.to_string())?;
        held_streams.push(held);
    }
    drop(held_streams);
    server.shutdown();
    Ok(out)
}
