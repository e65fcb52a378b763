//! The hosted lock (`POST /api/v1/thermostat/{id}/lock`) with a plaintext PIN, as hanle sends
//! it: the PIN is hashed at once (standard Base64 of SHA-1 over the PIN and the serial), only
//! the hash reaches the store and the thermostat, and a malformed PIN changes nothing.

use crate::common;

use std::path::Path;

use base64::Engine;
use common::hosted::{api, new_key, share};
use common::*;
use serde_json::{Value, json};
use sha1::{Digest, Sha1};

/// The hosted documentation's formula, computed here independently of the server.
fn expected_hash(pin: &str, serial: &str) -> String {
    let digest = Sha1::digest(format!("{pin}{serial}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(digest)
}

/// Every file under `dir` (the journal, snapshots, history), as text.
fn files_under(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            // A temporary file may be renamed away meanwhile; its content is in the new name.
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            out.push((
                path.display().to_string(),
                String::from_utf8_lossy(&bytes).to_string(),
            ));
        }
    }
    out
}

fn device_value(s: &TestServer) -> serde_json::Map<String, Value> {
    s.bucket(SERIAL, &format!("device.{SERIAL}"))
        .unwrap()
        .value
        .to_map()
}

#[test]
fn a_plaintext_pin_is_hashed_at_once_and_only_the_hash_is_kept() {
    let s = TestServer::start();
    let (mut sim, _events, mut held) = booted_and_held(&s, SERIAL);
    let key = new_key(&s, "owner", "read,write", &[]);
    let lock = format!("/thermostat/{SERIAL}/lock");

    // hanle's body, word for word.
    let body = json!({"enabled": true, "pin": "1234", "minTemp": 18.0, "maxTemp": 24.0});
    let r = api(&s, "POST", &lock, &key, body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["object"], json!(format!("device.{SERIAL}")));
    let hash = expected_hash("1234", SERIAL);
    let device = device_value(&s);
    assert_eq!(device["temperature_lock"], json!(true));
    assert_eq!(device["temperature_lock_pin_hash"], json!(hash));
    assert_eq!(device["temperature_lock_low_temp"], json!(18.0));
    assert_eq!(device["temperature_lock_high_temp"], json!(24.0));
    let (chunk, doc) = next_push(&mut held);
    let pushed = doc["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["object_key"] == json!(format!("device.{SERIAL}")))
        .unwrap();
    assert_eq!(pushed["value"]["temperature_lock_pin_hash"], json!(hash));
    sim.apply_chunk(&chunk).unwrap();
    // The write was durable before it was answered: the journal holds the hash, not the PIN
    // (as a JSON string, the only way it could be stored), and no `pin` field.
    let files = files_under(s.dir.path());
    assert!(
        files.iter().any(|(_, text)| text.contains(&hash)),
        "the journal holds the hash"
    );
    for (file, text) in &files {
        assert!(!text.contains("\"1234\""), "the PIN is in {file}");
        assert!(!text.contains("\"pin\""), "a pin field is in {file}");
    }
    let status = api(
        &s,
        "GET",
        &format!("/thermostat/{SERIAL}/status"),
        &key,
        Value::Null,
    );
    assert_eq!(
        status.json()["state"][format!("device.{SERIAL}")]["value"]["temperature_lock_enabled"],
        json!(true)
    );

    assert!(!status.text().contains("\"1234\""));

    // A leading zero counts (which is why the PIN must be a string); the serial is the one the
    // thermostat is stored under, whichever id the request used.
    let r = api(
        &s,
        "POST",
        &lock,
        &key,
        json!({"enabled": true, "pin": "0042", "temp_min": 17, "temp_max": 23}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        device_value(&s)["temperature_lock_pin_hash"],
        json!(expected_hash("0042", SERIAL))
    );

    // Unlocking (hanle may send the PIN along) clears the hash.
    let r = api(
        &s,
        "POST",
        &lock,
        &key,
        json!({"enabled": false, "pin": "1234"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let device = device_value(&s);
    assert_eq!(device["temperature_lock"], json!(false));
    assert_eq!(device["temperature_lock_pin_hash"], json!(""));

    // Nor is either PIN anywhere once the server has stopped and written its snapshot.
    drop((sim, held));
    let dir = s.stop();
    let files = files_under(dir.path());
    assert!(!files.is_empty());
    for (file, text) in files {
        for pin in ["\"1234\"", "\"0042\"", "\"pin\""] {
            assert!(!text.contains(pin), "{pin} is in {file}");
        }
    }
}

#[test]
fn lock_temperatures_are_always_celsius() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let key = new_key(&s, "owner", "read,write", &[]);
    let r = api(
        &s,
        "POST",
        &format!("/thermostat/{SERIAL}/lock"),
        &key,
        json!({"enabled": true, "pin": "1234", "minTemp": 10, "maxTemp": 25, "scale": "F"}),
    );
    // The interface document: "temp_min and temp_max are always Celsius"; a scale is ignored.
    assert_eq!(r.status, 200, "{}", r.text());
    let device = device_value(&s);
    assert_eq!(device["temperature_lock_low_temp"], json!(10.0));
    assert_eq!(device["temperature_lock_high_temp"], json!(25.0));
}

#[test]
fn malformed_pins_are_refused_and_change_nothing() {
    let s = TestServer::start_with(|c| c.api_rate_limit_per_minute = 1000);
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let key = new_key(&s, "owner", "read,write", &[]);
    let lock = format!("/thermostat/{SERIAL}/lock");
    let pin_format = "pin must be a string of exactly 4 digits (\"0000\" to \"9999\")";
    let with_pin =
        |pin: Value| json!({"enabled": true, "pin": pin, "temp_min": 18, "temp_max": 24});
    let mut cases: Vec<(Value, &str)> = ["123", "12345", "12a4", "", " 1234", "１２３４"]
        .into_iter()
        .map(|pin| (with_pin(json!(pin)), pin_format))
        .collect();
    cases.extend([
        // A number has lost any leading zero: refused rather than guessed.
        (with_pin(json!(1234)), pin_format),
        (with_pin(json!(42)), pin_format),
        (with_pin(Value::Null), pin_format),
        (json!({"enabled": false, "pin": "12"}), pin_format),
        (
            json!({"enabled": true, "pin": "1234", "pin_hash": "kFRc/skLylZUKACup2bPzjQDUII=",
                   "temp_min": 18, "temp_max": 24}),
            "Send pin or pin_hash, not both",
        ),
        (
            json!({"enabled": true, "temp_min": 18, "temp_max": 24}),
            "Send pin (4 digits, as a string) or pin_hash (the standard Base64 of SHA-1 of the PIN followed by the serial)",
        ),
        (
            json!({"enabled": true, "pin": "1234", "minTemp": "18", "maxTemp": 24}),
            "temp_min and temp_max (or minTemp and maxTemp) must be numbers (°C)",
        ),
        (
            json!({"enabled": true, "pin": "1234", "minTemp": 24, "maxTemp": 18}),
            "temp_min must be less than temp_max (after clamping to the thermostat's range)",
        ),
    ]);
    // The key's first use is recorded (a store write); after that, refusals change nothing.
    assert_eq!(api(&s, "GET", "/devices", &key, Value::Null).status, 200);
    let before = store_bytes(s.dir.path());
    for (body, message) in cases {
        let r = api(&s, "POST", &lock, &key, body.clone());
        assert_eq!(
            (r.status, r.json()),
            (400, json!({ "error": message })),
            "{body}"
        );
    }
    assert!(
        store_bytes(s.dir.path()) == before,
        "a refused lock changed the store"
    );
    assert_eq!(device_value(&s).get("temperature_lock_pin_hash"), None);
}

/// A 4-digit PIN is 10,000 SHA-1s from its hash, so `/status` shows the hash only to a key
/// that may change the lock anyway (a write key of the owner or of a control share); a
/// read-only key and any key of a read share get the device bucket without it.
#[test]
fn the_pin_hash_is_shown_only_to_keys_that_may_change_the_lock() {
    use hearth::state::ShareAccess;
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let owner_write = new_key(&s, "owner", "read,write", &[]);
    let body = json!({"enabled": true, "pin": "1234", "minTemp": 18.0, "maxTemp": 24.0});
    let r = api(
        &s,
        "POST",
        &format!("/thermostat/{SERIAL}/lock"),
        &owner_write,
        body,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let hash = expected_hash("1234", SERIAL);
    for (user, access) in [
        ("guest", ShareAccess::Read),
        ("helper", ShareAccess::Control),
    ] {
        share(&s, SERIAL, user, access);
    }
    let cases = [
        ("the owner's write key", owner_write.clone(), true),
        (
            "the owner's read key",
            new_key(&s, "owner", "read", &[]),
            false,
        ),
        (
            "a read share's read key",
            new_key(&s, "guest", "read", &[]),
            false,
        ),
        (
            "a read share's write key",
            new_key(&s, "guest", "read,write", &[]),
            false,
        ),
        (
            "a control share's write key",
            new_key(&s, "helper", "read,write", &[]),
            true,
        ),
        (
            "a control share's read key",
            new_key(&s, "helper", "read", &[]),
            false,
        ),
    ];
    for (who, key, shown) in cases {
        let r = api(
            &s,
            "GET",
            &format!("/thermostat/{SERIAL}/status"),
            &key,
            Value::Null,
        );
        assert_eq!(r.status, 200, "{who}: {}", r.text());
        let device = &r.json()["state"][format!("device.{SERIAL}")]["value"];
        assert_eq!(device["temperature_lock_enabled"], json!(true), "{who}");
        assert_eq!(device["temperature_lock_low_temp"], json!(18.0), "{who}");
        let expected = if shown { json!(hash) } else { Value::Null };
        assert_eq!(device["temperature_lock_pin_hash"], expected, "{who}");
        if !shown {
            assert!(!r.text().contains(&hash), "{who}: nowhere else either");
        }
    }
    // The stored hash is unchanged: hiding it is only what a reader is shown.
    assert_eq!(device_value(&s)["temperature_lock_pin_hash"], json!(hash));
}
