//! One thermostat as an accessory: Accessory Information, the Thermostat service (its
//! current and target state and temperatures, display units, heat-cool thresholds, and the
//! room's humidity where it reports one), an Away switch, and a Battery service once it
//! reports its battery, at fixed instance ids.
//!
//! Away is a **Switch** named "Away" on each thermostat's accessory, not an occupancy sensor:
//! Nest's away (manual eco on the whole home) is something a person turns on and off, and a
//! switch is what the Home app lets one tap and what an automation ("when the last person
//! leaves") can set; an occupancy sensor is read-only there and means the opposite ("someone
//! is here"). On any thermostat it sets the home's away, as every other surface does.

use serde_json::json;

use super::accessories::{Accessory, Service, info, text};
use super::characteristics::{Bounds, Characteristic, Kind};
use crate::thermostat::Reported;
use crate::thermostat::intent::Mode;
use crate::thermostat::reading::{
    self, BATTERY_LOW_V, Capabilities, Diagnostics, Reading, Targets,
};

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
/// The battery.
const BATTERY: u64 = 30;
const BATTERY_LEVEL: u64 = 31;
const CHARGING_STATE: u64 = 32;
const LOW_BATTERY: u64 = 33;
/// Setpoint bounds on the 0.5 °C grid, around the thermostat's safety bounds.
fn setpoint_bounds(bounds: &reading::Bounds) -> Bounds {
    let (lo, hi) = (bounds.low, bounds.high);
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
fn firmware(software_version: &Reported) -> String {
    let version = software_version.as_str().unwrap_or_default();
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

/// One thermostat as an accessory, from its reading: its mapping, every field decided (see
/// [`crate::thermostat::reading`]).
pub fn thermostat(aid: u64, reading: &Reading) -> Accessory {
    let Reading {
        serial,
        api_key: _,
        availability: _,
        name,
        room,
        targets: Targets { target, high, low },
        humidity,
        target_humidity: _,
        target_humidity_enabled: _,
        mode: _,
        hvac,
        fan: _,
        eco: _,
        is_online: _,
        has_leaf: _,
        scale,
        capabilities:
            Capabilities {
                can_heat,
                can_cool,
                has_fan: _,
                has_emer_heat: _,
                has_humidifier: _,
                has_dehumidifier: _,
            },
        safety: _,
        diagnostics:
            Diagnostics {
                software_version,
                time_to_target: _,
                time_to_target_training_status: _,
                learning_mode: _,
                preconditioning_enabled: _,
                backplate_temperature: _,
                local_ip: _,
                mac_address: _,
                rssi: _,
                filter_replacement_needed: _,
                filter_runtime_sec: _,
                sunlight_correction_active: _,
                heatpump_ready: _,
                compressor_lockout_timeout: _,
            },
        structure_id: _,
        away,
        sensed_away: _,
        schedule_mode: _,
        lock: _,
        bounds,
        outside: _,
        time_zone: _,
        battery_volts,
        battery_percent,
        reported: _,
        change: _,
        course: _,
    } = reading;
    let setpoints = setpoint_bounds(bounds);
    let within = |v: &Reported, fallback: f64| {
        let (lo, hi) = (setpoints.min.unwrap_or(0.0), setpoints.max.unwrap_or(100.0));
        json!(v.as_f64().unwrap_or(fallback).clamp(lo, hi))
    };
    let (lo, hi) = (setpoints.min.unwrap_or(0.0), setpoints.max.unwrap_or(100.0));
    let current_state = if hvac.heating() {
        1
    } else if hvac.cooling() {
        2
    } else {
        0
    };
    let target_state = match reading.mode_now() {
        Some(Mode::Heat | Mode::Emergency) => 1,
        Some(Mode::Cool) => 2,
        Some(Mode::Range) => 3,
        Some(Mode::Off) | None => 0,
    };
    let (can_heat, can_cool) = (*can_heat, *can_cool);
    let mut modes = vec![0u8];
    modes.extend(can_heat.then_some(1));
    modes.extend(can_cool.then_some(2));
    modes.extend((can_heat && can_cool).then_some(3));
    let units = u8::from(scale.as_str() == Some("F"));
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
            json!(room.as_f64().unwrap_or(0.0).clamp(-50.0, 100.0)),
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
            within(target, lo),
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
        Characteristic::new(HEATING_THRESHOLD, Kind::HeatingThreshold, within(low, lo))
            .with(setpoints.clone()),
        Characteristic::new(COOLING_THRESHOLD, Kind::CoolingThreshold, within(high, hi))
            .with(setpoints),
    ];
    if let Some(humidity) = humidity.as_f64() {
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
    characteristics.push(text(THERMOSTAT_NAME, Kind::Name, name));
    let battery = battery_percent.map(|percent| battery(percent, *battery_volts));
    Accessory {
        aid,
        services: [
            info(
                name,
                "Nest",
                "Thermostat",
                serial,
                &firmware(software_version),
            ),
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
                    Characteristic::new(AWAY_ON, Kind::On, json!(away)),
                    text(AWAY_NAME, Kind::Name, "Away"),
                ],
            },
        ]
        .into_iter()
        .chain(battery)
        .collect(),
    }
}

/// The Battery service: the charge, and low below the firmware's own low point. The
/// thermostat charges its battery from the heating's wires and does not say when, so it shows
/// as not charging.
fn battery(percent: u8, volts: Option<f64>) -> Service {
    let enumerated = |max: u8| Bounds {
        min: Some(0.0),
        max: Some(f64::from(max)),
        step: Some(1.0),
        valid: Some((0..=max).collect()),
    };
    let low = volts.is_some_and(|v| v < BATTERY_LOW_V);
    Service {
        iid: BATTERY,
        hap_type: "96",
        primary: false,
        characteristics: vec![
            Characteristic::new(BATTERY_LEVEL, Kind::BatteryLevel, json!(percent)).with(Bounds {
                min: Some(0.0),
                max: Some(100.0),
                step: Some(1.0),
                valid: None,
            }),
            Characteristic::new(CHARGING_STATE, Kind::ChargingState, json!(0)).with(enumerated(2)),
            Characteristic::new(LOW_BATTERY, Kind::StatusLowBattery, json!(u8::from(low)))
                .with(enumerated(1)),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::homekit::accessories::{FIRMWARE, MAX_LEN, NAME};
    use crate::thermostat::reading::tests::reading;

    #[test]
    fn a_thermostat_shows_its_modes_bounds_and_readings() {
        let r = reading(
            json!({"current_temperature": 20.5, "target_temperature": 21.0,
                   "target_temperature_type": "heat", "can_cool": false, "hvac_heater_state": true}),
            json!({"current_humidity": 44, "temperature_scale": "F", "current_version": "5.9.4-5"}),
        );
        let a = thermostat(2, &r);
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
        // No humidity reported: no humidity characteristic; no battery: no battery service.
        let dry = thermostat(2, &reading(json!({}), json!({})));
        assert!(dry.characteristic(HUMIDITY).is_none());
        assert!(dry.services.iter().all(|s| s.iid != BATTERY));
    }

    #[test]
    fn a_battery_shows_its_charge_and_when_it_is_low() {
        let at = |volts: f64| thermostat(2, &reading(json!({}), json!({"battery_level": volts})));
        let a = at(3.9);
        let value = |a: &Accessory, iid| a.characteristic(iid).map(|c| c.value.clone());
        assert_eq!(value(&a, BATTERY_LEVEL), Some(json!(80)));
        assert_eq!(value(&a, CHARGING_STATE), Some(json!(0)));
        assert_eq!(value(&a, LOW_BATTERY), Some(json!(0)));
        let battery = a.services.iter().find(|s| s.iid == BATTERY).unwrap();
        assert_eq!(battery.hap_type, "96");
        let low = at(3.6);
        assert_eq!(value(&low, BATTERY_LEVEL), Some(json!(20)));
        assert_eq!(value(&low, LOW_BATTERY), Some(json!(1)));
    }

    #[test]
    fn names_are_cut_to_what_hap_holds() {
        let long = "x".repeat(100);
        let a = thermostat(2, &reading(json!({"label": long}), json!({})));
        let name = |iid| a.characteristic(iid).map(|c| c.value.clone());
        assert_eq!(name(NAME), Some(json!("x".repeat(MAX_LEN))));
        assert_eq!(name(THERMOSTAT_NAME), name(NAME));
    }
}
