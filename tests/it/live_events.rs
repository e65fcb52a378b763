//! `GET /api/events`: Server-Sent Events for commands and for a thermostat's own writes, the
//! `?serial=` filter, the stream limit, and streams that hold no worker.

use crate::common;

use std::time::Duration;

use common::*;
use hearth::http::client::ChunkStream;
use hearth::util::clock::ManualClock;
use serde_json::{Value, json};

fn open(s: &TestServer, target: &str) -> ChunkStream {
    open_events(s.control(), target)
}

#[test]
fn a_command_and_a_thermostats_own_put_each_make_an_event() {
    let s = TestServer::start();
    let (mut sim, _events, mut held) = booted_and_held(&s, SERIAL);
    let mut stream = open(&s, "/api/events");
    assert_eq!(stream.header("Content-Type"), Some("text/event-stream"));
    assert_eq!(stream.header("Cache-Control"), Some("no-cache"));
    // No wildcard CORS: only pages of ALLOWED_ORIGINS are told they may read (tests/it/browser.rs).
    assert_eq!(stream.header("Access-Control-Allow-Origin"), None);
    // Wait until the stream is parked (its first comment arrived) so no event is missed.
    let first = stream.next_chunk().unwrap().unwrap();
    assert_eq!(first, b": connected\n\n");

    command(s.control(), SERIAL, "set_temperature", json!(22));
    let e = next_event(&mut stream);
    let shared = format!("shared.{SERIAL}");
    assert_eq!(e["serial"], json!(SERIAL));
    assert_eq!(e["object_key"], json!(shared));
    assert_eq!(e["origin"], json!("server"));
    let stored = s.bucket(SERIAL, &shared).unwrap();
    assert_eq!(e["revision"], json!(stored.revision));
    assert_eq!(e["timestamp"], json!(stored.timestamp));
    let changed: Vec<&str> = e["changed"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(changed.contains(&"target_temperature"), "{changed:?}");
    // Then that a change was sent (tests/it/taken.rs).
    let e = next_event(&mut stream);
    assert_eq!(e["object_key"], json!(format!("change.{SERIAL}")));
    assert_eq!(e["changed"], json!(["sent"]));

    // The thermostat applies the push and acknowledges it with a PUT of its own, which takes
    // the change.
    let (chunk, _) = next_push(&mut held);
    sim.apply_chunk(&chunk).unwrap();
    let e = next_event(&mut stream);
    assert_eq!(e["origin"], json!("device"));
    assert_eq!(e["object_key"], json!(shared));
    assert_eq!(e["changed"], json!(["target_change_pending"]));
    let e = next_event(&mut stream);
    assert_eq!(e["object_key"], json!(format!("change.{SERIAL}")));
    assert_eq!(e["changed"], json!(["taken"]));

    // The user turns the dial: the thermostat's PUT is an event too.
    sim.turn_dial(19.5);
    sim.put().unwrap();
    let e = next_event(&mut stream);
    assert_eq!(
        (e["origin"].clone(), e["changed"].clone()),
        (json!("device"), json!(["target_temperature"]))
    );
}

#[test]
fn the_serial_filter_keeps_other_thermostats_out() {
    let s = TestServer::start();
    let other = "02AA01AC0000SIM2";
    let (_a, _ea, _ha) = booted_and_held(&s, SERIAL);
    let (_b, _eb, _hb) = booted_and_held(&s, other);
    let mut stream = open(&s, &format!("/api/events?serial={}", SERIAL.to_lowercase()));
    stream.next_chunk().unwrap();
    command(s.control(), other, "set_temperature", json!(18));
    command(s.control(), SERIAL, "set_temperature", json!(20));
    let e = next_event(&mut stream);
    assert_eq!(e["serial"], json!(SERIAL));
}

#[test]
fn at_most_64_streams_and_they_hold_no_worker() {
    // All from 127.0.0.1: the per-address connection cap (64, tests/it/limits.rs) is lifted so
    // that the streams' own limit is the one met.
    let s = TestServer::start_with(|c| {
        c.http_workers = 2;
        c.max_connections_per_client = 100;
        c.max_event_streams_per_client = 64;
    });
    let streams: Vec<ChunkStream> = (0..64).map(|_| open(&s, "/api/events")).collect();
    // From another address, so that it is the total that is full, not this address's share.
    let r = common::from_address::request_from(
        common::from_address::SECOND,
        s.control(),
        "GET /api/events HTTP/1.1",
        &[],
        b"",
    );
    assert_eq!(r.status, 503);
    assert_eq!(r.json(), json!({"error": "Too many event streams open"}));
    // 64 open streams and two workers: ordinary requests are still answered.
    assert_eq!(get(s.control(), "/health").status, 200);
    assert_eq!(
        get(s.control(), "/api/stats").json()["event_streams"],
        json!(64)
    );
    drop(streams);
    // A closed stream is dropped when a write to it fails (the first write after the client
    // left may still be accepted by the kernel): events or the 15 s keep-alive do it.
    let mut n = 0;
    wait_until("the closed streams are dropped", || {
        n += 1;
        s.server_change(SERIAL, &format!("shared.{SERIAL}"), json!({"x": n}));
        s.app().events().open_count() == 0
    });
    assert_eq!(open(&s, "/api/events").status, 200);
}

/// Reads from a raw stream until `wanted` has arrived; gives everything read.
fn read_until(stream: &mut std::net::TcpStream, wanted: &str) -> String {
    use std::io::Read;
    let mut text = String::new();
    let mut buf = [0u8; 4096];
    while !text.contains(wanted) {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended before {wanted:?}: {text:?}");
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    text
}

/// One address may hold `MAX_EVENT_STREAMS_PER_CLIENT` streams (8 by default); one more from
/// it gets 429 and takes no place, while another address still gets a stream and its events.
#[test]
fn one_client_address_holds_at_most_8_streams_and_another_still_gets_one() {
    use common::from_address::{SECOND, connect_from, request_from};
    use std::io::Write;
    let s = TestServer::start();
    let mine: Vec<ChunkStream> = (0..8).map(|_| open(&s, "/api/events")).collect();
    let r = get(s.control(), "/api/events");
    assert_eq!(
        (r.status, r.json()),
        (
            429,
            json!({"error": "Too many event streams open from this address (at most 8): close one first"})
        )
    );
    assert_eq!(
        s.app().events().open_count(),
        8,
        "the refused one took no place"
    );
    // Another address: its stream opens and carries the next event.
    let mut theirs = connect_from(SECOND, s.control());
    theirs
        .write_all(
            b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n",
        )
        .unwrap();
    let head = read_until(&mut theirs, ": connected");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(s.app().events().open_count(), 9);
    s.server_change(SERIAL, &format!("shared.{SERIAL}"), json!({"x": 1}));
    read_until(&mut theirs, "\"changed\":[\"x\"]");
    // ... and its ordinary requests are answered.
    let health = request_from(SECOND, s.control(), "GET /health HTTP/1.1", &[], b"");
    assert_eq!(health.status, 200);
    // A stream given back makes room for this address again.
    drop(mine);
    let mut n = 1;
    wait_until("the closed streams are dropped", || {
        n += 1;
        s.server_change(SERIAL, &format!("shared.{SERIAL}"), json!({"x": n}));
        s.app().events().open_count() == 1
    });
    assert_eq!(open(&s, "/api/events").status, 200);
}

#[test]
fn an_idle_stream_gets_keep_alive_comments_and_head_opens_none() {
    // Keep-alives are timed on the server's clock: each comes when the clock has moved on by
    // the interval, and none before.
    let time = ManualClock::starting_now();
    let keep_alive = Duration::from_secs(15);
    let s = TestServer::start_with(|c| {
        c.clock = time.clock();
        c.event_keep_alive = keep_alive;
    });
    let mut stream = open(&s, "/api/events");
    assert_eq!(stream.next_chunk().unwrap().unwrap(), b": connected\n\n");
    // The streams' thread has handed out all that was due at the clock's time, and every
    // write is done: what a stream has not received by then was not sent.
    let settled = || {
        let now = time.clock().now();
        wait_until("the event streams settle", || {
            s.app().events().settled_at(now)
        });
    };
    for _ in 0..2 {
        settled();
        time.advance(keep_alive - Duration::from_millis(1));
        settled();
        assert!(nothing_arrived(&mut stream), "a keep-alive came early");
        time.advance(Duration::from_millis(1));
        assert_eq!(stream.next_chunk().unwrap().unwrap(), b": keep-alive\n\n");
    }
    // HEAD answers the stream's headers and takes no place among the streams.
    let r =
        hearth::http::client::request(&url(s.control(), "/api/events"), "HEAD", &[], &[], TIMEOUT)
            .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Type"), Some("text/event-stream"));
    assert_eq!(s.app().events().open_count(), 1);
}

/// The next chunk that is not a comment, as text.
fn next_text(stream: &mut ChunkStream) -> String {
    loop {
        let chunk = stream.next_chunk().unwrap().expect("the stream ended");
        let text = String::from_utf8(chunk).unwrap();
        if !text.starts_with(':') {
            return text;
        }
    }
}

fn notice(serial: &str, event: hearth::alerts::Event) -> hearth::alerts::Notice {
    hearth::alerts::Notice {
        event,
        alert: hearth::alerts::Alert {
            id: format!("offline-{serial}"),
            serial: serial.to_string(),
            kind: hearth::alerts::Kind::Offline,
            started_at: "2026-11-26T10:00:00.000Z".to_string(),
            cleared_at: None,
            message: "Hallway has not been in touch for 30 minutes".to_string(),
        },
    }
}

#[test]
fn alert_events_go_only_to_streams_that_ask_for_them() {
    use hearth::alerts::Event;
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let mut plain = open(&s, "/api/events");
    let mut asked = open(&s, "/api/events?alerts=1");
    let mut one = open(&s, &format!("/api/events?serial={SERIAL}&alerts=true"));
    for stream in [&mut plain, &mut asked, &mut one] {
        assert_eq!(stream.next_chunk().unwrap().unwrap(), b": connected\n\n");
    }

    // Another thermostat's alert, then this one's: named `alert`, the notice as the webhook's.
    let other = "02AA01AC0000SIM2";
    s.app().alerts().note(notice(other, Event::Started));
    s.app().alerts().note(notice(SERIAL, Event::Started));
    let text = next_text(&mut asked);
    assert!(text.starts_with("event: alert\ndata: "), "{text:?}");
    let first = next_event_of(&text);
    assert_eq!(first["event"], "started");
    assert_eq!(first["alert"]["serial"], other);
    assert_eq!(
        next_event_of(&next_text(&mut asked))["alert"]["serial"],
        SERIAL
    );
    // The serial filter applies to alerts as to changes.
    let mine = next_event_of(&next_text(&mut one));
    assert_eq!(mine["alert"]["serial"], SERIAL);
    assert_eq!(mine["alert"]["kind"], "offline");

    // The plain stream got neither: the change that follows is the first thing it sees (the
    // notices were handed out, to the streams that wanted them, before it was made).
    command(s.control(), SERIAL, "set_temperature", json!(22));
    let e = next_event(&mut plain);
    assert_eq!(e["object_key"], json!(format!("shared.{SERIAL}")));
}

fn next_event_of(text: &str) -> Value {
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    serde_json::from_str(&data.join("\n")).unwrap()
}

#[test]
fn a_bad_alerts_parameter_is_refused_and_opens_no_stream() {
    let s = TestServer::start();
    let r = hearth::http::client::request(
        &url(s.control(), "/api/events?alerts=yes"),
        "GET",
        &[],
        &[],
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json(),
        json!({"error": "alerts must be 1 (alert events too) or 0"})
    );
    assert_eq!(s.app().events().open_count(), 0);
}

/// With pairing required, the alerts of a thermostat nobody owns stay out of every stream, as
/// its changes do: the first alert a stream gets is the owned thermostat's, noted after.
#[test]
fn in_pairing_mode_an_unowned_thermostats_alerts_stay_out() {
    use hearth::alerts::Event;
    let s = TestServer::start_with(|c| c.require_device_pairing = true);
    s.set_owner(SERIAL, "alice");
    let mut stream = open(&s, "/api/events?alerts=1");
    assert_eq!(stream.next_chunk().unwrap().unwrap(), b": connected\n\n");
    s.app()
        .alerts()
        .note(notice("02AA01AC0000SIM2", Event::Started));
    s.app().alerts().note(notice(SERIAL, Event::Started));
    let first = next_event_of(&next_text(&mut stream));
    assert_eq!(first["alert"]["serial"], SERIAL);
}
