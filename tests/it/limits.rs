//! The HTTP edge's bounds, over real sockets: request heads (431, and no more than 16 KiB
//! buffered), declared bodies over the limit (413 whatever the length, nothing leaked),
//! connections per client address (503) and the head deadline; and the HTTP/1.1 rules the edge
//! keeps (Expect, pipelining, HTTP/1.0 keep-alive, ambiguous framing). Each bound is shown to
//! hold while other clients are served.
//!
//! The tests that count the process's threads, descriptors or memory, or open hundreds of
//! connections, have the process to themselves ([`common::alone`]).

use crate::common;

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::Duration;

use common::from_address::{SECOND, connect_from};
use common::*;
use serde_json::json;

/// A connection to `to` from the loopback address `from` (a second "client address").
/// One response from `r`: its status line, headers and body (by its `Content-Length`).
fn response(r: &mut impl BufRead) -> (String, Vec<(String, String)>, String) {
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap();
        headers.push((name.to_string(), value.trim().to_string()));
    }
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("Content-Length"))
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = vec![0u8; length];
    r.read_exact(&mut body).unwrap();
    (
        status.trim_end().to_string(),
        headers,
        String::from_utf8(body).unwrap(),
    )
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn count_entries(dir: &str) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

/// This process's resident memory in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

const TOO_LARGE: &str = r#"{"error":"Request body too large"}"#;

#[test]
fn a_head_over_16_kib_gets_431_and_an_endless_header_line_is_not_buffered() {
    let _alone = alone();
    let s = TestServer::start();
    let filler = "a".repeat(17 * 1024);
    for addr in [s.device(), s.control()] {
        let head = format!("GET /health HTTP/1.1\r\nHost: x\r\nX-Filler: {filler}\r\n\r\n");
        let text = raw(addr, head.as_bytes(), TIMEOUT);
        assert!(
            text.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
            "{text}"
        );
        assert!(
            text.ends_with(r#"{"error":"Request header fields too large"}"#),
            "{text}"
        );
    }

    // Five clients each send a header line that never ends, 10 MB each if they are let: each
    // gets its 431 after 16 KiB, and memory does not grow with what they send.
    let before = rss_kib();
    let senders: Vec<_> = (0..5)
        .map(|_| {
            let addr = s.device();
            thread::spawn(move || {
                let mut sock = TcpStream::connect(addr).unwrap();
                sock.set_write_timeout(Some(TIMEOUT)).unwrap();
                let reader = sock.try_clone().unwrap();
                let answer = thread::spawn(move || {
                    let mut reader = reader;
                    reader.set_read_timeout(Some(TIMEOUT)).unwrap();
                    let mut text = Vec::new();
                    let _ = reader.read_to_end(&mut text);
                    String::from_utf8_lossy(&text).to_string()
                });
                sock.write_all(b"GET /health HTTP/1.1\r\nX-Endless: ")
                    .unwrap();
                let block = vec![b'z'; 64 * 1024];
                let mut sent = 0usize;
                while sent < 10_000_000 {
                    match sock.write(&block) {
                        Ok(n) => sent += n,
                        Err(_) => break,
                    }
                }
                (answer.join().unwrap(), sent)
            })
        })
        .collect();
    // Served meanwhile.
    assert_eq!(get(s.control(), "/health").status, 200);
    assert_eq!(get(s.device(), "/nest/ping").status, 200);
    let mut total = 0;
    for sender in senders {
        let (answer, sent) = sender.join().unwrap();
        assert!(answer.starts_with("HTTP/1.1 431"), "{answer:?}");
        total += sent;
    }
    let grown = rss_kib().saturating_sub(before);
    assert!(
        grown < 8 * 1024,
        "RSS grew by {grown} KiB while {total} bytes of header were sent"
    );
    // The server stopped taking them soon after the answer (a bounded lingering close).
    assert!(total < 5 * 8 * 1024 * 1024, "{total} bytes were taken");
    assert_eq!(get(s.device(), "/nest/ping").status, 200);
}

#[test]
fn declared_bodies_over_the_limit_get_413_and_leak_no_thread_or_descriptor() {
    let _alone = alone();
    let s = TestServer::start();
    let before = store_bytes(s.dir.path());
    // Threads and descriptors once the server is up and has served a request or two.
    assert_eq!(get(s.device(), "/nest/ping").status, 200);
    let threads = count_entries("/proc/self/task");
    let descriptors = count_entries("/proc/self/fd");

    let lengths = [
        (64u64 << 20) + 1,
        1_000_000_000_000,
        u64::MAX, // 18446744073709551615
    ];
    for i in 0..200 {
        let length = match i % 4 {
            3 => "18446744073709551616".to_string(), // over 2^64 - 1: still a number
            n => lengths[n].to_string(),
        };
        let request = format!(
            "POST /nest/transport/v7/put HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nContent-Length: {length}\r\n\r\n{{\"objects\":",
            basic(SERIAL, "pw")
        );
        let text = raw(s.device(), request.as_bytes(), TIMEOUT);
        assert!(
            text.starts_with("HTTP/1.1 413 Payload Too Large\r\n"),
            "{length}: {text}"
        );
        assert!(text.contains("\r\nConnection: close\r\n"), "{text}");
        assert!(text.ends_with(TOO_LARGE), "{length}: {text}");
        if i % 50 == 0 {
            assert_eq!(get(s.control(), "/health").status, 200);
        }
    }
    // A length that is not a number is no length: 400.
    for length in ["abc", "-1", "1e12", "0x10"] {
        let request =
            format!("POST /command HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n{{}}");
        let text = raw(s.control(), request.as_bytes(), TIMEOUT);
        assert!(
            text.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{length}: {text}"
        );
        assert!(
            text.ends_with(
                r#"{"success":false,"message":"Invalid Content-Length or Transfer-Encoding"}"#
            ),
            "{length}: {text}"
        );
    }
    // Every connection's thread and descriptor is given back (a connection's thread waits a
    // few seconds for another connection before it ends). A few may be the process's own
    // doing meanwhile (a thread the server or the test harness starts later), so the check
    // allows a handful: a leak per refused request would be 200.
    const SLACK: usize = 8;
    let settled = poll_until(Duration::from_secs(60), || {
        count_entries("/proc/self/task") <= threads + SLACK
            && count_entries("/proc/self/fd") <= descriptors + SLACK
    });
    assert!(
        settled,
        "threads {threads} -> {}, descriptors {descriptors} -> {}",
        count_entries("/proc/self/task"),
        count_entries("/proc/self/fd")
    );
    assert_eq!(store_bytes(s.dir.path()), before, "nothing was stored");
    assert_eq!(get(s.device(), "/nest/ping").status, 200);
}

/// 400 connections from 127.0.0.2 that send a byte and no more, against a per-address cap of
/// `cap`: the first `cap` on each port are kept, the others get 503 at once; a
/// thermostat and `/health` on 127.0.0.1 are served meanwhile, a push within a second.
fn trickling_connections_are_capped(cap: Option<usize>) {
    let s = TestServer::start_with(|c| {
        // The kept ones stay open through the checks below however slow the machine.
        c.head_timeout = Duration::from_secs(120);
        if let Some(cap) = cap {
            c.max_connections_per_client = cap;
        }
    });
    let cap = cap.unwrap_or(64);
    let (_sim, _events, mut held) = booted_and_held(&s, SERIAL);

    let mut conns: Vec<TcpStream> = (0..400)
        .map(|i| connect_from(SECOND, if i % 2 == 0 { s.device() } else { s.control() }))
        .collect();
    // The refused ones are answered at once, unread, and closed.
    let mut refused = vec![false; conns.len()];
    wait_until("the over-cap connections' answers", || {
        for (sock, refused) in conns.iter_mut().zip(refused.iter_mut()) {
            if *refused {
                continue;
            }
            sock.set_nonblocking(true).unwrap();
            let mut byte = [0u8; 1];
            *refused = matches!(sock.peek(&mut byte), Ok(1));
            sock.set_nonblocking(false).unwrap();
        }
        refused.iter().filter(|r| **r).count() >= 400 - 2 * cap
    });
    for (sock, refused) in conns.iter_mut().zip(&refused) {
        if *refused {
            sock.set_read_timeout(Some(TIMEOUT)).unwrap();
            let mut text = String::new();
            sock.read_to_string(&mut text).unwrap();
            assert!(
                text.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
                "{text}"
            );
            assert!(
                text.ends_with(r#"{"error":"Too many connections from this address"}"#),
                "{text}"
            );
        } else {
            // The rest trickle.
            sock.write_all(b"G").unwrap();
        }
    }
    assert_eq!(
        refused.iter().filter(|r| !**r).count(),
        2 * cap,
        "{cap} kept on each port"
    );

    // Others are served meanwhile, and a command is pushed to the held subscribe. How soon is
    // real time, which this does not bound: each within the harness's timeout.
    assert_eq!(get(s.control(), "/health").status, 200);
    assert_eq!(get(s.device(), "/health").status, 200);
    let r = command(s.control(), SERIAL, "set_temperature", json!(22.5));
    assert_eq!(r.status, 200, "{}", r.text());
    let (_, doc) = next_push(&mut held);
    assert!(doc.to_string().contains("22.5"), "{doc}");

    // The kept ones are still open (until the head deadline).
    for (sock, refused) in conns.iter_mut().zip(&refused) {
        if !*refused {
            sock.set_nonblocking(true).unwrap();
            let mut byte = [0u8; 1];
            let open = matches!(sock.peek(&mut byte), Err(e) if e.kind() == ErrorKind::WouldBlock);
            assert!(open, "a kept connection was closed early");
        }
    }
}

#[test]
fn connections_per_client_address_are_capped_with_a_low_setting() {
    let _alone = alone();
    trickling_connections_are_capped(Some(8));
}

#[test]
fn connections_per_client_address_are_capped_by_default() {
    let _alone = alone();
    trickling_connections_are_capped(None);
}

#[test]
fn a_head_not_complete_within_the_head_timeout_is_closed_and_its_place_freed() {
    let _alone = alone();
    let s = TestServer::start_with(|c| {
        c.head_timeout = Duration::from_secs(1);
        c.max_connections_per_client = 1;
    });
    let mut slow = connect_from(SECOND, s.control());
    slow.write_all(b"GET /health HTTP/1.1\r\nHo").unwrap();
    // The address's one place is taken: a second connection from it is refused...
    let mut second = connect_from(SECOND, s.control());
    second.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut text = String::new();
    second.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    // ... while another address is served.
    assert_eq!(get(s.control(), "/health").status, 200);
    // The head timeout is a socket deadline of the HTTP edge, in real time: asserted as the
    // outcome, within the harness's timeout.
    assert!(
        closed_within(&mut slow, TIMEOUT),
        "the slow head was closed"
    );
    // Its place is free again.
    let mut again = connect_from(SECOND, s.control());
    again
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let (status, _, body) = response(&mut BufReader::new(again));
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    // A connection that sends nothing at all is closed by the same deadline.
    let mut silent = TcpStream::connect(s.device()).unwrap();
    assert!(closed_within(&mut silent, TIMEOUT));
}

#[test]
fn expect_100_continue_is_answered_only_for_a_body_within_the_limit() {
    let s = TestServer::start();
    let body = json!({"serial": SERIAL, "command": "set_temperature", "value": 21.0}).to_string();
    let mut sock = TcpStream::connect(s.control()).unwrap();
    sock.set_read_timeout(Some(TIMEOUT)).unwrap();
    let head = format!(
        "POST /command HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    sock.write_all(head.as_bytes()).unwrap();
    let mut reader = BufReader::new(sock.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert_eq!(line, "HTTP/1.1 100 Continue\r\n");
    line.clear();
    reader.read_line(&mut line).unwrap();
    assert_eq!(line, "\r\n");
    sock.write_all(body.as_bytes()).unwrap();
    let (status, _, text) = response(&mut reader);
    // The thermostat is unknown: the handler's own answer.
    assert_eq!(status, "HTTP/1.1 404 Not Found", "{text}");

    // Over the limit: 413 straight away, no 100 (in the control API's shape for /command).
    let head = "POST /command HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5000000\r\n\r\n";
    let text = raw(s.control(), head.as_bytes(), TIMEOUT);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(
        text.ends_with(r#"{"success":false,"message":"Request body too large"}"#),
        "{text}"
    );
    // Any other expectation: 417.
    let head = "POST /command HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}";
    let text = raw(s.control(), head.as_bytes(), TIMEOUT);
    assert!(
        text.starts_with("HTTP/1.1 417 Expectation Failed\r\n"),
        "{text}"
    );
    assert!(
        text.ends_with(r#"{"success":false,"message":"Expectation failed"}"#),
        "{text}"
    );
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let s = TestServer::start();
    let mut sock = TcpStream::connect(s.device()).unwrap();
    sock.set_read_timeout(Some(TIMEOUT)).unwrap();
    sock.write_all(
        b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n\r\nHEAD /health HTTP/1.1\r\nHost: x\r\n\r\nGET /nest/ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut reader = BufReader::new(sock);
    let (status, _, health) = response(&mut reader);
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(health.starts_with(r#"{"status":"ok""#), "{health}");
    let (status, _, body) = response(&mut reader);
    assert_eq!(status, "HTTP/1.1 404 Not Found", "{body}");
    // HEAD: the length of the body it would have had, and no body.
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert_eq!(status, "HTTP/1.1 200 OK\r\n");
    let mut length = None;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length: ") {
            length = Some(v.trim().parse::<usize>().unwrap());
        }
    }
    assert_eq!(length, Some(health.len()));
    let (status, headers, body) = response(&mut reader);
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(body.starts_with(r#"{"status":"ok""#), "{body}");
    assert_eq!(header(&headers, "Connection"), Some("close"));
    let mut rest = Vec::new();
    reader.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "closed after the last: {rest:?}");
}

#[test]
fn http_1_0_keeps_the_connection_only_when_asked() {
    let s = TestServer::start();
    let mut sock = TcpStream::connect(s.control()).unwrap();
    sock.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut reader = BufReader::new(sock.try_clone().unwrap());
    for _ in 0..2 {
        sock.write_all(b"GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            .unwrap();
        let (status, headers, _) = response(&mut reader);
        assert_eq!(status, "HTTP/1.0 200 OK");
        assert_eq!(header(&headers, "Connection"), Some("keep-alive"));
        assert!(header(&headers, "Date").is_some_and(|d| d.ends_with(" GMT")));
    }
    sock.write_all(b"GET /health HTTP/1.0\r\n\r\n").unwrap();
    let (status, headers, _) = response(&mut reader);
    assert_eq!(status, "HTTP/1.0 200 OK");
    assert_eq!(header(&headers, "Connection"), Some("close"));
    let mut rest = Vec::new();
    reader.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
}

#[test]
fn a_request_with_both_content_length_and_transfer_encoding_gets_400_and_changes_nothing() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let before = store_bytes(s.dir.path());
    let body = json!({"serial": SERIAL, "command": "set_temperature", "value": 23.0}).to_string();
    for (first, second) in [
        ("Content-Length: 5", "Transfer-Encoding: chunked"),
        ("Transfer-Encoding: chunked", "Content-Length: 5"),
    ] {
        let request = format!(
            "POST /command HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{first}\r\n{second}\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
            body.len()
        );
        let text = raw(s.control(), request.as_bytes(), TIMEOUT);
        assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{text}");
        assert!(
            text.ends_with(
                r#"{"success":false,"message":"Invalid Content-Length or Transfer-Encoding"}"#
            ),
            "{text}"
        );
    }
    // A coding other than chunked: 501.
    let request = "POST /command HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n";
    let text = raw(s.control(), request.as_bytes(), TIMEOUT);
    assert!(text.starts_with("HTTP/1.1 501"), "{text}");
    assert!(
        text.ends_with(r#"{"success":false,"message":"Transfer-Encoding not supported"}"#),
        "{text}"
    );
    assert_eq!(store_bytes(s.dir.path()), before, "nothing changed");
    // The same command, chunked alone, is taken.
    let request = format!(
        "POST /command HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
        body.len()
    );
    let text = raw(s.control(), request.as_bytes(), TIMEOUT);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
}

const UPLOAD: usize = 8 * 1024 * 1024 - 1;

/// A stalled upload from 127.0.0.2: its head with `Expect: 100-continue`, and once the edge
/// has reserved the body (it answers 100), all of the body but its last byte.
fn stalled_upload(to: SocketAddr) -> TcpStream {
    let mut sock = connect_from(SECOND, to);
    let head = format!(
        "POST /nest/upload HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nExpect: 100-continue\r\nContent-Length: {UPLOAD}\r\n\r\n",
        basic(SERIAL, "pw")
    );
    sock.write_all(head.as_bytes()).unwrap();
    sock.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut continued = [0u8; 25];
    sock.read_exact(&mut continued).unwrap();
    assert_eq!(&continued, b"HTTP/1.1 100 Continue\r\n\r\n");
    sock.write_all(&vec![b'x'; UPLOAD - 1]).unwrap();
    sock
}

/// With device logs stored an upload may be 8 MiB; bodies being read from one address share a
/// 16 MiB budget: two stalled uploads from 127.0.0.2 fill it, each further body from there gets
/// 503 unread, memory stays bounded, and 127.0.0.1's PUT, upload and /health are served.
#[test]
fn bodies_being_read_from_one_address_share_a_budget() {
    let _alone = alone();
    let s = TestServer::start_with(|c| c.store_device_logs = true);
    let (mut sim, _events, _held) = booted_and_held(&s, SERIAL);
    let rss = rss_kib();
    let _stalled: Vec<TcpStream> = (0..2).map(|_| stalled_upload(s.device())).collect();
    for _ in 0..20 {
        let request = format!(
            "POST /nest/upload HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nContent-Length: {UPLOAD}\r\n\r\nxxxx",
            basic(SERIAL, "pw")
        );
        let mut sock = connect_from(SECOND, s.device());
        sock.write_all(request.as_bytes()).unwrap();
        sock.set_read_timeout(Some(TIMEOUT)).unwrap();
        let mut text = String::new();
        sock.read_to_string(&mut text).unwrap();
        assert!(
            text.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
            "{text}"
        );
        assert!(text.contains("\r\nConnection: close\r\n"), "{text}");
        assert!(
            text.ends_with(r#"{"error":"Too many request bodies in progress from this address"}"#),
            "{text}"
        );
    }
    // A chunked body reserves the route's whole limit: it does not fit either.
    let text = {
        let mut sock = connect_from(SECOND, s.device());
        sock.write_all(b"POST /nest/upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nxxxx\r\n")
            .unwrap();
        sock.set_read_timeout(Some(TIMEOUT)).unwrap();
        let mut text = String::new();
        sock.read_to_string(&mut text).unwrap();
        text
    };
    assert!(text.starts_with("HTTP/1.1 503 "), "{text}");
    // Others are served meanwhile: the thermostat's PUT, an upload and /health.
    sim.turn_dial(21.5);
    sim.put().unwrap();
    let upload = format!(
        "POST /nest/upload HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nContent-Length: 11\r\nConnection: close\r\n\r\na log line\n",
        basic(SERIAL, &sim.password())
    );
    let text = raw(s.device(), upload.as_bytes(), TIMEOUT);
    assert!(text.starts_with("HTTP/1.1 200 "), "{text}");
    assert_eq!(get(s.device(), "/health").status, 200);
    // Two bodies' worth in memory, and a little more: not 22 of them.
    let grown = rss_kib().saturating_sub(rss);
    assert!(grown < 64 * 1024, "RSS grew by {grown} KiB");
}

/// Without device logs stored, an upload gets the ordinary 1 MiB limit.
#[test]
fn an_upload_over_1_mib_gets_413_when_device_logs_are_not_stored() {
    let s = TestServer::start();
    let request = format!(
        "POST /nest/upload HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nContent-Length: {}\r\n\r\nxxxx",
        basic(SERIAL, "pw"),
        1024 * 1024 + 1
    );
    let text = raw(s.device(), request.as_bytes(), TIMEOUT);
    assert!(text.starts_with("HTTP/1.1 413 "), "{text}");
    assert!(text.ends_with(TOO_LARGE), "{text}");
    assert_eq!(get(s.device(), "/health").status, 200);
}
