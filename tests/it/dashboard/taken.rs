//! Whether the thermostat took a change, on its card: quietly "on the thermostat" once a normal
//! thermostat acknowledges it, "waiting" for one that reports but ignores pushes, and loudly
//! late once the server's `not_applied` alert starts; the line is there before the tap, so
//! nothing under the finger moves.

use std::time::Duration;

use serde_json::{Value, json};

use super::browser::*;
use crate::common::*;
use hearth::util::clock::ManualClock;

/// The page of `s`, with the test thermostat's card drawn.
fn open(b: &Browser, s: &TestServer) -> String {
    wait_until("the thermostat's state", || {
        hearth::control::status::record(s.app(), TEST_SERIAL)
            .is_some_and(|r| r["current_temperature"].is_number())
    });
    b.goto(&format!("http://{}/", s.control()));
    b.wait_for(
        "the live indicator",
        "return document.getElementById('live').textContent === 'Live'",
    );
    let card = format!("#card-{TEST_SERIAL}");
    b.wait_for(
        "the card",
        &format!("return !!document.querySelector('{card} output')"),
    );
    card
}

fn taken_line(b: &Browser) -> Value {
    b.js(&format!(
        "const e = document.getElementById('taken-{TEST_SERIAL}'); \
         return [e.textContent, e.className, e.getBoundingClientRect().height]"
    ))
}

/// Raises the target half a degree with the card's +.
fn raise(b: &Browser, card: &str) {
    b.click(&format!(
        "{card} [data-setpoint=target] button.step:last-of-type"
    ));
}

#[test]
fn a_normal_thermostat_shows_the_change_on_the_thermostat() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let s = TestServer::start();
    let sim = TestThermostat::start(&s.origin());
    let card = open(&b, &s);
    let before = taken_line(&b);
    assert_eq!(before[0], json!(""), "no change made yet");
    assert!(
        before[2].as_f64().unwrap() > 10.0,
        "its line is kept: {before}"
    );

    raise(&b, &card);
    sim.expect_push("target_temperature");
    let line = b.wait_for(
        "the change on the thermostat",
        &format!(
            "const t = document.getElementById('taken-{TEST_SERIAL}').textContent; \
             return t.startsWith('Temperature on the thermostat') ? t : null"
        ),
    );
    let record = hearth::control::status::record(s.app(), TEST_SERIAL).unwrap();
    assert_eq!(record["last_change"]["state"], json!("taken"), "{record}");
    assert!(line.as_str().unwrap().contains(" · "), "{line}");
    assert_eq!(taken_line(&b)[2], before[2], "the line did not grow");
}

#[test]
fn a_thermostat_that_ignores_pushes_is_waiting_then_late() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.clock = time.clock();
        c.alerts.not_applied_after = Some(Duration::from_secs(120));
    });
    let sim = TestThermostat::start_with(&s.origin(), |o| o.ignore_pushes = true);
    let card = open(&b, &s);
    raise(&b, &card);
    let shared = format!("shared.{TEST_SERIAL}");
    expect_event(
        &sim.events,
        "the push ignored",
        |e| matches!(e, hearth::simulator::Event::Ignored { key, why: "ignoring pushes", .. } if *key == shared),
    );
    b.wait_for(
        "the change waiting",
        &format!(
            "const e = document.getElementById('taken-{TEST_SERIAL}'); \
             return e.textContent.includes('waiting for the thermostat') && !e.classList.contains('late')"
        ),
    );
    // Two minutes on, the thermostat still in touch (it holds its subscribe): the alert starts
    // and the card says so loudly.
    time.advance(Duration::from_secs(121));
    b.wait_for(
        "the change late",
        &format!(
            "const e = document.getElementById('taken-{TEST_SERIAL}'); \
             return e.classList.contains('late') && e.textContent.includes('has not been taken')"
        ),
    );
    b.wait_for(
        "the alert's banner",
        "return [...document.querySelectorAll('#alerts .alert')].some((a) => a.dataset.kind === 'not_applied')",
    );
    b.as_phone();
    b.screenshot("card-not-taken-360.png");
}
