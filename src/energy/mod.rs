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
//!
//! What the meters count is written for every thermostat at once ([`Accrual::flush`], once a
//! minute and at shutdown; [`Accrual::commit`] when runs start or stop): one group write of
//! the energy journal, one fdatasync however many thermostats there are (see [`store`]). A
//! kill -9 loses at most the minute since the last one.

pub mod day;
pub mod live;
pub mod meter;
pub mod report;
pub mod store;
pub use crate::zone;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use day::Day;

use crate::hub::ChangeEvent;
use crate::thermostat::Reading;
pub use live::{Live, Totals};
pub use meter::{Flags, Meter, Observed};
use zone::{Source, Zone};

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

/// How long a state counts without a new observation: two history intervals (the periodic
/// samples observe every available thermostat once an interval), at least two minutes.
pub fn horizon_ms(history_interval_ms: i64) -> i64 {
    (2 * history_interval_ms).max(120_000)
}

/// How many thermostats' finished days move from the journal to their days files after a
/// minute's write ([`store::Store::move_finished`]): each costs an fsync or two, so after
/// midnight 1,000 thermostats' days move within about an hour, the fsyncs spread over it.
pub const MOVES_PER_MINUTE: usize = 16;

/// The recorder's part: every thermostat's meter, written to the [`Live`]'s store.
pub struct Accrual {
    pub zoneinfo: PathBuf,
    pub horizon: i64,
    /// `ENERGY_KEEP_DAYS`: 0 keeps every day.
    pub keep_days: u32,
    /// Boxed: a map of 1,000 thermostats has 2,048 slots, and a meter is some 600 bytes.
    meters: HashMap<String, Box<Meter>>,
    /// Some meter's run started or stopped since the last write.
    urgent: bool,
}

impl Accrual {
    pub fn new(zoneinfo: PathBuf, horizon: i64, keep_days: u32) -> Accrual {
        Accrual {
            zoneinfo,
            horizon,
            keep_days,
            meters: HashMap::new(),
            urgent: false,
        }
    }

    /// An observation of a thermostat's `reading` at `now` (ms; its time zone names the
    /// days of a meter that starts now): `temp` adds its indoor and outdoor readings (periodic
    /// samples only, so the averages are over time); `target_change` (the event changed a
    /// target) counts one if the targets differ from those seen last.
    pub fn observe(
        &mut self,
        live: &Live,
        reading: &Reading,
        now: i64,
        temp: bool,
        target_change: bool,
    ) {
        let seen = Observed::of(reading);
        let (serial, flags) = (seen.serial, seen.flags);
        let horizon = self.horizon;
        let seen_targets = seen.targets;
        let mut runs_changed = false;
        let meter = match self.meters.get_mut(serial) {
            Some(m) => {
                runs_changed = m.runs() != flags;
                m.observe(flags, now, horizon);
                if target_change && m.targets != seen_targets {
                    m.day.target_changes += 1;
                }
                m
            }
            // The first observation since the start: its targets are where counting starts.
            None => {
                // A history that cannot be read now (a full file table, an I/O error) is not
                // an empty one: starting from nothing would show its totals at zero and write
                // over today's row. The next observation tries again.
                let stored = match live.store().read_stored(serial) {
                    Ok(stored) => stored,
                    Err(e) => {
                        log::warn!("energy history of {serial}: {e}");
                        return;
                    }
                };
                let zone = resolve(&self.zoneinfo, serial, seen.time_zone);
                let meter = Meter::start(zone, stored, flags, now);
                self.meters
                    .entry(serial.to_string())
                    .or_insert(Box::new(meter))
            }
        };
        if temp {
            if let Some(t) = seen.indoor {
                meter.day.add_indoor(t);
            }
            if let Some(t) = seen.outdoor {
                meter.day.add_outdoor(t);
            }
        }
        meter.targets = seen_targets;
        // A run that starts or stops is written at the next commit, so the counters (which
        // show what is stored) move with it rather than at the next minute's write.
        if runs_changed {
            meter.urgent = true;
            self.urgent = true;
        }
        show(live, serial, meter);
    }

    /// Writes what the meters whose run started or stopped have not, in one group write: the
    /// recorder calls it once it has counted the events that were waiting.
    pub fn commit(&mut self, live: &Live) {
        if self.urgent {
            self.write(live, false);
        }
    }

    /// Every meter counted up to `now` and written where it changed, in one group write
    /// (every minute, and at shutdown). `time_zone` gives each thermostat's zone now: a
    /// changed one applies from now on (the day so far keeps its date).
    pub fn flush(&mut self, live: &Live, now: i64, time_zone: impl Fn(&str) -> Option<String>) {
        for (serial, meter) in &mut self.meters {
            meter.advance(now, self.horizon);
            let wanted = time_zone(serial).filter(|z| !z.is_empty());
            if wanted != meter.zone.named.structure {
                meter.zone = resolve(&self.zoneinfo, serial, wanted.as_deref());
                meter.advance(now, self.horizon);
            }
        }
        self.write(live, true);
    }

    /// The last write of a stop: as [`Accrual::flush`], with the zones the meters have (asked
    /// again at most a minute ago, and asked again at the next start). Asking each
    /// thermostat's zone builds its reading: with 10,000 held thermostats that was most of the
    /// stop's energy write.
    pub fn flush_at_stop(&mut self, live: &Live, now: i64) {
        for meter in self.meters.values_mut() {
            meter.advance(now, self.horizon);
        }
        self.write(live, true);
    }

    /// After a minute's write: some finished days moved to their days files (never at
    /// shutdown: the journal holds them).
    pub fn tidy(&self, live: &Live) {
        live.store().move_finished(self.keep_days, MOVES_PER_MINUTE);
    }

    /// Writes what the meters (`all`, or those whose run changed) have not: the days they
    /// finished, then their live days, in one group write; then tells the surfaces.
    fn write(&mut self, live: &Live, all: bool) {
        let rows: Vec<(&str, &Day)> = self
            .meters
            .iter()
            .filter(|(_, m)| all || m.urgent)
            .flat_map(|(serial, m)| {
                let days = m.finished.iter().chain(m.unwritten());
                days.map(move |day| (serial.as_str(), day))
            })
            .collect();
        let written = live.store().write(&rows);
        if let Err(e) = &written {
            log::warn!("could not record the energy history: {e}");
        }
        for (serial, meter) in &mut self.meters {
            if !all && !meter.urgent {
                continue;
            }
            meter.urgent = false;
            if written.is_ok() {
                meter.mark_stored();
            }
            show(live, serial, meter);
        }
        self.urgent = false;
    }
}

/// The zone `serial`'s days are counted in from now on (see [`Zone::resolve`]); a structure's
/// zone that cannot be resolved is logged, as its days are counted in UTC.
fn resolve(zoneinfo: &Path, serial: &str, time_zone: Option<&str>) -> Zone {
    let zone = Zone::resolve(time_zone, zoneinfo);
    if let (Source::Fallback, Some(asked)) = (zone.named.source, &zone.named.structure) {
        log::warn!(
            "{serial}: the time zone \"{}\" is unknown here: its energy days are counted in UTC",
            crate::util::logged(asked)
        );
    }
    zone
}

/// Tells the surfaces what `meter` has now: its live day (and the days it finished that are
/// not written yet), and its row and totals as stored.
fn show(live: &Live, serial: &str, meter: &Meter) {
    live.set(
        serial,
        &meter.zone.named,
        (&meter.day, &meter.finished),
        &meter.stored_today(),
        meter.stored_totals(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;

    /// A periodic sample adds the indoor and the outdoor reading (the weather hearth last had
    /// for the place); a change event adds neither.
    #[test]
    fn periodic_samples_carry_the_outdoor_reading() {
        let dir =
            std::env::temp_dir().join(format!("hearth-energy-outdoor-{}", std::process::id()));
        let mut accrual = Accrual::new(PathBuf::from("/nonexistent"), 2 * H, 0);
        let live = Live::new(dir);
        let reading = |outdoor: Option<f64>| {
            let mut r = crate::thermostat::reading::tests::reading(
                serde_json::json!({"current_temperature": 20.0}),
                serde_json::json!({}),
            );
            r.outside.weather = outdoor;
            r
        };
        let t0 = 20_000 * 86_400_000 + H;
        accrual.observe(&live, &reading(Some(4.0)), t0, true, false);
        accrual.observe(&live, &reading(Some(99.0)), t0 + 1, false, false);
        accrual.observe(&live, &reading(Some(5.0)), t0 + 2, true, false);
        accrual.observe(&live, &reading(None), t0 + 3, true, false);
        let (zone, day) = live.get("S").expect("a live day");
        assert_eq!(zone, Zone::utc().named);
        assert_eq!(day.to_json()["outdoor_avg_c"], serde_json::json!(4.5));
        assert_eq!(day.to_json()["indoor_avg_c"], serde_json::json!(20.0));
    }
}
