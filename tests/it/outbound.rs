//! Outbound calls never starve a port: an upstream that accepts connections and never answers
//! (the weather service, a thermostat's settings API) holds at most half of a port's workers,
//! each for a bounded time; the rest of those requests are answered at once, and `/health` on
//! both ports and a thermostat's PUT keep answering promptly.

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use common::*;
use crossbeam_channel::unbounded;
use hearth::http::client::ClientResponse;
use hearth::util::clock::ManualClock;
use parking_lot::Mutex;
use serde_json::json;

const WEATHER_DOWN: &str = r#"{"error":"Weather service unavailable"}"#;

/// A server that accepts connections and never answers, until released (then it closes them,
/// and every later one at once).
struct Hung {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    held: Arc<Mutex<Vec<TcpStream>>>,
    released: Arc<AtomicBool>,
}

impl Hung {
    fn start() -> Hung {
        common::share_process();
        Hung::serve(None)
    }

    /// Answers its first request with `body` (JSON), then hangs on every other.
    fn answering_first(body: &'static str) -> Hung {
        Hung::serve(Some(body))
    }

    fn serve(first: Option<&'static str>) -> Hung {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (accepted, held, released) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(Mutex::new(Vec::new())),
            Arc::new(AtomicBool::new(false)),
        );
        let (a, h, r) = (
            Arc::clone(&accepted),
            Arc::clone(&held),
            Arc::clone(&released),
        );
        thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                if let (0, Some(body)) = (a.fetch_add(1, Ordering::SeqCst), first) {
                    answer(&mut stream, body);
                    continue;
                }
                if !r.load(Ordering::SeqCst) {
                    h.lock().push(stream);
                }
            }
        });
        Hung {
            addr,
            accepted,
            held,
            released,
        }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    fn release(&self) {
        self.released.store(true, Ordering::SeqCst);
        self.held.lock().clear();
    }
}

impl Drop for Hung {
    fn drop(&mut self) {
        self.release();
    }
}

/// Reads a request head and answers it with a JSON body.
fn answer(stream: &mut TcpStream, body: &str) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
        head.push(byte[0]);
    }
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// What must keep answering while the outbound calls hang: `/health` on both ports and a
/// thermostat's PUT. How long they take is real time, which this does not bound: each is
/// answered within the request's own timeout (the harness's), while the hung upstreams hold
/// on until the test releases them.
fn others_are_served(s: &TestServer) {
    for addr in [s.device(), s.control()] {
        assert_eq!(get(addr, "/health").status, 200);
    }
    let r = post_json(
        s.device(),
        "/nest/transport/v7/put",
        SERIAL,
        json!({"objects": [{"object_key": format!("shared.{SERIAL}"),
                            "value": {"target_temperature": 21.5}}]}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn hung_upstreams_hold_at_most_half_of_each_ports_workers() {
    let weather = Hung::start();
    let thermostat_api = Hung::start();
    let s = TestServer::start_with(|c| {
        c.weather_url = Some(format!("http://{}/weather/v1", weather.addr));
        // Long enough that nothing here ends by running out of time: the test releases them.
        c.weather_timeout = Duration::from_secs(60);
        c.weather_wait = Duration::from_secs(60);
        c.thermostat_api_port = thermostat_api.addr.port();
    });
    assert_eq!(s.app().config().http_workers, 4);
    let [device_gate, control_gate] = s.server().outbound();
    assert_eq!((device_gate.limit(), control_gate.limit()), (2, 2));

    // Eight hung weather requests (each for another place) and eight hung configure-nest.
    let (done_tx, done) = unbounded();
    let mut calls = Vec::new();
    for i in 0..8 {
        let (addr, tx) = (s.device(), done_tx.clone());
        calls.push(thread::spawn(move || {
            let r = get(addr, &format!("/nest/weather/v1?query=9430{i},US"));
            tx.send("weather").unwrap();
            r
        }));
    }
    for _ in 0..8 {
        let (addr, tx) = (s.control(), done_tx.clone());
        calls.push(thread::spawn(move || {
            let r = call(
                addr,
                "POST",
                "/api/configure-nest",
                r#"{"ip": "127.0.0.1"}"#,
            );
            tx.send("configure").unwrap();
            r
        }));
    }
    // Two of each wait on an upstream that never answers; the twelve others are answered at
    // once, without waiting for them.
    for _ in 0..12 {
        done.recv_timeout(TIMEOUT).expect("answered at once");
    }
    wait_until("two places of each port taken", || {
        device_gate.in_use() == 2 && control_gate.in_use() == 2
    });
    wait_until("the upstreams were called", || {
        weather.accepted() == hearth::weather::MAX_FETCHES && thermostat_api.accepted() == 2
    });
    assert!(done.is_empty(), "the four waiting ones still wait");

    others_are_served(&s);
    // Another weather or configure-nest request is answered while they wait (without
    // waiting for them: they hang until released, past the request's timeout).
    let r = get(s.device(), "/nest/weather/v1?query=10001,US");
    assert_eq!((r.status, r.text().as_str()), (502, WEATHER_DOWN));
    let r = call(
        s.control(),
        "POST",
        "/api/configure-nest",
        r#"{"ip": "127.0.0.1"}"#,
    );
    let busy = json!({"success": false, "error": hearth::control::error::OUTBOUND_BUSY});
    assert_eq!((r.status, r.json()), (503, busy.clone()));
    assert_eq!(r.header("Retry-After"), Some("5"));
    let r = call(
        s.control(),
        "POST",
        "/api/scan-network",
        r#"{"subnet": "127.0.0.1/32"}"#,
    );
    assert_eq!(
        (r.status, r.json()),
        (503, json!({"error": hearth::control::error::OUTBOUND_BUSY}))
    );
    assert_eq!((device_gate.in_use(), control_gate.in_use()), (2, 2));
    assert!(done.is_empty(), "and they still wait");

    // The upstreams give up: every call ends, as a 502, and every place is given back.
    weather.release();
    thermostat_api.release();
    let answers: Vec<ClientResponse> = calls.into_iter().map(|c| c.join().unwrap()).collect();
    let (weather_answers, configure_answers) = answers.split_at(8);
    for r in weather_answers {
        assert_eq!((r.status, r.text().as_str()), (502, WEATHER_DOWN));
    }
    let refused = configure_answers.iter().filter(|r| r.status == 503).count();
    assert_eq!(refused, 6, "six were refused at once");
    for r in configure_answers {
        match r.status {
            503 => assert_eq!(r.json(), busy),
            status => assert_eq!(
                (status, r.json()["success"].clone()),
                (502, json!(false)),
                "{}",
                r.text()
            ),
        }
    }
    wait_until("every place given back", || {
        device_gate.in_use() == 0 && control_gate.in_use() == 0
    });
    wait_until("every weather fetch ended", || {
        s.app().weather().fetches_running() == 0
    });
    others_are_served(&s);
}

#[test]
fn a_cached_weather_answer_is_served_at_once_while_upstream_hangs() {
    let weather = Hung::answering_first(r#"{"now":{"temp_c":10.5}}"#);
    let s = TestServer::start_with(|c| {
        c.weather_url = Some(format!("http://{}/weather/v1", weather.addr));
        c.weather_cache_ttl_ms = 0; // every answer is old at once: always refreshed
        c.weather_timeout = Duration::from_secs(60);
    });
    let first = get(s.device(), "/nest/weather/v1?query=94304,US");
    assert_eq!(
        (first.status, first.text().as_str()),
        (200, r#"{"now":{"temp_c":10.5}}"#)
    );
    // From now on upstream hangs; the old answer is served each time, without waiting for
    // it (it hangs past the request's timeout), while one refresh waits in the background.
    for _ in 0..8 {
        let r = get(s.device(), "/nest/weather/v1?query=94304,US");
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, r#"{"now":{"temp_c":10.5}}"#)
        );
    }
    wait_until("the refresh reached upstream", || weather.accepted() == 2);
    assert_eq!(
        s.app().weather().fetches_running(),
        1,
        "one refresh at a time"
    );
    assert_eq!(
        s.server().outbound()[0].in_use(),
        0,
        "a cached answer waits on nothing"
    );
    others_are_served(&s);
}

#[test]
fn with_nothing_cached_a_slow_upstream_is_a_502_after_the_wait() {
    let weather = Hung::start();
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.weather_url = Some(format!("http://{}/weather/v1", weather.addr));
        c.weather_timeout = Duration::from_secs(60);
        c.weather_wait = Duration::from_millis(300);
        c.clock = time.clock();
    });
    // The request waits 300 ms of the server's clock for upstream, then gives up.
    let ask = || {
        let (addr, (tx, rx)) = (s.device(), crossbeam_channel::bounded(1));
        thread::spawn(move || {
            tx.send(get(addr, "/nest/weather/v1?query=94304,US"))
                .unwrap()
        });
        wait_until("the request waits for upstream", || {
            s.server().outbound()[0].in_use() == 1
        });
        time.advance(Duration::from_millis(299));
        assert!(rx.try_recv().is_err(), "gave up before the wait was over");
        time.advance(Duration::from_millis(1));
        rx.recv_timeout(TIMEOUT).expect("an answer after the wait")
    };
    let r = ask();
    assert_eq!((r.status, r.text().as_str()), (502, WEATHER_DOWN));
    // The background fetch connects in real time, which the server's clock does not wait for
    // (on a busy machine the answer can come first).
    wait_until("upstream is asked", || weather.accepted() == 1);
    // The fetch goes on in the background; a second request joins it rather than asking again.
    assert_eq!(s.app().weather().fetches_running(), 1);
    let r = ask();
    assert_eq!(r.status, 502);
    assert_eq!(
        weather.accepted(),
        1,
        "one upstream request per query at a time"
    );
    others_are_served(&s);
}

/// A redirect is the upstream's answer, not a pointer hearth follows: neither the weather
/// (`WEATHER_URL`, Open-Meteo's geocoder) nor a thermostat's settings API is asked again at the
/// place a `302` names, on another loopback address; the `302`'s own body (a JSON object)
/// counts for nothing; and the thermostat, or whoever asked, gets the usual failure.
#[test]
fn outbound_calls_follow_no_redirect() {
    use common::redirect::Upstream;
    let elsewhere = Upstream::counting("127.0.0.3:0".parse().unwrap(), r#"{"elsewhere":true}"#);
    let weather = Upstream::redirecting(
        "127.0.0.1:0".parse().unwrap(),
        elsewhere.url(),
        r#"{"redirected":true}"#,
    );
    let geocoder = Upstream::redirecting(
        "127.0.0.1:0".parse().unwrap(),
        elsewhere.url(),
        r#"{"results":[{"name":"Elsewhere","latitude":1.0,"longitude":2.0}]}"#,
    );
    let upstream = TestServer::start_with(|c| {
        c.weather_url = Some(format!("{}/weather/v1", weather.url()));
    });
    let open_meteo = TestServer::start_with(|c| {
        c.weather_provider = Some(hearth::config::WeatherProvider::OpenMeteo);
        c.open_meteo_geocoding_url = geocoder.url();
        c.open_meteo_url = geocoder.url();
    });
    for (s, redirector) in [(&upstream, &weather), (&open_meteo, &geocoder)] {
        for asked in 1..=2 {
            let r = get(s.device(), "/nest/weather/v1?query=94304,US");
            assert_eq!((r.status, r.text().as_str()), (502, WEATHER_DOWN));
            // The answer may come when the request's wait runs out, before the fetch is over.
            wait_until("the redirect answered and the fetch over", || {
                redirector.asked() == asked && s.app().weather().fetches_running() == 0
            });
        }
    }
    // A thermostat's settings API that redirects (to where a real one listens, on the same
    // port) is not a thermostat's: configure-nest is a 502 and the other is not touched.
    let real = hearth::simulator::settings_api::SettingsApi::start(
        "127.77.99.8:0".parse().unwrap(),
        hearth::simulator::settings_api::Settings {
            serial: "02AA01AC0000RDR2".into(),
            api_key: "KEY".into(),
            cloudregisterurl: Some("https://backdoor.nolongerevil.com/entry".into()),
            key_required: false,
        },
    )
    .unwrap();
    let port = real.addr().port();
    let api = Upstream::redirecting(
        ([127, 77, 99, 7], port).into(),
        format!("http://127.77.99.8:{port}"),
        r#"{"device_name":"02AA01AC0000RDR1","cloudregisterurl":"http://127.0.0.1/entry"}"#,
    );
    let s = TestServer::start_with(|c| c.thermostat_api_port = port);
    let r = call(
        s.control(),
        "POST",
        "/api/configure-nest",
        r#"{"ip": "127.77.99.7", "api_key": "KEY"}"#,
    );
    assert_eq!(
        (r.status, r.json()),
        (
            502,
            json!({"success": false,
                   "error": "That address did not answer as a thermostat's settings API"})
        )
    );
    assert_eq!(api.asked(), 1);
    assert_eq!(
        real.settings().cloudregisterurl.as_deref(),
        Some("https://backdoor.nolongerevil.com/entry")
    );
    assert_eq!(elsewhere.asked(), 0, "nothing followed a redirect");
}
