//! The add-on's folder (`cross/addon/`) against the Supervisor's rules it relies on (as its
//! `apps/validate.py`, `apps/options.py` and `store/validate.py` state them) and against
//! hearth's own declarations (`hearth::config::addon`, `hearth::config::settings`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use hearth::config::addon::ADDON_OPTIONS;
use hearth::config::settings::{Kind, Unset};
use hearth::config::{Config, Sources};
use serde_json::{Map, Value};
use yaml_rust2::{Yaml, YamlLoader};

pub fn addon_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cross/addon")
}

/// A YAML document as JSON (keys as strings).
pub fn yaml_file(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    let docs = YamlLoader::load_from_str(&text).unwrap();
    assert_eq!(docs.len(), 1, "{}: one document", path.display());
    json_of(&docs[0])
}

fn json_of(y: &Yaml) -> Value {
    match y {
        Yaml::Real(r) => Value::from(r.parse::<f64>().unwrap()),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::String(s) => Value::from(s.as_str()),
        Yaml::Boolean(b) => Value::from(*b),
        Yaml::Array(a) => Value::Array(a.iter().map(json_of).collect()),
        Yaml::Hash(h) => Value::Object(
            h.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) => s.clone(),
                        Yaml::Integer(i) => i.to_string(),
                        other => panic!("a key that is not text: {other:?}"),
                    };
                    (key, json_of(v))
                })
                .collect(),
        ),
        Yaml::Null => Value::Null,
        other => panic!("unexpected YAML: {other:?}"),
    }
}

pub fn manifest() -> Map<String, Value> {
    yaml_file(&addon_dir().join("hearth/config.yaml"))
        .as_object()
        .unwrap()
        .clone()
}

/// `^\d+(?:/tcp|/udp)?$`: the Supervisor's `docker_port`.
fn is_docker_port(s: &str) -> bool {
    let digits = s.split('/').next().unwrap_or("");
    !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
        && matches!(&s[digits.len()..], "" | "/tcp" | "/udp")
}

fn is_network_port(v: &Value) -> bool {
    v.as_u64().is_some_and(|p| (1..=65535).contains(&p))
}

#[test]
fn the_manifest_keeps_the_supervisors_rules() {
    let m = manifest();
    let text = |k: &str| m[k].as_str().unwrap_or_else(|| panic!("{k} is text"));
    for key in ["name", "version", "slug", "description"] {
        assert!(!text(key).is_empty(), "{key}");
    }
    assert_eq!(text("version"), env!("CARGO_PKG_VERSION"));
    // `[-_.A-Za-z0-9]+`
    let slug = text("slug");
    assert!(
        !slug.is_empty()
            && slug
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    );
    // The architectures current Supervisors run on (`CpuArch`), each a published image;
    // armv7 is only for the local add-on (cross/addon.sh).
    let arch: Vec<&str> = m["arch"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(arch, ["aarch64", "amd64"]);
    assert!(["initialize", "system", "services", "application", "once"].contains(&text("startup")));
    assert!(["hot", "cold"].contains(&text("backup")));
    assert_eq!(
        m["hassio_api"], true,
        "/network/info needs the Supervisor API"
    );
    // `^(?P<service>mqtt|mysql):(?P<rights>provide|want|need)$`; "want": MQTT is optional.
    assert_eq!(m["services"], serde_json::json!(["mqtt:want"]));

    // The seed's variant: thermostats on host port 9543, the control port on none.
    let ports = m["ports"].as_object().unwrap();
    for (port, host) in ports {
        assert!(is_docker_port(port), "{port}");
        assert!(host.is_null() || is_network_port(host), "{port}: {host}");
    }
    let d = Config::default();
    assert_eq!(ports[&format!("{}/tcp", d.device_port)], 9543);
    assert_eq!(ports[&format!("{}/tcp", d.control_port)], Value::Null);
    assert_eq!(
        ports.len(),
        2,
        "hearth listens on the device and control ports only"
    );
    assert_eq!(
        hearth::supervisor::DEFAULT_DEVICE_HOST_PORT,
        9543,
        "the fallback hearth uses is the manifest's port"
    );

    // Ingress reaches the control port, where the dashboard is.
    assert_eq!(m["ingress"], true);
    assert_eq!(m["ingress_port"], u64::from(d.control_port));
    assert!(text("panel_icon").starts_with("mdi:"));
    assert!(!text("panel_title").is_empty());
    // No watchdog: the image's HEALTHCHECK (tests/it/addon/image.rs).
    assert!(m.get("watchdog").is_none());
}

/// The Supervisor's schema elements (`RE_SCHEMA_ELEMENT`, with the optional `?`).
fn schema_element(s: &str) -> (&str, bool) {
    let (element, optional) = match s.strip_suffix('?') {
        Some(e) => (e, true),
        None => (s, false),
    };
    let known = ["bool", "email", "url", "port", "str", "password"].contains(&element)
        || [
            "int(",
            "float(",
            "str(",
            "password(",
            "match(",
            "list(",
            "device(",
        ]
        .iter()
        .any(|p| element.starts_with(p) && element.ends_with(')'));
    assert!(known, "{s} is not a schema element");
    (element, optional)
}

/// Whether an optional element passes an empty text: those keep `""` as their default on the
/// page, the others (`url?`, `list(...)?`) have none, since the Supervisor would refuse it.
fn takes_empty_text(element: &str) -> bool {
    ["str", "password"].contains(&element)
}

#[test]
fn each_option_is_a_setting_with_its_type_and_default() {
    let m = manifest();
    let options = m["options"].as_object().unwrap();
    let schema = m["schema"].as_object().unwrap();
    let names: Vec<&str> = ADDON_OPTIONS.iter().map(|o| o.setting.name).collect();
    assert_eq!(
        schema.keys().map(String::as_str).collect::<Vec<_>>(),
        names,
        "the schema offers src/config/addon.rs's options, in its order"
    );
    for key in options.keys() {
        assert!(schema.contains_key(key), "a default for {key}, not offered");
    }
    for option in ADDON_OPTIONS {
        let s = option.setting;
        assert_eq!(
            schema[s.name], option.element,
            "{}: the type src/config/addon.rs gives it",
            s.name
        );
        let (element, optional) = schema_element(option.element);
        let value = options.get(s.name);
        match s.kind {
            Kind::Number { min, max, default } => {
                assert_eq!(element, format!("int({min},{max})"), "{}", s.name);
                assert_eq!(value, Some(&Value::from(default)), "{}", s.name);
            }
            Kind::Bool { default } => {
                assert_eq!(element, "bool", "{}", s.name);
                assert_eq!(value, Some(&Value::from(default)), "{}", s.name);
            }
            Kind::Text { unset, .. } => {
                let secret = s.name.contains("password") || s.name.contains("secret");
                assert_eq!(
                    element.starts_with("password"),
                    secret,
                    "{}: secrets, and only they, are hidden on the page",
                    s.name
                );
                match unset {
                    Unset::Is(default) => {
                        assert!(!optional, "{}", s.name);
                        let shown = match value {
                            Some(Value::String(text)) => text.clone(),
                            Some(Value::Number(n)) if element.starts_with("float(") => {
                                n.to_string()
                            }
                            other => panic!("{}: default {other:?}", s.name),
                        };
                        assert_eq!(shown, default, "{}", s.name);
                    }
                    Unset::Means(_) => {
                        assert!(optional, "{} has no default: optional", s.name);
                        if takes_empty_text(element) {
                            assert_eq!(value, Some(&Value::from("")), "{}", s.name);
                        } else {
                            assert_eq!(value, None, "{}: no default the page would refuse", s.name);
                        }
                    }
                }
            }
            Kind::Ip { .. } => panic!("{}: no address setting is offered", s.name),
        }
    }
}

/// The page's defaults, written to `options.json` as the Supervisor writes them, are what
/// hearth does with no settings at all.
#[test]
fn the_pages_defaults_are_hearths() {
    let dir = crate::common::TempDir::new("addon-defaults");
    let path = dir.path().join("options.json");
    let options = Value::Object(manifest()["options"].as_object().unwrap().clone());
    std::fs::write(&path, options.to_string()).unwrap();
    let file = path.display().to_string();
    let env = |k: &str| (k == "OPTIONS_FILE").then(|| file.clone());
    let mut with_options = Config::resolve(&Sources::new(&env)).unwrap();
    assert_eq!(with_options.options_file.as_deref(), Some(path.as_path()));
    with_options.options_file = None;
    // The values are the same; where the alert settings were given is not (the page says so).
    assert!(with_options.alert_sources.of("ALERT_LOW_C").is_some());
    with_options.alert_sources = Default::default();
    let nothing = |_: &str| None;
    let without = Config::resolve(&Sources::new(&nothing)).unwrap();
    assert_eq!(format!("{with_options:?}"), format!("{without:?}"));
}

#[test]
fn translations_name_every_option_and_port() {
    let m = manifest();
    let t = yaml_file(&addon_dir().join("hearth/translations/en.yaml"));
    let configuration = t["configuration"].as_object().unwrap();
    assert_eq!(
        configuration.keys().collect::<Vec<_>>(),
        m["schema"].as_object().unwrap().keys().collect::<Vec<_>>()
    );
    for option in ADDON_OPTIONS {
        let entry = &configuration[option.setting.name];
        assert_eq!(
            entry["name"], option.title,
            "the title hearth's messages use is the page's"
        );
        assert!(
            entry["description"].as_str().is_some_and(|d| d.len() > 10),
            "{}",
            option.setting.name
        );
    }
    let network = t["network"].as_object().unwrap();
    assert_eq!(
        network.keys().collect::<BTreeSet<_>>(),
        m["ports"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<BTreeSet<_>>()
    );
}

/// Width and height of a PNG (its IHDR chunk).
fn png_size(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}", path.display());
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn the_store_page_has_its_pictures_and_documents() {
    let dir = addon_dir();
    assert_eq!(png_size(&dir.join("hearth/icon.png")), (128, 128));
    assert_eq!(png_size(&dir.join("hearth/logo.png")), (250, 100));
    let docs = std::fs::read_to_string(dir.join("hearth/DOCS.md")).unwrap();
    // The Documentation tab names every option.
    for option in ADDON_OPTIONS {
        assert!(
            docs.contains(option.setting.name),
            "DOCS.md: {}",
            option.setting.name
        );
    }
    assert!(docs.contains("9543"));
    let dockerfile = std::fs::read_to_string(dir.join("hearth/Dockerfile")).unwrap();
    assert!(dockerfile.starts_with('#') && dockerfile.contains("\nFROM scratch\n"));
    assert!(dockerfile.contains("COPY bin/${BUILD_ARCH}/hearth /hearth"));
}
