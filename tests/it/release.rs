//! Letting a thermostat go: the owner's hosted DELETE, the control API's `DELETE /api/device`
//! and `DELETE /api/registered-devices/{serial}` release it. A released thermostat is nobody's
//! (unlisted, commands refused) but keeps operating (its writes are stored), and waits in
//! `GET /api/waiting` until it is claimed with a new entry key or adopted (`POST /api/adopt`).
//! The release survives restarts and snapshots. tests/it/removal.rs shows it coming back as it
//! was.

use crate::common;

use std::time::Duration;

use common::hosted::{api, hosted_serials, new_key};
use common::*;
use hearth::http::client::{self, ClientResponse};
use hearth::state::ShareAccess;
use hearth::util::clock::{ManualClock, iso8601_ms};
use serde_json::{Value, json};

const OTHER: &str = "02AA01AC0000SIM2";

fn share_with(s: &TestServer, user: &str) {
    hearth::accounts::add_user(s.app().state(), user).unwrap();
    hearth::accounts::share(s.app().state(), SERIAL, user, ShareAccess::Control, true).unwrap();
}

/// The serials control `/api/devices` lists.
fn control_list(s: &TestServer) -> Vec<Value> {
    get(s.control(), "/api/devices").json()["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["serial"].clone())
        .collect()
}

/// `SERIAL` deleted through the hosted API with `key`.
fn hosted_delete(s: &TestServer, key: &str) -> ClientResponse {
    api(
        s,
        "DELETE",
        &format!("/thermostat/{SERIAL}"),
        key,
        Value::Null,
    )
}

fn waiting(s: &TestServer) -> Value {
    let r = get(s.control(), "/api/waiting");
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn adopt(s: &TestServer, body: &str) -> ClientResponse {
    call(s.control(), "POST", "/api/adopt", body)
}

fn register(s: &TestServer, code: &str, user: &str) -> ClientResponse {
    let body = json!({"code": code, "userId": user}).to_string();
    call(s.control(), "POST", "/api/register", &body)
}

/// The room temperature as stored (with pairing required `/status` shows a released
/// thermostat to nobody).
fn current_temperature(s: &TestServer) -> Value {
    s.bucket(SERIAL, &format!("shared.{SERIAL}"))
        .and_then(|b| b.value.to_map().get("current_temperature").cloned())
        .unwrap_or(Value::Null)
}

fn released(s: &TestServer) -> bool {
    s.app().state().accounts(|a| a.is_released(SERIAL))
}

fn not_claimed() -> Value {
    json!({"success": false, "message": format!("Device {SERIAL} is not claimed yet: pairing is required, so claim it with its entry code first")})
}

#[test]
fn the_owners_delete_in_open_mode_releases_the_thermostat_until_it_is_claimed() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| c.clock = time.clock());
    let (mut sim, _events, _held) = booted_and_held(&s, SERIAL);
    let owner = new_key(&s, "owner", "read,write", &[]);
    share_with(&s, "bob");
    let bob = new_key(&s, "bob", "read,write", &[]);
    // Listed everywhere, and a PUT from it is stored: what the checks below would see.
    assert_eq!(hosted_serials(&s, &owner), [json!(SERIAL)]);
    assert_eq!(hosted_serials(&s, &bob), [json!(SERIAL)]);
    assert_eq!(control_list(&s), [json!(SERIAL)]);
    assert_eq!(waiting(&s), json!({"devices": []}));
    sim.report("shared", "current_temperature", json!(19.5));
    sim.report("shared", "label", json!("Hallway"));
    sim.put().unwrap();
    assert_eq!(current_temperature(&s), json!(19.5));

    let r = hosted_delete(&s, &owner);
    assert_eq!(
        (r.status, r.json()),
        (
            200,
            json!({"success": true, "message": "Device deleted successfully"})
        )
    );
    assert!(hosted_serials(&s, &owner).is_empty());
    assert!(hosted_serials(&s, &bob).is_empty(), "its shares ended");
    assert!(s.app().state().accounts(|a| a.shares_of(SERIAL).is_none()));
    assert!(released(&s));
    assert!(s.bucket(SERIAL, &format!("shared.{SERIAL}")).is_some());

    // It keeps operating: its next PUT is stored (its last_seen moves to the PUT's time), but
    // nobody sees it and nobody adopts it.
    time.advance(Duration::from_secs(5));
    sim.report("shared", "current_temperature", json!(18.0));
    sim.put().unwrap();
    assert_eq!(
        waiting(&s),
        json!({"devices": [{"serial": SERIAL, "name": "Hallway", "is_available": true,
                            "last_seen": iso8601_ms(time.now_ms()), "released": true}]})
    );
    assert_eq!(current_temperature(&s), json!(18.0));
    assert!(hosted_serials(&s, &owner).is_empty());
    assert!(hosted_serials(&s, &bob).is_empty());
    assert!(control_list(&s).is_empty());
    drop(sim.open_subscribe().unwrap());

    // Commands: the same 409 as for an unclaimed thermostat in pairing mode.
    let before = store_bytes(s.dir.path());
    let r = command(s.control(), SERIAL, "set_temperature", json!(21));
    assert_eq!((r.status, r.json()), (409, not_claimed()));
    assert!(store_bytes(s.dir.path()) == before);

    // A new entry key from the thermostat, claimed: the claimer's, no longer released, and
    // its writes are stored again.
    let (code, _) = sim.passphrase().unwrap();
    let r = register(&s, &code, "alice");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(!released(&s));
    let alice = new_key(&s, "alice", "read,write", &[]);
    assert_eq!(hosted_serials(&s, &alice), [json!(SERIAL)]);
    assert!(hosted_serials(&s, &owner).is_empty());
    assert_eq!(waiting(&s), json!({"devices": []}));
    let devices = get(s.control(), "/api/devices").json();
    assert_eq!(devices["devices"][0]["owner"], json!("alice"));
    assert_eq!(current_temperature(&s), json!(18.0));
    sim.report("shared", "current_temperature", json!(18.5));
    sim.put().unwrap();
    assert_eq!(current_temperature(&s), json!(18.5));
}

#[test]
fn adopting_gives_a_released_thermostat_back_and_refusals_change_nothing() {
    let s = TestServer::start();
    let (mut sim, _events, _held) = booted_and_held(&s, SERIAL);
    let (_sim2, _events2, _held2) = booted_and_held(&s, OTHER);
    let owner = new_key(&s, "owner", "read,write", &[]);
    let r = hosted_delete(&s, &owner);
    assert_eq!(r.status, 200, "{}", r.text());
    let listed = waiting(&s);
    assert_eq!(listed["devices"][0]["serial"], json!(SERIAL));
    assert_eq!(listed["devices"].as_array().unwrap().len(), 1);

    let before = store_bytes(s.dir.path());
    let unknown = json!({"serial": "02AA01AC0000NONE"}).to_string();
    let listed_one = json!({"serial": OTHER}).to_string();
    for (body, status, answer) in [
        ("{nope", 400, json!({"error": "Invalid JSON"})),
        (
            "[]",
            400,
            json!({"error": "Request body must be a JSON object"}),
        ),
        ("{}", 400, json!({"error": "Serial required"})),
        (
            r#"{"serial": "02AA-01AC0000SIM1"}"#,
            400,
            json!({"error": "Invalid serial: expected 10 to 64 letters and digits"}),
        ),
        (unknown.as_str(), 404, json!({"error": "Device not found"})),
        (
            listed_one.as_str(),
            409,
            json!({"error": format!("Device {OTHER} is not waiting to be added: it belongs to owner")}),
        ),
    ] {
        let r = adopt(&s, body);
        assert_eq!((r.status, r.json()), (status, answer), "{body}");
        assert!(
            store_bytes(s.dir.path()) == before,
            "{body} changed the store"
        );
        assert_eq!(waiting(&s), listed, "{body}");
    }
    assert_eq!(control_list(&s), [json!(OTHER)]);

    let r = adopt(&s, &json!({"serial": SERIAL.to_lowercase()}).to_string());
    assert_eq!(
        (r.status, r.json()),
        (
            200,
            json!({"success": true, "message": format!("Device {SERIAL} added")})
        )
    );
    assert!(
        store_bytes(s.dir.path()) != before,
        "an adoption is journaled"
    );
    assert!(!released(&s));
    assert_eq!(waiting(&s), json!({"devices": []}));
    assert_eq!(control_list(&s), [json!(SERIAL), json!(OTHER)]);
    assert_eq!(hosted_serials(&s, &owner), [json!(SERIAL), json!(OTHER)]);
    sim.report("shared", "current_temperature", json!(17.5));
    sim.put().unwrap();
    assert_eq!(current_temperature(&s), json!(17.5));
    assert_eq!(
        command(s.control(), SERIAL, "set_temperature", json!(21)).status,
        200
    );
    // Listed now, so not waiting any more.
    let r = adopt(&s, &json!({"serial": SERIAL}).to_string());
    assert_eq!(r.status, 409, "{}", r.text());
}

#[test]
fn in_pairing_mode_waiting_lists_unclaimed_thermostats_and_adopting_is_refused() {
    let s = TestServer::start_with(|c| c.require_device_pairing = true);
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.register().unwrap();
    let (code, _) = sim.passphrase().unwrap();
    assert_eq!(
        waiting(&s),
        json!({"devices": [{"serial": SERIAL, "name": null, "is_available": false,
                            "last_seen": null, "released": false}]})
    );
    assert!(control_list(&s).is_empty());

    let before = store_bytes(s.dir.path());
    let r = adopt(&s, &json!({"serial": SERIAL}).to_string());
    assert_eq!(
        (r.status, r.json()),
        (
            409,
            json!({"error": format!("Device {SERIAL} cannot be added without its entry code: pairing is required, so claim it with the entry code shown on the thermostat")})
        )
    );
    let r = adopt(&s, &json!({"serial": OTHER}).to_string());
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(store_bytes(s.dir.path()) == before);

    assert_eq!(register(&s, &code, "alice").status, 200);
    assert_eq!(waiting(&s), json!({"devices": []}));
    assert_eq!(control_list(&s), [json!(SERIAL)]);
}

#[test]
fn deleting_a_thermostat_in_open_mode_releases_it_and_it_waits_while_it_keeps_operating() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| c.clock = time.clock());
    let (mut sim, _events, held) = booted_and_held(&s, SERIAL);
    drop(held);
    share_with(&s, "bob");
    assert_eq!(control_list(&s), [json!(SERIAL)]);

    let r = remove_device(s.control(), SERIAL);
    assert_eq!(
        (r.status, r.json()),
        (
            200,
            json!({"success": true, "serial": SERIAL, "objects_deleted": 0})
        )
    );
    assert!(s.app().state().device_exists(SERIAL));
    let accounts = s.app().state().accounts(|a| a.clone());
    assert!(accounts.is_released(SERIAL));
    assert!(accounts.shares_of(SERIAL).is_none());
    assert!(accounts.owner_of(SERIAL).is_none());
    assert_eq!(waiting(&s)["devices"][0]["released"], json!(true));
    assert!(control_list(&s).is_empty());

    // Its subscribes are served and what it sends is stored (last_seen is its time).
    time.advance(Duration::from_secs(5));
    drop(sim.open_subscribe().unwrap());
    sim.report("shared", "current_temperature", json!(16.5));
    sim.put().unwrap();
    let row = waiting(&s)["devices"][0].clone();
    assert_eq!(row["serial"], json!(SERIAL));
    assert_eq!(row["last_seen"], json!(iso8601_ms(time.now_ms())));
    assert_eq!(current_temperature(&s), json!(16.5));
    assert!(control_list(&s).is_empty());

    // Adopted, it is listed at once with what it reported, without booting again.
    assert_eq!(
        adopt(&s, &json!({"serial": SERIAL}).to_string()).status,
        200
    );
    assert_eq!(control_list(&s), [json!(SERIAL)]);
    assert_eq!(waiting(&s), json!({"devices": []}));
    let listed = get(s.control(), "/api/devices").json()["devices"][0].clone();
    assert_eq!(listed["current_temperature"], json!(16.5));
    assert_eq!(listed["reported"], json!(true));
}

#[test]
fn deleting_a_thermostat_in_pairing_mode_drops_its_owner_and_shares_and_it_keeps_operating() {
    let s = TestServer::start_with(|c| c.require_device_pairing = true);
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.register().unwrap();
    let (code, _) = sim.passphrase().unwrap();
    assert_eq!(register(&s, &code, "alice").status, 200);
    sim.boot().unwrap();
    hearth::accounts::add_user(s.app().state(), "bob").unwrap();
    hearth::accounts::share(s.app().state(), SERIAL, "bob", ShareAccess::Read, false).unwrap();

    let r = remove_device(s.control(), SERIAL);
    assert_eq!(r.status, 200, "{}", r.text());
    let accounts = s.app().state().accounts(|a| a.clone());
    assert!(accounts.owner_of(SERIAL).is_none());
    assert!(accounts.shares_of(SERIAL).is_none());
    // Recorded as released: it was someone's, so it keeps operating though it is unclaimed.
    assert!(accounts.is_released(SERIAL));
    let r = get(s.control(), "/api/registered-devices");
    assert_eq!(r.json(), json!([]));
    assert!(control_list(&s).is_empty());
    drop(sim.open_subscribe().unwrap());
    sim.report("shared", "current_temperature", json!(17.0));
    sim.put().unwrap();
    assert_eq!(current_temperature(&s), json!(17.0));
    // Nobody controls it until it is claimed again.
    let r = command(s.control(), SERIAL, "set_temperature", json!(21));
    assert_eq!((r.status, r.json()), (409, not_claimed()));
}

#[test]
fn unlinking_a_claimed_thermostat_through_the_control_api_releases_it_in_open_mode() {
    let s = TestServer::start();
    let (sim, _events, _held) = booted_and_held(&s, SERIAL);
    let (code, _) = sim.passphrase().unwrap();
    assert_eq!(register(&s, &code, "alice").status, 200);
    let owner = new_key(&s, "owner", "read,write", &[]);
    // The default user would see it if it fell back to them: it sees OTHER, unclaimed.
    let (_sim2, _events2, _held2) = booted_and_held(&s, OTHER);
    assert_eq!(hosted_serials(&s, &owner), [json!(OTHER)]);

    let r = call(
        s.control(),
        "DELETE",
        &format!("/api/registered-devices/{SERIAL}?userId=alice"),
        "",
    );
    assert_eq!(
        (r.status, r.json()),
        (
            200,
            json!({"success": true, "message": format!("Device {SERIAL} deleted")})
        )
    );
    assert!(released(&s));
    assert_eq!(hosted_serials(&s, &owner), [json!(OTHER)]);
    assert_eq!(control_list(&s), [json!(OTHER)]);
    assert_eq!(waiting(&s)["devices"][0]["serial"], json!(SERIAL));
}

#[test]
fn a_release_survives_restarts_and_snapshots() {
    let s = TestServer::start();
    {
        let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    }
    let owner = new_key(&s, "owner", "read,write", &[]);
    let r = hosted_delete(&s, &owner);
    assert_eq!(r.status, 200, "{}", r.text());
    let dir = s.stop();

    // Replayed from the journal.
    let again = restart(&dir);
    assert!(again.app().state().accounts(|a| a.is_released(SERIAL)));
    let listed = get(again.control_addr(), "/api/waiting").json();
    assert_eq!(listed["devices"][0]["serial"], json!(SERIAL));
    assert_eq!(listed["devices"][0]["released"], json!(true));
    assert_eq!(
        get(again.control_addr(), "/api/devices").json()["total"],
        json!(0)
    );
    // Read from the snapshot, the journal it covers dropped.
    again.app().state().snapshot().unwrap();
    again.shutdown();
    let snapshot = std::fs::read_to_string(dir.path().join("state.json")).unwrap();
    assert!(snapshot.contains("\"released\""), "{snapshot}");
    let again = restart(&dir);
    assert!(again.app().state().accounts(|a| a.is_released(SERIAL)));

    // And an adoption is as durable.
    let r = call(
        again.control_addr(),
        "POST",
        "/api/adopt",
        &json!({"serial": SERIAL}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    again.shutdown();
    let again = restart(&dir);
    assert!(!again.app().state().accounts(|a| a.is_released(SERIAL)));
    assert_eq!(
        get(again.control_addr(), "/api/devices").json()["total"],
        json!(1)
    );
    again.shutdown();
}

#[test]
fn waiting_and_adopt_want_the_household_key_when_the_control_api_requires_one() {
    let s = TestServer::start_with(|c| c.control_require_key = true);
    let read = new_key(&s, "owner", "read", &[]);
    let with = |method: &str, target: &str, key: Option<&str>| {
        let auth = key.map(|k| format!("Bearer {k}"));
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("Authorization", a.as_str())).collect();
        let body = json!({"serial": SERIAL}).to_string();
        client::request(
            &url(s.control(), target),
            method,
            &headers,
            body.as_bytes(),
            TIMEOUT,
        )
        .unwrap()
    };
    assert_eq!(
        (
            with("GET", "/api/waiting", None).status,
            with("GET", "/api/waiting", None).json()
        ),
        (401, json!({"error": "Unauthorized"}))
    );
    assert_eq!(with("GET", "/api/waiting", Some(&read)).status, 200);
    assert_eq!(with("POST", "/api/adopt", None).status, 401);
    let r = with("POST", "/api/adopt", Some(&read));
    assert_eq!(
        (r.status, r.json()),
        (
            403,
            json!({"error": "Access denied: this API key lacks the write scope"})
        )
    );
}
