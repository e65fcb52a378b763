//! Home Assistant MQTT discovery: a climate entity and the sensors of the Python server's
//! integration, per thermostat. Sent (retained) when hearth connects and again only when what
//! they describe changes ([`Fingerprint`]), never before every state message.
//!
//! Availability is two topics, both of which must say `online`: hearth's own `{P}/availability`
//! (its last will says `offline`, so a crashed server shows every entity unavailable) and the
//! thermostat's `{P}/{S}/availability`.

use serde_json::{Value, json};

use super::state_topics::Snapshot;

/// Everything a discovery message depends on. The climate entity's temperature topics depend
/// on the mode (one setpoint, a range, or none), as in the Python server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    name: String,
    can_heat: bool,
    can_cool: bool,
    has_fan: bool,
    /// Emergency heat: the heat pumps that have auxiliary heat (its runtime sensor).
    has_aux: bool,
    mode: &'static str,
    version: String,
}

impl Fingerprint {
    pub fn of(s: &Snapshot) -> Fingerprint {
        let r = &s.reading;
        Fingerprint {
            name: r.name.clone(),
            can_heat: r.capabilities.can_heat,
            can_cool: r.capabilities.can_cool,
            has_fan: r.capabilities.has_fan,
            has_aux: r.capabilities.has_emer_heat,
            mode: s.ha_mode(),
            version: r
                .diagnostics
                .software_version
                .as_str()
                .unwrap_or("")
                .to_string(),
        }
    }
}

/// Topic prefixes, as configured.
pub struct Prefixes<'a> {
    /// `{P}`: state and command topics.
    pub topic: &'a str,
    /// Where Home Assistant reads discovery.
    pub discovery: &'a str,
}

/// A sensor-like entity: `(component, id, name, state topic suffix under ha/, extra settings)`.
pub(super) type Entity = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Value,
);

fn sensors(f: &Fingerprint) -> Vec<Entity> {
    let has_fan = f.has_fan;
    let diagnostic = "diagnostic";
    let mut list: Vec<Entity> = vec![
        (
            "sensor",
            "temperature",
            "Temperature",
            "current_temperature",
            json!({"unit_of_measurement": "°C", "device_class": "temperature", "state_class": "measurement"}),
        ),
        (
            "sensor",
            "humidity",
            "Humidity",
            "current_humidity",
            json!({"unit_of_measurement": "%", "device_class": "humidity", "state_class": "measurement"}),
        ),
        (
            "sensor",
            "outdoor_temperature",
            "Outdoor temperature",
            "outdoor_temperature",
            json!({"unit_of_measurement": "°C", "device_class": "temperature", "state_class": "measurement"}),
        ),
        (
            "binary_sensor",
            "occupancy",
            "Occupancy",
            "occupancy",
            json!({"payload_on": "home", "payload_off": "away", "device_class": "occupancy"}),
        ),
        (
            "binary_sensor",
            "leaf",
            "Eco mode",
            "eco",
            json!({"payload_on": "true", "payload_off": "false", "device_class": "power"}),
        ),
        (
            "sensor",
            "battery",
            "Battery",
            "battery",
            json!({"unit_of_measurement": "%", "device_class": "battery", "state_class": "measurement", "entity_category": diagnostic}),
        ),
        (
            "sensor",
            "rssi",
            "Wi-Fi signal",
            "rssi",
            json!({"unit_of_measurement": "dBm", "device_class": "signal_strength", "state_class": "measurement", "entity_category": diagnostic}),
        ),
        (
            "binary_sensor",
            "filter_replacement",
            "Filter replacement",
            "filter_replacement_needed",
            json!({"payload_on": "true", "payload_off": "false", "device_class": "problem", "entity_category": diagnostic}),
        ),
        (
            "sensor",
            "filter_runtime",
            "Filter runtime",
            "filter_runtime_days",
            json!({"unit_of_measurement": "d", "device_class": "duration", "state_class": "total_increasing", "entity_category": diagnostic}),
        ),
        (
            "sensor",
            "time_to_target",
            "Time to target",
            "time_to_target",
            json!({"unit_of_measurement": "min", "device_class": "duration"}),
        ),
        (
            "binary_sensor",
            "sunlight_correction",
            "Sunlight correction",
            "sunlight_correction_active",
            json!({"payload_on": "true", "payload_off": "false", "entity_category": diagnostic}),
        ),
        (
            "sensor",
            "compressor_lockout",
            "Compressor lockout",
            "compressor_lockout_timeout",
            json!({"unit_of_measurement": "s", "device_class": "duration", "entity_category": diagnostic}),
        ),
        (
            "binary_sensor",
            "learning_mode",
            "Learning mode",
            "learning_mode",
            json!({"payload_on": "true", "payload_off": "false", "entity_category": diagnostic}),
        ),
        (
            "binary_sensor",
            "heat_pump_ready",
            "Heat pump ready",
            "heat_pump_ready",
            json!({"payload_on": "true", "payload_off": "false", "entity_category": diagnostic}),
        ),
        (
            "sensor",
            "local_ip",
            "IP address",
            "local_ip",
            json!({"entity_category": diagnostic}),
        ),
        (
            "sensor",
            "last_change",
            "Last change",
            "last_change",
            json!({"device_class": "enum", "options": ["sent", "waiting", "taken"], "entity_category": diagnostic}),
        ),
    ];
    if has_fan {
        list.push((
            "binary_sensor",
            "fan",
            "Fan",
            "fan_running",
            json!({"payload_on": "true", "payload_off": "false", "device_class": "running"}),
        ));
        list.push((
            "sensor",
            "fan_timer_remaining",
            "Fan timer remaining",
            "fan_timer_remaining",
            json!({"unit_of_measurement": "min", "device_class": "duration"}),
        ));
    }
    list.extend(super::energy::entities(
        f.can_heat, f.can_cool, f.has_fan, f.has_aux,
    ));
    list
}

/// Every discovery `(topic, payload)` for the thermostat `serial`.
pub fn messages(p: &Prefixes<'_>, serial: &str, f: &Fingerprint) -> Vec<(String, String)> {
    let base = format!("{}/{serial}", p.topic);
    let ha = |suffix: &str| format!("{base}/ha/{suffix}");
    let availability = json!([
        {"topic": format!("{}/availability", p.topic), "payload_available": "online", "payload_not_available": "offline"},
        {"topic": format!("{base}/availability"), "payload_available": "online", "payload_not_available": "offline"},
    ]);
    let common = |id: Option<&str>, component: &str| {
        let (unique, entity) = match id {
            None => (
                format!("nolongerevil_{serial}"),
                format!("{component}.nest_{serial}"),
            ),
            Some(id) => (
                format!("nolongerevil_{serial}_{id}"),
                format!("{component}.nest_{serial}_{id}"),
            ),
        };
        json!({
            "unique_id": unique,
            // Entity ids are lower case; the serial is not.
            "default_entity_id": entity.to_ascii_lowercase(),
            "availability": availability,
            "availability_mode": "all",
            "origin": {"name": "hearth", "sw_version": env!("CARGO_PKG_VERSION")},
        })
    };
    let mut out = Vec::new();
    let mut add = |component: &str, id: &str, mut config: Value, extra: Value| {
        merge(&mut config, extra);
        out.push((
            format!("{}/{component}/nest_{serial}/{id}/config", p.discovery),
            config.to_string(),
        ));
    };

    add(
        "climate",
        "thermostat",
        common(None, "climate"),
        climate(serial, f, &ha),
    );

    let device = json!({"device": {"identifiers": [format!("nolongerevil_{serial}")]}});
    for (component, id, name, suffix, extra) in sensors(f) {
        let mut config = common(Some(id), component);
        merge(&mut config, device.clone());
        merge(
            &mut config,
            json!({"name": name, "state_topic": ha(suffix), "qos": 0}),
        );
        add(component, id, config, extra);
    }
    for kind in super::alerts::kinds(f.can_heat, f.can_cool) {
        let id = super::alerts::entity_id(kind);
        let mut config = common(Some(&id), "binary_sensor");
        merge(&mut config, device.clone());
        add(
            "binary_sensor",
            &id,
            config,
            super::alerts::sensor(p.topic, serial, kind),
        );
    }
    if f.has_fan {
        let mut config = common(Some("fan_duration"), "number");
        merge(&mut config, device);
        add(
            "number",
            "fan_duration",
            config,
            json!({
                "name": "Fan run time",
                "state_topic": ha("fan_duration"),
                "command_topic": ha("fan_duration/set"),
                "min": 15, "max": super::commands::FAN_MINUTES_MAX, "step": 15,
                "mode": "slider", "unit_of_measurement": "min", "qos": 1,
            }),
        );
    }
    out
}

/// The climate entity's own configuration: the device, its modes (those the thermostat can do),
/// and the topics of its setpoints for the mode it is in.
fn climate(serial: &str, f: &Fingerprint, ha: &dyn Fn(&str) -> String) -> Value {
    let mut modes = vec!["off"];
    if f.can_heat {
        modes.push("heat");
    }
    if f.can_cool {
        modes.push("cool");
    }
    if f.can_heat && f.can_cool {
        modes.push("heat_cool");
    }
    let mut climate = json!({
        "name": null,
        "device": {
            "identifiers": [format!("nolongerevil_{serial}")],
            "name": f.name,
            "model": "Nest Thermostat",
            "manufacturer": "Google Nest",
            "serial_number": serial,
            "sw_version": if f.version.is_empty() { "NoLongerEvil" } else { f.version.as_str() },
        },
        "temperature_unit": "C",
        "precision": 0.5,
        "temp_step": 0.5,
        "min_temp": 9,
        "max_temp": 32,
        "optimistic": false,
        "qos": 1,
        "current_temperature_topic": ha("current_temperature"),
        "current_humidity_topic": ha("current_humidity"),
        "mode_command_topic": ha("mode/set"),
        "mode_state_topic": ha("mode"),
        "modes": modes,
        "action_topic": ha("action"),
        "preset_mode_command_topic": ha("preset/set"),
        "preset_mode_state_topic": ha("preset"),
        "preset_modes": ["home", "away", "eco"],
    });
    if f.has_fan {
        merge(
            &mut climate,
            json!({
                "fan_mode_command_topic": ha("fan_mode/set"),
                "fan_mode_state_topic": ha("fan_mode"),
                "fan_modes": ["auto", "on"],
            }),
        );
    }
    match f.mode {
        "heat" | "cool" => merge(
            &mut climate,
            json!({
                "temperature_command_topic": ha("target_temperature/set"),
                "temperature_state_topic": ha("target_temperature"),
            }),
        ),
        "heat_cool" => merge(
            &mut climate,
            json!({
                "temperature_low_command_topic": ha("target_temperature_low/set"),
                "temperature_low_state_topic": ha("target_temperature_low"),
                "temperature_high_command_topic": ha("target_temperature_high/set"),
                "temperature_high_state_topic": ha("target_temperature_high"),
            }),
        ),
        _ => {}
    }
    climate
}

fn merge(into: &mut Value, from: Value) {
    if let (Value::Object(into), Value::Object(from)) = (into, from) {
        into.extend(from);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fingerprint(mode: &'static str, has_fan: bool) -> Fingerprint {
        Fingerprint {
            name: "Hallway".into(),
            can_heat: true,
            can_cool: true,
            has_fan,
            has_aux: false,
            mode,
            version: String::new(),
        }
    }

    fn parse(out: &[(String, String)], topic: &str) -> Value {
        let (_, payload) = out.iter().find(|(t, _)| t == topic).expect(topic);
        serde_json::from_str(payload).unwrap()
    }

    const P: Prefixes<'static> = Prefixes {
        topic: "nle",
        discovery: "homeassistant",
    };

    #[test]
    fn climate_entity_matches_the_mode_and_capabilities() {
        let out = messages(&P, "S1", &fingerprint("heat_cool", true));
        let c = parse(&out, "homeassistant/climate/nest_S1/thermostat/config");
        assert_eq!(c["unique_id"], "nolongerevil_S1");
        assert_eq!(c["default_entity_id"], "climate.nest_s1");
        assert_eq!(c["device"]["name"], "Hallway");
        assert_eq!(c["modes"], json!(["off", "heat", "cool", "heat_cool"]));
        assert_eq!(c["mode_command_topic"], "nle/S1/ha/mode/set");
        assert_eq!(
            c["temperature_low_command_topic"],
            "nle/S1/ha/target_temperature_low/set"
        );
        assert!(c.get("temperature_command_topic").is_none());
        assert_eq!(c["fan_modes"], json!(["auto", "on"]));
        assert_eq!(c["availability"][0]["topic"], "nle/availability");
        assert_eq!(c["availability"][1]["topic"], "nle/S1/availability");
        assert_eq!(c["availability_mode"], "all");
        let n = parse(&out, "homeassistant/number/nest_S1/fan_duration/config");
        assert_eq!(n["command_topic"], "nle/S1/ha/fan_duration/set");
        let b = parse(&out, "homeassistant/sensor/nest_S1/battery/config");
        assert_eq!(b["state_topic"], "nle/S1/ha/battery");
        assert_eq!(b["device"]["identifiers"], json!(["nolongerevil_S1"]));
        let r = parse(&out, "homeassistant/sensor/nest_S1/heating_runtime/config");
        assert_eq!(r["state_topic"], "nle/S1/ha/heating_runtime");
        assert_eq!(
            (
                &r["device_class"],
                &r["state_class"],
                &r["unit_of_measurement"]
            ),
            (&json!("duration"), &json!("total_increasing"), &json!("h"))
        );
        let t = parse(&out, "homeassistant/sensor/nest_S1/cooling_today/config");
        assert_eq!(t["unit_of_measurement"], "min");
        assert!(out.iter().any(|(t, _)| t.ends_with("/fan_runtime/config")));
        assert!(!out.iter().any(|(t, _)| t.ends_with("/aux_runtime/config")));
        let a = parse(
            &out,
            "homeassistant/binary_sensor/nest_S1/alert_offline/config",
        );
        assert_eq!(a["unique_id"], "nolongerevil_S1_alert_offline");
        assert_eq!(a["state_topic"], "nle/S1/alerts/offline");
        assert_eq!(
            a["availability"],
            json!([{"topic": "nle/availability", "payload_available": "online", "payload_not_available": "offline"}])
        );
    }

    #[test]
    fn no_fan_means_no_fan_entities_and_off_has_no_setpoint() {
        let out = messages(&P, "S1", &fingerprint("off", false));
        assert!(out.iter().all(|(t, _)| !t.contains("/fan")));
        let c = parse(&out, "homeassistant/climate/nest_S1/thermostat/config");
        assert!(c.get("temperature_command_topic").is_none());
        assert!(c.get("temperature_low_command_topic").is_none());
        assert!(c.get("fan_mode_command_topic").is_none());
        let heat = messages(&P, "S1", &fingerprint("heat", false));
        let c = parse(&heat, "homeassistant/climate/nest_S1/thermostat/config");
        assert_eq!(
            c["temperature_command_topic"],
            "nle/S1/ha/target_temperature/set"
        );
    }
}
