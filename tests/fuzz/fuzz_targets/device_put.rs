#![no_main]
//! Thermostat PUT bodies, on the current path and a legacy one.
use hearth_fuzz::{check, harness, post};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    let h = harness();
    for path in ["/nest/transport/v7/put", "/v5/put"] {
        check(
            &h.device,
            post(path, body).with_header("Authorization", &h.auth),
        );
    }
});
