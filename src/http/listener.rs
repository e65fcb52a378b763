//! One tiny_http listener: our own `TcpListener`, a small pool of named worker threads, bounded
//! body reading, and the translation between tiny_http and [`Request`]/[`Reply`].
//!
//! Mitigations for tiny_http 0.12 (see docs/known-limits.md): `SO_SNDTIMEO` on the listening
//! socket (Linux accepted sockets inherit it) bounds writes to clients that stop reading;
//! `TCP_NODELAY` (inherited too) keeps keep-alive answers from waiting on delayed ACKs; every
//! request, including the drop of tiny_http's `Request`, runs inside `catch_unwind`; bodies are
//! read with a hard cap and oversized ones are refused unread; an accept loop that dies is
//! reported to `on_fatal` so the process can exit and be restarted.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rustix::net::sockopt;

use super::tls::Peers;
use super::{
    ChunkedBody, ChunkedWriter, Method, Reply, Request, Service, deadline, idle, oversize, socket,
};

/// Writes to a client that stopped reading give up after this long.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);
const WORKER_STACK: usize = 256 * 1024;
/// Request heads (request line and headers) over this size get 431.
pub const HEAD_LIMIT: usize = 16 * 1024;

pub type FatalHook = Arc<dyn Fn(String) + Send + Sync>;

/// How the listener treats its clients.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Workers (threads that run handlers).
    pub workers: usize,
    /// A request body still arriving after this long is abandoned and its connection closed.
    pub body_timeout: Duration,
    /// Behind a TLS front: the real client of each relayed connection.
    pub peers: Option<Arc<Peers>>,
}

pub struct Listener {
    server: Arc<tiny_http::Server>,
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
}

impl Listener {
    /// Serves `service` on a bound listener with `workers` threads.
    pub fn start(
        name: &'static str,
        listener: TcpListener,
        limits: Limits,
        service: Arc<dyn Service>,
        on_fatal: FatalHook,
    ) -> io::Result<Listener> {
        let workers = limits.workers;
        set_send_timeout(&listener, SEND_TIMEOUT)?;
        set_no_delay(&listener)?;
        let addr = listener.local_addr()?;
        let server = tiny_http::Server::from_listener(listener, None).map_err(io::Error::other)?;
        let server = Arc::new(server);
        let stopping = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::with_capacity(workers);
        for i in 0..workers.max(1) {
            let (server, service, stopping, on_fatal, limits) = (
                Arc::clone(&server),
                Arc::clone(&service),
                Arc::clone(&stopping),
                Arc::clone(&on_fatal),
                limits.clone(),
            );
            let handle = thread::Builder::new()
                .name(format!("{name}-{i}"))
                .stack_size(WORKER_STACK)
                .spawn(move || {
                    worker(
                        &server,
                        &*service,
                        &stopping,
                        addr.port(),
                        &limits,
                        &on_fatal,
                    )
                })?;
            handles.push(handle);
        }
        Ok(Listener {
            server,
            addr,
            stopping,
            workers: handles,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the workers (requests already taken are finished first).
    pub fn stop(self) {
        self.stopping.store(true, Ordering::SeqCst);
        for _ in &self.workers {
            self.server.unblock();
        }
        for w in self.workers {
            let _ = w.join();
        }
    }
}

/// `TCP_NODELAY` on the listening socket, which accepted sockets inherit on Linux. tiny_http
/// writes a response's head and body separately; with Nagle's algorithm the body then waits for
/// the client's delayed ACK (about 40 ms) on every keep-alive request.
fn set_no_delay(listener: &TcpListener) -> io::Result<()> {
    Ok(sockopt::set_tcp_nodelay(listener, true)?)
}

fn set_send_timeout(listener: &TcpListener, timeout: Duration) -> io::Result<()> {
    Ok(sockopt::set_socket_timeout(
        listener,
        sockopt::Timeout::Send,
        Some(timeout),
    )?)
}

fn worker(
    server: &tiny_http::Server,
    service: &dyn Service,
    stopping: &AtomicBool,
    port: u16,
    limits: &Limits,
    on_fatal: &FatalHook,
) {
    loop {
        let rq = match server.recv() {
            Ok(rq) => rq,
            Err(e) => {
                if !stopping.load(Ordering::SeqCst) {
                    on_fatal(format!("listener on port {port} stopped accepting: {e}"));
                }
                return;
            }
        };
        // The request is moved in, so its drop (which can panic inside tiny_http) is covered too.
        let outcome =
            panic::catch_unwind(AssertUnwindSafe(move || serve(rq, service, port, limits)));
        if outcome.is_err() {
            log::error!(
                "a request handler panicked; the client got a 500 and the server keeps serving"
            );
        }
    }
}

fn serve(mut rq: tiny_http::Request, service: &dyn Service, port: u16, limits: &Limits) {
    let started = Instant::now();
    // While this request is read and handled its connection is busy, however quiet it looks.
    let _busy = rq.remote_addr().map(|peer| idle::Busy::mark(*peer, port));
    if !rq.url().starts_with("/health") {
        crate::util::memory::count_request();
    }
    let url = rq.url().to_string();
    let (path, query) = url.split_once('?').unwrap_or((url.as_str(), ""));
    let limit = service.body_limit(path);

    let method = method_of(rq.method());
    let too_large = || service.refusal(method, path, 413, "Request body too large");
    let declared = declared_length(&rq);
    if let Some(declared) = declared.filter(|d| *d > limit as u64) {
        log::info!(
            "{} {url} -> 413 (declared body of {declared} bytes)",
            rq.method()
        );
        oversize::reject(rq, declared, port, too_large());
        return;
    }
    let head = head_size(&rq);
    if head > HEAD_LIMIT {
        log::info!("{} {url} -> 431 (a {head}-byte request head)", rq.method());
        let refusal = service.refusal(method, path, 431, "Request header fields too large");
        oversize::refuse_unread(rq, port, refusal);
        return;
    }
    // tiny_http has already read bodies of up to 1 KiB; a longer or chunked one is read here,
    // under a deadline.
    let streamed = declared.map_or(is_chunked(&rq), |d| d > 1024);
    let watch = match (streamed, rq.remote_addr()) {
        (true, Some(peer)) => deadline::watch(*peer, port, limits.body_timeout),
        _ => None,
    };
    let mut body = Vec::new();
    let read = rq.as_reader().take(limit as u64 + 1).read_to_end(&mut body);
    drop(watch);
    // A body shorter than declared: the client went away or missed the deadline.
    let complete = read.is_ok() && declared.is_none_or(|d| body.len() as u64 >= d);
    if !complete {
        log::debug!(
            "{} {url}: body incomplete or unreadable ({read:?})",
            rq.method()
        );
        let refusal = service.refusal(method, path, 400, "Could not read the request body");
        send(rq, Reply::Full(refusal), port);
        return;
    }
    if body.len() > limit {
        // Only a chunked body can get here (a declared length was checked above). The rest of
        // it is not read: it may never end.
        log::info!(
            "{} {url} -> 413 (chunked body over {limit} bytes)",
            rq.method()
        );
        oversize::refuse_unread(rq, port, too_large());
        return;
    }

    let client = client_of(&rq, limits);
    let request = Request {
        method,
        path: path.to_string(),
        query: query.to_string(),
        headers: rq
            .headers()
            .iter()
            .map(|h| (h.field.to_string(), h.value.to_string()))
            .collect(),
        body,
        http10: *rq.http_version() == tiny_http::HTTPVersion(1, 0),
        remote: client,
    };
    let method = rq.method().to_string();
    let status = send(rq, service.handle(request), port);
    log::debug!(
        "{method} {url} -> {status} ({} ms)",
        started.elapsed().as_millis()
    );
}

/// The request line and header section as sent, give or take whitespace. tiny_http 0.12 reads
/// a head of any size before handing the request over, so this cap is applied afterwards; the
/// memory a huge head took is given back when the request is dropped.
fn head_size(rq: &tiny_http::Request) -> usize {
    let line = rq.method().as_str().len() + rq.url().len() + 12;
    rq.headers().iter().fold(line, |n, h| {
        n + h.field.as_str().as_str().len() + h.value.as_str().len() + 4
    })
}

fn is_chunked(rq: &tiny_http::Request) -> bool {
    rq.headers()
        .iter()
        .any(|h| h.field.equiv("Transfer-Encoding"))
}

/// The `Content-Length` a request declares, when tiny_http will use it (no Transfer-Encoding).
fn declared_length(rq: &tiny_http::Request) -> Option<u64> {
    if is_chunked(rq) {
        return None;
    }
    rq.headers()
        .iter()
        .find(|h| h.field.equiv("Content-Length"))
        .and_then(|h| h.value.as_str().trim().parse::<u64>().ok())
}

fn method_of(m: &tiny_http::Method) -> Method {
    match m {
        tiny_http::Method::Get => Method::Get,
        tiny_http::Method::Head => Method::Head,
        tiny_http::Method::Post => Method::Post,
        tiny_http::Method::Put => Method::Put,
        tiny_http::Method::Delete => Method::Delete,
        tiny_http::Method::Options => Method::Options,
        _ => Method::Other,
    }
}

/// A [`Response`] as tiny_http sends it.
pub(super) fn to_tiny(resp: super::Response) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let mut r = tiny_http::Response::from_data(resp.body).with_status_code(resp.status);
    for (name, value) in &resp.headers {
        if let Ok(h) = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()) {
            r.add_header(h);
        }
    }
    r
}

/// Bodies up to this size are sent with their head in one write ([`respond`]).
const ONE_WRITE_LIMIT: usize = 64 * 1024;

/// Sends a full response. tiny_http's own `respond` writes the head into its 1 KiB connection
/// buffer and then the body past it, straight to the socket: two TCP segments, and two
/// wake-ups of the client, for every answer over about 700 bytes (a `/status` is 1.3 KB).
/// Here tiny_http formats exactly the same bytes (`raw_print`: status line, `Server`, `Date`,
/// `Content-Length` or chunking as it chooses, no body for HEAD) into memory, and they leave
/// in one write. Whether the connection stays open is still tiny_http's decision, taken from
/// the request as before. Larger bodies go the usual way, so
/// memory is not doubled for them. Errors from clients that went away are ignored, as
/// tiny_http does.
fn respond(rq: tiny_http::Request, resp: super::Response) -> io::Result<()> {
    if resp.body.len() > ONE_WRITE_LIMIT {
        return rq.respond(to_tiny(resp));
    }
    let mut bytes = Vec::with_capacity(resp.body.len() + 512);
    let head_only = *rq.method() == tiny_http::Method::Head;
    let version = rq.http_version().clone();
    to_tiny(resp).raw_print(&mut bytes, version, rq.headers(), head_only, None)?;
    let mut writer = rq.into_writer();
    match writer.write_all(&bytes).and_then(|()| writer.flush()) {
        Err(e) if !client_went_away(&e) => Err(e),
        _ => Ok(()),
    }
}

fn client_went_away(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionReset
    )
}

/// The client's address: the connection's, or behind TLS the client of our relay.
fn client_of(rq: &tiny_http::Request, limits: &Limits) -> Option<SocketAddr> {
    let connection = *rq.remote_addr()?;
    let relayed = limits.peers.as_ref().and_then(|p| p.client_of(connection));
    Some(relayed.unwrap_or(connection))
}

/// Sends a reply and returns its status. `port`: the listener's, to find a parked
/// connection's socket.
fn send(rq: tiny_http::Request, reply: Reply, port: u16) -> u16 {
    match reply {
        Reply::Full(resp) => {
            let status = resp.status;
            if let Err(e) = respond(rq, resp) {
                log::debug!("could not send a response: {e}");
            }
            status
        }
        Reply::Chunked(reply) => {
            let peer = rq.remote_addr().copied();
            let parked = matches!(reply.body, ChunkedBody::Park(_));
            let mut w = ChunkedWriter::new(rq.into_writer());
            if let (true, Some(peer)) = (parked, peer) {
                socket::park(peer, port);
            }
            let head = w.head(&reply.headers);
            match reply.body {
                ChunkedBody::Now(chunk) => {
                    let _ = head.and_then(|()| w.chunk(&chunk)).and_then(|()| w.end());
                }
                // If the head could not be written, dropping `park` frees what it holds.
                ChunkedBody::Park(park) if head.is_ok() => park(w),
                ChunkedBody::Park(_) => {}
            }
            200
        }
    }
}
