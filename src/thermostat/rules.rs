//! What a thermostat can do and what it accepts, read from its own buckets: capabilities and
//! the safety bounds every setpoint is clamped to.

use serde_json::Value;

use crate::util::JsonMap;

/// Setpoints outside these are clamped (45–95 °F), unless the thermostat reports its own
/// `safety_temp_min` / `safety_temp_max`.
pub const DEFAULT_MIN_C: f64 = 7.222;
pub const DEFAULT_MAX_C: f64 = 35.0;

/// Whether a firmware flag is on: `true`, a non-zero number or a non-empty string (the
/// firmware is not consistent about which it sends).
pub fn truthy(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        _ => false,
    }
}

/// A thermostat's `shared.S` and `device.S` values, as a command sees them.
#[derive(Clone, Copy, Default)]
pub struct View<'a> {
    pub shared: Option<&'a JsonMap>,
    pub device: Option<&'a JsonMap>,
}

impl View<'_> {
    /// A field from `shared`, else `device`.
    pub fn field(&self, name: &str) -> Option<&Value> {
        [self.shared, self.device]
            .into_iter()
            .flatten()
            .find_map(|m| m.get(name).filter(|v| !v.is_null()))
    }

    pub fn device_field(&self, name: &str) -> Option<&Value> {
        self.device
            .and_then(|d| d.get(name))
            .filter(|v| !v.is_null())
    }

    pub fn shared_field(&self, name: &str) -> Option<&Value> {
        self.shared
            .and_then(|d| d.get(name))
            .filter(|v| !v.is_null())
    }

    /// A capability flag (`can_heat`, `has_fan`, ...): shared, then device, then `default`.
    pub fn flag(&self, name: &str, default: bool) -> bool {
        self.field(name).and_then(Value::as_bool).unwrap_or(default)
    }

    /// The clamping bounds in °C.
    pub fn bounds(&self) -> (f64, f64) {
        let read = |name| {
            self.field(name)
                .and_then(Value::as_f64)
                .filter(|x| x.is_finite())
        };
        let lo = read("safety_temp_min").unwrap_or(DEFAULT_MIN_C);
        let hi = read("safety_temp_max").unwrap_or(DEFAULT_MAX_C);
        if lo < hi {
            (lo, hi)
        } else {
            (DEFAULT_MIN_C, DEFAULT_MAX_C)
        }
    }

    /// `celsius` rounded to the nearest 0.5 °C (what the thermostat itself shows) and kept
    /// within the bounds at a 0.5 step: 7.222 °C becomes 7.5, never 7.0 (the hosted API's rule).
    pub fn clamp_to_half(&self, field: &str, celsius: f64) -> f64 {
        let (lo, hi) = self.bounds();
        let rounded = (celsius * 2.0).round() / 2.0;
        let kept = if rounded < lo {
            (lo * 2.0).ceil() / 2.0
        } else if rounded > hi {
            (hi * 2.0).floor() / 2.0
        } else {
            rounded
        };
        if kept != rounded {
            log::warn!("{field} {celsius} °C is outside {lo}–{hi} °C; set to {kept}");
        }
        kept
    }

    /// `celsius` within the bounds; a clamped value is logged.
    pub fn clamp(&self, field: &str, celsius: f64) -> f64 {
        let (lo, hi) = self.bounds();
        let clamped = celsius.clamp(lo, hi);
        if clamped != celsius {
            log::warn!("{field} {celsius} °C is outside {lo}–{hi} °C; clamped to {clamped}");
        }
        clamped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shared_wins_then_device_then_default() {
        let shared = json!({"can_cool": false}).as_object().cloned().unwrap();
        let device = json!({"can_cool": true, "has_fan": true})
            .as_object()
            .cloned()
            .unwrap();
        let v = View {
            shared: Some(&shared),
            device: Some(&device),
        };
        assert!(!v.flag("can_cool", true));
        assert!(v.flag("has_fan", false));
        assert!(!v.flag("has_emer_heat", false));
        assert!(v.flag("can_heat", true));
    }

    #[test]
    fn bounds_default_and_reported() {
        let v = View::default();
        assert_eq!(v.clamp("t", 3.0), DEFAULT_MIN_C);
        assert_eq!(v.clamp("t", 40.0), DEFAULT_MAX_C);
        assert_eq!(v.clamp("t", 21.5), 21.5);
        let device = json!({"safety_temp_min": 10, "safety_temp_max": 30})
            .as_object()
            .cloned()
            .unwrap();
        let v = View {
            shared: None,
            device: Some(&device),
        };
        assert_eq!(v.bounds(), (10.0, 30.0));
        let silly = json!({"safety_temp_min": 30, "safety_temp_max": 10})
            .as_object()
            .cloned()
            .unwrap();
        let v = View {
            shared: None,
            device: Some(&silly),
        };
        assert_eq!(v.bounds(), (DEFAULT_MIN_C, DEFAULT_MAX_C));
    }

    #[test]
    fn half_degree_rounding_stays_within_bounds() {
        let v = View::default();
        assert_eq!(v.clamp_to_half("t", 21.3), 21.5);
        assert_eq!(v.clamp_to_half("t", 21.2), 21.0);
        assert_eq!(v.clamp_to_half("t", 21.111), 21.0);
        assert_eq!(v.clamp_to_half("t", 3.0), 7.5);
        assert_eq!(v.clamp_to_half("t", 40.0), 35.0);
    }
}
