//! The status a thermostat is derived to: one flat record (see the README's field table) that
//! `/status`, `/api/devices`, the dashboard, MQTT and history all read, so every surface shows a
//! thermostat the same way.

use serde_json::{Value, json};

use super::names;
use super::plan::{fan_run_seconds, fan_running};
use super::view::{View, truthy};
use crate::presence::Availability;
use crate::util::clock;

/// The whole record: [`derive`]'s fields with the thermostat's availability.
pub fn record(view: &View, availability: Availability, now_ms: i64) -> Value {
    let mut r = derive(view, now_ms);
    if let Value::Object(m) = &mut r {
        m.insert("is_available".into(), Value::Bool(availability.available));
        m.insert(
            "last_seen".into(),
            json!(availability.last_seen_ms.map(clock::iso8601_ms)),
        );
    }
    r
}

/// Every field but availability (which is not in the buckets), in the documented order.
pub fn derive(view: &View, now_ms: i64) -> Value {
    let serial = view.serial.as_str();
    let structure = view.structure.as_ref();
    let sh = |f: &str| view.shared_field(f);
    let d = |f: &str| view.device_field(f);
    let either = |f: &str| view.field(f).cloned().unwrap_or(Value::Null);
    let dev = |f: &str| d(f).cloned().unwrap_or(Value::Null);
    let hvac_shared = |f: &str| Value::Bool(truthy(sh(f)));
    let hvac_device = |f: &str| Value::Bool(truthy(d(f)));
    let fan_timer_timeout = d("fan_timer_timeout").cloned().unwrap_or(Value::from(0));
    let fan_timer_active = fan_running(view, now_ms);
    let name = names::name(view).unwrap_or_else(|| serial.to_string());
    let (can_heat, can_cool) = (view.flag("can_heat", true), view.flag("can_cool", true));
    let (has_fan, has_emer_heat) = (
        view.flag("has_fan", false),
        view.flag("has_emer_heat", false),
    );
    let (lowest, highest) = view.bounds();
    let bounds = json!({"low": lowest, "high": highest});
    let lock = json!({
        "enabled": truthy(d("temperature_lock")),
        "low": dev("temperature_lock_low_temp"),
        "high": dev("temperature_lock_high_temp"),
    });
    let away = view.away();
    let structure_id = sh("structure_id")
        .or_else(|| d("structure_id"))
        .cloned()
        .or_else(|| {
            structure
                .map(|_| Value::String(view.structure_key.trim_start_matches("structure.").into()))
        })
        .unwrap_or(Value::Null);
    let mut record = json!({
        "serial": serial,
        "api_key": view.api_key,
        "is_available": false,
        "last_seen": null,
        "name": name,
        "current_temperature": either("current_temperature"),
        "target_temperature": either("target_temperature"),
        "target_temperature_high": either("target_temperature_high"),
        "target_temperature_low": either("target_temperature_low"),
        "humidity": dev("current_humidity"),
        "target_humidity": dev("target_humidity"),
        "target_humidity_enabled": truthy(d("target_humidity_enabled")),
        "mode": either("target_temperature_type"),
        "hvac": {
            "heater": hvac_shared("hvac_heater_state"),
            "heat_x2": hvac_shared("hvac_heat_x2_state"),
            "heat_x3": hvac_shared("hvac_heat_x3_state"),
            "ac": hvac_shared("hvac_ac_state"),
            "cool_x2": hvac_shared("hvac_cool_x2_state"),
            "cool_x3": hvac_shared("hvac_cool_x3_state"),
            "fan": hvac_shared("hvac_fan_state"),
            "aux_heat": hvac_shared("hvac_aux_heater_state"),
            "emer_heat": hvac_shared("hvac_emer_heat_state"),
            "alt_heat": hvac_shared("hvac_alt_heat_state"),
            "humidifier": hvac_device("humidifier_state"),
            "dehumidifier": hvac_device("dehumidifier_state"),
            "auto_dehum": hvac_device("auto_dehum_state"),
            "fan_cooling": hvac_device("fan_cooling_state"),
        },
        "fan_timer_active": fan_timer_active,
        "fan_timer_timeout": fan_timer_timeout,
        "eco_temperatures": {"high": dev("away_temperature_high"), "low": dev("away_temperature_low")},
        "is_online": d("is_online").and_then(Value::as_bool).unwrap_or(false),
        "has_leaf": d("leaf").and_then(Value::as_bool).unwrap_or(false),
        "software_version": dev("current_version"),
        "temperature_scale": d("temperature_scale").cloned().unwrap_or(Value::from("C")),
        "capabilities": {
            "can_heat": can_heat,
            "can_cool": can_cool,
            "has_fan": has_fan,
            "has_emer_heat": has_emer_heat,
            "has_humidifier": view.flag("has_humidifier", false),
            "has_dehumidifier": view.flag("has_dehumidifier", false),
        },
        "can_heat": can_heat,
        "can_cool": can_cool,
        "has_fan": has_fan,
        "has_emer_heat": has_emer_heat,
        "eco_mode": d("eco").and_then(|e| e.get("mode")).cloned().unwrap_or(Value::Null),
        "time_to_target": dev("time_to_target"),
        "time_to_target_training_status": dev("time_to_target_training_status"),
        "safety_state": dev("safety_state"),
        "safety_temp_activating_hvac": dev("safety_temp_activating_hvac"),
        "learning_mode": dev("learning_mode"),
        "preconditioning_enabled": dev("preconditioning_enabled"),
        "backplate_temperature": dev("backplate_temperature"),
        "local_ip": dev("local_ip"),
        "mac_address": dev("mac_address"),
        "structure_id": structure_id,
        "away": away,
        "schedule_mode": either("schedule_mode"),
    });
    // Added apart: one json! this long reaches the macro's recursion limit.
    if let Value::Object(m) = &mut record {
        m.insert(
            "fan_timer_duration".into(),
            Value::from(fan_run_seconds(view)),
        );
        m.insert("temperature_lock".into(), lock);
        m.insert("temperature_bounds".into(), bounds);
    }
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Bucket, Compact, DeviceData};

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
}
