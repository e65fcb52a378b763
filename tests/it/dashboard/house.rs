//! Running a house from the page alone: adding a thermostat (scan, point), the schedule editor,
//! and each thermostat's settings, against the demo's thermostats and the test's own.

use std::net::SocketAddr;

use base64::Engine;
use hearth::app::App;
use hearth::simulator::settings_api::{Settings, SettingsApi};
use serde_json::{Value, json};
use sha1::{Digest, Sha1};

use super::browser::*;
use crate::common::*;

/// The demo's °F thermostat, with a fan.
const BEDROOM: &str = "02AA01AC5100DE03";
const FAKE_IP: [u8; 4] = [127, 77, 90, 5];
const FAKE_KEY: &str = "SECRETKEY123";

/// A thermostat's settings API (the firmware's `/cgi-bin/api/settings`) on a loopback address
/// of its own, which wants its key: what "Point here" talks to.
pub fn fake_thermostat() -> SettingsApi {
    crate::common::share_process();
    SettingsApi::start(
        SocketAddr::from((FAKE_IP, 0)),
        Settings {
            serial: "02AA01AC0000FAKE".into(),
            api_key: FAKE_KEY.into(),
            cloudregisterurl: Some("https://backdoor.nolongerevil.com/entry".into()),
            key_required: true,
        },
    )
    .unwrap()
}

/// A JavaScript string literal.
fn js_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// Types `value` into the input as a person's edit arrives: an `input`, then a `change`.
fn set_input(b: &Browser, css: &str, value: &str) {
    let done = b.js(&format!(
        "const i = document.querySelector({}); if (!i) return false;
         i.focus(); i.value = {}; i.dispatchEvent(new Event('input', {{bubbles: true}}));
         i.dispatchEvent(new Event('change', {{bubbles: true}})); return true",
        js_str(css),
        js_str(value)
    ));
    assert_eq!(done, json!(true), "no input {css}");
}

fn text_of(b: &Browser, css: &str) -> String {
    b.js(&format!(
        "const e = document.querySelector({}); return e ? e.textContent : ''",
        js_str(css)
    ))
    .as_str()
    .unwrap()
    .to_string()
}

fn scroll_to(b: &Browser, css: &str) {
    b.js(&format!(
        "document.querySelector({}).scrollIntoView({{block: 'start'}}); return true",
        js_str(css)
    ));
    b.painted();
}

/// `<name>-1280.png` and `<name>-360.png` with `css` at the top; the phone's page must not
/// scroll sideways.
fn screenshots(b: &Browser, css: &str, name: &str) {
    b.viewport(1280, 900, false);
    scroll_to(b, css);
    b.screenshot(&format!("{name}-1280.png"));
    b.as_phone();
    scroll_to(b, css);
    b.screenshot(&format!("{name}-360.png"));
    b.viewport(1280, 900, false);
}

fn stored(app: &App, serial: &str, bucket: &str) -> (i64, Value) {
    let key = format!("{bucket}.{serial}");
    app.state()
        .read_device(serial, |d| {
            d.buckets
                .get(&key)
                .map(|b| (b.revision, Value::Object(b.value.to_map())))
        })
        .flatten()
        .unwrap_or((0, Value::Null))
}

fn record(app: &App, serial: &str) -> Value {
    hearth::control::status::record(app, serial).unwrap()
}

/// Setpoints of one stored day, as `(time, type, temperature or [low, high], entry_type)`.
fn day(schedule: &Value, d: &str) -> Vec<Value> {
    let mut entries: Vec<Value> = schedule["days"][d]
        .as_object()
        .unwrap()
        .values()
        .map(|e| {
            // As numbers: the page sends 19 where the thermostat sent 19.0.
            let c = |f: &str| json!(e[f].as_f64());
            let temp = if e["type"] == "RANGE" {
                json!([c("temp-min"), c("temp-max")])
            } else {
                c("temp")
            };
            json!([e["time"], temp, e["entry_type"]])
        })
        .collect();
    entries.sort_by_key(|e| e[0].as_i64());
    entries
}

/// "Add a thermostat": the address to use, a scan of a network, and "Point here" with the
/// thermostat's key when it asks for one.
pub fn setup_panel(b: &Browser, app: &App, fake: &SettingsApi, shots: bool) {
    b.js("window.scrollTo(0, 0); return true");
    b.click("#setup > summary");
    let url = b.wait_for(
        "the address thermostats use",
        "return document.getElementById('register-url').value",
    );
    assert_eq!(url, json!(app.origin().cloud_register_url()));
    // The test's device port listens on 127.0.0.1 only: the panel says no thermostat can reach it.
    let warning = b.js(
        "const w = document.getElementById('register-url-warning'); return !w.hidden && w.textContent",
    );
    assert!(
        warning.as_str().is_some_and(|w| w.starts_with(
            "hearth's device port listens only on 127.0.0.1 (SERVER_HOST), so no thermostat can reach it"
        )),
        "{warning}"
    );
    b.type_into("#scan-subnet", "127.77.90.0/24");
    b.click("#scan-button");
    b.wait_for(
        "the thermostat the scan found",
        "return !!document.querySelector('#scan-results li[data-ip=\"127.77.90.5\"]')",
    );
    let row = "#scan-results li[data-ip='127.77.90.5']";
    assert!(text_of(b, row).contains("Points elsewhere: https://backdoor.nolongerevil.com/entry"));
    assert!(text_of(b, "#scan-status").contains("1 thermostat found in 127.77.90.0/24"));

    // It has been on for over 30 minutes: it wants its key, and the page asks for it.
    b.click("button[aria-label='Point 127.77.90.5 here']");
    b.wait_for(
        "the thermostat's key form",
        &format!("return !!document.querySelector(\"{row} form input[type=password]\")"),
    );
    assert!(text_of(b, &format!("{row} .result.error")).contains("API key"));
    assert_eq!(
        fake.settings().cloudregisterurl.as_deref(),
        Some("https://backdoor.nolongerevil.com/entry")
    );
    b.type_into(&format!("{row} form input[type=password]"), FAKE_KEY);
    if shots {
        screenshots(b, "#setup", "setup");
    }
    b.click(&format!("{row} form button[type=submit]"));
    b.wait_for(
        "the thermostat pointed here",
        &format!(
            "return document.querySelector(\"{row} .result\").textContent.includes('now registers at')"
        ),
    );
    assert_eq!(
        fake.settings().cloudregisterurl,
        Some(app.origin().cloud_register_url())
    );
    assert_eq!(text_of(b, &format!("{row} .ok-text")), "Points here");
    b.click("#setup > summary");
}

/// Save, and wait until the page says the thermostat has it.
fn save_schedule(b: &Browser, serial: &str) {
    b.click(&format!("#schedule-save-{serial}"));
    b.wait_for(
        "the saved message",
        &format!(
            "return document.getElementById('schedule-status-{serial}').textContent === 'Saved, sent to the thermostat.'"
        ),
    );
}

/// Clicks the conflict warning's button with this text.
fn choose(b: &Browser, serial: &str, button: &str) {
    b.js(&format!(
        "[...document.querySelectorAll('#card-{serial} .banner button')].find((x) => x.textContent === {}).click(); return true",
        js_str(button)
    ));
}

/// Opens the schedule and waits for the editor it loads (one from an earlier opening stays on
/// show until the stored schedule comes back, then is replaced).
fn open_schedule(b: &Browser, serial: &str) {
    b.js(&format!(
        "const s = document.getElementById('schedule-save-{serial}'); if (s) s.dataset.before = '1'; return true"
    ));
    b.click(&format!("#schedule-open-{serial}"));
    b.wait_for(
        "the schedule editor",
        &format!(
            "const s = document.getElementById('schedule-save-{serial}'); return !!s && !s.dataset.before"
        ),
    );
}

fn close_schedule(b: &Browser, serial: &str) {
    b.click(&format!("#schedule-close-{serial}"));
}

const UP: &str = "\u{E013}";
const DOWN: &str = "\u{E015}";
const LEFT: &str = "\u{E012}";

/// Puts the focus on the schedule's handle named `label` (its day, time and temperature).
fn focus_handle(b: &Browser, label: &str) {
    let found = b.js(&format!(
        "const h = [...document.querySelectorAll('dialog:modal [role=slider]')].find((x) => x.getAttribute('aria-label') === {});
         if (h) h.focus(); return !!h",
        js_str(label)
    ));
    assert_eq!(found, json!(true), "no handle {label}");
}

fn focused(b: &Browser) -> String {
    b.js("return document.activeElement.getAttribute('aria-label') || ''")
        .as_str()
        .unwrap()
        .to_string()
}

/// Presses `key` on the focused handle until its name is `want` (at most 80 times).
fn press_until(b: &Browser, key: &str, want: &str) {
    for _ in 0..80 {
        if focused(b) == want {
            return;
        }
        b.press(key);
    }
    assert_eq!(focused(b), want);
}

/// The schedule editor on the test's °C thermostat: add, change, remove, copy, save (pushed to
/// the thermostat), a check before sending, a refusal from the server, and a change from
/// elsewhere while the edit is open. (Dragging, tapping and the pictures: schedule.rs.)
pub fn schedule_editor(b: &Browser, app: &App, control: SocketAddr, sim: &TestThermostat) {
    let s = TEST_SERIAL;
    let card = format!("#card-{s}");
    // With the settings open and the editor over them, every control is named, readable and
    // reachable.
    b.click(&format!("{card} details.more > summary"));
    open_schedule(b, s);
    let labels = b.js(&format!("{}{}", super::SHOWN, super::UNLABELLED));
    assert!(labels["total"].as_i64().unwrap() >= 60, "{labels}");
    assert_eq!(labels["unlabelled"], json!([]), "{labels}");
    let contrast = b.js(super::LOW_CONTRAST);
    assert_eq!(contrast["bad"], json!([]), "{contrast}");
    assert_eq!(super::unreachable_by_tab(b), Vec::<String>::new());
    close_schedule(b, s);
    b.click(&format!("{card} details.more > summary"));
    open_schedule(b, s);
    // Everything the page sends from here on is counted, so "nothing was sent" can fail.
    b.js("if (!window.__sent) { window.__sent = 0; const f = window.fetch;
          window.fetch = (url, o) => { if (o && o.method && o.method !== 'GET') window.__sent++; return f(url, o); }; }
          return true");
    let monday = text_of(b, &format!("{card} section[data-day='0']"));
    assert!(
        monday.contains(&b.clock("00:00 19.0°C, carried over from Sunday")),
        "{monday}"
    );

    // Add on Tuesday, then move it to 12:30 and 22.5 °C.
    b.click(&format!("{card} section[data-day='1'] .wk-day"));
    b.click("button[aria-label='Add a setpoint on Tuesday to Test Room']");
    assert_eq!(focused(b), b.clock("Tuesday 23:00, 19.0°C"));
    press_until(b, LEFT, &b.clock("Tuesday 12:30, 19.0°C"));
    press_until(b, UP, &b.clock("Tuesday 12:30, 22.5°C"));
    // Change Monday's 07:00, remove Wednesday's 22:00, copy Tuesday to Thursday and Friday.
    focus_handle(b, &b.clock("Monday 07:00, 21.0°C"));
    b.press(DOWN);
    assert_eq!(focused(b), b.clock("Monday 07:00, 20.5°C"));
    b.click(&b.clock(&format!(
        "{card} [role=slider][aria-label='Wednesday 22:00, 19.0°C']"
    )));
    b.click(&b.clock("button[aria-label='Remove 22:00 on Wednesday from Test Room']"));
    b.click(&format!("{card} section[data-day='1'] .wk-day"));
    b.click("button[aria-label='Copy Tuesday of Test Room to other days']");
    b.click(&format!("#copy-{s}-1-3"));
    b.click(&format!("#copy-{s}-1-4"));
    b.click("button[aria-label='Copy Tuesday to the chosen days']");
    assert!(
        text_of(b, &format!("#schedule-status-{s}")).contains("Copied Tuesday to Thursday, Friday")
    );

    // Checked before sending: a setpoint above the limits the page was given (a thermostat
    // whose safety bound moved) is named, its handle focused, and nothing is sent.
    let (before, _) = stored(app, s, "schedule");
    let sent = b.js("return window.__sent");
    b.js(&format!(
        "cards.get('{s}').ed.limits.high = 22; return true"
    ));
    b.click(&format!("#schedule-save-{s}"));
    let problem = b.wait_for(
        "the check's message",
        &format!("return document.getElementById('schedule-error-{s}').textContent"),
    );
    assert!(
        problem.as_str().unwrap().contains(
            &b.clock("Tuesday 12:30: 22.5°C is above the highest this thermostat allows, 22.0°C")
        ),
        "{problem}"
    );
    assert_eq!(focused(b), b.clock("Tuesday 12:30, 22.5°C"));
    assert_eq!(b.js("return window.__sent"), sent);
    assert_eq!(stored(app, s, "schedule").0, before);
    // Fixed, the problem leaves the list.
    b.js(&format!(
        "cards.get('{s}').ed.limits.high = 32; return true"
    ));
    b.press(DOWN);
    b.press(UP);
    assert_eq!(focused(b), b.clock("Tuesday 12:30, 22.5°C"));
    assert_eq!(text_of(b, &format!("#schedule-error-{s}")), "");

    // Save: the whole schedule, durable and pushed to the thermostat's held subscribe.
    b.click(&format!("#schedule-save-{s}"));
    sim.expect_pushed("schedule", "days");
    b.wait_for(
        "the saved message",
        &format!(
            "return document.getElementById('schedule-status-{s}').textContent === 'Saved, sent to the thermostat.'"
        ),
    );
    let (_, schedule) = stored(app, s, "schedule");
    let carried = json!([0, 19.0, "continuation"]);
    let tuesday = vec![
        carried.clone(),
        json!([25200, 21.0, "setpoint"]),
        json!([45000, 22.5, "setpoint"]),
        json!([79200, 19.0, "setpoint"]),
    ];
    assert_eq!(day(&schedule, "1"), tuesday);
    assert_eq!(day(&schedule, "4"), tuesday);
    // Each carried-over entry follows the day before: Wednesday now ends at 07:00's 21.0.
    let mut thursday = tuesday.clone();
    thursday[0] = json!([0, 21.0, "continuation"]);
    assert_eq!(day(&schedule, "3"), thursday);
    assert!(
        text_of(b, &format!("{card} section[data-day='3']"))
            .contains(&b.clock("00:00 21.0°C, carried over from Wednesday"))
    );
    assert_eq!(
        day(&schedule, "0"),
        vec![
            carried.clone(),
            json!([25200, 20.5, "setpoint"]),
            json!([79200, 19.0, "setpoint"])
        ]
    );
    assert_eq!(
        day(&schedule, "2"),
        vec![carried.clone(), json!([25200, 21.0, "setpoint"])]
    );

    // A refusal from the server is shown in words, and the edit stays. (The page keeps to the
    // same limit, so the test widens the page's copy of it, as a stale page would have.)
    let (before, _) = stored(app, s, "schedule");
    b.js(&format!(
        "cards.get('{s}').ed.limits.high = 40; return true"
    ));
    focus_handle(b, &b.clock("Monday 07:00, 20.5°C"));
    press_until(b, UP, &b.clock("Monday 07:00, 35.0°C"));
    b.click(&format!("#schedule-save-{s}"));
    let refusal = b.wait_for(
        "the server's refusal",
        &format!("return document.getElementById('schedule-error-{s}').textContent"),
    );
    assert_eq!(
        refusal,
        json!(
            "Not saved: Day 0 entry 1: temp 35 is outside 4.5–32 °C. Your changes are still here."
        )
    );
    focus_handle(b, &b.clock("Monday 07:00, 35.0°C"));
    assert_eq!(stored(app, s, "schedule").0, before);
    // Discard: what is stored comes back.
    b.click(&format!("#schedule-discard-{s}"));
    b.wait_for(
        "the stored schedule again",
        &b.clock("return !!document.querySelector(\"dialog:modal [role=slider][aria-label='Monday 07:00, 20.5°C']\")"),
    );

    // Changed elsewhere while the edit is open: said, and nothing is overwritten until the
    // person chooses.
    focus_handle(b, &b.clock("Monday 07:00, 20.5°C"));
    press_until(b, UP, &b.clock("Monday 07:00, 21.5°C"));
    let mut elsewhere = schedule.clone();
    elsewhere["days"]["6"] = json!({"0": {"time": 30600, "type": "HEAT", "temp": 18.0}});
    let r = command(control, s, "set_schedule", elsewhere);
    assert_eq!(r.status, 200, "{}", r.text());
    b.wait_for(
        "the conflict warning",
        &format!("return !document.querySelector('{card} .banner').hidden"),
    );
    assert!(text_of(b, &format!("{card} .banner")).contains("changed while you were editing"));
    let (changed, _) = stored(app, s, "schedule");
    b.click(&format!("#schedule-save-{s}"));
    b.wait_for(
        "the request to choose first",
        &format!("return document.getElementById('schedule-error-{s}').textContent.includes('first choose')"),
    );
    assert_eq!(stored(app, s, "schedule").0, changed);
    choose(b, s, "Keep my changes");
    save_schedule(b, s);
    let (_, schedule) = stored(app, s, "schedule");
    assert_eq!(day(&schedule, "0")[1], json!([25200, 21.5, "setpoint"]));
    assert_eq!(day(&schedule, "6").len(), 3, "the person chose their edit");

    // Or the person takes the thermostat's: the edit goes, what is stored comes back.
    focus_handle(b, &b.clock("Monday 07:00, 21.5°C"));
    press_until(b, DOWN, &b.clock("Monday 07:00, 18.0°C"));
    let mut elsewhere = schedule.clone();
    elsewhere["days"]["0"]["1"]["temp"] = json!(23.0);
    let r = command(control, s, "set_schedule", elsewhere);
    assert_eq!(r.status, 200, "{}", r.text());
    b.wait_for(
        "the conflict warning",
        &format!("return !document.querySelector('{card} .banner').hidden"),
    );
    choose(b, s, "Load the new schedule");
    b.wait_for(
        "the thermostat's schedule in the editor",
        &b.clock("return !!document.querySelector(\"dialog:modal [role=slider][aria-label='Monday 07:00, 23.0°C']\")"),
    );
    assert_eq!(
        day(&stored(app, s, "schedule").1, "0")[1],
        json!([25200, 23.0, "setpoint"])
    );

    // A change the page never heard of (its event stream was away) is still not overwritten:
    // the server refuses the save, and the page asks.
    b.js("window.scheduleChanged = () => {}; return true");
    focus_handle(b, &b.clock("Monday 07:00, 23.0°C"));
    press_until(b, DOWN, &b.clock("Monday 07:00, 18.0°C"));
    let (before, mut unseen) = stored(app, s, "schedule");
    unseen["days"]["0"]["1"]["temp"] = json!(24.0);
    assert_eq!(command(control, s, "set_schedule", unseen).status, 200);
    b.click(&format!("#schedule-save-{s}"));
    b.wait_for(
        "the conflict warning",
        &format!("return !document.querySelector('{card} .banner').hidden"),
    );
    let (after, kept) = stored(app, s, "schedule");
    assert!(after > before);
    assert_eq!(day(&kept, "0")[1], json!([25200, 24.0, "setpoint"]));
    close_schedule(b, s);
}

/// A °F thermostat edits in °F and stores Celsius on hearth's 0.5 °C grid; its eco
/// temperatures likewise. (Its fan, run from the card: `schedule.rs`.)
pub fn fahrenheit(b: &Browser, app: &App) {
    let s = BEDROOM;
    let card = format!("#card-{s}");
    open_schedule(b, s);
    b.click(&format!("{card} section[data-day='4'] .wk-day"));
    b.click("button[aria-label='Add a setpoint on Friday to Bedroom']");
    assert!(
        focused(b).starts_with(&b.clock("Friday 23:00, ")),
        "{}",
        focused(b)
    );
    let now: f64 = focused(b)[b.clock("Friday 23:00, ").len()..]
        .trim_end_matches("°F")
        .parse()
        .unwrap();
    let up = now < 68.0;
    press_until(
        b,
        if up { UP } else { DOWN },
        &b.clock("Friday 23:00, 68°F"),
    );
    focus_handle(b, &b.clock("Saturday 07:00, 74°F"));
    press_until(b, DOWN, &b.clock("Saturday 07:00, 71°F"));
    save_schedule(b, s);
    let (_, schedule) = stored(app, s, "schedule");
    let friday = day(&schedule, "4");
    assert_eq!(friday.last().unwrap(), &json!([82800, 20.0, "setpoint"]));
    // Entries nobody touched keep their stored Celsius exactly; 71 °F is 21.67 °C, stored on
    // the 0.5 °C grid as 21.5 (70.7 °F, shown as 71 again).
    assert_eq!(friday[1], json!([25200, 23.5, "setpoint"]));
    assert_eq!(day(&schedule, "5")[1], json!([25200, 21.5, "setpoint"]));
    close_schedule(b, s);

    b.click(&format!("{card} details.more > summary"));
    set_input(b, &format!("#eco-low-{s}"), "50");
    set_input(b, &format!("#eco-high-{s}"), "80");
    b.click("button[aria-label='Save eco temperatures of Bedroom']");
    b.wait_for(
        "the eco temperatures saved",
        &format!("return document.getElementById('eco-note-{s}').textContent.startsWith('Eco temperatures saved')"),
    );
    assert_eq!(
        record(app, s)["eco_temperatures"],
        json!({"low": 10.0, "high": 26.5})
    );

    b.click(&format!("{card} details.more > summary"));
}

/// The temperature lock (only a hash leaves the page) and renaming, on the test's thermostat.
pub fn lock_and_rename(b: &Browser, app: &App, shots: bool) {
    let s = TEST_SERIAL;
    let card = format!("#card-{s}");
    b.click(&format!("{card} details.more > summary"));
    b.type_into(&format!("#lock-pin-{s}"), "12a");
    b.click("button[aria-label='Lock the temperature of Test Room']");
    b.wait_for(
        "the PIN's format",
        &format!("return document.getElementById('lock-error-{s}').textContent === 'The PIN is 4 digits.'"),
    );
    assert_eq!(record(app, s)["temperature_lock"]["enabled"], json!(false));
    b.type_into(&format!("#lock-pin-{s}"), "1234");
    set_input(b, &format!("#lock-low-{s}"), "18");
    set_input(b, &format!("#lock-high-{s}"), "24");
    // Each label stays beside its field at a phone's width.
    b.as_phone();
    let apart = b.js(&format!(
        "return ['lock-pin', 'lock-low', 'lock-high'].filter((f) => {{
           const input = document.getElementById(f + '-{s}');
           const label = document.querySelector('label[for=\"' + input.id + '\"]').getBoundingClientRect();
           const box = input.getBoundingClientRect();
           return Math.abs((label.top + label.bottom) - (box.top + box.bottom)) > 4;
         }})"
    ));
    assert_eq!(apart, json!([]), "labels on another line than their fields");
    if shots {
        scroll_to(b, &format!("#lock-pin-{s}"));
        b.screenshot("settings-lock-360.png");
    }
    b.viewport(1280, 900, false);
    b.click("button[aria-label='Lock the temperature of Test Room']");
    b.wait_for(
        "the lock on",
        &format!(
            "return document.getElementById('lock-note-{s}').textContent.startsWith('Locked to')"
        ),
    );
    let hash = base64::engine::general_purpose::STANDARD
        .encode(Sha1::digest(format!("1234{s}").as_bytes()));
    let (_, device) = stored(app, s, "device");
    assert_eq!(device["temperature_lock_pin_hash"], json!(hash));
    assert_eq!(
        record(app, s)["temperature_lock"],
        json!({"enabled": true, "low": 18.0, "high": 24.0})
    );
    b.wait_for(
        "the unlock button",
        "return !document.querySelector(\"button[aria-label='Unlock the temperature of Test Room']\").hidden",
    );
    // The battery, as every surface shows it (the simulated thermostat reports 3.93 V).
    b.wait_for(
        "the battery",
        &format!(
            "return document.getElementById('battery-{s}').textContent.startsWith('Battery 86%')"
        ),
    );
    if shots {
        screenshots(b, &format!("{card} details.more"), "settings");
        b.dark(true);
        screenshots(b, &format!("{card} details.more"), "settings-dark");
        b.dark(false);
    }
    b.click("button[aria-label='Unlock the temperature of Test Room']");
    b.wait_for(
        "the lock off",
        &format!("return document.getElementById('lock-note-{s}').textContent === 'Temperature lock off.'"),
    );
    assert_eq!(record(app, s)["temperature_lock"]["enabled"], json!(false));

    set_input(b, &format!("#rename-{s}"), "Den");
    b.click("button[aria-label='Rename Test Room']");
    b.wait_for(
        "the new name on the card",
        &format!("return document.getElementById('name-{s}').textContent === 'Den'"),
    );
    assert_eq!(record(app, s)["name"], json!("Den"));
    b.click(&format!("{card} details.more > summary"));
}

/// Remove, behind its confirmation: the card goes, the thermostat is nobody's (its state kept),
/// and it waits under "Waiting to be added" until Add gives it back; a thermostat that boots
/// afresh then has its card back too (tests/it/dashboard/removal.rs: one that kept running).
pub fn remove_and_add_back(b: &Browser, app: &App, sim: TestThermostat, device_origin: &str) {
    let s = TEST_SERIAL;
    let card = format!("#card-{s}");
    b.click(&format!("{card} details.more > summary"));
    b.click("button[aria-label='Remove Den from hearth']");
    let warning = text_of(b, &format!("{card} .confirm"));
    assert!(
        warning.contains("keeps heating and cooling on its own settings"),
        "{warning}"
    );
    assert!(
        app.state().device_exists(s),
        "nothing happens before the confirmation"
    );
    b.click("button[aria-label='Yes, remove Den']");
    b.wait_for(
        "the card gone",
        &format!("return !document.getElementById('card-{s}')"),
    );
    assert!(text_of(b, "#notice").contains("Den was removed"));
    assert!(app.state().device_exists(s), "its state is kept");
    assert!(
        app.state()
            .accounts(|a| a.is_released(s) && a.owner_of(s).is_none())
    );
    drop(sim);

    b.js("window.scrollTo(0, 0); return true");
    b.click("#setup > summary");
    b.wait_for(
        "the thermostat waiting to be added",
        "return !!document.querySelector(\"button[aria-label='Add Den']\")",
    );
    b.click("button[aria-label='Add Den']");
    b.wait_for(
        "the thermostat added, by the name it kept",
        "return document.getElementById('notice').textContent === 'Den was added.'",
    );
    assert!(app.state().accounts(|a| !a.is_released(s)));
    b.wait_for(
        "an empty waiting list",
        "return document.getElementById('waiting-section').hidden",
    );
    let again = TestThermostat::start(device_origin);
    b.wait_for(
        "the card back",
        &format!("return !!document.querySelector('#card-{s} svg.chart')"),
    );
    drop(again);
    b.click("#setup > summary");
}
