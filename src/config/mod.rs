//! Server configuration: defaults, environment variables (the Python server's names, so a user can
//! migrate by copying their settings), command-line flags (which win), and validation. Every
//! invalid value stops startup with a message naming the setting and its allowed range.
//!
//! Each setting is declared once, in [`settings::SETTINGS`]; [`docs`] turns the declarations
//! into the `--help` lines and the table in docs/configuration.md. This module depends on
//! nothing else in the crate but [`crate::util`], so every other module can read its settings
//! from here.

#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod addon;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod alerts;
mod box_names;
pub(crate) mod docs;
mod homekit;
mod options_file;
mod origin;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod settings;
mod sources;

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::time::Duration;

pub use crate::weather::Provider as WeatherProvider;
pub use alerts::{AlertConfig, AlertSources};
pub use box_names::BoxNames;
pub(crate) use box_names::is_dns_name;
pub use homekit::HomekitConfig;
/// What HOMEKIT_NAME accepts: HomeKit's mDNS responder renames within it after a conflict.
#[cfg(feature = "homekit")]
pub(crate) use homekit::parse_name as parse_homekit_name;
pub use origin::ApiOrigin;
use settings::{boolean, ip, number, text};
pub use sources::{ConfigError, Given, Sources};

/// Where the Supervisor's ingress proxy connects from (its address on Home Assistant's add-on
/// network): the default `INGRESS_PROXY` in the add-on, and nowhere else.
pub const SUPERVISOR_INGRESS_PROXY: IpAddr = IpAddr::V4(Ipv4Addr::new(172, 30, 32, 2));

/// The data directory's folder for HomeKit ([`Config::homekit_dir`]).
pub const HOMEKIT_DIR: &str = "homekit";

/// The window [`Config::max_new_thermostats_per_client`] counts new thermostats in.
pub const NEW_THERMOSTATS_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

/// A live event stream with nothing to send gets a comment line this often, so proxies keep it.
pub const EVENT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Where the tz database lives on most systems ([`Config::zoneinfo`]'s default).
pub const ZONEINFO: &str = "/usr/share/zoneinfo";

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
    /// Thermostats new to hearth one client address may add per
    /// [`NEW_THERMOSTATS_WINDOW`] in open mode (an IPv6 client counts by its /64); 0: no
    /// limit. Counted in memory: a restart starts the count afresh.
    pub max_new_thermostats_per_client: usize,
    pub entry_key_ttl_secs: u64,
    /// Unclaimed entry keys kept at most (expired ones are pruned to make room; beyond, a new
    /// one is refused). Not a setting: far above any home.
    pub max_pending_entry_keys: usize,
    /// Unclaimed, unexpired entry keys one client address may have been handed (an IPv6
    /// client counts by its /64). Counted in memory: a restart starts the count afresh.
    pub max_entry_keys_per_address: usize,
    /// Distinct passwords one serial may have unclaimed, unexpired entry keys waiting for.
    pub max_entry_keys_per_serial: usize,
    /// `X-nl-suspend-time-max`; a subscribe is held for this minus 10 seconds.
    pub suspend_time_max_secs: u64,
    pub defer_device_window_secs: u64,
    pub disable_defer_window_secs: u64,
    pub max_subscriptions_per_device: usize,
    /// Live event streams one client address may hold (64 in all).
    pub max_event_streams_per_client: usize,
    pub debug_logging: bool,
    pub store_device_logs: bool,
    /// `None`: `<data_dir>/device-logs`.
    pub device_logs_dir: Option<PathBuf>,
    /// MiB the kept log uploads may take together (`DEVICE_LOGS_MAX_MB`).
    pub device_logs_max_mb: u64,
    /// `None`: [`WeatherProvider::Upstream`] when `weather_url` is set, else Open-Meteo (see
    /// [`Config::weather_provider`]).
    pub weather_provider: Option<WeatherProvider>,
    pub weather_url: Option<String>,
    /// Open-Meteo's geocoding and forecast services (no trailing `/`).
    pub open_meteo_geocoding_url: String,
    pub open_meteo_url: String,
    pub weather_cache_ttl_ms: u64,
    pub weather_timeout: Duration,
    /// How long a thermostat's weather request with nothing cached waits for upstream (at most
    /// `weather_timeout`). Not a setting.
    pub weather_wait: Duration,
    /// Worker threads per listener.
    pub http_workers: usize,
    /// A request body still arriving after this long is abandoned (its connection closed).
    pub body_read_timeout: Duration,
    /// A connection with no data either way for this long is closed (held subscribes and
    /// event streams excepted).
    pub idle_timeout: Duration,
    /// A request head still arriving this long after its connection opened (or its first byte
    /// on a kept-alive connection) is abandoned and its connection closed.
    pub head_timeout: Duration,
    /// Open connections per client address on each port.
    pub max_connections_per_client: usize,
    /// Open connections per port, all clients (`MAX_CONNECTIONS`); `None`: sized from the
    /// process's limits (`http::admission::Budget`).
    pub max_connections: Option<usize>,
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
    /// `AWAY_AFTER_MINUTES`: how long everyone must have been away before the presence rule
    /// makes the home away (`crate::people`).
    pub away_after: Duration,
    /// Seconds between history samples of each thermostat (see [`crate::history`]).
    pub history_interval: Duration,
    /// Days of energy history kept per thermostat; 0 keeps all (see [`crate::energy`]).
    pub energy_keep_days: u32,
    /// The alert rules' limits and receivers (see [`crate::alerts`]).
    pub alerts: AlertConfig,
    /// Where each alert setting was given (the page's settings show it, and a flag wins over
    /// the page: [`alerts::effective`]).
    pub alert_sources: AlertSources,
    /// MQTT publishing and Home Assistant discovery; `None` (no `MQTT_HOST`) turns it off.
    pub mqtt: Option<MqttConfig>,
    /// The topic prefixes and client id given, also without `MQTT_HOST`: a broker found
    /// later (the one Home Assistant's Supervisor offers) is used with them.
    pub mqtt_names: MqttNames,
    /// HomeKit: on or off, its port and the bridge's name (see [`crate::homekit`]).
    pub homekit: HomekitConfig,
    /// The options file the settings were read from, if there was one.
    pub options_file: Option<PathBuf>,
    /// Home Assistant's Supervisor, when hearth runs as its add-on (`SUPERVISOR_TOKEN`).
    pub supervisor: Option<SupervisorConfig>,
    /// Requests from this address (Home Assistant's ingress proxy) need no API key.
    pub ingress_proxy: Option<IpAddr>,
    /// `ALLOWED_HOSTS`: more names both ports answer to (see [`crate::browser`]), lower case,
    /// without a trailing dot.
    pub allowed_hosts: Vec<String>,
    /// `ALLOWED_ORIGINS`: web origins that may use the control API from a browser, as browsers
    /// write them ([`ApiOrigin::web_origin`]).
    pub allowed_origins: Vec<String>,
    /// Not a setting: this box's own names, which the `Host` check admits like `ALLOWED_HOSTS`
    /// (its host name, and that name under resolv.conf's search domains: [`BoxNames`]).
    /// `None`: this machine's, read when the server starts ([`BoxNames::of_this_box`]);
    /// [`Config::local`] has none, so no test depends on the machine it runs on.
    pub box_names: Option<BoxNames>,
    /// Not a setting: where the server reads the time (tests drive a manual clock).
    pub clock: crate::util::clock::Clock,
    /// Not a setting: the system's tz database, read for the energy history's local days
    /// before hearth's own table of zones (tests point it at a directory of their own).
    pub zoneinfo: PathBuf,
}

/// How to reach Home Assistant's Supervisor (see [`crate::supervisor`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SupervisorConfig {
    /// `http://supervisor`, without a trailing slash.
    pub url: String,
    pub token: String,
}

/// What hearth calls itself and its topics on a broker (see [`Config::mqtt_names`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MqttNames {
    pub topic_prefix: String,
    pub discovery_prefix: String,
    /// `None`: `hearth-` and 8 random hex digits, chosen when a broker is.
    pub client_id: Option<String>,
}

impl Default for MqttNames {
    fn default() -> MqttNames {
        MqttNames {
            topic_prefix: const { text("MQTT_TOPIC_PREFIX").unset.value() }.into(),
            discovery_prefix: const { text("MQTT_DISCOVERY_PREFIX").unset.value() }.into(),
            client_id: None,
        }
    }
}

impl MqttNames {
    /// A broker on `host:port`, without credentials, used with these names.
    pub fn broker(&self, host: impl Into<String>, port: u16) -> MqttConfig {
        MqttConfig {
            host: host.into(),
            port,
            user: None,
            password: None,
            topic_prefix: self.topic_prefix.clone(),
            discovery_prefix: self.discovery_prefix.clone(),
            client_id: self.client_id.clone().unwrap_or_else(default_client_id),
        }
    }
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
        MqttNames::default().broker(host, port)
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
    /// The declared defaults ([`settings::SETTINGS`]), and those of the fields no setting changes.
    fn default() -> Self {
        Config {
            data_dir: PathBuf::from(const { text("DATA_DIR").unset.value() }),
            device_bind: const { ip("SERVER_HOST").unset.value() },
            // CONTROL_HOST's default: SERVER_HOST's value.
            control_bind: const { ip("SERVER_HOST").unset.value() },
            device_port: to_u16(const { number("SERVER_PORT").default }),
            control_port: to_u16(const { number("CONTROL_PORT").default }),
            api_origin: None,
            require_device_pairing: const { boolean("REQUIRE_DEVICE_PAIRING").default },
            max_new_thermostats_per_client: to_usize(
                const { number("MAX_NEW_THERMOSTATS_PER_CLIENT").default },
            ),
            entry_key_ttl_secs: const { number("ENTRY_KEY_TTL_SECONDS").default },
            max_pending_entry_keys: 256,
            max_entry_keys_per_address: 8,
            max_entry_keys_per_serial: 4,
            suspend_time_max_secs: const { number("SUSPEND_TIME_MAX").default },
            defer_device_window_secs: const { number("DEFER_DEVICE_WINDOW").default },
            disable_defer_window_secs: const { number("DISABLE_DEFER_WINDOW").default },
            max_subscriptions_per_device: to_usize(
                const { number("MAX_SUBSCRIPTIONS_PER_DEVICE").default },
            ),
            max_event_streams_per_client: to_usize(
                const { number("MAX_EVENT_STREAMS_PER_CLIENT").default },
            ),
            debug_logging: const { boolean("DEBUG_LOGGING").default },
            store_device_logs: const { boolean("STORE_DEVICE_LOGS").default },
            device_logs_dir: None,
            device_logs_max_mb: const { number("DEVICE_LOGS_MAX_MB").default },
            weather_provider: None,
            weather_url: None,
            open_meteo_geocoding_url: const { text("OPEN_METEO_GEOCODING_URL").unset.value() }
                .to_string(),
            open_meteo_url: const { text("OPEN_METEO_URL").unset.value() }.to_string(),
            weather_cache_ttl_ms: const { number("WEATHER_CACHE_TTL_MS").default },
            weather_timeout: Duration::from_secs(5),
            weather_wait: Duration::from_secs(2),
            http_workers: to_usize(const { number("HTTP_WORKERS").default }),
            body_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(const { number("IDLE_TIMEOUT_SECONDS").default }),
            head_timeout: Duration::from_secs(const { number("HEAD_TIMEOUT_SECONDS").default }),
            max_connections_per_client: to_usize(
                const { number("MAX_CONNECTIONS_PER_CLIENT").default },
            ),
            max_connections: None,
            thermostat_api_port: to_u16(const { number("THERMOSTAT_API_PORT").default }),
            cert_dir: None,
            watchdog_interval_secs: const { number("WATCHDOG_INTERVAL_SECONDS").default },
            event_keep_alive: EVENT_KEEP_ALIVE,
            api_rate_limit_per_minute: to_u32(
                const { number("API_RATE_LIMIT_PER_MINUTE").default },
            ),
            control_require_key: const { boolean("CONTROL_REQUIRE_KEY").default },
            availability_timeout: Duration::from_secs(
                const { number("AVAILABILITY_TIMEOUT_SECONDS").default },
            ),
            away_after: Duration::from_secs(60 * const { number("AWAY_AFTER_MINUTES").default }),
            history_interval: Duration::from_secs(
                const { number("HISTORY_INTERVAL_SECONDS").default },
            ),
            energy_keep_days: const { number("ENERGY_KEEP_DAYS").default } as u32,
            alerts: AlertConfig::default(),
            alert_sources: AlertSources::default(),
            mqtt: None,
            mqtt_names: MqttNames::default(),
            homekit: HomekitConfig::default(),
            options_file: None,
            supervisor: None,
            ingress_proxy: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            box_names: None,
            clock: crate::util::clock::Clock::system(),
            zoneinfo: PathBuf::from(ZONEINFO),
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
            // Tests never reach the internet: nothing listens on port 1, so a test that wants
            // Open-Meteo points these at a fake.
            open_meteo_geocoding_url: "http://127.0.0.1:1".into(),
            open_meteo_url: "http://127.0.0.1:1".into(),
            homekit: HomekitConfig {
                port: 0,
                ..HomekitConfig::default()
            },
            box_names: Some(BoxNames::default()),
            ..Config::default()
        }
    }

    /// Where the thermostats' weather comes from: the setting, else upstream when `WEATHER_URL`
    /// is set (as before the setting existed), else Open-Meteo.
    pub fn weather_provider(&self) -> WeatherProvider {
        match (self.weather_provider, &self.weather_url) {
            (Some(p), _) => p,
            (None, Some(_)) => WeatherProvider::Upstream,
            (None, None) => WeatherProvider::OpenMeteo,
        }
    }

    /// Where the HomeKit accessory's identity and pairings are kept (see [`crate::hap::identity`]).
    pub fn homekit_dir(&self) -> PathBuf {
        self.data_dir.join(HOMEKIT_DIR)
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

    /// Builds a configuration from flags (which win), the options file (`OPTIONS_FILE`),
    /// environment variables and the declared defaults. Fields no setting changes keep
    /// [`Config::default`]'s values.
    pub fn resolve(sources: &Sources<'_>) -> Result<Config, ConfigError> {
        let options_path = sources
            .text(const { text("OPTIONS_FILE") }, any_text)?
            .map(PathBuf::from);
        let options = match &options_path {
            Some(path) => options_file::read(path)?,
            None => None,
        };
        let options_file = options.is_some().then_some(options_path).flatten();
        let layered;
        let sources = match options {
            Some(options) => {
                layered = sources.with_options(options);
                &layered
            }
            None => sources,
        };
        let d = Config::default();
        let supervisor = supervisor(sources)?;
        let mqtt_names = mqtt_names(sources)?;
        weather_needs_url(sources)?;
        let device_bind = sources
            .ip(const { ip("SERVER_HOST") })?
            .unwrap_or(d.device_bind);
        let (alerts, alert_sources) = alerts::alerts(sources)?;
        Ok(Config {
            data_dir: sources
                .text(const { text("DATA_DIR") }, any_text)?
                .map_or(d.data_dir, PathBuf::from),
            device_bind,
            control_bind: sources
                .ip(const { ip("CONTROL_HOST") })?
                .unwrap_or(device_bind),
            device_port: to_u16(sources.number(const { number("SERVER_PORT") })?),
            control_port: to_u16(sources.number(const { number("CONTROL_PORT") })?),
            api_origin: sources.text(const { text("API_ORIGIN") }, ApiOrigin::parse)?,
            require_device_pairing: sources.boolean(const { boolean("REQUIRE_DEVICE_PAIRING") })?,
            max_new_thermostats_per_client: to_usize(
                sources.number(const { number("MAX_NEW_THERMOSTATS_PER_CLIENT") })?,
            ),
            entry_key_ttl_secs: sources.number(const { number("ENTRY_KEY_TTL_SECONDS") })?,
            suspend_time_max_secs: sources.number(const { number("SUSPEND_TIME_MAX") })?,
            defer_device_window_secs: sources.number(const { number("DEFER_DEVICE_WINDOW") })?,
            disable_defer_window_secs: sources.number(const { number("DISABLE_DEFER_WINDOW") })?,
            max_subscriptions_per_device: to_usize(
                sources.number(const { number("MAX_SUBSCRIPTIONS_PER_DEVICE") })?,
            ),
            max_event_streams_per_client: to_usize(
                sources.number(const { number("MAX_EVENT_STREAMS_PER_CLIENT") })?,
            ),
            debug_logging: sources.boolean(const { boolean("DEBUG_LOGGING") })?,
            store_device_logs: sources.boolean(const { boolean("STORE_DEVICE_LOGS") })?,
            device_logs_dir: sources
                .text(const { text("DEVICE_LOGS_DIR") }, any_text)?
                .map(PathBuf::from),
            device_logs_max_mb: sources.number(const { number("DEVICE_LOGS_MAX_MB") })?,
            weather_provider: sources
                .text(const { text("WEATHER_PROVIDER") }, WeatherProvider::parse)?,
            weather_url: sources.text(const { text("WEATHER_URL") }, parse_http_url)?,
            open_meteo_geocoding_url: sources
                .text(const { text("OPEN_METEO_GEOCODING_URL") }, parse_base_url)?
                .unwrap_or(d.open_meteo_geocoding_url),
            open_meteo_url: sources
                .text(const { text("OPEN_METEO_URL") }, parse_base_url)?
                .unwrap_or(d.open_meteo_url),
            weather_cache_ttl_ms: sources.number(const { number("WEATHER_CACHE_TTL_MS") })?,
            http_workers: to_usize(sources.number(const { number("HTTP_WORKERS") })?),
            idle_timeout: Duration::from_secs(
                sources.number(const { number("IDLE_TIMEOUT_SECONDS") })?,
            ),
            head_timeout: Duration::from_secs(
                sources.number(const { number("HEAD_TIMEOUT_SECONDS") })?,
            ),
            max_connections_per_client: to_usize(
                sources.number(const { number("MAX_CONNECTIONS_PER_CLIENT") })?,
            ),
            max_connections: Some(to_usize(
                sources.number(const { number("MAX_CONNECTIONS") })?,
            ))
            .filter(|n| *n > 0),
            cert_dir: sources
                .text(const { text("CERT_DIR") }, any_text)?
                .map(PathBuf::from),
            watchdog_interval_secs: sources
                .number(const { number("WATCHDOG_INTERVAL_SECONDS") })?,
            api_rate_limit_per_minute: to_u32(
                sources.number(const { number("API_RATE_LIMIT_PER_MINUTE") })?,
            ),
            control_require_key: sources.boolean(const { boolean("CONTROL_REQUIRE_KEY") })?,
            thermostat_api_port: to_u16(sources.number(const { number("THERMOSTAT_API_PORT") })?),
            availability_timeout: Duration::from_secs(
                sources.number(const { number("AVAILABILITY_TIMEOUT_SECONDS") })?,
            ),
            away_after: Duration::from_secs(
                60 * sources.number(const { number("AWAY_AFTER_MINUTES") })?,
            ),
            history_interval: Duration::from_secs(
                sources.number(const { number("HISTORY_INTERVAL_SECONDS") })?,
            ),
            // At most 36,500 (the setting's bound): fits.
            energy_keep_days: sources.number(const { number("ENERGY_KEEP_DAYS") })? as u32,
            alerts,
            alert_sources,
            mqtt: mqtt(sources, &mqtt_names)?,
            mqtt_names,
            homekit: homekit::homekit(sources)?,
            options_file,
            ingress_proxy: sources
                .ip(const { ip("INGRESS_PROXY") })?
                .or_else(|| supervisor.is_some().then_some(SUPERVISOR_INGRESS_PROXY)),
            supervisor,
            allowed_hosts: sources
                .text(const { text("ALLOWED_HOSTS") }, parse_allowed_hosts)?
                .unwrap_or_default(),
            allowed_origins: sources
                .text(const { text("ALLOWED_ORIGINS") }, parse_allowed_origins)?
                .unwrap_or_default(),
            ..d
        })
    }
}

/// The Supervisor, if `SUPERVISOR_TOKEN` is set (the Supervisor sets it in every add-on).
fn supervisor(sources: &Sources<'_>) -> Result<Option<SupervisorConfig>, ConfigError> {
    let url = sources.text(const { text("SUPERVISOR_API") }, parse_http_url)?;
    let token = sources.text(const { text("SUPERVISOR_TOKEN") }, any_text)?;
    match (token, url) {
        (Some(token), url) => Ok(Some(SupervisorConfig {
            url: url
                .as_deref()
                .unwrap_or("http://supervisor")
                .trim_end_matches('/')
                .to_string(),
            token,
        })),
        (None, Some(_)) => Err(sources.error(
            "SUPERVISOR_API",
            "needs SUPERVISOR_TOKEN as well (the Supervisor answers no one without it)",
        )),
        (None, None) => Ok(None),
    }
}

/// The topic prefixes and client id given (else their defaults).
fn mqtt_names(sources: &Sources<'_>) -> Result<MqttNames, ConfigError> {
    let d = MqttNames::default();
    Ok(MqttNames {
        topic_prefix: sources
            .text(const { text("MQTT_TOPIC_PREFIX") }, parse_topic_prefix)?
            .unwrap_or(d.topic_prefix),
        discovery_prefix: sources
            .text(const { text("MQTT_DISCOVERY_PREFIX") }, parse_topic_prefix)?
            .unwrap_or(d.discovery_prefix),
        client_id: sources.text(const { text("MQTT_CLIENT_ID") }, parse_client_id)?,
    })
}

/// The MQTT settings, if `MQTT_HOST` is set, with `names`. The port is still checked when it
/// is not (as `names` were), so a typo is reported rather than ignored.
fn mqtt(sources: &Sources<'_>, names: &MqttNames) -> Result<Option<MqttConfig>, ConfigError> {
    let port = to_u16(sources.number(const { number("MQTT_PORT") })?);
    let Some(host) = sources.text(const { text("MQTT_HOST") }, parse_host)? else {
        return Ok(None);
    };
    let user = sources.text(const { text("MQTT_USER") }, any_text)?;
    let password = sources.text(const { text("MQTT_PASSWORD") }, any_text)?;
    if password.is_some() && user.is_none() {
        // MQTT 3.1.1 sends a password only with a user name; the broker would never accept us.
        return Err(sources.error(
            "MQTT_PASSWORD",
            "needs MQTT_USER as well (MQTT 3.1.1 has no password without a user name)",
        ));
    }
    Ok(Some(MqttConfig {
        user,
        password,
        ..names.broker(host, port)
    }))
}

/// `WEATHER_PROVIDER=upstream` asks `WEATHER_URL`, so it needs one.
fn weather_needs_url(sources: &Sources<'_>) -> Result<(), ConfigError> {
    let provider = sources.text(const { text("WEATHER_PROVIDER") }, WeatherProvider::parse)?;
    let url = sources.text(const { text("WEATHER_URL") }, parse_http_url)?;
    match (provider, url) {
        (Some(WeatherProvider::Upstream), None) => Err(sources.error(
            "WEATHER_PROVIDER",
            "is upstream, which needs WEATHER_URL as well",
        )),
        _ => Ok(()),
    }
}

/// Directories, user names and passwords: any text.
fn any_text(raw: &str) -> Result<String, String> {
    Ok(raw.to_string())
}

/// An http(s) URL with a host, as the HTTP client (ureq, which parses with `url` too) will read
/// it: a prefix alone (`http://`) or a host that does not parse is refused at start, not at the
/// first call.
fn parse_http_url(raw: &str) -> Result<String, String> {
    let refused = || "must be an http:// or https:// URL with a host".to_string();
    if !(raw.starts_with("http://") || raw.starts_with("https://")) {
        return Err(refused());
    }
    match url::Url::parse(raw) {
        Ok(u) if u.host_str().is_some_and(|h| !h.is_empty()) => Ok(raw.to_string()),
        _ => Err(refused()),
    }
}

/// A service's base URL, without the trailing `/` the paths are appended after.
fn parse_base_url(raw: &str) -> Result<String, String> {
    parse_http_url(raw).map(|u| u.trim_end_matches('/').to_string())
}

fn parse_host(raw: &str) -> Result<String, String> {
    if raw.contains("://") || raw.contains('/') || raw.chars().any(char::is_whitespace) {
        return Err("must be a host name or IP address, without a scheme or port".into());
    }
    Ok(raw.to_string())
}

/// `ALLOWED_HOSTS`: names separated by commas, each lower-cased and without a trailing dot.
fn parse_allowed_hosts(raw: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let name = entry.strip_suffix('.').unwrap_or(entry);
        let shape_ok = !name.is_empty()
            && !name.contains("://")
            && !name.contains(['/', '*', '@', '?', '#'])
            && !name.chars().any(char::is_whitespace)
            && (name.starts_with('[') || !name.contains(':'));
        if !shape_ok {
            return Err(format!(
                "{entry:?} is not a host name: list names such as hearth.example.com, \
                 separated by commas, without scheme, port or path"
            ));
        }
        names.push(name.to_ascii_lowercase());
    }
    Ok(names)
}

/// `ALLOWED_ORIGINS`: origins separated by commas, each as browsers write it.
fn parse_allowed_origins(raw: &str) -> Result<Vec<String>, String> {
    let mut origins = Vec::new();
    for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        if entry == "*" || entry.eq_ignore_ascii_case("null") {
            return Err(format!(
                "{entry:?} would let any web page use the API: list each page's origin, \
                 such as https://ha.example.com:8123"
            ));
        }
        let origin = ApiOrigin::parse(entry).map_err(|why| {
            format!("{entry:?} is not an origin: {why} (for example https://ha.example.com:8123)")
        })?;
        origins.push(origin.web_origin());
    }
    Ok(origins)
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

fn to_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
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
    fn the_weather_provider_and_its_urls() {
        let resolve = |pairs| Config::resolve(&Sources::new(&env_of(pairs)));
        let c = resolve(&[]).unwrap();
        assert_eq!(c.weather_provider(), WeatherProvider::OpenMeteo);
        assert_eq!(
            c.open_meteo_geocoding_url,
            "https://geocoding-api.open-meteo.com"
        );
        assert_eq!(c.open_meteo_url, "https://api.open-meteo.com");
        let c = resolve(&[("WEATHER_URL", "http://w.example/v1")]).unwrap();
        assert_eq!(c.weather_provider(), WeatherProvider::Upstream, "as before");
        let c = resolve(&[
            ("WEATHER_PROVIDER", "off"),
            ("WEATHER_URL", "http://w.example/v1"),
        ])
        .unwrap();
        assert_eq!(c.weather_provider(), WeatherProvider::Off);
        let c = resolve(&[("OPEN_METEO_URL", "http://10.0.0.2:8080/")]).unwrap();
        assert_eq!(c.open_meteo_url, "http://10.0.0.2:8080", "no trailing /");

        let err = resolve(&[("WEATHER_PROVIDER", "upstream")]).unwrap_err();
        assert_eq!(err.variable, "WEATHER_PROVIDER");
        assert!(err.to_string().contains("needs WEATHER_URL"), "{err}");
        let err = resolve(&[("WEATHER_PROVIDER", "openmeteo")]).unwrap_err();
        assert_eq!(err.variable, "WEATHER_PROVIDER");
        assert!(
            err.to_string().contains("open-meteo, upstream or off"),
            "{err}"
        );
        let err = resolve(&[("OPEN_METEO_GEOCODING_URL", "geocoding.example")]).unwrap_err();
        assert_eq!(err.variable, "OPEN_METEO_GEOCODING_URL");
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

    #[test]
    fn default_is_what_resolving_nothing_gives() {
        let env = env_of(&[]);
        let resolved = Config::resolve(&Sources::new(&env)).unwrap();
        assert_eq!(format!("{resolved:?}"), format!("{:?}", Config::default()));
    }

    /// Every declared setting reaches the configuration: a value other than its default
    /// changes what `resolve` gives.
    #[test]
    fn every_setting_is_read() {
        use settings::{Kind, SETTINGS};
        let base = [
            ("MQTT_HOST", "b"),
            ("MQTT_USER", "u"),
            ("MQTT_CLIENT_ID", "c"),
        ];
        let resolve = |pairs: &[(&str, String)]| {
            let env = |k: &str| {
                (pairs.iter().map(|(n, v)| (*n, v.clone())))
                    .chain(base.iter().map(|(n, v)| (*n, v.to_string())))
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v)
            };
            format!("{:?}", Config::resolve(&Sources::new(&env)).unwrap())
        };
        let unchanged = resolve(&[]);
        let options = std::env::temp_dir().join(format!("hearth-options-{}", std::process::id()));
        std::fs::write(&options, "{}").unwrap();
        for s in SETTINGS {
            let value = match (&s.kind, s.variable) {
                (Kind::Number { max, default, .. }, _) if default != max => max.to_string(),
                (Kind::Number { min, .. }, _) => min.to_string(),
                (Kind::Bool { default }, _) => (!default).to_string(),
                (Kind::Ip { .. }, _) => "10.9.8.7".into(),
                (_, "API_ORIGIN" | "ALLOWED_ORIGINS") => "http://10.9.8.7:1".into(),
                (_, "WEATHER_PROVIDER") => "off".into(),
                (_, "WEATHER_URL" | "OPEN_METEO_GEOCODING_URL" | "OPEN_METEO_URL") => {
                    "http://weather.example".into()
                }
                (_, "MQTT_TOPIC_PREFIX" | "MQTT_DISCOVERY_PREFIX") => "a/b".into(),
                (_, "ALERT_LOW_C") => "3".into(),
                (_, "ALERT_HIGH_C") => "30".into(),
                (
                    _,
                    "ALERT_OFFLINE_MINUTES"
                    | "ALERT_NOT_HEATING_MINUTES"
                    | "ALERT_NOT_APPLIED_MINUTES",
                ) => "1.5".into(),
                (_, "ALERT_RULES_OFF") => "offline".into(),
                (_, "FILTER_REMINDER_HOURS") => "1.5".into(),
                (_, "NTFY_URL" | "WEBHOOK_URL") => "http://hook.example".into(),
                (_, "OPTIONS_FILE") => options.display().to_string(),
                (_, "SUPERVISOR_API") => continue, // needs SUPERVISOR_TOKEN: see `supervisor`
                _ => "other".into(),
            };
            let changed = resolve(&[(s.variable, value.clone())]);
            assert_ne!(changed, unchanged, "{}={value} changed nothing", s.variable);
        }
        std::fs::remove_file(&options).unwrap();
    }

    /// A temporary options file holding `json`, removed when dropped.
    struct OptionsFile(PathBuf);

    impl OptionsFile {
        fn new(tag: &str, json: &str) -> OptionsFile {
            let path = std::env::temp_dir()
                .join(format!("hearth-options-{tag}-{}.json", std::process::id()));
            std::fs::write(&path, json).unwrap();
            OptionsFile(path)
        }

        fn path(&self) -> String {
            self.0.display().to_string()
        }
    }

    impl Drop for OptionsFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    #[test]
    fn options_file_sits_between_flags_and_environment() {
        let file = OptionsFile::new(
            "layers",
            r#"{"server_port": 9543, "debug_logging": true, "mqtt_host": "core-mosquitto",
                "mqtt_user": "", "mqtt_password": null, "entry_key_ttl_seconds": 1800,
                "require_device_pairing": false}"#,
        );
        let path = file.path();
        let env = |k: &str| match k {
            "OPTIONS_FILE" => Some(path.clone()),
            "SERVER_PORT" => Some("9000".into()),
            "ENTRY_KEY_TTL_SECONDS" => Some("60".into()),
            "MQTT_USER" => Some("from-env".into()),
            "MQTT_PASSWORD" => Some("from-env".into()),
            "CONTROL_PORT" => Some("9082".into()),
            _ => None,
        };
        let mut sources = Sources::new(&env);
        sources.flag("ENTRY_KEY_TTL_SECONDS", Some("7200".into()));
        let c = Config::resolve(&sources).unwrap();
        assert_eq!(c.options_file, Some(PathBuf::from(&path)));
        assert_eq!(c.device_port, 9543, "the option wins over the environment");
        assert_eq!(c.entry_key_ttl_secs, 7200, "the flag wins over the option");
        assert_eq!(
            c.control_port, 9082,
            "the environment fills what the file leaves out"
        );
        assert!(c.debug_logging);
        let mqtt = c.mqtt.unwrap();
        assert_eq!(mqtt.host, "core-mosquitto");
        // An option left empty (or null) is unset: the environment does not show through.
        assert_eq!(mqtt.user, None);
        assert_eq!(mqtt.password, None);
    }

    #[test]
    fn a_missing_options_file_counts_as_empty() {
        let env = |k: &str| (k == "OPTIONS_FILE").then(|| "/nonexistent/options.json".into());
        let c = Config::resolve(&Sources::new(&env)).unwrap();
        assert_eq!(c.options_file, None);
        assert_eq!(c.device_port, 8000);
    }

    /// Each bad option stops start-up with a message naming it as the add-on's page does.
    #[test]
    fn bad_options_are_named_as_the_add_on_page_shows_them() {
        let cases = [
            (
                r#"{"mqtt_port": 0}"#,
                r#"invalid option "MQTT port" (mqtt_port): must be a whole number from 1 to 65535 (got "0")"#,
            ),
            (
                r#"{"api_origin": "192.168.1.10:9543"}"#,
                r#"invalid option "Address thermostats use" (api_origin): must look like http://192.168.1.10:8000 (scheme, host, optional port, no path) (got "192.168.1.10:9543")"#,
            ),
            (
                r#"{"require_device_pairing": "maybe"}"#,
                r#"invalid option "Require pairing" (require_device_pairing): must be true or false (also 1/0, yes/no, on/off) (got "maybe")"#,
            ),
            (
                r#"{"entry_key_ttl_seconds": 1.5}"#,
                r#"invalid option "Entry key lifetime" (entry_key_ttl_seconds): must be a whole number from 1 to 604800 (got "1.5")"#,
            ),
            (
                r#"{"mqtt_host": "b", "mqtt_password": "pw"}"#,
                r#"invalid option "MQTT password" (mqtt_password): needs MQTT_USER as well (MQTT 3.1.1 has no password without a user name)"#,
            ),
            (
                r#"{"mqtt_topic_prefix": ["a"]}"#,
                r#"invalid option "MQTT topic prefix" (mqtt_topic_prefix): must be text, a number or true/false, not a list or an object"#,
            ),
            // A setting the add-on's page does not offer is named by its name alone.
            (
                r#"{"http_workers": 0}"#,
                r#"invalid option http_workers: must be a whole number from 1 to 64 (got "0")"#,
            ),
        ];
        for (i, (json, message)) in cases.into_iter().enumerate() {
            let file = OptionsFile::new(&format!("bad{i}"), json);
            let path = file.path();
            let env = |k: &str| (k == "OPTIONS_FILE").then(|| path.clone());
            let err = Config::resolve(&Sources::new(&env)).unwrap_err();
            assert_eq!(err.given, Given::OptionsFile, "{json}");
            assert_eq!(err.to_string(), message, "{json}");
        }
        // The same value from the environment is named by its variable and option.
        let env = |k: &str| (k == "MQTT_PORT").then(|| "0".into());
        let err = Config::resolve(&Sources::new(&env)).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid MQTT_PORT (--mqtt-port): must be a whole number from 1 to 65535 (got "0")"#
        );
    }

    #[test]
    fn a_broken_options_file_is_named() {
        for (i, (json, says)) in [
            ("not json", "is not a JSON object of settings"),
            ("[1]", "is not a JSON object of settings"),
            (
                r#"{"mqtt_hots": "b"}"#,
                r#"has an option hearth does not know: "mqtt_hots""#,
            ),
            (
                r#"{"options_file": "/x"}"#,
                "cannot name another options file",
            ),
        ]
        .into_iter()
        .enumerate()
        {
            let file = OptionsFile::new(&format!("broken{i}"), json);
            let path = file.path();
            let env = |k: &str| (k == "OPTIONS_FILE").then(|| path.clone());
            let err = Config::resolve(&Sources::new(&env)).unwrap_err();
            assert_eq!(err.variable, "OPTIONS_FILE", "{json}");
            let text = err.to_string();
            assert!(text.contains(&path) && text.contains(says), "{text}");
        }
    }

    #[test]
    fn supervisor_settings() {
        let env = env_of(&[]);
        assert_eq!(
            Config::resolve(&Sources::new(&env)).unwrap().supervisor,
            None
        );
        let env = env_of(&[("SUPERVISOR_TOKEN", "t0k")]);
        let s = Config::resolve(&Sources::new(&env))
            .unwrap()
            .supervisor
            .unwrap();
        assert_eq!(
            (s.url.as_str(), s.token.as_str()),
            ("http://supervisor", "t0k")
        );
        let env = env_of(&[
            ("SUPERVISOR_TOKEN", "t0k"),
            ("SUPERVISOR_API", "http://127.0.0.1:1234/"),
        ]);
        let s = Config::resolve(&Sources::new(&env))
            .unwrap()
            .supervisor
            .unwrap();
        assert_eq!(s.url, "http://127.0.0.1:1234");
        let env = env_of(&[("SUPERVISOR_API", "http://127.0.0.1:1234")]);
        let err = Config::resolve(&Sources::new(&env)).unwrap_err();
        assert_eq!(err.variable, "SUPERVISOR_API");
        // The ingress proxy is trusted in the add-on only, unless one is named.
        let env = env_of(&[]);
        assert_eq!(
            Config::resolve(&Sources::new(&env)).unwrap().ingress_proxy,
            None
        );
        let env = env_of(&[("SUPERVISOR_TOKEN", "t0k")]);
        assert_eq!(
            Config::resolve(&Sources::new(&env)).unwrap().ingress_proxy,
            Some(SUPERVISOR_INGRESS_PROXY)
        );
        let env = env_of(&[("SUPERVISOR_TOKEN", "t0k"), ("INGRESS_PROXY", "10.0.0.2")]);
        assert_eq!(
            Config::resolve(&Sources::new(&env)).unwrap().ingress_proxy,
            Some("10.0.0.2".parse().unwrap())
        );
    }

    #[test]
    fn allowed_hosts_and_origins() {
        let env = env_of(&[
            (
                "ALLOWED_HOSTS",
                " Hearth.Example.com., proxy.example.net ,,[fd00::1]",
            ),
            (
                "ALLOWED_ORIGINS",
                "HTTPS://HA.example.com:443, http://10.0.0.5:8123/, https://[FD00::2]:8443",
            ),
        ]);
        let c = Config::resolve(&Sources::new(&env)).unwrap();
        assert_eq!(
            c.allowed_hosts,
            ["hearth.example.com", "proxy.example.net", "[fd00::1]"]
        );
        assert_eq!(
            c.allowed_origins,
            [
                "https://ha.example.com",
                "http://10.0.0.5:8123",
                "https://[fd00::2]:8443"
            ]
        );
        let unset = env_of(&[]);
        let c = Config::resolve(&Sources::new(&unset)).unwrap();
        assert!(c.allowed_hosts.is_empty() && c.allowed_origins.is_empty());
        for (variable, value, says) in [
            (
                "ALLOWED_HOSTS",
                "https://hearth.example.com",
                "is not a host name",
            ),
            (
                "ALLOWED_HOSTS",
                "hearth.example.com:8082",
                "is not a host name",
            ),
            ("ALLOWED_HOSTS", "*", "is not a host name"),
            ("ALLOWED_ORIGINS", "*", "would let any web page use the API"),
            (
                "ALLOWED_ORIGINS",
                "null",
                "would let any web page use the API",
            ),
            ("ALLOWED_ORIGINS", "ha.example.com", "is not an origin"),
            (
                "ALLOWED_ORIGINS",
                "https://ha.example.com/lovelace",
                "is not an origin",
            ),
        ] {
            let pairs: &'static [(&'static str, &'static str)] =
                Box::leak(vec![(variable, value)].into_boxed_slice());
            let err = Config::resolve(&Sources::new(&env_of(pairs))).unwrap_err();
            assert_eq!(err.variable, variable, "{value}");
            assert!(err.to_string().contains(says), "{value}: {err}");
        }
    }
}
