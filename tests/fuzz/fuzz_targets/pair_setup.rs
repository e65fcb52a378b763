#![no_main]
//! Pair-setup's messages (`hap/pair_setup.rs`) without its arithmetic: the exchange is put
//! past M4 by `PairSetup::proven` with a known SRP key (what M1–M4 would have agreed), so M5's
//! handling (unsealing, the sub-message, the controller's signature, storing the pairing, M6)
//! runs at full speed. The accessory is paired already, as one is when a second controller
//! tries, so an M1 is refused before any arithmetic; `pair_setup_srp` runs M1 and M3 for real.
//! `[flags, data...]`: flags pick the connection (the exchange's or another), the identity
//! (one pairing, or all 16 taken) and whether the exchange is held at all; `data` is M5 as
//! `controller::m5` reads it. Each answer is checked against what HAP requires (see `m5`),
//! the pairings afterwards too, and a refused M5 changes nothing.
use std::sync::OnceLock;

use hearth::hap::identity::{Identity, MAX_PAIRINGS, Pairing};
use hearth::hap::pair_setup::PairSetup;
use hearth::hap::tlv::{TlvError, error, kind};
use hearth::util::clock::Clock;
use hearth_fuzz::controller::{self, Controller, restore};
use libfuzzer_sys::fuzz_target;

struct Harness {
    controller: Controller,
    /// Paired with one other controller.
    one: (Identity, Vec<Pairing>),
    /// Paired with [`MAX_PAIRINGS`] controllers.
    full: (Identity, Vec<Pairing>),
    srp_key: Vec<u8>,
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        let controller = Controller::new("fuzz-controller");
        let paired = |name: &str, n: usize| {
            let identity = controller::identity(name);
            let pairings: Vec<Pairing> = (0..n)
                .map(|i| Controller::new(&format!("other-{i}")).pairing())
                .collect();
            restore(&identity, &pairings);
            (identity, pairings)
        };
        Harness {
            one: paired("setup-one", 1),
            full: paired("setup-full", MAX_PAIRINGS),
            // A SHA-512 output's length, as SRP's K is.
            srp_key: (0..64).collect(),
            controller,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let h = harness();
    let (identity, pairings) = if flags & 0x01 != 0 { &h.full } else { &h.one };
    let holder = (flags & 0x02 == 0).then_some(1);
    let connection = if flags & 0x04 != 0 { 2 } else { 1 };
    let setup = match holder {
        Some(c) => PairSetup::proven(Clock::system(), c, h.srp_key.clone()),
        None => PairSetup::new(Clock::system()),
    };
    // A paired accessory refuses M1 (and so takes no exchange over).
    let m1 = hearth::hap::tlv::Tlv::new()
        .with(kind::STATE, &[1])
        .with(kind::METHOD, &[0]);
    if flags & 0x08 != 0 {
        assert_eq!(
            setup.handle(connection, identity, &m1),
            error(2, TlvError::Unavailable)
        );
    }
    controller::m5(
        &setup,
        connection,
        holder,
        identity,
        &h.controller,
        &h.srp_key,
        rest,
    );
    restore(identity, pairings);
});
