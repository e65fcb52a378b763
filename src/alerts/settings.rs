//! The alert settings in force, which the page reads and changes (`GET` and `PUT
//! /api/alerts/settings`, docs/alerts.md#settings-on-the-page): the values given at start
//! (flags, the options file, the environment, the defaults) with those saved on the page, kept
//! in `DATA_DIR/alerts/settings.json`. Which value counts is `config::alerts::effective`'s
//! decision, made again on every change; the rules and the delivery read the result
//! ([`Settings::now`]) at each look and each request, so a change needs no restart.
//!
//! A change is checked whole (every value by its setting's own check, then the limits
//! together) before anything is written; it is written durably (aside, fsync, rename, fsync
//! dir) before it is put in force and answered. The webhook's secret is never shown, only
//! whether it is set.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Mutex, RwLock};
use serde_json::{Map, Value, json};

use crate::config::alerts::{self as fields, Effective, FieldError, Saved, Source};
use crate::config::{AlertConfig, AlertSources, Config, settings::Setting};

/// The file in the alerts' directory (`DATA_DIR/alerts`).
pub const FILE: &str = "settings.json";

/// The alert settings: given at start, saved on the page, in force.
pub struct Settings {
    dir: PathBuf,
    base: AlertConfig,
    given: AlertSources,
    /// What the page saved. Held while a change is checked and written, so changes never
    /// interleave.
    saved: Mutex<Saved>,
    now: RwLock<Arc<Effective>>,
    /// Held while a test is sent: one at a time.
    testing: Mutex<()>,
    /// Told of each change, so the rules look at every thermostat at once with it.
    changed: (Sender<()>, Receiver<()>),
}

/// Why a change was refused; nothing was changed.
#[derive(Debug, PartialEq, Eq)]
pub enum ChangeError {
    /// A value that does not fit, or a name that is no alert setting; the text names it.
    Invalid(String),
    /// A setting a flag sets: the flag wins, so the page cannot change it.
    Flagged(String),
    /// The change could not be made durable.
    Storage(String),
}

/// Why a test was not sent.
#[derive(Debug, PartialEq, Eq)]
pub enum TestError {
    /// Another test is being sent.
    Running,
    /// Neither ntfy nor a webhook is set.
    NoReceiver,
}

impl Settings {
    /// The settings of `config`, with what the page saved in `dir` (`DATA_DIR/alerts`). A file
    /// that cannot be read, or holds a value that does not fit, is an error naming the file
    /// and the setting: the alerts are then off, and the file is left for a person to look at.
    pub fn open(config: &Config, dir: &Path) -> io::Result<Settings> {
        let path = dir.join(FILE);
        let saved = match std::fs::read(&path) {
            Ok(bytes) => parse_file(&bytes).map_err(|why| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {why}", path.display()),
                )
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Saved::new(),
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        };
        let now =
            fields::effective(&config.alerts, &config.alert_sources, &saved, &[]).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {} {}", path.display(), e.setting.name, e.message),
                )
            })?;
        Ok(Settings {
            dir: dir.to_path_buf(),
            base: config.alerts.clone(),
            given: config.alert_sources.clone(),
            saved: Mutex::new(saved),
            now: RwLock::new(Arc::new(now)),
            testing: Mutex::new(()),
            changed: crossbeam_channel::bounded(1),
        })
    }

    /// Says when the settings change (at most one signal waits).
    pub fn changes(&self) -> Receiver<()> {
        self.changed.1.clone()
    }

    /// The settings in force now.
    pub fn now(&self) -> Arc<Effective> {
        Arc::clone(&self.now.read())
    }

    /// The settings in force now, as the rules and the delivery read them.
    pub fn config(&self) -> AlertConfig {
        self.now.read().config.clone()
    }

    /// Applies a change: each member names a setting (`alert_low_c`, `ntfy_url`, ...) and
    /// gives its value (a number, a text, the rules off as a list of names), or `null` to clear
    /// what the page saved (back to the environment's, the option's or the default). Checked
    /// whole, written durably, then put in force.
    pub fn change(&self, body: &Map<String, Value>) -> Result<Arc<Effective>, ChangeError> {
        let mut saved = self.saved.lock();
        let mut next = saved.clone();
        let mut changed = Vec::new();
        for (name, value) in body {
            let setting = fields::field(name).ok_or_else(|| {
                ChangeError::Invalid(format!(
                    "{name} is no alert setting: they are {}",
                    fields::FIELDS.map(|s| s.name).join(", ")
                ))
            })?;
            if self.given.of(setting.variable) == Some(crate::config::Given::Flag) {
                return Err(ChangeError::Flagged(format!(
                    "{name} is set by the flag {}, which wins over the page: remove the flag to \
                     set it here",
                    setting.option
                )));
            }
            changed.push(setting.variable);
            match text_of(setting, value) {
                Err(why) => return Err(ChangeError::Invalid(format!("{name} {why}"))),
                Ok(None) => {
                    next.remove(setting.variable);
                }
                Ok(Some(raw)) => {
                    next.insert(setting.variable, raw);
                }
            }
        }
        let effective = fields::effective(&self.base, &self.given, &next, &changed).map_err(
            |FieldError { setting, message }| {
                ChangeError::Invalid(format!("{} {message}", setting.name))
            },
        )?;
        if next != *saved {
            crate::util::durable::replace(&self.dir, FILE, &file_bytes(&next))
                .map_err(|e| ChangeError::Storage(e.to_string()))?;
            *saved = next;
        }
        let effective = Arc::new(effective);
        *self.now.write() = Arc::clone(&effective);
        // Full: a look is due already, which will read this change.
        let _ = self.changed.0.try_send(());
        Ok(effective)
    }

    /// `POST /api/alerts/test`: a test to each receiver set now, one after the other, each
    /// bounded as a delivery is; what each answered (its status) or why it could not be
    /// reached, and how long it took. One test at a time: another while one runs is refused.
    pub fn test(&self, id: &str) -> Result<Vec<super::deliver::Tried>, TestError> {
        let _one_at_a_time = self.testing.try_lock().ok_or(TestError::Running)?;
        let config = self.config();
        if super::deliver::targets(&config).is_empty() {
            return Err(TestError::NoReceiver);
        }
        Ok(super::deliver::test(&super::deliver::agent(), &config, id))
    }

    /// `GET /api/alerts/settings`: each setting's value in force and where it comes from (the
    /// secret only as set or not); for one saved on the page, what it falls back to when
    /// cleared; and the rules `alert_rules_off` takes.
    pub fn shown(&self) -> Value {
        let now = self.now();
        let mut settings = Map::new();
        for setting in fields::FIELDS {
            let source = now
                .sources
                .get(setting.variable)
                .copied()
                .unwrap_or(Source::Default);
            let mut entry = value_of(&now.config, setting);
            entry.insert("source".into(), json!(source.as_str()));
            entry.insert("variable".into(), json!(setting.variable));
            entry.insert("flag".into(), json!(setting.option));
            if source == Source::Saved {
                let mut under = value_of(&self.base, setting);
                let given = Source::of(self.given.of(setting.variable));
                under.insert("source".into(), json!(given.as_str()));
                entry.insert("under".into(), Value::Object(under));
            }
            settings.insert(setting.name.into(), Value::Object(entry));
        }
        json!({ "settings": settings, "rules": fields::RULES })
    }
}

/// A setting's value as the page shows it: `{"value": ...}`, or `{"set": ...}` for a secret.
fn value_of(config: &AlertConfig, setting: &Setting) -> Map<String, Value> {
    let minutes =
        |d: Option<std::time::Duration>| number(d.map_or(0.0, |d| d.as_secs_f64() / 60.0));
    let value = match setting.variable {
        "ALERT_LOW_C" => number(config.low_c),
        "ALERT_HIGH_C" => number(config.high_c),
        "ALERT_OFFLINE_MINUTES" => minutes(config.offline_after),
        "ALERT_NOT_HEATING_MINUTES" => minutes(config.no_effect_after),
        "ALERT_NOT_APPLIED_MINUTES" => minutes(config.not_applied_after),
        "FILTER_REMINDER_HOURS" => number(config.filter_after_s.unwrap_or(0) as f64 / 3600.0),
        "ALERT_RULES_OFF" => json!(config.rules_off),
        "NTFY_URL" => json!(config.ntfy_url.as_deref().map(masked)),
        "WEBHOOK_URL" => json!(config.webhook_url.as_deref().map(masked)),
        "WEBHOOK_SECRET" => {
            return Map::from_iter([("set".into(), json!(config.webhook_secret.is_some()))]);
        }
        _ => Value::Null,
    };
    Map::from_iter([("value".into(), value)])
}

/// A target URL as the page may show it: a user and password, or a query (where tokens
/// live), are shown as `…`, never returned; the scheme, host and path say which it is.
fn masked(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    let host = authority
        .rsplit_once('@')
        .map_or_else(|| authority.to_string(), |(_, host)| format!("…@{host}"));
    let path = path
        .split_once('?')
        .map_or_else(|| path.to_string(), |(p, _)| format!("{p}?…"));
    format!("{scheme}://{host}{path}")
}

/// A number as people write it: whole numbers without `.0`, at most 4 decimals.
fn number(v: f64) -> Value {
    let rounded = (v * 10_000.0).round() / 10_000.0;
    if rounded.fract() == 0.0 && rounded.abs() < 1e15 {
        json!(rounded as i64)
    } else {
        json!(rounded)
    }
}

/// A value of the page as the text its setting's check reads (what the environment would
/// hold); `None` for `null` (clear what the page saved). A list is the rules off.
fn text_of(setting: &Setting, value: &Value) -> Result<Option<String>, String> {
    let is_rules = setting.variable == "ALERT_RULES_OFF";
    match value {
        Value::Null => Ok(None),
        Value::Number(n) if !is_rules => Ok(Some(n.to_string())),
        Value::String(s) => Ok(Some(s.trim().to_string())),
        Value::Array(items) if is_rules => items
            .iter()
            .map(|i| i.as_str().map(str::trim))
            .collect::<Option<Vec<&str>>>()
            .map(|names| Some(names.join(",")))
            .ok_or_else(|| "must be a list of rule names, such as [\"offline\"]".to_string()),
        _ if is_rules => Err("must be a list of rule names, such as [\"offline\"]".into()),
        _ if setting.variable.ends_with("_URL") || fields::SECRETS.contains(&setting.variable) => {
            Err("must be a text (empty for none), or null to clear what the page saved".into())
        }
        _ => Err("must be a number, or null to clear what the page saved".into()),
    }
}

/// The saved settings as the file holds them: `{"<setting name>": "<text>"}`.
fn file_bytes(saved: &Saved) -> Vec<u8> {
    let map: Map<String, Value> = saved
        .iter()
        .filter_map(|(variable, raw)| {
            let setting = fields::FIELDS
                .into_iter()
                .find(|s| s.variable == *variable)?;
            Some((setting.name.to_string(), json!(raw)))
        })
        .collect();
    let mut bytes = serde_json::to_vec_pretty(&Value::Object(map)).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

fn parse_file(bytes: &[u8]) -> Result<Saved, String> {
    let map: Map<String, Value> =
        serde_json::from_slice(bytes).map_err(|e| format!("not a JSON object ({e})"))?;
    let mut saved = Saved::new();
    for (name, value) in map {
        let setting = fields::field(&name).ok_or_else(|| format!("{name} is no alert setting"))?;
        let Value::String(raw) = value else {
            return Err(format!("{name} is not a text"));
        };
        saved.insert(setting.variable, raw);
    }
    Ok(saved)
}

#[cfg(test)]
mod tests {
    #[test]
    fn target_urls_are_shown_without_their_tokens() {
        assert_eq!(
            super::masked("https://ntfy.sh/house"),
            "https://ntfy.sh/house"
        );
        assert_eq!(
            super::masked("https://user:pw@ntfy.example/house?auth=tk"),
            "https://…@ntfy.example/house?…"
        );
        assert_eq!(
            super::masked("http://hook.lan:8123"),
            "http://hook.lan:8123"
        );
    }

    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "hearth-alert-settings-{tag}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_change_is_checked_whole_saved_and_read_back() {
        let d = dir("change");
        let config = Config::local(&d);
        let s = Settings::open(&config, &d).unwrap();
        let e = s
            .change(&object(
                json!({"alert_low_c": 4.5, "ntfy_url": "http://127.0.0.1:9/t",
                "alert_rules_off": ["filter", "offline"], "webhook_secret": "k"}),
            ))
            .unwrap();
        assert_eq!(e.config.low_c, 4.5);
        assert_eq!(e.config.rules_off, ["offline", "filter"]);
        let shown = s.shown();
        assert_eq!(shown["settings"]["webhook_secret"]["set"], json!(true));
        assert!(!shown.to_string().contains("\"k\""), "{shown}");
        assert_eq!(
            shown["settings"]["alert_low_c"],
            json!({"value": 4.5, "source": "saved", "variable": "ALERT_LOW_C",
                   "flag": "--alert-low-c", "under": {"value": 7, "source": "default"}})
        );
        // A bad member refuses the whole change.
        let before = std::fs::read(d.join(FILE)).unwrap();
        for (body, says) in [
            (
                json!({"alert_high_c": 50, "alert_low_c": 60}),
                "alert_low_c must be below",
            ),
            (
                json!({"alert_high_c": 4}),
                "alert_high_c must be above ALERT_LOW_C (4 is not above 4.5)",
            ),
            (
                json!({"ntfy_url": 5}),
                "ntfy_url must be an http:// or https:// URL",
            ),
            (
                json!({"webhook_secret": true}),
                "webhook_secret must be a text",
            ),
            (json!({"nope": 1}), "nope is no alert setting"),
            (
                json!({"alert_rules_off": 5}),
                "alert_rules_off must be a list of rule names",
            ),
            (
                json!({"alert_rules_off": ["cold"]}),
                "alert_rules_off has \"cold\", which is no rule",
            ),
        ] {
            match s.change(&object(body.clone())) {
                Err(ChangeError::Invalid(text)) => assert!(text.starts_with(says), "{text}"),
                other => panic!("{body}: {other:?}"),
            }
        }
        assert_eq!(std::fs::read(d.join(FILE)).unwrap(), before);
        assert_eq!(s.config().low_c, 4.5);
        // Kept across a restart; null clears back to the default.
        let s = Settings::open(&config, &d).unwrap();
        assert_eq!(s.config().ntfy_url.as_deref(), Some("http://127.0.0.1:9/t"));
        s.change(&object(json!({"alert_low_c": null}))).unwrap();
        assert_eq!(Settings::open(&config, &d).unwrap().config().low_c, 7.0);
        // A damaged file is refused, naming it.
        std::fs::write(d.join(FILE), b"{\"alert_low_c\": \"warm\"}").unwrap();
        let err = Settings::open(&config, &d).err().unwrap().to_string();
        assert!(
            err.contains("settings.json: alert_low_c must be a number"),
            "{err}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
