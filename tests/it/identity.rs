//! A thermostat's pinned password: pinned at its first registration (open mode) or by its
//! claim (pairing mode), required on every device path by every request that names its serial,
//! kept across restarts and while the thermostat is removed, shown by `/status`, and replaced
//! only by a claim.

use crate::common;

use std::time::Duration;

use common::*;
use hearth::http::client::{self, ClientResponse};
use hearth::state::{DeviceMeta, EntryKey, Op, Owner};
use hearth::store::StoreError;
use hearth::util::clock::ManualClock;
use serde_json::{Value, json};

const WRONG: &str = r#"{"error":"Device not authorized. Wrong password for this thermostat."}"#;
const TOO_MANY: &str =
    r#"{"error":"Too many entry keys are waiting to be claimed; try again when one expires"}"#;

/// How a request names the thermostat and what password it gives.
#[derive(Clone, Copy, Debug)]
enum Credentials<'a> {
    /// Basic auth for the serial with this password (empty: none).
    Basic(&'a str),
    /// No Authorization; the serial in `X-nl-device-id` only.
    DeviceIdHeader,
    /// No Authorization; the serial in `X-nl-client-id` only.
    ClientIdHeader,
    /// No Authorization; `?serial=` only.
    Query,
}

fn send(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    body: &[u8],
    how: Credentials<'_>,
) -> ClientResponse {
    let auth;
    let client_id = format!("d.{SERIAL}.5F3C9A1B");
    let mut headers: Vec<(&str, &str)> = vec![("Content-Type", "application/json")];
    let mut target = path.to_string();
    match how {
        Credentials::Basic(password) => {
            auth = basic(SERIAL, password);
            headers.push(("Authorization", &auth));
        }
        Credentials::DeviceIdHeader => headers.push(("X-nl-device-id", SERIAL)),
        Credentials::ClientIdHeader => headers.push(("X-nl-client-id", &client_id)),
        Credentials::Query => {
            let sep = if path.contains('?') { '&' } else { '?' };
            target = format!("{path}{sep}serial={SERIAL}");
        }
    }
    client::request(&url(addr, &target), method, &headers, body, TIMEOUT).expect("request")
}

fn put_body(temperature: f64) -> Vec<u8> {
    json!({"objects": [{"object_key": format!("shared.{SERIAL}"),
                        "value": {"target_temperature": temperature}}]})
    .to_string()
    .into_bytes()
}

/// A thermostat's PUT of a new target, with Basic auth and this password.
fn put(addr: std::net::SocketAddr, temperature: f64, password: &str) -> ClientResponse {
    send(
        addr,
        "POST",
        "/nest/transport/v7/put",
        &put_body(temperature),
        Credentials::Basic(password),
    )
}

/// A subscribe that answers at once, carrying an inline update of the shared bucket.
fn inline_subscribe_body(temperature: f64) -> Vec<u8> {
    json!({"chunked": false, "objects": [
        {"object_key": format!("shared.{SERIAL}"), "object_revision": 0, "object_timestamp": 0,
         "value": {"target_temperature": temperature}}
    ]})
    .to_string()
    .into_bytes()
}

/// Every device path, with a body and the status it answers with the right password (open mode,
/// no weather upstream).
fn device_paths() -> Vec<(&'static str, String, Vec<u8>, u16)> {
    let put = put_body(30.0);
    let sub = inline_subscribe_body(31.0);
    let listing = format!("/nest/transport/device/{SERIAL}");
    let v7_listing = format!("/transport/v7/device/device.{SERIAL}");
    vec![
        ("POST", "/nest/transport/v7/put".into(), put.clone(), 200),
        ("POST", "/nest/transport/put".into(), put.clone(), 200),
        ("POST", "/transport/v5/put".into(), put.clone(), 200),
        ("POST", "/czfe/v7/put".into(), put.clone(), 200),
        ("POST", "/nest/transport".into(), sub.clone(), 200),
        (
            "POST",
            "/nest/transport/v7/subscribe".into(),
            sub.clone(),
            200,
        ),
        ("POST", "/transport/v5/subscribe".into(), sub.clone(), 200),
        ("POST", "/czfe/v5/subscribe".into(), sub.clone(), 200),
        ("POST", "/transport".into(), sub.clone(), 200),
        ("GET", listing, Vec::new(), 200),
        ("GET", v7_listing, Vec::new(), 200),
        ("GET", "/nest/entry".into(), Vec::new(), 200),
        ("POST", "/entry".into(), b"reset=false".to_vec(), 200),
        ("GET", "/nest/ping".into(), Vec::new(), 200),
        ("GET", "/ping".into(), Vec::new(), 200),
        ("GET", "/nest/pro_info/ABC123".into(), Vec::new(), 200),
        ("GET", "/pro_info/ABC123".into(), Vec::new(), 200),
        ("POST", "/nest/upload".into(), b"log line".to_vec(), 200),
        ("POST", "/upload".into(), b"log line".to_vec(), 200),
        // No upstream: 502, but past the pin.
        (
            "GET",
            "/nest/weather/v1?query=94304,US".into(),
            Vec::new(),
            502,
        ),
        ("GET", "/weather/v1?query=94304,US".into(), Vec::new(), 502),
        ("GET", "/nest/passphrase".into(), Vec::new(), 200),
        ("GET", "/passphrase".into(), Vec::new(), 200),
        ("GET", "/nest/passphrase/status".into(), Vec::new(), 200),
    ]
}

fn status(s: &TestServer) -> Value {
    get(s.control(), &format!("/status?serial={SERIAL}")).json()
}

/// The pinned password: as `/status` shows it where it answers (a thermostat the control port
/// shows), else as stored (with pairing required, one nobody owns is shown to nobody).
fn api_key(s: &TestServer) -> Value {
    let stored = s
        .app()
        .state()
        .read_device(SERIAL, |d| d.meta.as_ref().and_then(|m| m.api_key.clone()))
        .flatten()
        .map_or(Value::Null, Value::from);
    let r = get(s.control(), &format!("/status?serial={SERIAL}"));
    if r.status == 200 {
        assert_eq!(r.json()["api_key"], stored, "/status shows the stored pin");
    } else {
        assert_eq!(r.status, 404, "{}", r.text());
    }
    stored
}

/// Registers the thermostat (open mode: its first PUT) with `password`.
fn register(s: &TestServer, password: &str) {
    let r = put(s.device(), 20.0, password);
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn a_pinned_thermostat_is_refused_on_every_device_path_without_its_password() {
    let s = TestServer::start_with(|c| c.store_device_logs = true);
    register(&s, "pw");
    assert_eq!(api_key(&s), json!("pw"));
    let before = (store_bytes(s.dir.path()), status(&s));
    let logs = s.app().config().device_logs_dir();
    let wrong = [
        Credentials::Basic("mallory"),
        Credentials::Basic(""),
        Credentials::DeviceIdHeader,
        Credentials::ClientIdHeader,
        Credentials::Query,
    ];
    for (method, path, body, _) in device_paths() {
        for how in wrong {
            let r = send(s.device(), method, &path, &body, how);
            assert_eq!(
                (r.status, r.text().as_str()),
                (401, WRONG),
                "{method} {path} {how:?}"
            );
        }
    }
    // A serial named anywhere in the request counts, not only the one it is served for.
    let auth = basic("02AA01AC0000OTHR", "other");
    let r = client::request(
        &url(
            s.device(),
            &format!("/nest/transport/v7/put?serial={SERIAL}"),
        ),
        "POST",
        &[("Authorization", &auth), ("X-nl-device-id", SERIAL)],
        &put_body(32.0),
        TIMEOUT,
    )
    .unwrap();
    assert_eq!((r.status, r.text().as_str()), (401, WRONG));
    assert_eq!(
        (store_bytes(s.dir.path()), status(&s)),
        before,
        "nothing changed: no write, no key, no last-seen time"
    );
    assert!(!logs.exists(), "no upload was stored");
    assert_eq!(api_key(&s), json!("pw"), "/status shows the pinned key");

    // The right password goes through on every path.
    for (method, path, body, expected) in device_paths() {
        let r = send(s.device(), method, &path, &body, Credentials::Basic("pw"));
        assert_eq!(r.status, expected, "{method} {path}: {}", r.text());
    }
    assert_eq!(
        s.bucket(SERIAL, &format!("shared.{SERIAL}"))
            .unwrap()
            .value
            .to_map()["target_temperature"],
        json!(31.0),
        "the inline update was stored"
    );
    assert!(logs.join(SERIAL).exists(), "the uploads were stored");
    assert_eq!(api_key(&s), json!("pw"));
}

#[test]
fn the_pin_is_never_replaced_and_survives_a_restart_and_a_snapshot() {
    let s = TestServer::start();
    register(&s, "pw");
    let r = put(s.device(), 32.0, "mallory");
    assert_eq!((r.status, r.text().as_str()), (401, WRONG));
    assert_eq!(api_key(&s), json!("pw"));
    let dir = s.stop();

    let again = restart(&dir);
    let r = put(again.device_addr(), 32.0, "mallory");
    assert_eq!(
        (r.status, r.text().as_str()),
        (401, WRONG),
        "replayed from the journal"
    );
    again.app().state().snapshot().unwrap();
    again.shutdown();

    let third = restart(&dir);
    let r = put(third.device_addr(), 32.0, "mallory");
    assert_eq!(
        (r.status, r.text().as_str()),
        (401, WRONG),
        "loaded from the snapshot"
    );
    let r = put(third.device_addr(), 21.0, "pw");
    assert_eq!(r.status, 200);
    third.shutdown();
}

#[test]
fn data_from_before_pins_is_pinned_to_the_key_it_holds() {
    // What an older hearth stored: metadata with the key it last saw, no pin of any other kind.
    let s = TestServer::start();
    s.app()
        .state()
        .update_device(SERIAL, hearth::hub::Origin::Device, |txn| {
            txn.set_meta(DeviceMeta {
                id: "6f1c2d4e-0000-4000-8000-000000000001".into(),
                api_key: Some("old-key".into()),
                created_ms: 1,
            });
            Ok::<_, StoreError>(())
        })
        .unwrap();
    let dir = s.stop();
    let again = restart(&dir);
    let r = put(again.device_addr(), 32.0, "pw");
    assert_eq!((r.status, r.text().as_str()), (401, WRONG));
    let r = put(again.device_addr(), 21.0, "old-key");
    assert_eq!(r.status, 200);
    again.shutdown();
}

#[test]
fn removing_the_thermostat_keeps_its_pin_and_a_claim_lets_a_reflashed_one_in() {
    let s = TestServer::start();
    register(&s, "pw");
    // Reflashed: a new password is refused, entry keys included, until its owner removes it.
    let r = put(s.device(), 22.0, "reflashed");
    assert_eq!((r.status, r.text().as_str()), (401, WRONG));
    let entry_key = |password| {
        send(
            s.device(),
            "GET",
            "/nest/passphrase",
            b"",
            Credentials::Basic(password),
        )
    };
    let r = entry_key("reflashed");
    assert_eq!((r.status, r.text().as_str()), (401, WRONG));
    let r = remove_device(s.control(), SERIAL);
    assert_eq!(r.status, 200, "{}", r.text());
    // Removed, it keeps operating under its pin: nothing else takes its serial meanwhile.
    assert_eq!(api_key(&s), json!("pw"));
    let r = put(s.device(), 22.5, "pw");
    assert_eq!(r.status, 200, "{}", r.text());
    for other in ["reflashed", "mallory"] {
        let r = put(s.device(), 23.0, other);
        assert_eq!((r.status, r.text().as_str()), (401, WRONG), "{other}");
    }
    // Released, it may ask for an entry key with its new password; the claim of that code
    // (the one on its screen) pins it.
    let r = entry_key("reflashed");
    assert_eq!(r.status, 200, "{}", r.text());
    let code = r.json()["value"].as_str().unwrap().to_string();
    let r = call(
        s.control(),
        "POST",
        "/api/register",
        &json!({"code": code, "userId": "owner"}).to_string(),
    );
    assert_eq!(r.json()["success"], json!(true), "{}", r.text());
    assert_eq!(api_key(&s), json!("reflashed"));
    register(&s, "reflashed");
    let r = put(s.device(), 23.0, "pw");
    assert_eq!(
        (r.status, r.text().as_str()),
        (401, WRONG),
        "the old password is not"
    );
    // Owned again, so no other password gets an entry key.
    let r = entry_key("mallory");
    assert_eq!((r.status, r.text().as_str()), (401, WRONG));
}

fn claim(s: &TestServer, code: &str) -> ClientResponse {
    call(
        s.control(),
        "POST",
        "/api/register",
        &json!({"code": code, "userId": "alice"}).to_string(),
    )
}

#[test]
fn a_claim_pins_the_password_that_asked_for_the_claimed_code() {
    let s = TestServer::start_with(|c| c.require_device_pairing = true);
    let passphrase = |password| {
        let r = send(
            s.device(),
            "GET",
            "/nest/passphrase",
            b"",
            Credentials::Basic(password),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()["value"].as_str().unwrap().to_string()
    };
    // Someone else asks first; the thermostat gets a code of its own, and each gets its own
    // again when it asks again.
    let theirs = passphrase("mallory");
    let ours = passphrase("pw");
    assert_ne!(theirs, ours);
    assert_eq!(passphrase("mallory"), theirs);
    assert_eq!(passphrase("pw"), ours);
    // Before the claim nothing is pinned: both may wait (their subscribes store nothing).
    assert_eq!(api_key(&s), Value::Null);

    // The owner types the code on the thermostat's screen.
    let r = claim(&s, &ours);
    assert_eq!(r.json()["success"], json!(true), "{}", r.text());
    assert_eq!(api_key(&s), json!("pw"), "pinned by the claim");
    let before = store_bytes(s.dir.path());
    for (method, path, body) in [
        ("POST", "/nest/transport/v7/put", put_body(32.0)),
        (
            "POST",
            "/nest/transport/v7/subscribe",
            inline_subscribe_body(32.0),
        ),
        ("GET", "/nest/passphrase", Vec::new()),
    ] {
        let r = send(
            s.device(),
            method,
            path,
            &body,
            Credentials::Basic("mallory"),
        );
        assert_eq!((r.status, r.text().as_str()), (401, WRONG), "{path}");
    }
    // The other code went with the claim.
    let r = claim(&s, &theirs);
    assert_eq!(r.json()["success"], json!(false), "{}", r.text());
    assert_eq!(store_bytes(s.dir.path()), before, "nothing changed");
    let r = put(s.device(), 21.0, "pw");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(api_key(&s), json!("pw"));

    // Unlinked by its owner, it keeps operating under its pin; a claim again pins the password
    // that was shown the claimed code (a reflashed thermostat may ask for one once released).
    let r = call(
        s.control(),
        "DELETE",
        &format!("/api/registered-devices/{SERIAL}"),
        "",
    );
    assert_eq!(r.json()["success"], json!(true), "{}", r.text());
    assert_eq!(api_key(&s), json!("pw"));
    let r = put(s.device(), 21.5, "pw");
    assert_eq!(r.status, 200, "{}", r.text());
    let r = put(s.device(), 21.5, "mallory");
    assert_eq!((r.status, r.text().as_str()), (401, WRONG));
    let reflashed = passphrase("reflashed");
    let r = claim(&s, &reflashed);
    assert_eq!(r.json()["success"], json!(true), "{}", r.text());
    assert_eq!(api_key(&s), json!("reflashed"));
    let r = put(s.device(), 21.0, "pw");
    assert_eq!((r.status, r.text().as_str()), (401, WRONG));
}

#[test]
fn a_claim_ends_the_subscribes_held_in_the_thermostats_name_with_another_password() {
    let s = TestServer::start_with(|c| c.require_device_pairing = true);
    let code = |password| {
        let r = send(
            s.device(),
            "GET",
            "/nest/passphrase",
            b"",
            Credentials::Basic(password),
        );
        r.json()["value"].as_str().unwrap().to_string()
    };
    let _theirs = code("mallory");
    let ours = code("pw");
    // The thermostat and another device each hold a subscribe in its name while they wait.
    let hold = |password| {
        let auth = basic(SERIAL, password);
        let held = client::ChunkStream::open(
            &url(s.device(), "/nest/transport/v7/subscribe"),
            "POST",
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            json!({"chunked": true, "objects": []})
                .to_string()
                .as_bytes(),
            TIMEOUT,
            false,
        )
        .unwrap();
        assert_eq!(held.status, 200);
        held
    };
    let mut own = hold("pw");
    let mut other = hold("mallory");
    s.wait_held(SERIAL, 2);

    let r = claim(&s, &ours);
    assert_eq!(r.json()["success"], json!(true), "{}", r.text());
    // The thermostat's subscribe receives the claim's push (the owner's user and structure
    // buckets)...
    let first = String::from_utf8(own.next_chunk().unwrap().expect("the claim's push")).unwrap();
    assert!(first.contains("structure."), "{first}");
    // ... the other device's ends with nothing of it, and its next subscribe is refused.
    let mut chunks = Vec::new();
    while let Some(chunk) = other.next_chunk().unwrap() {
        chunks.push(String::from_utf8(chunk).unwrap());
    }
    assert!(
        chunks.is_empty(),
        "the other device was pushed the owner's buckets: {chunks:?}"
    );
    let r = send(
        s.device(),
        "POST",
        "/nest/transport/v7/subscribe",
        json!({"chunked": false, "objects": []})
            .to_string()
            .as_bytes(),
        Credentials::Basic("mallory"),
    );
    assert_eq!((r.status, r.text().as_str()), (401, WRONG));
}

#[test]
fn a_claims_password_holds_before_the_thermostat_registers() {
    // A claim whose pin is not stored yet (a crash between the claim's two commits): the
    // claimed key's password stands in for it.
    let s = TestServer::start_with(|c| c.require_device_pairing = true);
    s.app()
        .state()
        .update_accounts(|txn| {
            let now = txn.now_ms();
            txn.push(Op::PutEntryKey {
                key: EntryKey {
                    code: "625AZZP".into(),
                    serial: SERIAL.into(),
                    created_ms: now,
                    expires_ms: now + 3_600_000,
                    claimed_by: None,
                    claimed_ms: None,
                    password: Some("pw".into()),
                },
            });
            txn.push(Op::ClaimEntryKey {
                code: "625AZZP".into(),
                user: "owner".into(),
                at_ms: now,
            });
            txn.push(Op::SetOwner {
                serial: SERIAL.into(),
                owner: Some(Owner {
                    user: "owner".into(),
                    since_ms: now,
                }),
            });
            Ok::<_, StoreError>(())
        })
        .unwrap();
    let r = put(s.device(), 32.0, "mallory");
    assert_eq!((r.status, r.text().as_str()), (401, WRONG));
    assert!(!s.app().state().device_exists(SERIAL), "nothing stored");
    register(&s, "pw");
    assert_eq!(api_key(&s), json!("pw"));
}

#[test]
fn unclaimed_entry_keys_are_capped_and_expired_ones_make_room() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.clock = time.clock();
        c.max_pending_entry_keys = 3;
        c.entry_key_ttl_secs = 60;
        // Five serials new to hearth from one address: the cap of new thermostats per
        // address (`tests/it/minted.rs`) is not under test.
        c.max_new_thermostats_per_client = 0;
    });
    let ask = |serial: &str| {
        let auth = basic(serial, "pw");
        client::request(
            &url(s.device(), "/nest/passphrase"),
            "GET",
            &[("Authorization", &auth)],
            &[],
            TIMEOUT,
        )
        .unwrap()
    };
    let serials = ["02AA01AC00000001", "02AA01AC00000002", "02AA01AC00000003"];
    let codes: Vec<Value> = serials
        .iter()
        .map(|s| ask(s).json()["value"].clone())
        .collect();
    assert!(codes.iter().all(Value::is_string));
    let before = store_bytes(s.dir.path());
    let r = ask("02AA01AC00000004");
    assert_eq!((r.status, r.text().as_str()), (503, TOO_MANY));
    assert_eq!(store_bytes(s.dir.path()), before, "nothing stored");
    // Those waiting still get their codes, and the server serves everyone else.
    assert_eq!(ask(serials[0]).json()["value"], codes[0]);
    assert_eq!(get(s.device(), "/health").status, 200);
    register_as(&s, "02AA01AC00000009");

    // A millisecond before they expire, still full; once they have, they make room.
    time.advance(Duration::from_millis(59_999));
    assert_eq!(ask("02AA01AC00000004").status, 503);
    time.advance(Duration::from_millis(1));
    let r = ask("02AA01AC00000004");
    assert_eq!(r.status, 200, "{}", r.text());
    let left = s.app().state().accounts(|a| a.entry_keys.len());
    assert_eq!(left, 1, "the expired keys were pruned");
}

fn register_as(s: &TestServer, serial: &str) {
    let r = post_json(
        s.device(),
        "/nest/transport/v7/put",
        serial,
        json!({"objects": [{"object_key": format!("shared.{serial}"), "value": {"target_temperature": 20.0}}]}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

const TOO_MANY_FROM_ADDRESS: &str = r#"{"error":"Too many entry keys are waiting for this client address; claim one or try again when one expires"}"#;
const TOO_MANY_FOR_SERIAL: &str = r#"{"error":"Too many entry keys are waiting for this serial with other passwords; claim one or try again when one expires"}"#;

/// `GET /nest/passphrase` for `serial` with `password`, from the client address `from`.
fn ask_from(
    s: &TestServer,
    from: std::net::IpAddr,
    serial: &str,
    password: &str,
) -> ClientResponse {
    let auth = basic(serial, password);
    common::from_address::request_from(
        from,
        s.device(),
        "GET /nest/passphrase HTTP/1.1",
        &[("Authorization", &auth)],
        &[],
    )
}

#[test]
fn one_client_address_gets_at_most_eight_waiting_entry_keys_and_expiry_frees_its_places() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.clock = time.clock();
        c.entry_key_ttl_secs = 60;
        // Nine serials new to hearth from one address: the cap of new thermostats per address
        // (`tests/it/minted.rs`), which comes first in open mode, is not under test.
        c.max_new_thermostats_per_client = 0;
    });
    let other = common::from_address::SECOND;
    let serial = |i: usize| format!("02AA01AC0000{i:04}");
    let codes: Vec<Value> = (0..8)
        .map(|i| {
            let r = ask_from(&s, other, &serial(i), "random");
            assert_eq!(r.status, 200, "{}", r.text());
            r.json()["value"].clone()
        })
        .collect();
    let before = store_bytes(s.dir.path());
    let r = ask_from(&s, other, &serial(8), "random");
    assert_eq!((r.status, r.text().as_str()), (429, TOO_MANY_FROM_ADDRESS));
    assert_eq!(store_bytes(s.dir.path()), before, "nothing stored");
    assert_eq!(s.app().state().accounts(|a| a.entry_keys.len()), 8);
    // A key it holds is still returned; a thermostat at another address still gets its key.
    assert_eq!(
        ask_from(&s, other, &serial(0), "random").json()["value"],
        codes[0]
    );
    let mine = ask_from(&s, "127.0.0.1".parse().unwrap(), SERIAL, "pw");
    assert_eq!(mine.status, 200, "{}", mine.text());
    assert!(mine.json()["value"].is_string());

    // A millisecond before its keys expire the address is still full; once they have, it is not.
    time.advance(Duration::from_millis(59_999));
    assert_eq!(ask_from(&s, other, &serial(8), "random").status, 429);
    time.advance(Duration::from_millis(1));
    let r = ask_from(&s, other, &serial(8), "random");
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn one_serial_gets_entry_keys_for_at_most_four_waiting_passwords() {
    let s = TestServer::start_with(|_| {});
    let me: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    for i in 0..4 {
        let r = ask_from(&s, me, SERIAL, &format!("pw{i}"));
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let before = store_bytes(s.dir.path());
    let r = ask_from(&s, me, SERIAL, "pw4");
    assert_eq!((r.status, r.text().as_str()), (429, TOO_MANY_FOR_SERIAL));
    assert_eq!(store_bytes(s.dir.path()), before, "nothing stored");
    // A password already waiting gets its key again; another serial is still served.
    assert_eq!(ask_from(&s, me, SERIAL, "pw0").status, 200);
    let r = ask_from(&s, me, "02AA01AC00000002", "pw4");
    assert_eq!(r.status, 200, "{}", r.text());
}

/// `GET path` (an entry-key route) in the thermostat's name with `password`.
fn ask_as(s: &TestServer, path: &str, password: &str) -> ClientResponse {
    send(s.device(), "GET", path, b"", Credentials::Basic(password))
}

/// A released thermostat may ask for an entry key with another password (a reflashed one), so
/// anyone on the LAN may ask in its name. Such a request gets its own key and its own key's
/// status, and nothing of the thermostat's: it does not make it look online, it is not told who
/// claimed the thermostat's keys, it does not touch its buckets, and however many passwords
/// ask, the thermostat's own (pinned) password still gets its key.
#[test]
fn strangers_asking_for_a_released_thermostats_entry_key_change_nothing_of_the_thermostat() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.clock = time.clock();
        c.require_device_pairing = true;
    });
    let ask = |path: &str, password: &str| ask_as(&s, path, password);
    // Claimed by alice with the code its own password was shown, then removed.
    let code = ask("/nest/passphrase", "pw").json()["value"].clone();
    let r = claim(&s, code.as_str().unwrap());
    assert_eq!(r.json()["success"], json!(true), "{}", r.text());
    register(&s, "pw");
    let r = call(
        s.control(),
        "DELETE",
        &format!("/api/registered-devices/{SERIAL}"),
        "",
    );
    assert_eq!(r.json()["success"], json!(true), "{}", r.text());
    let seen = || s.app().availability(SERIAL).last_seen_ms;
    let last_seen = seen();
    assert!(last_seen.is_some());
    // The pairing dialog it was shown for its first code.
    let dialog = format!("device_alert_dialog.{SERIAL}");
    let dialog_before = s.bucket(SERIAL, &dialog);
    assert!(dialog_before.is_some());
    time.advance(Duration::from_secs(60));

    // Its status: only the asker's own key, never the thermostat's (claimed by alice).
    let r = ask("/nest/passphrase/status", "mallory");
    assert_eq!(
        (r.status, r.json()),
        (
            200,
            json!({"status": "no_key", "claimed": false, "message": "No entry key found for this device"})
        )
    );
    // Four other passwords take the serial's places for other passwords; a fifth is refused.
    let mut theirs = Vec::new();
    for i in 0..4 {
        let r = ask("/nest/passphrase", &format!("mallory{i}"));
        assert_eq!(r.status, 200, "{}", r.text());
        theirs.push(r.json()["value"].clone());
    }
    let before = store_bytes(s.dir.path());
    let r = ask("/nest/passphrase", "mallory4");
    assert_eq!((r.status, r.text().as_str()), (429, TOO_MANY_FOR_SERIAL));
    assert_eq!(store_bytes(s.dir.path()), before, "nothing stored");
    let r = ask("/nest/passphrase/status", "mallory0");
    assert_eq!(r.json()["status"], json!("pending"), "{}", r.text());
    assert_eq!(seen(), last_seen, "the strangers made it look online");
    assert_eq!(
        s.bucket(SERIAL, &dialog),
        dialog_before,
        "a stranger's request wrote to the thermostat's buckets"
    );

    // The thermostat itself (its pinned password) still gets a key of its own, and its
    // requests do count as it being there.
    let r = ask("/nest/passphrase", "pw");
    assert_eq!(r.status, 200, "{}", r.text());
    let ours = r.json()["value"].clone();
    assert!(ours.is_string() && !theirs.contains(&ours) && ours != code);
    assert_eq!(seen(), Some(time.clock().now_ms()));
    let r = ask("/nest/passphrase/status", "pw");
    assert_eq!(r.json()["status"], json!("pending"), "{}", r.text());
    // The owner types the code on its screen: it is alice's again, under its pin.
    let r = claim(&s, ours.as_str().unwrap());
    assert_eq!(r.json()["success"], json!(true), "{}", r.text());
    assert_eq!(api_key(&s), json!("pw"));
    let r = ask("/nest/passphrase/status", "pw");
    assert_eq!(r.json()["claimedBy"], json!("alice"), "{}", r.text());
}

/// Nor does a stranger's request put a pairing dialog on a released thermostat's screen (one
/// that never had one: open mode); the thermostat's own request does.
#[test]
fn a_strangers_entry_key_puts_no_pairing_dialog_on_a_released_thermostat() {
    let s = TestServer::start();
    register(&s, "pw");
    let r = remove_device(s.control(), SERIAL);
    assert_eq!(r.status, 200, "{}", r.text());
    let dialog = format!("device_alert_dialog.{SERIAL}");
    let ask = |password: &str| {
        let r = ask_as(&s, "/nest/passphrase", password);
        assert_eq!(r.status, 200, "{}", r.text());
    };
    ask("mallory");
    assert!(s.bucket(SERIAL, &dialog).is_none());
    ask("pw");
    assert!(s.bucket(SERIAL, &dialog).is_some());
}
