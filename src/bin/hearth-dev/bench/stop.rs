//! `hearth-dev bench-stop`: how long `hearth serve` takes to stop (SIGTERM to its exit) while N
//! simulated thermostats hold subscribes with their fans running, so every thermostat's day of
//! energy history changes every minute and every one is to be written at the stop.
//!
//! The energy history is flushed on the wall clock's minute. Each trial is a fresh server and
//! fleet on a fresh data directory, left to run until one whole minute has been flushed with
//! every thermostat counted, then sent SIGTERM either [`AFTER_S`] seconds after a minute's
//! flush began or [`BEFORE_S`] seconds before the next one; the two cases alternate.
//!
//! With `--strace`, one more trial counts the server's `fsync`, `fdatasync` and `rename*` calls
//! (`strace -f -c`, attached to the running server) over one minute (one flush, from 5 s after
//! a minute to 5 s after the next) and over the stop. strace slows what it traces: that trial
//! is not timed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hearth::process::{ServerProcess, Signal};
use serde_json::json;

use super::fleet::{HeldFleet, Priority};
use super::{ONE_ADDRESS, TempDir};

/// SIGTERM this many seconds after the minute (its flush just written)...
pub const AFTER_S: u64 = 2;
/// ...or this many before the next one (a minute's accrual not yet written).
pub const BEFORE_S: u64 = 3;

/// The calls counted with `--strace`.
const SYNCS: &str = "fsync,fdatasync,rename,renameat,renameat2";

pub struct Options {
    pub thermostats: usize,
    pub trials: usize,
    pub strace: bool,
    pub server: PathBuf,
}

#[derive(Debug, serde::Serialize)]
pub struct Figures {
    pub thermostats: usize,
    /// SIGTERM to exit, ms, each trial.
    pub after_flush_ms: Vec<f64>,
    pub before_flush_ms: Vec<f64>,
    /// The server's resident memory before the fleet came and once it held every thermostat
    /// and a minute had been flushed (kB), and its threads then, each trial.
    pub idle_rss_kb: Vec<u64>,
    pub held_rss_kb: Vec<u64>,
    pub held_threads: Vec<u64>,
    /// The server's own account of each stop, in trial order (its log's "stopped in" line:
    /// the time of each stage), so a slow stop says where it went.
    pub stages: Vec<String>,
    /// The next start on the same data directory, to `/health` answering (ms), and what it
    /// loaded (its log's "loaded" line: the snapshot, and the journal records it replayed),
    /// each trial: what a stop that leaves the journal to the start costs there.
    pub restart_ms: Vec<f64>,
    pub loaded: Vec<String>,
    /// `strace -c`'s counts per call, over one minute and over the stop.
    pub minute_calls: Vec<(String, u64)>,
    pub stop_calls: Vec<(String, u64)>,
}

impl Figures {
    pub fn table(&self) -> String {
        let ms = |v: &[f64]| {
            v.iter()
                .map(|t| format!("{t:.0}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
        let calls = |v: &[(String, u64)]| {
            if v.is_empty() {
                return "(not counted: --strace)".to_string();
            }
            v.iter()
                .map(|(name, n)| format!("{name} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "SIGTERM to exit, {} held thermostats, fans running\n\
             {AFTER_S} s after a minute's flush      {} ms\n\
             {BEFORE_S} s before a minute's flush     {} ms\n\
             calls over one minute (one flush) {}\n\
             calls over the stop               {}\n\
             RSS before the fleet              {} kB\n\
             RSS with every one held           {} kB ({} per held thermostat)\n\
             threads with every one held       {}\n\
             the next start, to /health        {} ms\n\
             the server's stages, each trial:\n{}\n\
             what each next start loaded:\n{}",
            self.thermostats,
            ms(&self.after_flush_ms),
            ms(&self.before_flush_ms),
            calls(&self.minute_calls),
            calls(&self.stop_calls),
            list(&self.idle_rss_kb),
            list(&self.held_rss_kb),
            self.idle_rss_kb
                .iter()
                .zip(&self.held_rss_kb)
                .map(|(idle, held)| format!(
                    "{:.1} kB",
                    held.saturating_sub(*idle) as f64 / self.thermostats.max(1) as f64
                ))
                .collect::<Vec<_>>()
                .join(", "),
            list(&self.held_threads),
            ms(&self.restart_ms),
            self.stages.join("\n"),
            self.loaded.join("\n"),
        )
    }
}

pub fn run(opts: &Options) -> Result<Figures, String> {
    let mut figures = Figures {
        thermostats: opts.thermostats,
        after_flush_ms: Vec::new(),
        before_flush_ms: Vec::new(),
        idle_rss_kb: Vec::new(),
        held_rss_kb: Vec::new(),
        held_threads: Vec::new(),
        stages: Vec::new(),
        restart_ms: Vec::new(),
        loaded: Vec::new(),
        minute_calls: Vec::new(),
        stop_calls: Vec::new(),
    };
    for _ in 0..opts.trials {
        for (second, case) in [(AFTER_S, "after"), (60 - BEFORE_S, "before")] {
            let stop = timed_stop(&opts.server, opts.thermostats, second)?;
            if case == "after" {
                figures.after_flush_ms.push(stop.ms);
            } else {
                figures.before_flush_ms.push(stop.ms);
            }
            figures.idle_rss_kb.push(stop.idle_rss_kb);
            figures.held_rss_kb.push(stop.held_rss_kb);
            figures.held_threads.push(stop.held_threads);
            figures
                .stages
                .push(format!("  {case} a flush: {}", stop.stages));
            figures.restart_ms.push(stop.restart_ms);
            figures
                .loaded
                .push(format!("  {case} a flush: {}", stop.loaded));
        }
    }
    if opts.strace {
        (figures.minute_calls, figures.stop_calls) = traced(&opts.server, opts.thermostats)?;
    }
    Ok(figures)
}

/// A server holding `n` thermostats with their fans running, every one counted and flushed
/// once, at `second` past a minute: (the server, its fleet, its data directory, its RSS in kB
/// before the fleet came).
fn settled(
    exe: &Path,
    n: usize,
    second: u64,
) -> Result<(ServerProcess, HeldFleet, TempDir, u64), String> {
    let dir = TempDir::new("stop")?;
    let server = ServerProcess::start_with(exe, &dir.0, ONE_ADDRESS)
        .map_err(|log| format!("the server did not start:\n{log}"))?;
    let idle_rss_kb = server.status_field("VmRSS:").unwrap_or(0);
    let origin = format!("http://{}", server.device);
    let fleet = HeldFleet::start_with(
        &origin,
        "02AA01AC96",
        n,
        &|sim| sim.report("shared", "hvac_fan_state", json!(true)),
        Priority::Lowest,
    )?;
    // The next minute's flush writes every thermostat for the first time (making its files);
    // the one after is the steady state.
    sleep_until_second(second, Duration::from_secs(65));
    Ok((server, fleet, dir, idle_rss_kb))
}

/// One timed stop.
struct Stop {
    /// SIGTERM to exit.
    ms: f64,
    /// The server's own timing of its stages (its log's last "stopped in" line).
    stages: String,
    idle_rss_kb: u64,
    held_rss_kb: u64,
    held_threads: u64,
    /// The next start on the same data directory, to `/health` answering, and its log's
    /// "loaded" line.
    restart_ms: f64,
    loaded: String,
}

/// SIGTERM at `second` past a minute.
fn timed_stop(exe: &Path, n: usize, second: u64) -> Result<Stop, String> {
    let (mut server, fleet, dir, idle_rss_kb) = settled(exe, n, second)?;
    let held_rss_kb = server.status_field("VmRSS:").unwrap_or(0);
    let held_threads = server.status_field("Threads:").unwrap_or(0);
    // Told first, so the server's going is no problem to them.
    fleet.stop();
    let sent = Instant::now();
    let status = server
        .terminate()
        .map_err(|e| format!("stopping the server: {e}"))?;
    let ms = sent.elapsed().as_secs_f64() * 1000.0;
    fleet.finish(Duration::from_secs(30));
    if !status.success() {
        return Err(format!("the server exited with {status}"));
    }
    let stages = last_line_after(&server.log(), "stopped in ");
    let (mut again, restart) = super::load::start_and_time(exe, &dir.0)?;
    let loaded = last_line_after(&again.log(), "loaded ");
    again
        .terminate()
        .map_err(|e| format!("stopping the restarted server: {e}"))?;
    Ok(Stop {
        ms,
        stages,
        idle_rss_kb,
        held_rss_kb,
        held_threads,
        restart_ms: restart.as_secs_f64() * 1000.0,
        loaded,
    })
}

/// The calls of one minute and of the stop, counted by strace.
#[allow(clippy::type_complexity)]
fn traced(exe: &Path, n: usize) -> Result<(Vec<(String, u64)>, Vec<(String, u64)>), String> {
    let (mut server, fleet, dir, _) = settled(exe, n, 5)?;
    let out = dir.0.with_extension("strace");
    let minute = {
        let strace = attach(server.pid(), &out)?;
        sleep_until_second(5, Duration::from_secs(30));
        signal(&strace, Signal::INT);
        counts(strace, &out)?
    };
    let strace = attach(server.pid(), &out)?;
    fleet.stop();
    server
        .terminate()
        .map_err(|e| format!("stopping the server: {e}"))?;
    let stop = counts(strace, &out)?;
    fleet.finish(Duration::from_secs(30));
    let _ = std::fs::remove_file(&out);
    Ok((minute, stop))
}

/// `strace -f -c` attached to `pid` and every thread of it, its summary to `out`.
fn attach(pid: u32, out: &Path) -> Result<Child, String> {
    let child = Command::new("strace")
        .args(["-f", "-c", "-e", &format!("trace={SYNCS}"), "-o"])
        .arg(out)
        .args(["-p", &pid.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("could not run strace (apt-get install strace): {e}"))?;
    // Attached to every thread well before anything is counted.
    thread::sleep(Duration::from_secs(1));
    Ok(child)
}

fn signal(child: &Child, signal: Signal) {
    if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
        let _ = rustix::process::kill_process(pid, signal);
    }
}

/// strace's counts once it has ended: (call, calls), as its summary table lists them.
fn counts(mut strace: Child, out: &Path) -> Result<Vec<(String, u64)>, String> {
    strace.wait().map_err(|e| format!("strace: {e}"))?;
    let text = std::fs::read_to_string(out).map_err(|e| format!("strace's summary: {e}"))?;
    let mut calls = Vec::new();
    for line in text.lines() {
        // "% time  seconds  usecs/call  calls  [errors]  syscall"
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(name) = fields.last() else { continue };
        if SYNCS.split(',').any(|s| s == *name) {
            if let Some(n) = fields.get(3).and_then(|n| n.parse().ok()) {
                calls.push((name.to_string(), n));
            }
        }
    }
    Ok(calls)
}

/// Sleeps until the wall clock is at `second` past a minute, at least `min` from now.
fn sleep_until_second(second: u64, min: Duration) {
    let now_ms = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    };
    let earliest = now_ms() + min.as_millis() as u64;
    let minute = earliest / 60_000 * 60_000 + second * 1000;
    let target = if minute >= earliest {
        minute
    } else {
        minute + 60_000
    };
    thread::sleep(Duration::from_millis(target.saturating_sub(now_ms())));
}

/// What follows `marker` on the last line of `log` that has it.
fn last_line_after(log: &str, marker: &str) -> String {
    log.lines()
        .rev()
        .find_map(|l| l.split_once(marker).map(|(_, rest)| rest.to_string()))
        .unwrap_or_else(|| format!("(no \"{marker}\" line in its log)"))
}
