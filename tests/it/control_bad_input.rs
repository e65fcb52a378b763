//! Every bad input to the control API: the exact status and body, and proof that nothing
//! changed (the store's files and the thermostat's buckets are byte-for-byte the same, and a
//! held subscribe received nothing).

use crate::common;

use common::*;
use serde_json::{Value, json};

const SET_TEMPERATURE: &str =
    "set_temperature value must be a number (°C) or an object with \"low\" and/or \"high\" numbers";
const SET_FAN: &str =
    "set_fan value must be \"on\", \"auto\" (or \"off\"), or a number of seconds from 1 to 43200";

const SET_ECO: &str =
    "set_eco_temperatures value must be an object with \"low\" and/or \"high\" numbers (°C)";

fn failed(message: &str) -> Value {
    json!({"success": false, "message": message})
}

fn error(message: &str) -> Value {
    json!({"error": message})
}

fn cmd(command: &str, value: Value) -> String {
    json!({"serial": SERIAL, "command": command, "value": value}).to_string()
}

fn schedule_entry(entry: Value) -> String {
    cmd(
        "set_schedule",
        json!({"ver": 2, "schedule_mode": "HEAT", "days": {"0": {"0": entry}}}),
    )
}

#[test]
fn bad_inputs_get_exact_errors_and_change_nothing() {
    let s = TestServer::start();
    let (_sim, _events, mut held) = booted_and_held(&s, SERIAL);
    let before = store_bytes(s.dir.path());
    let buckets_before = s.app().state().read_device(SERIAL, |d| d.clone()).unwrap();
    let long = "A".repeat(200);
    let invalid_serial = "Invalid serial: expected 10 to 64 letters and digits";
    let cases: Vec<(&str, &str, String, u16, Value)> = vec![
        // The body itself.
        (
            "POST",
            "/command",
            "{not json".into(),
            400,
            failed("Invalid JSON"),
        ),
        ("POST", "/command", "".into(), 400, failed("Invalid JSON")),
        (
            "POST",
            "/command",
            "[1,2]".into(),
            400,
            failed("Request body must be a JSON object"),
        ),
        (
            "POST",
            "/command",
            "{}".into(),
            400,
            failed("Serial required"),
        ),
        (
            "POST",
            "/command",
            json!({"command": "set_mode", "value": "heat"}).to_string(),
            400,
            failed("Serial required"),
        ),
        (
            "POST",
            "/command",
            json!({"serial": SERIAL, "value": 1}).to_string(),
            400,
            failed("Command required"),
        ),
        (
            "POST",
            "/command",
            json!({"serial": SERIAL, "command": 7}).to_string(),
            400,
            failed("command must be a string"),
        ),
        (
            "POST",
            "/command",
            cmd("fly", json!(1)),
            400,
            failed("Unknown command: fly"),
        ),
        // Serials.
        (
            "POST",
            "/command",
            json!({"serial": "02AA01AC 0000SIM1", "command": "set_mode", "value": "heat"})
                .to_string(),
            400,
            failed(invalid_serial),
        ),
        (
            "POST",
            "/command",
            json!({"serial": long, "command": "set_mode", "value": "heat"}).to_string(),
            400,
            failed(invalid_serial),
        ),
        (
            "POST",
            "/command",
            json!({"serial": 12345678901u64, "command": "set_mode", "value": "heat"}).to_string(),
            400,
            failed(invalid_serial),
        ),
        (
            "POST",
            "/command",
            json!({"serial": "NOPE000000000000", "command": "set_mode", "value": "heat"})
                .to_string(),
            404,
            failed("Device not found"),
        ),
        // Wrong types.
        (
            "POST",
            "/command",
            json!({"serial": SERIAL, "command": "set_temperature"}).to_string(),
            400,
            failed(SET_TEMPERATURE),
        ),
        (
            "POST",
            "/command",
            cmd("set_temperature", json!(null)),
            400,
            failed(SET_TEMPERATURE),
        ),
        (
            "POST",
            "/command",
            cmd("set_temperature", json!("abc")),
            400,
            failed(SET_TEMPERATURE),
        ),
        (
            "POST",
            "/command",
            cmd("set_temperature", json!(true)),
            400,
            failed(SET_TEMPERATURE),
        ),
        (
            "POST",
            "/command",
            cmd("set_temperature", json!("NaN")),
            400,
            failed(SET_TEMPERATURE),
        ),
        (
            "POST",
            "/command",
            cmd("set_temperature", json!("Infinity")),
            400,
            failed(SET_TEMPERATURE),
        ),
        (
            "POST",
            "/command",
            cmd("set_temperature", json!("-inf")),
            400,
            failed(SET_TEMPERATURE),
        ),
        (
            "POST",
            "/command",
            cmd("set_temperature", json!({"low": "x", "high": 24})),
            400,
            failed(SET_TEMPERATURE),
        ),
        (
            "POST",
            "/command",
            cmd("set_temperature", json!({"low": 25, "high": 20})),
            400,
            failed("Low temperature must be less than high temperature"),
        ),
        (
            "POST",
            "/command",
            cmd("set_mode", json!("turbo")),
            400,
            failed(
                "Unknown mode 'turbo'. Valid modes: off, heat, cool, heat-cool, heat_cool, range, auto, emergency",
            ),
        ),
        (
            "POST",
            "/command",
            cmd("set_mode", json!("eco")),
            400,
            failed("Eco is not a mode: use set_away (true turns eco on, false turns it off)"),
        ),
        (
            "POST",
            "/command",
            cmd("set_mode", json!(null)),
            400,
            failed(
                "set_mode value must be a string: one of off, heat, cool, heat-cool, heat_cool, range, auto, emergency",
            ),
        ),
        (
            "POST",
            "/command",
            cmd("set_away", json!("yes")),
            400,
            failed("set_away value must be true or false"),
        ),
        (
            "POST",
            "/command",
            cmd("set_fan", json!(true)),
            400,
            failed(SET_FAN),
        ),
        (
            "POST",
            "/command",
            cmd("set_fan", json!("spin")),
            400,
            failed(SET_FAN),
        ),
        (
            "POST",
            "/command",
            cmd("set_eco_temperatures", json!({})),
            400,
            failed("No values to update"),
        ),
        (
            "POST",
            "/command",
            cmd("set_eco_temperatures", json!({"low": "abc"})),
            400,
            failed(SET_ECO),
        ),
        (
            "POST",
            "/command",
            cmd("set_eco_temperatures", json!({"low": true, "high": 26})),
            400,
            failed(SET_ECO),
        ),
        (
            "POST",
            "/command",
            cmd("set_eco_temperatures", json!(20)),
            400,
            failed(SET_ECO),
        ),
        (
            "POST",
            "/command",
            cmd("set_eco_temperatures", json!({"low": 1, "high": 5})),
            400,
            failed("Low temperature must be less than high temperature"),
        ),
        (
            "POST",
            "/command",
            cmd("set_temperature", json!({"low": 36, "high": 40})),
            400,
            failed("Low temperature must be less than high temperature"),
        ),
        (
            "POST",
            "/command",
            cmd("set_temperature", json!({"low": 25})),
            400,
            failed("Low temperature must be less than high temperature"),
        ),
        (
            "POST",
            "/command",
            cmd("set_schedule_mode", json!("ECO")),
            400,
            failed("set_schedule_mode value must be HEAT, COOL or RANGE"),
        ),
        // Schedules.
        (
            "POST",
            "/command",
            cmd(
                "set_schedule",
                json!({"ver": 3, "schedule_mode": "HEAT", "days": {}}),
            ),
            400,
            failed("Schedule ver must be 2"),
        ),
        (
            "POST",
            "/command",
            schedule_entry(json!({"time": -1, "type": "HEAT", "temp": 20})),
            400,
            failed("Day 0 entry 0: time must be a whole number of seconds from 0 to 86399"),
        ),
        (
            "POST",
            "/command",
            schedule_entry(json!({"time": 86400, "type": "HEAT", "temp": 20})),
            400,
            failed("Day 0 entry 0: time must be a whole number of seconds from 0 to 86399"),
        ),
        (
            "POST",
            "/command",
            schedule_entry(json!({"time": 0, "type": "HEAT", "temp": 32.5})),
            400,
            failed("Day 0 entry 0: temp 32.5 is outside 4.5–32 °C"),
        ),
        (
            "POST",
            "/command",
            schedule_entry(json!({"time": 0, "type": "HEAT", "temp": 4})),
            400,
            failed("Day 0 entry 0: temp 4 is outside 4.5–32 °C"),
        ),
        (
            "POST",
            "/command",
            schedule_entry(json!({"time": 0, "type": "FAN", "temp": 20})),
            400,
            failed("Day 0 entry 0: type must be HEAT, COOL or RANGE"),
        ),
        // Device settings.
        (
            "POST",
            "/command",
            cmd("set_device_setting", json!({"hvac_wires": "x"})),
            400,
            failed(
                "Fields not cloud-writable: hvac_wires. Only device bucket mode-2 fields are accepted.",
            ),
        ),
        (
            "POST",
            "/command",
            cmd("set_device_setting", json!({"learning_mode": "no"})),
            400,
            failed("learning_mode must be true or false"),
        ),
        (
            "POST",
            "/command",
            cmd("set_device_setting", json!({})),
            400,
            failed("No values to update"),
        ),
        (
            "POST",
            "/command",
            cmd("set_device_setting", json!({"target_humidity": "abc"})),
            400,
            failed("target_humidity must be a number from 0 to 100"),
        ),
        (
            "POST",
            "/command",
            cmd("set_device_setting", json!({"target_humidity": true})),
            400,
            failed("target_humidity must be a number from 0 to 100"),
        ),
        (
            "POST",
            "/command",
            cmd("set_device_setting", json!({"target_humidity": 500})),
            400,
            failed("target_humidity must be a number from 0 to 100"),
        ),
        (
            "POST",
            "/command",
            cmd("set_device_setting", json!({"fan_timer_duration": null})),
            400,
            failed("fan_timer_duration must be a number from 1 to 43200"),
        ),
        // Reads.
        (
            "GET",
            "/status",
            String::new(),
            400,
            error("Serial parameter required"),
        ),
        (
            "GET",
            "/status?serial=",
            String::new(),
            400,
            error("Serial parameter required"),
        ),
        (
            "GET",
            "/status?serial=NOPE000000000000",
            String::new(),
            404,
            error("Device not found"),
        ),
        (
            "GET",
            "/status?serial=02AA01AC%200000SIM1",
            String::new(),
            400,
            error(invalid_serial),
        ),
        (
            "GET",
            "/api/schedule",
            String::new(),
            400,
            error("Serial parameter required"),
        ),
        (
            "GET",
            "/api/schedule?serial=NOPE000000000000",
            String::new(),
            404,
            error("Device not found"),
        ),
        // Other writes.
        (
            "POST",
            "/notify-device",
            "{}".into(),
            400,
            error("Serial required"),
        ),
        (
            "POST",
            "/notify-device",
            "nope".into(),
            400,
            error("Invalid JSON"),
        ),
        (
            "POST",
            "/notify-device",
            json!({"serial": "NOPE000000000000"}).to_string(),
            404,
            error("Device not found"),
        ),
        (
            "DELETE",
            "/api/device",
            json!({"serial": "NOPE000000000000"}).to_string(),
            404,
            error("Device not found"),
        ),
        (
            "DELETE",
            "/api/device",
            "[]".into(),
            400,
            error("Request body must be a JSON object"),
        ),
        (
            "POST",
            "/api/dismiss-pairing/NOPE000000000000",
            String::new(),
            404,
            failed("Device not found"),
        ),
        (
            "POST",
            "/api/dismiss-pairing/bad%20serial",
            String::new(),
            400,
            failed(invalid_serial),
        ),
        (
            "DELETE",
            "/api/registered-devices/02AA01AC0000SIM1",
            String::new(),
            404,
            failed("Device 02AA01AC0000SIM1 not found"),
        ),
        // Claims.
        (
            "POST",
            "/api/register",
            "{".into(),
            400,
            failed("Invalid JSON"),
        ),
        (
            "POST",
            "/api/register",
            json!({"code": "625AZZP"}).to_string(),
            400,
            failed("Missing required fields: code, userId"),
        ),
        (
            "POST",
            "/api/register",
            json!({"code": "625AZ", "userId": "me"}).to_string(),
            400,
            failed("Invalid entry code format. Must be exactly 7 alphanumeric characters."),
        ),
        (
            "POST",
            "/api/register",
            json!({"code": "625AZZP", "userId": "me"}).to_string(),
            400,
            failed("Invalid, expired, or already claimed entry key"),
        ),
        (
            "POST",
            "/api/register",
            json!({"code": "625AZZP", "userId": "a b"}).to_string(),
            400,
            failed("Invalid userId: use 1 to 64 letters, digits, '_', '-', '.' or '@'"),
        ),
        // Routing.
        (
            "GET",
            "/command",
            String::new(),
            405,
            error("Method not allowed"),
        ),
        ("GET", "/nope", String::new(), 404, error("Not found")),
    ];
    for (method, target, body, status, expected) in cases {
        let r = call(s.control(), method, target, &body);
        assert_eq!(
            (r.status, r.json()),
            (status, expected),
            "{method} {target} {body}"
        );
    }
    assert_eq!(store_bytes(s.dir.path()), before, "the store changed");
    assert_eq!(
        s.app().state().read_device(SERIAL, |d| d.clone()).unwrap(),
        buckets_before
    );
    assert!(!s.app().state().device_exists("NOPE000000000000"));
    assert!(s.app().state().accounts(|a| a.owners.is_empty()));
    // Nothing was pushed: the first chunk the held subscribe gets is that of a change made
    // now (pushes leave in commit order, so one a bad input caused would have come first).
    s.server_change(
        SERIAL,
        &format!("shared.{SERIAL}"),
        json!({"marker_field": 1}),
    );
    let (_, doc) = next_push(&mut held);
    let objects = doc["objects"].as_array().unwrap();
    assert!(
        objects.len() == 1 && objects[0]["value"]["marker_field"] == json!(1),
        "a bad input pushed {doc}"
    );
}

#[test]
fn an_oversized_body_gets_413_in_the_routes_shape_and_changes_nothing() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let before = store_bytes(s.dir.path());
    let envelope = r#"{"success":false,"message":"Request body too large"}"#;
    let big = format!(
        "{{\"serial\":\"{SERIAL}\",\"command\":\"set_mode\",\"value\":\"{}\"}}",
        "x".repeat(1024 * 1024 + 1)
    );
    // Declared, chunked, and declared far beyond memory (refused unread).
    let declared = format!(
        "POST /command HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{big}",
        big.len()
    );
    let chunked = format!(
        "POST /command HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{big}\r\n0\r\n\r\n",
        big.len()
    );
    let huge =
        "POST /command HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n\r\n{".to_string();
    for (what, request) in [("declared", declared), ("chunked", chunked), ("huge", huge)] {
        let text = raw(s.control(), request.as_bytes(), TIMEOUT);
        assert!(
            text.starts_with("HTTP/1.1 413"),
            "{what}: {}",
            &text[..text.len().min(200)]
        );
        assert!(
            text.ends_with(envelope),
            "{what}: {}",
            &text[..text.len().min(300)]
        );
        assert!(
            !text
                .to_ascii_lowercase()
                .contains("access-control-allow-origin"),
            "{what}: a CORS header"
        );
    }
    // A read route answers in its own shape.
    let request = format!(
        "DELETE /api/device HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{big}",
        big.len()
    );
    let text = raw(s.control(), request.as_bytes(), TIMEOUT);
    assert!(text.ends_with(r#"{"error":"Request body too large"}"#));
    assert!(
        store_bytes(s.dir.path()) == before,
        "an oversized body changed the store"
    );
    assert_eq!(get(s.control(), "/health").status, 200);
}
