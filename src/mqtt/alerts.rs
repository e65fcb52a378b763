//! A thermostat's alerts on MQTT (docs/mqtt-home-assistant.md, "Alerts"): the list of its active
//! alerts, whether each kind is active, and one Home Assistant `binary_sensor` of class
//! `problem` per kind, so Home Assistant's own automations and notifications can take it from
//! there. Pure functions of the board's active alerts; the bridge publishes them like every
//! other state topic (retained, only when the payload changes) and is woken by the board's
//! notices, since an alert may start while the thermostat says nothing (offline).

use serde_json::{Value, json};

use crate::alerts::{Alert, Kind};

/// `(topic suffix after {P}/{S}/, payload)`: `alerts`, the JSON list of the thermostat's active
/// alerts (oldest first, `[]` when none, each as `GET /api/alerts` shows it), and
/// `alerts/<kind>`, `true` while an alert of that kind is active and `false` otherwise.
pub fn topics(serial: &str, active: &[Alert]) -> Vec<(String, String)> {
    let mine: Vec<&Alert> = active.iter().filter(|a| a.serial == serial).collect();
    let list = serde_json::to_string(&mine).unwrap_or_else(|_| "[]".to_string());
    let mut out = Vec::with_capacity(Kind::ALL.len() + 1);
    out.push(("alerts".to_string(), list));
    for kind in Kind::ALL {
        let on = mine.iter().any(|a| a.kind == kind);
        out.push((format!("alerts/{}", kind.as_str()), on.to_string()));
    }
    out
}

/// The kinds a thermostat gets a binary sensor for: all of them, except not heating (cooling)
/// on one that cannot heat (cool).
pub fn kinds(can_heat: bool, can_cool: bool) -> Vec<Kind> {
    Kind::ALL
        .into_iter()
        .filter(|k| match k {
            Kind::NotHeating => can_heat,
            Kind::NotCooling => can_cool,
            _ => true,
        })
        .collect()
}

/// The discovery id of a kind's binary sensor (after `nest_{S}/`, and in its unique id).
pub fn entity_id(kind: Kind) -> String {
    format!("alert_{}", kind.as_str())
}

/// What a kind's binary sensor adds to the common discovery settings. Its availability is
/// hearth's alone: the thermostat's own availability topic says `offline` exactly when the
/// offline alert is on, which must not make that alert's sensor unavailable. Its attributes
/// are the active alert of its kind, taken from the list (`{}` when there is none), so an
/// automation can notify with the alert's own words (`message`).
pub fn sensor(topic_prefix: &str, serial: &str, kind: Kind) -> Value {
    let name = kind.as_str();
    json!({
        "name": kind.title(),
        "state_topic": format!("{topic_prefix}/{serial}/alerts/{name}"),
        "json_attributes_topic": format!("{topic_prefix}/{serial}/alerts"),
        "json_attributes_template": format!(
            "{{{{ ((value_json | selectattr('kind', 'equalto', '{name}') | list) + [{{}}]) | first | tojson }}}}"
        ),
        "payload_on": "true",
        "payload_off": "false",
        "device_class": "problem",
        "availability": [
            {"topic": format!("{topic_prefix}/availability"), "payload_available": "online", "payload_not_available": "offline"},
        ],
        "qos": 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alert(serial: &str, kind: Kind) -> Alert {
        Alert {
            id: format!("{serial}-{}", kind.as_str()),
            serial: serial.to_string(),
            kind,
            started_at: "2026-11-26T10:00:00.000Z".to_string(),
            cleared_at: None,
            message: "Hallway is 5.8°C (below 7°C)".to_string(),
        }
    }

    #[test]
    fn each_thermostat_sees_only_its_own_alerts() {
        let active = [
            alert("S1", Kind::LowTemperature),
            alert("S2", Kind::Offline),
        ];
        let out = topics("S1", &active);
        assert_eq!(out.len(), Kind::ALL.len() + 1);
        let list: Vec<Alert> = serde_json::from_str(&out[0].1).unwrap();
        assert_eq!(list, vec![active[0].clone()]);
        let on: Vec<&str> = out[1..]
            .iter()
            .filter(|(_, p)| p == "true")
            .map(|(t, _)| t.as_str())
            .collect();
        assert_eq!(on, ["alerts/low_temperature"]);
        assert_eq!(topics("S3", &active)[0].1, "[]");
    }

    #[test]
    fn heat_only_has_no_not_cooling_sensor() {
        let k = kinds(true, false);
        assert!(k.contains(&Kind::NotHeating) && !k.contains(&Kind::NotCooling));
        assert_eq!(kinds(true, true).len(), Kind::ALL.len());
        let s = sensor("nle", "S1", Kind::Offline);
        assert_eq!(s["state_topic"], "nle/S1/alerts/offline");
        assert_eq!(s["device_class"], "problem");
        assert_eq!(s["availability"].as_array().map(Vec::len), Some(1));
        assert_eq!(s["json_attributes_topic"], "nle/S1/alerts");
        assert_eq!(
            s["json_attributes_template"],
            "{{ ((value_json | selectattr('kind', 'equalto', 'offline') | list) + [{}]) | first | tojson }}"
        );
    }
}
