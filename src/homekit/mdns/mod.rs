//! How controllers find hearth: the DNS-SD service `_hap._tcp` announced over multicast DNS,
//! with the TXT record HAP requires. The Home app lists an unpaired accessory by it (`sf=1`),
//! a paired controller finds the accessory's address and port by its `id` after the address
//! changes, and re-reads the attribute database when `c#` moves.
//!
//! The responder is hearth's own, for this one instance: [`responder`] decides what to send
//! (probing, announcing, answering, conflicts, the goodbye: RFC 6762 and 6763 as far as one
//! service instance needs them), [`wire`] reads and writes the packets within bounds, and
//! [`net`] holds the socket and lists the interfaces. One thread, `homekit-mdns`, runs them:
//! it reads the socket with a timeout up to the next thing due (at most a second), looks
//! between packets whether the record changed (after a pairing is added or removed, the
//! identity's [`Identity::watch`], and whenever the accessory side says something changed:
//! its configuration number may have moved), and reads the interfaces again every
//! [`INTERFACES_EVERY`], at once when a packet comes in on one it does not know and when a
//! send fails. It handles at most [`PACKETS_PER_SECOND`] packets a second; past that it stops
//! reading until the second is over (the kernel drops the rest), so a flood cannot take a core.
//! Stopping wakes it at once (the signal shuts the socket's reading down) and it sends the
//! goodbye (the records with TTL 0), so controllers forget the address at once rather than
//! after the record's TTL.

use std::io;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, TryRecvError};

use crate::hap::Identity;
use crate::hap::setup_uri::{CATEGORY_BRIDGE, setup_hash};
use crate::util::refusals::RefusalLog;
use crate::util::shutdown::Shutdown;

#[doc(hidden)]
pub mod net;
#[doc(hidden)]
pub mod responder;
#[doc(hidden)]
pub mod wire;

use responder::{Datagram, Outgoing, Responder, Setup};

/// The service type of HAP over IP.
pub const SERVICE_TYPE: &str = "_hap._tcp.local.";
/// The multicast DNS port (RFC 6762).
pub const MDNS_PORT: u16 = 5353;
/// The interfaces are read again this often.
pub const INTERFACES_EVERY: Duration = Duration::from_secs(10);
/// Packets handled in a second, at most.
pub const PACKETS_PER_SECOND: u32 = 1000;
/// The longest the thread waits on the socket before it looks whether the record changed.
const LOOK_EVERY: Duration = Duration::from_secs(1);
/// The interfaces are read at most this often when a packet or a send asks for it.
const INTERFACES_AT_MOST: Duration = Duration::from_secs(1);

/// The TXT record's keys and values, in HAP's order.
pub type Txt = Vec<(&'static str, String)>;

/// The TXT record HAP requires of an IP accessory: the configuration number (`c#`), feature
/// flags (`ff`, 0: no Apple authentication chip), the device id (`id`), the model name (`md`),
/// the protocol version (`pv`), the state number (`s#`, always 1 over IP), whether it can be
/// paired (`sf`, 1 until the first controller pairs), the category (`ci`) and the setup hash
/// (`sh`) a controller that scanned the QR code matches.
pub fn txt(identity: &Identity, name: &str, config_number: u32) -> Txt {
    let device_id = identity.device_id();
    vec![
        ("c#", config_number.to_string()),
        ("ff", "0".into()),
        ("id", device_id.clone()),
        ("md", name.to_string()),
        ("pv", "1.1".into()),
        ("s#", "1".into()),
        ("sf", if identity.is_paired() { "0" } else { "1" }.into()),
        ("ci", CATEGORY_BRIDGE.to_string()),
        ("sh", setup_hash(&identity.setup_id(), &device_id)),
    ]
}

/// The advertisement's thread.
pub struct Advertisement {
    thread: JoinHandle<()>,
}

impl Advertisement {
    /// Waits until the advertisement has said goodbye (after the signal it was started with is
    /// triggered).
    pub fn join(self) {
        let _ = self.thread.join();
    }
}

/// Announces `name` (the instance name: `HOMEKIT_NAME`) as a HAP accessory on `port` (the bound
/// HomeKit port) on every interface, until `shutdown` is triggered. `config_number` is the
/// accessory side's current `c#`; it is asked again whenever `changed` (the accessory side's
/// [`crate::homekit::Attributes::watch`]) or the identity says something changed, and the
/// record is announced again only when it differs. It ends, with its goodbye, when `shutdown`
/// is triggered or `changed` disconnects. An error here is the socket's (the port cannot be
/// shared, say): the advertisement is then off.
pub fn advertise(
    identity: Arc<Identity>,
    name: &str,
    port: u16,
    config_number: impl Fn() -> u32 + Send + 'static,
    changed: Receiver<()>,
    shutdown: &Shutdown,
) -> io::Result<Advertisement> {
    advertise_on(
        MDNS_PORT,
        identity,
        name,
        port,
        config_number,
        changed,
        shutdown,
    )
}

/// [`advertise`] with the multicast DNS port given: tests use another one, so that they
/// neither announce to the network's real responders nor collide with a local one.
#[doc(hidden)]
pub fn advertise_on(
    mdns_port: u16,
    identity: Arc<Identity>,
    name: &str,
    port: u16,
    config_number: impl Fn() -> u32 + Send + 'static,
    changed: Receiver<()>,
    shutdown: &Shutdown,
) -> io::Result<Advertisement> {
    let socket = net::Socket::open(mdns_port)?;
    let waker = socket.waker()?;
    // Wakes the thread from its read; sending (the goodbye) still works.
    shutdown.on_trigger(move || {
        let _ = rustix::net::shutdown(&waker, rustix::net::Shutdown::Read);
    });
    let setup = Setup {
        mdns_port,
        port,
        name: name.to_string(),
        host: host_label(&identity),
        txt: responder::txt_data(&txt(&identity, name, config_number())),
    };
    let mut seed = [0u8; 8];
    if crate::util::random::fill(&mut seed).is_err() {
        // Delays need no secrecy: the process id will do.
        seed = u64::from(std::process::id()).to_le_bytes();
    }
    let run = Run {
        socket,
        responder: Responder::new(setup, Instant::now(), u64::from_le_bytes(seed)),
        identity_changes: identity.watch(),
        identity,
        name: name.to_string(),
        config_number: Box::new(config_number),
        changed,
        stop: shutdown.clone(),
        refusals: RefusalLog::default(),
        trouble: None,
    };
    let thread = thread::Builder::new()
        .name("homekit-mdns".into())
        .stack_size(256 * 1024)
        .spawn(move || run.run())?;
    Ok(Advertisement { thread })
}

/// The host's label: from the device id, so it clashes with no machine's.
fn host_label(identity: &Identity) -> String {
    format!(
        "hearth-{}",
        identity.device_id().replace(':', "").to_ascii_lowercase()
    )
}

/// What the thread holds.
struct Run {
    socket: net::Socket,
    responder: Responder,
    identity: Arc<Identity>,
    identity_changes: Receiver<()>,
    name: String,
    config_number: Box<dyn Fn() -> u32 + Send>,
    changed: Receiver<()>,
    stop: Shutdown,
    refusals: RefusalLog,
    /// What went wrong at the last reading of the interfaces, as logged.
    trouble: Option<String>,
}

impl Run {
    fn run(mut self) {
        let mut buf = vec![0u8; wire::MAX_PACKET];
        let mut interfaces_read: Option<Instant> = None;
        let mut reread = true;
        // Interfaces packets came in on that hearth does not answer on.
        let mut unknown: Vec<u32> = Vec::new();
        // The second packets are counted in, and how many came in it.
        let mut second = (Instant::now(), 0u32);
        loop {
            if self.stop.is_triggered() {
                break;
            }
            let now = Instant::now();
            match self.look_for_changes(now) {
                Some(out) => self.send(&out, &mut reread),
                None => break,
            }
            let stale = interfaces_read.is_none_or(|at| {
                let age = now.saturating_duration_since(at);
                age >= INTERFACES_EVERY || (reread && age >= INTERFACES_AT_MOST)
            });
            if stale {
                if interfaces_read
                    .is_none_or(|at| now.saturating_duration_since(at) >= INTERFACES_EVERY)
                {
                    unknown.clear();
                }
                self.read_interfaces(now);
                interfaces_read = Some(now);
                reread = false;
            }
            let out = self.responder.due(now);
            self.send(&out, &mut reread);

            let next_interfaces = interfaces_read.map_or(now, |at| at + INTERFACES_EVERY);
            let wake = [self.responder.next_due(), Some(next_interfaces)]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(now)
                .min(now + LOOK_EVERY);
            let timeout = wake.saturating_duration_since(now);
            if now.saturating_duration_since(second.0) >= Duration::from_secs(1) {
                second = (now, 0);
            } else if second.1 >= PACKETS_PER_SECOND {
                // Over the budget: the rest of the second is not read.
                let rest = (second.0 + Duration::from_secs(1)).saturating_duration_since(now);
                self.stop
                    .wait_timeout(rest.min(timeout).max(Duration::from_millis(1)));
                continue;
            }
            match self.socket.recv(&mut buf, timeout) {
                Ok(None) => {}
                Ok(Some(received)) => {
                    second.1 += 1;
                    if second.1 == PACKETS_PER_SECOND {
                        let source = received.source;
                        let client = crate::util::client_key((*source.ip()).into());
                        self.refusals.refused(client, now).write(
                            (module_path!(), log::Level::Info),
                            "HomeKit mDNS",
                            &format_args!(
                                "{PACKETS_PER_SECOND} packets within a second, the last from \
                                 {source}: the rest of the second is not read"
                            ),
                        );
                    }
                    if !self.responder.knows(received.interface) {
                        // A new interface, or one hearth does not answer on (asked about once
                        // until the next regular reading).
                        if !unknown.contains(&received.interface) {
                            unknown.push(received.interface);
                            reread = true;
                        }
                        continue;
                    }
                    let datagram = Datagram {
                        interface: received.interface,
                        source: received.source,
                        multicast: received.multicast,
                        bytes: &buf[..received.len.min(buf.len())],
                    };
                    let out = self.responder.received(Instant::now(), datagram);
                    self.send(&out, &mut reread);
                }
                Err(e) => {
                    if self.stop.is_triggered() {
                        break;
                    }
                    // A read that failed counts as a packet, so a socket that keeps failing
                    // cannot spin.
                    second.1 += 1;
                    log::debug!("HomeKit mDNS: reading failed: {e}");
                }
            }
        }
        let goodbye = self.responder.goodbye();
        for out in &goodbye {
            let _ = self.socket.send(out);
        }
    }

    /// Looks whether the record changed (its TXT, or the host name after a reset); `None` when
    /// the accessory side is gone.
    fn look_for_changes(&mut self, now: Instant) -> Option<Vec<Outgoing>> {
        let mut changed = false;
        loop {
            match self.changed.try_recv() {
                Ok(()) => changed = true,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return None,
            }
        }
        while self.identity_changes.try_recv().is_ok() {
            changed = true;
        }
        if !changed {
            return Some(Vec::new());
        }
        let out = self.responder.set_host(now, &host_label(&self.identity));
        let record = txt(&self.identity, &self.name, (self.config_number)());
        self.responder.set_txt(now, responder::txt_data(&record));
        Some(out)
    }

    fn read_interfaces(&mut self, now: Instant) {
        let trouble = match net::interfaces() {
            Ok(interfaces) => {
                let joined = self.socket.follow(&interfaces);
                self.responder.set_interfaces(now, interfaces);
                joined
                    .err()
                    .map(|e| format!("could not join the multicast group: {e}"))
            }
            Err(e) => Some(format!("could not list the network interfaces: {e}")),
        };
        // Said once, not at every reading, until it changes or clears.
        if trouble != self.trouble {
            if let Some(trouble) = &trouble {
                log::warn!("HomeKit mDNS: {trouble}");
            }
            self.trouble = trouble;
        }
    }

    /// Sends each packet; a failure (an address gone) asks for the interfaces to be read again.
    fn send(&self, out: &[Outgoing], reread: &mut bool) {
        for packet in out {
            if let Err(e) = self.socket.send(packet) {
                log::debug!("HomeKit mDNS: sending to {:?} failed: {e}", packet.to);
                *reread = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_follows_the_pairing_state() {
        let dir = std::env::temp_dir().join(format!("hearth-mdns-txt-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let identity = Identity::open(&dir).unwrap();
        let record = txt(&identity, "hearth", 3);
        let keys: Vec<&str> = record.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            keys,
            ["c#", "ff", "id", "md", "pv", "s#", "sf", "ci", "sh"],
            "every key HAP requires"
        );
        let get = |record: &Txt, key: &str| {
            record
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(get(&record, "c#"), "3");
        assert_eq!(get(&record, "sf"), "1");
        assert_eq!(get(&record, "ci"), "2");
        assert_eq!(get(&record, "id"), identity.device_id());
        assert_eq!(
            get(&record, "sh"),
            setup_hash(&identity.setup_id(), &identity.device_id())
        );
        identity
            .add_pairing(crate::hap::Pairing {
                id: "phone".into(),
                public_key: [1; 32],
                admin: true,
            })
            .unwrap();
        assert_eq!(get(&txt(&identity, "hearth", 3), "sf"), "0");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
