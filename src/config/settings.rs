//! Every setting of `hearth serve`, declared once: [`SETTINGS`]. The command-line options and
//! their `--help` (see `crate::cli`), the checks of [`Config::resolve`](super::Config::resolve)
//! and the settings table in docs/configuration.md (see [`super::docs`]) all come from these
//! declarations.
//!
//! [`Config::resolve`](super::Config::resolve) finds each declaration by its variable with
//! [`number`], [`boolean`], [`ip`] or [`text`] in a `const` block, so a misspelt variable or a
//! setting read as the wrong kind stops the build instead of failing at startup.

use std::net::{IpAddr, Ipv4Addr};

/// One setting: the names it goes by, the values it takes, its default and what it does.
#[derive(Debug)]
pub struct Setting {
    /// The variable in lower case, for configuration files (a Home Assistant add-on's options).
    pub name: &'static str,
    /// The environment variable: the Python server's name where it had the setting.
    pub variable: &'static str,
    /// The `hearth serve` option, which wins over the variable.
    pub option: &'static str,
    pub kind: Kind,
    /// What it does. Markdown (backticks; links relative to docs/configuration.md, where the
    /// table is); `--help` drops the markup.
    pub help: &'static str,
}

/// The values a setting takes and what it is when unset (or set to an empty value).
#[derive(Debug)]
pub enum Kind {
    /// A whole number from `min` to `max`.
    Number { min: u64, max: u64, default: u64 },
    /// `true` or `false` (also `1`/`0`, `yes`/`no`, `on`/`off`).
    Bool { default: bool },
    /// An IP address.
    Ip { unset: Unset<IpAddr> },
    /// Text, checked by the code that reads it; `allowed` says what passes (Markdown).
    Text {
        allowed: &'static str,
        unset: Unset<&'static str>,
    },
}

/// What an unset setting with no default number or boolean is.
#[derive(Debug, Clone, Copy)]
pub enum Unset<T> {
    /// This value, as if it had been given.
    Is(T),
    /// No value; this (Markdown) happens instead.
    Means(&'static str),
}

/// Both topic prefixes take the same values.
const TOPIC_LEVELS: &str = "topic levels such as `home/nest`: no `+`, `#` or empty level";

/// The order of `hearth serve --help` and of the table in docs/configuration.md.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "data_dir",
        variable: "DATA_DIR",
        option: "--data-dir",
        kind: Kind::Text {
            allowed: "a directory",
            unset: Unset::Is("./data"),
        },
        help: "where hearth keeps its data; created (or made) mode 0700",
    },
    Setting {
        name: "server_host",
        variable: "SERVER_HOST",
        option: "--bind",
        kind: Kind::Ip {
            unset: Unset::Is(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        },
        help: "address to listen on; the control port's too, unless `CONTROL_HOST` is set",
    },
    Setting {
        name: "control_host",
        variable: "CONTROL_HOST",
        option: "--control-bind",
        kind: Kind::Ip {
            unset: Unset::Means("the `--bind` address"),
        },
        help: "address the control port listens on",
    },
    Setting {
        name: "server_port",
        variable: "SERVER_PORT",
        option: "--device-port",
        kind: Kind::Number {
            min: 0,
            max: 65535,
            default: 8000,
        },
        help: "thermostat protocol port; 0 picks a free port",
    },
    Setting {
        name: "control_port",
        variable: "CONTROL_PORT",
        option: "--control-port",
        kind: Kind::Number {
            min: 0,
            max: 65535,
            default: 8082,
        },
        help: "control API port; 0 picks a free port",
    },
    Setting {
        name: "api_origin",
        variable: "API_ORIGIN",
        option: "--api-origin",
        kind: Kind::Text {
            allowed: "`http(s)://host[:port]`, no path",
            unset: Unset::Means("`http://<LAN IP>:<device port>`"),
        },
        help: "origin thermostats are told to use, e.g. `http://192.168.1.10:8000`; a missing \
               port becomes the device port",
    },
    Setting {
        name: "cert_dir",
        variable: "CERT_DIR",
        option: "--cert-dir",
        kind: Kind::Text {
            allowed: "a directory with `fullchain.pem` and `privkey.pem`",
            unset: Unset::Means("unset"),
        },
        help: "[HTTPS](#https) on both ports, with this directory's certificate and key",
    },
    Setting {
        name: "require_device_pairing",
        variable: "REQUIRE_DEVICE_PAIRING",
        option: "--require-device-pairing",
        kind: Kind::Bool { default: false },
        help: "true: new thermostats must be claimed with an entry key",
    },
    Setting {
        name: "max_new_thermostats_per_client",
        variable: "MAX_NEW_THERMOSTATS_PER_CLIENT",
        option: "--max-new-thermostats-per-client",
        kind: Kind::Number {
            min: 0,
            max: 10_000,
            default: 4,
        },
        help: "thermostats new to hearth (serials it has never seen) one client address may \
               add per 24 hours without pairing; more are answered 503, nothing of them \
               stored, and retry (see [New thermostats](device-protocol.md#new-thermostats)). \
               Behind a reverse proxy or NAT that every thermostat reaches hearth through, set \
               it to how many you have; 0: no limit",
    },
    Setting {
        name: "entry_key_ttl_seconds",
        variable: "ENTRY_KEY_TTL_SECONDS",
        option: "--entry-key-ttl-seconds",
        kind: Kind::Number {
            min: 1,
            max: 604_800,
            default: 3600,
        },
        help: "entry key lifetime in seconds; the firmware wants at least 1800",
    },
    Setting {
        name: "suspend_time_max",
        variable: "SUSPEND_TIME_MAX",
        option: "--suspend-time-max",
        kind: Kind::Number {
            min: 11,
            max: 350,
            default: 300,
        },
        help: "seconds a thermostat may sleep on a subscribe; subscribes are held this minus 10 s",
    },
    Setting {
        name: "defer_device_window",
        variable: "DEFER_DEVICE_WINDOW",
        option: "--defer-device-window",
        kind: Kind::Number {
            min: 0,
            max: 3599,
            default: 15,
        },
        help: "random delay window for thermostat writes, in seconds",
    },
    Setting {
        name: "disable_defer_window",
        variable: "DISABLE_DEFER_WINDOW",
        option: "--disable-defer-window",
        kind: Kind::Number {
            min: 0,
            max: 3599,
            default: 60,
        },
        help: "seconds without the `DEFER_DEVICE_WINDOW` delay after a pushed setpoint",
    },
    Setting {
        name: "max_subscriptions_per_device",
        variable: "MAX_SUBSCRIPTIONS_PER_DEVICE",
        option: "--max-subscriptions-per-device",
        kind: Kind::Number {
            min: 1,
            max: 1000,
            default: 100,
        },
        help: "held subscribes allowed per thermostat",
    },
    Setting {
        name: "max_event_streams_per_client",
        variable: "MAX_EVENT_STREAMS_PER_CLIENT",
        option: "--max-event-streams-per-client",
        kind: Kind::Number {
            min: 1,
            max: 64,
            default: 8,
        },
        help: "live event streams (`/api/events`) one client address may hold; 64 are allowed \
               in all",
    },
    Setting {
        name: "debug_logging",
        variable: "DEBUG_LOGGING",
        option: "--debug-logging",
        kind: Kind::Bool { default: false },
        help: "true: log every request",
    },
    Setting {
        name: "store_device_logs",
        variable: "STORE_DEVICE_LOGS",
        option: "--store-device-logs",
        kind: Kind::Bool { default: false },
        help: "true: keep thermostat log uploads",
    },
    Setting {
        name: "device_logs_dir",
        variable: "DEVICE_LOGS_DIR",
        option: "--device-logs-dir",
        kind: Kind::Text {
            allowed: "a directory",
            unset: Unset::Means("`<DATA_DIR>/device-logs`"),
        },
        help: "where thermostat log uploads are kept",
    },
    Setting {
        name: "device_logs_max_mb",
        variable: "DEVICE_LOGS_MAX_MB",
        option: "--device-logs-max-mb",
        kind: Kind::Number {
            min: 1,
            max: 1_000_000,
            default: 64,
        },
        help: "MiB all kept thermostat log uploads may take together; the oldest are deleted \
               to make room for a new one",
    },
    Setting {
        name: "weather_provider",
        variable: "WEATHER_PROVIDER",
        option: "--weather-provider",
        kind: Kind::Text {
            allowed: "`open-meteo`, `upstream` or `off`",
            unset: Unset::Means("`upstream` when `WEATHER_URL` is set, else `open-meteo`"),
        },
        help: "where the thermostats' outdoor weather comes from: `open-meteo` sends the \
               thermostat's postal code and country to Open-Meteo (free, no key), `upstream` \
               asks `WEATHER_URL`, `off` sends nothing anywhere (see \
               [Outdoor weather](device-protocol.md#outdoor-weather))",
    },
    Setting {
        name: "weather_url",
        variable: "WEATHER_URL",
        option: "--weather-url",
        kind: Kind::Text {
            allowed: "an `http://` or `https://` URL",
            unset: Unset::Means("unset (no upstream)"),
        },
        help: "weather upstream (`WEATHER_PROVIDER=upstream`); the thermostat's query is \
               appended and the answer passed on as it is",
    },
    Setting {
        name: "open_meteo_geocoding_url",
        variable: "OPEN_METEO_GEOCODING_URL",
        option: "--open-meteo-geocoding-url",
        kind: Kind::Text {
            allowed: "an `http://` or `https://` URL",
            unset: Unset::Is("https://geocoding-api.open-meteo.com"),
        },
        help: "Open-Meteo's geocoding service, which turns a postal code and country into a \
               place (`/v1/search` is appended)",
    },
    Setting {
        name: "open_meteo_url",
        variable: "OPEN_METEO_URL",
        option: "--open-meteo-url",
        kind: Kind::Text {
            allowed: "an `http://` or `https://` URL",
            unset: Unset::Is("https://api.open-meteo.com"),
        },
        help: "Open-Meteo's forecast service, asked for a place's current conditions \
               (`/v1/forecast` is appended)",
    },
    Setting {
        name: "weather_cache_ttl_ms",
        variable: "WEATHER_CACHE_TTL_MS",
        option: "--weather-cache-ttl-ms",
        kind: Kind::Number {
            min: 0,
            max: 86_400_000,
            default: 600_000,
        },
        help: "weather cache lifetime in milliseconds",
    },
    Setting {
        name: "http_workers",
        variable: "HTTP_WORKERS",
        option: "--http-workers",
        kind: Kind::Number {
            min: 1,
            max: 64,
            default: 4,
        },
        help: "requests handled at once per port",
    },
    Setting {
        name: "idle_timeout_seconds",
        variable: "IDLE_TIMEOUT_SECONDS",
        option: "--idle-timeout-seconds",
        kind: Kind::Number {
            min: 1,
            max: 3600,
            default: 60,
        },
        help: "seconds after which a connection with no traffic either way is closed; held \
               subscribes and event streams excepted",
    },
    Setting {
        name: "head_timeout_seconds",
        variable: "HEAD_TIMEOUT_SECONDS",
        option: "--head-timeout-seconds",
        kind: Kind::Number {
            min: 1,
            max: 3600,
            default: 10,
        },
        help: "seconds a request's head (request line and headers) may take to arrive, from \
               the connection's opening (or the request's first byte on a kept-alive \
               connection); a slower one is closed",
    },
    Setting {
        name: "max_connections_per_client",
        variable: "MAX_CONNECTIONS_PER_CLIENT",
        option: "--max-connections-per-client",
        kind: Kind::Number {
            min: 1,
            max: 65_535,
            default: 64,
        },
        help: "open connections per client address on each port, held subscribes and event \
               streams included; one more is answered 503",
    },
    Setting {
        name: "max_connections",
        variable: "MAX_CONNECTIONS",
        option: "--max-connections",
        kind: Kind::Number {
            min: 0,
            max: 10_000_000,
            default: 0,
        },
        help: "open connections per port from all clients together, held subscribes and event \
               streams included; 0 sizes each port from the descriptors and tasks the process \
               may use (logged at start), and a larger number is lowered to that. When a port \
               is full, the address holding the most connections gives way to another",
    },
    Setting {
        name: "watchdog_interval_seconds",
        variable: "WATCHDOG_INTERVAL_SECONDS",
        option: "--watchdog-interval-seconds",
        kind: Kind::Number {
            min: 0,
            max: 3600,
            default: 30,
        },
        help: "seconds between self-probes of both ports; 0 turns the watchdog off",
    },
    Setting {
        name: "api_rate_limit_per_minute",
        variable: "API_RATE_LIMIT_PER_MINUTE",
        option: "--api-rate-limit-per-minute",
        kind: Kind::Number {
            min: 1,
            max: 100_000,
            default: 20,
        },
        help: "requests per minute per API key on `/api/v1`, and per person at the presence URL",
    },
    Setting {
        name: "control_require_key",
        variable: "CONTROL_REQUIRE_KEY",
        option: "--control-require-key",
        kind: Kind::Bool { default: false },
        help: "true: the control API wants an API key of the user `owner`",
    },
    Setting {
        name: "thermostat_api_port",
        variable: "THERMOSTAT_API_PORT",
        option: "--thermostat-api-port",
        kind: Kind::Number {
            min: 1,
            max: 65535,
            default: 8080,
        },
        help: "port of the thermostats' local settings API, for scanning and pointing them: \
               `hearth scan` and `point`, `/api/scan-network` and `/api/configure-nest`",
    },
    Setting {
        name: "away_after_minutes",
        variable: "AWAY_AFTER_MINUTES",
        option: "--away-after-minutes",
        kind: Kind::Number {
            min: 1,
            max: 1440,
            default: 10,
        },
        help: "minutes everyone must have been away before the home goes away, when it has \
               [people](presence.md) whose presence moves it",
    },
    Setting {
        name: "availability_timeout_seconds",
        variable: "AVAILABILITY_TIMEOUT_SECONDS",
        option: "--availability-timeout-seconds",
        kind: Kind::Number {
            min: 1,
            max: 86_400,
            default: 300,
        },
        help: "seconds without a request or held subscribe before a thermostat counts as \
               offline: `/status`'s `is_available`, MQTT availability",
    },
    Setting {
        name: "history_interval_seconds",
        variable: "HISTORY_INTERVAL_SECONDS",
        option: "--history-interval-seconds",
        kind: Kind::Number {
            min: 1,
            max: 3600,
            default: 300,
        },
        help: "seconds between [history](control-api.md#history-get-apihistory) samples of each \
               thermostat",
    },
    Setting {
        name: "energy_keep_days",
        variable: "ENERGY_KEEP_DAYS",
        option: "--energy-keep-days",
        kind: Kind::Number {
            min: 0,
            max: 36_500,
            default: 0,
        },
        help: "days of [energy history](energy.md) kept per thermostat, today included; older \
               days are pruned when a day ends. 0 keeps every day",
    },
    Setting {
        name: "alert_low_c",
        variable: "ALERT_LOW_C",
        option: "--alert-low-c",
        kind: Kind::Text {
            allowed: "a number of °C from -50 to 100, below `ALERT_HIGH_C`",
            unset: Unset::Is("7"),
        },
        help: "a `low_temperature` [alert](alerts.md) when a room is below this; it clears \
               once the room is 0.5 °C above it",
    },
    Setting {
        name: "alert_high_c",
        variable: "ALERT_HIGH_C",
        option: "--alert-high-c",
        kind: Kind::Text {
            allowed: "a number of °C from -50 to 100, above `ALERT_LOW_C`",
            unset: Unset::Is("35"),
        },
        help: "a `high_temperature` [alert](alerts.md) when a room is above this; it clears \
               once the room is 0.5 °C below it",
    },
    Setting {
        name: "alert_offline_minutes",
        variable: "ALERT_OFFLINE_MINUTES",
        option: "--alert-offline-minutes",
        kind: Kind::Text {
            allowed: "minutes from 0 to 525600, fractions allowed; 0 turns the rule off",
            unset: Unset::Is("30"),
        },
        help: "an `offline` [alert](alerts.md) when a thermostat has not been in touch for \
               this long (a thermostat holding its long poll is in touch)",
    },
    Setting {
        name: "alert_not_heating_minutes",
        variable: "ALERT_NOT_HEATING_MINUTES",
        option: "--alert-not-heating-minutes",
        kind: Kind::Text {
            allowed: "minutes from 0 to 525600, fractions allowed; 0 turns the rules off",
            unset: Unset::Is("90"),
        },
        help: "a `not_heating` (`not_cooling`) [alert](alerts.md) when the system has heated \
               (cooled) this long and the room has not moved 0.5 °C toward the target",
    },
    Setting {
        name: "alert_not_applied_minutes",
        variable: "ALERT_NOT_APPLIED_MINUTES",
        option: "--alert-not-applied-minutes",
        kind: Kind::Text {
            allowed: "minutes from 0 to 525600, fractions allowed; 0 turns the rule off",
            unset: Unset::Is("15"),
        },
        help: "a `not_applied` [alert](alerts.md) when a change sent to a thermostat has not \
               been taken after this long, while it stays in touch",
    },
    Setting {
        name: "filter_reminder_hours",
        variable: "FILTER_REMINDER_HOURS",
        option: "--filter-reminder-hours",
        kind: Kind::Text {
            allowed: "hours from 0 to 525600, fractions allowed; 0 turns the reminder off",
            unset: Unset::Is("0"),
        },
        help: "a `filter` [alert](alerts.md) after this many hours of heating and cooling \
               since the last reset (`POST /api/alerts/ack`)",
    },
    Setting {
        name: "alert_rules_off",
        variable: "ALERT_RULES_OFF",
        option: "--alert-rules-off",
        kind: Kind::Text {
            allowed: "[alert](alerts.md#the-rules) kinds separated by commas, such as \
                      `offline,filter`",
            unset: Unset::Means("every rule on"),
        },
        help: "the [alert](alerts.md) rules turned off: none of their alerts start, and theirs \
               that are active clear",
    },
    Setting {
        name: "ntfy_url",
        variable: "NTFY_URL",
        option: "--ntfy-url",
        kind: Kind::Text {
            allowed: "an `http://` or `https://` URL",
            unset: Unset::Means("unset (no ntfy)"),
        },
        help: "an ntfy topic URL (such as `https://ntfy.sh/my-house-hearth`) that each \
               [alert](alerts.md#ntfy)'s start and clear is posted to",
    },
    Setting {
        name: "webhook_url",
        variable: "WEBHOOK_URL",
        option: "--webhook-url",
        kind: Kind::Text {
            allowed: "an `http://` or `https://` URL",
            unset: Unset::Means("unset (no webhook)"),
        },
        help: "a URL that each [alert](alerts.md#webhook)'s start and clear is posted to as \
               JSON",
    },
    Setting {
        name: "webhook_secret",
        variable: "WEBHOOK_SECRET",
        option: "--webhook-secret",
        kind: Kind::Text {
            allowed: "any text",
            unset: Unset::Means("unset (the webhook's posts are not signed)"),
        },
        help: "the key of the webhook's `X-Hearth-Signature` header (HMAC-SHA256 of the \
               body); never logged",
    },
    Setting {
        name: "options_file",
        variable: "OPTIONS_FILE",
        option: "--options-file",
        kind: Kind::Text {
            allowed: "a JSON object of settings by name, such as `{\"mqtt_port\": 1884}`",
            unset: Unset::Means("unset"),
        },
        help: "settings from a file, each by its variable's name in lower case (`mqtt_port` \
               for `MQTT_PORT`), over the environment and under the options; a missing file \
               counts as empty. The \
               [Home Assistant add-on](mqtt-home-assistant.md#home-assistant-add-on) reads \
               its `/data/options.json` this way",
    },
    Setting {
        name: "supervisor_token",
        variable: "SUPERVISOR_TOKEN",
        option: "--supervisor-token",
        kind: Kind::Text {
            allowed: "the token Home Assistant's Supervisor gives an add-on",
            unset: Unset::Means("unset (not an add-on)"),
        },
        help: "set by the Supervisor in the \
               [add-on](mqtt-home-assistant.md#home-assistant-add-on): hearth then asks it \
               for this host's address and the device port's host port (when `API_ORIGIN` is \
               unset) and for its MQTT broker (when `MQTT_HOST` is unset)",
    },
    Setting {
        name: "supervisor_api",
        variable: "SUPERVISOR_API",
        option: "--supervisor-api",
        kind: Kind::Text {
            allowed: "an `http://` URL; needs `SUPERVISOR_TOKEN`",
            unset: Unset::Means("`http://supervisor`"),
        },
        help: "where the Supervisor answers",
    },
    Setting {
        name: "ingress_proxy",
        variable: "INGRESS_PROXY",
        option: "--ingress-proxy",
        kind: Kind::Ip {
            unset: Unset::Means("`172.30.32.2` with `SUPERVISOR_TOKEN` (in the add-on), else none"),
        },
        help: "Home Assistant's ingress proxy: its requests come from people Home Assistant has \
               signed in, so `CONTROL_REQUIRE_KEY` does not ask them for a key, and the `Host` \
               it passes on (Home Assistant's own name) needs no `ALLOWED_HOSTS`",
    },
    Setting {
        name: "allowed_hosts",
        variable: "ALLOWED_HOSTS",
        option: "--allowed-hosts",
        kind: Kind::Text {
            allowed: "host names separated by commas, such as `hearth.example.com`",
            unset: Unset::Means("none"),
        },
        help: "more names hearth answers to, such as a reverse proxy's; IP addresses, \
               `localhost`, names without a dot, names ending `.local`, `.lan`, `.home.arpa` \
               or `.internal`, and this box's own names (its host name, also under \
               `/etc/resolv.conf`'s search domains, such as `raspberrypi.fritz.box`; read at \
               start) always work; a refused name is logged with the value that admits it (see \
               [The names hearth answers to](#the-names-hearth-answers-to))",
    },
    Setting {
        name: "allowed_origins",
        variable: "ALLOWED_ORIGINS",
        option: "--allowed-origins",
        kind: Kind::Text {
            allowed: "origins separated by commas, such as `https://ha.example.com:8123`",
            unset: Unset::Means("none"),
        },
        help: "web pages on other origins that may use the control API from a browser (CORS); \
               see [What a web page can and cannot do](../SECURITY.md#what-a-web-page-can-and-cannot-do)",
    },
    Setting {
        name: "mqtt_host",
        variable: "MQTT_HOST",
        option: "--mqtt-host",
        kind: Kind::Text {
            allowed: "a host name or IP address",
            unset: Unset::Means("unset (MQTT off)"),
        },
        help: "the [MQTT](mqtt-home-assistant.md#mqtt-and-home-assistant) broker's host",
    },
    Setting {
        name: "mqtt_port",
        variable: "MQTT_PORT",
        option: "--mqtt-port",
        kind: Kind::Number {
            min: 1,
            max: 65535,
            default: 1883,
        },
        help: "the MQTT broker's port",
    },
    Setting {
        name: "mqtt_user",
        variable: "MQTT_USER",
        option: "--mqtt-user",
        kind: Kind::Text {
            allowed: "a user name",
            unset: Unset::Means("unset"),
        },
        help: "the MQTT broker user name",
    },
    Setting {
        name: "mqtt_password",
        variable: "MQTT_PASSWORD",
        option: "--mqtt-password",
        kind: Kind::Text {
            allowed: "a password; needs `MQTT_USER`",
            unset: Unset::Means("unset"),
        },
        help: "the MQTT broker password; prefer the variable: an option shows in `ps`",
    },
    Setting {
        name: "mqtt_topic_prefix",
        variable: "MQTT_TOPIC_PREFIX",
        option: "--mqtt-topic-prefix",
        kind: Kind::Text {
            allowed: TOPIC_LEVELS,
            unset: Unset::Is("nolongerevil"),
        },
        help: "first topic level(s) of state and command topics",
    },
    Setting {
        name: "mqtt_discovery_prefix",
        variable: "MQTT_DISCOVERY_PREFIX",
        option: "--mqtt-discovery-prefix",
        kind: Kind::Text {
            allowed: TOPIC_LEVELS,
            unset: Unset::Is("homeassistant"),
        },
        help: "discovery prefix Home Assistant reads",
    },
    Setting {
        name: "mqtt_client_id",
        variable: "MQTT_CLIENT_ID",
        option: "--mqtt-client-id",
        kind: Kind::Text {
            allowed: "up to 64 letters, digits, `-`, `_`, `.`",
            unset: Unset::Means("`hearth-` + 8 random hex digits"),
        },
        help: "the MQTT client id; two servers on one broker need different ones",
    },
    Setting {
        name: "homekit",
        variable: "HOMEKIT",
        option: "--homekit",
        kind: Kind::Bool { default: true },
        help: "be a [HomeKit](homekit.md) bridge: the Home app on an iPhone shows each \
               thermostat after scanning the code on hearth's page",
    },
    Setting {
        name: "homekit_port",
        variable: "HOMEKIT_PORT",
        option: "--homekit-port",
        kind: Kind::Number {
            min: 0,
            max: 65535,
            default: 51826,
        },
        help: "the HomeKit port (advertised over mDNS, so controllers find any); 0 picks a \
               free port, as hearth does when this one is taken (Homebridge's default is the \
               same)",
    },
    Setting {
        name: "homekit_name",
        variable: "HOMEKIT_NAME",
        option: "--homekit-name",
        kind: Kind::Text {
            allowed: "up to 63 bytes of letters, digits, spaces and `'`, starting and ending \
                      with a letter or digit (what the Home app accepts)",
            unset: Unset::Is("hearth"),
        },
        help: "the bridge's name in the Home app and on the network",
    },
];

/// The declaration of `variable`, or `None`.
pub fn find(variable: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.variable == variable)
}

/// A number setting, as [`number`] finds it.
#[derive(Clone, Copy, Debug)]
pub struct Number {
    pub setting: &'static Setting,
    pub min: u64,
    pub max: u64,
    pub default: u64,
}

/// A boolean setting, as [`boolean`] finds it.
#[derive(Clone, Copy, Debug)]
pub struct Bool {
    pub setting: &'static Setting,
    pub default: bool,
}

/// An IP address setting, as [`ip`] finds it.
#[derive(Clone, Copy, Debug)]
pub struct Ip {
    pub setting: &'static Setting,
    pub unset: Unset<IpAddr>,
}

/// A text setting, as [`text`] finds it.
#[derive(Clone, Copy, Debug)]
pub struct Text {
    pub setting: &'static Setting,
    pub unset: Unset<&'static str>,
}

/// The number setting `variable`. In a `const` block, anything else stops the build.
pub const fn number(variable: &str) -> Number {
    let setting = declared(variable);
    match setting.kind {
        Kind::Number { min, max, default } => Number {
            setting,
            min,
            max,
            default,
        },
        _ => panic!("not a number setting"),
    }
}

/// The boolean setting `variable`. In a `const` block, anything else stops the build.
pub const fn boolean(variable: &str) -> Bool {
    let setting = declared(variable);
    match setting.kind {
        Kind::Bool { default } => Bool { setting, default },
        _ => panic!("not a boolean setting"),
    }
}

/// The IP address setting `variable`. In a `const` block, anything else stops the build.
pub const fn ip(variable: &str) -> Ip {
    let setting = declared(variable);
    match setting.kind {
        Kind::Ip { unset } => Ip { setting, unset },
        _ => panic!("not an IP address setting"),
    }
}

/// The text setting `variable`. In a `const` block, anything else stops the build.
pub const fn text(variable: &str) -> Text {
    let setting = declared(variable);
    match setting.kind {
        Kind::Text { unset, .. } => Text { setting, unset },
        _ => panic!("not a text setting"),
    }
}

impl<T: Copy> Unset<T> {
    /// The default value. In a `const` block, a setting without one stops the build.
    pub const fn value(self) -> T {
        match self {
            Unset::Is(value) => value,
            Unset::Means(_) => panic!("the setting has no default value"),
        }
    }
}

/// [`find`] for `const` blocks: a variable that is not declared stops the build.
pub(super) const fn declared(variable: &str) -> &'static Setting {
    let mut i = 0;
    while i < SETTINGS.len() {
        if same(SETTINGS[i].variable.as_bytes(), variable.as_bytes()) {
            return &SETTINGS[i];
        }
        i += 1;
    }
    panic!("no setting has this variable")
}

/// `==` on byte strings, which `const fn`s cannot use yet.
const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_variables_and_options_are_unique_and_well_formed() {
        for (i, s) in SETTINGS.iter().enumerate() {
            assert_eq!(s.name, s.variable.to_ascii_lowercase());
            let upper = |c: char| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_';
            assert!(s.variable.chars().all(upper), "{}", s.variable);
            let kebab = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
            let option = s.option.strip_prefix("--").unwrap_or("");
            assert!(
                !option.is_empty() && option.chars().all(kebab),
                "{}",
                s.option
            );
            assert!(!s.help.is_empty(), "{}", s.variable);
            for other in &SETTINGS[i + 1..] {
                assert_ne!(s.name, other.name);
                assert_ne!(s.variable, other.variable);
                assert_ne!(s.option, other.option);
            }
        }
    }

    #[test]
    fn numeric_defaults_are_in_range() {
        for s in SETTINGS {
            if let Kind::Number { min, max, default } = s.kind {
                assert!(min <= default && default <= max, "{}", s.variable);
            }
        }
    }
}
