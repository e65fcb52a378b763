//! Black-box tests of subscribe and PUT over real sockets.

use crate::common;

use std::time::Duration;

use common::*;
use hearth::http::client::ChunkStream;
use hearth::hub::Origin;
use hearth::util::clock::ManualClock;
use serde_json::{Value, json};

fn put_shared(s: &TestServer, value: Value) -> Value {
    let r = post_json(
        s.device(),
        "/nest/transport/v7/put",
        SERIAL,
        json!({"objects": [{"object_key": shared(), "value": value}]}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

/// Opens a chunked subscribe listing `objects` and returns the stream after the head.
fn open(s: &TestServer, objects: Value) -> ChunkStream {
    let auth = basic(SERIAL, "pw");
    let body =
        json!({"chunked": true, "session": "18b4300a0001SIM1", "objects": objects}).to_string();
    let stream = ChunkStream::open(
        &url(s.device(), "/nest/transport/v7/subscribe"),
        "POST",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        body.as_bytes(),
        TIMEOUT,
        false,
    )
    .unwrap();
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("Transfer-Encoding"), Some("chunked"));
    stream
}

fn chunk_json(stream: &mut ChunkStream) -> Value {
    let chunk = stream.next_chunk().unwrap().expect("a chunk");
    let text = String::from_utf8(chunk).unwrap();
    assert_wire_order(&text);
    serde_json::from_str(&text).unwrap()
}

#[test]
fn put_answers_receipts_without_values_and_identical_puts_change_nothing() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| c.clock = time.clock());
    let first = put_shared(
        &s,
        json!({"target_temperature": 21.5, "current_temperature": 20.25}),
    );
    let o = &first["objects"][0];
    assert_eq!(o["object_revision"], json!(1));
    assert!(o.get("value").is_none());
    assert_wire_order(&first.to_string());
    let ts = o["object_timestamp"].as_i64().unwrap();
    assert_eq!(ts, time.now_ms());

    // Later, so that a new stamp would show.
    time.advance(Duration::from_secs(1));
    let again = put_shared(&s, json!({"target_temperature": 21.5}));
    assert_eq!(
        again["objects"][0]["object_revision"],
        json!(1),
        "identical PUT keeps the revision"
    );
    assert_eq!(
        again["objects"][0]["object_timestamp"],
        json!(ts),
        "and the timestamp"
    );

    let changed = put_shared(&s, json!({"target_temperature": 22.0}));
    assert_eq!(changed["objects"][0]["object_revision"], json!(2));
    assert_eq!(changed["objects"][0]["object_timestamp"], json!(ts + 1000));
    let stored = s.bucket(SERIAL, &shared()).unwrap();
    assert_eq!(
        Value::Object(stored.value.to_map()),
        json!({"target_temperature": 22.0, "current_temperature": 20.25}),
        "shallow merge; 20.25 round-trips exactly"
    );
}

#[test]
fn put_bucket_keyed_format_and_skips() {
    let s = TestServer::start();
    let r = post_json(
        s.device(),
        "/nest/transport/put",
        SERIAL,
        json!({
            "session": "x",
            "shared.02AA01AC0000SIM1": {"object_key": shared(), "base_object_revision": 3, "target_temperature": 21.5, "target_temperature_type": "heat"},
            "device.02AA01AC0000SIM1": {"object_key": device()},
        }),
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json()["objects"].as_array().unwrap().len(),
        1,
        "empty values are skipped"
    );
    let stored = s.bucket(SERIAL, &shared()).unwrap();
    assert_eq!(
        Value::Object(stored.value.to_map()),
        json!({"target_temperature": 21.5, "target_temperature_type": "heat"})
    );
}

#[test]
fn cas_conflict_answers_server_revision_and_does_not_stop_other_objects() {
    let s = TestServer::start();
    put_shared(&s, json!({"target_temperature": 20.0}));
    put_shared(&s, json!({"target_temperature": 20.5}));
    let server = s.bucket(SERIAL, &shared()).unwrap();
    assert_eq!(server.revision, 2);
    let r = post_json(
        s.device(),
        "/nest/transport/v7/put",
        SERIAL,
        json!({"objects": [
            {"object_key": shared(), "if_object_revision": 1, "value": {"target_temperature": 25.0}},
            {"object_key": device(), "base_object_revision": 0, "value": {"current_humidity": 44}}
        ]}),
    );
    let objects = r.json()["objects"].as_array().unwrap().clone();
    assert_eq!(
        objects[0],
        json!({"object_revision": 2, "object_timestamp": server.timestamp, "object_key": shared()})
    );
    assert_eq!(objects[1]["object_revision"], json!(1));
    assert_eq!(
        s.bucket(SERIAL, &shared()).unwrap(),
        server,
        "the conflicting write changed nothing"
    );
    assert_eq!(
        s.bucket(SERIAL, &device()).unwrap().value.to_map()["current_humidity"],
        json!(44)
    );

    let ok = post_json(
        s.device(),
        "/nest/transport/v7/put",
        SERIAL,
        json!({"objects": [
            {"object_key": shared(), "if_object_revision": 2, "value": {"target_temperature": 25.0}}
        ]}),
    );
    assert_eq!(ok.json()["objects"][0]["object_revision"], json!(3));
}

#[test]
fn a_put_never_pushes_to_held_subscribes_but_publishes_a_change_event() {
    let s = TestServer::start();
    let events = s.app().hub().watch();
    let first = put_shared(&s, json!({"current_temperature": 20.0}));
    let ts = first["objects"][0]["object_timestamp"].as_i64().unwrap();
    let mut held = open(
        &s,
        json!([{"object_key": shared(), "object_revision": 1, "object_timestamp": ts}]),
    );
    s.wait_held(SERIAL, 1);
    put_shared(&s, json!({"current_temperature": 20.5}));
    let ev = events.recv_timeout(TIMEOUT).unwrap();
    assert_eq!(ev.origin, Origin::Device);
    let ev = events.recv_timeout(TIMEOUT).unwrap();
    assert_eq!(
        (
            ev.serial.as_str(),
            ev.change.key.as_str(),
            ev.change.revision
        ),
        (SERIAL, shared().as_str(), 2)
    );
    assert_eq!(ev.change.changed, vec!["current_temperature".to_string()]);
    put_shared(&s, json!({"current_temperature": 20.5}));
    // A server-side change after both PUTs: events and pushes leave in commit order, so
    // anything the PUTs had published would come before what this one does.
    s.server_change(SERIAL, &shared(), json!({"target_temperature": 19.0}));
    let ev = events.recv_timeout(TIMEOUT).unwrap();
    assert_eq!(
        (ev.origin, ev.change.revision),
        (Origin::Server, 3),
        "an identical PUT is not a change"
    );
    let doc = chunk_json(&mut held);
    assert_eq!(
        doc["objects"][0]["object_revision"],
        json!(3),
        "nothing may be pushed for a thermostat's own PUT: {doc}"
    );
}

#[test]
fn subscribe_answers_outdated_objects_and_placeholders_at_once() {
    let s = TestServer::start();
    let put = put_shared(&s, json!({"target_temperature": 21.0}));
    let ts = put["objects"][0]["object_timestamp"].as_i64().unwrap();
    // Non-chunked: answered at once, newer objects and placeholders for unknown buckets.
    let r = post_json(
        s.device(),
        "/nest/transport",
        SERIAL,
        json!({"objects": [
            {"object_key": shared(), "object_revision": 1, "object_timestamp": ts - 1},
            {"object_key": format!("schedule.{SERIAL}"), "object_revision": 0, "object_timestamp": 0},
            {"object_key": device(), "object_revision": 5, "object_timestamp": 1234}
        ]}),
    );
    assert_eq!(r.status, 200);
    assert!(r.header("Transfer-Encoding").is_none());
    for h in [
        "X-nl-service-timestamp",
        "X-nl-suspend-time-max",
        "X-nl-defer-device-window",
    ] {
        assert!(r.header(h).is_some(), "{h}");
    }
    assert_wire_order(&r.text());
    let objects = r.json()["objects"].as_array().unwrap().clone();
    assert_eq!(
        objects.len(),
        2,
        "device is not newer on the server (it has nothing)"
    );
    assert_eq!(objects[0]["value"], json!({"target_temperature": 21.0}));
    assert_eq!(
        objects[1],
        json!({"object_revision": 0, "object_timestamp": 0, "object_key": format!("schedule.{SERIAL}"), "value": {}})
    );
    // In sync: nothing.
    let r = post_json(
        s.device(),
        "/nest/transport/v7/subscribe",
        SERIAL,
        json!({"objects": [
        {"object_key": shared(), "object_revision": 1, "object_timestamp": ts}]}),
    );
    assert_eq!(r.json(), json!({"objects": []}));
    // Format B.
    let r = post_json(
        s.device(),
        "/nest/transport",
        SERIAL,
        json!({"shared": {"object_key": shared(), "object_revision": 0, "object_timestamp": 0}}),
    );
    assert_eq!(
        r.json()["objects"][0]["value"],
        json!({"target_temperature": 21.0})
    );
}

#[test]
fn chunked_immediate_answer_carries_disable_defer_window_for_setpoints() {
    let s = TestServer::start();
    put_shared(&s, json!({"target_temperature": 21.0}));
    let mut stream = open(
        &s,
        json!([{"object_key": shared(), "object_revision": 0, "object_timestamp": 1}]),
    );
    assert_eq!(stream.header("X-nl-disable-defer-window"), Some("60"));
    assert_eq!(stream.header("Connection"), Some("close"));
    let doc = chunk_json(&mut stream);
    assert_eq!(
        doc["objects"][0]["value"]["target_temperature"],
        json!(21.0)
    );
    assert!(
        stream.next_chunk().unwrap().is_none(),
        "one chunk, then the end"
    );

    post_json(
        s.device(),
        "/nest/transport/v7/put",
        SERIAL,
        json!({"objects": [{"object_key": device(), "value": {"h": 1}}]}),
    );
    let mut stream = open(
        &s,
        json!([{"object_key": device(), "object_revision": 0, "object_timestamp": 1}]),
    );
    assert_eq!(stream.header("X-nl-disable-defer-window"), None);
    chunk_json(&mut stream);
}

#[test]
fn inline_update_answers_the_post_update_object() {
    let s = TestServer::start_with(|_| {});
    let r = post_as(
        s.device(),
        "/nest/transport",
        SERIAL,
        json!({"objects": [{"object_key": device(), "object_revision": 0, "object_timestamp": 0, "value": {"current_humidity": 40}}]})
            .to_string()
            .as_bytes(),
    );
    let o = &r.json()["objects"][0];
    assert_eq!(o["object_revision"], json!(1));
    assert!(o["object_timestamp"].as_i64().unwrap() > 0);
    assert_eq!(o["value"], json!({"current_humidity": 40}));
    assert_eq!(s.bucket(SERIAL, &device()).unwrap().revision, 1);
}

#[test]
fn weave_device_id_header_lands_in_the_device_bucket_only() {
    let s = TestServer::start();
    let auth = basic(SERIAL, "pw");
    let body = json!({"objects": [
        {"object_key": device(), "value": {"a": 1}},
        {"object_key": shared(), "value": {"b": 2}}]})
    .to_string();
    hearth::http::client::request(
        &url(s.device(), "/nest/transport/v7/put"),
        "POST",
        &[
            ("Authorization", &auth),
            ("X-nl-weave-device-id", "18B430000A000001"),
        ],
        body.as_bytes(),
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(
        s.bucket(SERIAL, &device()).unwrap().value.to_map()["weave_device_id"],
        json!("18B430000A000001")
    );
    assert!(
        !s.bucket(SERIAL, &shared())
            .unwrap()
            .value
            .to_map()
            .contains_key("weave_device_id")
    );
}

#[test]
fn target_change_pending_acknowledgement_keeps_revision_and_timestamp() {
    let s = TestServer::start();
    s.server_change(
        SERIAL,
        &shared(),
        json!({"target_temperature": 22.0, "target_change_pending": true}),
    );
    let before = s.bucket(SERIAL, &shared()).unwrap();
    let r = post_json(
        s.device(),
        "/nest/transport",
        SERIAL,
        json!({"objects": [
        {"object_key": shared(), "object_revision": before.revision, "object_timestamp": before.timestamp,
         "value": {"target_change_pending": false}}]}),
    );
    assert_eq!(r.json(), json!({"objects": []}));
    let after = s.bucket(SERIAL, &shared()).unwrap();
    assert_eq!(after.value.to_map()["target_change_pending"], json!(false));
    assert_eq!(
        (after.revision, after.timestamp),
        (before.revision, before.timestamp)
    );
}

#[test]
fn a_thermostat_copy_with_a_newer_timestamp_is_kept_verbatim() {
    let s = TestServer::start();
    put_shared(&s, json!({"a": 1}));
    let far = hearth::util::clock::now_ms() + 60_000;
    post_json(
        s.device(),
        "/nest/transport",
        SERIAL,
        json!({"objects": [
        {"object_key": shared(), "object_revision": 77, "object_timestamp": far, "value": {"b": 2}}]}),
    );
    let b = s.bucket(SERIAL, &shared()).unwrap();
    assert_eq!((b.revision, b.timestamp), (77, far));
    assert_eq!(Value::Object(b.value.to_map()), json!({"a": 1, "b": 2}));
}

#[test]
fn held_subscribe_receives_a_push_as_one_chunk_then_more_within_three_seconds_then_ends() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| c.clock = time.clock());
    let mut a = open(
        &s,
        json!([{"object_key": shared(), "object_revision": 0, "object_timestamp": 5}]),
    );
    let mut b = open(
        &s,
        json!([{"object_key": shared(), "object_revision": 0, "object_timestamp": 5}]),
    );
    s.wait_held(SERIAL, 2);

    s.server_change(
        SERIAL,
        &shared(),
        json!({"target_temperature": 22.5, "target_change_pending": true}),
    );
    for stream in [&mut a, &mut b] {
        let doc = chunk_json(stream);
        assert_eq!(doc["objects"][0]["object_key"], json!(shared()));
        assert_eq!(
            doc["objects"][0]["value"]["target_temperature"],
            json!(22.5)
        );
        assert_eq!(doc["objects"][0]["object_revision"], json!(1));
    }
    // Each push opens a 3 s window for more, counted from its write on the server's clock.
    wait_until("the push is written", || s.app().hub().settled(SERIAL));
    time.advance(Duration::from_millis(1000));
    s.server_change(SERIAL, &shared(), json!({"target_temperature": 23.0}));
    for stream in [&mut a, &mut b] {
        let doc = chunk_json(stream);
        assert_eq!(
            doc["objects"][0]["value"]["target_temperature"],
            json!(23.0),
            "second push: its own chunk"
        );
        assert_eq!(doc["objects"][0]["object_revision"], json!(2));
    }
    wait_until("the push is written", || s.app().hub().settled(SERIAL));
    // Past the first push's window, within the second's: still open once the notifier has
    // looked at that time.
    time.advance(Duration::from_millis(2001));
    let at = time.clock().now();
    wait_until("the notifier looks past the first window", || {
        s.app().hub().settled_at(SERIAL, at) || s.app().hub().subscriptions_of(SERIAL) < 2
    });
    assert!(
        s.app().hub().settled_at(SERIAL, at),
        "ended after the first window"
    );
    for stream in [&mut a, &mut b] {
        assert!(nothing_arrived(stream), "still open after the first window");
    }
    time.advance(Duration::from_millis(999));
    for stream in [&mut a, &mut b] {
        assert!(
            stream.next_chunk().unwrap().is_none(),
            "ends with the zero-length chunk"
        );
    }
    s.wait_released(SERIAL);
}

#[test]
fn back_to_back_subscribes_each_receive_the_next_change() {
    // The race itself (a change committed between reading the state and parking) is covered
    // by the hub's unit test `push_during_reservation_is_delivered_on_hold`.
    let s = TestServer::start();
    for i in 0..20 {
        let before = s.bucket(SERIAL, &shared()).map_or(0, |b| b.timestamp);
        let mut stream = open(
            &s,
            json!([{"object_key": shared(), "object_revision": 0, "object_timestamp": before.max(1)}]),
        );
        s.server_change(SERIAL, &shared(), json!({"n": i}));
        let doc = chunk_json(&mut stream);
        assert_eq!(doc["objects"][0]["value"]["n"], json!(i));
    }
}

#[test]
fn hold_ends_with_an_empty_body_after_suspend_time_max_minus_ten() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.clock = time.clock();
        c.suspend_time_max_secs = 12;
    });
    // The head comes while the server's clock stands still: at once.
    let mut stream = open(
        &s,
        json!([{"object_key": shared(), "object_revision": 0, "object_timestamp": 5}]),
    );
    assert_eq!(stream.header("X-nl-suspend-time-max"), Some("12"));
    s.wait_held(SERIAL, 1);
    // Held for 12 - 10 = 2 s of the clock, and not a millisecond less: once the notifier has
    // looked at 1999 ms, the subscribe is still parked, and nothing was written to it.
    time.advance(Duration::from_millis(1999));
    let at = time.clock().now();
    wait_until("the notifier looks at 1999 ms", || {
        s.app().hub().settled_at(SERIAL, at) || s.app().hub().subscriptions_of(SERIAL) == 0
    });
    assert!(
        s.app().hub().settled_at(SERIAL, at),
        "ended before its deadline"
    );
    assert!(nothing_arrived(&mut stream), "ended before its deadline");
    time.advance(Duration::from_millis(1));
    assert!(stream.next_chunk().unwrap().is_none());
    s.wait_released(SERIAL);
}

#[test]
fn at_most_max_subscriptions_are_held() {
    let s = TestServer::start_with(|c| c.max_subscriptions_per_device = 2);
    let _a = open(
        &s,
        json!([{"object_key": shared(), "object_revision": 0, "object_timestamp": 5}]),
    );
    let _b = open(
        &s,
        json!([{"object_key": shared(), "object_revision": 0, "object_timestamp": 5}]),
    );
    s.wait_held(SERIAL, 2);
    let mut c = open(
        &s,
        json!([{"object_key": shared(), "object_revision": 0, "object_timestamp": 5}]),
    );
    assert_eq!(chunk_json(&mut c), json!({"objects": []}));
    assert!(c.next_chunk().unwrap().is_none());
    assert_eq!(s.app().hub().subscriptions_of(SERIAL), 2);
}

#[test]
fn owned_thermostats_get_user_and_structure_buckets() {
    let s = TestServer::start();
    s.set_owner(SERIAL, "user_alice");
    let r = post_json(
        s.device(),
        "/nest/transport",
        SERIAL,
        json!({"objects": [
        {"object_key": shared(), "object_revision": 0, "object_timestamp": 1}]}),
    );
    let objects = r.json()["objects"].as_array().unwrap().clone();
    let by_key = |k: &str| {
        objects
            .iter()
            .find(|o| o["object_key"] == json!(k))
            .cloned()
    };
    assert_eq!(
        by_key("user.user_alice").unwrap()["value"],
        json!({"name": "user_alice"})
    );
    assert_eq!(
        by_key("structure.alice").unwrap()["value"],
        json!({"name": "Home", "devices": [SERIAL]})
    );
    let user = s.bucket(SERIAL, "user.user_alice").unwrap();
    let structure = s.bucket(SERIAL, "structure.alice").unwrap();
    // Listed with current timestamps: no user; the structure only once per server start.
    let r = post_json(
        s.device(),
        "/nest/transport",
        SERIAL,
        json!({"objects": [
        {"object_key": "user.user_alice", "object_revision": user.revision, "object_timestamp": user.timestamp},
        {"object_key": "structure.alice", "object_revision": structure.revision, "object_timestamp": structure.timestamp}]}),
    );
    assert_eq!(r.json(), json!({"objects": []}));
}

#[test]
fn unowned_thermostats_get_structure_default_when_it_exists() {
    let s = TestServer::start();
    let r = post_json(
        s.device(),
        "/nest/transport",
        SERIAL,
        json!({"objects": []}),
    );
    assert_eq!(r.json(), json!({"objects": []}));
    s.server_change(SERIAL, "structure.default", json!({"manual_eco_all": true}));
    let r = post_json(
        s.device(),
        "/nest/transport",
        SERIAL,
        json!({"objects": []}),
    );
    assert_eq!(
        r.json()["objects"][0]["object_key"],
        json!("structure.default")
    );
}

#[test]
fn legacy_transport_paths_work() {
    let s = TestServer::start();
    let r = post_json(
        s.device(),
        "/transport/v5/put",
        SERIAL,
        json!({"objects": [{"object_key": shared(), "value": {"a": 1}}]}),
    );
    assert_eq!(r.status, 200);
    let r = post_json(
        s.device(),
        "/czfe/v5/subscribe",
        SERIAL,
        json!({"objects": [{"object_key": shared(), "object_revision": 0, "object_timestamp": 0}]}),
    );
    assert_eq!(r.json()["objects"][0]["value"], json!({"a": 1}));
    let r = post_json(s.device(), "/transport", SERIAL, json!({"objects": []}));
    assert_eq!(r.status, 200);
}

#[test]
fn the_basic_auth_password_is_kept_as_the_api_key_and_availability_follows_requests() {
    let s = TestServer::start();
    let auth = basic(SERIAL, "c0ffee00");
    hearth::http::client::request(
        &url(s.device(), "/nest/transport/v7/put"),
        "POST",
        &[("Authorization", &auth)],
        json!({"objects": []}).to_string().as_bytes(),
        TIMEOUT,
    )
    .unwrap();
    let meta = s
        .app()
        .state()
        .read_device(SERIAL, |d| d.meta.clone())
        .flatten()
        .unwrap();
    assert_eq!(meta.api_key.as_deref(), Some("c0ffee00"));
    assert_eq!(meta.id.len(), 36);
    let a = s.app().availability(SERIAL);
    assert!(a.available);
    assert!(a.last_seen_ms.is_some());
    assert!(!s.app().availability("02AA01AC0000NONE").available);
}

#[test]
fn chunked_request_bodies_are_read() {
    let s = TestServer::start();
    let body = json!({"objects": [{"object_key": shared(), "value": {"a": 1}}]}).to_string();
    let auth = basic(SERIAL, "pw");
    let request = format!(
        "POST /nest/transport/v7/put HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
        body.len()
    );
    let text = raw(s.device(), request.as_bytes(), TIMEOUT);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert_eq!(s.bucket(SERIAL, &shared()).unwrap().revision, 1);
}

#[test]
fn subscribe_over_http10_is_answered_at_once() {
    let s = TestServer::start();
    let body = json!({"chunked": true, "objects": [{"object_key": shared(), "object_revision": 0, "object_timestamp": 5}]}).to_string();
    let request = format!(
        "POST /nest/transport HTTP/1.0\r\nAuthorization: {}\r\nContent-Length: {}\r\n\r\n{body}",
        basic(SERIAL, "pw"),
        body.len()
    );
    let text = raw(s.device(), request.as_bytes(), TIMEOUT);
    assert!(text.starts_with("HTTP/1.0 200"), "{text}");
    assert!(text.ends_with("{\"objects\":[]}"), "{text}");
}
