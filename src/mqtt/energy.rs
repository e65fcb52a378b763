//! The energy history's Home Assistant sensors: today's heating and cooling runtime, and the
//! running totals by mode ([`crate::energy::Totals`]) as `total_increasing` durations, so Home
//! Assistant's long-term statistics keep years of them.
//!
//! They show the energy history as stored ([`crate::energy::Live::written_today`] and
//! [`crate::energy::Live::totals`]), which changes once a minute while something runs and when a
//! run starts or stops: the bridge publishes only payloads that changed, so that is the most they
//! are published, and discovery never follows a state message. What is stored is what a restart
//! reads back, so a total never goes down, not even over a kill -9.

use serde_json::{Value, json};

use super::discovery::Entity;
use crate::energy::{Totals, day::Day};

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
}
