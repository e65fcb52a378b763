//! The energy history's Home Assistant sensors: today's heating and cooling runtime, and the
//! running totals by mode ([`crate::energy::Totals`]) as `total_increasing` durations, so Home
//! Assistant's long-term statistics keep years of them.
//!
//! Runtime moves every second while something runs, so its topics are recomputed at most once a
//! minute per thermostat ([`PACE_MS`]) and at each change of what is running ([`Pace`]); between
//! those the payloads last computed are reused, so nothing is published (the bridge publishes
//! only payloads that changed), and discovery never follows a state message.

use serde_json::{Value, json};

use super::discovery::Entity;
use crate::energy::{Flags, Totals, day::Day};

/// The least time between two recomputations of one thermostat's runtime topics (ms).
pub const PACE_MS: i64 = 60_000;

/// `(topic suffix after {P}/{S}/ha/, payload)` of the runtime topics: today's heating and
/// cooling in whole minutes (the local day of the energy history; none before the thermostat's
/// first report since the start), the totals in hours to the thousandth (3.6 s: a total rounded
/// so never goes down).
pub fn topics(today: Option<&Day>, totals: Option<Totals>) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(day) = today {
        out.push(("heating_today", (day.heat_ms / 60_000).to_string()));
        out.push(("cooling_today", (day.cool_ms / 60_000).to_string()));
    }
    if let Some(t) = totals {
        for (suffix, seconds) in [
            ("heating_runtime", t.heat_s),
            ("cooling_runtime", t.cool_s),
            ("fan_runtime", t.fan_s),
            ("aux_runtime", t.aux_s),
        ] {
            out.push((suffix, hours(seconds)));
        }
    }
    out
}

/// Whole seconds as hours to the thousandth, rounded down (`3725` → `1.034`).
fn hours(seconds: i64) -> String {
    let millihours = seconds.max(0) * 1000 / 3600;
    format!("{}.{:03}", millihours / 1000, millihours % 1000)
}

/// When one thermostat's runtime topics were last computed, for what was running then, and
/// what they were.
#[derive(Default)]
pub struct Pace {
    last: Option<(i64, Flags)>,
    topics: Vec<(&'static str, String)>,
}

/// Whether `topics` lack today's (the accrual has not yet seen the thermostat since the start):
/// such a result is computed again at the next chance, not a minute later.
fn partial(topics: &[(&'static str, String)]) -> bool {
    !topics.iter().any(|(k, _)| *k == "heating_today")
}

impl Pace {
    /// The runtime topics at `now` (ms) with `running` (the status record's flags): computed
    /// again by `compute` once [`PACE_MS`] has passed or what runs changed, else as last time.
    pub fn topics(
        &mut self,
        now: i64,
        running: Flags,
        compute: impl FnOnce() -> Vec<(&'static str, String)>,
    ) -> &[(&'static str, String)] {
        let due = match self.last {
            None => true,
            // A clock stepped back computes again at once rather than waiting for it.
            Some((at, flags)) => {
                flags != running || now - at >= PACE_MS || now < at || partial(&self.topics)
            }
        };
        if due {
            self.topics = compute();
            self.last = Some((now, running));
        }
        &self.topics
    }
}

/// The discovery entities: today's and the total runtime of heating and cooling (as the
/// thermostat can), of the fan (with one) and of auxiliary heat (with emergency heat, the
/// heat pumps that have it).
pub fn entities(can_heat: bool, can_cool: bool, has_fan: bool, has_aux: bool) -> Vec<Entity> {
    let today = || json!({"unit_of_measurement": "min", "device_class": "duration", "state_class": "total_increasing"});
    let total = || json!({"unit_of_measurement": "h", "device_class": "duration", "state_class": "total_increasing", "suggested_display_precision": 1});
    let mut list: Vec<Entity> = Vec::new();
    let mut add = |on: bool, id: &'static str, name: &'static str, extra: Value| {
        if on {
            list.push(("sensor", id, name, id, extra));
        }
    };
    add(can_heat, "heating_today", "Heating today", today());
    add(can_cool, "cooling_today", "Cooling today", today());
    add(can_heat, "heating_runtime", "Heating runtime", total());
    add(can_cool, "cooling_runtime", "Cooling runtime", total());
    add(has_fan, "fan_runtime", "Fan runtime", total());
    add(has_aux, "aux_runtime", "Auxiliary heat runtime", total());
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_is_in_minutes_today_and_hours_in_total() {
        let mut day = Day::new(0);
        day.heat_ms = 119_999;
        day.cool_ms = 60_000;
        let t = Totals {
            heat_s: 3725,
            cool_s: 0,
            fan_s: 36_000_000,
            aux_s: 1,
        };
        let out = topics(Some(&day), Some(t));
        let find = |s: &str| out.iter().find(|(k, _)| *k == s).map(|(_, v)| v.as_str());
        assert_eq!(find("heating_today"), Some("1"));
        assert_eq!(find("cooling_today"), Some("1"));
        assert_eq!(find("heating_runtime"), Some("1.034"));
        assert_eq!(find("cooling_runtime"), Some("0.000"));
        assert_eq!(find("fan_runtime"), Some("10000.000"));
        assert_eq!(find("aux_runtime"), Some("0.000"));
        assert!(topics(None, None).is_empty());
    }

    #[test]
    fn topics_are_computed_once_a_minute_and_at_each_change_of_what_runs() {
        let mut pace = Pace::default();
        let mut n = 0;
        let heat = Flags {
            heat: true,
            ..Flags::default()
        };
        let mut at = |pace: &mut Pace, now: i64, flags: Flags| {
            pace.topics(now, flags, || {
                n += 1;
                vec![("heating_today", n.to_string())]
            })
            .to_vec()
        };
        assert_eq!(at(&mut pace, 0, heat)[0].1, "1");
        assert_eq!(at(&mut pace, 59_999, heat)[0].1, "1");
        assert_eq!(at(&mut pace, 60_000, heat)[0].1, "2");
        assert_eq!(at(&mut pace, 60_001, Flags::default())[0].1, "3");
        assert_eq!(at(&mut pace, 60_002, Flags::default())[0].1, "3");
        assert_eq!(at(&mut pace, 1_000, Flags::default())[0].1, "4");
    }

    /// Before the accrual has seen the thermostat there is no day: computed again each time
    /// until there is.
    #[test]
    fn topics_without_today_are_computed_again_at_once() {
        let mut pace = Pace::default();
        let mut day = None;
        for (now, want) in [(0, 4), (1, 4), (2, 6), (3, 6)] {
            if now == 2 {
                day = Some(Day::new(0));
            }
            let got = pace.topics(now, Flags::default(), || {
                topics(day.as_ref(), Some(Totals::default()))
            });
            assert_eq!(got.len(), want, "at {now}");
        }
        // Complete: kept until the minute is up.
        let got = pace.topics(4, Flags::default(), || topics(None, None));
        assert_eq!(got.len(), 6);
    }
}
