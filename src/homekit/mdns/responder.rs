//! The multicast DNS responder for hearth's one `_hap._tcp` instance (RFC 6762, RFC 6763),
//! without sockets: it is told what arrived, on which interface and from whom, and what time
//! it is, and answers with the packets to send and where. [`super::advertise`]'s thread does
//! the sending and receiving ([`super::net`]); the tests and the fuzz target drive it directly.
//!
//! What it owns: the instance `<name>._hap._tcp.local.` (SRV, TXT, and an NSEC saying it has
//! nothing else), the host `hearth-<device id>.local.` (one A record per IPv4 address of the
//! interface asked on, and an NSEC saying it has no AAAA), and its entries in the shared PTR
//! records `_hap._tcp.local.` and `_services._dns-sd._udp.local.`. How it behaves:
//!
//! - **Probing** (§8.1): three probes 250 ms apart, after a random wait of up to 250 ms, before
//!   anything is announced. A response from another device for either name, with records that
//!   are not hearth's, is a conflict: the instance is renamed `<name> 2`, `<name> 3`, ... (a
//!   name HOMEKIT_NAME would accept; the host `hearth-<id>-2`), and probed again. Another
//!   device probing for the same name at the same time is resolved as §8.2 says (the
//!   lexicographically later records win; the loser probes again a second later). After 15
//!   conflicts in 10 s, probes wait 5 s. The name taken is kept until the server stops.
//! - **Announcing** (§8.3): twice, a second apart, on every interface; again when the TXT
//!   record changes, and on an interface that appears or whose addresses change.
//! - **Answering** (§6): PTR, SRV, TXT, A and NSEC with the additional records a resolver wants
//!   (§6.2, RFC 6763 §12), the cache-flush bit on unique records (§10.2), only the addresses of
//!   the interface the query came in on. Known answers suppress (§7.1). Answers that hold a
//!   shared record wait 20-120 ms (400-500 ms after a truncated query, whose further known
//!   answers are awaited), so that queries arriving meanwhile share one answer. QU questions
//!   (§5.4) and queries sent to hearth's address are answered by unicast, legacy queries (from
//!   a port other than 5353, §6.7) by unicast with their id, their questions and TTLs of at
//!   most 10 s.
//! - **Rate-bounded**: a record is multicast on an interface at most once a second (§6; a
//!   quarter of a second to defend a name being probed for), so a flood of queries gets at
//!   most a few answers a second on each interface. Unicast answers are limited to
//!   [`UNICAST_BURST`] at once and [`UNICAST_PER_SECOND`] a second in all; past that a QU
//!   question is answered by multicast (rate-bounded as above) and a legacy query not at all.
//!   Unicast answers go only to addresses on the interface's own network (§11).
//! - **Conflicts after announcing** (§9): a response from another device with one of hearth's
//!   unique names and types but other data makes hearth probe the names again (a rename
//!   follows if the other device still answers).
//! - **Goodbye** (§10.1): the records with TTL 0, once, when the server stops.
//!
//! A malformed packet, a unicast query from off the network and an answer held back by the
//! unicast limit are logged once per address a minute ([`RefusalLog`]); every other packet
//! that is not for hearth is ignored.

use std::cmp::Ordering;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

use super::wire::{self, Message, Name, Question, Record};
use crate::util::logged;
use crate::util::refusals::RefusalLog;

/// TTL of the records that name the host (SRV, A, the host's NSEC): RFC 6762 §10.
pub const TTL_HOST: u32 = 120;
/// TTL of the others (PTR, TXT, the instance's NSEC).
pub const TTL_OTHER: u32 = 4500;
/// The most a legacy unicast answer's records say (§6.7).
const TTL_LEGACY: u32 = 10;
/// A record is multicast on an interface at most this often...
const RATE: Duration = Duration::from_secs(1);
/// ...or this often in answer to a probe for one of hearth's names (§6).
const RATE_PROBE_DEFENCE: Duration = Duration::from_millis(250);
/// The random wait before the first probe, at most; and the time between probes.
const PROBE_WAIT: Duration = Duration::from_millis(250);
const PROBES: u8 = 3;
/// Announcements, a second apart.
const ANNOUNCEMENTS: u8 = 2;
const ANNOUNCE_INTERVAL: Duration = Duration::from_secs(1);
/// How long the loser of a simultaneous probe waits before probing again (§8.2).
const LOST_TIE_WAIT: Duration = Duration::from_secs(1);
/// Past this many conflicts in the window, probes wait longer (§8.1).
const CONFLICT_LIMIT: usize = 15;
const CONFLICT_WINDOW: Duration = Duration::from_secs(10);
const CONFLICT_WAIT: Duration = Duration::from_secs(5);
/// The delay of an answer that holds a shared record, in milliseconds (§6), and after a
/// truncated query (§7.2).
const SHARED_DELAY: (u64, u64) = (20, 120);
const TRUNCATED_DELAY: (u64, u64) = (400, 500);
/// Answers waiting for their delay, at most.
const MAX_PENDING: usize = 16;
/// Unicast answers: at most this many at once, refilled at this many a second.
pub const UNICAST_BURST: u32 = 32;
pub const UNICAST_PER_SECOND: u32 = 16;
/// Addresses answered for one interface, at most.
const MAX_ADDRESSES: usize = 8;
/// How long records hearth sent are still recognised as its own when they come back (from
/// another interface on the same network, or after the record changed).
const RECENT: Duration = Duration::from_secs(10);
const MAX_RECENT: usize = 64;
/// The class ANY of a question.
const CLASS_ANY: u16 = 255;

/// A network interface hearth answers on: up, multicast-capable, not the loopback, with IPv4.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    pub index: u32,
    /// Its IPv4 addresses, each with its prefix length.
    pub addresses: Vec<(Ipv4Addr, u8)>,
}

impl Interface {
    /// Whether `ip` is on one of this interface's networks.
    pub fn on_link(&self, ip: Ipv4Addr) -> bool {
        self.addresses.iter().any(|&(ours, prefix)| {
            let mask = u32::MAX
                .checked_shl(32 - u32::from(prefix.min(32)))
                .unwrap_or(0);
            u32::from(ours) & mask == u32::from(ip) & mask
        })
    }
}

/// A packet that arrived.
#[derive(Clone, Copy, Debug)]
pub struct Datagram<'a> {
    /// The interface it came in on.
    pub interface: u32,
    pub source: SocketAddrV4,
    /// Sent to the multicast group (rather than to this host's address).
    pub multicast: bool,
    pub bytes: &'a [u8],
}

/// A packet to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    pub to: To,
    pub packet: Vec<u8>,
}

/// Where a packet goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum To {
    /// The multicast group, out of this interface.
    Multicast(u32),
    /// One querier.
    Unicast(SocketAddrV4),
}

/// One of hearth's records on an interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// `_services._dns-sd._udp.local.` PTR `_hap._tcp.local.`
    Services,
    /// `_hap._tcp.local.` PTR the instance.
    Pointer,
    /// The instance's SRV: the port, on the host.
    Service,
    /// The instance's TXT.
    Text,
    /// The host's A: the interface's address of this index (below [`MAX_ADDRESSES`]).
    Address(u8),
    /// The instance has only SRV and TXT.
    InstanceNsec,
    /// The host has only A.
    HostNsec,
}

impl Key {
    /// A shared record (others may hold the same name and type).
    fn shared(self) -> bool {
        matches!(self, Key::Services | Key::Pointer)
    }

    fn bit(self) -> u16 {
        match self {
            Key::Services => 1,
            Key::Pointer => 1 << 1,
            Key::Service => 1 << 2,
            Key::Text => 1 << 3,
            Key::Address(i) => 1 << (4 + u16::from(i.min(7))),
            Key::InstanceNsec => 1 << 12,
            Key::HostNsec => 1 << 13,
        }
    }
}

/// Every key, in the order a packet carries them.
const KEYS: [Key; 6 + MAX_ADDRESSES] = [
    Key::Services,
    Key::Pointer,
    Key::Service,
    Key::Text,
    Key::Address(0),
    Key::Address(1),
    Key::Address(2),
    Key::Address(3),
    Key::Address(4),
    Key::Address(5),
    Key::Address(6),
    Key::Address(7),
    Key::InstanceNsec,
    Key::HostNsec,
];

/// A set of keys (of one interface): a bit each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Keys(u16);

impl Keys {
    fn of(keys: &[Key]) -> Keys {
        keys.iter().fold(Keys::default(), |set, k| set.with(*k))
    }

    fn with(self, key: Key) -> Keys {
        Keys(self.0 | key.bit())
    }

    fn contains(self, key: Key) -> bool {
        self.0 & key.bit() != 0
    }

    fn union(self, other: Keys) -> Keys {
        Keys(self.0 | other.0)
    }

    fn minus(self, other: Keys) -> Keys {
        Keys(self.0 & !other.0)
    }

    fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The keys, in the order a packet carries them.
    fn iter(self) -> impl Iterator<Item = Key> {
        KEYS.into_iter().filter(move |k| self.contains(*k))
    }
}

/// Which of hearth's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owned {
    Instance,
    Host,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// `sent` probes so far; the next is due at `next`.
    Probing { sent: u8, next: Instant },
    /// The names are hearth's: it answers and announces.
    Announced,
}

/// An answer waiting for its delay.
#[derive(Clone, Debug)]
struct Pending {
    interface: u32,
    source: SocketAddrV4,
    due: Instant,
    answers: Keys,
    additional: Keys,
    /// What the querier said it knows, in a truncated query's further packets.
    known: Keys,
}

/// Unicast answers' budget: tokens in thousandths.
#[derive(Clone, Debug)]
struct Bucket {
    milli: u64,
    at: Option<Instant>,
}

impl Bucket {
    fn take(&mut self, now: Instant) -> bool {
        let elapsed = self
            .at
            .map_or(Duration::MAX, |at| now.saturating_duration_since(at));
        let refill = elapsed
            .as_millis()
            .saturating_mul(u128::from(UNICAST_PER_SECOND));
        let full = u64::from(UNICAST_BURST) * 1000;
        self.milli = u64::try_from(u128::from(self.milli).saturating_add(refill))
            .unwrap_or(full)
            .min(full);
        self.at = Some(now);
        if self.milli >= 1000 {
            self.milli -= 1000;
            true
        } else {
            false
        }
    }
}

/// The names hearth answers for: as configured, and as renamed after conflicts.
#[derive(Clone, Debug)]
struct Names {
    /// `HOMEKIT_NAME`, and the number after it (1: none).
    base: String,
    number: u32,
    /// `hearth-<device id>`, and the number after it (1: none).
    host_base: String,
    host_number: u32,
    instance: Name,
    host: Name,
}

/// What the responder announces, to start with.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The multicast DNS port (5353; the tests use another): queries from other ports are
    /// legacy ones.
    pub mdns_port: u16,
    /// The HAP port, in the SRV record.
    pub port: u16,
    /// The instance name (`HOMEKIT_NAME`): one label.
    pub name: String,
    /// The host's label (`hearth-<device id>`).
    pub host: String,
    /// The TXT record's data ([`txt_data`]).
    pub txt: Vec<u8>,
}

/// The TXT record's data: each `key=value` after its length (RFC 6763 §6), cut at 255 bytes.
pub fn txt_data(pairs: &[(&str, String)]) -> Vec<u8> {
    let mut data = Vec::new();
    for (key, value) in pairs {
        let entry = format!("{key}={value}");
        let bytes = &entry.as_bytes()[..entry.len().min(255)];
        data.push(bytes.len() as u8);
        data.extend_from_slice(bytes);
    }
    if data.is_empty() {
        data.push(0);
    }
    data
}

/// The responder's state (`Clone` for the fuzz target, which starts each input from one that
/// has announced).
#[derive(Clone)]
pub struct Responder {
    mdns_port: u16,
    port: u16,
    service: Name,
    services: Name,
    names: Names,
    txt: Vec<u8>,
    interfaces: Vec<Interface>,
    phase: Phase,
    /// Per interface: announcements left and when the next is due.
    announcing: Vec<(u32, u8, Instant)>,
    /// When each record was last multicast on each interface.
    multicast: Vec<(u32, Key, Instant)>,
    /// Unique records sent lately (recognised as hearth's own when they come back).
    recent: Vec<(Record, Instant)>,
    pending: Vec<Pending>,
    /// Unicast answers' budget.
    budget: Bucket,
    /// When the conflicts of the last [`CONFLICT_WINDOW`] were.
    conflicts: Vec<Instant>,
    refusals: RefusalLog,
    random: u64,
}

impl Responder {
    /// A responder about to probe its names (once it has an interface). `seed` drives the
    /// random delays.
    pub fn new(setup: Setup, now: Instant, seed: u64) -> Responder {
        let host = Name::new(&[&setup.host, "local"])
            .or_else(|| Name::new(&["hearth", "local"]))
            .unwrap_or_else(Name::root);
        let mut responder = Responder {
            mdns_port: setup.mdns_port,
            port: setup.port,
            service: service_name(),
            services: services_name(),
            names: Names {
                instance: instance_name(&setup.name),
                base: setup.name,
                number: 1,
                host_base: setup.host,
                host_number: 1,
                host,
            },
            txt: setup.txt,
            interfaces: Vec::new(),
            phase: Phase::Probing { sent: 0, next: now },
            announcing: Vec::new(),
            multicast: Vec::new(),
            recent: Vec::new(),
            pending: Vec::new(),
            budget: Bucket {
                milli: u64::from(UNICAST_BURST) * 1000,
                at: None,
            },
            conflicts: Vec::new(),
            refusals: RefusalLog::default(),
            random: seed | 1,
        };
        responder.phase = Phase::Probing {
            sent: 0,
            next: now + responder.random_wait(PROBE_WAIT),
        };
        responder
    }

    /// The instance name now (`HOMEKIT_NAME`, or what a conflict renamed it to).
    pub fn instance(&self) -> String {
        self.names
            .instance
            .labels()
            .next()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .unwrap_or_default()
    }

    /// The host name now.
    pub fn host(&self) -> &Name {
        &self.names.host
    }

    /// Whether the names are hearth's (probed), so that it answers.
    pub fn announced(&self) -> bool {
        self.phase == Phase::Announced
    }

    /// Whether it answers on the interface of this index.
    pub fn knows(&self, index: u32) -> bool {
        self.interfaces.iter().any(|i| i.index == index)
    }

    /// The interfaces it answers on now: an interface that is new, or whose addresses changed,
    /// is announced on.
    pub fn set_interfaces(&mut self, now: Instant, mut interfaces: Vec<Interface>) {
        for interface in &mut interfaces {
            interface.addresses.sort();
            interface.addresses.dedup();
            interface.addresses.truncate(MAX_ADDRESSES);
        }
        interfaces.sort_by_key(|i| i.index);
        interfaces.dedup_by_key(|i| i.index);
        if self.interfaces == interfaces {
            return;
        }
        // New, or with other addresses: what was sent there no longer counts (an address key
        // may name another address now), and it is announced there.
        let before = std::mem::take(&mut self.interfaces);
        let unchanged = |index: u32| {
            interfaces
                .iter()
                .find(|i| i.index == index)
                .is_some_and(|i| before.contains(i))
        };
        self.multicast.retain(|(index, _, _)| unchanged(*index));
        self.announcing.retain(|(index, _, _)| unchanged(*index));
        self.pending.retain(|p| unchanged(p.interface));
        if self.phase == Phase::Announced {
            for interface in interfaces.iter().filter(|i| !before.contains(i)) {
                self.announcing.push((interface.index, ANNOUNCEMENTS, now));
            }
        }
        if let Phase::Probing { sent, .. } = self.phase {
            if before.is_empty() {
                // Probing waited for an interface.
                self.phase = Phase::Probing {
                    sent,
                    next: now + self.random_wait(PROBE_WAIT),
                };
            }
        }
        self.interfaces = interfaces;
    }

    /// The TXT record's data now: announced again if it changed.
    pub fn set_txt(&mut self, now: Instant, txt: Vec<u8>) {
        if txt == self.txt {
            return;
        }
        self.txt = txt;
        self.multicast.retain(|(_, key, _)| *key != Key::Text);
        self.announce_everywhere(now);
    }

    /// The host's label now (a reset identity has a new device id): the old records are
    /// withdrawn and the new host name probed.
    pub fn set_host(&mut self, now: Instant, host: &str) -> Vec<Outgoing> {
        if host == self.names.host_base {
            return Vec::new();
        }
        let goodbye = self.goodbye();
        if let Some(name) = Name::new(&[host, "local"]) {
            self.names.host_base = host.to_string();
            self.names.host_number = 1;
            self.names.host = name;
        }
        self.probe_again(now, Duration::ZERO);
        goodbye
    }

    /// When [`Responder::due`] next has something to do.
    pub fn next_due(&self) -> Option<Instant> {
        let probe = match self.phase {
            Phase::Probing { next, .. } if !self.interfaces.is_empty() => Some(next),
            _ => None,
        };
        let announce = self.announcing.iter().map(|(_, _, at)| *at).min();
        let pending = self.pending.iter().map(|p| p.due).min();
        [probe, announce, pending].into_iter().flatten().min()
    }

    /// What is due at `now`: probes, announcements, delayed answers.
    pub fn due(&mut self, now: Instant) -> Vec<Outgoing> {
        let mut out = Vec::new();
        if let Phase::Probing { sent, next } = self.phase {
            if next <= now && !self.interfaces.is_empty() {
                if sent < PROBES {
                    for interface in self.interfaces.clone() {
                        out.extend(self.probe(now, &interface, sent == 0));
                    }
                    self.phase = Phase::Probing {
                        sent: sent + 1,
                        next: now + PROBE_WAIT,
                    };
                } else {
                    self.phase = Phase::Announced;
                    if self.names.number > 1 || self.names.host_number > 1 {
                        log::info!(
                            "HomeKit: announced as \"{}\" on host {}",
                            logged(&self.instance()),
                            logged(&self.names.host.to_string())
                        );
                    }
                    self.announce_everywhere(now);
                }
            }
        }
        let due: Vec<u32> = self
            .announcing
            .iter()
            .filter(|(_, _, at)| *at <= now)
            .map(|(index, _, _)| *index)
            .collect();
        for index in due {
            if let Some(interface) = self.interface(index) {
                let answers =
                    Keys::of(&[Key::Pointer, Key::Service, Key::Text]).union(addresses(&interface));
                let additional = Keys::of(&[Key::InstanceNsec, Key::HostNsec]);
                out.extend(self.multicast(now, &interface, answers, additional, RATE));
            }
            for (i, left, at) in &mut self.announcing {
                if *i == index {
                    *left = left.saturating_sub(1);
                    *at = now + ANNOUNCE_INTERVAL;
                }
            }
            self.announcing.retain(|(_, left, _)| *left > 0);
        }
        // What waited and is due, one answer per interface.
        let mut ready: Vec<(u32, Keys, Keys)> = Vec::new();
        self.pending.retain(|p| {
            if p.due > now {
                return true;
            }
            let (answers, additional) = (p.answers.minus(p.known), p.additional.minus(p.known));
            match ready.iter_mut().find(|(i, _, _)| *i == p.interface) {
                Some((_, a, b)) => {
                    *a = a.union(answers);
                    *b = b.union(additional);
                }
                None => ready.push((p.interface, answers, additional)),
            }
            false
        });
        for (index, answers, additional) in ready {
            if let Some(interface) = self.interface(index) {
                let additional = additional.minus(answers);
                out.extend(self.multicast(now, &interface, answers, additional, RATE));
            }
        }
        out
    }

    /// What a packet that arrived calls for.
    pub fn received(&mut self, now: Instant, datagram: Datagram<'_>) -> Vec<Outgoing> {
        let Some(interface) = self.interface(datagram.interface) else {
            return Vec::new();
        };
        let source = datagram.source;
        let message = match Message::parse(datagram.bytes) {
            Ok(message) => message,
            Err(e) => {
                self.refused(
                    now,
                    source,
                    &format_args!("ignored a malformed packet from {source}: {e}"),
                );
                return Vec::new();
            }
        };
        // Another operation or an error: silently ignored (RFC 6762 §18.3, §18.11).
        if message.opcode() != 0 || message.rcode() != 0 {
            return Vec::new();
        }
        if message.is_response() {
            // Responses from another port than the multicast DNS one are not believed (§6).
            if source.port() == self.mdns_port {
                self.check_response(now, source, &message);
            }
            return Vec::new();
        }
        if !datagram.multicast && !interface.on_link(*source.ip()) {
            self.refused(
                now,
                source,
                &format_args!(
                    "ignored a query sent to this host from {source}, which is not on the \
                     network of the interface it came in on"
                ),
            );
            return Vec::new();
        }
        match self.phase {
            Phase::Probing { .. } => {
                self.check_probe(now, source, &interface, &message);
                Vec::new()
            }
            Phase::Announced => self.answer(now, &interface, &datagram, &message),
        }
    }

    /// The goodbye: every record with TTL 0, on every interface (none before announcing).
    pub fn goodbye(&self) -> Vec<Outgoing> {
        if self.phase != Phase::Announced {
            return Vec::new();
        }
        self.interfaces
            .iter()
            .filter_map(|interface| {
                let answers = Keys::of(&[Key::Pointer, Key::Service, Key::Text])
                    .union(addresses(interface))
                    .iter()
                    .map(|key| Record {
                        ttl: 0,
                        ..self.record(key, interface)
                    })
                    .collect();
                outgoing(
                    To::Multicast(interface.index),
                    Message {
                        flags: wire::RESPONSE | wire::AUTHORITATIVE,
                        answers,
                        ..Message::default()
                    },
                )
            })
            .collect()
    }

    fn interface(&self, index: u32) -> Option<Interface> {
        self.interfaces.iter().find(|i| i.index == index).cloned()
    }

    /// A uniformly random wait below `limit` (xorshift: delays need no secrecy).
    fn random_wait(&mut self, limit: Duration) -> Duration {
        let ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX).max(1);
        Duration::from_millis(self.random_below(ms))
    }

    fn random_below(&mut self, bound: u64) -> u64 {
        let mut x = self.random;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.random = x;
        x % bound.max(1)
    }

    fn random_delay(&mut self, (low, high): (u64, u64)) -> Duration {
        Duration::from_millis(low + self.random_below(high - low + 1))
    }

    fn announce_everywhere(&mut self, now: Instant) {
        if self.phase == Phase::Announced {
            self.announcing = self
                .interfaces
                .iter()
                .map(|i| (i.index, ANNOUNCEMENTS, now))
                .collect();
        }
    }

    /// `key`'s record as hearth sends it on `interface`.
    fn record(&self, key: Key, interface: &Interface) -> Record {
        let (name, rtype, unique, ttl, data) = match key {
            Key::Services => (
                &self.services,
                wire::PTR,
                false,
                TTL_OTHER,
                self.service.as_bytes().to_vec(),
            ),
            Key::Pointer => (
                &self.service,
                wire::PTR,
                false,
                TTL_OTHER,
                self.names.instance.as_bytes().to_vec(),
            ),
            Key::Service => {
                let mut data = vec![0, 0, 0, 0];
                data.extend_from_slice(&self.port.to_be_bytes());
                data.extend_from_slice(self.names.host.as_bytes());
                (&self.names.instance, wire::SRV, true, TTL_HOST, data)
            }
            Key::Text => (
                &self.names.instance,
                wire::TXT,
                true,
                TTL_OTHER,
                self.txt.clone(),
            ),
            Key::Address(i) => {
                let ip = interface.addresses.get(usize::from(i)).map(|(ip, _)| *ip);
                let data = ip.unwrap_or(Ipv4Addr::UNSPECIFIED).octets().to_vec();
                (&self.names.host, wire::A, true, TTL_HOST, data)
            }
            // The types each name has, as NSEC's bitmap (window 0) says them: SRV (33) and
            // TXT (16); A (1).
            Key::InstanceNsec => {
                let mut data = self.names.instance.as_bytes().to_vec();
                data.extend_from_slice(&[0, 5, 0, 0, 0x80, 0, 0x40]);
                (&self.names.instance, wire::NSEC, true, TTL_OTHER, data)
            }
            Key::HostNsec => {
                let mut data = self.names.host.as_bytes().to_vec();
                data.extend_from_slice(&[0, 1, 0x40]);
                (&self.names.host, wire::NSEC, true, TTL_HOST, data)
            }
        };
        Record {
            name: name.clone(),
            rtype,
            rclass: if unique {
                wire::IN | wire::TOP_BIT
            } else {
                wire::IN
            },
            ttl,
            data,
        }
    }

    /// Every record hearth would send on `interface`, with its key.
    fn table(&self, interface: &Interface) -> Vec<(Key, Record)> {
        Keys::of(&[
            Key::Services,
            Key::Pointer,
            Key::Service,
            Key::Text,
            Key::InstanceNsec,
            Key::HostNsec,
        ])
        .union(addresses(interface))
        .iter()
        .map(|k| (k, self.record(k, interface)))
        .collect()
    }

    /// Whether `record` is one of hearth's: on any interface, or sent in the last
    /// [`RECENT`].
    fn is_ours(&self, record: &Record) -> bool {
        let same = |ours: &Record| {
            ours.name.same(&record.name)
                && ours.rtype == record.rtype
                && ours.class() == record.class()
                && ours.same_data(record)
        };
        self.interfaces
            .iter()
            .flat_map(|i| self.table(i))
            .any(|(_, ours)| same(&ours))
            || self.recent.iter().any(|(ours, _)| same(ours))
    }

    fn remember(&mut self, now: Instant, records: impl IntoIterator<Item = Record>) {
        self.recent
            .retain(|(_, at)| now.saturating_duration_since(*at) <= RECENT);
        for record in records {
            if record.rclass & wire::TOP_BIT != 0 && !self.recent.iter().any(|(r, _)| *r == record)
            {
                if self.recent.len() >= MAX_RECENT {
                    self.recent.remove(0);
                }
                self.recent.push((record, now));
            }
        }
    }

    /// The answers to `question` asked on `interface`, and their additional records.
    fn lookup(&self, question: &Question, interface: &Interface) -> (Keys, Keys) {
        let none = (Keys::default(), Keys::default());
        let class = question.class();
        if class != wire::IN && class != CLASS_ANY {
            return none;
        }
        let (name, qtype) = (&question.name, question.qtype);
        let is_ptr = qtype == wire::PTR || qtype == wire::ANY;
        let addresses = addresses(interface);
        let host_records = addresses.with(Key::HostNsec);
        let one = |key| Keys::default().with(key);
        if name.same(&self.service) && is_ptr {
            let additional = Keys::of(&[Key::Service, Key::Text]).union(host_records);
            (one(Key::Pointer), additional)
        } else if name.same(&self.services) && is_ptr {
            (one(Key::Services), Keys::default())
        } else if name.same(&self.names.instance) {
            match qtype {
                wire::SRV => (one(Key::Service), host_records),
                wire::TXT => (one(Key::Text), Keys::default()),
                wire::ANY => (Keys::of(&[Key::Service, Key::Text]), host_records),
                _ => (one(Key::InstanceNsec), Keys::default()),
            }
        } else if name.same(&self.names.host) {
            match qtype {
                wire::A | wire::ANY => (addresses, one(Key::HostNsec)),
                _ => (one(Key::HostNsec), addresses),
            }
        } else {
            none
        }
    }

    /// Answers a query that arrived on `interface`.
    fn answer(
        &mut self,
        now: Instant,
        interface: &Interface,
        datagram: &Datagram<'_>,
        message: &Message,
    ) -> Vec<Outgoing> {
        let source = datagram.source;
        let table = self.table(interface);
        let known = known_answers(&table, &message.answers);
        if message.questions.is_empty() {
            // The rest of a truncated query's known answers (§7.2).
            if let Some(p) = self
                .pending
                .iter_mut()
                .find(|p| p.source == source && p.interface == interface.index)
            {
                p.known = p.known.union(known);
            }
            return Vec::new();
        }
        let legacy = source.port() != self.mdns_port;
        let direct = legacy || !datagram.multicast;
        let probe = message
            .authority
            .iter()
            .any(|r| r.name.same(&self.names.instance) || r.name.same(&self.names.host));
        // What goes by multicast and by unicast: answers, additional records.
        let mut multicast = (Keys::default(), Keys::default());
        let mut unicast = (Keys::default(), Keys::default());
        for question in &message.questions {
            let (answers, additional) = self.lookup(question, interface);
            let additional = additional.minus(known);
            for key in answers.minus(known).iter() {
                // QU: unicast, unless the record has not been multicast here for a quarter of
                // its TTL (then everyone's caches are refreshed too, §5.4).
                let quarter = Duration::from_secs(u64::from(self.record(key, interface).ttl / 4));
                let fresh = self
                    .last_multicast(interface.index, key)
                    .is_some_and(|at| now.saturating_duration_since(at) < quarter);
                let to = if direct || (question.unicast_response() && fresh) {
                    &mut unicast
                } else {
                    &mut multicast
                };
                to.0 = to.0.with(key);
                to.1 = to.1.union(additional);
            }
        }
        let mut out = Vec::new();
        if !unicast.0.is_empty() {
            let on_link = interface.on_link(*source.ip());
            if on_link && self.budget.take(now) {
                let questions = if legacy {
                    message.questions.clone()
                } else {
                    Vec::new()
                };
                let (answers, additional) = (unicast.0, unicast.1.minus(unicast.0));
                let reply = (source, message.id, questions);
                out.extend(self.unicast(now, interface, reply, answers, additional, legacy));
            } else if legacy {
                let why = if on_link {
                    format!("over {UNICAST_PER_SECOND} unicast answers a second")
                } else {
                    "it is not on the network of the interface the query came in on".to_string()
                };
                self.refused(
                    now,
                    source,
                    &format_args!("did not answer a legacy query from {source}: {why}"),
                );
            } else {
                if on_link {
                    self.refused(
                        now,
                        source,
                        &format_args!(
                            "answered {source} by multicast instead of unicast: over \
                             {UNICAST_PER_SECOND} unicast answers a second"
                        ),
                    );
                }
                multicast.0 = multicast.0.union(unicast.0);
                multicast.1 = multicast.1.union(unicast.1);
            }
        }
        let (answers, additional) = (multicast.0, multicast.1.minus(multicast.0));
        if answers.is_empty() {
            return out;
        }
        if answers.iter().any(Key::shared) {
            let delay = self.random_delay(if message.truncated() {
                TRUNCATED_DELAY
            } else {
                SHARED_DELAY
            });
            self.delay(now + delay, interface.index, source, answers, additional);
        } else {
            let rate = if probe { RATE_PROBE_DEFENCE } else { RATE };
            out.extend(self.multicast(now, interface, answers, additional, rate));
        }
        out
    }

    /// Keeps a multicast answer for `due`, sharing one with the same querier's or, when
    /// [`MAX_PENDING`] wait, another's on the same interface.
    fn delay(
        &mut self,
        due: Instant,
        interface: u32,
        source: SocketAddrV4,
        answers: Keys,
        additional: Keys,
    ) {
        let same = self
            .pending
            .iter()
            .position(|p| p.interface == interface && p.source == source);
        let merge = same.or_else(|| {
            (self.pending.len() >= MAX_PENDING)
                .then(|| self.pending.iter().position(|p| p.interface == interface))
                .flatten()
        });
        match merge {
            Some(i) => {
                let p = &mut self.pending[i];
                if p.source != source {
                    // What another querier knows is no reason to hold back this one's answer.
                    p.known = Keys::default();
                }
                p.answers = p.answers.union(answers);
                p.additional = p.additional.union(additional);
            }
            None if self.pending.len() < MAX_PENDING => self.pending.push(Pending {
                interface,
                source,
                due,
                answers,
                additional,
                known: Keys::default(),
            }),
            // As many answers wait on other interfaces: this one is dropped, and the querier
            // asks again.
            None => {}
        }
    }

    /// A multicast response on `interface` with those of `answers` and `additional` that
    /// were not multicast there within `rate`; none if no answer is left.
    fn multicast(
        &mut self,
        now: Instant,
        interface: &Interface,
        answers: Keys,
        additional: Keys,
        rate: Duration,
    ) -> Option<Outgoing> {
        let index = interface.index;
        let allowed = |keys: Keys| {
            keys.iter()
                .filter(|k| {
                    self.last_multicast(index, *k)
                        .is_none_or(|at| now.saturating_duration_since(at) >= rate)
                })
                .fold(Keys::default(), Keys::with)
        };
        let answers = allowed(answers);
        if answers.is_empty() {
            return None;
        }
        let additional = allowed(additional);
        self.multicast
            .retain(|(i, k, _)| *i != index || !answers.union(additional).contains(*k));
        for key in answers.union(additional).iter() {
            self.multicast.push((index, key, now));
        }
        let message = Message {
            flags: wire::RESPONSE | wire::AUTHORITATIVE,
            answers: answers.iter().map(|k| self.record(k, interface)).collect(),
            additional: additional
                .iter()
                .map(|k| self.record(k, interface))
                .collect(),
            ..Message::default()
        };
        self.remember(now, message.records().cloned().collect::<Vec<_>>());
        outgoing(To::Multicast(index), message)
    }

    /// When `key` was last multicast on the interface of `index`.
    fn last_multicast(&self, index: u32, key: Key) -> Option<Instant> {
        self.multicast
            .iter()
            .find(|(i, k, _)| *i == index && *k == key)
            .map(|(_, _, at)| *at)
    }

    /// A unicast response to `to`: a legacy one (§6.7) echoes the questions, says TTLs of at
    /// most 10 s and no cache-flush bits.
    fn unicast(
        &mut self,
        now: Instant,
        interface: &Interface,
        (to, id, questions): (SocketAddrV4, u16, Vec<Question>),
        answers: Keys,
        additional: Keys,
        legacy: bool,
    ) -> Option<Outgoing> {
        let record = |key: Key| {
            let mut record = self.record(key, interface);
            if legacy {
                record.ttl = record.ttl.min(TTL_LEGACY);
                record.rclass &= !wire::TOP_BIT;
            }
            record
        };
        let message = Message {
            id,
            flags: wire::RESPONSE | wire::AUTHORITATIVE,
            questions,
            answers: answers.iter().map(record).collect(),
            additional: additional.iter().map(record).collect(),
            ..Message::default()
        };
        self.remember(now, message.records().cloned().collect::<Vec<_>>());
        outgoing(To::Unicast(to), message)
    }

    /// A probe for both names on `interface` (§8.1): questions of type ANY (the first with the
    /// QU bit), the proposed records in the authority section.
    fn probe(&mut self, now: Instant, interface: &Interface, first: bool) -> Option<Outgoing> {
        let qclass = if first {
            wire::IN | wire::TOP_BIT
        } else {
            wire::IN
        };
        let questions = [&self.names.instance, &self.names.host]
            .into_iter()
            .map(|name| Question {
                name: name.clone(),
                qtype: wire::ANY,
                qclass,
            })
            .collect();
        let mut authority = self.proposed(interface, Owned::Instance);
        authority.extend(self.proposed(interface, Owned::Host));
        let message = Message {
            questions,
            authority,
            ..Message::default()
        };
        self.remember(now, message.authority.clone());
        outgoing(To::Multicast(interface.index), message)
    }

    /// The records hearth proposes for one of its names on `interface`, as a probe carries
    /// them (no cache-flush bit).
    fn proposed(&self, interface: &Interface, which: Owned) -> Vec<Record> {
        let keys = match which {
            Owned::Instance => Keys::of(&[Key::Service, Key::Text]),
            Owned::Host => addresses(interface),
        };
        keys.iter()
            .map(|k| {
                let mut record = self.record(k, interface);
                record.rclass &= !wire::TOP_BIT;
                record
            })
            .collect()
    }

    fn name(&self, which: Owned) -> &Name {
        match which {
            Owned::Instance => &self.names.instance,
            Owned::Host => &self.names.host,
        }
    }

    /// A response from `source`: a conflict if it holds a record of one of hearth's names that
    /// is not hearth's (while probing: of any type; after: of a type hearth has there).
    fn check_response(&mut self, now: Instant, source: SocketAddrV4, message: &Message) {
        let conflict = message.records().find_map(|record| {
            if record.ttl == 0 || record.class() != wire::IN {
                return None;
            }
            let which = [Owned::Instance, Owned::Host]
                .into_iter()
                .find(|w| record.name.same(self.name(*w)))?;
            let counts = match (self.phase, which) {
                (Phase::Probing { .. }, _) => true,
                (Phase::Announced, Owned::Instance) => {
                    matches!(record.rtype, wire::SRV | wire::TXT | wire::NSEC)
                }
                (Phase::Announced, Owned::Host) => matches!(record.rtype, wire::A | wire::NSEC),
            };
            (counts && !self.is_ours(record)).then_some((which, record.rtype))
        });
        if let Some((which, rtype)) = conflict {
            self.conflict(now, source, which, rtype);
        }
    }

    /// A query while probing: if another device probes for one of the names at the same time
    /// with other records, the lexicographically later records win (§8.2); losing, hearth
    /// probes again a second later.
    fn check_probe(
        &mut self,
        now: Instant,
        source: SocketAddrV4,
        interface: &Interface,
        message: &Message,
    ) {
        for which in [Owned::Instance, Owned::Host] {
            let theirs: Vec<&Record> = message
                .authority
                .iter()
                .filter(|r| r.name.same(self.name(which)))
                .collect();
            if theirs.is_empty() || theirs.iter().all(|r| self.is_ours(r)) {
                continue;
            }
            let ours = self.proposed(interface, which);
            if tie_break(&ours, &theirs) == Ordering::Less {
                let name = self.name(which).to_string();
                self.refused(
                    now,
                    source,
                    &format_args!(
                        "{source} is probing for {} at the same time and wins the tie; \
                         probing again in a second",
                        logged(&name)
                    ),
                );
                self.phase = Phase::Probing {
                    sent: 0,
                    next: now + LOST_TIE_WAIT,
                };
                return;
            }
        }
    }

    /// Another device answers for one of hearth's names: while probing, the name is taken and
    /// hearth renames; after announcing, it probes again (and renames if the other still
    /// answers).
    fn conflict(&mut self, now: Instant, source: SocketAddrV4, which: Owned, rtype: u16) {
        self.conflicts
            .retain(|at| now.saturating_duration_since(*at) <= CONFLICT_WINDOW);
        self.conflicts.push(now);
        let was = self.name(which).to_string();
        let what = match self.phase {
            Phase::Probing { .. } => {
                self.rename(which);
                format!(
                    "{source} answers for {} (a record of type {rtype}), so that name is taken: \
                     hearth takes {} instead (set HOMEKIT_NAME to choose another name)",
                    logged(&was),
                    logged(&self.name(which).to_string())
                )
            }
            Phase::Announced => format!(
                "{source} answers for {} too (a record of type {rtype}); probing whether the \
                 name is still hearth's",
                logged(&was)
            ),
        };
        self.refused(now, source, &what);
        self.probe_again(now, Duration::ZERO);
    }

    /// Back to probing, after `wait` and the random wait (or [`CONFLICT_WAIT`] after many
    /// conflicts): nothing is answered or announced meanwhile.
    fn probe_again(&mut self, now: Instant, wait: Duration) {
        let wait = if self.conflicts.len() >= CONFLICT_LIMIT {
            CONFLICT_WAIT
        } else {
            wait + self.random_wait(PROBE_WAIT)
        };
        self.phase = Phase::Probing {
            sent: 0,
            next: now + wait,
        };
        self.pending.clear();
        self.announcing.clear();
    }

    /// The next name after a conflict: the instance `<name> 2`, `<name> 3`, ... (what
    /// HOMEKIT_NAME accepts, shortened to fit a label); the host `<host>-2`, ...
    fn rename(&mut self, which: Owned) {
        match which {
            Owned::Instance => {
                self.names.number = self.names.number.saturating_add(1);
                let name = numbered(&self.names.base, self.names.number);
                self.names.instance = instance_name(&name);
            }
            Owned::Host => {
                self.names.host_number = self.names.host_number.saturating_add(1);
                let label = format!("{}-{}", self.names.host_base, self.names.host_number);
                if let Some(name) = Name::new(&[&label, "local"]) {
                    self.names.host = name;
                }
            }
        }
    }

    fn refused(&mut self, now: Instant, source: SocketAddrV4, what: &dyn fmt::Display) {
        let client = crate::util::client_key(IpAddr::V4(*source.ip()));
        self.refusals.refused(client, now).write(
            (module_path!(), log::Level::Info),
            "HomeKit mDNS",
            what,
        );
    }
}

/// `base` with ` number` after it, shortened to fit one label, as HOMEKIT_NAME accepts it
/// (`crate::config::parse_homekit_name`); `hearth <number>` if that cannot be.
fn numbered(base: &str, number: u32) -> String {
    let suffix = format!(" {number}");
    let mut cut = base.len().min(63usize.saturating_sub(suffix.len()));
    while !base.is_char_boundary(cut) {
        cut -= 1;
    }
    let kept = base[..cut].trim_end_matches(|c: char| !c.is_alphanumeric());
    crate::config::parse_homekit_name(&format!("{kept}{suffix}"))
        .unwrap_or_else(|_| format!("hearth{suffix}"))
}

/// `<label>._hap._tcp.local.` (the label cut to 63 bytes if it is longer).
fn instance_name(label: &str) -> Name {
    let mut cut = label.len().min(63);
    while !label.is_char_boundary(cut) {
        cut -= 1;
    }
    let label = if cut == 0 { "hearth" } else { &label[..cut] };
    Name::new(&[label, "_hap", "_tcp", "local"]).unwrap_or_else(service_name)
}

fn service_name() -> Name {
    Name::new(&["_hap", "_tcp", "local"]).unwrap_or_else(Name::root)
}

fn services_name() -> Name {
    Name::new(&["_services", "_dns-sd", "_udp", "local"]).unwrap_or_else(Name::root)
}

fn addresses(interface: &Interface) -> Keys {
    (0..interface.addresses.len().min(MAX_ADDRESSES))
        .filter_map(|i| u8::try_from(i).ok())
        .fold(Keys::default(), |keys, i| keys.with(Key::Address(i)))
}

/// Those of hearth's records (`table`) the querier listed as known with at least half their
/// TTL left (§7.1).
fn known_answers(table: &[(Key, Record)], answers: &[Record]) -> Keys {
    let mut known = Keys::default();
    for answer in answers {
        for (key, ours) in table {
            if ours.name.same(&answer.name)
                && ours.rtype == answer.rtype
                && answer.class() == wire::IN
                && ours.same_data(answer)
                && answer.ttl >= ours.ttl / 2
            {
                known = known.with(*key);
            }
        }
    }
    known
}

/// §8.2: the records of each side sorted by class, type and data (names uncompressed), then
/// compared in turn; the first difference decides, and a side with records left over is the
/// later. `Less`: theirs are later, hearth loses.
fn tie_break(ours: &[Record], theirs: &[&Record]) -> Ordering {
    let sorted = |records: Vec<&Record>| {
        let mut keys: Vec<(u16, u16, Vec<u8>)> = records
            .into_iter()
            .map(|r| (r.class(), r.rtype, r.data.clone()))
            .collect();
        keys.sort();
        keys
    };
    sorted(ours.iter().collect()).cmp(&sorted(theirs.to_vec()))
}

/// `message` encoded for `to`, unless it outgrew a packet (a legacy query's questions echoed).
fn outgoing(to: To, message: Message) -> Option<Outgoing> {
    let packet = message.encode();
    (packet.len() <= wire::MAX_PACKET).then_some(Outgoing { to, packet })
}

#[cfg(test)]
mod tests;
