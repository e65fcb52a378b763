//! `CERT_DIR`: HTTPS on both ports with rustls 0.23, checked with a real TLS client (rustls's
//! own) against certificates made in the test by the `openssl` command (a CA, and a server
//! certificate for 127.0.0.1 with a PKCS#8, a PKCS#1 RSA or a SEC1 EC key).

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::tls::{KeyKind, make_certificates};
use common::*;
use hearth::{Config, Server};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};

fn tls_server(certs: &Path, adjust: impl FnOnce(&mut Config)) -> TestServer {
    let certs = certs.to_path_buf();
    TestServer::start_with(move |c| {
        c.cert_dir = Some(certs);
        adjust(c);
    })
}

/// Certificates with an EC key and a server using them: the directory (keep it alive), the
/// server, and the CA file clients trust.
fn ec_server(adjust: impl FnOnce(&mut Config)) -> (TempDir, TestServer, std::path::PathBuf) {
    let certs = TempDir::new("certs");
    make_certificates(certs.path(), KeyKind::Sec1Ec);
    let s = tls_server(certs.path(), adjust);
    let ca = certs.path().join("ca.pem");
    (certs, s, ca)
}

/// A TLS client that trusts only the test CA and checks the name 127.0.0.1.
fn connect(
    addr: SocketAddr,
    ca: &Path,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    tls_over(TcpStream::connect(addr).unwrap(), ca)
}

/// [`connect`] from the loopback address `from` (a second "client address").
fn connect_from(
    from: std::net::IpAddr,
    addr: SocketAddr,
    ca: &Path,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    tls_over(common::from_address::connect_from(from, addr), ca)
}

fn tls_over(
    sock: TcpStream,
    ca: &Path,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    sock.set_read_timeout(Some(TIMEOUT)).unwrap();
    rustls::StreamOwned::new(conn, sock)
}

/// An event stream over HTTPS, once its response head has arrived; what was read so far.
fn open_event_stream(
    addr: SocketAddr,
    ca: &Path,
) -> (
    rustls::StreamOwned<rustls::ClientConnection, TcpStream>,
    String,
) {
    let mut events = connect(addr, ca);
    events
        .write_all(
            b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n",
        )
        .unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !seen.contains("\r\n\r\n") {
        let n = events.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    (events, seen)
}

/// One HTTPS request with `Connection: close`: the status and the body.
fn https(addr: SocketAddr, ca: &Path, method: &str, target: &str, body: &str) -> (u16, String) {
    let mut tls = connect(addr, ca);
    let request = format!(
        "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    tls.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    tls.read_to_end(&mut answer)
        .expect("a clean TLS close after the answer");
    let text = String::from_utf8(answer).unwrap();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

#[test]
fn https_on_both_ports_with_each_kind_of_key() {
    for kind in [KeyKind::Pkcs8Rsa, KeyKind::Pkcs1Rsa, KeyKind::Sec1Ec] {
        let certs = TempDir::new("certs");
        make_certificates(certs.path(), kind);
        let s = tls_server(certs.path(), |_| {});
        let ca = certs.path().join("ca.pem");
        let (status, body) = https(s.device(), &ca, "GET", "/nest/ping", "");
        assert_eq!(status, 200, "{kind:?} device port: {body}");
        let (status, body) = https(s.control(), &ca, "GET", "/health", "");
        assert_eq!(status, 200, "{kind:?} control port: {body}");
        let (status, body) = https(
            s.control(),
            &ca,
            "GET",
            "/status?serial=02AA01AC0000NONE",
            "",
        );
        assert_eq!(status, 404, "{kind:?}: {body}");
        // Plain HTTP to a TLS port gets no HTTP answer.
        let text = raw(
            s.control(),
            b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
            TIMEOUT,
        );
        assert!(!text.starts_with("HTTP/1.1 200"), "{text}");
    }
}

#[test]
fn commands_and_live_events_over_https() {
    let (_certs, s, ca) = ec_server(|_| {});
    // A thermostat known to the server (thermostats themselves speak plain HTTP, so it is
    // stored directly).
    s.server_change(
        SERIAL,
        &format!("device.{SERIAL}"),
        json!({"current_temperature": 20.5}),
    );
    s.server_change(
        SERIAL,
        &format!("shared.{SERIAL}"),
        json!({"target_temperature": 20.0}),
    );

    let (mut events, mut seen) = open_event_stream(s.control(), &ca);
    let mut buf = [0u8; 4096];
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");

    let body = json!({"serial": SERIAL, "command": "set_temperature", "value": 22.5}).to_string();
    let (status, answer) = https(s.control(), &ca, "POST", "/command", &body);
    assert_eq!(status, 200, "{answer}");
    while !seen.contains("target_temperature") {
        let n = events.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let (status, answer) = https(
        s.control(),
        &ca,
        "GET",
        &format!("/status?serial={SERIAL}"),
        "",
    );
    assert_eq!(status, 200, "{answer}");
    let v: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(v["target_temperature"], json!(22.5), "{v}");
}

#[test]
fn a_client_that_closes_its_side_after_the_request_still_gets_the_answer() {
    let (_certs, s, ca) = ec_server(|_| {});
    for addr in [s.device(), s.control()] {
        let mut tls = connect(addr, &ca);
        tls.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        // close_notify, then the TCP write side: the client will send nothing more.
        tls.conn.send_close_notify();
        while tls.conn.wants_write() {
            tls.conn.write_tls(&mut tls.sock).unwrap();
        }
        tls.sock.shutdown(std::net::Shutdown::Write).unwrap();
        let mut answer = Vec::new();
        let _ = tls.read_to_end(&mut answer);
        let text = String::from_utf8_lossy(&answer);
        assert!(text.starts_with("HTTP/1.1 200"), "{addr}: {text:?}");
    }
}

#[test]
fn a_client_that_never_finishes_its_handshake_is_dropped() {
    let (_certs, s, ca) = ec_server(|c| c.head_timeout = Duration::from_secs(1));
    let mut stalled: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut sock = TcpStream::connect(s.control()).unwrap();
            sock.write_all(&[0x16, 0x03, 0x01]).unwrap(); // the start of a ClientHello
            sock
        })
        .collect();
    assert_eq!(https(s.control(), &ca, "GET", "/health", "").0, 200);
    for sock in &mut stalled {
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut buf = [0u8; 64];
        // End of input or a reset; a read timeout means it is still open.
        let closed = match sock.read(&mut buf) {
            Ok(0) => true,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
            Ok(_) => false,
        };
        assert!(closed, "a stalled handshake is still open");
    }
}

/// Behind the TLS front the real client is counted, not the relay's loopback address: one
/// connection from 127.0.0.2 is kept, a second is closed by the front without a handshake,
/// 127.0.0.1 is served meanwhile, and a head that does not arrive in time is closed.
#[test]
fn the_per_address_cap_and_the_head_deadline_apply_to_the_real_client() {
    let second: std::net::IpAddr = "127.0.0.2".parse().unwrap();
    let (_certs, s, ca) = ec_server(|c| {
        c.max_connections_per_client = 1;
        c.head_timeout = Duration::from_secs(1);
    });
    let mut slow = connect_from(second, s.control(), &ca);
    slow.write_all(b"GET /health HTTP/1.1\r\nHo").unwrap();
    slow.flush().unwrap();
    let mut refused = connect_from(second, s.control(), &ca);
    let _ =
        refused.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    let mut answer = Vec::new();
    assert!(refused.read_to_end(&mut answer).is_err() || answer.is_empty());
    assert!(answer.is_empty(), "{answer:?}");
    assert_eq!(https(s.control(), &ca, "GET", "/health", "").0, 200);
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    assert!(rest.is_empty(), "closed unanswered: {rest:?}");
    // Its place is free again once the relay has ended.
    wait_until("127.0.0.2 served again", || {
        let mut again = connect_from(second, s.control(), &ca);
        let _ = again
            .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        let mut answer = Vec::new();
        let _ = again.read_to_end(&mut answer);
        answer.starts_with(b"HTTP/1.1 200")
    });
}

/// Threads of this process named `name` (a thread's name as the kernel keeps it).
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == name)
        .count()
}

/// Idle TCP connections (no ClientHello) from one address are counted by the listener's
/// admission before their handshake: 400 from 127.0.0.2 cost at most
/// `MAX_CONNECTIONS_PER_CLIENT` (64) connection threads, the rest are closed at once, and
/// 127.0.0.1 is served over HTTPS meanwhile.
#[test]
fn idle_connections_from_one_address_are_capped_before_the_tls_handshake() {
    // It counts the process's connection threads.
    let _alone = alone();
    let second: std::net::IpAddr = "127.0.0.2".parse().unwrap();
    let (_certs, s, ca) = ec_server(|_| {});
    let idle: Vec<TcpStream> = (0..400)
        .map(|_| common::from_address::connect_from(second, s.device()))
        .collect();
    // The listener accepts in the order of connecting: the first 64 are counted, each later
    // one is closed as soon as it is accepted (long before the 10 s handshake deadline).
    for (i, sock) in idle.iter().enumerate().skip(64) {
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let closed = match (&*sock).read(&mut [0u8; 16]) {
            Ok(0) => true,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
            Ok(_) => false,
        };
        assert!(closed, "connection {i} over the cap is still open");
    }
    let threads = threads_named("device-conn");
    assert!(threads <= 64 + 16, "{threads} connection threads");
    // Served while the 64 counted connections still sit in their handshake: they are open
    // after the answer (the order of events, not a timed bound, shows it was not held up).
    assert_eq!(https(s.device(), &ca, "GET", "/health", "").0, 200);
    for (i, sock) in idle.iter().enumerate().take(64) {
        sock.set_nonblocking(true).unwrap();
        let open = matches!(
            sock.peek(&mut [0u8; 1]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
        );
        assert!(
            open,
            "counted connection {i} was closed before /health was answered"
        );
    }
    drop(idle);
}

#[test]
fn a_missing_or_unusable_certificate_stops_startup_naming_the_file() {
    let start = |dir: &Path| {
        let data = TempDir::new("data");
        let mut config = Config::local(data.path());
        config.cert_dir = Some(dir.to_path_buf());
        Server::start(config).map(|_| ()).map_err(|e| e.to_string())
    };
    let empty = TempDir::new("certs");
    let err = start(empty.path()).unwrap_err();
    assert!(err.contains("fullchain.pem"), "{err}");

    let certs = TempDir::new("certs");
    make_certificates(certs.path(), KeyKind::Pkcs8Rsa);
    std::fs::write(certs.path().join("privkey.pem"), "not a key\n").unwrap();
    let err = start(certs.path()).unwrap_err();
    assert!(err.contains("privkey.pem"), "{err}");

    // A key that is not the certificate's.
    let other = TempDir::new("certs");
    make_certificates(other.path(), KeyKind::Sec1Ec);
    std::fs::copy(
        other.path().join("privkey.pem"),
        certs.path().join("privkey.pem"),
    )
    .unwrap();
    let err = start(certs.path()).unwrap_err();
    assert!(err.contains("privkey.pem"), "{err}");

    std::fs::write(certs.path().join("fullchain.pem"), "garbage\n").unwrap();
    let err = start(certs.path()).unwrap_err();
    assert!(err.contains("fullchain.pem"), "{err}");
}

/// A request over TLS with `Host: 127.0.0.1` and this `Origin`: the status and the body.
fn https_with_origin(addr: SocketAddr, ca: &Path, target: &str, origin: &str) -> (u16, String) {
    let mut tls = connect(addr, ca);
    let request = format!(
        "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: {origin}\r\nConnection: close\r\n\r\n"
    );
    tls.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    tls.read_to_end(&mut answer).unwrap();
    let text = String::from_utf8(answer).unwrap();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, body.to_string())
}

#[test]
fn over_tls_an_http_page_at_the_hosts_default_port_is_not_hearths_own() {
    let (_certs, s, ca) = ec_server(|_| {});
    let target = "/api/devices";
    for origin in ["http://127.0.0.1", "http://127.0.0.1:80"] {
        let (status, body) = https_with_origin(s.control(), &ca, target, origin);
        let message = format!(
            "Origin check error: refused a request from the web page at \"{origin}\". Web pages \
             of other sites may not use this server; to let that page use it, add its origin to \
             ALLOWED_ORIGINS"
        );
        assert_eq!(
            (status, serde_json::from_str::<Value>(&body).unwrap()),
            (403, json!({ "error": message })),
            "{origin}"
        );
    }
    // Hearth's own page, https at 443 (no port in Host), passes.
    let (status, body) = https_with_origin(s.control(), &ca, target, "https://127.0.0.1");
    assert_eq!(status, 200, "{body}");
}

/// Threads of this process: id and name.
fn tasks() -> std::collections::HashMap<String, String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| {
            let t = t.ok()?;
            let name = std::fs::read_to_string(t.path().join("comm")).ok()?;
            Some((
                t.file_name().into_string().ok()?,
                name.trim_end().to_string(),
            ))
        })
        .collect()
}

/// Once `Server::shutdown` returns, every thread the server started has ended, with every
/// optional one running: TLS connections' threads (one for an idle keep-alive connection, one
/// for a handshake never finished; an event stream held open has none), MQTT connected
/// to a broker (when mosquitto is installed), the admin socket and history. Run in a process of
/// its own (the test binary again, with only this test), where every thread that is not the
/// harness's is the server's.
#[test]
fn stopping_a_server_ends_every_thread_it_started() {
    const ALONE: &str = "HEARTH_TEST_ALONE";
    const NAME: &str = "stopping_a_server_ends_every_thread_it_started";
    if std::env::var_os(ALONE).is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([NAME, "--test-threads=1", "--nocapture"])
            .env(ALONE, "1")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success() && text.contains("1 passed"), "{text}");
        return;
    }
    let certs = TempDir::new("certs");
    make_certificates(certs.path(), KeyKind::Sec1Ec);
    let ca = certs.path().join("ca.pem");
    let mosquitto = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto"]
        .iter()
        .any(|p| Path::new(p).exists());
    // The broker is a process, the watcher's client threads are counted before the server's.
    let broker = mosquitto.then(common::mqtt::Broker::start);
    let watch = broker
        .as_ref()
        .map(|b| common::mqtt::Watcher::connect(b.port));
    let before = tasks();

    let s = tls_server(certs.path(), |c| {
        // Longer than any wait of the test: the stalled handshake ends only by the stop.
        c.head_timeout = Duration::from_secs(600);
        if let Some(b) = &broker {
            c.mqtt = Some(hearth::config::MqttConfig {
                topic_prefix: "nle".into(),
                ..hearth::config::MqttConfig::new("127.0.0.1", b.port)
            });
        }
    });
    if let Some(w) = &watch {
        w.wait_for("nle/availability", "online");
    } else {
        eprintln!("mosquitto is not installed: stopping without MQTT");
    }
    let (events, _head) = open_event_stream(s.control(), &ca);
    let mut buf = [0u8; 4096];
    let mut idle = connect(s.device(), &ca);
    idle.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let n = idle.read(&mut buf).unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    let mut stalled = TcpStream::connect(s.control()).unwrap();
    stalled.write_all(&[0x16, 0x03, 0x01]).unwrap(); // the start of a ClientHello
    let mut expected = vec![
        "device-conn",
        "control-conn",
        "notifier",
        "push-writer-0",
        "events",
        "event-writer-0",
        "maintenance",
        "admin",
        "history",
    ];
    if broker.is_some() {
        expected.push("mqtt");
    }
    // The idle connection's and the stalled handshake's threads, each with another left
    // accepting on its port.
    wait_until("every thread started", || {
        let started: Vec<String> = tasks()
            .into_iter()
            .filter(|(id, _)| !before.contains_key(id))
            .map(|(_, name)| name)
            .collect();
        let on = |port: &str| started.iter().filter(|n| *n == port).count();
        on("device-conn") >= 2
            && on("control-conn") >= 2
            && expected.iter().all(|e| started.iter().any(|n| n == e))
    });

    s.stop();
    // A joined thread may linger in /proc for a moment while the kernel finishes its exit;
    // one the stop did not end stays.
    let left = || -> Vec<(String, String)> {
        tasks()
            .into_iter()
            .filter(|(id, _)| !before.contains_key(id))
            .collect()
    };
    let ended = poll_until(TIMEOUT, || left().is_empty());
    assert!(ended, "threads left after the stop: {:?}", left());
    if let Some(w) = &watch {
        w.wait_for("nle/availability", "offline");
    }
    drop((events, idle, stalled));
}
