//! The history chart in a real browser: the same height at every width, a scale from the room's
//! temperatures (a short off-scale target clipped and marked), hour ticks with units, the reading
//! under a pointer, a finger or the arrow keys, targets in the mode's colour, a one-line legend;
//! and the whole page in dark mode, with the contrast the light page has.

use hearth::Config;
use hearth::demo::Demo;
use serde_json::{Value, json};

use super::browser::*;
use super::{LOW_CONTRAST, SHOWN, UNLABELLED, tab_to};
use crate::common::*;

const HALLWAY: &str = "02AA01AC5100DE01";
const LIVING_ROOM: &str = "02AA01AC5100DE02";
const BEDROOM: &str = "02AA01AC5100DE03";

/// Height, width and the tick labels of a card's chart.
fn chart_of(b: &Browser, serial: &str) -> Value {
    b.js(&format!(
        "const f = document.querySelector('#card-{serial} figure.history');
         const s = f.querySelector('svg.chart');
         const r = s.getBoundingClientRect();
         const tick = s.querySelector('text.tick.y').getBoundingClientRect();
         return {{ height: r.height, width: r.width, tickHeight: tick.height,
                  x: [...s.querySelectorAll('text.tick.x')].map((t) => t.textContent),
                  y: [...s.querySelectorAll('text.tick.y')].map((t) => t.textContent) }}"
    ))
}

/// Stands a made-up day in for the card's recorded history (and stops the page reloading it):
/// the room between 19 and 21 °C, its target `target` in `mode`, except for two samples at
/// 7.2 °C (a clamped eco target) half a day ago.
fn inject_day(b: &Browser, serial: &str, mode: &str, target: f64) {
    b.js(&format!(
        "loadHistory = async () => {{}};
         const c = cards.get('{serial}');
         const now = Math.floor(Date.now() / 1000), samples = [];
         for (let i = 288; i >= 0; i--) {{
           samples.push({{ t: now - i * 300, temp: 20 + Math.sin(i / 30), mode: '{mode}',
             target: i === 144 || i === 145 ? 7.2 : {target},
             heating: '{mode}' === 'heat' && i % 60 < 10, cooling: '{mode}' === 'cool' && i % 60 < 10, fan: false }});
         }}
         c.history = {{ interval_seconds: 300, heating_seconds: 3000, cooling_seconds: 0, samples }};
         drawChart(c, c.history);
         return true"
    ));
}

/// The colour a CSS variable of the page computes to, as `rgb(...)`.
fn colour(b: &Browser, var: &str) -> Value {
    b.js(&format!(
        "const p = document.createElement('span'); p.style.color = 'var({var})';
         document.body.append(p); const c = getComputedStyle(p).color; p.remove(); return c"
    ))
}

fn pointer(b: &Browser, kind: &str, css: &str, dx: i64, actions: &[&str]) {
    let id = b.find(css);
    let origin = json!({ ELEMENT: id });
    let mut steps =
        vec![json!({"type": "pointerMove", "duration": 0, "origin": origin, "x": dx, "y": 0})];
    for a in actions {
        steps.push(json!({"type": a, "button": 0}));
    }
    b.call(
        "POST",
        "/actions",
        json!({"actions": [{"type": "pointer", "id": kind, "parameters": {"pointerType": kind}, "actions": steps}]}),
    );
    b.call("DELETE", "/actions", Value::Null);
}

fn readout(b: &Browser, serial: &str) -> Value {
    b.js(&format!(
        "const g = document.querySelector('#card-{serial} svg.chart .readout');
         return g ? {{ t: +g.dataset.t, text: g.querySelector('text').textContent }} : null"
    ))
}

#[test]
fn the_chart_reads_at_every_width_and_in_the_dark() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let dir = TempDir::new("chart");
    let mut config = Config::local(dir.path());
    config.api_origin = Some(hearth::config::ApiOrigin::parse("http://127.0.0.1").unwrap());
    share_process();
    let demo = Demo::start(config).expect("demo starts");
    let page = format!("http://{}/", demo.server().control_addr());
    b.viewport(1280, 900, false);
    b.goto(&page);
    b.wait_for(
        "three drawn charts",
        "return document.querySelectorAll('.card figure[data-drawn] svg.chart path.temperature').length === 3",
    );

    // Hours on the hour (in the browser's own format, as every time on the page), degrees with
    // their unit, text at the size of the page's small print.
    let hallway = chart_of(&b, HALLWAY);
    let x = hallway["x"].as_array().unwrap();
    assert!(x.len() >= 4, "{hallway}");
    assert_eq!(x.last(), Some(&json!("now")), "{hallway}");
    let hours = b.js(
        "return Array.from({ length: 24 }, (_, h) => new Date(2026, 0, 1, h).toLocaleTimeString([], { hour: 'numeric' }))",
    );
    for t in &x[..x.len() - 1] {
        assert!(hours.as_array().unwrap().contains(t), "{t} in {hallway}");
    }
    for t in hallway["y"].as_array().unwrap() {
        assert!(t.as_str().unwrap().ends_with("°C"), "{hallway}");
    }
    for t in chart_of(&b, BEDROOM)["y"].as_array().unwrap() {
        assert!(t.as_str().unwrap().ends_with("°F"), "{t}");
    }
    let tick = hallway["tickHeight"].as_f64().unwrap();
    assert!((11.0..20.0).contains(&tick), "{hallway}");

    // The same height however wide: a card across the whole row widens the chart only.
    let height = hallway["height"].as_f64().unwrap();
    assert!((170.0..=180.0).contains(&height), "{hallway}");
    b.js(&format!(
        "document.getElementById('card-{HALLWAY}').style.gridColumn = '1 / -1'; return true"
    ));
    b.painted();
    let wide = b.wait_for(
        "the chart redrawn across the row",
        &format!(
            "const s = document.querySelector('#card-{HALLWAY} svg.chart');
             return s.getBoundingClientRect().width > {w} * 1.5
               && +s.getAttribute('viewBox').split(' ')[2] === Math.round(s.getBoundingClientRect().width)
               && s.getBoundingClientRect().height",
            w = hallway["width"]
        ),
    );
    assert_eq!(wide.as_f64(), Some(height));
    b.js(&format!(
        "document.getElementById('card-{HALLWAY}').style.gridColumn = ''; return true"
    ));

    // A short off-scale target is clipped and marked with its value; the day keeps the scale.
    inject_day(&b, HALLWAY, "heat", 21.0);
    let drawn = b.js(&format!(
        "const s = document.querySelector('#card-{HALLWAY} svg.chart');
         const temp = s.querySelector('path.temperature').getBBox();
         const [lo, hi] = s.dataset.scale.split(' ').map(Number);
         const mark = s.querySelector('polygon.offscale');
         return {{ lo, hi, share: temp.height / (s.getBBox().height),
                  mark: mark && mark.dataset.value, markClass: mark && mark.getAttribute('class'),
                  labels: [...s.querySelectorAll('text.offscale-value')].map((t) => t.textContent),
                  heat: s.querySelectorAll('path.target.heat').length,
                  cool: s.querySelectorAll('path.target.cool').length,
                  stroke: getComputedStyle(s.querySelector('path.target.heat')).stroke }}"
    ));
    assert!(drawn["lo"].as_f64().unwrap() >= 17.0, "{drawn}");
    assert!(drawn["hi"].as_f64().unwrap() <= 23.0, "{drawn}");
    assert!(drawn["share"].as_f64().unwrap() > 0.3, "{drawn}");
    assert_eq!(drawn["mark"], json!("7.2"), "{drawn}");
    assert_eq!(drawn["markClass"], json!("offscale heat"), "{drawn}");
    assert_eq!(drawn["labels"], json!(["7.2°C"]), "{drawn}");
    assert_eq!(
        (drawn["heat"].clone(), drawn["cool"].clone()),
        (json!(1), json!(0))
    );
    assert_eq!(drawn["stroke"], colour(&b, "--heat"), "{drawn}");

    // Heating that cycles every few minutes reads as bands as high as the share of each half
    // hour it ran (here 50 minutes in every 5 hours), never as hairlines.
    let bands = b.js(&format!(
        "return [...document.querySelectorAll('#card-{HALLWAY} svg.chart rect.band.heating')]
           .map((r) => [+r.getAttribute('width'), +r.dataset.share])"
    ));
    let bands = bands.as_array().unwrap();
    assert!(bands.len() >= 4, "{bands:?}");
    for band in bands {
        assert!(band[0].as_f64().unwrap() >= 5.0, "{bands:?}");
    }
    assert!(
        bands.iter().any(|b| b[1].as_f64() == Some(1.0)),
        "{bands:?}"
    );

    // A reading newer than the last sample, far off the day's scale (the door left open): on
    // the chart at "now", the scale widened to hold it.
    let latest = b.js(&format!(
        "const c = cards.get('{HALLWAY}'), was = c.data.current_temperature;
         c.data.current_temperature = 5.2;
         drawChart(c, c.history);
         const s = document.querySelector('#card-{HALLWAY} svg.chart');
         const dot = s.querySelector('circle.latest');
         const [lo, hi] = s.dataset.scale.split(' ').map(Number);
         const out = {{ lo, hi, value: dot && +dot.dataset.value, cy: dot && +dot.getAttribute('cy'),
                       y: [...s.querySelectorAll('text.tick.y')].map((t) => t.textContent) }};
         c.data.current_temperature = was;
         drawChart(c, c.history);
         return out"
    ));
    assert!(latest["lo"].as_f64().unwrap() <= 5.2, "{latest}");
    assert_eq!(latest["value"].as_f64(), Some(5.2), "{latest}");
    let cy = latest["cy"].as_f64().unwrap();
    assert!((22.0..=152.0).contains(&cy), "{latest}");

    // The value under a mouse, then under a finger further left (earlier in the day).
    let plot = format!("#card-{HALLWAY} .plot");
    pointer(&b, "mouse", &plot, 60, &[]);
    b.wait_for(
        "the reading under the mouse",
        &format!("return !!document.querySelector('#card-{HALLWAY} svg.chart .readout')"),
    );
    let mouse = readout(&b, HALLWAY);
    let text = mouse["text"].as_str().unwrap();
    let at = mouse["t"].as_i64().unwrap();
    let clock = b.js(&format!(
        "return new Date({at} * 1000).toLocaleTimeString([], {{ hour: 'numeric', minute: '2-digit' }})"
    ));
    assert!(
        text.starts_with(&format!("{} · ", clock.as_str().unwrap())) && text.contains("°C"),
        "{mouse}"
    );
    assert!(text.contains("target 21.0°C"), "{mouse}");
    pointer(&b, "touch", &plot, -100, &["pointerDown", "pointerUp"]);
    b.wait_for(
        "the reading under the finger, hours earlier",
        &format!(
            "const g = document.querySelector('#card-{HALLWAY} svg.chart .readout');
             return g && +g.dataset.t < {} - 3600",
            mouse["t"]
        ),
    );

    // In cool mode the target is blue.
    inject_day(&b, HALLWAY, "cool", 24.0);
    let cool = b.js(&format!(
        "const s = document.querySelector('#card-{HALLWAY} svg.chart');
         return {{ heat: s.querySelectorAll('path.target.heat').length,
                  stroke: getComputedStyle(s.querySelector('path.target.cool')).stroke,
                  mark: s.querySelector('polygon.offscale').getAttribute('class') }}"
    ));
    assert_eq!(cool["heat"], json!(0), "{cool}");
    assert_eq!(cool["stroke"], colour(&b, "--cool"), "{cool}");
    assert_eq!(cool["mark"], json!("offscale cool"), "{cool}");
    assert_ne!(colour(&b, "--cool"), colour(&b, "--heat"));

    // The keyboard reaches the chart and reads it sample by sample.
    b.js("document.activeElement.blur(); window.scrollTo(0, 0); return true");
    tab_to(&b, "History of Hallway");
    let slider = format!(
        "const p = document.querySelector('#card-{HALLWAY} .plot');
         return {{ role: p.getAttribute('role'), max: +p.getAttribute('aria-valuemax'), shown: !!p.querySelector('.readout') }}"
    );
    let slider_at = |what: &str, test: &str| {
        b.wait_for(
            what,
            &format!(
                "const p = document.querySelector('#card-{HALLWAY} .plot');
                 const now = +p.getAttribute('aria-valuenow'), max = +p.getAttribute('aria-valuemax');
                 return p.hasAttribute('aria-valuenow') && ({test}) && p.getAttribute('aria-valuetext')"
            ),
        )
    };
    b.press("\u{E010}");
    let at_end = slider_at("the last sample", "now === max");
    let state = b.js(&slider);
    assert_eq!(state["role"], json!("slider"));
    assert!(state["shown"].as_bool().unwrap(), "{state}");
    b.press("\u{E012}\u{E012}");
    let back = slider_at("two samples back", &format!("now === {} - 2", state["max"]));
    assert_ne!(back, at_end);
    assert!(
        back.as_str().unwrap().contains(", target 24.0°C, "),
        "{back}"
    );
    b.press("\u{E011}");
    slider_at("the first sample", "now === 0");

    // At 360 px: the same height, every legend on one line inside its card, no sideways scroll.
    b.viewport(360, 780, true);
    b.wait_for("the phone's width", "return window.innerWidth === 360");
    b.painted();
    for serial in [HALLWAY, BEDROOM] {
        let narrow = chart_of(&b, serial);
        assert_eq!(narrow["height"].as_f64(), Some(height), "{narrow}");
        assert!(narrow["x"].as_array().unwrap().len() >= 3, "{narrow}");
    }
    let legends = b.js(
        "return [...document.querySelectorAll('.card figure.history')].map((f) => {
           const l = f.querySelector('.legend').getBoundingClientRect();
           const item = f.querySelector('.legend .item').getBoundingClientRect();
           return { oneLine: l.height < item.height * 1.5, inside: l.right <= f.getBoundingClientRect().right + 0.5 };
         })",
    );
    for l in legends.as_array().unwrap() {
        assert_eq!(l, &json!({"oneLine": true, "inside": true}), "{legends}");
    }
    let width = b.js("return document.documentElement.scrollWidth");
    assert!(width.as_i64().unwrap() <= 360, "{width}");
    // A reading three hours back on a phone, for the docs.
    b.js(&format!(
        "const p = document.querySelector('#card-{LIVING_ROOM} .plot');
         p.focus(); p.scrollIntoView({{ block: 'center' }}); return true"
    ));
    b.press(&"\u{E012}".repeat(36));
    b.wait_for(
        "the reading three hours back",
        &format!("return +document.querySelector('#card-{LIVING_ROOM} .plot').getAttribute('aria-valuenow') > 0"),
    );
    b.painted();
    b.screenshot("chart-360.png");
    b.js("document.activeElement.blur(); return true");

    // Dark, as the system asks: dark backgrounds, light text, and the contrast checks pass.
    b.call(
        "POST",
        "/goog/cdp/execute",
        json!({"cmd": "Emulation.setEmulatedMedia", "params": {
            "features": [{"name": "prefers-color-scheme", "value": "dark"}]}}),
    );
    b.js("location.reload(); return true");
    b.wait_for(
        "three drawn charts in the dark",
        "return document.querySelectorAll('.card figure[data-drawn] svg.chart path.temperature').length === 3",
    );
    let dark = b.js("const rgb = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
         const sum = (c) => c[0] + c[1] + c[2];
         return { page: sum(rgb(getComputedStyle(document.body).backgroundColor)),
                  card: sum(rgb(getComputedStyle(document.querySelector('.card')).backgroundColor)),
                  text: sum(rgb(getComputedStyle(document.body).color)),
                  media: matchMedia('(prefers-color-scheme: dark)').matches }");
    assert_eq!(dark["media"], json!(true));
    assert!(dark["page"].as_f64().unwrap() < 120.0, "{dark}");
    assert!(dark["card"].as_f64().unwrap() < 150.0, "{dark}");
    assert!(dark["text"].as_f64().unwrap() > 600.0, "{dark}");
    b.js("window.scrollTo(0, 0); return true");
    b.painted();
    b.screenshot("dashboard-360-dark.png");
    let contrast = b.js(LOW_CONTRAST);
    assert!(contrast["checked"].as_i64().unwrap() >= 40, "{contrast}");
    assert_eq!(contrast["bad"], json!([]), "{contrast}");
    b.viewport(1280, 860, false);
    b.wait_for("the desktop's width", "return window.innerWidth > 1000");
    b.painted();
    b.screenshot("dashboard-1280-dark.png");
    // With the settings open and a reading shown, then with the schedule open over them,
    // every text still reads.
    b.click(&format!("#card-{HALLWAY} details.more > summary"));
    b.js(&format!(
        "document.querySelector('#card-{HALLWAY} .plot').focus(); return true"
    ));
    b.wait_for(
        "the reading",
        &format!("return document.querySelector('#card-{HALLWAY} .readout')"),
    );
    let contrast = b.js(LOW_CONTRAST);
    assert!(contrast["checked"].as_i64().unwrap() >= 60, "{contrast}");
    assert_eq!(contrast["bad"], json!([]), "{contrast}");
    b.click(&format!("#schedule-open-{HALLWAY}"));
    b.wait_for(
        "the schedule",
        &format!("return document.querySelectorAll('#schedule-{HALLWAY} .wk-row').length === 7"),
    );
    b.painted();
    let contrast = b.js(LOW_CONTRAST);
    assert!(contrast["checked"].as_i64().unwrap() >= 80, "{contrast}");
    assert_eq!(contrast["bad"], json!([]), "{contrast}");
    let labels = b.js(&format!("{SHOWN}{UNLABELLED}"));
    assert_eq!(labels["unlabelled"], json!([]), "{labels}");
    drop(b);
    demo.stop();
}
