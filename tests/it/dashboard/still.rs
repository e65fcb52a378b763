//! A page that stays still: at 360 and 1280 px, taps on a card's controls (−, +, a mode,
//! Away, Home, the fan) and what they bring (the setpoint held, the change sent then taken, the
//! heating started, eco, the fan's time) move nothing on the page. Every layout-shift entry the browser reports is
//! counted, those it marks as following input included.

use serde_json::{Value, json};

use super::browser::*;
use super::glance::schedule_around_now;
use crate::common::*;

/// Records every layout shift from now on, with the elements that moved.
const WATCH_SHIFTS: &str = r#"
window.__shifts = [];
const note = (entries) => {
  for (const e of entries) window.__shifts.push({
    value: e.value, afterInput: e.hadRecentInput, during: window.__step,
    moved: (e.sources || []).map((s) => s.node ? (s.node.id || s.node.className || s.node.nodeName) : "?"),
  });
};
window.__observer = new PerformanceObserver((list) => note(list.getEntries()));
window.__observer.observe({ type: "layout-shift" });
// Every shift so far, those the observer has not handed over yet included.
window.__allShifts = () => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(() => {
  note(window.__observer.takeRecords());
  ok(window.__shifts);
})));
return true;
"#;

fn record(s: &TestServer) -> Value {
    hearth::control::status::record(s.app(), TEST_SERIAL).unwrap_or(Value::Null)
}

/// Clicks `css` and waits until the server's record, then the card's (the page's copy of it),
/// satisfy `done`, and two frames more: what the tap brought is drawn.
fn tap(b: &Browser, s: &TestServer, css: &str, what: &str, done: impl Fn(&Value) -> bool) {
    b.js(&format!("window.__step = {}; return true", json!(what)));
    b.click(css);
    wait_until(what, || done(&record(s)));
    wait_until(&format!("{what}, on the card"), || {
        done(&b.js(&format!("return cards.get('{TEST_SERIAL}').data")))
    });
    b.wait_for(
        &format!("{what}, drawn"),
        "return new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(() => ok(true))))",
    );
}

#[test]
fn taps_and_away_move_nothing_at_360_and_1280() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let s = TestServer::start();
    let sim = TestThermostat::start(&s.origin());
    wait_until("the thermostat's state", || {
        record(&s)["current_temperature"].is_number()
    });
    schedule_around_now(&b, &s);
    for width in [360, 1280] {
        b.viewport(width, 900, width < 600);
        b.goto(&format!("http://{}/", s.control()));
        let card = format!("#card-{TEST_SERIAL}");
        b.wait_for(
            "the card with its chart and its plan",
            &format!(
                "const p = document.getElementById('plan-{TEST_SERIAL}'); \
                 return !!document.querySelector('{card} svg.chart') && !!p && p.textContent !== ''"
            ),
        );
        b.wait_for(
            "the live indicator",
            "return document.getElementById('live').textContent === 'Live'",
        );
        b.painted();
        b.js(WATCH_SHIFTS);
        let target = |r: &Value| r["target_temperature"].as_f64();
        let before = target(&record(&s)).unwrap();
        let raise = format!("{card} [data-setpoint=target] button.step:last-of-type");
        let lower = format!("{card} [data-setpoint=target] button.step:first-of-type");
        tap(&b, &s, &raise, "raised", |r| {
            target(r) == Some(before + 0.5)
        });
        sim.expect_push("target_temperature");
        b.wait_for(
            "the change taken",
            &format!(
                "return document.getElementById('taken-{TEST_SERIAL}').dataset.state === 'taken'"
            ),
        );
        // The thermostat starts heating to it: what the card says grows, and moves nothing.
        b.js("window.__step = 'heating'; return true");
        sim.readings
            .send(("hvac_heater_state".into(), json!(true)))
            .unwrap();
        b.wait_for(
            "heating, on the card",
            &format!("return document.getElementById('action-{TEST_SERIAL}').textContent.startsWith('Heating to')"),
        );
        tap(&b, &s, &lower, "lowered", |r| target(r) == Some(before));
        tap(
            &b,
            &s,
            &format!("#mode-{TEST_SERIAL} [data-mode=cool]"),
            "cool",
            |r| r["mode"] == json!("cool"),
        );
        tap(
            &b,
            &s,
            &format!("#mode-{TEST_SERIAL} [data-mode=heat]"),
            "heat",
            |r| r["mode"] == json!("heat"),
        );
        tap(&b, &s, &format!("#away-{TEST_SERIAL}"), "away", |r| {
            r["away"] == json!(true)
        });
        tap(&b, &s, &format!("#at-home-{TEST_SERIAL}"), "home", |r| {
            r["away"] == json!(false)
        });
        tap(&b, &s, &format!("#fan-{TEST_SERIAL}"), "fan on", |r| {
            r["fan_timer_active"] == json!(true)
        });
        b.wait_for(
            "the fan shown running",
            &format!("return document.getElementById('fan-{TEST_SERIAL}').getAttribute('aria-pressed') === 'true'"),
        );
        tap(&b, &s, &format!("#fan-{TEST_SERIAL}"), "fan auto", |r| {
            r["fan_timer_active"] == json!(false)
        });
        let shifts = b.js("return window.__allShifts()");
        assert_eq!(shifts, json!([]), "at {width} px");
        // It would have seen one: a line put above the card moves it.
        b.js("window.__step = 'a line above'; \
              document.getElementById('cards').before(Object.assign(document.createElement('p'), \
                { id: 'pushed', textContent: 'A line that moves everything below it' })); return true");
        let seen = b.js("return window.__allShifts()");
        assert!(
            seen.as_array().is_some_and(|s| !s.is_empty()),
            "the observer saw no shift at {width} px"
        );
        b.js("document.getElementById('pushed').remove(); return true");
        if width == 360 {
            b.screenshot("card-360.png");
        }
    }
}
