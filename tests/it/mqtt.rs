//! MQTT against a real broker: Debian's `mosquitto` on 127.0.0.1 and a free port (`.ci/run`
//! installs it), a simulated thermostat, and a test client that records every message.

use crate::common;

use std::net::TcpListener;
use std::time::Duration;

use common::mqtt::{Broker, Watcher};
use common::*;
use hearth::config::MqttConfig;
use hearth::process::ServerProcess;
use hearth::util::clock::ManualClock;
use serde_json::Value;

const PREFIX: &str = "nle";

fn mqtt_config(port: u16) -> MqttConfig {
    MqttConfig {
        topic_prefix: PREFIX.into(),
        ..MqttConfig::new("127.0.0.1", port)
    }
}

fn topic(suffix: &str) -> String {
    format!("{PREFIX}/{SERIAL}/{suffix}")
}

fn climate_topic() -> String {
    format!("homeassistant/climate/nest_{SERIAL}/thermostat/config")
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn discovery_state_topics_and_commands() {
    let broker = Broker::start();
    let s = TestServer::start_with(|c| c.mqtt = Some(mqtt_config(broker.port)));
    let watch = Watcher::connect(broker.port);
    let (mut sim, _events, mut held) = booted_and_held(&s, SERIAL);

    // Discovery: the climate entity and the sensors, on the thermostat's capabilities.
    let seen = watch.wait("discovery and state", |m| {
        m.contains_key(&climate_topic())
            && m.get(&topic("availability")).map(String::as_str) == Some("online")
            && m.contains_key(&topic("ha/mode"))
    });
    let climate = json(&seen[&climate_topic()]);
    assert_eq!(climate["unique_id"], format!("nolongerevil_{SERIAL}"));
    assert_eq!(
        climate["modes"],
        serde_json::json!(["off", "heat", "cool", "heat_cool"])
    );
    assert_eq!(climate["mode_command_topic"], topic("ha/mode/set"));
    assert_eq!(climate["fan_modes"], serde_json::json!(["auto", "on"]));
    assert_eq!(
        climate["temperature_command_topic"],
        topic("ha/target_temperature/set")
    );
    assert_eq!(climate["availability"][0]["topic"], "nle/availability");
    let battery = json(&seen[&format!("homeassistant/sensor/nest_{SERIAL}/battery/config")]);
    assert_eq!(battery["state_topic"], topic("ha/battery"));
    assert!(seen.contains_key(&format!(
        "homeassistant/number/nest_{SERIAL}/fan_duration/config"
    )));
    assert_eq!(seen["nle/availability"], "online");

    // Raw and Home Assistant state match the thermostat's buckets.
    let shared = s
        .bucket(SERIAL, &format!("shared.{SERIAL}"))
        .unwrap()
        .value
        .to_map();
    let target = shared["target_temperature"].to_string();
    assert_eq!(seen[&topic("shared/target_temperature")], target);
    assert_eq!(seen[&topic("ha/target_temperature")], target);
    assert_eq!(seen[&topic("ha/mode")], "heat");
    assert_eq!(json(&seen[&topic("shared")]), Value::Object(shared));
    for (field, value) in s
        .bucket(SERIAL, &format!("device.{SERIAL}"))
        .unwrap()
        .value
        .to_map()
    {
        let expected = match value {
            Value::String(text) => text,
            Value::Null => String::new(),
            other => other.to_string(),
        };
        assert_eq!(
            seen[&topic(&format!("device/{field}"))],
            expected,
            "device/{field}"
        );
    }

    // A thermostat's PUT reaches the state topics; discovery is not sent again.
    sim.drift();
    sim.put().unwrap();
    let now = s
        .bucket(SERIAL, &format!("shared.{SERIAL}"))
        .unwrap()
        .value
        .to_map()["current_temperature"]
        .to_string();
    watch.wait_for(&topic("shared/current_temperature"), &now);
    watch.wait_for(&topic("ha/current_temperature"), &now);
    assert_eq!(watch.count(&climate_topic()), 1);

    // Home Assistant's heat_cool reaches the held subscribe, once.
    let shared_key = format!("shared.{SERIAL}");
    let revision = s.bucket(SERIAL, &shared_key).unwrap().revision;
    watch.publish(&topic("ha/mode/set"), "heat_cool");
    let (_, push) = next_push(&mut held);
    let pushed = &push["objects"][0];
    assert_eq!(pushed["object_key"], shared_key.as_str());
    assert_eq!(pushed["value"]["target_temperature_type"], "range");
    watch.wait_for(&topic("ha/mode"), "heat_cool");
    watch.wait_for(&topic("shared/target_temperature_type"), "range");
    assert_eq!(
        s.bucket(SERIAL, &shared_key).unwrap().revision,
        revision + 1
    );
    // The mode changed the climate entity's setpoints: discovery is sent again, once.
    let seen = watch.wait("discovery for heat_cool", |m| {
        json(&m[&climate_topic()])
            .get("temperature_low_command_topic")
            .is_some()
    });
    assert!(
        json(&seen[&climate_topic()])
            .get("temperature_command_topic")
            .is_none()
    );
    assert_eq!(watch.count(&climate_topic()), 2);
    assert_eq!(seen[&topic("ha/target_temperature")], "");

    // Bad commands are ignored and change nothing; a good one after them shows they were read.
    let before = store_bytes(s.dir.path());
    for (suffix, payload) in [
        ("ha/target_temperature_low/set", "warm"),
        ("ha/preset/set", "party"),
        ("device/current_temperature/set", "30"),
        ("shared/target_temperature_type/set", "turbo"),
        ("ha/fan_mode/set", "sideways"),
    ] {
        watch.publish(&topic(suffix), payload);
    }
    // A string longer than a thermostat may hold (8 KiB): refused by the core, as on every API.
    watch.publish(&topic("device/postal_code/set"), &"9".repeat(9000));
    watch.publish(&format!("{PREFIX}/0000NOSUCHSERIAL/ha/mode/set"), "off");
    // A raw write as the MQTT-only clients send it, clamped like /command.
    watch.publish(&topic("shared/target_temperature_high/set"), "40");
    watch.wait_for(&topic("shared/target_temperature_high"), "35.0");
    assert_eq!(
        s.bucket(SERIAL, &shared_key).unwrap().revision,
        revision + 2
    );
    // The store is append-only: the only addition is the one good write's journal record.
    let after = store_bytes(s.dir.path());
    let added: usize = before
        .iter()
        .map(|(name, old)| {
            let (_, new) = after.iter().find(|(n, _)| n == name).unwrap();
            assert!(new.starts_with(old), "{name} was rewritten");
            new[old.len()..].iter().filter(|b| **b == b'\n').count()
        })
        .sum();
    assert_eq!(added, 1);
    assert!(
        s.app()
            .state()
            .read_device("0000NOSUCHSERIAL", |_| ())
            .is_none()
    );

    // The Homebridge client's fan switch: a boolean on device/fan_timer_active.
    watch.publish(&topic("device/fan_timer_active/set"), "true");
    watch.wait_for(&topic("ha/fan_mode"), "on");
    watch.publish(&topic("ha/preset/set"), "away");
    watch.wait_for(&topic("ha/preset"), "away");

    // A clean stop says offline for hearth and (long before its availability timeout) for the
    // thermostat, whose subscribe was still held.
    drop(held);
    drop(s);
    watch.wait_for("nle/availability", "offline");
    watch.wait_for(&topic("availability"), "offline");
}

#[test]
fn availability_follows_the_thermostat_and_the_server() {
    let broker = Broker::start();
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.mqtt = Some(mqtt_config(broker.port));
        c.clock = time.clock();
        // A short timeout, so the bridge looks at availability often (every half of it).
        c.availability_timeout = Duration::from_secs(1);
        // Holds end after a second of the clock, so a silent thermostat is soon holding nothing.
        c.suspend_time_max_secs = 11;
    });
    let watch = Watcher::connect(broker.port);
    let (sim, _events, held) = booted_and_held(&s, SERIAL);
    watch.wait_for(&topic("availability"), "online");
    watch.wait_for("nle/availability", "online");

    // The thermostat goes silent: its hold ends when the clock reaches its deadline, a second
    // after its last request, and it counts as available until the timeout after that
    // request, and not a millisecond longer. The bridge, ticking on the same clock, says so.
    drop(held);
    drop(sim);
    assert_eq!(s.app().hub().subscriptions_of(SERIAL), 1);
    time.advance(Duration::from_millis(1000));
    s.wait_released(SERIAL);
    assert!(s.app().availability(SERIAL).available);
    assert_eq!(watch.latest()[&topic("availability")], "online");
    time.advance(Duration::from_millis(1));
    assert!(!s.app().availability(SERIAL).available);
    // The bridge looks at availability every half timeout of the clock: by its next tick.
    let tick = Duration::from_millis(500);
    time.advance(tick);
    watch.wait_for(&topic("availability"), "offline");
    assert_eq!(watch.latest()["nle/availability"], "online");

    // It comes back, which the bridge notices at its next tick.
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    time.advance(tick);
    watch.wait_for(&topic("availability"), "online");
}

#[test]
fn last_will_says_offline_when_the_server_dies() {
    let broker = Broker::start();
    let watch = Watcher::connect(broker.port);
    let dir = TempDir::new("mqtt-will");
    let port = broker.port.to_string();
    let server = ServerProcess::start_with(
        std::path::Path::new(env!("CARGO_BIN_EXE_hearth")),
        dir.path(),
        &[
            "--watchdog-interval-seconds",
            "0",
            "--mqtt-host",
            "127.0.0.1",
            "--mqtt-port",
            &port,
            "--mqtt-topic-prefix",
            PREFIX,
        ],
    )
    .unwrap();
    watch.wait_for("nle/availability", "online");
    server.kill();
    watch.wait_for("nle/availability", "offline");
}

#[test]
fn a_broker_restart_is_survived_and_an_outage_blocks_nothing() {
    let broker = Broker::start();
    let port = broker.port;
    let s = TestServer::start_with(|c| c.mqtt = Some(mqtt_config(port)));
    let (_sim, _events, mut held) = booted_and_held(&s, SERIAL);
    let watch = Watcher::connect(port);
    watch.wait_for(&topic("availability"), "online");
    drop(watch);

    // The broker goes away; the control API and pushes carry on. (That they are not held up
    // is a matter of real time, which this does not bound: the request's own timeout, the
    // harness's, is the limit.)
    drop(broker);
    let r = command(
        s.control(),
        SERIAL,
        "set_temperature",
        serde_json::json!(22.5),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let (_, push) = next_push(&mut held);
    assert_eq!(push["objects"][0]["value"]["target_temperature"], 22.5);

    // A fresh broker (nothing retained) is repopulated, including the change made meanwhile.
    let _broker = Broker::on(port);
    let watch = Watcher::connect(port);
    watch.wait("everything republished", |m| {
        m.contains_key(&climate_topic())
            && m.get("nle/availability").map(String::as_str) == Some("online")
            && m.get(&topic("availability")).map(String::as_str) == Some("online")
            && m.get(&topic("shared/target_temperature"))
                .map(String::as_str)
                == Some("22.5")
    });
}

#[test]
fn a_broker_that_never_answers_delays_nothing() {
    // Accepts connections and never reads or answers: every broker operation hits its timeout.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let s = TestServer::start_with(|c| c.mqtt = Some(mqtt_config(port)));
    let (_sim, _events, mut held) = booted_and_held(&s, SERIAL);
    // Each broker operation may wait 5 s. That commands and pushes do not wait for them is a
    // matter of real time, which this does not bound: each is answered within the request's
    // own timeout (the harness's), and the server then stops.
    for target in [21.0, 21.5, 22.0] {
        let r = command(
            s.control(),
            SERIAL,
            "set_temperature",
            serde_json::json!(target),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        let (_, push) = next_push(&mut held);
        assert_eq!(push["objects"][0]["value"]["target_temperature"], target);
    }
    drop(s);
    drop(silent);
}

#[test]
fn bad_field_names_are_skipped_without_losing_the_connection() {
    let broker = Broker::start();
    let s = TestServer::start_with(|c| c.mqtt = Some(mqtt_config(broker.port)));
    let watch = Watcher::connect(broker.port);
    let (sim, _events, _held) = booted_and_held(&s, SERIAL);
    // As the thermostat: its password is pinned.
    let password = sim.password();
    watch.wait_for(&topic("availability"), "online");
    // Longer than a topic level may be here (128), within what a field name may be (256).
    let long = "k".repeat(200);
    let body = serde_json::json!({"objects": [{
        "object_key": format!("device.{SERIAL}"),
        "value": {"bad\u{1}name": 1, "wild+card": 2, (long.as_str()): 3, "marker_field": 4},
    }]});
    let r = post_json_with_password(s.device(), "/nest/transport/put", SERIAL, &password, body);
    assert_eq!(r.status, 200, "{}", r.text());
    watch.wait_for(&topic("device/marker_field"), "4");
    let device = json(&watch.latest()[&topic("device")]);
    assert_eq!(device["bad\u{1}name"], 1);
    // Still the first connection: hearth said online once and never went offline. A lost
    // connection is followed by "offline" or (on reconnecting) "online" before anything else
    // is published, so once a later change is seen, so would either be.
    let r = post_json_with_password(
        s.device(),
        "/nest/transport/put",
        SERIAL,
        &password,
        serde_json::json!({"objects": [{"object_key": format!("device.{SERIAL}"), "value": {"marker_field": 5}}]}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    watch.wait_for(&topic("device/marker_field"), "5");
    assert_eq!(watch.count("nle/availability"), 1);
    assert_eq!(watch.latest()["nle/availability"], "online");
    assert!(
        watch
            .latest()
            .keys()
            .all(|t| !t.contains("bad") && !t.contains("wild"))
    );
}

#[test]
fn a_thermostat_deleted_while_the_broker_was_away_is_cleared() {
    let dir = TempDir::new("mosquitto-kept");
    let port = Broker::start().port;
    let broker = Broker::with(port, dir, true);
    let s = TestServer::start_with(|c| c.mqtt = Some(mqtt_config(port)));
    let watch = Watcher::connect(port);
    let (sim, _events, held) = booted_and_held(&s, SERIAL);
    watch.wait("discovery", |m| m.contains_key(&climate_topic()));
    drop(watch);
    drop(held);
    drop(sim);

    // The broker stops (keeping what is retained); meanwhile the thermostat is deleted and
    // another one arrives.
    let dir = broker.terminate();
    let r = call(
        s.control(),
        "DELETE",
        "/api/device",
        &serde_json::json!({"serial": SERIAL}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let other = "02AA01AC0000SIM2";
    let (_sim2, _events2, _held2) = booted_and_held(&s, other);

    let _broker = Broker::with(port, dir, true);
    let watch = Watcher::connect(port);
    let other_online = format!("{PREFIX}/{other}/availability");
    let seen = watch.wait(
        "the new thermostat published and the deleted one cleared",
        |m| {
            let gone = |t: &str| m.get(t).is_none_or(String::is_empty);
            m.get(&other_online).map(String::as_str) == Some("online")
                && gone(&climate_topic())
                && gone(&topic("availability"))
                && gone(&topic("shared/target_temperature"))
        },
    );
    assert!(seen.contains_key(&format!(
        "homeassistant/climate/nest_{other}/thermostat/config"
    )));
}

/// The energy history's runtime sensors and the outdoor temperature: discovered once as
/// `total_increasing` durations, published when they change but at most once a minute per
/// thermostat (and at HVAC changes), and the outdoor reading the weather hearth holds for the
/// thermostat's place, as `/status` shows it.
#[test]
fn runtime_and_outdoor_sensors_are_published_bounded() {
    // 2026-03-10 12:00:00 UTC, on the minute.
    const NOON_MS: i64 = 1_773_144_000_000;
    let time = ManualClock::at(NOON_MS);
    let broker = Broker::start();
    let fake = crate::weather::FakeOpenMeteo::start();
    let s = TestServer::start_with(|c| {
        c.mqtt = Some(mqtt_config(broker.port));
        c.clock = time.clock();
        c.history_interval = Duration::from_secs(3600);
        c.weather_provider = Some(hearth::config::WeatherProvider::OpenMeteo);
        c.open_meteo_geocoding_url = fake.url.clone();
        c.open_meteo_url = fake.url.clone();
    });
    let watch = Watcher::connect(broker.port);
    let (mut sim, _events, _held) = booted_and_held(&s, SERIAL);
    let config = |id: &str| format!("homeassistant/sensor/nest_{SERIAL}/{id}/config");
    // Today's runtime once the accrual has seen the thermostat (the bridge may have published
    // before that: its next publication, here for a new reading, adds them).
    wait_until("the accrual's day", || {
        s.app().energy().get(SERIAL).is_some()
    });
    sim.drift();
    sim.put().unwrap();
    let seen = watch.wait("the runtime sensors", |m| {
        m.contains_key(&config("heating_runtime"))
            && m.get(&topic("ha/heating_runtime")).map(String::as_str) == Some("0.000")
            && m.get(&topic("ha/heating_today")).map(String::as_str) == Some("0")
    });
    let total = json(&seen[&config("heating_runtime")]);
    assert_eq!(total["state_topic"], topic("ha/heating_runtime"));
    assert_eq!(total["device_class"], "duration");
    assert_eq!(total["state_class"], "total_increasing");
    assert_eq!(total["unit_of_measurement"], "h");
    assert_eq!(
        total["unique_id"],
        format!("nolongerevil_{SERIAL}_heating_runtime")
    );
    let today = json(&seen[&config("cooling_today")]);
    assert_eq!(today["unit_of_measurement"], "min");
    assert_eq!(today["device_class"], "duration");
    assert_eq!(seen[&topic("ha/cooling_runtime")], "0.000");
    let outdoor = json(&seen[&config("outdoor_temperature")]);
    assert_eq!(outdoor["device_class"], "temperature");

    // The outdoor temperature: the weather hearth fetched for the thermostat's place, taken up
    // within the minute.
    s.server_change(
        SERIAL,
        &format!("device.{SERIAL}"),
        serde_json::json!({"postal_code": "94304", "country_code": "US"}),
    );
    assert_eq!(
        get(s.device(), "/nest/weather/v1?query=94304,US").status,
        200
    );
    let status = get(s.control(), &format!("/status?serial={SERIAL}")).json();
    assert_eq!(status["outdoor_temperature"], serde_json::json!(10.6));
    time.advance(Duration::from_secs(60));
    watch.wait_for(&topic("ha/outdoor_temperature"), "10.6");

    // Half an hour of heating, published at the latest when the heater stops.
    let heat_total = |s: &TestServer| s.app().energy().totals(SERIAL).map(|t| t.heat_s);
    let history = s.dir.path().join("history").join(format!("{SERIAL}.jsonl"));
    // The heater on or off, seen by the bridge (its action) and the accrual (the history's
    // sample, which it takes after counting), before the clock moves on.
    let heater = |sim: &mut hearth::simulator::Thermostat, on: bool| {
        let lines = || std::fs::read_to_string(&history).unwrap_or_default();
        let before = lines().lines().count();
        sim.report("shared", "hvac_heater_state", serde_json::json!(on));
        sim.put().unwrap();
        watch.wait_for(&topic("ha/action"), if on { "heating" } else { "idle" });
        let want = format!("\"heating\":{on}");
        wait_until("the heater's sample", || {
            lines().lines().skip(before).any(|l| l.contains(&want))
        });
    };
    heater(&mut sim, true);
    time.advance(Duration::from_secs(1800));
    wait_until("half an hour counted", || heat_total(&s) == Some(1800));
    heater(&mut sim, false);
    watch.wait_for(&topic("ha/heating_runtime"), "0.500");
    watch.wait_for(&topic("ha/heating_today"), "30");
    assert_eq!(watch.count(&topic("ha/heating_runtime")), 2);
    assert_eq!(watch.count(&config("heating_runtime")), 1);

    // Heating again: the runtime moves within the minute (a target change makes the accrual
    // count), and other state is published, but the runtime is not...
    heater(&mut sim, true);
    time.advance(Duration::from_secs(20));
    sim.report("shared", "target_temperature", serde_json::json!(22.5));
    sim.put().unwrap();
    // Counted in the live day; the totals show what is stored, written once a minute.
    let live_heat = |s: &TestServer| s.app().energy().get(SERIAL).map(|(_, d)| d.heat_ms);
    wait_until("twenty more seconds counted", || {
        live_heat(&s) == Some(1_820_000)
    });
    assert_eq!(heat_total(&s), Some(1800));
    watch.wait_for(&topic("ha/target_temperature"), "22.5");
    sim.report("shared", "target_temperature", serde_json::json!(23.0));
    sim.put().unwrap();
    watch.wait_for(&topic("ha/target_temperature"), "23.0");
    assert_eq!(watch.count(&topic("ha/heating_runtime")), 2);
    // ...until the minute is up, when the row is written: 1,860 s, published once. (A
    // publication at 22.5 or 23.0 would have been a third value, 0.505 or 0.500 again, and
    // made the count 4.)
    time.advance(Duration::from_secs(40));
    watch.wait_for(&topic("ha/heating_runtime"), "0.516");
    assert_eq!(watch.count(&topic("ha/heating_runtime")), 3);
    assert_eq!(watch.count(&config("heating_runtime")), 1);
}
