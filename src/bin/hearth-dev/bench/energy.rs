//! `hearth-dev bench-energy`: what the energy history costs, measured in this process on the
//! library's own accrual (`hearth::energy::Accrual`, as the history recorder drives it), and
//! the idle RSS of a `hearth serve` child:
//!
//! 1. CPU per upload: N thermostats' status records observed as the recorder observes a change
//!    event (`Accrual::observe`, not a periodic sample), heating and fan turning on and off and
//!    a target changing every few uploads, simulated time advancing 30 s per round, each
//!    followed by `Accrual::commit` as the recorder does after an event that came alone (a
//!    run that started or stopped is written then: one append and fdatasync). CPU time
//!    of this thread (`/proc/thread-self/schedstat`, nanoseconds; not wall time: the machine
//!    may be shared), divided by the observations. The status record itself is not built here
//!    (the recorder builds it for the history too).
//! 2. CPU per flush: the minute's `Accrual::flush` of N thermostats whose day changed (their
//!    live rows appended to the journal with one fdatasync), per thermostat; CPU only, the
//!    fsync's wait is not counted.
//! 3. Store growth: 10 thermostats run for D simulated days (an upload every 10 minutes, a
//!    sample every 5, a flush every hour): the finished days' file (`<serial>.days`) per
//!    thermostat per day, and the live row's line in the journal (rewritten, not growing).
//! 4. Idle RSS (VmRSS) of `hearth serve` 2 s after start, fresh data directory, default
//!    configuration, as `hearth-dev bench` measures it.

use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use hearth::energy::{Accrual, Live};
use hearth::process::ServerProcess;
use hearth::state::Fields;
use hearth::thermostat::{self, Availability, NoWeather, Reading, View};
use serde_json::{Value, json};

use super::TempDir;

pub struct Options {
    pub thermostats: usize,
    pub uploads: usize,
    pub days: i64,
    pub server: PathBuf,
}

#[derive(Debug, serde::Serialize)]
pub struct Figures {
    pub thermostats: usize,
    pub uploads_timed: usize,
    pub cpu_ns_per_upload: u64,
    pub flushes_timed: usize,
    pub cpu_us_per_thermostat_flush: u64,
    pub days_simulated: i64,
    pub bytes_per_thermostat_per_day: f64,
    pub live_row_bytes: u64,
    pub idle_rss_kb: u64,
}

/// 2026-01-05 00:00 UTC, a Monday: where simulated time starts.
const START_MS: i64 = 1_767_571_200_000;
/// The recorder's horizon at the default history interval (300 s).
const HORIZON_MS: i64 = 600_000;

pub fn run(opts: &Options) -> Result<Figures, String> {
    let (uploads_timed, cpu_ns_per_upload) = per_upload(opts.thermostats, opts.uploads)?;
    let (flushes_timed, cpu_us_per_thermostat_flush) = per_flush(opts.thermostats)?;
    let (bytes_per_thermostat_per_day, live_row_bytes) = growth(opts.days)?;
    let idle_rss_kb = idle_rss(&opts.server)?;
    Ok(Figures {
        thermostats: opts.thermostats,
        uploads_timed,
        cpu_ns_per_upload,
        flushes_timed,
        cpu_us_per_thermostat_flush,
        days_simulated: opts.days,
        bytes_per_thermostat_per_day,
        live_row_bytes,
        idle_rss_kb,
    })
}

impl Figures {
    pub fn table(&self) -> String {
        format!(
            "energy accrual, {} thermostats\n\
             CPU per upload (observe)          {} ns ({} uploads)\n\
             CPU per thermostat per flush      {} us ({} flushes)\n\
             store growth                      {:.1} bytes per thermostat per day ({} days)\n\
             live row (a journal line each)    {} bytes\n\
             idle RSS (VmRSS, 2 s after start) {} kB",
            self.thermostats,
            self.cpu_ns_per_upload,
            self.uploads_timed,
            self.cpu_us_per_thermostat_flush,
            self.flushes_timed,
            self.bytes_per_thermostat_per_day,
            self.days_simulated,
            self.live_row_bytes,
            self.idle_rss_kb
        )
    }
}

/// CPU time this thread has used, in nanoseconds (the scheduler's own count; the tick-based
/// `/proc/thread-self/stat` is the fallback, at 10 ms).
fn thread_cpu_ns() -> Result<u64, String> {
    if let Ok(text) = std::fs::read_to_string("/proc/thread-self/schedstat") {
        if let Some(ns) = text.split_whitespace().next().and_then(|f| f.parse().ok()) {
            return Ok(ns);
        }
    }
    let cpu = hearth::process::cpu_time_of("thread-self").ok_or("no CPU time for this thread")?;
    Ok(u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX))
}

fn serial(i: usize) -> String {
    format!("02AA01AC98{i:06}")
}

/// A thermostat's reading as the recorder sees it after an upload: round `r` of thermostat
/// `i`, in Berlin, 8.5 °C outside.
fn record(i: usize, r: usize) -> Reading {
    let heating = (r + i) % 6 < 3;
    let target = if (r / 4) % 2 == 0 { 20.5 } else { 21.0 };
    let shared = json!({
        "current_temperature": 19.5 + (r % 7) as f64 * 0.25,
        "target_temperature": target,
        "target_temperature_low": 19.0,
        "target_temperature_high": 24.0,
        "hvac_heater_state": heating,
        "hvac_fan_state": heating || r % 5 == 0,
    });
    let device = json!({"time_zone": "Europe/Berlin"});
    let fields = |v: &Value| v.as_object().map(Fields::from_map);
    let view = View {
        serial: serial(i),
        shared: fields(&shared),
        device: fields(&device),
        ..View::default()
    };
    let seen = Availability {
        available: true,
        last_seen_ms: None,
    };
    let mut reading = thermostat::read(
        &view,
        seen,
        &NoWeather,
        &hearth::zone::Zone::utc(),
        START_MS,
    );
    reading.outside.weather = Some(8.5);
    reading
}

fn accrual() -> Accrual {
    Accrual::new(hearth::config::ZONEINFO.into(), HORIZON_MS, 0)
}

/// The zone of every thermostat's structure (as their readings have it).
fn zone(_: &str) -> Option<String> {
    Some("Europe/Berlin".into())
}

/// (observations timed, CPU ns each).
fn per_upload(thermostats: usize, uploads: usize) -> Result<(usize, u64), String> {
    let dir = TempDir::new("energy-cpu")?;
    let (live, mut acc) = (Live::new(dir.0.clone()), accrual());
    let records: Vec<Vec<Reading>> = (0..thermostats)
        .map(|i| (0..8).map(|r| record(i, r)).collect())
        .collect();
    // The first observation of each reads its stored day: not an upload's cost.
    for reading in &records {
        acc.observe(&live, &reading[0], START_MS, false, false);
    }
    let rounds = uploads.div_ceil(thermostats).max(1);
    let before = thread_cpu_ns()?;
    for r in 1..=rounds {
        let now = START_MS + r as i64 * 30_000;
        for reading in &records {
            acc.observe(&live, &reading[r % 8], now, false, r % 4 == 0);
            acc.commit(&live);
        }
    }
    let spent = thread_cpu_ns()? - before;
    let n = rounds * thermostats;
    Ok((n, spent / n as u64))
}

/// (flushes timed, CPU µs per thermostat flushed).
fn per_flush(thermostats: usize) -> Result<(usize, u64), String> {
    let dir = TempDir::new("energy-flush")?;
    let (live, mut acc) = (Live::new(dir.0.clone()), accrual());
    let flushes = 3;
    let mut spent = 0;
    for f in 0..=flushes {
        let now = START_MS + f as i64 * 60_000;
        for i in 0..thermostats {
            acc.observe(&live, &record(i, f), now, false, false);
        }
        let before = thread_cpu_ns()?;
        acc.flush(&live, now + 30_000, zone);
        // The first flush also makes the journal: not the steady state.
        if f > 0 {
            spent += thread_cpu_ns()? - before;
        }
    }
    let n = (flushes * thermostats) as u64;
    Ok((flushes, spent / n / 1000))
}

/// Bytes per thermostat per day of the finished days' file after `days` simulated days of 10
/// thermostats, and the bytes of each one's live row (its line in the journal).
fn growth(days: i64) -> Result<(f64, u64), String> {
    const N: usize = 10;
    let dir = TempDir::new("energy-growth")?;
    let (live, mut acc) = (Live::new(dir.0.clone()), accrual());
    let step = 300_000;
    let end = START_MS + days * 86_400_000;
    let mut now = START_MS;
    let mut r = 0;
    while now < end {
        for i in 0..N {
            // A sample every 5 minutes; an upload every other one.
            let upload = r % 2 == 0;
            let reading = record(i, r / 2);
            acc.observe(&live, &reading, now, true, false);
            if upload {
                acc.observe(&live, &reading, now, false, true);
            }
        }
        if now % 3_600_000 == 0 {
            acc.flush(&live, now, zone);
            acc.tidy(&live);
        }
        now += step;
        r += 1;
    }
    acc.flush(&live, end, zone);
    acc.tidy(&live);
    let bytes = |suffix: &str| -> Result<u64, String> {
        Ok(std::fs::read_dir(&dir.0)
            .map_err(|e| e.to_string())?
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(suffix))
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum())
    };
    // `days` local days have ended (simulated time starts at 01:00 in Berlin): one row each.
    let per_day = bytes(".days")? as f64 / N as f64 / days.max(1) as f64;
    // The journal's line of each thermostat's live row (its last line).
    let journal = std::fs::read_to_string(dir.0.join(hearth::energy::store::JOURNAL))
        .map_err(|e| e.to_string())?;
    let last: std::collections::HashMap<&str, usize> = journal
        .lines()
        .filter_map(|line| Some((line.split_once(' ')?.0, line.len() + 1)))
        .collect();
    Ok((per_day, last.values().sum::<usize>() as u64 / N as u64))
}

fn idle_rss(exe: &Path) -> Result<u64, String> {
    let dir = TempDir::new("energy-idle")?;
    let server = ServerProcess::start_with(exe, &dir.0, &[])
        .map_err(|log| format!("the server did not start:\n{log}"))?;
    thread::sleep(Duration::from_secs(2));
    server
        .status_field("VmRSS:")
        .ok_or_else(|| "no VmRSS".into())
}
