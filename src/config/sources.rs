//! Where settings' values come from (flags, which win, then the environment) and how each kind
//! of declared setting is read and checked.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;

use super::settings::{self, Bool, Ip, Number, Text, Unset};

/// Where settings come from: explicit flag values (keyed by the environment variable's name)
/// and an environment lookup.
pub struct Sources<'a> {
    flags: HashMap<&'static str, String>,
    env: &'a dyn Fn(&str) -> Option<String>,
}

impl<'a> Sources<'a> {
    pub fn new(env: &'a dyn Fn(&str) -> Option<String>) -> Sources<'a> {
        Sources {
            flags: HashMap::new(),
            env,
        }
    }

    /// Records a flag's value under the environment variable it overrides.
    pub fn flag(&mut self, variable: &'static str, value: Option<String>) {
        if let Some(v) = value {
            self.flags.insert(variable, v);
        }
    }

    /// The raw value: flag first, then environment. Empty values count as unset, so a systemd
    /// environment file can list a variable without setting it.
    fn get(&self, variable: &str) -> Option<String> {
        self.flags
            .get(variable)
            .cloned()
            .or_else(|| (self.env)(variable))
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }

    /// The value given for `variable`, checked by `parse`; `None` when unset.
    fn parse<T>(
        &self,
        variable: &'static str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Option<T>, ConfigError> {
        match self.get(variable) {
            None => Ok(None),
            Some(raw) => parse(&raw)
                .map(Some)
                .map_err(|why| ConfigError::new(variable, &format!("{why} (got {raw:?})"))),
        }
    }

    /// A number setting's value, else its default.
    pub(super) fn number(&self, n: Number) -> Result<u64, ConfigError> {
        let (min, max) = (n.min, n.max);
        let given = self.parse(n.setting.variable, |raw| match raw.parse::<u64>() {
            Ok(v) if (min..=max).contains(&v) => Ok(v),
            _ => Err(format!("must be a whole number from {min} to {max}")),
        })?;
        Ok(given.unwrap_or(n.default))
    }

    /// A boolean setting's value, else its default.
    pub(super) fn boolean(&self, b: Bool) -> Result<bool, ConfigError> {
        Ok(self
            .parse(b.setting.variable, parse_bool)?
            .unwrap_or(b.default))
    }

    /// An IP address setting's value, else its default value if it has one.
    pub(super) fn ip(&self, s: Ip) -> Result<Option<IpAddr>, ConfigError> {
        let given = self.parse(s.setting.variable, parse_ip)?;
        Ok(given.or(match s.unset {
            Unset::Is(ip) => Some(ip),
            Unset::Means(_) => None,
        }))
    }

    /// A text setting's value, else its default value if it has one, checked by `parse`.
    pub(super) fn text<T>(
        &self,
        t: Text,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Option<T>, ConfigError> {
        let variable = t.setting.variable;
        match (self.parse(variable, &parse)?, t.unset) {
            (Some(value), _) => Ok(Some(value)),
            (None, Unset::Means(_)) => Ok(None),
            // A declared default passes its own check (the config tests resolve them all).
            (None, Unset::Is(default)) => parse(default)
                .map(Some)
                .map_err(|why| ConfigError::new(variable, &format!("default {default:?}: {why}"))),
        }
    }
}

fn parse_bool(raw: &str) -> Result<bool, String> {
    match raw.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err("must be true or false (also 1/0, yes/no, on/off)".to_string()),
    }
}

fn parse_ip(raw: &str) -> Result<IpAddr, String> {
    raw.parse()
        .map_err(|_| "must be an IP address such as 0.0.0.0 or 192.168.1.10".to_string())
}

/// A setting that failed validation; the message names the variable, its flag and the range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub variable: &'static str,
    pub message: String,
}

impl ConfigError {
    pub(super) fn new(variable: &'static str, message: &str) -> ConfigError {
        ConfigError {
            variable,
            message: message.to_string(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match settings::find(self.variable) {
            Some(s) => write!(
                f,
                "invalid {} ({}): {}",
                self.variable, s.option, self.message
            ),
            None => write!(f, "invalid {}: {}", self.variable, self.message),
        }
    }
}

impl std::error::Error for ConfigError {}
