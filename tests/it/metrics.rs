//! `GET /metrics` (docs/metrics.md): the Prometheus text format 0.0.4, read back by a small
//! parser written here (every sample under a `# TYPE` of its family, label values unescaped),
//! and by `promtool check metrics` where Debian's prometheus package is installed.

use crate::common;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

use common::*;
use hearth::http::client;
use serde_json::json;

type Labels = BTreeMap<String, String>;

/// One scrape, parsed: each family's type and help, and every sample.
pub(crate) struct Scrape {
    types: BTreeMap<String, String>,
    helps: BTreeMap<String, String>,
    samples: Vec<(String, Labels, f64)>,
}

impl Scrape {
    /// Panics on anything the 0.0.4 text format does not allow.
    pub(crate) fn parse(text: &str) -> Scrape {
        let mut s = Scrape {
            types: BTreeMap::new(),
            helps: BTreeMap::new(),
            samples: Vec::new(),
        };
        assert!(text.ends_with('\n'), "the last line ends with a newline");
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, help) = rest.split_once(' ').expect("HELP has a text");
                assert!(s.helps.insert(name.into(), help.into()).is_none(), "{line}");
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("TYPE has a type");
                assert!(["gauge", "counter", "histogram"].contains(&kind), "{line}");
                assert!(s.helps.contains_key(name), "HELP before TYPE: {line}");
                assert!(s.types.insert(name.into(), kind.into()).is_none(), "{line}");
            } else {
                let sample = sample(line);
                let family = family_of(&sample.0, &s.types);
                assert!(s.types.contains_key(&family), "no TYPE before {line}");
                s.samples.push(sample);
            }
        }
        s
    }

    pub(crate) fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let want: Labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.samples
            .iter()
            .find(|(n, l, _)| n == name && *l == want)
            .map(|(_, _, v)| *v)
    }

    fn all(&self, name: &str) -> Vec<&(String, Labels, f64)> {
        self.samples.iter().filter(|(n, _, _)| n == name).collect()
    }
}

/// The family a sample belongs to: a histogram's `_bucket`, `_sum` and `_count` are its own.
fn family_of(name: &str, types: &BTreeMap<String, String>) -> String {
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix) {
            if types.get(base).map(String::as_str) == Some("histogram") {
                return base.to_string();
            }
        }
    }
    name.to_string()
}

/// `name{label="value",...} number`, label values unescaped.
fn sample(line: &str) -> (String, Labels, f64) {
    let name_end = line.find(['{', ' ']).expect("a name");
    let name = &line[..name_end];
    assert!(
        name.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
        "{line}"
    );
    let mut rest = &line[name_end..];
    let mut labels = Labels::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let mut chars = inner.char_indices().peekable();
        loop {
            let (start, _) = *chars.peek().expect("a label or }");
            if inner[start..].starts_with('}') {
                rest = &inner[start + 1..];
                break;
            }
            let eq = inner[start..].find("=\"").expect("label=\"") + start;
            let label = inner[start..eq].to_string();
            while chars.next_if(|(i, _)| *i <= eq + 1).is_some() {}
            let mut value = String::new();
            loop {
                match chars.next().expect("a closing quote") {
                    (_, '"') => break,
                    (_, '\\') => match chars.next().expect("an escape").1 {
                        'n' => value.push('\n'),
                        c @ ('\\' | '"') => value.push(c),
                        c => panic!("bad escape \\{c} in {line}"),
                    },
                    (_, '\n') => panic!("raw newline in {line}"),
                    (_, c) => value.push(c),
                }
            }
            assert!(labels.insert(label, value).is_none(), "{line}");
            chars.next_if(|(_, c)| *c == ',');
        }
    }
    let value = rest.strip_prefix(' ').expect("a space before the value");
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().unwrap_or_else(|_| panic!("a number: {line}")),
    };
    (name.to_string(), labels, value)
}

fn scrape(s: &TestServer) -> (String, Scrape) {
    let r = get(s.control(), "/metrics");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("Content-Type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = String::from_utf8(r.body).unwrap();
    let parsed = Scrape::parse(&text);
    (text, parsed)
}

#[test]
fn the_parser_reads_escapes_and_refuses_untyped_samples() {
    let s = Scrape::parse(
        "# HELP a_info x\n# TYPE a_info gauge\na_info{serial=\"S\",name=\"a \\\"b\\\" \\\\ \\n\"} 1\n",
    );
    assert_eq!(
        s.value("a_info", &[("serial", "S"), ("name", "a \"b\" \\ \n")]),
        Some(1.0)
    );
    let untyped = std::panic::catch_unwind(|| Scrape::parse("b 1\n"));
    assert!(untyped.is_err());
}

#[test]
fn thermostats_and_the_server_are_described() {
    let s = TestServer::start();
    let (mut sim, _events, _held) = booted_and_held(&s, SERIAL);
    let name = "Hall \"upstairs\" \\ 2";
    s.server_change(SERIAL, &shared(), json!({"label": name}));
    sim.report("shared", "current_temperature", json!(20.5));
    sim.report("shared", "target_temperature", json!(21.0));
    sim.report("shared", "hvac_heater_state", json!(true));
    sim.report("shared", "hvac_ac_state", json!(false));
    sim.report("device", "current_humidity", json!(41));
    sim.put().unwrap();
    wait_until("the upload is in", || {
        s.bucket(SERIAL, &shared())
            .is_some_and(|b| b.value.get("hvac_heater_state") == Some(json!(true)))
    });

    let (_, m) = scrape(&s);
    let serial = [("serial", SERIAL)];
    assert_eq!(
        m.value(
            "hearth_thermostat_info",
            &[("serial", SERIAL), ("name", name)]
        ),
        Some(1.0)
    );
    assert_eq!(m.value("hearth_thermostat_online", &serial), Some(1.0));
    assert_eq!(
        m.value("hearth_thermostat_temperature_celsius", &serial),
        Some(20.5)
    );
    assert_eq!(
        m.value("hearth_thermostat_target_temperature_celsius", &serial),
        Some(21.0)
    );
    assert_eq!(
        m.value("hearth_thermostat_humidity_percent", &serial),
        Some(41.0)
    );
    let running = |mode| {
        m.value(
            "hearth_thermostat_hvac_running",
            &[("serial", SERIAL), ("mode", mode)],
        )
    };
    assert_eq!(
        (
            running("heat"),
            running("cool"),
            running("fan"),
            running("aux")
        ),
        (Some(1.0), Some(0.0), Some(0.0), Some(0.0))
    );
    assert_eq!(m.value("hearth_held_subscribes", &[]), Some(1.0));
    let device_ok = m.value(
        "hearth_http_requests_total",
        &[("port", "device"), ("code", "200")],
    );
    assert!(device_ok.is_some_and(|n| n >= 2.0), "{device_ok:?}");

    // The journal was written (the boot, the upload): fsyncs were timed, the store has bytes.
    let count = m.value("hearth_journal_fsync_seconds_count", &[]).unwrap();
    assert!(count >= 1.0);
    let buckets = m.all("hearth_journal_fsync_seconds_bucket");
    let counts: Vec<f64> = buckets.iter().map(|(_, _, v)| *v).collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    assert_eq!(buckets.last().map(|b| b.1["le"].as_str()), Some("+Inf"));
    assert_eq!(counts.last(), Some(&count));
    assert!(m.value("hearth_journal_fsync_seconds_sum", &[]).unwrap() >= 0.0);
    assert!(m.value("hearth_store_size_bytes", &[]).unwrap() > 0.0);
    let started = m.value("process_start_time_seconds", &[]).unwrap();
    let now = s.app().config().clock.now_ms() as f64 / 1000.0;
    assert!(started > 1.6e9 && started <= now, "{started} {now}");

    for (family, kind) in [
        ("hearth_thermostat_info", "gauge"),
        ("hearth_thermostat_hvac_running", "gauge"),
        ("hearth_held_subscribes", "gauge"),
        ("hearth_http_requests_total", "counter"),
        ("hearth_journal_fsync_seconds", "histogram"),
        ("hearth_store_size_bytes", "gauge"),
        ("process_start_time_seconds", "gauge"),
    ] {
        assert_eq!(
            m.types.get(family).map(String::as_str),
            Some(kind),
            "{family}"
        );
        assert!(m.helps.get(family).is_some_and(|h| !h.is_empty()));
    }
}

#[test]
fn a_reading_never_reported_is_left_out() {
    let s = TestServer::start();
    s.server_change(SERIAL, &shared(), json!({"target_temperature": 19.5}));
    let (_, m) = scrape(&s);
    let serial = [("serial", SERIAL)];
    // The same scrape shows the thermostat, so the absence below is not a missing thermostat.
    assert_eq!(
        m.value("hearth_thermostat_target_temperature_celsius", &serial),
        Some(19.5)
    );
    assert_eq!(
        m.value("hearth_thermostat_temperature_celsius", &serial),
        None
    );
    assert_eq!(m.value("hearth_thermostat_online", &serial), Some(0.0));
    assert_eq!(m.value("hearth_held_subscribes", &[]), Some(0.0));
}

#[test]
fn requests_are_counted_by_port_and_status() {
    let s = TestServer::start();
    let not_found = |m: &Scrape| {
        m.value(
            "hearth_http_requests_total",
            &[("port", "control"), ("code", "404")],
        )
    };
    assert_eq!(not_found(&scrape(&s).1), None);
    assert_eq!(get(s.control(), "/nope").status, 404);
    assert_eq!(get(s.control(), "/nope").status, 404);
    let (_, m) = scrape(&s);
    assert_eq!(not_found(&m), Some(2.0));
    // The first scrape's own 200 was counted when it was answered.
    let ok = m.value(
        "hearth_http_requests_total",
        &[("port", "control"), ("code", "200")],
    );
    assert!(ok.is_some_and(|n| n >= 1.0), "{ok:?}");
}

#[test]
fn with_control_keys_metrics_want_a_read_key() {
    let s = TestServer::start_with(|c| c.control_require_key = true);
    let r = get(s.control(), "/metrics");
    assert_eq!(
        (r.status, String::from_utf8(r.body).unwrap()),
        (401, r#"{"error":"Unauthorized"}"#.to_string())
    );
    let read = common::hosted::new_key(&s, "owner", "read", &[]);
    let auth = format!("Bearer {read}");
    let r = client::request(
        &url(s.control(), "/metrics"),
        "GET",
        &[("Authorization", auth.as_str())],
        &[],
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(r.status, 200);
    Scrape::parse(&String::from_utf8(r.body).unwrap());
}

#[test]
fn with_pairing_required_only_claimed_thermostats_are_described() {
    let s = pairing();
    s.server_change(SERIAL, &shared(), json!({"target_temperature": 19.5}));
    let info = |m: &Scrape| m.all("hearth_thermostat_info").len();
    let target = |m: &Scrape| {
        m.value(
            "hearth_thermostat_target_temperature_celsius",
            &[("serial", SERIAL)],
        )
    };
    // Known to the server, but nobody has claimed it: nobody sees it.
    let (_, m) = scrape(&s);
    assert_eq!((info(&m), target(&m)), (0, None));
    s.set_owner(SERIAL, "owner");
    let (_, m) = scrape(&s);
    assert_eq!((info(&m), target(&m)), (1, Some(19.5)));
}

#[test]
fn other_methods_are_refused() {
    let s = TestServer::start();
    for method in ["POST", "PUT", "DELETE"] {
        let r = call(s.control(), method, "/metrics", "");
        assert_eq!(
            (r.status, String::from_utf8(r.body).unwrap()),
            (405, r#"{"error":"Method not allowed"}"#.to_string()),
            "{method}"
        );
    }
    let r = client::request(&url(s.control(), "/metrics"), "HEAD", &[], &[], TIMEOUT).unwrap();
    assert_eq!(r.status, 200);
}

#[test]
fn a_foreign_host_gets_421_and_a_foreign_page_403() {
    let s = TestServer::start();
    let host = format!("127.0.0.1:{}", s.control().port());
    let page = format!(
        "GET /metrics HTTP/1.1\r\nHost: {host}\r\nOrigin: https://evil.example\r\nConnection: close\r\n\r\n"
    );
    let answer = raw(s.control(), page.as_bytes(), TIMEOUT);
    assert!(answer.starts_with("HTTP/1.1 403 "), "{answer}");
    assert!(answer.contains("Origin check error"), "{answer}");
    assert!(!answer.contains("hearth_"), "{answer}");
    // The same request from no page at all is answered.
    let plain = format!("GET /metrics HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    assert!(raw(s.control(), plain.as_bytes(), TIMEOUT).contains("hearth_held_subscribes"));

    let answer = raw(
        s.control(),
        b"GET /metrics HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n",
        TIMEOUT,
    );
    assert!(answer.starts_with("HTTP/1.1 421 "), "{answer}");
    assert!(!answer.contains("hearth_"), "{answer}");
}

#[test]
fn promtool_accepts_the_output() {
    let present = Command::new("promtool")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !present {
        assert_ne!(
            std::env::var("HEARTH_REQUIRE_PROMTOOL").as_deref(),
            Ok("1"),
            "promtool is not installed (apt-get install prometheus; .ci/run does)"
        );
        eprintln!("skipped: promtool is not installed");
        return;
    }
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    s.server_change(SERIAL, &shared(), json!({"label": "Quote \" and \\ here"}));
    assert_eq!(get(s.control(), "/nope").status, 404);
    let (text, _) = scrape(&s);
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Cumulative runtime by mode: every day the energy history keeps (three days written where
/// it keeps them, in its format) and today's live row.
#[test]
fn runtime_totals_come_from_the_energy_history() {
    let dir = TempDir::new("metrics-runtime");
    let days: Vec<energy::SeedDay> = [(3, 1800), (2, 7200), (1, 3600)]
        .iter()
        .map(|&(days_ago, heat_s)| energy::SeedDay {
            days_ago,
            heat_s,
            cool_s: 60,
            fan_s: 100,
            ..energy::SeedDay::default()
        })
        .collect();
    energy::seed_days(dir.path(), SERIAL, &days);
    let mut config = hearth::Config::local(dir.path());
    config.api_origin = hearth::config::ApiOrigin::parse("http://127.0.0.1").ok();
    let s = TestServer {
        server: Some(start_server(config)),
        dir,
    };
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);

    let (_, m) = scrape(&s);
    let total = |mode: &str| {
        m.value(
            "hearth_thermostat_runtime_seconds_total",
            &[("serial", SERIAL), ("mode", mode)],
        )
        .unwrap_or(-1.0)
    };
    // Today adds what ran since the thermostat booted, with its heating and cooling off.
    assert_eq!(total("heat"), 12_600.0);
    assert_eq!(total("cool"), 180.0);
    assert_eq!(total("fan"), 300.0);
    assert_eq!(total("aux"), 0.0);
    assert_eq!(
        m.types.get("hearth_thermostat_runtime_seconds_total"),
        Some(&"counter".to_string())
    );
    // The totals are kept in memory: a scrape reads no energy file (with them moved away, it
    // says the same).
    std::fs::rename(
        s.dir.path().join("energy"),
        s.dir.path().join("energy-moved"),
    )
    .unwrap();
    let (_, again) = scrape(&s);
    for mode in ["heat", "cool", "fan", "aux"] {
        let labels = [("serial", SERIAL), ("mode", mode)];
        assert_eq!(
            again.value("hearth_thermostat_runtime_seconds_total", &labels),
            m.value("hearth_thermostat_runtime_seconds_total", &labels),
            "{mode}"
        );
    }
}
