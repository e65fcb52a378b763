//! The alert settings (docs/alerts.md): the rules' limits and the receivers. Limits are decimal
//! numbers (fractions allowed, so tests can use seconds); each is checked here so a bad value
//! stops startup naming the setting.

use std::time::Duration;

use super::settings::text;
use super::sources::{ConfigError, Sources};

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
    /// `filter` after this many seconds of heating and cooling since the last reset; `None`
    /// turns it off.
    pub filter_after_s: Option<i64>,
    /// `not_applied` after a change has waited this long for the thermostat to take it;
    /// `None` turns the rule off.
    pub not_applied_after: Option<Duration>,
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
            filter_after_s: None,
            not_applied_after: Some(Duration::from_secs(15 * 60)),
            ntfy_url: None,
            webhook_url: None,
            webhook_secret: None,
        }
    }
}

/// The alert settings as given (their defaults where unset).
pub(super) fn alerts(sources: &Sources<'_>) -> Result<AlertConfig, ConfigError> {
    let d = AlertConfig::default();
    let low_c = sources
        .text(const { text("ALERT_LOW_C") }, temperature)?
        .unwrap_or(d.low_c);
    let high_c = sources
        .text(const { text("ALERT_HIGH_C") }, temperature)?
        .unwrap_or(d.high_c);
    if low_c >= high_c {
        return Err(sources.error(
            "ALERT_LOW_C",
            &format!("must be below ALERT_HIGH_C ({low_c} is not below {high_c})"),
        ));
    }
    let minutes = |m: f64| (m > 0.0).then(|| Duration::from_secs_f64(m * 60.0));
    Ok(AlertConfig {
        low_c,
        high_c,
        offline_after: sources
            .text(const { text("ALERT_OFFLINE_MINUTES") }, span)?
            .map_or(d.offline_after, minutes),
        no_effect_after: sources
            .text(const { text("ALERT_NOT_HEATING_MINUTES") }, span)?
            .map_or(d.no_effect_after, minutes),
        filter_after_s: sources
            .text(const { text("FILTER_REMINDER_HOURS") }, span)?
            .and_then(|h| (h > 0.0).then(|| (h * 3600.0).round().max(1.0) as i64)),
        not_applied_after: d.not_applied_after,
        ntfy_url: sources.text(const { text("NTFY_URL") }, super::parse_http_url)?,
        webhook_url: sources.text(const { text("WEBHOOK_URL") }, super::parse_http_url)?,
        webhook_secret: sources.text(const { text("WEBHOOK_SECRET") }, super::any_text)?,
    })
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
