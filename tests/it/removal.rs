//! Nothing goes dark: a removed thermostat (the owner's hosted `DELETE`, the control API's
//! `DELETE /api/device` and `DELETE /api/registered-devices/{serial}`) is unlisted and its shares
//! end, but it keeps operating: its device paths keep working (no 401) and what it sends is
//! stored, so adding it (open mode) or claiming it with a new entry key (pairing mode) brings
//! it back at once with its name, temperature, mode and target, without a reboot. Meanwhile, in
//! pairing mode, nobody can see or control it. And `/api/devices` says whether a thermostat
//! has `reported` its state yet.

use crate::common;

use common::hosted::{api, hosted_serials, new_key};
use common::*;
use hearth::state::ShareAccess;
use serde_json::{Value, json};

const NEVER_CLAIMED: &str = "02AA01AC0000SIM2";

/// What a card shows, as `/api/devices` lists it.
fn listed(s: &TestServer) -> Vec<Value> {
    let r = get(s.control(), "/api/devices");
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["devices"].as_array().unwrap().clone()
}

fn card(d: &Value) -> Value {
    json!({
        "serial": d["serial"],
        "name": d["name"],
        "current_temperature": d["current_temperature"],
        "mode": d["mode"],
        "target_temperature": d["target_temperature"],
        "reported": d["reported"],
    })
}

/// The thermostat reports a name, a mode, a target and the room's temperature.
fn report(sim: &mut hearth::simulator::Thermostat, temperature: f64, target: f64) {
    sim.report("shared", "name", json!("Hallway"));
    sim.report("shared", "target_temperature_type", json!("heat"));
    sim.report("shared", "target_temperature", json!(target));
    sim.report("shared", "current_temperature", json!(temperature));
    sim.put().unwrap();
}

fn shown(temperature: f64, target: f64) -> Value {
    json!({"serial": SERIAL, "name": "Hallway", "current_temperature": temperature,
           "mode": "heat", "target_temperature": target, "reported": true})
}

/// A command from the control API reaches the thermostat's held subscribe.
fn command_reaches(s: &TestServer, held: &mut hearth::simulator::Held, target: f64) {
    let r = command(s.control(), SERIAL, "set_temperature", json!(target));
    assert_eq!(r.status, 200, "{}", r.text());
    let (_, doc) = next_push(held);
    let shared = object(&doc, &format!("shared.{SERIAL}"));
    assert_eq!(
        shared["value"]["target_temperature"],
        json!(target),
        "{doc}"
    );
}

/// alice claims the thermostat showing `code` (`POST /api/register`).
fn claim(s: &TestServer, code: &str) {
    let body = json!({"code": code, "userId": "alice"}).to_string();
    let r = call(s.control(), "POST", "/api/register", &body);
    assert_eq!(r.json()["success"], json!(true), "{}", r.text());
}

/// Its owner unlinks `SERIAL` (`DELETE /api/registered-devices/{serial}`): it is released.
fn unlink(s: &TestServer) {
    let r = call(
        s.control(),
        "DELETE",
        &format!("/api/registered-devices/{SERIAL}"),
        "",
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

/// The control port's reads of one thermostat, each ending in `?serial=`.
const SEEN_PATHS: [&str; 4] = [
    "/status?serial=",
    "/api/history?serial=",
    "/api/energy?serial=",
    "/api/schedule?serial=",
];

/// Each of [`SEEN_PATHS`] answers for `serial` exactly as for a serial never seen.
fn assert_unseen(s: &TestServer, serial: &str) {
    let unknown = "02AA01AC0000NONE";
    assert!(!s.app().state().device_exists(unknown));
    for path in SEEN_PATHS {
        let r = get(s.control(), &format!("{path}{serial}"));
        let none = get(s.control(), &format!("{path}{unknown}"));
        assert_eq!(
            (r.status, r.text()),
            (404, json!({"error": "Device not found"}).to_string()),
            "{path}"
        );
        assert_eq!((none.status, none.text()), (r.status, r.text()), "{path}");
    }
}

fn not_claimed() -> Value {
    json!({"success": false, "message": format!("Device {SERIAL} is not claimed yet: pairing is required, so claim it with its entry code first")})
}

#[test]
fn removed_by_its_owner_it_keeps_operating_and_add_brings_it_back_as_it_is() {
    let s = TestServer::start();
    let (mut sim, _events, held) = booted_and_held(&s, SERIAL);
    let owner = new_key(&s, "owner", "read,write", &[]);
    hearth::accounts::add_user(s.app().state(), "bob").unwrap();
    hearth::accounts::share(s.app().state(), SERIAL, "bob", ShareAccess::Control, true).unwrap();
    let bob = new_key(&s, "bob", "read,write", &[]);
    report(&mut sim, 19.5, 21.5);
    assert_eq!(hosted_serials(&s, &bob), [json!(SERIAL)]);

    let r = api(
        &s,
        "DELETE",
        &format!("/thermostat/{SERIAL}"),
        &owner,
        Value::Null,
    );
    assert_eq!(
        (r.status, r.json()),
        (
            200,
            json!({"success": true, "message": "Device deleted successfully"})
        )
    );
    drop(held);
    assert!(listed(&s).is_empty());
    assert!(hosted_serials(&s, &owner).is_empty());
    assert!(hosted_serials(&s, &bob).is_empty());

    // It keeps operating: its subscribes are held and its uploads stored (no 401). The dial
    // turned and the room cooled while it was removed.
    let held = sim.open_subscribe().unwrap();
    s.wait_held(SERIAL, 1);
    drop(held);
    report(&mut sim, 18.0, 22.0);
    let status = get(s.control(), &format!("/status?serial={SERIAL}")).json();
    assert_eq!(status["current_temperature"], json!(18.0));
    assert!(listed(&s).is_empty(), "still unlisted");
    let waiting = get(s.control(), "/api/waiting").json();
    assert_eq!(waiting["devices"][0]["name"], json!("Hallway"));

    // Add: listed at once with its name, temperature, mode and target, and it takes commands
    // on the subscribe it holds, without booting again. Its shares stay gone.
    let mut held = sim.open_subscribe().unwrap();
    s.wait_held(SERIAL, 1);
    let r = call(
        s.control(),
        "POST",
        "/api/adopt",
        &json!({"serial": SERIAL}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let devices = listed(&s);
    assert_eq!(devices.len(), 1);
    assert_eq!(card(&devices[0]), shown(18.0, 22.0));
    assert_eq!(hosted_serials(&s, &owner), [json!(SERIAL)]);
    assert!(hosted_serials(&s, &bob).is_empty());
    command_reaches(&s, &mut held, 20.5);
}

#[test]
fn in_pairing_mode_a_removed_thermostat_keeps_operating_unseen_until_claimed_again() {
    let s = TestServer::start_with(|c| c.require_device_pairing = true);
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.register().unwrap();
    claim(&s, &sim.passphrase().unwrap().0);
    sim.boot().unwrap();
    report(&mut sim, 19.5, 21.5);
    let alice = new_key(&s, "alice", "read,write", &[]);
    assert_eq!(hosted_serials(&s, &alice), [json!(SERIAL)]);

    unlink(&s);

    // It keeps operating...
    report(&mut sim, 18.0, 22.0);
    let held = sim.open_subscribe().unwrap();
    s.wait_held(SERIAL, 1);
    drop(held);
    // ...and nobody sees or controls it: not its last owner, not the control API's list.
    assert!(listed(&s).is_empty());
    assert!(hosted_serials(&s, &alice).is_empty());
    let r = api(
        &s,
        "GET",
        &format!("/thermostat/{SERIAL}/status"),
        &alice,
        Value::Null,
    );
    assert_eq!(r.status, 404, "{}", r.text());
    let r = api(
        &s,
        "POST",
        &format!("/thermostat/{SERIAL}/temperature"),
        &alice,
        json!({"value": 25, "mode": "heat"}),
    );
    assert_eq!(r.status, 404, "{}", r.text());
    let before = store_bytes(s.dir.path());
    let r = command(s.control(), SERIAL, "set_temperature", json!(25));
    assert_eq!((r.status, r.json()), (409, not_claimed()));
    let r = call(
        s.control(),
        "POST",
        "/api/adopt",
        &json!({"serial": SERIAL}).to_string(),
    );
    assert_eq!(r.status, 409, "{}", r.text());
    // The control port answers for it as for a serial it has never seen: no status (its live
    // values), no history, no schedule.
    assert_unseen(&s, SERIAL);
    assert!(
        store_bytes(s.dir.path()) == before,
        "refusals change nothing"
    );

    // A thermostat that was never anyone's is still refused until it is claimed.
    let (mut stranger, _events) = thermostat(&s.origin(), NEVER_CLAIMED);
    stranger.register().unwrap();
    let refused = stranger.put().unwrap_err().to_string();
    assert!(refused.contains("401"), "{refused}");
    assert!(!s.app().state().device_exists(NEVER_CLAIMED));
    // Once it asks for an entry key the server knows it (its pairing dialog), and still
    // shows it to nobody.
    stranger.passphrase().unwrap();
    assert!(s.app().state().device_exists(NEVER_CLAIMED));
    assert_unseen(&s, NEVER_CLAIMED);

    // Claimed again with a new entry key: back at once, as it is, and its held subscribe
    // carries commands.
    let mut held = sim.open_subscribe().unwrap();
    s.wait_held(SERIAL, 1);
    claim(&s, &sim.passphrase().unwrap().0);
    let devices = listed(&s);
    assert_eq!(devices.len(), 1);
    assert_eq!(card(&devices[0]), shown(18.0, 22.0));
    assert_eq!(hosted_serials(&s, &alice), [json!(SERIAL)]);
    for path in SEEN_PATHS {
        let r = get(s.control(), &format!("{path}{SERIAL}"));
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }
    let status = get(s.control(), &format!("/status?serial={SERIAL}")).json();
    assert_eq!(status["current_temperature"], json!(18.0));
    // The claim's push (the owner's buckets) comes first.
    let (bytes, doc) = next_push(&mut held);
    assert!(doc.to_string().contains("user.alice"), "{doc}");
    sim.apply_chunk(&bytes).unwrap();
    drop(held);
    let mut held = sim.open_subscribe().unwrap();
    s.wait_held(SERIAL, 1);
    command_reaches(&s, &mut held, 20.5);
}

/// With pairing required, the event stream carries nothing of a thermostat nobody owns (its
/// uploads are stored meanwhile), with or without `?serial=`; claimed again, its events flow.
#[test]
fn in_pairing_mode_the_event_stream_leaves_out_a_removed_thermostat() {
    let s = TestServer::start_with(|c| c.require_device_pairing = true);
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.register().unwrap();
    claim(&s, &sim.passphrase().unwrap().0);
    sim.boot().unwrap();
    // Another thermostat, alice's, whose events show the stream is live.
    s.set_owner(NEVER_CLAIMED, "alice");
    let (mut other, _other_events) = thermostat(&s.origin(), NEVER_CLAIMED);
    other.boot().unwrap();
    unlink(&s);

    let mut all = open_events(s.control(), "/api/events");
    let mut only = open_events(s.control(), &format!("/api/events?serial={SERIAL}"));
    for stream in [&mut all, &mut only] {
        assert_eq!(stream.next_chunk().unwrap().unwrap(), b": connected\n\n");
    }
    // The removed one reports (stored: it keeps operating), then the other one does: the
    // stream's first event is the other one's, so the first was left out, not late.
    report(&mut sim, 17.5, 21.0);
    let shared = format!("shared.{SERIAL}");
    let stored = s.bucket(SERIAL, &shared).unwrap();
    assert_eq!(stored.value.to_map()["current_temperature"], json!(17.5));
    other.report("shared", "current_temperature", json!(23.0));
    other.put().unwrap();
    let e = next_event(&mut all);
    assert_eq!(e["serial"], json!(NEVER_CLAIMED), "{e}");
    assert!(
        nothing_arrived(&mut only),
        "an event of the removed thermostat went out"
    );

    // Claimed again: its events go out, from the claim's push on.
    claim(&s, &sim.passphrase().unwrap().0);
    for stream in [&mut all, &mut only] {
        let e = next_event(stream);
        assert_eq!(
            (e["serial"].clone(), e["origin"].clone()),
            (json!(SERIAL), json!("server")),
            "{e}"
        );
        assert_ne!(
            e["object_key"],
            json!(shared),
            "the claim's push, not the report: {e}"
        );
    }
}

/// A share made before the removal gives the shared user nothing after it: the removal ends it,
/// and a share left on record (data from an older hearth) gives nothing while nobody owns the
/// thermostat.
#[test]
fn a_share_made_before_the_removal_gives_the_shared_user_nothing_after_it() {
    let s = TestServer::start();
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.boot().unwrap();
    hearth::accounts::add_user(s.app().state(), "bob").unwrap();
    hearth::accounts::share(s.app().state(), SERIAL, "bob", ShareAccess::Control, true).unwrap();
    let bob = new_key(&s, "bob", "read,write", &[]);
    let status = format!("/thermostat/{SERIAL}/status");
    let r = api(&s, "GET", &status, &bob, Value::Null);
    assert_eq!(r.status, 200, "{}", r.text());

    let r = remove_device(s.control(), SERIAL);
    assert_eq!(r.status, 200, "{}", r.text());
    let shares = get(s.control(), "/api/shares").json();
    assert_eq!(shares, json!({"shares": []}), "the removal ended the share");
    assert!(hosted_serials(&s, &bob).is_empty());
    // As an older hearth could leave it: the share still on record.
    common::hosted::share(&s, SERIAL, "bob", ShareAccess::Control);
    let shares = get(s.control(), "/api/shares").json();
    assert_eq!(shares["shares"][0]["user"], json!("bob"), "{shares}");
    let before = store_bytes(s.dir.path());
    let not_found = (404, json!({"error": "Device not found"}));
    assert!(hosted_serials(&s, &bob).is_empty());
    let r = api(&s, "GET", &status, &bob, Value::Null);
    assert_eq!((r.status, r.json()), not_found);
    let r = api(
        &s,
        "POST",
        &format!("/thermostat/{SERIAL}/temperature"),
        &bob,
        json!({"value": 25, "mode": "heat"}),
    );
    assert_eq!((r.status, r.json()), not_found);
    assert!(
        store_bytes(s.dir.path()) == before,
        "the refusals changed nothing"
    );
    let target = s.bucket(SERIAL, &format!("shared.{SERIAL}")).unwrap();
    assert_ne!(target.value.to_map()["target_temperature"], json!(25.0));
}

/// With pairing required, removing a thermostat that was never anyone's (it asked for an entry
/// key, so the server knows it) changes nothing: releasing it would let it store what it sends
/// without a claim.
#[test]
fn in_pairing_mode_removing_a_thermostat_never_claimed_changes_nothing() {
    let s = TestServer::start_with(|c| c.require_device_pairing = true);
    let (mut stranger, _events) = thermostat(&s.origin(), NEVER_CLAIMED);
    stranger.register().unwrap();
    stranger.passphrase().unwrap();
    assert!(s.app().state().device_exists(NEVER_CLAIMED));
    let before = store_bytes(s.dir.path());
    let r = remove_device(s.control(), NEVER_CLAIMED);
    assert_eq!(
        (r.status, r.json()),
        (
            200,
            json!({"success": true, "serial": NEVER_CLAIMED, "objects_deleted": 0})
        )
    );
    assert!(
        store_bytes(s.dir.path()) == before,
        "the removal changed something"
    );
    assert!(!s.app().state().accounts(|a| a.is_released(NEVER_CLAIMED)));
    // What it sends is still not stored.
    stranger.report("shared", "current_temperature", json!(19.0));
    stranger.put().unwrap();
    assert!(
        s.bucket(NEVER_CLAIMED, &format!("shared.{NEVER_CLAIMED}"))
            .is_none()
    );
}

#[test]
fn reported_is_false_until_the_thermostat_uploads_its_state() {
    let s = TestServer::start();
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.register().unwrap();
    // A first subscribe that carries nothing: known, listed, nothing to show yet.
    drop(sim.open_subscribe().unwrap());
    let devices = listed(&s);
    assert_eq!(devices.len(), 1, "{devices:?}");
    assert_eq!(devices[0]["reported"], json!(false));
    assert_eq!(devices[0]["current_temperature"], json!(null));
    // A command before the upload creates a setpoint, not a report.
    let r = command(s.control(), SERIAL, "set_temperature", json!(21));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(listed(&s)[0]["reported"], json!(false));
    sim.boot().unwrap();
    assert_eq!(listed(&s)[0]["reported"], json!(true));
}
