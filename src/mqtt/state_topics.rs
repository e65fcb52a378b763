//! What hearth publishes (retained) about one thermostat: the raw `device` and `shared` buckets,
//! one topic per field, and the Home Assistant state topics. Pure functions of a [`Snapshot`], so
//! every rule is testable without a broker.
//!
//! Payloads: strings as they are, booleans `true`/`false`, numbers as JSON numbers, objects and
//! lists as JSON, and null as an empty payload (which also deletes a retained message).

use serde_json::Value;

use crate::thermostat::view::truthy;
use crate::thermostat::{COOLING_FLAGS, HEATING_FLAGS, View, fan_run_seconds, json_number, pin};
use crate::util::number;

/// A thermostat as MQTT sees it, read once per publication.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub view: View,
    /// The status record (see [`crate::thermostat::status`]): name, mode, away, hvac flags and
    /// capabilities, derived the same way for every surface.
    pub record: Value,
    pub available: bool,
}

impl Snapshot {
    pub fn serial(&self) -> &str {
        &self.view.serial
    }

    fn flag(&self, name: &str) -> bool {
        self.record
            .get(name)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// Home Assistant's mode: `off`, `heat`, `cool` or `heat_cool`.
    pub fn ha_mode(&self) -> &'static str {
        match self.record.get("mode").and_then(Value::as_str) {
            Some("heat" | "emergency") => "heat",
            Some("cool") => "cool",
            Some("range" | "heat-cool") => "heat_cool",
            _ => "off",
        }
    }
}

/// The text of a value on the wire (see the module comment).
pub fn payload(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `(topic suffix after {P}/{S}/, payload)` for the raw buckets: `device` and `shared` whole, and
/// each of their fields.
pub fn raw(s: &Snapshot) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (kind, bucket) in [("device", &s.view.device), ("shared", &s.view.shared)] {
        let Some(mut bucket) = bucket.as_ref().map(|b| b.to_map()) else {
            continue;
        };
        // Whoever may subscribe on the broker is not necessarily who may change the lock.
        pin::hide_hash(&mut bucket);
        out.push((kind.to_string(), Value::Object(bucket.clone()).to_string()));
        // A field name that cannot be one topic level (empty, long, a `/`, a wildcard or a
        // control character in it) is left out; the whole bucket above still carries it.
        for (field, value) in bucket.iter().filter(|(f, _)| topic_level(f)) {
            out.push((format!("{kind}/{field}"), payload(value)));
        }
    }
    out
}

/// Whether `name` can be one topic level of a per-field topic.
fn topic_level(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.contains(['/', '+', '#'])
        && !name.chars().any(char::is_control)
}

/// The temperature topics one mode uses; the others are published empty (cleared).
const TARGETS: [&str; 3] = [
    "target_temperature",
    "target_temperature_low",
    "target_temperature_high",
];

/// `(topic suffix after {P}/{S}/ha/, payload)` for Home Assistant. Published once both the
/// `device` and `shared` buckets exist; a topic whose source field is missing is left out.
pub fn home_assistant(s: &Snapshot, now_s: i64) -> Vec<(&'static str, String)> {
    if s.view.device.is_none() || s.view.shared.is_none() {
        return Vec::new();
    }
    let mut out = Topics::default();
    climate(s, &mut out);
    activity(s, &mut out);
    readings(s, now_s, &mut out);
    if s.flag("has_fan") {
        fan_timer(s, now_s, &mut out);
    }
    out.0
}

/// The Home Assistant topics of one publication, in the order they are published.
#[derive(Default)]
struct Topics(Vec<(&'static str, String)>);

impl Topics {
    /// A missing or null value publishes nothing.
    fn put(&mut self, suffix: &'static str, v: Option<Value>) {
        if let Some(v) = v.filter(|v| !v.is_null()) {
            self.0.push((suffix, payload(&v)));
        }
    }
}

/// A field of the status record.
fn record(s: &Snapshot, field: &str) -> Option<Value> {
    s.record.get(field).cloned()
}

/// A field of the `device` bucket.
fn device(s: &Snapshot, field: &str) -> Option<Value> {
    s.view.device_field(field).cloned()
}

/// A field's text in lower case (`True` and `true` alike).
fn lower_text(v: Option<Value>) -> Option<Value> {
    v.map(|v| Value::String(payload(&v).to_ascii_lowercase()))
}

/// One of the status record's `hvac` flags.
fn hvac(s: &Snapshot, flag: &str) -> bool {
    s.record
        .get("hvac")
        .and_then(|h| h.get(flag))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Whether the fan runs on its own (a timer, or the fan switched on).
fn fan_on(s: &Snapshot) -> bool {
    s.flag("fan_timer_active") || truthy(s.view.device_field("fan_control_state"))
}

/// The mode, the room's temperature and humidity, and the targets the mode uses.
fn climate(s: &Snapshot, out: &mut Topics) {
    let mode = s.ha_mode();
    out.put("mode", Some(Value::from(mode)));
    out.put(
        "current_temperature",
        record(s, "current_temperature").map(one_decimal),
    );
    out.put("current_humidity", device(s, "current_humidity"));
    let used: &[&str] = match mode {
        "heat" | "cool" => &TARGETS[..1],
        "heat_cool" => &TARGETS[1..],
        _ => &[],
    };
    for field in TARGETS {
        let v = used
            .contains(&field)
            .then(|| record(s, field))
            .flatten()
            .filter(|v| !v.is_null());
        // Unused (or unknown) targets are published empty so a stale retained value is cleared.
        out.put(field, Some(v.unwrap_or_else(|| Value::from(""))));
    }
}

/// What the thermostat is doing (heating, cooling, the fan, idle), its fan mode and its preset.
fn activity(s: &Snapshot, out: &mut Topics) {
    let fan_on = fan_on(s);
    let action = if s.ha_mode() == "off" {
        "off"
    } else if HEATING_FLAGS.iter().any(|f| hvac(s, f)) {
        "heating"
    } else if COOLING_FLAGS.iter().any(|f| hvac(s, f)) {
        "cooling"
    } else if fan_on || hvac(s, "fan") {
        "fan"
    } else {
        "idle"
    };
    out.put("action", Some(Value::from(action)));
    if s.flag("has_fan") {
        out.put(
            "fan_mode",
            Some(Value::from(if fan_on { "on" } else { "auto" })),
        );
    }
    let preset = if s.flag("away") {
        "away"
    } else if s.record.get("eco_mode").and_then(Value::as_str) == Some("manual-eco") {
        "eco"
    } else {
        "home"
    };
    out.put("preset", Some(Value::from(preset)));
}

/// The sensors: outdoor temperature, occupancy, the fan, the leaf, the battery, the radio, the
/// filter, time to target and the firmware's other readings.
fn readings(s: &Snapshot, now_s: i64, out: &mut Topics) {
    let view = &s.view;
    // The weather hearth holds for the thermostat's place (what `/status` shows), else what
    // the thermostat's own buckets say.
    out.put(
        "outdoor_temperature",
        record(s, "outdoor_temperature")
            .filter(|v| !v.is_null())
            .or_else(|| device(s, "outdoor_temperature"))
            .or_else(|| view.shared_field("outside_temperature").cloned())
            .or_else(|| device(s, "outside_temperature"))
            .map(one_decimal),
    );
    let away_sensed = view
        .device_field("auto_away")
        .and_then(Value::as_f64)
        .is_some_and(|a| a > 0.0)
        || truthy(view.device_field("away"));
    out.put(
        "occupancy",
        Some(Value::from(if away_sensed { "away" } else { "home" })),
    );
    out.put("fan_running", Some(Value::Bool(hvac(s, "fan"))));
    let leaf = view
        .device_field("eco")
        .and_then(|e| e.get("leaf"))
        .or_else(|| view.device_field("leaf"));
    out.put("eco", Some(Value::Bool(truthy(leaf))));
    out.put(
        "battery",
        device(s, "battery_level")
            .and_then(|v| v.as_f64())
            .map(|volts| Value::from(battery_percent(volts))),
    );
    out.put(
        "rssi",
        device(s, "rssi")
            .and_then(|v| number(&v))
            .map(|x| json_number(-x.abs())),
    );
    out.put(
        "filter_replacement_needed",
        lower_text(device(s, "filter_replacement_needed")),
    );
    out.put(
        "filter_runtime_days",
        device(s, "filter_runtime_sec")
            .and_then(|v| v.as_f64())
            .map(|secs| json_number((secs / 8640.0).round() / 10.0)),
    );
    out.put(
        "time_to_target",
        device(s, "time_to_target")
            .and_then(|v| v.as_i64())
            .filter(|t| *t != 0)
            .map(|t| Value::from(minutes_until(t, now_s))),
    );
    out.put(
        "sunlight_correction_active",
        lower_text(device(s, "sunlight_correction_active")),
    );
    out.put("learning_mode", lower_text(device(s, "learning_mode")));
    out.put("heat_pump_ready", lower_text(device(s, "heatpump_ready")));
    out.put(
        "compressor_lockout_timeout",
        device(s, "compressor_lockout_timeout"),
    );
    out.put("local_ip", device(s, "local_ip"));
}

/// A thermostat with a fan: the minutes its timer has left and the length of a fan run.
fn fan_timer(s: &Snapshot, now_s: i64, out: &mut Topics) {
    let until = device(s, "fan_timer_timeout")
        .and_then(|v| v.as_i64())
        .unwrap_or(0);
    out.put(
        "fan_timer_remaining",
        Some(Value::from(minutes_until(until, now_s))),
    );
    out.put(
        "fan_duration",
        Some(Value::from(fan_run_seconds(&s.view) / 60)),
    );
}

/// A sensor reading to one decimal (20.934 °C shows as 20.9), as the Python server sends it.
/// Anything that is not a number is passed on unchanged.
fn one_decimal(v: Value) -> Value {
    match v.as_f64() {
        Some(x) => json_number((x * 10.0).round() / 10.0),
        None => v,
    }
}

/// Whole minutes from `now_s` until the Unix time `until_s`; 0 once it has passed.
fn minutes_until(until_s: i64, now_s: i64) -> i64 {
    until_s.saturating_sub(now_s).max(0) / 60
}

/// The battery's charge from its voltage: 3.5 V and below is empty, 4.0 V and above full.
pub fn battery_percent(volts: f64) -> i64 {
    (((volts - 3.5) / 0.5).clamp(0.0, 1.0) * 100.0).round() as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn snapshot(device: Value, shared: Value, record: Value) -> Snapshot {
        Snapshot {
            view: crate::thermostat::view::tests::view(shared, device),
            record,
            available: true,
        }
    }

    fn find<'a>(out: &'a [(&'static str, String)], suffix: &str) -> Option<&'a str> {
        out.iter()
            .find(|(s, _)| *s == suffix)
            .map(|(_, p)| p.as_str())
    }

    #[test]
    fn payloads_are_plain_text_json_numbers_and_empty_for_null() {
        assert_eq!(payload(&json!(true)), "true");
        assert_eq!(payload(&json!(false)), "false");
        assert_eq!(payload(&json!(null)), "");
        assert_eq!(payload(&json!(21.5)), "21.5");
        assert_eq!(payload(&json!(20)), "20");
        assert_eq!(payload(&json!("heat")), "heat");
        assert_eq!(payload(&json!({"mode": "x"})), r#"{"mode":"x"}"#);
    }

    #[test]
    fn raw_topics_cover_both_buckets_and_each_field() {
        let s = snapshot(
            json!({"away": false, "rssi": null, "a/b": 1, "c#": 2, "d\u{1}": 3, "": 4}),
            json!({"target_temperature": 21.5}),
            json!({}),
        );
        let out = raw(&s);
        let get = |t: &str| out.iter().find(|(k, _)| k == t).map(|(_, v)| v.as_str());
        assert_eq!(
            get("device"),
            Some(r#"{"away":false,"rssi":null,"a/b":1,"c#":2,"d\u0001":3,"":4}"#)
        );
        assert_eq!(get("device/away"), Some("false"));
        assert_eq!(get("device/rssi"), Some(""));
        assert_eq!(get("shared/target_temperature"), Some("21.5"));
        assert_eq!(out.len(), 5);
    }

    #[test]
    fn the_pin_hash_is_not_published() {
        let s = snapshot(
            json!({"temperature_lock": true, "temperature_lock_pin_hash": "kFRc/skLylZUKACup2bPzjQDUII=",
                   "temp_lock_pin_hash": "x"}),
            json!({}),
            json!({}),
        );
        let out = raw(&s);
        assert_eq!(
            out,
            vec![
                (
                    "device".to_string(),
                    r#"{"temperature_lock":true}"#.to_string()
                ),
                ("device/temperature_lock".to_string(), "true".to_string()),
                ("shared".to_string(), "{}".to_string()),
            ]
        );
    }

    #[test]
    fn home_assistant_state_follows_the_mode() {
        let record = json!({"mode": "range", "current_temperature": 20.55,
            "target_temperature": 21.0, "target_temperature_low": 19.0, "target_temperature_high": 24.0,
            "hvac": {"heater": true, "fan": true}, "has_fan": true, "fan_timer_active": false, "away": false,
            "eco_mode": "manual-eco"});
        let s = snapshot(
            json!({"current_humidity": 41, "battery_level": 3.9, "rssi": 45, "fan_timer_duration": 900,
                   "learning_mode": true, "filter_runtime_sec": 90000, "time_to_target": 0}),
            json!({}),
            record,
        );
        let out = home_assistant(&s, 1000);
        assert_eq!(find(&out, "mode"), Some("heat_cool"));
        assert_eq!(find(&out, "current_temperature"), Some("20.6"));
        assert_eq!(find(&out, "target_temperature"), Some(""));
        assert_eq!(find(&out, "target_temperature_low"), Some("19.0"));
        assert_eq!(find(&out, "target_temperature_high"), Some("24.0"));
        assert_eq!(find(&out, "action"), Some("heating"));
        assert_eq!(find(&out, "fan_mode"), Some("auto"));
        assert_eq!(find(&out, "preset"), Some("eco"));
        assert_eq!(find(&out, "current_humidity"), Some("41"));
        assert_eq!(find(&out, "battery"), Some("80"));
        assert_eq!(find(&out, "rssi"), Some("-45.0"));
        assert_eq!(find(&out, "learning_mode"), Some("true"));
        assert_eq!(find(&out, "filter_runtime_days"), Some("1.0"));
        assert_eq!(find(&out, "fan_duration"), Some("15"));
        assert_eq!(find(&out, "fan_running"), Some("true"));
        assert_eq!(find(&out, "time_to_target"), None);
        assert_eq!(find(&out, "outdoor_temperature"), None);
    }

    #[test]
    fn off_clears_every_target_and_no_shared_bucket_publishes_nothing() {
        let s = snapshot(
            json!({}),
            json!({}),
            json!({"mode": "off", "target_temperature": 20.0, "hvac": {"heater": true}}),
        );
        let out = home_assistant(&s, 0);
        assert_eq!(find(&out, "action"), Some("off"));
        for t in TARGETS {
            assert_eq!(find(&out, t), Some(""));
        }
        let heat = snapshot(
            json!({}),
            json!({}),
            json!({"mode": "heat", "target_temperature": 20.0}),
        );
        assert_eq!(
            find(&home_assistant(&heat, 0), "target_temperature"),
            Some("20.0")
        );
        assert_eq!(find(&home_assistant(&heat, 0), "action"), Some("idle"));
        let no_shared = snapshot(json!({}), json!(null), json!({"mode": "heat"}));
        assert!(home_assistant(&no_shared, 0).is_empty());
    }

    #[test]
    fn battery_and_minutes() {
        assert_eq!(battery_percent(3.4), 0);
        assert_eq!(battery_percent(3.75), 50);
        assert_eq!(battery_percent(4.2), 100);
        assert_eq!(minutes_until(1_000 + 600, 1_000), 10);
        assert_eq!(minutes_until(10, 1_000), 0);
    }
}
