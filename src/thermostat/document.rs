//! The buckets as the interface document lists them (the hosted status's `state`): `shared.S`,
//! `device.S`, the owner's `user.<id>` and `structure.<id>`, and `schedule.S` when there is one.
//!
//! The firmware keeps some listed fields elsewhere (`leaf`, `fan_mode` and the location in
//! `device`, `compressor_lockout_enabled` in `shared`) or under other names (`temperature_lock`,
//! `eco.mode`), and an unclaimed thermostat has no user or structure bucket at all, so clients
//! read defaults that may be wrong. This derivation fills in every listed field a bucket lacks
//! (or holds as null), from where the firmware keeps it, else a documented default; stored
//! fields pass through unchanged. It is read-side only: nothing is stored or pushed, and a
//! stored bucket keeps its revision and timestamp. A bucket hearth does not hold is shown with
//! revision 0 and timestamp 0, what the device protocol answers for such a bucket.
//!
//! The ids are the thermostat's own: an owned thermostat's owner's `user.<name>` and
//! `structure.<id>` (as a claim writes them); an unowned one's `structure.default` (where away
//! is set) and the default user's `user.owner` (whose it is in open mode).

use serde_json::{Value, json};

use super::plan::{BucketKind, fan_running};
use super::view::{View, truthy};
use crate::state::{Bucket, Fields};
use crate::util::JsonMap;

/// Setpoints for a thermostat that has not reported its own: what the hosted clients assume
/// when the field is missing (homebridge: 20 °C target, 18–24 °C heat-cool), so filling them in
/// changes nothing a client shows.
const DEFAULT_TARGET: f64 = 20.0;
const DEFAULT_LOW: f64 = 18.0;
const DEFAULT_HIGH: f64 = 24.0;
/// The room temperature of a thermostat that reported neither it nor its backplate's reading
/// (the same client fallback).
const DEFAULT_CURRENT: f64 = 20.0;
/// A structure's name when it has none: what a claim names it.
pub const DEFAULT_HOME: &str = "Home";

/// One entry of the state: a bucket's key, its revision and timestamp, and its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub key: String,
    pub revision: i64,
    pub timestamp: i64,
    pub value: JsonMap,
}

/// Every entry, in the document's order. `bucket` finds a stored bucket by its key (for
/// revisions and timestamps, and the schedule); `now_ms` decides whether the fan timer runs.
pub fn entries<'a>(
    view: &View,
    bucket: impl Fn(&str) -> Option<&'a Bucket>,
    now_ms: i64,
) -> Vec<Entry> {
    let entry = |key: String, value: JsonMap| {
        let (revision, timestamp) = bucket(&key).map_or((0, 0), |b| (b.revision, b.timestamp));
        Entry {
            key,
            revision,
            timestamp,
            value,
        }
    };
    let mut all = vec![
        entry(view.key(BucketKind::Shared), shared(view, now_ms)),
        entry(view.key(BucketKind::Device), device(view)),
        entry(view.user_key.clone(), user(view)),
        entry(view.key(BucketKind::Structure), structure(view)),
    ];
    let schedule = view.key(BucketKind::Schedule);
    if let Some(b) = bucket(&schedule) {
        all.push(entry(schedule, b.value.to_map()));
    }
    all
}

/// `shared.S`: temperatures, mode, HVAC state, capabilities, presence, location.
pub fn shared(view: &View, now_ms: i64) -> JsonMap {
    let reading = view
        .field("current_temperature")
        .or_else(|| view.device_field("backplate_temperature"))
        .cloned()
        .unwrap_or(json!(DEFAULT_CURRENT));
    complete(
        view.shared.as_ref(),
        [
            ("current_temperature", reading),
            ("target_temperature", json!(DEFAULT_TARGET)),
            ("target_temperature_type", json!(mode(view))),
            ("target_temperature_low", json!(DEFAULT_LOW)),
            ("target_temperature_high", json!(DEFAULT_HIGH)),
            ("hvac_heater_state", json!(false)),
            ("hvac_ac_state", json!(false)),
            ("hvac_fan_state", json!(fan_running(view, now_ms))),
            ("fan_mode", json!(fan_mode(view, now_ms))),
            ("auto_away", json!(if view.away() { 2 } else { 0 })),
            ("can_cool", json!(view.flag("can_cool", true))),
            ("can_heat", json!(view.flag("can_heat", true))),
            ("leaf", json!(truthy(view.device_field("leaf")))),
            ("postal_code", json!(location(view, "postal_code"))),
            ("country_code", json!(location(view, "country_code"))),
        ],
    )
}

/// `device.S`: scale, fan timer, lockout, eco and lock flags.
pub fn device(view: &View) -> JsonMap {
    let eco = match view
        .device_field("eco")
        .and_then(|e| e.get("mode"))
        .and_then(Value::as_str)
    {
        Some(mode) => mode == "manual-eco" || mode == "auto-eco",
        // Firmware without an eco object: eco is manual eco on the home (away).
        None => truthy(view.structure_field("manual_eco_all")),
    };
    let locked = view
        .device_field("temperature_lock")
        // The Python server's name, which `set_device_setting` still accepts.
        .or_else(|| view.device_field("temp_lock_on"));
    complete(
        view.device.as_ref(),
        [
            ("temperature_scale", json!("C")),
            // No timer running.
            ("fan_timer_timeout", json!(0)),
            (
                "compressor_lockout_enabled",
                json!(truthy(view.shared_field("compressor_lockout_enabled"))),
            ),
            ("eco_mode_enabled", json!(eco)),
            ("temperature_lock_enabled", json!(truthy(locked))),
        ],
    )
}

/// `user.<id>`: away, name and email. hearth's users have no email address.
pub fn user(view: &View) -> JsonMap {
    let id = view
        .user_key
        .strip_prefix("user.")
        .unwrap_or(&view.user_key);
    complete(
        view.user.as_ref(),
        [
            ("away", json!(view.away())),
            // What a claim writes: the user's name.
            ("name", json!(id)),
            ("email", json!("")),
        ],
    )
}

/// `structure.<id>`: the home's name, away and location.
pub fn structure(view: &View) -> JsonMap {
    let time_zone = view
        .device_field("time_zone")
        .and_then(Value::as_str)
        .unwrap_or("");
    complete(
        view.structure.as_ref(),
        [
            ("name", json!(DEFAULT_HOME)),
            ("away", json!(view.away())),
            ("postal_code", json!(location(view, "postal_code"))),
            ("country_code", json!(location(view, "country_code"))),
            // Unknown: empty rather than a guessed zone.
            ("time_zone", json!(time_zone)),
        ],
    )
}

/// `stored` (or an empty value) with each of `fields` it lacks or holds as null added.
fn complete<const N: usize>(stored: Option<&Fields>, fields: [(&str, Value); N]) -> JsonMap {
    let mut value = stored.map(Fields::to_map).unwrap_or_default();
    for (name, derived) in fields {
        if value.get(name).is_none_or(Value::is_null) {
            value.insert(name.to_string(), derived);
        }
    }
    value
}

/// The mode of a thermostat that has not reported one: its schedule's, else heat (cool on
/// equipment that only cools).
fn mode(view: &View) -> String {
    let scheduled = view
        .field("schedule_mode")
        .or_else(|| view.device_field("current_schedule_mode"))
        .and_then(Value::as_str)
        .map(str::to_ascii_lowercase)
        .filter(|m| ["heat", "cool", "range"].contains(&m.as_str()));
    scheduled.unwrap_or_else(|| {
        let cool_only = !view.flag("can_heat", true) && view.flag("can_cool", true);
        if cool_only { "cool" } else { "heat" }.to_string()
    })
}

/// `on` while the fan timer runs (hearth's fan control sets only the timer), else the
/// firmware's own `device.fan_mode` if it is a documented value, else `auto` (`off` for a
/// thermostat without a fan).
fn fan_mode(view: &View, now_ms: i64) -> &str {
    if fan_running(view, now_ms) {
        return "on";
    }
    match view.device_field("fan_mode").and_then(Value::as_str) {
        Some(m @ ("auto" | "on" | "off")) => m,
        _ if view.flag("has_fan", false) => "auto",
        _ => "off",
    }
}

/// A location field: the thermostat's own (set on its screen), else the structure's, else "".
pub(super) fn location<'a>(view: &'a View, field: &str) -> &'a str {
    [view.device_field(field), view.structure_field(field)]
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .find(|s| !s.is_empty())
        .unwrap_or("")
}

/// Every field the interface document lists for the hosted status, as (bucket kind, field, JSON
/// type): what this module fills in, for claimed and unclaimed thermostats alike. Its own tests
/// and `tests/it/hosted_status.rs` check the status against it.
pub const LISTED: &[(&str, &str, &str)] = &[
    ("shared", "current_temperature", "number"),
    ("shared", "target_temperature", "number"),
    ("shared", "target_temperature_type", "string"),
    ("shared", "target_temperature_low", "number"),
    ("shared", "target_temperature_high", "number"),
    ("shared", "hvac_heater_state", "boolean"),
    ("shared", "hvac_ac_state", "boolean"),
    ("shared", "hvac_fan_state", "boolean"),
    ("shared", "fan_mode", "string"),
    ("shared", "auto_away", "number"),
    ("shared", "can_cool", "boolean"),
    ("shared", "can_heat", "boolean"),
    ("shared", "leaf", "boolean"),
    ("shared", "postal_code", "string"),
    ("shared", "country_code", "string"),
    ("device", "temperature_scale", "string"),
    ("device", "fan_timer_timeout", "number"),
    ("device", "compressor_lockout_enabled", "boolean"),
    ("device", "eco_mode_enabled", "boolean"),
    ("device", "temperature_lock_enabled", "boolean"),
    ("user", "away", "boolean"),
    ("user", "name", "string"),
    ("user", "email", "string"),
    ("structure", "name", "string"),
    ("structure", "away", "boolean"),
    ("structure", "postal_code", "string"),
    ("structure", "country_code", "string"),
    ("structure", "time_zone", "string"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Compact, DeviceData};

    const NOW: i64 = 1_795_262_650_000;
    const NOW_S: i64 = NOW / 1000;

    /// A view of serial `S` with these bucket values (`null`: not stored), unowned.
    fn view(shared: Value, device: Value, structure: Value, user: Value) -> View {
        View {
            serial: "S".into(),
            shared: shared.as_object().map(Fields::from_map),
            device: device.as_object().map(Fields::from_map),
            structure: structure.as_object().map(Fields::from_map),
            structure_key: "structure.default".into(),
            user: user.as_object().map(Fields::from_map),
            user_key: "user.owner".into(),
            ..View::default()
        }
    }

    fn bare() -> View {
        view(json!(null), json!(null), json!(null), json!(null))
    }

    fn derived(kind: &str, v: &View) -> JsonMap {
        match kind {
            "shared" => shared(v, NOW),
            "device" => device(v),
            "user" => user(v),
            "structure" => structure(v),
            _ => unreachable!("{kind}"),
        }
    }

    fn type_of(v: &Value) -> &'static str {
        match v {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }

    #[test]
    fn every_listed_field_is_there_with_its_type_even_with_nothing_stored() {
        let v = bare();
        for (kind, field, ty) in LISTED {
            let value = derived(kind, &v);
            assert_eq!(
                value.get(*field).map(type_of),
                Some(*ty),
                "{kind}.{field} in {value:?}"
            );
        }
    }

    #[test]
    fn each_field_comes_from_where_the_firmware_keeps_it_else_its_default() {
        let home = json!({"name": "Cabin", "postal_code": "10115", "country_code": "DE"});
        let fan_on = json!({"fan_timer_timeout": NOW_S + 60, "fan_mode": "auto"});
        let fan_off = json!({"fan_timer_timeout": NOW_S - 60, "fan_mode": "auto", "has_fan": true});
        // (bucket.field, what is stored by bucket, the derived value)
        let rows = [
            (
                "shared.current_temperature",
                json!({"device": {"current_temperature": 19.5, "backplate_temperature": 18.0}}),
                json!(19.5),
            ),
            (
                "shared.current_temperature",
                json!({"device": {"backplate_temperature": 18.25}}),
                json!(18.25),
            ),
            ("shared.current_temperature", json!({}), json!(20.0)),
            ("shared.target_temperature", json!({}), json!(20.0)),
            ("shared.target_temperature_low", json!({}), json!(18.0)),
            ("shared.target_temperature_high", json!({}), json!(24.0)),
            (
                "shared.target_temperature_type",
                json!({"device": {"current_schedule_mode": "RANGE"}}),
                json!("range"),
            ),
            (
                "shared.target_temperature_type",
                json!({"shared": {"schedule_mode": "COOL"}}),
                json!("cool"),
            ),
            (
                "shared.target_temperature_type",
                json!({"device": {"current_schedule_mode": "OFF"}}),
                json!("heat"),
            ),
            (
                "shared.target_temperature_type",
                json!({"shared": {"can_heat": false}}),
                json!("cool"),
            ),
            ("shared.hvac_heater_state", json!({}), json!(false)),
            ("shared.hvac_ac_state", json!({}), json!(false)),
            (
                "shared.hvac_fan_state",
                json!({"device": fan_on}),
                json!(true),
            ),
            (
                "shared.hvac_fan_state",
                json!({"device": fan_off}),
                json!(false),
            ),
            ("shared.fan_mode", json!({"device": fan_on}), json!("on")),
            ("shared.fan_mode", json!({"device": fan_off}), json!("auto")),
            (
                "shared.fan_mode",
                json!({"device": {"fan_mode": "off", "has_fan": true}}),
                json!("off"),
            ),
            (
                "shared.fan_mode",
                json!({"device": {"fan_mode": "duty-cycle", "has_fan": true}}),
                json!("auto"),
            ),
            (
                "shared.fan_mode",
                json!({"device": {"has_fan": false}}),
                json!("off"),
            ),
            (
                "shared.auto_away",
                json!({"structure": {"manual_eco_all": true}}),
                json!(2),
            ),
            (
                "shared.auto_away",
                json!({"structure": {"manual_eco_all": false, "away": true}}),
                json!(0),
            ),
            ("shared.auto_away", json!({}), json!(0)),
            (
                "shared.can_cool",
                json!({"device": {"can_cool": false}}),
                json!(false),
            ),
            ("shared.can_cool", json!({}), json!(true)),
            ("shared.can_heat", json!({}), json!(true)),
            (
                "shared.leaf",
                json!({"device": {"leaf": true}}),
                json!(true),
            ),
            ("shared.leaf", json!({}), json!(false)),
            (
                "shared.postal_code",
                json!({"device": {"postal_code": "94304"}, "structure": home}),
                json!("94304"),
            ),
            (
                "shared.postal_code",
                json!({"device": {"postal_code": ""}, "structure": home}),
                json!("10115"),
            ),
            ("shared.postal_code", json!({}), json!("")),
            (
                "shared.country_code",
                json!({"device": {"country_code": "US"}, "structure": home}),
                json!("US"),
            ),
            (
                "shared.country_code",
                json!({"structure": home}),
                json!("DE"),
            ),
            ("shared.country_code", json!({}), json!("")),
            ("device.temperature_scale", json!({}), json!("C")),
            ("device.fan_timer_timeout", json!({}), json!(0)),
            (
                "device.compressor_lockout_enabled",
                json!({"shared": {"compressor_lockout_enabled": true}}),
                json!(true),
            ),
            ("device.compressor_lockout_enabled", json!({}), json!(false)),
            (
                "device.eco_mode_enabled",
                json!({"device": {"eco": {"mode": "manual-eco"}}}),
                json!(true),
            ),
            (
                "device.eco_mode_enabled",
                json!({"device": {"eco": {"mode": "auto-eco"}}}),
                json!(true),
            ),
            (
                "device.eco_mode_enabled",
                json!({"device": {"eco": {"mode": "schedule"}}, "structure": {"manual_eco_all": true}}),
                json!(false),
            ),
            (
                "device.eco_mode_enabled",
                json!({"structure": {"manual_eco_all": true}}),
                json!(true),
            ),
            ("device.eco_mode_enabled", json!({}), json!(false)),
            (
                "device.temperature_lock_enabled",
                json!({"device": {"temperature_lock": true}}),
                json!(true),
            ),
            (
                "device.temperature_lock_enabled",
                json!({"device": {"temperature_lock": false, "temp_lock_on": true}}),
                json!(false),
            ),
            (
                "device.temperature_lock_enabled",
                json!({"device": {"temp_lock_on": true}}),
                json!(true),
            ),
            ("device.temperature_lock_enabled", json!({}), json!(false)),
            (
                "user.away",
                json!({"structure": {"manual_eco_all": true}}),
                json!(true),
            ),
            ("user.away", json!({}), json!(false)),
            ("user.name", json!({}), json!("owner")),
            ("user.email", json!({"user": {"name": "alice"}}), json!("")),
            ("structure.name", json!({}), json!("Home")),
            (
                "structure.away",
                json!({"structure": {"manual_eco_all": true}}),
                json!(true),
            ),
            ("structure.away", json!({}), json!(false)),
            (
                "structure.postal_code",
                json!({"device": {"postal_code": "94304"}}),
                json!("94304"),
            ),
            ("structure.postal_code", json!({}), json!("")),
            (
                "structure.country_code",
                json!({"device": {"country_code": "US"}}),
                json!("US"),
            ),
            (
                "structure.time_zone",
                json!({"device": {"time_zone": "Europe/Berlin"}}),
                json!("Europe/Berlin"),
            ),
            ("structure.time_zone", json!({}), json!("")),
        ];
        for (field, stored, expected) in rows {
            let (kind, name) = field.split_once('.').unwrap();
            let v = view(
                stored["shared"].clone(),
                stored["device"].clone(),
                stored["structure"].clone(),
                stored["user"].clone(),
            );
            assert_eq!(
                derived(kind, &v).get(name),
                Some(&expected),
                "{field} from {stored}"
            );
        }
    }

    #[test]
    fn stored_fields_pass_through_unchanged_and_come_first() {
        // Even values of another type (the firmware's 0/1 auto_away) or a stale structure
        // `away` are the thermostat's, not the derivation's.
        let v = view(
            json!({"name": "", "auto_away": 1, "target_temperature": 21.11111, "fan_mode": "weird"}),
            json!({"temperature_scale": "F", "temperature_lock_enabled": "yes", "leaf": true}),
            json!({"away": false, "manual_eco_all": true, "time_zone": "America/Los_Angeles"}),
            json!({"name": "alice", "email": null}),
        );
        let s = shared(&v, NOW);
        let keys: Vec<&String> = s.keys().take(4).collect();
        assert_eq!(
            keys,
            ["name", "auto_away", "target_temperature", "fan_mode"]
        );
        assert_eq!(s["auto_away"], json!(1));
        assert_eq!(s["target_temperature"], json!(21.11111));
        assert_eq!(s["fan_mode"], json!("weird"));
        assert_eq!(s["leaf"], json!(true));
        let d = device(&v);
        assert_eq!(d["temperature_lock_enabled"], json!("yes"));
        assert_eq!(d["temperature_scale"], json!("F"));
        assert_eq!(structure(&v)["away"], json!(false));
        assert_eq!(structure(&v)["time_zone"], json!("America/Los_Angeles"));
        // A stored null is not a value: it is derived.
        assert_eq!(user(&v)["email"], json!(""));
        assert_eq!(user(&v)["name"], json!("alice"));
        assert_eq!(user(&v)["away"], json!(true));
    }

    fn stored(value: Value, revision: i64) -> Bucket {
        Bucket {
            revision,
            timestamp: revision * 1000,
            updated_at: 1,
            value: Compact::from_map(value.as_object().unwrap()),
        }
    }

    #[test]
    fn stored_buckets_keep_their_stamps_and_derived_ones_get_zero() {
        let mut data = DeviceData::default();
        for (key, value, revision) in [
            ("shared.S", json!({"target_temperature": 21.0}), -5),
            ("device.S", json!({"has_fan": true}), 7),
            ("user.alice", json!({"name": "alice"}), 3),
        ] {
            data.buckets.insert(key.into(), stored(value, revision));
        }
        let owned = View::of("S", &data, Some("alice"));
        let all = entries(&owned, |k| data.buckets.get(k), NOW);
        let stamps: Vec<(&str, i64, i64)> = all
            .iter()
            .map(|e| (e.key.as_str(), e.revision, e.timestamp))
            .collect();
        assert_eq!(
            stamps,
            [
                ("shared.S", -5, -5000),
                ("device.S", 7, 7000),
                ("user.alice", 3, 3000),
                ("structure.alice", 0, 0),
            ]
        );
        assert_eq!(all[3].value["name"], json!("Home"));

        // Unowned: the default structure and the default user; a schedule when stored.
        data.buckets
            .insert("schedule.S".into(), stored(json!({"ver": 2}), 9));
        let unowned = View::of("S", &data, None);
        let all = entries(&unowned, |k| data.buckets.get(k), NOW);
        let keys: Vec<&str> = all.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "shared.S",
                "device.S",
                "user.owner",
                "structure.default",
                "schedule.S"
            ]
        );
        assert_eq!(all[2].value["name"], json!("owner"));
        assert_eq!(all[4].value, *json!({"ver": 2}).as_object().unwrap());
        assert_eq!((all[4].revision, all[4].timestamp), (9, 9000));
    }
}
