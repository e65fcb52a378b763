#![no_main]
//! `/api/v1` write bodies: the first byte picks the endpoint, the rest is the body.
use hearth::http::{Method, Request};
use hearth_fuzz::{SERIAL, check, harness};
use libfuzzer_sys::fuzz_target;

const ACTIONS: &[&str] = &[
    "temperature",
    "temperature/range",
    "away",
    "eco",
    "lock",
    "mode",
    "fan",
    "schedule",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let h = harness();
    let action = ACTIONS[pick as usize % ACTIONS.len()];
    let method = if action == "schedule" {
        Method::Put
    } else {
        Method::Post
    };
    let mut request = Request::new(method, &format!("/api/v1/thermostat/{SERIAL}/{action}"))
        .with_header("Authorization", &h.bearer)
        .with_header("Content-Type", "application/json");
    request.body = body.to_vec();
    check(&h.control, request);
});
