//! Thermostats minted by a LAN neighbour (docs/device-protocol.md, "New thermostats"): in open
//! mode a serial is not a secret, and every made-up one hearth stored would be the home's,
//! in Apple Home and the alerts. One client address adds at most a handful a day
//! (`MAX_NEW_THERMOSTATS_PER_CLIENT`, 4); the rest are refused before anything of them is
//! stored, reach neither HomeKit nor the alerts, and hold back neither another address's new
//! thermostat nor a thermostat hearth knows.

use crate::common;

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use common::homekit::{bridge_of, database};
use common::*;
use hearth::http::client::ClientResponse;
use hearth::util::clock::ManualClock;
use serde_json::{Value, json};

/// The neighbour inventing serials; the home's own thermostat `SERIAL` is on it too.
const MINTER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));
const TOO_MANY: &str = r#"{"error":"Too many new thermostats from this client address; try again later (thermostats this server knows are not refused)"}"#;

fn minted(i: usize) -> String {
    format!("02AA01AC00M{i:05}")
}

/// A thermostat's request from `from`, with its own password.
fn from(s: &TestServer, from: IpAddr, head: &str, serial: &str, body: &[u8]) -> ClientResponse {
    let auth = basic(serial, &format!("pw-{serial}"));
    common::from_address::request_from(from, s.device(), head, &[("Authorization", &auth)], body)
}

/// A PUT of the room's temperature and a name, as a thermostat reports them.
fn put_from(s: &TestServer, at: IpAddr, serial: &str, celsius: f64) -> ClientResponse {
    let body = json!({"objects": [{"object_key": format!("shared.{serial}"),
        "value": {"current_temperature": celsius, "name": format!("Room {serial}")}}]});
    from(
        s,
        at,
        "POST /nest/transport/v7/put HTTP/1.1",
        serial,
        body.to_string().as_bytes(),
    )
}

fn active_alerts(s: &TestServer) -> Vec<Value> {
    get(s.control(), "/api/alerts").json()["active"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The serials with an accessory id kept in `DATA_DIR/homekit/aids.json`.
fn kept_aids(s: &TestServer) -> Vec<String> {
    let path = s.app().config().homekit_dir().join("aids.json");
    let stored: Value = std::fs::read(&path)
        .map(|b| serde_json::from_slice(&b).unwrap())
        .unwrap_or(json!({"aids": {}}));
    stored["aids"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[test]
fn two_hundred_minted_serials_from_one_address_add_four_thermostats() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| c.clock = time.clock());
    assert_eq!(s.app().config().max_new_thermostats_per_client, 4);
    // The home's thermostat, on the address a neighbour then mints serials from.
    assert_eq!(put_from(&s, MINTER, SERIAL, 20.5).status, 200);
    let b = bridge_of(s.server().app());
    assert_eq!(database(&b)["accessories"].as_array().unwrap().len(), 2);

    // 200 made-up serials, each reporting a cold room: three are new thermostats (the
    // address's fourth place was the home's own), the rest are refused.
    let mut admitted = Vec::new();
    for i in 0..200 {
        let r = put_from(&s, MINTER, &minted(i), 3.0);
        match r.status {
            200 => admitted.push(minted(i)),
            _ => {
                assert_eq!((r.status, r.text().as_str()), (503, TOO_MANY), "{i}");
                assert_eq!(r.header("Retry-After"), Some("86400"), "{i}");
            }
        }
    }
    assert_eq!(admitted, [minted(0), minted(1), minted(2)]);
    let mut home = vec![SERIAL.to_string()];
    home.extend(admitted.iter().cloned());
    home.sort();
    assert_eq!(s.app().state().serials(), home);

    // The rest changed nothing: no state, not seen, unknown to the control port; and the other
    // routes that would store something for them (an entry key, a subscribe, an upload) are
    // refused alike, before anything is stored.
    let before = store_bytes(s.dir.path());
    let refused = minted(199);
    assert_eq!(s.app().presence().last_seen(&refused), None);
    let r = get(s.control(), &format!("/status?serial={refused}"));
    assert_eq!(r.status, 404, "{}", r.text());
    let subscribe = json!({"objects": [{"object_key": format!("shared.{refused}"),
        "object_revision": 0, "object_timestamp": 0}]});
    for (head, body) in [
        ("GET /nest/passphrase HTTP/1.1", Vec::new()),
        (
            "POST /nest/transport HTTP/1.1",
            subscribe.to_string().into_bytes(),
        ),
        ("POST /nest/upload HTTP/1.1", b"log".to_vec()),
    ] {
        let r = from(&s, MINTER, head, &refused, &body);
        assert_eq!((r.status, r.text().as_str()), (503, TOO_MANY), "{head}");
    }
    assert_eq!(store_bytes(s.dir.path()), before, "nothing stored");
    assert!(s.app().state().accounts(|a| a.entry_keys.is_empty()));
    assert_eq!(s.app().presence().last_seen(&refused), None);

    // Apple Home shows the home's four, and ids are kept for those four only.
    let db = database(&b);
    let aids: Vec<u64> = db["accessories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["aid"].as_u64().unwrap())
        .collect();
    assert_eq!(aids, [1, 2, 3, 4, 5], "{db}");
    assert_eq!(b.aid_of(&refused), None);
    let mut kept = kept_aids(&s);
    kept.sort();
    assert_eq!(kept, home);

    // Each new cold one raises its "too cold" alert; the refused raise none.
    wait_until("the admitted ones' alerts", || active_alerts(&s).len() == 3);
    let mut alerted: Vec<String> = active_alerts(&s)
        .iter()
        .map(|a| a["serial"].as_str().unwrap().to_string())
        .collect();
    alerted.sort();
    assert_eq!(alerted, admitted);

    // The home's thermostat keeps working from the minter's address and any other.
    for at in [MINTER, common::from_address::SECOND] {
        assert_eq!(put_from(&s, at, SERIAL, 21.0).status, 200);
    }
    assert_eq!(
        s.bucket(SERIAL, &shared())
            .unwrap()
            .value
            .get("current_temperature"),
        Some(json!(21.0))
    );
    // Another address adds its own new thermostat.
    let neighbours = "02AA01AC0000NBR1";
    assert_eq!(
        put_from(&s, common::from_address::SECOND, neighbours, 20.0).status,
        200
    );
    assert!(s.app().state().device_exists(neighbours));

    // A day later the minter's address has its places again, four of them.
    time.advance(Duration::from_secs(24 * 3600));
    let statuses: Vec<u16> = (200..205)
        .map(|i| put_from(&s, MINTER, &minted(i), 20.0).status)
        .collect();
    assert_eq!(statuses, [200, 200, 200, 200, 503]);
}

/// With pairing required nothing is stored before a claim, so the limit does not count there:
/// one address gets entry codes for more serials than it could add in open mode, and each is
/// claimed; 0 lifts the limit in open mode (a reverse proxy every thermostat comes through).
#[test]
fn pairing_mode_and_a_limit_of_zero_are_not_limited() {
    let s = TestServer::start_with(|c| {
        c.require_device_pairing = true;
        c.max_new_thermostats_per_client = 1;
    });
    for i in 0..3 {
        let serial = minted(i);
        let r = from(&s, MINTER, "GET /nest/passphrase HTTP/1.1", &serial, &[]);
        assert_eq!(r.status, 200, "{}", r.text());
        let code = r.json()["value"].as_str().unwrap().to_string();
        let body = json!({"code": code, "userId": "owner"}).to_string();
        let r = call(s.control(), "POST", "/api/register", &body);
        assert_eq!(r.json()["success"], json!(true), "{}", r.text());
        assert_eq!(put_from(&s, MINTER, &serial, 20.0).status, 200);
    }

    let s = TestServer::start_with(|c| c.max_new_thermostats_per_client = 0);
    for i in 0..10 {
        assert_eq!(put_from(&s, MINTER, &minted(i), 20.0).status, 200);
    }
    assert_eq!(s.app().state().serials().len(), 10);
}
