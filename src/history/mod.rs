//! Temperature history: per thermostat, a sample every `HISTORY_INTERVAL_SECONDS` (300 by
//! default, on the clock's multiples of it) and one whenever its HVAC state (heating, cooling,
//! fan) changes. Samples live on disk in `DATA_DIR/history/` (see [`mod@file`] for the bounds),
//! not in memory, so a thousand thermostats cost the recorder a few bytes each. Like the rest
//! of the data directory, the files are readable only by hearth's user (they show when a home
//! is occupied).
//!
//! Periodic samples are taken only of thermostats that are available (seen within
//! `AVAILABILITY_TIMEOUT_SECONDS`): a silent thermostat's last reading is not news, and the
//! chart shows the gap. A removed thermostat keeps operating and keeps its history (nothing
//! deletes a thermostat any more: see [`mod@crate::accounts::release`]); an older hearth deleted
//! a thermostat's history with it.
//!
//! The same thread accrues the [energy history](crate::energy) from the same change events
//! (also target and away changes) and samples, and writes it for every thermostat at once:
//! once a minute, after the events waiting when a run starts or stops, and at shutdown.

pub mod file;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::{self, JoinHandle};

use crossbeam_channel::{Receiver, select};
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::energy;
use crate::hub::ChangeEvent;
use crate::presence::Availability;
use crate::state::State;
use crate::thermostat::reading::{Reading, Targets};
use crate::util::clock::Stopwatch;
use crate::util::shutdown::Shutdown;

use file::Segment;

/// The directory under `DATA_DIR`.
pub const DIR: &str = "history";

/// What the recorder reads of the running server (the server's `App`): its narrow view.
pub trait Context: Send + Sync {
    fn config(&self) -> &Config;
    fn state(&self) -> &State;
    /// Each thermostat's live day of energy history, which the recorder keeps.
    fn energy(&self) -> &energy::Live;
    /// Whether a thermostat is available (`holding`: it holds a subscribe now).
    fn availability(&self, serial: &str, holding: bool) -> Availability;
    /// A thermostat's reading now, its availability given.
    fn reading_with(&self, serial: &str, availability: Availability) -> Option<Arc<Reading>>;
}
/// `GET /api/history`'s longest period, in hours.
pub const MAX_HOURS: i64 = 168;

/// One moment of a thermostat, in Celsius. `t` is Unix seconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sample {
    pub t: i64,
    pub temp: Option<f64>,
    pub target: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub humidity: Option<f64>,
    pub mode: Option<String>,
    pub heating: bool,
    pub cooling: bool,
    pub fan: bool,
}

impl Sample {
    /// From a thermostat's reading (so history reads a thermostat as every surface does):
    /// every field decided (see [`crate::thermostat::reading`]).
    pub fn of(reading: &Reading, t: i64) -> Sample {
        let Reading {
            serial: _,
            api_key: _,
            availability: _,
            name: _,
            room,
            targets: Targets { target, high, low },
            humidity,
            target_humidity: _,
            target_humidity_enabled: _,
            mode,
            hvac,
            fan: _,
            eco: _,
            is_online: _,
            has_leaf: _,
            scale: _,
            capabilities: _,
            safety: _,
            diagnostics: _,
            structure_id: _,
            away: _,
            sensed_away: _,
            schedule_mode: _,
            lock: _,
            bounds: _,
            outside: _,
            time_zone: _,
            battery_volts: _,
            battery_percent: _,
            reported: _,
            change: _,
            course: _,
        } = reading;
        Sample {
            t,
            temp: room.as_f64(),
            target: target.as_f64(),
            low: low.as_f64(),
            high: high.as_f64(),
            humidity: humidity.as_f64(),
            mode: mode.as_str().map(str::to_string),
            heating: hvac.heating(),
            cooling: hvac.cooling(),
            fan: hvac.fan,
        }
    }

    fn hvac(&self) -> (bool, bool, bool) {
        (self.heating, self.cooling, self.fan)
    }
}

/// A known thermostat's reading now.
fn reading(app: &dyn Context, serial: &str) -> Option<Arc<Reading>> {
    let holding = app.state().hub().subscriptions_of(serial) > 0;
    app.reading_with(serial, app.availability(serial, holding))
}

/// A known thermostat's reading now, and the time (ms).
fn reading_now(app: &dyn Context, serial: &str) -> Option<(Arc<Reading>, i64)> {
    let now_ms = app.config().clock.now_ms();
    Some((reading(app, serial)?, now_ms))
}

/// The sample of a reading, if it reports a temperature.
fn sample_of(reading: &Reading, now_ms: i64) -> Option<Sample> {
    Some(Sample::of(reading, now_ms.div_euclid(1000))).filter(|s| s.temp.is_some())
}

/// Seconds of heating and of cooling in `samples` (oldest first): each sample's state is
/// counted until the next one, but never for more than two intervals (a longer gap means
/// nothing was known), and the last one until `now`, for at most one interval.
pub fn run_totals(samples: &[Sample], interval_secs: i64, now: i64) -> (i64, i64) {
    let (mut heating, mut cooling) = (0, 0);
    for (i, s) in samples.iter().enumerate() {
        let span = match samples.get(i + 1) {
            Some(next) => (next.t - s.t).clamp(0, 2 * interval_secs),
            None => (now - s.t).clamp(0, interval_secs),
        };
        heating += if s.heating { span } else { 0 };
        cooling += if s.cooling { span } else { 0 };
    }
    (heating, cooling)
}

/// The structure's time zone of a thermostat, as its reading has it.
fn time_zone(app: &dyn Context, serial: &str) -> Option<String> {
    reading(app, serial)?.time_zone.clone()
}

/// At most how many change events are counted before the energy history's runs that started
/// or stopped in them are written ([`energy::Accrual::commit`]).
const CHANGES_PER_COMMIT: usize = 256;

/// The history's directory in a data directory.
pub fn dir(data_dir: &std::path::Path) -> PathBuf {
    data_dir.join(DIR)
}

/// The recorder's thread, which runs until the shutdown signal it was started with.
pub struct Recorder {
    handle: JoinHandle<()>,
}

impl Recorder {
    pub fn start(app: &Arc<dyn Context>, shutdown: &Shutdown) -> std::io::Result<Recorder> {
        let dir = dir(&app.config().data_dir);
        crate::store::files::create_private_dir(&dir)?;
        let stopped = shutdown.receiver();
        let settled = Arc::new(RwLock::new(HashSet::new()));
        let energy_dir = energy::dir(&app.config().data_dir);
        // Not fatal to the history: each write of the energy history tries again.
        if let Err(e) = crate::store::files::create_private_dir(&energy_dir) {
            log::warn!("energy history: {}: {e}", energy_dir.display());
        }
        let interval_ms = app.config().history_interval.as_millis().max(1000) as i64;
        let run = Run {
            app: Arc::clone(app),
            dir,
            known: HashMap::new(),
            settled: Arc::clone(&settled),
            energy: energy::Accrual::new(
                app.config().zoneinfo.clone(),
                energy::horizon_ms(interval_ms),
                app.config().energy_keep_days,
            ),
        };
        let changes = app.state().hub().watch_if(Box::new(move |e: &ChangeEvent| {
            may_matter(e, |serial| settled.read().contains(serial)) || energy::may_matter(e)
        }));
        let handle = thread::Builder::new()
            .name("history".into())
            .stack_size(256 * 1024)
            .spawn(move || run.run(changes, stopped))?;
        Ok(Recorder { handle })
    }

    /// After the shutdown signal: waits for the thread to end.
    pub fn join(self) {
        let _ = self.handle.join();
    }
}

/// What the recorder remembers of a thermostat: its current segment (once looked at) and
/// the HVAC state it last recorded.
#[derive(Default)]
struct Known {
    segment: Option<Segment>,
    hvac: Option<(bool, bool, bool)>,
}

struct Run {
    app: Arc<dyn Context>,
    dir: PathBuf,
    known: HashMap<String, Known>,
    /// The serials whose HVAC state is known (recorded since start), shared with the filter
    /// of the changes the recorder is woken for.
    settled: Arc<RwLock<HashSet<String>>>,
    /// The energy history's meters, observed on the same events and samples.
    energy: energy::Accrual,
}

/// Whether a change may be worth a sample: one to a thermostat's `shared` or `device` bucket
/// that changes an `hvac_*` field (the HVAC flags are those fields, so a reading or
/// a setpoint cannot change them), or comes before its HVAC state is known (`settled`).
/// Setpoints and readings are left to the periodic samples.
fn may_matter(event: &ChangeEvent, settled: impl Fn(&str) -> bool) -> bool {
    let bucket = event.change.key.strip_suffix(event.serial.as_str());
    matches!(bucket, Some("shared." | "device."))
        && (event.change.changed.iter().any(|f| f.starts_with("hvac_")) || !settled(&event.serial))
}

impl Run {
    fn run(mut self, changes: Receiver<Arc<ChangeEvent>>, stopped: Receiver<()>) {
        let interval_ms = self.app.config().history_interval.as_millis().max(1000) as i64;
        // The next multiple of the interval on the clock. Kept, not recomputed on each event,
        // so a steady stream of changes can never push the periodic sample past its time.
        let next_due = |now: i64| (now.div_euclid(interval_ms) + 1) * interval_ms;
        // The server's clock; a manual clock's moves wake this loop to look again.
        let clock = self.app.config().clock.clone();
        let moved = clock.moves();
        let mut due = next_due(clock.now_ms());
        // The energy history's live days are written on the minute.
        let next_flush = |now: i64| (now.div_euclid(energy::FLUSH_MS) + 1) * energy::FLUSH_MS;
        let mut flush_due = next_flush(clock.now_ms());
        loop {
            let now = clock.now_ms();
            // The clock stepped back: the due times are reckoned again from the new time.
            if due - now > interval_ms {
                due = next_due(now);
            }
            if flush_due - now > energy::FLUSH_MS {
                flush_due = next_flush(now);
            }
            if now >= due {
                self.sample_all();
                self.energy.commit(self.app.energy());
                // From the time sampled for, as the flush below: a clock moved while sampling
                // (a test's, as soon as it sees the sample) is sampled for at once, not skipped.
                due = next_due(now);
                continue;
            }
            if now >= flush_due {
                let app = &self.app;
                self.energy
                    .flush(app.energy(), now, |serial| time_zone(app.as_ref(), serial));
                self.energy.tidy(app.energy());
                // From the time flushed for: a clock moved meanwhile is flushed for at once.
                flush_due = next_flush(now);
                continue;
            }
            select! {
                recv(stopped) -> _ => break,
                recv(changes) -> event => match event {
                    Ok(event) => {
                        self.on_change(&event);
                        // The events already waiting too, then one write for the runs that
                        // started or stopped in any of them.
                        for event in changes.try_iter().take(CHANGES_PER_COMMIT) {
                            self.on_change(&event);
                        }
                        self.energy.commit(self.app.energy());
                    }
                    Err(_) => break,
                },
                recv(moved) -> _ => {}
                default(clock.wait_time_ms(due.min(flush_due))) => {}
            }
        }
        // A clean stop keeps the energy history to the moment.
        self.energy.flush_at_stop(self.app.energy(), clock.now_ms());
    }

    fn on_change(&mut self, event: &ChangeEvent) {
        let serial = &event.serial;
        let last = self.known.get(serial).and_then(|k| k.hvac);
        // The same rule as the filter the hub applies, with this thread's own knowledge.
        let for_history = may_matter(event, |_| last.is_some());
        if !for_history && !energy::may_matter(event) {
            return;
        }
        let Some((reading, now_ms)) = reading_now(self.app.as_ref(), serial) else {
            return;
        };
        self.energy.observe(
            self.app.energy(),
            &reading,
            now_ms,
            false,
            energy::changes_target(event),
        );
        if !for_history {
            return;
        }
        if let Some(sample) = sample_of(&reading, now_ms) {
            if last != Some(sample.hvac()) {
                self.record(serial, &sample);
            }
        }
    }

    fn sample_all(&mut self) {
        let started = Stopwatch::start();
        let counts = self.app.state().hub().subscription_counts();
        let mut sampled = 0;
        for serial in self.app.state().serials() {
            let holding = counts.get(&serial).is_some_and(|n| *n > 0);
            let availability = self.app.availability(&serial, holding);
            if !availability.available {
                continue;
            }
            let now_ms = self.app.config().clock.now_ms();
            let Some(reading) = self.app.reading_with(&serial, availability) else {
                continue;
            };
            self.energy
                .observe(self.app.energy(), &reading, now_ms, true, false);
            if let Some(sample) = sample_of(&reading, now_ms) {
                self.record(&serial, &sample);
                sampled += 1;
            }
        }
        log::debug!(
            "history: sampled {sampled} thermostats in {} ms",
            started.elapsed().as_millis()
        );
    }

    fn record(&mut self, serial: &str, sample: &Sample) {
        let known = self.known.entry(serial.to_string()).or_default();
        let segment = match known.segment {
            Some(s) => s,
            None => match file::inspect(&self.dir, serial) {
                Ok(s) => s,
                Err(e) => {
                    log::warn!("history of {serial}: {e}");
                    return;
                }
            },
        };
        match file::append(&self.dir, serial, segment, sample) {
            Ok(segment) => {
                known.segment = Some(segment);
                if known.hvac.is_none() {
                    self.settled.write().insert(serial.to_string());
                }
                known.hvac = Some(sample.hvac());
            }
            Err(e) => {
                // Looked at afresh next time, in case the file was changed under us.
                known.segment = None;
                log::warn!("could not record the history of {serial}: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::{BucketChange, Origin};
    use serde_json::json;

    #[test]
    fn the_recorder_is_woken_only_for_changes_that_may_matter() {
        let event = |key: &str, changed: &[&str]| ChangeEvent {
            serial: "S1".into(),
            origin: Origin::Device,
            change: BucketChange {
                key: key.into(),
                revision: 1,
                timestamp: 1,
                changed: changed.iter().map(|f| f.to_string()).collect(),
            },
        };
        let known = |_: &str| true;
        let unknown = |_: &str| false;
        let setpoint = event("shared.S1", &["target_temperature"]);
        assert!(!may_matter(&setpoint, known));
        assert!(may_matter(&setpoint, unknown));
        assert!(may_matter(
            &event("shared.S1", &["hvac_heater_state"]),
            known
        ));
        assert!(!may_matter(&event("schedule.S1", &["hvac_x"]), unknown));
        assert!(!may_matter(&event("structure.owner", &["away"]), unknown));
    }

    fn at(t: i64, heating: bool, cooling: bool) -> Sample {
        Sample {
            t,
            heating,
            cooling,
            ..Sample::default()
        }
    }

    #[test]
    fn run_totals_count_until_the_next_sample_and_cap_gaps() {
        let samples = [
            at(0, true, false),
            at(300, false, false),
            at(600, false, true),
            // A gap of an hour: only two intervals of cooling count.
            at(4200, true, false),
        ];
        assert_eq!(run_totals(&samples, 300, 4300), (300 + 100, 600));
        // The last sample counts for at most one interval.
        assert_eq!(run_totals(&samples, 300, 100_000), (300 + 300, 600));
        assert_eq!(run_totals(&[], 300, 10), (0, 0));
    }

    #[test]
    fn a_sample_reads_the_reading() {
        let reading = crate::thermostat::reading::tests::reading(
            json!({"current_temperature": 19.5, "target_temperature": 21.0,
                   "target_temperature_high": 24.0, "target_temperature_type": "heat",
                   "hvac_heater_state": false, "hvac_aux_heater_state": true, "hvac_fan_state": true}),
            json!({"current_humidity": 41}),
        );
        let s = Sample::of(&reading, 42);
        assert_eq!(
            s,
            Sample {
                t: 42,
                temp: Some(19.5),
                target: Some(21.0),
                low: None,
                high: Some(24.0),
                humidity: Some(41.0),
                mode: Some("heat".into()),
                heating: true,
                cooling: false,
                fan: true,
            }
        );
    }
}
