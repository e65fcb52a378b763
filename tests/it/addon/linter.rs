//! The manifest against the rules of the add-on linter the Home Assistant community runs in CI
//! (frenck/action-addon-linter: its `config.schema.json` and the checks of its `lint.py`),
//! written here as our own checks. Its "community" checks (version `dev`, a build file) are for
//! the community add-ons' own repository and are not applied by default; they are left out.

use serde_json::{Map, Value, json};

use super::manifest::manifest;

/// The keys the linter's schema knows (it allows no others), each with the default it flags
/// when a manifest spells it out (`'boot' should be removed, it uses a default value`), if it
/// has one.
const KEYS: &[(&str, Option<&str>)] = &[
    ("advanced", Some("false")),
    ("apparmor", Some("true")),
    ("arch", None),
    ("audio", Some("false")),
    ("auth_api", Some("false")),
    ("auto_uart", Some("false")),
    ("backup", Some("\"hot\"")),
    ("backup_exclude", None),
    ("backup_pre", None),
    ("backup_post", None),
    ("boot", Some("\"auto\"")),
    ("breaking_versions", None),
    ("codenotary", None),
    ("description", None),
    ("devices", None),
    ("devicetree", Some("false")),
    ("discovery", None),
    ("docker_api", Some("false")),
    ("environment", None),
    ("full_access", Some("false")),
    ("gpio", Some("false")),
    ("hassio_api", Some("false")),
    ("hassio_role", Some("\"default\"")),
    ("homeassistant", None),
    ("homeassistant_api", Some("false")),
    ("host_dbus", Some("false")),
    ("host_ipc", Some("false")),
    ("host_network", Some("false")),
    ("host_pid", Some("false")),
    ("host_uts", Some("false")),
    ("image", None),
    ("ingress", Some("false")),
    ("ingress_entry", None),
    ("ingress_port", Some("8099")),
    ("ingress_stream", Some("false")),
    ("init", Some("true")),
    ("journald", Some("false")),
    ("kernel_modules", Some("false")),
    ("legacy", Some("false")),
    ("machine", None),
    ("map", None),
    ("name", None),
    ("options", Some("{}")),
    ("panel_admin", Some("true")),
    ("panel_icon", Some("\"mdi:puzzle\"")),
    ("panel_title", None),
    ("ports", None),
    ("ports_description", None),
    ("privileged", None),
    ("realtime", Some("false")),
    ("schema", Some("{}")),
    ("services", None),
    ("slug", None),
    ("stage", Some("\"stable\"")),
    ("startup", Some("\"application\"")),
    ("stdin", Some("false")),
    ("timeout", Some("10")),
    ("tmpfs", Some("false")),
    ("uart", Some("false")),
    ("udev", Some("false")),
    ("ulimits", Some("{}")),
    ("url", None),
    ("usb", Some("false")),
    ("version", None),
    ("video", Some("false")),
    ("watchdog", None),
    ("webui", None),
];

/// What the linter reports as errors for `m`; empty when it passes. Its warnings (deprecated
/// architectures, `full_access`, `advanced`) count as errors here: the issue wants none.
fn lint(m: &Map<String, Value>) -> Vec<String> {
    let mut errors = Vec::new();
    for required in ["arch", "description", "name", "slug", "version"] {
        if !m.contains_key(required) {
            errors.push(format!("'{required}' is a required property"));
        }
    }
    for (key, value) in m {
        match KEYS.iter().find(|(k, _)| k == key) {
            None => errors.push(format!("'{key}' is not a key the linter knows")),
            Some((_, Some(default))) => {
                if *value == serde_json::from_str::<Value>(default).unwrap() {
                    errors.push(format!(
                        "'{key}' should be removed, it uses a default value"
                    ));
                }
            }
            Some((_, None)) => {}
        }
    }
    for (key, is_type) in [
        ("name", Value::is_string as fn(&Value) -> bool),
        ("version", Value::is_string),
        ("slug", Value::is_string),
        ("description", Value::is_string),
        ("url", Value::is_string),
        ("image", Value::is_string),
        ("panel_title", Value::is_string),
        ("arch", Value::is_array),
        ("services", Value::is_array),
        ("ports", Value::is_object),
        ("options", Value::is_object),
        ("schema", Value::is_object),
        ("ingress", Value::is_boolean),
        ("hassio_api", Value::is_boolean),
        ("ingress_port", Value::is_u64),
    ] {
        if m.get(key).is_some_and(|v| !is_type(v)) {
            errors.push(format!("'{key}' has the wrong type"));
        }
    }
    for arch in m["arch"].as_array().into_iter().flatten() {
        match arch.as_str() {
            Some("aarch64" | "amd64") => {}
            Some("armhf" | "armv7" | "i386") => {
                errors.push(format!("Architecture '{arch}' is deprecated"))
            }
            _ => errors.push(format!("'{arch}' is not an architecture")),
        }
    }
    let enums: [(&str, &[&str]); 3] = [
        ("backup", &["hot", "cold"]),
        ("boot", &["auto", "manual", "manual_only"]),
        (
            "startup",
            &["application", "initialize", "once", "services", "system"],
        ),
    ];
    for (key, allowed) in enums {
        if let Some(v) = m.get(key) {
            if !v.as_str().is_some_and(|v| allowed.contains(&v)) {
                errors.push(format!("'{key}': {v} is not one of {allowed:?}"));
            }
        }
    }
    // `^(?P<service>mqtt|mysql):(?P<rights>provide|want|need)$`
    for service in m
        .get("services")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let ok = service
            .as_str()
            .and_then(|s| s.split_once(':'))
            .is_some_and(|(s, r)| {
                ["mqtt", "mysql"].contains(&s) && ["provide", "want", "need"].contains(&r)
            });
        if !ok {
            errors.push(format!("service {service} does not match"));
        }
    }
    for (port, host) in m
        .get("ports")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if !(host.is_null() || host.as_u64().is_some_and(|p| (1..=65535).contains(&p))) {
            errors.push(format!("port {port}: {host} is not a port or null"));
        }
    }
    let on = |key: &str| m.get(key).and_then(Value::as_bool).unwrap_or(false);
    if on("ingress") {
        if m.contains_key("webui") {
            errors.push("'webui' should be removed, Ingress is enabled.".into());
        }
        if !on("host_network") && m.get("ingress_port").and_then(Value::as_u64) == Some(0) {
            errors.push("'ingress_port' this does not run on the host network".into());
        }
    }
    if on("full_access") {
        errors.push("'full_access' consider using other options instead".into());
    }
    if on("advanced") {
        errors.push("'advanced' flag is not recommended".into());
    }
    if m.contains_key("auto_uart") {
        errors.push("'auto_uart' is deprecated, use 'uart' instead.".into());
    }
    if m.get("backup").and_then(Value::as_str) == Some("cold") {
        for option in ["backup_pre", "backup_post"] {
            if m.contains_key(option) {
                errors.push(format!("'{option}' is not valid when using cold backups."));
            }
        }
    }
    if m.get("watchdog").is_some_and(|w| w.as_str() != Some("")) {
        errors.push("'watchdog', is obsolete. Use the native Docker HEALTHCHECK".into());
    }
    if m.contains_key("codenotary") {
        errors.push("'codenotary' is deprecated and no longer used.".into());
    }
    let map: Vec<&str> = m
        .get("map")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if map.iter().any(|v| v.split(':').next() == Some("config")) {
        errors.push("'map' contains the 'config' folder".into());
    }
    errors
}

#[test]
fn the_manifest_passes_the_community_linter() {
    assert_eq!(lint(&manifest()), Vec::<String>::new());
}

/// The rules catch what the linter caught in the manifest before issue 39, and more.
#[test]
fn the_checks_fail_what_the_linter_fails() {
    let cases = [
        (
            "boot",
            json!("auto"),
            "'boot' should be removed, it uses a default value",
        ),
        (
            "watchdog",
            json!("http://[HOST]:[PORT:8082]/health"),
            "'watchdog', is obsolete",
        ),
        (
            "arch",
            json!(["aarch64", "amd64", "armv7"]),
            "Architecture '\"armv7\"' is deprecated",
        ),
        (
            "ingress_port",
            json!(8099),
            "'ingress_port' should be removed",
        ),
        (
            "webui",
            json!("http://[HOST]:[PORT:8082]/"),
            "'webui' should be removed",
        ),
        (
            "backup_pre",
            json!("true"),
            "'backup_pre' is not valid when using cold backups",
        ),
        ("services", json!(["mqtt:maybe"]), "does not match"),
        ("ports", json!({"8000/tcp": 70000}), "is not a port or null"),
        ("startup", json!("before"), "is not one of"),
        (
            "codenotary",
            json!("me@example.com"),
            "'codenotary' is deprecated",
        ),
        (
            "flavour",
            json!(true),
            "'flavour' is not a key the linter knows",
        ),
    ];
    for (key, value, error) in cases {
        let mut m = manifest();
        m.insert(key.to_string(), value);
        let errors = lint(&m);
        assert!(
            errors.iter().any(|e| e.contains(error)),
            "{key}: {error:?} not in {errors:?}"
        );
    }
    let mut m = manifest();
    m.remove("slug");
    assert_eq!(lint(&m), ["'slug' is a required property"]);
}
