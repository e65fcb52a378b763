//! The state a simulated Gen2 thermostat starts with (shapes from real device buckets).

use serde_json::json;
use sha1::{Digest, Sha1};

use crate::util::JsonMap;

/// Stable per-serial identity: Wi-Fi MAC (Nest OUI), Basic-auth password, weave id.
pub struct Identity {
    pub mac: String,
    pub password: String,
    pub weave_id: String,
    pub suffix: String,
}

pub fn identity(serial: &str) -> Identity {
    let digest = Sha1::digest(serial.as_bytes());
    let hex = crate::util::hex(&digest);
    Identity {
        mac: format!("18b430{}", &hex[..6]),
        password: hex[6..38].to_string(),
        weave_id: format!(
            "18B43000{}",
            hex[38..40].to_uppercase() + &hex[..6].to_uppercase()
        ),
        suffix: hex[..8].to_uppercase(),
    }
}

fn object(v: serde_json::Value) -> JsonMap {
    v.as_object().cloned().unwrap_or_default()
}

pub fn device(serial: &str, mac: &str) -> JsonMap {
    object(json!({
        "serial_number": serial,
        "mac_address": mac,
        "local_ip": "192.168.1.50",
        "model_version": "Display-2.12",
        "current_version": "5.9.4-5",
        "backplate_model": "Backplate-2.8",
        "temperature_scale": "C",
        "has_fan": true,
        "has_emer_heat": false,
        "has_aux_heat": false,
        "has_heat_pump": false,
        "has_humidifier": false,
        "has_dehumidifier": false,
        "fan_timer_timeout": 0,
        "fan_timer_duration": 900,
        "fan_control_state": false,
        "current_humidity": 44,
        "backplate_temperature": 20.9,
        "battery_level": 3.93,
        "leaf": false,
        "learning_mode": true,
        "time_to_target": 0,
        "eco": {"mode": "schedule", "mode_update_timestamp": 0},
        "away_temperature_low": 12.5,
        "away_temperature_high": 26.0,
        "postal_code": "94304",
        "country_code": "US"
    }))
}

pub fn shared() -> JsonMap {
    object(json!({
        "current_temperature": 20.5,
        "target_temperature": 21.0,
        "target_temperature_low": 19.0,
        "target_temperature_high": 24.0,
        "target_temperature_type": "heat",
        "target_change_pending": false,
        "can_heat": true,
        "can_cool": true,
        "hvac_heater_state": false,
        "hvac_ac_state": false,
        "hvac_fan_state": false,
        "auto_away": 0,
        "name": ""
    }))
}

/// Days "0".."6" (the firmware's 0 is Monday): 19 °C overnight, 21 °C from 07:00.
pub fn schedule() -> JsonMap {
    let day = json!({
        "0": {"time": 0, "type": "HEAT", "temp": 19.0, "entry_type": "continuation"},
        "1": {"time": 25200, "type": "HEAT", "temp": 21.0, "entry_type": "setpoint"},
        "2": {"time": 79200, "type": "HEAT", "temp": 19.0, "entry_type": "setpoint"}
    });
    let days: serde_json::Map<String, serde_json::Value> =
        (0..7).map(|d| (d.to_string(), day.clone())).collect();
    object(json!({"ver": 2, "name": "", "schedule_mode": "HEAT", "days": days}))
}
