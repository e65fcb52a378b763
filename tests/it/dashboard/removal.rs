//! Remove, then Add, from the page: the thermostat keeps operating while it is removed, so the
//! card comes back within 5 s with its name, temperature, mode and target as they are now (a
//! reading sent while it was removed included), live, and its controls work: no reboot, no
//! blank card.

use std::time::{Duration, Instant};

use serde_json::json;

use super::browser::*;
use crate::common::*;
use hearth::Config;

/// What the card shows: name, temperature, pressed mode, target.
const CARD: &str = r##"
const c = document.getElementById("card-02AA01AC5100TE57");
const v = (() => { if (!c) return null;
const text = (sel) => { const e = c.querySelector(sel); return e ? e.textContent.trim() : null; };
const pressed = c.querySelector("[id^='mode-'] button[aria-pressed='true']");
return { name: text("#name-02AA01AC5100TE57"), temperature: text(".temp .value"),
         mode: pressed ? pressed.dataset.mode : null, target: text("#target-02AA01AC5100TE57") }; })();
"##;

fn card(b: &Browser) -> serde_json::Value {
    b.js(&format!("{CARD} return v;"))
}

#[test]
fn remove_then_add_brings_the_card_back_live_within_five_seconds() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let dir = TempDir::new("removal");
    let mut config = Config::local(dir.path());
    config.api_origin = Some(hearth::config::ApiOrigin::parse("http://127.0.0.1").unwrap());
    let server = start_server(config);
    let app = server.app();
    let sim = TestThermostat::start(&format!("http://{}", server.device_addr()));
    let s = TEST_SERIAL;

    b.goto(&format!("http://{}/", server.control_addr()));
    b.wait_for(
        "the thermostat's card",
        &format!("return !!document.querySelector('#card-{s} svg.chart')"),
    );
    let before = b.wait_for(
        "its values",
        &format!("{CARD} return (v && v.temperature && v.target && v.mode) ? v : null;"),
    );
    assert_eq!(before["name"], json!("Test Room"), "{before}");
    assert!(
        before["target"].as_str().is_some_and(|t| t.ends_with("°C")),
        "{before}"
    );

    // Remove, behind its confirmation.
    b.click(&format!("#card-{s} details.more > summary"));
    b.click("button[aria-label='Remove Test Room from hearth']");
    b.click("button[aria-label='Yes, remove Test Room']");
    b.wait_for(
        "the card gone",
        &format!("return !document.getElementById('card-{s}')"),
    );
    assert!(app.state().accounts(|a| a.is_released(s)));

    // Removed, it keeps operating: the room cools and the reading is stored.
    sim.readings
        .send(("current_temperature".into(), json!(18.3)))
        .unwrap();
    wait_until("the reading stored while removed", || {
        hearth::control::status::record(app, s).unwrap()["current_temperature"] == json!(18.3)
    });

    // Add, from the waiting list (wherever the page shows it).
    let add = "button[aria-label='Add Test Room']";
    b.wait_for(
        "the thermostat waiting to be added",
        &format!(
            "const a = document.querySelector(\"{add}\");
             if (!a) return false;
             for (let d = a.closest('details'); d; d = d.parentElement && d.parentElement.closest('details')) d.open = true;
             return a.offsetParent !== null;"
        ),
    );
    let clicked = Instant::now();
    b.click(add);
    wait_until_within(
        Duration::from_secs(5),
        "the card back with its values",
        || {
            card(&b)
                == json!({"name": "Test Room", "temperature": "18.3°C", "mode": "heat",
                      "target": before["target"]})
        },
    );
    eprintln!("the card was back {:?} after Add", clicked.elapsed());

    // Live: a new reading reaches the card, and + reaches the thermostat.
    sim.readings
        .send(("current_temperature".into(), json!(18.7)))
        .unwrap();
    b.wait_for(
        "the live reading",
        &format!(
            "return document.querySelector('#card-{s} .temp .value').textContent === '18.7°C'"
        ),
    );
    b.click("button[aria-label='Raise target temperature of Test Room']");
    sim.expect_push("target_temperature");
    drop(sim);
    drop(b);
    server.shutdown();
}
