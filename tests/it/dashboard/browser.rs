//! The browser and the thermostat the dashboard tests drive: Debian's headless Chromium over
//! WebDriver (`chromedriver`), and a simulated thermostat of the test's own.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use base64::Engine;
use crossbeam_channel::{Receiver, Sender, unbounded};
use hearth::simulator::{Event, Options, Thermostat};
use serde_json::{Value, json};

use crate::common::*;

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
pub const WAIT: Duration = Duration::from_secs(20);
pub const TEST_SERIAL: &str = "02AA01AC5100TE57";

/// `chromedriver` and one browser session; both end when dropped.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    agent: ureq::Agent,
}

impl Browser {
    pub fn launch() -> Option<Browser> {
        Browser::launch_with(&[])
    }

    /// [`Browser::launch`] with more command-line arguments for Chromium.
    pub fn launch_with(extra_args: &[&str]) -> Option<Browser> {
        let driver_bin = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
            .into_iter()
            .find(|p| Path::new(p).exists());
        let Some(driver_bin) = driver_bin.filter(|_| Path::new(CHROMIUM).exists()) else {
            assert!(
                std::env::var_os("HEARTH_REQUIRE_BROWSER").is_none(),
                "HEARTH_REQUIRE_BROWSER is set but chromium or chromedriver is missing"
            );
            eprintln!(
                "SKIPPED: the dashboard browser test needs Debian's chromium and chromium-driver"
            );
            return None;
        };
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let driver = Command::new(driver_bin)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(60))
            .build();
        let base = format!("http://127.0.0.1:{port}");
        wait_until_within(WAIT, "chromedriver's answer", || {
            agent.get(&format!("{base}/status")).call().is_ok()
        });
        let mut browser = Browser {
            driver,
            base,
            session: String::new(),
            agent,
        };
        let mut args = vec![
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--window-size=1280,900",
            "--force-color-profile=srgb",
            "--lang=en-GB",
        ];
        args.extend_from_slice(extra_args);
        let created = browser.call(
            "POST",
            "/session",
            json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": { "binary": CHROMIUM, "args": args },
            }}}),
        );
        browser.session = created["sessionId"].as_str().unwrap().to_string();
        Some(browser)
    }

    /// One WebDriver command; its `value`. A WebDriver error fails the test with its message.
    pub fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let url = if path == "/session" {
            format!("{}{path}", self.base)
        } else {
            format!("{}/session/{}{path}", self.base, self.session)
        };
        let request = self
            .agent
            .request(method, &url)
            .set("Content-Type", "application/json");
        let response = match method {
            "GET" | "DELETE" => request.call(),
            _ => request.send_string(&body.to_string()),
        };
        let text = match response {
            Ok(r) => r.into_string().unwrap(),
            Err(ureq::Error::Status(status, r)) => {
                panic!(
                    "WebDriver {method} {path}: {status} {}",
                    r.into_string().unwrap()
                )
            }
            Err(e) => panic!("WebDriver {method} {path}: {e}"),
        };
        let parsed: Value = serde_json::from_str(&text).unwrap();
        parsed["value"].clone()
    }

    pub fn goto(&self, url: &str) {
        self.call("POST", "/url", json!({ "url": url }));
    }

    pub fn js(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
    }

    /// Polls `script` (a function body returning a value) until it returns something truthy.
    pub fn wait_for(&self, what: &str, script: &str) -> Value {
        let mut v = Value::Null;
        wait_until_within(WAIT, &format!("the page showing {what}"), || {
            v = self.js(script);
            match &v {
                Value::Null | Value::Bool(false) => false,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            }
        });
        v
    }

    /// Returns once the page has laid out and painted what changed: two animation frames
    /// later (WebDriver waits for the returned promise).
    pub fn painted(&self) {
        self.js(
            "return new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))",
        );
    }

    pub fn find(&self, css: &str) -> String {
        let v = self.call(
            "POST",
            "/element",
            json!({"using": "css selector", "value": css}),
        );
        v[ELEMENT].as_str().unwrap().to_string()
    }

    pub fn click(&self, css: &str) {
        let id = self.find(css);
        self.call("POST", &format!("/element/{id}/click"), json!({}));
    }

    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.call("POST", &format!("/element/{id}/clear"), json!({}));
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            json!({ "text": text }),
        );
    }

    /// Presses keys (WebDriver key codes) one after another, as a person at a keyboard.
    pub fn press(&self, keys: &str) {
        let mut actions = Vec::new();
        for k in keys.chars() {
            actions.push(json!({"type": "keyDown", "value": k.to_string()}));
            actions.push(json!({"type": "keyUp", "value": k.to_string()}));
        }
        self.call(
            "POST",
            "/actions",
            json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]}),
        );
    }

    /// A pointer (`"mouse"` or `"touch"`) pressed at the first point (viewport CSS pixels),
    /// moved through the others and let go at the last: a drag, or with one point a tap.
    pub fn drag(&self, pointer: &str, points: &[(f64, f64)]) {
        let at = |(x, y): (f64, f64)| {
            json!({"type": "pointerMove", "duration": 50, "origin": "viewport",
            "x": x.round() as i64, "y": y.round() as i64})
        };
        let mut actions = vec![at(points[0]), json!({"type": "pointerDown", "button": 0})];
        actions.extend(points[1..].iter().map(|p| at(*p)));
        actions.push(json!({"type": "pointerUp", "button": 0}));
        self.call(
            "POST",
            "/actions",
            json!({"actions": [{"type": "pointer", "id": pointer,
                "parameters": {"pointerType": pointer}, "actions": actions}]}),
        );
        self.call("DELETE", "/actions", Value::Null);
    }

    /// `text` with each time of day written `HH:MM` written as the page writes times, in the
    /// browser's own clock format ("22:00", or "10:00 PM").
    pub fn clock(&self, text: &str) -> String {
        let v = self.call(
            "POST",
            "/execute/sync",
            json!({"script": "return arguments[0].replace(/\\b(\\d\\d):(\\d\\d)\\b/g, (_, h, m) =>
                new Date(2000, 0, 3, +h, +m).toLocaleTimeString([], { hour: 'numeric', minute: '2-digit' }))",
                "args": [text]}),
        );
        v.as_str().unwrap().to_string()
    }

    /// The page as a phone or desktop of this size would lay it out.
    pub fn viewport(&self, width: u32, height: u32, mobile: bool) {
        self.call(
            "POST",
            "/goog/cdp/execute",
            json!({"cmd": "Emulation.setDeviceMetricsOverride", "params": {
                "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}}),
        );
    }

    /// The page at a phone's 360 px, laid out and painted, and no wider than the phone.
    pub fn as_phone(&self) {
        self.viewport(360, 780, true);
        self.wait_for("the phone's width", "return window.innerWidth === 360");
        self.painted();
        let width = self.js("return document.documentElement.scrollWidth");
        assert!(
            width.as_i64().unwrap() <= 360,
            "the page is {width} px wide at 360"
        );
    }

    /// The system's colour scheme as the page sees it (`prefers-color-scheme`).
    pub fn dark(&self, on: bool) {
        let value = if on { "dark" } else { "light" };
        self.call(
            "POST",
            "/goog/cdp/execute",
            serde_json::json!({"cmd": "Emulation.setEmulatedMedia", "params": {
                "features": [{"name": "prefers-color-scheme", "value": value}]}}),
        );
        self.painted();
    }

    pub fn screenshot(&self, name: &str) {
        let png = self.call("GET", "/screenshot", Value::Null);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap())
            .unwrap();
        let mut dirs = vec![PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard")];
        dirs.extend(std::env::var_os("HEARTH_SCREENSHOTS_DIR").map(PathBuf::from));
        for dir in dirs {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(name), &bytes).unwrap();
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self
                .agent
                .delete(&format!("{}/session/{}", self.base, self.session))
                .call();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// A simulated thermostat of the test's own: it holds subscribes, reports what the test sends
/// it, and passes every event back.
pub struct TestThermostat {
    pub events: Receiver<Event>,
    pub readings: Sender<(String, Value)>,
    stop: Arc<AtomicBool>,
    handle: Option<thread::JoinHandle<()>>,
}

impl TestThermostat {
    pub fn start(origin: &str) -> TestThermostat {
        TestThermostat::start_with(origin, |_| {})
    }

    /// [`TestThermostat::start`] with its options adjusted first.
    pub fn start_with(origin: &str, adjust: impl FnOnce(&mut Options)) -> TestThermostat {
        let (tx, events) = unbounded();
        let (readings, inbox) = unbounded::<(String, Value)>();
        let stop = Arc::new(AtomicBool::new(false));
        let observer: hearth::simulator::Observer = Arc::new(move |_s: &str, e: &Event| {
            let _ = tx.send(e.clone());
        });
        let mut opts = Options::new(origin, TEST_SERIAL);
        adjust(&mut opts);
        let mut sim = Thermostat::new(opts, observer);
        sim.report("shared", "name", json!("Test Room"));
        let running = Arc::clone(&stop);
        let handle = thread::spawn(move || {
            sim.boot().unwrap();
            while !running.load(Ordering::SeqCst) {
                let Ok(mut held) = sim.open_subscribe() else {
                    return;
                };
                loop {
                    if running.load(Ordering::SeqCst) {
                        return;
                    }
                    match held.wait(Duration::from_millis(200)) {
                        Ok(false) => {}
                        Ok(true) => match held.next_chunk() {
                            Ok(Some(chunk)) => {
                                sim.apply_chunk(&chunk).unwrap();
                            }
                            Ok(None) => break,
                            Err(_) => return,
                        },
                        Err(_) => return,
                    }
                    let mut changed = false;
                    while let Ok((field, value)) = inbox.try_recv() {
                        sim.report("shared", &field, value);
                        changed = true;
                    }
                    if changed {
                        sim.put().unwrap();
                    }
                }
            }
        });
        TestThermostat {
            events,
            readings,
            stop,
            handle: Some(handle),
        }
    }

    /// Waits for a push of `shared.<serial>` naming `field`, read from a held subscribe.
    pub fn expect_push(&self, field: &str) {
        self.expect_pushed("shared", field);
    }

    /// Waits for a push of `<bucket>.<serial>` naming `field`, read from a held subscribe.
    pub fn expect_pushed(&self, bucket: &str, field: &str) {
        let key = format!("{bucket}.{TEST_SERIAL}");
        expect_event(&self.events, "pushed setpoint", |e| {
            matches!(e, Event::Pushed { key: k, fields, .. }
                if *k == key && fields.iter().any(|f| f == field))
        });
    }
}

impl Drop for TestThermostat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
