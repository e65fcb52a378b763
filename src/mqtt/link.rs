//! One connection to the broker, through `symqtt` (a blocking MQTT 3.1.1 client: no async
//! runtime). The client's own read and keep-alive threads hand what arrives to the bridge's
//! thread over a channel; nothing here is called from a request handler.

use std::time::Duration;

use bytes::Bytes;
use crossbeam_channel::{Sender, TrySendError};
use symqtt::v3::{
    Client, ConnectOptions, InboundHandler, Publish, PublishMessage, QoS, Session,
    SubscribeReturnCode, Will,
};
use symqtt_transport::tcp::TcpTransport;

use crate::config::MqttConfig;

/// Longest wait for the broker to accept the connection, and for one publish to be written.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);
const KEEP_ALIVE: Duration = Duration::from_secs(30);
const PING_TIMEOUT: Duration = Duration::from_secs(10);

/// What the client's threads report. `link` tells a report of an old connection from the
/// current one's.
pub enum Inbound {
    Message {
        link: u64,
        topic: String,
        payload: Bytes,
        /// Set on a retained message the broker replays on subscribing: a stale command.
        retain: bool,
    },
    Lost {
        link: u64,
    },
}

struct Handler {
    link: u64,
    inbox: Sender<Inbound>,
}

impl InboundHandler for Handler {
    fn on_publish(&self, msg: &Publish) {
        let message = Inbound::Message {
            link: self.link,
            topic: msg.topic.clone(),
            payload: msg.payload.clone(),
            retain: msg.retain,
        };
        if let Err(TrySendError::Full(_)) = self.inbox.try_send(message) {
            log::warn!(
                "MQTT: commands are arriving faster than they run; dropped {}",
                crate::util::logged(&msg.topic)
            );
        }
    }

    fn on_disconnect(&self, reason: &symqtt::v3::Error) {
        log::debug!("MQTT connection {} ended: {reason}", self.link);
        // Never blocks this (the client's) thread; if the inbox is full, the bridge still
        // notices within a tick through `Link::is_connected`.
        let _ = self.inbox.try_send(Inbound::Lost { link: self.link });
    }
}

/// A topic name a broker accepts: not empty, at most [`MAX_TOPIC`] bytes, no wildcards and no
/// control characters (MQTT 3.1.1 §4.7.3; mosquitto disconnects a client that sends them).
pub fn valid_topic(topic: &str) -> bool {
    !topic.is_empty()
        && topic.len() <= MAX_TOPIC
        && !topic.contains(['+', '#'])
        && !topic.chars().any(char::is_control)
}

/// Longest topic hearth publishes (the protocol allows 65,535 bytes).
pub const MAX_TOPIC: usize = 1024;

/// A topic shortened for a log line.
fn clip(topic: &str) -> String {
    topic.chars().take(120).collect()
}

/// A session with a small window of packet ids. Only the subscription takes one (publishes are
/// QoS 0); `Session::new`'s 65,535-slot window costs about 5.7 MB of memory (measured).
fn session() -> Session {
    Session::with_max_inflight(INFLIGHT)
}

const INFLIGHT: u16 = 8;

pub struct Link {
    client: Client<Handler, TcpTransport>,
}

impl Link {
    /// Connects with hearth's last will (`will_topic` = `offline`, retained) and subscribes to
    /// `filters`.
    pub fn open(
        config: &MqttConfig,
        link: u64,
        will_topic: &str,
        filters: &[&str],
        inbox: Sender<Inbound>,
    ) -> Result<Link, String> {
        let transport = TcpTransport::builder((config.host.as_str(), config.port))
            .connect_timeout(IO_TIMEOUT)
            .nodelay(true)
            .connect()
            .map_err(|e| format!("cannot reach {}:{}: {e}", config.host, config.port))?;
        let options = ConnectOptions {
            client_id: config.client_id.clone(),
            // Nothing is wanted from an earlier session: state is republished on connect, and
            // commands queued while hearth was away are stale.
            clean_session: true,
            keep_alive: KEEP_ALIVE,
            will: Some(Will {
                topic: will_topic.to_string(),
                message: Bytes::from_static(b"offline"),
                qos: QoS::AtLeastOnce,
                retain: true,
            }),
            username: config.user.clone(),
            password: config.password.clone().map(Bytes::from),
            connect_timeout: Some(IO_TIMEOUT),
            ping_timeout: Some(PING_TIMEOUT),
        };
        let client = Client::connect(options, Handler { link, inbox }, session(), transport)
            .map_err(|e| {
                format!(
                    "{}:{} refused the connection: {e}",
                    config.host, config.port
                )
            })?;
        let link = Link { client };
        let filters: Vec<(&str, QoS)> = filters.iter().map(|f| (*f, QoS::AtLeastOnce)).collect();
        let granted = link
            .client
            .subscribe(&filters, Some(IO_TIMEOUT))
            .and_then(|token| token.wait_timeout(IO_TIMEOUT))
            .map_err(|e| format!("subscribing failed: {e}"))?;
        if granted.contains(&SubscribeReturnCode::Failure) {
            // Publishing still works; say loudly why commands will not.
            log::error!(
                "MQTT: the broker refused the subscription to {filters:?}; commands will not arrive"
            );
        }
        Ok(link)
    }

    /// Publishes a retained message (QoS 0: a lost connection is followed by a full
    /// republication, so nothing needs acknowledging). `Err` means the connection is gone. A
    /// topic no broker would take is skipped with a warning rather than sent: a broker
    /// disconnects a client that sends one, which would end in a reconnection loop.
    pub fn publish(&self, topic: &str, payload: &str) -> Result<(), String> {
        if !valid_topic(topic) {
            log::warn!(
                "MQTT: not publishing to an invalid topic name {:?}",
                clip(topic)
            );
            return Ok(());
        }
        let message = PublishMessage::new(topic, Bytes::from(payload.to_string()))
            .retain(true)
            .timeout(IO_TIMEOUT);
        match self.client.publish(&message) {
            Ok(_) => Ok(()),
            Err(symqtt::v3::Error::Encode(e)) => {
                log::warn!("MQTT: cannot send {:?}: {e}", clip(topic));
                Ok(())
            }
            Err(e) => Err(format!("publishing {} failed: {e}", clip(topic))),
        }
    }

    pub fn is_connected(&self) -> bool {
        self.client.is_connected()
    }

    /// A clean goodbye: the broker then does not publish the last will (the caller has already
    /// published `offline` itself).
    pub fn close(self) {
        self.client.disconnect(Some(IO_TIMEOUT));
    }
}
