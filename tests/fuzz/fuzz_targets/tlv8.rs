#![no_main]
//! HAP's TLV8 (`hap/tlv.rs`), both ways. The input is decoded as a message (what a controller
//! sends); and it is read as a list of items (`[kind, len: u16 LE, bytes]`, values up to
//! 65,535 bytes, so long ones are fragmented) that is encoded and decoded back. Checked: a
//! decoded message's values are the input's bytes, in order, with fragments joined; an encoded
//! message decodes to its items; the encoding's length is what fragmenting gives; `get` and
//! `byte` find the first item of a kind.
//!
//! One case is written into the check rather than asserted away: an item whose length is a
//! non-zero multiple of 255 followed by an item of the same kind decodes as one item (its last
//! fragment is full, so the next is read as a continuation). HAP puts a separator between two
//! items of one kind, as hearth's `/pairings` list does, so hearth never encodes that pair.
use hearth::hap::tlv::Tlv;
use libfuzzer_sys::fuzz_target;

/// The items `decode(encode(items))` gives: an item merged into the one before it when that
/// one is of the same kind and ends with a full fragment.
fn after_round_trip(items: &[(u8, Vec<u8>)]) -> Vec<(u8, Vec<u8>)> {
    let mut out: Vec<(u8, Vec<u8>)> = Vec::new();
    // Whether the item before was written with a full last fragment.
    let mut full = false;
    for (kind, value) in items {
        match out.last_mut() {
            Some((k, v)) if k == kind && full => v.extend_from_slice(value),
            _ => out.push((*kind, value.clone())),
        }
        full = !value.is_empty() && value.len() % 255 == 0;
    }
    out
}

fn encoded_len(items: &[(u8, Vec<u8>)]) -> usize {
    items
        .iter()
        .map(|(_, v)| v.len() + 2 * v.len().div_ceil(255).max(1))
        .sum()
}

fn check_lookups(tlv: &Tlv) {
    for kind in [0u8, 1, 6, 0xFF] {
        let first = tlv.items().iter().find(|(k, _)| *k == kind);
        assert_eq!(tlv.get(kind), first.map(|(_, v)| v.as_slice()));
        let byte = match first {
            Some((_, v)) if v.len() == 1 => Some(v[0]),
            _ => None,
        };
        assert_eq!(tlv.byte(kind), byte);
    }
}

fuzz_target!(|data: &[u8]| {
    // As received.
    if let Ok(tlv) = Tlv::decode(data) {
        let joined: Vec<u8> = tlv.items().iter().flat_map(|(_, v)| v.clone()).collect();
        let payload: Vec<u8> = {
            let (mut rest, mut out) = (data, Vec::new());
            while let [_, len, tail @ ..] = rest {
                out.extend_from_slice(&tail[..usize::from(*len)]);
                rest = &tail[usize::from(*len)..];
            }
            out
        };
        assert_eq!(joined, payload, "values lost or added");
        check_lookups(&tlv);
        let items = tlv.items().to_vec();
        let back = Tlv::decode(&tlv.encode()).expect("an encoded message decodes");
        assert_eq!(back.items(), after_round_trip(&items).as_slice());
    }
    // As items to send.
    let mut tlv = Tlv::new();
    let mut items = Vec::new();
    let mut rest = data;
    while let [kind, l0, l1, tail @ ..] = rest {
        let len = usize::from(u16::from_le_bytes([*l0, *l1])).min(tail.len());
        tlv.push(*kind, &tail[..len]);
        items.push((*kind, tail[..len].to_vec()));
        rest = &tail[len..];
    }
    assert_eq!(tlv.items(), items.as_slice());
    let bytes = tlv.encode();
    assert_eq!(bytes.len(), encoded_len(&items));
    let back = Tlv::decode(&bytes).expect("an encoded message decodes");
    assert_eq!(back.items(), after_round_trip(&items).as_slice());
    check_lookups(&back);
});
