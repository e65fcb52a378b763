#![no_main]
//! The edge's request bodies (`http/body.rs`, `http/chunked.rs`). The first byte picks a mode,
//! the next two a body limit (0 to 65,535 bytes, or the edge's 1 MiB):
//! - raw: the rest (through `edge::expand`) as a chunked body on the wire, decoded by the edge
//!   and by a reference decoder written from RFC 9112 §7.1: the same body or the same refusal,
//!   never more than the limit kept, never more than two framing lines buffered;
//! - round trip: the rest cut into chunks, written by `ChunkedWriter`, followed by bytes that
//!   are not the body's: read back whole (or refused as too large), and exactly the written
//!   bytes consumed (the bytes after are still there for `read_length`);
//! - length: the rest read as a `Content-Length` body of the limit's size;
//! - framed: the rest made into a chunked body in the forms the RFC allows (upper- and
//!   lower-case hex, leading zeros, spaces, extensions, LF or CRLF, trailers), decoded by the
//!   edge and the reference: the same outcome, and the body written.
use std::io::Write;
use std::sync::{Arc, Mutex};

use hearth::http::ChunkedWriter;
use hearth::http::parsers::{BodyError, read_chunked, read_length};
use hearth_fuzz::edge::{MAX_STREAM, deadline, expand, input_of};
use libfuzzer_sys::fuzz_target;

/// `body.rs`'s `FRAMING_LIMIT`: a chunk-size line, and a trailer section, may be this long.
const FRAMING_LIMIT: usize = 4096;
/// What the input may buffer while it looks for a framing line's end: the limit and one read
/// (`head.rs`'s `READ_SIZE`).
const FRAMING_BUFFER: usize = FRAMING_LIMIT + 4096;

/// What the reference decoder found: the outcome, and whether a framing line was longer than
/// the limit (where the edge may refuse earlier, depending on how its reads fell).
struct Reference {
    outcome: Result<Vec<u8>, BodyError>,
    long_line: bool,
}

/// RFC 9112 §7.1's chunked body, as the edge documents it: sizes of 1 to 16 hex digits (after
/// trimming, before any `;` extension), CRLF or LF line ends, trailers read and dropped (at
/// most `FRAMING_LIMIT` bytes of them), more than `limit` bytes refused as soon as a chunk's
/// size says so.
fn reference(mut bytes: &[u8], limit: usize) -> Reference {
    let mut long_line = false;
    let mut line = |bytes: &mut &[u8]| -> Option<Vec<u8>> {
        let Some(end) = bytes.iter().position(|b| *b == b'\n') else {
            // The edge gives up on a line's end once it has buffered more than the limit.
            long_line |= bytes.len() > FRAMING_LIMIT;
            return None;
        };
        let mut l = bytes[..end].to_vec();
        *bytes = &bytes[end + 1..];
        if l.last() == Some(&b'\r') {
            l.pop();
        }
        long_line |= l.len() > FRAMING_LIMIT;
        Some(l)
    };
    let mut body = Vec::new();
    let outcome = loop {
        let Some(size_line) = line(&mut bytes) else {
            break Err(BodyError::Incomplete);
        };
        let digits = size_line.split(|b| *b == b';').next().unwrap_or_default();
        let size = std::str::from_utf8(digits)
            .ok()
            .map(str::trim)
            .and_then(|d| {
                let hex =
                    !d.is_empty() && d.len() <= 16 && d.bytes().all(|b| b.is_ascii_hexdigit());
                hex.then(|| u64::from_str_radix(d, 16).ok()).flatten()
            });
        let Some(size) = size else {
            break Err(BodyError::Malformed);
        };
        if size == 0 {
            let mut trailers = 0;
            break loop {
                match line(&mut bytes) {
                    None => break Err(BodyError::Incomplete),
                    Some(l) if l.is_empty() => break Ok(std::mem::take(&mut body)),
                    Some(l) => {
                        trailers += l.len();
                        if trailers > FRAMING_LIMIT {
                            break Err(BodyError::Malformed);
                        }
                    }
                }
            };
        }
        if size > (limit - body.len()) as u64 {
            break Err(BodyError::TooLarge);
        }
        let size = size as usize;
        if bytes.len() < size {
            break Err(BodyError::Incomplete);
        }
        body.extend_from_slice(&bytes[..size]);
        bytes = &bytes[size..];
        match line(&mut bytes) {
            None => break Err(BodyError::Incomplete),
            Some(l) if !l.is_empty() => break Err(BodyError::Malformed),
            Some(_) => {}
        }
    };
    Reference { outcome, long_line }
}

/// A writer whose bytes the target reads back.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn raw(data: &[u8], limit: usize) {
    let Some(stream) = expand(data) else {
        return;
    };
    let mut input = input_of(&stream);
    let read = read_chunked(&mut input, limit, deadline());
    assert!(
        input.pending().len() <= FRAMING_BUFFER,
        "{} bytes buffered",
        input.pending().len()
    );
    let want = reference(&stream, limit);
    if let Ok(body) = &read {
        assert!(
            body.len() <= limit,
            "{} bytes over a limit of {limit}",
            body.len()
        );
    }
    if want.long_line && read == Err(BodyError::Malformed) {
        return; // a framing line over the limit, refused as soon as the edge saw it
    }
    assert_eq!(read, want.outcome);
}

fn round_trip(data: &[u8], limit: usize) {
    // [after: u8, (len: u8, bytes)...]: the chunks, then `after` bytes that follow the body.
    let Some((&after, mut rest)) = data.split_first() else {
        return;
    };
    let written = Shared::default();
    let mut writer = ChunkedWriter::new(Box::new(written.clone()));
    let mut body = Vec::new();
    while let Some((&len, tail)) = rest.split_first() {
        let chunk = &tail[..usize::from(len).min(tail.len())];
        writer.chunk(chunk).expect("written");
        body.extend_from_slice(chunk);
        rest = &tail[chunk.len()..];
    }
    writer.end().expect("written");
    let mut stream = written.0.lock().expect("not poisoned").clone();
    let follows: Vec<u8> = (0..after).collect();
    stream.extend_from_slice(&follows);
    if stream.len() > MAX_STREAM {
        return;
    }
    let mut input = input_of(&stream);
    let read = read_chunked(&mut input, limit, deadline());
    if body.len() > limit {
        assert_eq!(read, Err(BodyError::TooLarge));
        return;
    }
    assert_eq!(read, Ok(body));
    assert_eq!(
        read_length(&mut input, follows.len(), deadline()),
        Ok(follows),
        "the bytes after the body"
    );
    let mut more = [0u8; 1];
    assert_eq!(input.read_into(&mut more, deadline()).ok(), Some(0));
}

/// A chunked body in the forms RFC 9112 allows and clients use: `[style, bytes...]` per chunk
/// (fields apart by 0 bytes; an empty one is no chunk, since a chunk of size 0 ends the body),
/// a style's bits picking upper-case hex, CRLF or LF, an extension, leading zeros, spaces
/// around the size, and (bit 7) the last chunk, whose bytes are then trailer lines.
fn framed(data: &[u8], limit: usize) {
    let mut stream = Vec::new();
    let mut body = Vec::new();
    let mut ended = false;
    for field in data.split(|b| *b == 0) {
        let Some((&style, bytes)) = field.split_first() else {
            continue;
        };
        let eol: &[u8] = if style & 0x02 != 0 { b"\r\n" } else { b"\n" };
        let last = style & 0x80 != 0;
        if bytes.is_empty() && !last {
            // A chunk of size 0 is the last chunk: the body would end here.
            continue;
        }
        let size = if last { 0 } else { bytes.len() };
        let mut line = "0".repeat(usize::from(style >> 3 & 3));
        line.push_str(&if style & 0x01 != 0 {
            format!("{size:X}")
        } else {
            format!("{size:x}")
        });
        if style & 0x20 != 0 {
            line = format!(" {line}\t");
        }
        if style & 0x04 != 0 {
            line.push_str(";name=\"v;1\"");
        }
        stream.extend_from_slice(line.as_bytes());
        stream.extend_from_slice(eol);
        if last {
            for trailer in bytes.split(|b| *b == b'\n') {
                stream.extend_from_slice(trailer);
                stream.extend_from_slice(eol);
            }
            stream.extend_from_slice(eol);
            ended = true;
            break;
        }
        stream.extend_from_slice(bytes);
        stream.extend_from_slice(if style & 0x40 != 0 { b"\r\n" } else { b"\n" });
        body.extend_from_slice(bytes);
    }
    if !ended {
        stream.extend_from_slice(b"0\r\n\r\n");
    }
    let mut input = input_of(&stream);
    let read = read_chunked(&mut input, limit, deadline());
    let want = reference(&stream, limit);
    if let Ok(got) = &want.outcome {
        assert_eq!(got, &body, "the reference decoder");
    }
    if want.long_line && read == Err(BodyError::Malformed) {
        return;
    }
    assert_eq!(read, want.outcome);
}

fn length(data: &[u8], length: usize) {
    if data.len() > MAX_STREAM {
        return;
    }
    let mut input = input_of(data);
    let read = read_length(&mut input, length, deadline());
    if data.len() >= length {
        assert_eq!(read.as_deref(), Ok(&data[..length]));
    } else {
        assert_eq!(read, Err(BodyError::Incomplete));
    }
}

fuzz_target!(|data: &[u8]| {
    let [mode, l0, l1, rest @ ..] = data else {
        return;
    };
    let limit = match u16::from_le_bytes([*l0, *l1]) {
        u16::MAX => hearth::http::BODY_LIMIT,
        n => usize::from(n),
    };
    match mode % 4 {
        0 => raw(rest, limit),
        1 => round_trip(rest, limit),
        2 => length(rest, limit),
        _ => framed(rest, limit),
    }
});
