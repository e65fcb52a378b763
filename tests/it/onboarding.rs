//! Onboarding against fake thermostats: each is the simulator's settings API (the No Longer Evil
//! firmware's `/cgi-bin/api/settings`) on its own loopback address, all on one port, so a scan
//! of a loopback /24 finds them. Every test uses its own 127.77.N.0/24.

use crate::common;

use std::net::{Ipv4Addr, SocketAddr};

use common::*;
use hearth::http::client::ClientResponse;
use hearth::simulator::settings_api::{Settings, SettingsApi};
use serde_json::json;

const KEY: &str = "SECRETKEY123";
const FACTORY_URL: &str = "https://backdoor.nolongerevil.com/entry";

/// A fake thermostat at `ip` on `port` (0: a free one), with the factory URL.
fn fake(ip: Ipv4Addr, port: u16, serial: &str) -> SettingsApi {
    common::share_process();
    SettingsApi::start(
        SocketAddr::from((ip, port)),
        Settings {
            serial: serial.into(),
            api_key: KEY.into(),
            cloudregisterurl: Some(FACTORY_URL.into()),
            key_required: true,
        },
    )
    .unwrap()
}

/// `POST target` on the control port with a JSON body.
fn post_control(s: &TestServer, target: &str, body: serde_json::Value) -> ClientResponse {
    call(s.control(), "POST", target, &body.to_string())
}

fn ip(subnet: u8, host: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 77, subnet, host)
}

/// Reports `local_ip` for a thermostat that has talked to the server with `KEY` as its password.
fn known_thermostat(s: &TestServer, serial: &str, at: Ipv4Addr, name: &str) {
    let body = json!({"objects": [
        {"object_key": format!("device.{serial}"), "value": {"local_ip": at.to_string()}},
        {"object_key": format!("shared.{serial}"), "value": {"name": name, "current_temperature": 20.5}}
    ]});
    let r = hearth::http::client::request(
        &url(s.device(), "/nest/transport/put"),
        "POST",
        &[("Authorization", &basic(serial, KEY))],
        body.to_string().as_bytes(),
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn scan_network_lists_thermostats_with_what_the_server_knows() {
    let a = fake(ip(1, 5), 0, "02AA01AC0000SCN1");
    let port = a.addr().port();
    let b = fake(ip(1, 9), port, "02AA01AC0000SCN2");
    let s = TestServer::start_with(|c| c.thermostat_api_port = port);
    // b already points here, and the server knows it.
    let here = s.app().origin().cloud_register_url();
    let r = post_control(
        &s,
        "/api/configure-nest",
        json!({"ip": "127.77.1.9", "api_key": KEY}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    known_thermostat(&s, "02AA01AC0000SCN2", ip(1, 9), "Hallway");

    let r = post_control(&s, "/api/scan-network", json!({"subnet": "127.77.1.0/24"}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json(),
        json!({
            "devices": [
                {"ip": "127.77.1.5", "device_name": null, "serial": null,
                 "configured": false, "cloudregisterurl": FACTORY_URL},
                {"ip": "127.77.1.9", "device_name": "Hallway", "serial": "02AA01AC0000SCN2",
                 "configured": true, "cloudregisterurl": here},
            ],
            "subnet": "127.77.1.0/24"
        })
    );
    assert_eq!(a.settings().cloudregisterurl.as_deref(), Some(FACTORY_URL));
    drop(b);
}

#[test]
fn scan_network_refuses_bad_subnets() {
    let s = TestServer::start();
    for (body, message) in [
        (
            json!({"subnet": "10.0.0.0/16"}),
            "\"10.0.0.0/16\" is too large: a scan covers at most a /24 (256 addresses)",
        ),
        (
            json!({"subnet": "nope"}),
            "\"nope\" is not a subnet like 192.168.1.0/24",
        ),
        (json!({"subnet": 24}), "subnet must be a string"),
    ] {
        let r = post_control(&s, "/api/scan-network", body);
        assert_eq!((r.status, r.json()), (400, json!({"error": message})));
    }
    let r = call(s.control(), "POST", "/api/scan-network", "{");
    assert_eq!(
        (r.status, r.json()),
        (400, json!({"error": "Invalid JSON"}))
    );
    assert_eq!(get(s.control(), "/api/scan-network").status, 405);
}

#[test]
fn configure_nest_points_a_thermostat_and_reads_it_back() {
    let t = fake(ip(2, 7), 0, "02AA01AC0000CFG1");
    let s = TestServer::start_with(|c| c.thermostat_api_port = t.addr().port());
    let configure = |body: serde_json::Value| post_control(&s, "/api/configure-nest", body);

    // No key and none known: the thermostat's 401 becomes auth_required, with what to do.
    let r = configure(json!({"ip": "127.77.2.7"}));
    assert_eq!(r.status, 401);
    let body = r.json();
    assert_eq!(
        (body["success"].clone(), body["auth_required"].clone()),
        (json!(false), json!(true))
    );
    assert!(
        body["error"].as_str().unwrap().contains("30 minutes"),
        "{body}"
    );
    let r = configure(json!({"ip": "127.77.2.7", "api_key": "WRONG"}));
    assert_eq!(r.status, 401);
    assert_eq!(t.settings().cloudregisterurl.as_deref(), Some(FACTORY_URL));

    // The key, typed in lower case with spaces, is sent as the Python server sends it.
    let r = configure(json!({"ip": " 127.77.2.7 ", "api_key": " secretkey123 "}));
    assert_eq!(r.status, 200, "{}", r.text());
    let here = s.app().origin().cloud_register_url();
    assert_eq!(
        r.json(),
        json!({"success": true, "device_name": "02AA01AC0000CFG1", "cloudregisterurl": here})
    );
    assert_eq!(
        t.settings().cloudregisterurl.as_deref(),
        Some(here.as_str())
    );
}

#[test]
fn configure_nest_uses_the_key_the_thermostat_sent() {
    let t = fake(ip(3, 7), 0, "02AA01AC0000CFG2");
    let s = TestServer::start_with(|c| c.thermostat_api_port = t.addr().port());
    known_thermostat(&s, "02AA01AC0000CFG2", ip(3, 7), "Den");
    let r = post_control(&s, "/api/configure-nest", json!({"ip": "127.77.3.7"}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        t.settings().cloudregisterurl,
        Some(s.app().origin().cloud_register_url())
    );
}

#[test]
fn configure_nest_refusals() {
    let t = fake(ip(4, 7), 0, "02AA01AC0000CFG3");
    let s = TestServer::start_with(|c| c.thermostat_api_port = t.addr().port());
    let before = store_bytes(s.dir.path());
    for (body, status, error) in [
        ("{", 400, "Invalid JSON"),
        ("[]", 400, "Request body must be a JSON object"),
        ("{}", 400, "ip required"),
        (
            r#"{"ip":"thermostat.local"}"#,
            400,
            "ip must be an IPv4 address like 192.168.1.50",
        ),
        (r#"{"ip":7}"#, 400, "ip must be a string"),
        (
            r#"{"ip":"127.77.4.7","api_key":5}"#,
            400,
            "api_key must be a string",
        ),
    ] {
        let r = call(s.control(), "POST", "/api/configure-nest", body);
        assert_eq!(
            (r.status, r.json()),
            (status, json!({"success": false, "error": error})),
            "{body}"
        );
    }
    // Nothing listens there.
    let r = post_control(
        &s,
        "/api/configure-nest",
        json!({"ip": "127.77.4.8", "api_key": KEY}),
    );
    assert_eq!(r.status, 502);
    assert!(
        r.json()["error"]
            .as_str()
            .unwrap()
            .starts_with("Connection failed: "),
        "{}",
        r.text()
    );
    assert_eq!(t.settings().cloudregisterurl.as_deref(), Some(FACTORY_URL));
    assert_eq!(store_bytes(s.dir.path()), before);
}

#[test]
fn an_https_origin_is_refused_before_the_thermostat_is_touched() {
    let t = fake(ip(5, 7), 0, "02AA01AC0000CFG4");
    let s = TestServer::start_with(|c| {
        c.thermostat_api_port = t.addr().port();
        c.api_origin = Some(hearth::config::ApiOrigin::parse("https://127.0.0.1:8443").unwrap());
    });
    let r = post_control(
        &s,
        "/api/configure-nest",
        json!({"ip": "127.77.5.7", "api_key": KEY}),
    );
    assert_eq!(
        (r.status, r.json()),
        (
            409,
            json!({"success": false, "error": "API_ORIGIN is https://127.0.0.1:8443: a thermostat's settings API takes only http:// addresses"})
        )
    );
    assert_eq!(t.settings().cloudregisterurl.as_deref(), Some(FACTORY_URL));
}

#[test]
fn hearth_scan_and_point_from_the_command_line() {
    let t = fake(ip(6, 20), 0, "02AA01AC0000CLI1");
    let port = t.addr().port().to_string();
    let dir = TempDir::new("cli");
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let origin = "http://127.0.0.1:18000";
    let common = [
        "--api-origin",
        origin,
        "--thermostat-api-port",
        &port,
        "--data-dir",
        data,
    ];
    let run = |verb: &[&str]| run_hearth(&[verb, &common[..]].concat());

    let (ok, out, err) = run(&["scan", "--subnet", "127.77.6.0/24"]);
    assert!(ok, "{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("127.77.6.20"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        row.contains(FACTORY_URL) && row.trim_end().ends_with("no"),
        "{row}"
    );
    assert!(out.contains("1 thermostat found in 127.77.6.0/24"), "{out}");

    // Past its first 30 minutes the thermostat wants its key: the command says how to get it.
    let (ok, _, err) = run(&["point", "127.77.6.20"]);
    assert!(!ok);
    assert!(
        err.contains("30 minutes") && err.contains("--api-key"),
        "{err}"
    );

    let (ok, out, err) = run(&["point", "127.77.6.20", "--api-key", KEY]);
    assert!(ok, "{err}");
    assert_eq!(
        out.trim(),
        "02AA01AC0000CLI1 at 127.77.6.20 now registers at http://127.0.0.1:18000/entry"
    );
    assert_eq!(
        t.settings().cloudregisterurl.as_deref(),
        Some("http://127.0.0.1:18000/entry")
    );
    let (ok, out, _) = run(&["scan", "--subnet", "127.77.6.0/24"]);
    assert!(ok);
    let row = out.lines().find(|l| l.starts_with("127.77.6.20")).unwrap();
    assert!(row.trim_end().ends_with("yes"), "{row}");

    // In its first 30 minutes no key is needed.
    t.set_key_required(false);
    let (ok, _, err) = run(&["point", "127.77.6.20"]);
    assert!(ok, "{err}");

    for (args, message) in [
        (
            vec!["point", "nope"],
            "\"nope\" is not an IPv4 address like 192.168.1.50",
        ),
        (vec!["scan", "--subnet", "10.0.0.0/8"], "is too large"),
    ] {
        let (ok, _, err) = run(&args);
        assert!(!ok && err.contains(message), "{args:?}: {err}");
    }
}

#[test]
fn hearth_point_uses_the_key_a_running_server_has_seen() {
    let t = fake(ip(7, 20), 0, "02AA01AC0000CLI2");
    let s = TestServer::start();
    known_thermostat(&s, "02AA01AC0000CLI2", ip(7, 20), "Office");
    let origin = format!("http://{}", s.device());
    let hearth = |verb: &[&str]| hearth_on(&s, t.addr().port(), verb);
    let (ok, out, err) = hearth(&["point", "127.77.7.20"]);
    assert!(ok, "{err}");
    assert!(out.contains("now registers at"), "{out}");
    assert_eq!(
        t.settings().cloudregisterurl,
        Some(format!("{origin}/entry"))
    );
    // The scan names it, through the running server.
    let (ok, out, err) = hearth(&["scan", "--subnet", "127.77.7.0/24"]);
    assert!(ok, "{err}");
    let row = out.lines().find(|l| l.starts_with("127.77.7.20")).unwrap();
    assert!(
        row.contains("Office") && row.contains("02AA01AC0000CLI2"),
        "{row}"
    );
}

/// Runs `hearth VERB...` on a test server's data directory, with its origin and the fake
/// thermostats' settings-API port.
fn hearth_on(s: &TestServer, thermostat_api_port: u16, verb: &[&str]) -> (bool, String, String) {
    let origin = format!("http://{}", s.device());
    let port = thermostat_api_port.to_string();
    let data = s.dir.path().to_str().unwrap();
    let common = [
        "--api-origin",
        &origin,
        "--thermostat-api-port",
        &port,
        "--data-dir",
        data,
    ];
    run_hearth(&[verb, &common[..]].concat())
}

/// "Your first thermostat" (docs/onboarding.md), end to end: scan, point, and the thermostat (the
/// simulator, registering at whatever URL its settings API now holds) shows in `/status`.
#[test]
fn your_first_thermostat_from_scan_to_status() {
    const NEW: &str = "02AA01AC0000NEW1";
    let settings = fake(ip(8, 42), 0, NEW);
    settings.set_key_required(false); // powered on a few minutes ago
    let s = TestServer::start();
    let run = |verb: &[&str]| hearth_on(&s, settings.addr().port(), verb);

    let (ok, out, err) = run(&["scan", "--subnet", "127.77.8.0/24"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("127.77.8.42") && out.contains(FACTORY_URL),
        "{out}"
    );
    let (ok, _, err) = run(&["point", "127.77.8.42"]);
    assert!(ok, "{err}");

    let url = settings.settings().cloudregisterurl.unwrap();
    let server = url.strip_suffix("/entry").unwrap();
    let (mut thermostat, _events) = thermostat(server, NEW);
    thermostat.boot().unwrap();
    let status = get(s.control(), &format!("/status?serial={NEW}"));
    assert_eq!(status.status, 200, "{}", status.text());
    assert!(
        status.json()["current_temperature"].is_number(),
        "{}",
        status.text()
    );
    let (ok, out, _) = run(&["scan", "--subnet", "127.77.8.0/24"]);
    assert!(ok);
    let row = out.lines().find(|l| l.starts_with("127.77.8.42")).unwrap();
    assert!(row.trim_end().ends_with("yes"), "{row}");
}
