#![no_main]
//! HomeKit's encrypted session (`hap/session.rs`) once pair-verify has set its keys: the input
//! is a list of operations that build what a controller's connection delivers, which the
//! accessory then reads frame by frame as its connection does (two length bytes, a length
//! `Session::frame_len` allows, that many bytes and the tag, `Session::open`):
//! - `0, n, bytes`: a message the controller seals (the controller's side is a `Session` with
//!   the keys mirrored), as one frame or several;
//! - `1, bytes`: bytes nobody sealed, as they come;
//! - `2, at, mask, n, bytes`: a sealed message with one byte changed;
//! - `3, n, bytes`: a sealed message sent twice (a replay).
//!
//! Checked: every sealed message opens to what was sealed, in order, until the first frame
//! nobody sealed, which never opens (the connection then closes, so nothing after it is
//! read); a frame's length over 1 KiB is refused before it is read; and what the accessory
//! seals the controller opens, counters in step.
use hearth::hap::crypto::TAG_LEN;
use hearth::hap::pair_verify::Verified;
use hearth::hap::session::{MAX_FRAME, Session};
use libfuzzer_sys::fuzz_target;

fn keys(read: u8, write: u8) -> Verified {
    Verified {
        controller: "fuzz".into(),
        read_key: [read; 32],
        write_key: [write; 32],
    }
}

/// Takes `n` bytes (fewer if the input ends).
fn take<'a>(rest: &mut &'a [u8], n: usize) -> &'a [u8] {
    let (a, b) = rest.split_at(n.min(rest.len()));
    *rest = b;
    a
}

fn byte(rest: &mut &[u8]) -> u8 {
    take(rest, 1).first().copied().unwrap_or(0)
}

/// A message's length: a byte, times 8 so that messages of several frames come up.
fn message_len(rest: &mut &[u8]) -> usize {
    usize::from(byte(rest)) * 8
}

/// Seals `plain` as the controller does and appends it to `stream`, noting where each of its
/// frames starts and what it holds; the sealed bytes.
fn seal(
    controller: &mut Session,
    stream: &mut Vec<u8>,
    sealed: &mut Vec<(usize, Vec<u8>)>,
    plain: &[u8],
) -> Vec<u8> {
    let start = stream.len();
    let bytes = controller.seal(plain);
    let mut at = 0;
    for chunk in plain.chunks(MAX_FRAME) {
        sealed.push((start + at, chunk.to_vec()));
        at += 2 + chunk.len() + TAG_LEN;
    }
    assert_eq!(at, bytes.len());
    stream.extend_from_slice(&bytes);
    bytes
}

fuzz_target!(|data: &[u8]| {
    let mut accessory = Session::new(&keys(1, 2));
    let mut controller = Session::new(&keys(2, 1));
    // The stream, and where each frame a controller sealed for it starts, with its plaintext.
    let mut stream = Vec::new();
    let mut sealed: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut rest = data;
    while let Some(op) = rest.first().copied() {
        rest = &rest[1..];
        match op % 4 {
            0 => {
                let n = message_len(&mut rest);
                let plain = take(&mut rest, n).to_vec();
                seal(&mut controller, &mut stream, &mut sealed, &plain);
            }
            1 => {
                let n = usize::from(byte(&mut rest));
                stream.extend_from_slice(take(&mut rest, n));
            }
            2 => {
                let (at, mask) = (usize::from(byte(&mut rest)), byte(&mut rest).max(1));
                let n = message_len(&mut rest);
                let plain = take(&mut rest, n).to_vec();
                let start = stream.len();
                let bytes = seal(&mut controller, &mut stream, &mut sealed, &plain);
                if !bytes.is_empty() {
                    stream[start + at % bytes.len()] ^= mask;
                }
                // Its frames no longer count as sealed from the changed one on.
                let changed = start + at % bytes.len().max(1);
                sealed.retain(|(s, p)| *s + 2 + p.len() + TAG_LEN <= changed);
            }
            _ => {
                let n = message_len(&mut rest);
                let plain = take(&mut rest, n).to_vec();
                let bytes = seal(&mut controller, &mut stream, &mut sealed, &plain);
                stream.extend_from_slice(&bytes);
            }
        }
    }

    // The accessory reads.
    let mut at = 0;
    let mut opened = 0;
    loop {
        let expected = sealed.iter().find(|(s, _)| *s == at).map(|(_, p)| p);
        let Some(header) = stream.get(at..at + 2) else {
            break; // the connection ended
        };
        let header = [header[0], header[1]];
        let Some(len) = Session::frame_len(header) else {
            assert!(expected.is_none(), "a sealed frame's length refused");
            assert!(usize::from(u16::from_le_bytes(header)) > MAX_FRAME);
            break;
        };
        let Some(frame) = stream.get(at + 2..at + 2 + len + TAG_LEN) else {
            break; // the connection ended inside a frame
        };
        match (accessory.open(header, frame), expected) {
            (Ok(plain), Some(p)) => assert_eq!(&plain, p),
            (Ok(plain), None) => panic!("a frame nobody sealed opened: {plain:?}"),
            (Err(_), Some(_)) => panic!("a sealed frame at {at} did not open"),
            (Err(_), None) => break, // the connection closes
        }
        opened += 1;
        at += 2 + len + TAG_LEN;
    }
    assert!(opened <= sealed.len());

    // The other way: what the accessory seals, the controller opens.
    let reply: Vec<u8> = data.iter().rev().copied().collect();
    let bytes = accessory.seal(&reply);
    let mut plain = Vec::new();
    let mut rest = bytes.as_slice();
    while let [h0, h1, tail @ ..] = rest {
        let len = Session::frame_len([*h0, *h1]).expect("a frame the accessory sealed");
        let (frame, tail) = tail.split_at(len + TAG_LEN);
        plain.extend(controller.open([*h0, *h1], frame).expect("opens"));
        rest = tail;
    }
    assert_eq!(plain, reply);
});
