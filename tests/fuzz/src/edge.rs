//! What the HTTP targets share: a connection's input holding given bytes, and long inputs
//! made from short ones.

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hearth::http::parsers::{Input, Stream, Timing};

/// The most bytes a target sends through [`input_of`] (a socket pair buffers about 200 KiB
/// before a write would wait for a reader).
pub const MAX_STREAM: usize = 128 * 1024;

/// A connection's input that reads `bytes` and then the end of the stream (the client closed
/// its side). A Unix socket pair stands in for the TCP connection: the edge only reads from its
/// socket and sets read timeouts, which behave the same on both, and a million inputs cost no
/// ports (loopback TCP would leave a million sockets in TIME_WAIT).
pub fn input_of(bytes: &[u8]) -> Input {
    assert!(bytes.len() <= MAX_STREAM, "a stream over MAX_STREAM");
    let (mut client, server) = UnixStream::pair().expect("a socket pair");
    client.write_all(bytes).expect("the stream written");
    client
        .shutdown(Shutdown::Write)
        .expect("the client's side closed");
    Input::new(Stream::plain(Arc::new(TcpStream::from(OwnedFd::from(
        server,
    )))))
}

/// The timing of a connection's first request, with deadlines no input waits for (the stream
/// always ends).
pub fn timing() -> Timing {
    Timing {
        since: Instant::now(),
        first: true,
        head_timeout: Duration::from_secs(30),
        idle_timeout: Duration::from_secs(30),
    }
}

/// A deadline no input waits for.
pub fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(30)
}

/// The most bytes [`expand`] inserts: past every limit the targets meet (a 16 KiB head, an
/// 8 KiB chunk-size line), and no more, since the time an input takes grows with it.
pub const MAX_EXPAND: usize = 20 * 1024;

/// Inputs longer than libFuzzer's few KiB, from short ones: `[len: u16 LE, at: u16 LE, unit:
/// u8, bytes...]` is `bytes` with `len` (modulo `MAX_EXPAND + 1`) bytes inserted at `at`
/// (clamped), made by repeating `bytes[at..at + unit]` (a header line repeated past the head's
/// limit, a long chunk-size line); `None` for an input shorter than its five bytes of layout.
pub fn expand(data: &[u8]) -> Option<Vec<u8>> {
    let [l0, l1, a0, a1, unit, bytes @ ..] = data else {
        return None;
    };
    let len = usize::from(u16::from_le_bytes([*l0, *l1])) % (MAX_EXPAND + 1);
    let at = usize::from(u16::from_le_bytes([*a0, *a1])).min(bytes.len());
    let unit = &bytes[at..(at + usize::from(*unit)).min(bytes.len())];
    let mut out = Vec::with_capacity(bytes.len() + len);
    out.extend_from_slice(&bytes[..at]);
    if !unit.is_empty() {
        out.extend(unit.iter().cycle().take(len));
    }
    out.extend_from_slice(&bytes[at..]);
    out.truncate(MAX_STREAM);
    Some(out)
}

/// Requests made from bytes, so that most inputs are heads a parser accepts and the fuzzer
/// varies their parts: fields are separated by 0 bytes; a request is `[method, version,
/// flags, target...]` (flags: bit 0 CRLF or LF line ends, bits 1–4 how many header fields
/// follow), then each header field `[name, value...]` (names a parser or a surface looks for,
/// values any bytes), then what follows the blank line (a body, or the next request's bytes).
pub fn requests(data: &[u8]) -> Vec<u8> {
    const METHODS: [&[u8]; 6] = [b"GET", b"PUT", b"POST", b"DELETE", b"HEAD", b"OPTIONS"];
    const VERSIONS: [&[u8]; 4] = [b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0", b"HTTP/1.1"];
    const NAMES: [&[u8]; 8] = [
        b"Host",
        b"Content-Length",
        b"Transfer-Encoding",
        b"content-length",
        b"Origin",
        b"Sec-Fetch-Site",
        b"X-Fuzz",
        b"",
    ];
    let mut out = Vec::new();
    let mut fields = data.split(|b| *b == 0);
    while let Some(first) = fields.next() {
        let [method, version, flags, target @ ..] = first else {
            break;
        };
        let eol: &[u8] = if flags & 1 != 0 { b"\r\n" } else { b"\n" };
        out.extend_from_slice(METHODS[usize::from(*method) % METHODS.len()]);
        out.extend_from_slice(b" /");
        out.extend_from_slice(target);
        out.push(b' ');
        out.extend_from_slice(VERSIONS[usize::from(*version) % VERSIONS.len()]);
        out.extend_from_slice(eol);
        for _ in 0..(flags >> 1) % 16 {
            let Some([name, value @ ..]) = fields.next() else {
                break;
            };
            out.extend_from_slice(NAMES[usize::from(*name) % NAMES.len()]);
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(eol);
        }
        out.extend_from_slice(eol);
        out.extend_from_slice(fields.next().unwrap_or_default());
    }
    out
}

/// The stream a head target reads: `[mode, layout (5 bytes, see [`expand`]), bytes...]`, the
/// bytes as they are (even modes) or made into [`requests`] (odd), then expanded.
pub fn stream(data: &[u8]) -> Option<Vec<u8>> {
    let [mode, l0, l1, a0, a1, unit, bytes @ ..] = data else {
        return None;
    };
    if mode & 1 == 0 {
        return expand(&data[1..]);
    }
    let mut made = vec![*l0, *l1, *a0, *a1, *unit];
    made.extend_from_slice(&requests(bytes));
    expand(&made)
}
