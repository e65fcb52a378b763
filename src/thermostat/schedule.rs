//! Validating a schedule before it replaces a thermostat's `schedule.S` bucket.
//!
//! Day keys are stored as sent (`"0"`–`"6"`); the firmware treats `"0"` as Monday while the
//! hosted documentation calls it Sunday, so hearth never renumbers them. A day may be sent as a
//! list of entries or as the thermostat's own object keyed `"0"`, `"1"`, ...; lists are stored
//! in the object form. Temperatures outside 4.5–32 °C are refused, not clamped.
//!
//! What is stored is rebuilt from the known fields only (`time`, `type`, `entry_type`, `temp`,
//! `temp-min`, `temp-max`, and the thermostat's own `touched_at`/`touched_by`/`touched_tzo`),
//! so nothing a client invents reaches the firmware. Entry keys must be plain indices (`"0"`,
//! `"1"`, ...; not `"01"` or `"+1"`), times whole seconds, strictly increasing within a day;
//! entries are renumbered `"0"`..`"n-1"` in order.
//!
//! The two APIs differ in one limit only: the control API keeps the Python server's last entry
//! time, 86399 s; the hosted API documents "0 to 86400" and accepts 86400 (the end of the day).

use serde_json::Value;

use super::refusal::Refusal;
use crate::util::JsonMap;

pub const MIN_C: f64 = 4.5;
pub const MAX_C: f64 = 32.0;
const MODES: [&str; 3] = ["HEAT", "COOL", "RANGE"];
const ENTRY_TYPES: [&str; 2] = ["setpoint", "continuation"];
/// The thermostat's own bookkeeping fields, kept when they are whole numbers.
const TOUCHED: [&str; 3] = ["touched_at", "touched_by", "touched_tzo"];

/// The latest entry time each API accepts, in seconds since midnight.
pub const CONTROL_LAST_TIME: u32 = 86_399;
pub const HOSTED_LAST_TIME: u32 = 86_400;

/// What a schedule editor may offer this thermostat: setpoints within both the schedule's limits
/// and the thermostat's safety bounds (°C), entry times up to `last_time`.
pub fn limits(view: &super::View, last_time: u32) -> Value {
    let (low, high) = view.bounds();
    serde_json::json!({
        "low": low.max(MIN_C),
        "high": high.min(MAX_C),
        "last_time": last_time,
    })
}

fn invalid(text: impl Into<String>) -> Refusal {
    Refusal::Invalid(text.into())
}

/// The canonical value to store: `{"ver":2,"name","schedule_mode","days"}`. Entry times run
/// from 0 to `last_time` seconds.
pub fn validate(value: &Value, last_time: u32) -> Result<JsonMap, Refusal> {
    let Value::Object(s) = value else {
        return Err(invalid("Schedule must be a JSON object"));
    };
    if s.get("ver").and_then(Value::as_f64) != Some(2.0) {
        return Err(invalid("Schedule ver must be 2"));
    }
    let mode = s
        .get("schedule_mode")
        .or_else(|| s.get("mode"))
        .and_then(Value::as_str)
        .map(str::to_ascii_uppercase)
        .filter(|m| MODES.contains(&m.as_str()))
        .ok_or_else(|| invalid("Schedule schedule_mode must be HEAT, COOL or RANGE"))?;
    let name = match s.get("name") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(n)) => n.clone(),
        Some(_) => return Err(invalid("Schedule name must be a string")),
    };
    let Some(Value::Object(days)) = s.get("days") else {
        return Err(invalid(
            "Schedule days must be an object keyed \"0\" to \"6\"",
        ));
    };
    let mut out_days = JsonMap::new();
    for (day, entries) in days {
        if !matches!(day.as_str(), "0" | "1" | "2" | "3" | "4" | "5" | "6") {
            return Err(invalid(format!(
                "Unknown schedule day {day:?}: days are \"0\" to \"6\""
            )));
        }
        out_days.insert(
            day.clone(),
            Value::Object(validate_day(day, entries, last_time)?),
        );
    }
    let mut out = JsonMap::new();
    out.insert("ver".into(), Value::from(2));
    out.insert("name".into(), Value::String(name));
    out.insert("schedule_mode".into(), Value::String(mode));
    out.insert("days".into(), Value::Object(out_days));
    Ok(out)
}

fn validate_day(day: &str, entries: &Value, last_time: u32) -> Result<JsonMap, Refusal> {
    let listed: Vec<(String, &Value)> = match entries {
        Value::Array(list) => list
            .iter()
            .enumerate()
            .map(|(i, e)| (i.to_string(), e))
            .collect(),
        Value::Object(map) => {
            let mut indexed = Vec::with_capacity(map.len());
            for (k, e) in map {
                // Only the canonical spelling, so "1" and "01" cannot both name an entry.
                let i: u32 = k
                    .parse()
                    .ok()
                    .filter(|i: &u32| i.to_string() == *k)
                    .ok_or_else(|| {
                        invalid(format!(
                            "Day {day}: entry keys must be \"0\", \"1\", ... (got {k:?})"
                        ))
                    })?;
                indexed.push((i, k.clone(), e));
            }
            indexed.sort_by_key(|(i, _, _)| *i);
            indexed.into_iter().map(|(_, k, e)| (k, e)).collect()
        }
        _ => {
            return Err(invalid(format!(
                "Day {day} must be a list or an object of entries"
            )));
        }
    };
    let mut out = JsonMap::new();
    let mut previous: Option<(String, u64)> = None;
    for (position, (index, entry)) in listed.into_iter().enumerate() {
        let at = format!("Day {day} entry {index}");
        let entry = validate_entry(&at, entry, last_time)?;
        let time = entry.get("time").and_then(Value::as_u64).unwrap_or(0);
        if let Some((before, t)) = &previous {
            if time <= *t {
                return Err(invalid(format!(
                    "{at}: time {time} must be after entry {before}'s time {t} (entries are in \
                     time order, one per time)"
                )));
            }
        }
        previous = Some((index, time));
        out.insert(position.to_string(), Value::Object(entry));
    }
    Ok(out)
}

fn validate_entry(at: &str, entry: &Value, last_time: u32) -> Result<JsonMap, Refusal> {
    let Value::Object(e) = entry else {
        return Err(invalid(format!("{at} must be an object")));
    };
    let time = match e.get("time").and_then(Value::as_f64) {
        Some(t) if t.fract() == 0.0 && (0.0..=f64::from(last_time)).contains(&t) => t as u64,
        _ => {
            return Err(invalid(format!(
                "{at}: time must be a whole number of seconds from 0 to {last_time}"
            )));
        }
    };
    match e.get("entry_type") {
        None => {}
        Some(Value::String(t)) if ENTRY_TYPES.contains(&t.as_str()) => {}
        Some(_) => {
            return Err(invalid(format!(
                "{at}: entry_type must be setpoint or continuation"
            )));
        }
    }
    let kind = e
        .get("type")
        .and_then(Value::as_str)
        .map(str::to_ascii_uppercase)
        .filter(|t| MODES.contains(&t.as_str()))
        .ok_or_else(|| invalid(format!("{at}: type must be HEAT, COOL or RANGE")))?;
    let required: &[&str] = if kind == "RANGE" {
        &["temp-min", "temp-max"]
    } else {
        &["temp"]
    };
    for field in ["temp", "temp-min", "temp-max"] {
        let Some(v) = e.get(field) else {
            if required.contains(&field) {
                return Err(invalid(format!("{at}: {kind} entries need {field}")));
            }
            continue;
        };
        match v.as_f64().filter(|t| t.is_finite()) {
            Some(t) if (MIN_C..=MAX_C).contains(&t) => {}
            Some(t) => {
                return Err(invalid(format!(
                    "{at}: {field} {t} is outside {MIN_C}–{MAX_C} °C"
                )));
            }
            None => return Err(invalid(format!("{at}: {field} must be a number (°C)"))),
        }
    }
    if kind == "RANGE" {
        let lo = e.get("temp-min").and_then(Value::as_f64);
        let hi = e.get("temp-max").and_then(Value::as_f64);
        if lo >= hi {
            return Err(invalid(format!(
                "{at}: temp-min must be less than temp-max"
            )));
        }
    }
    let mut out = JsonMap::new();
    out.insert("time".into(), Value::from(time));
    out.insert("type".into(), Value::String(kind));
    for field in ["entry_type", "temp", "temp-min", "temp-max"] {
        if let Some(v) = e.get(field) {
            out.insert(field.into(), v.clone());
        }
    }
    for field in TOUCHED {
        match e.get(field) {
            None | Some(Value::Null) => {}
            Some(v) if v.is_i64() || v.is_u64() => {
                out.insert(field.into(), v.clone());
            }
            Some(_) => {
                return Err(invalid(format!("{at}: {field} must be a whole number")));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(v: Value) -> String {
        match validate(&v, CONTROL_LAST_TIME) {
            Err(Refusal::Invalid(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn the_thermostats_own_form_is_kept_and_lists_become_objects() {
        let s = validate(
            &json!({"ver": 2, "schedule_mode": "heat", "days": {
                "0": {"0": {"time": 25200, "type": "heat", "temp": 20.0, "entry_type": "setpoint"}},
                "1": [{"time": 0, "type": "RANGE", "temp-min": 18.0, "temp-max": 24.0}]
            }}),
            CONTROL_LAST_TIME,
        )
        .unwrap();
        assert_eq!(
            Value::Object(s),
            json!({"ver": 2, "name": "", "schedule_mode": "HEAT", "days": {
                "0": {"0": {"time": 25200, "type": "HEAT", "temp": 20.0, "entry_type": "setpoint"}},
                "1": {"0": {"time": 0, "type": "RANGE", "temp-min": 18.0, "temp-max": 24.0}}
            }})
        );
        assert!(
            validate(
                &json!({"ver": 2, "name": "Cleared", "schedule_mode": "HEAT", "days": {}}),
                CONTROL_LAST_TIME
            )
            .is_ok()
        );
    }

    #[test]
    fn every_rule_has_its_message() {
        let day = |e: Value| json!({"ver": 2, "schedule_mode": "HEAT", "days": {"0": [e]}});
        assert_eq!(message(json!([1])), "Schedule must be a JSON object");
        assert_eq!(
            message(json!({"ver": 1, "schedule_mode": "HEAT", "days": {}})),
            "Schedule ver must be 2"
        );
        assert_eq!(
            message(json!({"ver": 2, "schedule_mode": "ECO", "days": {}})),
            "Schedule schedule_mode must be HEAT, COOL or RANGE"
        );
        assert_eq!(
            message(json!({"ver": 2, "schedule_mode": "HEAT", "days": {"7": {}}})),
            "Unknown schedule day \"7\": days are \"0\" to \"6\""
        );
        assert_eq!(
            message(day(json!({"time": -1, "type": "HEAT", "temp": 20}))),
            "Day 0 entry 0: time must be a whole number of seconds from 0 to 86399"
        );
        assert_eq!(
            message(day(json!({"time": 86400, "type": "HEAT", "temp": 20}))),
            "Day 0 entry 0: time must be a whole number of seconds from 0 to 86399"
        );
        assert_eq!(
            message(day(json!({"time": 0, "type": "FAN", "temp": 20}))),
            "Day 0 entry 0: type must be HEAT, COOL or RANGE"
        );
        assert_eq!(
            message(day(json!({"time": 0, "type": "HEAT", "temp": 33}))),
            "Day 0 entry 0: temp 33 is outside 4.5–32 °C"
        );
        assert_eq!(
            message(day(json!({"time": 0, "type": "HEAT", "temp": 4.4}))),
            "Day 0 entry 0: temp 4.4 is outside 4.5–32 °C"
        );
        assert_eq!(
            message(day(json!({"time": 0, "type": "HEAT", "temp": "20"}))),
            "Day 0 entry 0: temp must be a number (°C)"
        );
        assert_eq!(
            message(day(json!({"time": 0, "type": "RANGE", "temp-min": 20}))),
            "Day 0 entry 0: RANGE entries need temp-max"
        );
        assert_eq!(
            message(day(
                json!({"time": 0, "type": "RANGE", "temp-min": 24, "temp-max": 20})
            )),
            "Day 0 entry 0: temp-min must be less than temp-max"
        );
        assert_eq!(
            message(day(
                json!({"time": 0, "type": "HEAT", "temp": 20, "entry_type": "manual"})
            )),
            "Day 0 entry 0: entry_type must be setpoint or continuation"
        );
    }

    #[test]
    fn keys_times_and_fields_are_canonical() {
        let days = |d: Value| json!({"ver": 2, "schedule_mode": "HEAT", "days": {"0": d}});
        let e = |t: u32| json!({"time": t, "type": "HEAT", "temp": 20});
        for bad_key in ["01", "+1", " 1", "1.0"] {
            let mut entries = JsonMap::new();
            entries.insert("0".into(), e(0));
            entries.insert(bad_key.into(), e(3600));
            assert_eq!(
                message(days(Value::Object(entries))),
                format!("Day 0: entry keys must be \"0\", \"1\", ... (got {bad_key:?})")
            );
        }
        assert_eq!(
            message(days(json!([{"time": 3600.5, "type": "HEAT", "temp": 20}]))),
            "Day 0 entry 0: time must be a whole number of seconds from 0 to 86399"
        );
        assert_eq!(
            message(days(json!([e(3600), e(3600)]))),
            "Day 0 entry 1: time 3600 must be after entry 0's time 3600 (entries are in time \
             order, one per time)"
        );
        assert_eq!(
            message(days(json!({"0": e(7200), "5": e(3600)}))),
            "Day 0 entry 5: time 3600 must be after entry 0's time 7200 (entries are in time \
             order, one per time)"
        );
        assert_eq!(
            message(days(
                json!([{"time": 0, "type": "HEAT", "temp": 20, "touched_by": "me"}])
            )),
            "Day 0 entry 0: touched_by must be a whole number"
        );
        // Gaps are renumbered; unknown fields are dropped; the thermostat's own are kept.
        let s = validate(
            &days(json!({
                "0": {"time": 0.0, "type": "HEAT", "temp": 18, "junk": {"a": [1, 2, 3]}},
                "7": {"time": 3600, "type": "HEAT", "temp": 20, "touched_at": 1762102309,
                      "touched_by": 2, "touched_tzo": -28800, "entry_type": "setpoint"}
            })),
            CONTROL_LAST_TIME,
        )
        .unwrap();
        assert_eq!(
            s["days"]["0"],
            json!({
                "0": {"time": 0, "type": "HEAT", "temp": 18},
                "1": {"time": 3600, "type": "HEAT", "entry_type": "setpoint", "temp": 20,
                      "touched_at": 1762102309, "touched_by": 2, "touched_tzo": -28800}
            })
        );
    }

    #[test]
    fn the_hosted_api_accepts_the_end_of_the_day() {
        let end = json!({"ver": 2, "schedule_mode": "HEAT",
            "days": {"0": [{"time": 86400, "type": "HEAT", "temp": 20}]}});
        assert!(validate(&end, HOSTED_LAST_TIME).is_ok());
        assert!(validate(&end, CONTROL_LAST_TIME).is_err());
    }
}
