#![no_main]
//! Paths, queries and serials on both ports: the input is a request target; the first byte
//! picks the port, the method and the credentials.
use hearth::http::{Method, Request};
use hearth_fuzz::{check, harness};
use libfuzzer_sys::fuzz_target;

const METHODS: &[Method] = &[
    Method::Get,
    Method::Post,
    Method::Put,
    Method::Delete,
    Method::Head,
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(target) = std::str::from_utf8(rest) else {
        return;
    };
    let h = harness();
    let mut request = Request::new(METHODS[pick as usize % METHODS.len()], target);
    if pick & 0x10 != 0 {
        request = request.with_header("Authorization", &h.auth);
    }
    if pick & 0x20 != 0 {
        request = request.with_header("Authorization", &h.bearer);
    }
    if pick & 0x80 != 0 {
        check(&h.device, request);
    } else {
        check(&h.control, request);
    }
    let _ = hearth::device::identity::sanitize_serial(target);
    let _ = hearth::device::normalize::normalize(target);
});
