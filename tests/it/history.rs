//! Temperature history (`GET /api/history`) and the dashboard page's route (`GET /`): samples
//! on the interval and on HVAC changes, on disk; every bad query refused with nothing changed;
//! the page served self-contained, under an ingress prefix, and without a key.

use crate::common;

use std::time::Duration;

use common::*;
use hearth::http::client;
use serde_json::{Value, json};

fn history(s: &TestServer, query: &str) -> (u16, Value) {
    let r = get(s.control(), &format!("/api/history?{query}"));
    (r.status, r.json())
}

fn samples(s: &TestServer, serial: &str) -> Vec<Value> {
    let (status, body) = history(s, &format!("serial={serial}"));
    assert_eq!(status, 200, "{body}");
    body["samples"].as_array().cloned().unwrap_or_default()
}

#[test]
fn samples_come_on_the_interval_and_on_hvac_changes() {
    let s = TestServer::start_with(|c| c.history_interval = Duration::from_secs(1));
    let (mut sim, _events, _held) = booted_and_held(&s, SERIAL);
    wait_until("two periodic samples", || samples(&s, SERIAL).len() >= 2);
    let first = &samples(&s, SERIAL)[0];
    assert_eq!(first["temp"], json!(20.5));
    assert_eq!(first["target"], json!(21.0));
    assert_eq!(first["mode"], json!("heat"));
    assert_eq!(first["humidity"], json!(44.0));
    assert_eq!(
        (first["heating"].clone(), first["cooling"].clone()),
        (json!(false), json!(false))
    );

    // The heater starts: a sample records it, and the run total grows.
    sim.report("shared", "hvac_heater_state", json!(true));
    sim.put().unwrap();
    wait_until("a heating sample", || {
        samples(&s, SERIAL)
            .iter()
            .any(|x| x["heating"] == json!(true))
    });
    wait_until("heating run time", || {
        history(&s, &format!("serial={SERIAL}&hours=1")).1["heating_seconds"]
            .as_i64()
            .is_some_and(|n| n >= 1)
    });
    let (_, body) = history(&s, &format!("serial={SERIAL}&hours=168"));
    assert_eq!(body["hours"], json!(168));
    assert_eq!(body["interval_seconds"], json!(1));
    let times: Vec<i64> = body["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["t"].as_i64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");

    // On disk, under the data directory, not only in memory.
    let file = s.dir.path().join("history").join(format!("{SERIAL}.jsonl"));
    let lines = std::fs::read_to_string(&file).unwrap().lines().count();
    assert!(lines >= 3, "{lines} lines in {}", file.display());

    // Removing the thermostat keeps its history: it keeps operating, and comes back with it
    // (samples go on meanwhile).
    let r = remove_device(s.control(), SERIAL);
    assert_eq!(r.status, 200);
    wait_until("a sample after the removal", || {
        std::fs::read_to_string(&file).is_ok_and(|t| t.lines().count() > lines)
    });
    let (status, _) = history(&s, &format!("serial={SERIAL}&hours=1"));
    assert_eq!(status, 200);
}

#[test]
fn a_change_of_hvac_state_is_sampled_at_once() {
    // An hour between periodic samples: every sample here comes from a change.
    let s = TestServer::start_with(|c| c.history_interval = Duration::from_secs(3600));
    let (mut sim, _events, _held) = booted_and_held(&s, SERIAL);
    sim.report("shared", "hvac_ac_state", json!(true));
    sim.put().unwrap();
    wait_until("a cooling sample", || {
        samples(&s, SERIAL)
            .iter()
            .any(|x| x["cooling"] == json!(true))
    });
    // A reading alone, with the HVAC unchanged, adds nothing. The recorder takes changes in
    // order, so once the HVAC change that follows it is sampled, a sample of the reading
    // would be there too.
    let before = samples(&s, SERIAL).len();
    sim.report("shared", "current_temperature", json!(22.5));
    sim.put().unwrap();
    sim.report("shared", "hvac_ac_state", json!(false));
    sim.put().unwrap();
    wait_until("the sample of the cooling's end", || {
        samples(&s, SERIAL)
            .last()
            .is_some_and(|x| x["cooling"] == json!(false))
    });
    let after = samples(&s, SERIAL);
    assert_eq!(after.len(), before + 1, "{after:?}");
    assert_eq!(after[before]["temp"], json!(22.5), "{after:?}");
}

#[test]
fn bad_history_queries_are_refused_and_change_nothing() {
    let s = TestServer::start_with(|c| c.history_interval = Duration::from_secs(3600));
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    // The boot's sample is taken by the history thread, after the upload is answered.
    wait_until("the boot's sample", || !samples(&s, SERIAL).is_empty());
    let before = store_bytes(s.dir.path());
    let history_before = samples(&s, SERIAL);
    let hours = "hours must be a whole number from 1 to 168";
    for (query, status, error) in [
        (format!("serial={SERIAL}&hours=0"), 400, hours),
        (format!("serial={SERIAL}&hours=169"), 400, hours),
        (format!("serial={SERIAL}&hours=1.5"), 400, hours),
        (format!("serial={SERIAL}&hours=abc"), 400, hours),
        (format!("serial={SERIAL}&hours=-3"), 400, hours),
        ("hours=24".to_string(), 400, "Serial parameter required"),
        (
            "serial=bad!serial".to_string(),
            400,
            "Invalid serial: expected 10 to 64 letters and digits",
        ),
        (
            "serial=02AA01AC0000NONE".to_string(),
            404,
            "Device not found",
        ),
        (
            format!("serial={SERIAL}&hours=%FF"),
            400,
            "Invalid query string",
        ),
    ] {
        let (got, body) = history(&s, &query);
        assert_eq!((got, body), (status, json!({"error": error})), "{query}");
    }
    let r = call(
        s.control(),
        "POST",
        &format!("/api/history?serial={SERIAL}"),
        "{}",
    );
    assert_eq!(r.status, 405);
    assert_eq!(store_bytes(s.dir.path()), before);
    assert_eq!(samples(&s, SERIAL), history_before);
}

#[test]
fn the_dashboard_page_is_served_whole_and_honours_an_ingress_prefix() {
    let s = TestServer::start();
    let r = get(s.control(), "/");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Type"), Some("text/html; charset=utf-8"));
    let csp = r.header("Content-Security-Policy").unwrap_or("");
    assert!(
        csp.contains("default-src 'none'") && csp.contains("connect-src 'self'"),
        "{csp}"
    );
    let page = r.text();
    assert!(page.contains("<body>") && page.contains("src=\"ui/live.js\""));
    // Its parts come from under the same prefix, with the same Host rule and no key.
    let live = get(s.control(), "/ui/live.js");
    assert_eq!(live.status, 200);
    assert_eq!(
        live.header("Content-Type"),
        Some("text/javascript; charset=utf-8")
    );
    assert!(live.text().contains("api/events"));
    assert_eq!(get(s.control(), "/ui/nothing.js").status, 404);

    let with = |path: &str| {
        client::request(
            &url(s.control(), "/"),
            "GET",
            &[("X-Ingress-Path", path)],
            b"",
            TIMEOUT,
        )
        .unwrap()
        .text()
    };
    let under = with("/api/hassio_ingress/Tok3n");
    assert!(under.contains("<body data-ingress-path=\"/api/hassio_ingress/Tok3n\">"));
    assert!(under.contains("<base href=\"/api/hassio_ingress/Tok3n/\">"));
    assert!(with("/x\"><script>alert(1)</script>").contains(
        "<body data-ingress-path=\"/x&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;\">"
    ));
    // Not a path: ignored.
    assert!(with("javascript:alert(1)").contains("<body>"));
}

#[test]
fn with_control_keys_the_page_loads_and_its_data_wants_a_key() {
    let s = TestServer::start_with(|c| c.control_require_key = true);
    assert_eq!(get(s.control(), "/").status, 200);
    assert_eq!(get(s.control(), "/ui/api.js").status, 200);
    assert_eq!(get(s.control(), "/api/devices").status, 401);
    assert_eq!(
        get(s.control(), &format!("/api/history?serial={SERIAL}")).status,
        401
    );
}
