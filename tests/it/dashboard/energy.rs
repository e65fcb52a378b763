//! The Energy section of a card, in Chromium: three weeks of days written where the server keeps
//! them (`DATA_DIR/energy/SERIAL.days`, the format of docs/energy.md), read through
//! `/api/energy`, drawn as bars for 7 and 30 days and 12 months at one height at every width,
//! with labels that never touch; the period's totals, the period before's and the home's in
//! numbers that are the API's, and in words; the CSV fetched with the page's key, every control
//! named and reachable, readable in the dark.

use serde_json::{Value, json};

use super::browser::*;
use super::{LOW_CONTRAST, SHOWN, UNLABELLED, unreachable_by_tab};
use crate::common::*;
use hearth::Config;
use hearth::util::clock::ManualClock;

/// A second thermostat of the home, with two hours of heating a day for the last 20 days.
const OTHER: &str = "02AA01AC0000SIM2";

/// Days `1..=20` before today (UTC days, as the server counts them for a thermostat with no
/// time zone, and as the test's browser does): heating `k % 5 + 1` hours on day `k`, the fan a
/// quarter of it. The last 7 days (today, which has not heated, and days 1 to 6) heated
/// 2 + 3 + 4 + 5 + 1 + 2 = 17 h, the 7 before (7 to 13) 3 + 4 + 5 + 1 + 2 + 3 + 4 = 22 h: 5 h
/// less.
fn seed(dir: &std::path::Path) {
    let days: Vec<energy::SeedDay> = (1..=20)
        .rev()
        .map(|k: i64| {
            let heat_s = 3600 * (k % 5 + 1);
            energy::SeedDay {
                days_ago: k,
                heat_s,
                fan_s: heat_s / 4,
                target_changes: (k % 3) as u32,
                ..energy::SeedDay::default()
            }
        })
        .collect();
    energy::seed_days(dir, TEST_SERIAL, &days);
    let other: Vec<energy::SeedDay> = (1..=20)
        .rev()
        .map(|k| energy::SeedDay {
            days_ago: k,
            heat_s: 7200,
            ..energy::SeedDay::default()
        })
        .collect();
    energy::seed_days(dir, OTHER, &other);
}

/// The totals the page shows, by row (`heating`, `home-heating`, ...): the seconds of the
/// period and of the period before (null where it says there is no data).
fn shown_totals(b: &Browser) -> Value {
    b.js(&format!(
        "const out = {{}};
         for (const tr of document.querySelectorAll('#energy-totals-{TEST_SERIAL} tr[data-row]')) {{
           out[tr.dataset.row] = [...tr.querySelectorAll('td')].map((td) => td.dataset.s === undefined ? null : +td.dataset.s);
         }}
         return out"
    ))
}

/// The API's totals for the period the page asked for in its chosen view.
fn api_totals(b: &Browser, server: &hearth::Server) -> Value {
    let period = b.js(&format!(
        "const e = cards.get('{TEST_SERIAL}').energy; return energyPeriod(e.view, e.zone)"
    ));
    let r = get(
        server.control_addr(),
        &format!(
            "/api/energy?serial={TEST_SERIAL}&from={}&to={}",
            period["from"].as_str().unwrap(),
            period["to"].as_str().unwrap()
        ),
    );
    r.json()
}

/// Whether two labels along the bottom of the bars overlap (or stand closer than 2 px).
fn colliding_labels(b: &Browser) -> Value {
    b.js(&format!(
        "const boxes = [...document.querySelectorAll('#energy-{TEST_SERIAL} svg.energy-chart text.tick.x')]
           .map((t) => [t.textContent, t.getBoundingClientRect()]);
         const bad = [];
         for (let i = 1; i < boxes.length; i++)
           if (boxes[i][1].left < boxes[i - 1][1].right + 2) bad.push(boxes[i - 1][0] + '|' + boxes[i][0]);
         return {{ labels: boxes.map((b) => b[0]), bad }}"
    ))
}

/// Waits until the chosen view `view` has been loaded and drawn.
fn drawn(b: &Browser, view: &str) {
    b.wait_for(
        &format!("the {view} drawn"),
        &format!(
            "const e = cards.get('{TEST_SERIAL}').energy; return e.answerView === '{view}' && e.view === '{view}'"
        ),
    );
}

fn bars(b: &Browser) -> i64 {
    b.js(&format!(
        "return +document.querySelector('#energy-{TEST_SERIAL} svg.energy-chart').dataset.bars"
    ))
    .as_i64()
    .unwrap()
}

fn height(b: &Browser) -> f64 {
    b.js(&format!(
        "return document.querySelector('#energy-{TEST_SERIAL} svg.energy-chart').getBoundingClientRect().height"
    ))
    .as_f64()
    .unwrap()
}

#[test]
fn the_energy_section_draws_weeks_months_and_a_year_and_gives_the_csv() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let dir = TempDir::new("energy-page");
    seed(dir.path());
    let mut config = Config::local(dir.path());
    config.api_origin = Some(hearth::config::ApiOrigin::parse("http://127.0.0.1").unwrap());
    // Today's time, moved on by the test: a minute for the zone set below to be taken up.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let time = ManualClock::at(now_ms);
    config.clock = time.clock();
    let server = start_server(config);
    let sim = TestThermostat::start(&format!("http://{}", server.device_addr()));
    let s = TEST_SERIAL;
    // The home's other thermostat: known to the server, listed by the control port.
    server_change(
        &server,
        OTHER,
        &format!("shared.{OTHER}"),
        json!({"name": "Other Room"}),
    );

    // The page counts days in the browser's zone: UTC, as the server does for this thermostat.
    b.call(
        "POST",
        "/goog/cdp/execute",
        json!({"cmd": "Emulation.setTimezoneOverride", "params": {"timezoneId": "UTC"}}),
    );
    b.goto(&format!("http://{}/", server.control_addr()));
    b.wait_for(
        "the thermostat's card",
        &format!("return !!document.querySelector('#card-{s} svg.chart')"),
    );
    b.click(&format!("#energy-{s} > summary"));
    let bars_drawn = format!(
        "const s = document.querySelector('#energy-{s} svg.energy-chart'); return s && +s.dataset.bars >= 6"
    );
    b.wait_for("the week's bars", &bars_drawn);
    // The simulated thermostat reports no time zone: the days are UTC days, and the page says so.
    let zone_note = format!("return document.getElementById('energy-zone-{s}').textContent");
    assert_eq!(
        b.js(&zone_note),
        json!("Days are counted in UTC: this thermostat reports no time zone.")
    );
    // Once it has one (UTC here, as the browser's), taken up at the next minute's write, the
    // note goes when the section loads again.
    server_change(
        &server,
        s,
        &format!("device.{s}"),
        json!({"time_zone": "UTC"}),
    );
    time.advance(std::time::Duration::from_secs(60));
    wait_until("the zone taken up", || {
        let r = get(server.control_addr(), &format!("/api/energy?serial={s}"));
        r.json()["time_zone_source"] != json!("fallback")
    });
    b.click(&format!("#energy-{s} > summary"));
    b.click(&format!("#energy-{s} > summary"));
    b.wait_for(
        "no note on the zone",
        &format!("{zone_note} === '' ? true : null"),
    );
    b.wait_for("the week's bars", &bars_drawn);
    let week = b.js(&format!(
        "return document.getElementById('energy-week-{s}').textContent"
    ));
    assert_eq!(
        week,
        // The 7 whole days up to yesterday (20 h) against the 7 before them (24 h).
        json!("Heating ran 4 h less than in the 7 days before."),
        "the sentence compares the seeded weeks"
    );
    // The numbers are the API's for the same days: this thermostat's and the home's.
    let api = api_totals(&b, &server);
    let shown = shown_totals(&b);
    assert_eq!(
        shown["heating"],
        json!([api["total"]["heat_s"], api["before"]["heat_s"]]),
        "{shown} {api}"
    );
    assert_eq!(api["total"]["heat_s"], json!(20 * 3600), "{api}");
    assert_eq!(api["home"]["thermostats"], json!(2), "{api}");
    assert_eq!(
        shown["home-heating"],
        json!([
            api["home"]["total"]["heat_s"],
            api["home"]["before"]["heat_s"]
        ]),
        "{shown} {api}"
    );
    assert_eq!(
        api["home"]["total"]["heat_s"],
        json!((20 + 14) * 3600),
        "{api}"
    );
    let cells = b.js(&format!(
        "return [...document.querySelectorAll('#energy-totals-{s} tr')].map((tr) => tr.textContent)"
    ));
    assert_eq!(
        cells,
        json!([
            "Last 7 days7 days before",
            "Heating20 h24 h",
            "Cooling0 h0 h",
            "Home heating34 h38 h"
        ]),
        "{cells}"
    );
    let at_1280 = height(&b);
    assert_eq!(at_1280, 176.0);
    let labels = b.js(&format!("{SHOWN}{UNLABELLED}"));
    assert_eq!(labels["unlabelled"], json!([]), "{labels}");
    assert_eq!(unreachable_by_tab(&b), Vec::<String>::new());
    let bars_drawn = b.js(&format!(
        "const s = document.querySelector('#energy-{s} svg.energy-chart');
         return {{ heat: s.querySelectorAll('rect.heat').length, fan: s.querySelectorAll('rect.fan').length,
                  rows: document.querySelectorAll('#energy-table-{s} tr').length }}"
    ));
    assert!(bars_drawn["heat"].as_i64().unwrap() >= 6, "{bars_drawn}");
    assert_eq!(bars_drawn["heat"], bars_drawn["fan"], "{bars_drawn}");
    b.js(&format!(
        "document.getElementById('energy-{s}').scrollIntoView(); return true"
    ));
    b.painted();
    b.screenshot("energy-1280.png");

    // 30 days, then 12 months: every seeded day, then the months they fall in; the totals and
    // the sentence follow the period.
    b.click(&format!("#energy-period-{s} button[data-view='month']"));
    drawn(&b, "month");
    assert!(bars(&b) >= 20, "{}", bars(&b));
    let api = api_totals(&b, &server);
    assert_eq!(
        shown_totals(&b)["heating"],
        json!([api["total"]["heat_s"], Value::Null])
    );
    assert_eq!(api["before"]["days"], json!(0), "{api}");
    assert_eq!(
        b.js(&format!(
            "return document.getElementById('energy-week-{s}').textContent"
        )),
        json!("No earlier data to compare with.")
    );
    b.click(&format!("#energy-period-{s} button[data-view='year']"));
    drawn(&b, "year");
    let months = bars(&b);
    assert!((1..=2).contains(&months), "{months}");
    let api = api_totals(&b, &server);
    assert_eq!(
        shown_totals(&b)["heating"],
        json!([api["total"]["heat_s"], Value::Null])
    );
    assert_eq!(api["total"]["heat_s"], json!(60 * 3600), "{api}");
    b.click(&format!("#energy-period-{s} button[data-view='week']"));
    drawn(&b, "week");

    // The CSV, fetched by the page (with its key, were one needed), as a file.
    b.js("window.__csv = [];
          const realFetch = window.fetch;
          window.fetch = async (input, init) => {
            const res = await realFetch(input, init);
            if (String(input).includes('format=csv')) window.__csv.push([res.status, await res.clone().text()]);
            return res;
          };
          return true");
    b.click(&format!("#energy-csv-{s}"));
    let csv = b.wait_for(
        "the CSV fetched",
        "return window.__csv.length ? window.__csv[0] : null",
    );
    assert_eq!(csv[0], json!(200), "{csv}");
    let text = csv[1].as_str().unwrap();
    assert!(
        text.starts_with("date,heat_s,cool_s,fan_s,aux_s,away_s,indoor_avg_c,indoor_min_c,indoor_max_c,outdoor_avg_c,target_changes"),
        "{text}"
    );
    assert!(text.lines().count() >= 21, "{text}");
    assert_eq!(
        b.js(&format!(
            "return document.getElementById('energy-status-{s}').textContent"
        )),
        json!("")
    );

    // At a phone's width: the same height, nothing wider than the phone.
    b.as_phone();
    b.js(&format!(
        "document.getElementById('energy-{s}').scrollIntoView(); return true"
    ));
    b.wait_for(
        "the bars redrawn at the phone's width",
        &format!(
            "const s = document.querySelector('#energy-{s} svg.energy-chart'); return +s.getAttribute('viewBox').split(' ')[2] <= 360"
        ),
    );
    assert_eq!(height(&b), at_1280);
    // Labels that never touch, whichever the period.
    for view in ["month", "year", "week"] {
        b.click(&format!("#energy-period-{s} button[data-view='{view}']"));
        drawn(&b, view);
        b.painted();
        let labels = colliding_labels(&b);
        assert_eq!(labels["bad"], json!([]), "{view}: {labels}");
        assert!(
            labels["labels"].as_array().unwrap().len() >= 4,
            "{view}: {labels}"
        );
    }
    b.screenshot("energy-360.png");

    // In the dark: the contrast checks the rest of the page passes.
    b.call(
        "POST",
        "/goog/cdp/execute",
        json!({"cmd": "Emulation.setEmulatedMedia", "params": {
            "features": [{"name": "prefers-color-scheme", "value": "dark"}]}}),
    );
    b.painted();
    let contrast = b.js(LOW_CONTRAST);
    assert_eq!(contrast["bad"], json!([]), "{contrast}");
    b.screenshot("energy-360-dark.png");
    b.viewport(1280, 900, false);
    b.wait_for(
        "the bars redrawn at 1280 px",
        &format!(
            "const s = document.querySelector('#energy-{s} svg.energy-chart'); return +s.getAttribute('viewBox').split(' ')[2] > 360"
        ),
    );
    b.js(&format!(
        "document.getElementById('energy-{s}').scrollIntoView(); return true"
    ));
    b.painted();
    b.screenshot("energy-1280-dark.png");
    drop(sim);
    drop(b);
    server.shutdown();
}
