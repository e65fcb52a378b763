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
}

const fn option(variable: &str, title: &'static str) -> AddonOption {
    AddonOption {
        setting: declared(variable),
        title,
    }
}

/// In the order the page lists them.
pub const ADDON_OPTIONS: &[AddonOption] = &[
    option("API_ORIGIN", "Address thermostats use"),
    option("REQUIRE_DEVICE_PAIRING", "Require pairing"),
    option("ENTRY_KEY_TTL_SECONDS", "Entry key lifetime"),
    option("CONTROL_REQUIRE_KEY", "Require an API key"),
    option("ALLOWED_HOSTS", "More names for hearth"),
    option("ALLOWED_ORIGINS", "Web pages allowed"),
    option("API_RATE_LIMIT_PER_MINUTE", "API requests per minute"),
    option("HISTORY_INTERVAL_SECONDS", "History interval"),
    option("ENERGY_KEEP_DAYS", "Energy history days"),
    option("AVAILABILITY_TIMEOUT_SECONDS", "Offline after"),
    option("WEATHER_PROVIDER", "Outdoor weather"),
    option("WEATHER_URL", "Weather service"),
    option("ALERT_LOW_C", "Too cold below (°C)"),
    option("ALERT_HIGH_C", "Too hot above (°C)"),
    option("ALERT_OFFLINE_MINUTES", "Offline alert after (minutes)"),
    option(
        "ALERT_NOT_HEATING_MINUTES",
        "Not heating alert after (minutes)",
    ),
    option("FILTER_REMINDER_HOURS", "Filter reminder (hours)"),
    option("NTFY_URL", "ntfy topic"),
    option("WEBHOOK_URL", "Webhook"),
    option("WEBHOOK_SECRET", "Webhook secret"),
    option("DEBUG_LOGGING", "Debug logging"),
    option("STORE_DEVICE_LOGS", "Keep thermostat logs"),
    option("MQTT_HOST", "MQTT broker"),
    option("MQTT_PORT", "MQTT port"),
    option("MQTT_USER", "MQTT user name"),
    option("MQTT_PASSWORD", "MQTT password"),
    option("MQTT_TOPIC_PREFIX", "MQTT topic prefix"),
    option("MQTT_DISCOVERY_PREFIX", "MQTT discovery prefix"),
];

/// The page's title for the setting called `name`, if the add-on offers it.
pub fn title(name: &str) -> Option<&'static str> {
    ADDON_OPTIONS
        .iter()
        .find(|o| o.setting.name == name)
        .map(|o| o.title)
}
