//! The dashboard in a real browser: Debian's headless Chromium, driven over WebDriver by
//! `chromedriver` (package `chromium-driver`), against `hearth demo`'s server and simulated
//! thermostats. CI installs both; elsewhere the test is skipped with a message unless
//! `HEARTH_REQUIRE_BROWSER=1`, which CI sets so a missing browser fails it.
//!
//! Screenshots at 1280 and 360 px are written to `target/tmp/dashboard/`, and also to
//! `$HEARTH_SCREENSHOTS_DIR` when set (`HEARTH_SCREENSHOTS_DIR=docs` refreshes the docs' own).

mod accounts;
mod alerts;
mod browser;
use crate::common;
mod chart;
mod cross_origin;
mod energy;
mod glance;
mod homekit;
mod house;
mod install;
mod people;
mod removal;
mod schedule;
mod still;
mod taken;

use std::sync::Arc;

use browser::*;
use common::*;
use hearth::Config;
use hearth::demo::Demo;
use serde_json::{Value, json};

fn target_of(app: &hearth::app::App, serial: &str) -> Value {
    hearth::control::status::record(app, serial).unwrap()["target_temperature"].clone()
}

/// Whether a control is shown: laid out, and not inside a closed `<details>` (other than in its
/// summary), whose content Chromium lays out but hides.
const SHOWN: &str = r#"
const shown = (el) => {
  if (el.offsetParent === null) return false;
  // Kept in its place but not shown (so nothing moves when it is): not a control now.
  if (getComputedStyle(el).visibility === "hidden") return false;
  for (let d = el.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) {
    if (!d.open && !(el.closest("summary") && el.closest("summary").parentElement === d)) return false;
  }
  return true;
};
"#;

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
  .filter(shown);
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

/// Presses Tab until every visible control has had the focus (or 500 presses); returns the
/// controls never reached. With a modal dialog open, its controls (the page behind is inert).
fn unreachable_by_tab(b: &Browser) -> Vec<String> {
    b.js(r#"
        document.activeElement && document.activeElement.blur();
        window.__reached = new Set();
        document.addEventListener("focusin", (e) => window.__reached.add(e.target));
        window.scrollTo(0, 0);
        return true;"#);
    let remaining = format!(
        "{SHOWN}{}",
        r#"
        return [...document.querySelectorAll("button, select, input, summary, a[href]")]
          .filter((el) => shown(el) && !window.__reached.has(el)
            && (!document.querySelector("dialog:modal") || el.closest("dialog:modal")))
          .map((el) => el.getAttribute("aria-label") || el.id || el.textContent.trim());"#
    );
    for _ in 0..50 {
        b.press(&"\u{E004}".repeat(10));
        if b.js(&remaining).as_array().unwrap().is_empty() {
            break;
        }
    }
    b.js(&remaining)
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
    let fake = house::fake_thermostat();
    config.thermostat_api_port = fake.addr().port();
    share_process();
    let demo = Demo::start(config).expect("demo starts");
    let app = Arc::clone(demo.server().app());
    let page = format!("http://{}/", demo.server().control_addr());

    // The three demo thermostats render, each with its replayed day of history.
    b.goto(&page);
    b.wait_for(
        "three cards with charts",
        "return document.querySelectorAll('.card svg.chart').length === 3",
    );
    let names =
        b.js("return [...document.querySelectorAll('.card .head h2')].map((h) => h.textContent)");
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
    // Drawn as one point per two-pixel column (the mean of its readings): a day across the plot.
    let points = chart["points"].as_i64().unwrap();
    assert!(
        points >= 100 && points < chart["samples"].as_i64().unwrap(),
        "{chart}"
    );
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
    b.as_phone();
    b.screenshot("dashboard-360.png");
    b.viewport(1280, 900, false);

    // Accessibility: names, contrast, the keyboard.
    let labels = b.js(&format!("{SHOWN}{UNLABELLED}"));
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
    // Away is eco: the setpoints give way to eco; Home, in the same place, is the way back,
    // which the keyboard reaches too.
    tab_to(&b, "Home for Test Room");
    b.press("\u{E007}");
    b.wait_for(
        "home again, with the setpoints back",
        &format!("return document.getElementById('eco-{TEST_SERIAL}').hidden && !document.getElementById('target-{TEST_SERIAL}').closest('.setpoints').hidden"),
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

    // Everything else a house needs, from the page alone.
    house::setup_panel(&b, &app, &fake, true);
    let control = demo.server().control_addr();
    house::schedule_editor(&b, &app, control, &sim);
    house::fahrenheit(&b, &app);
    house::lock_and_rename(&b, &app, true);
    let device_origin = format!("http://{}", demo.server().device_addr());
    house::remove_and_add_back(&b, &app, sim, &device_origin);

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
    let server = crate::common::start_server(config);
    let (mut sim, _events) = thermostat(&format!("http://{}", server.device_addr()), SERIAL);
    sim.register().unwrap();
    let (code, _expires) = sim.passphrase().unwrap();

    b.goto(&format!("http://{}/", server.control_addr()));
    b.wait_for(
        "the pairing form",
        "return !document.getElementById('pairing').hidden && !document.getElementById('empty').hidden",
    );
    // The thermostat showing its code is listed as waiting, pointing at the code form.
    let waiting = b.wait_for(
        "the thermostat waiting to be claimed",
        "return document.getElementById('waiting-section').hidden ? '' : document.getElementById('waiting').textContent",
    );
    assert!(
        waiting.as_str().unwrap().contains(SERIAL)
            && waiting
                .as_str()
                .unwrap()
                .contains("Claim it with the entry code"),
        "{waiting}"
    );
    // It stays in sight with "Add a thermostat" closed, and leads to the code form.
    b.js("document.getElementById('setup').open = false; return true");
    assert_eq!(
        b.js("return document.querySelector('#waiting li').offsetParent !== null"),
        json!(true)
    );
    b.click(&format!(
        "button[aria-label='Enter the entry code of {SERIAL}']"
    ));
    b.wait_for(
        "the code form, focused",
        "return document.getElementById('setup').open && document.activeElement.id === 'pairing-code'",
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
            .state()
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
        .state()
        .accounts(|a| a.owner_of(SERIAL).map(|o| o.user.clone()));
    assert_eq!(owner.as_deref(), Some("owner"));
    server.shutdown();
}
