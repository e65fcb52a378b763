//! The alert settings (docs/alerts.md): the rules' limits, which rules are on, and the
//! receivers. Limits are decimal numbers (fractions allowed, so tests can use seconds); each is
//! checked here, by one function per setting ([`set`]), whether it comes from a flag, the
//! options file, the environment or the page ([`effective`]), so a bad value is refused naming
//! the setting wherever it was given.
//!
//! The page may save a value for each of them ([`FIELDS`]). Which value counts is decided here
//! and nowhere else ([`effective`]): a flag wins (as every flag does), then a value saved on the
//! page, then the options file or the environment, then the default.

use std::collections::BTreeMap;
use std::time::Duration;

use super::settings::{Setting, declared};
use super::sources::{ConfigError, Given, Sources};

/// What the alert rules watch for and where their notices go.
#[derive(Clone, Debug, PartialEq)]
pub struct AlertConfig {
    /// `low_temperature` below this (°C).
    pub low_c: f64,
    /// `high_temperature` above this (°C).
    pub high_c: f64,
    /// `offline` after this long without contact; `None` turns the rule off.
    pub offline_after: Option<Duration>,
    /// `not_heating` / `not_cooling` after this long without effect; `None` turns them off.
    pub no_effect_after: Option<Duration>,
    /// `not_applied` after a change has waited this long for the thermostat to take it;
    /// `None` turns the rule off.
    pub not_applied_after: Option<Duration>,
    /// `filter` after this many seconds of heating and cooling since the last reset; `None`
    /// turns it off.
    pub filter_after_s: Option<i64>,
    /// The rules turned off, by their kinds' wire names ([`RULES`]), in [`RULES`]' order.
    pub rules_off: Vec<String>,
    /// ntfy's topic URL.
    pub ntfy_url: Option<String>,
    pub webhook_url: Option<String>,
    /// The key of the webhook's `X-Hearth-Signature` (HMAC-SHA256 of the body).
    pub webhook_secret: Option<String>,
}

impl Default for AlertConfig {
    fn default() -> AlertConfig {
        AlertConfig {
            low_c: 7.0,
            high_c: 35.0,
            offline_after: Some(Duration::from_secs(30 * 60)),
            no_effect_after: Some(Duration::from_secs(90 * 60)),
            not_applied_after: Some(Duration::from_secs(15 * 60)),
            filter_after_s: None,
            rules_off: Vec::new(),
            ntfy_url: None,
            webhook_url: None,
            webhook_secret: None,
        }
    }
}

impl AlertConfig {
    /// Whether the rule of the kind called `rule` (`offline`, ...) is on.
    pub fn rule_on(&self, rule: &str) -> bool {
        !self.rules_off.iter().any(|r| r == rule)
    }
}

/// The alert rules by their kinds' wire names (`crate::alerts::Kind`, which a test there holds
/// to this list): what `ALERT_RULES_OFF` takes.
pub const RULES: [&str; 9] = [
    "low_temperature",
    "high_temperature",
    "offline",
    "not_heating",
    "not_cooling",
    "not_applied",
    "filter",
    "low_battery",
    "safety_shutoff",
];

/// The alert settings, in the page's order: each may be saved on the page.
pub const FIELDS: [&Setting; 10] = [
    declared("ALERT_LOW_C"),
    declared("ALERT_HIGH_C"),
    declared("ALERT_OFFLINE_MINUTES"),
    declared("ALERT_NOT_HEATING_MINUTES"),
    declared("ALERT_NOT_APPLIED_MINUTES"),
    declared("FILTER_REMINDER_HOURS"),
    declared("ALERT_RULES_OFF"),
    declared("NTFY_URL"),
    declared("WEBHOOK_URL"),
    declared("WEBHOOK_SECRET"),
];

/// The settings whose value is never shown, only whether it is set.
pub const SECRETS: [&str; 1] = ["WEBHOOK_SECRET"];

/// The alert setting called `name` (its variable in lower case, as the page and the options
/// file name it).
pub fn field(name: &str) -> Option<&'static Setting> {
    FIELDS.into_iter().find(|s| s.name == name)
}

/// Where an alert setting's value comes from, in the order of precedence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Flag,
    /// Saved on the page (`PUT /api/alerts/settings`).
    Saved,
    /// The options file (the Home Assistant add-on's options).
    Option,
    Environment,
    Default,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Saved => "saved",
            Source::Option => "option",
            Source::Environment => "environment",
            Source::Default => "default",
        }
    }

    /// Where a value given at start comes from (`None`: not given, its default).
    pub fn of(given: Option<Given>) -> Source {
        match given {
            Some(Given::Flag) => Source::Flag,
            Some(Given::OptionsFile) => Source::Option,
            Some(Given::Environment) => Source::Environment,
            None => Source::Default,
        }
    }
}

/// Where each alert setting was given when hearth started (one not listed: its default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AlertSources(Vec<(&'static str, Given)>);

impl AlertSources {
    /// Where `variable` was given, if it was.
    pub fn of(&self, variable: &str) -> Option<Given> {
        self.0.iter().find(|(v, _)| *v == variable).map(|(_, g)| *g)
    }

    /// `variable` as if given on the command line (for tests of the precedence).
    pub fn flagged(mut self, variable: &'static str) -> AlertSources {
        self.0.retain(|(v, _)| *v != variable);
        self.0.push((variable, Given::Flag));
        self
    }
}

/// Values saved on the page, by variable, as text: what the environment would hold (numbers as
/// JSON writes them, the rules off separated by commas). An empty text setting (a URL, the
/// secret) is saved empty and means none, which the environment cannot say.
pub type Saved = BTreeMap<&'static str, String>;

/// The alert settings in force, and where each comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct Effective {
    pub config: AlertConfig,
    /// By variable, every one of [`FIELDS`].
    pub sources: BTreeMap<&'static str, Source>,
}

/// A value refused, naming its setting.
#[derive(Clone, Debug)]
pub struct FieldError {
    pub setting: &'static Setting,
    pub message: String,
}

/// The alert settings in force: `base` (from flags, the options file, the environment and the
/// defaults, as `given` says) with the values `saved` on the page. The one place the
/// precedence is decided: a flag wins, then a saved value, then the options file or the
/// environment, then the default.
///
/// `changed`: the variables a change of the page is setting, so a clash of the two limits is
/// named by the one it set.
pub fn effective(
    base: &AlertConfig,
    given: &AlertSources,
    saved: &Saved,
    changed: &[&str],
) -> Result<Effective, FieldError> {
    let mut config = base.clone();
    let mut sources = BTreeMap::new();
    for setting in FIELDS {
        let variable = setting.variable;
        let source = match (given.of(variable), saved.get(variable)) {
            (Some(Given::Flag), _) => Source::Flag,
            (_, Some(raw)) => {
                set(&mut config, variable, raw).map_err(|why| FieldError {
                    setting,
                    message: format!("{why} (got {raw:?})"),
                })?;
                Source::Saved
            }
            (g, None) => Source::of(g),
        };
        sources.insert(variable, source);
    }
    if let Err(message) = limits_in_order(&config) {
        // Named by the limit just changed, else by the one saved on the page (the one the page
        // can change), else the low one.
        let low_saved = sources.get("ALERT_LOW_C") == Some(&Source::Saved);
        let high_saved = sources.get("ALERT_HIGH_C") == Some(&Source::Saved);
        let high = match (
            changed.contains(&"ALERT_LOW_C"),
            changed.contains(&"ALERT_HIGH_C"),
        ) {
            (false, true) => true,
            (true, _) => false,
            (false, false) => high_saved && !low_saved,
        };
        return Err(if high {
            FieldError {
                setting: declared("ALERT_HIGH_C"),
                message: format!(
                    "must be above ALERT_LOW_C ({} is not above {})",
                    config.high_c, config.low_c
                ),
            }
        } else {
            FieldError {
                setting: declared("ALERT_LOW_C"),
                message,
            }
        });
    }
    Ok(Effective { config, sources })
}

/// The alert settings as given (their defaults where unset), and where each was given.
pub(super) fn alerts(sources: &Sources<'_>) -> Result<(AlertConfig, AlertSources), ConfigError> {
    let mut config = AlertConfig::default();
    let mut given = Vec::new();
    for setting in FIELDS {
        let variable = setting.variable;
        if let Some((raw, g)) = sources.raw(variable) {
            set(&mut config, variable, &raw).map_err(|why| {
                ConfigError::new(variable, &format!("{why} (got {raw:?})")).given(g)
            })?;
            given.push((variable, g));
        }
    }
    limits_in_order(&config).map_err(|why| sources.error("ALERT_LOW_C", &why))?;
    Ok((config, AlertSources(given)))
}

/// `ALERT_LOW_C` below `ALERT_HIGH_C`.
fn limits_in_order(config: &AlertConfig) -> Result<(), String> {
    if config.low_c >= config.high_c {
        return Err(format!(
            "must be below ALERT_HIGH_C ({} is not below {})",
            config.low_c, config.high_c
        ));
    }
    Ok(())
}

/// Sets the alert setting `variable` of `config` from its text, or says why not. Empty text
/// turns a URL or the secret off (the environment never passes empty text: it is unset there).
fn set(config: &mut AlertConfig, variable: &str, raw: &str) -> Result<(), String> {
    let minutes = |m: f64| (m > 0.0).then(|| Duration::from_secs_f64(m * 60.0));
    let optional = |raw: &str, parse: fn(&str) -> Result<String, String>| match raw {
        "" => Ok(None),
        raw => parse(raw).map(Some),
    };
    match variable {
        "ALERT_LOW_C" => config.low_c = temperature(raw)?,
        "ALERT_HIGH_C" => config.high_c = temperature(raw)?,
        "ALERT_OFFLINE_MINUTES" => config.offline_after = minutes(span(raw)?),
        "ALERT_NOT_HEATING_MINUTES" => config.no_effect_after = minutes(span(raw)?),
        "ALERT_NOT_APPLIED_MINUTES" => config.not_applied_after = minutes(span(raw)?),
        "FILTER_REMINDER_HOURS" => {
            let h = span(raw)?;
            config.filter_after_s = (h > 0.0).then(|| (h * 3600.0).round().max(1.0) as i64);
        }
        "ALERT_RULES_OFF" => config.rules_off = rules(raw)?,
        "NTFY_URL" => config.ntfy_url = optional(raw, super::parse_http_url)?,
        "WEBHOOK_URL" => config.webhook_url = optional(raw, super::parse_http_url)?,
        "WEBHOOK_SECRET" => config.webhook_secret = optional(raw, super::any_text)?,
        _ => return Err("is not an alert setting".into()),
    }
    Ok(())
}

/// A number as JSON writes it (`7`, `6.5`, `-2`): read by serde_json, which the binary has
/// already, rather than by the standard library's float parser (about 14 KB more).
fn number(raw: &str) -> Option<f64> {
    serde_json::from_str::<f64>(raw).ok()
}

/// A temperature limit in °C.
fn temperature(raw: &str) -> Result<f64, String> {
    match number(raw) {
        Some(v) if (-50.0..=100.0).contains(&v) => Ok(v),
        _ => Err("must be a number of °C from -50 to 100, such as 7 or 6.5".into()),
    }
}

/// Minutes or hours: 0 (off) or more, fractions allowed, at most a year's worth of hours.
fn span(raw: &str) -> Result<f64, String> {
    match number(raw) {
        Some(v) if (0.0..=525_600.0).contains(&v) => Ok(v),
        _ => Err(
            "must be a number from 0 (off) to 525600, fractions allowed, such as 30 or 0.5".into(),
        ),
    }
}

/// Rules separated by commas (spaces and empty items ignored), each one of [`RULES`]; kept in
/// [`RULES`]' order, each once.
fn rules(raw: &str) -> Result<Vec<String>, String> {
    let named: Vec<&str> = raw
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .collect();
    if let Some(unknown) = named.iter().find(|r| !RULES.contains(r)) {
        return Err(format!(
            "has {unknown:?}, which is no rule: the rules are {}",
            RULES.join(", ")
        ));
    }
    Ok(RULES
        .into_iter()
        .filter(|r| named.contains(r))
        .map(str::to_string)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn resolve(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let env = |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        Config::resolve(&Sources::new(&env))
    }

    #[test]
    fn fractions_and_zero_as_off() {
        let c = resolve(&[
            ("ALERT_LOW_C", "4.5"),
            ("ALERT_OFFLINE_MINUTES", "0.05"),
            ("ALERT_NOT_HEATING_MINUTES", "0"),
            ("FILTER_REMINDER_HOURS", "0.5"),
            ("WEBHOOK_URL", "https://hooks.example/h"),
        ])
        .unwrap()
        .alerts;
        assert_eq!(c.low_c, 4.5);
        assert_eq!(c.high_c, 35.0);
        assert_eq!(c.offline_after, Some(Duration::from_secs(3)));
        assert_eq!(c.no_effect_after, None);
        assert_eq!(c.filter_after_s, Some(1800));
        assert_eq!(c.webhook_url.as_deref(), Some("https://hooks.example/h"));
        assert_eq!(resolve(&[]).unwrap().alerts, AlertConfig::default());
        let c = resolve(&[
            ("ALERT_NOT_APPLIED_MINUTES", "0"),
            ("ALERT_RULES_OFF", "offline"),
        ])
        .unwrap()
        .alerts;
        assert_eq!(
            (c.not_applied_after, c.rules_off),
            (None, vec!["offline".to_string()])
        );
    }

    #[test]
    fn a_flag_beats_the_page_which_beats_the_environment_which_beats_the_default() {
        let env = |k: &str| match k {
            "ALERT_LOW_C" | "ALERT_HIGH_C" => {
                Some(if k == "ALERT_LOW_C" { "5" } else { "30" }.into())
            }
            "NTFY_URL" => Some("http://env.example/topic".into()),
            _ => None,
        };
        let mut sources = Sources::new(&env);
        sources.flag("ALERT_HIGH_C", Some("32".into()));
        let c = Config::resolve(&sources).unwrap();
        let saved: Saved = [
            ("ALERT_LOW_C", "4".to_string()),
            ("ALERT_HIGH_C", "20".to_string()),
            ("WEBHOOK_SECRET", String::new()),
            ("ALERT_RULES_OFF", "filter, offline".to_string()),
        ]
        .into();
        let e = effective(&c.alerts, &c.alert_sources, &saved, &[]).unwrap();
        assert_eq!(e.config.low_c, 4.0, "saved beats the environment");
        assert_eq!(e.config.high_c, 32.0, "the flag beats the saved value");
        assert_eq!(
            e.config.ntfy_url.as_deref(),
            Some("http://env.example/topic")
        );
        assert_eq!(e.config.rules_off, ["offline", "filter"]);
        assert!(!e.config.rule_on("offline") && e.config.rule_on("low_temperature"));
        let source = |v: &str| e.sources[v].as_str();
        assert_eq!(
            [
                source("ALERT_LOW_C"),
                source("ALERT_HIGH_C"),
                source("NTFY_URL")
            ],
            ["saved", "flag", "environment"]
        );
        assert_eq!(
            [source("WEBHOOK_URL"), source("WEBHOOK_SECRET")],
            ["default", "saved"]
        );
        // Nothing saved: what was given at start.
        let none = effective(&c.alerts, &c.alert_sources, &Saved::new(), &[]).unwrap();
        assert_eq!(none.config, c.alerts);
        // A saved value that does not fit is refused naming its setting.
        for (saved, variable, says) in [
            (
                ("ALERT_LOW_C", "40"),
                "ALERT_LOW_C",
                "must be below ALERT_HIGH_C",
            ),
            (("NTFY_URL", "ntfy.sh/x"), "NTFY_URL", "http:// or https://"),
            (
                ("ALERT_RULES_OFF", "offline,nope"),
                "ALERT_RULES_OFF",
                "\"nope\", which is no rule",
            ),
            (
                ("ALERT_NOT_APPLIED_MINUTES", "-1"),
                "ALERT_NOT_APPLIED_MINUTES",
                "0 (off)",
            ),
        ] {
            let saved: Saved = [(saved.0, saved.1.to_string())].into();
            let err = effective(&c.alerts, &c.alert_sources, &saved, &[]).unwrap_err();
            assert_eq!(err.setting.variable, variable);
            assert!(err.message.contains(says), "{}", err.message);
        }
    }

    #[test]
    fn bad_values_name_their_setting() {
        for (pairs, variable, says) in [
            (
                &[("ALERT_LOW_C", "cold")][..],
                "ALERT_LOW_C",
                "number of °C",
            ),
            (
                &[("ALERT_HIGH_C", "1e9")][..],
                "ALERT_HIGH_C",
                "from -50 to 100",
            ),
            (
                &[("ALERT_LOW_C", "20"), ("ALERT_HIGH_C", "18")][..],
                "ALERT_LOW_C",
                "must be below ALERT_HIGH_C",
            ),
            (
                &[("ALERT_OFFLINE_MINUTES", "-1")][..],
                "ALERT_OFFLINE_MINUTES",
                "0 (off)",
            ),
            (
                &[("ALERT_NOT_HEATING_MINUTES", "NaN")][..],
                "ALERT_NOT_HEATING_MINUTES",
                "0 (off)",
            ),
            (
                &[("FILTER_REMINDER_HOURS", "lots")][..],
                "FILTER_REMINDER_HOURS",
                "0 (off)",
            ),
            (
                &[("NTFY_URL", "ntfy.sh/topic")][..],
                "NTFY_URL",
                "http:// or https://",
            ),
            (
                &[("WEBHOOK_URL", "ftp://x")][..],
                "WEBHOOK_URL",
                "http:// or https://",
            ),
        ] {
            let err = resolve(pairs).unwrap_err();
            assert_eq!(err.variable, variable, "{pairs:?}");
            assert!(err.to_string().contains(says), "{err}");
        }
    }
}
