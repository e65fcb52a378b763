//! One listener of hearth's own HTTP/1.1 edge: the threads that accept and serve its
//! connections, each admitted by [`super::admission`]. [`super::connection`] serves one
//! connection's requests; [`super::head`] and [`super::body`] read them under their limits;
//! [`super::respond`] writes the answers; [`super::tls`] is the stream with `CERT_DIR`.
//!
//! Design decisions:
//! - **Our own edge, not tiny_http.** tiny_http 0.12 buffers a request head without limit, has
//!   no read timeout, spawns a thread per connection without bound and allocates an unread
//!   body's whole declared length when a request is dropped; working around that took a scan
//!   of `/proc/self/fd` and `unsafe`. The edge here owns its sockets, so every bound is a
//!   plain read with a timeout. Heads are parsed by `httparse` (hyper's parser, fuzzed).
//! - **One hand-off on a request's way.** The listener's connection threads (`<port>-conn`)
//!   take turns at `accept`: the one the kernel wakes admits the connection and reads its
//!   requests itself, if another thread is left accepting; if none is, it hands the connection
//!   to a thread started for it and goes on accepting, so a burst of connections (1,000
//!   thermostats booting) is accepted as fast as it comes. A thread whose connection ends goes
//!   back to accepting; one left accepting for [`SPARE_WAIT`] ends, if another accepts. A
//!   request read is handed to one of the port's workers, which runs its handler and writes
//!   the answer itself: one wake-up of another thread per request, where there were three for
//!   a new connection (the accept loop, a connection thread, a worker, and back) and two on a
//!   kept-alive one (each such wake-up costs about 0.1 ms of CPU on a VM whose vCPUs are
//!   scheduled apart). A parked reply (a held subscribe, an event stream) takes the socket and
//!   the thread moves on: held connections cost no thread.
//! - **Handlers run on a fixed pool** of `HTTP_WORKERS` named threads per listener (`<port>-N`,
//!   256 KiB of stack), fed by a channel, each handler inside `catch_unwind`; each port has
//!   its own pool, so a flood on one cannot starve the other. Measured against the other
//!   choice, the connection's own thread running the handler under a permit: that saved the
//!   last hand-off (server CPU per `GET /status` 0.022 against 0.035 ms at the base of this
//!   change), but 1,000 held thermostats then took 33–40 MB against 21 MB, as in issue 34
//!   (36 against 23 MB): their long-lived state was allocated by a thousand threads, across
//!   every one of glibc's arenas and among their transient buffers, and stayed scattered
//!   after the boot (docs/performance.md).
//! - **Admission, bounds and refusals are [`super::admission`]'s**: connections per client
//!   address and in all (sized at start from the process's limits), the threads serving them
//!   (at most `threaded + 1`: one more to accept), the per-address body budget and the log of
//!   refusals. One over a per-address count is answered 503 at once (a non-blocking write to a
//!   fresh socket) and closed unread; with a total reached, the address holding the most gives
//!   way.
//! - **Every wait has a deadline**: a head (and with TLS the handshake before it) must be
//!   complete `HEAD_TIMEOUT_SECONDS` after the accept (or after its first byte, on a kept-alive
//!   connection), no wait for a head's bytes lasts longer than `IDLE_TIMEOUT_SECONDS` (so a
//!   quiet keep-alive connection is closed then), a body must be complete within
//!   `BODY_READ_TIMEOUT`'s 30 s, and writes give up after [`SEND_TIMEOUT`] (2 s on a parked
//!   connection).
//! - **Refusals close with a lingering close**: the answer, then our side shut for writing,
//!   then at most [`LINGER_BYTES`] discarded for at most [`LINGER_TIME`], so the client reads
//!   the answer before the connection closes.
//! - **Accepting never ends on an error**: out of descriptors it backs off (100 ms, doubling
//!   to 1 s) and the connection waits in the backlog.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Condvar, Mutex};
use rustix::net::sockopt;

use super::admission::{Admission, Bounds, Refusal, Ticket};
use super::connection::Job;
use super::respond::{self, Answer};
use super::tls::Stream;
use super::{Method, Reply, Request, Response, Service};
use crate::metrics::StatusCounts;
use crate::util::clock::Clock;
use crate::util::shutdown::Shutdown;

pub use super::head::HEAD_LIMIT;

/// Writes to a client that stopped reading give up after this long.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a write to a parked connection (a held subscribe, an event stream) may block
/// before the connection is given up. Pushes are small and the kernel buffers a few hundred
/// KB, so a write blocks only when the client has stopped reading altogether.
pub const PARKED_SEND_TIMEOUT: Duration = Duration::from_secs(2);
/// Request body bytes being read at once from one client address, across its connections:
/// two of the largest bodies (an 8 MiB upload). A body's declared length (a chunked body's
/// limit) is reserved before it is read and released once its handler has answered; a request
/// whose body does not fit is answered 503 unread.
pub const BODY_BUDGET_PER_CLIENT: usize = 16 * 1024 * 1024;
/// A listener's connections when nothing sized them (a handler served by [`super::serve`]).
pub const DEFAULT_CONNECTIONS: usize = 1024;
/// A thread left accepting this long ends, if another is accepting.
const SPARE_WAIT: Duration = Duration::from_secs(5);
/// A connection thread's stack. Its size is address space, not memory: a thread touches some
/// 16 KB of it. But glibc keeps the stacks of ended threads for reuse, up to 40 MB of address
/// space, each with its touched pages (its TLS and thread descriptor) still resident: with
/// 128 KB stacks that is some 310 stacks, 5 MB, after a burst of connections (1,000
/// thermostats arriving); with 1 MB stacks, 40 of them, 0.6 MB (docs/performance.md: 1,000
/// held subscribes about 4.5 MB lower). A 32-bit target keeps 128 KB: there the connections'
/// stacks must fit in the address space, which the sizing bounds
/// ([`super::admission::Budget::size`]).
pub(crate) const CONNECTION_STACK: usize = if cfg!(target_pointer_width = "64") {
    1024 * 1024
} else {
    128 * 1024
};
const WORKER_STACK: usize = 256 * 1024;
/// A refused client's bytes discarded after the answer, at most.
pub const LINGER_BYTES: usize = 1024 * 1024;
/// ... for at most this long.
pub const LINGER_TIME: Duration = Duration::from_secs(2);

/// How the listener treats its clients.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Handlers running at once (`HTTP_WORKERS`).
    pub workers: usize,
    /// A request body still arriving after this long is abandoned and its connection closed.
    pub body_timeout: Duration,
    /// A request head (with TLS, the handshake and the first head) still arriving this long
    /// after the accept (or after its first byte, on a kept-alive connection) is abandoned and
    /// its connection closed.
    pub head_timeout: Duration,
    /// A connection waiting this long for a request's bytes is closed.
    pub idle_timeout: Duration,
    /// Open connections from one client address.
    pub per_client: usize,
    /// Open connections in all, and those being served (each a thread); [`Budget`]
    /// (super::admission::Budget) sizes them for the server's ports.
    pub max_connections: usize,
    pub max_threads: usize,
    /// With `CERT_DIR`: TLS on every connection.
    pub tls: Option<Arc<rustls::ServerConfig>>,
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
            max_connections: DEFAULT_CONNECTIONS,
            max_threads: DEFAULT_CONNECTIONS,
            tls: None,
            clock: Clock::system(),
            answered: Arc::default(),
        }
    }
}

impl Limits {
    /// The admission bounds these limits give.
    pub fn bounds(&self) -> Bounds {
        Bounds::new(self.per_client, self.max_connections, self.max_threads)
    }
}

/// A running listener.
pub struct Listener {
    addr: SocketAddr,
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

/// What a listener's threads share.
pub(super) struct Shared {
    pub name: &'static str,
    pub service: Arc<dyn Service>,
    pub limits: Limits,
    pub admission: Arc<Admission>,
    socket: TcpListener,
    jobs: Sender<Work>,
    threads: Mutex<Threads>,
    threads_changed: Condvar,
    /// The server's signal: once triggered, accepting ends and connections end after the
    /// request in hand.
    shutdown: Shutdown,
    /// Answers written (handlers' and the edge's own refusals): the watchdog tells a listener
    /// that answers others from a hung one by it.
    answers: Arc<AtomicU64>,
    /// Whether an accept that failed for want of descriptors has been logged (until one works).
    scarce: AtomicBool,
}

/// The listener's threads: alive, and waiting in `accept`.
#[derive(Default)]
struct Threads {
    live: usize,
    accepting: usize,
}

impl Shared {
    pub fn stopping(&self) -> bool {
        self.shutdown.is_triggered()
    }

    /// Runs the service's handler for `request` inside `catch_unwind` (`Err`: it panicked). The
    /// request is moved into it, so whatever it holds is dropped inside it too.
    pub fn handle(&self, request: Request) -> thread::Result<Reply> {
        let service = &*self.service;
        panic::catch_unwind(AssertUnwindSafe(move || service.handle(request)))
    }

    /// Hands a request to the port's workers, who handle and answer it.
    pub fn submit(&self, job: Job) {
        if let Err(crossbeam_channel::SendError(Work::Handle(job))) =
            self.jobs.send(Work::Handle(job))
        {
            // No worker left (the listener is stopping): the connection closes unanswered.
            drop(job);
        }
    }

    /// Counts an answer written (for the watchdog).
    pub fn answered(&self, status: u16) {
        self.limits.answered.count(status);
        self.answers.fetch_add(1, Ordering::Relaxed);
    }
}

/// What a worker is given. A job is moved through the channel as it is (a few hundred
/// bytes, in the channel's own blocks) rather than boxed: no allocation per request.
#[allow(clippy::large_enum_variant)]
enum Work {
    Handle(Job),
    Stop,
}

/// A worker: handles and answers requests until told to stop.
fn work(jobs: &Receiver<Work>, shared: &Shared) {
    while let Ok(Work::Handle(job)) = jobs.recv() {
        super::connection::answer(shared, job);
    }
}

impl Listener {
    /// Serves `service` on a bound listener until `shutdown` is triggered (then
    /// [`Listener::join`] waits for it). Accepting does not die: errors are logged and waited
    /// out.
    pub fn start(
        name: &'static str,
        listener: TcpListener,
        limits: Limits,
        service: Arc<dyn Service>,
        shutdown: Shutdown,
    ) -> io::Result<Listener> {
        let admission = Arc::new(Admission::new(
            admission_name(name),
            limits.bounds(),
            BODY_BUDGET_PER_CLIENT,
            limits.clock.clone(),
        ));
        Listener::start_admitted(name, listener, limits, admission, service, shutdown)
    }

    /// [`Listener::start`] with an admission made by the caller (the server's, sized).
    pub fn start_admitted(
        name: &'static str,
        listener: TcpListener,
        limits: Limits,
        admission: Arc<Admission>,
        service: Arc<dyn Service>,
        shutdown: Shutdown,
    ) -> io::Result<Listener> {
        super::admission::widen_backlog(&listener)?;
        set_send_timeout(&listener, SEND_TIMEOUT)?;
        set_no_delay(&listener)?;
        // A thread waiting to accept wakes after this to see whether it is spare.
        sockopt::set_socket_timeout(&listener, sockopt::Timeout::Recv, Some(SPARE_WAIT))?;
        let addr = listener.local_addr()?;
        let socket = listener.try_clone()?;
        // shutdown() on a listening socket makes a blocked accept() fail at once (Linux).
        shutdown.on_trigger(move || {
            let _ = rustix::net::shutdown(&socket, rustix::net::Shutdown::Both);
        });
        let (jobs, queue) = crossbeam_channel::unbounded::<Work>();
        let workers_wanted = limits.workers.max(1);
        let shared = Arc::new(Shared {
            name,
            service,
            jobs,
            limits,
            admission,
            socket: listener,
            threads: Mutex::new(Threads::default()),
            threads_changed: Condvar::new(),
            shutdown,
            answers: Arc::default(),
            scarce: AtomicBool::new(false),
        });
        let mut workers = Vec::new();
        for i in 0..workers_wanted {
            let (queue, shared) = (queue.clone(), Arc::clone(&shared));
            let worker = thread::Builder::new()
                .name(format!("{name}-{i}"))
                .stack_size(WORKER_STACK)
                .spawn(move || work(&queue, &shared))?;
            workers.push(worker);
        }
        {
            let mut threads = shared.threads.lock();
            start_thread(&shared, &mut threads, None).map_err(|(e, _)| e)?;
        }
        Ok(Listener {
            addr,
            shared,
            workers,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Answers written so far (grows while the listener answers anyone).
    pub fn answers(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.shared.answers)
    }

    pub fn admission(&self) -> &Arc<Admission> {
        &self.shared.admission
    }

    /// After the shutdown signal: closes the connections waiting for a request (requests being
    /// handled finish and are answered), waits for every connection thread to end, then for
    /// the workers, once they have answered what was handed to them. Parked connections are the
    /// hub's to end.
    pub fn join(self) {
        self.shared.admission.stop_reading();
        {
            let mut threads = self.shared.threads.lock();
            while threads.live > 0 {
                self.shared.threads_changed.wait(&mut threads);
            }
        }
        for _ in &self.workers {
            let _ = self.shared.jobs.send(Work::Stop);
        }
        for worker in self.workers {
            let _ = worker.join();
        }
    }
}

/// The admission's name for a listener's log lines.
fn admission_name(name: &'static str) -> &'static str {
    match name {
        "device" => "device port",
        "control" => "control port",
        other => other,
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

/// A connection accepted and admitted, on its way to the thread that serves it.
struct Accepted {
    socket: Arc<TcpStream>,
    peer: SocketAddr,
    ticket: Ticket,
    at: Instant,
}

/// Starts a connection thread (counted as alive from now): one that serves `first`, or else
/// one that accepts (counted as accepting from now); then either accepts in turn. `first` is
/// given back if no thread could start.
fn start_thread(
    shared: &Arc<Shared>,
    threads: &mut Threads,
    first: Option<Accepted>,
) -> Result<(), (io::Error, Option<Accepted>)> {
    let accepting = first.is_none();
    threads.live += 1;
    if accepting {
        threads.accepting += 1;
    }
    let handoff = Arc::new(Mutex::new(first));
    let spawned = thread::Builder::new()
        .name(format!("{}-conn", shared.name))
        .stack_size(CONNECTION_STACK)
        .spawn({
            let (shared, handoff) = (Arc::clone(shared), Arc::clone(&handoff));
            move || {
                // Counted (by the thread that started this one) until this is dropped.
                let alive = Alive(shared);
                let first = handoff.lock().take();
                drop(handoff);
                run(alive, first)
            }
        });
    match spawned {
        Ok(_) => Ok(()),
        Err(e) => {
            threads.live -= 1;
            if accepting {
                threads.accepting -= 1;
            }
            Err((e, handoff.lock().take()))
        }
    }
}

/// One live thread, counted until dropped (also on unwinding, so that [`Listener::join`]
/// does not wait for a thread that is gone).
struct Alive(Arc<Shared>);

impl Drop for Alive {
    fn drop(&mut self) {
        let mut threads = self.0.threads.lock();
        threads.live -= 1;
        self.0.threads_changed.notify_all();
    }
}

/// A connection thread: serves `first` if it was started for one, then accepts, serves what it
/// accepted, accepts again; ends when the listener stops, or when it has waited [`SPARE_WAIT`]
/// for a connection while another accepts.
fn run(alive: Alive, first: Option<Accepted>) {
    let shared = &alive.0;
    if let Some(conn) = first {
        serve(shared, conn);
        shared.threads.lock().accepting += 1;
    }
    let mut backoff = Duration::ZERO;
    loop {
        let accepted = shared.socket.accept();
        if shared.stopping() {
            shared.threads.lock().accepting -= 1;
            return;
        }
        match accepted {
            Ok((stream, peer)) => {
                backoff = Duration::ZERO;
                shared.scarce.store(false, Ordering::Relaxed);
                shared.threads.lock().accepting -= 1;
                take(shared, stream, peer);
                shared.threads.lock().accepting += 1;
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                let mut threads = shared.threads.lock();
                if threads.accepting > 1 {
                    threads.accepting -= 1;
                    return;
                }
            }
            Err(e) => backoff = accept_failed(shared, &e, backoff),
        }
    }
}

/// A connection just accepted: admitted and served here (or by a thread started for it, when
/// no other thread is left accepting), or refused.
fn take(shared: &Arc<Shared>, stream: TcpStream, peer: SocketAddr) {
    let at = Instant::now();
    let socket = Arc::new(stream);
    let ticket = match shared.admission.admit(peer, &socket) {
        Ok(ticket) => ticket,
        Err(why) => return refuse(shared, &socket, why),
    };
    let conn = Accepted {
        socket,
        peer,
        ticket,
        at,
    };
    let mut threads = shared.threads.lock();
    if threads.accepting > 0 || threads.live > shared.limits.max_threads {
        // Another thread accepts meanwhile (or will, once one is free: the admission keeps
        // connections being served within the bound).
        drop(threads);
        return serve(shared, conn);
    }
    // This thread goes on accepting; a thread started for the connection serves it.
    if let Err((e, conn)) = start_thread(shared, &mut threads, Some(conn)) {
        drop(threads);
        if let Some(conn) = conn {
            shared.admission.note(
                peer.ip(),
                &format_args!("refused a connection from {peer}: no thread for it ({e})"),
            );
            let socket = Arc::clone(&conn.socket);
            drop(conn);
            refuse(shared, &socket, Refusal::Full);
        }
    }
}

/// Serves an admitted connection; a panic here (outside the handler's own catch_unwind) ends
/// only this connection: its socket and place are dropped, the thread keeps serving.
fn serve(shared: &Arc<Shared>, conn: Accepted) {
    let Accepted {
        socket,
        peer,
        ticket,
        at,
    } = conn;
    let served = panic::catch_unwind(AssertUnwindSafe(|| {
        let stream = match &shared.limits.tls {
            None => Stream::plain(socket),
            Some(config) => match Stream::tls(socket, Arc::clone(config)) {
                Ok(stream) => stream,
                Err(e) => return log::debug!("{peer}: no TLS connection: {e}"),
            },
        };
        super::connection::serve(shared, stream, peer, ticket, at);
    }));
    if served.is_err() {
        log::error!(
            "{} port: serving a connection panicked; it was closed",
            shared.name
        );
    }
}

/// Refuses a connection: a 503 in plain text, a close with TLS (an answer without TLS would
/// mean nothing to the client).
fn refuse(shared: &Shared, socket: &TcpStream, why: Refusal) {
    if shared.limits.tls.is_none() {
        let response = shared
            .service
            .refusal(Method::Other, "", 503, why.message());
        shared.answered(503);
        refuse_at_once(socket, &response);
    }
}

/// Logs a failed accept and waits before the next; returns the next wait. Out of descriptors
/// (or memory) the wait grows from 100 ms to 1 s: the connection stays in the backlog until
/// some close.
fn accept_failed(shared: &Shared, e: &io::Error, backoff: Duration) -> Duration {
    let scarce = matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    );
    if !scarce {
        log::debug!("{} port: accept failed: {e}", shared.name);
        thread::sleep(Duration::from_millis(10));
        return Duration::ZERO;
    }
    let wait = (backoff * 2).clamp(Duration::from_millis(100), Duration::from_secs(1));
    if !shared.scarce.swap(true, Ordering::Relaxed) {
        log::warn!(
            "{} port: accept failed ({e}); retrying until descriptors free up",
            shared.name
        );
    }
    thread::sleep(wait);
    wait
}

/// Answers a connection that is not served (a 503) without blocking: a fresh socket takes a
/// small write at once. Bytes the client already sent are discarded first, so closing does
/// not reset the connection under the answer.
fn refuse_at_once(stream: &TcpStream, response: &Response) {
    let _ = stream.set_nonblocking(true);
    let _ = (&*stream).write_all(&respond::encode(response, Answer::REFUSAL));
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut scratch = [0u8; 4096];
    for _ in 0..16 {
        match (&*stream).read(&mut scratch) {
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

    /// Connections held open by one client keep as many threads; another client is still
    /// served, by a thread started for it, and the threads never outnumber the bound plus one.
    #[test]
    fn threads_follow_the_connections_within_their_bound() {
        let socket = TcpListener::bind("127.0.0.1:0").unwrap();
        let shutdown = Shutdown::new();
        let limits = Limits {
            max_connections: 8,
            max_threads: 4,
            ..Limits::default()
        };
        let listener =
            Listener::start("bound", socket, limits, Arc::new(Panicky), shutdown.clone()).unwrap();
        let addr = listener.addr();
        let held: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(addr).unwrap()).collect();
        // Each is admitted (and served by a thread of its own) in turn; the fifth client's
        // /fine is answered by turning over the oldest (all from one address).
        assert!(ask(addr, "/fine").starts_with("HTTP/1.1 200 "));
        let live = listener.shared.threads.lock().live;
        assert!(live <= 5, "{live} threads");
        drop(held);
        shutdown.trigger();
        listener.join();
    }
}
