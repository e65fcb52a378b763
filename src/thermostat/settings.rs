//! Device settings: the device-bucket fields a server may write (the firmware accepts them
//! from the cloud), each with the kind of value it takes.

use super::refusal::Refusal;
use crate::util::JsonMap;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Bool,
    /// A number within these bounds (inclusive).
    Number(f64, f64),
    Text,
    /// `C` or `F`.
    Scale,
}

/// Plausible bounds, so a typo (a humidity of 500, a fan run of a year) is refused rather
/// than sent to the thermostat. Temperatures are °C (outdoor thresholds go well below 0).
const TEMP: Kind = Kind::Number(-40.0, 50.0);
const PERCENT: Kind = Kind::Number(0.0, 100.0);
/// Seconds or minutes until something, or a Unix time: never negative.
const COUNT: Kind = Kind::Number(0.0, 1e12);
const FAN_SECONDS: Kind = Kind::Number(1.0, 43_200.0);
const FAN_MINUTES: Kind = Kind::Number(1.0, 720.0);
const HOUR_SECONDS: Kind = Kind::Number(0.0, 3600.0);
const DAY_SECONDS: Kind = Kind::Number(0.0, 86_400.0);

const FIELDS: &[(&str, Kind)] = &[
    ("lower_safety_temp_enabled", Kind::Bool),
    ("upper_safety_temp_enabled", Kind::Bool),
    ("lower_safety_temp", TEMP),
    ("upper_safety_temp", TEMP),
    ("temp_lock_on", Kind::Bool),
    ("temp_lock_pin_hash", Kind::Text),
    ("temp_lock_high_temp", TEMP),
    ("temp_lock_low_temp", TEMP),
    ("learning_mode", Kind::Bool),
    ("preconditioning_enabled", Kind::Bool),
    ("preconditioning_active", Kind::Bool),
    ("target_humidity_enabled", Kind::Bool),
    ("target_humidity", PERCENT),
    ("temperature_scale", Kind::Scale),
    ("time_to_target", COUNT),
    ("time_to_target_training_status", Kind::Text),
    ("sunlight_correction_enabled", Kind::Bool),
    ("fan_timer_duration", FAN_SECONDS),
    ("fan_timer_duration_minutes", FAN_MINUTES),
    ("fan_duty_cycle", HOUR_SECONDS),
    ("fan_duty_start_time", DAY_SECONDS),
    ("fan_duty_end_time", DAY_SECONDS),
    ("fan_schedule_speed", Kind::Text),
    ("heat_pump_aux_threshold_enabled", Kind::Bool),
    ("heat_pump_aux_threshold", TEMP),
    ("heat_pump_comp_threshold_enabled", Kind::Bool),
    ("heat_pump_comp_threshold", TEMP),
    ("equipment_type", Kind::Text),
    ("heat_source", Kind::Text),
    ("hot_water_boost_time_to_end", COUNT),
    ("hot_water_active", Kind::Bool),
    ("filter_reminder_enabled", Kind::Bool),
    ("filter_reminder_level", PERCENT),
    ("postal_code", Kind::Text),
    ("country_code", Kind::Text),
];

/// Names of every writable field, for docs/control-api.md and error messages.
pub fn names() -> impl Iterator<Item = &'static str> {
    FIELDS.iter().map(|(n, _)| *n)
}

/// Checks device settings: whitelisted fields with values of the right kind. Returns the
/// fields to merge into `device.S`.
pub fn validate(fields: &JsonMap) -> Result<JsonMap, Refusal> {
    if fields.is_empty() {
        return Err(Refusal::NothingToChange);
    }
    let unknown: Vec<&str> = fields
        .keys()
        .filter(|k| !FIELDS.iter().any(|(n, _)| n == k))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        return Err(Refusal::Invalid(format!(
            "Fields not cloud-writable: {}. Only device bucket mode-2 fields are accepted.",
            unknown.join(", ")
        )));
    }
    for (name, v) in fields {
        let kind = FIELDS
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, k)| *k)
            .unwrap_or(Kind::Text);
        let ok = match kind {
            Kind::Bool => v.is_boolean(),
            Kind::Number(lo, hi) => v.as_f64().is_some_and(|x| (lo..=hi).contains(&x)),
            Kind::Text => v.is_string(),
            Kind::Scale => matches!(v.as_str(), Some("C" | "F")),
        };
        if !ok {
            let expected = match kind {
                Kind::Bool => "true or false".to_string(),
                Kind::Number(lo, hi) => format!("a number from {lo} to {hi}"),
                Kind::Text => "a string".to_string(),
                Kind::Scale => "\"C\" or \"F\"".to_string(),
            };
            return Err(Refusal::Invalid(format!("{name} must be {expected}")));
        }
    }
    Ok(fields.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn message(v: Value) -> String {
        match validate(v.as_object().unwrap()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted {v}"),
        }
    }

    #[test]
    fn whitelist_and_kinds() {
        assert!(
            validate(
                json!({"learning_mode": false, "temperature_scale": "F"})
                    .as_object()
                    .unwrap()
            )
            .is_ok()
        );
        assert_eq!(
            message(json!({"learning_mode": true, "hvac_wires": "x", "name": "y"})),
            "Fields not cloud-writable: hvac_wires, name. Only device bucket mode-2 fields are accepted."
        );
        assert_eq!(
            message(json!({"learning_mode": "yes"})),
            "learning_mode must be true or false"
        );
        assert_eq!(
            message(json!({"target_humidity": null})),
            "target_humidity must be a number from 0 to 100"
        );
        assert_eq!(
            message(json!({"target_humidity": 500})),
            "target_humidity must be a number from 0 to 100"
        );
        assert_eq!(
            message(json!({"fan_timer_duration": 0})),
            "fan_timer_duration must be a number from 1 to 43200"
        );
        assert_eq!(
            message(json!({"temperature_scale": "K"})),
            "temperature_scale must be \"C\" or \"F\""
        );
        assert_eq!(message(json!({})), "No values to update");
    }
}
