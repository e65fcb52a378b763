//! Black-box tests of the device port's ancillary routes: entry, info, ping, pro_info, health,
//! bucket listing, passphrase, upload, weather, unknown routes.

use crate::common;

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use hearth::util::clock::ManualClock;
use serde_json::{Value, json};

#[test]
fn entry_hands_out_urls_with_an_explicit_port() {
    let s = TestServer::start();
    let port = s.device().port();
    let o = format!("http://127.0.0.1:{port}");
    for r in [
        get(s.device(), "/nest/entry"),
        post_as(
            s.device(),
            "/entry",
            SERIAL,
            b"reset=FALSE&mac=18B4300A0001&model=Display-2.12",
        ),
    ] {
        assert_eq!(r.status, 200);
        let b = r.json();
        assert_eq!(b["transport_url"], json!(format!("{o}/nest/transport")));
        assert_eq!(b["czfe_url"], json!(format!("{o}/nest/transport")));
        assert_eq!(
            b["direct_transport_url"],
            json!(format!("{o}/nest/transport"))
        );
        assert_eq!(
            b["ping_url"],
            json!(format!("{o}/nest/transport")),
            "ping_url points at transport"
        );
        assert_eq!(b["passphrase_url"], json!(format!("{o}/nest/passphrase")));
        assert_eq!(
            b["weather_url"],
            json!(format!("{o}/nest/weather/v1?query="))
        );
        assert_eq!(b["upload_url"], json!(format!("{o}/nest/upload")));
        assert_eq!(b["pro_info_url"], json!(format!("{o}/nest/pro_info")));
        assert_eq!(b["software_update_url"], json!(""));
        assert_eq!(b["tier_name"], json!("local"));
    }
}

#[test]
fn entry_keeps_a_configured_port() {
    let s = TestServer::start_with(|c| {
        c.api_origin =
            Some(hearth::config::ApiOrigin::parse("https://nest.example.com:9543").unwrap())
    });
    let b = get(s.device(), "/entry").json();
    assert_eq!(
        b["transport_url"],
        json!("https://nest.example.com:9543/nest/transport")
    );
}

#[test]
fn info_and_health_answer_on_both_ports() {
    let s = TestServer::start_with(|c| c.require_device_pairing = true);
    let port = s.device().port();
    for addr in [s.device(), s.control()] {
        let info = get(addr, "/info");
        assert_eq!(info.status, 200);
        let b = info.json();
        assert_eq!(b["server"], json!("nolongerevil"));
        assert_eq!(
            b["cloudregisterurl"],
            json!(format!("http://127.0.0.1:{port}/entry"))
        );
        assert_eq!(b["api_origin"], json!("http://127.0.0.1"));
        assert_eq!(b["ip"], json!("127.0.0.1"));
        assert_eq!(b["port"], json!(port));
        assert_eq!(b["ssl"], json!(false));
        assert_eq!(b["require_device_pairing"], json!(true));
        assert_eq!(b["entry_key_ttl_seconds"], json!(3600));
        assert!(b["version"].is_string());
        let health = get(addr, "/health");
        assert_eq!(
            (health.status, health.json()),
            (200, json!({"status": "ok"}))
        );
    }
}

#[test]
fn ping_pro_info_and_unknown_routes() {
    let s = TestServer::start();
    let ping = get(s.device(), "/nest/ping");
    assert_eq!(ping.json()["status"], json!("ok"));
    assert!(ping.json()["timestamp"].as_i64().unwrap() > 1_700_000_000_000);
    assert_eq!(get(s.device(), "/ping/").status, 200, "legacy path");
    let posted = post_as(s.device(), "/nest/ping", SERIAL, b"");
    assert_eq!(
        (posted.status, posted.json()),
        (405, json!({"error": "Method not allowed"}))
    );
    let pro = get(s.device(), "/pro_info/ABC123");
    assert_eq!(pro.json()["pro_id"], json!("ABC123"));
    assert_eq!(pro.json()["dba"], json!("nolongerevil"));
    let missing = get(s.device(), "/nope");
    assert_eq!(
        (missing.status, missing.json()),
        (404, json!({"error": "Not found"}))
    );
    assert_eq!(get(s.control(), "/nope").status, 404);
}

#[test]
fn listing_gives_metadata_only_in_both_path_forms() {
    let s = TestServer::start();
    post_json(
        s.device(),
        "/nest/transport/v7/put",
        SERIAL,
        json!({"objects": [
            {"object_key": format!("device.{SERIAL}"), "value": {"current_humidity": 44}},
            {"object_key": format!("shared.{SERIAL}"), "value": {"current_temperature": 20.5}}
        ]}),
    );
    for target in [
        format!("/nest/transport/device/{SERIAL}"),
        format!("/transport/v7/device/device.{SERIAL}"),
    ] {
        let r = get_as(s.device(), &target, SERIAL);
        assert_eq!(r.status, 200);
        assert!(r.header("X-nl-service-timestamp").is_some());
        assert_wire_order(&r.text());
        let body = r.json();
        let keys: Vec<&str> = body["objects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["object_key"].as_str().unwrap())
            .collect();
        assert_eq!(
            keys,
            vec![format!("device.{SERIAL}"), format!("shared.{SERIAL}")]
        );
        assert!(!r.text().contains("\"value\""));
    }
    let unknown = get(s.device(), "/nest/transport/device/UNKNOWN0000SERIAL");
    assert_eq!(unknown.json(), json!({"objects": []}));
    let no_serial = get(s.device(), "/nest/transport/v7/other");
    assert_eq!(
        (no_serial.status, no_serial.json()),
        (400, json!({"error": "Serial required"}))
    );
}

#[test]
fn passphrase_reuses_an_active_key_and_creates_the_pairing_dialog() {
    let s = TestServer::start();
    let none = get_as(s.device(), "/nest/passphrase/status", SERIAL).json();
    assert_eq!(
        none,
        json!({"status": "no_key", "claimed": false, "message": "No entry key found for this device"})
    );

    let first = get_as(s.device(), "/nest/passphrase", SERIAL);
    assert_eq!(first.status, 200);
    let b = first.json();
    let code = b["value"].as_str().unwrap().to_string();
    assert_eq!(code.len(), 7);
    assert!(
        code[..3].chars().all(|c| c.is_ascii_digit())
            && code[3..].chars().all(|c| c.is_ascii_uppercase()),
        "{code}"
    );
    assert!(b["expires"].is_i64(), "expires must be a JSON number");
    let expires = b["expires"].as_i64().unwrap();
    assert!(expires > hearth::util::clock::now_ms() + 3_500_000);

    for _ in 0..3 {
        let again = get_as(s.device(), "/passphrase", SERIAL);
        assert_eq!(again.status, 200, "a second call never fails");
        assert_eq!(again.json(), json!({"value": code, "expires": expires}));
    }
    let status = get_as(s.device(), "/nest/passphrase/status", SERIAL).json();
    assert_eq!(
        status,
        json!({"status": "pending", "claimed": false, "expiresAt": expires})
    );

    let dialog = s
        .bucket(SERIAL, &format!("device_alert_dialog.{SERIAL}"))
        .expect("dialog bucket");
    assert_eq!(
        Value::Object(dialog.value.to_map()),
        json!({"dialog_data": "", "dialog_id": "confirm-pairing"})
    );

    let other = get_as(s.device(), "/nest/passphrase", "02AA01AC0000SIM2").json();
    assert_ne!(
        other["value"],
        json!(code),
        "each thermostat gets its own key"
    );
    let missing = get(s.device(), "/nest/passphrase");
    assert_eq!(
        (missing.status, missing.json()),
        (400, json!({"error": "Device serial required"}))
    );
}

#[test]
fn an_expired_entry_key_is_replaced() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.entry_key_ttl_secs = 60;
        c.clock = time.clock();
    });
    let first = get_as(s.device(), "/nest/passphrase", SERIAL).json();
    assert_eq!(first["expires"], json!(time.now_ms() + 60_000));
    time.advance(Duration::from_millis(59_999));
    let same = get_as(s.device(), "/nest/passphrase", SERIAL).json();
    assert_eq!(
        same, first,
        "a millisecond before it expires, the key is given again"
    );
    time.advance(Duration::from_millis(1));
    let second = get_as(s.device(), "/nest/passphrase", SERIAL);
    assert_eq!(second.status, 200);
    assert_ne!(second.json()["value"], first["value"]);
    assert_eq!(second.json()["expires"], json!(time.now_ms() + 60_000));
    let keys = s.app().state().accounts(|a| a.entry_keys.len());
    assert_eq!(keys, 1, "older keys of the serial are dropped");
}

#[test]
fn uploads_are_stored_as_received_and_never_overwritten() {
    let s = TestServer::start_with(|c| c.store_device_logs = true);
    let text = b"log line one\nlog line two\n".to_vec();
    let gzip = vec![0x1f, 0x8b, 0x08, 0x00, 1, 2, 3, 4];
    for body in [&text, &text, &gzip] {
        let r = post_as(s.device(), "/upload", SERIAL, body);
        assert_eq!((r.status, r.json()), (200, json!({"status": "ok"})));
    }
    let dir = s.dir.path().join("device-logs").join(SERIAL);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().to_string(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    assert_eq!(files.len(), 3, "{files:?}");
    assert_eq!(files.iter().filter(|(n, _)| n.ends_with(".log")).count(), 2);
    assert_eq!(
        files
            .iter()
            .filter(|(n, b)| n.ends_with(".log.gz") && *b == gzip)
            .count(),
        1
    );
    assert!(
        files
            .iter()
            .filter(|(n, _)| n.ends_with(".log"))
            .all(|(_, b)| *b == text)
    );
}

/// Every kept upload under `dir` (`<serial>/<file>`) with its bytes, sorted.
fn kept_logs(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut kept = Vec::new();
    for serial in std::fs::read_dir(dir).unwrap().flatten() {
        for file in std::fs::read_dir(serial.path()).unwrap().flatten() {
            let name = format!(
                "{}/{}",
                serial.file_name().to_string_lossy(),
                file.file_name().to_string_lossy()
            );
            kept.push((name, std::fs::read(file.path()).unwrap()));
        }
    }
    kept.sort();
    kept
}

/// Makes a kept upload look `age` old (uploads in one test come faster than the file system's
/// clock ticks, and the oldest is what goes first).
fn age(dir: &std::path::Path, body: &[u8], age: Duration) {
    for (name, bytes) in kept_logs(dir) {
        if bytes == body {
            let file = std::fs::File::options()
                .write(true)
                .open(dir.join(name))
                .unwrap();
            file.set_modified(std::time::SystemTime::now() - age)
                .unwrap();
        }
    }
}

#[test]
fn kept_uploads_stay_within_the_quota_the_oldest_deleted_first() {
    const OTHER: &str = "02AA01AC0000SIM2";
    let s = TestServer::start_with(|c| {
        c.store_device_logs = true;
        c.device_logs_max_mb = 1;
    });
    let dir = s.dir.path().join("device-logs");
    let ok = (200, json!({"status": "ok"}));
    let part = |fill: u8| vec![fill; 400 * 1024];
    let (a, b, c) = (part(b'a'), part(b'b'), part(b'c'));
    let r = post_as(s.device(), "/nest/upload", SERIAL, &a);
    assert_eq!((r.status, r.json()), ok);
    age(&dir, &a, Duration::from_secs(7200));
    let r = post_as(s.device(), "/nest/upload", OTHER, &b);
    assert_eq!((r.status, r.json()), ok);
    age(&dir, &b, Duration::from_secs(3600));
    assert_eq!(kept_logs(&dir).len(), 2, "800 KiB fit in 1 MiB");
    // A third 400 KiB would make 1200: the oldest (a, another thermostat's than b) goes.
    let r = post_as(s.device(), "/nest/upload", SERIAL, &c);
    assert_eq!((r.status, r.json()), ok);
    let kept: Vec<Vec<u8>> = kept_logs(&dir).into_iter().map(|(_, b)| b).collect();
    assert_eq!(kept.len(), 2);
    assert!(kept.contains(&b) && kept.contains(&c), "a was deleted");
    // One upload larger than the whole quota: 413, and nothing is deleted or written.
    let before = kept_logs(&dir);
    let r = post_as(
        s.device(),
        "/nest/upload",
        SERIAL,
        &vec![b'x'; 1024 * 1024 + 1],
    );
    assert_eq!(
        (r.status, r.json()),
        (
            413,
            json!({"error": "Upload larger than the device log quota (1 MiB, DEVICE_LOGS_MAX_MB)"})
        )
    );
    assert_eq!(kept_logs(&dir), before);
    // Exactly the quota fits (everything else goes), and the port serves on.
    let whole = vec![b'w'; 1024 * 1024];
    let r = post_as(s.device(), "/nest/upload", OTHER, &whole);
    assert_eq!((r.status, r.json()), ok);
    let kept: Vec<Vec<u8>> = kept_logs(&dir).into_iter().map(|(_, b)| b).collect();
    assert_eq!(kept, vec![whole]);
    assert_eq!(get(s.device(), "/health").status, 200);
}

#[test]
fn each_kept_upload_counts_at_least_4_kib_and_empty_directories_go() {
    let s = TestServer::start_with(|c| {
        c.store_device_logs = true;
        c.device_logs_max_mb = 1;
        // 300 thermostats from one address, more than it may add (`tests/it/minted.rs`).
        c.max_new_thermostats_per_client = 0;
    });
    let dir = s.dir.path().join("device-logs");
    let ok = (200, json!({"status": "ok"}));
    // An empty upload is refused and writes nothing.
    let r = post_as(s.device(), "/nest/upload", SERIAL, b"");
    assert_eq!(
        (r.status, r.text().as_str()),
        (400, r#"{"error":"Empty upload: no log to store"}"#)
    );
    assert!(!dir.exists(), "nothing written");
    // 300 one-byte uploads from 300 thermostats: each counts 4 KiB, so 1 MiB keeps 256, and
    // the directories of the thermostats whose last upload went are gone with it.
    let serial = |i: usize| format!("02AA01AC0000{i:04}");
    for i in 0..300 {
        let r = post_as(s.device(), "/nest/upload", &serial(i), b"x");
        assert_eq!((r.status, r.json()), ok, "upload {i}");
    }
    let kept = kept_logs(&dir);
    assert_eq!(kept.len(), 256, "1 MiB / 4 KiB");
    let dirs = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(dirs, 256, "no empty directory is left");
    // The oldest went first (a file's time may be coarse, so only the ends are compared).
    let names: Vec<&str> = kept.iter().map(|(name, _)| &name[..16]).collect();
    assert!(
        !names.contains(&serial(0).as_str()),
        "the first upload went"
    );
    assert!(
        names.contains(&serial(299).as_str()),
        "the last upload is kept"
    );
    // The port serves on, and a thermostat's upload is still kept.
    assert_eq!(get(s.device(), "/health").status, 200);
    let r = post_as(s.device(), "/nest/upload", SERIAL, b"log");
    assert_eq!((r.status, r.json()), ok);
    assert!(
        kept_logs(&dir)
            .iter()
            .any(|(name, body)| { name.starts_with(SERIAL) && body == b"log" })
    );
}

#[test]
fn uploads_are_acknowledged_but_not_kept_by_default() {
    let s = TestServer::start();
    assert_eq!(
        post_as(s.device(), "/nest/upload", SERIAL, b"x").status,
        200
    );
    assert!(!s.dir.path().join("device-logs").exists());
}

#[test]
fn weather_without_an_upstream_is_a_502_at_once() {
    // At once: the answer comes while the server's clock stands still, so it waited for none
    // of the clock's deadlines (the weather wait among them).
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| c.clock = time.clock());
    let r = get(s.device(), "/nest/weather/v1?query=94304,US");
    assert_eq!(
        (r.status, r.json()),
        (502, json!({"error": "Weather service unavailable"}))
    );
}

/// A tiny upstream: answers `{"<query>": {...}}`; `mode` 0 = answer, 1 = fail (500),
/// 2 = hang without answering (until it is dropped).
struct WeatherUpstream {
    url: String,
    /// Dropped first, which lets go of the requests it hangs on.
    release: Option<crossbeam_channel::Sender<()>>,
    served: Option<hearth::http::Served>,
}

fn weather_upstream(mode: Arc<AtomicUsize>, hits: Arc<AtomicUsize>) -> WeatherUpstream {
    common::share_process();
    use hearth::http::{Reply, Request, Response};
    let (release, hang) = crossbeam_channel::bounded::<()>(0);
    let listener = hearth::http::serve(
        "fake-weather",
        ([127, 0, 0, 1], 0).into(),
        move |rq: Request| {
            hits.fetch_add(1, Ordering::SeqCst);
            let text = |status: u16, body: String| {
                Reply::Full(Response {
                    status,
                    headers: vec![("Content-Type".into(), "text/plain; charset=UTF-8".into())],
                    body: body.into_bytes(),
                })
            };
            match mode.load(Ordering::SeqCst) {
                0 => {
                    let query = rq.query;
                    let body = json!({ query: {"current": {"temp_c": 10.6}} }).to_string();
                    text(200, body)
                }
                1 => text(500, "down".into()),
                _ => {
                    let _ = hang.recv();
                    text(500, "released".into())
                }
            }
        },
    )
    .unwrap();
    WeatherUpstream {
        url: format!("http://{}/weather/v1", listener.addr()),
        release: Some(release),
        served: Some(listener),
    }
}

impl Drop for WeatherUpstream {
    fn drop(&mut self) {
        drop(self.release.take());
        drop(self.served.take());
    }
}

#[test]
fn weather_is_proxied_cached_per_query_and_falls_back_to_the_last_answer() {
    let (mode, hits) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let upstream = weather_upstream(Arc::clone(&mode), Arc::clone(&hits));
    let s = TestServer::start_with(|c| {
        c.weather_url = Some(upstream.url.clone());
        c.weather_cache_ttl_ms = 0; // always ask upstream first
        c.weather_timeout = Duration::from_millis(500);
    });
    let a = get(s.device(), "/nest/weather/v1?query=94304,US");
    assert_eq!(a.status, 200);
    assert_eq!(
        a.json(),
        json!({"query=94304,US": {"current": {"temp_c": 10.6}}})
    );
    let b = get(s.device(), "/weather/v1?query=10001,US");
    assert_eq!(
        b.json(),
        json!({"query=10001,US": {"current": {"temp_c": 10.6}}}),
        "cache is per query"
    );

    mode.store(1, Ordering::SeqCst);
    let stale = get(s.device(), "/nest/weather/v1?query=94304,US");
    assert_eq!(
        (stale.status, stale.json()),
        (200, a.json()),
        "upstream error: last answer for that query"
    );
    let uncached = get(s.device(), "/nest/weather/v1?query=60601,US");
    assert_eq!(
        (uncached.status, uncached.json()),
        (502, json!({"error": "Weather service unavailable"}))
    );

    // A hanging upstream: the last answer. How long that takes is real time (the upstream's
    // socket timeout), which this does not bound beyond the request's own timeout.
    mode.store(2, Ordering::SeqCst);
    let hung = get(s.device(), "/nest/weather/v1?query=10001,US");
    assert_eq!(
        (hung.status, hung.json()),
        (200, b.json()),
        "a hanging upstream: last answer"
    );
}

#[test]
fn a_fresh_weather_answer_is_served_from_the_cache() {
    let (mode, hits) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let upstream = weather_upstream(mode, Arc::clone(&hits));
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.weather_url = Some(upstream.url.clone());
        c.weather_cache_ttl_ms = 600_000;
        c.clock = time.clock();
    });
    let weather = || get(s.device(), "/nest/weather/v1?query=94304,US").status;
    for _ in 0..3 {
        assert_eq!(weather(), 200);
    }
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    // Still fresh a millisecond before its time is up; asked for again once it is.
    time.advance(Duration::from_millis(599_999));
    assert_eq!(weather(), 200);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    time.advance(Duration::from_millis(1));
    assert_eq!(weather(), 200, "the stale answer is served at once");
    wait_until("a stale answer is fetched again, in the background", || {
        hits.load(Ordering::SeqCst) == 2
    });
    wait_until("the refresh ends", || {
        s.app().weather().fetches_running() == 0
    });
    assert_eq!(weather(), 200);
    assert_eq!(hits.load(Ordering::SeqCst), 2, "the new answer is fresh");
}

#[test]
fn head_requests_and_http10_get_answers() {
    let s = TestServer::start();
    let text = raw(
        s.device(),
        b"GET /nest/ping HTTP/1.0\r\n\r\n",
        Duration::from_secs(5),
    );
    assert!(text.starts_with("HTTP/1.0 200"), "{text}");
    let mut sock = std::net::TcpStream::connect(s.device()).unwrap();
    std::io::Write::write_all(
        &mut sock,
        b"HEAD /health HTTP/1.1\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut out = String::new();
    sock.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
}
