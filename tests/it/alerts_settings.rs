//! The alert settings on the page's routes (docs/alerts.md#settings-on-the-page): receivers and a
//! limit set by `PUT /api/alerts/settings` are used by the next alert without a restart and kept
//! across one; a flag beats a saved value, which beats the environment; bad values are refused
//! naming the setting, with nothing changed; "Send a test" reaches local receivers and reports
//! their status, never their body, one test at a time; a web page of another site can neither
//! read nor change them.

use crate::alerts::{Receiver, SECRET, assert_signed};
use crate::common::*;

use std::path::Path;
use std::sync::Arc;

use hearth::config::{Config, Sources};
use hearth::http::client::{self, ClientResponse};
use hearth::http::{Reply, Request, Response};
use serde_json::{Value, json};

const SETTINGS: &str = "/api/alerts/settings";

fn send(
    addr: std::net::SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> ClientResponse {
    let mut all = vec![("Content-Type", "application/json")];
    all.extend_from_slice(headers);
    client::request(&url(addr, target), method, &all, body.as_bytes(), TIMEOUT).expect("request")
}

fn put(s: &TestServer, body: Value) -> (u16, Value) {
    let r = call(s.control(), "PUT", SETTINGS, &body.to_string());
    (r.status, r.json())
}

fn shown(addr: std::net::SocketAddr) -> Value {
    let r = get(addr, SETTINGS);
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn setting(view: &Value, name: &str) -> Value {
    view["settings"][name].clone()
}

fn saved_file(dir: &Path) -> Option<Vec<u8>> {
    std::fs::read(dir.join("alerts/settings.json")).ok()
}

fn active_kinds(addr: std::net::SocketAddr) -> Vec<String> {
    get(addr, "/api/alerts").json()["active"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|a| a["kind"].as_str().unwrap().to_string())
        .collect()
}

fn wait_kind(addr: std::net::SocketAddr, kind: &str, present: bool) {
    wait_until(&format!("{kind} active: {present}"), || {
        active_kinds(addr).iter().any(|k| k == kind) == present
    });
}

#[test]
fn receivers_and_a_limit_set_on_the_page_are_used_at_once_and_kept_across_a_restart() {
    let hook = Receiver::start(0);
    let ntfy = Receiver::start(0);
    let s = TestServer::start_with(|c| c.alerts.offline_after = None);
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.report("shared", "name", json!("Hallway"));
    sim.report("shared", "current_temperature", json!(9.0));
    sim.boot().unwrap();
    // A low battery shows the rules have read the 9 °C (no alert at the default 7 °C).
    sim.report("device", "battery_level", json!(3.5));
    sim.put().unwrap();
    wait_kind(s.control(), "low_battery", true);
    assert!(!active_kinds(s.control()).contains(&"low_temperature".to_string()));

    let (status, view) = put(
        &s,
        json!({"alert_low_c": 10, "ntfy_url": ntfy.url(), "webhook_url": hook.url(),
               "webhook_secret": SECRET}),
    );
    assert_eq!(status, 200, "{view}");
    assert_eq!(
        setting(&view, "alert_low_c"),
        json!({"value": 10, "source": "saved", "variable": "ALERT_LOW_C",
               "flag": "--alert-low-c", "under": {"value": 7, "source": "default"}})
    );
    assert_eq!(setting(&view, "ntfy_url")["value"], json!(ntfy.url()));
    // The secret is shown as set, never returned.
    assert_eq!(setting(&view, "webhook_secret")["set"], json!(true));
    assert!(!view.to_string().contains(SECRET), "{view}");
    assert_eq!(shown(s.control()), view);

    // No restart: the 9 °C room is below the new limit, and both new receivers hear of it.
    wait_kind(s.control(), "low_temperature", true);
    let sent = ntfy.wait_for(1);
    assert_eq!(sent[0].header("Title"), Some("Too cold"));
    assert_eq!(
        sent[0].text(),
        "Hallway is 9°C (below 10°C) — heating is off"
    );
    let hooks = hook.wait_for(1);
    assert_eq!(hooks[0].json()["alert"]["kind"], json!("low_temperature"));
    assert_signed(&hooks[0]);

    // Kept across a restart, and used by the next alert after it.
    let dir = s.stop();
    let server = restart(&dir);
    let view = shown(server.control_addr());
    assert_eq!(setting(&view, "alert_low_c")["value"], json!(10));
    assert_eq!(setting(&view, "alert_low_c")["source"], json!("saved"));
    assert_eq!(setting(&view, "webhook_url")["value"], json!(hook.url()));
    let (mut sim, _events) = thermostat(&format!("http://{}", server.device_addr()), SERIAL);
    sim.report("shared", "name", json!("Hallway"));
    sim.boot().unwrap();
    sim.report("shared", "current_temperature", json!(10.5));
    sim.put().unwrap();
    wait_kind(server.control_addr(), "low_temperature", false);
    sim.report("shared", "current_temperature", json!(9.5));
    sim.put().unwrap();
    // Two episodes' starts (the first may come again: the stop may have come before its
    // delivery was recorded, and a repeat carries the same id).
    wait_until("a second episode at the webhook", || {
        let mut ids: Vec<String> = hook
            .seen()
            .iter()
            .filter(|h| {
                h.json()["event"] == json!("started")
                    && h.json()["alert"]["kind"] == json!("low_temperature")
            })
            .map(|h| h.json()["alert"]["id"].to_string())
            .collect();
        ids.sort();
        ids.dedup();
        ids.len() == 2
    });
    wait_until("its start at ntfy", || {
        ntfy.seen()
            .iter()
            .any(|h| h.text() == "Hallway is 9.5°C (below 10°C) — heating is off")
    });
    server.shutdown();
}

#[test]
fn a_flag_beats_a_saved_value_which_beats_the_environment() {
    let env = |k: &str| match k {
        "ALERT_LOW_C" => Some("5".to_string()),
        "ALERT_HIGH_C" => Some("30".to_string()),
        "ALERT_OFFLINE_MINUTES" => Some("20".to_string()),
        _ => None,
    };
    let mut sources = Sources::new(&env);
    sources.flag("ALERT_HIGH_C", Some("32".into()));
    let given = Config::resolve(&sources).unwrap();
    let s = TestServer::start_with(|c| {
        c.alerts = given.alerts.clone();
        c.alert_sources = given.alert_sources.clone();
    });
    let view = shown(s.control());
    let of = |v: &Value, name: &str| {
        (
            setting(v, name)["value"].clone(),
            setting(v, name)["source"].clone(),
        )
    };
    assert_eq!(of(&view, "alert_low_c"), (json!(5), json!("environment")));
    assert_eq!(of(&view, "alert_high_c"), (json!(32), json!("flag")));
    assert_eq!(
        of(&view, "alert_not_heating_minutes"),
        (json!(90), json!("default"))
    );
    assert_eq!(
        of(&view, "alert_not_applied_minutes"),
        (json!(15), json!("default"))
    );

    // Saved beats the environment; the flag's setting cannot be saved (409), and a change
    // naming it changes nothing else either.
    let (status, view) = put(&s, json!({"alert_low_c": 6.5, "alert_offline_minutes": 0}));
    assert_eq!(status, 200, "{view}");
    assert_eq!(of(&view, "alert_low_c"), (json!(6.5), json!("saved")));
    assert_eq!(
        setting(&view, "alert_low_c")["under"],
        json!({"value": 5, "source": "environment"})
    );
    assert_eq!(
        of(&view, "alert_offline_minutes"),
        (json!(0), json!("saved"))
    );
    let file = saved_file(s.dir.path());
    let (status, body) = put(&s, json!({"alert_low_c": 4, "alert_high_c": 25}));
    assert_eq!(
        (status, body),
        (
            409,
            json!({"error": "alert_high_c is set by the flag --alert-high-c, which wins over the page: remove the flag to set it here"})
        )
    );
    assert_eq!(saved_file(s.dir.path()), file);
    assert_eq!(shown(s.control()), view);

    // Cleared: back to the environment's.
    let (status, view) = put(&s, json!({"alert_low_c": null}));
    assert_eq!(status, 200, "{view}");
    assert_eq!(of(&view, "alert_low_c"), (json!(5), json!("environment")));
    assert_eq!(setting(&view, "alert_low_c").get("under"), None);
}

#[test]
fn bad_values_are_refused_naming_the_setting_and_change_nothing() {
    let s = TestServer::start();
    let (status, _) = put(
        &s,
        json!({"alert_high_c": 30, "ntfy_url": "http://127.0.0.1:9/t"}),
    );
    assert_eq!(status, 200);
    let before = (shown(s.control()), saved_file(s.dir.path()));
    assert!(before.1.is_some());
    let rules = "low_temperature, high_temperature, offline, not_heating, not_cooling, \
                 not_applied, filter, low_battery, safety_shutoff";
    let fields = "alert_low_c, alert_high_c, alert_offline_minutes, alert_not_heating_minutes, \
                  alert_not_applied_minutes, filter_reminder_hours, alert_rules_off, ntfy_url, \
                  webhook_url, webhook_secret";
    for (body, error) in [
        ("{", "Invalid JSON".to_string()),
        ("[1]", "Request body must be a JSON object".to_string()),
        (
            r#"{"ntfy_url": "ntfy.sh/house"}"#,
            r#"ntfy_url must be an http:// or https:// URL with a host (got "ntfy.sh/house")"#
                .to_string(),
        ),
        (
            r#"{"webhook_url": "file:///etc/passwd"}"#,
            r#"webhook_url must be an http:// or https:// URL with a host (got "file:///etc/passwd")"#
                .to_string(),
        ),
        // Refused whole: the good value beside the bad one is not saved either.
        (
            r#"{"alert_low_c": 4, "alert_offline_minutes": -1}"#,
            r#"alert_offline_minutes must be a number from 0 (off) to 525600, fractions allowed, such as 30 or 0.5 (got "-1")"#
                .to_string(),
        ),
        (
            r#"{"alert_low_c": "cold"}"#,
            r#"alert_low_c must be a number of °C from -50 to 100, such as 7 or 6.5 (got "cold")"#
                .to_string(),
        ),
        (
            r#"{"alert_low_c": 31}"#,
            "alert_low_c must be below ALERT_HIGH_C (31 is not below 30)".to_string(),
        ),
        (
            r#"{"alert_low_c": true}"#,
            "alert_low_c must be a number, or null to clear what the page saved".to_string(),
        ),
        (
            r#"{"alert_rules_off": ["cold"]}"#,
            format!(r#"alert_rules_off has "cold", which is no rule: the rules are {rules} (got "cold")"#),
        ),
        (
            r#"{"colour": "red"}"#,
            format!("colour is no alert setting: they are {fields}"),
        ),
    ] {
        let r = call(s.control(), "PUT", SETTINGS, body);
        assert_eq!((r.status, r.json()), (400, json!({ "error": error })), "{body}");
    }
    assert_eq!((shown(s.control()), saved_file(s.dir.path())), before);
}

/// A receiver that answers a body of its own (which must not come back), and can be held until
/// the test lets it answer.
struct Talker {
    served: hearth::http::Served,
    arrived: crossbeam_channel::Receiver<()>,
    release: crossbeam_channel::Sender<()>,
}

impl Talker {
    fn start(hold: bool) -> Talker {
        share_process();
        let (arrived_tx, arrived) = crossbeam_channel::unbounded();
        let (release, released) = crossbeam_channel::unbounded::<()>();
        let served = hearth::http::serve(
            "talker",
            "127.0.0.1:0".parse().unwrap(),
            move |_: Request| {
                let _ = arrived_tx.send(());
                if hold {
                    let _ = released.recv();
                }
                Reply::Full(Response::json(
                    418,
                    &json!({"private": "router admin page"}),
                ))
            },
        )
        .unwrap();
        Talker {
            served,
            arrived,
            release,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/x", self.served.addr())
    }
}

#[test]
fn send_a_test_reaches_the_receivers_and_reports_their_status_only() {
    let s = TestServer::start();
    let r = call(s.control(), "POST", "/api/alerts/test", "");
    assert_eq!(
        (r.status, r.json()),
        (
            409,
            json!({"error": "No receiver is set: set an ntfy topic URL or a webhook URL first"})
        )
    );

    let ntfy = Receiver::start(0);
    let talker = Talker::start(false);
    let (status, _) = put(
        &s,
        json!({"ntfy_url": ntfy.url(), "webhook_url": talker.url(), "webhook_secret": SECRET}),
    );
    assert_eq!(status, 200);
    let r = call(s.control(), "POST", "/api/alerts/test", "");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(!r.text().contains("router admin page"), "{}", r.text());
    let mut results = r.json()["results"].as_array().unwrap().clone();
    for result in &mut results {
        assert!(result["ms"].as_u64().is_some(), "{result}");
        result.as_object_mut().unwrap().remove("ms");
    }
    assert_eq!(
        results,
        [
            json!({"target": "ntfy", "status": 200, "ok": true}),
            json!({"target": "webhook", "status": 418, "ok": false}),
        ]
    );
    let seen = ntfy.wait_for(1);
    assert_eq!(seen[0].header("Title"), Some("Test from hearth"));
    assert_eq!(
        seen[0].text(),
        "A test from hearth: its alerts will reach you here."
    );
    // Nothing was recorded as an alert.
    assert_eq!(
        get(s.control(), "/api/alerts").json(),
        json!({"active": [], "recent": []})
    );

    // A receiver that is not there: why, in a word.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let gone = format!("http://{}/hook", closed.local_addr().unwrap());
    drop(closed);
    let (status, _) = put(&s, json!({"ntfy_url": "", "webhook_url": gone}));
    assert_eq!(status, 200);
    let r = call(s.control(), "POST", "/api/alerts/test", "");
    let result = &r.json()["results"][0];
    assert_eq!(
        (&result["target"], &result["error"], &result["ok"]),
        (&json!("webhook"), &json!("refused"), &json!(false)),
        "{}",
        r.text()
    );
}

#[test]
fn one_test_at_a_time() {
    let s = Arc::new(TestServer::start());
    let held = Talker::start(true);
    let (status, _) = put(&s, json!({"webhook_url": held.url()}));
    assert_eq!(status, 200);
    let first = {
        let s = Arc::clone(&s);
        std::thread::spawn(move || call(s.control(), "POST", "/api/alerts/test", ""))
    };
    held.arrived.recv().unwrap();
    let r = call(s.control(), "POST", "/api/alerts/test", "");
    assert_eq!(
        (r.status, r.json()),
        (
            409,
            json!({"error": "A test is being sent already; try again once it answered"})
        )
    );
    held.release.send(()).unwrap();
    let r = first.join().unwrap();
    assert_eq!(r.json()["results"][0]["status"], json!(418), "{}", r.text());
    // Once it answered, the next may go.
    held.release.send(()).unwrap();
    let r = call(s.control(), "POST", "/api/alerts/test", "");
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn a_rule_turned_off_clears_its_alert_and_on_again_starts_one() {
    let s = TestServer::start_with(|c| c.alerts.offline_after = None);
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.report("shared", "current_temperature", json!(5.0));
    sim.boot().unwrap();
    wait_kind(s.control(), "low_temperature", true);
    let (status, view) = put(&s, json!({"alert_rules_off": ["low_temperature"]}));
    assert_eq!(status, 200);
    assert_eq!(
        setting(&view, "alert_rules_off")["value"],
        json!(["low_temperature"])
    );
    // No change of the thermostat: the change of settings itself has it looked at.
    wait_kind(s.control(), "low_temperature", false);
    let (status, _) = put(&s, json!({"alert_rules_off": []}));
    assert_eq!(status, 200);
    wait_kind(s.control(), "low_temperature", true);
}

#[test]
fn a_web_page_of_another_site_cannot_read_change_or_test_them() {
    let hook = Receiver::start(0);
    let s = TestServer::start_with(|c| c.alerts.webhook_url = Some(hook.url()));
    let before = (shown(s.control()), saved_file(s.dir.path()));
    let evil = [("Origin", "http://evil.example")];
    let cross = [("Sec-Fetch-Site", "cross-site")];
    for headers in [&evil[..], &cross[..]] {
        for (method, target, body) in [
            ("GET", SETTINGS, ""),
            ("PUT", SETTINGS, r#"{"webhook_url": "http://192.168.1.1/"}"#),
            ("POST", "/api/alerts/test", ""),
        ] {
            let r = send(s.control(), method, target, headers, body);
            assert_eq!(r.status, 403, "{method} {target} {headers:?}: {}", r.text());
            assert!(
                r.json()["error"]
                    .as_str()
                    .unwrap()
                    .starts_with("Origin check error"),
                "{}",
                r.text()
            );
        }
    }
    assert_eq!((shown(s.control()), saved_file(s.dir.path())), before);
    assert!(hook.seen().is_empty(), "a foreign page sent a test");

    // The page itself (its own origin) may.
    let own = format!("http://{}", s.control());
    let r = send(
        s.control(),
        "PUT",
        SETTINGS,
        &[("Origin", &own), ("Sec-Fetch-Site", "same-origin")],
        r#"{"alert_low_c": 6}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn with_a_key_required_they_want_one() {
    let s = TestServer::start_with(|c| c.control_require_key = true);
    for (method, target) in [
        ("GET", SETTINGS),
        ("PUT", SETTINGS),
        ("POST", "/api/alerts/test"),
    ] {
        let r = call(s.control(), method, target, "{}");
        assert_eq!(r.status, 401, "{method} {target}: {}", r.text());
    }
}

#[test]
fn a_damaged_settings_file_turns_the_alerts_off_and_nothing_else() {
    let dir = TestServer::start().stop();
    std::fs::create_dir_all(dir.path().join("alerts")).unwrap();
    let damaged = br#"{"alert_low_c": "warm"}"#;
    std::fs::write(dir.path().join("alerts/settings.json"), damaged).unwrap();
    let server = restart(&dir);
    assert_eq!(get(server.control_addr(), "/health").status, 200);
    let off = json!({"error": "Alerts are off: their record or settings could not be read (see hearth's log)"});
    for (method, target) in [
        ("GET", SETTINGS),
        ("PUT", SETTINGS),
        ("POST", "/api/alerts/test"),
    ] {
        let r = call(server.control_addr(), method, target, "{}");
        assert_eq!(
            (r.status, r.json()),
            (503, off.clone()),
            "{method} {target}"
        );
    }
    server.shutdown();
    // Left as it was, for a person to look at.
    assert_eq!(
        std::fs::read(dir.path().join("alerts/settings.json")).unwrap(),
        damaged
    );
}
