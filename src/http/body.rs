//! Request bodies: a `Content-Length` or chunked body read under a size limit and a deadline.

use std::time::Instant;

use super::head::{Input, LineError};

/// How a request's body is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    None,
    Length(u64),
    Chunked,
}

/// A framing the edge refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FramingError {
    /// Both `Content-Length` and `Transfer-Encoding` (a smuggling attempt), two different
    /// lengths, a length that is not a number, or chunking on HTTP/1.0: 400.
    Ambiguous,
    /// A transfer coding other than `chunked`: 501.
    Unsupported,
    /// A length of digits too large for any counter (over 2^64 - 1): 413 like any large one.
    Huge,
}

/// The framing `headers` declare (RFC 9112 §6).
pub fn framing(headers: &[(String, String)], http10: bool) -> Result<Framing, FramingError> {
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let mut encoded = false;
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("Content-Length") {
            for part in value.split(',') {
                let part = part.trim();
                if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(FramingError::Ambiguous);
                }
                let n = part.parse::<u64>().map_err(|_| FramingError::Huge)?;
                if length.is_some_and(|l| l != n) {
                    return Err(FramingError::Ambiguous);
                }
                length = Some(n);
            }
        } else if name.eq_ignore_ascii_case("Transfer-Encoding") {
            encoded = true;
            let codings: Vec<&str> = value
                .split(',')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            if chunked || codings.len() != 1 || !codings[0].eq_ignore_ascii_case("chunked") {
                return Err(FramingError::Unsupported);
            }
            chunked = true;
        }
    }
    match (length, encoded) {
        (Some(_), true) => Err(FramingError::Ambiguous),
        (_, true) if http10 => Err(FramingError::Ambiguous),
        (_, true) => Ok(Framing::Chunked),
        (Some(n), false) => Ok(Framing::Length(n)),
        (None, false) => Ok(Framing::None),
    }
}

/// Why a body was not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyError {
    /// Over the limit (a chunked one; a declared length is checked before reading): 413.
    TooLarge,
    /// The client stopped sending, went away or missed the deadline: 400 if it still listens.
    Incomplete,
    /// Chunk framing that is not HTTP: 400.
    Malformed,
}

/// Reads a body of `length` bytes (already checked against the limit).
pub fn read_length(
    input: &mut Input,
    length: usize,
    deadline: Instant,
) -> Result<Vec<u8>, BodyError> {
    // Memory grows with what arrives, not with what is declared.
    let mut body = Vec::with_capacity(length.min(STEP));
    while body.len() < length {
        let start = body.len();
        body.resize(start + (length - start).min(STEP), 0);
        match input.read_into(&mut body[start..], deadline) {
            Ok(0) | Err(_) => return Err(BodyError::Incomplete),
            Ok(n) => body.truncate(start + n),
        }
    }
    Ok(body)
}

/// A body is read this much at a time at most.
const STEP: usize = 64 * 1024;

/// A chunk-size line, with extensions, and a trailer section may be this long at most.
const FRAMING_LIMIT: usize = 4096;

/// Reads a chunked body of at most `limit` bytes; trailers are read and dropped.
pub fn read_chunked(
    input: &mut Input,
    limit: usize,
    deadline: Instant,
) -> Result<Vec<u8>, BodyError> {
    let mut body = Vec::new();
    loop {
        let line = next_line(input, deadline)?;
        let size = super::chunked::chunk_size(&line).ok_or(BodyError::Malformed)?;
        if size == 0 {
            let mut trailers = 0;
            loop {
                let line = next_line(input, deadline)?;
                if line.is_empty() {
                    return Ok(body);
                }
                trailers += line.len();
                if trailers > FRAMING_LIMIT {
                    return Err(BodyError::Malformed);
                }
            }
        }
        if size > (limit - body.len()) as u64 {
            return Err(BodyError::TooLarge);
        }
        let start = body.len();
        body.resize(start + size as usize, 0);
        let mut got = start;
        while got < body.len() {
            match input.read_into(&mut body[got..], deadline) {
                Ok(0) | Err(_) => return Err(BodyError::Incomplete),
                Ok(n) => got += n,
            }
        }
        if !next_line(input, deadline)?.is_empty() {
            return Err(BodyError::Malformed);
        }
    }
}

fn next_line(input: &mut Input, deadline: Instant) -> Result<Vec<u8>, BodyError> {
    input.line(FRAMING_LIMIT, deadline).map_err(|e| match e {
        LineError::TooLong => BodyError::Malformed,
        LineError::Ended => BodyError::Incomplete,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn framings() {
        assert_eq!(framing(&h(&[]), false), Ok(Framing::None));
        assert_eq!(
            framing(&h(&[("content-length", " 12 ")]), false),
            Ok(Framing::Length(12))
        );
        assert_eq!(
            framing(&h(&[("Content-Length", "5, 5")]), false),
            Ok(Framing::Length(5))
        );
        assert_eq!(
            framing(&h(&[("Content-Length", "18446744073709551615")]), false),
            Ok(Framing::Length(u64::MAX))
        );
        assert_eq!(
            framing(&h(&[("Content-Length", "18446744073709551616")]), false),
            Err(FramingError::Huge)
        );
        for bad in ["abc", "-1", "+5", "", "1e3", "0x10"] {
            assert_eq!(
                framing(&h(&[("Content-Length", bad)]), false),
                Err(FramingError::Ambiguous),
                "{bad}"
            );
        }
        assert_eq!(
            framing(
                &h(&[("Content-Length", "5"), ("content-length", "6")]),
                false
            ),
            Err(FramingError::Ambiguous)
        );
        assert_eq!(
            framing(&h(&[("Transfer-Encoding", "Chunked")]), false),
            Ok(Framing::Chunked)
        );
        assert_eq!(
            framing(
                &h(&[("Transfer-Encoding", "chunked"), ("Content-Length", "5")]),
                false
            ),
            Err(FramingError::Ambiguous)
        );
        assert_eq!(
            framing(&h(&[("Transfer-Encoding", "chunked")]), true),
            Err(FramingError::Ambiguous)
        );
        assert_eq!(
            framing(&h(&[("Transfer-Encoding", "gzip, chunked")]), false),
            Err(FramingError::Unsupported)
        );
    }
}
