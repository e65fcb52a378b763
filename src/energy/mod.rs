//! Energy history: per thermostat and per local day, how long the heating, cooling, fan and
//! auxiliary heat ran, how long the home was away, the indoor average/min/max, and how many
//! times the target was changed. See docs/energy.md.
//!
//! Accrual rides on the history recorder's thread and its change events ([`crate::history`]):
//! each observation of a thermostat (an HVAC, away or target change, or a periodic sample)
//! counts the time since the last one with the state seen then, split at local midnight. The
//! state seen last counts for at most [`horizon_ms`] (two history intervals) without a new
//! observation, so a silent thermostat's runtime is not invented; nor is runtime during
//! hearth's downtime: after a start, counting begins at the first observation.

pub mod day;
pub mod report;
pub mod store;
pub mod zone;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use parking_lot::RwLock;
use serde_json::Value;

use crate::hub::ChangeEvent;
use crate::thermostat::{COOLING_FLAGS, HEATING_FLAGS};
use day::Day;
use zone::Zone;

/// The directory under `DATA_DIR`.
pub const DIR: &str = "energy";
/// How often a live day is written (and so the most a kill -9 loses).
pub const FLUSH_MS: i64 = 60_000;

/// The target fields whose change counts as one change of the target.
const TARGETS: [&str; 3] = [
    "target_temperature",
    "target_temperature_low",
    "target_temperature_high",
];

pub fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join(DIR)
}

/// The structure's time zone of a thermostat (its `time_zone`), naming its local days.
pub fn time_zone(state: &crate::state::State, serial: &str) -> Option<String> {
    let view = crate::thermostat::view(state, serial)?;
    view.device_field("time_zone")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Each thermostat's live day and its zone, for the API (written by the recorder only).
#[derive(Default)]
pub struct Live(RwLock<HashMap<String, (String, Day)>>);

impl Live {
    /// The live day of `serial` and the name of the zone it is kept in.
    pub fn get(&self, serial: &str) -> Option<(String, Day)> {
        self.0.read().get(serial).cloned()
    }

    fn set(&self, serial: &str, zone: &str, day: &Day) {
        self.0
            .write()
            .insert(serial.to_string(), (zone.to_string(), day.clone()));
    }
}

/// What is running, as the status record says.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Flags {
    pub heat: bool,
    pub cool: bool,
    pub fan: bool,
    pub aux: bool,
    pub away: bool,
}

impl Flags {
    pub fn from_record(record: &Value) -> Flags {
        let on = |f: &str| record["hvac"].get(f).and_then(Value::as_bool) == Some(true);
        Flags {
            // Auxiliary heat is counted apart from the heating.
            heat: HEATING_FLAGS.iter().any(|f| *f != "aux_heat" && on(f)),
            cool: COOLING_FLAGS.iter().any(|f| on(f)),
            fan: on("fan"),
            aux: on("aux_heat"),
            away: record["away"].as_bool() == Some(true),
        }
    }
}

/// Whether a change may matter to the energy history (beyond what history itself wakes for):
/// a target or away change.
pub fn may_matter(event: &ChangeEvent) -> bool {
    event
        .change
        .changed
        .iter()
        .any(|f| f == "away" || TARGETS.contains(&f.as_str()))
}

/// Whether `event` changes the target of its thermostat (counted as a change by hand: see
/// docs/energy.md for what cannot be told apart).
pub fn changes_target(event: &ChangeEvent) -> bool {
    event.change.key.strip_suffix(event.serial.as_str()) == Some("shared.")
        && event
            .change
            .changed
            .iter()
            .any(|f| TARGETS.contains(&f.as_str()))
}

/// One thermostat's accrual.
#[derive(Debug)]
pub struct Meter {
    pub zone: Zone,
    /// The zone name it was asked for (`zone` is UTC when that one could not be read).
    pub asked: Option<String>,
    pub day: Day,
    flags: Flags,
    /// When the thermostat was last observed, and up to when time is counted (ms).
    seen: i64,
    accrued: i64,
    /// Days finished and not yet written.
    pub finished: Vec<Day>,
    /// The day as last written, to write only what changed.
    written: Option<Day>,
    /// The targets last seen (a change to the same values, such as the thermostat confirming
    /// a write, is not another change).
    targets: Targets,
}

type Targets = [Option<f64>; 3];

fn targets(record: &Value) -> Targets {
    TARGETS.map(|f| record[f].as_f64())
}

impl Meter {
    /// A meter starting at `now`, carrying on `stored` (the live day's last flush) if it is
    /// today's, and finishing it if it is an earlier day's.
    pub fn start(zone: Zone, stored: Option<Day>, flags: Flags, now: i64) -> Meter {
        let today = zone.day_of(now);
        let mut finished = Vec::new();
        let day = match stored {
            Some(d) if d.date == today => d,
            Some(d) => {
                if d.date < today && !d.is_empty() {
                    finished.push(d);
                }
                Day::new(today)
            }
            None => Day::new(today),
        };
        Meter {
            asked: Some(zone.name.clone()),
            zone,
            written: Some(day.clone()),
            day,
            flags,
            seen: now,
            accrued: now,
            finished,
            targets: Targets::default(),
        }
    }

    /// Counts the time up to `now` with the state last seen (for at most `horizon` after it
    /// was seen), split at local midnight; rolls to `now`'s day.
    pub fn advance(&mut self, now: i64, horizon: i64) {
        let end = now.min(self.seen.saturating_add(horizon));
        while self.accrued < end {
            self.roll_to(self.zone.day_of(self.accrued));
            let stop = end.min(self.zone.next_midnight_ms(self.accrued));
            let span = stop - self.accrued;
            let f = self.flags;
            let d = &mut self.day;
            for (on, total) in [
                (f.heat, &mut d.heat_ms),
                (f.cool, &mut d.cool_ms),
                (f.fan, &mut d.fan_ms),
                (f.aux, &mut d.aux_ms),
                (f.away, &mut d.away_ms),
            ] {
                if on {
                    *total += span;
                }
            }
            self.accrued = stop;
        }
        // Time past the horizon is never counted later.
        self.accrued = self.accrued.max(now);
        self.roll_to(self.zone.day_of(now));
    }

    fn roll_to(&mut self, date: i64) {
        if date > self.day.date {
            let done = std::mem::replace(&mut self.day, Day::new(date));
            if !done.is_empty() {
                self.finished.push(done);
            }
        }
    }

    /// An observation at `now`: time so far counted with the old state, then the new one.
    pub fn observe(&mut self, flags: Flags, now: i64, horizon: i64) {
        self.advance(now, horizon);
        self.flags = flags;
        self.seen = self.seen.max(now);
    }

    /// The day when it changed since it was last written.
    pub fn unwritten(&self) -> Option<&Day> {
        (self.written.as_ref() != Some(&self.day)).then_some(&self.day)
    }

    pub fn mark_written(&mut self) {
        self.written = Some(self.day.clone());
    }
}

/// How long a state counts without a new observation: two history intervals (the periodic
/// samples observe every available thermostat once an interval), at least two minutes.
pub fn horizon_ms(history_interval_ms: i64) -> i64 {
    (2 * history_interval_ms).max(120_000)
}

/// The recorder's part: every thermostat's meter, written to `dir`.
pub struct Accrual {
    pub dir: PathBuf,
    pub zoneinfo: PathBuf,
    pub horizon: i64,
    /// `ENERGY_KEEP_DAYS`: 0 keeps every day.
    pub keep_days: u32,
    meters: HashMap<String, Meter>,
}

impl Accrual {
    pub fn new(dir: PathBuf, zoneinfo: PathBuf, horizon: i64, keep_days: u32) -> Accrual {
        Accrual {
            dir,
            zoneinfo,
            horizon,
            keep_days,
            meters: HashMap::new(),
        }
    }

    /// An observation of `serial`'s status `record` at `now` (ms; `time_zone` is asked for
    /// the structure's zone once, when the meter starts): `temp` adds its indoor
    /// reading (periodic samples only, so the average is over time); `target_change` (the
    /// event changed a target) counts one if the targets differ from those seen last.
    #[allow(clippy::too_many_arguments)]
    pub fn observe(
        &mut self,
        live: &Live,
        serial: &str,
        record: &Value,
        time_zone: impl FnOnce() -> Option<String>,
        now: i64,
        temp: bool,
        target_change: bool,
    ) {
        let flags = Flags::from_record(record);
        let horizon = self.horizon;
        let seen_targets = targets(record);
        let meter = match self.meters.get_mut(serial) {
            Some(m) => {
                m.observe(flags, now, horizon);
                if target_change && m.targets != seen_targets {
                    m.day.target_changes += 1;
                }
                m
            }
            // The first observation since the start: its targets are where counting starts.
            None => {
                let asked = time_zone();
                let zone = Zone::resolve(asked.as_deref(), &self.zoneinfo);
                let stored = store::read_today(&self.dir, serial).unwrap_or_else(|e| {
                    log::warn!("energy history of {serial}: {e}");
                    None
                });
                let mut meter = Meter::start(zone, stored, flags, now);
                meter.asked = asked;
                self.meters.entry(serial.to_string()).or_insert(meter)
            }
        };
        if temp {
            if let Some(t) = record["current_temperature"].as_f64() {
                meter.day.add_indoor(t);
            }
            if let Some(t) = record["outdoor_temperature"].as_f64() {
                meter.day.add_outdoor(t);
            }
        }
        meter.targets = seen_targets;
        live.set(serial, &meter.zone.name, &meter.day);
    }

    /// Every meter counted up to `now` and written where it changed (every minute, and at
    /// shutdown). `time_zone` gives each thermostat's zone now: a changed one applies from
    /// now on (the day so far keeps its date).
    pub fn flush(&mut self, live: &Live, now: i64, time_zone: impl Fn(&str) -> Option<String>) {
        let keep = i64::from(self.keep_days);
        for (serial, meter) in &mut self.meters {
            meter.advance(now, self.horizon);
            let wanted = time_zone(serial);
            if wanted != meter.asked {
                meter.zone = Zone::resolve(wanted.as_deref(), &self.zoneinfo);
                meter.asked = wanted;
                meter.advance(now, self.horizon);
            }
            let rolled = !meter.finished.is_empty();
            while let Some(done) = meter.finished.first() {
                match store::append_day(&self.dir, serial, done) {
                    Ok(()) => {
                        meter.finished.remove(0);
                    }
                    Err(e) => {
                        log::warn!("could not record the energy history of {serial}: {e}");
                        break;
                    }
                }
            }
            if rolled && keep > 0 {
                if let Err(e) = store::prune(&self.dir, serial, meter.day.date - keep + 1) {
                    log::warn!("could not prune the energy history of {serial}: {e}");
                }
            }
            if meter.unwritten().is_some() {
                match store::write_today(&self.dir, serial, &meter.day) {
                    Ok(()) => meter.mark_written(),
                    Err(e) => log::warn!("could not record the energy history of {serial}: {e}"),
                }
            }
            live.set(serial, &meter.zone.name, &meter.day);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;

    fn heating() -> Flags {
        Flags {
            heat: true,
            ..Flags::default()
        }
    }

    #[test]
    fn a_run_across_midnight_is_split() {
        let day0 = 20_000 * 24 * H;
        let mut m = Meter::start(Zone::utc(), None, heating(), day0 + 23 * H);
        m.observe(heating(), day0 + 24 * H + H / 2, 2 * H);
        assert_eq!(m.finished.len(), 1);
        assert_eq!(m.finished[0].heat_ms, H);
        assert_eq!(m.finished[0].date, 20_000);
        assert_eq!(m.day.date, 20_001);
        assert_eq!(m.day.heat_ms, H / 2);
    }

    #[test]
    fn each_flag_counts_its_own_time() {
        let all = Flags {
            heat: false,
            cool: true,
            fan: true,
            aux: true,
            away: true,
        };
        let mut m = Meter::start(Zone::utc(), None, all, 0);
        m.observe(
            Flags {
                fan: true,
                ..Flags::default()
            },
            H / 2,
            2 * H,
        );
        m.advance(H, 2 * H);
        let d = &m.day;
        assert_eq!(
            (d.heat_ms, d.cool_ms, d.aux_ms, d.away_ms),
            (0, H / 2, H / 2, H / 2)
        );
        assert_eq!(d.fan_ms, H);
    }

    #[test]
    fn a_state_counts_only_until_the_horizon() {
        let mut m = Meter::start(Zone::utc(), None, heating(), 0);
        m.advance(10 * H, H / 4);
        assert_eq!(m.day.heat_ms, H / 4);
        // Observed again later: the gap is not counted afterwards either.
        m.observe(Flags::default(), 11 * H, H / 4);
        assert_eq!(m.day.heat_ms, H / 4);
    }

    #[test]
    fn a_stored_day_carries_on_or_is_finished() {
        let mut stored = Day::new(0);
        stored.heat_ms = 5_000;
        let m = Meter::start(Zone::utc(), Some(stored.clone()), heating(), H);
        assert_eq!(m.day.heat_ms, 5_000);
        assert!(m.unwritten().is_none());
        let m = Meter::start(Zone::utc(), Some(stored), heating(), 25 * H);
        assert_eq!(m.finished.len(), 1);
        assert_eq!(m.day, Day::new(1));
    }

    #[test]
    fn flags_read_the_status_record() {
        let record = serde_json::json!({
            "away": true,
            "hvac": {"heater": false, "heat_x2": true, "aux_heat": true, "ac": false, "fan": true},
        });
        let f = Flags::from_record(&record);
        assert_eq!(
            f,
            Flags {
                heat: true,
                cool: false,
                fan: true,
                aux: true,
                away: true
            }
        );
    }

    /// A periodic sample adds the indoor and the outdoor reading of the status record (the
    /// weather hearth last had for the place); a change event adds neither.
    #[test]
    fn periodic_samples_carry_the_outdoor_reading() {
        let dir =
            std::env::temp_dir().join(format!("hearth-energy-outdoor-{}", std::process::id()));
        let mut accrual = Accrual::new(dir, PathBuf::from("/nonexistent"), 2 * H, 0);
        let live = Live::default();
        let record = |outdoor: Value| serde_json::json!({"current_temperature": 20.0, "outdoor_temperature": outdoor});
        let t0 = 20_000 * 86_400_000 + H;
        accrual.observe(
            &live,
            "S",
            &record(serde_json::json!(4.0)),
            || None,
            t0,
            true,
            false,
        );
        accrual.observe(
            &live,
            "S",
            &record(serde_json::json!(99.0)),
            || None,
            t0 + 1,
            false,
            false,
        );
        accrual.observe(
            &live,
            "S",
            &record(serde_json::json!(5.0)),
            || None,
            t0 + 2,
            true,
            false,
        );
        accrual.observe(
            &live,
            "S",
            &record(Value::Null),
            || None,
            t0 + 3,
            true,
            false,
        );
        let (zone, day) = live.get("S").expect("a live day");
        assert_eq!(zone, "UTC");
        assert_eq!(day.to_json()["outdoor_avg_c"], serde_json::json!(4.5));
        assert_eq!(day.to_json()["indoor_avg_c"], serde_json::json!(20.0));
    }
}
