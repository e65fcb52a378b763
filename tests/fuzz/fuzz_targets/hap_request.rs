#![no_main]
//! HomeKit's requests (`homekit/http.rs`, over bytes already decrypted): `[limits, step,
//! stream...]` (the stream through `edge::stream`: as it is or made into requests, then
//! expanded). The limits are the listener's (8 KiB head, 64 KiB body) or small ones the input
//! picks, so short inputs reach them. The stream is parsed all at once and again as a
//! connection meets it, `step` bytes at a time (1 to 255, or 4 KiB reads as the listener does;
//! at most 256 pieces), parsing after each: both give the same requests, and both refuse or
//! both wait. Checked for each request: the bytes it took are a head within the limit and its
//! body; its body is within the limit; its path has no query; and while the parser waits for
//! more, what it holds is within the head's and the body's limits.
use hearth::homekit::wire::{Incomplete, Request, parse};
use hearth_fuzz::edge::stream;
use libfuzzer_sys::fuzz_target;

#[derive(Debug, PartialEq)]
enum End {
    /// Waiting for more, holding these bytes.
    More(Vec<u8>),
    Refused(u16, &'static str),
}

/// Parses requests from `buf` until it needs more or refuses, checking each.
fn drain(buf: &mut Vec<u8>, head: usize, body: usize, out: &mut Vec<Request>) -> Option<End> {
    loop {
        let before = buf.clone();
        match parse(buf, head, body) {
            Ok(request) => {
                let taken = before.len() - buf.len();
                assert_eq!(&before[taken..], buf.as_slice(), "not taken from the front");
                assert!(request.body.len() <= body);
                assert!(taken - request.body.len() <= head, "a head over its limit");
                assert_eq!(&before[taken - request.body.len()..taken], request.body);
                assert!(!request.path.contains('?'));
                out.push(request);
            }
            Err(Incomplete::More) => {
                assert_eq!(*buf, before, "changed while waiting");
                assert!(buf.len() <= head + body, "{} bytes held", buf.len());
                return None;
            }
            Err(Incomplete::Refused(status, why)) => {
                assert!(matches!(status, 400 | 411 | 413 | 431), "{status} {why}");
                return Some(End::Refused(status, why));
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let [limits, body_limit, step, rest @ ..] = data else {
        return;
    };
    let Some(stream) = stream(rest) else {
        return;
    };
    let (head, body) = if limits & 0x80 != 0 {
        (8 * 1024, 64 * 1024)
    } else {
        (usize::from(*limits) * 16, usize::from(*body_limit) * 4)
    };
    // At most 256 pieces: each parse reads the whole buffer again.
    let step = if *step == 0 { 4096 } else { usize::from(*step) };
    let step = step.max(stream.len().div_ceil(256));

    let mut whole = stream.clone();
    let mut at_once = Vec::new();
    let end_at_once = drain(&mut whole, head, body, &mut at_once).unwrap_or(End::More(whole));

    let mut buf = Vec::new();
    let mut in_steps = Vec::new();
    let mut end_in_steps = None;
    for piece in stream.chunks(step) {
        buf.extend_from_slice(piece);
        if let Some(end) = drain(&mut buf, head, body, &mut in_steps) {
            end_in_steps = Some(end);
            break;
        }
    }
    let end_in_steps = end_in_steps.unwrap_or(End::More(buf));
    assert_eq!(at_once, in_steps);
    match (&end_at_once, &end_in_steps) {
        (End::More(a), End::More(b)) => assert_eq!(a, b),
        // Refused both ways, maybe for different reasons: a head over the limit is refused
        // as such once that much has arrived, before a fault further on is seen.
        (End::Refused(..), End::Refused(..)) => {}
        _ => panic!("{end_at_once:?} at once, {end_in_steps:?} in steps"),
    }
});
