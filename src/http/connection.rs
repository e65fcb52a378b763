//! One connection's requests, in order: read a head, read the body under its limit and
//! deadline, have a worker run the handler (inside `catch_unwind`), write the answer; until
//! the client or the answer closes the connection, or a parked reply takes it over.

use std::io::{self, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Instant;

use super::body::{self, BodyError, Framing, FramingError};
use super::head::{self, Head, HeadError, Input, Timing};
use super::listener::{self, Accepted, BodyReservation, PARKED_SEND_TIMEOUT, Shared, Slot};
use super::respond::{self, Answer, Persist};
use super::{ChunkedBody, ChunkedWriter, Method, Reply, Request, find_header};
use crate::util::clock::Stopwatch;

/// What became of the connection after a request.
enum After {
    /// Ready for the next request.
    Next,
    /// Close it (the client asked, or the answer could not be written).
    Close,
    /// Close it after a lingering close (a refusal; the client may still be sending).
    Linger,
    /// A parked reply owns it now.
    Parked,
}

/// Serves `conn` until it closes or is parked.
pub(super) fn serve(shared: &Arc<Shared>, conn: Accepted) {
    let Accepted {
        stream,
        client,
        at,
        slot,
    } = conn;
    let stream = Arc::new(stream);
    let Some(_entry) = shared.enter(&stream) else {
        return;
    };
    let mut slot = Some(slot);
    let mut input = Input::new(Arc::clone(&stream));
    let mut timing = Timing {
        since: at,
        first: true,
        head_timeout: shared.limits.head_timeout,
        idle_timeout: shared.limits.idle_timeout,
    };
    loop {
        let after = match head::read(&mut input, timing) {
            Ok(head) => request(shared, &stream, &mut input, head, client, &mut slot),
            Err(HeadError::Quiet | HeadError::Incomplete) => After::Close,
            Err(e) => {
                let (status, message) = match e {
                    HeadError::TooLarge => (431, "Request header fields too large"),
                    HeadError::Version => (505, "HTTP version not supported"),
                    _ => (400, "Malformed request"),
                };
                log::info!("{client}: refused a request head ({status} {message})");
                shared.limits.answered.count(status);
                let refusal = shared.service.refusal(Method::Other, "", status, message);
                let _ = respond::send(&*stream, &refusal, Answer::REFUSAL);
                After::Linger
            }
        };
        match after {
            After::Next if !shared.stopping() => {}
            After::Next | After::Close => return,
            After::Linger => return listener::linger(&stream),
            After::Parked => return,
        }
        timing.since = Instant::now();
        timing.first = false;
    }
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

/// Reads one request's body, runs its handler and answers it.
fn request(
    shared: &Shared,
    stream: &Arc<TcpStream>,
    input: &mut Input,
    head: Head,
    client: SocketAddr,
    slot: &mut Option<Slot>,
) -> After {
    let started = Stopwatch::start();
    let service = &*shared.service;
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
    // Held until the handler has answered: the body is in memory until then.
    let body = framing(&head, limit).and_then(|framing| {
        let reserved = reserve(shared, client, framing, limit)?;
        let body = read_body(shared, stream, input, &head, framing, limit)?;
        Ok((body, reserved))
    });
    let (body, _reserved) = match body {
        Ok(read) => read,
        Err(refused) => {
            log::info!(
                "{} {} -> {} ({})",
                head.method,
                crate::util::logged(&redact(&head.target)),
                refused.status,
                refused.why
            );
            shared.limits.answered.count(refused.status);
            let refusal = service.refusal(method, path, refused.status, refused.message);
            let _ = respond::send(&**stream, &refusal, answer(Persist::Close));
            return After::Linger;
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
    let (after, status) = match shared.handle(request) {
        Ok(Reply::Full(response)) => {
            // Counted before it is sent: a client that has its answer finds it counted.
            shared.limits.answered.count(response.status);
            let sent = respond::send(&**stream, &response, answer(persist));
            let after = match (sent, persist) {
                (Ok(()), Persist::KeepAlive | Persist::KeepAlive10) => After::Next,
                _ => After::Close,
            };
            (after, response.status)
        }
        Ok(Reply::Chunked(reply)) => {
            shared.limits.answered.count(200);
            (chunked(stream, reply, slot), 200)
        }
        Err(_) => {
            log::error!(
                "a request handler panicked; the client got a 500 and the server keeps serving"
            );
            let response = service.refusal(method, path, 500, "Internal server error");
            shared.limits.answered.count(500);
            let _ = respond::send(&**stream, &response, answer(Persist::Close));
            (After::Close, 500)
        }
    };
    log::debug!(
        "{} {} -> {status} ({} ms)",
        head.method,
        crate::util::logged(&redact(&head.target)),
        started.elapsed().as_millis()
    );
    after
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
) -> Result<BodyReservation<'_>, Refused> {
    let bytes = match framing {
        Framing::None | Framing::Length(0) => 0,
        Framing::Length(n) => n as usize,
        Framing::Chunked => limit,
    };
    shared
        .reserve_body(crate::util::client_key(client.ip()), bytes)
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
    stream: &Arc<TcpStream>,
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
            let _ = (&**stream).write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
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

/// Sends a chunked reply; a parked one takes the socket and the connection's slot with it.
fn chunked(stream: &Arc<TcpStream>, reply: super::ChunkedReply, slot: &mut Option<Slot>) -> After {
    match reply.body {
        ChunkedBody::Now(chunk) => {
            let mut w = ChunkedWriter::new(Box::new(Parked {
                stream: Arc::clone(stream),
                _slot: None,
            }));
            let _ = w
                .head(&reply.headers)
                .and_then(|()| w.chunk(&chunk))
                .and_then(|()| w.end());
            After::Close
        }
        ChunkedBody::Park(park) => {
            // The reply says `Connection: close`: nothing more is read from this client, and a
            // client that stops reading is given up after a short blocked write.
            if let Err(e) = stream.shutdown(Shutdown::Read) {
                log::debug!("could not stop reading a parked connection: {e}");
            }
            if let Err(e) = stream.set_write_timeout(Some(PARKED_SEND_TIMEOUT)) {
                log::debug!("could not shorten a parked connection's send timeout: {e}");
            }
            let mut w = ChunkedWriter::new(Box::new(Parked {
                stream: Arc::clone(stream),
                _slot: slot.take(),
            }));
            // If the head could not be written, dropping `park` frees what it holds.
            if w.head(&reply.headers).is_ok() {
                park(w);
            }
            After::Parked
        }
    }
}

/// A connection's socket as a chunked reply's writer, holding the connection's slot in the
/// counts until it is dropped.
struct Parked {
    stream: Arc<TcpStream>,
    _slot: Option<Slot>,
}

impl Write for Parked {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self.stream).write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        (&*self.stream).write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
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
