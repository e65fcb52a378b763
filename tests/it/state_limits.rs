//! How much a thermostat's state may hold (`hearth::state::limits`), on every path that stores
//! what a client sends: a thermostat's PUT and a subscribe's inline update, `/command`, and the
//! hosted API's writes. Each over-limit write is refused with its surface's status and body and
//! changes nothing (the store's files and the buckets are as they were); real sizes, and sizes
//! right at each limit, are stored.

use crate::common;

use common::hosted::{api, new_key};
use common::*;
use hearth::state::limits::{
    MAX_BUCKET_BYTES, MAX_KEY_BYTES, MAX_SCHEDULE_ENTRIES_PER_DAY, MAX_STRING_BYTES,
};
use serde_json::{Value, json};

fn schedule() -> String {
    format!("schedule.{SERIAL}")
}

/// A thermostat that has uploaded its state (with Basic auth `pw`, as every request here).
fn registered() -> TestServer {
    let s = TestServer::start();
    let r = put(
        &s,
        json!([
            {"object_key": device(), "value": {"temperature_scale": "C", "postal_code": "94304"}},
            {"object_key": shared(), "value": {"current_temperature": 20.5, "target_temperature": 21.0,
                "target_temperature_type": "heat", "can_heat": true}},
        ]),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    s
}

fn put(s: &TestServer, objects: Value) -> hearth::http::client::ClientResponse {
    post_json(
        s.device(),
        "/nest/transport/v7/put",
        SERIAL,
        json!({"objects": objects}),
    )
}

/// The store's files (name and bytes) and the buckets' values.
type Everything = (Vec<(String, Vec<u8>)>, Vec<Option<Value>>);

/// Everything that could have changed: the store's files and every bucket's value.
fn everything(s: &TestServer) -> Everything {
    let buckets = [shared(), device(), schedule()]
        .iter()
        .map(|k| s.bucket(SERIAL, k).map(|b| Value::Object(b.value.to_map())))
        .collect();
    (store_bytes(s.dir.path()), buckets)
}

/// A schedule day of `n` entries an hour apart (times must increase), as a list.
fn day(n: usize) -> Value {
    let entries: Vec<Value> = (0..n)
        .map(|i| json!({"time": i * 60, "type": "HEAT", "temp": 20.0, "entry_type": "setpoint"}))
        .collect();
    Value::Array(entries)
}

fn a_schedule(entries: usize) -> Value {
    json!({"ver": 2, "name": "Week", "schedule_mode": "HEAT", "days": {"0": day(entries)}})
}

#[test]
fn a_thermostat_write_with_anything_too_large_is_refused_whole() {
    let s = registered();
    let before = everything(&s);
    let long_key = format!("shared.{}", "K".repeat(100_000 - 7));
    let postal = "9".repeat(900 * 1024);
    let cases = [
        (
            "a 100,000-character key",
            json!([{"object_key": long_key, "value": {"a": 1}}]),
            "Object key too long: 100000 bytes (at most 256)".to_string(),
        ),
        (
            "a good object, then a 900 KB postal code",
            json!([
                {"object_key": shared(), "value": {"current_temperature": 19.0}},
                {"object_key": device(), "value": {"postal_code": postal}},
            ]),
            format!(
                "Value too long: postal_code in {} is 921600 bytes (at most 8192 per string)",
                device()
            ),
        ),
        (
            "20,000 schedule entries in a day",
            json!([{"object_key": schedule(), "value": {"ver": 2, "days": {"3": vec![json!({}); 20_000]}}}]),
            "Too many schedule entries on day 3: 20000 (at most 64)".to_string(),
        ),
        (
            "a field name of 300 characters",
            json!([{"object_key": shared(), "value": {"x".repeat(300): 1}}]),
            format!(
                "Field name too long in {}: 300 bytes (at most 256)",
                shared()
            ),
        ),
    ];
    for (what, objects, message) in cases {
        let r = put(&s, objects);
        assert_eq!(
            (r.status, r.json()),
            (413, json!({"error": message})),
            "{what}"
        );
        assert_eq!(everything(&s), before, "{what}: nothing changed");
    }
    // A bucket may not grow past 128 KiB, however it is split into PUTs.
    let chunk = "c".repeat(MAX_STRING_BYTES);
    let mut n = 0;
    let refused = loop {
        let r = put(
            &s,
            json!([{"object_key": format!("where.{SERIAL}"), "value": {format!("f{n}"): chunk}}]),
        );
        if r.status != 200 {
            break r;
        }
        n += 1;
        assert!(n < 100, "never refused");
    };
    assert_eq!(refused.status, 413);
    let message = refused.json()["error"].as_str().unwrap().to_string();
    assert!(
        message.starts_with(&format!("Object too large: where.{SERIAL} would be "))
            && message.ends_with(&format!("bytes (at most {MAX_BUCKET_BYTES})")),
        "{message}"
    );
    let kept = s.bucket(SERIAL, &format!("where.{SERIAL}")).unwrap();
    assert_eq!(
        kept.value.to_map().len(),
        n,
        "the refused field is not there"
    );
    assert!(kept.value.text().len() <= MAX_BUCKET_BYTES);
    // Real sizes, and each limit exactly, are stored; the thermostat carries on.
    let key = format!("custom.{}", "k".repeat(MAX_KEY_BYTES - 7));
    let r = put(
        &s,
        json!([
            {"object_key": key, "value": {"a": 1}},
            {"object_key": device(), "value": {"postal_code": "p".repeat(MAX_STRING_BYTES)}},
            {"object_key": schedule(), "value": a_schedule(MAX_SCHEDULE_ENTRIES_PER_DAY)},
            {"object_key": shared(), "value": {"current_temperature": 19.0}},
        ]),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        s.bucket(SERIAL, &shared())
            .unwrap()
            .value
            .get("current_temperature"),
        Some(json!(19.0))
    );
}

#[test]
fn a_subscribe_with_an_inline_update_too_large_is_refused_and_changes_nothing() {
    let s = registered();
    let before = everything(&s);
    let body = json!({"chunked": false, "objects": [
        {"object_key": shared(), "object_revision": 0, "object_timestamp": 0,
         "value": {"current_temperature": 18.0}},
        {"object_key": device(), "object_revision": 0, "object_timestamp": 0,
         "value": {"postal_code": "9".repeat(900 * 1024)}},
    ]});
    let r = post_json(s.device(), "/nest/transport", SERIAL, body);
    assert_eq!(
        (r.status, r.json()),
        (
            413,
            json!({"error": format!("Value too long: postal_code in {} is 921600 bytes (at most 8192 per string)", device())})
        )
    );
    assert_eq!(everything(&s), before);
    // The same subscribe without the oversized value goes through.
    let body = json!({"chunked": false, "objects": [
        {"object_key": shared(), "object_revision": 0, "object_timestamp": 0,
         "value": {"current_temperature": 18.0}},
    ]});
    let r = post_json(s.device(), "/nest/transport", SERIAL, body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        s.bucket(SERIAL, &shared())
            .unwrap()
            .value
            .get("current_temperature"),
        Some(json!(18.0))
    );
}

#[test]
fn commands_that_would_store_too_much_are_refused_and_change_nothing() {
    let s = registered();
    let before = everything(&s);
    let postal = json!({"postal_code": "9".repeat(900 * 1024)});
    let too_long = format!(
        "Value too long: postal_code in {} is 921600 bytes (at most 8192 per string)",
        device()
    );
    let too_many = "Too many schedule entries on day 0: 65 (at most 64)";
    let r = command(s.control(), SERIAL, "set_device_setting", postal.clone());
    assert_eq!(
        (r.status, r.json()),
        (413, json!({"success": false, "message": too_long}))
    );
    let r = command(
        s.control(),
        SERIAL,
        "set_schedule",
        a_schedule(MAX_SCHEDULE_ENTRIES_PER_DAY + 1),
    );
    assert_eq!(
        (r.status, r.json()),
        (413, json!({"success": false, "message": too_many}))
    );
    assert_eq!(everything(&s), before, "/command changed nothing");

    // The hosted API: the same limits, in its words.
    let key = new_key(&s, "owner", "read,write", &[]);
    let before = everything(&s);
    let r = api(
        &s,
        "PUT",
        &format!("/thermostat/{SERIAL}/schedule"),
        &key,
        json!({"schedule": a_schedule(MAX_SCHEDULE_ENTRIES_PER_DAY + 1)}),
    );
    assert_eq!((r.status, r.json()), (413, json!({"error": too_many})));
    let mut named = a_schedule(2);
    named["name"] = json!("n".repeat(MAX_STRING_BYTES + 1));
    let r = api(
        &s,
        "PUT",
        &format!("/thermostat/{SERIAL}/schedule"),
        &key,
        json!({"schedule": named}),
    );
    assert_eq!(
        (r.status, r.json()),
        (
            413,
            json!({"error": format!("Value too long: name in {} is 8193 bytes (at most 8192 per string)", schedule())})
        )
    );
    // Store files aside: a key's first use is recorded.
    assert_eq!(everything(&s).1, before.1, "the hosted API changed nothing");

    // Right at the limits, both are stored.
    let r = command(
        s.control(),
        SERIAL,
        "set_device_setting",
        json!({"postal_code": "9".repeat(MAX_STRING_BYTES)}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = api(
        &s,
        "PUT",
        &format!("/thermostat/{SERIAL}/schedule"),
        &key,
        json!({"schedule": a_schedule(MAX_SCHEDULE_ENTRIES_PER_DAY)}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
}
