//! What a web page can and cannot do with either port (SECURITY.md): a `Host` that names no
//! server of the home gets 421, a page of another origin (or `Sec-Fetch-Site: cross-site`) 403
//! wherever something changes or a secret shows, no answer carries wildcard CORS, and the
//! pages of `ALLOWED_ORIGINS` get CORS. Every refusal changes nothing; every client that is not
//! a browser works as before, whatever its `Content-Type`.

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use common::*;
use serde_json::{Value, json};

/// An answer read off the wire.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {:?}", self.body))
    }
}

/// Sends one request with exactly these headers (`Host` among them, or none) and reads the
/// answer to the end.
fn send(addr: SocketAddr, head: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut request = format!("{head}\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || head.starts_with("POST") || head.starts_with("PUT") {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("Connection: close\r\n\r\n");
    request.push_str(body);
    let mut socket = TcpStream::connect(addr).unwrap();
    socket.set_read_timeout(Some(TIMEOUT)).unwrap();
    socket.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    socket.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a whole answer");
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_string(),
    }
}

fn host_of(addr: SocketAddr) -> String {
    format!("127.0.0.1:{}", addr.port())
}

fn host_refusal(host: &str) -> String {
    format!(
        "Host check error: refused a request for \"{host}\", which is not a name of this server \
         (a guard against DNS rebinding). If hearth should answer at that name, add it to \
         ALLOWED_HOSTS"
    )
}

fn origin_refusal(origin: &str) -> String {
    format!(
        "Origin check error: refused a request from the web page at \"{origin}\". Web pages of \
         other sites may not use this server; to let that page use it, add its origin to \
         ALLOWED_ORIGINS"
    )
}

const CROSS_SITE: &str = "Origin check error: refused a request from a web page of another site \
     (Sec-Fetch-Site: cross-site). Web pages of other sites may not use this server; to let a \
     page use it, add its origin to ALLOWED_ORIGINS";

/// The body a refused control route answers with: the command envelope for `/command` and the
/// claiming routes, `{"error"}` elsewhere (`/api/v1` and every preflight included).
fn control_body(method: &str, target: &str, message: &str) -> Value {
    if method != "OPTIONS" && (target == "/command" || target.starts_with("/api/register")) {
        json!({"success": false, "message": message})
    } else {
        json!({ "error": message })
    }
}

fn target_of(s: &TestServer) -> Value {
    hearth::control::status::record(s.app(), SERIAL).unwrap()["target_temperature"].clone()
}

fn devices(s: &TestServer) -> Value {
    get(s.control(), "/api/devices").json()["devices"].clone()
}

/// Everything a refused request could have changed: the store, the target temperature, the
/// list of thermostats.
fn snapshot(s: &TestServer) -> (Vec<(String, Vec<u8>)>, Value, Value) {
    (store_bytes(s.dir.path()), target_of(s), devices(s))
}

const SET_29_5: &str = r#"{"serial":"02AA01AC0000SIM1","command":"set_temperature","value":29.5}"#;
const REMOVE: &str = r#"{"serial":"02AA01AC0000SIM1"}"#;

/// The state-changing and secret-showing requests of the control port, as a page would send them.
fn control_requests() -> Vec<(&'static str, String, &'static str, &'static str)> {
    let status = format!("/status?serial={SERIAL}");
    vec![
        ("GET", status, "", ""),
        ("GET", "/api/devices".into(), "", ""),
        ("GET", "/api/events".into(), "", ""),
        ("GET", "/api/v1/devices".into(), "", ""),
        ("POST", "/command".into(), "text/plain", SET_29_5),
        ("POST", "/command".into(), "application/json", SET_29_5),
        ("DELETE", "/api/device".into(), "text/plain", REMOVE),
        ("POST", "/api/scan-network".into(), "text/plain", "{}"),
        ("POST", "/api/register".into(), "text/plain", "{}"),
        ("OPTIONS", "/command".into(), "", ""),
        // Issue 36 and 37's routes: accounts, energy, metrics.
        ("GET", "/api/keys".into(), "", ""),
        ("POST", "/api/keys".into(), "text/plain", r#"{"name":"x"}"#),
        ("GET", "/api/users".into(), "", ""),
        ("GET", "/api/shares".into(), "", ""),
        ("GET", format!("/api/energy?serial={SERIAL}"), "", ""),
        ("GET", format!("/api/v1/thermostat/{SERIAL}/energy"), "", ""),
        ("GET", "/metrics".into(), "", ""),
        // Issue 38's: alerts.
        ("GET", "/api/alerts".into(), "", ""),
        // Issue 40's: the HomeKit setup code; and the unlock that hands out a new one.
        ("GET", "/api/homekit".into(), "", ""),
        ("POST", "/api/homekit/unlock".into(), "text/plain", "{}"),
        (
            "POST",
            "/api/alerts/ack".into(),
            "text/plain",
            r#"{"id":"x"}"#,
        ),
        // Issue 50's: the alert settings (secrets) and their test.
        ("GET", "/api/alerts/settings".into(), "", ""),
        ("POST", "/api/alerts/test".into(), "text/plain", "{}"),
        // Issue 51's: who is home, a new person's token, and the presence URL (phones send no
        // Origin; a page may not use it).
        ("GET", "/api/people".into(), "", ""),
        (
            "POST",
            "/api/people".into(),
            "text/plain",
            r#"{"name":"x"}"#,
        ),
        ("POST", "/api/people/x/token".into(), "", ""),
        ("POST", "/api/presence/x?home=0".into(), "", ""),
    ]
}

#[test]
fn a_foreign_host_gets_421_on_both_ports_and_changes_nothing() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let before = snapshot(&s);
    // DNS rebinding: the attacker's page at http://evil.example:8082/ now reaches hearth, as
    // its own origin (same Origin as Host).
    for host in ["evil.example", "evil.example:8082", "192.168.1.10.nip.io"] {
        let origin = format!("http://{host}");
        for (method, target, content_type, body) in control_requests() {
            let mut headers = vec![("Host", host), ("Origin", origin.as_str())];
            if !content_type.is_empty() {
                headers.push(("Content-Type", content_type));
            }
            let r = send(
                s.control(),
                &format!("{method} {target} HTTP/1.1"),
                &headers,
                body,
            );
            assert_eq!(r.status, 421, "{method} {target} {}", r.body);
            let path = target.split('?').next().unwrap();
            assert_eq!(
                r.json(),
                control_body(method, path, &host_refusal(host)),
                "{target}"
            );
            assert_eq!(r.header("Access-Control-Allow-Origin"), None);
        }
        // Without an Origin too (a page's simple GET sends none), on every route but /health.
        for target in ["/", "/info", "/status?serial=02AA01AC0000SIM1", "/nope"] {
            let r = send(
                s.control(),
                &format!("GET {target} HTTP/1.1"),
                &[("Host", host)],
                "",
            );
            assert_eq!(
                (r.status, r.json()),
                (421, json!({ "error": host_refusal(host) })),
                "{target}"
            );
        }
        let r = send(s.control(), "GET /health HTTP/1.1", &[("Host", host)], "");
        assert_eq!((r.status, r.json()), (200, json!({"status": "ok"})));

        // The device port: a thermostat's PUT under that name, and a page's.
        let auth = basic(SERIAL, "pw");
        let put = json!({"objects": [{"object_key": format!("shared.{SERIAL}"),
                                      "value": {"target_temperature": 29.5}}]})
        .to_string();
        for target in [
            "/nest/transport/v7/put",
            "/nest/passphrase",
            "/nest/entry",
            "/info",
        ] {
            let method = if target.ends_with("put") {
                "POST"
            } else {
                "GET"
            };
            let r = send(
                s.device(),
                &format!("{method} {target} HTTP/1.1"),
                &[("Host", host), ("Authorization", &auth)],
                if method == "POST" { &put } else { "" },
            );
            assert_eq!(
                (r.status, r.json()),
                (421, json!({ "error": host_refusal(host) })),
                "{target}"
            );
        }
        let r = send(s.device(), "GET /health HTTP/1.1", &[("Host", host)], "");
        assert_eq!(r.status, 200);
    }
    assert_eq!(snapshot(&s), before);

    // The same requests under a name of the home change what they should: the refusals above
    // were not a server that ignores these requests.
    let r = send(
        s.control(),
        "POST /command HTTP/1.1",
        &[
            ("Host", "hearth.local:8082"),
            ("Content-Type", "text/plain"),
        ],
        SET_29_5,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(target_of(&s), json!(29.5));
}

#[test]
fn names_of_the_home_are_answered_on_both_ports() {
    let s = TestServer::start_with(|c| {
        c.api_origin = hearth::config::ApiOrigin::parse("http://Nest-Server.Example.com").ok();
        c.allowed_hosts = vec!["hearth.example.net".into()];
    });
    // A thermostat pointed at API_ORIGIN's name sends that name; it is never refused.
    let auth = basic(SERIAL, "pw");
    let put = json!({"objects": [{"object_key": format!("shared.{SERIAL}"),
                                  "value": {"current_temperature": 18.5}}]})
    .to_string();
    let r = send(
        s.device(),
        "POST /nest/transport/v7/put HTTP/1.1",
        &[
            ("Host", "nest-server.example.com:8000"),
            ("Authorization", &auth),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &put,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        hearth::control::status::record(s.app(), SERIAL).unwrap()["current_temperature"],
        json!(18.5)
    );

    let control_port = s.control().port();
    let status = format!("GET /status?serial={SERIAL} HTTP/1.1");
    for host in [
        host_of(s.control()),
        "127.0.0.1".into(),
        format!("[::1]:{control_port}"),
        "[fe80::1]".into(),
        format!("localhost.:{control_port}"),
        "LOCALHOST".into(),
        "raspberrypi".into(),
        "homeassistant:8123".into(),
        "hearth.local.".into(),
        "Hearth.Lan".into(),
        "hearth.home.arpa".into(),
        "nas.internal:8082".into(),
        // API_ORIGIN's host, which a person may have chosen.
        "nest-server.example.com:8000".into(),
        "NEST-SERVER.EXAMPLE.COM.".into(),
        // ALLOWED_HOSTS: a reverse proxy's name.
        "hearth.example.net".into(),
    ] {
        let r = send(s.control(), &status, &[("Host", &host)], "");
        assert_eq!(r.status, 200, "{host}: {}", r.body);
        assert_eq!(r.json()["serial"], json!(SERIAL), "{host}");
        let r = send(s.device(), "GET /info HTTP/1.1", &[("Host", &host)], "");
        assert_eq!(r.status, 200, "{host}: {}", r.body);
    }
    // HTTP/1.0 sends no Host.
    let r = send(s.control(), &status.replace("1.1", "1.0"), &[], "");
    assert_eq!(r.status, 200, "{}", r.body);
    // A name not listed is still refused.
    let r = send(s.control(), &status, &[("Host", "hearth.example.org")], "");
    assert_eq!(r.status, 421);
}

/// Issue 49: a box named `raspberrypi` whose router (a FritzBox) hands out `search fritz.box`
/// is reached as `raspberrypi.fritz.box` with no setting: by a thermostat at `/entry`, and by
/// `/status` and the page. Another name under the same domain, and a foreign one, still get
/// 421, logged once a minute per name with the `ALLOWED_HOSTS` value that would admit it. The
/// host name and resolv.conf are the test's own files, never this machine's.
#[test]
fn the_name_a_router_gives_the_box_is_answered_without_settings() {
    let dir = TempDir::new("box-names");
    let (hostname, resolv) = (dir.0.join("hostname"), dir.0.join("resolv.conf"));
    std::fs::write(&hostname, "raspberrypi\n").unwrap();
    std::fs::write(
        &resolv,
        "# from the FritzBox's DHCP\nnameserver 192.168.178.1\nsearch fritz.box\n",
    )
    .unwrap();
    let names = hearth::config::BoxNames::read(&[&hostname], &resolv);
    let clock = hearth::util::clock::ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.box_names = Some(names);
        c.clock = clock.clock();
    });
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let refused_line = "refused Host \"other.fritz.box";
    // The log is kept from before the first refusal (it would show a line if one came).
    assert!(common::log_capture::lines(refused_line).is_empty());

    let device_port = s.device().port();
    let status = format!("GET /status?serial={SERIAL} HTTP/1.1");
    for host in [
        "raspberrypi.fritz.box".to_string(),
        format!("raspberrypi.fritz.box:{device_port}"),
        "RaspberryPi.Fritz.Box.".to_string(),
    ] {
        let r = send(s.device(), "GET /entry HTTP/1.1", &[("Host", &host)], "");
        assert_eq!(r.status, 200, "{host}: {}", r.body);
        assert!(r.json()["transport_url"].is_string(), "{}", r.body);
        let r = send(s.control(), &status, &[("Host", &host)], "");
        assert_eq!(r.status, 200, "{host}: {}", r.body);
        assert_eq!(r.json()["serial"], json!(SERIAL), "{host}");
        let r = send(s.control(), "GET / HTTP/1.1", &[("Host", &host)], "");
        assert_eq!(r.status, 200, "{host}");
        assert!(r.body.contains("<html"), "{host}");
    }

    let mut refused_other = 0;
    for host in [
        "evil.example",
        "other.fritz.box",
        "other.fritz.box:8000",
        "OTHER.fritz.box.",
        "raspberrypi.fritz.box.evil.example",
    ] {
        for (port, target) in [
            (s.device(), "/entry"),
            (s.control(), &*format!("/status?serial={SERIAL}")),
            (s.control(), "/"),
        ] {
            let r = send(
                port,
                &format!("GET {target} HTTP/1.1"),
                &[("Host", host)],
                "",
            );
            assert_eq!(
                (r.status, r.json()),
                (421, json!({ "error": host_refusal(host) })),
                "{host} {target}"
            );
            if host.to_ascii_lowercase().starts_with("other.") {
                refused_other += 1;
            }
        }
    }
    // Each refusal is logged before its answer is written: every answer is in, and one line
    // tells of the name, whichever port, case, port number or trailing dot it came with.
    let lines = common::log_capture::lines(refused_line);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(
        lines[0].ends_with(
            "port: refused Host \"other.fritz.box\" (DNS-rebinding guard); if this is a name \
             of this box, set ALLOWED_HOSTS=other.fritz.box"
        ),
        "{lines:?}"
    );
    // A minute later it is logged again, with the count of the rest.
    clock.advance(std::time::Duration::from_secs(60));
    let r = send(
        s.control(),
        "GET / HTTP/1.1",
        &[("Host", "other.fritz.box")],
        "",
    );
    assert_eq!(r.status, 421);
    let lines = common::log_capture::lines(refused_line);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(
        lines[1].ends_with(&format!(
            "set ALLOWED_HOSTS=other.fritz.box ({} more for \"other.fritz.box\" not logged in \
             the last minute)",
            refused_other - 1
        )),
        "{lines:?}"
    );
}

/// A page in a browser can send thousands of requests a second: each cross-site one is
/// refused, and logged once a minute per address, the next line counting the rest (the log
/// of a box on an SD card is not a page's to fill).
#[test]
fn refused_pages_are_logged_once_a_minute_per_address() {
    let clock = hearth::util::clock::ManualClock::starting_now();
    let s = TestServer::start_with(|c| c.clock = clock.clock());
    let host = host_of(s.control());
    let path = "/logged-once-a-minute";
    let line = format!("{path} from 127.0.0.1 refused (403)");
    // The log is kept from before the first refusal (it would show a line if one came).
    assert!(common::log_capture::lines(&line).is_empty());
    let refuse = || {
        let r = send(
            s.control(),
            &format!("POST {path} HTTP/1.1"),
            &[
                ("Host", &host),
                ("Origin", "http://evil.example"),
                ("Content-Type", "application/json"),
            ],
            "{}",
        );
        assert_eq!(r.status, 403, "{}", r.body);
    };
    for _ in 0..30 {
        refuse();
    }
    // Each refusal is logged before its answer is written: every answer is in.
    let lines = common::log_capture::lines(&line);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(lines[0].contains("control port: POST "), "{lines:?}");
    clock.advance(std::time::Duration::from_secs(60));
    refuse();
    let lines = common::log_capture::lines(&line);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(
        lines[1].ends_with("(29 more from 127.0.0.1 not logged in the last minute)"),
        "{lines:?}"
    );
}

#[test]
fn a_page_of_another_origin_gets_403_and_changes_nothing() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let before = snapshot(&s);
    let host = host_of(s.control());
    for (origin, fetch_site) in [
        (Some("http://evil.example"), Some("cross-site")),
        (Some("http://evil.example"), None),
        // A sandboxed iframe or a file: page.
        (Some("null"), Some("cross-site")),
        (Some("null"), None),
        // Another port of the same machine is another origin (and the same site).
        (Some("http://127.0.0.1"), Some("same-site")),
        (Some("http://127.0.0.1:8000"), None),
        // A simple request without Origin, which a browser still marks as cross-site.
        (None, Some("cross-site")),
    ] {
        for (method, target, content_type, body) in control_requests() {
            let mut headers = vec![("Host", host.as_str())];
            headers.extend(origin.map(|o| ("Origin", o)));
            headers.extend(fetch_site.map(|f| ("Sec-Fetch-Site", f)));
            if !content_type.is_empty() {
                headers.push(("Content-Type", content_type));
            }
            if method == "OPTIONS" {
                headers.push(("Access-Control-Request-Method", "POST"));
            }
            let r = send(
                s.control(),
                &format!("{method} {target} HTTP/1.1"),
                &headers,
                body,
            );
            let what = format!("{origin:?} {fetch_site:?} {method} {target}");
            let message = origin.map_or(CROSS_SITE.to_string(), origin_refusal);
            let path = target.split('?').next().unwrap();
            assert_eq!(r.status, 403, "{what}: {}", r.body);
            assert_eq!(r.json(), control_body(method, path, &message), "{what}");
            assert_eq!(r.header("Access-Control-Allow-Origin"), None, "{what}");
        }
        // The page and /info change nothing and show no secret; without CORS the page cannot
        // read them anyway.
        for target in ["/", "/info"] {
            let mut headers = vec![("Host", host.as_str())];
            headers.extend(origin.map(|o| ("Origin", o)));
            headers.extend(fetch_site.map(|f| ("Sec-Fetch-Site", f)));
            let r = send(s.control(), &format!("GET {target} HTTP/1.1"), &headers, "");
            assert_eq!(r.status, 200, "{target}");
            assert_eq!(r.header("Access-Control-Allow-Origin"), None);
        }
    }
    assert_eq!(snapshot(&s), before);
    assert_eq!(devices(&s).as_array().unwrap().len(), 1);
    // The same command without the page's headers is carried out: the refusals above were
    // not a server that ignores it.
    let r = send(
        s.control(),
        "POST /command HTTP/1.1",
        &[("Host", &host), ("Content-Type", "text/plain")],
        SET_29_5,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(target_of(&s), json!(29.5));
}

#[test]
fn requests_without_an_origin_work_as_before_whatever_their_content_type() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let host = host_of(s.control());
    for (i, content_type) in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("application/json"),
        Some("multipart/form-data; boundary=x"),
    ]
    .into_iter()
    .enumerate()
    {
        let value = 18.0 + i as f64;
        let body =
            format!(r#"{{"serial":"{SERIAL}","command":"set_temperature","value":{value}}}"#);
        let mut headers = vec![("Host", host.as_str())];
        headers.extend(content_type.map(|c| ("Content-Type", c)));
        // What browsers send for a request typed in the address bar or from a bookmark.
        if i == 4 {
            headers.push(("Sec-Fetch-Site", "none"));
        }
        let r = send(s.control(), "POST /command HTTP/1.1", &headers, &body);
        assert_eq!(r.status, 200, "{content_type:?}: {}", r.body);
        assert_eq!(r.json()["success"], json!(true));
        assert_eq!(target_of(&s), json!(value));
    }
    // The page's own requests carry its own origin: same host and port.
    let r = send(
        s.control(),
        "POST /command HTTP/1.1",
        &[
            ("Host", &host),
            ("Origin", &format!("http://{host}")),
            ("Sec-Fetch-Site", "same-origin"),
            ("Content-Type", "application/json"),
        ],
        SET_29_5,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(target_of(&s), json!(29.5));
    // Behind a TLS-terminating reverse proxy named in ALLOWED_HOSTS: the page is https, the
    // proxy passes the public Host on over plain HTTP.
    let proxied = TestServer::start_with(|c| c.allowed_hosts = vec!["hearth.example.com".into()]);
    let (_sim2, _events2, _held2) = booted_and_held(&proxied, SERIAL);
    let r = send(
        proxied.control(),
        "DELETE /api/device HTTP/1.1",
        &[
            ("Host", "hearth.example.com"),
            ("Origin", "https://hearth.example.com"),
            ("Sec-Fetch-Site", "same-origin"),
            ("X-Forwarded-Proto", "https"),
            ("Content-Type", "application/json"),
        ],
        REMOVE,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(devices(&proxied), json!([]));
}

#[test]
fn pages_of_allowed_origins_get_cors_and_others_a_403_preflight() {
    const CARD: &str = "https://ha.example.com:8123";
    let s = TestServer::start_with(|c| c.allowed_origins = vec![CARD.into()]);
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let host = host_of(s.control());

    // The allowed page's preflight, then its request (cross-site, as a dashboard card is).
    let r = send(
        s.control(),
        "OPTIONS /command HTTP/1.1",
        &[
            ("Host", &host),
            ("Origin", CARD),
            ("Sec-Fetch-Site", "cross-site"),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "content-type"),
        ],
        "",
    );
    assert_eq!((r.status, r.body.as_str()), (200, ""));
    for (name, value) in [
        ("Access-Control-Allow-Origin", CARD),
        ("Vary", "Origin"),
        (
            "Access-Control-Allow-Methods",
            "GET, POST, PUT, DELETE, OPTIONS",
        ),
        (
            "Access-Control-Allow-Headers",
            "Content-Type, Authorization, X-API-Key",
        ),
        ("Access-Control-Max-Age", "600"),
    ] {
        assert_eq!(r.header(name), Some(value), "{name}");
    }
    let r = send(
        s.control(),
        "POST /command HTTP/1.1",
        &[
            ("Host", &host),
            ("Origin", CARD),
            ("Sec-Fetch-Site", "cross-site"),
            ("Content-Type", "application/json"),
        ],
        SET_29_5,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("Access-Control-Allow-Origin"), Some(CARD));
    assert_eq!(r.header("Vary"), Some("Origin"));
    assert_eq!(target_of(&s), json!(29.5));
    let r = send(
        s.control(),
        "GET /api/devices HTTP/1.1",
        &[
            ("Host", &host),
            ("Origin", CARD),
            ("Sec-Fetch-Site", "cross-site"),
        ],
        "",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Access-Control-Allow-Origin"), Some(CARD));
    // Its live event stream says so in its head.
    let stream = hearth::http::client::ChunkStream::open(
        &url(s.control(), "/api/events"),
        "GET",
        &[("Origin", CARD)],
        b"",
        TIMEOUT,
        true,
    )
    .unwrap();
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("Access-Control-Allow-Origin"), Some(CARD));
    drop(stream);

    // Any other page: its preflight is refused, on every path, and tells it nothing.
    let before = snapshot(&s);
    for origin in [
        "https://ha.example.com",
        "http://ha.example.com:8123",
        "https://evil.example",
        "null",
    ] {
        for target in [
            "/command",
            "/api/devices",
            "/health",
            "/",
            "/api/v1/devices",
        ] {
            let r = send(
                s.control(),
                &format!("OPTIONS {target} HTTP/1.1"),
                &[
                    ("Host", &host),
                    ("Origin", origin),
                    ("Access-Control-Request-Method", "POST"),
                ],
                "",
            );
            assert_eq!(r.status, 403, "{origin} {target}");
            assert_eq!(
                r.json(),
                control_body("OPTIONS", target, &origin_refusal(origin))
            );
            assert_eq!(r.header("Access-Control-Allow-Origin"), None);
            assert_eq!(r.header("Access-Control-Allow-Methods"), None);
        }
    }
    assert_eq!(snapshot(&s), before);
}

#[test]
fn the_device_port_refuses_cross_site_posts() {
    let s = TestServer::start();
    let (sim, _events, _held) = booted_and_held(&s, SERIAL);
    let before = snapshot(&s);
    let host = host_of(s.device());
    // The thermostat's own password (pinned at its registration), so only the browser rule
    // can refuse these.
    let auth = basic(SERIAL, &sim.password());
    let put = json!({"objects": [{"object_key": format!("shared.{SERIAL}"),
                                  "value": {"target_temperature": 29.5}}]})
    .to_string();
    let passphrase = format!("/nest/passphrase?serial={SERIAL}");
    for (origin, fetch_site) in [
        (Some("http://evil.example"), Some("cross-site")),
        (Some("null"), None),
        (None, Some("cross-site")),
    ] {
        for (method, target, body) in [
            ("POST", "/nest/transport/v7/put", put.as_str()),
            ("POST", "/nest/transport/put", put.as_str()),
            ("POST", "/nest/entry", ""),
            ("GET", passphrase.as_str(), ""),
            (
                "GET",
                "/nest/transport/v7/device/device.02AA01AC0000SIM1",
                "",
            ),
            ("POST", "/nest/upload", "log"),
            ("OPTIONS", "/nest/transport/v7/put", ""),
        ] {
            // A simple request: text/plain, no preflight, Basic credentials in the URL or not.
            let mut headers = vec![
                ("Host", host.as_str()),
                ("Content-Type", "text/plain"),
                ("Authorization", auth.as_str()),
            ];
            headers.extend(origin.map(|o| ("Origin", o)));
            headers.extend(fetch_site.map(|f| ("Sec-Fetch-Site", f)));
            let r = send(
                s.device(),
                &format!("{method} {target} HTTP/1.1"),
                &headers,
                body,
            );
            let message = origin.map_or(CROSS_SITE.to_string(), origin_refusal);
            let what = format!("{origin:?} {method} {target}");
            assert_eq!(
                (r.status, r.json()),
                (403, json!({ "error": message })),
                "{what}"
            );
            assert_eq!(r.header("Access-Control-Allow-Origin"), None);
        }
        // /health and /info tell a page nothing it may read, and change nothing.
        for target in ["/health", "/info"] {
            let mut headers = vec![("Host", host.as_str())];
            headers.extend(origin.map(|o| ("Origin", o)));
            headers.extend(fetch_site.map(|f| ("Sec-Fetch-Site", f)));
            let r = send(s.device(), &format!("GET {target} HTTP/1.1"), &headers, "");
            assert_eq!(r.status, 200, "{target}");
            assert_eq!(r.header("Access-Control-Allow-Origin"), None);
        }
    }
    assert_eq!(snapshot(&s), before);
    assert!(
        s.app()
            .state()
            .accounts(|a| a.active_entry_key(SERIAL, 0).is_none())
    );
    // The same PUT as a thermostat sends it (no Origin, its form content type) is stored.
    let r = send(
        s.device(),
        "POST /nest/transport/v7/put HTTP/1.1",
        &[
            ("Host", &host),
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Authorization", &auth),
        ],
        &put,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(target_of(&s), json!(29.5));
}

/// Home Assistant's ingress: the Supervisor passes on the browser's headers, Host and Origin
/// included (Home Assistant's own name, which may be a public one), and adds X-Ingress-Path,
/// X-Hass-Source and X-Forwarded-*. From the proxy's address that Host needs no ALLOWED_HOSTS;
/// the same Host from anywhere else is refused, and a foreign page is refused through it.
#[test]
fn home_assistant_ingress_passes_on_home_assistants_name() {
    let s = TestServer::start_with(|c| c.ingress_proxy = Some("127.0.0.2".parse().unwrap()));
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let from_proxy = |method: &str, target: &str, origin: &str, body: &str| {
        let mut socket = socket2_bound("127.0.0.2", s.control());
        let mut request = format!(
            "{method} {target} HTTP/1.1\r\nHost: abcdef.ui.nabu.casa\r\nOrigin: {origin}\r\n\
             Sec-Fetch-Site: same-origin\r\nContent-Type: application/json\r\n\
             X-Ingress-Path: /api/hassio_ingress/0123abcd\r\nX-Hass-Source: core.ingress\r\n\
             X-Forwarded-For: 192.168.1.20, 172.30.32.1\r\nX-Forwarded-Host: abcdef.ui.nabu.casa\r\n\
             X-Forwarded-Proto: https\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(request.as_bytes()).unwrap();
        request.clear();
        socket.read_to_string(&mut request).unwrap();
        request
    };
    let own = "https://abcdef.ui.nabu.casa";
    let page = from_proxy("GET", "/", own, "");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("data-ingress-path=\"/api/hassio_ingress/0123abcd\""));
    // The page's own files come through the proxy the same way, with no key.
    let part = from_proxy("GET", "/ui/api.js", own, "");
    assert!(part.starts_with("HTTP/1.1 200"), "{part}");
    let answer = from_proxy("POST", "/command", own, SET_29_5);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(target_of(&s), json!(29.5));
    let refused = from_proxy("POST", "/command", "https://evil.example", SET_29_5);
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    // Not from the proxy: the name is foreign.
    let r = send(
        s.control(),
        "GET /api/devices HTTP/1.1",
        &[("Host", "abcdef.ui.nabu.casa"), ("Origin", own)],
        "",
    );
    assert_eq!(r.status, 421);
    assert_eq!(target_of(&s), json!(29.5));
}

/// A connection to `to` from the loopback address `from`.
fn socket2_bound(from: &str, to: SocketAddr) -> TcpStream {
    let socket = rustix::net::socket(
        rustix::net::AddressFamily::INET,
        rustix::net::SocketType::STREAM,
        None,
    )
    .unwrap();
    let local: SocketAddr = format!("{from}:0").parse().unwrap();
    rustix::net::bind(&socket, &local).unwrap();
    rustix::net::connect(&socket, &to).unwrap();
    let stream = TcpStream::from(socket);
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    stream
}

/// `POST /command` setting 29.5 with `Host` and `Origin` as given, on the control port.
fn command_with(s: &TestServer, host: &str, origin: &str) -> Answer {
    send(
        s.control(),
        "POST /command HTTP/1.1",
        &[
            ("Host", host),
            ("Origin", origin),
            ("Content-Type", "text/plain"),
        ],
        SET_29_5,
    )
}

#[test]
fn without_a_port_in_host_only_the_scheme_hearth_serves_is_its_own_origin() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let before = snapshot(&s);
    // Plain HTTP: with `Host: 127.0.0.1` an https page (another app at 443) is not hearth's.
    for origin in ["https://127.0.0.1", "https://127.0.0.1:443"] {
        let r = command_with(&s, "127.0.0.1", origin);
        assert_eq!(r.status, 403, "{origin}: {}", r.body);
        let message = origin_refusal(origin);
        assert_eq!(r.json(), json!({"success": false, "message": message}));
        // The device port refuses it the same way.
        let r = send(
            s.device(),
            "POST /nest/transport/v7/put HTTP/1.1",
            &[("Host", "127.0.0.1"), ("Origin", origin)],
            "{}",
        );
        assert_eq!((r.status, r.json()), (403, json!({ "error": message })));
    }
    // A bracketed Host that is no IPv6 address, or one with a zone id: 421.
    for host in [
        "[evil]",
        "[evil]:8082",
        "[fe80::1%25eth0]",
        "[fe80::1%eth0]:8082",
    ] {
        let r = send(
            s.control(),
            "POST /command HTTP/1.1",
            &[("Host", host), ("Content-Type", "text/plain")],
            SET_29_5,
        );
        assert_eq!(r.status, 421, "{host}: {}", r.body);
        assert_eq!(
            r.json(),
            json!({"success": false, "message": host_refusal(host)})
        );
    }
    assert_eq!(snapshot(&s), before, "nothing changed");
    // The own origin still passes: http at its default port, or with the port of `Host`.
    let r = command_with(&s, "127.0.0.1", "http://127.0.0.1");
    assert_eq!(r.status, 200, "{}", r.body);
    let host = host_of(s.control());
    let own = format!("http://{host}");
    let r = command_with(&s, &host, &own);
    assert_eq!(r.status, 200, "{}", r.body);
    let r = command_with(&s, "[::1]", "http://[::1]");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(target_of(&s), json!(29.5));
}

#[test]
fn a_tls_terminating_proxy_at_a_name_in_allowed_hosts_still_passes() {
    let s = TestServer::start_with(|c| c.allowed_hosts = vec!["hearth.example.com".into()]);
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let before = snapshot(&s);
    // Another name without a port, https page: refused.
    let r = command_with(&s, "hearth.lan", "https://hearth.lan");
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(snapshot(&s), before);
    // The proxy passes the browser's Host on; the page is https, hearth sees plain HTTP.
    let r = command_with(&s, "hearth.example.com", "https://hearth.example.com");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(target_of(&s), json!(29.5));
}
