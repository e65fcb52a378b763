//! `set_device_setting`: the device-bucket fields a server may write (the firmware accepts
//! them from the cloud), each with the kind of value it takes.

use serde_json::Value;

use super::ControlError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bool,
    Number,
    Text,
    /// `C` or `F`.
    Scale,
}

const FIELDS: &[(&str, Kind)] = &[
    ("lower_safety_temp_enabled", Kind::Bool),
    ("upper_safety_temp_enabled", Kind::Bool),
    ("lower_safety_temp", Kind::Number),
    ("upper_safety_temp", Kind::Number),
    ("temp_lock_on", Kind::Bool),
    ("temp_lock_pin_hash", Kind::Text),
    ("temp_lock_high_temp", Kind::Number),
    ("temp_lock_low_temp", Kind::Number),
    ("learning_mode", Kind::Bool),
    ("preconditioning_enabled", Kind::Bool),
    ("preconditioning_active", Kind::Bool),
    ("target_humidity_enabled", Kind::Bool),
    ("target_humidity", Kind::Number),
    ("temperature_scale", Kind::Scale),
    ("time_to_target", Kind::Number),
    ("time_to_target_training_status", Kind::Text),
    ("sunlight_correction_enabled", Kind::Bool),
    ("fan_timer_duration", Kind::Number),
    ("fan_timer_duration_minutes", Kind::Number),
    ("fan_duty_cycle", Kind::Number),
    ("fan_duty_start_time", Kind::Number),
    ("fan_duty_end_time", Kind::Number),
    ("fan_schedule_speed", Kind::Text),
    ("heat_pump_aux_threshold_enabled", Kind::Bool),
    ("heat_pump_aux_threshold", Kind::Number),
    ("heat_pump_comp_threshold_enabled", Kind::Bool),
    ("heat_pump_comp_threshold", Kind::Number),
    ("equipment_type", Kind::Text),
    ("heat_source", Kind::Text),
    ("hot_water_boost_time_to_end", Kind::Number),
    ("hot_water_active", Kind::Bool),
    ("filter_reminder_enabled", Kind::Bool),
    ("filter_reminder_level", Kind::Number),
    ("postal_code", Kind::Text),
    ("country_code", Kind::Text),
];

/// Names of every writable field, for the README and error messages.
pub fn names() -> impl Iterator<Item = &'static str> {
    FIELDS.iter().map(|(n, _)| *n)
}

/// Checks a `set_device_setting` value: an object of whitelisted fields with values of the
/// right kind. Returns the fields to merge into `device.S`.
pub fn validate(value: &Value) -> Result<crate::util::JsonMap, ControlError> {
    let Value::Object(fields) = value else {
        return Err(ControlError::Invalid(
            "set_device_setting value must be an object of field names to values".into(),
        ));
    };
    if fields.is_empty() {
        return Err(ControlError::NoValues);
    }
    let unknown: Vec<&str> = fields
        .keys()
        .filter(|k| !FIELDS.iter().any(|(n, _)| n == k))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        return Err(ControlError::Invalid(format!(
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
            Kind::Number => v.as_f64().is_some_and(f64::is_finite),
            Kind::Text => v.is_string(),
            Kind::Scale => matches!(v.as_str(), Some("C" | "F")),
        };
        if !ok {
            let expected = match kind {
                Kind::Bool => "true or false",
                Kind::Number => "a number",
                Kind::Text => "a string",
                Kind::Scale => "\"C\" or \"F\"",
            };
            return Err(ControlError::Invalid(format!("{name} must be {expected}")));
        }
    }
    Ok(fields.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(v: Value) -> String {
        match validate(&v) {
            Err(e) => e.status_and_message().1,
            Ok(_) => panic!("accepted {v}"),
        }
    }

    #[test]
    fn whitelist_and_kinds() {
        assert!(validate(&json!({"learning_mode": false, "temperature_scale": "F"})).is_ok());
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
            "target_humidity must be a number"
        );
        assert_eq!(
            message(json!({"temperature_scale": "K"})),
            "temperature_scale must be \"C\" or \"F\""
        );
        assert_eq!(message(json!({})), "No values to update");
        assert_eq!(
            message(json!(5)),
            "set_device_setting value must be an object of field names to values"
        );
    }
}
