//! A connection's input (a small buffer over its stream, every read under a deadline) and
//! reading a request head from it: at most [`HEAD_LIMIT`] bytes are ever buffered, and the
//! head is parsed by `httparse` (the parser hyper uses, fuzzed upstream). [`parse`] is the one
//! head parser of the crate: HomeKit's requests, which arrive in encrypted frames, are parsed
//! by it too.

use std::io::{self, ErrorKind, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::tls::Stream;

/// Request heads (request line and headers) over this size get 431.
pub const HEAD_LIMIT: usize = 16 * 1024;
/// Headers in one request; more get 431 too.
pub const MAX_HEADERS: usize = 128;
/// Bytes asked of the socket at a time while reading a head or a chunked body's framing.
const READ_SIZE: usize = 4096;

/// A connection's stream and the bytes read from it that are not used yet (the rest of a read
/// that ended a head: a body's start, or a pipelined request).
pub struct Input {
    stream: Stream,
    buf: Vec<u8>,
    pos: usize,
}

impl Input {
    pub fn new(stream: Stream) -> Input {
        Input {
            stream,
            buf: Vec::new(),
            pos: 0,
        }
    }

    /// The stream, to write answers to.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Bytes read and not used yet.
    pub fn pending(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    pub fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.buf.len());
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
            // A big head or chunk framing does not keep its buffer for the connection's life.
            if self.buf.capacity() > 2 * HEAD_LIMIT {
                self.buf = Vec::new();
            }
        }
    }

    /// Reads at most `max` more bytes into the buffer, waiting until `deadline` at most.
    /// `Ok(0)`: the client closed its side. A missed deadline is `ErrorKind::TimedOut`.
    pub fn fill(&mut self, max: usize, deadline: Instant) -> io::Result<usize> {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let start = self.buf.len();
        self.buf.resize(start + max, 0);
        let read = self.stream.read_by(&mut self.buf[start..], deadline);
        self.buf.truncate(start + *read.as_ref().unwrap_or(&0));
        read
    }

    /// Reads into `out`: buffered bytes first, then straight from the socket.
    pub fn read_into(&mut self, out: &mut [u8], deadline: Instant) -> io::Result<usize> {
        let pending = self.pending();
        if !pending.is_empty() {
            let n = pending.len().min(out.len());
            out[..n].copy_from_slice(&pending[..n]);
            self.consume(n);
            return Ok(n);
        }
        self.stream.read_by(out, deadline)
    }

    /// One line (up to `\n`, without its line break), at most `max` bytes long.
    pub fn line(&mut self, max: usize, deadline: Instant) -> Result<Vec<u8>, LineError> {
        let mut searched = 0;
        loop {
            let pending = self.pending();
            if let Some(at) = pending[searched..].iter().position(|b| *b == b'\n') {
                let end = searched + at;
                let mut line = pending[..end].to_vec();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                self.consume(end + 1);
                return Ok(line);
            }
            searched = pending.len();
            if searched > max {
                return Err(LineError::TooLong);
            }
            match self.fill(READ_SIZE, deadline) {
                Ok(0) | Err(_) => return Err(LineError::Ended),
                Ok(_) => {}
            }
        }
    }
}

/// A line that could not be read.
#[derive(Debug, PartialEq, Eq)]
pub enum LineError {
    TooLong,
    /// The connection ended or the deadline passed.
    Ended,
}

/// One read from `stream`, waiting until `deadline` at most.
pub fn read_by(mut stream: &TcpStream, out: &mut [u8], deadline: Instant) -> io::Result<usize> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ErrorKind::TimedOut.into());
        }
        // A zero timeout means "none" to the socket: wait at least a millisecond.
        stream.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        match stream.read(out) {
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                return Err(ErrorKind::TimedOut.into());
            }
            other => return other,
        }
    }
}

/// A parsed request head.
#[derive(Debug)]
pub struct Head {
    pub method: String,
    /// The request target as sent.
    pub target: String,
    pub http10: bool,
    pub headers: Vec<(String, String)>,
}

/// Why no head was read.
#[derive(Debug, PartialEq, Eq)]
pub enum HeadError {
    /// No request began before the connection went quiet (no byte within the wait): nothing
    /// to answer.
    Quiet,
    /// No request began before the client closed (or the connection was shut down).
    Closed,
    /// A request began but its head did not arrive (within the deadline, or at all).
    Incomplete,
    /// Over [`HEAD_LIMIT`] bytes: 431.
    TooLarge,
    /// Over [`MAX_HEADERS`] headers: 431 too.
    TooManyHeaders,
    /// Not an HTTP/1.x request head: 400.
    Malformed,
    /// An HTTP version other than 1.0 or 1.1: 505.
    Version,
}

/// How long a head may take.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// When waiting for a request began (the accept, or the end of the previous request).
    pub since: Instant,
    /// The connection's first request: its head must be complete `head_timeout` after the
    /// accept. A later one may wait `idle_timeout` to begin, then has `head_timeout` from its
    /// first byte.
    pub first: bool,
    pub head_timeout: Duration,
    /// No single wait for bytes lasts longer than this, whatever the head deadline.
    pub idle_timeout: Duration,
}

/// Reads and parses the next request head, consuming it from `input`.
pub fn read(input: &mut Input, timing: Timing) -> Result<Head, HeadError> {
    let mut head_deadline = timing.first.then(|| timing.since + timing.head_timeout);
    let mut searched: usize = 0;
    loop {
        let pending = input.pending();
        if !pending.is_empty() {
            if head_deadline.is_none() {
                head_deadline = Some(Instant::now() + timing.head_timeout);
            }
            // Parse only once the bytes so far can hold a head's end (a blank line).
            let from = searched.saturating_sub(3);
            if pending[from..].windows(2).any(|w| w == b"\n\n")
                || pending[from..].windows(3).any(|w| w == b"\n\r\n")
            {
                if let Some(head) = parse_pending(input)? {
                    return Ok(head);
                }
            }
            searched = input.pending().len();
            if searched >= HEAD_LIMIT {
                return Err(HeadError::TooLarge);
            }
        }
        let began = !input.pending().is_empty();
        let idle = Instant::now() + timing.idle_timeout;
        let deadline = head_deadline.map_or(idle, |d| d.min(idle));
        let room = HEAD_LIMIT - input.pending().len();
        match input.fill(room.min(READ_SIZE), deadline) {
            Ok(0) | Err(_) if began => return Err(HeadError::Incomplete),
            Err(e) if e.kind() == ErrorKind::TimedOut => return Err(HeadError::Quiet),
            Ok(0) | Err(_) => return Err(HeadError::Closed),
            Ok(_) => {}
        }
    }
}

/// The head at the start of `input`'s pending bytes, if they hold a whole one.
fn parse_pending(input: &mut Input) -> Result<Option<Head>, HeadError> {
    let parsed = parse(input.pending(), HEAD_LIMIT)?;
    Ok(parsed.map(|(head, length)| {
        input.consume(length);
        head
    }))
}

/// The request head at the start of `bytes` and its length, if they hold a whole one:
/// `Ok(None)` while more may complete it, [`HeadError::TooLarge`] once it cannot be complete
/// within `limit` bytes (or has more than [`MAX_HEADERS`] headers).
pub fn parse(bytes: &[u8], limit: usize) -> Result<Option<(Head, usize)>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let length = match request.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if bytes.len() >= limit => return Err(HeadError::TooLarge),
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooManyHeaders),
        Err(httparse::Error::Version) => return Err(HeadError::Version),
        Err(_) => return Err(HeadError::Malformed),
    };
    if length > limit {
        return Err(HeadError::TooLarge);
    }
    let text = |bytes: &[u8]| String::from_utf8(bytes.to_vec()).map_err(|_| HeadError::Malformed);
    let head = Head {
        method: request.method.unwrap_or_default().to_string(),
        target: request.path.unwrap_or_default().to_string(),
        http10: request.version == Some(0),
        headers: request
            .headers
            .iter()
            .map(|h| Ok((h.name.to_string(), text(h.value)?)))
            .collect::<Result<_, HeadError>>()?,
    };
    Ok(Some((head, length)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    /// An input fed by `bytes` from a client that then stays connected (or closes: `close`).
    fn input(bytes: &[u8], close: bool) -> (Input, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        client.write_all(bytes).unwrap();
        if close {
            client.shutdown(std::net::Shutdown::Write).unwrap();
        }
        (
            Input::new(Stream::plain(std::sync::Arc::new(server))),
            client,
        )
    }

    fn timing() -> Timing {
        Timing {
            since: Instant::now(),
            first: true,
            head_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(5),
        }
    }

    #[test]
    fn heads_and_what_follows_them() {
        let (mut i, _c) = input(
            b"GET /a?b=1 HTTP/1.1\r\nHost: x\r\nX-Two:  y \r\n\r\nbodyGET / HTTP/1.0\n\n",
            true,
        );
        let head = read(&mut i, timing()).unwrap();
        assert_eq!(
            (head.method.as_str(), head.target.as_str()),
            ("GET", "/a?b=1")
        );
        assert!(!head.http10);
        assert_eq!(head.headers[1], ("X-Two".to_string(), "y".to_string()));
        assert_eq!(&i.pending()[..4], b"body");
        i.consume(4);
        let head = read(&mut i, timing()).unwrap();
        assert!(head.http10);
        assert_eq!(read(&mut i, timing()).unwrap_err(), HeadError::Closed);
    }

    #[test]
    fn refusals() {
        let big = format!("GET / HTTP/1.1\r\nX: {}", "a".repeat(HEAD_LIMIT));
        let (mut i, _c) = input(big.as_bytes(), false);
        assert_eq!(read(&mut i, timing()).unwrap_err(), HeadError::TooLarge);
        assert!(i.pending().len() <= HEAD_LIMIT);
        let (mut i, _c) = input(b"GET / HTTP/2.0\r\n\r\n", true);
        assert_eq!(read(&mut i, timing()).unwrap_err(), HeadError::Version);
        let (mut i, _c) = input(b"GET / HTTP/1.1\r\nX-Bad: \xff\r\n\r\n", true);
        assert_eq!(read(&mut i, timing()).unwrap_err(), HeadError::Malformed);
        let (mut i, _c) = input(b"G(T / HTTP/1.1\r\n\r\n", true);
        assert_eq!(read(&mut i, timing()).unwrap_err(), HeadError::Malformed);
        let (mut i, _c) = input(b"GET / HTTP/1.1\r\nHost", true);
        assert_eq!(read(&mut i, timing()).unwrap_err(), HeadError::Incomplete);
        // A half head from a client that stays: the deadline.
        let (mut i, _c) = input(b"GET /x", false);
        let t = Timing {
            head_timeout: Duration::from_millis(50),
            ..timing()
        };
        assert_eq!(read(&mut i, t).unwrap_err(), HeadError::Incomplete);
    }
}
