//! The hosted service's REST API (`/api/v1`): every endpoint against a simulated thermostat
//! holding a subscribe (the answer, the pushed chunk, the thermostat applying it), every row of
//! the seed's error table, scopes, serial-limited keys, owner versus shared access, expiry, the
//! rate limit and its headers, unit conversion and rounding, and unlinking then claiming again.

use crate::common;

use common::hosted::{api, new_key, share};
use common::*;
use hearth::accounts::keys::{self, KeySpec};
use hearth::http::client::{self, ClientResponse};
use hearth::state::{Op, ShareAccess};
use hearth::util::clock::ManualClock;
use serde_json::{Value, json};

const OTHER: &str = "02AA01AC0000SIM2";

fn error(r: &ClientResponse) -> (u16, Value) {
    (r.status, r.json())
}

#[test]
fn every_endpoint_works_and_every_write_reaches_the_thermostat() {
    let s = TestServer::start();
    let (mut sim, _events, mut held) = booted_and_held(&s, SERIAL);
    // Open mode: an unclaimed thermostat is the default user's.
    let key = new_key(&s, "owner", "read,write", &[]);

    let r = api(&s, "GET", "/devices", &key, Value::Null);
    assert_eq!(r.status, 200, "{}", r.text());
    let devices = r.json()["devices"].as_array().unwrap().clone();
    assert_eq!(devices.len(), 1);
    let id = devices[0]["id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 36, "a UUID: {id}");
    assert_eq!(
        devices[0],
        json!({"id": id, "serial": SERIAL, "name": null, "accessType": "owner"})
    );

    let r = api(
        &s,
        "GET",
        &format!("/thermostat/{id}/status"),
        &key,
        Value::Null,
    );
    assert_eq!(r.status, 200);
    let status = r.json();
    assert_eq!(
        status["device"],
        json!({"id": id, "serial": SERIAL, "name": null})
    );
    let shared = &status["state"][format!("shared.{SERIAL}")];
    let keys: Vec<&String> = shared.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["object_revision", "object_timestamp", "value"]);
    assert_eq!(shared["value"]["target_temperature"], json!(21.0));
    assert!(status["state"][format!("device.{SERIAL}")]["value"]["has_fan"] == json!(true));
    assert!(status["state"][format!("schedule.{SERIAL}")].is_object());

    let schedule = json!({"ver": 2, "name": "Week", "schedule_mode": "HEAT",
        "days": {"0": {"0": {"temp": 20.5, "time": 21600, "type": "HEAT", "entry_type": "setpoint"}}}});
    // (path, body, bucket, fields the push must carry)
    let cases = [
        (
            "temperature",
            json!({"value": 21.3, "mode": "heat", "scale": "C"}),
            "shared",
            json!({"target_temperature": 21.5, "target_temperature_type": "heat", "target_change_pending": true}),
        ),
        (
            "temperature",
            json!({"value": 70, "mode": "heat", "scale": "F"}),
            "shared",
            json!({"target_temperature": 21.0}),
        ),
        (
            "temperature/range",
            json!({"low": 19.5, "high": 23.5, "scale": "C"}),
            "shared",
            json!({"target_temperature_low": 19.5, "target_temperature_high": 23.5, "target_temperature_type": "range"}),
        ),
        (
            "mode",
            json!({"mode": "heat-cool"}),
            "shared",
            json!({"target_temperature_type": "range"}),
        ),
        (
            "mode",
            json!({"mode": "off"}),
            "shared",
            json!({"target_temperature_type": "off"}),
        ),
        (
            "away",
            json!({"away": true}),
            "shared",
            json!({"auto_away": 2}),
        ),
        (
            "away",
            json!({"away": false}),
            "shared",
            json!({"auto_away": 0}),
        ),
        (
            "lock",
            json!({"enabled": true, "pin_hash": "kFRc/skLylZUKACup2bPzjQDUII=", "temp_min": 18, "temp_max": 24}),
            "device",
            json!({"temperature_lock": true, "temperature_lock_pin_hash": "kFRc/skLylZUKACup2bPzjQDUII=",
                   "temperature_lock_low_temp": 18.0, "temperature_lock_high_temp": 24.0}),
        ),
        (
            "lock",
            json!({"enabled": false}),
            "device",
            json!({"temperature_lock": false, "temperature_lock_pin_hash": ""}),
        ),
        (
            "fan",
            json!({"mode": "auto"}),
            "device",
            json!({"fan_timer_timeout": 0}),
        ),
        (
            "fan",
            json!({"enabled": false}),
            "device",
            json!({"fan_timer_timeout": 0}),
        ),
    ];
    for (path, body, kind, expected) in cases {
        let r = api(
            &s,
            "POST",
            &format!("/thermostat/{id}/{path}"),
            &key,
            body.clone(),
        );
        assert_eq!(r.status, 200, "{path} {body}: {}", r.text());
        let key_name = format!("{kind}.{SERIAL}");
        let answer = r.json();
        let stored = s.bucket(SERIAL, &key_name).unwrap();
        assert_eq!(
            answer,
            json!({"success": true, "message": "Command handled", "device": SERIAL,
                   "object": key_name, "revision": stored.revision, "timestamp": stored.timestamp}),
            "{path} {body}"
        );
        let (chunk, doc) = next_push(&mut held);
        let pushed = object(&doc, &key_name);
        assert_eq!(pushed["object_revision"], json!(stored.revision));
        for (field, v) in expected.as_object().unwrap() {
            assert_eq!(&pushed["value"][field], v, "{path} {body}: pushed {field}");
        }
        sim.apply_chunk(&chunk).unwrap();
    }
    // Away also wrote manual eco on the structure, in the same push.
    let structure = s.bucket(SERIAL, "structure.default").unwrap();
    assert_eq!(structure.value.to_map()["manual_eco_all"], json!(false));
    // The last fan request stopped the timer; a timed run ends 900 s from now.
    let fan_until = || {
        s.bucket(SERIAL, &format!("device.{SERIAL}"))
            .unwrap()
            .value
            .to_map()["fan_timer_timeout"]
            .as_i64()
            .unwrap()
    };
    assert_eq!(fan_until(), 0);
    let now_s = hearth::util::clock::now_ms() / 1000;
    let r = api(
        &s,
        "POST",
        &format!("/thermostat/{id}/fan"),
        &key,
        json!({"duration": 900}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let until = fan_until();
    assert!(
        (now_s + 899..=now_s + 902).contains(&until),
        "{until} vs {now_s}"
    );
    let (chunk, doc) = next_push(&mut held);
    assert_eq!(
        object(&doc, &format!("device.{SERIAL}"))["value"]["fan_timer_timeout"],
        json!(until)
    );
    sim.apply_chunk(&chunk).unwrap();
    let r = api(
        &s,
        "POST",
        &format!("/thermostat/{id}/fan"),
        &key,
        json!({"mode": "on", "duration": 600}),
    );
    assert_eq!(r.status, 200);
    let until = s
        .bucket(SERIAL, &format!("device.{SERIAL}"))
        .unwrap()
        .value
        .to_map()["fan_timer_timeout"]
        .as_i64()
        .unwrap();
    assert!((now_s + 590..=now_s + 610).contains(&until), "{until}");
    let _ = next_push(&mut held);

    // Schedule: PUT replaces it, GET returns it, by serial as well as by id.
    let r = api(
        &s,
        "PUT",
        &format!("/thermostat/{id}/schedule"),
        &key,
        json!({"schedule": schedule}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["object"], json!(format!("schedule.{SERIAL}")));
    let (_, doc) = next_push(&mut held);
    assert_eq!(
        object(&doc, &format!("schedule.{SERIAL}"))["value"]["days"],
        schedule["days"]
    );
    let r = api(
        &s,
        "GET",
        &format!("/thermostat/{SERIAL}/schedule"),
        &key,
        Value::Null,
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"device": {"id": id, "serial": SERIAL, "name": null}, "schedule": schedule})
    );

    // In open mode an unclaimed thermostat is the default user's by rule, and its owner may
    // let it go: it is released (nobody's until claimed or adopted; tests/it/release.rs follows
    // it further) and keeps its state.
    let r = api(
        &s,
        "DELETE",
        &format!("/thermostat/{id}"),
        &key,
        Value::Null,
    );
    assert_eq!(
        (r.status, r.json()),
        (
            200,
            json!({"success": true, "message": "Device deleted successfully"})
        )
    );
    assert_eq!(
        api(&s, "GET", "/devices", &key, Value::Null).json(),
        json!({"devices": []})
    );
    assert!(s.app().state().accounts(|a| a.is_released(SERIAL)));
    assert!(s.bucket(SERIAL, &format!("shared.{SERIAL}")).is_some());
}

#[test]
fn a_temperature_without_mode_uses_the_thermostats_current_mode() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let key = new_key(&s, "owner", "read,write", &[]);
    // The iOS app leaves mode out; the simulated thermostat is heating.
    let r = api(
        &s,
        "POST",
        &format!("/thermostat/{SERIAL}/temperature"),
        &key,
        json!({"value": 68, "scale": "F"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let shared = s.bucket(SERIAL, &format!("shared.{SERIAL}")).unwrap();
    assert_eq!(shared.value.to_map()["target_temperature"], json!(20.0));
    assert_eq!(
        shared.value.to_map()["target_temperature_type"],
        json!("heat")
    );
    // In heat-cool mode there is no single setpoint to guess.
    s.server_change(
        SERIAL,
        &format!("shared.{SERIAL}"),
        json!({"target_temperature_type": "range"}),
    );
    let r = api(
        &s,
        "POST",
        &format!("/thermostat/{SERIAL}/temperature"),
        &key,
        json!({"value": 20}),
    );
    assert_eq!(
        error(&r),
        (
            400,
            json!({"error": "mode is required (\"heat\" or \"cool\"): the thermostat is in range mode"})
        )
    );
    // Rounding and the safety bounds: 40 °C is kept at 35, 3 °C at 7.5 (a 0.5 step inside 7.222).
    for (asked, stored) in [(40.0, 35.0), (3.0, 7.5), (21.2, 21.0)] {
        let r = api(
            &s,
            "POST",
            &format!("/thermostat/{SERIAL}/temperature"),
            &key,
            json!({"value": asked, "mode": "cool"}),
        );
        assert_eq!(r.status, 200);
        assert_eq!(
            s.bucket(SERIAL, &format!("shared.{SERIAL}"))
                .unwrap()
                .value
                .to_map()["target_temperature"],
            json!(stored)
        );
    }
}

#[test]
fn bad_requests_get_exact_errors_and_change_nothing() {
    let s = TestServer::start_with(|c| c.api_rate_limit_per_minute = 1000);
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let key = new_key(&s, "owner", "read,write", &[]);
    let t = format!("/thermostat/{SERIAL}");
    let bad = |msg: &str| (400, json!({ "error": msg }));
    let cases: Vec<(&str, String, Value, (u16, Value))> = vec![
        (
            "POST",
            format!("{t}/temperature"),
            json!({"value": "abc", "mode": "heat"}),
            bad("Temperature value must be a number"),
        ),
        (
            "POST",
            format!("{t}/temperature"),
            json!({"value": null, "mode": "heat"}),
            bad("Temperature value must be a number"),
        ),
        (
            "POST",
            format!("{t}/temperature"),
            json!({"value": true, "mode": "heat"}),
            bad("Temperature value must be a number"),
        ),
        (
            "POST",
            format!("{t}/temperature"),
            json!({"mode": "heat"}),
            bad("Temperature value must be a number"),
        ),
        (
            "POST",
            format!("{t}/temperature"),
            json!({"value": 20, "mode": "heat", "scale": "K"}),
            bad("scale must be \"C\" or \"F\""),
        ),
        (
            "POST",
            format!("{t}/temperature"),
            json!({"value": 20, "mode": "range"}),
            bad("mode must be \"heat\" or \"cool\" (use /temperature/range for heat-cool)"),
        ),
        (
            "POST",
            format!("{t}/temperature/range"),
            json!({"low": 24, "high": 20}),
            bad("Low temperature must be less than high temperature"),
        ),
        (
            "POST",
            format!("{t}/temperature/range"),
            json!({"low": 21.1, "high": 21.2}),
            bad("Low temperature must be less than high temperature"),
        ),
        (
            "POST",
            format!("{t}/temperature/range"),
            json!({"low": "19", "high": 24}),
            bad("low and high must be numbers"),
        ),
        (
            "POST",
            format!("{t}/away"),
            json!({"away": "yes"}),
            bad("away must be true or false"),
        ),
        (
            "POST",
            format!("{t}/mode"),
            json!({"mode": "turbo"}),
            bad(
                "Unknown mode 'turbo'. Valid modes: off, heat, cool, heat-cool, heat_cool, range, auto, emergency",
            ),
        ),
        (
            "POST",
            format!("{t}/mode"),
            json!({"mode": "eco"}),
            bad("Eco is not a mode: use POST /thermostat/{deviceId}/away (true turns eco on)"),
        ),
        (
            "POST",
            format!("{t}/mode"),
            json!({"mode": "emergency"}),
            bad("Device does not have emergency heat (has_emer_heat=false)"),
        ),
        (
            "POST",
            format!("{t}/fan"),
            json!({"duration": 50000}),
            bad("duration must be a whole number of seconds from 1 to 43200"),
        ),
        (
            "POST",
            format!("{t}/fan"),
            json!({"mode": "spin"}),
            bad("mode must be \"on\", \"auto\" or \"off\""),
        ),
        (
            "POST",
            format!("{t}/fan"),
            json!({}),
            bad(
                "Send mode (\"on\", \"auto\" or \"off\"), duration (seconds) or enabled (true or false)",
            ),
        ),
        (
            "POST",
            format!("{t}/lock"),
            json!({"enabled": true, "pin_hash": "7d6e26483cfb49747943cb1bd7773629de072937", "temp_min": 18, "temp_max": 24}),
            bad("pin_hash must be the standard Base64 of a 20-byte SHA-1 digest"),
        ),
        (
            "POST",
            format!("{t}/lock"),
            json!({"enabled": true, "pin_hash": "c2hvcnQ=", "temp_min": 18, "temp_max": 24}),
            bad("pin_hash must be the standard Base64 of a 20-byte SHA-1 digest"),
        ),
        (
            "POST",
            format!("{t}/lock"),
            json!({"enabled": true, "pin_hash": "kFRc/skLylZUKACup2bPzjQDUII=", "temp_min": 24, "temp_max": 18}),
            bad("temp_min must be less than temp_max (after clamping to the thermostat's range)"),
        ),
        (
            // Both above the 35 °C bound: they would clamp to one value.
            "POST",
            format!("{t}/lock"),
            json!({"enabled": true, "pin_hash": "kFRc/skLylZUKACup2bPzjQDUII=", "temp_min": 36, "temp_max": 40}),
            bad("temp_min must be less than temp_max (after clamping to the thermostat's range)"),
        ),
        (
            "POST",
            format!("{t}/lock"),
            json!({"enabled": true, "pin_hash": "kFRc/skLylZUKACup2bPzjQDUII="}),
            bad("temp_min and temp_max (or minTemp and maxTemp) must be numbers (°C)"),
        ),
        (
            "POST",
            format!("{t}/lock"),
            json!({"enabled": "yes"}),
            bad("enabled must be true or false"),
        ),
        (
            "PUT",
            format!("{t}/schedule"),
            json!({"ver": 2}),
            bad(
                "schedule is required: send {\"schedule\": {\"ver\": 2, \"name\", \"schedule_mode\", \"days\"}}",
            ),
        ),
        (
            "PUT",
            format!("{t}/schedule"),
            json!({"schedule": {"ver": 1, "schedule_mode": "HEAT", "days": {}}}),
            bad("Schedule ver must be 2"),
        ),
        (
            "PUT",
            format!("{t}/schedule"),
            json!({"schedule": {"ver": 2, "schedule_mode": "HEAT", "days": {"7": {}}}}),
            bad("Unknown schedule day \"7\": days are \"0\" to \"6\""),
        ),
        (
            "PUT",
            format!("{t}/schedule"),
            json!({"schedule": {"ver": 2, "schedule_mode": "HEAT", "days": {"0": [{"time": 86401, "type": "HEAT", "temp": 20}]}}}),
            bad("Day 0 entry 0: time must be a whole number of seconds from 0 to 86400"),
        ),
        (
            "PUT",
            format!("{t}/schedule"),
            json!({"schedule": {"ver": 2, "schedule_mode": "HEAT", "days": {"0": [{"time": 0, "type": "HEAT", "temp": 40}]}}}),
            bad("Day 0 entry 0: temp 40 is outside 4.5–32 °C"),
        ),
        (
            "PUT",
            format!("{t}/schedule"),
            json!({"schedule": {"ver": 2, "schedule_mode": "HEAT", "days": {"0": [{"time": 0, "type": "HEAT", "temp": 20, "entry_type": "x"}]}}}),
            bad("Day 0 entry 0: entry_type must be setpoint or continuation"),
        ),
        (
            "GET",
            "/thermostat/02AA01AC0000NOPE/status".into(),
            Value::Null,
            (404, json!({"error": "Device not found"})),
        ),
        (
            "GET",
            "/thermostat/not-a-device/status".into(),
            Value::Null,
            (404, json!({"error": "Device not found"})),
        ),
        (
            "POST",
            format!("{t}/turbo"),
            json!({}),
            (404, json!({"error": "Not found"})),
        ),
        (
            "GET",
            format!("{t}/away"),
            Value::Null,
            (405, json!({"error": "Method not allowed"})),
        ),
    ];
    // The key's first use is recorded (a store write); after that, refusals change nothing.
    assert_eq!(api(&s, "GET", "/devices", &key, Value::Null).status, 200);
    let before = store_bytes(s.dir.path());
    for (method, path, body, expected) in cases {
        let r = api(&s, method, &path, &key, body.clone());
        assert_eq!(error(&r), expected, "{method} {path} {body}");
    }
    // Bodies that are not JSON objects.
    for (body, expected) in [
        ("{nope", "Invalid JSON"),
        ("[1]", "Request body must be a JSON object"),
    ] {
        let r = client::request(
            &url(s.control(), &format!("/api/v1{t}/mode")),
            "POST",
            &[("Authorization", &format!("Bearer {key}"))],
            body.as_bytes(),
            TIMEOUT,
        )
        .unwrap();
        assert_eq!(error(&r), (400, json!({ "error": expected })));
    }
    assert!(
        store_bytes(s.dir.path()) == before,
        "a refused request changed the store"
    );
}

#[test]
fn keys_scopes_serials_and_shares_decide_access() {
    let s = TestServer::start_with(|c| c.api_rate_limit_per_minute = 1000);
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let (_sim2, _events2, _held2) = booted_and_held(&s, OTHER);
    s.set_owner(SERIAL, "alice");
    s.set_owner(OTHER, "alice");
    let status = |serial: &str| format!("/thermostat/{serial}/status");
    let mode = |serial: &str| format!("/thermostat/{serial}/mode");
    let denied = (403, json!({"error": "Access denied to this device"}));
    let not_found = (404, json!({"error": "Device not found"}));
    let heat = json!({"mode": "heat"});

    // 401: no key, an unknown key, a malformed header.
    for auth in [None, Some("Bearer nle_0000"), Some("Basic abc")] {
        let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", *a)).collect();
        let r = client::request(
            &url(s.control(), "/api/v1/devices"),
            "GET",
            &headers,
            &[],
            TIMEOUT,
        )
        .unwrap();
        assert_eq!(
            error(&r),
            (401, json!({"error": "Unauthorized"})),
            "{auth:?}"
        );
        assert_eq!(r.header("WWW-Authenticate"), Some("Bearer"));
    }

    // Scopes: read-only keys cannot write; write-only keys cannot read.
    let read_only = new_key(&s, "alice", "read", &[]);
    assert_eq!(
        api(&s, "GET", &status(SERIAL), &read_only, Value::Null).status,
        200
    );
    assert_eq!(
        error(&api(&s, "POST", &mode(SERIAL), &read_only, heat.clone())),
        denied
    );
    let write_only = new_key(&s, "alice", "write", &[]);
    assert_eq!(
        error(&api(&s, "GET", &status(SERIAL), &write_only, Value::Null)),
        denied
    );
    assert_eq!(
        error(&api(&s, "GET", "/devices", &write_only, Value::Null)),
        (403, json!({"error": "Access denied to this device"}))
    );
    assert_eq!(
        api(&s, "POST", &mode(SERIAL), &write_only, heat.clone()).status,
        200
    );

    // A key limited to one serial sees and touches only that one.
    let limited = new_key(&s, "alice", "read,write", &[SERIAL]);
    let list = api(&s, "GET", "/devices", &limited, Value::Null).json();
    let serials: Vec<&Value> = list["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| &d["serial"])
        .collect();
    assert_eq!(serials, [&json!(SERIAL)]);
    assert_eq!(
        error(&api(&s, "GET", &status(OTHER), &limited, Value::Null)),
        denied
    );
    assert_eq!(
        error(&api(&s, "POST", &mode(OTHER), &limited, heat.clone())),
        denied
    );
    assert_eq!(
        api(&s, "POST", &mode(SERIAL), &limited, heat.clone()).status,
        200
    );

    // Another user's thermostats do not exist for a user with no relation to them.
    let stranger = new_key(&s, "mallory", "read,write", &[]);
    assert_eq!(
        api(&s, "GET", "/devices", &stranger, Value::Null).json(),
        json!({"devices": []})
    );
    assert_eq!(
        error(&api(&s, "GET", &status(SERIAL), &stranger, Value::Null)),
        not_found
    );
    assert_eq!(
        error(&api(&s, "POST", &mode(SERIAL), &stranger, heat.clone())),
        not_found
    );
    assert_eq!(
        error(&api(
            &s,
            "DELETE",
            &format!("/thermostat/{SERIAL}"),
            &stranger,
            Value::Null
        )),
        not_found
    );
    // Nor does the default user see a claimed thermostat, even in open mode.
    let household = new_key(&s, "owner", "read,write", &[]);
    assert_eq!(
        error(&api(&s, "GET", &status(SERIAL), &household, Value::Null)),
        not_found
    );

    // Shares: read sees, control changes, neither may unlink.
    share(&s, SERIAL, "bob", ShareAccess::Read);
    share(&s, SERIAL, "carol", ShareAccess::Control);
    let bob = new_key(&s, "bob", "read,write", &[]);
    let carol = new_key(&s, "carol", "read,write", &[]);
    let list = api(&s, "GET", "/devices", &bob, Value::Null).json();
    assert_eq!(list["devices"][0]["accessType"], json!("shared"));
    assert_eq!(list["devices"].as_array().unwrap().len(), 1);
    assert_eq!(
        api(&s, "GET", &status(SERIAL), &bob, Value::Null).status,
        200
    );
    assert_eq!(
        error(&api(&s, "POST", &mode(SERIAL), &bob, heat.clone())),
        denied
    );
    assert_eq!(
        api(&s, "POST", &mode(SERIAL), &carol, heat.clone()).status,
        200
    );
    let owners_only = (
        403,
        json!({"error": "Only device owners can delete devices"}),
    );
    for key in [&bob, &carol] {
        assert_eq!(
            error(&api(
                &s,
                "DELETE",
                &format!("/thermostat/{SERIAL}"),
                key,
                Value::Null
            )),
            owners_only
        );
    }

    // The owner unlinks: ownership and every share end at once.
    let alice = new_key(&s, "alice", "read,write", &[]);
    let r = api(
        &s,
        "DELETE",
        &format!("/thermostat/{SERIAL}"),
        &alice,
        Value::Null,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let accounts = s.app().state().accounts(|a| a.clone());
    assert!(accounts.owner_of(SERIAL).is_none());
    assert!(accounts.shares_of(SERIAL).is_none());
    assert_eq!(
        error(&api(&s, "GET", &status(SERIAL), &carol, Value::Null)),
        not_found
    );
    // Released: nobody's, so not the default user's either (tests/it/release.rs shows the
    // default user's key listing it before and not after).
    assert!(accounts.is_released(SERIAL));
    assert_eq!(
        error(&api(&s, "GET", &status(SERIAL), &household, Value::Null)),
        not_found
    );
}

#[test]
fn expired_and_revoked_keys_are_refused_and_use_is_recorded() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let key = new_key(&s, "owner", "read", &[]);
    let id = s
        .app()
        .state()
        .accounts(|a| a.api_keys.keys().next().cloned().unwrap());
    assert!(
        s.app()
            .state()
            .accounts(|a| a.api_keys[&id].last_used_ms.is_none())
    );
    assert_eq!(api(&s, "GET", "/devices", &key, Value::Null).status, 200);
    let used = s.app().state().accounts(|a| a.api_keys[&id].last_used_ms);
    assert!(used.is_some_and(|t| hearth::util::clock::now_ms() - t < 10_000));

    // Expired: the same key with an expiry in the past.
    s.app()
        .state()
        .update_accounts(|txn| {
            let mut k = txn.accounts().api_keys[&id].clone();
            k.expires_ms = Some(hearth::util::clock::now_ms() - 1);
            txn.push(Op::PutApiKey { key: k });
            Ok::<_, hearth::store::StoreError>(())
        })
        .unwrap();
    let unauthorized = (401, json!({"error": "Unauthorized"}));
    assert_eq!(
        error(&api(&s, "GET", "/devices", &key, Value::Null)),
        unauthorized
    );

    let other = new_key(&s, "owner", "read", &[]);
    assert_eq!(api(&s, "GET", "/devices", &other, Value::Null).status, 200);
    let other_id = s
        .app()
        .state()
        .accounts(|a| a.api_keys.keys().find(|k| **k != id).cloned().unwrap());
    keys::revoke(s.app().state(), &other_id).unwrap();
    assert_eq!(
        error(&api(&s, "GET", "/devices", &other, Value::Null)),
        unauthorized
    );
}

#[test]
fn a_key_stops_working_the_moment_it_expires() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| c.clock = time.clock());
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let spec = KeySpec {
        user: "owner".into(),
        name: "a day".into(),
        scopes: keys::parse_scopes("read").unwrap(),
        serials: Vec::new(),
        expires_days: Some(1),
    };
    let new = keys::create(s.app().state(), &spec).unwrap();
    assert_eq!(new.record.expires_ms, Some(time.now_ms() + 86_400_000));
    time.advance(std::time::Duration::from_millis(86_399_999));
    assert_eq!(
        api(&s, "GET", "/devices", &new.key, Value::Null).status,
        200,
        "a millisecond before it expires"
    );
    time.advance(std::time::Duration::from_millis(1));
    assert_eq!(
        error(&api(&s, "GET", "/devices", &new.key, Value::Null)),
        (401, json!({"error": "Unauthorized"}))
    );
}

#[test]
fn the_rate_limit_counts_per_key_and_says_so_in_headers() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.api_rate_limit_per_minute = 3;
        c.clock = time.clock();
    });
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let key = new_key(&s, "owner", "read", &[]);
    let other = new_key(&s, "owner", "read", &[]);
    let mut reset = None;
    for remaining in [2, 1, 0] {
        let r = api(&s, "GET", "/devices", &key, Value::Null);
        assert_eq!(r.status, 200);
        assert_eq!(r.header("X-RateLimit-Limit"), Some("3"));
        assert_eq!(
            r.header("X-RateLimit-Remaining"),
            Some(remaining.to_string().as_str())
        );
        let at = r.header("X-RateLimit-Reset").unwrap().to_string();
        assert!(at.ends_with('Z') && at.len() == 24, "ISO 8601: {at}");
        reset.get_or_insert(at);
    }
    let r = api(
        &s,
        "GET",
        &format!("/thermostat/{SERIAL}/status"),
        &key,
        Value::Null,
    );
    assert_eq!(r.status, 429);
    let reset = reset.unwrap();
    assert_eq!(
        r.json(),
        json!({"error": "Rate limit exceeded", "retryAfter": reset})
    );
    assert_eq!(r.header("X-RateLimit-Remaining"), Some("0"));
    let retry: u64 = r.header("Retry-After").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    // Another key has its own count.
    assert_eq!(api(&s, "GET", "/devices", &other, Value::Null).status, 200);
    // A missing or wrong key is 401 (checked before the key's limit), even past the key's
    // count; those are counted against the address (see the next test).
    for _ in 0..3 {
        let r = api(&s, "GET", "/devices", "nle_wrong", Value::Null);
        assert_eq!(r.status, 401);
        assert_eq!(r.json(), json!({"error": "Unauthorized"}));
        assert_eq!(r.header("X-RateLimit-Limit"), Some("3"));
    }
    // The count starts again a minute after the window opened, and not a moment before.
    time.advance(std::time::Duration::from_millis(59_999));
    assert_eq!(api(&s, "GET", "/devices", &key, Value::Null).status, 429);
    time.advance(std::time::Duration::from_millis(1));
    let r = api(&s, "GET", "/devices", &key, Value::Null);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("X-RateLimit-Remaining"), Some("2"));
}

/// Guessing keys: an address that has sent `API_RATE_LIMIT_PER_MINUTE` requests without a
/// valid key in a window gets 429 for everything until the window ends, a valid key included
/// (else the change from 429 to 200 would reveal a right guess); another address is served.
#[test]
fn guessing_keys_is_limited_per_client_address() {
    use common::from_address::{SECOND, request_from};
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| c.clock = time.clock());
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let key = new_key(&s, "owner", "read", &[]);
    let wrong = format!("nle_{}", "0".repeat(64));
    let mut reset = None;
    for remaining in (0..20).rev() {
        let r = api(&s, "GET", "/devices", &wrong, Value::Null);
        assert_eq!(error(&r), (401, json!({"error": "Unauthorized"})));
        assert_eq!(r.header("X-RateLimit-Limit"), Some("20"));
        let left = remaining.to_string();
        assert_eq!(r.header("X-RateLimit-Remaining"), Some(left.as_str()));
        reset.get_or_insert(r.header("X-RateLimit-Reset").unwrap().to_string());
    }
    let reset = reset.unwrap();
    let limited = json!({"error": "Rate limit exceeded", "retryAfter": reset});
    let before = store_bytes(s.dir.path());
    // The 21st guess, and then the right key, from the same address: 429, and the key is not
    // even looked up (its first use would be recorded in the store).
    for presented in [wrong.as_str(), key.as_str(), ""] {
        let r = api(&s, "GET", "/devices", presented, Value::Null);
        assert_eq!(error(&r), (429, limited.clone()), "{presented:?}");
        assert_eq!(r.header("Retry-After"), Some("60"));
        assert_eq!(r.header("X-RateLimit-Remaining"), Some("0"));
        assert_eq!(r.header("X-RateLimit-Reset"), Some(reset.as_str()));
    }
    assert_eq!(store_bytes(s.dir.path()), before, "nothing was recorded");
    // Another address is served meanwhile, its guesses counted on their own.
    let from_second = |key: &str| {
        request_from(
            SECOND,
            s.control(),
            "GET /api/v1/devices HTTP/1.1",
            &[("Authorization", &format!("Bearer {key}"))],
            b"",
        )
    };
    let r = from_second(&key);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["devices"][0]["serial"], json!(SERIAL));
    let r = from_second(&wrong);
    assert_eq!(error(&r), (401, json!({"error": "Unauthorized"})));
    assert_eq!(r.header("X-RateLimit-Remaining"), Some("19"));
    // Until the window ends, and not a moment longer.
    time.advance(std::time::Duration::from_millis(59_999));
    let r = api(&s, "GET", "/devices", &key, Value::Null);
    assert_eq!(error(&r), (429, limited));
    assert_eq!(r.header("Retry-After"), Some("1"));
    time.advance(std::time::Duration::from_millis(1));
    let r = api(&s, "GET", "/devices", &key, Value::Null);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("X-RateLimit-Remaining"),
        Some("19"),
        "a new window"
    );
}

#[test]
fn a_schedule_copies_from_one_thermostat_to_another() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let (_other, _events2, mut held) = booted_and_held(&s, OTHER);
    let key = new_key(&s, "owner", "read,write", &[]);
    let mut source = api(
        &s,
        "GET",
        &format!("/thermostat/{SERIAL}/schedule"),
        &key,
        Value::Null,
    )
    .json();
    source["schedule"]["name"] = json!("Copied");
    // The GET body, `device` and all, is the PUT body.
    let r = api(
        &s,
        "PUT",
        &format!("/thermostat/{OTHER}/schedule"),
        &key,
        source.clone(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let (_, doc) = next_push(&mut held);
    assert_eq!(
        object(&doc, &format!("schedule.{OTHER}"))["value"],
        source["schedule"]
    );
    let copy = api(
        &s,
        "GET",
        &format!("/thermostat/{OTHER}/schedule"),
        &key,
        Value::Null,
    )
    .json();
    assert_eq!(copy["schedule"], source["schedule"]);
    assert_eq!(copy["device"]["serial"], json!(OTHER));
}

#[test]
fn an_unlinked_thermostat_can_be_claimed_again() {
    let s = TestServer::start_with(|c| c.require_device_pairing = true);
    let (mut sim, events) = thermostat(&s.origin(), SERIAL);
    sim.register().unwrap();
    let (code, _) = sim.passphrase().unwrap();
    hearth::accounts::claim(s.app().state(), &code, "alice").unwrap();
    sim.boot().unwrap();
    let alice = new_key(&s, "alice", "read,write", &[]);
    let bob = new_key(&s, "bob", "read,write", &[]);
    assert_eq!(
        api(
            &s,
            "GET",
            &format!("/thermostat/{SERIAL}/status"),
            &alice,
            Value::Null
        )
        .status,
        200
    );
    let status = api(
        &s,
        "GET",
        &format!("/thermostat/{SERIAL}/status"),
        &alice,
        Value::Null,
    )
    .json();
    assert!(status["state"]["user.alice"]["value"]["name"] == json!("alice"));
    assert!(status["state"]["structure.alice"]["value"]["devices"] == json!([SERIAL]));

    let r = api(
        &s,
        "DELETE",
        &format!("/thermostat/{SERIAL}"),
        &alice,
        Value::Null,
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        error(&api(
            &s,
            "GET",
            &format!("/thermostat/{SERIAL}/status"),
            &alice,
            Value::Null
        )),
        (404, json!({"error": "Device not found"}))
    );
    // The old code is used up; the thermostat shows a new one, and bob claims it.
    assert!(hearth::accounts::claim(s.app().state(), &code, "bob").is_err());
    let (fresh, _) = sim.passphrase().unwrap();
    assert_ne!(fresh, code);
    let held = sim.open_subscribe();
    s.wait_held(SERIAL, 1);
    hearth::accounts::claim(s.app().state(), &fresh, "bob").unwrap();
    let mut held = held.unwrap();
    let (chunk, doc) = next_push(&mut held);
    assert_eq!(object(&doc, "user.bob")["value"], json!({"name": "bob"}));
    sim.apply_chunk(&chunk).unwrap();
    expect_event(
        &events,
        "paired with bob",
        |e| matches!(e, hearth::simulator::Event::Paired { user } if user == "bob"),
    );
    assert_eq!(
        api(&s, "GET", "/devices", &bob, Value::Null).json()["devices"][0]["serial"],
        json!(SERIAL)
    );
}

/// Home Assistant's ingress proxy speaks for people Home Assistant has signed in: with a key
/// required, its requests need none, and a request from any other address still does.
#[test]
fn the_ingress_proxy_needs_no_key() {
    let status = format!("/status?serial={SERIAL}");
    for (proxy, wanted) in [("127.0.0.2", 401), ("127.0.0.1", 200)] {
        let s = TestServer::start_with(|c| {
            c.control_require_key = true;
            c.ingress_proxy = Some(proxy.parse().unwrap());
        });
        let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
        // This client connects from 127.0.0.1.
        let r = get(s.control(), &status);
        assert_eq!(r.status, wanted, "proxy {proxy}: {}", r.text());
        // The hosted API wants its key from everyone.
        assert_eq!(get(s.control(), "/api/v1/devices").status, 401);
    }
}

#[test]
fn the_control_api_can_require_a_key_of_the_household() {
    let s = TestServer::start_with(|c| c.control_require_key = true);
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let control = |method: &str, target: &str, key: Option<&str>, body: &str| {
        let auth = key.map(|k| format!("Bearer {k}"));
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("Authorization", a.as_str())).collect();
        client::request(
            &url(s.control(), target),
            method,
            &headers,
            body.as_bytes(),
            TIMEOUT,
        )
        .unwrap()
    };
    let status = format!("/status?serial={SERIAL}");
    let cmd = json!({"serial": SERIAL, "command": "set_temperature", "value": 20}).to_string();

    // Probes and CORS preflights stay open.
    assert_eq!(control("GET", "/health", None, "").status, 200);
    assert_eq!(control("OPTIONS", "/command", None, "").status, 200);
    assert_eq!(
        error(&control("GET", &status, None, "")),
        (401, json!({"error": "Unauthorized"}))
    );
    assert_eq!(
        error(&control("POST", "/command", Some("nle_nope"), &cmd)),
        (401, json!({"success": false, "message": "Unauthorized"}))
    );
    let alice = new_key(&s, "alice", "read,write", &[]);
    assert_eq!(
        error(&control("GET", &status, Some(&alice), "")),
        (
            403,
            json!({"error": "Access denied: the control API takes keys of the user owner with no serial limit (use /api/v1 for other keys)"})
        )
    );
    let limited = new_key(&s, "owner", "read,write", &[SERIAL]);
    assert_eq!(control("GET", &status, Some(&limited), "").status, 403);
    let read = new_key(&s, "owner", "read", &[]);
    assert_eq!(control("GET", &status, Some(&read), "").status, 200);
    assert_eq!(
        error(&control("POST", "/command", Some(&read), &cmd)),
        (
            403,
            json!({"success": false, "message": "Access denied: this API key lacks the write scope"})
        )
    );
    let write = new_key(&s, "owner", "read,write", &[]);
    let r = control("POST", "/command", Some(&write), &cmd);
    assert_eq!(r.status, 200, "{}", r.text());

    // A live event stream opened with a key ends when that key is revoked: the next change is
    // not delivered, the stream is terminated instead.
    let auth = format!("Bearer {read}");
    let mut stream = client::ChunkStream::open(
        &url(s.control(), "/api/events"),
        "GET",
        &[("Authorization", auth.as_str())],
        &[],
        TIMEOUT,
        false,
    )
    .unwrap();
    assert_eq!(stream.status, 200);
    assert_eq!(stream.next_chunk().unwrap().unwrap(), b": connected\n\n");
    assert_eq!(control("POST", "/command", Some(&write), &cmd).status, 200);
    // The setpoint, then that the change was sent.
    for _ in 0..2 {
        let event = String::from_utf8(stream.next_chunk().unwrap().unwrap()).unwrap();
        assert!(event.starts_with("data: "), "{event:?}");
    }
    let id = s
        .app()
        .state()
        .accounts(|a| keys::find(a, &read).map(|k| k.id.clone()))
        .unwrap();
    keys::revoke(s.app().state(), &id).unwrap();
    assert_eq!(control("POST", "/command", Some(&write), &cmd).status, 200);
    assert_eq!(stream.next_chunk().unwrap(), None, "the stream must end");
}

#[test]
fn in_open_mode_an_unlinked_thermostat_is_released_not_given_to_the_default_user() {
    let s = TestServer::start();
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.register().unwrap();
    sim.boot().unwrap();
    let (code, _) = sim.passphrase().unwrap();
    hearth::accounts::claim(s.app().state(), &code, "alice").unwrap();
    let alice = new_key(&s, "alice", "read,write", &[]);
    let owner = new_key(&s, "owner", "read,write", &[]);
    let status = format!("/thermostat/{SERIAL}/status");
    assert_eq!(api(&s, "GET", &status, &alice, Value::Null).status, 200);
    assert_eq!(api(&s, "GET", &status, &owner, Value::Null).status, 404);

    let unlink = |key: &str| {
        api(
            &s,
            "DELETE",
            &format!("/thermostat/{SERIAL}"),
            key,
            Value::Null,
        )
    };
    let r = unlink(&alice);
    assert_eq!(
        (r.status, r.json()),
        (
            200,
            json!({"success": true, "message": "Device deleted successfully"})
        )
    );
    assert_eq!(api(&s, "GET", &status, &alice, Value::Null).status, 404);
    // Nobody's: the default user does not take it back, so it cannot unlink it either.
    assert_eq!(api(&s, "GET", &status, &owner, Value::Null).status, 404);
    assert!(s.app().state().accounts(|a| a.is_released(SERIAL)));
    let before = store_bytes(s.dir.path());
    assert_eq!(unlink(&owner).status, 404);
    assert_eq!(unlink(&alice).status, 404);
    assert!(store_bytes(s.dir.path()) == before);
}
