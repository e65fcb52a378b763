//! A card at a glance and under a thumb, in Chromium: what the system does and why, eco with
//! the way back home, the schedule's next change and a manual hold, fast presses sent as one
//! setpoint, a refusal in words, a thermostat that has not reported yet, and one load of the
//! list and of each chart.

use serde_json::{Value, json};

use super::browser::*;
use crate::common::*;

/// Counts the page's requests by path (from its first script on), and stands in for the
/// `reported` field of `/api/devices` where the server does not send it yet: false while a
/// thermostat has no temperature, as the server's own field says.
const WATCH_FETCH: &str = r#"
window.__asked = {};
window.__commands = [];
const realFetch = window.fetch;
window.fetch = async (input, init) => {
  const path = new URL(String(input), location.href).pathname;
  const key = path + (path.endsWith("/history") ? "?" + new URL(String(input), location.href).searchParams.get("serial") : "");
  window.__asked[key] = (window.__asked[key] || 0) + 1;
  if (path.endsWith("/command") && init && init.body) window.__commands.push(JSON.parse(init.body));
  const res = await realFetch(input, init);
  if (!path.endsWith("/api/devices") || !res.ok) return res;
  const body = await res.clone().json();
  for (const d of body.devices || []) if (!("reported" in d)) d.reported = typeof d.current_temperature === "number";
  return new Response(JSON.stringify(body), { status: res.status, headers: res.headers });
};
"#;

fn text(b: &Browser, css: &str) -> String {
    b.js(&format!(
        "const e = document.querySelector({}); return e && !e.closest('[hidden]') ? e.textContent : ''",
        serde_json::to_string(css).unwrap()
    ))
    .as_str()
    .unwrap()
    .to_string()
}

fn record(app: &hearth::app::App) -> Value {
    hearth::control::status::record(app, TEST_SERIAL).unwrap()
}

fn ok(r: hearth::http::client::ClientResponse) {
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

/// Every day the same: `temp` from an hour ago, 17.0 from two hours on (the browser's local
/// time, which is the structure's here: both UTC). Returns the time of the change to 17.0, as the page
/// writes it ("tomorrow" before it when that is past midnight, which it may no longer be by the
/// time the page reads it, so the caller accepts both).
fn schedule_around_now(b: &Browser, s: &TestServer) -> String {
    let now = b.js("const n = new Date(); return n.getHours() * 3600 + n.getMinutes() * 60");
    let now = now.as_i64().unwrap();
    let before = (now - 3600).rem_euclid(86400);
    let after = (now + 7200).rem_euclid(86400);
    let mut entries = [(before, 21.0), (after, 17.0)];
    entries.sort_by_key(|e| e.0);
    let day: Vec<Value> = entries
        .iter()
        .map(|(t, c)| json!({"time": t, "type": "HEAT", "temp": c, "entry_type": "setpoint"}))
        .collect();
    let days: serde_json::Map<String, Value> =
        (0..7).map(|d| (d.to_string(), json!(day))).collect();
    ok(command(
        s.control(),
        TEST_SERIAL,
        "set_schedule",
        json!({"ver": 2, "name": "", "schedule_mode": "HEAT", "days": days}),
    ));
    // As the page writes a time: the browser's own format.
    b.js(&format!(
        "const d = new Date(); d.setHours(0, 0, 0, 0); d.setSeconds({after}); \
         return d.toLocaleTimeString([], {{ hour: 'numeric', minute: '2-digit' }})"
    ))
    .as_str()
    .unwrap()
    .to_string()
}

/// `text` is `{start}{when}{end}`, `when` being `hhmm` today or tomorrow.
fn says(text: &Value, start: &str, hhmm: &str, end: &str) -> bool {
    let text = text.as_str().unwrap_or_default();
    [
        format!("{start}{hhmm}{end}"),
        format!("{start}tomorrow {hhmm}{end}"),
    ]
    .iter()
    .any(|t| t == text)
}

#[test]
fn a_card_at_a_glance_and_under_a_thumb() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let s = TestServer::start();
    let app = s.app();
    let sim = TestThermostat::start(&s.origin());
    wait_until("the thermostat's state", || {
        hearth::control::status::record(app, TEST_SERIAL)
            .is_some_and(|r| r["current_temperature"].is_number())
    });
    let next = schedule_around_now(&b, &s);

    b.call(
        "POST",
        "/goog/cdp/execute",
        json!({"cmd": "Page.addScriptToEvaluateOnNewDocument", "params": {"source": WATCH_FETCH}}),
    );
    b.goto(&format!("http://{}/", s.control()));
    let card = format!("#card-{TEST_SERIAL}");
    b.wait_for(
        "the card with its chart",
        &format!("return !!document.querySelector('{card} svg.chart')"),
    );
    b.wait_for(
        "the live indicator",
        "return document.getElementById('live').textContent === 'Live'",
    );

    // At a glance: the room, what the system does, humidity, the schedule's next change.
    assert_eq!(text(&b, &format!("{card} .temp .value")), "20.5°C");
    assert_eq!(text(&b, &format!("#action-{TEST_SERIAL}")), "Idle");
    assert_eq!(
        text(&b, &format!("#humidity-{TEST_SERIAL}")),
        "44% humidity"
    );
    let plan = b.wait_for(
        "the next change",
        &format!("return document.getElementById('plan-{TEST_SERIAL}').textContent"),
    );
    assert!(says(&plan, "Next ", &next, " → 17.0°"), "{plan}");
    sim.readings
        .send(("hvac_heater_state".into(), json!(true)))
        .unwrap();
    b.wait_for(
        "heating, and to what",
        &format!("return document.getElementById('action-{TEST_SERIAL}').textContent === 'Heating to 21.0°'"),
    );

    // The list and the chart's history were each asked for once as the page loaded.
    let asked = b.js("return window.__asked");
    assert_eq!(asked["/api/devices"], json!(1), "{asked}");
    assert_eq!(
        asked[format!("/api/history?{TEST_SERIAL}")],
        json!(1),
        "{asked}"
    );
    assert_eq!(asked["/api/config"], json!(1), "{asked}");

    // Four presses 110 ms apart: 2.0 °C up, shown as pressed and never back, sent as one
    // command (presses go once they pause for 0.7 s; a browser too busy to keep the 110 ms may
    // make a longer gap, and each gap of 0.7 s or more may send one more, so the test counts them).
    let shown = b.js(&format!(
        "const out = document.getElementById('target-{TEST_SERIAL}');
         const plus = document.querySelector(\"button[aria-label='Raise target temperature of Test Room']\");
         window.__shown = [out.textContent];
         new MutationObserver(() => window.__shown.push(out.textContent))
           .observe(out, {{ childList: true, characterData: true, subtree: true }});
         return new Promise((done) => {{
           let n = 0;
           window.__pressedAt = [];
           const press = () => {{ window.__pressedAt.push(performance.now()); plus.click();
             if (++n < 4) setTimeout(press, 110); else done(out.textContent); }};
           press();
         }});"
    ));
    assert_eq!(shown, json!("23.0°C"));
    sim.expect_push("target_temperature");
    wait_until("the target 23.0", || {
        record(app)["target_temperature"] == json!(23.0)
    });
    b.wait_for(
        "the card holding the pressed value",
        &format!("return window.__commands.length > 0 && document.getElementById('target-{TEST_SERIAL}').textContent === '23.0°C'"),
    );
    let sent = b.js("return window.__commands.filter((c) => c.command === 'set_temperature')");
    let sent = sent.as_array().unwrap();
    let pressed_at = b.js("return window.__pressedAt");
    let pressed_at: Vec<f64> = pressed_at
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_f64().unwrap())
        .collect();
    let pauses = pressed_at
        .windows(2)
        .filter(|w| w[1] - w[0] >= 700.0)
        .count();
    assert!(
        !sent.is_empty() && sent.len() <= 1 + pauses,
        "{sent:?} after presses at {pressed_at:?} ms"
    );
    assert_eq!(
        sent.last().unwrap()["value"].as_f64(),
        Some(23.0),
        "{sent:?}"
    );
    let trail = b.js("return window.__shown");
    let values: Vec<f64> = trail
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().trim_end_matches("°C").parse().unwrap())
        .collect();
    assert!(values.windows(2).all(|w| w[0] <= w[1]), "{trail}");

    // A manual setting holds until the schedule's next change, and the card says so.
    let plan = b.wait_for(
        "the hold",
        &format!("const t = document.getElementById('plan-{TEST_SERIAL}').textContent; return t.startsWith('Holding 23.0°') && t"),
    );
    assert!(
        says(&plan, "Holding 23.0° until ", &next, ", then 17.0°"),
        "{plan}"
    );
    assert_eq!(
        text(&b, &format!("#action-{TEST_SERIAL}")),
        "Heating to 23.0°"
    );

    // Away: the leaf, "Eco", the range it holds, the way back home instead of − and +.
    b.click(&format!("#away-{TEST_SERIAL}"));
    b.wait_for(
        "the eco card",
        &format!("return document.getElementById('eco-text-{TEST_SERIAL}').textContent === 'Keeps it at 12.5°C or warmer'"),
    );
    wait_until("away stored", || record(app)["away"] == json!(true));
    let eco = b.js(&format!(
        "const q = (id) => document.getElementById(id + '-{TEST_SERIAL}');
         return {{ badge: !!q('eco').querySelector('svg.leaf') && q('eco').textContent.includes('Eco'),
                   setpoints: !!q('target').closest('[hidden]'),
                   plan: !!q('plan').closest('[hidden]'),
                   home: q('home').offsetParent !== null,
                   action: q('action').textContent,
                   away: q('away').getAttribute('aria-pressed'),
                   atHome: q('at-home').getAttribute('aria-pressed') }}"
    ));
    assert_eq!(
        eco,
        json!({"badge": true, "setpoints": true, "plan": true, "home": true,
               "action": "Heating to 12.5°", "away": "true", "atHome": "false"})
    );
    let labels = b.js(&format!("{}{}", super::SHOWN, super::UNLABELLED));
    assert_eq!(labels["unlabelled"], json!([]), "{labels}");
    let contrast = b.js(super::LOW_CONTRAST);
    assert_eq!(contrast["bad"], json!([]), "{contrast}");
    b.as_phone();
    b.screenshot("card-eco-360.png");
    b.viewport(1280, 900, false);
    b.click(&format!("#home-{TEST_SERIAL}"));
    wait_until("home stored", || record(app)["away"] == json!(false));
    b.wait_for(
        "the setpoints back",
        &format!("return document.getElementById('eco-{TEST_SERIAL}').hidden && document.getElementById('target-{TEST_SERIAL}').offsetParent !== null"),
    );

    // A refusal is said in words next to the control, and the value shown is the thermostat's.
    ok(command(
        s.control(),
        TEST_SERIAL,
        "set_mode",
        json!("range"),
    ));
    ok(command(
        s.control(),
        TEST_SERIAL,
        "set_temperature",
        json!({"low": 23.5, "high": 24.0}),
    ));
    b.wait_for(
        "heat to 23.5",
        &format!("return document.getElementById('low-{TEST_SERIAL}').textContent === '23.5°C' && document.getElementById('low-{TEST_SERIAL}').offsetParent !== null"),
    );
    b.click("button[aria-label='Raise heat-to temperature of Test Room']");
    b.click("button[aria-label='Raise heat-to temperature of Test Room']");
    let refusal = b.wait_for(
        "the refusal",
        &format!("return document.getElementById('setpoint-error-{TEST_SERIAL}').textContent"),
    );
    assert_eq!(
        refusal,
        json!("Not set: Low temperature must be less than high temperature")
    );
    b.wait_for(
        "the stored value again",
        &format!("return document.getElementById('low-{TEST_SERIAL}').textContent === '23.5°C'"),
    );
    assert_eq!(record(app)["target_temperature_low"], json!(23.5));

    // A thermostat that has connected but not sent its state: said so, no dead controls.
    let (mut quiet, _events) = thermostat(&s.origin(), SERIAL);
    quiet.register().unwrap();
    // Its first subscribe makes it known; it has uploaded nothing.
    let _held = quiet.open_subscribe().unwrap();
    let quiet_card = format!("#card-{SERIAL}");
    b.js("loadDevices(); return true");
    let waiting = b.wait_for(
        "the thermostat not reported yet",
        &format!(
            "const c = document.querySelector('{quiet_card}');
             if (!c) return '';
             const shown = [...c.querySelectorAll('button, output')].filter((e) => e.offsetParent !== null && !e.closest('details'));
             return {{ note: document.getElementById('waiting-{SERIAL}').textContent, controls: shown.length }}"
        ),
    );
    assert!(
        waiting["note"]
            .as_str()
            .unwrap()
            .starts_with("Waiting for the thermostat…"),
        "{waiting}"
    );
    assert_eq!(waiting["controls"], json!(0), "{waiting}");
    // Once it reports, the card comes alive.
    quiet.boot().unwrap();
    b.js("loadDevices(); return true");
    b.wait_for(
        "the thermostat's values",
        &format!("return document.getElementById('waiting-{SERIAL}').hidden && document.querySelector('{quiet_card} .temp .value').textContent.endsWith('°C')"),
    );
    drop(b);
    drop(sim);
}

/// The outdoor temperature of the thermostat's place, from the last weather answer, in one
/// small line of the card.
#[test]
fn a_hold_says_what_follows_and_resume_ends_it() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let s = TestServer::start();
    let app = s.app();
    let sim = TestThermostat::start(&s.origin());
    wait_until("the thermostat's state", || {
        hearth::control::status::record(app, TEST_SERIAL)
            .is_some_and(|r| r["current_temperature"].is_number())
    });
    let next = schedule_around_now(&b, &s);
    // Held at 22.5 against the schedule's 21.0, as a tap on the thermostat would.
    sim.readings
        .send(("target_temperature".into(), json!(22.5)))
        .unwrap();
    wait_until("the hold in the record", || !record(app)["hold"].is_null());
    let hold = record(app)["hold"].clone();
    assert_eq!(hold["setpoints"], json!([22.5]), "{hold}");
    assert_eq!(hold["then"], json!([17.0]), "{hold}");
    b.goto(&format!("http://{}/", s.control()));
    let plan = b.wait_for(
        "the hold and what follows",
        &format!("const e = document.getElementById('plan-{TEST_SERIAL}'); return e && e.textContent.startsWith('Holding') && e.textContent"),
    );
    assert!(
        says(&plan, "Holding 22.5° until ", &next, ", then 17.0°"),
        "{plan}"
    );
    b.click(&format!("#resume-{TEST_SERIAL}"));
    sim.expect_push("target_temperature");
    wait_until("the schedule's setpoint", || {
        record(app)["target_temperature"] == json!(21.0)
    });
    let plan = b.wait_for(
        "the schedule followed again",
        &format!("const t = document.getElementById('plan-{TEST_SERIAL}').textContent; return t.startsWith('Next') && t"),
    );
    assert!(says(&plan, "Next ", &next, " → 17.0°"), "{plan}");
    assert_eq!(
        b.js(&format!(
            "return getComputedStyle(document.getElementById('resume-{TEST_SERIAL}')).visibility"
        )),
        json!("hidden")
    );
    // Nothing to resume now: the refusal in words, and nothing sent.
    let r = command(s.control(), TEST_SERIAL, "resume_schedule", Value::Null);
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["message"],
        json!("Nothing to resume: the thermostat already follows its schedule")
    );
}

#[test]
fn the_card_says_how_warm_it_is_outside() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let fake = crate::weather::FakeOpenMeteo::start();
    let s = TestServer::start_with(|c| {
        c.weather_provider = Some(hearth::config::WeatherProvider::OpenMeteo);
        c.open_meteo_geocoding_url = fake.url.clone();
        c.open_meteo_url = fake.url.clone();
    });
    let app = s.app();
    let _sim = TestThermostat::start(&s.origin());
    wait_until("the thermostat's state, with its place", || {
        hearth::control::status::record(app, TEST_SERIAL)
            .is_some_and(|r| r["current_temperature"].is_number())
    });
    assert_eq!(record(app)["outdoor_temperature"], Value::Null);
    assert_eq!(
        get(s.device(), "/nest/weather/v1?query=94304,US").status,
        200
    );
    assert_eq!(record(app)["outdoor_temperature"], json!(10.6));
    b.goto(&format!("http://{}/", s.control()));
    let outside = b.wait_for(
        "the outdoor temperature",
        &format!("return document.getElementById('outside-{TEST_SERIAL}')?.textContent"),
    );
    assert_eq!(outside, json!("Outside 10.6°"));
}
