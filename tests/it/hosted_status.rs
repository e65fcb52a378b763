//! The hosted status (`GET /api/v1/thermostat/{id}/status`) carries every field the interface
//! document lists for `shared`, `device`, `user` and `structure`, with the document's types, on
//! every kind of thermostat: heating only, heating and cooling, locked, and unclaimed (open
//! mode, and pairing mode). The fields are derived when read: nothing is stored or pushed.

use crate::common;

use common::hosted::{api, new_key};
use common::*;
use hearth::state::ShareAccess;
use hearth::thermostat::document::LISTED;
use serde_json::{Value, json};

const HEAT_ONLY: &str = "02AA01AC0000SIM2";
const LOCKED: &str = "02AA01AC0000SIM3";
const PIN_HASH: &str = "kFRc/skLylZUKACup2bPzjQDUII=";

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The status of `serial` as `key` reads it, after checking that its state has exactly the
/// buckets named (`user.*` and `structure.*` by these ids) and every listed field with its type.
fn status(s: &TestServer, key: &str, serial: &str, user: &str, structure: &str) -> Value {
    let r = api(
        s,
        "GET",
        &format!("/thermostat/{serial}/status"),
        key,
        Value::Null,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    let state = body["state"].as_object().unwrap();
    let mut keys: Vec<&str> = state.keys().map(String::as_str).collect();
    keys.retain(|k| !k.starts_with("schedule."));
    let (shared, device) = (format!("shared.{serial}"), format!("device.{serial}"));
    let (user, structure) = (format!("user.{user}"), format!("structure.{structure}"));
    assert_eq!(keys, [&shared, &device, &user, &structure], "{serial}");
    let buckets = [
        ("shared", &shared),
        ("device", &device),
        ("user", &user),
        ("structure", &structure),
    ];
    for (_, key) in buckets {
        let entry = &state[key.as_str()];
        assert!(entry["object_revision"].is_i64(), "{key}: {entry}");
        assert!(entry["object_timestamp"].is_i64(), "{key}: {entry}");
    }
    for (bucket, field, ty) in LISTED {
        let key = buckets.iter().find(|(b, _)| b == bucket).unwrap().1;
        let entry = &state[key.as_str()];
        assert_eq!(
            type_of(&entry["value"][field]),
            *ty,
            "{serial}: {bucket}.{field} in {entry}"
        );
    }
    body
}

fn value<'a>(status: &'a Value, key: &str) -> &'a Value {
    &status["state"][key]["value"]
}

#[test]
fn every_listed_field_is_there_with_its_type_on_every_kind_of_thermostat() {
    let s = TestServer::start();
    // Heating and cooling, claimed by alice.
    let (_sim, _events, mut held) = booted_and_held(&s, SERIAL);
    s.set_owner(SERIAL, "alice");
    // Heating only, and unclaimed: open mode gives it to the default user `owner`; it shows
    // its entry key, waiting to be claimed.
    let (mut heat_only, _heat_events) = thermostat(&s.origin(), HEAT_ONLY);
    heat_only.report("shared", "can_cool", json!(false));
    heat_only.boot().unwrap();
    heat_only.passphrase().unwrap();
    // Locked through the hosted API.
    let (_locked, _locked_events, _locked_held) = booted_and_held(&s, LOCKED);
    s.set_owner(LOCKED, "alice");
    let alice = new_key(&s, "alice", "read,write", &[]);
    let owner = new_key(&s, "owner", "read", &[]);
    let lock = json!({"enabled": true, "pin_hash": PIN_HASH, "temp_min": 18, "temp_max": 24});
    let r = api(
        &s,
        "POST",
        &format!("/thermostat/{LOCKED}/lock"),
        &alice,
        lock,
    );
    assert_eq!(r.status, 200, "{}", r.text());

    let both = status(&s, &alice, SERIAL, "alice", "alice");
    let shared = value(&both, &format!("shared.{SERIAL}"));
    assert_eq!(
        (&shared["can_heat"], &shared["can_cool"]),
        (&json!(true), &json!(true))
    );
    // The simulated thermostat has a fan, its timer stopped; leaf and location live in its
    // device bucket.
    assert_eq!(shared["fan_mode"], json!("auto"));
    assert_eq!(shared["leaf"], json!(false));
    assert_eq!(
        (&shared["postal_code"], &shared["country_code"]),
        (&json!("94304"), &json!("US"))
    );
    let device = value(&both, &format!("device.{SERIAL}"));
    assert_eq!(device["temperature_lock_enabled"], json!(false));
    assert_eq!(device["eco_mode_enabled"], json!(false));
    let user = value(&both, "user.alice");
    assert_eq!(
        (&user["name"], &user["email"]),
        (&json!("alice"), &json!(""))
    );
    let home = value(&both, "structure.alice");
    assert_eq!(home["name"], json!("Home"));
    assert_eq!(home["postal_code"], json!("94304"));
    assert_eq!(home["time_zone"], json!(""));
    // Derived-only buckets are shown with revision 0 and timestamp 0.
    assert_eq!(both["state"]["user.alice"]["object_revision"], json!(0));
    assert_eq!(both["state"]["user.alice"]["object_timestamp"], json!(0));

    let heat = status(&s, &owner, HEAT_ONLY, "owner", "default");
    let shared = value(&heat, &format!("shared.{HEAT_ONLY}"));
    assert_eq!(
        (&shared["can_heat"], &shared["can_cool"]),
        (&json!(true), &json!(false))
    );
    assert_eq!(value(&heat, "user.owner")["name"], json!("owner"));
    assert_eq!(value(&heat, "structure.default")["away"], json!(false));

    let locked = status(&s, &alice, LOCKED, "alice", "alice");
    let device = value(&locked, &format!("device.{LOCKED}"));
    assert_eq!(device["temperature_lock"], json!(true));
    assert_eq!(device["temperature_lock_enabled"], json!(true));

    // Stored buckets keep their revision and timestamp and gain no field; nothing was pushed:
    // the next push is a real change, and carries none of the derived fields.
    let stored = s.bucket(SERIAL, &format!("shared.{SERIAL}")).unwrap();
    let entry = &both["state"][format!("shared.{SERIAL}")];
    assert_eq!(entry["object_revision"], json!(stored.revision));
    assert_eq!(entry["object_timestamp"], json!(stored.timestamp));
    assert!(stored.value.get("fan_mode").is_none());
    assert!(s.bucket(SERIAL, "user.alice").is_none());
    let before = store_bytes(s.dir.path());
    status(&s, &alice, SERIAL, "alice", "alice");
    assert!(
        store_bytes(s.dir.path()) == before,
        "a status read changed the store"
    );
    let r = api(
        &s,
        "POST",
        &format!("/thermostat/{SERIAL}/mode"),
        &alice,
        json!({"mode": "cool"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let (_, doc) = next_push(&mut held);
    let objects = doc["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 1, "{doc}");
    assert_eq!(
        objects[0]["value"]["target_temperature_type"],
        json!("cool")
    );
    assert!(objects[0]["value"].get("fan_mode").is_none(), "{doc}");
}

#[test]
fn a_thermostat_claimed_before_it_uploads_has_every_field_too() {
    let s = TestServer::start_with(|c| c.require_device_pairing = true);
    // It asked for an entry key, so it is known, and alice claimed it before it uploaded
    // anything (until its claim nobody sees it, shares included); bob sees it through a share.
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.register().unwrap();
    let (code, _) = sim.passphrase().unwrap();
    let body = json!({"code": code, "userId": "alice"}).to_string();
    let r = call(s.control(), "POST", "/api/register", &body);
    assert_eq!(r.json()["success"], json!(true), "{}", r.text());
    let bob = new_key(&s, "bob", "read", &[]);
    hearth::accounts::share(s.app().state(), SERIAL, "bob", ShareAccess::Read, false).unwrap();

    let before = store_bytes(s.dir.path());
    let body = status(&s, &bob, SERIAL, "alice", "alice");
    let shared = &body["state"][format!("shared.{SERIAL}")];
    // Nothing stored: every entry is derived, with revision 0 and timestamp 0.
    assert_eq!(
        (&shared["object_revision"], &shared["object_timestamp"]),
        (&json!(0), &json!(0))
    );
    assert_eq!(shared["value"]["target_temperature_type"], json!("heat"));
    assert_eq!(shared["value"]["fan_mode"], json!("off"));
    assert!(s.bucket(SERIAL, &format!("shared.{SERIAL}")).is_none());
    // The key's first use is recorded; the derived buckets are not.
    let after: Vec<String> = store_bytes(s.dir.path())
        .into_iter()
        .filter(|f| !before.contains(f))
        .flat_map(|(_, bytes)| String::from_utf8(bytes))
        .collect();
    assert!(
        after.iter().all(|text| !text.contains("shared.")),
        "{after:?}"
    );
}
