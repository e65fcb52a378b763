//! Pairing mode (`REQUIRE_DEVICE_PAIRING=true`): unknown thermostats can write nothing through
//! any path, `/nest/...` or legacy; a thermostat with an entry key may subscribe but stores
//! nothing; an owned one has full access.

use crate::common;

use std::time::Duration;

use common::*;
use hearth::util::clock::ManualClock;
use serde_json::json;

const UNKNOWN: &str = "{\"error\":\"Device not authorized. Complete pairing first.\"}";

fn put_body() -> Vec<u8> {
    json!({"objects": [{"object_key": format!("shared.{SERIAL}"), "value": {"target_temperature": 30.0}}]})
        .to_string()
        .into_bytes()
}

fn subscribe_body() -> Vec<u8> {
    json!({"objects": [{"object_key": format!("device.{SERIAL}"), "object_revision": 0, "object_timestamp": 0,
                         "value": {"current_humidity": 1}}]})
    .to_string()
    .into_bytes()
}

#[test]
fn unknown_thermostats_are_refused_on_every_write_path() {
    let s = pairing();
    let before = store_bytes(s.dir.path());
    for path in [
        "/nest/transport/v7/put",
        "/nest/transport/put",
        "/transport/v7/put",
        "/czfe/v7/put",
    ] {
        let r = post_as(s.device(), path, SERIAL, &put_body());
        assert_eq!((r.status, r.text().as_str()), (401, UNKNOWN), "{path}");
    }
    for path in [
        "/nest/transport",
        "/nest/transport/v7/subscribe",
        "/transport/v7/subscribe",
        "/czfe/v7/subscribe",
    ] {
        let r = post_as(s.device(), path, SERIAL, &subscribe_body());
        assert_eq!((r.status, r.text().as_str()), (401, UNKNOWN), "{path}");
    }
    for path in ["/nest/upload", "/upload"] {
        let r = post_as(s.device(), path, SERIAL, b"log");
        assert_eq!((r.status, r.text().as_str()), (401, UNKNOWN), "{path}");
    }
    let anonymous = hearth::http::client::request(
        &url(s.device(), "/nest/transport/v7/put"),
        "POST",
        &[],
        &put_body(),
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(
        (anonymous.status, anonymous.json()),
        (400, json!({"error": "Device serial required"}))
    );
    assert!(!s.app().state().device_exists(SERIAL));
    assert_eq!(
        store_bytes(s.dir.path()),
        before,
        "nothing reached the store"
    );
    // Ungated routes still answer.
    assert_eq!(get_as(s.device(), "/entry", SERIAL).status, 200);
    assert_eq!(
        get_as(
            s.device(),
            "/nest/transport/device/02AA01AC0000SIM1",
            SERIAL
        )
        .status,
        200
    );
}

#[test]
fn a_thermostat_with_an_entry_key_may_subscribe_but_stores_nothing() {
    let s = pairing();
    assert_eq!(get_as(s.device(), "/passphrase", SERIAL).status, 200);
    let dialog = format!("device_alert_dialog.{SERIAL}");
    let before = s.app().state().read_device(SERIAL, |d| d.clone()).unwrap();

    for path in ["/nest/transport/v7/put", "/transport/v7/put"] {
        let r = post_as(s.device(), path, SERIAL, &put_body());
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, "{\"objects\":[]}"),
            "{path}"
        );
    }
    let r = post_as(s.device(), "/czfe/v7/subscribe", SERIAL, &subscribe_body());
    assert_eq!(r.status, 200, "pending thermostats may subscribe");
    assert_eq!(
        r.json()["objects"][0]["value"],
        json!({}),
        "its inline value was not stored"
    );
    let r = post_json(
        s.device(),
        "/nest/transport",
        SERIAL,
        json!({"objects": [{"object_key": dialog, "object_revision": 0, "object_timestamp": 0}]}),
    );
    assert_eq!(
        r.json()["objects"][0]["value"]["dialog_id"],
        json!("confirm-pairing")
    );
    let r = post_as(s.device(), "/upload", SERIAL, b"log");
    assert_eq!(
        (r.status, r.json()),
        (401, json!({"error": "Not authorized"}))
    );
    assert_eq!(
        s.app().state().read_device(SERIAL, |d| d.clone()).unwrap(),
        before,
        "nothing changed"
    );
}

#[test]
fn an_owned_thermostat_has_full_access_on_every_path() {
    let s = pairing();
    s.set_owner(SERIAL, "alice");
    for path in ["/nest/transport/v7/put", "/transport/v7/put"] {
        let r = post_as(s.device(), path, SERIAL, &put_body());
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.json()["objects"].as_array().unwrap().len(), 1, "{path}");
    }
    let r = post_as(s.device(), "/czfe/v7/subscribe", SERIAL, &subscribe_body());
    let keys: Vec<String> = r.json()["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["object_key"].as_str().unwrap().to_string())
        .collect();
    assert!(keys.contains(&format!("device.{SERIAL}")));
    assert!(keys.contains(&"user.alice".to_string()), "{keys:?}");
    assert!(keys.contains(&"structure.alice".to_string()), "{keys:?}");
    assert_eq!(post_as(s.device(), "/upload", SERIAL, b"log").status, 200);
}

#[test]
fn an_expired_entry_key_no_longer_lets_a_thermostat_in() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.require_device_pairing = true;
        c.entry_key_ttl_secs = 60;
        c.clock = time.clock();
    });
    get_as(s.device(), "/nest/passphrase", SERIAL);
    assert_eq!(
        post_as(s.device(), "/nest/transport", SERIAL, &subscribe_body()).status,
        200
    );
    time.advance(Duration::from_millis(59_999));
    assert_eq!(
        post_as(s.device(), "/nest/transport", SERIAL, &subscribe_body()).status,
        200,
        "still let in a millisecond before the key expires"
    );
    time.advance(Duration::from_millis(1));
    let r = post_as(s.device(), "/nest/transport", SERIAL, &subscribe_body());
    assert_eq!((r.status, r.text().as_str()), (401, UNKNOWN));
}
