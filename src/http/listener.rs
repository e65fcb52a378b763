//! One listener of hearth's own HTTP/1.1 edge: the accept loop, the per-address and total
//! connection counts, the threads that serve connections, and the bound on handlers running at
//! once. [`super::connection`] serves one connection's requests; [`super::head`] and
//! [`super::body`] read them under their limits; [`super::respond`] writes the answers.
//!
//! Design decisions:
//! - **Our own edge, not tiny_http.** tiny_http 0.12 buffers a request head without limit, has
//!   no read timeout, spawns a thread per connection without bound and allocates an unread
//!   body's whole declared length when a request is dropped; working around that took a scan
//!   of `/proc/self/fd` and `unsafe`. The edge here owns its sockets, so every bound is a
//!   plain read with a timeout. Heads are parsed by `httparse` (hyper's parser, fuzzed).
//! - **A thread per connection**, named `<port>-conn`, 128 KiB of stack, which reads requests
//!   and writes answers; kept for [`SPARE_WAIT`] after its connection ends to take the next
//!   one (thermostats open a connection per PUT; a rendezvous channel hands a new connection
//!   to a waiting thread, or a thread is started). A parked reply (a held subscribe, an event
//!   stream) takes the socket itself and the thread moves on: held connections cost no thread.
//! - **Handlers run on a fixed pool** of `HTTP_WORKERS` named threads per listener (`<port>-N`,
//!   256 KiB of stack), fed by a channel, each handler inside `catch_unwind`; each port has
//!   its own pool, so a flood on one cannot starve the other. Measured against the other
//!   choice, a permit taken by the connection's own thread around the handler: that saved the
//!   hand-off (`GET /status` 0.012 against about 0.02 ms of server CPU) but every connection
//!   thread then ran handlers and touched their deep stacks, which glibc keeps cached after the
//!   thread ends: 36 MB of RSS with 1,000 held thermostats, against 23 MB with this pool
//!   (21 MB with tiny_http; `scripts/bench.sh` on a loaded 2-core machine).
//! - **Connections are counted per client address** (`MAX_CONNECTIONS_PER_CLIENT`, 64 by
//!   default; behind the TLS front the relayed client's) and in all ([`MAX_CONNECTIONS`] per
//!   listener), parked ones included since each holds a descriptor. One over a count is
//!   answered 503 by the accept loop at once (a non-blocking write to a fresh socket) and
//!   closed unread.
//! - **Bodies are budgeted per client address**: [`BODY_BUDGET_PER_CLIENT`] bytes of bodies
//!   being read at once (the declared length, or a chunked body's limit, reserved before
//!   reading); one that does not fit is answered 503 unread, so one address cannot hold
//!   gigabytes of memory with stalled bodies.
//! - **Every wait has a deadline**: a head must be complete `HEAD_TIMEOUT_SECONDS` after the
//!   accept (or after its first byte, on a kept-alive connection), no wait for a head's bytes
//!   lasts longer than `IDLE_TIMEOUT_SECONDS` (so a quiet keep-alive connection is closed
//!   then), a body must be complete within `BODY_READ_TIMEOUT`'s 30 s, and writes give up
//!   after [`SEND_TIMEOUT`] (2 s on a parked connection).
//! - **Refusals close with a lingering close**: the answer, then our side shut for writing,
//!   then at most [`LINGER_BYTES`] discarded for at most [`LINGER_TIME`], so the client reads
//!   the answer before the connection closes.
//! - **The accept loop never ends on an error**: out of descriptors it backs off (100 ms,
//!   doubling to 1 s) and the connection waits in the backlog.

use std::collections::HashMap;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use parking_lot::{Condvar, Mutex};
use rustix::net::sockopt;

use super::respond::{self, Answer};
use super::tls::Peers;
use super::{Method, Reply, Request, Response, Service};
use crate::metrics::StatusCounts;
use crate::util::clock::Clock;
use crate::util::refusals::RefusalLog;
use crate::util::shutdown::Shutdown;

pub use super::head::HEAD_LIMIT;

/// Writes to a client that stopped reading give up after this long.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a write to a parked connection (a held subscribe, an event stream) may block
/// before the connection is given up. Pushes are small and the kernel buffers a few hundred
/// KB, so a write blocks only when the client has stopped reading altogether.
pub const PARKED_SEND_TIMEOUT: Duration = Duration::from_secs(2);
/// Open connections per listener, from all clients together, parked ones included: 1,000
/// thermostats' held subscribes (the benchmark's fleet) and a PUT connection for each at the
/// same moment fit, and both ports together stay within half of the systemd unit's
/// `LimitNOFILE=8192`.
pub const MAX_CONNECTIONS: usize = 2048;
/// Request body bytes being read at once from one client address, across its connections:
/// two of the largest bodies (an 8 MiB upload). A body's declared length (a chunked body's
/// limit) is reserved before it is read and released once its handler has answered; a request
/// whose body does not fit is answered 503 unread.
pub const BODY_BUDGET_PER_CLIENT: usize = 16 * 1024 * 1024;
/// A connection's thread waits this long for another connection before it ends.
const SPARE_WAIT: Duration = Duration::from_secs(5);
/// A connection thread's stack. Its size is address space, not memory: a thread touches some
/// 16 KB of it. But glibc keeps the stacks of ended threads for reuse, up to 40 MB of address
/// space, each with its touched pages (its TLS and thread descriptor) still resident: with
/// 128 KB stacks that is some 310 stacks, 5 MB, after a burst of connections (1,000
/// thermostats arriving); with 1 MB stacks, 40 of them, 0.6 MB (docs/performance.md: 1,000
/// held subscribes about 4.5 MB lower). A 32-bit
/// target keeps 128 KB: there 2 x 2,048 connections' stacks must fit in 3 GB of address space.
pub(crate) const CONNECTION_STACK: usize = if cfg!(target_pointer_width = "64") {
    1024 * 1024
} else {
    128 * 1024
};
const WORKER_STACK: usize = 256 * 1024;
const ACCEPT_STACK: usize = 128 * 1024;
/// A refused client's bytes discarded after the answer, at most.
pub const LINGER_BYTES: usize = 1024 * 1024;
/// ... for at most this long.
pub const LINGER_TIME: Duration = Duration::from_secs(2);

/// How the listener treats its clients.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Handler threads (`HTTP_WORKERS`).
    pub workers: usize,
    /// A request body still arriving after this long is abandoned and its connection closed.
    pub body_timeout: Duration,
    /// A request head still arriving this long after the accept (or after its first byte, on
    /// a kept-alive connection) is abandoned and its connection closed.
    pub head_timeout: Duration,
    /// A connection waiting this long for a request's bytes is closed.
    pub idle_timeout: Duration,
    /// Open connections from one client address.
    pub per_client: usize,
    /// Behind a TLS front: the real client of each relayed connection.
    pub peers: Option<Arc<Peers>>,
    /// The server's clock, which paces the log of refused connections (socket deadlines are
    /// real time).
    pub clock: Clock,
    /// Every answer's status is counted here (for `/metrics`): one atomic add per request.
    pub answered: Arc<StatusCounts>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            workers: 4,
            body_timeout: Duration::from_secs(30),
            head_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            per_client: 64,
            peers: None,
            clock: Clock::system(),
            answered: Arc::default(),
        }
    }
}

pub struct Listener {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<Arc<Live>>,
    workers: Vec<JoinHandle<()>>,
}

/// What a listener's threads share.
pub(super) struct Shared {
    pub name: &'static str,
    pub service: Arc<dyn Service>,
    pub limits: Limits,
    jobs: Sender<Work>,
    /// The server's signal: once triggered, the accept loop ends and connections end after
    /// the request in hand.
    shutdown: Shutdown,
    /// Connections being served (not parked), to end them when stopping.
    open: Mutex<HashMap<u64, Arc<TcpStream>>>,
    next_id: AtomicU64,
    /// Body bytes reserved per client address ([`BODY_BUDGET_PER_CLIENT`]).
    bodies: Mutex<HashMap<IpAddr, usize>>,
}

impl Shared {
    pub fn stopping(&self) -> bool {
        self.shutdown.is_triggered()
    }

    /// Runs the service's handler for `request` on one of the listener's workers, inside
    /// `catch_unwind` (`Err`: it panicked, or no worker was left to run it).
    pub fn handle(&self, request: Request) -> thread::Result<Reply> {
        let (reply, answer) = crossbeam_channel::bounded(1);
        let job = Work::Handle(Job { request, reply });
        if self.jobs.send(job).is_err() {
            return Err(Box::new("no worker"));
        }
        answer.recv().unwrap_or_else(|_| Err(Box::new("no worker")))
    }

    /// Records a connection being served until the returned entry is dropped; `None` when the
    /// listener is stopping.
    pub fn enter(self: &Arc<Self>, stream: &Arc<TcpStream>) -> Option<OpenEntry> {
        let mut open = self.open.lock();
        if self.stopping() {
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        open.insert(id, Arc::clone(stream));
        Some(OpenEntry(Arc::clone(self), id))
    }
}

/// Bytes of a body being read (and handled), reserved in the client's budget until dropped.
pub(super) struct BodyReservation<'a>(&'a Shared, IpAddr, usize);

impl Shared {
    /// Reserves `bytes` of `client`'s body budget; `None` if they do not fit.
    pub fn reserve_body(&self, client: IpAddr, bytes: usize) -> Option<BodyReservation<'_>> {
        let mut bodies = self.bodies.lock();
        let used = bodies.entry(client).or_insert(0);
        if bytes > BODY_BUDGET_PER_CLIENT - *used {
            if *used == 0 {
                bodies.remove(&client);
            }
            return None;
        }
        *used += bytes;
        Some(BodyReservation(self, client, bytes))
    }
}

impl Drop for BodyReservation<'_> {
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

pub(super) struct OpenEntry(Arc<Shared>, u64);

impl Drop for OpenEntry {
    fn drop(&mut self) {
        self.0.open.lock().remove(&self.1);
    }
}

/// What a worker is given.
enum Work {
    Handle(Job),
    Stop,
}

/// A request for a worker, and where its reply goes.
struct Job {
    request: Request,
    reply: Sender<thread::Result<Reply>>,
}

/// A worker: runs handlers until told to stop. The request is moved into `catch_unwind`, so
/// whatever it holds is dropped inside it too.
fn work(jobs: &Receiver<Work>, service: &dyn Service) {
    while let Ok(Work::Handle(Job { request, reply })) = jobs.recv() {
        let outcome = panic::catch_unwind(AssertUnwindSafe(move || service.handle(request)));
        let _ = reply.send(outcome);
    }
}

/// Open connections per client address and in all, shared by a listener's accept loop or a TLS
/// front's (a slot lives as long as its connection, or its relay).
pub(super) type Counts = Arc<Mutex<Tally>>;

#[derive(Default)]
pub(super) struct Tally {
    by_address: HashMap<IpAddr, usize>,
    total: usize,
    /// Which refusals are logged.
    refusals: RefusalLog,
}

/// Logs a connection refused at a count, at most once per address per
/// minute ([`RefusalLog`]: a flood cannot fill the journal).
pub(super) fn log_refusal(
    counts: &Counts,
    clock: &Clock,
    name: &str,
    client: SocketAddr,
    why: &str,
) {
    let Some(unlogged) = counts
        .lock()
        .refusals
        .refused(crate::util::client_key(client.ip()), clock.now())
    else {
        return;
    };
    if unlogged == 0 {
        log::info!("{name} port: refused a connection from {client}: {why}");
    } else {
        log::info!(
            "{name} port: refused a connection from {client}: {why} ({unlogged} more from {} not logged in the last minute)",
            client.ip()
        );
    }
}

/// One counted connection; it stops counting when dropped (with the parked writer, for a
/// parked connection).
pub(super) struct Slot(Counts, IpAddr);

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.0.lock();
        counts.total = counts.total.saturating_sub(1);
        if let Some(n) = counts.by_address.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                counts.by_address.remove(&self.1);
            }
        }
    }
}

/// Takes a slot for a connection from `client`, or says which count is full (`total` of all
/// clients' connections, `per_client` of this one's).
pub(super) fn take_slot(
    counts: &Counts,
    client: IpAddr,
    per_client: usize,
    total: usize,
) -> Result<Slot, &'static str> {
    let mut c = counts.lock();
    if c.total >= total {
        return Err("Too many connections");
    }
    let n = c.by_address.entry(client).or_insert(0);
    if *n >= per_client {
        return Err("Too many connections from this address");
    }
    *n += 1;
    c.total += 1;
    Ok(Slot(Arc::clone(counts), client))
}

/// An accepted connection on its way to a thread.
pub(super) struct Accepted {
    pub stream: TcpStream,
    /// The client: the peer, or behind the TLS front the client it relays.
    pub client: SocketAddr,
    pub at: Instant,
    pub slot: Slot,
}

/// Threads serving connections, including spare ones; stopping waits for them all.
#[derive(Default)]
pub(super) struct Live {
    count: Mutex<usize>,
    changed: Condvar,
}

impl Live {
    fn add(&self) {
        *self.count.lock() += 1;
    }

    fn done(&self) {
        *self.count.lock() -= 1;
        self.changed.notify_all();
    }

    /// Counts a live thread until the returned guard is dropped (also on unwinding, so a
    /// panic cannot leave [`Listener::join`] waiting for a thread that is gone).
    pub(super) fn enter(self: &Arc<Self>) -> LiveGuard {
        self.add();
        LiveGuard(Arc::clone(self))
    }

    pub(super) fn wait_none(&self) {
        let mut count = self.count.lock();
        while *count > 0 {
            self.changed.wait(&mut count);
        }
    }
}

/// One live connection thread, counted until dropped.
pub(super) struct LiveGuard(Arc<Live>);

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.0.done();
    }
}

impl Listener {
    /// Serves `service` on a bound listener until `shutdown` is triggered (then
    /// [`Listener::join`] waits for it). The accept loop does not die: errors are logged and
    /// waited out.
    pub fn start(
        name: &'static str,
        listener: TcpListener,
        limits: Limits,
        service: Arc<dyn Service>,
        shutdown: Shutdown,
    ) -> io::Result<Listener> {
        set_send_timeout(&listener, SEND_TIMEOUT)?;
        set_no_delay(&listener)?;
        let addr = listener.local_addr()?;
        let (jobs, queue) = crossbeam_channel::unbounded::<Work>();
        let mut workers = Vec::new();
        for i in 0..limits.workers.max(1) {
            let (queue, service) = (queue.clone(), Arc::clone(&service));
            let worker = thread::Builder::new()
                .name(format!("{name}-{i}"))
                .stack_size(WORKER_STACK)
                .spawn(move || work(&queue, &*service))?;
            workers.push(worker);
        }
        let shared = Arc::new(Shared {
            name,
            service,
            jobs,
            limits,
            shutdown: shutdown.clone(),
            open: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            bodies: Mutex::new(HashMap::new()),
        });
        let socket = listener.try_clone()?;
        // shutdown() on a listening socket makes a blocked accept() fail at once (Linux).
        shutdown.on_trigger(move || {
            let _ = rustix::net::shutdown(&socket, rustix::net::Shutdown::Both);
        });
        let accept = thread::Builder::new()
            .name(format!("{name}-accept"))
            .stack_size(ACCEPT_STACK)
            .spawn({
                let shared = Arc::clone(&shared);
                move || accept_loop(&listener, &shared)
            })?;
        Ok(Listener {
            addr,
            shared,
            accept,
            workers,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// After the shutdown signal: waits for the accept loop to end, lets requests being
    /// handled finish and be answered, closes the connections waiting for a request, and waits
    /// for every connection thread and worker to end. Parked connections are the hub's to end.
    pub fn join(self) {
        if let Ok(live) = self.accept.join() {
            for stream in self.shared.open.lock().values() {
                let _ = stream.shutdown(std::net::Shutdown::Read);
            }
            live.wait_none();
        }
        for _ in &self.workers {
            let _ = self.shared.jobs.send(Work::Stop);
        }
        for worker in self.workers {
            let _ = worker.join();
        }
    }
}

/// `TCP_NODELAY` on the listening socket, which accepted sockets inherit on Linux: an answer
/// is one write, and a held subscribe's chunks must not wait for the client's delayed ACK.
fn set_no_delay(listener: &TcpListener) -> io::Result<()> {
    Ok(sockopt::set_tcp_nodelay(listener, true)?)
}

/// `SO_SNDTIMEO` on the listening socket, which accepted sockets inherit on Linux.
fn set_send_timeout(listener: &TcpListener, timeout: Duration) -> io::Result<()> {
    Ok(sockopt::set_socket_timeout(
        listener,
        sockopt::Timeout::Send,
        Some(timeout),
    )?)
}

/// Accepts until the listener stops; returns the count of live connection threads for
/// [`Listener::join`] to wait on.
fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) -> Arc<Live> {
    let live = Arc::new(Live::default());
    let counts = Counts::default();
    // A rendezvous: a send succeeds only if a spare thread is waiting for a connection.
    let (spare_tx, spare_rx) = crossbeam_channel::bounded::<Accepted>(0);
    let mut backoff = Duration::ZERO;
    loop {
        let accepted = listener.accept();
        if shared.stopping() {
            return live;
        }
        let (stream, peer) = match accepted {
            Ok(pair) => {
                backoff = Duration::ZERO;
                pair
            }
            Err(e) => {
                backoff = accept_failed(&e, shared.name, backoff);
                continue;
            }
        };
        let client = shared
            .limits
            .peers
            .as_ref()
            .and_then(|p| p.client_of(peer))
            .unwrap_or(peer);
        let slot = match take_slot(
            &counts,
            crate::util::client_key(client.ip()),
            shared.limits.per_client,
            MAX_CONNECTIONS,
        ) {
            Ok(slot) => slot,
            Err(why) => {
                log_refusal(&counts, &shared.limits.clock, shared.name, client, why);
                refuse_at_once(stream, &shared.service.refusal(Method::Other, "", 503, why));
                continue;
            }
        };
        let conn = Accepted {
            stream,
            client,
            at: Instant::now(),
            slot,
        };
        let conn = match spare_tx.try_send(conn) {
            Ok(()) => continue,
            Err(TrySendError::Full(conn) | TrySendError::Disconnected(conn)) => conn,
        };
        if let Err(conn) = start_thread(shared, &live, conn, spare_rx.clone()) {
            refuse_at_once(
                conn.stream,
                &shared
                    .service
                    .refusal(Method::Other, "", 503, "Too many connections"),
            );
        }
    }
}

/// Logs a failed accept and waits before the next; returns the next wait. Out of descriptors
/// (or memory) the wait grows from 100 ms to 1 s: the connection stays in the backlog until
/// some close.
fn accept_failed(e: &io::Error, name: &str, backoff: Duration) -> Duration {
    let scarce = matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    );
    if !scarce {
        log::debug!("{name} port: accept failed: {e}");
        thread::sleep(Duration::from_millis(10));
        return Duration::ZERO;
    }
    let wait = (backoff * 2).clamp(Duration::from_millis(100), Duration::from_secs(1));
    if backoff.is_zero() {
        log::warn!("{name} port: accept failed ({e}); retrying until descriptors free up");
    }
    thread::sleep(wait);
    wait
}

/// Starts a thread for `conn` that then serves further connections handed over on `spare`;
/// gives the connection back if no thread could be started.
fn start_thread(
    shared: &Arc<Shared>,
    live: &Arc<Live>,
    conn: Accepted,
    spare: Receiver<Accepted>,
) -> Result<(), Accepted> {
    // Dropped with the closure: when the thread ends (or unwinds), or if it cannot start.
    let counted = live.enter();
    let handoff: Arc<Mutex<Option<Accepted>>> = Arc::new(Mutex::new(Some(conn)));
    let spawned = thread::Builder::new()
        .name(format!("{}-conn", shared.name))
        .stack_size(CONNECTION_STACK)
        .spawn({
            let (shared, handoff) = (Arc::clone(shared), Arc::clone(&handoff));
            move || {
                let _counted = counted;
                let mut next = handoff.lock().take();
                drop(handoff);
                while let Some(conn) = next.take() {
                    // A panic here (outside the handler's own catch_unwind) ends only this
                    // connection: its socket and slot are dropped, the thread keeps serving.
                    let served = panic::catch_unwind(AssertUnwindSafe(|| {
                        super::connection::serve(&shared, conn)
                    }));
                    if served.is_err() {
                        log::error!(
                            "{} port: serving a connection panicked; it was closed",
                            shared.name
                        );
                    }
                    if shared.stopping() {
                        break;
                    }
                    next = spare.recv_timeout(SPARE_WAIT).ok();
                }
            }
        });
    match spawned {
        Ok(_) => Ok(()),
        Err(e) => {
            log::warn!("could not start a connection thread: {e}");
            handoff.lock().take().map_or(Ok(()), Err)
        }
    }
}

/// Answers a connection that is not served (a 503) without blocking: a fresh socket takes a
/// small write at once. Bytes the client already sent are discarded first, so closing does
/// not reset the connection under the answer.
fn refuse_at_once(stream: TcpStream, response: &Response) {
    let _ = stream.set_nonblocking(true);
    let _ = (&stream).write_all(&respond::encode(response, Answer::REFUSAL));
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut scratch = [0u8; 4096];
    for _ in 0..16 {
        match (&stream).read(&mut scratch) {
            Ok(n) if n > 0 => continue,
            _ => break,
        }
    }
}

/// After a refusal: our side is shut for writing (the client sees the answer's end), then
/// what the client still sends is discarded until it closes, [`LINGER_BYTES`] have come or
/// [`LINGER_TIME`] has passed. Closing at once would reset the connection, which can destroy
/// the answer before the client reads it.
pub(super) fn linger(stream: &TcpStream) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let deadline = Instant::now() + LINGER_TIME;
    let mut scratch = [0u8; 8192];
    let mut discarded = 0;
    while discarded < LINGER_BYTES {
        match super::head::read_by(stream, &mut scratch, deadline) {
            Ok(0) => return,
            Ok(n) => discarded += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A service whose body limit panics for `/boom` (outside the handler's catch_unwind).
    struct Panicky;

    impl Service for Panicky {
        fn body_limit(&self, path: &str) -> usize {
            assert!(path != "/boom", "a body limit that panics");
            super::super::BODY_LIMIT
        }

        fn handle(&self, _request: Request) -> Reply {
            Reply::Full(Response::error(200, "fine"))
        }
    }

    fn ask(addr: SocketAddr, target: &str) -> String {
        let mut sock = TcpStream::connect(addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let request = format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        sock.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        let _ = sock.read_to_string(&mut answer);
        answer
    }

    /// A panic on a connection's thread outside a handler closes only that connection: others
    /// are served, and stopping the listener does not wait for the thread forever.
    #[test]
    fn a_panic_serving_a_connection_closes_it_and_stop_still_returns() {
        let socket = TcpListener::bind("127.0.0.1:0").unwrap();
        let shutdown = Shutdown::new();
        let listener = Listener::start(
            "test",
            socket,
            Limits::default(),
            Arc::new(Panicky),
            shutdown.clone(),
        )
        .unwrap();
        let addr = listener.addr();
        for _ in 0..3 {
            assert_eq!(ask(addr, "/boom"), "", "closed unanswered");
            assert!(ask(addr, "/fine").starts_with("HTTP/1.1 200 "));
        }
        let (done, stopped) = crossbeam_channel::bounded(1);
        thread::spawn(move || {
            shutdown.trigger();
            listener.join();
            let _ = done.send(());
        });
        assert!(
            stopped.recv_timeout(Duration::from_secs(30)).is_ok(),
            "Listener::join did not return"
        );
    }
}
