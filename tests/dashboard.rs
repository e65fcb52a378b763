//! The dashboard in a real browser: Debian's headless Chromium, driven over WebDriver by
//! `chromedriver` (package `chromium-driver`), against `hearth demo`'s server and simulated
//! thermostats. CI installs both; elsewhere the test is skipped with a message unless
//! `HEARTH_REQUIRE_BROWSER=1`, which CI sets so a missing browser fails it.
//!
//! Screenshots at 1280 and 360 px are written to `target/tmp/dashboard/`, and also to
//! `$HEARTH_SCREENSHOTS_DIR` when set (`HEARTH_SCREENSHOTS_DIR=docs` refreshes the README's).

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use base64::Engine;
use common::*;
use crossbeam_channel::{Receiver, Sender, unbounded};
use hearth::demo::Demo;
use hearth::simulator::{Event, Options, Thermostat};
use hearth::{Config, Server};
use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/bin/chromium";
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
const WAIT: Duration = Duration::from_secs(20);
const TEST_SERIAL: &str = "02AA01AC5100TE57";

/// `chromedriver` and one browser session; both end when dropped.
struct Browser {
    driver: Child,
    base: String,
    session: String,
    agent: ureq::Agent,
}

impl Browser {
    fn launch() -> Option<Browser> {
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
        let created = browser.call(
            "POST",
            "/session",
            json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": CHROMIUM,
                    "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                             "--disable-dev-shm-usage", "--window-size=1280,900",
                             "--force-color-profile=srgb", "--lang=en-GB"],
                },
            }}}),
        );
        browser.session = created["sessionId"].as_str().unwrap().to_string();
        Some(browser)
    }

    /// One WebDriver command; its `value`. A WebDriver error fails the test with its message.
    fn call(&self, method: &str, path: &str, body: Value) -> Value {
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

    fn goto(&self, url: &str) {
        self.call("POST", "/url", json!({ "url": url }));
    }

    fn js(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
    }

    /// Polls `script` (a function body returning a value) until it returns something truthy.
    fn wait_for(&self, what: &str, script: &str) -> Value {
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
    fn painted(&self) {
        self.js(
            "return new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))",
        );
    }

    fn find(&self, css: &str) -> String {
        let v = self.call(
            "POST",
            "/element",
            json!({"using": "css selector", "value": css}),
        );
        v[ELEMENT].as_str().unwrap().to_string()
    }

    fn click(&self, css: &str) {
        let id = self.find(css);
        self.call("POST", &format!("/element/{id}/click"), json!({}));
    }

    fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.call("POST", &format!("/element/{id}/clear"), json!({}));
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            json!({ "text": text }),
        );
    }

    /// Presses keys (WebDriver key codes) one after another, as a person at a keyboard.
    fn press(&self, keys: &str) {
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

    /// The page as a phone or desktop of this size would lay it out.
    fn viewport(&self, width: u32, height: u32, mobile: bool) {
        self.call(
            "POST",
            "/goog/cdp/execute",
            json!({"cmd": "Emulation.setDeviceMetricsOverride", "params": {
                "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}}),
        );
    }

    fn screenshot(&self, name: &str) {
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
struct TestThermostat {
    events: Receiver<Event>,
    readings: Sender<(String, Value)>,
    stop: Arc<AtomicBool>,
    handle: Option<thread::JoinHandle<()>>,
}

impl TestThermostat {
    fn start(origin: &str) -> TestThermostat {
        let (tx, events) = unbounded();
        let (readings, inbox) = unbounded::<(String, Value)>();
        let stop = Arc::new(AtomicBool::new(false));
        let observer: hearth::simulator::Observer = Arc::new(move |_s: &str, e: &Event| {
            let _ = tx.send(e.clone());
        });
        let mut sim = Thermostat::new(Options::new(origin, TEST_SERIAL), observer);
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
    fn expect_push(&self, field: &str) {
        let key = format!("shared.{TEST_SERIAL}");
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

fn target_of(app: &hearth::app::App, serial: &str) -> Value {
    hearth::control::status::record(app, serial).unwrap()["target_temperature"].clone()
}

/// Every visible control has a name a screen reader can say.
const UNLABELLED: &str = r#"
const named = (el) => {
  if ((el.getAttribute("aria-label") || "").trim()) return true;
  const by = el.getAttribute("aria-labelledby");
  if (by && by.split(" ").some((id) => (document.getElementById(id)?.textContent || "").trim())) return true;
  if (el.labels && [...el.labels].some((l) => l.textContent.trim())) return true;
  return el.textContent.trim().length > 0;
};
const controls = [...document.querySelectorAll("button, select, input, textarea, summary, a[href]")]
  .filter((el) => el.offsetParent !== null);
return { total: controls.length, unlabelled: controls.filter((el) => !named(el)).map((el) => el.outerHTML.slice(0, 120)) };
"#;

/// Text contrast: every visible element with its own text, against the first opaque
/// background behind it (SVG text by its fill), per WCAG's relative luminance.
const LOW_CONTRAST: &str = r#"
const rgb = (s) => (s.match(/[\d.]+/g) || []).map(Number);
const lum = ([r, g, b]) => {
  const c = [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
  return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
};
const background = (el) => {
  for (let e = el; e; e = e.parentElement) {
    const c = rgb(getComputedStyle(e).backgroundColor);
    if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) return c;
  }
  return [255, 255, 255];
};
const bad = [];
let checked = 0;
for (const el of document.querySelectorAll("body *")) {
  const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
  if (!own || el.closest("[hidden]") || el.getClientRects().length === 0) continue;
  if (["SCRIPT", "STYLE", "TITLE", "title"].includes(el.tagName)) continue;
  const style = getComputedStyle(el);
  if (style.visibility === "hidden" || style.display === "none") continue;
  const fg = rgb(el instanceof SVGElement ? style.fill : style.color);
  const [a, b] = [lum(fg), lum(background(el))];
  const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  checked++;
  if (ratio < 4.5) bad.push(el.tagName + " '" + el.textContent.trim().slice(0, 30) + "' " + ratio.toFixed(2));
}
return { checked, bad };
"#;

/// Presses Tab until every visible control has had the focus (or 300 presses); returns the
/// controls never reached.
fn unreachable_by_tab(b: &Browser) -> Vec<String> {
    b.js(r#"
        document.activeElement && document.activeElement.blur();
        window.__reached = new Set();
        document.addEventListener("focusin", (e) => window.__reached.add(e.target));
        window.scrollTo(0, 0);
        return true;"#);
    let remaining = r#"
        return [...document.querySelectorAll("button, select, input, summary, a[href]")]
          .filter((el) => el.offsetParent !== null && !window.__reached.has(el))
          .map((el) => el.getAttribute("aria-label") || el.id || el.textContent.trim());"#;
    for _ in 0..30 {
        b.press(&"\u{E004}".repeat(10));
        if b.js(remaining).as_array().unwrap().is_empty() {
            break;
        }
    }
    b.js(remaining)
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.to_string())
        .collect()
}

/// Presses Tab until the control with this accessible name has the focus.
fn tab_to(b: &Browser, label: &str) {
    for _ in 0..300 {
        let focused = b.js("return document.activeElement.getAttribute('aria-label') || ''");
        if focused == json!(label) {
            return;
        }
        b.press("\u{E004}");
    }
    panic!("Tab never reached {label}");
}

#[test]
fn the_dashboard_in_a_real_browser() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let dir = TempDir::new("demo");
    let mut config = Config::local(dir.path());
    config.api_origin = Some(hearth::config::ApiOrigin::parse("http://127.0.0.1").unwrap());
    let demo = Demo::start(config).expect("demo starts");
    let app = Arc::clone(demo.server().app());
    let page = format!("http://{}/", demo.server().control_addr());

    // The three demo thermostats render, each with its replayed day of history.
    b.goto(&page);
    b.wait_for(
        "three cards with charts",
        "return document.querySelectorAll('.card svg.chart').length === 3",
    );
    let names = b.js("return [...document.querySelectorAll('.card h2')].map((h) => h.textContent)");
    assert_eq!(names, json!(["Hallway", "Living Room", "Bedroom"]));
    let temps = b.js(
        "return [...document.querySelectorAll('.card .temp .value')].map((t) => t.textContent)",
    );
    for (i, t) in temps.as_array().unwrap().iter().enumerate() {
        let t = t.as_str().unwrap();
        let unit = if i == 2 { "°F" } else { "°C" };
        assert!(t.ends_with(unit), "card {i} shows {t}");
    }
    b.wait_for(
        "the live indicator",
        "return document.getElementById('live').textContent === 'Live'",
    );
    let chart = b.js(
        "const c = document.querySelector('#card-02AA01AC5100DE01 svg.chart');
         return { samples: +c.dataset.samples,
                  points: +c.querySelector('path.temperature').dataset.points,
                  heating: c.querySelectorAll('rect.band.heating').length,
                  labels: [...c.querySelectorAll('text')].map((t) => t.textContent),
                  totals: document.querySelector('#card-02AA01AC5100DE01 .totals').textContent }",
    );
    assert!(chart["samples"].as_i64().unwrap() >= 288, "{chart}");
    assert!(chart["points"].as_i64().unwrap() >= 288, "{chart}");
    assert!(chart["heating"].as_i64().unwrap() > 0, "{chart}");
    assert!(
        chart["labels"].as_array().unwrap().contains(&json!("now")),
        "{chart}"
    );
    assert!(
        chart["totals"].as_str().unwrap().contains("heating"),
        "{chart}"
    );

    // Screenshots, desktop and phone; the phone layout has no sideways scrolling.
    b.viewport(1280, 860, false);
    b.js("window.scrollTo(0, 0); return true");
    b.wait_for("the top of the page", "return window.scrollY === 0");
    b.painted();
    b.screenshot("dashboard-1280.png");
    b.viewport(360, 780, true);
    b.wait_for("the phone's width", "return window.innerWidth === 360");
    b.painted();
    let width = b.js("return document.documentElement.scrollWidth");
    assert!(
        width.as_i64().unwrap() <= 360,
        "the page is {width} px wide at 360"
    );
    b.screenshot("dashboard-360.png");
    b.viewport(1280, 900, false);

    // Accessibility: names, contrast, the keyboard.
    let labels = b.js(UNLABELLED);
    assert!(labels["total"].as_i64().unwrap() >= 15, "{labels}");
    assert_eq!(labels["unlabelled"], json!([]), "{labels}");
    let contrast = b.js(LOW_CONTRAST);
    assert!(contrast["checked"].as_i64().unwrap() >= 40, "{contrast}");
    assert_eq!(contrast["bad"], json!([]), "{contrast}");
    assert_eq!(unreachable_by_tab(&b), Vec::<String>::new());

    // A thermostat of the test's own joins; its card appears without a reload.
    b.js("window.__sameLoad = true; return true");
    let sim = TestThermostat::start(&format!("http://{}", demo.server().device_addr()));
    b.wait_for(
        "the new thermostat's card",
        &format!("return !!document.querySelector('#card-{TEST_SERIAL} svg.chart')"),
    );

    // A click on + reaches the thermostat's held subscribe.
    b.click("button[aria-label='Raise target temperature of Test Room']");
    sim.expect_push("target_temperature");
    assert_eq!(target_of(&app, TEST_SERIAL), json!(21.5));
    b.wait_for(
        "the new setpoint",
        &format!("return document.getElementById('target-{TEST_SERIAL}').textContent === '21.5°C'"),
    );

    // The same from the keyboard: Tab to the button, Enter.
    b.js("document.activeElement.blur(); window.scrollTo(0, 0); return true");
    tab_to(&b, "Raise target temperature of Test Room");
    b.press("\u{E007}");
    sim.expect_push("target_temperature");
    assert_eq!(target_of(&app, TEST_SERIAL), json!(22.0));
    tab_to(&b, "Away for Test Room");
    b.press(" ");
    b.wait_for(
        "away pressed",
        &format!("return document.getElementById('away-{TEST_SERIAL}').getAttribute('aria-pressed') === 'true'"),
    );

    // Mode buttons; in heat·cool, a click on each side changes that side only, in order.
    b.click(&format!("#mode-{TEST_SERIAL} button[data-mode='range']"));
    sim.expect_push("target_temperature_type");
    b.wait_for(
        "the heat-to and cool-to controls",
        &format!("return !document.getElementById('high-{TEST_SERIAL}').parentElement.hidden"),
    );
    b.click("button[aria-label='Raise cool-to temperature of Test Room']");
    b.click("button[aria-label='Raise heat-to temperature of Test Room']");
    wait_until_within(WAIT, "the range 19.5 to 24.5", || {
        let r = hearth::control::status::record(&app, TEST_SERIAL).unwrap();
        (
            r["target_temperature_low"].clone(),
            r["target_temperature_high"].clone(),
        ) == (json!(19.5), json!(24.5))
    });

    // A reading from the thermostat updates its card through the event stream.
    sim.readings
        .send(("current_temperature".into(), json!(18.3)))
        .unwrap();
    b.wait_for(
        "the reported temperature",
        &format!(
            "return document.querySelector('#card-{TEST_SERIAL} .temp .value').textContent === '18.3°C'"
        ),
    );
    assert_eq!(b.js("return window.__sameLoad === true"), json!(true));

    // A refused command is explained next to its control: a heat-only thermostat cannot cool.
    // The page offers Hallway no "Cool" button, so the test adds one that works like the rest.
    let modes = b.js("return [...document.querySelectorAll('#mode-02AA01AC5100DE01 button')].map((m) => m.dataset.mode)");
    assert_eq!(modes, json!(["off", "heat"]));
    b.js("const c = cards.get('02AA01AC5100DE01');
          const cool = document.createElement('button');
          cool.id = 'forced-cool'; cool.textContent = 'Cool';
          cool.onclick = () => queue(c, 'set_mode', 'cool', c.controlError);
          c.modes.append(cool); return true");
    b.click("#forced-cool");
    let error = b.wait_for(
        "the refusal",
        "return document.getElementById('control-error-02AA01AC5100DE01').textContent",
    );
    assert!(
        error.as_str().unwrap().to_lowercase().contains("cool"),
        "{error}"
    );
    assert_eq!(
        hearth::control::status::record(&app, "02AA01AC5100DE01").unwrap()["mode"],
        json!("heat")
    );
    drop(sim);

    pairing_form_claims_a_thermostat(&b);
    drop(b);
    demo.stop();
}

/// With pairing on, the form claims a thermostat by the code it shows.
fn pairing_form_claims_a_thermostat(b: &Browser) {
    let dir = TempDir::new("pairing");
    let mut config = Config::local(dir.path());
    config.api_origin = Some(hearth::config::ApiOrigin::parse("http://127.0.0.1").unwrap());
    config.require_device_pairing = true;
    let server = Server::start(config).expect("server starts");
    let (mut sim, _events) = thermostat(&format!("http://{}", server.device_addr()), SERIAL);
    sim.register().unwrap();
    let (code, _expires) = sim.passphrase().unwrap();

    b.goto(&format!("http://{}/", server.control_addr()));
    b.wait_for(
        "the pairing form",
        "return !document.getElementById('pairing').hidden && !document.getElementById('empty').hidden",
    );
    let result = "return document.getElementById('pairing-result').textContent";
    b.type_into("#pairing-code", "AB");
    b.click("#pairing-form button[type=submit]");
    let text = b.wait_for("the format message", result);
    assert!(
        text.as_str().unwrap().contains("7 letters and digits"),
        "{text}"
    );
    b.type_into("#pairing-code", "ZZZ-9999");
    b.click("#pairing-form button[type=submit]");
    b.wait_for(
        "the server's refusal",
        "return document.getElementById('pairing-result').textContent === 'Invalid, expired, or already claimed entry key'",
    );
    assert!(
        server
            .app()
            .state
            .accounts(|a| a.owner_of(SERIAL).is_none())
    );

    let typed = format!("{}-{}", &code[..3], &code[3..]);
    b.type_into("#pairing-code", &typed);
    b.click("#pairing-form button[type=submit]");
    b.wait_for(
        "the claim",
        &format!("return document.getElementById('pairing-result').textContent === 'Added thermostat {SERIAL}.'"),
    );
    // Paired, the thermostat can subscribe and upload its state; its card appears live.
    sim.boot().unwrap();
    b.wait_for(
        "the claimed thermostat's card",
        &format!("return !!document.getElementById('card-{SERIAL}')"),
    );
    let owner = server
        .app()
        .state
        .accounts(|a| a.owner_of(SERIAL).map(|o| o.user.clone()));
    assert_eq!(owner.as_deref(), Some("owner"));
    server.shutdown();
}
