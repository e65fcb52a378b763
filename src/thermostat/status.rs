//! The status a thermostat is derived to: one flat record (see the field table in
//! docs/control-api.md) that `/status`, `/api/devices`, the dashboard, MQTT and history all
//! read, so every surface shows a thermostat the same way.
//!
//! The record is a typed struct whose fields serialize in the documented order: building and
//! writing it takes a few microseconds, where the same record as a map of JSON values (every
//! key allocated and hashed) took several times that on every `GET /status`.

use serde::Serialize;
use serde_json::Value;

use super::names;
use super::plan::{fan_run_seconds, fan_running};
use super::view::{View, truthy};
use crate::presence::Availability;
use crate::util::clock;
pub use crate::weather::Outdoor;

/// A thermostat's status record. Values passed through from the thermostat's buckets are kept
/// as it sent them (`Value`, `null` when absent).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Status {
    pub serial: String,
    pub api_key: Option<String>,
    pub is_available: bool,
    pub last_seen: Option<String>,
    pub name: String,
    pub current_temperature: Value,
    pub target_temperature: Value,
    pub target_temperature_high: Value,
    pub target_temperature_low: Value,
    pub humidity: Value,
    pub target_humidity: Value,
    pub target_humidity_enabled: bool,
    pub mode: Value,
    pub hvac: Hvac,
    pub fan_timer_active: bool,
    pub fan_timer_timeout: Value,
    pub eco_temperatures: HighLow,
    pub is_online: bool,
    pub has_leaf: bool,
    pub software_version: Value,
    pub temperature_scale: Value,
    pub capabilities: Capabilities,
    pub can_heat: bool,
    pub can_cool: bool,
    pub has_fan: bool,
    pub has_emer_heat: bool,
    pub eco_mode: Value,
    pub time_to_target: Value,
    pub time_to_target_training_status: Value,
    pub safety_state: Value,
    pub safety_temp_activating_hvac: Value,
    pub learning_mode: Value,
    pub preconditioning_enabled: Value,
    pub backplate_temperature: Value,
    pub local_ip: Value,
    pub mac_address: Value,
    pub structure_id: Value,
    pub away: bool,
    pub schedule_mode: Value,
    pub fan_timer_duration: i64,
    pub temperature_lock: Lock,
    pub temperature_bounds: Bounds,
    /// °C outside the thermostat's place (its postal code and country), from the last weather
    /// answer for that place; `null` until there is one (or with `WEATHER_PROVIDER=off`).
    /// [`status`] leaves it `null`: the control API fills it in (see [`Outdoor`]).
    pub outdoor_temperature: Option<f64>,
}

/// The outdoor temperature at the thermostat's place (see [`Outdoor`]).
pub fn outdoor_temperature(view: &View, outdoor: &dyn Outdoor) -> Option<f64> {
    let (postal, country) = (
        super::document::location(view, "postal_code"),
        super::document::location(view, "country_code"),
    );
    if postal.is_empty() {
        return None;
    }
    // The firmware asks with `US` when it knows no country.
    outdoor.celsius(postal, if country.is_empty() { "US" } else { country })
}

/// What the equipment is doing, from the `hvac_*_state` fields (and the device's humidity ones).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hvac {
    pub heater: bool,
    pub heat_x2: bool,
    pub heat_x3: bool,
    pub ac: bool,
    pub cool_x2: bool,
    pub cool_x3: bool,
    pub fan: bool,
    pub aux_heat: bool,
    pub emer_heat: bool,
    pub alt_heat: bool,
    pub humidifier: bool,
    pub dehumidifier: bool,
    pub auto_dehum: bool,
    pub fan_cooling: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Capabilities {
    pub can_heat: bool,
    pub can_cool: bool,
    pub has_fan: bool,
    pub has_emer_heat: bool,
    pub has_humidifier: bool,
    pub has_dehumidifier: bool,
}

/// The eco temperatures, as stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HighLow {
    pub high: Value,
    pub low: Value,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Lock {
    pub enabled: bool,
    pub low: Value,
    pub high: Value,
}

/// The bounds setpoints are clamped to, in °C.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bounds {
    pub low: f64,
    pub high: f64,
}

impl Status {
    /// As a JSON value, for code that reads it field by field.
    pub fn to_value(&self) -> Value {
        // Serializing plain fields cannot fail.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The whole record: [`status`]'s fields with the thermostat's availability.
pub fn record(view: &View, availability: Availability, now_ms: i64) -> Status {
    Status {
        is_available: availability.available,
        last_seen: availability.last_seen_ms.map(clock::iso8601_ms),
        ..status(view, now_ms)
    }
}

/// Every field but availability (which is not in the buckets), as a JSON value.
pub fn derive(view: &View, now_ms: i64) -> Value {
    status(view, now_ms).to_value()
}

/// Every field but availability: not available, never seen.
pub fn status(view: &View, now_ms: i64) -> Status {
    let serial = view.serial.as_str();
    let sh = |f: &str| view.shared_field(f);
    let d = |f: &str| view.device_field(f);
    let either = |f: &str| view.field(f).cloned().unwrap_or(Value::Null);
    let dev = |f: &str| d(f).cloned().unwrap_or(Value::Null);
    let hvac_shared = |f: &str| truthy(sh(f));
    let hvac_device = |f: &str| truthy(d(f));
    let (can_heat, can_cool) = (view.flag("can_heat", true), view.flag("can_cool", true));
    let (has_fan, has_emer_heat) = (
        view.flag("has_fan", false),
        view.flag("has_emer_heat", false),
    );
    let (low, high) = view.bounds();
    let structure_id = sh("structure_id")
        .or_else(|| d("structure_id"))
        .cloned()
        .or_else(|| {
            view.structure
                .as_ref()
                .map(|_| Value::String(view.structure_key.trim_start_matches("structure.").into()))
        })
        .unwrap_or(Value::Null);
    Status {
        serial: serial.to_string(),
        api_key: view.api_key.clone(),
        is_available: false,
        last_seen: None,
        name: names::name(view).unwrap_or_else(|| serial.to_string()),
        current_temperature: either("current_temperature"),
        target_temperature: either("target_temperature"),
        target_temperature_high: either("target_temperature_high"),
        target_temperature_low: either("target_temperature_low"),
        humidity: dev("current_humidity"),
        target_humidity: dev("target_humidity"),
        target_humidity_enabled: truthy(d("target_humidity_enabled")),
        mode: either("target_temperature_type"),
        hvac: Hvac {
            heater: hvac_shared("hvac_heater_state"),
            heat_x2: hvac_shared("hvac_heat_x2_state"),
            heat_x3: hvac_shared("hvac_heat_x3_state"),
            ac: hvac_shared("hvac_ac_state"),
            cool_x2: hvac_shared("hvac_cool_x2_state"),
            cool_x3: hvac_shared("hvac_cool_x3_state"),
            fan: hvac_shared("hvac_fan_state"),
            aux_heat: hvac_shared("hvac_aux_heater_state"),
            emer_heat: hvac_shared("hvac_emer_heat_state"),
            alt_heat: hvac_shared("hvac_alt_heat_state"),
            humidifier: hvac_device("humidifier_state"),
            dehumidifier: hvac_device("dehumidifier_state"),
            auto_dehum: hvac_device("auto_dehum_state"),
            fan_cooling: hvac_device("fan_cooling_state"),
        },
        fan_timer_active: fan_running(view, now_ms),
        fan_timer_timeout: d("fan_timer_timeout").cloned().unwrap_or(Value::from(0)),
        eco_temperatures: HighLow {
            high: dev("away_temperature_high"),
            low: dev("away_temperature_low"),
        },
        is_online: d("is_online").and_then(Value::as_bool).unwrap_or(false),
        has_leaf: d("leaf").and_then(Value::as_bool).unwrap_or(false),
        software_version: dev("current_version"),
        temperature_scale: d("temperature_scale").cloned().unwrap_or(Value::from("C")),
        capabilities: Capabilities {
            can_heat,
            can_cool,
            has_fan,
            has_emer_heat,
            has_humidifier: view.flag("has_humidifier", false),
            has_dehumidifier: view.flag("has_dehumidifier", false),
        },
        can_heat,
        can_cool,
        has_fan,
        has_emer_heat,
        eco_mode: d("eco")
            .and_then(|e| e.get("mode"))
            .cloned()
            .unwrap_or(Value::Null),
        time_to_target: dev("time_to_target"),
        time_to_target_training_status: dev("time_to_target_training_status"),
        safety_state: dev("safety_state"),
        safety_temp_activating_hvac: dev("safety_temp_activating_hvac"),
        learning_mode: dev("learning_mode"),
        preconditioning_enabled: dev("preconditioning_enabled"),
        backplate_temperature: dev("backplate_temperature"),
        local_ip: dev("local_ip"),
        mac_address: dev("mac_address"),
        structure_id,
        away: view.away(),
        schedule_mode: either("schedule_mode"),
        fan_timer_duration: fan_run_seconds(view),
        temperature_lock: Lock {
            enabled: truthy(d("temperature_lock")),
            low: dev("temperature_lock_low_temp"),
            high: dev("temperature_lock_high_temp"),
        },
        temperature_bounds: Bounds { low, high },
        outdoor_temperature: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Bucket, Compact, DeviceData};
    use serde_json::json;

    fn data(buckets: Value) -> DeviceData {
        let mut d = DeviceData::default();
        for (k, v) in buckets.as_object().unwrap() {
            d.buckets.insert(
                k.clone(),
                Bucket {
                    revision: 1,
                    timestamp: 1,
                    updated_at: 1,
                    value: Compact::from_map(v.as_object().unwrap()),
                },
            );
        }
        d
    }

    #[test]
    fn fields_come_from_shared_then_device() {
        let now = 1_800_000_000_000;
        let d = data(json!({
            "shared.S": {"current_temperature": 0.0, "target_temperature": 21.5, "target_temperature_type": "heat",
                         "hvac_heater_state": true, "can_cool": false},
            "device.S": {"current_temperature": 19.0, "current_humidity": 44, "where_id": "00000000-0000-0000-0000-00010000000c",
                         "fan_timer_timeout": now / 1000 + 60, "eco": {"mode": "manual-eco"}, "has_fan": true,
                         "temperature_scale": "F", "mac_address": "18b4300a0001"},
            "structure.default": {"manual_eco_all": true},
        }));
        let r = derive(&View::of("S", &d, None), now);
        // 0 °C is a reading, not a missing value.
        assert_eq!(r["current_temperature"], json!(0.0));
        assert_eq!(r["target_temperature"], json!(21.5));
        assert_eq!(r["mode"], json!("heat"));
        assert_eq!(r["name"], json!("Living Room"));
        assert_eq!(r["humidity"], json!(44));
        assert_eq!(r["hvac"]["heater"], json!(true));
        assert_eq!(r["hvac"]["ac"], json!(false));
        assert_eq!(r["fan_timer_active"], json!(true));
        assert_eq!(r["eco_mode"], json!("manual-eco"));
        assert_eq!(
            (r["can_cool"].clone(), r["capabilities"]["can_cool"].clone()),
            (json!(false), json!(false))
        );
        assert_eq!(r["has_fan"], json!(true));
        assert_eq!(r["away"], json!(true));
        assert_eq!(r["structure_id"], json!("default"));
        assert_eq!(r["temperature_scale"], json!("F"));
        assert_eq!(r["mac_address"], json!("18b4300a0001"));
        assert_eq!(r["target_temperature_low"], Value::Null);
    }

    #[test]
    fn fields_leave_in_the_order_they_always_have() {
        let r = serde_json::to_string(&status(&View::default(), 0)).unwrap();
        let r: serde_json::Map<String, Value> = serde_json::from_str(&r).unwrap();
        let keys: Vec<&str> = r.keys().map(String::as_str).collect();
        // The order of the record before it was a struct, which clients may have come to rely
        // on.
        let before = "serial api_key is_available last_seen name current_temperature \
            target_temperature target_temperature_high target_temperature_low humidity \
            target_humidity target_humidity_enabled mode hvac fan_timer_active \
            fan_timer_timeout eco_temperatures is_online has_leaf software_version \
            temperature_scale capabilities can_heat can_cool has_fan has_emer_heat eco_mode \
            time_to_target time_to_target_training_status safety_state \
            safety_temp_activating_hvac learning_mode preconditioning_enabled \
            backplate_temperature local_ip mac_address structure_id away schedule_mode \
            fan_timer_duration temperature_lock temperature_bounds outdoor_temperature";
        assert_eq!(keys, before.split_whitespace().collect::<Vec<_>>());
        let bounds = &r["temperature_bounds"];
        assert_eq!(bounds, &json!({"low": 7.222, "high": 35.0}));
        assert_eq!(r["hvac"].as_object().unwrap().len(), 14);
    }
}
