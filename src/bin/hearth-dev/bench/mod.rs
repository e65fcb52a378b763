//! `hearth-dev bench`: the performance figures, measured on 127.0.0.1 against real
//! `hearth serve` processes with fresh data directories, driven by simulated thermostats
//! and HTTP clients that run in the bench process.
//!
//! 1. Idle RSS (VmRSS) of a server 2 s after start.
//! 2. Its RSS once N simulated thermostats (default 1,000) each hold a chunked subscribe,
//!    12 s after the last one is held: the steady state, once the spare connection threads
//!    have exited (after 5 s idle) and hearth has given the boot burst's freed heap back (at
//!    the first quiet maintenance tick, within 10 s).
//! 3. Command → push: `POST /command set_temperature` from 4 concurrent clients (`--commanders`), each sending
//!    one at a time to its own quarter of the N thermostats, each command timed until the
//!    thermostat has read the pushed object off its held subscribe (journal fsync included):
//!    p50, p99, max.
//! 4. Start-up: the server is stopped (SIGTERM, which writes a snapshot: the journal is the
//!    whole store's) and started again on
//!    the same data directory, now holding N thermostats' state, and timed from spawn to the
//!    first 200 from `/health`, once the simulated thermostats' threads have ended.
//! 5. Acknowledged (durable) `POST /command` per second from 8 keep-alive clients, against
//!    that restarted server.
//! 6. `GET /status` per second from 8 keep-alive clients, with its p99 latency, then the same
//!    for `GET /health` (the path every request shares). 5, 6 and `/health` also give the
//!    server's CPU time per request: its user + system time over the load divided by the
//!    requests answered.
//! 7. A third server with 100 held subscribes: its CPU time over 60 idle seconds.
//!
//! Everything it starts is stopped, and its temporary directories removed, before it returns.

pub mod crash;
pub mod energy;
mod fleet;
mod load;
mod report;
pub mod stop;

use std::path::PathBuf;
use std::thread;
use std::time::Duration;

pub use report::Report;

use fleet::HeldFleet;
use hearth::process::ServerProcess;

pub struct BenchOptions {
    /// Thermostats holding subscribes for figures 2–6.
    pub thermostats: usize,
    /// Commands timed to their push, and the concurrent clients sending them.
    pub commands: usize,
    pub commanders: usize,
    /// Seconds of each throughput run.
    pub load_seconds: u64,
    /// Held subscribes and seconds of the idle-CPU figure.
    pub idle_thermostats: usize,
    pub idle_seconds: u64,
    /// The executable run as the server. The clients and simulated thermostats run in this
    /// process, so two builds are measured by the same load.
    pub server: PathBuf,
}

/// Concurrent keep-alive clients of the throughput figures.
const CLIENTS: usize = 8;

/// Every simulated thermostat connects from 127.0.0.1: the per-address connection cap (64 by
/// default) is lifted to its most, so the listener's total (sized from the descriptor limit,
/// `http::admission`) bounds the held fleets, and the cap of thermostats new to hearth one
/// address may add (4 a day) is lifted.
const ONE_ADDRESS: &[&str] = &[
    "--max-connections-per-client",
    "65535",
    "--max-new-thermostats-per-client",
    "0",
];

pub fn run(opts: &BenchOptions) -> Result<Report, String> {
    let exe = &opts.server;
    let dir = TempDir::new("main")?;
    let mut server = ServerProcess::start_with(exe, &dir.0, ONE_ADDRESS)
        .map_err(|log| format!("the server did not start:\n{log}"))?;
    thread::sleep(Duration::from_secs(2));
    let idle_rss_kb = server.status_field("VmRSS:").ok_or("no VmRSS")?;

    let origin = format!("http://{}", server.device);
    let fleet = HeldFleet::start(&origin, "02AA01AC99", opts.thermostats)?;
    thread::sleep(Duration::from_secs(12));
    let held_rss_kb = server.status_field("VmRSS:").ok_or("no VmRSS")?;
    let held_threads = server.status_field("Threads:").unwrap_or(0);
    let mut pushes = load::timed_commands(&server, &fleet, opts.commands, opts.commanders)
        .map_err(|e| failed("command -> push", &e, &server))?;
    let serials = fleet.serials.clone();
    fleet.stop();
    server
        .terminate()
        .map_err(|e| format!("stopping the server: {e}"))?;
    // The start-up measured next is the server's alone.
    fleet.finish(Duration::from_secs(30));

    let (server, startup) = load::start_and_time(exe, &dir.0)?;
    let commands = load::command_load(&server, &serials, CLIENTS, opts.load_seconds)
        .map_err(|e| failed("durable commands", &e, &server))?;
    let mut status = load::status_load(&server, &serials, CLIENTS, opts.load_seconds)
        .map_err(|e| failed("GET /status", &e, &server))?;
    let health = load::health_load(&server, CLIENTS, opts.load_seconds)
        .map_err(|e| failed("GET /health", &e, &server))?;
    drop(server);

    let idle_dir = TempDir::new("idle")?;
    let server = ServerProcess::start_with(exe, &idle_dir.0, ONE_ADDRESS)
        .map_err(|log| format!("the server did not start:\n{log}"))?;
    let origin = format!("http://{}", server.device);
    let idle_fleet = HeldFleet::start(&origin, "02AA01AC97", opts.idle_thermostats)?;
    thread::sleep(Duration::from_secs(6));
    let idle_cpu = load::idle_cpu(&server, opts.idle_seconds)?;
    drop(idle_fleet);
    drop(server);

    let push_us = &mut pushes.latencies;
    push_us.sort_unstable();
    status.latencies.sort_unstable();
    Ok(Report {
        idle_rss_kb,
        held_thermostats: opts.thermostats,
        held_rss_kb,
        held_threads,
        commands_timed: push_us.len(),
        commanders: opts.commanders,
        push_p50_us: quantile(push_us, 0.5),
        push_p99_us: quantile(push_us, 0.99),
        push_max_us: push_us.last().copied().unwrap_or(0),
        pushes_per_sec: pushes.per_sec.round() as u64,
        push_server_cpu_us: pushes.server_cpu_us,
        push_bench_cpu_us: pushes.bench_cpu_us,
        clients: CLIENTS,
        load_seconds: opts.load_seconds,
        commands_per_sec: commands.per_sec.round() as u64,
        command_cpu_us: commands.server_cpu_us,
        status_per_sec: status.per_sec.round() as u64,
        status_p99_us: quantile(&status.latencies, 0.99),
        status_cpu_us: status.server_cpu_us,
        health_per_sec: health.per_sec.round() as u64,
        health_cpu_us: health.server_cpu_us,
        startup_ms: startup.as_secs_f64() * 1000.0,
        idle_held: opts.idle_thermostats,
        idle_seconds: opts.idle_seconds,
        idle_cpu_ms: idle_cpu.as_secs_f64() * 1000.0,
    })
}

/// A failed measurement's error, naming it, with the end of the server's log.
fn failed(what: &str, error: &str, server: &ServerProcess) -> String {
    let log = server.log();
    let lines: Vec<&str> = log.lines().collect();
    let tail = &lines[lines.len().saturating_sub(20)..];
    format!(
        "{what}: {error}\nthe server's log ends:\n{}",
        tail.join("\n")
    )
}

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

#[cfg(test)]
mod tests {
    use super::quantile;

    #[test]
    fn quantiles_pick_the_nearest_rank() {
        let v: Vec<u64> = (1..=200).collect();
        assert_eq!(quantile(&v, 0.5), 100);
        assert_eq!(quantile(&v, 0.99), 198);
        assert_eq!(quantile(&[7], 0.99), 7);
        assert_eq!(quantile(&[], 0.5), 0);
    }
}
