//! Outdoor weather without setup: the thermostat's `GET /nest/weather/v1?query=94304,US`
//! answered from a local fake Open-Meteo (geocoding, then the forecast) in the firmware's
//! shape; `/status`'s `outdoor_temperature`; `WEATHER_PROVIDER=off` sending nothing.

use crate::common::*;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use hearth::config::{Config, WeatherProvider};
use hearth::util::clock::ManualClock;
use parking_lot::{Condvar, Mutex};
use serde_json::{Value, json};

const FORECAST: &str = include_str!("weather/forecast.json");
const PLACE: &str = r#"{"results":[{"name":"Palo Alto","latitude":37.44,"longitude":-122.14,
    "country_code":"US","admin1":"CA","timezone":"America/Los_Angeles"}]}"#;

/// A fake Open-Meteo on one port (geocoding and forecast both): it records every request's
/// URL; postal code `00000` is a place it does not know.
pub(crate) struct FakeOpenMeteo {
    pub(crate) url: String,
    seen: Arc<Mutex<Vec<String>>>,
    /// While set, every request is answered 503.
    down: Arc<AtomicBool>,
    /// While set, a forecast request waits (its answer held back) until it is cleared.
    holding: Arc<(Mutex<bool>, Condvar)>,
}

impl FakeOpenMeteo {
    pub(crate) fn start() -> FakeOpenMeteo {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let down = Arc::new(AtomicBool::new(false));
        let holding = Arc::new((Mutex::new(false), Condvar::new()));
        let (theirs, is_down) = (Arc::clone(&seen), Arc::clone(&down));
        let held = Arc::clone(&holding);
        thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_string();
                let target = head.split(' ').nth(1).unwrap_or("").to_string();
                theirs.lock().push(target.clone());
                if target.starts_with("/v1/forecast") {
                    let mut hold = held.0.lock();
                    while *hold {
                        held.1.wait(&mut hold);
                    }
                }
                let body = match target.as_str() {
                    t if t.starts_with("/v1/search") && t.contains("name=00000") => "{}",
                    t if t.starts_with("/v1/search") => PLACE,
                    t if t.starts_with("/v1/forecast") => FORECAST,
                    _ => "{}",
                };
                let status = if is_down.load(Ordering::SeqCst) {
                    "503 Service Unavailable"
                } else {
                    "200 OK"
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        FakeOpenMeteo {
            url,
            seen,
            down,
            holding,
        }
    }

    /// Holds forecast answers back until called with `false`.
    fn hold(&self, on: bool) {
        *self.holding.0.lock() = on;
        self.holding.1.notify_all();
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().clone()
    }
}

fn open_meteo(fake: &FakeOpenMeteo) -> TestServer {
    TestServer::start_with(|c| asking(c, fake))
}

/// Open-Meteo, at the fake.
fn asking(c: &mut Config, fake: &FakeOpenMeteo) {
    c.weather_provider = Some(WeatherProvider::OpenMeteo);
    c.open_meteo_geocoding_url = fake.url.clone();
    c.open_meteo_url = fake.url.clone();
}

#[test]
fn open_meteo_is_translated_into_the_firmwares_weather() {
    let fake = FakeOpenMeteo::start();
    let s = open_meteo(&fake);
    let r = get(s.device(), "/nest/weather/v1?query=94304,US");
    assert_eq!(r.status, 200);
    let w = r.json();
    let place = &w["94304,US"];
    assert_eq!(
        place["current"],
        json!({"temp_f": 51.0, "temp_c": 10.6, "condition": "Rain", "sunrise": 1766146440,
               "sunset": 1766179980, "humidity": 90.0, "gmt_offset": "-08.00",
               "wind_dir": "WSW", "wind_mph": 19.0, "icon": "rain"})
    );
    assert_eq!(place["location"]["zip"], "94304");
    assert_eq!(place["location"]["city"], "Palo Alto");
    assert_eq!(place["location"]["country"], "US");
    assert_eq!(place["location"]["timezone_long"], "America/Los_Angeles");
    assert_eq!(
        place["forecast"]["daily"][0],
        json!({"temp_low_f": 28.0, "temp_low_c": -2.2, "temp_high_f": 58.0,
               "temp_high_c": 14.4, "condition": "Rain", "icon": "rain", "date": 1766131200})
    );
    // The hours from the current one on (Open-Meteo's begin at midnight).
    assert_eq!(place["forecast"]["hourly"].as_array().unwrap().len(), 2);
    assert_eq!(place["forecast"]["hourly"][0]["temp_c"], 11.7);
    assert_eq!(place["forecast"]["hourly"][0]["hour"], 1);

    // Only the postal code and country went to the geocoder, then its coordinates to the
    // forecast.
    let seen = fake.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(
        seen[0].starts_with("/v1/search?name=94304&countryCode=US"),
        "{seen:?}"
    );
    assert!(
        seen[1].starts_with("/v1/forecast?latitude=37.44&longitude=-122.14"),
        "{seen:?}"
    );

    // Cached per place: asked again, nobody is asked.
    assert_eq!(get(s.device(), "/nest/weather/v1?query=94304,US").json(), w);
    assert_eq!(fake.seen().len(), 2);
}

#[test]
fn a_place_open_meteo_does_not_know_or_a_query_without_one_is_refused() {
    let fake = FakeOpenMeteo::start();
    let s = open_meteo(&fake);
    let unknown = get(s.device(), "/nest/weather/v1?query=00000,US");
    assert_eq!(
        (unknown.status, unknown.json()),
        (502, json!({"error": "Weather service unavailable"}))
    );
    assert_eq!(
        fake.seen().len(),
        1,
        "the geocoder was asked, not the forecast"
    );
    for bad in ["", "?query=", "?query=94304,USA", "?query=a%2Fb,US"] {
        let r = get(s.device(), &format!("/nest/weather/v1{bad}"));
        assert_eq!(
            (r.status, r.json()),
            (
                400,
                json!({"error": "Invalid weather query: expected query=<postal code>,<country> (e.g. query=94304,US)"})
            ),
            "{bad:?}"
        );
    }
    assert_eq!(fake.seen().len(), 1, "a bad query asks nobody");
}

#[test]
fn status_shows_the_outdoor_temperature_of_the_thermostats_place() {
    let fake = FakeOpenMeteo::start();
    let s = open_meteo(&fake);
    let status = |s: &TestServer| get(s.control(), &format!("/status?serial={SERIAL}")).json();
    s.server_change(
        SERIAL,
        &device(),
        json!({"postal_code": "94304", "country_code": "US"}),
    );
    assert_eq!(
        status(&s)["outdoor_temperature"],
        Value::Null,
        "no answer yet"
    );
    assert_eq!(
        get(s.device(), "/nest/weather/v1?query=94304,US").status,
        200
    );
    assert_eq!(status(&s)["outdoor_temperature"], json!(10.6));
}

#[test]
fn the_answer_is_keyed_as_the_thermostat_asked_and_status_finds_its_place() {
    let fake = FakeOpenMeteo::start();
    let s = open_meteo(&fake);
    let r = get(s.device(), "/nest/weather/v1?query=sw1a%201aa,gb");
    assert_eq!(r.status, 200);
    let w = r.json();
    assert_eq!(
        w.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["sw1a 1aa,gb"]
    );
    assert!(
        fake.seen()[0].contains("countryCode=GB"),
        "{:?}",
        fake.seen()
    );
    s.server_change(
        SERIAL,
        &device(),
        json!({"postal_code": "SW1A 1AA", "country_code": "GB"}),
    );
    let status = get(s.control(), &format!("/status?serial={SERIAL}")).json();
    assert_eq!(status["outdoor_temperature"], json!(10.6));
}

#[test]
fn offline_the_last_answer_is_served_else_a_clear_502() {
    let fake = FakeOpenMeteo::start();
    let s = TestServer::start_with(|c| {
        c.weather_provider = Some(WeatherProvider::OpenMeteo);
        c.open_meteo_geocoding_url = fake.url.clone();
        c.open_meteo_url = fake.url.clone();
        c.weather_cache_ttl_ms = 0; // always ask again
    });
    let first = get(s.device(), "/nest/weather/v1?query=94304,US");
    assert_eq!(first.status, 200);
    fake.down.store(true, Ordering::SeqCst);
    let asked = fake.seen().len();
    let stale = get(s.device(), "/nest/weather/v1?query=94304,US");
    assert_eq!((stale.status, stale.json()), (200, first.json()));
    wait_until("the refresh was tried", || fake.seen().len() > asked);
    wait_until("the refresh ended", || {
        s.app().weather().fetches_running() == 0
    });
    let never = get(s.device(), "/nest/weather/v1?query=10001,US");
    assert_eq!(
        (never.status, never.json()),
        (502, json!({"error": "Weather service unavailable"}))
    );
}

#[test]
fn off_sends_nothing_anywhere() {
    let fake = FakeOpenMeteo::start();
    let on = open_meteo(&fake);
    // The same request with Open-Meteo on reaches the fake: it would have been seen.
    assert_eq!(
        get(on.device(), "/nest/weather/v1?query=94304,US").status,
        200
    );
    let before = fake.seen().len();
    assert!(before > 0);
    let off = TestServer::start_with(|c| {
        c.weather_provider = Some(WeatherProvider::Off);
        c.weather_url = Some(format!("{}/weather/v1", fake.url));
        c.open_meteo_geocoding_url = fake.url.clone();
        c.open_meteo_url = fake.url.clone();
    });
    for q in ["?query=10001,US", "?query=94304,US", ""] {
        let r = get(off.device(), &format!("/nest/weather/v1{q}"));
        assert_eq!(
            (r.status, r.json()),
            (502, json!({"error": "Weather service unavailable"}))
        );
    }
    assert_eq!(fake.seen().len(), before, "off asked nobody");
}

#[test]
fn one_place_however_spelled_or_by_however_many_thermostats_is_fetched_once() {
    let fake = FakeOpenMeteo::start();
    let s = open_meteo(&fake);
    let first = get(s.device(), "/nest/weather/v1?query=94304,US").json();
    assert_eq!(fake.seen().len(), 2, "geocoding, then the forecast");
    // Another thermostat there, and the same place spelled three other ways.
    for asked in ["94304,US", "94304,us", "%2094304%20,%20US", "94304"] {
        let r = get_as(
            s.device(),
            &format!("/nest/weather/v1?query={asked}"),
            "02AA01AC4912345B",
        );
        assert_eq!(r.status, 200, "{asked}");
        let w = r.json();
        let keys: Vec<&String> = w.as_object().unwrap().keys().collect();
        let as_sent = asked.replace("%20", " ");
        assert_eq!(keys, [&as_sent], "keyed as that thermostat asked");
        assert_eq!(w[&as_sent], first["94304,US"], "one answer");
    }
    assert_eq!(
        fake.seen().len(),
        2,
        "nobody asked again: {:?}",
        fake.seen()
    );
    // Another place is another fetch (the geocoder, then its forecast).
    assert_eq!(
        get(s.device(), "/nest/weather/v1?query=10001,US").status,
        200
    );
    assert_eq!(fake.seen().len(), 4, "{:?}", fake.seen());
}

#[test]
fn weather_url_keeps_keying_by_the_full_query() {
    let fake = FakeOpenMeteo::start();
    let s = TestServer::start_with(|c| {
        c.weather_provider = Some(WeatherProvider::Upstream);
        c.weather_url = Some(format!("{}/weather/v1", fake.url));
    });
    for (asked, seen) in [("94304,US", 1), ("94304,US", 1), ("94304,us", 2)] {
        let r = get(s.device(), &format!("/nest/weather/v1?query={asked}"));
        assert_eq!(r.status, 200, "{asked}");
        assert_eq!(fake.seen().len(), seen, "{:?}", fake.seen());
    }
    let seen = fake.seen();
    assert_eq!(
        seen,
        [
            "/weather/v1?query=94304,US".to_string(),
            "/weather/v1?query=94304,us".to_string()
        ]
    );
}

#[test]
fn after_a_restart_status_shows_the_last_reading_while_it_is_fresh() {
    let fake = FakeOpenMeteo::start();
    let time = ManualClock::starting_now();
    let configure = |c: &mut Config| {
        asking(c, &fake);
        c.clock = time.clock();
    };
    let s = TestServer::start_with(configure);
    s.server_change(
        SERIAL,
        &device(),
        json!({"postal_code": "94304", "country_code": "US"}),
    );
    assert_eq!(
        get(s.device(), "/nest/weather/v1?query=94304,US").status,
        200
    );
    let status = |addr| get(addr, &format!("/status?serial={SERIAL}")).json();
    assert_eq!(status(s.control())["outdoor_temperature"], json!(10.6));
    let asked = fake.seen().len();
    let dir = s.stop();

    let mut config = Config::local(dir.path());
    config.api_origin = hearth::config::ApiOrigin::parse("http://127.0.0.1").ok();
    configure(&mut config);
    let again = start_server(config);
    let control = again.control_addr();
    assert_eq!(
        status(control)["outdoor_temperature"],
        json!(10.6),
        "the last reading, at once"
    );
    assert_eq!(fake.seen().len(), asked, "without asking anyone");
    // An hour after it was fetched (the cache's 10 minutes are shorter), it is no longer shown.
    time.advance(std::time::Duration::from_secs(3599));
    assert_eq!(status(control)["outdoor_temperature"], json!(10.6));
    time.advance(std::time::Duration::from_secs(1));
    assert_eq!(status(control)["outdoor_temperature"], Value::Null, "stale");
    again.shutdown();
    drop(dir);
}

#[test]
fn the_hosted_status_carries_the_outdoor_temperature_beside_the_buckets() {
    let fake = FakeOpenMeteo::start();
    let s = open_meteo(&fake);
    s.server_change(
        SERIAL,
        &device(),
        json!({"postal_code": "94304", "country_code": "US"}),
    );
    let key = crate::common::hosted::new_key(&s, "owner", "read", &[]);
    let hosted = |s: &TestServer| {
        let path = format!("/thermostat/{SERIAL}/status");
        let r = crate::common::hosted::api(s, "GET", &path, &key, Value::Null);
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
    };
    let before = hosted(&s);
    assert_eq!(before["outdoor_temperature"], Value::Null, "no answer yet");
    assert_eq!(
        get(s.device(), "/nest/weather/v1?query=94304,US").status,
        200
    );
    let after = hosted(&s);
    assert_eq!(after["outdoor_temperature"], json!(10.6));
    let keys: Vec<&String> = after.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "device",
            "state",
            "outdoor_temperature",
            "battery_percent",
            "last_change"
        ]
    );
    assert_eq!(after["state"], before["state"], "no bucket gained a field");
}

#[test]
fn the_energy_history_is_fed_only_fresh_outdoor_readings() {
    let fake = FakeOpenMeteo::start();
    // 2026-03-10 10:00 UTC, on a sample's boundary.
    let time = ManualClock::at(1_773_136_800_000);
    let s = TestServer::start_with(|c| {
        asking(c, &fake);
        c.clock = time.clock();
        c.history_interval = std::time::Duration::from_secs(300);
        // Still counted as connected when the clock jumps (samples are of connected ones).
        c.availability_timeout = std::time::Duration::from_secs(86_400);
    });
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    assert_eq!(
        get(s.device(), "/nest/weather/v1?query=94304,US").status,
        200
    );
    // (indoor readings, outdoor readings) of today's row.
    let counts = || {
        s.app()
            .energy()
            .get(SERIAL)
            .map(|(_, day)| (day.indoor_n, day.outdoor_n))
    };
    let sampled = |want: (u32, u32)| {
        poll_until(std::time::Duration::from_secs(10), || {
            counts() == Some(want)
        });
        assert_eq!(counts(), Some(want), "after a sample");
    };
    let minutes = |m: u64| std::time::Duration::from_secs(m * 60);
    time.advance(minutes(5));
    sampled((1, 1));
    // 55 minutes after the reading was fetched it is still fresh: it is taken.
    time.advance(minutes(50));
    sampled((2, 2));
    // An hour after, it is not: the sample has its indoor reading and no outdoor one.
    time.advance(minutes(5));
    sampled((3, 2));
}

#[test]
fn thermostats_asking_for_one_place_at_once_wait_on_one_fetch() {
    let fake = FakeOpenMeteo::start();
    fake.hold(true);
    let s = TestServer::start_with(|c| {
        asking(c, &fake);
        c.http_workers = 8;
        // Long enough that the held answer is waited for on a loaded machine.
        c.weather_timeout = std::time::Duration::from_secs(30);
        c.weather_wait = std::time::Duration::from_secs(30);
    });
    let device = s.device();
    let askers: Vec<_> = ["94304,US", "94304,us"]
        .into_iter()
        .map(|q| thread::spawn(move || get(device, &format!("/nest/weather/v1?query={q}"))))
        .collect();
    wait_until("both requests waiting", || {
        s.server().outbound()[0].in_use() == 2
    });
    assert_eq!(s.app().weather().fetches_running(), 1, "one fetch for both");
    fake.hold(false);
    for asker in askers {
        assert_eq!(asker.join().unwrap().status, 200);
    }
    assert_eq!(fake.seen().len(), 2, "{:?}", fake.seen());
}
