//! One thermostat as an accessory: Accessory Information, the Thermostat service (its
//! current and target state and temperatures, display units, heat-cool thresholds, and the
//! room's humidity where it reports one) and an Away switch, at fixed instance ids.
//!
//! Away is a **Switch** named "Away" on each thermostat's accessory, not an occupancy sensor:
//! Nest's away (manual eco on the whole home) is something a person turns on and off, and a
//! switch is what the Home app lets one tap and what an automation ("when the last person
//! leaves") can set; an occupancy sensor is read-only there and means the opposite ("someone
//! is here"). On any thermostat it sets the home's away, as every other surface does.

use serde_json::{Value, json};

use super::accessories::{Accessory, Service, info, text};
use super::characteristics::{Bounds, Characteristic, Kind};
use crate::thermostat::status::{self, Status};
use crate::thermostat::{COOLING_FLAGS, HEATING_FLAGS, View};

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
/// Setpoint bounds on the 0.5 °C grid, around the thermostat's safety bounds.
fn setpoint_bounds(view: &View) -> Bounds {
    let (lo, hi) = view.bounds();
    Bounds {
        // Outward to the 0.5 grid: a target the core clamped to an off-grid bound (7.222 °C,
        // 45 °F) still lies within what the Home app is told, and a write past the bound is
        // clamped by the core as from any surface.
        min: Some((lo * 2.0).floor() / 2.0),
        max: Some((hi * 2.0).ceil() / 2.0),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::homekit::accessories::{FIRMWARE, MAX_LEN, NAME};
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
        assert_eq!(target.and_then(|b| b.min), Some(7.0));
        // No humidity reported: no humidity characteristic.
        let dry = thermostat(2, &view(json!({}), json!({})), 0);
        assert!(dry.characteristic(HUMIDITY).is_none());
    }

    #[test]
    fn names_are_cut_to_what_hap_holds() {
        let long = "x".repeat(100);
        let a = thermostat(2, &view(json!({"label": long}), json!({})), 0);
        let name = |iid| a.characteristic(iid).map(|c| c.value.clone());
        assert_eq!(name(NAME), Some(json!("x".repeat(MAX_LEN))));
        assert_eq!(name(THERMOSTAT_NAME), name(NAME));
    }
}
