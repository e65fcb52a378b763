//! A thermostat's reading: one typed value that every surface reads a thermostat through
//! (`/status` and the page, `/api/v1`, MQTT, HomeKit, `/metrics`, history, the energy history,
//! alerts). It carries what the thermostat reported, its availability, the outdoor temperature
//! hearth holds for its place, and what is derived from them (heating, cooling, the mode),
//! built by one function ([`read`]) from the thermostat's [`View`], so every surface shows a
//! thermostat the same way; [`super::Readings`] keeps one per thermostat until something it was made
//! from changes, so a change is read once, whoever asks.
//!
//! Each surface's mapping destructures a [`Reading`] without `..`: a new field fails to compile
//! until every surface has decided what to do with it (docs/architecture.md, "A new read
//! field"). JSON appears only at the wire: a value the thermostat reported is kept as it sent it
//! ([`Reported`]), so a surface that passes it on (the `/status` record) writes the same bytes.

use serde::Serialize;
use serde_json::Value;

use super::course::{Course, course};
use super::intent::Mode;
use super::names;
use super::plan::{fan_run_seconds, fan_running};
use super::taken::Change;
use super::view::{View, truthy};
use crate::presence::Availability;
use crate::util::clock;
pub use crate::weather::Outdoor;
use crate::zone::Zone;

/// A value as the thermostat reported it: passed on unchanged (it serializes to the bytes it
/// was read from), read with typed accessors. `Null` when it is missing or null. Compact: a
/// reading holds some thirty of them per thermostat.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Reported {
    #[default]
    Null,
    Bool(bool),
    Number(serde_json::Number),
    Text(Box<str>),
    /// An object or a list (`eco`, say): rare, kept whole.
    Other(Box<Value>),
}

impl Reported {
    /// The value of a field, `Null` when it is missing.
    pub fn of(value: Option<&Value>) -> Reported {
        match value {
            None | Some(Value::Null) => Reported::Null,
            Some(Value::Bool(b)) => Reported::Bool(*b),
            Some(Value::Number(n)) => Reported::Number(n.clone()),
            Some(Value::String(s)) => Reported::Text(s.as_str().into()),
            Some(other) => Reported::Other(Box::new(other.clone())),
        }
    }

    /// A number, if it is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Reported::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    /// A whole number, if it is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Reported::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Reported::Text(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Reported::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        *self == Reported::Null
    }

    /// As a JSON value again, for a wire that writes JSON values.
    pub fn to_value(&self) -> Value {
        match self {
            Reported::Null => Value::Null,
            Reported::Bool(b) => Value::Bool(*b),
            Reported::Number(n) => Value::Number(n.clone()),
            Reported::Text(s) => Value::String(s.to_string()),
            Reported::Other(v) => (**v).clone(),
        }
    }
}

impl Serialize for Reported {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Reported::Null => s.serialize_unit(),
            Reported::Bool(b) => s.serialize_bool(*b),
            Reported::Number(n) => n.serialize(s),
            Reported::Text(t) => s.serialize_str(t),
            Reported::Other(v) => v.serialize(s),
        }
    }
}

/// A thermostat as every surface reads it (see the module comment). Fields are in the order
/// of the `/status` record where they appear in it.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading {
    pub serial: String,
    /// The password of its Basic auth, once it sent one (the control port shows it).
    pub api_key: Option<String>,
    /// Reachable now, and when it was last heard from.
    pub availability: Availability,
    /// What it is called: its label, else its room's name, else its serial.
    pub name: String,
    /// The room's temperature (°C; `shared`, else `device`).
    pub room: Reported,
    /// The setpoints of its mode.
    pub targets: Targets,
    /// The room's relative humidity (%).
    pub humidity: Reported,
    /// The humidity it aims at, and whether it does.
    pub target_humidity: Reported,
    pub target_humidity_enabled: bool,
    /// The mode as the firmware stores it (`target_temperature_type`); [`Reading::mode_now`]
    /// reads it.
    pub mode: Reported,
    /// What the equipment is doing.
    pub hvac: Hvac,
    /// The fan's timer and switch.
    pub fan: Fan,
    /// The eco temperatures and mode.
    pub eco: Eco,
    pub is_online: bool,
    /// The leaf the firmware shows (`device.leaf`).
    pub has_leaf: bool,
    /// The units it shows (`C` or `F`; `C` when it has not said).
    pub scale: Reported,
    pub capabilities: Capabilities,
    /// The safety state and the firmware's own reports (passed on as they are).
    pub safety: Safety,
    pub diagnostics: Diagnostics,
    /// Its structure's id (where away lives).
    pub structure_id: Reported,
    /// The home is away (manual eco on its structure).
    pub away: bool,
    /// The thermostat itself senses nobody home (its auto-away, or its own `away`).
    pub sensed_away: bool,
    pub schedule_mode: Reported,
    /// The temperature lock.
    pub lock: Lock,
    /// The bounds setpoints are clamped to, in °C.
    pub bounds: Bounds,
    /// The temperature outside.
    pub outside: Outside,
    /// The structure's time zone (what its local days are named by).
    pub time_zone: Option<String>,
    /// The battery's voltage (`device.battery_level`).
    pub battery_volts: Option<f64>,
    /// The battery's charge, from its voltage ([`battery_percent`]).
    pub battery_percent: Option<u8>,
    /// Whether it has uploaded its state at least once: its `shared` bucket holds the room
    /// temperature, which only the thermostat writes (a command before then may create the
    /// bucket with a setpoint, not with this).
    pub reported: bool,
    /// The latest change a person made to it, and whether it has taken it
    /// ([`super::taken`]); `None` before the first.
    pub change: Option<Change>,
    /// Where its schedule stands now, in its structure's time zone: a manual setting holding
    /// and what follows it, or the next change ([`super::course`]); `None` without a schedule
    /// for the mode it runs in.
    pub course: Option<Course>,
}

/// The setpoints, as stored: one in heat or cool mode, low and high in heat-cool.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Targets {
    pub target: Reported,
    pub high: Reported,
    pub low: Reported,
}

/// What the equipment is doing, from the `hvac_*_state` fields (and the device's humidity ones).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
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

impl Hvac {
    /// Heating in any way: a stage, auxiliary, alternative or emergency heat.
    pub fn heating(&self) -> bool {
        self.heating_without_aux() || self.aux_heat
    }

    /// Heating other than by auxiliary heat (which the energy history counts on its own).
    pub fn heating_without_aux(&self) -> bool {
        self.heater || self.heat_x2 || self.heat_x3 || self.alt_heat || self.emer_heat
    }

    /// Cooling, at any stage.
    pub fn cooling(&self) -> bool {
        self.ac || self.cool_x2 || self.cool_x3
    }
}

/// The fan: its timer (`fan_timer_timeout`, Unix seconds, 0 when none was reported), whether it
/// runs now, how long a run lasts, and whether it is switched on by hand.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fan {
    pub timer_active: bool,
    pub timer_timeout: Reported,
    pub duration_s: i64,
    pub switched_on: bool,
}

/// Eco (away) temperatures, as stored, and the firmware's eco mode (`manual-eco`, ...); the
/// leaf the eco settings have earned.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Eco {
    pub high: Reported,
    pub low: Reported,
    pub mode: Reported,
    pub leaf: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Capabilities {
    pub can_heat: bool,
    pub can_cool: bool,
    pub has_fan: bool,
    pub has_emer_heat: bool,
    pub has_humidifier: bool,
    pub has_dehumidifier: bool,
}

/// The safety state, what the firmware says of it, and whether a safety shut-off is on
/// (`None` when it does not say).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Safety {
    pub state: Reported,
    pub temp_activating_hvac: Reported,
    pub shutoff: Option<bool>,
}

/// The firmware's reports about itself, passed on as it sent them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Diagnostics {
    pub software_version: Reported,
    pub time_to_target: Reported,
    pub time_to_target_training_status: Reported,
    pub learning_mode: Reported,
    pub preconditioning_enabled: Reported,
    pub backplate_temperature: Reported,
    pub local_ip: Reported,
    pub mac_address: Reported,
    pub rssi: Reported,
    pub filter_replacement_needed: Reported,
    pub filter_runtime_sec: Reported,
    pub sunlight_correction_active: Reported,
    pub heatpump_ready: Reported,
    pub compressor_lockout_timeout: Reported,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lock {
    pub enabled: bool,
    pub low: Reported,
    pub high: Reported,
}

/// The bounds setpoints are clamped to, in °C.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bounds {
    pub low: f64,
    pub high: f64,
}

/// The temperature outside: from the weather hearth last had for the thermostat's place
/// (`None` until there is one, or with `WEATHER_PROVIDER=off`), and what the thermostat's own
/// buckets say (`outdoor_temperature` or `outside_temperature`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outside {
    pub weather: Option<f64>,
    pub reported: Reported,
}

impl Reading {
    /// The mode it runs in now, if it is one hearth knows (`heat-cool` reads as heat-cool).
    pub fn mode_now(&self) -> Option<Mode> {
        self.mode.as_str().and_then(|m| Mode::parse(m).ok())
    }

    /// The setpoint heating aims at: the low one in heat-cool, else the target.
    pub fn heat_target(&self) -> Option<f64> {
        match self.mode_now() {
            Some(Mode::Range) => self.targets.low.as_f64(),
            _ => self.targets.target.as_f64(),
        }
    }

    /// The setpoint cooling aims at: the high one in heat-cool, else the target.
    pub fn cool_target(&self) -> Option<f64> {
        match self.mode_now() {
            Some(Mode::Range) => self.targets.high.as_f64(),
            _ => self.targets.target.as_f64(),
        }
    }

    /// When it was last heard from, as the status record says it.
    pub fn last_seen(&self) -> Option<String> {
        self.availability.last_seen_ms.map(clock::iso8601_ms)
    }
}

/// The outdoor temperature at the thermostat's place (see [`Outdoor`]).
fn outdoor_temperature(view: &View, outdoor: &dyn Outdoor) -> Option<f64> {
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

/// The schedule's course for the setpoints of the mode the thermostat runs in.
fn course_of(view: &View, zone: &Zone, now_ms: i64) -> Option<Course> {
    let schedule = view.schedule.as_ref()?;
    let mode = view.mode()?;
    let number = |f: &str| view.field(f).and_then(Value::as_f64);
    let setpoints = if mode == "range" {
        vec![
            number("target_temperature_low")?,
            number("target_temperature_high")?,
        ]
    } else {
        vec![number("target_temperature")?]
    };
    course(schedule, mode, &setpoints, zone, now_ms)
}

/// The one way a reading is made: from the thermostat's buckets, its availability, and the
/// weather hearth holds (`outdoor`), at `now_ms` (whether its fan timer runs).
pub fn read(
    view: &View,
    availability: Availability,
    outdoor: &dyn Outdoor,
    zone: &Zone,
    now_ms: i64,
) -> Reading {
    let serial = view.serial.as_str();
    let sh = |f: &str| view.shared_field(f);
    let d = |f: &str| view.device_field(f);
    let either = |f: &str| Reported::of(view.field(f));
    let dev = |f: &str| Reported::of(d(f));
    let hvac_shared = |f: &str| truthy(sh(f));
    let hvac_device = |f: &str| truthy(d(f));
    let (low, high) = view.bounds();
    let structure_id = sh("structure_id")
        .or_else(|| d("structure_id"))
        .map(|v| Reported::of(Some(v)))
        .or_else(|| {
            view.structure
                .as_ref()
                .map(|_| Reported::Text(view.structure_key.trim_start_matches("structure.").into()))
        })
        .unwrap_or_default();
    let flag = |f: &str| d(f).and_then(Value::as_bool);
    let shutoff = match (
        flag("hvac_safety_shutoff_active"),
        flag("hvac_smoke_safety_shutoff_active"),
    ) {
        (None, None) => None,
        (a, b) => Some(a == Some(true) || b == Some(true)),
    };
    Reading {
        serial: serial.to_string(),
        api_key: view.api_key.clone(),
        availability,
        name: names::name(view).unwrap_or_else(|| serial.to_string()),
        room: either("current_temperature"),
        targets: Targets {
            target: either("target_temperature"),
            high: either("target_temperature_high"),
            low: either("target_temperature_low"),
        },
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
        fan: Fan {
            timer_active: fan_running(view, now_ms),
            timer_timeout: d("fan_timer_timeout")
                .map_or(Reported::Number(0.into()), |v| Reported::of(Some(v))),
            duration_s: fan_run_seconds(view),
            switched_on: truthy(d("fan_control_state")),
        },
        eco: Eco {
            high: dev("away_temperature_high"),
            low: dev("away_temperature_low"),
            mode: Reported::of(d("eco").and_then(|e| e.get("mode"))),
            leaf: truthy(d("eco").and_then(|e| e.get("leaf")).or_else(|| d("leaf"))),
        },
        is_online: d("is_online").and_then(Value::as_bool).unwrap_or(false),
        has_leaf: d("leaf").and_then(Value::as_bool).unwrap_or(false),
        scale: d("temperature_scale").map_or(Reported::Text("C".into()), |v| Reported::of(Some(v))),
        capabilities: Capabilities {
            can_heat: view.flag("can_heat", true),
            can_cool: view.flag("can_cool", true),
            has_fan: view.flag("has_fan", false),
            has_emer_heat: view.flag("has_emer_heat", false),
            has_humidifier: view.flag("has_humidifier", false),
            has_dehumidifier: view.flag("has_dehumidifier", false),
        },
        safety: Safety {
            state: dev("safety_state"),
            temp_activating_hvac: dev("safety_temp_activating_hvac"),
            shutoff,
        },
        diagnostics: Diagnostics {
            software_version: dev("current_version"),
            time_to_target: dev("time_to_target"),
            time_to_target_training_status: dev("time_to_target_training_status"),
            learning_mode: dev("learning_mode"),
            preconditioning_enabled: dev("preconditioning_enabled"),
            backplate_temperature: dev("backplate_temperature"),
            local_ip: dev("local_ip"),
            mac_address: dev("mac_address"),
            rssi: dev("rssi"),
            filter_replacement_needed: dev("filter_replacement_needed"),
            filter_runtime_sec: dev("filter_runtime_sec"),
            sunlight_correction_active: dev("sunlight_correction_active"),
            heatpump_ready: dev("heatpump_ready"),
            compressor_lockout_timeout: dev("compressor_lockout_timeout"),
        },
        structure_id,
        away: view.away(),
        sensed_away: d("auto_away")
            .and_then(Value::as_f64)
            .is_some_and(|a| a > 0.0)
            || truthy(d("away")),
        schedule_mode: either("schedule_mode"),
        lock: Lock {
            enabled: truthy(d("temperature_lock")),
            low: dev("temperature_lock_low_temp"),
            high: dev("temperature_lock_high_temp"),
        },
        bounds: Bounds { low, high },
        outside: Outside {
            weather: outdoor_temperature(view, outdoor),
            reported: Reported::of(
                d("outdoor_temperature")
                    .or_else(|| sh("outside_temperature"))
                    .or_else(|| d("outside_temperature")),
            ),
        },
        time_zone: d("time_zone").and_then(Value::as_str).map(str::to_string),
        battery_volts: d("battery_level").and_then(Value::as_f64),
        battery_percent: d("battery_level")
            .and_then(Value::as_f64)
            .map(battery_percent),
        reported: sh("current_temperature").is_some(),
        change: view.last_change.as_ref().map(Change::of),
        course: course_of(view, zone, now_ms),
    }
}

/// `battery_level` (volts) below which the battery is low: the firmware's own low-battery point.
pub const BATTERY_LOW_V: f64 = 3.65;

/// The battery's charge from its voltage: 3.5 V and below is empty, 4.0 V and above full.
pub fn battery_percent(volts: f64) -> u8 {
    (((volts - 3.5) / 0.5).clamp(0.0, 1.0) * 100.0).round() as u8
}

/// No weather: a reading for code that has none to give (tests, tools).
pub struct NoWeather;

impl Outdoor for NoWeather {
    fn generation(&self) -> u64 {
        0
    }

    fn celsius(&self, _: &str, _: &str) -> Option<f64> {
        None
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::thermostat::view::tests::view;
    use serde_json::json;

    /// The reading of a view of serial `S` with these buckets, available, without weather.
    pub fn reading(shared: Value, device: Value) -> Reading {
        read(
            &view(shared, device),
            available(),
            &NoWeather,
            &Zone::utc(),
            0,
        )
    }

    pub fn available() -> Availability {
        Availability {
            available: true,
            last_seen_ms: Some(0),
        }
    }

    #[test]
    fn reported_values_serialize_as_they_were_sent() {
        for text in [
            "20",
            "20.5",
            "21.0",
            "-3",
            "true",
            "\"heat\"",
            "{\"a\":[1]}",
            "null",
        ] {
            let v: Value = serde_json::from_str(text).unwrap();
            let r = Reported::of(Some(&v));
            assert_eq!(serde_json::to_string(&r).unwrap(), text);
            assert_eq!(r.to_value(), v);
        }
        assert_eq!(Reported::of(None), Reported::Null);
        assert!(std::mem::size_of::<Reported>() <= 24);
    }

    #[test]
    fn battery_percent_from_volts() {
        assert_eq!(battery_percent(3.4), 0);
        assert_eq!(battery_percent(3.75), 50);
        assert_eq!(battery_percent(4.2), 100);
    }

    #[test]
    fn derived_values() {
        let r = reading(
            json!({"target_temperature_type": "range", "target_temperature_low": 19.0,
                   "target_temperature_high": 24.5, "target_temperature": 21.0,
                   "hvac_aux_heater_state": true, "current_temperature": 18.5}),
            json!({"battery_level": 3.9, "hvac_safety_shutoff_active": false, "time_zone": "Europe/Paris"}),
        );
        assert_eq!(r.mode_now(), Some(Mode::Range));
        assert_eq!((r.heat_target(), r.cool_target()), (Some(19.0), Some(24.5)));
        assert!(r.hvac.heating() && !r.hvac.heating_without_aux() && !r.hvac.cooling());
        assert_eq!((r.battery_volts, r.battery_percent), (Some(3.9), Some(80)));
        assert_eq!(r.safety.shutoff, Some(false));
        assert_eq!(r.time_zone.as_deref(), Some("Europe/Paris"));
        assert!(r.reported);
        let quiet = reading(json!({}), json!({}));
        assert_eq!(quiet.battery_percent, None);
        assert_eq!(quiet.safety.shutoff, None);
        assert!(!quiet.reported);
        assert_eq!(quiet.scale, Reported::Text("C".into()));
        assert_eq!(quiet.fan.timer_timeout, Reported::Number(0.into()));
    }
}
