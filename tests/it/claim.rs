//! Claiming a thermostat with its entry key (`POST /api/register`): the claim completes the
//! simulated thermostat's pairing; bad, used and foreign claims change nothing; unlinking.

use crate::common;

use std::time::Duration;

use common::*;
use hearth::http::client::ChunkStream;
use hearth::simulator::Event;
use hearth::util::clock::ManualClock;
use serde_json::{Value, json};

/// A pending thermostat's held subscribe (it lists nothing, so the server has nothing to say).
fn hold_pending(s: &TestServer, password: &str) -> ChunkStream {
    let auth = basic(SERIAL, password);
    let stream = ChunkStream::open(
        &url(s.device(), "/nest/transport/v7/subscribe"),
        "POST",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        br#"{"chunked":true,"objects":[]}"#,
        TIMEOUT,
        false,
    )
    .unwrap();
    assert_eq!(stream.status, 200);
    s.wait_held(SERIAL, 1);
    stream
}

fn register(s: &TestServer, code: &str, user: &str) -> hearth::http::client::ClientResponse {
    call(
        s.control(),
        "POST",
        "/api/register",
        &json!({"code": code, "userId": user}).to_string(),
    )
}

#[test]
fn a_claim_completes_the_thermostats_pairing() {
    let s = pairing();
    let (mut sim, events) = thermostat(&s.origin(), SERIAL);
    sim.register().unwrap();
    let (code, _expires) = sim.passphrase().unwrap();
    let mut held = hold_pending(&s, &sim.password());

    // As the dashboard shows it: XXX-XXXX, typed in lower case.
    let typed = format!("{}-{}", &code[..3], &code[3..]).to_lowercase();
    let r = register(&s, &typed, "homeassistant");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["success"], json!(true));

    // One chunk carries both buckets.
    let chunk = held.next_chunk().unwrap().expect("the claim is pushed");
    let text = String::from_utf8(chunk.clone()).unwrap();
    assert_wire_order(&text);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let objects = doc["objects"].as_array().unwrap();
    let user = objects
        .iter()
        .find(|o| o["object_key"] == json!("user.homeassistant"))
        .unwrap();
    assert_eq!(user["value"], json!({"name": "homeassistant"}));
    let home = objects
        .iter()
        .find(|o| o["object_key"] == json!("structure.homeassistant"))
        .unwrap();
    assert_eq!(home["value"], json!({"name": "Home", "devices": [SERIAL]}));

    sim.apply_chunk(&chunk).unwrap();
    expect_event(
        &events,
        "paired",
        |e| matches!(e, Event::Paired { user } if user == "homeassistant"),
    );
    assert_eq!(sim.paired_with(), Some("homeassistant"));

    let accounts = s.app().state().accounts(|a| a.clone());
    assert_eq!(accounts.owner_of(SERIAL).unwrap().user, "homeassistant");
    assert!(accounts.users.contains_key("homeassistant"));
    assert_eq!(
        accounts.entry_keys[&code].claimed_by.as_deref(),
        Some("homeassistant")
    );
    // Now paired, the thermostat's writes are stored (applying the chunk uploaded its state).
    assert!(s.bucket(SERIAL, &format!("device.{SERIAL}")).is_some());
    let list = get(s.control(), "/api/registered-devices?userId=homeassistant").json();
    assert_eq!(list[0]["serial"], json!(SERIAL));

    // The same code again: refused, nothing changes.
    let before = store_bytes(s.dir.path());
    let r = register(&s, &code, "someone");
    assert_eq!(
        (r.status, r.json()),
        (
            400,
            json!({"success": false, "message": "Invalid, expired, or already claimed entry key"})
        )
    );
    assert_eq!(store_bytes(s.dir.path()), before);
}

#[test]
fn a_thermostat_of_another_user_must_be_unlinked_first() {
    let s = pairing();
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.register().unwrap();
    s.set_owner(SERIAL, "alice");
    let (code, _) = sim.passphrase().unwrap();
    let before = store_bytes(s.dir.path());
    let r = register(&s, &code, "bob");
    assert_eq!(r.status, 409);
    assert_eq!(
        r.json(),
        json!({"success": false, "message": format!("Device {SERIAL} is linked to user alice; that user must unlink it before it can be claimed")})
    );
    assert_eq!(store_bytes(s.dir.path()), before, "nothing changed");
    assert!(!s.app().state().accounts(|a| a.users.contains_key("bob")));

    // Alice unlinks it; now Bob's claim goes through.
    let r = call(
        s.control(),
        "DELETE",
        &format!("/api/registered-devices/{SERIAL}?userId=alice"),
        "",
    );
    assert_eq!(
        r.json(),
        json!({"success": true, "message": format!("Device {SERIAL} deleted")})
    );
    let r = register(&s, &code, "bob");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        s.app()
            .state()
            .accounts(|a| a.owner_of(SERIAL).unwrap().user.clone()),
        "bob"
    );
}

#[test]
fn a_claim_moves_a_thermostat_away_from_the_default_owner() {
    let s = TestServer::start();
    let (sim, _events, _held) = booted_and_held(&s, SERIAL);
    s.set_owner(SERIAL, hearth::state::DEFAULT_USER);
    let (code, _) = sim.passphrase().unwrap();
    let r = register(&s, &code, "carol");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        s.app()
            .state()
            .accounts(|a| a.owner_of(SERIAL).unwrap().user.clone()),
        "carol"
    );
}

#[test]
fn an_expired_code_is_refused() {
    const OTHER: &str = "02AA01AC0000SIM2";
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.require_device_pairing = true;
        c.entry_key_ttl_secs = 60;
        c.clock = time.clock();
    });
    // Two thermostats get their codes at the same moment, so both expire together.
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.register().unwrap();
    let (code, expires) = sim.passphrase().unwrap();
    assert_eq!(expires, time.now_ms() + 60_000);
    let (mut other, _other_events) = thermostat(&s.origin(), OTHER);
    other.register().unwrap();
    let (other_code, _) = other.passphrase().unwrap();
    // A millisecond before it expires a code is still good...
    time.advance(Duration::from_millis(59_999));
    assert_eq!(register(&s, &other_code, "erin").status, 200);
    // ...and from then on it is not.
    time.advance(Duration::from_millis(1));
    let before = store_bytes(s.dir.path());
    let r = register(&s, &code, "dave");
    assert_eq!(
        (r.status, r.json()),
        (
            400,
            json!({"success": false, "message": "Invalid, expired, or already claimed entry key"})
        )
    );
    assert!(s.app().state().accounts(|a| a.owner_of(SERIAL).is_none()));
    assert!(
        store_bytes(s.dir.path()) == before,
        "a refused claim changed the store"
    );
    // `user_` alone would name an empty structure.
    let r = register(&s, &code, "user_");
    assert_eq!(r.status, 400);
    assert!(store_bytes(s.dir.path()) == before);
}

#[test]
fn ensure_user_creates_a_user_once() {
    let s = TestServer::start();
    let body = json!({"userId": "homeassistant", "email": "ha@local"}).to_string();
    let r = call(s.control(), "POST", "/api/ensure-user", &body);
    assert_eq!(r.json(), json!({"success": true, "created": true}));
    let r = call(s.control(), "POST", "/api/ensure-user", &body);
    assert_eq!(r.json(), json!({"success": true, "created": false}));
    let before = store_bytes(s.dir.path());
    let r = call(s.control(), "POST", "/api/ensure-user", "{}");
    assert_eq!(
        (r.status, r.json()),
        (
            400,
            json!({"success": false, "message": "Missing required field: userId"})
        )
    );
    assert_eq!(store_bytes(s.dir.path()), before);
}

#[test]
fn commands_wait_for_a_claim_in_pairing_mode() {
    let s = pairing();
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.register().unwrap();
    let (code, _) = sim.passphrase().unwrap();
    let before = store_bytes(s.dir.path());
    let r = command(s.control(), SERIAL, "set_temperature", json!(21));
    assert_eq!(
        (r.status, r.json()),
        (
            409,
            json!({"success": false, "message": format!("Device {SERIAL} is not claimed yet: pairing is required, so claim it with its entry code first")})
        )
    );
    assert!(
        store_bytes(s.dir.path()) == before,
        "a refused command changed the store"
    );
    assert_eq!(register(&s, &code, "alice").status, 200);
    assert_eq!(
        command(s.control(), SERIAL, "set_temperature", json!(21)).status,
        200
    );
}
