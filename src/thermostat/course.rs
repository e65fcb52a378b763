//! Where the schedule stands for a thermostat now, worked out in its structure's time zone: the
//! manual setting holding until the schedule's next entry (and what that entry sets), or the
//! next change the schedule makes. Pure: the schedule, the setpoints, the local time and the
//! clock are passed in, so every rule is tested here alone; the reading carries the result
//! ([`super::Reading::course`]) and the "resume schedule" intent plans from it.
//!
//! The rules, the same on every surface:
//! - The schedule counts when its `schedule_mode` is the mode the thermostat runs in (`HEAT` in
//!   heat or emergency, `COOL` in cool, `RANGE` in heat-cool); in off, or another mode, there is
//!   no course.
//! - The entry in force is the last one at or before now, looking back up to a week; day `"0"`
//!   is Monday, as the firmware counts.
//! - The thermostat holds a manual setting when its setpoints differ from that entry's by more
//!   than [`TOLERANCE_C`] (a quarter degree: °F rounding), except in the first
//!   [`TRANSITION_SLACK_S`] after an entry's time while it still shows the entry before (it has
//!   not moved yet). A hold lasts until the next entry that is not a continuation, which sets
//!   what follows.
//! - Not holding, the next change is the first later entry that sets other setpoints.

use serde_json::Value;

use crate::state::Fields;
use crate::zone::{DAY_S, Zone};

/// How far the setpoints may be from the schedule's and still follow it (°C).
pub const TOLERANCE_C: f64 = 0.25;
/// How long after an entry's time the thermostat may still show the setpoint before it.
pub const TRANSITION_SLACK_S: i64 = 120;

/// One step of the schedule: when (Unix ms) and the setpoints it sets (one, or low and high).
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub at_ms: i64,
    pub setpoints: Vec<f64>,
}

/// Where the schedule stands now.
#[derive(Clone, Debug, PartialEq)]
pub struct Course {
    /// The setpoints the schedule has in force now.
    pub scheduled: Vec<f64>,
    /// The manual setting the thermostat holds against the schedule, and the step that ends it
    /// (`None`: no entry ends it within a week).
    pub hold: Option<(Vec<f64>, Option<Step>)>,
    /// Not holding: the next step that changes the setpoints.
    pub next: Option<Step>,
    /// Until when this course stands as it is (the next entry's time, or the end of a
    /// transition's slack), Unix ms: a reading made from it is made again then.
    pub until_ms: Option<i64>,
}

/// The time on the structure's clock: days since 1970-01-01 and seconds into the day.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Local {
    pub day: i64,
    pub secs: i64,
}

impl Local {
    pub fn at(zone: &Zone, now_ms: i64) -> Local {
        let (day, secs) = zone.local(now_ms);
        Local { day, secs }
    }

    /// The firmware's day number: 0 is Monday.
    pub fn weekday(self) -> i64 {
        crate::zone::weekday(self.day)
    }
}

/// The schedule's entry: its time of day (s), whether it only continues the day before, and
/// its setpoints for `kind`.
struct Entry {
    time: i64,
    continuation: bool,
    setpoints: Option<Vec<f64>>,
}

/// The schedule's kind for a mode (`target_temperature_type`).
fn kind_of(mode: &str) -> Option<&'static str> {
    match mode {
        "heat" | "emergency" => Some("HEAT"),
        "cool" => Some("COOL"),
        "range" => Some("RANGE"),
        _ => None,
    }
}

/// A day's entries in time order, from the firmware's object form (`"0"`, `"1"`, ...) or a
/// list.
fn day_entries(schedule: &Fields, day: i64, kind: &str) -> Vec<Entry> {
    let raw = schedule
        .get("days")
        .and_then(|d| d.get(day.to_string().as_str()).cloned());
    let list: Vec<Value> = match raw {
        Some(Value::Array(a)) => a,
        Some(Value::Object(o)) => o.into_iter().map(|(_, v)| v).collect(),
        _ => Vec::new(),
    };
    let mut entries: Vec<Entry> = list
        .iter()
        .filter_map(|e| {
            let time = e.get("time")?.as_f64()?.round() as i64;
            let number = |f: &str| e.get(f).and_then(Value::as_f64);
            let setpoints = if kind == "RANGE" {
                number("temp-min")
                    .zip(number("temp-max"))
                    .map(|(l, h)| vec![l, h])
            } else {
                number("temp").map(|t| vec![t])
            };
            Some(Entry {
                time,
                continuation: e.get("entry_type").and_then(Value::as_str) == Some("continuation"),
                setpoints,
            })
        })
        .collect();
    entries.sort_by_key(|e| e.time);
    entries
}

/// Two sets of setpoints alike within `tolerance` (°C).
pub(crate) fn same(a: &[f64], b: &[f64], tolerance: f64) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tolerance)
}

/// The schedule's kind for `mode`, if its schedule is for that mode.
fn kind_for(schedule: &Fields, mode: &str) -> Option<&'static str> {
    let kind = kind_of(mode)?;
    let schedule_mode = schedule.get("schedule_mode").and_then(Value::as_str)?;
    schedule_mode.eq_ignore_ascii_case(kind).then_some(kind)
}

/// The entry in force at `local`, how long it has been (s), and the setpoints of the entry
/// before it, looking back up to a week.
fn in_force_at(
    schedule: &Fields,
    kind: &str,
    local: Local,
) -> Option<(Entry, i64, Option<Vec<f64>>)> {
    let today = local.weekday();
    let mut current: Option<(Entry, i64)> = None;
    for back in 0..8 {
        let mut entries = day_entries(schedule, (today - back).rem_euclid(7), kind);
        if back == 0 {
            entries.retain(|e| e.time <= local.secs);
        }
        for e in entries.into_iter().rev() {
            match current {
                None => {
                    let since = back * DAY_S + local.secs - e.time;
                    current = Some((e, since));
                }
                Some((entry, since)) => return Some((entry, since, e.setpoints)),
            }
        }
    }
    current.map(|(entry, since)| (entry, since, None))
}

/// The setpoints the schedule has in force at `local` for a thermostat running in `mode`
/// (what "resume schedule" sets); `None` without a schedule for that mode.
pub fn in_force(schedule: &Fields, mode: &str, local: Local) -> Option<Vec<f64>> {
    let kind = kind_for(schedule, mode)?;
    in_force_at(schedule, kind, local)?.0.setpoints
}

/// The course of a thermostat running in `mode` with `setpoints` (one, or low and high) on
/// `schedule`, at `now_ms`, which is `local` on its structure's clock (`zone`).
pub fn course(
    schedule: &Fields,
    mode: &str,
    setpoints: &[f64],
    zone: &Zone,
    now_ms: i64,
) -> Option<Course> {
    let kind = kind_for(schedule, mode)?;
    let local = Local::at(zone, now_ms);
    let today = local.weekday();
    let (current, since, previous) = in_force_at(schedule, kind, local)?;
    let scheduled = current.setpoints?;
    // The entries to come, a week ahead, with their Unix times.
    let at_ms = |ahead: i64, time: i64| {
        let wanted = (local.day + ahead) * DAY_S + time;
        let guess = wanted - zone.offset(now_ms.div_euclid(1000));
        (wanted - zone.offset(guess)) * 1000
    };
    let mut upcoming: Vec<(i64, Entry)> = Vec::new();
    for ahead in 0..=7 {
        for e in day_entries(schedule, (today + ahead).rem_euclid(7), kind) {
            let later = match ahead {
                0 => e.time > local.secs,
                7 => e.time <= local.secs,
                _ => true,
            };
            if later {
                upcoming.push((at_ms(ahead, e.time), e));
            }
        }
    }
    let step = |(at, e): &(i64, Entry)| {
        e.setpoints.clone().map(|setpoints| Step {
            at_ms: *at,
            setpoints,
        })
    };
    let slack_ends =
        (since < TRANSITION_SLACK_S).then(|| now_ms + (TRANSITION_SLACK_S - since) * 1000);
    let until_ms = upcoming
        .first()
        .map(|(at, _)| *at)
        .into_iter()
        .chain(slack_ends)
        .min();
    let settling = slack_ends.is_some()
        && previous
            .as_deref()
            .is_some_and(|p| same(setpoints, p, TOLERANCE_C));
    let holding = !settling && !same(setpoints, &scheduled, TOLERANCE_C);
    let (hold, next) = if holding {
        let ends = upcoming
            .iter()
            .find(|(_, e)| !e.continuation)
            .and_then(step);
        (Some((setpoints.to_vec(), ends)), None)
    } else {
        let next = upcoming
            .iter()
            .find(|(_, e)| {
                e.setpoints
                    .as_deref()
                    .is_some_and(|s| !same(s, &scheduled, 0.01))
            })
            .and_then(step);
        (None, next)
    };
    Some(Course {
        scheduled,
        hold,
        next,
        until_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Monday 2026-11-30 00:00 UTC.
    const MONDAY_MS: i64 = 1_795_996_800_000;
    const H: i64 = 3_600_000;

    fn every_day(entries: Value) -> Fields {
        let days: serde_json::Map<String, Value> =
            (0..7).map(|d| (d.to_string(), entries.clone())).collect();
        Fields::from_map(
            json!({"ver": 2, "schedule_mode": "HEAT", "days": days})
                .as_object()
                .unwrap(),
        )
    }

    /// 07:00 21 °C, 22:00 17 °C, every day.
    fn two_a_day() -> Fields {
        every_day(json!({
            "0": {"time": 25200, "type": "HEAT", "temp": 21.0, "entry_type": "setpoint"},
            "1": {"time": 79200, "type": "HEAT", "temp": 17.0, "entry_type": "setpoint"},
        }))
    }

    #[test]
    fn monday_is_day_zero() {
        assert_eq!(Local::at(&Zone::utc(), MONDAY_MS).weekday(), 0);
        assert_eq!(Local::at(&Zone::utc(), MONDAY_MS - 1).weekday(), 6);
    }

    #[test]
    fn following_the_schedule_the_next_change_is_said() {
        let now = MONDAY_MS + 12 * H;
        let c = course(&two_a_day(), "heat", &[21.0], &Zone::utc(), now).unwrap();
        assert_eq!(c.scheduled, vec![21.0]);
        assert_eq!(c.hold, None);
        let next = c.next.unwrap();
        assert_eq!(
            (next.at_ms, next.setpoints),
            (MONDAY_MS + 22 * H, vec![17.0])
        );
        assert_eq!(c.until_ms, Some(MONDAY_MS + 22 * H));
    }

    #[test]
    fn a_manual_setting_holds_until_the_next_entry_which_says_what_follows() {
        let now = MONDAY_MS + 12 * H;
        let c = course(&two_a_day(), "heat", &[22.5], &Zone::utc(), now).unwrap();
        let (held, ends) = c.hold.unwrap();
        assert_eq!(held, vec![22.5]);
        let ends = ends.unwrap();
        assert_eq!(
            (ends.at_ms, ends.setpoints),
            (MONDAY_MS + 22 * H, vec![17.0])
        );
        assert_eq!(c.next, None);
        // After 22:00, until 07:00 the next day (Tuesday).
        let late = course(&two_a_day(), "heat", &[20.0], &Zone::utc(), now + 11 * H).unwrap();
        assert_eq!(late.hold.unwrap().1.unwrap().at_ms, MONDAY_MS + 31 * H);
    }

    #[test]
    fn just_after_an_entry_the_setpoint_before_it_is_not_a_hold() {
        let now = MONDAY_MS + 22 * H + 60_000;
        let c = course(&two_a_day(), "heat", &[21.0], &Zone::utc(), now).unwrap();
        assert_eq!(c.hold, None, "still showing 21 a minute after 22:00");
        assert_eq!(
            c.until_ms,
            Some(now + 60_000),
            "looked at again when the slack ends"
        );
        let c = course(&two_a_day(), "heat", &[21.0], &Zone::utc(), now + 61_000).unwrap();
        assert!(c.hold.is_some());
    }

    #[test]
    fn the_structures_zone_places_now_in_the_week() {
        // 12:00 UTC is 21:00 in Tokyo (UTC+9, no DST): 17 °C comes at 22:00 local, 13:00 UTC.
        let tokyo = Zone::resolve(Some("Asia/Tokyo"), std::path::Path::new("/nonexistent"));
        let c = course(&two_a_day(), "heat", &[21.0], &tokyo, MONDAY_MS + 12 * H).unwrap();
        assert_eq!(c.next.unwrap().at_ms, MONDAY_MS + 13 * H);
    }

    #[test]
    fn another_mode_or_a_range_schedule() {
        let now = MONDAY_MS + 12 * H;
        assert_eq!(
            course(&two_a_day(), "cool", &[21.0], &Zone::utc(), now),
            None
        );
        assert_eq!(
            course(&two_a_day(), "off", &[21.0], &Zone::utc(), now),
            None
        );
        let range = Fields::from_map(
            json!({"schedule_mode": "RANGE", "days": {"0": [
                {"time": 0, "type": "RANGE", "temp-min": 19.0, "temp-max": 24.0},
                {"time": 64800, "type": "RANGE", "temp-min": 18.0, "temp-max": 25.0},
            ]}})
            .as_object()
            .unwrap(),
        );
        let c = course(&range, "range", &[19.0, 24.0], &Zone::utc(), now).unwrap();
        assert_eq!(c.next.unwrap().setpoints, vec![18.0, 25.0]);
        let c = course(&range, "range", &[20.0, 24.0], &Zone::utc(), now).unwrap();
        assert_eq!(c.hold.unwrap().1.unwrap().setpoints, vec![18.0, 25.0]);
    }
}
