//! What hearth publishes (retained) about one thermostat: the raw `device` and `shared` buckets,
//! one topic per field, and the Home Assistant state topics. Pure functions of a [`Snapshot`], so
//! every rule is testable without a broker.
//!
//! Payloads: strings as they are, booleans `true`/`false`, numbers as JSON numbers, objects and
//! lists as JSON, and null as an empty payload (which also deletes a retained message).

use std::sync::Arc;

use serde_json::Value;

use crate::thermostat::intent::Mode;
use crate::thermostat::reading::{
    Capabilities, Diagnostics, Eco, Fan, Outside, Reading, Reported, Targets,
};
use crate::thermostat::{View, json_number, pin};
use crate::util::number;

/// A thermostat as MQTT sees it, read once per publication: its buckets (the raw topics) and
/// its reading (Home Assistant's topics and discovery).
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub view: View,
    pub reading: Arc<Reading>,
}

impl Snapshot {
    pub fn available(&self) -> bool {
        self.reading.availability.available
    }

    /// Home Assistant's mode: `off`, `heat`, `cool` or `heat_cool`.
    pub fn ha_mode(&self) -> &'static str {
        match self.reading.mode_now() {
            Some(Mode::Heat | Mode::Emergency) => "heat",
            Some(Mode::Cool) => "cool",
            Some(Mode::Range) => "heat_cool",
            Some(Mode::Off) | None => "off",
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

/// `(topic suffix after {P}/{S}/ha/, payload)` for Home Assistant: the reading's mapping, every
/// field decided (see [`crate::thermostat::reading`]). Published once both the `device` and
/// `shared` buckets exist; a topic whose source field is missing is left out.
pub fn home_assistant(s: &Snapshot, now_s: i64) -> Vec<(&'static str, String)> {
    if s.view.device.is_none() || s.view.shared.is_none() {
        return Vec::new();
    }
    let Reading {
        serial: _,
        api_key: _,
        // Availability has its own topic; the name and the firmware's version are discovery's
        // (`discovery::Fingerprint`).
        availability: _,
        name: _,
        room,
        targets: Targets { target, high, low },
        humidity,
        target_humidity: _,
        target_humidity_enabled: _,
        mode: _,
        hvac,
        fan:
            Fan {
                timer_active,
                timer_timeout,
                duration_s,
                switched_on,
            },
        eco:
            Eco {
                high: _,
                low: _,
                mode: eco_mode,
                leaf,
            },
        is_online: _,
        has_leaf: _,
        scale: _,
        capabilities:
            Capabilities {
                can_heat: _,
                can_cool: _,
                has_fan,
                has_emer_heat: _,
                has_humidifier: _,
                has_dehumidifier: _,
            },
        safety: _,
        diagnostics:
            Diagnostics {
                software_version: _,
                time_to_target,
                time_to_target_training_status: _,
                learning_mode,
                preconditioning_enabled: _,
                backplate_temperature: _,
                local_ip,
                mac_address: _,
                rssi,
                filter_replacement_needed,
                filter_runtime_sec,
                sunlight_correction_active,
                heatpump_ready,
                compressor_lockout_timeout,
            },
        structure_id: _,
        away,
        sensed_away,
        schedule_mode: _,
        lock: _,
        bounds: _,
        outside: Outside { weather, reported },
        time_zone: _,
        battery_volts: _,
        battery_percent,
        reported: _,
        change,
        course: _,
    } = &*s.reading;
    let mut out = Topics::default();

    // The mode, the room's temperature and humidity, and the targets the mode uses.
    let mode = s.ha_mode();
    out.put("mode", Some(Value::from(mode)));
    out.put("current_temperature", some(room).map(one_decimal));
    out.put("current_humidity", some(humidity));
    let used: [Option<&Reported>; 3] = match mode {
        "heat" | "cool" => [Some(target), None, None],
        "heat_cool" => [None, Some(low), Some(high)],
        _ => [None, None, None],
    };
    for (suffix, v) in TARGETS.into_iter().zip(used) {
        // Unused (or unknown) targets are published empty so a stale retained value is cleared.
        out.put(
            suffix,
            Some(v.and_then(some).unwrap_or_else(|| Value::from(""))),
        );
    }

    // What the thermostat is doing (heating, cooling, the fan, idle), its fan mode and preset.
    let fan_on = *timer_active || *switched_on;
    let action = if mode == "off" {
        "off"
    } else if hvac.heating() {
        "heating"
    } else if hvac.cooling() {
        "cooling"
    } else if fan_on || hvac.fan {
        "fan"
    } else {
        "idle"
    };
    out.put("action", Some(Value::from(action)));
    if *has_fan {
        out.put(
            "fan_mode",
            Some(Value::from(if fan_on { "on" } else { "auto" })),
        );
    }
    let preset = if *away {
        "away"
    } else if eco_mode.as_str() == Some("manual-eco") {
        "eco"
    } else {
        "home"
    };
    out.put("preset", Some(Value::from(preset)));

    // The sensors. Outdoors: the weather hearth holds for the thermostat's place (what
    // `/status` shows), else what the thermostat's own buckets say.
    out.put(
        "outdoor_temperature",
        weather
            .map(json_number)
            .or_else(|| some(reported))
            .map(one_decimal),
    );
    out.put(
        "occupancy",
        Some(Value::from(if *sensed_away { "away" } else { "home" })),
    );
    out.put("fan_running", Some(Value::Bool(hvac.fan)));
    out.put("eco", Some(Value::Bool(*leaf)));
    out.put("battery", battery_percent.map(Value::from));
    out.put(
        "rssi",
        some(rssi)
            .and_then(|v| number(&v))
            .map(|x| json_number(-x.abs())),
    );
    out.put(
        "filter_replacement_needed",
        lower_text(some(filter_replacement_needed)),
    );
    out.put(
        "filter_runtime_days",
        filter_runtime_sec
            .as_f64()
            .map(|secs| json_number((secs / 8640.0).round() / 10.0)),
    );
    out.put(
        "time_to_target",
        time_to_target
            .as_i64()
            .filter(|t| *t != 0)
            .map(|t| Value::from(minutes_until(t, now_s))),
    );
    out.put(
        "sunlight_correction_active",
        lower_text(some(sunlight_correction_active)),
    );
    out.put("learning_mode", lower_text(some(learning_mode)));
    out.put("heat_pump_ready", lower_text(some(heatpump_ready)));
    out.put(
        "compressor_lockout_timeout",
        some(compressor_lockout_timeout),
    );
    out.put("local_ip", some(local_ip));

    // The latest change and whether the thermostat has taken it: its state (`sent`, `waiting`
    // or `taken`) and the whole record as `/status` has it.
    out.put("last_change", change.map(|c| Value::from(c.state())));
    out.put(
        "last_change_json",
        change.and_then(|c| serde_json::to_value(c).ok()),
    );

    // A thermostat with a fan: the minutes its timer has left and the length of a fan run.
    if *has_fan {
        let until = timer_timeout.as_i64().unwrap_or(0);
        out.put(
            "fan_timer_remaining",
            Some(Value::from(minutes_until(until, now_s))),
        );
        out.put("fan_duration", Some(Value::from(duration_s / 60)));
    }
    out.0
}

/// The temperature topics one mode uses; the others are published empty (cleared).
const TARGETS: [&str; 3] = [
    "target_temperature",
    "target_temperature_low",
    "target_temperature_high",
];

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

/// A reported value, if the thermostat reported one.
fn some(v: &Reported) -> Option<Value> {
    (!v.is_null()).then(|| v.to_value())
}

/// A field's text in lower case (`True` and `true` alike).
fn lower_text(v: Option<Value>) -> Option<Value> {
    v.map(|v| Value::String(payload(&v).to_ascii_lowercase()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thermostat::reading::NoWeather;
    use serde_json::json;

    fn snapshot(device: Value, shared: Value) -> Snapshot {
        let view = crate::thermostat::view::tests::view(shared, device);
        let available = crate::thermostat::reading::tests::available();
        let reading =
            crate::thermostat::read(&view, available, &NoWeather, &crate::zone::Zone::utc(), 0);
        Snapshot {
            view,
            reading: Arc::new(reading),
        }
    }

    fn find<'a>(out: &'a [(&'static str, String)], suffix: &str) -> Option<&'a str> {
        out.iter()
            .find(|(s, _)| *s == suffix)
            .map(|(_, p)| p.as_str())
    }

    #[test]
    fn the_latest_change_and_whether_it_was_taken() {
        let mut s = snapshot(json!({}), json!({}));
        let out = home_assistant(&s, 0);
        assert_eq!(find(&out, "last_change"), None, "before the first change");
        let mut reading = (*s.reading).clone();
        reading.change = Some(crate::thermostat::Change {
            kind: crate::state::ChangeKind::Setpoint,
            sent_ms: 1_000,
            taken: crate::thermostat::Taken::At(2_000),
            origin: crate::hub::Origin::Presence,
        });
        s.reading = Arc::new(reading);
        let out = home_assistant(&s, 0);
        assert_eq!(find(&out, "last_change"), Some("taken"));
        let record: Value = serde_json::from_str(find(&out, "last_change_json").unwrap()).unwrap();
        assert_eq!(
            record,
            json!({"kind": "setpoint", "state": "taken",
                   "sent_at": "1970-01-01T00:00:01.000Z", "taken_at": "1970-01-01T00:00:02.000Z",
                   "origin": "presence"})
        );
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
        let s = snapshot(
            json!({"current_humidity": 41, "battery_level": 3.9, "rssi": 45, "fan_timer_duration": 900,
                   "learning_mode": true, "filter_runtime_sec": 90000, "time_to_target": 0,
                   "has_fan": true, "eco": {"mode": "manual-eco"}}),
            json!({"target_temperature_type": "range", "current_temperature": 20.55,
                   "target_temperature": 21.0, "target_temperature_low": 19.0, "target_temperature_high": 24.0,
                   "hvac_heater_state": true, "hvac_fan_state": true}),
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
            json!({"target_temperature_type": "off", "target_temperature": 20.0,
                   "hvac_heater_state": true}),
        );
        let out = home_assistant(&s, 0);
        assert_eq!(find(&out, "action"), Some("off"));
        for t in TARGETS {
            assert_eq!(find(&out, t), Some(""));
        }
        let heat = snapshot(
            json!({}),
            json!({"target_temperature_type": "heat", "target_temperature": 20.0}),
        );
        assert_eq!(
            find(&home_assistant(&heat, 0), "target_temperature"),
            Some("20.0")
        );
        assert_eq!(find(&home_assistant(&heat, 0), "action"), Some("idle"));
        let no_shared = snapshot(json!({}), json!(null));
        assert!(home_assistant(&no_shared, 0).is_empty());
    }

    #[test]
    fn minutes() {
        assert_eq!(minutes_until(1_000 + 600, 1_000), 10);
        assert_eq!(minutes_until(10, 1_000), 0);
    }
}
