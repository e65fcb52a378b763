#![no_main]
//! Thermostat subscribe bodies (answered at once, or held and then dropped).
use hearth_fuzz::{check, harness, post};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    let h = harness();
    check(
        &h.device,
        post("/nest/transport", body).with_header("Authorization", &h.auth),
    );
});
