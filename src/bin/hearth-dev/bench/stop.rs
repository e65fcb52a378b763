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

use super::fleet::HeldFleet;
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
             calls over the stop               {}",
            self.thermostats,
            ms(&self.after_flush_ms),
            ms(&self.before_flush_ms),
            calls(&self.minute_calls),
            calls(&self.stop_calls),
        )
    }
}

pub fn run(opts: &Options) -> Result<Figures, String> {
    let mut figures = Figures {
        thermostats: opts.thermostats,
        after_flush_ms: Vec::new(),
        before_flush_ms: Vec::new(),
        minute_calls: Vec::new(),
        stop_calls: Vec::new(),
    };
    for _ in 0..opts.trials {
        figures
            .after_flush_ms
            .push(timed_stop(&opts.server, opts.thermostats, AFTER_S)?);
        figures
            .before_flush_ms
            .push(timed_stop(&opts.server, opts.thermostats, 60 - BEFORE_S)?);
    }
    if opts.strace {
        (figures.minute_calls, figures.stop_calls) = traced(&opts.server, opts.thermostats)?;
    }
    Ok(figures)
}

/// A server holding `n` thermostats with their fans running, every one counted and flushed
/// once, at `second` past a minute: (the server, its fleet, its data directory).
fn settled(
    exe: &Path,
    n: usize,
    second: u64,
) -> Result<(ServerProcess, HeldFleet, TempDir), String> {
    let dir = TempDir::new("stop")?;
    let server = ServerProcess::start_with(exe, &dir.0, ONE_ADDRESS)
        .map_err(|log| format!("the server did not start:\n{log}"))?;
    let origin = format!("http://{}", server.device);
    let fleet = HeldFleet::start_with(&origin, "02AA01AC96", n, &|sim| {
        sim.report("shared", "hvac_fan_state", json!(true));
    })?;
    // The next minute's flush writes every thermostat for the first time (making its files);
    // the one after is the steady state.
    sleep_until_second(second, Duration::from_secs(65));
    Ok((server, fleet, dir))
}

/// SIGTERM at `second` past a minute: ms to the server's exit.
fn timed_stop(exe: &Path, n: usize, second: u64) -> Result<f64, String> {
    let (server, fleet, _dir) = settled(exe, n, second)?;
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
    Ok(ms)
}

/// The calls of one minute and of the stop, counted by strace.
#[allow(clippy::type_complexity)]
fn traced(exe: &Path, n: usize) -> Result<(Vec<(String, u64)>, Vec<(String, u64)>), String> {
    let (server, fleet, dir) = settled(exe, n, 5)?;
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
