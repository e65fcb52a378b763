//! The one way in: every listener (the device port, the control port, either over TLS, and
//! HomeKit's) admits its connections here, and nowhere else.
//!
//! - **Counts.** Open connections per client address (an IPv6 client by its /64) and in all,
//!   connections that hold a thread (all but the parked ones: held subscribes, event streams)
//!   and connections that are *idle* (waiting for their client: an HTTP connection reading a
//!   request, a HomeKit connection not yet verified), each under its bound ([`Bounds`]).
//! - **Who gives way when the listener is full.** Over a per-address bound a connection is
//!   refused. When a total is reached, the address holding the most connections gives way: its
//!   oldest idle connection is closed to admit the new one, as long as it holds more than the
//!   newcomer's address (or is that address); else the newcomer is refused. So connections an
//!   attacker holds never shut out a client that holds none, and a flood turns over the
//!   flooder's own connections.
//! - **Body budgets**: the request bytes being read at once from one address.
//! - **Refusal log**: a refused or closed connection is logged by the crate's one
//!   [`RefusalLog`]: once per address per minute, the next line counting what went unlogged
//!   meanwhile, and a few dozen lines a minute in all (then one line counting the rest), so a
//!   flood cannot fill the journal.
//! - **Sizing** ([`Budget`]): at start the soft descriptor limit is raised to the hard one, and
//!   the listeners' totals are sized from what the process got and from the tasks it may start
//!   (`RLIMIT_NPROC`, the cgroup's `pids.max`, the kernel's `threads-max`), keeping headroom
//!   for everything else the server opens and starts, so that no number of connections can
//!   exhaust descriptors or threads.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::util::clock::Clock;
use crate::util::refusals::RefusalLog;

/// Descriptors kept for everything but the listeners' connections: the listening sockets, the
/// store's journal and snapshots, history and energy files, the admin socket and its client,
/// MQTT, outbound calls (weather, a scan's 32 probes, alerts), mDNS, the watchdog's probes.
pub const RESERVED_DESCRIPTORS: usize = 128;
/// Tasks kept for every thread but the listeners' connection threads: the server's own (about
/// 25), a scan's 32, weather fetches, MQTT's client, mDNS.
pub const RESERVED_TASKS: usize = 96;
/// The least a port is given, however small the limits.
const LEAST_PER_PORT: usize = 16;
/// On a 32-bit machine, connection threads' stacks must fit in the address space beside the
/// heap: at most this much of it.
const STACK_ADDRESS_SPACE_32: usize = 1 << 30;

/// A listener's bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Open connections from one client address.
    pub per_address: usize,
    /// Open connections in all (each one descriptor), parked ones included.
    pub total: usize,
    /// Connections holding a thread (all but the parked ones).
    pub threaded: usize,
    /// Idle connections in all, and from one address.
    pub idle: usize,
    pub idle_per_address: usize,
}

impl Bounds {
    /// `total` connections, `per_address` from one address, each holding a thread until parked,
    /// with no bound of their own on idle ones.
    pub fn new(per_address: usize, total: usize, threaded: usize) -> Bounds {
        Bounds {
            per_address,
            total,
            threaded: threaded.min(total),
            idle: total,
            idle_per_address: per_address,
        }
    }
}

/// Why a connection was not admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Its address holds as many as it may.
    PerAddress,
    /// The listener is full, and no address holding more (with an idle connection) could give
    /// way.
    Full,
}

impl Refusal {
    /// The message of the 503 an HTTP listener answers.
    pub fn message(self) -> &'static str {
        match self {
            Refusal::PerAddress => "Too many connections from this address",
            Refusal::Full => "Too many connections",
        }
    }
}

/// What a connection is doing, as admission sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for its client (an HTTP request being read or awaited; a HomeKit connection not
    /// verified): it may be closed to admit another.
    Idle,
    /// Being served (a handler, an answer; a verified HomeKit session).
    Busy,
    /// Parked: a held subscribe or event stream, which holds a descriptor and no thread.
    Parked,
}

/// A listener's admission: its counts, its bounds, its body budgets and its refusal log.
pub struct Admission {
    /// "device port", "control port", "HomeKit": how the log names the listener.
    name: &'static str,
    bounds: Bounds,
    clock: Clock,
    table: Mutex<Table>,
    log: Mutex<RefusalLog>,
    bodies: Mutex<HashMap<IpAddr, usize>>,
    body_budget: usize,
    refused: AtomicU64,
    trimmed: AtomicU64,
}

#[derive(Default)]
struct Table {
    entries: HashMap<u64, Entry>,
    holders: HashMap<IpAddr, Holder>,
    /// Addresses with an idle connection, by how many connections each holds.
    candidates: BTreeSet<(usize, IpAddr)>,
    total: usize,
    threaded: usize,
    idle: usize,
    next_id: u64,
}

struct Entry {
    key: IpAddr,
    phase: Phase,
    socket: Arc<TcpStream>,
}

#[derive(Default)]
struct Holder {
    count: usize,
    /// Its idle connections, oldest (lowest id) first.
    idle: BTreeSet<u64>,
}

/// Counts of a listener's connections now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub open: usize,
    pub threaded: usize,
    pub idle: usize,
    pub addresses: usize,
    /// Since start: connections refused, and idle ones closed to admit another.
    pub refused: u64,
    pub trimmed: u64,
}

impl Table {
    fn holder(&mut self, key: IpAddr) -> &mut Holder {
        self.holders.entry(key).or_default()
    }

    /// Updates `key`'s place among the candidates after its counts changed (`before`: its
    /// count and whether it had an idle connection before the change).
    fn reindex(&mut self, key: IpAddr, before: (usize, bool)) {
        if before.1 {
            self.candidates.remove(&(before.0, key));
        }
        match self.holders.get(&key) {
            Some(h) if h.count == 0 => {
                self.holders.remove(&key);
            }
            Some(h) if !h.idle.is_empty() => {
                self.candidates.insert((h.count, key));
            }
            _ => {}
        }
    }

    fn state_of(&self, key: IpAddr) -> (usize, bool) {
        self.holders
            .get(&key)
            .map_or((0, false), |h| (h.count, !h.idle.is_empty()))
    }

    /// Adds a connection of `key` in `phase`; its id.
    fn insert(&mut self, key: IpAddr, phase: Phase, socket: &Arc<TcpStream>) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let before = self.state_of(key);
        self.entries.insert(
            id,
            Entry {
                key,
                phase,
                socket: Arc::clone(socket),
            },
        );
        self.total += 1;
        self.count_phase(phase, 1);
        let holder = self.holder(key);
        holder.count += 1;
        if phase == Phase::Idle {
            holder.idle.insert(id);
        }
        self.reindex(key, before);
        id
    }

    /// Removes connection `id`; its entry, if it was still counted.
    fn remove(&mut self, id: u64) -> Option<Entry> {
        let entry = self.entries.remove(&id)?;
        let before = self.state_of(entry.key);
        self.total -= 1;
        self.count_phase(entry.phase, -1);
        let holder = self.holder(entry.key);
        holder.count -= 1;
        holder.idle.remove(&id);
        self.reindex(entry.key, before);
        Some(entry)
    }

    fn set(&mut self, id: u64, phase: Phase) {
        let Some(entry) = self.entries.get_mut(&id) else {
            return;
        };
        let (was, key) = (entry.phase, entry.key);
        if was == phase {
            return;
        }
        entry.phase = phase;
        let before = self.state_of(key);
        self.count_phase(was, -1);
        self.count_phase(phase, 1);
        let holder = self.holder(key);
        if phase == Phase::Idle {
            holder.idle.insert(id);
        } else {
            holder.idle.remove(&id);
        }
        self.reindex(key, before);
    }

    fn count_phase(&mut self, phase: Phase, by: isize) {
        let add = |n: &mut usize| *n = n.saturating_add_signed(by);
        match phase {
            Phase::Idle => {
                add(&mut self.idle);
                add(&mut self.threaded);
            }
            Phase::Busy => add(&mut self.threaded),
            Phase::Parked => {}
        }
    }

    /// The idle connection to close so that `key` may have one more, when a total is reached:
    /// the oldest idle connection of the address holding the most, if it holds more than `key`;
    /// else `key`'s own oldest idle one; else none.
    fn victim(&self, key: IpAddr) -> Option<u64> {
        let mine = self.holders.get(&key);
        let count = mine.map_or(0, |h| h.count);
        let biggest = self.candidates.iter().next_back();
        if let Some(&(most, holder)) = biggest {
            if most > count {
                return self.holders.get(&holder)?.idle.first().copied();
            }
        }
        mine?.idle.first().copied()
    }
}

/// A connection's place in its listener's counts, until dropped.
pub struct Ticket {
    admission: Arc<Admission>,
    id: u64,
}

impl Ticket {
    /// What the connection is doing now.
    pub fn set(&self, phase: Phase) {
        self.admission.table.lock().set(self.id, phase);
    }

    pub fn admission(&self) -> &Arc<Admission> {
        &self.admission
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.admission.table.lock().remove(self.id);
    }
}

impl fmt::Debug for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ticket({}, {})", self.admission.name, self.id)
    }
}

impl Admission {
    /// A listener's admission. `body_budget`: request bytes being read at once per address.
    pub fn new(name: &'static str, bounds: Bounds, body_budget: usize, clock: Clock) -> Admission {
        Admission {
            name,
            bounds,
            clock,
            table: Mutex::new(Table::default()),
            log: Mutex::new(RefusalLog::default()),
            bodies: Mutex::new(HashMap::new()),
            body_budget,
            refused: AtomicU64::new(0),
            trimmed: AtomicU64::new(0),
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn bounds(&self) -> &Bounds {
        &self.bounds
    }

    /// Admits a connection from `client` on `socket`, idle, or says why not (and logs it). When
    /// a total is reached, the idle connection of the address holding the most is shut down
    /// and no longer counted (its thread ends it), and this one takes its place.
    pub fn admit(
        self: &Arc<Self>,
        client: SocketAddr,
        socket: &Arc<TcpStream>,
    ) -> Result<Ticket, Refusal> {
        let key = crate::util::client_key(client.ip());
        let b = &self.bounds;
        let mut table = self.table.lock();
        let (mine, mine_idle) = table
            .holders
            .get(&key)
            .map_or((0, 0), |h| (h.count, h.idle.len()));
        if mine >= b.per_address || mine_idle >= b.idle_per_address {
            drop(table);
            self.refused(client, Refusal::PerAddress);
            return Err(Refusal::PerAddress);
        }
        let full = table.total >= b.total || table.threaded >= b.threaded || table.idle >= b.idle;
        let mut trimmed = None;
        if full {
            match table.victim(key) {
                Some(id) => trimmed = table.remove(id),
                None => {
                    drop(table);
                    self.refused(client, Refusal::Full);
                    return Err(Refusal::Full);
                }
            }
        }
        let id = table.insert(key, Phase::Idle, socket);
        drop(table);
        if let Some(victim) = trimmed {
            // Counted before its client can see the end, so whoever sees it sees the count.
            self.trimmed.fetch_add(1, Ordering::Relaxed);
            // Its thread sees the connection end and goes on to the next.
            let _ = victim.socket.shutdown(Shutdown::Both);
            self.note(victim.key, &format_args!(
                "closed the oldest idle connection of {}, which held the most, to admit {client}",
                victim.key
            ));
        }
        Ok(Ticket {
            admission: Arc::clone(self),
            id,
        })
    }

    fn refused(&self, client: SocketAddr, why: Refusal) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        self.note(
            crate::util::client_key(client.ip()),
            &format_args!("refused a connection from {client}: {}", why.message()),
        );
    }

    /// Logs `what` about `client`, at most once per address per minute (the line after says how
    /// many were not logged), within the log's line budget ([`RefusalLog`]).
    pub fn note(&self, client: IpAddr, what: &dyn fmt::Display) {
        let key = crate::util::client_key(client);
        let lines = self.log.lock().refused(key, self.clock.now());
        lines.write((module_path!(), log::Level::Info), self.name, what);
    }

    /// Counts now.
    pub fn counts(&self) -> Counts {
        let t = self.table.lock();
        Counts {
            open: t.total,
            threaded: t.threaded,
            idle: t.idle,
            addresses: t.holders.len(),
            refused: self.refused.load(Ordering::Relaxed),
            trimmed: self.trimmed.load(Ordering::Relaxed),
        }
    }

    /// Shuts the reading side of every connection that is not parked (a stopping listener's
    /// connections end after the request in hand); parked ones are their holders' to end.
    pub fn stop_reading(&self) {
        for e in self.table.lock().entries.values() {
            if e.phase != Phase::Parked {
                let _ = e.socket.shutdown(Shutdown::Read);
            }
        }
    }

    /// Shuts every connection down, parked ones too.
    pub fn close_all(&self) {
        for e in self.table.lock().entries.values() {
            let _ = e.socket.shutdown(Shutdown::Both);
        }
    }

    /// Reserves `bytes` of `client`'s body budget; `None` if they do not fit.
    pub fn reserve_body(self: &Arc<Self>, client: IpAddr, bytes: usize) -> Option<BodyReservation> {
        let key = crate::util::client_key(client);
        let mut bodies = self.bodies.lock();
        let used = bodies.entry(key).or_insert(0);
        if bytes > self.body_budget.saturating_sub(*used) {
            if *used == 0 {
                bodies.remove(&key);
            }
            return None;
        }
        *used += bytes;
        Some(BodyReservation(Arc::clone(self), key, bytes))
    }
}

/// Bytes of a body being read (and handled), reserved in its address's budget until dropped.
pub struct BodyReservation(Arc<Admission>, IpAddr, usize);

impl Drop for BodyReservation {
    fn drop(&mut self) {
        let mut bodies = self.0.bodies.lock();
        if let Some(used) = bodies.get_mut(&self.1) {
            *used = used.saturating_sub(self.2);
            if *used == 0 {
                bodies.remove(&self.1);
            }
        }
    }
}

/// Lets the kernel queue as many connections for `listener` as it allows any listener
/// (`net.core.somaxconn`, 4,096 by default; Rust's `bind` asks for 128) until they are accepted.
/// A flood holds every connection it can: when a port is full, each one accepted turns over
/// another of the flooder's, which it opens again, so its connections beyond what the port
/// holds wait in this queue. With 128 places the queue stays full and a newcomer's SYN is
/// dropped, to be sent again a second later; with room for the flood, the newcomer takes its
/// turn behind it, a few milliseconds.
pub fn widen_backlog(listener: &std::net::TcpListener) -> std::io::Result<()> {
    // Linux: a second listen() on a listening socket changes its backlog; the kernel lowers
    // what is asked to somaxconn.
    rustix::net::listen(listener, i32::MAX)?;
    Ok(())
}

/// What the process may open and start, found at start (descriptors after raising the soft
/// limit to the hard one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    /// The soft descriptor limit now, and what it was before it was raised.
    pub descriptors: usize,
    pub raised_from: Option<usize>,
    /// Tasks (threads) the process may still start, and which limit says so; `None`: no limit
    /// could be read.
    pub tasks: Option<(usize, &'static str)>,
}

/// The listeners' bounds, sized from a [`Budget`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sizing {
    pub device: Bounds,
    pub control: Bounds,
}

impl Budget {
    /// Raises the soft descriptor limit to the hard one and reads the task limits.
    pub fn measure() -> Budget {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let nofile = getrlimit(Resource::Nofile);
        let soft = nofile.current.unwrap_or(u64::MAX);
        // An unlimited hard limit is what the kernel allows a process at most.
        let hard = nofile
            .maximum
            .unwrap_or_else(|| read_number("/proc/sys/fs/nr_open").unwrap_or(soft));
        let mut raised_from = None;
        let mut descriptors = soft;
        if hard > soft {
            let raised = Rlimit {
                current: Some(hard),
                maximum: nofile.maximum,
            };
            match setrlimit(Resource::Nofile, raised) {
                Ok(()) => {
                    raised_from = Some(to_usize(soft));
                    descriptors = hard;
                }
                Err(e) => log::warn!(
                    "could not raise the descriptor limit from {soft} to {hard} ({e}); sizing \
                     connections for {soft}"
                ),
            }
        }
        Budget {
            descriptors: to_usize(descriptors),
            raised_from,
            tasks: task_limit(),
        }
    }

    /// The device and control ports' bounds: the descriptors and tasks left after
    /// [`RESERVED_DESCRIPTORS`], [`RESERVED_TASKS`] and what `homekit` connections take (each a
    /// descriptor and a thread), three quarters to the device port (thermostats hold a
    /// connection each) and a quarter to the control port; `per_address` from each address;
    /// `max_connections` (`MAX_CONNECTIONS`) lowers a port's total.
    pub fn size(
        &self,
        per_address: usize,
        max_connections: Option<usize>,
        homekit: usize,
        stack: usize,
    ) -> Sizing {
        let descriptors = self
            .descriptors
            .saturating_sub(RESERVED_DESCRIPTORS + homekit);
        let mut tasks = self
            .tasks
            .map_or(usize::MAX, |(t, _)| t)
            .saturating_sub(RESERVED_TASKS + homekit);
        if cfg!(target_pointer_width = "32") {
            tasks = tasks.min(STACK_ADDRESS_SPACE_32 / stack.max(1));
        }
        // Each port keeps one thread for accepting.
        let split = |n: usize| {
            let device = n / 4 * 3;
            (device, n - device)
        };
        let (device_total, control_total) = split(descriptors);
        let (device_threads, control_threads) = split(tasks.saturating_sub(2));
        let bounds = |total: usize, threads: usize| {
            let total = max_connections.map_or(total, |m| m.min(total));
            Bounds::new(
                per_address,
                total.max(LEAST_PER_PORT),
                threads.max(LEAST_PER_PORT),
            )
        };
        Sizing {
            device: bounds(device_total, device_threads),
            control: bounds(control_total, control_threads),
        }
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} descriptors", self.descriptors)?;
        if let Some(from) = self.raised_from {
            write!(f, " (soft limit raised from {from})")?;
        }
        match self.tasks {
            Some((n, why)) => write!(f, ", {n} tasks ({why})"),
            None => write!(f, ", no task limit found"),
        }
    }
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

fn read_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Threads this process now runs.
fn own_threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(1, |d| d.count())
}

/// The tasks the process may still start, and which limit is the smallest: `RLIMIT_NPROC`
/// (not for root, which it does not bind), the cgroup's `pids.max` (less what else runs in it)
/// and the kernel's `threads-max`.
fn task_limit() -> Option<(usize, &'static str)> {
    let own = own_threads();
    let mut limits: Vec<(usize, &'static str)> = Vec::new();
    if !rustix::process::getuid().is_root() {
        if let Some(n) = rustix::process::getrlimit(rustix::process::Resource::Nproc).current {
            limits.push((to_usize(n).saturating_sub(own), "RLIMIT_NPROC"));
        }
    }
    if let Some(n) = cgroup_pids_left() {
        limits.push((n, "the cgroup's pids.max"));
    }
    if let Some(n) = read_number("/proc/sys/kernel/threads-max") {
        limits.push((to_usize(n).saturating_sub(own), "kernel.threads-max"));
    }
    limits.into_iter().min_by_key(|(n, _)| *n)
}

/// What the cgroups this process is in still allow it to start (`pids.max` less
/// `pids.current`, the smallest along the path to the root), where readable.
fn cgroup_pids_left() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut dirs = Vec::new();
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.is_empty() {
            dirs.push(format!("/sys/fs/cgroup{path}"));
        } else if controllers.split(',').any(|c| c == "pids") {
            dirs.push(format!("/sys/fs/cgroup/pids{path}"));
        }
    }
    let mut least: Option<usize> = None;
    for dir in dirs {
        let mut dir = std::path::PathBuf::from(dir.trim_end_matches('/'));
        loop {
            let max = std::fs::read_to_string(dir.join("pids.max")).ok();
            let current = read_number(&dir.join("pids.current").to_string_lossy());
            if let (Some(max), Some(current)) = (max, current) {
                if let Ok(max) = max.trim().parse::<u64>() {
                    let left = to_usize(max.saturating_sub(current));
                    least = Some(least.map_or(left, |l| l.min(left)));
                }
            }
            if !dir.pop() || !dir.starts_with("/sys/fs/cgroup") {
                break;
            }
        }
    }
    least
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::clock::ManualClock;
    use std::net::TcpListener;
    use std::time::Duration;

    fn sockets(n: usize) -> (TcpListener, Vec<(Arc<TcpStream>, TcpStream)>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let pairs = (0..n)
            .map(|_| {
                let client = TcpStream::connect(addr).unwrap();
                let (server, _) = listener.accept().unwrap();
                (Arc::new(server), client)
            })
            .collect();
        (listener, pairs)
    }

    fn from(last: u8) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, last], 40000))
    }

    fn closed(client: &TcpStream) -> bool {
        use std::io::Read;
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        matches!((&*client).read(&mut [0u8; 1]), Ok(0) | Err(_))
    }

    fn open(client: &TcpStream) -> bool {
        client.set_nonblocking(true).unwrap();
        let open = matches!(client.peek(&mut [0u8; 1]), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        client.set_nonblocking(false).unwrap();
        open
    }

    /// With the total reached, a new address is admitted by closing the oldest idle connection
    /// of the address holding the most; one holding as many or fewer than the newcomer is never
    /// touched; an address that is itself the biggest turns over its own oldest; over the
    /// per-address bound a connection is refused.
    #[test]
    fn the_address_holding_the_most_gives_way() {
        let clock = ManualClock::at(0).clock();
        let a = Arc::new(Admission::new("test", Bounds::new(6, 8, 8), 0, clock));
        let (_l, socks) = sockets(12);
        let mut tickets = Vec::new();
        // .2 holds 6, .3 holds 2: full.
        for (i, (s, _)) in socks.iter().take(8).enumerate() {
            let who = if i < 6 { 2 } else { 3 };
            tickets.push(a.admit(from(who), s).unwrap());
        }
        assert_eq!(a.counts().open, 8);
        // A seventh from .2 is over its own bound.
        assert_eq!(
            a.admit(from(2), &socks[8].0).unwrap_err(),
            Refusal::PerAddress
        );
        // .4 holds none: .2's oldest is closed for it.
        let t4 = a.admit(from(4), &socks[8].0).unwrap();
        assert!(closed(&socks[0].1));
        assert!(socks[1..8].iter().all(|(_, c)| open(c)));
        assert_eq!((a.counts().open, a.counts().trimmed), (8, 1));
        // Busy and parked connections are never closed: .2's next idle one is.
        tickets[1].set(Phase::Busy);
        tickets[2].set(Phase::Parked);
        let t5 = a.admit(from(5), &socks[9].0).unwrap();
        assert!(closed(&socks[3].1));
        assert!(open(&socks[1].1) && open(&socks[2].1));
        // .3 (2) against .2 (4): .2 gives way.
        let t3 = a.admit(from(3), &socks[10].0).unwrap();
        assert!(closed(&socks[4].1));
        // .2 now holds 3 and .3 holds 3: .3 is as big as any, so its own oldest goes.
        let t3b = a.admit(from(3), &socks[11].0).unwrap();
        assert!(closed(&socks[6].1));
        assert!(open(&socks[5].1) && open(&socks[7].1));
        // Nobody idle bigger than .4 and .4 has nothing idle: refused.
        for t in [&t3, &t3b, &t4, &t5] {
            t.set(Phase::Busy);
        }
        for t in &tickets {
            t.set(Phase::Busy);
        }
        let (_l2, more) = sockets(1);
        assert_eq!(a.admit(from(4), &more[0].0).unwrap_err(), Refusal::Full);
        assert_eq!(a.counts().refused, 2);
        // Dropping tickets frees their places (a closed one was no longer counted).
        drop(tickets);
        assert_eq!(a.counts().open, 4);
    }

    /// HomeKit's unverified connections: 12 at most, 8 from an address; two addresses holding
    /// them all do not keep a third out.
    #[test]
    fn idle_connections_have_their_own_bound() {
        let clock = ManualClock::at(0).clock();
        let bounds = Bounds {
            per_address: 8,
            total: 32,
            threaded: 32,
            idle: 12,
            idle_per_address: 8,
        };
        let a = Arc::new(Admission::new("HomeKit", bounds, 0, clock));
        let (_l, socks) = sockets(15);
        let held: Vec<Ticket> = socks[..12]
            .iter()
            .enumerate()
            .map(|(i, (s, _))| a.admit(from(if i < 8 { 2 } else { 3 }), s).unwrap())
            .collect();
        let phone = a.admit(from(9), &socks[12].0).unwrap();
        assert!(closed(&socks[0].1));
        // Verified, it no longer counts as idle, and cannot be closed for another: .3 takes the
        // place it left, and the next from .2 (the biggest) turns over .2's own oldest.
        phone.set(Phase::Busy);
        let _three = a.admit(from(3), &socks[13].0).unwrap();
        let _again = a.admit(from(2), &socks[14].0).unwrap();
        assert!(closed(&socks[1].1));
        assert!(open(&socks[12].1));
        assert_eq!(a.counts().idle, 12);
        drop(held);
    }

    #[test]
    fn ports_are_sized_from_what_is_left() {
        let budget = Budget {
            descriptors: 1024,
            raised_from: None,
            tasks: Some((4096, "the cgroup's pids.max")),
        };
        let s = budget.size(64, None, 32, 1 << 20);
        // 1024 - 128 - 32 = 864: 648 and 216.
        assert_eq!((s.device.total, s.control.total), (648, 216));
        assert_eq!((s.device.threaded, s.control.threaded), (648, 216));
        let budget = Budget {
            descriptors: 8192,
            raised_from: None,
            tasks: Some((4096, "the cgroup's pids.max")),
        };
        let s = budget.size(64, Some(1000), 32, 1 << 20);
        // Tasks: 4096 - 96 - 32 - 2 = 3966: 2973 and 993.
        assert_eq!((s.device.total, s.device.threaded), (1000, 1000));
        assert_eq!((s.control.total, s.control.threaded), (1000, 993));
        let tiny = Budget {
            descriptors: 64,
            raised_from: None,
            tasks: None,
        };
        assert_eq!(
            tiny.size(64, None, 32, 1 << 20).device.total,
            LEAST_PER_PORT
        );
    }
}
