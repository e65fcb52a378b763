//! The attribute database: the bridge (aid 1) and one accessory per thermostat the page lists,
//! each characteristic at a fixed instance id (controllers key what they cache by it).
//!
//! Away is a **Switch** named "Away" on each thermostat's accessory, not an occupancy sensor:
//! Nest's away (manual eco on the whole home) is something a person turns on and off, and a
//! switch is what the Home app lets one tap and what an automation ("when the last person
//! leaves") can set; an occupancy sensor is read-only there and means the opposite ("someone
//! is here"). On any thermostat it sets the home's away, as every other surface does.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::characteristics::{Bounds, Characteristic, Kind};
use crate::accounts;
use crate::app::App;
use crate::thermostat::status::{self, Status};
use crate::thermostat::{COOLING_FLAGS, HEATING_FLAGS, View};

/// HAP's version this bridge speaks (HAP Protocol Information).
pub const PROTOCOL_VERSION: &str = "1.1.0";
/// Most accessories HAP lets a bridge hold, itself included.
pub const MAX_ACCESSORIES: usize = 150;

/// Instance ids. Accessory Information is service 1 on every accessory.
const INFO: u64 = 1;
const IDENTIFY: u64 = 2;
const MANUFACTURER: u64 = 3;
const MODEL: u64 = 4;
const NAME: u64 = 5;
const SERIAL: u64 = 6;
const FIRMWARE: u64 = 7;
/// The bridge's HAP Protocol Information service and its version.
const PROTOCOL: u64 = 8;
const PROTOCOL_VERSION_IID: u64 = 9;
/// The thermostat service and its characteristics.
const THERMOSTAT: u64 = 8;
const CURRENT_STATE: u64 = 9;
const TARGET_STATE: u64 = 10;
const CURRENT_TEMPERATURE: u64 = 11;
const TARGET_TEMPERATURE: u64 = 12;
const DISPLAY_UNITS: u64 = 13;
const HEATING_THRESHOLD: u64 = 14;
const COOLING_THRESHOLD: u64 = 15;
const HUMIDITY: u64 = 16;
const THERMOSTAT_NAME: u64 = 17;
/// The away switch.
const AWAY: u64 = 20;
const AWAY_ON: u64 = 21;
const AWAY_NAME: u64 = 22;

pub struct Service {
    pub iid: u64,
    pub hap_type: &'static str,
    pub primary: bool,
    pub characteristics: Vec<Characteristic>,
}

pub struct Accessory {
    pub aid: u64,
    pub services: Vec<Service>,
}

impl Accessory {
    pub fn characteristic(&self, iid: u64) -> Option<&Characteristic> {
        self.services
            .iter()
            .flat_map(|s| &s.characteristics)
            .find(|c| c.iid == iid)
    }

    pub fn characteristics(&self) -> impl Iterator<Item = &Characteristic> {
        self.services.iter().flat_map(|s| &s.characteristics)
    }

    pub fn to_json(&self) -> Value {
        let services: Vec<Value> = self
            .services
            .iter()
            .map(|s| {
                let mut service = json!({
                    "iid": s.iid,
                    "type": s.hap_type,
                    "characteristics": s.characteristics.iter().map(Characteristic::to_json).collect::<Vec<_>>(),
                });
                if s.primary {
                    service["primary"] = json!(true);
                }
                service
            })
            .collect();
        json!({"aid": self.aid, "services": services})
    }
}

/// Longest string HAP lets a characteristic hold unless it says otherwise (`maxLen`).
const MAX_LEN: usize = 64;

/// `text` as a string characteristic: at most [`MAX_LEN`] characters (a name a thermostat
/// reported itself is not bound by hearth's own limit on names).
fn text(iid: u64, kind: Kind, text: &str) -> Characteristic {
    Characteristic::new(
        iid,
        kind,
        json!(text.chars().take(MAX_LEN).collect::<String>()),
    )
}

fn info(name: &str, manufacturer: &str, model: &str, serial: &str, firmware: &str) -> Service {
    Service {
        iid: INFO,
        hap_type: "3E",
        primary: false,
        characteristics: vec![
            Characteristic::new(IDENTIFY, Kind::Identify, Value::Null),
            text(MANUFACTURER, Kind::Manufacturer, manufacturer),
            text(MODEL, Kind::Model, model),
            text(NAME, Kind::Name, name),
            text(SERIAL, Kind::SerialNumber, serial),
            text(FIRMWARE, Kind::FirmwareRevision, firmware),
        ],
    }
}

/// The bridge itself: `name` (`HOMEKIT_NAME`), its device id as serial number.
pub fn bridge(name: &str, device_id: &str) -> Accessory {
    Accessory {
        aid: super::aids::BRIDGE_AID,
        services: vec![
            info(
                name,
                "hearth",
                "hearth",
                device_id,
                env!("CARGO_PKG_VERSION"),
            ),
            Service {
                iid: PROTOCOL,
                hap_type: "A2",
                primary: false,
                characteristics: vec![Characteristic::new(
                    PROTOCOL_VERSION_IID,
                    Kind::ProtocolVersion,
                    json!(PROTOCOL_VERSION),
                )],
            },
        ],
    }
}

/// The serials of the thermostats the page lists (`/api/devices`): known, and not ones pairing
/// applies to (unclaimed with pairing required, or removed), which nobody may see or control.
pub fn listed(app: &App) -> Vec<String> {
    let pairing = app.config.require_device_pairing;
    let serials = app.state.serials();
    app.state.accounts(|a| {
        serials
            .into_iter()
            .filter(|s| !accounts::pairing_applies(a, s, pairing))
            .collect()
    })
}

/// Setpoint bounds on the thermostat's 0.5 °C grid, inside its safety bounds.
fn setpoint_bounds(view: &View) -> Bounds {
    let (lo, hi) = view.bounds();
    Bounds {
        min: Some((lo * 2.0).ceil() / 2.0),
        max: Some((hi * 2.0).floor() / 2.0),
        step: Some(0.5),
        valid: None,
    }
}

/// HAP's FirmwareRevision is `x[.y[.z]]`: the leading numbers of the thermostat's version
/// (`5.9.4-5` → `5.9.4`), else hearth's own.
fn firmware(status: &Status) -> String {
    let version = status.software_version.as_str().unwrap_or_default();
    let numbers: Vec<&str> = version
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .next()
        .unwrap_or_default()
        .split('.')
        .take(3)
        .collect();
    if numbers.iter().all(|n| !n.is_empty()) && !numbers.is_empty() {
        numbers.join(".")
    } else {
        env!("CARGO_PKG_VERSION").to_string()
    }
}

/// One thermostat as an accessory, its values read now.
pub fn thermostat(aid: u64, view: &View, now_ms: i64) -> Accessory {
    let s = status::status(view, now_ms);
    let setpoints = setpoint_bounds(view);
    let within = |v: &Value, fallback: f64| {
        let (lo, hi) = (setpoints.min.unwrap_or(0.0), setpoints.max.unwrap_or(100.0));
        json!(v.as_f64().unwrap_or(fallback).clamp(lo, hi))
    };
    let (lo, hi) = (setpoints.min.unwrap_or(0.0), setpoints.max.unwrap_or(100.0));
    let hvac = serde_json::to_value(&s.hvac).unwrap_or(Value::Null);
    let on = |flags: &[&str]| flags.iter().any(|f| hvac[*f] == json!(true));
    let current_state = if on(&HEATING_FLAGS) {
        1
    } else if on(&COOLING_FLAGS) {
        2
    } else {
        0
    };
    let target_state = match s.mode.as_str() {
        Some("heat" | "emergency") => 1,
        Some("cool") => 2,
        Some("range") => 3,
        _ => 0,
    };
    let mut modes = vec![0u8];
    modes.extend(s.can_heat.then_some(1));
    modes.extend(s.can_cool.then_some(2));
    modes.extend((s.can_heat && s.can_cool).then_some(3));
    let units = u8::from(s.temperature_scale.as_str() == Some("F"));
    let mut characteristics = vec![
        Characteristic::new(
            CURRENT_STATE,
            Kind::CurrentHeatingCoolingState,
            json!(current_state),
        )
        .with(Bounds {
            min: Some(0.0),
            max: Some(2.0),
            step: Some(1.0),
            valid: Some(vec![0, 1, 2]),
        }),
        Characteristic::new(
            TARGET_STATE,
            Kind::TargetHeatingCoolingState,
            json!(target_state),
        )
        .with(Bounds {
            min: Some(0.0),
            max: Some(3.0),
            step: Some(1.0),
            valid: Some(modes),
        }),
        // Before its first report a thermostat has no reading: HAP needs a number, so 0.
        Characteristic::new(
            CURRENT_TEMPERATURE,
            Kind::CurrentTemperature,
            json!(
                s.current_temperature
                    .as_f64()
                    .unwrap_or(0.0)
                    .clamp(-50.0, 100.0)
            ),
        )
        .with(Bounds {
            min: Some(-50.0),
            max: Some(100.0),
            step: Some(0.1),
            valid: None,
        }),
        Characteristic::new(
            TARGET_TEMPERATURE,
            Kind::TargetTemperature,
            within(&s.target_temperature, lo),
        )
        .with(setpoints.clone()),
        Characteristic::new(DISPLAY_UNITS, Kind::TemperatureDisplayUnits, json!(units)).with(
            Bounds {
                min: Some(0.0),
                max: Some(1.0),
                step: Some(1.0),
                valid: Some(vec![0, 1]),
            },
        ),
        Characteristic::new(
            HEATING_THRESHOLD,
            Kind::HeatingThreshold,
            within(&s.target_temperature_low, lo),
        )
        .with(setpoints.clone()),
        Characteristic::new(
            COOLING_THRESHOLD,
            Kind::CoolingThreshold,
            within(&s.target_temperature_high, hi),
        )
        .with(setpoints),
    ];
    if let Some(humidity) = s.humidity.as_f64() {
        characteristics.push(
            Characteristic::new(
                HUMIDITY,
                Kind::CurrentRelativeHumidity,
                json!(humidity.clamp(0.0, 100.0)),
            )
            .with(Bounds {
                min: Some(0.0),
                max: Some(100.0),
                step: Some(1.0),
                valid: None,
            }),
        );
    }
    characteristics.push(text(THERMOSTAT_NAME, Kind::Name, &s.name));
    Accessory {
        aid,
        services: vec![
            info(&s.name, "Nest", "Thermostat", &s.serial, &firmware(&s)),
            Service {
                iid: THERMOSTAT,
                hap_type: "4A",
                primary: true,
                characteristics,
            },
            Service {
                iid: AWAY,
                hap_type: "49",
                primary: false,
                characteristics: vec![
                    Characteristic::new(AWAY_ON, Kind::On, json!(s.away)),
                    text(AWAY_NAME, Kind::Name, "Away"),
                ],
            },
        ],
    }
}

/// What a controller caches of the database, hashed: accessories, services, characteristics
/// with their metadata, and names. Values that change by themselves (temperatures, states)
/// are not in it, so they never move the configuration number. SHA-256, so the number stays
/// put across hearth versions as long as the shape does.
pub fn fingerprint(accessories: &[Accessory]) -> u64 {
    let mut hash = Sha256::new();
    for a in accessories {
        hash.update(format!("a{}", a.aid));
        for s in &a.services {
            hash.update(format!("s{}:{}:{}", s.iid, s.hap_type, s.primary));
            for c in &s.characteristics {
                let mut meta = serde_json::Map::new();
                c.meta_into(&mut meta);
                hash.update(format!(
                    "c{}:{}:{:?}:{}",
                    c.iid,
                    c.kind.hap_type(),
                    c.kind.perms(),
                    Value::Object(meta)
                ));
                if c.kind == Kind::Name {
                    hash.update(c.value.to_string());
                }
            }
        }
    }
    let digest = hash.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thermostat::view::tests::view;

    #[test]
    fn a_thermostat_shows_its_modes_bounds_and_readings() {
        let v = view(
            json!({"current_temperature": 20.5, "target_temperature": 21.0,
                   "target_temperature_type": "heat", "can_cool": false, "hvac_heater_state": true}),
            json!({"current_humidity": 44, "temperature_scale": "F", "current_version": "5.9.4-5"}),
        );
        let a = thermostat(2, &v, 0);
        let value = |iid| a.characteristic(iid).map(|c| c.value.clone());
        assert_eq!(value(CURRENT_TEMPERATURE), Some(json!(20.5)));
        assert_eq!(value(CURRENT_STATE), Some(json!(1)));
        assert_eq!(value(TARGET_STATE), Some(json!(1)));
        assert_eq!(value(DISPLAY_UNITS), Some(json!(1)));
        assert_eq!(value(HUMIDITY), Some(json!(44.0)));
        assert_eq!(value(FIRMWARE), Some(json!("5.9.4")));
        let modes = a
            .characteristic(TARGET_STATE)
            .map(|c| c.bounds.valid.clone());
        assert_eq!(modes, Some(Some(vec![0, 1])));
        let target = a
            .characteristic(TARGET_TEMPERATURE)
            .map(|c| c.bounds.clone());
        assert_eq!(target.and_then(|b| b.min), Some(7.5));
        // No humidity reported: no humidity characteristic, another shape.
        let dry = thermostat(2, &view(json!({}), json!({})), 0);
        assert!(dry.characteristic(HUMIDITY).is_none());
        assert_ne!(fingerprint(&[a]), fingerprint(&[dry]));
    }

    #[test]
    fn names_are_cut_to_what_hap_holds() {
        let long = "x".repeat(100);
        let a = thermostat(2, &view(json!({"label": long}), json!({})), 0);
        let name = |iid| a.characteristic(iid).map(|c| c.value.clone());
        assert_eq!(name(NAME), Some(json!("x".repeat(MAX_LEN))));
        assert_eq!(name(THERMOSTAT_NAME), name(NAME));
    }

    #[test]
    fn readings_do_not_move_the_fingerprint() {
        let at = |t: f64| thermostat(2, &view(json!({"current_temperature": t}), json!({})), 0);
        assert_eq!(fingerprint(&[at(19.0)]), fingerprint(&[at(23.0)]));
    }
}
