//! The Home Assistant add-on's options: the settings its Configuration page offers, and the
//! title the page shows for each (from the add-on's `translations/en.yaml`). An error in an
//! option names it by that title, as the person reading the log saw it.
//!
//! The add-on's manifest (`cross/addon/hearth/config.yaml`) and translations must offer exactly
//! these settings with these titles; `tests/it/addon/manifest.rs` checks both against this list
//! and against the Supervisor's rules.

use super::settings::{Setting, declared};

/// One option of the add-on's Configuration page.
#[derive(Debug)]
pub struct AddonOption {
    pub setting: &'static Setting,
    /// What the page calls it.
    pub title: &'static str,
    /// Its type in the manifest's `schema:`, in the Supervisor's schema language: as tight as
    /// that language can say, so the page refuses what hearth would refuse at start-up
    /// (hearth still checks everything, for what the language cannot say). A `?` makes it
    /// optional: left out of the page's defaults, it is unset.
    pub element: &'static str,
}

const fn option(variable: &str, title: &'static str, element: &'static str) -> AddonOption {
    AddonOption {
        setting: declared(variable),
        title,
        element,
    }
}

/// Topic levels as `parse_topic_prefix` takes them: no `+`, `#` or empty level.
const TOPIC_LEVELS: &str = "match(^[^/+#]+(/[^/+#]+)*$)";

/// In the order the page lists them.
pub const ADDON_OPTIONS: &[AddonOption] = &[
    option("API_ORIGIN", "Address thermostats use", "url?"),
    option("REQUIRE_DEVICE_PAIRING", "Require pairing", "bool"),
    option(
        "MAX_NEW_THERMOSTATS_PER_CLIENT",
        "New thermostats per address a day",
        "int(0,10000)",
    ),
    option("MAX_CONNECTIONS", "Connections per port", "int(0,10000000)"),
    option(
        "ENTRY_KEY_TTL_SECONDS",
        "Entry key lifetime",
        "int(1,604800)",
    ),
    option("CONTROL_REQUIRE_KEY", "Require an API key", "bool"),
    option("ALLOWED_HOSTS", "More names for hearth", "str?"),
    option("ALLOWED_ORIGINS", "Web pages allowed", "str?"),
    option(
        "API_RATE_LIMIT_PER_MINUTE",
        "API requests per minute",
        "int(1,100000)",
    ),
    option(
        "HISTORY_INTERVAL_SECONDS",
        "History interval",
        "int(1,3600)",
    ),
    option("ENERGY_KEEP_DAYS", "Energy history days", "int(0,36500)"),
    option(
        "AVAILABILITY_TIMEOUT_SECONDS",
        "Offline after",
        "int(1,86400)",
    ),
    option("AWAY_AFTER_MINUTES", "Away after (minutes)", "int(1,1440)"),
    option(
        "WEATHER_PROVIDER",
        "Outdoor weather",
        "list(open-meteo|upstream|off)?",
    ),
    option("WEATHER_URL", "Weather service", "url?"),
    option("ALERT_LOW_C", "Too cold below (°C)", "float(-50,100)"),
    option("ALERT_HIGH_C", "Too hot above (°C)", "float(-50,100)"),
    option(
        "ALERT_OFFLINE_MINUTES",
        "Offline alert after (minutes)",
        "float(0,525600)",
    ),
    option(
        "ALERT_NOT_HEATING_MINUTES",
        "Not heating alert after (minutes)",
        "float(0,525600)",
    ),
    option(
        "ALERT_NOT_APPLIED_MINUTES",
        "Not applied alert after (minutes)",
        "float(0,525600)",
    ),
    option(
        "FILTER_REMINDER_HOURS",
        "Filter reminder (hours)",
        "float(0,525600)",
    ),
    option("ALERT_RULES_OFF", "Alert rules off", "str?"),
    option("NTFY_URL", "ntfy topic", "url?"),
    option("WEBHOOK_URL", "Webhook", "url?"),
    option("WEBHOOK_SECRET", "Webhook secret", "password?"),
    option("DEBUG_LOGGING", "Debug logging", "bool"),
    option("STORE_DEVICE_LOGS", "Keep thermostat logs", "bool"),
    option("MQTT_HOST", "MQTT broker", "str?"),
    option("MQTT_PORT", "MQTT port", "int(1,65535)"),
    option("MQTT_USER", "MQTT user name", "str?"),
    option("MQTT_PASSWORD", "MQTT password", "password?"),
    option("MQTT_TOPIC_PREFIX", "MQTT topic prefix", TOPIC_LEVELS),
    option(
        "MQTT_DISCOVERY_PREFIX",
        "MQTT discovery prefix",
        TOPIC_LEVELS,
    ),
];

/// The page's title for the setting called `name`, if the add-on offers it.
pub fn title(name: &str) -> Option<&'static str> {
    ADDON_OPTIONS
        .iter()
        .find(|o| o.setting.name == name)
        .map(|o| o.title)
}
