//! Alerts (docs/alerts.md): every rule against simulated thermostats, with a local webhook
//! receiver and a local ntfy stand-in; signatures, hysteresis, retries, acknowledging a filter
//! alert, bad input to the ack route, bad settings, and a receiver down across a kill -9 and a
//! restart of a real `hearth serve` (one delivery each, signatures valid).

use crate::common::*;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hearth::http::{Reply, Request, Response};
use hearth::process::ServerProcess;
use hearth::util::clock::ManualClock;
use parking_lot::Mutex;
use serde_json::{Value, json};

pub(crate) const SECRET: &str = "s3cret-for-tests";

/// One request a receiver saw.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The status it was answered.
    pub status: u16,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        hearth::http::find_header(&self.headers, name)
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }
}

/// A local receiver (webhook or ntfy stand-in): records every request; answers 500 to the
/// first `failing` ones, then 200.
pub(crate) struct Receiver {
    pub served: hearth::http::Served,
    seen: Arc<Mutex<Vec<Seen>>>,
    left: Arc<AtomicUsize>,
}

impl Receiver {
    pub fn start(failing: usize) -> Receiver {
        Receiver::on("127.0.0.1:0".parse().unwrap(), failing)
    }

    fn on(addr: SocketAddr, failing: usize) -> Receiver {
        Receiver::refusing_with(addr, failing, 500)
    }

    /// Answers `refusal` (500, 302, ...) to the first `failing` requests, then 200.
    pub fn refusing_with(addr: SocketAddr, failing: usize, refusal: u16) -> Receiver {
        share_process();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let left = Arc::new(AtomicUsize::new(failing));
        let log = Arc::clone(&seen);
        let refusals = Arc::clone(&left);
        let served = hearth::http::serve("receiver", addr, move |req: Request| {
            let fail = refusals
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            let status = if fail { refusal } else { 200 };
            log.lock().push(Seen {
                headers: req.headers.clone(),
                body: req.body.clone(),
                status,
            });
            Reply::Full(Response::json(status, &json!({})))
        })
        .unwrap();
        Receiver { served, seen, left }
    }

    /// Answers 200 from now on.
    fn up(&self) {
        self.left.store(0, Ordering::SeqCst);
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.served.addr())
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().clone()
    }

    /// The requests it answered 200.
    fn accepted(&self) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|h| h.status == 200)
            .collect()
    }

    pub fn wait_for(&self, n: usize) -> Vec<Seen> {
        wait_until(&format!("{n} requests at the receiver"), || {
            self.seen.lock().len() >= n
        });
        self.seen()
    }
}

/// Checks `X-Hearth-Signature` against the body with [`SECRET`], independently of hearth.
pub(crate) fn assert_signed(seen: &Seen) {
    let header = seen.header("X-Hearth-Signature").expect("signed");
    let hex = header.strip_prefix("sha256=").expect("sha256=");
    let tag: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, SECRET.as_bytes());
    ring::hmac::verify(&key, &seen.body, &tag).expect("a valid signature");
}

fn alerts(s: &TestServer) -> Value {
    let r = get(s.control(), "/api/alerts");
    assert_eq!(r.status, 200);
    r.json()
}

fn active(s: &TestServer) -> Vec<Value> {
    alerts(s)["active"].as_array().cloned().unwrap_or_default()
}

fn active_kinds(s: &TestServer) -> Vec<String> {
    active(s)
        .iter()
        .map(|a| a["kind"].as_str().unwrap().to_string())
        .collect()
}

fn wait_kind(s: &TestServer, kind: &str, present: bool) {
    wait_until(&format!("{kind} active: {present}"), || {
        active_kinds(s).iter().any(|k| k == kind) == present
    });
}

/// A thermostat called Hallway that has booted and holds its subscribe.
fn hallway(s: &TestServer) -> (hearth::simulator::Thermostat, hearth::simulator::Held) {
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.report("shared", "name", json!("Hallway"));
    sim.boot().unwrap();
    let held = sim.open_subscribe().unwrap();
    s.wait_held(SERIAL, 1);
    (sim, held)
}

#[test]
fn a_cold_room_reaches_ntfy_and_the_webhook_once_each_retried_signed_and_cleared_with_hysteresis() {
    let hook = Receiver::start(2);
    let ntfy = Receiver::start(1);
    let s = TestServer::start_with(|c| {
        c.alerts.webhook_url = Some(hook.url());
        c.alerts.webhook_secret = Some(SECRET.into());
        c.alerts.ntfy_url = Some(ntfy.url());
    });
    let (mut sim, _held) = hallway(&s);
    assert!(active(&s).is_empty());

    sim.report("shared", "current_temperature", json!(5.8));
    sim.put().unwrap();
    wait_kind(&s, "low_temperature", true);
    let alert = active(&s)[0].clone();
    assert_eq!(alert["serial"], json!(SERIAL));
    assert_eq!(
        alert["message"],
        json!("Hallway is 5.8°C (below 7°C) — heating is off")
    );
    assert_eq!(alert["cleared_at"], Value::Null);
    let id = alert["id"].as_str().unwrap().to_string();

    // The webhook answered 500 twice: three attempts, one id, each signed; then the body.
    let hooks = hook.wait_for(3);
    for h in &hooks {
        assert_eq!(
            h.header("X-Hearth-Delivery"),
            Some(format!("{id}.started.webhook").as_str())
        );
        assert_eq!(h.header("Content-Type"), Some("application/json"));
        assert_signed(h);
    }
    let body = hooks[2].json();
    assert_eq!(body["event"], json!("started"));
    assert_eq!(body["alert"], alert);
    let sent = ntfy.wait_for(2);
    let last = &sent[1];
    assert_eq!(last.header("Title"), Some("Too cold"));
    assert_eq!(last.header("Priority"), Some("high"));
    assert_eq!(last.header("Tags"), Some("warning,low_temperature"));
    assert_eq!(
        last.header("X-Hearth-Delivery"),
        Some(format!("{id}.started.ntfy").as_str())
    );
    assert_eq!(last.text(), "Hallway is 5.8°C (below 7°C) — heating is off");

    // 7.3 °C is above the limit but not 0.5 °C above: still active. The battery reported in
    // the same upload starts its own alert, which shows the rules have read the 7.3.
    sim.report("shared", "current_temperature", json!(7.3));
    sim.report("device", "battery_level", json!(3.6));
    sim.put().unwrap();
    wait_kind(&s, "low_battery", true);
    assert!(active_kinds(&s).contains(&"low_temperature".to_string()));

    sim.report("shared", "current_temperature", json!(7.5));
    sim.put().unwrap();
    wait_kind(&s, "low_temperature", false);
    let recent = alerts(&s)["recent"].as_array().unwrap().clone();
    assert_eq!(recent[0]["id"], json!(id));
    assert!(recent[0]["cleared_at"].is_string());
    // Started (3 attempts), battery started, cleared: each delivered once.
    wait_until("the clear at the webhook", || {
        hook.seen()
            .iter()
            .any(|h| h.header("X-Hearth-Delivery") == Some(&format!("{id}.cleared.webhook")))
    });
    wait_until("the clear at ntfy", || {
        ntfy.seen().iter().any(|h| {
            h.header("X-Hearth-Delivery") == Some(&format!("{id}.cleared.ntfy"))
                && h.header("Title") == Some("Cleared: Too cold")
                && h.header("Priority") == Some("default")
        })
    });
    let ids: Vec<String> = hook
        .seen()
        .iter()
        .skip(2)
        .map(|h| h.header("X-Hearth-Delivery").unwrap().to_string())
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(ids.len(), unique.len(), "{ids:?}");
    assert_eq!(ids.len(), 3, "{ids:?}");
}

#[test]
fn a_redirect_is_not_a_delivery_and_is_retried() {
    // A proxy answering 302 (to a login page, say) did not deliver the notice.
    let hook = Receiver::refusing_with("127.0.0.1:0".parse().unwrap(), 1, 302);
    let s = TestServer::start_with(|c| {
        c.alerts.offline_after = None;
        c.alerts.webhook_url = Some(hook.url());
    });
    let (mut sim, _held) = hallway(&s);
    sim.report("shared", "current_temperature", json!(5.0));
    sim.put().unwrap();
    wait_kind(&s, "low_temperature", true);
    let id = active(&s)[0]["id"].as_str().unwrap().to_string();
    let seen = hook.wait_for(2);
    for h in &seen[..2] {
        assert_eq!(
            h.header("X-Hearth-Delivery"),
            Some(format!("{id}.started.webhook").as_str())
        );
    }
    wait_until("the delivery recorded once it answered 200", || {
        String::from_utf8_lossy(&record_bytes(s.dir.path())).contains("\"op\":\"delivered\"")
    });
}

#[test]
fn a_receiver_back_up_gets_the_start_before_the_clear() {
    let time = ManualClock::starting_now();
    let hook = Receiver::start(usize::MAX);
    let s = TestServer::start_with(|c| {
        c.clock = time.clock();
        c.alerts.offline_after = None;
        c.alerts.webhook_url = Some(hook.url());
    });
    let (mut sim, _held) = hallway(&s);
    sim.report("shared", "current_temperature", json!(5.0));
    sim.put().unwrap();
    wait_kind(&s, "low_temperature", true);
    let id = active(&s)[0]["id"].as_str().unwrap().to_string();
    // The start was refused: it waits out its backoff (the clock stands still meanwhile).
    hook.wait_for(1);
    hook.up();
    sim.report("shared", "current_temperature", json!(7.5));
    sim.put().unwrap();
    wait_kind(&s, "low_temperature", false);
    // The clear is behind the start, whose backoff ends now.
    time.advance(Duration::from_secs(2));
    let seen = hook.wait_for(3);
    let ids: Vec<&str> = seen
        .iter()
        .map(|h| h.header("X-Hearth-Delivery").unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            format!("{id}.started.webhook"),
            format!("{id}.started.webhook"),
            format!("{id}.cleared.webhook"),
        ]
    );
}

#[test]
fn a_hot_room_and_a_safety_shutoff() {
    let s = TestServer::start();
    let (mut sim, _held) = hallway(&s);
    sim.report("shared", "current_temperature", json!(35.5));
    sim.report("device", "hvac_safety_shutoff_active", json!(true));
    sim.put().unwrap();
    wait_kind(&s, "high_temperature", true);
    wait_kind(&s, "safety_shutoff", true);
    let hot = active(&s)
        .into_iter()
        .find(|a| a["kind"] == json!("high_temperature"))
        .unwrap();
    assert_eq!(hot["message"], json!("Hallway is 35.5°C (above 35°C)"));
    sim.report("shared", "current_temperature", json!(34.6));
    sim.report("device", "hvac_safety_shutoff_active", json!(false));
    sim.put().unwrap();
    wait_kind(&s, "safety_shutoff", false);
    assert!(active_kinds(&s).contains(&"high_temperature".to_string()));
    sim.report("shared", "current_temperature", json!(34.5));
    sim.put().unwrap();
    wait_kind(&s, "high_temperature", false);
}

#[test]
fn a_thermostat_out_of_touch_goes_offline_and_back() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.clock = time.clock();
        c.alerts.offline_after = Some(Duration::from_secs(60));
    });
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.report("shared", "name", json!("Hallway"));
    sim.boot().unwrap();
    // No subscribe held: only the requests count.
    time.advance(Duration::from_secs(61));
    wait_kind(&s, "offline", true);
    assert_eq!(
        active(&s)[0]["message"],
        json!("Hallway has not been in touch with hearth for 1 min")
    );
    sim.report("shared", "current_temperature", json!(20.6));
    sim.put().unwrap();
    wait_kind(&s, "offline", false);
}

#[test]
fn heating_without_effect_and_cooling_without_effect() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.clock = time.clock();
        c.alerts.no_effect_after = Some(Duration::from_secs(120));
    });
    let (mut sim, _held) = hallway(&s);
    sim.report("shared", "current_temperature", json!(18.0));
    sim.report("shared", "hvac_heater_state", json!(true));
    sim.put().unwrap();
    wait_until("the heating seen", || {
        get(s.control(), &format!("/status?serial={SERIAL}")).json()["hvac"]["heater"]
            == json!(true)
    });
    run_clock_until(&s, &time, &mut sim, "not_heating");
    let alert = active(&s)
        .into_iter()
        .find(|a| a["kind"] == json!("not_heating"))
        .unwrap();
    assert_eq!(
        alert["message"],
        json!("Hallway is 18°C — heating is on but the room is not warming (target 21°C, 2 min)")
    );
    // The room warms by 0.5 °C: it clears.
    sim.report("shared", "current_temperature", json!(18.5));
    sim.put().unwrap();
    wait_kind(&s, "not_heating", false);

    // Cooling toward 24 °C in a room at 28 °C that does not cool.
    sim.report("shared", "hvac_heater_state", json!(false));
    sim.report("shared", "target_temperature_type", json!("cool"));
    sim.report("shared", "target_temperature", json!(24.0));
    sim.report("shared", "current_temperature", json!(28.0));
    sim.report("shared", "hvac_ac_state", json!(true));
    sim.put().unwrap();
    wait_until("the cooling seen", || {
        get(s.control(), &format!("/status?serial={SERIAL}")).json()["hvac"]["ac"] == json!(true)
    });
    run_clock_until(&s, &time, &mut sim, "not_cooling");
    sim.report("shared", "hvac_ac_state", json!(false));
    sim.put().unwrap();
    wait_kind(&s, "not_cooling", false);
}

/// Moves the clock a minute at a time, the thermostat reporting its humidity each minute
/// (so it stays in touch, and its readings current), until `kind` is active.
fn run_clock_until(
    s: &TestServer,
    time: &ManualClock,
    sim: &mut hearth::simulator::Thermostat,
    kind: &str,
) {
    let mut humidity = 40;
    wait_until(&format!("{kind} active"), || {
        time.advance(Duration::from_secs(61));
        humidity = if humidity == 40 { 41 } else { 40 };
        sim.report("device", "current_humidity", json!(humidity));
        sim.put().unwrap();
        active_kinds(s).iter().any(|k| k == kind)
    });
}

fn ack(s: &TestServer, body: &str) -> (u16, Value) {
    let r = call(s.control(), "POST", "/api/alerts/ack", body);
    (r.status, r.json())
}

fn record_bytes(dir: &Path) -> Vec<u8> {
    std::fs::read(dir.join("alerts").join("record.jsonl")).unwrap_or_default()
}

/// Whether the record owes no delivery: every target of every notice line
/// (`<alert id>.<event>.<target>`) has its outcome written. A compacted record keeps only the
/// targets still owed, so this reads either form.
fn nothing_owed(dir: &Path) -> bool {
    let text = String::from_utf8_lossy(&record_bytes(dir)).into_owned();
    let mut owed = std::collections::BTreeSet::new();
    let mut delivered = std::collections::BTreeSet::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        match v["op"].as_str().unwrap() {
            "notice" => {
                for t in v["targets"].as_array().unwrap() {
                    owed.insert(format!(
                        "{}.{}.{}",
                        v["alert"]["id"].as_str().unwrap(),
                        v["event"].as_str().unwrap(),
                        t.as_str().unwrap()
                    ));
                }
            }
            "delivered" => {
                delivered.insert(v["delivery"].as_str().unwrap().to_string());
            }
            _ => {}
        }
    }
    owed.is_subset(&delivered)
}

#[test]
fn a_filter_alert_after_its_hours_is_acknowledged_and_counts_again_from_there() {
    let time = ManualClock::starting_now();
    let hook = Receiver::start(0);
    let s = TestServer::start_with(|c| {
        c.clock = time.clock();
        c.history_interval = Duration::from_secs(10);
        c.alerts.filter_after_s = Some(120);
        c.alerts.webhook_url = Some(hook.url());
        c.alerts.webhook_secret = Some(SECRET.into());
    });
    let (mut sim, _held) = hallway(&s);
    sim.report("shared", "hvac_heater_state", json!(true));
    sim.put().unwrap();
    wait_until("the heating seen", || {
        get(s.control(), &format!("/status?serial={SERIAL}")).json()["hvac"]["heater"]
            == json!(true)
    });
    // Heating runs while the clock moves; the filter reminder comes after 120 s of it.
    run_clock_until(&s, &time, &mut sim, "filter");
    let filter = active(&s)
        .into_iter()
        .find(|a| a["kind"] == json!("filter"))
        .unwrap();
    let id = filter["id"].as_str().unwrap().to_string();

    // Bad input: the exact status and body, and nothing changed.
    sim.report("shared", "current_temperature", json!(5.0));
    sim.put().unwrap();
    wait_kind(&s, "low_temperature", true);
    let cold = active(&s)
        .into_iter()
        .find(|a| a["kind"] == json!("low_temperature"))
        .unwrap();
    // The webhook's outcomes are written as it answers: none may land during the bad input.
    wait_until("every delivery's outcome recorded", || {
        nothing_owed(s.dir.path())
    });
    let before = (active(&s), record_bytes(s.dir.path()));
    for (body, status, error) in [
        ("{", 400, "Invalid JSON".to_string()),
        ("[1]", 400, "Request body must be a JSON object".to_string()),
        (
            "{\"id\": 5}",
            400,
            "id required: the alert's id, a string (as GET /api/alerts lists it)".to_string(),
        ),
        ("{}", 400, "id required: the alert's id, a string (as GET /api/alerts lists it)".to_string()),
        ("{\"id\": \"nope\"}", 404, "No active alert has this id".to_string()),
        (
            &format!("{{\"id\": \"{}\"}}", cold["id"].as_str().unwrap()),
            409,
            "Only a filter alert can be acknowledged: a low_temperature alert clears by itself once the thermostat is back to normal".to_string(),
        ),
    ] {
        let (got, answer) = ack(&s, body);
        assert_eq!((got, answer), (status, json!({ "error": error })), "{body}");
    }
    assert_eq!((active(&s), record_bytes(s.dir.path())), before);

    let (status, answer) = ack(&s, &json!({ "id": id }).to_string());
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["alert"]["id"], json!(id));
    assert!(answer["alert"]["cleared_at"].is_string());
    assert!(!active_kinds(&s).contains(&"filter".to_string()));
    let (status, _) = ack(&s, &json!({ "id": id }).to_string());
    assert_eq!(status, 404, "cleared already");
    wait_until("the clear delivered", || {
        hook.seen().iter().any(|h| {
            h.header("X-Hearth-Delivery") == Some(&format!("{id}.cleared.webhook"))
                && h.json()["alert"]["kind"] == json!("filter")
        })
    });
    for h in hook.seen() {
        assert_signed(&h);
    }
    // The count starts again from the reset: another 120 s of heating, another reminder.
    run_clock_until(&s, &time, &mut sim, "filter");
    assert!(
        active(&s)
            .iter()
            .any(|a| a["kind"] == json!("filter") && a["id"] != json!(id))
    );
}

#[test]
fn bad_alert_settings_stop_startup_naming_the_setting() {
    let dir = TempDir::new("alert-cfg");
    for (variable, value, says) in [
        ("ALERT_LOW_C", "cold", "ALERT_LOW_C (--alert-low-c)"),
        ("ALERT_HIGH_C", "2", "must be below ALERT_HIGH_C"),
        ("ALERT_OFFLINE_MINUTES", "soon", "ALERT_OFFLINE_MINUTES"),
        ("FILTER_REMINDER_HOURS", "-3", "FILTER_REMINDER_HOURS"),
        (
            "ALERT_NOT_APPLIED_MINUTES",
            "soon",
            "ALERT_NOT_APPLIED_MINUTES (--alert-not-applied-minutes)",
        ),
        (
            "ALERT_RULES_OFF",
            "offline,cold",
            "ALERT_RULES_OFF (--alert-rules-off): has \"cold\", which is no rule",
        ),
        ("NTFY_URL", "ntfy.sh/house", "NTFY_URL (--ntfy-url)"),
        // The prefix alone, or with no host: refused at start, not at the first alert.
        ("NTFY_URL", "http://", "NTFY_URL (--ntfy-url)"),
        (
            "WEBHOOK_URL",
            "https://:8080/hook",
            "WEBHOOK_URL (--webhook-url)",
        ),
        ("WEBHOOK_URL", "http://?x", "WEBHOOK_URL (--webhook-url)"),
        (
            "WEBHOOK_URL",
            "file:///etc/passwd",
            "WEBHOOK_URL (--webhook-url)",
        ),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hearth"))
            .args(["serve", "--data-dir"])
            .arg(dir.path())
            .env(variable, value)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{variable}={value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{variable}={value}: {err}");
    }
}

fn start_child(dir: &Path, hook: SocketAddr, ntfy: SocketAddr) -> ServerProcess {
    let hook = format!("http://{hook}/hook");
    let ntfy = format!("http://{ntfy}/house");
    ServerProcess::start_with_env(
        Path::new(env!("CARGO_BIN_EXE_hearth")),
        dir,
        &["--watchdog-interval-seconds", "0"],
        &[
            ("WEBHOOK_URL", hook.as_ref()),
            ("WEBHOOK_SECRET", SECRET.as_ref()),
            ("NTFY_URL", ntfy.as_ref()),
        ],
    )
    .unwrap()
}

fn child_active(p: &ServerProcess) -> Vec<Value> {
    get(p.control, "/api/alerts").json()["active"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn receivers_down_across_a_kill_and_a_restart_get_each_notice_once() {
    share_process();
    let dir = TempDir::new("alert-kill");
    // Both receivers are down (they answer 503) until told otherwise; each keeps its port
    // for the whole test, so no other test can take it between the runs.
    let hook = Receiver::refusing_with("127.0.0.1:0".parse().unwrap(), usize::MAX, 503);
    let ntfy = Receiver::refusing_with("127.0.0.1:0".parse().unwrap(), usize::MAX, 503);
    let (hook_addr, ntfy_addr) = (hook.served.addr(), ntfy.served.addr());
    let child = start_child(dir.path(), hook_addr, ntfy_addr);
    let (mut sim, _events) = thermostat(&format!("http://{}", child.device), SERIAL);
    sim.report("shared", "name", json!("Hallway"));
    sim.report("shared", "current_temperature", json!(5.0));
    sim.boot().unwrap();
    wait_until("the alert on the board", || {
        !child_active(&child).is_empty()
    });
    let id = child_active(&child)[0]["id"].as_str().unwrap().to_string();
    // Both refused it at least once: the deliveries are owed. Killed now.
    hook.wait_for(1);
    ntfy.wait_for(1);
    child.kill();

    hook.up();
    ntfy.up();
    let refused = (hook.seen().len(), ntfy.seen().len());
    let child = start_child(dir.path(), hook_addr, ntfy_addr);
    assert_eq!(
        child_active(&child)[0]["id"],
        json!(id),
        "kept across the kill"
    );
    wait_until("the start accepted at both", || {
        !hook.accepted().is_empty() && !ntfy.accepted().is_empty()
    });
    let hooks = hook.accepted();
    assert_signed(&hooks[0]);
    assert_eq!(
        hooks[0].header("X-Hearth-Delivery"),
        Some(format!("{id}.started.webhook").as_str())
    );
    // Killed again once both were delivered; the next start owes nothing for the start, and
    // delivers the clear: had it sent the start again, it would be before the clear.
    wait_until("the deliveries recorded", || {
        std::fs::read_to_string(dir.path().join("alerts/record.jsonl"))
            .is_ok_and(|t| t.matches("\"op\":\"delivered\"").count() >= 2)
    });
    child.kill();
    let child = start_child(dir.path(), hook_addr, ntfy_addr);
    let (mut sim, _events) = thermostat(&format!("http://{}", child.device), SERIAL);
    sim.report("shared", "name", json!("Hallway"));
    sim.report("shared", "current_temperature", json!(8.0));
    sim.boot().unwrap();
    sim.report("shared", "current_temperature", json!(8.1));
    sim.put().unwrap();
    wait_until("the clear at both", || {
        hook.accepted().len() >= 2 && ntfy.accepted().len() >= 2
    });
    for (receiver, target, refused) in [(&hook, "webhook", refused.0), (&ntfy, "ntfy", refused.1)] {
        // Whatever was refused before the kill was the start.
        assert!(
            receiver.seen()[..refused]
                .iter()
                .all(|h| h.header("X-Hearth-Delivery")
                    == Some(format!("{id}.started.{target}").as_str())),
            "{target}"
        );
        let ids: Vec<String> = receiver
            .accepted()
            .iter()
            .map(|h| h.header("X-Hearth-Delivery").unwrap().to_string())
            .collect();
        assert_eq!(
            ids,
            [
                format!("{id}.started.{target}"),
                format!("{id}.cleared.{target}")
            ]
        );
    }
    assert_signed(&hook.accepted()[1]);
    child.kill();
}

#[test]
fn a_thermostat_nobody_may_see_has_no_alerts() {
    let hook = Receiver::start(0);
    let s = TestServer::start_with(|c| {
        c.require_device_pairing = true;
        c.alerts.webhook_url = Some(hook.url());
    });
    s.set_owner(SERIAL, "owner");
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.report("shared", "current_temperature", json!(5.0));
    sim.boot().unwrap();
    wait_kind(&s, "low_temperature", true);
    let id = active(&s)[0]["id"].as_str().unwrap().to_string();
    // Removed: it keeps operating, released, and nobody may see it: its alert clears, and
    // the receivers are told (they had been told it started).
    assert_eq!(remove_device(s.control(), SERIAL).status, 200);
    sim.report("shared", "current_temperature", json!(4.0));
    sim.put().unwrap();
    wait_until("the clear at the webhook", || {
        hook.seen().iter().any(|h| {
            h.header("X-Hearth-Delivery") == Some(format!("{id}.cleared.webhook").as_str())
        })
    });
    assert!(
        s.app().alerts().active().is_empty(),
        "no alert while released"
    );
    // Claimed again: the cold room is an alert again, a new episode.
    s.set_owner(SERIAL, "owner");
    sim.report("shared", "current_temperature", json!(3.9));
    sim.put().unwrap();
    wait_kind(&s, "low_temperature", true);
    assert_ne!(active(&s)[0]["id"], json!(id));
}

#[test]
fn in_open_mode_a_removed_thermostat_has_no_alerts() {
    let hook = Receiver::start(0);
    let s = TestServer::start_with(|c| {
        c.alerts.offline_after = None;
        c.alerts.webhook_url = Some(hook.url());
    });
    let (mut sim, _events) = thermostat(&s.origin(), SERIAL);
    sim.report("shared", "current_temperature", json!(5.0));
    sim.boot().unwrap();
    wait_kind(&s, "low_temperature", true);
    let id = active(&s)[0]["id"].as_str().unwrap().to_string();
    // Removed: it keeps operating (released), but nobody asked to hear of it any more.
    assert_eq!(remove_device(s.control(), SERIAL).status, 200);
    sim.report("shared", "current_temperature", json!(4.0));
    sim.put().unwrap();
    wait_until("the clear at the webhook", || {
        hook.seen().iter().any(|h| {
            h.header("X-Hearth-Delivery") == Some(format!("{id}.cleared.webhook").as_str())
        })
    });
    // A flat battery starts nothing for it; another thermostat's, looked at after it on the
    // same thread, shows the look happened.
    sim.report("device", "battery_level", json!(3.5));
    sim.put().unwrap();
    let other = "02AA01AC0000SIM2";
    let (mut sim2, _events2) = thermostat(&s.origin(), other);
    sim2.report("device", "battery_level", json!(3.5));
    sim2.boot().unwrap();
    wait_kind(&s, "low_battery", true);
    let serials: Vec<Value> = s
        .app()
        .alerts()
        .active()
        .iter()
        .map(|a| json!(a.serial))
        .collect();
    assert_eq!(serials, [json!(other)]);
}

#[test]
fn a_delivery_failing_for_25_hours_is_dropped_and_later_ones_still_go() {
    let time = ManualClock::starting_now();
    let hook = Receiver::start(2);
    let s = TestServer::start_with(|c| {
        c.clock = time.clock();
        c.alerts.offline_after = None;
        c.alerts.webhook_url = Some(hook.url());
    });
    let (mut sim, _held) = hallway(&s);
    sim.report("shared", "current_temperature", json!(5.0));
    sim.put().unwrap();
    wait_kind(&s, "low_temperature", true);
    let id = active(&s)[0]["id"].as_str().unwrap().to_string();
    hook.wait_for(1);
    // A day and more later, the next attempt fails too: dropped, and recorded so.
    time.advance(Duration::from_secs(25 * 3600 + 1));
    hook.wait_for(2);
    wait_until("the drop recorded", || {
        String::from_utf8_lossy(&record_bytes(s.dir.path())).contains("\"outcome\":\"dropped\"")
    });
    // The clear goes (the receiver answers now), and nothing more of the start.
    sim.report("shared", "current_temperature", json!(8.0));
    sim.put().unwrap();
    hook.wait_for(3);
    time.advance(Duration::from_secs(3600));
    sim.report("device", "battery_level", json!(3.5));
    sim.put().unwrap();
    hook.wait_for(4);
    let ids: Vec<String> = hook
        .seen()
        .iter()
        .map(|h| h.header("X-Hearth-Delivery").unwrap().to_string())
        .collect();
    assert_eq!(
        ids[..3],
        [
            format!("{id}.started.webhook"),
            format!("{id}.started.webhook"),
            format!("{id}.cleared.webhook"),
        ]
    );
    assert!(ids[3].contains("low_battery"), "{ids:?}");
}

#[test]
fn a_damaged_record_turns_the_alerts_off_and_nothing_else() {
    let dir = TestServer::start().stop();
    std::fs::create_dir_all(dir.path().join("alerts")).unwrap();
    let damaged = b"not json\n{\"op\":\"filter_reset\",\"serial\":\"S\",\"runtime_s\":1}\n";
    std::fs::write(dir.path().join("alerts/record.jsonl"), damaged).unwrap();
    let server = restart(&dir);
    assert_eq!(get(server.control_addr(), "/health").status, 200);
    let r = get(server.control_addr(), "/api/alerts");
    assert_eq!(r.json(), json!({"active": [], "recent": []}));
    let r = call(
        server.control_addr(),
        "POST",
        "/api/alerts/ack",
        r#"{"id":"x"}"#,
    );
    assert_eq!(
        (r.status, r.json()),
        (
            503,
            json!({"error": "Alerts are off: their record or settings could not be read (see hearth's log)"})
        )
    );
    let r = call(server.control_addr(), "GET", "/api/alerts/ack", "");
    assert_eq!(
        (r.status, r.json()),
        (405, json!({"error": "Method not allowed"}))
    );
    server.shutdown();
    // Left as it was, for a person to look at.
    assert_eq!(
        std::fs::read(dir.path().join("alerts/record.jsonl")).unwrap(),
        damaged
    );
}

/// A thermostat's name is its own to choose: one holding `\n` and `\r` reaches the log through
/// the alert's message (the real binary's log, as journald would keep it) escaped, on the
/// alert's own line, and starts no line of its own.
#[test]
fn a_name_with_newlines_cannot_forge_a_log_line() {
    share_process();
    let dir = TempDir::new("alert-forge");
    let child = ServerProcess::start(Path::new(env!("CARGO_BIN_EXE_hearth")), dir.path()).unwrap();
    let (mut sim, _events) = thermostat(&format!("http://{}", child.device), SERIAL);
    let name = "Hall\nERROR hearth::server: forged line\r\nWARN  hearth::alerts: forged too\r";
    sim.report("shared", "name", json!(name));
    sim.report("shared", "current_temperature", json!(5.0));
    sim.boot().unwrap();
    wait_until("the alert on the board", || {
        !child_active(&child).is_empty()
    });
    // The board shows the name as the thermostat sent it; only the log escapes it.
    assert!(
        child_active(&child)[0]["message"]
            .as_str()
            .unwrap()
            .starts_with(name),
        "{:?}",
        child_active(&child)
    );
    wait_until("the alert's log line", || {
        child.log().contains("alert ") && child.log().contains(" started: Hall")
    });
    let log = child.log();
    let started: Vec<&str> = log.lines().filter(|l| l.contains(" started: ")).collect();
    assert_eq!(started.len(), 1, "{log}");
    assert!(
        started[0].ends_with(
            r"started: Hall\nERROR hearth::server: forged line\r\nWARN  hearth::alerts: forged too\r is 5°C (below 7°C) — heating is off"
        ),
        "{log}"
    );
    for line in log.lines() {
        assert!(!line.contains("forged") || line == started[0], "{log}");
    }
    child.kill();
}
