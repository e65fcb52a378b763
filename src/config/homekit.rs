//! The HomeKit settings (docs/homekit.md): whether hearth is a HomeKit bridge, on which port,
//! and under which name.

use super::settings::{boolean, number, text};
use super::sources::{ConfigError, Sources};

/// Whether and how hearth speaks HAP (see [`crate::homekit`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HomekitConfig {
    pub enabled: bool,
    /// 0 picks a free port (the advertisement carries the bound one).
    pub port: u16,
    /// The bridge's name: its accessory information and its mDNS instance name.
    pub name: String,
}

impl Default for HomekitConfig {
    fn default() -> HomekitConfig {
        HomekitConfig {
            enabled: const { boolean("HOMEKIT").default },
            port: super::to_u16(const { number("HOMEKIT_PORT").default }),
            name: const { text("HOMEKIT_NAME").unset.value() }.to_string(),
        }
    }
}

/// The HomeKit settings as given (their defaults where unset). The port and name are checked
/// with HomeKit off too, so a typo is reported rather than ignored until it is turned on.
pub(super) fn homekit(sources: &Sources<'_>) -> Result<HomekitConfig, ConfigError> {
    let d = HomekitConfig::default();
    Ok(HomekitConfig {
        enabled: sources.boolean(const { boolean("HOMEKIT") })?,
        port: super::to_u16(sources.number(const { number("HOMEKIT_PORT") })?),
        name: sources
            .text(const { text("HOMEKIT_NAME") }, parse_name)?
            .unwrap_or(d.name),
    })
}

/// What the Home app accepts as an accessory's name (it refuses others at pairing, or renames
/// them): letters, digits, spaces and apostrophes, starting and ending with a letter or digit;
/// and what fits one DNS label (63 bytes), since the name is the mDNS instance name too.
pub(crate) fn parse_name(raw: &str) -> Result<String, String> {
    let alphanumeric = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let ok = raw.len() <= 63
        && alphanumeric(raw.chars().next())
        && alphanumeric(raw.chars().last())
        && raw
            .chars()
            .all(|c| c.is_alphanumeric() || c == ' ' || c == '\'');
    if !ok {
        return Err(
            "must be up to 63 bytes of letters, digits, spaces and ', starting and ending with \
             a letter or digit (the Home app refuses other names), such as Hearth or Nest Bridge"
                .into(),
        );
    }
    Ok(raw.to_string())
}

#[cfg(test)]
mod tests {
    use super::super::{Config, Sources};
    use super::{HomekitConfig, parse_name};

    fn resolve(pairs: &[(&str, &str)]) -> Result<Config, super::ConfigError> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let env = move |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        Config::resolve(&Sources::new(&env))
    }

    #[test]
    fn on_by_default_on_port_51826_as_hearth() {
        let c = resolve(&[]).unwrap();
        assert_eq!(
            c.homekit,
            HomekitConfig {
                enabled: true,
                port: 51826,
                name: "hearth".into()
            }
        );
        let c = resolve(&[
            ("HOMEKIT", "off"),
            ("HOMEKIT_PORT", "51827"),
            ("HOMEKIT_NAME", "Nest Bridge"),
        ])
        .unwrap();
        assert_eq!(
            c.homekit,
            HomekitConfig {
                enabled: false,
                port: 51827,
                name: "Nest Bridge".into()
            }
        );
    }

    #[test]
    fn bad_values_name_their_variable() {
        for (pairs, variable) in [
            (&[("HOMEKIT", "maybe")][..], "HOMEKIT"),
            (&[("HOMEKIT_PORT", "65536")][..], "HOMEKIT_PORT"),
            (
                &[("HOMEKIT", "off"), ("HOMEKIT_PORT", "x")][..],
                "HOMEKIT_PORT",
            ),
            (&[("HOMEKIT_NAME", "a/b")][..], "HOMEKIT_NAME"),
        ] {
            let err = resolve(pairs).unwrap_err();
            assert_eq!(err.variable, variable, "{pairs:?}");
        }
    }

    #[test]
    fn names_the_home_app_accepts() {
        for good in ["hearth", "Nest Bridge", "Tom's Nest", "Wärme 2", "a"] {
            assert_eq!(parse_name(good).as_deref(), Ok(good));
        }
        let long = "x".repeat(64);
        for bad in [
            "", " hearth", "hearth ", "-hearth", "a/b", "a\nb", "hearth.", &long,
        ] {
            assert!(parse_name(bad).is_err(), "{bad:?}");
        }
        assert!(parse_name(&"x".repeat(63)).is_ok());
    }
}
