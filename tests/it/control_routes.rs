//! The control API's read and maintenance routes, no wildcard CORS, and the request shapes real clients
//! send (chunked bodies, a Bearer header).

use crate::common;

use std::time::Duration;

use common::*;
use hearth::util::clock::ManualClock;
use serde_json::{Value, json};

/// `/status` answers are kept between changes (`thermostat::StatusCache`). What moves without a
/// write must still show at once: the fan timer running out, availability lapsing and coming
/// back, and the owner changing. After every step the answer is the
/// record built afresh.
#[test]
fn status_is_never_stale_between_changes() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.clock = time.clock();
        c.availability_timeout = Duration::from_secs(3600);
    });
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.boot().unwrap();
    let status = || {
        let r = get(s.control(), &format!("/status?serial={SERIAL}"));
        assert_eq!(r.status, 200, "{}", r.text());
        let answered = r.json();
        let fresh = hearth::control::status::record(s.app(), SERIAL).unwrap();
        assert_eq!(
            answered, fresh,
            "/status differs from the record built afresh"
        );
        answered
    };
    assert_eq!(
        command(s.control(), SERIAL, "set_fan", json!(900)).status,
        200
    );
    let running = status();
    assert_eq!(running["fan_timer_active"], json!(true));
    // Nothing changed: the same answer, now the kept one.
    assert_eq!(status(), running);
    // A change to its data alone.
    let set = command(s.control(), SERIAL, "set_temperature", json!(22.5));
    assert_eq!(set.status, 200, "{}", set.text());
    assert_eq!(status()["target_temperature"], json!(22.5));
    time.advance(Duration::from_secs(899));
    assert_eq!(status()["fan_timer_active"], json!(true));
    time.advance(Duration::from_secs(1));
    assert_eq!(status()["fan_timer_active"], json!(false));

    // Last seen at the boot, 900 s ago: available until 3600 s have passed.
    assert_eq!(status()["is_available"], json!(true));
    time.advance(Duration::from_secs(2700));
    assert_eq!(status()["is_available"], json!(true));
    time.advance(Duration::from_millis(1));
    assert_eq!(status()["is_available"], json!(false));
    // The thermostat comes back (its subscribe is answered at once with the fan command it
    // missed).
    let held = sim.open_subscribe().unwrap();
    assert_eq!(status()["is_available"], json!(true));
    drop(held);

    // Claimed by a user, whose structure the record then reads, and unlinked again.
    let owner = || {
        s.app()
            .state()
            .accounts(|a| a.owner_of(SERIAL).map(|o| o.user.clone()))
    };
    assert_eq!(owner(), None);
    let (code, _) = sim.passphrase().unwrap();
    let body = json!({"code": code, "userId": "dave"}).to_string();
    let claimed = call(s.control(), "POST", "/api/register", &body);
    assert_eq!(claimed.status, 200, "{}", claimed.text());
    assert_eq!(owner().as_deref(), Some("dave"));
    status();
    let target = format!("/api/registered-devices/{SERIAL}?userId=dave");
    let unlinked = call(s.control(), "DELETE", &target, "");
    assert_eq!(unlinked.status, 200, "{}", unlinked.text());
    assert_eq!(owner(), None);
    status();
}

#[test]
fn status_is_derived_from_the_thermostats_buckets() {
    let s = TestServer::start();
    let (sim, _events, _held) = booted_and_held(&s, SERIAL);
    let r = get(
        s.control(),
        &format!("/status?serial={}", SERIAL.to_lowercase()),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let st = r.json();
    let shared = sim.bucket(&format!("shared.{SERIAL}")).unwrap();
    let device = sim.bucket(&format!("device.{SERIAL}")).unwrap();
    assert_eq!(st["serial"], json!(SERIAL));
    assert_eq!(st["api_key"], json!(sim.password()));
    assert_eq!(st["is_available"], json!(true), "it holds a subscribe");
    assert!(st["last_seen"].as_str().unwrap().ends_with('Z'));
    assert_eq!(st["current_temperature"], shared["current_temperature"]);
    assert_eq!(st["target_temperature"], shared["target_temperature"]);
    assert_eq!(st["mode"], shared["target_temperature_type"]);
    assert_eq!(st["humidity"], device["current_humidity"]);
    assert_eq!(st["temperature_scale"], device["temperature_scale"]);
    assert_eq!(st["software_version"], device["current_version"]);
    assert_eq!(st["mac_address"], device["mac_address"]);
    for flag in ["can_heat", "can_cool", "has_fan", "has_emer_heat"] {
        assert_eq!(st[flag], st["capabilities"][flag], "{flag}");
    }
    assert_eq!(st["has_fan"], json!(true));
    let hvac = st["hvac"].as_object().unwrap();
    for field in [
        "heater",
        "ac",
        "fan",
        "aux_heat",
        "heat_x2",
        "humidifier",
        "dehumidifier",
    ] {
        assert!(hvac[field].is_boolean(), "hvac.{field}");
    }
    for field in [
        "name",
        "target_temperature_high",
        "target_temperature_low",
        "target_humidity",
        "target_humidity_enabled",
        "fan_timer_active",
        "fan_timer_timeout",
        "eco_temperatures",
        "is_online",
        "has_leaf",
        "eco_mode",
        "time_to_target",
        "learning_mode",
        "backplate_temperature",
        "structure_id",
        "away",
        "schedule_mode",
        "local_ip",
    ] {
        assert!(st.get(field).is_some(), "{field} missing from {st}");
    }
    // A command shows up in the next status.
    command(s.control(), SERIAL, "set_away", json!(true));
    command(s.control(), SERIAL, "set_temperature", json!(23.5));
    let st = get(s.control(), &format!("/status?serial={SERIAL}")).json();
    assert_eq!(
        (st["away"].clone(), st["target_temperature"].clone()),
        (json!(true), json!(23.5))
    );
}

#[test]
fn devices_stats_config_and_schedule() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let list = get(s.control(), "/api/devices").json();
    assert_eq!(list["total"], json!(1));
    let d = &list["devices"][0];
    assert_eq!(d["serial"], json!(SERIAL));
    assert_eq!(d["subscription_count"], json!(1));
    assert!(d["capabilities"].is_object());

    let stats = get(s.control(), "/api/stats").json();
    assert_eq!(
        stats["devices"],
        json!({"total": 1, "available": 1, "serials": [SERIAL]})
    );
    assert_eq!(
        stats["subscriptions"],
        json!({"total_subscriptions": 1, "devices_with_subscriptions": 1})
    );
    assert_eq!(stats["availability"][SERIAL]["is_available"], json!(true));

    let config = get(s.control(), "/api/config").json();
    assert_eq!(
        config["cloudregisterurl"],
        json!(format!("http://127.0.0.1:{}/entry", s.device().port()))
    );
    assert_eq!(config["require_device_pairing"], json!(false));

    let sched = get(s.control(), &format!("/api/schedule?serial={SERIAL}")).json();
    assert_eq!(sched["serial"], json!(SERIAL));
    assert_eq!(sched["schedule"]["ver"], json!(2));
    assert!(sched["object_revision"].is_i64() && sched["object_timestamp"].is_i64());
    // The simulator reports no safety bounds: the schedule's own limits apply at the top, the
    // thermostat's default lower bound at the bottom.
    assert_eq!(
        sched["limits"],
        json!({"low": 7.222, "high": 32.0, "last_time": 86399})
    );
}

/// `/api/schedule`'s `now`: where the thermostat's week stands in its structure's time zone
/// (day 0 is Monday, as the schedule's day keys count), UTC said to be a fallback until the
/// structure has a zone.
#[test]
fn the_schedule_says_where_the_week_stands_in_the_structure_zone() {
    // Thursday 2026-01-15 12:00 UTC: Friday 01:00 in Auckland (UTC+13 in summer).
    let time = ManualClock::at(1_768_478_400_000);
    let s = TestServer::start_with(|c| {
        c.clock = time.clock();
        c.zoneinfo = "/nonexistent".into();
    });
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let now = || get(s.control(), &format!("/api/schedule?serial={SERIAL}")).json()["now"].clone();
    assert_eq!(
        now(),
        json!({"day": 3, "time": 43_200, "time_zone": "UTC", "time_zone_source": "fallback",
               "structure_time_zone": null})
    );
    s.server_change(
        SERIAL,
        &format!("device.{SERIAL}"),
        json!({"time_zone": "Pacific/Auckland"}),
    );
    assert_eq!(
        now(),
        json!({"day": 4, "time": 3600, "time_zone": "Pacific/Auckland",
               "time_zone_source": "built-in", "structure_time_zone": "Pacific/Auckland"})
    );
    time.advance(Duration::from_secs(23 * 3600));
    assert_eq!(now()["day"], json!(5));
}

#[test]
fn notify_repushes_every_bucket_and_delete_unlists_the_thermostat() {
    let s = TestServer::start();
    let (_sim, _events, mut held) = booted_and_held(&s, SERIAL);
    let r = call(
        s.control(),
        "POST",
        "/notify-device",
        &json!({"serial": SERIAL}).to_string(),
    );
    assert_eq!(
        r.json(),
        json!({"success": true, "subscribers_notified": 1})
    );
    let (_, doc) = next_push(&mut held);
    let keys: Vec<&str> = doc["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["object_key"].as_str().unwrap())
        .collect();
    for kind in ["device", "shared", "schedule"] {
        assert!(
            keys.contains(&format!("{kind}.{SERIAL}").as_str()),
            "{keys:?}"
        );
    }

    let r = remove_device(s.control(), SERIAL);
    assert_eq!(
        (r.status, r.json()),
        (
            200,
            json!({"success": true, "serial": SERIAL, "objects_deleted": 0})
        )
    );
    // Removed: unlisted, but nothing is forgotten (tests/it/removal.rs has the rest).
    assert_eq!(get(s.control(), "/api/devices").json()["total"], json!(0));
    assert_eq!(
        get(s.control(), &format!("/status?serial={SERIAL}")).status,
        200
    );
    // Removing it again changes nothing; an unknown serial is a 404.
    let before = store_bytes(s.dir.path());
    let r = remove_device(s.control(), SERIAL);
    assert_eq!(r.status, 200, "{}", r.text());
    let r = remove_device(s.control(), "02AA01AC0000NONE");
    assert_eq!(
        (r.status, r.json()),
        (404, json!({"error": "Device not found"}))
    );
    assert!(store_bytes(s.dir.path()) == before);
    let dir = s.stop();
    let mut config = hearth::Config::local(dir.path());
    config.api_origin = hearth::config::ApiOrigin::parse("http://127.0.0.1").ok();
    let again = common::start_server(config);
    assert!(again.app().state().device_exists(SERIAL));
    assert!(again.app().state().accounts(|a| a.is_released(SERIAL)));
    again.shutdown();
}

/// No answer says any page may read it (the Python server's `Access-Control-Allow-Origin: *`):
/// CORS headers go to the pages of ALLOWED_ORIGINS only (tests/it/browser.rs). An `OPTIONS`
/// without an `Origin` (no browser's preflight) still gets an empty 200 before routing.
#[test]
fn no_wildcard_cors_and_options_before_routing() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let cmd = json!({"serial": SERIAL, "command": "set_temperature", "value": 21}).to_string();
    let bad_cmd = json!({"serial": SERIAL, "command": "nope"}).to_string();
    let notify = json!({"serial": SERIAL}).to_string();
    for (method, target, body) in [
        ("OPTIONS", "/command", ""),
        ("OPTIONS", "/anything", ""),
        ("OPTIONS", "/api/v1/devices", ""),
        ("GET", "/health", ""),
        ("GET", "/status", ""),
        ("GET", "/nope", ""),
        ("GET", "/command", ""),
        ("POST", "/command", cmd.as_str()),
        ("POST", "/command", bad_cmd.as_str()),
        ("POST", "/command", "{nope"),
        ("POST", "/notify-device", notify.as_str()),
        ("POST", "/api/register", "{}"),
        ("POST", "/api/ensure-user", "{}"),
        ("GET", "/api/devices", ""),
        ("GET", "/api/v1/devices", ""),
    ] {
        let r = call(s.control(), method, target, body);
        for name in [
            "Access-Control-Allow-Origin",
            "Access-Control-Allow-Methods",
            "Access-Control-Allow-Headers",
        ] {
            assert_eq!(r.header(name), None, "{method} {target}: {name}");
        }
        if method == "OPTIONS" {
            assert_eq!((r.status, r.body.len()), (200, 0));
        }
    }
}

#[test]
fn a_chunked_body_with_a_bearer_header_works_as_homebridge_sends_it() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let body = json!({"serial": SERIAL, "command": "set_temperature", "value": 21.5}).to_string();
    let request = format!(
        "POST /command HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json\r\nAuthorization: Bearer nle_0000\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
        body.len()
    );
    let text = raw(s.control(), request.as_bytes(), TIMEOUT);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let json_start = text.find("\r\n\r\n").unwrap() + 4;
    let answer: Value = serde_json::from_str(&text[json_start..]).unwrap();
    assert_eq!(answer["data"]["values"]["target_temperature"], json!(21.5));
    assert_eq!(
        s.bucket(SERIAL, &format!("shared.{SERIAL}"))
            .unwrap()
            .value
            .to_map()["target_temperature"],
        json!(21.5)
    );
}

#[test]
fn dismissing_the_pairing_dialog_empties_it() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let target = format!("/api/dismiss-pairing/{SERIAL}");
    let r = call(s.control(), "POST", &target, "");
    assert_eq!(
        r.json(),
        json!({"success": true, "message": format!("No pairing dialog to dismiss for {SERIAL}")})
    );
    let key = format!("device_alert_dialog.{SERIAL}");
    s.server_change(
        SERIAL,
        &key,
        json!({"dialog_data": "", "dialog_id": "confirm-pairing"}),
    );
    let r = call(s.control(), "POST", &target, "");
    assert_eq!(
        r.json(),
        json!({"success": true, "message": format!("Pairing dialog dismissed for {SERIAL}")})
    );
    assert_eq!(
        s.bucket(SERIAL, &key).unwrap().value.to_map(),
        serde_json::Map::new()
    );
}
