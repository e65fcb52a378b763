#![no_main]
//! `POST /command` bodies.
use hearth_fuzz::{check, harness, post};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    check(&harness().control, post("/command", body));
});
