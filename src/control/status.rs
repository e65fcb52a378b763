//! `GET /status`, `GET /api/devices` and `GET /api/stats`: a thermostat's status record (its
//! [`Reading`] as the control port writes it, the field table in docs/control-api.md), plus
//! server statistics.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use serde::Serialize;
use serde_json::{Value, json};

use super::ControlError;
use super::input;
use crate::accounts::Viewer;
use crate::app::App;
use crate::http::{Request, Response};
use crate::thermostat::course::Step;
use crate::thermostat::reading::{
    Bounds, Capabilities, Diagnostics, Eco, Fan, Hvac, Lock, Outside, Reading, Safety, Targets,
};
use crate::thermostat::readings::Stamp;
use crate::thermostat::{Change, Reported};
use crate::util::clock;

/// A thermostat's status record: the fields of the record, in the documented order (which
/// clients may have come to rely on), mapped from its reading.
#[derive(Serialize)]
pub struct Record<'a> {
    serial: &'a str,
    api_key: &'a Option<String>,
    is_available: bool,
    last_seen: Option<String>,
    name: &'a str,
    current_temperature: &'a Reported,
    target_temperature: &'a Reported,
    target_temperature_high: &'a Reported,
    target_temperature_low: &'a Reported,
    humidity: &'a Reported,
    target_humidity: &'a Reported,
    target_humidity_enabled: bool,
    mode: &'a Reported,
    hvac: &'a Hvac,
    fan_timer_active: bool,
    fan_timer_timeout: &'a Reported,
    eco_temperatures: HighLow<'a>,
    is_online: bool,
    has_leaf: bool,
    software_version: &'a Reported,
    temperature_scale: &'a Reported,
    capabilities: &'a Capabilities,
    can_heat: bool,
    can_cool: bool,
    has_fan: bool,
    has_emer_heat: bool,
    eco_mode: &'a Reported,
    time_to_target: &'a Reported,
    time_to_target_training_status: &'a Reported,
    safety_state: &'a Reported,
    safety_temp_activating_hvac: &'a Reported,
    learning_mode: &'a Reported,
    preconditioning_enabled: &'a Reported,
    backplate_temperature: &'a Reported,
    local_ip: &'a Reported,
    mac_address: &'a Reported,
    structure_id: &'a Reported,
    away: bool,
    schedule_mode: &'a Reported,
    fan_timer_duration: i64,
    temperature_lock: LockRecord<'a>,
    temperature_bounds: &'a Bounds,
    /// °C outside the thermostat's place, from the last weather answer for it; `null` until
    /// there is one (or with `WEATHER_PROVIDER=off`).
    outdoor_temperature: Option<f64>,
    /// The battery's charge (%), `null` until the thermostat reports its voltage.
    battery_percent: Option<u8>,
    /// The latest change made to it and whether it has taken it (`crate::thermostat::taken`);
    /// `null` before the first.
    last_change: Option<Change>,
    /// The manual setting it holds against its schedule, until when and what follows
    /// (`crate::thermostat::course`); `null` when it follows its schedule or has none.
    hold: Option<HoldRecord>,
    /// Following its schedule: the schedule's next change; `null` otherwise.
    next_step: Option<StepRecord>,
}

#[derive(Serialize)]
struct HoldRecord {
    setpoints: Vec<f64>,
    until: Option<String>,
    then: Option<Vec<f64>>,
}

#[derive(Serialize)]
struct StepRecord {
    at: String,
    setpoints: Vec<f64>,
}

impl StepRecord {
    fn of(step: &Step) -> StepRecord {
        StepRecord {
            at: clock::iso8601_ms(step.at_ms),
            setpoints: step.setpoints.clone(),
        }
    }
}

#[derive(Serialize)]
struct HighLow<'a> {
    high: &'a Reported,
    low: &'a Reported,
}

#[derive(Serialize)]
struct LockRecord<'a> {
    enabled: bool,
    low: &'a Reported,
    high: &'a Reported,
}

impl<'a> Record<'a> {
    /// The control port's mapping of a reading: every field decided (see
    /// [`crate::thermostat::reading`]).
    pub fn of(reading: &'a Reading) -> Record<'a> {
        let Reading {
            serial,
            api_key,
            availability,
            name,
            room,
            targets: Targets { target, high, low },
            humidity,
            target_humidity,
            target_humidity_enabled,
            mode,
            hvac,
            fan:
                Fan {
                    timer_active,
                    timer_timeout,
                    duration_s,
                    switched_on: _,
                },
            eco:
                Eco {
                    high: eco_high,
                    low: eco_low,
                    mode: eco_mode,
                    leaf: _,
                },
            is_online,
            has_leaf,
            scale,
            capabilities,
            safety:
                Safety {
                    state: safety_state,
                    temp_activating_hvac,
                    shutoff: _,
                },
            diagnostics:
                Diagnostics {
                    software_version,
                    time_to_target,
                    time_to_target_training_status,
                    learning_mode,
                    preconditioning_enabled,
                    backplate_temperature,
                    local_ip,
                    mac_address,
                    rssi: _,
                    filter_replacement_needed: _,
                    filter_runtime_sec: _,
                    sunlight_correction_active: _,
                    heatpump_ready: _,
                    compressor_lockout_timeout: _,
                },
            structure_id,
            away,
            sensed_away: _,
            schedule_mode,
            lock,
            bounds,
            outside: Outside {
                weather,
                reported: _,
            },
            time_zone: _,
            battery_volts: _,
            battery_percent,
            reported: _,
            change,
            course,
        } = reading;
        let Lock {
            enabled,
            low: lock_low,
            high: lock_high,
        } = lock;
        Record {
            serial,
            api_key,
            is_available: availability.available,
            last_seen: reading.last_seen(),
            name,
            current_temperature: room,
            target_temperature: target,
            target_temperature_high: high,
            target_temperature_low: low,
            humidity,
            target_humidity,
            target_humidity_enabled: *target_humidity_enabled,
            mode,
            hvac,
            fan_timer_active: *timer_active,
            fan_timer_timeout: timer_timeout,
            eco_temperatures: HighLow {
                high: eco_high,
                low: eco_low,
            },
            is_online: *is_online,
            has_leaf: *has_leaf,
            software_version,
            temperature_scale: scale,
            capabilities,
            can_heat: capabilities.can_heat,
            can_cool: capabilities.can_cool,
            has_fan: capabilities.has_fan,
            has_emer_heat: capabilities.has_emer_heat,
            eco_mode,
            time_to_target,
            time_to_target_training_status,
            safety_state,
            safety_temp_activating_hvac: temp_activating_hvac,
            learning_mode,
            preconditioning_enabled,
            backplate_temperature,
            local_ip,
            mac_address,
            structure_id,
            away: *away,
            schedule_mode,
            fan_timer_duration: *duration_s,
            temperature_lock: LockRecord {
                enabled: *enabled,
                low: lock_low,
                high: lock_high,
            },
            temperature_bounds: bounds,
            outdoor_temperature: *weather,
            battery_percent: *battery_percent,
            last_change: *change,
            hold: course
                .as_ref()
                .and_then(|c| c.hold.as_ref())
                .map(|(held, ends)| HoldRecord {
                    setpoints: held.clone(),
                    until: ends.as_ref().map(|s| clock::iso8601_ms(s.at_ms)),
                    then: ends.as_ref().map(|s| s.setpoints.clone()),
                }),
            next_step: course
                .as_ref()
                .and_then(|c| c.next.as_ref())
                .map(StepRecord::of),
        }
    }
}

/// Status records as JSON, kept for `GET /status` (which dashboards and integrations poll every
/// few seconds) while the reading they were written from would be the same
/// ([`crate::thermostat::readings::Stamp`]): a poll between changes costs a few comparisons and
/// a copy.
#[derive(Default)]
pub struct StatusJson {
    kept: Mutex<HashMap<String, Written>>,
}

/// A record as JSON, and what its reading was made from.
type Written = (Stamp, Arc<[u8]>);

impl StatusJson {
    fn of(&self, app: &App, serial: &str) -> Option<Arc<[u8]>> {
        let availability = app.availability(serial);
        let Some(now) = app.sources(serial, availability) else {
            self.kept.lock().remove(serial);
            return None;
        };
        let now_ms = app.config().clock.now_ms();
        if let Some((stamp, json)) = self.kept.lock().get(serial) {
            if stamp.still(&now, now_ms) {
                return Some(Arc::clone(json));
            }
        }
        let (reading, stamp) = app.reading_stamped(serial, availability)?;
        let json: Arc<[u8]> = serde_json::to_vec(&Record::of(&reading)).ok()?.into();
        self.kept
            .lock()
            .insert(serial.to_string(), (stamp, Arc::clone(&json)));
        Some(json)
    }
}

pub fn status(app: &App, kept: &StatusJson, req: &Request) -> Result<Response, ControlError> {
    let serial = input::shown(app, input::query_serial(req)?)?;
    let json = kept.of(app, &serial).ok_or(ControlError::DeviceNotFound)?;
    Ok(Response::json_bytes(200, json.to_vec()))
}

/// A thermostat in `/api/devices`: its status record, then who holds it and whether it has
/// reported its state yet.
#[derive(Serialize)]
struct Listed<'a> {
    #[serde(flatten)]
    status: Record<'a>,
    subscription_count: usize,
    owner: Option<String>,
    /// Whether the thermostat has uploaded its state at least once ([`Reading::reported`]).
    /// Until then a page shows "Waiting for the thermostat…".
    reported: bool,
}

/// `{"devices":[status + subscription_count + owner + reported], "total": n}`: the thermostats
/// the control port lists ([`crate::accounts::visibility`]): in pairing mode only claimed ones
/// (as the Python server does), in open mode not released ones (`/api/waiting` lists both).
/// `/status` answers for a released one in open mode (anyone on the LAN may add it), not in
/// pairing mode.
pub fn devices(app: &App) -> Response {
    let counts = app.hub().subscription_counts();
    let visibility = app.visibility();
    let serials = app.state().serials();
    let (owners, listed): (HashMap<String, String>, Vec<String>) = app.state().accounts(|a| {
        let owners = a
            .owners
            .iter()
            .map(|(s, o)| (s.clone(), o.user.clone()))
            .collect();
        let listed = serials
            .into_iter()
            .filter(|s| visibility.of(a, s, Viewer::Lan).listed)
            .collect();
        (owners, listed)
    });
    let readings: Vec<Arc<Reading>> = listed.iter().filter_map(|s| app.reading(s)).collect();
    let devices: Vec<Listed> = readings
        .iter()
        .map(|reading| Listed {
            status: Record::of(reading),
            subscription_count: counts.get(&reading.serial).copied().unwrap_or(0),
            owner: owners.get(&reading.serial).cloned(),
            reported: reading.reported,
        })
        .collect();
    let total = devices.len();
    Response::json(200, &json!({"devices": devices, "total": total}))
}

pub fn stats(app: &App) -> Response {
    let serials = app.state().serials();
    let counts = app.hub().subscription_counts();
    let mut availability = serde_json::Map::new();
    let mut available = 0;
    for serial in &serials {
        let a = app.availability(serial);
        available += usize::from(a.available);
        availability.insert(
            serial.clone(),
            json!({"is_available": a.available, "last_seen": a.last_seen_ms.map(clock::iso8601_ms)}),
        );
    }
    Response::json(
        200,
        &json!({
            "devices": {"total": serials.len(), "available": available, "serials": serials},
            "subscriptions": {
                "total_subscriptions": counts.values().sum::<usize>(),
                "devices_with_subscriptions": counts.len(),
            },
            "event_streams": app.events().open_count(),
            "availability": availability,
        }),
    )
}

/// The status record of a known thermostat (its reading as `/status` writes it), as a JSON
/// value.
pub fn record(app: &App, serial: &str) -> Option<Value> {
    let reading = app.reading(serial)?;
    serde_json::to_value(Record::of(&reading)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Bucket, Compact, DeviceData};
    use crate::thermostat::{NoWeather, View, read};

    fn data(buckets: Value) -> DeviceData {
        let mut d = DeviceData::default();
        for (k, v) in buckets.as_object().unwrap() {
            d.buckets.insert(
                k.clone(),
                Bucket {
                    revision: 1,
                    timestamp: 1,
                    updated_at: 1,
                    value: Compact::from_map(v.as_object().unwrap()),
                },
            );
        }
        d
    }

    fn record(view: &View, now: i64) -> Value {
        let reading = read(
            view,
            crate::thermostat::reading::tests::available(),
            &NoWeather,
            &crate::zone::Zone::utc(),
            now,
        );
        serde_json::to_value(Record::of(&reading)).unwrap()
    }

    #[test]
    fn fields_come_from_shared_then_device() {
        let now = 1_800_000_000_000;
        let d = data(json!({
            "shared.S": {"current_temperature": 0.0, "target_temperature": 21.5, "target_temperature_type": "heat",
                         "hvac_heater_state": true, "can_cool": false},
            "device.S": {"current_temperature": 19.0, "current_humidity": 44, "where_id": "00000000-0000-0000-0000-00010000000c",
                         "fan_timer_timeout": now / 1000 + 60, "eco": {"mode": "manual-eco"}, "has_fan": true,
                         "temperature_scale": "F", "mac_address": "18b4300a0001"},
            "structure.default": {"manual_eco_all": true},
        }));
        let r = record(&View::of("S", &d, None), now);
        // 0 °C is a reading, not a missing value.
        assert_eq!(r["current_temperature"], json!(0.0));
        assert_eq!(r["target_temperature"], json!(21.5));
        assert_eq!(r["mode"], json!("heat"));
        assert_eq!(r["name"], json!("Living Room"));
        assert_eq!(r["humidity"], json!(44));
        assert_eq!(r["hvac"]["heater"], json!(true));
        assert_eq!(r["hvac"]["ac"], json!(false));
        assert_eq!(r["fan_timer_active"], json!(true));
        assert_eq!(r["eco_mode"], json!("manual-eco"));
        assert_eq!(
            (r["can_cool"].clone(), r["capabilities"]["can_cool"].clone()),
            (json!(false), json!(false))
        );
        assert_eq!(r["has_fan"], json!(true));
        assert_eq!(r["away"], json!(true));
        assert_eq!(r["structure_id"], json!("default"));
        assert_eq!(r["temperature_scale"], json!("F"));
        assert_eq!(r["mac_address"], json!("18b4300a0001"));
        assert_eq!(r["target_temperature_low"], Value::Null);
        assert_eq!(r["is_available"], json!(true));
    }

    #[test]
    fn fields_leave_in_the_order_they_always_have() {
        let reading = read(
            &View::default(),
            crate::thermostat::reading::tests::available(),
            &NoWeather,
            &crate::zone::Zone::utc(),
            0,
        );
        let r = serde_json::to_string(&Record::of(&reading)).unwrap();
        let r: serde_json::Map<String, Value> = serde_json::from_str(&r).unwrap();
        let keys: Vec<&str> = r.keys().map(String::as_str).collect();
        // The order of the record before it was a struct, which clients may have come to rely
        // on.
        let before = "serial api_key is_available last_seen name current_temperature \
            target_temperature target_temperature_high target_temperature_low humidity \
            target_humidity target_humidity_enabled mode hvac fan_timer_active \
            fan_timer_timeout eco_temperatures is_online has_leaf software_version \
            temperature_scale capabilities can_heat can_cool has_fan has_emer_heat eco_mode \
            time_to_target time_to_target_training_status safety_state \
            safety_temp_activating_hvac learning_mode preconditioning_enabled \
            backplate_temperature local_ip mac_address structure_id away schedule_mode \
            fan_timer_duration temperature_lock temperature_bounds outdoor_temperature \
            battery_percent last_change hold next_step";
        assert_eq!(keys, before.split_whitespace().collect::<Vec<_>>());
        let bounds = &r["temperature_bounds"];
        assert_eq!(bounds, &json!({"low": 7.222, "high": 35.0}));
        assert_eq!(r["hvac"].as_object().unwrap().len(), 14);
    }
}
