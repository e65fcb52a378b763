//! `hearth bench`: figures measured with simulated thermostats on 127.0.0.1.
//!
//! 1. Idle RSS of a real `hearth serve` process (this executable) 2 s after start.
//! 2. Its RSS once N simulated thermostats (threads of this process) each hold a subscribe,
//!    6 s after the last one is held (tiny_http's spare pool threads exit after 5 s idle).
//! 3. Command latency: from sending `POST /command set_temperature` to a second `hearth serve`
//!    process (journal fsync included) to a simulated thermostat reading the pushed chunk off its
//!    freshly held subscribe, one thermostat per command.
//! 4. `GET /status` requests per second (and p99 latency) from 8 keep-alive clients against the
//!    same server, with the thermostats of phase 3 in its state.
//!
//! Everything it starts is stopped, and its temporary directories removed, before it returns.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;

use crate::http::client::{KeepAlive, Url};
use crate::process::ServerProcess;
use crate::simulator::{Event, Observer, Options, Thermostat, fleet};

pub struct BenchOptions {
    pub thermostats: usize,
    pub pushes: usize,
    pub status_seconds: u64,
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
    pub status_clients: usize,
    pub status_seconds: u64,
    pub status_per_sec: u64,
    pub status_p99_us: u64,
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
                format!("POST /command -> push received, median of {}", self.pushes),
                ms(self.push_median_us)
            ),
            format!(
                "{:<44} {:>12}",
                "POST /command -> push received, p99",
                ms(self.push_p99_us)
            ),
            format!(
                "{:<44} {:>12}",
                "POST /command -> push received, worst",
                ms(self.push_max_us)
            ),
            format!(
                "{:<44} {:>12}",
                format!(
                    "GET /status per second, {} keep-alive clients",
                    self.status_clients
                ),
                self.status_per_sec
            ),
            format!(
                "{:<44} {:>12}",
                "GET /status latency, p99",
                ms(self.status_p99_us)
            ),
        ]
        .join("\n")
    }
}

pub fn run(opts: &BenchOptions) -> Result<Report, String> {
    let (idle_rss_kb, held_rss_kb, held_threads) = memory_phase(opts.thermostats)?;
    let dir = TempDir::new("commands")?;
    let (mut latencies, server, serials) = command_phase(opts.pushes, &dir)?;
    let (status_per_sec, mut status_times) =
        status_phase(&server, &serials, STATUS_CLIENTS, opts.status_seconds)?;
    drop(server);
    latencies.sort_unstable();
    status_times.sort_unstable();
    Ok(Report {
        idle_rss_kb,
        held_thermostats: opts.thermostats,
        held_rss_kb,
        held_threads,
        pushes: latencies.len(),
        push_median_us: quantile(&latencies, 0.5),
        push_p99_us: quantile(&latencies, 0.99),
        push_max_us: latencies.last().copied().unwrap_or(0),
        status_clients: STATUS_CLIENTS,
        status_seconds: opts.status_seconds,
        status_per_sec: status_per_sec.round() as u64,
        status_p99_us: quantile(&status_times, 0.99),
    })
}

/// Keep-alive clients of the `/status` phase.
const STATUS_CLIENTS: usize = 8;

/// The value at quantile `q` of sorted `values` (0 when empty).
fn quantile(values: &[u64], q: f64) -> u64 {
    if values.is_empty() {
        return 0;
    }
    values[((values.len() as f64 * q).ceil() as usize).clamp(1, values.len()) - 1]
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
        // The server is stopped under the thermostats at the end: their complaints are noise.
        let stop_seen = Arc::clone(&stop);
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
            Event::Problem(why) if !stop_seen.load(Ordering::SeqCst) => {
                log::warn!("{serial}: {why}")
            }
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

/// Commands timed from `POST /command` (sent on a keep-alive connection to the control port
/// of a real `hearth serve` process) to a simulated thermostat reading the pushed chunk off its
/// held subscribe; one freshly booted thermostat per command, the usual case of a change
/// reaching a thermostat asleep on its held connection. Returns the latencies (µs), the
/// server process and the serials, for the status phase.
fn command_phase(
    pushes: usize,
    dir: &TempDir,
) -> Result<(Vec<u64>, ServerProcess, Vec<String>), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let server = ServerProcess::start(&exe, &dir.0)
        .map_err(|log| format!("the server did not start:\n{log}"))?;
    let origin = format!("http://{}", server.device);
    let control = Url {
        host: server.control.ip().to_string(),
        port: Some(server.control.port()),
        target: "/".into(),
    };
    let mut client =
        KeepAlive::connect(&control, Duration::from_secs(10)).map_err(|e| e.to_string())?;
    let quiet: Observer = Arc::new(|_: &str, _: &Event| {});
    let mut out = Vec::with_capacity(pushes);
    let mut serials = Vec::with_capacity(pushes);
    let mut held_streams = Vec::with_capacity(pushes);
    for i in 0..pushes {
        let mut sim = Thermostat::new(
            Options::new(&origin, &fleet::serial("02AA01AC98", i + 1)),
            Arc::clone(&quiet),
        );
        sim.boot().map_err(|e| e.to_string())?;
        // Once the head has arrived the subscribe is reserved in the hub, so a push committed
        // from now on is queued for it.
        let mut held = sim.open_subscribe().map_err(|e| e.to_string())?;
        let serial = sim.serial().to_string();
        let body = json!({"serial": serial, "command": "set_temperature", "value": 18.0 + (i % 20) as f64 * 0.5});
        let started = Instant::now();
        let r = client
            .request(
                "POST",
                "/command",
                &[("Content-Type", "application/json")],
                body.to_string().as_bytes(),
            )
            .map_err(|e| e.to_string())?;
        if r.status != 200 {
            return Err(format!("/command answered {}: {}", r.status, r.text()));
        }
        let chunk = held
            .next_chunk()
            .map_err(|e| e.to_string())?
            .ok_or("the subscribe ended early")?;
        out.push(started.elapsed().as_micros() as u64);
        sim.apply_chunk(&chunk).map_err(|e| e.to_string())?;
        held_streams.push(held);
        serials.push(serial);
    }
    drop(held_streams);
    Ok((out, server, serials))
}

/// `GET /status` from `clients` keep-alive connections for `seconds`: requests per second and
/// the latencies (µs).
fn status_phase(
    server: &ServerProcess,
    serials: &[String],
    clients: usize,
    seconds: u64,
) -> Result<(f64, Vec<u64>), String> {
    let control = Url {
        host: server.control.ip().to_string(),
        port: Some(server.control.port()),
        target: "/".into(),
    };
    let until = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let workers: Vec<_> = (0..clients)
        .map(|c| {
            let control = control.clone();
            let serials = serials.to_vec();
            thread::spawn(move || -> Result<Vec<u64>, String> {
                let mut client = KeepAlive::connect(&control, Duration::from_secs(10))
                    .map_err(|e| e.to_string())?;
                let mut times = Vec::new();
                let mut i = c;
                while Instant::now() < until {
                    let target = format!("/status?serial={}", serials[i % serials.len()]);
                    i += clients;
                    let t = Instant::now();
                    let r = client
                        .request("GET", &target, &[], &[])
                        .map_err(|e| e.to_string())?;
                    if r.status != 200 {
                        return Err(format!("/status answered {}", r.status));
                    }
                    times.push(t.elapsed().as_micros() as u64);
                }
                Ok(times)
            })
        })
        .collect();
    let mut all = Vec::new();
    for w in workers {
        all.extend(w.join().map_err(|_| "a status client panicked")??);
    }
    let per_sec = all.len() as f64 / started.elapsed().as_secs_f64();
    Ok((per_sec, all))
}
