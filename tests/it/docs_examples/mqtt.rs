//! The `mqtt` marker: a local mosquitto broker standing for the docs' broker on the LAN
//! (`192.168.1.20:1883`, user `hearth`, password `secret`), and a watcher on it that tells the
//! runner when hearth has published what a command waits for.

use hearth::config::MqttConfig;

use crate::common::mqtt::{Broker, Watcher};
use crate::common::{SERIAL, wait_until};

/// The documented broker.
const DOC_BROKER: &str = "192.168.1.20";
const USER: &str = "hearth";
const PASSWORD: &str = "secret";
const PREFIX: &str = "nolongerevil";

pub struct LocalBroker {
    // Field order is drop order: the watcher disconnects before the broker stops.
    watcher: Watcher,
    broker: Broker,
}

impl LocalBroker {
    pub fn start() -> LocalBroker {
        let broker = Broker::with_user(USER, PASSWORD);
        let watcher = Watcher::connect_as(broker.port, Some((USER, PASSWORD)));
        LocalBroker { watcher, broker }
    }

    /// What the server is given: the documented `MQTT_HOST`, `MQTT_USER` and `MQTT_PASSWORD`,
    /// with the local broker's address.
    pub fn config(&self) -> MqttConfig {
        MqttConfig {
            user: Some(USER.into()),
            password: Some(PASSWORD.into()),
            ..MqttConfig::new("127.0.0.1", self.broker.port)
        }
    }

    /// A command as run: the documented broker becomes the local one.
    pub fn rewrite(&self, text: &str) -> String {
        text.replace(
            &format!("-h {DOC_BROKER}"),
            &format!("-h 127.0.0.1 -p {}", self.broker.port),
        )
    }

    /// Output as the page shows it: the local broker written as the documented one.
    pub fn normalise(&self, output: &str) -> String {
        output.replace(
            &format!("127.0.0.1:{}", self.broker.port),
            &format!("{DOC_BROKER}:1883"),
        )
    }

    /// Waits until hearth has published the simulated thermostat's state (its mode is the
    /// last of what the page's subscriber shows to be published), so a subscriber sees it all
    /// as retained messages.
    pub fn wait_for_thermostat(&self) {
        let mode = format!("{PREFIX}/{SERIAL}/ha/mode");
        self.watcher.wait(&format!("hearth publishes {mode}"), |m| {
            m.contains_key(&mode)
        });
    }

    /// How many messages the watcher has seen on the state topic a `mosquitto_pub` command
    /// sets (`T` for `-t T/set`), if it is one.
    pub fn before(&self, command: &str) -> Option<(String, usize)> {
        if !command.trim_start().starts_with("mosquitto_pub") {
            return None;
        }
        let words: Vec<&str> = command.split_whitespace().collect();
        let topic = words
            .windows(2)
            .find(|w| w[0] == "-t")
            .and_then(|w| w[1].trim_matches('\'').strip_suffix("/set"))?
            .to_string();
        let seen = self.watcher.count(&topic);
        Some((topic, seen))
    }

    /// After a `mosquitto_pub` to `T/set`: waits until hearth has carried the command out and
    /// published `T` again, so the page's next command sees its effect.
    pub fn after(&self, (topic, seen): (String, usize)) {
        wait_until(&format!("hearth publishes {topic} again"), || {
            self.watcher.count(&topic) > seen
        });
    }
}
