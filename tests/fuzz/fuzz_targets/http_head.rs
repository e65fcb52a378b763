#![no_main]
//! The edge's request heads (`http/head.rs`): the input (through `edge::stream`: as it is or
//! made into requests, expanded so heads reach past the 16 KiB limit) is what a client sends
//! before closing its side; heads are read one after another from it as from a pipelining
//! client. Each outcome is checked against httparse run on the bytes the edge may buffer (the
//! first `HEAD_LIMIT`; a fault after the last blank line may be seen or not, as the reads
//! fell), so a head is never read past the limit, no byte is lost or read twice between heads,
//! and the buffer never holds more than the limit. The body framing each head declares is
//! checked too.
use hearth::http::parsers::{
    Framing, FramingError, HEAD_LIMIT, Head, HeadError, framing, read_head,
};
use hearth_fuzz::edge::{input_of, stream, timing};
use libfuzzer_sys::fuzz_target;

/// Headers the edge parses at most (`head.rs`'s `MAX_HEADERS`).
const MAX_HEADERS: usize = 128;

#[derive(Debug, PartialEq)]
enum Expected {
    /// A head of this many bytes, with these parts.
    Head(usize, String, String, bool, Vec<(String, String)>),
    Err(HeadError),
    /// httparse needs more bytes.
    More,
}

/// What reading a head from `bytes` may give (one outcome, or two where it depends on how the
/// reads fell).
fn expected(bytes: &[u8]) -> Vec<Expected> {
    if bytes.is_empty() {
        return vec![Expected::Err(HeadError::Quiet)];
    }
    // The edge buffers at most HEAD_LIMIT bytes, and parses what it has buffered each time a
    // read brings a blank line.
    let window = &bytes[..bytes.len().min(HEAD_LIMIT)];
    let short = if bytes.len() >= HEAD_LIMIT {
        Expected::Err(HeadError::TooLarge)
    } else {
        Expected::Err(HeadError::Incomplete)
    };
    let blank_end = |w: &[u8]| {
        let two = w.windows(2).rposition(|x| x == b"\n\n").map(|i| i + 2);
        let three = w.windows(3).rposition(|x| x == b"\n\r\n").map(|i| i + 3);
        two.max(three)
    };
    // A whole head ends with a blank line; a fault is seen only once a blank line has come.
    // (The window is searched only then: searching it for every head of a stream of short
    // pipelined ones made the target run 600 inputs a second.)
    match parse(window) {
        found @ Expected::Head(..) => vec![found],
        Expected::Err(e) => {
            let Some(last_blank) = blank_end(window) else {
                return vec![short];
            };
            match parse(&window[..last_blank]) {
                // The fault comes before the last blank line: seen when that line arrived.
                Expected::Err(_) => vec![Expected::Err(e)],
                // After it: seen only if the read that brought the line brought the fault too.
                _ => vec![Expected::Err(e), short],
            }
        }
        Expected::More => vec![short],
    }
}

/// httparse's answer on `bytes`, as the edge maps it.
fn parse(bytes: &[u8]) -> Expected {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => {
            let mut parsed = Vec::new();
            for h in request.headers.iter() {
                let Ok(value) = std::str::from_utf8(h.value) else {
                    return Expected::Err(HeadError::Malformed);
                };
                parsed.push((h.name.to_string(), value.to_string()));
            }
            Expected::Head(
                n,
                request.method.unwrap_or_default().to_string(),
                request.path.unwrap_or_default().to_string(),
                request.version == Some(0),
                parsed,
            )
        }
        Ok(httparse::Status::Partial) => Expected::More,
        Err(httparse::Error::TooManyHeaders) => Expected::Err(HeadError::TooLarge),
        Err(httparse::Error::Version) => Expected::Err(HeadError::Version),
        Err(_) => Expected::Err(HeadError::Malformed),
    }
}

/// The framing a head declares, as RFC 9112 §6 has it: checked against `framing`'s answer.
fn check_framing(head: &Head) {
    let lengths: Vec<&str> = head
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("Content-Length"))
        .flat_map(|(_, v)| v.split(','))
        .map(str::trim)
        .collect();
    let codings: Vec<&str> = head
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("Transfer-Encoding"))
        .map(|(_, v)| v.as_str())
        .collect();
    match framing(&head.headers, head.http10) {
        Ok(Framing::None) => assert!(lengths.is_empty() && codings.is_empty()),
        Ok(Framing::Length(n)) => {
            assert!(codings.is_empty() && !lengths.is_empty());
            for l in &lengths {
                assert!(l.bytes().all(|b| b.is_ascii_digit()), "length {l:?} taken");
                assert_eq!(
                    l.parse::<u64>().ok(),
                    Some(n),
                    "lengths {lengths:?} taken as {n}"
                );
            }
        }
        Ok(Framing::Chunked) => {
            assert!(lengths.is_empty() && !head.http10);
            assert_eq!(codings.len(), 1, "codings {codings:?} taken as chunked");
            let named: Vec<&str> = codings[0]
                .split(',')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            assert!(named.len() == 1 && named[0].eq_ignore_ascii_case("chunked"));
        }
        Err(FramingError::Ambiguous) => assert!(
            (!lengths.is_empty() && !codings.is_empty())
                || (!codings.is_empty() && head.http10)
                || lengths
                    .iter()
                    .any(|l| l.is_empty() || !l.bytes().all(|b| b.is_ascii_digit()))
                || lengths
                    .windows(2)
                    .any(|w| w[0].parse::<u64>().ok() != w[1].parse::<u64>().ok())
        ),
        Err(FramingError::Unsupported) => assert!(!codings.is_empty()),
        Err(FramingError::Huge) => assert!(lengths.iter().any(|l| l.parse::<u64>().is_err())),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(stream) = stream(data) else {
        return;
    };
    let mut input = input_of(&stream);
    let mut rest: &[u8] = &stream;
    let mut first = true;
    loop {
        let read = read_head(
            &mut input,
            hearth::http::parsers::Timing { first, ..timing() },
        );
        first = false;
        assert!(
            input.pending().len() <= HEAD_LIMIT,
            "{} bytes buffered",
            input.pending().len()
        );
        let want = expected(rest);
        match read {
            Ok(head) => {
                let [Expected::Head(n, method, target, http10, headers)] = &want[..] else {
                    panic!("read a head where {want:?} was expected");
                };
                let n = *n;
                assert!(n <= HEAD_LIMIT);
                assert_eq!(
                    (&head.method, &head.target, head.http10, &head.headers),
                    (method, target, *http10, headers)
                );
                check_framing(&head);
                rest = &rest[n..];
                // What follows the head is still there, whole.
                assert_eq!(input.pending(), &rest[..input.pending().len()]);
            }
            Err(e) => {
                let got = Expected::Err(e);
                assert!(want.contains(&got), "{got:?} where {want:?} was expected");
                return;
            }
        }
    }
});
