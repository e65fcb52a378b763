//! The HomeKit bridge's accessory side (`homekit::Bridge`) against a real in-process server and
//! simulated thermostats: what the attribute database lists, reads, writes through the
//! thermostat core, events, accessory ids and the configuration number. The HAP transport is
//! not involved: the bridge is called as the transport calls it.

use crate::common;

use common::homekit::{bridge_of, characteristic, database};
use common::*;
use crossbeam_channel::Receiver;
use hearth::homekit::{Attributes, Bridge, Reply, Sent, Subscriptions};
use serde_json::{Value, json};

const OTHER: &str = "02AA01AC0000SIM2";
const NOT_FOUND: i64 = -70409;
const INVALID: i64 = -70410;

fn body(r: &Reply) -> Value {
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{e}: {r:?}"))
}

/// The accessory `aid` in the database.
fn accessory(db: &Value, aid: u64) -> Value {
    db["accessories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["aid"] == json!(aid))
        .cloned()
        .unwrap_or_else(|| panic!("no accessory {aid} in {db}"))
}

/// The iid of a Thermostat service characteristic of thermostat `aid`.
fn iid(b: &Bridge, aid: u64, char_type: &str) -> u64 {
    characteristic(&accessory(&database(b), aid), "4A", char_type)["iid"]
        .as_u64()
        .unwrap()
}

fn write(b: &Bridge, items: Value) -> Reply {
    let body = json!({ "characteristics": items }).to_string();
    b.write(body.as_bytes(), &mut Subscriptions::new(), &mut Sent::new())
}

fn shared_value(doc: &Value, field: &str) -> Value {
    object(doc, &shared())["value"][field].clone()
}

/// Forgets the signals already pending, so the next one is for what a test does next.
fn drain(rx: &Receiver<()>) {
    while rx.try_recv().is_ok() {}
}

fn signalled(rx: &Receiver<()>) {
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .expect("a watch signal");
}

#[test]
fn the_database_lists_the_thermostat_by_its_page_name_and_reads_what_it_reported() {
    let s = TestServer::start();
    let (mut sim, _events, _held) = booted_and_held(&s, SERIAL);
    sim.report("shared", "name", json!("Hallway"));
    sim.put().unwrap();
    let b = bridge_of(s.server().app());
    let db = database(&b);
    assert_eq!(db["accessories"].as_array().unwrap().len(), 2, "{db}");

    let bridge = accessory(&db, 1);
    let info = |a: &Value, t: &str| characteristic(a, "3E", t)["value"].clone();
    assert_eq!(info(&bridge, "23"), json!("hearth"));
    assert_eq!(info(&bridge, "20"), json!("hearth"));
    assert_eq!(info(&bridge, "52"), json!(env!("CARGO_PKG_VERSION")));
    assert_eq!(characteristic(&bridge, "A2", "37")["value"], json!("1.1.0"));

    let aid = b.aid_of(SERIAL).unwrap();
    assert_eq!(aid, 2);
    let thermostat = accessory(&db, aid);
    let page = get(s.control(), "/api/devices").json();
    assert_eq!(page["devices"][0]["name"], json!("Hallway"));
    assert_eq!(info(&thermostat, "23"), json!("Hallway"));
    assert_eq!(info(&thermostat, "30"), json!(SERIAL));
    let modes = characteristic(&thermostat, "4A", "33");
    assert_eq!(modes["valid-values"], json!([0, 1, 2, 3]));
    assert_eq!(modes["perms"], json!(["pr", "pw", "ev"]));
    let target = characteristic(&thermostat, "4A", "35");
    // The safety bounds (7.222 to 35 °C: 45 to 95 °F) outward to the 0.5 grid, so a target
    // the core clamped to 7.222 still lies within them.
    assert_eq!(
        (&target["minValue"], &target["maxValue"], &target["minStep"]),
        (&json!(7.0), &json!(35.0), &json!(0.5))
    );
    assert_eq!(
        characteristic(&thermostat, "4A", "10")["value"],
        json!(44.0)
    );
    assert_eq!(
        characteristic(&thermostat, "49", "25")["value"],
        json!(false)
    );

    let current = iid(&b, aid, "11");
    let query = format!("id={aid}.{current}&meta=1&perms=1&type=1&ev=1");
    let r = b.read(&query, &Subscriptions::new());
    assert_eq!(r.status, 200);
    assert_eq!(
        body(&r),
        json!({"characteristics": [{"aid": aid, "iid": current, "value": 20.5, "format": "float",
            "unit": "celsius", "minValue": -50.0, "maxValue": 100.0, "minStep": 0.1,
            "perms": ["pr", "ev"], "type": "11", "ev": false}]})
    );
    // `ev` says whether this connection subscribed.
    let subscribed = Subscriptions::from([(aid, current)]);
    assert_eq!(
        body(&b.read(&query, &subscribed))["characteristics"][0]["ev"],
        json!(true)
    );
    sim.report("shared", "current_temperature", json!(19.0));
    sim.put().unwrap();
    let r = b.read(&format!("id={aid}.{current}"), &Subscriptions::new());
    assert_eq!(
        body(&r),
        json!({"characteristics": [{"aid": aid, "iid": current, "value": 19.0}]})
    );
}

#[test]
fn writes_reach_the_held_subscribe_clamped_as_command_clamps_them() {
    let s = TestServer::start();
    let (_sim, _events, mut held) = booted_and_held(&s, SERIAL);
    let b = bridge_of(s.server().app());
    let aid = b.aid_of(SERIAL).unwrap();

    // What /command does with 40 °C...
    assert_eq!(
        command(s.control(), SERIAL, "set_temperature", json!(40)).status,
        200
    );
    let by_command = shared_value(&next_push(&mut held).1, "target_temperature");
    assert_eq!(
        command(s.control(), SERIAL, "set_temperature", json!(21)).status,
        200
    );
    let _ = next_push(&mut held);
    // ...HomeKit does too; and an exact value stays exact, as on /command.
    let target = iid(&b, aid, "35");
    for (asked, pushed) in [(json!(40), by_command), (json!(21.3), json!(21.3))] {
        let r = write(&b, json!([{"aid": aid, "iid": target, "value": asked}]));
        assert_eq!((r.status, r.body.len()), (204, 0), "{r:?}");
        assert_eq!(
            shared_value(&next_push(&mut held).1, "target_temperature"),
            pushed
        );
    }

    // Heat-cool, then both thresholds at once: one range, though the new low is above the old
    // high (24 °C), which alone would be refused.
    let r = write(
        &b,
        json!([{"aid": aid, "iid": iid(&b, aid, "33"), "value": 3}]),
    );
    assert_eq!(r.status, 204, "{r:?}");
    let doc = next_push(&mut held).1;
    assert_eq!(
        shared_value(&doc, "target_temperature_type"),
        json!("range")
    );
    let r = write(
        &b,
        json!([{"aid": aid, "iid": iid(&b, aid, "12"), "value": 26},
               {"aid": aid, "iid": iid(&b, aid, "D"), "value": 28}]),
    );
    assert_eq!(r.status, 204, "{r:?}");
    let doc = next_push(&mut held).1;
    assert_eq!(
        (
            shared_value(&doc, "target_temperature_low"),
            shared_value(&doc, "target_temperature_high")
        ),
        (json!(26.0), json!(28.0))
    );

    // Display units are the thermostat's scale, a device setting.
    let r = write(
        &b,
        json!([{"aid": aid, "iid": iid(&b, aid, "36"), "value": 1}]),
    );
    assert_eq!(r.status, 204, "{r:?}");
    let doc = next_push(&mut held).1;
    assert_eq!(
        object(&doc, &device())["value"]["temperature_scale"],
        json!("F")
    );

    // The away switch is the home's away, as set_away sets it; "r" answers with the value.
    let db = database(&b);
    let away = characteristic(&accessory(&db, aid), "49", "25")["iid"]
        .as_u64()
        .unwrap();
    let r = write(
        &b,
        json!([{"aid": aid, "iid": away, "value": 1, "r": true}]),
    );
    assert_eq!(r.status, 207);
    assert_eq!(
        body(&r),
        json!({"characteristics": [{"aid": aid, "iid": away, "status": 0, "value": true}]})
    );
    let doc = next_push(&mut held).1;
    assert_eq!(
        object(&doc, "structure.default")["value"]["manual_eco_all"],
        json!(true)
    );
}

#[test]
fn refused_writes_answer_hap_statuses_and_change_nothing() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    s.server_change(SERIAL, &shared(), json!({"can_cool": false}));
    let b = bridge_of(s.server().app());
    let aid = b.aid_of(SERIAL).unwrap();
    let (current, mode, low, high) = (
        iid(&b, aid, "11"),
        iid(&b, aid, "33"),
        iid(&b, aid, "12"),
        iid(&b, aid, "D"),
    );
    let before = store_bytes(s.dir.path());
    let r = write(
        &b,
        json!([
            {"aid": aid, "iid": current, "value": 30},
            {"aid": aid, "iid": 99, "value": 1},
            {"aid": 99, "iid": current, "value": 1},
            {"aid": aid, "iid": mode, "value": 2},
            {"aid": aid, "iid": iid(&b, aid, "35"), "value": "warm"},
            {"aid": aid, "iid": low, "value": 30},
            {"aid": aid, "iid": high, "value": 20},
            {"aid": 1, "iid": 5, "ev": true},
        ]),
    );
    assert_eq!(r.status, 207);
    let statuses: Vec<Value> = body(&r)["characteristics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].clone())
        .collect();
    // Read-only, no such characteristic, no such accessory, a mode it cannot do (valid-values),
    // not a number, a range the core refuses (low not below high), no notifications on a name.
    assert_eq!(
        statuses,
        [
            -70404, NOT_FOUND, NOT_FOUND, INVALID, INVALID, INVALID, INVALID, -70406
        ]
        .map(|s| json!(s))
    );
    assert_eq!(
        characteristic(&accessory(&database(&b), aid), "4A", "33")["valid-values"],
        json!([0, 1])
    );
    for bad in [&b"{"[..], br#"{"characteristics":[{"aid":2}]}"#, b"[]"] {
        let r = b.write(bad, &mut Subscriptions::new(), &mut Sent::new());
        assert_eq!((r.status, body(&r)), (400, json!({"status": INVALID})));
    }
    assert!(
        store_bytes(s.dir.path()) == before,
        "refusals change nothing"
    );

    // Reads: an unknown one and the write-only Identify fail alone, beside a good one.
    let r = b.read(
        &format!("id={aid}.{current},{aid}.99,1.2"),
        &Subscriptions::new(),
    );
    assert_eq!(r.status, 207);
    assert_eq!(
        body(&r),
        json!({"characteristics": [
            {"aid": aid, "iid": current, "value": 20.5, "status": 0},
            {"aid": aid, "iid": 99, "status": NOT_FOUND},
            {"aid": 1, "iid": 2, "status": -70405},
        ]})
    );
    let r = b.read("id=two.1", &Subscriptions::new());
    assert_eq!((r.status, body(&r)), (400, json!({"status": INVALID})));
}

#[test]
fn events_follow_other_surfaces_changes_and_not_the_writers_own() {
    let s = TestServer::start();
    let (mut sim, _events, _held) = booted_and_held(&s, SERIAL);
    let b = bridge_of(s.server().app());
    let aid = b.aid_of(SERIAL).unwrap();
    let target = iid(&b, aid, "35");
    let watch = b.watch();
    let subscribe = json!({"characteristics": [{"aid": aid, "iid": target, "ev": true}]});
    let subscribe = subscribe.to_string();
    let (mut writer, mut writer_sent) = (Subscriptions::new(), Sent::new());
    let (mut other, mut other_sent) = (Subscriptions::new(), Sent::new());
    for (subs, sent) in [
        (&mut writer, &mut writer_sent),
        (&mut other, &mut other_sent),
    ] {
        let r = b.write(subscribe.as_bytes(), subs, sent);
        assert_eq!(r.status, 204, "{r:?}");
    }
    assert_eq!(b.changed(&writer, &mut writer_sent), None);

    drain(&watch);
    let r = b.write(
        json!({"characteristics": [{"aid": aid, "iid": target, "value": 22}]})
            .to_string()
            .as_bytes(),
        &mut writer,
        &mut writer_sent,
    );
    assert_eq!(r.status, 204);
    signalled(&watch);
    let expected = |v: f64| {
        Some(
            json!({"characteristics": [{"aid": aid, "iid": target, "value": v}]})
                .to_string()
                .into_bytes(),
        )
    };
    // The other connection hears of it; the writer, which was answered, does not.
    assert_eq!(b.changed(&other, &mut other_sent), expected(22.0));
    assert_eq!(b.changed(&writer, &mut writer_sent), None);

    // A change on another surface reaches both.
    drain(&watch);
    assert_eq!(
        command(s.control(), SERIAL, "set_temperature", json!(23)).status,
        200
    );
    signalled(&watch);
    assert_eq!(b.changed(&writer, &mut writer_sent), expected(23.0));
    assert_eq!(b.changed(&other, &mut other_sent), expected(23.0));
    assert_eq!(b.changed(&other, &mut other_sent), None, "sent once");

    // So does the thermostat's own report of the room's temperature.
    let current = iid(&b, aid, "11");
    let ev = json!({"characteristics": [{"aid": aid, "iid": current, "ev": true}]}).to_string();
    assert_eq!(
        b.write(ev.as_bytes(), &mut other, &mut other_sent).status,
        204
    );
    assert_eq!(b.changed(&other, &mut other_sent), None);
    drain(&watch);
    sim.report("shared", "current_temperature", json!(18.5));
    sim.put().unwrap();
    signalled(&watch);
    assert_eq!(
        b.changed(&other, &mut other_sent),
        Some(
            json!({"characteristics": [{"aid": aid, "iid": current, "value": 18.5}]})
                .to_string()
                .into_bytes()
        )
    );

    // Unsubscribed: nothing more.
    let r = b.write(
        json!({"characteristics": [{"aid": aid, "iid": target, "ev": false}]})
            .to_string()
            .as_bytes(),
        &mut writer,
        &mut writer_sent,
    );
    assert_eq!(r.status, 204);
    assert!(writer.is_empty());
}

#[test]
fn accessory_ids_and_the_configuration_number_follow_the_set_of_thermostats() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let b = bridge_of(s.server().app());
    let first = b.config_number();
    assert_eq!(b.config_number(), first, "nothing changed");
    assert_eq!(b.aid_of(SERIAL), Some(2));
    let watch = b.watch();

    drain(&watch);
    // A second thermostat: its own id, a new configuration number, and a signal.
    let (_sim2, _events2, _held2) = booted_and_held(&s, OTHER);
    signalled(&watch);
    assert_eq!(b.aid_of(OTHER), Some(3));
    let added = b.config_number();
    assert_ne!(added, first);
    assert_eq!(database(&b)["accessories"].as_array().unwrap().len(), 3);

    // Removed: gone from the database (a signal, though no thermostat's state changed), the
    // number moves again; added back: the same id.
    drain(&watch);
    assert_eq!(remove_device(s.control(), OTHER).status, 200);
    signalled(&watch);
    assert_eq!(b.aid_of(OTHER), None);
    let db = database(&b);
    assert_eq!(db["accessories"].as_array().unwrap().len(), 2, "{db}");
    let read = b.read(&format!("id=3.{}", iid(&b, 2, "11")), &Subscriptions::new());
    assert_eq!(
        body(&read)["characteristics"][0]["status"],
        json!(NOT_FOUND)
    );
    assert_ne!(b.config_number(), added);
    let r = call(
        s.control(),
        "POST",
        "/api/adopt",
        &json!({"serial": OTHER}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(b.aid_of(OTHER), Some(3));
    let back = b.config_number();

    // A restart changes neither the ids nor the number.
    drop(b);
    let dir = s.stop();
    let server = restart(&dir);
    let b = bridge_of(server.app());
    assert_eq!((b.aid_of(SERIAL), b.aid_of(OTHER)), (Some(2), Some(3)));
    assert_eq!(b.config_number(), back);
    drop(b);
    server.shutdown();
}

#[test]
fn in_pairing_mode_a_thermostat_appears_once_it_is_claimed() {
    let s = pairing();
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.register().unwrap();
    let (code, _) = sim.passphrase().unwrap();
    assert!(s.app().state().device_exists(SERIAL));
    let b = bridge_of(s.server().app());
    let watch = b.watch();
    // Unclaimed: nobody's, so not in the database.
    assert_eq!(b.aid_of(SERIAL), None);
    assert_eq!(database(&b)["accessories"].as_array().unwrap().len(), 1);
    let unclaimed = b.config_number();
    drain(&watch);
    let body = json!({"code": code, "userId": "alice"}).to_string();
    let r = call(s.control(), "POST", "/api/register", &body);
    assert_eq!(r.json()["success"], json!(true), "{}", r.text());
    signalled(&watch);
    assert_eq!(b.aid_of(SERIAL), Some(2));
    assert_ne!(b.config_number(), unclaimed);
}

/// Battery percent, one field of the reading, reaches `/status`, the page's `/api/devices`,
/// `/api/v1` status and HomeKit's Battery service alike; a change of the voltage moves each.
#[test]
fn the_battery_reaches_every_surface_from_one_reading() {
    let s = TestServer::start();
    let (mut sim, _events, _held) = booted_and_held(&s, SERIAL);
    let b = bridge_of(s.server().app());
    let key = common::hosted::new_key(&s, "owner", "read", &[]);
    let seen = |s: &TestServer| {
        let status = get(s.control(), &format!("/status?serial={SERIAL}")).json();
        let page = get(s.control(), "/api/devices").json();
        let path = format!("/thermostat/{SERIAL}/status");
        let hosted = common::hosted::api(s, "GET", &path, &key, Value::Null).json();
        let aid = b.aid_of(SERIAL).unwrap();
        let homekit = characteristic(&accessory(&database(&b), aid), "96", "68")["value"].clone();
        [
            status["battery_percent"].clone(),
            page["devices"][0]["battery_percent"].clone(),
            hosted["battery_percent"].clone(),
            homekit,
        ]
    };
    // The simulated thermostat reports 3.93 V.
    assert_eq!(seen(&s), [json!(86), json!(86), json!(86), json!(86)]);
    sim.report("device", "battery_level", json!(3.6));
    sim.put().unwrap();
    assert_eq!(seen(&s), [json!(20), json!(20), json!(20), json!(20)]);
    let aid = b.aid_of(SERIAL).unwrap();
    let low = characteristic(&accessory(&database(&b), aid), "96", "79");
    assert_eq!(low["value"], json!(1), "below the firmware's low point");
}
