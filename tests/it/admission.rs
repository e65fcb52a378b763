//! The one way in (`hearth::http::admission`), over real sockets, with small bounds set by
//! configuration: when a port holds as many connections as it may, a client that holds none is
//! still served, and the oldest idle connection of the address holding the most is the one
//! closed for it; a refused address is logged once a minute, the next line counting the rest.
//! Distinct loopback addresses (127.0.0.20 and up) stand in for the LAN's hosts.

use crate::common;

use std::io::{ErrorKind, Read};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

use common::from_address::{connect_from, request_from};
use common::*;
use hearth::util::clock::ManualClock;

fn host(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
}

/// Whether the server has not closed `sock` (it is idle: nothing to read, no end).
fn still_open(sock: &TcpStream) -> bool {
    sock.set_nonblocking(true).unwrap();
    let open = matches!(sock.peek(&mut [0u8; 1]), Err(e) if e.kind() == ErrorKind::WouldBlock);
    sock.set_nonblocking(false).unwrap();
    open
}

fn health_from(from: IpAddr, to: SocketAddr) -> u16 {
    request_from(from, to, "GET /health HTTP/1.1", &[], b"").status
}

/// Connections that send nothing, from `from` to `to`.
fn idle(from: IpAddr, to: SocketAddr, n: usize) -> Vec<TcpStream> {
    (0..n).map(|_| connect_from(from, to)).collect()
}

/// [`idle`], each admitted before the next connects (`open` counts the port's connections), so
/// the order they were admitted in is the order of the list.
fn idle_in_order(
    from: IpAddr,
    to: SocketAddr,
    n: usize,
    open: &dyn Fn() -> usize,
) -> Vec<TcpStream> {
    (0..n)
        .map(|_| {
            let before = open();
            let sock = connect_from(from, to);
            wait_until("admitted", || open() > before);
            sock
        })
        .collect()
}

#[test]
fn a_full_port_still_serves_a_new_address_and_the_biggest_holder_gives_way() {
    let s = TestServer::start_with(|c| {
        c.max_connections = Some(16);
        c.max_connections_per_client = 12;
        // The idle connections stay until closed for another.
        c.head_timeout = Duration::from_secs(600);
        c.idle_timeout = Duration::from_secs(600);
    });
    for (port, to) in [(0, s.device()), (1, s.control())] {
        let open = || s.server().connections()[port].open;
        let (big, small) = (host(20), host(21));
        let mut big_conns = idle_in_order(big, to, 12, &open);
        let small_conns = idle(small, to, 4);
        wait_until("16 connections admitted", || open() == 16);

        // A third address is served: the biggest holder's oldest connection made room.
        assert_eq!(health_from(host(22), to), 200);
        assert!(closed_within(&mut big_conns[0], TIMEOUT));
        assert!(big_conns[1..].iter().all(still_open));
        assert!(
            small_conns.iter().all(still_open),
            "the smaller holder kept all"
        );

        // Again (the /health connection has closed, so the small holder's next one fits).
        let small_more = idle(small, to, 1);
        wait_until("16 again", || open() == 16);
        assert_eq!(health_from(host(23), to), 200);
        assert!(closed_within(&mut big_conns[1], TIMEOUT));
        assert!(big_conns[2..].iter().all(still_open));
        assert!(small_conns.iter().chain(&small_more).all(still_open));

        // The biggest holder itself, connecting when full, turns over its own oldest.
        wait_until("15 open", || open() == 15);
        let filler = idle(host(24), to, 1);
        wait_until("16 once more", || open() == 16);
        let newest = idle(big, to, 1);
        assert!(closed_within(&mut big_conns[2], TIMEOUT));
        assert!(newest.iter().chain(&big_conns[3..]).all(still_open));
        assert!(
            small_conns
                .iter()
                .chain(&small_more)
                .chain(&filler)
                .all(still_open)
        );
        let counts = s.server().connections()[port];
        assert_eq!((counts.open, counts.trimmed), (16, 3));
        drop((big_conns, small_conns, small_more, filler, newest));
        wait_until("all closed", || open() == 0);
    }
}

#[test]
fn a_refused_address_is_logged_once_a_minute_with_the_count_of_the_rest() {
    let clock = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.clock = clock.clock();
        c.max_connections_per_client = 1;
        c.head_timeout = Duration::from_secs(600);
    });
    let from = host(25);
    let what = format!("control port: refused a connection from {from}:");
    // The log is kept from before the first refusal (it would show a line if one came).
    assert!(common::log_capture::lines(&what).is_empty());
    let _held = idle(from, s.control(), 1);
    wait_until("one admitted", || s.server().connections()[1].open == 1);
    let refused = || {
        let mut sock = connect_from(from, s.control());
        let mut answer = String::new();
        sock.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    };
    for _ in 0..20 {
        refused();
    }
    // Each refusal is logged before its answer is written: the 20 answers are all in.
    let lines = common::log_capture::lines(&what);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(
        lines[0].ends_with("Too many connections from this address"),
        "{lines:?}"
    );
    clock.advance(Duration::from_secs(60));
    refused();
    let lines = common::log_capture::lines(&what);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(
        lines[1].ends_with(&format!(
            "Too many connections from this address (19 more from {from} not logged in the last minute)"
        )),
        "{lines:?}"
    );
    // Another address is served meanwhile, and logged nothing.
    assert_eq!(health_from(host(26), s.control()), 200);
    assert!(common::log_capture::lines(&host(26).to_string()).is_empty());
}
