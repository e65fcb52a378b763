//! Where settings' values come from (flags, which win, then an options file, then the
//! environment) and how each kind of declared setting is read and checked.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;

use super::settings::{self, Bool, Ip, Number, Text, Unset};

/// Where a setting's value was given, so an error can say where to fix it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Given {
    /// A command-line option.
    Flag,
    /// The options file (`OPTIONS_FILE`): a Home Assistant add-on's Configuration page.
    OptionsFile,
    Environment,
}

/// Where settings come from: explicit flag values and the options file's values (both keyed by
/// the environment variable's name) and an environment lookup.
#[derive(Clone)]
pub struct Sources<'a> {
    flags: HashMap<&'static str, String>,
    options: HashMap<&'static str, String>,
    env: &'a dyn Fn(&str) -> Option<String>,
}

impl<'a> Sources<'a> {
    pub fn new(env: &'a dyn Fn(&str) -> Option<String>) -> Sources<'a> {
        Sources {
            flags: HashMap::new(),
            options: HashMap::new(),
            env,
        }
    }

    /// Records a flag's value under the environment variable it overrides.
    pub fn flag(&mut self, variable: &'static str, value: Option<String>) {
        if let Some(v) = value {
            self.flags.insert(variable, v);
        }
    }

    /// These sources with an options file's values (by variable) between flags and environment.
    pub(super) fn with_options(&self, options: HashMap<&'static str, String>) -> Sources<'a> {
        Sources {
            options,
            ..self.clone()
        }
    }

    /// The raw value and where it was given: flag first, then options file, then environment.
    /// Empty values count as unset, so a systemd environment file can list a variable without
    /// setting it (and an add-on option left empty is unset).
    fn get(&self, variable: &str) -> Option<(String, Given)> {
        let given = if let Some(v) = self.flags.get(variable) {
            (v.clone(), Given::Flag)
        } else if let Some(v) = self.options.get(variable) {
            (v.clone(), Given::OptionsFile)
        } else {
            ((self.env)(variable)?, Given::Environment)
        };
        let value = given.0.trim();
        (!value.is_empty()).then(|| (value.to_string(), given.1))
    }

    /// The raw value given for `variable` and where (`None`: unset), for settings read as a
    /// group (the alert settings, which record where each was given).
    pub(super) fn raw(&self, variable: &str) -> Option<(String, Given)> {
        self.get(variable)
    }

    /// An error about `variable`'s value, naming where it was given.
    pub(super) fn error(&self, variable: &'static str, message: &str) -> ConfigError {
        let given = self.get(variable).map_or(Given::Environment, |(_, g)| g);
        ConfigError::new(variable, message).given(given)
    }

    /// The value given for `variable`, checked by `parse`; `None` when unset.
    fn parse<T>(
        &self,
        variable: &'static str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Option<T>, ConfigError> {
        match self.get(variable) {
            None => Ok(None),
            Some((raw, given)) => parse(&raw).map(Some).map_err(|why| {
                ConfigError::new(variable, &format!("{why} (got {raw:?})")).given(given)
            }),
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

/// A setting that failed validation; the message names the setting as it was given (the
/// variable and its option, or the add-on option and its title) and what it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub variable: &'static str,
    pub message: String,
    pub given: Given,
}

impl ConfigError {
    pub(super) fn new(variable: &'static str, message: &str) -> ConfigError {
        ConfigError {
            variable,
            message: message.to_string(),
            given: Given::Environment,
        }
    }

    pub(super) fn given(self, given: Given) -> ConfigError {
        ConfigError { given, ..self }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(s) = settings::find(self.variable) else {
            return write!(f, "invalid {}: {}", self.variable, self.message);
        };
        match (self.given, super::addon::title(s.name)) {
            (Given::OptionsFile, Some(title)) => write!(
                f,
                "invalid option \"{title}\" ({}): {}",
                s.name, self.message
            ),
            (Given::OptionsFile, None) => {
                write!(f, "invalid option {}: {}", s.name, self.message)
            }
            _ => write!(
                f,
                "invalid {} ({}): {}",
                self.variable, s.option, self.message
            ),
        }
    }
}

impl std::error::Error for ConfigError {}
