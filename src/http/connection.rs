//! One connection's requests, in order. The thread that accepted it reads them: with
//! `CERT_DIR` the TLS handshake first, then for each request its head and its body under their
//! limits and deadlines; it hands the request to one of the port's workers, which runs the
//! handler (inside `catch_unwind`) and writes the answer itself, then goes on to the next
//! request. So a request crosses one thread, once. The reader and the worker take turns
//! ([`Turn`]): the reader hands the next request over (or writes a refusal of its own) only
//! once the answer before it is written, so answers keep the requests' order; the worker hands
//! the connection back, ends it (a closing answer), or parks it (a held subscribe, an event
//! stream), and then the reader stops.

use std::net::{Shutdown, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use super::admission::{BodyReservation, Phase, Ticket};
use super::body::{self, BodyError, Framing, FramingError};
use super::head::{self, Head, HeadError, Input, Timing};
use super::listener::{self, PARKED_SEND_TIMEOUT, Shared};
use super::respond::{self, Answer, Persist};
use super::tls::Stream;
use super::{ChunkedBody, ChunkedWriter, Method, Reply, Request, find_header};
use crate::util::clock::Stopwatch;

/// A connection, as its reader and the worker answering its request share it. Dropped (its
/// socket closed) when both are done with it, or when a parked reply's writer is.
pub(super) struct Conn {
    pub stream: Stream,
    pub client: SocketAddr,
    /// Its place in the port's counts.
    pub ticket: Ticket,
    turn: Mutex<Turn>,
    turned: Condvar,
}

/// Whose turn it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Turn {
    /// The reader's: no request is being answered. `Instant`: when the last answer was
    /// written (or the connection accepted), from which the connection counts as quiet.
    Reader(Instant),
    /// A worker's: a request is being handled and answered.
    Worker,
    /// The answer ended the connection or parked it: nothing more is read.
    Ended,
}

impl Conn {
    /// The reader waits for its turn: `Some(when the last answer was written)`, or `None` once
    /// the connection is ended.
    fn wait_turn(&self) -> Option<Instant> {
        let mut turn = self.turn.lock();
        loop {
            match *turn {
                Turn::Reader(at) => return Some(at),
                Turn::Ended => return None,
                Turn::Worker => self.turned.wait(&mut turn),
            }
        }
    }

    fn set_turn(&self, to: Turn) {
        *self.turn.lock() = to;
        self.turned.notify_one();
    }
}

/// A request for a worker: what it needs to run the handler and answer.
pub(super) struct Job {
    conn: Arc<Conn>,
    request: Request,
    answer: Answer,
    /// The request's target, for the debug log.
    target: String,
    started: Stopwatch,
    /// Held until the handler has answered: the body is in memory until then.
    _reserved: Option<BodyReservation>,
}

/// Serves a connection admitted with `ticket`: reads its requests until it closes, is ended by
/// an answer or parked.
pub(super) fn serve(
    shared: &Arc<Shared>,
    stream: Stream,
    client: SocketAddr,
    ticket: Ticket,
    at: Instant,
) {
    if shared.stopping() {
        return;
    }
    // A handshake is a request head's worth of bytes: it gets the head's deadline.
    let handshake = stream.handshake(at + shared.limits.head_timeout, listener::SEND_TIMEOUT);
    if let Err(e) = handshake {
        return log::debug!("{client}: TLS handshake: {e}");
    }
    let conn = Arc::new(Conn {
        stream: stream.clone(),
        client,
        ticket,
        turn: Mutex::new(Turn::Reader(at)),
        turned: Condvar::new(),
    });
    let mut input = Input::new(stream);
    let mut timing = Timing {
        since: at,
        first: true,
        head_timeout: shared.limits.head_timeout,
        idle_timeout: shared.limits.idle_timeout,
    };
    loop {
        let read = head::read(&mut input, timing);
        // Answers go in order: whatever comes next waits for the one in hand.
        let Some(answered) = conn.wait_turn() else {
            return;
        };
        let head = match read {
            Ok(head) => head,
            Err(HeadError::Quiet)
                if !timing.first && answered.elapsed() < shared.limits.idle_timeout =>
            {
                // Quiet since the request, but a worker was answering it: the connection has
                // been quiet only since the answer, and may be for the rest of the wait.
                timing.idle_timeout = shared.limits.idle_timeout - answered.elapsed();
                continue;
            }
            Err(HeadError::Quiet | HeadError::Closed | HeadError::Incomplete) => return,
            Err(e) => return refuse_head(shared, &conn, e),
        };
        match request(shared, &conn, &mut input, head) {
            Some(job) => {
                let close = job.answer.persist == Persist::Close;
                conn.set_turn(Turn::Worker);
                conn.ticket.set(Phase::Busy);
                shared.submit(job);
                if close || shared.stopping() {
                    // Nothing more is read: the worker closes it once answered.
                    return;
                }
            }
            None => return linger(&input),
        }
        timing.since = Instant::now();
        timing.first = false;
        timing.idle_timeout = shared.limits.idle_timeout;
    }
}

/// Answers a head the edge refuses, then closes with a lingering close.
fn refuse_head(shared: &Shared, conn: &Conn, e: HeadError) {
    let (status, message) = match e {
        HeadError::TooLarge | HeadError::TooManyHeaders => (431, "Request header fields too large"),
        HeadError::Version => (505, "HTTP version not supported"),
        _ => (400, "Malformed request"),
    };
    let client = conn.client;
    shared.admission.note(
        client.ip(),
        &format_args!("refused a request head from {client} ({status} {message})"),
    );
    shared.answered(status);
    let refusal = shared.service.refusal(Method::Other, "", status, message);
    let _ = conn
        .stream
        .write_all(&respond::encode(&refusal, Answer::REFUSAL));
    listener::linger(conn.stream.socket());
}

/// A refused request's connection: the lingering close (TLS's close_notify goes out when the
/// last handle of the stream does).
fn linger(input: &Input) {
    listener::linger(input.stream().socket());
}

/// A request refused before its handler runs: the status and message the client gets, and
/// why, for the log.
struct Refused {
    status: u16,
    message: &'static str,
    why: String,
}

impl Refused {
    fn new(status: u16, message: &'static str, why: impl Into<String>) -> Refused {
        Refused {
            status,
            message,
            why: why.into(),
        }
    }
}

const TOO_LARGE: &str = "Request body too large";

/// Reads one request's body: the job for a worker, or `None` when it was refused (and
/// answered) here.
fn request(shared: &Arc<Shared>, conn: &Arc<Conn>, input: &mut Input, head: Head) -> Option<Job> {
    let started = Stopwatch::start();
    let service = &*shared.service;
    let client = conn.client;
    let method = method_of(&head.method);
    let (path, query) = head
        .target
        .split_once('?')
        .unwrap_or((head.target.as_str(), ""));
    if !path.starts_with("/health") {
        crate::util::memory::count_request();
    }
    let answer = |persist| Answer {
        http10: head.http10,
        head_only: method == Method::Head,
        persist,
    };
    let limit = service.body_limit(path);
    let body = framing(&head, limit).and_then(|framing| {
        let reserved = reserve(shared, client, framing, limit)?;
        let body = read_body(shared, conn, input, &head, framing, limit)?;
        Ok((body, reserved))
    });
    let (body, reserved) = match body {
        Ok(read) => read,
        Err(refused) => {
            shared.admission.note(
                client.ip(),
                &format_args!(
                    "{} {} from {client} -> {} ({})",
                    head.method,
                    crate::util::logged(&redact(&head.target)),
                    refused.status,
                    refused.why
                ),
            );
            shared.answered(refused.status);
            let refusal = service.refusal(method, path, refused.status, refused.message);
            let _ = conn
                .stream
                .write_all(&respond::encode(&refusal, answer(Persist::Close)));
            return None;
        }
    };
    let persist = persistence(&head);
    let request = Request {
        method,
        path: path.to_string(),
        query: query.to_string(),
        headers: head.headers,
        body,
        http10: head.http10,
        remote: Some(client),
    };
    Some(Job {
        conn: Arc::clone(conn),
        request,
        answer: answer(persist),
        target: redact(&head.target),
        started,
        _reserved: Some(reserved),
    })
}

/// A worker's part: runs the job's handler and writes its answer, then hands the connection
/// back to its reader, or ends it, or parks it.
pub(super) fn answer(shared: &Shared, job: Job) {
    let Job {
        conn,
        request,
        answer,
        target,
        started,
        _reserved,
    } = job;
    let (method, path) = (request.method, request.path.clone());
    let method_name = method.as_str();
    let (after, status) = match shared.handle(request) {
        Ok(Reply::Full(response)) => {
            // Counted before it is sent: a client that has its answer finds it counted.
            shared.answered(response.status);
            let sent = conn.stream.write_all(&respond::encode(&response, answer));
            let next = sent.is_ok() && answer.persist != Persist::Close;
            (if next { After::Next } else { After::End }, response.status)
        }
        Ok(Reply::Chunked(reply)) => {
            shared.answered(200);
            match reply.body {
                ChunkedBody::Now(chunk) => {
                    let whole = super::chunked::whole(&reply.headers, &chunk);
                    let _ = conn.stream.write_all(&whole);
                    (After::End, 200)
                }
                ChunkedBody::Park(park) => {
                    park_reply(&conn, &reply.headers, park);
                    (After::Parked, 200)
                }
            }
        }
        Err(_) => {
            log::error!(
                "a request handler panicked; the client got a 500 and the server keeps serving"
            );
            let response = shared
                .service
                .refusal(method, &path, 500, "Internal server error");
            shared.answered(500);
            let refusal = Answer {
                persist: Persist::Close,
                ..answer
            };
            let _ = conn.stream.write_all(&respond::encode(&response, refusal));
            (After::End, 500)
        }
    };
    match after {
        After::Next => {
            conn.ticket.set(Phase::Idle);
            conn.set_turn(Turn::Reader(Instant::now()));
        }
        After::End => {
            conn.set_turn(Turn::Ended);
            // Wakes a reader waiting for the next request; the connection closes when it and
            // this are done with it.
            let _ = conn.stream.socket().shutdown(Shutdown::Read);
        }
        After::Parked => conn.set_turn(Turn::Ended),
    }
    log::debug!(
        "{method_name} {} -> {status} ({} ms)",
        crate::util::logged(&target),
        started.elapsed().as_millis()
    );
}

/// What became of the connection after an answer.
enum After {
    /// Its reader reads the next request.
    Next,
    /// It closes.
    End,
    /// A parked reply holds it.
    Parked,
}

/// Parks a chunked reply: its head is written and its body handed the connection, which holds
/// its place in the counts (and no thread) until the body is dropped.
fn park_reply(
    conn: &Arc<Conn>,
    headers: &[(String, String)],
    park: Box<dyn FnOnce(ChunkedWriter) + Send>,
) {
    // The reply says `Connection: close`: nothing more is read from this client (its reader
    // sees the end), and a client that stops reading is given up after a short blocked write.
    let socket = conn.stream.socket();
    if let Err(e) = socket.shutdown(Shutdown::Read) {
        log::debug!("could not stop reading a parked connection: {e}");
    }
    if let Err(e) = socket.set_write_timeout(Some(PARKED_SEND_TIMEOUT)) {
        log::debug!("could not shorten a parked connection's send timeout: {e}");
    }
    conn.ticket.set(Phase::Parked);
    let mut w = ChunkedWriter::new(Box::new(Parked {
        writer: conn.stream.writer(),
        _conn: Arc::clone(conn),
    }));
    // If the head could not be written, dropping `park` frees what it holds.
    if w.head(headers).is_ok() {
        park(w);
    }
}

/// A connection as a parked reply's writer, holding its place in the counts until dropped.
struct Parked {
    writer: super::tls::Writer,
    _conn: Arc<Conn>,
}

impl std::io::Write for Parked {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// How the request's body is framed, refused when the head is ambiguous (RFC 9112: two `Host`
/// headers; `Content-Length` with `Transfer-Encoding`) or declares more than `limit`.
fn framing(head: &Head, limit: usize) -> Result<Framing, Refused> {
    // RFC 9112 §3.2: a request with more than one Host header is answered 400.
    let hosts = head
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("Host"));
    if hosts.count() > 1 {
        return Err(Refused::new(
            400,
            "Malformed request",
            "more than one Host header",
        ));
    }
    let framing = body::framing(&head.headers, head.http10).map_err(|e| match e {
        FramingError::Huge => Refused::new(413, TOO_LARGE, "a declared body over 2^64"),
        FramingError::Unsupported => {
            Refused::new(501, "Transfer-Encoding not supported", "a transfer coding")
        }
        FramingError::Ambiguous => Refused::new(
            400,
            "Invalid Content-Length or Transfer-Encoding",
            "ambiguous body framing",
        ),
    })?;
    match framing {
        Framing::Length(declared) if declared > limit as u64 => Err(Refused::new(
            413,
            TOO_LARGE,
            format!("a declared body of {declared} bytes"),
        )),
        _ => Ok(framing),
    }
}

/// Reserves the body's room in the client address's budget (a chunked body reserves its limit).
fn reserve(
    shared: &Shared,
    client: SocketAddr,
    framing: Framing,
    limit: usize,
) -> Result<BodyReservation, Refused> {
    let bytes = match framing {
        Framing::None | Framing::Length(0) => 0,
        Framing::Length(n) => n as usize,
        Framing::Chunked => limit,
    };
    shared
        .admission
        .reserve_body(client.ip(), bytes)
        .ok_or_else(|| {
            Refused::new(
                503,
                "Too many request bodies in progress from this address",
                "the address's body budget is in use",
            )
        })
}

/// Answers `Expect: 100-continue`, then reads the body within the body deadline.
fn read_body(
    shared: &Shared,
    conn: &Conn,
    input: &mut Input,
    head: &Head,
    framing: Framing,
    limit: usize,
) -> Result<Vec<u8>, Refused> {
    if let Some(expect) = find_header(&head.headers, "Expect") {
        if !expect.trim().eq_ignore_ascii_case("100-continue") {
            return Err(Refused::new(417, "Expectation failed", "an Expect header"));
        }
        if !head.http10 && framing != Framing::None && input.pending().is_empty() {
            let _ = conn.stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
    }
    let deadline = Instant::now() + shared.limits.body_timeout;
    let body = match framing {
        Framing::None => Ok(Vec::new()),
        Framing::Length(n) => body::read_length(input, n as usize, deadline),
        Framing::Chunked => body::read_chunked(input, limit, deadline),
    };
    body.map_err(|e| match e {
        BodyError::TooLarge => {
            Refused::new(413, TOO_LARGE, format!("a chunked body over {limit} bytes"))
        }
        e => Refused::new(
            400,
            "Could not read the request body",
            format!("body {e:?}"),
        ),
    })
}

/// Whether the connection stays open after this request's answer (RFC 9112 §9.3).
fn persistence(head: &Head) -> Persist {
    let tokens = head
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("Connection"))
        .flat_map(|(_, v)| v.split(','))
        .map(str::trim);
    let (mut close, mut keep) = (false, false);
    for token in tokens {
        close |= token.eq_ignore_ascii_case("close");
        keep |= token.eq_ignore_ascii_case("keep-alive");
    }
    match (close, head.http10, keep) {
        (true, _, _) => Persist::Close,
        (false, false, _) => Persist::KeepAlive,
        (false, true, true) => Persist::KeepAlive10,
        (false, true, false) => Persist::Close,
    }
}

fn method_of(m: &str) -> Method {
    match m {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "OPTIONS" => Method::Options,
        _ => Method::Other,
    }
}

/// Query parameters whose values never reach a log.
const SECRET_PARAMETERS: [&str; 3] = ["api_key", "key", "token"];

/// A request target for a log line: the values of `api_key`, `key` and `token` query
/// parameters (named in any case, percent-encoded or not) become `<redacted>`.
pub fn redact(target: &str) -> String {
    let Some((path, query)) = target.split_once('?') else {
        return target.to_string();
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| {
            let (name, _) = pair.split_once('=').unwrap_or((pair, ""));
            let decoded = super::percent_decode(name).unwrap_or_default();
            if SECRET_PARAMETERS
                .iter()
                .any(|s| s.eq_ignore_ascii_case(decoded.trim()))
            {
                format!("{name}=<redacted>")
            } else {
                pair.to_string()
            }
        })
        .collect();
    format!("{path}?{}", pairs.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_in_query_strings_are_redacted() {
        assert_eq!(redact("/status"), "/status");
        assert_eq!(
            redact("/status?serial=02AA&api_key=nle_abc"),
            "/status?serial=02AA&api_key=<redacted>"
        );
        assert_eq!(
            redact("/x?KEY=1&Token=2&token&keys=3&k%65y=4&a=key"),
            "/x?KEY=<redacted>&Token=<redacted>&token=<redacted>&keys=3&k%65y=<redacted>&a=key"
        );
        assert_eq!(redact("/x?"), "/x?");
    }

    fn head(http10: bool, connection: Option<&str>) -> Head {
        Head {
            method: "GET".into(),
            target: "/".into(),
            http10,
            headers: connection
                .map(|c| vec![("Connection".to_string(), c.to_string())])
                .unwrap_or_default(),
        }
    }

    #[test]
    fn keep_alive_rules() {
        assert_eq!(persistence(&head(false, None)), Persist::KeepAlive);
        assert_eq!(persistence(&head(false, Some("Close"))), Persist::Close);
        assert_eq!(persistence(&head(true, None)), Persist::Close);
        assert_eq!(
            persistence(&head(true, Some("Keep-Alive"))),
            Persist::KeepAlive10
        );
        assert_eq!(
            persistence(&head(true, Some("keep-alive, close"))),
            Persist::Close
        );
    }
}
