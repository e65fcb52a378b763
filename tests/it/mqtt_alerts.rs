//! A thermostat's alerts on MQTT, against the real broker the MQTT tests use: the retained list
//! of its active alerts, a state topic per kind, and a Home Assistant `binary_sensor` of class
//! `problem` per kind, whose discovery is sent once, not with every alert. Alerts are raised and
//! cleared on the board directly (`Alerts::note`), as the rules do once a notice is durable.

use crate::common;

use common::mqtt::{Broker, Watcher};
use common::*;
use hearth::alerts::{Alert, Event, Kind, Notice};
use hearth::config::MqttConfig;
use hearth::util::clock::ManualClock;
use serde_json::Value;

const PREFIX: &str = "nle";

fn topic(suffix: &str) -> String {
    format!("{PREFIX}/{SERIAL}/{suffix}")
}

fn sensor_config(kind: &str) -> String {
    format!("homeassistant/binary_sensor/nest_{SERIAL}/alert_{kind}/config")
}

fn alert(kind: Kind, cleared: bool) -> Alert {
    Alert {
        id: format!("a-{}", kind.as_str()),
        serial: SERIAL.to_string(),
        kind,
        started_at: "2026-11-26T10:00:00.000Z".to_string(),
        cleared_at: cleared.then(|| "2026-11-26T11:00:00.000Z".to_string()),
        message: "Hallway is 5.8°C (below 7°C)".to_string(),
    }
}

fn list(payload: &str) -> Vec<Value> {
    serde_json::from_str(payload).unwrap()
}

#[test]
fn alerts_are_published_per_thermostat_with_one_binary_sensor_per_kind() {
    let broker = Broker::start();
    // A clock nobody moves: the bridge's timed looks (availability, resync) never come, so
    // only the board's notices can make it publish an alert.
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.mqtt = Some(MqttConfig {
            topic_prefix: PREFIX.into(),
            ..MqttConfig::new("127.0.0.1", broker.port)
        });
        c.clock = time.clock();
    });
    let watch = Watcher::connect(broker.port);
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);

    // Before any alert: a sensor per kind, all off, and an empty list.
    let seen = watch.wait("alert discovery and state", |m| {
        Kind::ALL.iter().all(|k| {
            m.contains_key(&sensor_config(k.as_str()))
                && m.get(&topic(&format!("alerts/{}", k.as_str())))
                    .map(String::as_str)
                    == Some("false")
        }) && m.get(&topic("alerts")).map(String::as_str) == Some("[]")
    });
    let offline: Value = serde_json::from_str(&seen[&sensor_config("offline")]).unwrap();
    assert_eq!(offline["device_class"], "problem");
    assert_eq!(offline["name"], "Thermostat offline");
    assert_eq!(offline["state_topic"], topic("alerts/offline"));
    assert_eq!(offline["payload_on"], "true");
    // Its attributes: the kind's active alert, from the list (the template is in the unit tests).
    assert_eq!(offline["json_attributes_topic"], topic("alerts"));
    assert_eq!(
        offline["unique_id"],
        format!("nolongerevil_{SERIAL}_alert_offline")
    );
    assert_eq!(
        offline["device"]["identifiers"],
        serde_json::json!([format!("nolongerevil_{SERIAL}")])
    );
    // Only hearth's own availability: the thermostat's says offline exactly when this is on.
    assert_eq!(offline["availability"].as_array().map(Vec::len), Some(1));
    assert_eq!(offline["availability"][0]["topic"], "nle/availability");

    // An alert starts with no change from the thermostat: the board's notice is enough.
    s.app().alerts().note(Notice {
        event: Event::Started,
        alert: alert(Kind::LowTemperature, false),
    });
    watch.wait_for(&topic("alerts/low_temperature"), "true");
    let now = watch.latest();
    assert_eq!(
        list(&now[&topic("alerts")]),
        vec![serde_json::to_value(alert(Kind::LowTemperature, false)).unwrap()]
    );
    assert_eq!(now[&topic("alerts/offline")], "false");

    // A second one, then the first clears: the list follows, each kind on its own.
    s.app().alerts().note(Notice {
        event: Event::Started,
        alert: alert(Kind::Offline, false),
    });
    watch.wait_for(&topic("alerts/offline"), "true");
    s.app().alerts().note(Notice {
        event: Event::Cleared,
        alert: alert(Kind::LowTemperature, true),
    });
    watch.wait_for(&topic("alerts/low_temperature"), "false");
    let now = watch.latest();
    assert_eq!(now[&topic("alerts/offline")], "true");
    let active = list(&now[&topic("alerts")]);
    assert_eq!(active.len(), 1);
    assert_eq!(active[0]["kind"], "offline");

    // Discovery went out once for all of that.
    for kind in Kind::ALL {
        assert_eq!(watch.count(&sensor_config(kind.as_str())), 1, "{kind:?}");
    }
    assert_eq!(watch.count(&topic("alerts/low_temperature")), 3);
}
