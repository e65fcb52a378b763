//! MQTT: thermostat state published to a broker, Home Assistant discovery, and command topics
//! (on when `MQTT_HOST` is set). docs/mqtt-home-assistant.md lists the topics.
//!
//! One thread, the bridge, owns the connection. It learns of changes from the hub's watch
//! channel (which never blocks a committer: a bridge that falls behind misses events, and its
//! periodic resync catches up), recomputes the thermostat's topics and publishes only those whose
//! payload changed. Commands arriving from the broker are parsed into the thermostat core's
//! intents ([`commands`]) and committed through it, as every surface's are. A broker that is
//! down or slow therefore only delays MQTT: the device protocol and the control API never wait
//! for it.
//!
//! - Everything published is retained. On each (re)connect the bridge republishes it all, so a
//!   broker restarted without persistence is repopulated, and clears what vanished meanwhile
//!   (what vanished while hearth itself was stopped is not known to it).
//! - hearth's own availability, `{P}/availability`, is `online` while connected; the last will
//!   (and a clean stop) set it to `offline`. Each thermostat's `{P}/{S}/availability` follows
//!   [`crate::app::App::availability`]; on a clean stop all are set to `offline`.
//! - Discovery is sent when the bridge connects and when a thermostat's [`Fingerprint`]
//!   (name, capabilities, mode) changes; a thermostat nobody owns (removed, or with pairing
//!   unclaimed) has its retained topics and discovery cleared.
//! - A thermostat's alerts ([`alerts`]) are state topics like the rest, recomputed when the
//!   alert board sends a notice as well as on the thermostat's own changes.
//! - One subscription, `{P}/+/+/+/set`, covers both the Home Assistant and the raw command
//!   topics, so no broker can deliver one command twice through overlapping subscriptions (the
//!   Python server subscribed twice). Retained command messages are ignored: they are replays
//!   of an old command, not a new one.
//! - A second subscription, `{P}/presence/+/state`, takes a Home Assistant `person` entity's
//!   state for a person of [`crate::people`] (docs/presence.md). Retained ones are taken: the
//!   same state twice changes nothing.

pub mod alerts;
pub mod commands;
pub mod discovery;
pub mod energy;
mod link;
pub mod state_topics;

use crate::util::clock::Stopwatch;
use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crossbeam_channel::{Receiver, bounded, select};

use crate::accounts::{Viewer, Visibility};
use crate::alerts::{Alerts, Notice};
use crate::app::App;
use crate::config::{Config, MqttConfig};
use crate::hub::ChangeEvent;
use crate::presence::Availability;
use crate::state::State;
use crate::thermostat::Reading;
use crate::thermostat::{self, View};
use crate::util::logged;
use crate::util::shutdown::Shutdown;
use discovery::{Fingerprint, Prefixes};
use link::{Inbound, Link};
use state_topics::Snapshot;

/// What the bridge reads of the running server (the server's `App`): its narrow view.
pub trait Context: Send + Sync {
    fn config(&self) -> &Config;
    fn state(&self) -> &State;
    /// The alert board (published as each thermostat's alert topics).
    fn alerts(&self) -> &Alerts;
    /// Each thermostat's energy history as stored (its runtime sensors).
    fn energy(&self) -> &crate::energy::Live;
    /// Who sees a thermostat ([`crate::accounts::visibility`]): MQTT publishes and takes
    /// commands for what [`Viewer::Mqtt`] may.
    fn visibility(&self) -> Visibility;
    /// Whether a thermostat is available (`holding`: it holds a subscribe now).
    fn availability(&self, serial: &str, holding: bool) -> Availability;
    /// A thermostat's reading now, its availability given.
    fn reading_with(&self, serial: &str, availability: Availability) -> Option<Arc<Reading>>;
    /// The presence rule, which `{P}/presence/<person>/state` reports to.
    fn people(&self) -> &crate::people::People;
}

/// The server's view for the bridge (here, since the server's shared parts sit below the
/// surfaces and know none of them).
impl Context for App {
    fn config(&self) -> &Config {
        App::config(self)
    }

    fn people(&self) -> &crate::people::People {
        App::people(self)
    }

    fn state(&self) -> &State {
        App::state(self)
    }

    fn alerts(&self) -> &Alerts {
        App::alerts(self)
    }

    fn energy(&self) -> &crate::energy::Live {
        App::energy(self)
    }

    fn visibility(&self) -> Visibility {
        App::visibility(self)
    }

    fn availability(&self, serial: &str, holding: bool) -> Availability {
        self.presence().availability(serial, holding)
    }

    fn reading_with(&self, serial: &str, availability: Availability) -> Option<Arc<Reading>> {
        App::reading_with(self, serial, availability)
    }
}

const MIN_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Every thermostat is recomputed this often, for the topics that change with time alone
/// (minutes to target, fan timer left) and for any change event the bridge missed.
const RESYNC: Duration = Duration::from_secs(60);
/// A connection that lasted this long resets the reconnection backoff.
const STABLE: Duration = Duration::from_secs(30);
/// Commands waiting to run; more are dropped (with a warning) rather than held without bound.
const INBOX: usize = 256;
const STACK: usize = 256 * 1024;

/// The running bridge; the shutdown signal it was started with ends it.
pub struct Mqtt {
    /// Disconnected when the thread ends.
    done: Receiver<()>,
    thread: JoinHandle<()>,
}

/// Longest wait for the bridge at shutdown: a stop that arrives while it is connecting waits
/// for that attempt's timeouts.
const STOP_WAIT: Duration = Duration::from_secs(8);

impl Mqtt {
    /// Starts the bridge if MQTT is configured; it runs until `shutdown` is triggered.
    pub fn start(app: &Arc<dyn Context>, shutdown: &Shutdown) -> io::Result<Option<Mqtt>> {
        let Some(config) = app.config().mqtt.clone() else {
            return Ok(None);
        };
        let changes = app.state().hub().watch();
        let stopped = shutdown.receiver();
        let (finished, done) = bounded::<()>(0);
        let bridge = Bridge::new(Arc::clone(app), config);
        let thread = thread::Builder::new()
            .name("mqtt".into())
            .stack_size(STACK)
            .spawn(move || {
                let _finished = finished;
                bridge.run(&changes, &stopped);
            })?;
        Ok(Some(Mqtt { done, thread }))
    }

    /// After the shutdown signal, on which the bridge publishes `offline` for hearth and every
    /// thermostat and disconnects: waits for that at most [`STOP_WAIT`]; a bridge still busy
    /// with the broker after that is left to the process exit.
    pub fn join(self) {
        match self.done.recv_timeout(STOP_WAIT) {
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                log::warn!("MQTT: the broker did not answer in {STOP_WAIT:?}; stopping without it");
            }
            _ => {
                let _ = self.thread.join();
            }
        }
    }
}

/// What was last published for one thermostat, kept small (about 4 kB for 80 topics) because
/// a server may have many. Kept across reconnections, with the payloads forgotten so all is
/// sent again, so that what vanished meanwhile is still cleared.
#[derive(Default)]
struct Published {
    /// For each state topic (by a hash of its name after `{P}/{S}/`), a hash of its payload
    /// (`None`: not sent on this connection).
    payloads: HashMap<u64, Option<u64>>,
    /// Those topic names, one per line: needed only to clear a topic that vanishes.
    names: String,
    /// The discovery last sent (its topics follow from it), and whether it was sent on this
    /// connection.
    fingerprint: Option<Fingerprint>,
    discovery_sent: bool,
    available: Option<bool>,
}

impl Published {
    /// After a reconnection: every topic must be sent again; what they are is kept.
    fn forget_payloads(&mut self) {
        self.payloads.values_mut().for_each(|h| *h = None);
        self.discovery_sent = false;
        self.available = None;
    }
}

enum Ended {
    Stop,
    Lost(String),
}

struct Bridge {
    app: Arc<dyn Context>,
    config: MqttConfig,
    published: HashMap<String, Published>,
    /// Counts connections, so a report from an old one is ignored.
    link_id: u64,
    /// The alert board's notices: an alert may start while its thermostat says nothing.
    notices: Receiver<Arc<Notice>>,
    /// Serials whose stored energy history changed (the runtime sensors follow it).
    stored: Receiver<String>,
}

impl Bridge {
    fn new(app: Arc<dyn Context>, config: MqttConfig) -> Bridge {
        Bridge {
            notices: app.alerts().watch(),
            stored: app.energy().watch(),
            app,
            config,
            published: HashMap::new(),
            link_id: 0,
        }
    }

    fn bridge_topic(&self) -> String {
        format!("{}/availability", self.config.topic_prefix)
    }

    fn run(mut self, changes: &Receiver<Arc<ChangeEvent>>, stopped: &Receiver<()>) {
        let (inbox_tx, inbox) = bounded(INBOX);
        let filter = format!("{}/+/+/+/set", self.config.topic_prefix);
        // Three levels against the commands' four: the two never overlap.
        let presence = format!("{}/presence/+/state", self.config.topic_prefix);
        let mut backoff = MIN_BACKOFF;
        loop {
            // Whether a connection stayed up is real time, whatever clock the server reads.
            let started = Stopwatch::start();
            self.link_id += 1;
            let opened = Link::open(
                &self.config,
                self.link_id,
                &self.bridge_topic(),
                &[&filter, &presence],
                inbox_tx.clone(),
            );
            match opened {
                Err(why) => log::warn!("MQTT: {why}; trying again in {backoff:?}"),
                Ok(link) => {
                    log::info!(
                        "MQTT: connected to {}:{} as {}",
                        self.config.host,
                        self.config.port,
                        self.config.client_id
                    );
                    let ended = self.serve(&link, changes, &inbox, stopped);
                    // A connection that keeps dropping soon after it opens backs off too.
                    if started.elapsed() >= STABLE {
                        backoff = MIN_BACKOFF;
                    }
                    match ended {
                        Ended::Stop => {
                            self.goodbye(&link);
                            link.close();
                            return;
                        }
                        Ended::Lost(why) => {
                            log::warn!("MQTT: {why}; reconnecting in {backoff:?}");
                            // Dropping a link that is still open says a clean goodbye, after
                            // which the broker keeps the last will to itself: say it instead.
                            if link.is_connected() {
                                let _ = link.publish(&self.bridge_topic(), "offline");
                            }
                        }
                    }
                }
            }
            select! {
                recv(stopped) -> _ => return,
                default(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
            // Everything is republished on the next connection.
            while changes.try_recv().is_ok() {}
        }
    }

    /// Runs one connection until it is lost or the server stops.
    fn serve(
        &mut self,
        link: &Link,
        changes: &Receiver<Arc<ChangeEvent>>,
        inbox: &Receiver<Inbound>,
        stopped: &Receiver<()>,
    ) -> Ended {
        // The broker may have lost what was retained: send it all again.
        self.published
            .values_mut()
            .for_each(Published::forget_payloads);
        if let Err(why) = link.publish(&self.bridge_topic(), "online") {
            return Ended::Lost(why);
        }
        let mut dirty: HashSet<String> = self.known_serials();
        let tick = (self.app.config().availability_timeout / 2)
            .clamp(Duration::from_millis(250), Duration::from_secs(5));
        // Ticks are on the server's clock; a manual clock's moves wake the loop to look again.
        let clock = self.app.config().clock.clone();
        let moved = clock.moves();
        let mut next_tick = clock.now() + tick;
        let mut next_resync = clock.now() + RESYNC;
        let notices = self.notices.clone();
        let stored = self.stored.clone();
        loop {
            if !dirty.is_empty() {
                let held = self.app.state().hub().subscription_counts();
                for serial in std::mem::take(&mut dirty) {
                    if let Err(why) = self.publish_thermostat(link, &serial, &held) {
                        return Ended::Lost(why);
                    }
                }
            }
            let now = clock.now();
            if now >= next_tick {
                next_tick = now + tick;
                dirty.extend(self.availability_changes());
                if now >= next_resync {
                    next_resync = now + RESYNC;
                    dirty.extend(self.known_serials());
                }
                continue;
            }
            select! {
                recv(stopped) -> _ => return Ended::Stop,
                recv(changes) -> event => match event {
                    Ok(event) => {
                        dirty.insert(event.serial.clone());
                        dirty.extend(changes.try_iter().map(|e| e.serial.clone()));
                    }
                    Err(_) => return Ended::Stop,
                },
                recv(inbox) -> message => match message {
                    Ok(Inbound::Message { link: id, topic, payload, retain }) if id == self.link_id => {
                        match presence_of(&self.config.topic_prefix, &topic) {
                            Some(person) => self.presence(person, &payload),
                            None => self.command(&topic, &payload, retain),
                        }
                    }
                    Ok(Inbound::Lost { link: id }) if id == self.link_id => {
                        return Ended::Lost("the connection to the broker was lost".into());
                    }
                    _ => {}
                },
                recv(notices) -> notice => {
                    dirty.extend(notice.ok().map(|n| n.alert.serial.clone()));
                    dirty.extend(notices.try_iter().map(|n| n.alert.serial.clone()));
                }
                recv(stored) -> serial => {
                    dirty.extend(serial.ok());
                    dirty.extend(stored.try_iter());
                }
                recv(moved) -> _ => {}
                default(clock.wait_time(next_tick)) => {}
            }
            if !link.is_connected() {
                return Ended::Lost("the connection to the broker was lost".into());
            }
        }
    }

    /// Every thermostat in the store, and every one published before (which may be gone).
    fn known_serials(&self) -> HashSet<String> {
        let mut serials: HashSet<String> = self.app.state().serials().into_iter().collect();
        serials.extend(self.published.keys().cloned());
        serials
    }

    /// Whether a thermostat is available, given the subscribes held per serial (counted once
    /// for many thermostats: [`App::availability`] counts them, under the hub's lock, each time).
    fn available(&self, serial: &str, held: &HashMap<String, usize>) -> bool {
        self.app
            .availability(serial, held.contains_key(serial))
            .available
    }

    /// Thermostats whose availability differs from what was last published.
    fn availability_changes(&self) -> Vec<String> {
        let held = self.app.state().hub().subscription_counts();
        self.published
            .iter()
            .filter(|(serial, p)| {
                p.available
                    .is_some_and(|was| was != self.available(serial, &held))
            })
            .map(|(serial, _)| serial.clone())
            .chain(
                self.app
                    .state()
                    .serials()
                    .into_iter()
                    .filter(|s| !self.published.contains_key(s)),
            )
            .collect()
    }

    /// The thermostat as MQTT shows it; `None` if it is gone or MQTT may not list it
    /// ([`crate::accounts::visibility`]: unclaimed with pairing required, or released).
    fn snapshot(&self, serial: &str, held: &HashMap<String, usize>) -> Option<Snapshot> {
        let visibility = self.app.visibility();
        let (owner, hidden) = self.app.state().accounts(|a| {
            let owner = a.owner_of(serial).map(|o| o.user.clone());
            (owner, !visibility.of(a, serial, Viewer::Mqtt).listed)
        });
        if hidden {
            return None;
        }
        let held_now = held.contains_key(serial);
        let availability = self.app.availability(serial, held_now);
        let view = self
            .app
            .state()
            .read_device(serial, |data| View::of(serial, data, owner.as_deref()))?;
        let reading = self.app.reading_with(serial, availability)?;
        Some(Snapshot { view, reading })
    }

    /// Publishes what changed for one thermostat: discovery first (Home Assistant then
    /// subscribes to the state topics, whose retained values follow), then its state.
    fn publish_thermostat(
        &mut self,
        link: &Link,
        serial: &str,
        held: &HashMap<String, usize>,
    ) -> Result<(), String> {
        let snapshot = self.snapshot(serial, held);
        let prefixes = Prefixes {
            topic: &self.config.topic_prefix,
            discovery: &self.config.discovery_prefix,
        };
        let base = format!("{}/{serial}", self.config.topic_prefix);
        let published = self.published.entry(serial.to_string()).or_default();
        let discovery_topics = |f: &Option<Fingerprint>| -> Vec<String> {
            f.as_ref()
                .map(|f| discovery::messages(&prefixes, serial, f))
                .unwrap_or_default()
                .into_iter()
                .map(|(topic, _)| topic)
                .collect()
        };
        let Some(s) = snapshot else {
            // Gone: clear every retained topic, so Home Assistant drops its entities.
            for suffix in published.names.lines() {
                link.publish(&format!("{base}/{suffix}"), "")?;
            }
            for topic in discovery_topics(&published.fingerprint) {
                link.publish(&topic, "")?;
            }
            self.published.remove(serial);
            return Ok(());
        };

        let now_ms = self.app.config().clock.now_ms();
        let mut ha = state_topics::home_assistant(&s, now_ms / 1000);
        if !ha.is_empty() {
            let live = &self.app.energy();
            ha.extend(energy::topics(
                live.written_today(serial).as_ref(),
                live.totals(serial),
            ));
        }
        // Discovery waits until both buckets exist, as the Home Assistant state does.
        if !ha.is_empty() {
            let fingerprint = Fingerprint::of(&s);
            if !published.discovery_sent || published.fingerprint.as_ref() != Some(&fingerprint) {
                let messages = discovery::messages(&prefixes, serial, &fingerprint);
                let old = discovery_topics(&published.fingerprint);
                for gone in old
                    .iter()
                    .filter(|t| !messages.iter().any(|(m, _)| m == *t))
                {
                    link.publish(gone, "")?;
                }
                for (topic, payload) in &messages {
                    link.publish(topic, payload)?;
                }
                published.fingerprint = Some(fingerprint);
                published.discovery_sent = true;
            }
        }

        let mut wanted: Vec<(String, String)> = state_topics::raw(&s);
        wanted.extend(
            ha.into_iter()
                .map(|(suffix, payload)| (format!("ha/{suffix}"), payload)),
        );
        wanted.extend(alerts::topics(serial, &self.app.alerts().active()));
        let online = if s.available() { "online" } else { "offline" };
        wanted.push(("availability".to_string(), online.to_string()));
        published.available = Some(s.available());

        let mut renamed = false;
        let mut wanted_keys = HashSet::with_capacity(wanted.len());
        for (suffix, payload) in &wanted {
            let key = hash_of(suffix);
            wanted_keys.insert(key);
            let hash = Some(hash_of(payload));
            match published.payloads.insert(key, hash) {
                Some(before) if before == hash => {}
                before => {
                    renamed |= before.is_none();
                    link.publish(&format!("{base}/{suffix}"), payload)?;
                }
            }
        }
        if published.payloads.len() > wanted_keys.len() {
            for suffix in published.names.lines() {
                if !wanted_keys.contains(&hash_of(suffix)) {
                    link.publish(&format!("{base}/{suffix}"), "")?;
                }
            }
            published
                .payloads
                .retain(|key, _| wanted_keys.contains(key));
            renamed = true;
        }
        if renamed {
            let names: Vec<&str> = wanted.iter().map(|(suffix, _)| suffix.as_str()).collect();
            published.names = names.join("\n");
        }
        Ok(())
    }

    /// On a clean stop: every thermostat and hearth itself `offline`. Stops at the first
    /// failure, so a broken broker cannot hold up the shutdown.
    fn goodbye(&self, link: &Link) {
        let base = &self.config.topic_prefix;
        let topics = self
            .published
            .keys()
            .map(|serial| format!("{base}/{serial}/availability"))
            .chain([self.bridge_topic()]);
        for topic in topics {
            if let Err(why) = link.publish(&topic, "offline") {
                log::warn!("MQTT: {why}");
                return;
            }
        }
    }

    /// A Home Assistant `person` state for `person`: `home` is home, `not_home` or another zone
    /// away, `unknown` or `unavailable` nothing. Retained ones are taken (a replay of the same
    /// state changes nothing); an unknown person is logged and ignored.
    fn presence(&self, person: &str, payload: &[u8]) {
        let Some(home) = crate::people::report::home_assistant(payload) else {
            return;
        };
        let name = crate::people::person_name(person).unwrap_or_default();
        let reported = self.app.people().report(
            self.app.state(),
            &name,
            home,
            crate::state::PresenceSource::HomeAssistant,
            None,
        );
        match reported {
            Ok(crate::people::Reported::Changed) => log::info!(
                "MQTT: {} is {}",
                logged(&name),
                if home { "home" } else { "away" }
            ),
            Ok(_) => {}
            Err(why) => log::warn!(
                "MQTT: presence of {} ignored: {}",
                logged(person),
                logged(&why.to_string())
            ),
        }
    }

    /// Runs one command message; a bad one is logged and changes nothing.
    fn command(&self, topic: &str, payload: &[u8], retain: bool) {
        if retain {
            log::info!(
                "MQTT: ignored a retained message on {}: an old command, not a new one",
                logged(topic)
            );
            return;
        }
        let (serial, intent) = match commands::parse(&self.config.topic_prefix, topic, payload) {
            Ok(parsed) => parsed,
            Err(why) => {
                log::warn!("MQTT: ignored {}", logged(&why));
                return;
            }
        };
        let result = thermostat::commit(
            self.app.state(),
            &serial,
            &intent,
            self.app.visibility(),
            Viewer::Mqtt,
        );
        match result {
            Ok(_) => log::info!("MQTT: {} ran", logged(topic)),
            Err(why) => log::warn!(
                "MQTT: {} refused: {}",
                logged(topic),
                logged(&why.to_string())
            ),
        }
    }
}

/// The person of a `{P}/presence/<person>/state` topic.
fn presence_of<'a>(prefix: &str, topic: &'a str) -> Option<&'a str> {
    topic
        .strip_prefix(prefix)?
        .strip_prefix("/presence/")?
        .strip_suffix("/state")
        .filter(|p| !p.is_empty() && !p.contains('/'))
}

fn hash_of(payload: &str) -> u64 {
    let mut h = DefaultHasher::new();
    payload.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::presence_of;

    #[test]
    fn presence_topics_name_one_person() {
        assert_eq!(
            presence_of("nest", "nest/presence/alice/state"),
            Some("alice")
        );
        assert_eq!(presence_of("a/b", "a/b/presence/bob/state"), Some("bob"));
        for other in [
            "nest/presence//state",
            "nest/presence/a/b/state",
            "nest/02AA01AC0000SIM1/ha/mode/set",
            "other/presence/alice/state",
            "nest/presence/alice/set",
        ] {
            assert_eq!(presence_of("nest", other), None, "{other}");
        }
    }
}
