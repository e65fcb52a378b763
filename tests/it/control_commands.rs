//! Every `/command` against a simulated thermostat holding a subscribe: the answer, the pushed
//! chunk (content and key order), and the thermostat applying it.

use crate::common;

use common::hosted::{api, new_key};
use common::*;
use hearth::simulator::Event;
use serde_json::{Value, json};

/// The pushed object for `key` in a chunk.
#[test]
fn every_command_is_answered_pushed_in_wire_order_and_applied() {
    let s = TestServer::start();
    let (mut sim, events, mut held) = booted_and_held(&s, SERIAL);
    let schedule = json!({"ver": 2, "name": "Test", "schedule_mode": "HEAT",
        "days": {"0": {"0": {"temp": 20, "time": 21600, "type": "HEAT", "entry_type": "setpoint"}}}});
    let cases = [
        (
            "set_temperature",
            json!(21.5),
            "shared",
            Some(json!({"target_temperature": 21.5, "target_change_pending": true})),
        ),
        (
            "set_temperature",
            json!({"low": 19, "high": 24}),
            "shared",
            Some(
                json!({"target_temperature_low": 19.0, "target_temperature_high": 24.0, "target_change_pending": true}),
            ),
        ),
        (
            "set_mode",
            json!("heat-cool"),
            "shared",
            Some(json!({"target_temperature_type": "range"})),
        ),
        (
            "set_mode",
            json!("heat_cool"),
            "shared",
            Some(json!({"target_temperature_type": "range"})),
        ),
        ("set_away", json!(true), "structure", None),
        ("set_fan", json!("on"), "device", None),
        ("set_fan", json!(900), "device", None),
        (
            "set_mode",
            json!("off"),
            "shared",
            Some(json!({"target_temperature_type": "off"})),
        ),
        (
            "set_mode",
            json!("cool"),
            "shared",
            Some(json!({"target_temperature_type": "cool"})),
        ),
        (
            "set_mode",
            json!("heat"),
            "shared",
            Some(json!({"target_temperature_type": "heat"})),
        ),
        (
            "set_fan",
            json!("auto"),
            "device",
            Some(json!({"fan_timer_timeout": 0})),
        ),
        (
            "set_eco_temperatures",
            json!({"low": 3, "high": 27}),
            "device",
            Some(json!({"away_temperature_low": 7.222, "away_temperature_high": 27.0})),
        ),
        ("set_schedule", schedule.clone(), "schedule", Some(schedule)),
        (
            "set_schedule_mode",
            json!("cool"),
            "shared",
            Some(json!({"schedule_mode": "COOL"})),
        ),
        (
            "set_device_setting",
            json!({"learning_mode": false}),
            "device",
            Some(json!({"learning_mode": false})),
        ),
        (
            "set_name",
            json!(" Upstairs hall "),
            "shared",
            Some(json!({"label": "Upstairs hall"})),
        ),
    ];
    for (name, value, kind, expected) in cases {
        let r = command(s.control(), SERIAL, name, value.clone());
        assert_eq!(r.status, 200, "{name} {value}: {}", r.text());
        let body = r.json();
        let key = if kind == "structure" {
            "structure.default".to_string()
        } else {
            format!("{kind}.{SERIAL}")
        };
        assert_eq!(body["success"], json!(true));
        assert_eq!(body["data"]["object_key"], json!(key), "{name}");
        let values = body["data"]["values"].as_object().unwrap().clone();
        if let Some(expected) = expected {
            assert_eq!(Value::Object(values.clone()), expected, "{name} {value}");
        }

        let (chunk, doc) = next_push(&mut held);
        let pushed = object(&doc, &key);
        let stored = s.bucket(SERIAL, &key).unwrap();
        assert_eq!(pushed["object_revision"], json!(stored.revision));
        assert_eq!(pushed["object_timestamp"], json!(stored.timestamp));
        for (field, v) in &values {
            assert_eq!(&pushed["value"][field], v, "{name}: pushed {field}");
        }
        sim.apply_chunk(&chunk).unwrap();
        let local = sim.bucket(&key).unwrap();
        for (field, v) in &values {
            if field != "target_change_pending" {
                assert_eq!(&local[field], v, "{name}: thermostat's {field}");
            }
        }
    }
    // The schedule replaced the thermostat's own (its other days are gone).
    let stored = s.bucket(SERIAL, &format!("schedule.{SERIAL}")).unwrap();
    assert_eq!(stored.value.to_map()["days"].as_object().unwrap().len(), 1);
    // set_away wrote manual eco with a timestamp in seconds; set_fan "on" a timer in the future.
    let structure = s.bucket(SERIAL, "structure.default").unwrap();
    let now_s = hearth::util::clock::now_ms() / 1000;
    let eco_at = structure.value.to_map()["manual_eco_timestamp"]
        .as_i64()
        .unwrap();
    assert!((now_s - 60..=now_s).contains(&eco_at), "{eco_at}");
    assert_eq!(structure.value.to_map()["manual_eco_all"], json!(true));
    // The setpoint push was acknowledged by the thermostat.
    expect_event(&events, "acknowledgement", |e| {
        matches!(e, Event::Acknowledged { .. })
    });
    assert!(events.try_iter().all(|e| !matches!(
        e,
        Event::RejectedOrder { .. } | Event::PutEcho { .. } | Event::Problem(_)
    )));
}

#[test]
fn a_command_reaches_every_held_subscribe_of_the_thermostat() {
    let s = TestServer::start();
    let (mut sim, _events, mut first) = booted_and_held(&s, SERIAL);
    let mut second = sim.open_subscribe().unwrap();
    s.wait_held(SERIAL, 2);
    let r = command(s.control(), SERIAL, "set_temperature", json!(20));
    assert_eq!(r.status, 200, "{}", r.text());
    for held in [&mut first, &mut second] {
        let (_, doc) = next_push(held);
        assert_eq!(
            object(&doc, &format!("shared.{SERIAL}"))["value"]["target_temperature"],
            json!(20.0)
        );
    }
}

#[test]
fn set_away_goes_to_the_owners_structure_once_claimed() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    s.set_owner(SERIAL, "user_alice");
    let r = command(s.control(), SERIAL, "set_away", json!(false));
    assert_eq!(r.json()["data"]["object_key"], json!("structure.alice"));
    assert_eq!(
        s.bucket(SERIAL, "structure.alice").unwrap().value.to_map()["manual_eco_all"],
        json!(false)
    );
}

#[test]
fn capability_checks_use_the_thermostats_own_flags() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    s.server_change(
        SERIAL,
        &format!("shared.{SERIAL}"),
        json!({"can_cool": false}),
    );
    let r = command(s.control(), SERIAL, "set_mode", json!("cool"));
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json(),
        json!({"success": false, "message": "Device cannot cool (can_cool=false)"})
    );
    let r = command(s.control(), SERIAL, "set_mode", json!("emergency"));
    assert_eq!(
        r.json()["message"],
        json!("Device does not have emergency heat (has_emer_heat=false)")
    );
}

#[test]
fn emergency_heat_on_a_thermostat_that_has_it() {
    let s = TestServer::start();
    let (_sim, _events, mut held) = booted_and_held(&s, SERIAL);
    s.server_change(
        SERIAL,
        &format!("device.{SERIAL}"),
        json!({"has_emer_heat": true}),
    );
    let _ = next_push(&mut held);
    let r = command(s.control(), SERIAL, "set_mode", json!("emergency"));
    assert_eq!(r.status, 200, "{}", r.text());
    let (_, doc) = next_push(&mut held);
    assert_eq!(
        object(&doc, &format!("shared.{SERIAL}"))["value"]["target_temperature_type"],
        json!("emergency")
    );
    // set_fan with seconds: a timer that ends that many seconds from now.
    let r = command(s.control(), SERIAL, "set_fan", json!(600));
    let until = r.json()["data"]["values"]["fan_timer_timeout"]
        .as_i64()
        .unwrap();
    let now_s = hearth::util::clock::now_ms() / 1000;
    assert!((now_s + 590..=now_s + 610).contains(&until), "{until}");
}

#[test]
fn set_away_is_the_same_away_the_hosted_api_sets() {
    let s = TestServer::start();
    let (_sim, _events, mut held) = booted_and_held(&s, SERIAL);
    for (away, auto_away) in [(true, 2), (false, 0)] {
        let r = command(s.control(), SERIAL, "set_away", json!(away));
        assert_eq!(r.json()["data"]["object_key"], json!("structure.default"));
        // One change, one push: the structure's manual eco and the presence clients read.
        let (_, doc) = next_push(&mut held);
        assert_eq!(
            object(&doc, "structure.default")["value"]["manual_eco_all"],
            json!(away)
        );
        let shared = format!("shared.{SERIAL}");
        assert_eq!(
            object(&doc, &shared)["value"]["auto_away"],
            json!(auto_away)
        );
        assert_eq!(
            s.bucket(SERIAL, &shared).unwrap().value.to_map()["auto_away"],
            json!(auto_away)
        );
    }
}

#[test]
fn a_name_set_once_is_the_name_every_surface_shows() {
    let s = TestServer::start();
    let (mut sim, _events, mut held) = booted_and_held(&s, SERIAL);
    let key = new_key(&s, "owner", "read", &[]);
    let hosted_name =
        || api(&s, "GET", "/devices", &key, Value::Null).json()["devices"][0]["name"].clone();
    let status_name =
        || get(s.control(), &format!("/status?serial={SERIAL}")).json()["name"].clone();
    assert_eq!(status_name(), json!(SERIAL));

    let r = command(s.control(), SERIAL, "set_name", json!("Upstairs hall"));
    assert_eq!(r.status, 200, "{}", r.text());
    let (chunk, _) = next_push(&mut held);
    sim.apply_chunk(&chunk).unwrap();
    assert_eq!(status_name(), json!("Upstairs hall"));
    assert_eq!(hosted_name(), json!("Upstairs hall"));

    // The thermostat's own upload after a reboot carries `"name": ""`; the name stays.
    sim.report("shared", "name", json!(""));
    sim.put().unwrap();
    let stored = s.bucket(SERIAL, &format!("shared.{SERIAL}")).unwrap();
    assert_eq!(stored.value.to_map()["name"], json!(""));
    assert_eq!(status_name(), json!("Upstairs hall"));

    // An empty name clears it; a bad one is refused and changes nothing.
    let before = s.bucket(SERIAL, &format!("shared.{SERIAL}")).unwrap();
    let r = command(s.control(), SERIAL, "set_name", json!("a\tb"));
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json(),
        json!({"success": false, "message": "A name cannot contain control characters (line breaks, tabs)"})
    );
    let after = s.bucket(SERIAL, &format!("shared.{SERIAL}")).unwrap();
    assert_eq!(after.revision, before.revision);
    let r = command(s.control(), SERIAL, "set_name", json!(""));
    assert_eq!(r.status, 200);
    assert_eq!(status_name(), json!(SERIAL));
}

#[test]
fn the_temperature_lock_takes_a_pin_hash_and_shows_its_range() {
    use base64::Engine;
    use sha1::{Digest, Sha1};
    let s = TestServer::start();
    let (_sim, _events, mut held) = booted_and_held(&s, SERIAL);
    let hash = base64::engine::general_purpose::STANDARD
        .encode(Sha1::digest(format!("1234{SERIAL}").as_bytes()));
    let status = || get(s.control(), &format!("/status?serial={SERIAL}")).json();
    assert_eq!(
        status()["temperature_lock"],
        json!({"enabled": false, "low": null, "high": null})
    );
    let r = command(
        s.control(),
        SERIAL,
        "set_temperature_lock",
        json!({"enabled": true, "pin_hash": hash, "low": 18, "high": 24}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let (_, doc) = next_push(&mut held);
    let pushed = object(&doc, &format!("device.{SERIAL}"));
    assert_eq!(pushed["value"]["temperature_lock_pin_hash"], json!(hash));
    assert_eq!(
        status()["temperature_lock"],
        json!({"enabled": true, "low": 18.0, "high": 24.0})
    );
    // A plaintext PIN is refused here and changes nothing.
    let before = s.bucket(SERIAL, &format!("device.{SERIAL}")).unwrap();
    let r = command(
        s.control(),
        SERIAL,
        "set_temperature_lock",
        json!({"enabled": true, "pin": "1234", "low": 18, "high": 24}),
    );
    assert_eq!(r.status, 400);
    let after = s.bucket(SERIAL, &format!("device.{SERIAL}")).unwrap();
    assert_eq!(after.revision, before.revision);
    let r = command(
        s.control(),
        SERIAL,
        "set_temperature_lock",
        json!({"enabled": false}),
    );
    assert_eq!(r.status, 200);
    assert_eq!(status()["temperature_lock"]["enabled"], json!(false));
}

#[test]
fn set_schedule_with_if_revision_replaces_only_the_schedule_it_names() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let key = format!("schedule.{SERIAL}");
    let schedule = json!({"ver": 2, "name": "", "schedule_mode": "HEAT",
        "days": {"0": [{"time": 25200, "type": "HEAT", "temp": 20.5}]}});
    let send = |if_revision: Value| {
        let body = json!({"serial": SERIAL, "command": "set_schedule", "value": schedule,
                          "if_revision": if_revision});
        call(s.control(), "POST", "/command", &body.to_string())
    };
    let before = s.bucket(SERIAL, &key).unwrap();
    // Stale: refused, and nothing written.
    for stale in [json!(before.revision - 1), Value::Null] {
        let r = send(stale.clone());
        assert_eq!(r.status, 409, "{stale}: {}", r.text());
        assert_eq!(
            r.json()["message"],
            json!(format!(
                "The schedule changed since it was read (it is now revision {0}): load it again, or send the edit with if_revision {0}",
                before.revision
            ))
        );
        assert_eq!(s.bucket(SERIAL, &key).unwrap().revision, before.revision);
    }
    // The revision it was read at: replaced.
    let r = send(json!(before.revision));
    assert_eq!(r.status, 200, "{}", r.text());
    let after = s.bucket(SERIAL, &key).unwrap();
    assert!(after.revision > before.revision);
    assert_eq!(after.value.to_map()["days"]["0"]["0"]["temp"], json!(20.5));
    // Only with set_schedule, and only a whole number or null.
    let r = call(
        s.control(),
        "POST",
        "/command",
        &json!({"serial": SERIAL, "command": "set_away", "value": true, "if_revision": 1})
            .to_string(),
    );
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["message"],
        json!("if_revision goes only with set_schedule")
    );
    let r = send(json!("3"));
    assert_eq!(r.status, 400);
    assert_eq!(s.bucket(SERIAL, &key).unwrap().revision, after.revision);
}
