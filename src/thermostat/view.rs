//! A thermostat as the rules read it: its `shared`, `device`, owner's user and structure
//! buckets, built by one function ([`View::build`]) from whatever holds the buckets (the stored
//! data, or a transaction that sees its own writes). Capabilities, the safety bounds every
//! setpoint is clamped to, and the fields every surface reads come from here.

use serde_json::Value;

use crate::state::{
    Bucket, DeviceData, DeviceMeta, DeviceTxn, Fields, LastChange, structure_key, user_key,
};

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

/// One thermostat's buckets, read field by field ([`Fields`]), with the keys they live under.
#[derive(Clone, Debug, Default)]
pub struct View {
    pub serial: String,
    pub shared: Option<Fields>,
    pub device: Option<Fields>,
    /// Its owner's structure bucket (`structure.default` while it has none): where away lives.
    pub structure: Option<Fields>,
    pub structure_key: String,
    /// Its owner's user bucket (the default user's, `user.owner`, while it has none).
    pub user: Option<Fields>,
    pub user_key: String,
    /// The stable id (the hosted API's device id), once it has one.
    pub id: Option<String>,
    /// The password of its Basic auth (its settings API key), once it sent one.
    pub api_key: Option<String>,
    /// The revision of its schedule bucket, if it has one.
    pub schedule_revision: Option<i64>,
    /// Its schedule bucket's value, if it has one.
    pub schedule: Option<Fields>,
    /// Whether it has a dialog bucket (`device_alert_dialog`: "confirm pairing").
    pub alert_dialog: bool,
    /// The latest change a person made to it ([`super::taken`]).
    pub last_change: Option<LastChange>,
}

impl View {
    /// The one way a view is made: `bucket` finds a bucket by its key, `owner` is the user who
    /// owns the thermostat (whose structure it belongs to).
    pub fn build<'a>(
        serial: &str,
        owner: Option<&str>,
        (meta, last_change): (Option<&DeviceMeta>, Option<&LastChange>),
        bucket: impl Fn(&str) -> Option<&'a Bucket>,
    ) -> View {
        let structure_key = structure_key(owner);
        let user_key = user_key(owner);
        let value = |key: &str| bucket(key).map(|b| Fields::of(&b.value));
        View {
            shared: value(&format!("shared.{serial}")),
            device: value(&format!("device.{serial}")),
            structure: value(&structure_key),
            structure_key,
            user: value(&user_key),
            user_key,
            serial: serial.to_string(),
            id: meta.map(|m| m.id.clone()),
            api_key: meta.and_then(|m| m.api_key.clone()),
            schedule_revision: bucket(&format!("schedule.{serial}")).map(|b| b.revision),
            schedule: value(&format!("schedule.{serial}")),
            alert_dialog: bucket(&format!("device_alert_dialog.{serial}")).is_some(),
            last_change: last_change.cloned(),
        }
    }

    /// The view of stored data.
    pub fn of(serial: &str, data: &DeviceData, owner: Option<&str>) -> View {
        let kept = (data.meta.as_ref(), data.last_change.as_ref());
        View::build(serial, owner, kept, |k| data.buckets.get(k))
    }

    /// The view a transaction sees (its own writes included).
    pub fn of_txn(txn: &DeviceTxn<'_>, owner: Option<&str>) -> View {
        let kept = (txn.meta(), txn.last_change());
        View::build(txn.serial(), owner, kept, |k| txn.bucket(k))
    }

    /// A field from `shared`, else `device`.
    pub fn field(&self, name: &str) -> Option<&Value> {
        [self.shared.as_ref(), self.device.as_ref()]
            .into_iter()
            .flatten()
            .find_map(|m| m.get(name).filter(|v| !v.is_null()))
    }

    pub fn device_field(&self, name: &str) -> Option<&Value> {
        non_null(self.device.as_ref(), name)
    }

    pub fn shared_field(&self, name: &str) -> Option<&Value> {
        non_null(self.shared.as_ref(), name)
    }

    pub fn structure_field(&self, name: &str) -> Option<&Value> {
        non_null(self.structure.as_ref(), name)
    }

    /// Whether the home is away: manual eco on its structure (what away writes), else the
    /// structure's own `away`, else `shared.away`; false when none says.
    pub fn away(&self) -> bool {
        self.structure
            .as_ref()
            .and_then(|s| s.get("manual_eco_all").or_else(|| s.get("away")))
            .or_else(|| self.shared_field("away"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// A capability flag (`can_heat`, `has_fan`, ...): shared, then device, then `default`.
    pub fn flag(&self, name: &str, default: bool) -> bool {
        self.field(name).and_then(Value::as_bool).unwrap_or(default)
    }

    /// The mode it runs in (`target_temperature_type`), as it stores it.
    pub fn mode(&self) -> Option<&str> {
        self.field("target_temperature_type")
            .and_then(Value::as_str)
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

fn non_null<'a>(map: Option<&'a Fields>, name: &str) -> Option<&'a Value> {
    map.and_then(|m| m.get(name)).filter(|v| !v.is_null())
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use serde_json::json;

    /// A view of serial `S` holding these bucket values (`null` for a missing bucket).
    pub fn view(shared: Value, device: Value) -> View {
        View {
            serial: "S".into(),
            shared: shared.as_object().map(Fields::from_map),
            device: device.as_object().map(Fields::from_map),
            structure_key: "structure.default".into(),
            ..View::default()
        }
    }

    #[test]
    fn shared_wins_then_device_then_default() {
        let v = view(
            json!({"can_cool": false}),
            json!({"can_cool": true, "has_fan": true}),
        );
        assert!(!v.flag("can_cool", true));
        assert!(v.flag("has_fan", false));
        assert!(!v.flag("has_emer_heat", false));
        assert!(v.flag("can_heat", true));
    }

    #[test]
    fn built_from_buckets_under_the_owners_structure() {
        let mut data = DeviceData::default();
        for (key, value) in [
            ("shared.S", json!({"target_temperature": 21.0})),
            ("device.S", json!({"has_fan": true})),
            ("structure.alice", json!({"manual_eco_all": true})),
            ("structure.default", json!({"manual_eco_all": false})),
        ] {
            data.buckets.insert(
                key.into(),
                Bucket {
                    revision: 1,
                    timestamp: 1,
                    updated_at: 1,
                    value: crate::state::Compact::from_map(value.as_object().unwrap()),
                },
            );
        }
        let v = View::of("S", &data, Some("user_alice"));
        assert_eq!(v.structure_key, "structure.alice");
        assert_eq!(v.structure_field("manual_eco_all"), Some(&json!(true)));
        assert_eq!(v.field("target_temperature"), Some(&json!(21.0)));
        assert!(v.flag("has_fan", false));
        let unowned = View::of("S", &data, None);
        assert_eq!(
            unowned.structure_field("manual_eco_all"),
            Some(&json!(false))
        );
    }

    #[test]
    fn bounds_default_and_reported() {
        let v = View::default();
        assert_eq!(v.clamp("t", 3.0), DEFAULT_MIN_C);
        assert_eq!(v.clamp("t", 40.0), DEFAULT_MAX_C);
        assert_eq!(v.clamp("t", 21.5), 21.5);
        let v = view(
            json!(null),
            json!({"safety_temp_min": 10, "safety_temp_max": 30}),
        );
        assert_eq!(v.bounds(), (10.0, 30.0));
        let silly = view(
            json!(null),
            json!({"safety_temp_min": 30, "safety_temp_max": 10}),
        );
        assert_eq!(silly.bounds(), (DEFAULT_MIN_C, DEFAULT_MAX_C));
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
