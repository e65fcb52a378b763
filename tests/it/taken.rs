//! Changes you can trust (docs/control-api.md, "Whether the thermostat took it"): the latest
//! change to a thermostat is sent, then taken when the thermostat's own report confirms it, on
//! `/status`, `/api/v1` and the event stream; a kind it never confirms stays "sent"; a
//! thermostat that reports but ignores pushes leaves it waiting, and after
//! `ALERT_NOT_APPLIED_MINUTES` a `not_applied` alert reaches ntfy, clearing once it is taken;
//! the record survives a restart.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::hosted::{api, new_key};
use common::*;
use hearth::http::{Reply, Request, Response};
use hearth::simulator::{Options, Thermostat};
use hearth::util::clock::ManualClock;
use parking_lot::Mutex;
use serde_json::{Value, json};

fn last_change(s: &TestServer) -> Value {
    let r = get(s.control(), &format!("/status?serial={SERIAL}"));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["last_change"].clone()
}

#[test]
fn a_setpoint_is_waiting_until_the_thermostat_acknowledges_it_then_taken_everywhere() {
    let s = TestServer::start();
    let (mut sim, _events, mut held) = booted_and_held(&s, SERIAL);
    assert_eq!(last_change(&s), Value::Null, "no change made yet");
    let mut stream = open_events(s.control(), "/api/events");
    assert_eq!(stream.next_chunk().unwrap().unwrap(), b": connected\n\n");

    assert_eq!(
        command(s.control(), SERIAL, "set_temperature", json!(22.5)).status,
        200
    );
    let sent = last_change(&s);
    assert_eq!(sent["kind"], json!("setpoint"));
    assert_eq!(sent["state"], json!("waiting"));
    assert_eq!(sent["taken_at"], Value::Null);
    assert!(sent["sent_at"].as_str().unwrap().ends_with('Z'), "{sent}");
    // The event stream: the setpoint, then that it was sent.
    assert_eq!(next_event(&mut stream)["object_key"], json!(shared()));
    let e = next_event(&mut stream);
    assert_eq!(e["object_key"], json!(format!("change.{SERIAL}")));
    assert_eq!(e["changed"], json!(["sent"]));

    // The thermostat applies the push and acknowledges it.
    let (chunk, _) = next_push(&mut held);
    sim.apply_chunk(&chunk).unwrap();
    assert_eq!(next_event(&mut stream)["object_key"], json!(shared()));
    let e = next_event(&mut stream);
    assert_eq!(
        (
            e["object_key"].clone(),
            e["changed"].clone(),
            e["origin"].clone()
        ),
        (
            json!(format!("change.{SERIAL}")),
            json!(["taken"]),
            json!("device")
        )
    );
    let taken = last_change(&s);
    assert_eq!(taken["state"], json!("taken"));
    assert_eq!(taken["sent_at"], sent["sent_at"]);
    assert!(taken["taken_at"].is_string(), "{taken}");

    // The hosted status says the same.
    let key = new_key(&s, "owner", "read", &[]);
    let r = api(
        &s,
        "GET",
        &format!("/thermostat/{SERIAL}/status"),
        &key,
        Value::Null,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["last_change"], taken);

    // A mode change: the firmware never confirms one, so it is only ever sent.
    assert_eq!(
        command(s.control(), SERIAL, "set_mode", json!("cool")).status,
        200
    );
    let (chunk, _) = next_push(&mut held);
    sim.apply_chunk(&chunk).unwrap();
    sim.put().unwrap();
    let mode = last_change(&s);
    assert_eq!(
        (mode["kind"].clone(), mode["state"].clone()),
        (json!("mode"), json!("sent"))
    );

    // Kept across a restart.
    let dir = s.stop();
    let again = restart(&dir);
    let r = get(again.control_addr(), &format!("/status?serial={SERIAL}"));
    assert_eq!(r.json()["last_change"], mode);
    again.shutdown();
}

/// A local ntfy stand-in: keeps every body it is sent.
fn ntfy() -> (hearth::http::Served, Arc<Mutex<Vec<String>>>) {
    share_process();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let served = hearth::http::serve(
        "ntfy",
        "127.0.0.1:0".parse().unwrap(),
        move |req: Request| {
            log.lock()
                .push(String::from_utf8_lossy(&req.body).into_owned());
            Reply::Full(Response::json(200, &json!({})))
        },
    )
    .unwrap();
    (served, seen)
}

fn active_not_applied(s: &TestServer) -> Option<Value> {
    get(s.control(), "/api/alerts").json()["active"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|a| a["kind"] == json!("not_applied"))
                .cloned()
        })
}

#[test]
fn a_thermostat_that_ignores_pushes_raises_not_applied_until_it_takes_the_change() {
    let time = ManualClock::starting_now();
    let (receiver, seen) = ntfy();
    let s = TestServer::start_with(|c| {
        c.clock = time.clock();
        c.alerts.not_applied_after = Some(Duration::from_secs(15 * 60));
        c.alerts.ntfy_url = Some(format!("http://{}/hearth", receiver.addr()));
    });
    let (tx, _rx) = crossbeam_channel::unbounded();
    let observer: hearth::simulator::Observer = Arc::new(move |_: &str, e: &_| {
        let _ = tx.send(Clone::clone(e));
    });
    let mut opts = Options::new(&s.origin(), SERIAL);
    opts.ignore_pushes = true;
    let mut sim = Thermostat::new(opts, observer);
    sim.report("shared", "name", json!("Hallway"));
    sim.boot().unwrap();
    let mut held = sim.open_subscribe().unwrap();
    s.wait_held(SERIAL, 1);

    assert_eq!(
        command(s.control(), SERIAL, "set_temperature", json!(22.5)).status,
        200
    );
    let sent_ms = time.clock().now_ms();
    // It receives the push and applies none of it: no acknowledgement.
    let (chunk, _) = next_push(&mut held);
    sim.apply_chunk(&chunk).unwrap();
    assert_ne!(
        sim.bucket(&shared()).unwrap()["target_temperature"],
        json!(22.5)
    );
    assert_eq!(last_change(&s)["state"], json!("waiting"));

    // Minute by minute, reporting all the while, until the alert starts: not before 15
    // minutes (its start time says when it started, on the server's clock).
    let mut humidity = 40;
    wait_until("not_applied active", || {
        time.advance(Duration::from_secs(60));
        humidity = if humidity == 40 { 41 } else { 40 };
        sim.report("device", "current_humidity", json!(humidity));
        sim.put().unwrap();
        active_not_applied(&s).is_some()
    });
    let alert = active_not_applied(&s).unwrap();
    let limit = hearth::util::clock::iso8601_ms(sent_ms + 15 * 60_000);
    assert!(
        alert["started_at"].as_str().unwrap() >= limit.as_str(),
        "{alert} started before {limit}"
    );
    assert_eq!(
        alert["message"],
        json!(
            "Hallway has not taken the temperature change sent 15 min ago: it still reports to hearth but is not following changes"
        )
    );
    assert_eq!(last_change(&s)["state"], json!("waiting"));
    wait_until("the alert at ntfy", || {
        seen.lock().iter().any(|b| b.contains("has not taken"))
    });

    // It finally takes it (its acknowledgement): the alert clears.
    sim.report("shared", "target_change_pending", json!(false));
    sim.report("shared", "target_temperature", json!(22.5));
    sim.put().unwrap();
    assert_eq!(last_change(&s)["state"], json!("taken"));
    wait_until("not_applied cleared", || active_not_applied(&s).is_none());
}
