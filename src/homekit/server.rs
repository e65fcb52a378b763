//! HAP's listener: its own `TcpListener` (HAP's encrypted framing and unsolicited EVENT
//! messages do not fit the HTTP edge of the other ports), a thread per controller connection
//! ([`super::connection`]), and one thread that sends EVENT messages when the accessory side
//! says something changed.
//!
//! Bounded like the other ports: [`Limits`] caps connections per client address and in all
//! (a home has a handful of controllers: phones, tablets, a home hub), a request's head and
//! body, the time a connection may take to complete pair-verify, and the time a verified one
//! may stay silent; writes give up after [`Limits::send_timeout`]. One over a connection count
//! is closed at once, unread.
//!
//! The identity is watched: when a controller's pairing goes (removed through `/pairings`,
//! or `hearth homekit reset`), its open sessions are closed.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Shutdown as Direction, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crossbeam_channel::{never, select};
use parking_lot::Mutex;

use super::Attributes;
use super::connection::{self, Conn};
use crate::hap::Identity;
use crate::hap::pair_setup::PairSetup;
use crate::util::clock::Clock;
use crate::util::shutdown::Shutdown;

/// Stack of a connection's thread: it runs pair-setup's 3072-bit arithmetic and the accessory
/// side's handlers.
const CONNECTION_STACK: usize = 512 * 1024;
const SMALL_STACK: usize = 128 * 1024;

/// The listener's bounds.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Open connections from one client address (IPv6: its /64).
    pub per_address: usize,
    /// Open connections in all.
    pub total: usize,
    /// Bytes of a request's head.
    pub head: usize,
    /// Bytes of a request's body.
    pub body: usize,
    /// From the accept to a completed pair-verify (pair-setup included: a person may type the
    /// code between its steps).
    pub unverified: Duration,
    /// Connections not (yet) verified, from one address and in all: a neighbour that never
    /// verifies holds at most these, and the other slots stay for paired controllers'
    /// sessions, which such a neighbour cannot crowd out. (Per address it is as many as any
    /// connections: a controller that finds the accessory's id changed, after a reset, leaves
    /// its failed attempts open until their deadline; aiohomekit leaves four.)
    pub unverified_per_address: usize,
    pub unverified_total: usize,
    /// How long a verified connection may send nothing. Controllers keep their connection open
    /// to hear EVENTs and reconnect when it closes.
    pub idle: Duration,
    /// A write to a controller that stopped reading gives up after this.
    pub send_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_address: 8,
            total: 32,
            head: 8 * 1024,
            body: 64 * 1024,
            unverified: Duration::from_secs(120),
            unverified_per_address: 8,
            unverified_total: 12,
            idle: Duration::from_secs(24 * 3600),
            send_timeout: Duration::from_secs(10),
        }
    }
}

/// What the listener's threads share.
pub(super) struct Shared {
    pub attributes: Arc<dyn Attributes>,
    pub identity: Arc<Identity>,
    pub setup: PairSetup,
    pub limits: Limits,
    pub shutdown: Shutdown,
    pub conns: Mutex<HashMap<u64, Arc<Conn>>>,
    counts: Mutex<Counts>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    next_id: AtomicU64,
}

/// A running listener.
pub struct Handle {
    addr: SocketAddr,
    accept: JoinHandle<()>,
    events: JoinHandle<()>,
    shared: Arc<Shared>,
}

impl Handle {
    /// The address it listens on (the port chosen, for a bind to port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// After the shutdown signal: waits for the accept loop, closes every connection and waits
    /// for their threads and the event thread.
    pub fn join(self) {
        let _ = self.accept.join();
        for conn in self.shared.conns.lock().values() {
            let _ = conn.stream.shutdown(Direction::Both);
        }
        let threads = std::mem::take(&mut *self.shared.threads.lock());
        for t in threads {
            let _ = t.join();
        }
        let _ = self.events.join();
    }
}

/// Listens on `bind` with the default [`Limits`] until `shutdown` is triggered; pair-setup
/// reads the time from `clock` (the server's).
pub fn start(
    attributes: Arc<dyn Attributes>,
    identity: Arc<Identity>,
    bind: SocketAddr,
    clock: Clock,
    shutdown: &Shutdown,
) -> io::Result<Handle> {
    start_with(
        attributes,
        identity,
        bind,
        Limits::default(),
        clock,
        shutdown,
    )
}

/// [`start`] with other limits (tests shorten the deadlines).
pub fn start_with(
    attributes: Arc<dyn Attributes>,
    identity: Arc<Identity>,
    bind: SocketAddr,
    limits: Limits,
    clock: Clock,
    shutdown: &Shutdown,
) -> io::Result<Handle> {
    let listener = TcpListener::bind(bind)?;
    let addr = listener.local_addr()?;
    let shared = Arc::new(Shared {
        attributes,
        identity,
        setup: PairSetup::new(clock),
        limits,
        shutdown: shutdown.clone(),
        conns: Mutex::new(HashMap::new()),
        counts: Mutex::new(Counts::default()),
        threads: Mutex::new(Vec::new()),
        next_id: AtomicU64::new(1),
    });
    let socket = listener.try_clone()?;
    // shutdown() on a listening socket makes a blocked accept() fail at once (Linux).
    shutdown.on_trigger(move || {
        let _ = rustix::net::shutdown(&socket, rustix::net::Shutdown::Both);
    });
    let events = thread::Builder::new()
        .name("homekit-events".into())
        .stack_size(CONNECTION_STACK)
        .spawn({
            let shared = Arc::clone(&shared);
            move || send_events(&shared)
        })?;
    let accept = thread::Builder::new()
        .name("homekit-accept".into())
        .stack_size(SMALL_STACK)
        .spawn({
            let shared = Arc::clone(&shared);
            move || accept_loop(&listener, &shared)
        })?;
    Ok(Handle {
        addr,
        accept,
        events,
        shared,
    })
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    let mut backoff = Duration::ZERO;
    loop {
        let accepted = listener.accept();
        if shared.shutdown.is_triggered() {
            return;
        }
        let (stream, peer) = match accepted {
            Ok(pair) => {
                backoff = Duration::ZERO;
                pair
            }
            Err(e) => {
                // Out of descriptors or memory: the connection waits in the backlog.
                log::warn!("HomeKit: accept failed: {e}");
                backoff = (backoff * 2).clamp(Duration::from_millis(100), Duration::from_secs(1));
                if shared.shutdown.wait_timeout(backoff) {
                    return;
                }
                continue;
            }
        };
        let client = crate::util::client_key(peer.ip());
        if !take_slot(shared, client) {
            log::warn!("HomeKit: a connection from {client} refused: too many open");
            let _ = stream.shutdown(Direction::Both);
            continue;
        }
        shared.threads.lock().retain(|t| !t.is_finished());
        if let Err(e) = start_connection(shared, stream, client) {
            log::warn!("HomeKit: no thread for a connection: {e}");
            release_slot(shared, client, false);
        }
    }
}

fn start_connection(shared: &Arc<Shared>, stream: TcpStream, client: IpAddr) -> io::Result<()> {
    stream.set_nodelay(true)?;
    stream.set_write_timeout(Some(shared.limits.send_timeout))?;
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let conn = Arc::new(Conn::new(id, stream.try_clone()?)?);
    shared.conns.lock().insert(id, Arc::clone(&conn));
    let thread = thread::Builder::new()
        .name("homekit-conn".into())
        .stack_size(CONNECTION_STACK)
        .spawn({
            let shared = Arc::clone(shared);
            move || {
                connection::serve(&shared, &conn, stream, client);
                shared.setup.abandon(id);
                shared.conns.lock().remove(&id);
                release_slot(&shared, client, conn.controller().is_some());
            }
        });
    match thread {
        Ok(t) => {
            shared.threads.lock().push(t);
            Ok(())
        }
        Err(e) => {
            shared.conns.lock().remove(&id);
            Err(e)
        }
    }
}

/// Open connections by client address: all of them, and those not verified.
#[derive(Default)]
pub(super) struct Counts {
    open: HashMap<IpAddr, usize>,
    unverified: HashMap<IpAddr, usize>,
}

fn take_slot(shared: &Shared, client: IpAddr) -> bool {
    let limits = &shared.limits;
    let mut counts = shared.counts.lock();
    let total: usize = counts.open.values().sum();
    let unverified: usize = counts.unverified.values().sum();
    let mine = counts.open.get(&client).copied().unwrap_or(0);
    let mine_unverified = counts.unverified.get(&client).copied().unwrap_or(0);
    if mine >= limits.per_address
        || total >= limits.total
        || mine_unverified >= limits.unverified_per_address
        || unverified >= limits.unverified_total
    {
        return false;
    }
    *counts.open.entry(client).or_default() += 1;
    *counts.unverified.entry(client).or_default() += 1;
    true
}

fn decrement(map: &mut HashMap<IpAddr, usize>, client: IpAddr) {
    if let Some(n) = map.get_mut(&client) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            map.remove(&client);
        }
    }
}

/// A connection of `client` completed pair-verify: it no longer counts as unverified.
pub(super) fn verified(shared: &Shared, client: IpAddr) {
    decrement(&mut shared.counts.lock().unverified, client);
}

fn release_slot(shared: &Shared, client: IpAddr, verified: bool) {
    let mut counts = shared.counts.lock();
    decrement(&mut counts.open, client);
    if !verified {
        decrement(&mut counts.unverified, client);
    }
}

/// The event thread: on each change the accessory side reports, an EVENT to each verified
/// connection whose subscriptions it touches; on each change of the identity, the sessions of
/// controllers no longer paired are closed.
fn send_events(shared: &Shared) {
    let mut changes = shared.attributes.watch();
    let mut pairings = shared.identity.watch();
    let stop = shared.shutdown.receiver();
    loop {
        select! {
            recv(stop) -> _ => return,
            recv(changes) -> got => match got {
                Ok(()) => {
                    // Many changes at once make one round.
                    while changes.try_recv().is_ok() {}
                    for conn in snapshot(shared) {
                        connection::send_event(shared, &conn);
                    }
                }
                Err(_) => changes = never(),
            },
            recv(pairings) -> got => match got {
                Ok(()) => {
                    while pairings.try_recv().is_ok() {}
                    close_unpaired(shared);
                }
                Err(_) => pairings = never::<()>(),
            },
        }
    }
}

fn snapshot(shared: &Shared) -> Vec<Arc<Conn>> {
    shared.conns.lock().values().cloned().collect()
}

fn close_unpaired(shared: &Shared) {
    for conn in snapshot(shared) {
        if let Some(controller) = conn.controller() {
            if shared.identity.pairing(&controller).is_none() {
                // Reading stops; an answer being written (the removal's own) still goes out.
                let _ = conn.stream.shutdown(Direction::Read);
            }
        }
    }
}
