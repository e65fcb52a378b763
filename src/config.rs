//! Server configuration: defaults, environment variables (the Python server's names, so a user can
//! migrate by copying their settings), command-line flags (which win), and validation. Every
//! invalid value stops startup with a message naming the setting and its allowed range.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::time::Duration;

/// Everything the server needs to start. `Config::default()` holds the production defaults;
/// tests use [`Config::local`].
#[derive(Clone, Debug)]
pub struct Config {
    pub data_dir: PathBuf,
    pub device_bind: IpAddr,
    pub control_bind: IpAddr,
    /// 0 picks a free port (the bound port is logged and reported by `Server`).
    pub device_port: u16,
    pub control_port: u16,
    /// The origin thermostats are told to use. `None`: this machine's LAN address and the
    /// device port, worked out at startup.
    pub api_origin: Option<ApiOrigin>,
    pub require_device_pairing: bool,
    pub entry_key_ttl_secs: u64,
    /// `X-nl-suspend-time-max`; a subscribe is held for this minus 10 seconds.
    pub suspend_time_max_secs: u64,
    pub defer_device_window_secs: u64,
    pub disable_defer_window_secs: u64,
    pub max_subscriptions_per_device: usize,
    pub debug_logging: bool,
    pub store_device_logs: bool,
    /// `None`: `<data_dir>/device-logs`.
    pub device_logs_dir: Option<PathBuf>,
    pub weather_url: Option<String>,
    pub weather_cache_ttl_ms: u64,
    pub weather_timeout: Duration,
    /// Worker threads per listener.
    pub http_workers: usize,
    /// A request body still arriving after this long is abandoned (its connection closed).
    pub body_read_timeout: Duration,
    /// A connection with no data either way for this long is closed (held subscribes and
    /// event streams excepted).
    pub idle_timeout: Duration,
    /// HTTPS on both ports with `fullchain.pem` and `privkey.pem` from this directory.
    pub cert_dir: Option<PathBuf>,
    /// Seconds between self-probes of both listeners; 0 turns the watchdog off.
    pub watchdog_interval_secs: u64,
    /// A live event stream with nothing to send gets a comment line this often.
    pub event_keep_alive: Duration,
    /// Requests per minute each API key may make on `/api/v1`.
    pub api_rate_limit_per_minute: u32,
    /// The control API (port 8082) wants an API key too.
    pub control_require_key: bool,
    /// The port of thermostats' local settings API (8080 on No Longer Evil firmware), for
    /// scanning and pointing thermostats.
    pub thermostat_api_port: u16,
    /// A thermostat with no request and no held subscribe for this long counts as offline
    /// (`/status`'s `is_available`, MQTT availability).
    pub availability_timeout: Duration,
    /// Seconds between history samples of each thermostat (see [`crate::history`]).
    pub history_interval: Duration,
    /// MQTT publishing and Home Assistant discovery; `None` (no `MQTT_HOST`) turns it off.
    pub mqtt: Option<MqttConfig>,
    /// Not a setting: where the server reads the time (tests drive a manual clock).
    pub clock: crate::util::clock::Clock,
}

/// Where and how to publish over MQTT (see [`crate::mqtt`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MqttConfig {
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub password: Option<String>,
    /// `{P}` in every state and command topic.
    pub topic_prefix: String,
    /// Where Home Assistant looks for discovery messages.
    pub discovery_prefix: String,
    pub client_id: String,
}

impl MqttConfig {
    /// A broker on `host:port` with every other setting at its default.
    pub fn new(host: impl Into<String>, port: u16) -> MqttConfig {
        MqttConfig {
            host: host.into(),
            port,
            user: None,
            password: None,
            topic_prefix: "nolongerevil".into(),
            discovery_prefix: "homeassistant".into(),
            client_id: default_client_id(),
        }
    }
}

/// `hearth-` and 8 random hex digits: two servers on one broker must not share an id (the
/// broker would disconnect one whenever the other connects).
fn default_client_id() -> String {
    // Without randomness the id is still valid; only two hearths on one broker would clash.
    let hex = crate::util::random::hex(4).unwrap_or_else(|_| "00000000".into());
    format!("hearth-{hex}")
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: PathBuf::from("./data"),
            device_bind: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            control_bind: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            device_port: 8000,
            control_port: 8082,
            api_origin: None,
            require_device_pairing: false,
            entry_key_ttl_secs: 3600,
            suspend_time_max_secs: 300,
            defer_device_window_secs: 15,
            disable_defer_window_secs: 60,
            max_subscriptions_per_device: 100,
            debug_logging: false,
            store_device_logs: false,
            device_logs_dir: None,
            weather_url: None,
            weather_cache_ttl_ms: 600_000,
            weather_timeout: Duration::from_secs(5),
            http_workers: 4,
            body_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            thermostat_api_port: crate::onboarding::thermostat_api::DEFAULT_PORT,
            cert_dir: None,
            watchdog_interval_secs: 30,
            event_keep_alive: crate::events::KEEP_ALIVE,
            api_rate_limit_per_minute: 20,
            control_require_key: false,
            availability_timeout: Duration::from_millis(crate::presence::AVAILABLE_FOR_MS as u64),
            history_interval: Duration::from_secs(300),
            mqtt: None,
            clock: crate::util::clock::Clock::system(),
        }
    }
}

impl Config {
    /// A configuration for an in-process server on 127.0.0.1 with free ports and the given
    /// data directory (used by tests and benchmarks).
    pub fn local(data_dir: impl Into<PathBuf>) -> Config {
        Config {
            data_dir: data_dir.into(),
            device_bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            control_bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            device_port: 0,
            control_port: 0,
            watchdog_interval_secs: 0,
            ..Config::default()
        }
    }

    /// How long a chunked subscribe is held before it is ended with no data.
    pub fn hold(&self) -> Duration {
        Duration::from_secs(self.suspend_time_max_secs.saturating_sub(10).max(1))
    }

    pub fn device_logs_dir(&self) -> PathBuf {
        self.device_logs_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("device-logs"))
    }

    /// Builds a configuration from flags (which win) and environment variables.
    pub fn resolve(sources: &Sources<'_>) -> Result<Config, ConfigError> {
        let d = Config::default();
        let device_bind = sources
            .parse("SERVER_HOST", parse_ip)?
            .unwrap_or(d.device_bind);
        let data_dir = sources
            .get("DATA_DIR")
            .map(PathBuf::from)
            .unwrap_or(d.data_dir);
        Ok(Config {
            device_bind,
            control_bind: sources
                .parse("CONTROL_HOST", parse_ip)?
                .unwrap_or(device_bind),
            device_port: sources
                .number("SERVER_PORT", 0, 65535)?
                .map_or(d.device_port, to_u16),
            control_port: sources
                .number("CONTROL_PORT", 0, 65535)?
                .map_or(d.control_port, to_u16),
            api_origin: sources.parse("API_ORIGIN", ApiOrigin::parse)?,
            require_device_pairing: sources
                .parse("REQUIRE_DEVICE_PAIRING", parse_bool)?
                .unwrap_or(d.require_device_pairing),
            entry_key_ttl_secs: sources
                .number("ENTRY_KEY_TTL_SECONDS", 1, 604_800)?
                .unwrap_or(d.entry_key_ttl_secs),
            suspend_time_max_secs: sources
                .number("SUSPEND_TIME_MAX", 11, 350)?
                .unwrap_or(d.suspend_time_max_secs),
            defer_device_window_secs: sources
                .number("DEFER_DEVICE_WINDOW", 0, 3599)?
                .unwrap_or(d.defer_device_window_secs),
            disable_defer_window_secs: sources
                .number("DISABLE_DEFER_WINDOW", 0, 3599)?
                .unwrap_or(d.disable_defer_window_secs),
            max_subscriptions_per_device: sources
                .number("MAX_SUBSCRIPTIONS_PER_DEVICE", 1, 1000)?
                .map_or(d.max_subscriptions_per_device, to_usize),
            debug_logging: sources
                .parse("DEBUG_LOGGING", parse_bool)?
                .unwrap_or(d.debug_logging),
            store_device_logs: sources
                .parse("STORE_DEVICE_LOGS", parse_bool)?
                .unwrap_or(d.store_device_logs),
            device_logs_dir: sources.get("DEVICE_LOGS_DIR").map(PathBuf::from),
            weather_url: sources.parse("WEATHER_URL", parse_http_url)?,
            weather_cache_ttl_ms: sources
                .number("WEATHER_CACHE_TTL_MS", 0, 86_400_000)?
                .unwrap_or(d.weather_cache_ttl_ms),
            weather_timeout: d.weather_timeout,
            http_workers: sources
                .number("HTTP_WORKERS", 1, 64)?
                .map_or(d.http_workers, to_usize),
            body_read_timeout: d.body_read_timeout,
            idle_timeout: sources
                .number("IDLE_TIMEOUT_SECONDS", 1, 3600)?
                .map_or(d.idle_timeout, Duration::from_secs),
            cert_dir: sources.get("CERT_DIR").map(PathBuf::from),
            watchdog_interval_secs: sources
                .number("WATCHDOG_INTERVAL_SECONDS", 0, 3600)?
                .unwrap_or(d.watchdog_interval_secs),
            event_keep_alive: d.event_keep_alive,
            api_rate_limit_per_minute: sources
                .number("API_RATE_LIMIT_PER_MINUTE", 1, 100_000)?
                .map_or(d.api_rate_limit_per_minute, |n| {
                    u32::try_from(n).unwrap_or(u32::MAX)
                }),
            control_require_key: sources
                .parse("CONTROL_REQUIRE_KEY", parse_bool)?
                .unwrap_or(d.control_require_key),
            thermostat_api_port: sources
                .number("THERMOSTAT_API_PORT", 1, 65535)?
                .map_or(d.thermostat_api_port, to_u16),
            availability_timeout: sources
                .number("AVAILABILITY_TIMEOUT_SECONDS", 1, 86_400)?
                .map_or(d.availability_timeout, Duration::from_secs),
            history_interval: sources
                .number("HISTORY_INTERVAL_SECONDS", 1, 3600)?
                .map_or(d.history_interval, Duration::from_secs),
            mqtt: mqtt(sources)?,
            clock: d.clock,
            data_dir,
        })
    }
}

/// The MQTT settings, if `MQTT_HOST` is set. The other `MQTT_*` settings are still checked
/// when it is not, so a typo is reported rather than ignored.
fn mqtt(sources: &Sources<'_>) -> Result<Option<MqttConfig>, ConfigError> {
    let port = sources.number("MQTT_PORT", 1, 65535)?.map_or(1883, to_u16);
    let topic_prefix = sources.parse("MQTT_TOPIC_PREFIX", parse_topic_prefix)?;
    let discovery_prefix = sources.parse("MQTT_DISCOVERY_PREFIX", parse_topic_prefix)?;
    let client_id = sources.parse("MQTT_CLIENT_ID", parse_client_id)?;
    let Some(host) = sources.parse("MQTT_HOST", parse_host)? else {
        return Ok(None);
    };
    let (user, password) = (sources.get("MQTT_USER"), sources.get("MQTT_PASSWORD"));
    if password.is_some() && user.is_none() {
        // MQTT 3.1.1 sends a password only with a user name; the broker would never accept us.
        return Err(ConfigError::new(
            "MQTT_PASSWORD",
            "needs MQTT_USER as well (MQTT 3.1.1 has no password without a user name)",
        ));
    }
    let d = MqttConfig::new(host, port);
    Ok(Some(MqttConfig {
        user,
        password,
        topic_prefix: topic_prefix.unwrap_or(d.topic_prefix),
        discovery_prefix: discovery_prefix.unwrap_or(d.discovery_prefix),
        client_id: client_id.unwrap_or(d.client_id),
        ..d
    }))
}

fn parse_host(raw: &str) -> Result<String, String> {
    if raw.contains("://") || raw.contains('/') || raw.chars().any(char::is_whitespace) {
        return Err("must be a host name or IP address, without a scheme or port".into());
    }
    Ok(raw.to_string())
}

/// One or more topic levels with no wildcards and no empty level.
fn parse_topic_prefix(raw: &str) -> Result<String, String> {
    if raw.contains(['+', '#', '\0']) || raw.split('/').any(str::is_empty) {
        return Err(
            "must be topic levels such as nolongerevil or home/nest: no +, # or empty levels"
                .into(),
        );
    }
    Ok(raw.to_string())
}

fn parse_client_id(raw: &str) -> Result<String, String> {
    if raw.len() > 64
        || !raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err("must be up to 64 letters, digits, '-', '_' or '.'".into());
    }
    Ok(raw.to_string())
}

fn to_u16(n: u64) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

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

    fn number(
        &self,
        variable: &'static str,
        min: u64,
        max: u64,
    ) -> Result<Option<u64>, ConfigError> {
        self.parse(variable, |raw| match raw.parse::<u64>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(format!("must be a whole number from {min} to {max}")),
        })
    }
}

/// A setting that failed validation; the message names the variable, its flag and the range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub variable: &'static str,
    pub message: String,
}

impl ConfigError {
    fn new(variable: &'static str, message: &str) -> ConfigError {
        ConfigError {
            variable,
            message: message.to_string(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match flag_for(self.variable) {
            Some(flag) => write!(f, "invalid {} ({}): {}", self.variable, flag, self.message),
            None => write!(f, "invalid {}: {}", self.variable, self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

/// The command-line flag that overrides each variable (the `serve` subcommand's options).
pub const FLAGS: &[(&str, &str)] = &[
    ("DATA_DIR", "--data-dir"),
    ("SERVER_HOST", "--bind"),
    ("CONTROL_HOST", "--control-bind"),
    ("SERVER_PORT", "--device-port"),
    ("CONTROL_PORT", "--control-port"),
    ("API_ORIGIN", "--api-origin"),
    ("CERT_DIR", "--cert-dir"),
    ("REQUIRE_DEVICE_PAIRING", "--require-device-pairing"),
    ("ENTRY_KEY_TTL_SECONDS", "--entry-key-ttl-seconds"),
    ("SUSPEND_TIME_MAX", "--suspend-time-max"),
    ("DEFER_DEVICE_WINDOW", "--defer-device-window"),
    ("DISABLE_DEFER_WINDOW", "--disable-defer-window"),
    (
        "MAX_SUBSCRIPTIONS_PER_DEVICE",
        "--max-subscriptions-per-device",
    ),
    ("DEBUG_LOGGING", "--debug-logging"),
    ("STORE_DEVICE_LOGS", "--store-device-logs"),
    ("DEVICE_LOGS_DIR", "--device-logs-dir"),
    ("WEATHER_URL", "--weather-url"),
    ("WEATHER_CACHE_TTL_MS", "--weather-cache-ttl-ms"),
    ("HTTP_WORKERS", "--http-workers"),
    ("IDLE_TIMEOUT_SECONDS", "--idle-timeout-seconds"),
    ("WATCHDOG_INTERVAL_SECONDS", "--watchdog-interval-seconds"),
    ("API_RATE_LIMIT_PER_MINUTE", "--api-rate-limit-per-minute"),
    ("CONTROL_REQUIRE_KEY", "--control-require-key"),
    ("THERMOSTAT_API_PORT", "--thermostat-api-port"),
    (
        "AVAILABILITY_TIMEOUT_SECONDS",
        "--availability-timeout-seconds",
    ),
    ("HISTORY_INTERVAL_SECONDS", "--history-interval-seconds"),
    ("MQTT_HOST", "--mqtt-host"),
    ("MQTT_PORT", "--mqtt-port"),
    ("MQTT_USER", "--mqtt-user"),
    ("MQTT_PASSWORD", "--mqtt-password"),
    ("MQTT_TOPIC_PREFIX", "--mqtt-topic-prefix"),
    ("MQTT_DISCOVERY_PREFIX", "--mqtt-discovery-prefix"),
    ("MQTT_CLIENT_ID", "--mqtt-client-id"),
];

fn flag_for(variable: &str) -> Option<&'static str> {
    FLAGS.iter().find(|(v, _)| *v == variable).map(|(_, f)| *f)
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

fn parse_http_url(raw: &str) -> Result<String, String> {
    if raw.starts_with("http://") || raw.starts_with("https://") {
        Ok(raw.to_string())
    } else {
        Err("must be an http:// or https:// URL".to_string())
    }
}

/// The public origin thermostats use: `scheme://host[:port]`, no path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiOrigin {
    pub scheme: String,
    /// As written; an IPv6 literal keeps its brackets.
    pub host: String,
    pub port: Option<u16>,
}

impl ApiOrigin {
    pub fn parse(raw: &str) -> Result<ApiOrigin, String> {
        const SHAPE: &str =
            "must look like http://192.168.1.10:8000 (scheme, host, optional port, no path)";
        let (scheme, rest) = raw.split_once("://").ok_or(SHAPE)?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(SHAPE.to_string());
        }
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.is_empty() || rest.contains(['/', '?', '#', '@', ' ']) {
            return Err(SHAPE.to_string());
        }
        let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
            let (inside, after) = v6.split_once(']').ok_or(SHAPE)?;
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or(SHAPE)?),
            };
            (format!("[{inside}]"), port)
        } else {
            match rest.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (rest.to_string(), None),
            }
        };
        let port = match port {
            None => None,
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or("port must be a number from 1 to 65535")?,
            ),
        };
        if host.is_empty() {
            return Err(SHAPE.to_string());
        }
        Ok(ApiOrigin { scheme, host, port })
    }

    /// The origin as configured (no port added).
    pub fn raw(&self) -> String {
        match self.port {
            Some(p) => format!("{}://{}:{}", self.scheme, self.host, p),
            None => format!("{}://{}", self.scheme, self.host),
        }
    }

    /// The origin with an explicit port: the firmware finds the port by scanning for `:digits`
    /// and, without one, cannot be woken by pushes. A missing port becomes `fallback_port`
    /// (the device port), even for https, as the Python server does.
    pub fn with_port(&self, fallback_port: u16) -> String {
        format!(
            "{}://{}:{}",
            self.scheme,
            self.host,
            self.port.unwrap_or(fallback_port)
        )
    }

    pub fn is_https(&self) -> bool {
        self.scheme == "https"
    }

    /// The host without IPv6 brackets.
    pub fn bare_host(&self) -> &str {
        self.host.trim_start_matches('[').trim_end_matches(']')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn defaults_without_settings() {
        let env = env_of(&[]);
        let c = Config::resolve(&Sources::new(&env)).unwrap();
        assert_eq!(c.device_port, 8000);
        assert_eq!(c.control_port, 8082);
        assert_eq!(c.suspend_time_max_secs, 300);
        assert_eq!(c.hold(), Duration::from_secs(290));
        assert!(c.api_origin.is_none());
        assert_eq!(c.device_logs_dir(), PathBuf::from("./data/device-logs"));
    }

    #[test]
    fn flags_win_over_environment() {
        let env = env_of(&[("SERVER_PORT", "9000"), ("DEBUG_LOGGING", "yes")]);
        let mut s = Sources::new(&env);
        s.flag("SERVER_PORT", Some("9100".into()));
        let c = Config::resolve(&s).unwrap();
        assert_eq!(c.device_port, 9100);
        assert!(c.debug_logging);
    }

    #[test]
    fn out_of_range_names_variable_flag_and_range() {
        let env = env_of(&[("SUSPEND_TIME_MAX", "600")]);
        let err = Config::resolve(&Sources::new(&env)).unwrap_err();
        assert_eq!(err.variable, "SUSPEND_TIME_MAX");
        let text = err.to_string();
        assert!(text.contains("SUSPEND_TIME_MAX"), "{text}");
        assert!(text.contains("--suspend-time-max"), "{text}");
        assert!(text.contains("11 to 350"), "{text}");
    }

    #[test]
    fn bad_booleans_and_addresses_are_refused() {
        let env = env_of(&[("REQUIRE_DEVICE_PAIRING", "maybe")]);
        assert_eq!(
            Config::resolve(&Sources::new(&env)).unwrap_err().variable,
            "REQUIRE_DEVICE_PAIRING"
        );
        let env = env_of(&[("SERVER_HOST", "my-box")]);
        assert_eq!(
            Config::resolve(&Sources::new(&env)).unwrap_err().variable,
            "SERVER_HOST"
        );
    }

    #[test]
    fn empty_values_count_as_unset() {
        let env = env_of(&[("SERVER_PORT", " ")]);
        assert_eq!(
            Config::resolve(&Sources::new(&env)).unwrap().device_port,
            8000
        );
    }

    #[test]
    fn mqtt_settings() {
        let env = env_of(&[]);
        assert_eq!(Config::resolve(&Sources::new(&env)).unwrap().mqtt, None);
        let env = env_of(&[
            ("MQTT_HOST", "broker.lan"),
            ("MQTT_USER", "hearth"),
            ("MQTT_PASSWORD", "pw"),
            ("MQTT_TOPIC_PREFIX", "home/nest"),
        ]);
        let m = Config::resolve(&Sources::new(&env)).unwrap().mqtt.unwrap();
        assert_eq!((m.host.as_str(), m.port), ("broker.lan", 1883));
        assert_eq!(
            (m.user.as_deref(), m.password.as_deref()),
            (Some("hearth"), Some("pw"))
        );
        assert_eq!(m.topic_prefix, "home/nest");
        assert_eq!(m.discovery_prefix, "homeassistant");
        assert!(m.client_id.starts_with("hearth-") && m.client_id.len() == 15);
        for (bad, variable) in [
            (&[("MQTT_HOST", "mqtt://broker")][..], "MQTT_HOST"),
            (&[("MQTT_HOST", "b"), ("MQTT_PORT", "0")][..], "MQTT_PORT"),
            (
                &[("MQTT_HOST", "b"), ("MQTT_TOPIC_PREFIX", "a/#")][..],
                "MQTT_TOPIC_PREFIX",
            ),
            (
                &[("MQTT_HOST", "b"), ("MQTT_DISCOVERY_PREFIX", "a//b")][..],
                "MQTT_DISCOVERY_PREFIX",
            ),
            (
                &[("MQTT_HOST", "b"), ("MQTT_CLIENT_ID", "a b")][..],
                "MQTT_CLIENT_ID",
            ),
            (
                &[("MQTT_HOST", "b"), ("MQTT_PASSWORD", "pw")][..],
                "MQTT_PASSWORD",
            ),
            // Checked even with MQTT off, so a typo is not silently ignored.
            (&[("MQTT_PORT", "x")][..], "MQTT_PORT"),
        ] {
            let env = move |k: &str| {
                bad.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            };
            let err = Config::resolve(&Sources::new(&env)).unwrap_err();
            assert_eq!(err.variable, variable, "{bad:?}");
        }
    }

    #[test]
    fn origin_parsing() {
        let o = ApiOrigin::parse("https://nest.example.com").unwrap();
        assert_eq!(o.with_port(8000), "https://nest.example.com:8000");
        assert_eq!(o.raw(), "https://nest.example.com");
        let o = ApiOrigin::parse("http://192.168.1.10:9543/").unwrap();
        assert_eq!(o.with_port(8000), "http://192.168.1.10:9543");
        let o = ApiOrigin::parse("http://[fd00::1]:8000").unwrap();
        assert_eq!(o.bare_host(), "fd00::1");
        for bad in [
            "192.168.1.10",
            "ftp://x",
            "http://x:0",
            "http://x:70000",
            "http://x/nest",
            "http://",
        ] {
            assert!(ApiOrigin::parse(bad).is_err(), "{bad}");
        }
    }
}
