//! The week schedule by hand, in a browser at a phone's width: handles dragged by a finger,
//! a setpoint tapped in, the same by keyboard, a day copied to the others, each saved as one
//! `set_schedule` the simulated thermostat is sent; today and now marked; nothing behind the
//! editor moving when it opens. And the fan run from the card alone, for a chosen time.

use serde_json::{Value, json};

use super::browser::*;
use crate::common::*;
use hearth::Config;
use hearth::app::App;
use hearth::demo::Demo;

const HALLWAY: &str = "02AA01AC5100DE01";
const BEDROOM: &str = "02AA01AC5100DE03";
fn record(app: &App, serial: &str) -> Value {
    hearth::control::status::record(app, serial).unwrap()
}

/// The stored schedule's revision and one day as `(time, temp)` in the order stored.
fn stored_day(app: &App, serial: &str, day: &str) -> (i64, Vec<(i64, f64)>) {
    let key = format!("schedule.{serial}");
    let (revision, value) = app
        .state()
        .read_device(serial, |d| {
            d.buckets
                .get(&key)
                .map(|b| (b.revision, Value::Object(b.value.to_map())))
        })
        .flatten()
        .unwrap();
    let entries: Vec<Value> = match &value["days"][day] {
        Value::Array(list) => list.clone(),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by_key(|k| k.parse::<usize>().unwrap_or(usize::MAX));
            keys.into_iter().map(|k| map[k].clone()).collect()
        }
        other => panic!("day {day}: {other}"),
    };
    let list = entries
        .iter()
        .map(|e| (e["time"].as_i64().unwrap(), e["temp"].as_f64().unwrap()))
        .collect();
    (revision, list)
}

fn focused_label(b: &Browser) -> Value {
    b.js("return document.activeElement.getAttribute('aria-label')")
}

fn text(b: &Browser, id: &str) -> String {
    b.js(&format!(
        "const e = document.getElementById('{id}'); return e ? e.textContent : ''"
    ))
    .as_str()
    .unwrap()
    .to_string()
}

const UP: &str = "\u{E013}";
const LEFT: &str = "\u{E012}";
const RIGHT: &str = "\u{E014}";
const DELETE: &str = "\u{E017}";
const ENTER: &str = "\u{E007}";

/// The week the test's thermostat starts with: every day 08:00 at 21.0 and 22:00 at 17.0.
fn a_plain_week() -> Value {
    let days: serde_json::Map<String, Value> = (0..7)
        .map(|d| {
            (
                d.to_string(),
                json!([
                    {"time": 0, "type": "HEAT", "temp": 17.0, "entry_type": "continuation"},
                    {"time": 28_800, "type": "HEAT", "temp": 21.0, "entry_type": "setpoint"},
                    {"time": 79_200, "type": "HEAT", "temp": 17.0, "entry_type": "setpoint"},
                ]),
            )
        })
        .collect();
    json!({"ver": 2, "name": "Week", "schedule_mode": "HEAT", "days": days})
}

/// One day's setpoints as stored, `(time, temp)`, without the carried-over entry.
fn setpoints(app: &App, day: &str) -> Vec<(i64, f64)> {
    let (_, list) = stored_day(app, TEST_SERIAL, day);
    list.into_iter().filter(|(t, _)| *t != 0).collect()
}

/// A handle's centre, and its row's box: `[x, y, left, top, width, height]`.
fn handle_at(b: &Browser, label: &str) -> Vec<f64> {
    let v = b.js(&format!(
        "const h = [...document.querySelectorAll('[role=slider]')].find((x) => x.getAttribute('aria-label') === {label:?});
         if (!h) return null;
         const r = h.getBoundingClientRect(), t = h.parentElement.getBoundingClientRect();
         return [r.left + r.width / 2, r.top + r.height / 2, t.left, t.top, t.width, t.height]"
    ));
    v.as_array()
        .unwrap_or_else(|| panic!("no handle {label}"))
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// The set_schedule commands the page has sent.
fn sent_schedules(b: &Browser) -> i64 {
    b.js("return window.__commands.filter((c) => c.command === 'set_schedule').length")
        .as_i64()
        .unwrap()
}

/// The page and the open dialog are no wider than the screen.
fn no_sideways_scroll(b: &Browser, serial: &str) {
    let widths = b.js(&format!(
        "const d = document.getElementById('schedule-{serial}');
         return [document.documentElement.scrollWidth, window.innerWidth, d.scrollWidth, d.clientWidth]"
    ));
    let w: Vec<i64> = widths
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert!(w[0] <= w[1] && w[2] <= w[3], "sideways scroll: {widths}");
}

/// Saves, waits for the page to say so and for the thermostat to be sent the stored schedule.
fn save_and_see_it_sent(b: &Browser, app: &App, sim: &TestThermostat) {
    let (before, _) = stored_day(app, TEST_SERIAL, "0");
    let sent = sent_schedules(b);
    b.click(&format!("#schedule-save-{TEST_SERIAL}"));
    b.wait_for(
        "the saved message",
        &format!(
            "return document.getElementById('schedule-status-{TEST_SERIAL}').textContent === 'Saved, sent to the thermostat.'"
        ),
    );
    let (after, _) = stored_day(app, TEST_SERIAL, "0");
    // One set_schedule from the page, one write on the server, and the thermostat has it.
    assert_eq!(sent_schedules(b), sent + 1);
    assert_eq!(after, before + 1, "one write of the schedule");
    let key = format!("schedule.{TEST_SERIAL}");
    expect_event(
        &sim.events,
        "the new schedule pushed",
        |e| matches!(e, hearth::simulator::Event::Pushed { key: k, revision, .. } if *k == key && *revision == after),
    );
}

/// The week by hand, at a phone's 360 px: a setpoint dragged by a finger from 22:00 to 22:30
/// and a 07:00 tapped in, saved as one set_schedule that reaches the thermostat; the same by
/// keyboard; a day copied to the other six; today marked, a line at now; nothing behind the
/// dialog moves when it opens.
#[test]
fn a_week_by_hand() {
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
    let r = command(s.control(), TEST_SERIAL, "set_schedule", a_plain_week());
    assert_eq!(r.status, 200, "{}", r.text());
    b.goto(&format!("http://{}/", s.control()));
    let card = format!("#card-{TEST_SERIAL}");
    b.wait_for(
        "the card",
        &format!("return !!document.querySelector('{card} svg.chart')"),
    );
    b.as_phone();
    b.js("window.__commands = []; const f = window.fetch;
          window.fetch = (url, o) => { if (o && o.body && String(url).endsWith('command')) window.__commands.push(JSON.parse(o.body)); return f(url, o); };
          window.__shifts = [];
          new PerformanceObserver((l) => window.__shifts.push(...l.getEntries())).observe({type: 'layout-shift', buffered: true});
          return true");
    b.painted();

    // Opening: everything on the page stays where it was, and no layout shift is recorded.
    let boxes = "return [...document.querySelectorAll('header, main > *, .card, .card > *')]
                   .map((e) => { const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height].join(); })";
    let before = b.js(boxes);
    let shifts = b.js("return window.__shifts.length");
    b.click(&format!("#schedule-open-{TEST_SERIAL}"));
    b.wait_for(
        "the schedule editor",
        &format!("return !!document.getElementById('schedule-save-{TEST_SERIAL}')"),
    );
    b.painted();
    assert_eq!(
        b.js(boxes),
        before,
        "something moved when the schedule opened"
    );
    assert_eq!(b.js("return window.__shifts.length"), shifts);
    no_sideways_scroll(&b, TEST_SERIAL);
    // Every control and every handle is named and reached with Tab.
    let labels = b.js(&format!("{}{}", super::SHOWN, super::UNLABELLED));
    assert_eq!(labels["unlabelled"], json!([]), "{labels}");
    assert_eq!(super::unreachable_by_tab(&b), Vec::<String>::new());
    assert_eq!(
        b.js("return [...document.querySelectorAll('dialog:modal [role=slider]')].filter((h) => !window.__reached.has(h) || !h.getAttribute('aria-label')).map((h) => h.outerHTML)"),
        json!([])
    );

    // Today and now are the structure's, as the server says (asked after the page drew the
    // week, so a midnight in between leaves the page a day behind).
    let now =
        get(s.control(), &format!("/api/schedule?serial={TEST_SERIAL}")).json()["now"].clone();
    let today = b.js("const r = document.querySelector('.wk-row.today'); return r ? [r.dataset.day, !!r.querySelector('.wk-now')] : null");
    let day = now["day"].as_i64().unwrap();
    assert!(
        today == json!([day.to_string(), true])
            || today == json!([((day + 6) % 7).to_string(), true]),
        "{today} vs {now}"
    );
    // A handle per setpoint, named with its day, time and temperature; the carried-over
    // entry said, not a handle.
    let monday = b.js("return [...document.querySelectorAll('.wk-row[data-day=\"0\"] [role=slider]')].map((h) => h.getAttribute('aria-label'))");
    assert_eq!(
        monday,
        json!([
            b.clock("Monday 08:00, 21.0°C"),
            b.clock("Monday 22:00, 17.0°C")
        ])
    );
    assert!(
        b.js("return document.querySelector('.wk-row[data-day=\"0\"]').textContent")
            .as_str()
            .unwrap()
            .contains(&b.clock("00:00 17.0°C, carried over from Sunday"))
    );

    // By finger: Monday's 22:00 dragged half an hour on, and 07:00 tapped in.
    let h = handle_at(&b, &b.clock("Monday 22:00, 17.0°C"));
    let step = h[4] / 96.0;
    b.drag(
        "touch",
        &[(h[0], h[1]), (h[0] + step, h[1]), (h[0] + 2.0 * step, h[1])],
    );
    b.wait_for(
        "the setpoint at 22:30",
        &b.clock(
            "return !!document.querySelector('[role=slider][aria-label=\"Monday 22:30, 17.0°C\"]')",
        ),
    );
    // A height of Monday's row at 07:00 that no handle covers.
    let x = h[2] + h[4] * 7.0 / 24.0;
    let y = [0.94, 0.06, 0.5]
        .iter()
        .map(|f| h[3] + h[5] * f)
        .find(|y| {
            b.js(&format!(
                "return document.elementFromPoint({}, {}).closest('.wk-track') !== null
                   && !document.elementFromPoint({}, {}).closest('.wk-handle')",
                x.round(),
                y.round(),
                x.round(),
                y.round()
            )) == json!(true)
        })
        .expect("an empty place at 07:00");
    b.drag("touch", &[(x, y)]);
    let added = b.wait_for(
        "the tapped setpoint",
        &b.clock("const h = document.activeElement; return h.getAttribute('role') === 'slider' && h.getAttribute('aria-label').startsWith('Monday 07:00') && h.getAttribute('aria-label')"),
    );
    assert!(
        added
            .as_str()
            .unwrap()
            .starts_with(&b.clock("Monday 07:00, ")),
        "{added}"
    );
    no_sideways_scroll(&b, TEST_SERIAL);
    save_and_see_it_sent(&b, app, &sim);
    let monday = setpoints(app, "0");
    assert_eq!(monday.len(), 3, "{monday:?}");
    assert_eq!(monday[0].0, 25_200);
    assert!((4.5..=32.0).contains(&monday[0].1), "{monday:?}");
    assert_eq!(&monday[1..], &[(28_800, 21.0), (81_000, 17.0)]);

    // By keyboard: Tuesday's 22:00 to 22:30 and half a degree up, a setpoint added and moved
    // to 07:00, 08:00 removed.
    super::tab_to(&b, &b.clock("Tuesday 22:00, 17.0°C"));
    b.press(&format!("{RIGHT}{RIGHT}{UP}"));
    assert_eq!(focused_label(&b), json!(b.clock("Tuesday 22:30, 17.5°C")));
    let tuesday = b.js("return document.querySelector('.wk-row[data-day=\"1\"] .wk-day').getAttribute('aria-label')");
    super::tab_to(&b, tuesday.as_str().unwrap());
    b.press(ENTER);
    super::tab_to(&b, "Add a setpoint on Tuesday to Test Room");
    b.press(ENTER);
    assert_eq!(focused_label(&b), json!(b.clock("Tuesday 23:30, 17.5°C")));
    for _ in 0..100 {
        if focused_label(&b) == json!(b.clock("Tuesday 07:00, 17.5°C")) {
            break;
        }
        b.press(LEFT);
    }
    assert_eq!(focused_label(&b), json!(b.clock("Tuesday 07:00, 17.5°C")));
    b.press(&format!("{UP}{UP}"));
    super::tab_to(&b, &b.clock("Tuesday 08:00, 21.0°C"));
    b.press(DELETE);
    super::tab_to(&b, "Save the schedule of Test Room");
    let sent = sent_schedules(&b);
    b.press(ENTER);
    b.wait_for(
        "the saved message",
        &format!(
            "return document.getElementById('schedule-status-{TEST_SERIAL}').textContent === 'Saved, sent to the thermostat.'"
        ),
    );
    assert_eq!(sent_schedules(&b), sent + 1);
    assert_eq!(setpoints(app, "1"), vec![(25_200, 18.5), (81_000, 17.5)]);
    let key = format!("schedule.{TEST_SERIAL}");
    let (revision, _) = stored_day(app, TEST_SERIAL, "1");
    expect_event(
        &sim.events,
        "the keyboard's schedule pushed",
        |e| matches!(e, hearth::simulator::Event::Pushed { key: k, revision: r, .. } if *k == key && *r == revision),
    );

    // The selected setpoint's Remove button; then the pictures, at 360 and 1280, light and dark.
    b.click(&b.clock("[role=slider][aria-label='Wednesday 08:00, 21.0°C']"));
    b.click(&b.clock("button[aria-label='Remove 08:00 on Wednesday from Test Room']"));
    assert_eq!(
        b.js("return document.querySelectorAll('.wk-row[data-day=\"2\"] [role=slider]').length"),
        json!(1)
    );
    b.js(&b.clock("[...document.querySelectorAll('[role=slider]')].find((h) => h.getAttribute('aria-label').startsWith('Monday 07:00')).focus(); return true"));
    b.press(ENTER);
    b.js(&format!(
        "document.getElementById('schedule-{TEST_SERIAL}').scrollTop = 0; return true"
    ));
    b.painted();
    b.screenshot("schedule-360.png");
    let contrast = b.js(super::LOW_CONTRAST);
    assert_eq!(contrast["bad"], json!([]), "{contrast}");
    b.dark(true);
    b.screenshot("schedule-360-dark.png");
    let contrast = b.js(super::LOW_CONTRAST);
    assert_eq!(contrast["bad"], json!([]), "{contrast}");
    b.viewport(1280, 900, false);
    b.wait_for("the desktop's width", "return window.innerWidth === 1280");
    b.painted();
    b.screenshot("schedule-1280-dark.png");
    b.dark(false);
    b.screenshot("schedule-1280.png");
    b.as_phone();

    // Monday copied to the other six.
    b.click("button[aria-label='Copy Monday of Test Room to other days']");
    b.click("button[aria-label='Copy Monday to every other day']");
    assert!(
        text(&b, &format!("schedule-status-{TEST_SERIAL}"))
            .contains("Copied Monday to every other day")
    );
    no_sideways_scroll(&b, TEST_SERIAL);
    save_and_see_it_sent(&b, app, &sim);
    let monday = setpoints(app, "0");
    for d in 1..7 {
        assert_eq!(setpoints(app, &d.to_string()), monday, "day {d}");
    }

    // A heat·cool schedule: two handles per setpoint, heat-to kept below cool-to; a mouse
    // drags as a finger does. Discarded, the stored schedule is back.
    b.js(&format!(
        "const m = document.getElementById('schedule-mode-{TEST_SERIAL}'); m.value = 'RANGE';
         m.dispatchEvent(new Event('change')); return true"
    ));
    let monday = b.js("return [...document.querySelectorAll('.wk-row[data-day=\"0\"] [role=slider]')].map((h) => h.getAttribute('aria-label'))");
    assert_eq!(monday[2], json!(b.clock("Monday 08:00, heat to 21.0°C")));
    assert_eq!(monday[3], json!(b.clock("Monday 08:00, cool to 24.0°C")));
    b.js(&format!(
        "document.getElementById('schedule-{TEST_SERIAL}').scrollTop = 0; return true"
    ));
    let h = handle_at(&b, &b.clock("Monday 08:00, heat to 21.0°C"));
    b.drag(
        "mouse",
        &[(h[0], h[1]), (h[0], h[1] - h[5] / 2.0), (h[0], h[1] - h[5])],
    );
    b.wait_for(
        "heat-to up against cool-to",
        &b.clock("return !!document.querySelector('[role=slider][aria-label=\"Monday 08:00, heat to 23.5°C\"]')"),
    );
    let h = handle_at(&b, &b.clock("Monday 08:00, cool to 24.0°C"));
    let step = h[4] / 96.0;
    b.drag(
        "mouse",
        &[(h[0], h[1]), (h[0] - step, h[1]), (h[0] - 2.0 * step, h[1])],
    );
    b.wait_for(
        "both ends at 07:30",
        &b.clock("return !!document.querySelector('[role=slider][aria-label=\"Monday 07:30, cool to 24.0°C\"]')
           && !!document.querySelector('[role=slider][aria-label=\"Monday 07:30, heat to 23.5°C\"]')"),
    );
    b.painted();
    b.screenshot("schedule-range-360.png");
    b.click(&format!("#schedule-discard-{TEST_SERIAL}"));
    b.wait_for(
        "the stored schedule again",
        &b.clock(
            "return !!document.querySelector('[role=slider][aria-label=\"Monday 08:00, 21.0°C\"]')",
        ),
    );

    // Closed: the page is as it was (the screenshots' changes of width moved it, so it is
    // counted again). A shift would have been seen: one made on purpose is.
    b.painted();
    let shifts = b.js("return window.__shifts.length");
    b.click(&format!("#schedule-close-{TEST_SERIAL}"));
    b.painted();
    assert_eq!(b.js("return window.__shifts.length"), shifts);
    b.js("document.querySelector('main').prepend(Object.assign(document.createElement('div'), {style: 'height: 80px'})); return true");
    b.wait_for(
        "the shift made on purpose",
        &format!("return window.__shifts.length > {shifts}"),
    );
    drop(b);
}

#[test]
fn the_fan_on_the_card() {
    let Some(b) = Browser::launch_with(&["--lang=en-US"]) else {
        return;
    };
    let dir = TempDir::new("demo-schedule");
    let mut config = Config::local(dir.path());
    config.api_origin = Some(hearth::config::ApiOrigin::parse("http://127.0.0.1").unwrap());
    share_process();
    let demo = Demo::start(config).expect("demo starts");
    let app = demo.server().app();
    b.goto(&format!("http://{}/", demo.server().control_addr()));
    b.wait_for(
        "three cards",
        "return document.querySelectorAll('.card').length === 3",
    );
    // The fan: run from the card for a chosen time; Settings has no second way to do it.
    assert_eq!(
        b.js(&format!(
            "return document.getElementById('fan-for-{HALLWAY}').closest('[hidden]') !== null"
        )),
        json!(true),
        "a thermostat with no fan shows no fan control"
    );
    let bedroom = format!("#card-{BEDROOM}");
    let settings = b.js(&format!(
        "return document.querySelector('{bedroom} .settings').textContent"
    ));
    assert!(
        !settings.as_str().unwrap().to_lowercase().contains("fan"),
        "{settings}"
    );
    // Until someone chooses, the thermostat's own fan timer duration.
    let own = record(app, BEDROOM)["fan_timer_duration"].to_string();
    assert_eq!(
        b.js(&format!(
            "const s = document.getElementById('fan-for-{BEDROOM}'); return [s.getAttribute('aria-label'), s.value]"
        )),
        json!(["How long the fan of Bedroom runs", own])
    );
    b.js(&format!(
        "const s = document.getElementById('fan-for-{BEDROOM}'); s.value = '1800'; s.dispatchEvent(new Event('change')); return true"
    ));
    b.click("button[aria-label='Fan on for Bedroom']");
    b.wait_for(
        "the fan running, and the card saying until when",
        &format!(
            "return document.getElementById('fan-{BEDROOM}').getAttribute('aria-pressed') === 'true'
               && document.getElementById('fan-note-{BEDROOM}').textContent.startsWith('until ')
               && getComputedStyle(document.getElementById('fan-for-{BEDROOM}')).visibility === 'hidden'"
        ),
    );
    let until = record(app, BEDROOM)["fan_timer_timeout"].as_i64().unwrap();
    let now = hearth::util::clock::now_ms() / 1000;
    assert!(
        (now + 1700..=now + 1800).contains(&until),
        "{until} vs {now}"
    );
    // Pressed again, the fan follows heating and cooling again.
    b.click("button[aria-label='Fan on for Bedroom']");
    b.wait_for(
        "the fan back on auto",
        &format!(
            "return document.getElementById('fan-{BEDROOM}').getAttribute('aria-pressed') === 'false'
               && getComputedStyle(document.getElementById('fan-for-{BEDROOM}')).visibility === 'visible'"
        ),
    );
    assert_eq!(record(app, BEDROOM)["fan_timer_active"], json!(false));
    drop(b);
    demo.stop();
}
