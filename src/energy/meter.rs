//! One thermostat's accrual: the state last seen, counted until the next observation (for at
//! most a horizon), split at local midnight into [`Day`]s.

use super::Totals;
use super::day::Day;
use super::store;
use super::zone::Zone;
use crate::thermostat::reading::{Outside, Reading, Targets as Setpoints};

/// What is running, as the thermostat's reading says.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Flags {
    pub heat: bool,
    pub cool: bool,
    pub fan: bool,
    pub aux: bool,
    pub away: bool,
}

/// What the energy history reads of a thermostat: its reading's mapping, every field decided
/// (see [`crate::thermostat::reading`]).
pub struct Observed<'a> {
    pub serial: &'a str,
    pub flags: Flags,
    pub targets: Targets,
    /// The room's temperature and the weather's outside it (°C), for the day's averages.
    pub indoor: Option<f64>,
    pub outdoor: Option<f64>,
    /// The structure's time zone, naming its local days.
    pub time_zone: Option<&'a str>,
}

impl<'a> Observed<'a> {
    pub fn of(reading: &'a Reading) -> Observed<'a> {
        let Reading {
            serial,
            api_key: _,
            availability: _,
            name: _,
            room,
            targets: Setpoints { target, high, low },
            humidity: _,
            target_humidity: _,
            target_humidity_enabled: _,
            mode: _,
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
            away,
            sensed_away: _,
            schedule_mode: _,
            lock: _,
            bounds: _,
            outside: Outside {
                weather,
                reported: _,
            },
            time_zone,
            battery_volts: _,
            battery_percent: _,
            reported: _,
            change: _,
            course: _,
        } = reading;
        Observed {
            serial,
            flags: Flags {
                // Auxiliary heat is counted apart from the heating.
                heat: hvac.heating_without_aux(),
                cool: hvac.cooling(),
                fan: hvac.fan,
                aux: hvac.aux_heat,
                away: *away,
            },
            targets: [target, low, high].map(|t| t.as_f64()),
            indoor: room.as_f64(),
            outdoor: *weather,
            time_zone: time_zone.as_deref(),
        }
    }
}

/// One thermostat's accrual.
#[derive(Debug)]
pub struct Meter {
    /// The zone its days are counted in, and the structure's zone it was resolved from.
    pub zone: Zone,
    pub day: Day,
    /// The runtime of every day before `day` (stored, pruned or finished since).
    pub before: Totals,
    flags: Flags,
    /// When the thermostat was last observed, and up to when time is counted (ms).
    seen: i64,
    accrued: i64,
    /// Days finished and not yet written.
    pub finished: Vec<Day>,
    /// A run started or stopped since the last write: written at once (see
    /// [`super::Accrual::commit`]).
    pub(super) urgent: bool,
    /// The live row as it is stored (in the journal: as last written, or as found at the
    /// start), to write only what changed.
    written: Option<Day>,
    /// With `written`, what a restart would read back: the finished days on disk (pruned ones
    /// summed) and the last date among them.
    disk: Totals,
    disk_last: Option<i64>,
    /// The targets last seen (a change to the same values, such as the thermostat confirming
    /// a write, is not another change).
    pub(super) targets: Targets,
}

/// The target, low and high setpoints.
pub type Targets = [Option<f64>; 3];

impl Meter {
    /// A meter starting at `now` after what is `stored`: it carries on the live day's last
    /// flush if that is today's, and finishes it if it is an earlier day's.
    ///
    /// The clock may have stepped back (an NTP correction) since a later day was stored: such
    /// a day is never dropped nor written twice. The live day is never before a stored one:
    /// a stored live day of a later date is carried on, and after a finished day of a later
    /// date counting goes on in the day after it, until the clock catches up.
    pub fn start(zone: Zone, stored: store::Stored, flags: Flags, now: i64) -> Meter {
        let disk_last = stored.last_finished();
        let floor = disk_last.map_or(i64::MIN, |d| d + 1);
        let today = zone.day_of(now).max(floor);
        let disk = stored.finished_totals();
        let written = stored.today.clone();
        let mut before = disk;
        let mut finished = Vec::new();
        let day = match stored.today {
            Some(d) if d.date >= today => d,
            Some(d) => {
                if !d.is_empty() {
                    before = before.plus(Totals::of_day(&d));
                    finished.push(d);
                }
                Day::new(today)
            }
            None => Day::new(today),
        };
        Meter {
            before,
            zone,
            written,
            disk,
            disk_last,
            day,
            flags,
            seen: now,
            accrued: now,
            finished,
            urgent: false,
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
                self.before = self.before.plus(Totals::of_day(&done));
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

    /// What ran at the last observation.
    pub fn runs(&self) -> Flags {
        self.flags
    }

    /// The day when it changed since it was last written.
    pub fn unwritten(&self) -> Option<&Day> {
        (self.written.as_ref() != Some(&self.day)).then_some(&self.day)
    }

    /// The finished days and the live day (as it is now) are stored: written to the journal.
    pub fn mark_stored(&mut self) {
        for day in std::mem::take(&mut self.finished) {
            self.disk = self.disk.plus(Totals::of_day(&day));
            self.disk_last = self.disk_last.max(Some(day.date));
        }
        if self.unwritten().is_some() {
            self.written = Some(self.day.clone());
        }
    }

    /// The running totals as stored, which is what a restart reads back
    /// ([`store::Store::read_stored`] leaves out a live row whose day is stored as finished):
    /// never above what a restart shows, so a counter made of them never goes down across a
    /// kill -9.
    pub fn stored_totals(&self) -> Totals {
        match &self.written {
            Some(d) if self.disk_last.is_none_or(|last| d.date > last) => {
                self.disk.plus(Totals::of_day(d))
            }
            _ => self.disk,
        }
    }

    /// The live day's row as stored: as last written, or empty before its first write (a
    /// restart would read back nothing of it).
    pub fn stored_today(&self) -> Day {
        match &self.written {
            Some(d) if d.date == self.day.date => d.clone(),
            _ => Day::new(self.day.date),
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
        let mut m = Meter::start(
            Zone::utc(),
            store::Stored::default(),
            heating(),
            day0 + 23 * H,
        );
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
        let mut m = Meter::start(Zone::utc(), store::Stored::default(), all, 0);
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
        let mut m = Meter::start(Zone::utc(), store::Stored::default(), heating(), 0);
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
        let with = |today: Day| store::Stored {
            today: Some(today),
            ..store::Stored::default()
        };
        let m = Meter::start(Zone::utc(), with(stored.clone()), heating(), H);
        assert_eq!(m.day.heat_ms, 5_000);
        assert!(m.unwritten().is_none());
        let m = Meter::start(Zone::utc(), with(stored.clone()), heating(), 25 * H);
        assert_eq!(m.finished.len(), 1);
        assert_eq!(m.day, Day::new(1));
        assert_eq!(m.before.heat_s, 5);
    }

    /// The clock stepped back a day: a stored live day of the later date is carried on, and
    /// after a finished later day counting goes on in the day after it; nothing stored is
    /// dropped or finished twice.
    #[test]
    fn a_clock_stepped_back_drops_no_later_day() {
        let mut later = Day::new(5);
        later.heat_ms = 7_000;
        let today = store::Stored {
            today: Some(later.clone()),
            ..store::Stored::default()
        };
        let mut m = Meter::start(Zone::utc(), today, heating(), 4 * 24 * H);
        assert!(m.finished.is_empty());
        m.advance(4 * 24 * H + H, 2 * H);
        assert_eq!((m.day.date, m.day.heat_ms), (5, 7_000 + H));

        let mut days = std::collections::BTreeMap::new();
        days.insert(5, later.clone());
        let finished = store::Stored {
            days,
            ..store::Stored::default()
        };
        let m = Meter::start(Zone::utc(), finished, heating(), 4 * 24 * H);
        assert!(m.finished.is_empty());
        assert_eq!((m.day.date, m.before.heat_s), (6, 7));
    }

    #[test]
    fn flags_read_the_reading() {
        let mut reading = crate::thermostat::reading::tests::reading(
            serde_json::json!({"hvac_heater_state": false, "hvac_heat_x2_state": true,
                "hvac_aux_heater_state": true, "hvac_ac_state": false, "hvac_fan_state": true}),
            serde_json::json!({}),
        );
        reading.away = true;
        let f = Observed::of(&reading).flags;
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
}
