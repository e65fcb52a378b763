//! A real HomeKit controller against the real server: aiohomekit (the library behind Home
//! Assistant's HomeKit Controller), driven by `tests/homekit/driver.py` as in
//! `homekit_pairing`, pairs with the HAP listener `hearth serve` starts (a [`TestServer`], HomeKit
//! on by default, port 0) and works a simulated thermostat through the bridge: refused with a
//! wrong setup code, paired with the right one, the accessories listed under the page's name,
//! the reported temperature read, a target written as `/command` would write it, an EVENT
//! after a `/command` change, and the same pairing after a restart on the same data directory;
//! and pair-setup locked after the hundredth wrong code, then unlocked with a new code.
//!
//! Needs `HEARTH_AIOHOMEKIT_PYTHON` (`bash .ci/aiohomekit.sh` prints one); skips with a message
//! without it, unless `HEARTH_REQUIRE_AIOHOMEKIT=1`.

use crate::common;
use crate::homekit_pairing::controller::{Controller, pair, python};

use std::sync::Arc;

use common::*;
use serde_json::{Value, json};

/// HAP's short form of a type aiohomekit wrote out in full under Apple's base UUID.
fn short(full: &Value) -> String {
    let full = full.as_str().unwrap();
    let head = full
        .strip_suffix("-0000-1000-8000-0026BB765291")
        .unwrap_or(full);
    head.trim_start_matches('0').to_string()
}

/// The characteristic of short type `char_type` in the service of short type `service_type`.
fn characteristic(accessory: &Value, service_type: &str, char_type: &str) -> Value {
    accessory["services"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| short(&s["type"]) == service_type)
        .flat_map(|s| s["characteristics"].as_array().unwrap().clone())
        .find(|c| short(&c["type"]) == char_type)
        .unwrap_or_else(|| panic!("no {char_type} in {service_type} of {accessory}"))
}

/// An accessory's name (AccessoryInformation's Name).
fn name_of(accessory: &Value) -> Value {
    characteristic(accessory, "3E", "23")["value"].clone()
}

/// The iid of a Thermostat service characteristic.
fn iid(accessory: &Value, char_type: &str) -> u64 {
    characteristic(accessory, "4A", char_type)["iid"]
        .as_u64()
        .unwrap()
}

/// The values a `get` answered, in the order asked.
fn values(c: &mut Controller, ids: &[(u64, u64)]) -> Vec<Value> {
    let answer = c.ask(json!({"op": "get", "ids": ids}));
    ids.iter()
        .map(|&(aid, iid)| {
            answer["values"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v[0] == json!(aid) && v[1] == json!(iid))
                .unwrap_or_else(|| panic!("{aid}.{iid} not in {answer}"))[2]
                .clone()
        })
        .collect()
}

fn pushed_target(held: &mut hearth::simulator::Held) -> Value {
    object(&next_push(held).1, &shared())["value"]["target_temperature"].clone()
}

fn set_by_command(s: &TestServer, celsius: Value) {
    let r = command(s.control(), SERIAL, "set_temperature", celsius);
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn aiohomekit_pairs_with_the_server_and_drives_a_thermostat_across_a_restart() {
    let Some(python) = python() else { return };
    let s = TestServer::start();
    let (mut sim, _events, mut held) = booted_and_held(&s, SERIAL);
    sim.report("shared", "name", json!("Hallway"));
    sim.report("shared", "current_temperature", json!(19.5));
    sim.put().unwrap();
    let identity = Arc::clone(
        s.app()
            .homekit()
            .identity()
            .expect("HomeKit is on by default"),
    );
    let addr = s.server().homekit_addr().expect("the HAP listener");
    let controller_dir = TempDir::new("hap-controller");
    let file = controller_dir.path().join("pairing.json");

    // 1. A wrong setup code is refused and pairs nothing; the right one pairs.
    let code = identity.setup_code();
    let wrong = if code == "101-48-005" {
        "101-48-006"
    } else {
        "101-48-005"
    };
    assert_eq!(
        pair(&python, addr, wrong, &file),
        json!({"error": "AuthenticationError"})
    );
    assert!(!identity.is_paired());
    assert!(!file.exists());
    assert_eq!(pair(&python, addr, &code, &file), json!({"ok": true}));
    assert_eq!(identity.pairings().len(), 1);

    // 2. The bridge and the thermostat, under the name the page shows.
    let mut c = Controller::start(&python, &file, addr.port());
    let listed = c.ask(json!({"op": "accessories"}))["accessories"].clone();
    let accessories = listed.as_array().unwrap();
    assert_eq!(accessories.len(), 2, "{listed}");
    assert_eq!(accessories[0]["aid"], json!(1));
    assert_eq!(name_of(&accessories[0]), json!("hearth"));
    let page = get(s.control(), "/api/devices").json();
    let page_name = page["devices"][0]["name"].clone();
    assert_eq!(page_name, json!("Hallway"), "{page}");
    let thermostat = &accessories[1];
    assert_eq!(name_of(thermostat), page_name);
    assert_eq!(
        characteristic(thermostat, "3E", "30")["value"],
        json!(SERIAL)
    );
    let aid = thermostat["aid"].as_u64().unwrap();
    let (current, target) = (iid(thermostat, "11"), iid(thermostat, "35"));

    // 3. The temperature the thermostat reported.
    assert_eq!(values(&mut c, &[(aid, current)]), [json!(19.5)]);

    // 4. A target written by the controller reaches the held subscribe as /command's would:
    // clamped to the safety bounds (35 °C, 45 °F) on either side, an exact value kept exact.
    for (asked, kept) in [(json!(40), 35.0), (json!(21.3), 21.3), (json!(5), 7.222)] {
        set_by_command(&s, asked.clone());
        let by_command = pushed_target(&mut held);
        assert_eq!(by_command, json!(kept), "/command {asked}");
        set_by_command(&s, json!(20));
        assert_eq!(pushed_target(&mut held), json!(20.0));
        let answer = c.ask(json!({"op": "put", "values": [[aid, target, asked]]}));
        assert_eq!(answer["status"], json!({}), "{asked}: {answer}");
        assert_eq!(pushed_target(&mut held), by_command, "{asked}");
    }

    // 5. Subscribed, the controller hears of a change made on another surface.
    c.ask(json!({"op": "subscribe", "ids": [[aid, target]]}));
    set_by_command(&s, json!(23));
    assert_eq!(pushed_target(&mut held), json!(23.0));
    assert_eq!(
        c.ask(json!({"op": "event", "timeout": 10}))["event"],
        json!([[aid, target, 23.0]])
    );
    c.stop();

    // 6. Restarted on the same data directory (its listener on another free port): the
    // controller verifies with the pairing it holds and reads what was kept.
    drop((sim, held));
    let dir = s.stop();
    let server = restart(&dir);
    let identity = Arc::clone(server.app().homekit().identity().expect("HomeKit is on"));
    assert_eq!(identity.pairings().len(), 1);
    let addr = server.homekit_addr().expect("the HAP listener");
    let mut c = Controller::start(&python, &file, addr.port());
    assert_eq!(
        values(&mut c, &[(aid, current), (aid, target)]),
        [json!(19.5), json!(23.0)]
    );
    c.stop();
    server.shutdown();
}

/// The lock as a real controller meets it on the real server: the hundredth wrong code locks
/// pair-setup (aiohomekit is told `MaxTries`, even with the right code), the control API says
/// so and hides the code, and its unlock gives a new code, which pairs; the old one no longer
/// does.
#[test]
fn aiohomekit_is_refused_while_locked_and_pairs_after_an_unlock() {
    let Some(python) = python() else { return };
    let s = TestServer::start();
    let identity = Arc::clone(s.app().homekit().identity().expect("HomeKit is on"));
    let addr = s.server().homekit_addr().expect("the HAP listener");
    let controller_dir = TempDir::new("hap-controller-locked");
    let file = controller_dir.path().join("pairing.json");
    let old = identity.setup_code();
    let wrong = if old == "101-48-005" {
        "101-48-006"
    } else {
        "101-48-005"
    };
    // 99 counted as pair-setup counts them; the hundredth is aiohomekit's.
    for _ in 1..hearth::hap::pair_setup::MAX_FAILURES {
        identity.count_setup_failure().unwrap();
    }
    assert_eq!(
        get(s.control(), "/api/homekit").json()["locked"],
        json!(false)
    );
    assert_eq!(
        pair(&python, addr, wrong, &file),
        json!({"error": "AuthenticationError"})
    );
    assert_eq!(
        pair(&python, addr, &old, &file),
        json!({"error": "MaxTriesError"})
    );
    let body = get(s.control(), "/api/homekit").json();
    assert_eq!(
        (body["locked"].clone(), body["setup_code"].clone()),
        (json!(true), Value::Null)
    );

    let r = call(s.control(), "POST", "/api/homekit/unlock", "{}");
    assert_eq!(r.status, 200, "{}", r.text());
    let code = r.json()["setup_code"].as_str().unwrap().to_string();
    assert_ne!(code, old);
    assert_eq!(
        pair(&python, addr, &old, &file),
        json!({"error": "AuthenticationError"}),
        "the old code no longer pairs"
    );
    assert_eq!(pair(&python, addr, &code, &file), json!({"ok": true}));
    assert_eq!(identity.pairings().len(), 1);
    assert_eq!(identity.setup_failures(), 0);
}
