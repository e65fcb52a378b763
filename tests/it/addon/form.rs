//! The Configuration page against hearth's own start-up checks: a value the page refuses is one
//! hearth would refuse too, so nobody saves what then stops the add-on; where the Supervisor's
//! schema language cannot say a rule, the page lets the value through and hearth's start-up
//! message names it. The page's verdict is the Supervisor's options checker
//! (`apps/options.py`, `_single_validate`) for the elements the manifest uses; `match(...)`
//! is a Python regular expression there, so those cases run Python's `re` and are skipped,
//! with a message, where there is no python3 (unless `HEARTH_REQUIRE_PYTHON=1`).

use std::process::Command;

use serde_json::{Value, json};

use hearth::config::addon::ADDON_OPTIONS;
use hearth::config::{Config, Sources};

use super::manifest::manifest;
use crate::common::TempDir;

/// Whether Python's `re.match(pattern, text)` matches; `None` without python3, unless
/// `HEARTH_REQUIRE_PYTHON=1`.
fn python_match(pattern: &str, text: &str) -> Option<bool> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import re, sys; sys.exit(0 if re.match(sys.argv[1], sys.argv[2]) else 1)",
            pattern,
            text,
        ])
        .output();
    let Ok(out) = out else {
        assert_ne!(
            std::env::var("HEARTH_REQUIRE_PYTHON").as_deref(),
            Ok("1"),
            "python3 is not installed (apt-get install python3)"
        );
        return None;
    };
    match out.status.code() {
        Some(0) => Some(true),
        Some(1) => Some(false),
        _ => panic!("python3: {}", String::from_utf8_lossy(&out.stderr)),
    }
}

/// `low,high` of `int(...)` / `float(...)`.
fn range(args: &str) -> (f64, f64) {
    let (low, high) = args.split_once(',').unwrap();
    (low.parse().unwrap(), high.parse().unwrap())
}

/// voluptuous' `Url()`: `urlparse` finds a scheme and a network location.
fn is_url(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once("://") else {
        return false;
    };
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    let netloc = rest.split(['/', '?', '#']).next().unwrap_or("");
    scheme_ok && !netloc.is_empty()
}

/// The Supervisor's verdict on `value` for `element`; `None` when it cannot be worked out here.
fn page_accepts(element: &str, value: &Value) -> Option<bool> {
    let element = element.strip_suffix('?').unwrap_or(element);
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let number = || value.as_f64().or_else(|| text.trim().parse().ok());
    let inner = |prefix: &str| element.strip_prefix(prefix)?.strip_suffix(')');
    Some(if let Some(args) = inner("int(") {
        let (low, high) = range(args);
        number().is_some_and(|n| n.fract() == 0.0 && (low..=high).contains(&n))
    } else if let Some(args) = inner("float(") {
        let (low, high) = range(args);
        number().is_some_and(|n| (low..=high).contains(&n))
    } else if let Some(choices) = inner("list(") {
        choices.split('|').any(|c| c == text)
    } else if let Some(pattern) = inner("match(") {
        return python_match(pattern, &text);
    } else {
        match element {
            "url" => value.is_string() && is_url(&text),
            "str" | "password" => value.is_string(),
            "bool" => value.is_boolean(),
            other => panic!("no verdict for {other}"),
        }
    })
}

/// hearth's verdict: the option alone in an options file, resolved as at start-up.
fn hearth_accepts(name: &str, value: &Value) -> bool {
    let dir = TempDir::new("addon-form");
    let path = dir.path().join("options.json");
    std::fs::write(&path, json!({ name: value }).to_string()).unwrap();
    let file = path.display().to_string();
    let env = |k: &str| (k == "OPTIONS_FILE").then(|| file.clone());
    Config::resolve(&Sources::new(&env)).is_ok()
}

/// (option, value, the page takes it, hearth takes it).
fn cases() -> Vec<(&'static str, Value, bool, bool)> {
    vec![
        ("api_origin", json!("http://192.168.1.10:9543"), true, true),
        ("api_origin", json!("homeassistant.local"), false, false),
        ("api_origin", json!("192.168.1.10:9543"), false, false),
        // The page cannot say "no path": hearth's message does.
        (
            "api_origin",
            json!("http://192.168.1.10:9543/entry"),
            true,
            false,
        ),
        ("weather_provider", json!("off"), true, true),
        ("weather_provider", json!("open-meteo"), true, true),
        ("weather_provider", json!("openmeteo"), false, false),
        (
            "weather_url",
            json!("https://weather.example/api"),
            true,
            true,
        ),
        ("weather_url", json!("weather.example/api"), false, false),
        (
            "ntfy_url",
            json!("https://ntfy.sh/my-house-hearth"),
            true,
            true,
        ),
        ("ntfy_url", json!("ntfy.sh/my-house-hearth"), false, false),
        ("webhook_url", json!("not a url"), false, false),
        (
            "webhook_url",
            json!("ftp://files.example/hook"),
            true,
            false,
        ),
        ("alert_low_c", json!(6.5), true, true),
        ("alert_low_c", json!("cold"), false, false),
        ("alert_low_c", json!(-60), false, false),
        ("alert_high_c", json!(120), false, false),
        ("alert_offline_minutes", json!(0.5), true, true),
        ("alert_offline_minutes", json!(-1), false, false),
        ("alert_not_heating_minutes", json!("soon"), false, false),
        ("filter_reminder_hours", json!(600000), false, false),
        ("mqtt_port", json!(0), false, false),
        ("mqtt_port", json!(65536), false, false),
        ("mqtt_topic_prefix", json!("home/nest"), true, true),
        // Empty is unset to hearth (its default, nolongerevil); the page asks for a prefix.
        ("mqtt_topic_prefix", json!(""), false, true),
        ("mqtt_topic_prefix", json!("home//nest"), false, false),
        ("mqtt_topic_prefix", json!("home/#"), false, false),
        ("mqtt_topic_prefix", json!("/home"), false, false),
        ("mqtt_discovery_prefix", json!("homeassistant"), true, true),
        (
            "mqtt_discovery_prefix",
            json!("home+assistant"),
            false,
            false,
        ),
    ]
}

#[test]
fn the_page_refuses_what_hearth_refuses() {
    let schema = manifest()["schema"].as_object().unwrap().clone();
    let mut skipped = Vec::new();
    for (name, value, page, hearth) in cases() {
        let element = schema[name].as_str().unwrap();
        match page_accepts(element, &value) {
            Some(verdict) => assert_eq!(verdict, page, "the page, {name} = {value} ({element})"),
            None => skipped.push(format!("{name} = {value}")),
        }
        assert_eq!(
            hearth_accepts(name, &value),
            hearth,
            "hearth, {name} = {value}"
        );
    }
    if !skipped.is_empty() {
        eprintln!("skipped (no python3 for match(...)): the page's verdict on {skipped:?}");
    }
}

/// Every option's default passes the page's check (what the Supervisor writes first).
#[test]
fn the_page_accepts_its_own_defaults() {
    let m = manifest();
    let (options, schema) = (
        m["options"].as_object().unwrap(),
        m["schema"].as_object().unwrap(),
    );
    for option in ADDON_OPTIONS {
        let name = option.setting.name;
        if let Some(value) = options.get(name) {
            let element = schema[name].as_str().unwrap();
            assert_ne!(
                page_accepts(element, value),
                Some(false),
                "{name} = {value}"
            );
        }
    }
}
