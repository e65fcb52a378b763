//! Every bad input gets a clear error and changes nothing.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::*;
use serde_json::json;

const ROUTES: [&str; 3] = [
    "/nest/transport/v7/put",
    "/nest/transport/v7/subscribe",
    "/transport/put",
];

/// Sends `body` to every transport route and checks the status, the exact body, and that the
/// store did not change.
fn refused(s: &TestServer, body: &[u8], status: u16, expected: &str) {
    let before = store_bytes(s.dir.path());
    for route in ROUTES {
        let r = post_as(s.device(), route, SERIAL, body);
        assert_eq!(
            (r.status, r.text().as_str()),
            (status, expected),
            "{route} with {:?}",
            String::from_utf8_lossy(body)
        );
    }
    assert_eq!(store_bytes(s.dir.path()), before);
    assert!(!s.app().state().device_exists(SERIAL));
}

#[test]
fn bodies_that_are_not_json_objects() {
    let s = TestServer::start();
    refused(&s, b"{not json", 400, r#"{"error":"Invalid JSON"}"#);
    refused(&s, b"", 400, r#"{"error":"Invalid JSON"}"#);
    refused(
        &s,
        b"[1,2,3]",
        400,
        r#"{"error":"Invalid request body: expected a JSON object"}"#,
    );
    refused(
        &s,
        b"42",
        400,
        r#"{"error":"Invalid request body: expected a JSON object"}"#,
    );
    refused(
        &s,
        b"\"text\"",
        400,
        r#"{"error":"Invalid request body: expected a JSON object"}"#,
    );
    refused(
        &s,
        b"{\"objects\": [\xff\xfe]}",
        400,
        r#"{"error":"Invalid request body: not valid UTF-8"}"#,
    );
}

#[test]
fn requests_without_a_serial() {
    let s = TestServer::start();
    let before = store_bytes(s.dir.path());
    for route in ROUTES {
        let body = json!({"objects": [{"object_key": "shared.X", "value": {"a": 1}}]}).to_string();
        let r = hearth::http::client::request(
            &url(s.device(), route),
            "POST",
            &[],
            body.as_bytes(),
            TIMEOUT,
        )
        .unwrap();
        assert_eq!(
            (r.status, r.text().as_str()),
            (400, r#"{"error":"Device serial required"}"#),
            "{route}"
        );
        // A serial too short to be real counts as none.
        let r = post_as(s.device(), route, "SHORT", body.as_bytes());
        assert_eq!(r.status, 400, "{route}");
    }
    assert_eq!(store_bytes(s.dir.path()), before);
}

#[test]
fn credentials_or_query_that_do_not_decode_to_utf8() {
    let s = TestServer::start();
    let before = store_bytes(s.dir.path());
    let bad_auth = format!("Basic {}", base64_of(&[0xff, 0xfe, b':', b'x']));
    let body = json!({"objects": [{"object_key": "shared.X", "value": {"a": 1}}]}).to_string();
    let r = hearth::http::client::request(
        &url(s.device(), "/nest/transport/v7/put"),
        "POST",
        &[("Authorization", &bad_auth)],
        body.as_bytes(),
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(
        (r.status, r.text().as_str()),
        (400, r#"{"error":"Invalid Authorization header"}"#)
    );
    let r = hearth::http::client::request(
        &url(s.device(), "/nest/transport/v7/put?serial=%FF%FE%FD"),
        "POST",
        &[],
        body.as_bytes(),
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(
        (r.status, r.text().as_str()),
        (400, r#"{"error":"Invalid query string"}"#)
    );
    assert_eq!(store_bytes(s.dir.path()), before);
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn raw_non_ascii_header_bytes_get_400_and_the_server_keeps_serving() {
    let s = TestServer::start();
    let text = raw(
        s.device(),
        b"GET /nest/ping HTTP/1.1\r\nX-Bad: \xff\xfe\r\n\r\n",
        Duration::from_secs(5),
    );
    assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{text}");
    assert!(text.contains("\r\nConnection: close\r\n"), "{text}");
    assert!(text.ends_with(r#"{"error":"Malformed request"}"#), "{text}");
    assert_eq!(get(s.device(), "/nest/ping").status, 200);
}

#[test]
fn a_body_over_one_mebibyte_is_refused_unread() {
    let s = TestServer::start();
    let before = store_bytes(s.dir.path());
    // Declared length: answered before the body is sent.
    let mut sock = TcpStream::connect(s.device()).unwrap();
    sock.set_read_timeout(Some(TIMEOUT)).unwrap();
    let head = format!(
        "POST /nest/transport/v7/put HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nContent-Length: {}\r\n\r\n",
        basic(SERIAL, "pw"),
        2 * 1024 * 1024
    );
    sock.write_all(head.as_bytes()).unwrap();
    sock.write_all(&[b' '; 4096]).unwrap();
    let mut answer = vec![0u8; 512];
    let n = sock.read(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]).to_string();
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        answer.ends_with(r#"{"error":"Request body too large"}"#),
        "{answer}"
    );

    // A chunked body with no declared length: cut off at the limit.
    let big = vec![b'x'; 1024 * 1024 + 10];
    let mut request = format!(
        "POST /nest/transport/v7/put HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
        basic(SERIAL, "pw"),
        big.len()
    )
    .into_bytes();
    request.extend_from_slice(&big);
    request.extend_from_slice(b"\r\n0\r\n\r\n");
    let text = raw(s.device(), &request, TIMEOUT);
    assert!(
        text.starts_with("HTTP/1.1 413"),
        "{}",
        &text[..text.len().min(200)]
    );
    assert!(text.contains(r#"{"error":"Request body too large"}"#));

    // Exactly at the limit is fine (it fails as JSON, not as size).
    let at_limit = vec![b' '; 1024 * 1024];
    let r = post_as(s.device(), "/nest/transport/v7/put", SERIAL, &at_limit);
    assert_eq!(
        (r.status, r.text().as_str()),
        (400, r#"{"error":"Invalid JSON"}"#)
    );
    assert_eq!(store_bytes(s.dir.path()), before);
}

#[test]
fn a_content_length_of_ten_to_the_twelfth_gets_413_and_the_server_keeps_serving() {
    let s = TestServer::start();
    for _ in 0..3 {
        let request = format!(
            "POST /nest/transport/v7/put HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nContent-Length: 1000000000000\r\n\r\n{{",
            basic(SERIAL, "pw")
        );
        let text = raw(s.device(), request.as_bytes(), TIMEOUT);
        assert!(text.starts_with("HTTP/1.1 413"), "{text}");
        assert!(
            text.ends_with(r#"{"error":"Request body too large"}"#),
            "{text}"
        );
    }
    // Still serving, on both ports, and nothing was stored.
    assert_eq!(get(s.device(), "/nest/ping").status, 200);
    assert_eq!(get(s.control(), "/health").status, 200);
    let r = post_json(
        s.device(),
        "/nest/transport/v7/put",
        SERIAL,
        json!({"objects": []}),
    );
    assert_eq!(r.status, 200);
    assert!(s.bucket(SERIAL, &format!("shared.{SERIAL}")).is_none());
}

#[test]
fn uploads_have_their_own_larger_limit() {
    let s = TestServer::start_with(|c| c.store_device_logs = true);
    let two_mib = vec![b'l'; 2 * 1024 * 1024];
    assert_eq!(
        post_as(s.device(), "/nest/upload", SERIAL, &two_mib).status,
        200
    );
    let request = format!(
        "POST /upload HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nContent-Length: {}\r\n\r\n",
        basic(SERIAL, "pw"),
        9 * 1024 * 1024
    );
    let text = raw(s.device(), request.as_bytes(), TIMEOUT);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
}

#[test]
fn a_body_that_stops_arriving_is_abandoned_and_the_worker_freed() {
    let s = TestServer::start_with(|c| {
        c.http_workers = 1;
        c.body_read_timeout = Duration::from_secs(1);
    });
    let mut stalled = TcpStream::connect(s.device()).unwrap();
    stalled.set_read_timeout(Some(TIMEOUT)).unwrap();
    let head = format!(
        "POST /nest/transport/v7/put HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nContent-Length: 5000\r\n\r\n{{\"objects\":[",
        basic(SERIAL, "pw")
    );
    stalled.write_all(head.as_bytes()).unwrap();
    // The only worker is now reading that body; this request waits for it to be abandoned.
    assert_eq!(get(s.device(), "/nest/ping").status, 200);
    let mut rest = Vec::new();
    let _ = stalled.read_to_end(&mut rest);
    let rest = String::from_utf8_lossy(&rest);
    assert!(
        rest.is_empty() || rest.starts_with("HTTP/1.1 400"),
        "{rest}"
    );
    assert!(
        !s.app().state().device_exists(SERIAL),
        "nothing from the partial body was stored"
    );
}

#[test]
fn a_request_behind_a_held_subscribe_never_pins_a_worker() {
    let s = TestServer::start_with(|c| c.http_workers = 1);
    let body = json!({"chunked": true, "objects": [{"object_key": format!("shared.{SERIAL}"), "object_revision": 0, "object_timestamp": 5}]}).to_string();
    let subscribe = format!(
        "POST /nest/transport HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nContent-Length: {}\r\n\r\n{body}",
        basic(SERIAL, "pw"),
        body.len()
    );
    let ping = "GET /nest/ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

    // Pipelined with the subscribe (read together): the subscribe is held, and answered with
    // `Connection: close`, so the ping behind it is never answered (HTTP/1.1 says a client
    // must not expect it to be); the one worker is free meanwhile.
    let mut sock = TcpStream::connect(s.device()).unwrap();
    sock.set_read_timeout(Some(TIMEOUT)).unwrap();
    sock.write_all(format!("{subscribe}{ping}").as_bytes())
        .unwrap();
    s.wait_held(SERIAL, 1);
    assert_eq!(
        get(s.device(), "/nest/ping").status,
        200,
        "the worker is free"
    );
    s.server_change(SERIAL, "shared", json!({"target_temperature": 20.0}));
    let mut all = Vec::new();
    let _ = sock.read_to_end(&mut all);
    let all = String::from_utf8_lossy(&all);
    let end = all.find("\r\n0\r\n\r\n").expect("the held subscribe ended");
    assert!(
        all[..end].contains("20.0"),
        "the push reached the hold: {all}"
    );
    assert_eq!(
        &all[end..],
        "\r\n0\r\n\r\n",
        "nothing after the close: {all}"
    );
    s.wait_released(SERIAL);

    // Sent once the subscribe is held (after its `Connection: close`): the server has stopped
    // reading that connection, so normally the request is never taken and the subscribe holds
    // until something is pushed. (If tiny_http's reader had not yet reached its next read when
    // reading stopped, it still takes the request, and the hold ends as above.) Either way no
    // worker waits on it.
    let mut sock = TcpStream::connect(s.device()).unwrap();
    sock.set_read_timeout(Some(TIMEOUT)).unwrap();
    sock.write_all(subscribe.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        sock.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    s.wait_held(SERIAL, 1);
    sock.write_all(ping.as_bytes()).unwrap();
    assert_eq!(
        get(s.device(), "/nest/ping").status,
        200,
        "the worker is free"
    );
    s.server_change(SERIAL, "shared", json!({"target_temperature": 20.5}));
    let mut all = head;
    let _ = sock.read_to_end(&mut all);
    let all = String::from_utf8_lossy(&all);
    let end = all.find("\r\n0\r\n\r\n").expect("the subscribe ended");
    match all[end..].find("HTTP/1.1") {
        None => assert!(
            all[..end].contains("20.5"),
            "the push reached the hold: {all}"
        ),
        Some(_) => assert!(all[end..].contains("HTTP/1.1 200"), "{all}"),
    }
}

/// A chunk size is hex digits only: `+2`, `-2`, ` 0x2` and the like get 400 like any other
/// malformed chunk, nothing is stored, and the server keeps serving.
#[test]
fn a_chunk_size_that_is_not_hex_digits_gets_400_and_changes_nothing() {
    let s = TestServer::start();
    let before = store_bytes(s.dir.path());
    for size in ["+2", "-2", "0x2", "2g", "+0"] {
        let request = format!(
            "POST /nest/transport/v7/put HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nTransfer-Encoding: chunked\r\n\r\n{size}\r\n{{}}\r\n0\r\n\r\n",
            basic(SERIAL, "pw")
        );
        let text = raw(s.device(), request.as_bytes(), TIMEOUT);
        assert!(
            text.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{size}: {text}"
        );
        assert!(text.contains("\r\nConnection: close\r\n"), "{text}");
        assert!(
            text.ends_with(r#"{"error":"Could not read the request body"}"#),
            "{size}: {text}"
        );
    }
    assert_eq!(store_bytes(s.dir.path()), before);
    assert!(!s.app().state().device_exists(SERIAL));
    assert_eq!(get(s.device(), "/nest/ping").status, 200);
}

/// RFC 9112 §3.2: a request with two Host headers gets 400 at the edge, on both ports, before
/// any handler (nothing is stored), and the server keeps serving.
#[test]
fn a_request_with_two_host_headers_gets_400_and_changes_nothing() {
    let s = TestServer::start();
    let before = store_bytes(s.dir.path());
    let body = r#"{"objects":[]}"#;
    let request = format!(
        "POST /nest/transport/v7/put HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nhost: y\r\nContent-Length: {}\r\n\r\n{body}",
        basic(SERIAL, "pw"),
        body.len()
    );
    let text = raw(s.device(), request.as_bytes(), TIMEOUT);
    assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{text}");
    assert!(text.contains("\r\nConnection: close\r\n"), "{text}");
    assert!(text.ends_with(r#"{"error":"Malformed request"}"#), "{text}");
    let text = raw(
        s.control(),
        b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\n\r\n",
        TIMEOUT,
    );
    assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{text}");
    assert!(text.ends_with(r#"{"error":"Malformed request"}"#), "{text}");
    assert_eq!(store_bytes(s.dir.path()), before);
    assert!(!s.app().state().device_exists(SERIAL));
    assert_eq!(get(s.device(), "/nest/ping").status, 200);
    assert_eq!(get(s.control(), "/health").status, 200);
}
