#![no_main]
//! Schedule validation on its own: any JSON is accepted or refused, never a panic, and an
//! accepted schedule validates again to itself.
use hearth::thermostat::schedule;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if let Ok(clean) = schedule::validate(&value, 86_400) {
        let again = schedule::validate(&Value::Object(clean.clone()), 86_400);
        assert_eq!(again.ok(), Some(clean), "validation is idempotent");
    }
});
