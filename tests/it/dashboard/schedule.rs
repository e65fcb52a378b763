//! The schedule editor's small things and the fan, against `hearth demo` in a browser whose
//! locale writes times in 12 hours (en-US): days by name only, times typed and shown in 24
//! hours (text inputs, ↑/↓ by 15 minutes, a typo named in words), setpoints put back in order
//! once a time is entered without losing the place, and the fan run from the card alone, for a
//! chosen time.

use serde_json::{Value, json};

use super::browser::*;
use crate::common::*;
use hearth::Config;
use hearth::app::App;
use hearth::demo::Demo;

const HALLWAY: &str = "02AA01AC5100DE01";
const BEDROOM: &str = "02AA01AC5100DE03";
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

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

/// The times shown for one day of a card's editor, in the order shown.
fn times(b: &Browser, serial: &str, day: usize) -> Value {
    b.js(&format!(
        "return [...document.querySelectorAll('#card-{serial} section[data-day=\"{day}\"] li')]
           .map((li) => li.querySelector('input.time') ? li.querySelector('input.time').value : 'carried')"
    ))
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
const DOWN: &str = "\u{E015}";
const TAB: &str = "\u{E004}";
const ENTER: &str = "\u{E007}";

#[test]
fn the_schedule_in_24_hours_and_the_fan_on_the_card() {
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
    b.js("window.__sent = 0; const f = window.fetch;
          window.fetch = (url, o) => { if (o && o.method && o.method !== 'GET') window.__sent++; return f(url, o); };
          return true");

    // Days by their names; how the thermostat numbers them is for the docs.
    let card = format!("#card-{HALLWAY}");
    b.click(&format!("{card} details:not(.more) > summary"));
    b.wait_for(
        "the schedule editor",
        &format!("return !!document.getElementById('schedule-save-{HALLWAY}')"),
    );
    let headings = b.js(&format!(
        "return [...document.querySelectorAll('{card} section.day h4')].map((h) => h.textContent)"
    ));
    assert_eq!(headings, json!(DAYS));
    let editor = b.js(&format!(
        "return document.querySelector('{card} .editor').textContent"
    ));
    let editor = editor.as_str().unwrap();
    assert!(
        !editor.contains("Day 0") && !editor.contains("(0)"),
        "{editor}"
    );
    assert!(editor.contains("Times are 24-hour"), "{editor}");

    // Times in 24 hours whatever the locale: text inputs, never the browser's time picker.
    let kinds = b.js(&format!(
        "return [...new Set([...document.querySelectorAll('{card} .editor input')].map((i) => i.type))]"
    ));
    assert!(
        !kinds.as_array().unwrap().contains(&json!("time")),
        "{kinds}"
    );
    assert_eq!(times(&b, HALLWAY, 0), json!(["carried", "07:00", "22:00"]));

    // Monday's 22:00 typed as 5:30, then Tab: written out in full, put first, and the focus
    // goes on to the same setpoint's temperature.
    let monday_22 = format!("{card} input[aria-label='Time of the 22:00 setpoint on Monday']");
    b.type_into(&monday_22, "5:30");
    b.press(TAB);
    b.wait_for(
        "Monday in order",
        &format!(
            "return [...document.querySelectorAll('{card} section[data-day=\"0\"] input.time')].map((i) => i.value).join() === '05:30,07:00'"
        ),
    );
    assert_eq!(
        focused_label(&b),
        json!("Temperature at 05:30 on Monday, °C")
    );
    // The arrow keys step by 15 minutes.
    b.click(&format!(
        "{card} input[aria-label='Time of the 05:30 setpoint on Monday']"
    ));
    b.press(&format!("{DOWN}{DOWN}{UP}"));
    assert_eq!(times(&b, HALLWAY, 0), json!(["carried", "05:15", "07:00"]));
    assert_eq!(
        focused_label(&b),
        json!("Time of the 05:15 setpoint on Monday")
    );
    assert_eq!(
        b.js("const i = document.activeElement; return [i.getAttribute('role'), i.getAttribute('aria-valuetext'), i.getAttribute('aria-valuenow')]"),
        json!(["spinbutton", "05:15", "315"])
    );

    // Tuesday's 07:00 typed as 2300, then Enter: put last, the focus staying on it.
    b.type_into(
        &format!("{card} input[aria-label='Time of the 07:00 setpoint on Tuesday']"),
        &format!("2300{ENTER}"),
    );
    assert_eq!(times(&b, HALLWAY, 1), json!(["carried", "22:00", "23:00"]));
    assert_eq!(
        focused_label(&b),
        json!("Time of the 23:00 setpoint on Tuesday")
    );

    // A time that is no time is named in words on Save, marked, focused, and nothing is sent.
    let (before, _) = stored_day(app, HALLWAY, "0");
    let sent = b.js("return window.__sent");
    let wednesday = format!("{card} section[data-day='2'] li:nth-child(2) input.time");
    b.type_into(&wednesday, "25:00");
    b.click(&format!("#schedule-save-{HALLWAY}"));
    let problem = b.wait_for(
        "the check's message",
        &format!("return document.getElementById('schedule-error-{HALLWAY}').textContent"),
    );
    assert!(
        problem.as_str().unwrap().contains(
            "Wednesday: \"25:00\" is not a time; enter one from 00:00 to 23:59, such as 07:30."
        ),
        "{problem}"
    );
    assert_eq!(
        b.js(&format!(
            "const i = document.querySelector(\"{wednesday}\"); return [i === document.activeElement, i.getAttribute('aria-invalid')]"
        )),
        json!([true, "true"])
    );
    assert_eq!(b.js("return window.__sent"), sent);
    assert_eq!(stored_day(app, HALLWAY, "0").0, before);
    b.type_into(&wednesday, "7:00");
    b.press(TAB);
    assert_eq!(text(&b, &format!("schedule-error-{HALLWAY}")), "");

    // Every control of the open editor is named and reachable.
    let labels = b.js(&format!("{}{}", super::SHOWN, super::UNLABELLED));
    assert_eq!(labels["unlabelled"], json!([]), "{labels}");
    assert_eq!(super::unreachable_by_tab(&b), Vec::<String>::new());

    // Saved in order.
    b.click(&format!("#schedule-save-{HALLWAY}"));
    b.wait_for(
        "the saved message",
        &format!(
            "return document.getElementById('schedule-status-{HALLWAY}').textContent === 'Saved, and sent to the thermostat.'"
        ),
    );
    assert_eq!(
        stored_day(app, HALLWAY, "0").1,
        vec![(0, 17.0), (18_900, 17.0), (25_200, 20.5)]
    );
    assert_eq!(
        stored_day(app, HALLWAY, "1").1,
        vec![(0, 20.5), (79_200, 17.0), (82_800, 20.5)]
    );
    b.click(&format!("{card} details:not(.more) > summary"));

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
