#![no_main]
//! Pair-setup's M1–M4 (`hap/pair_setup.rs`, `hap/srp.rs`) on an unpaired accessory, SRP
//! arithmetic included, in a small group: `PairSetup::over` with `Group::hap_over` (HAP's
//! generator and hash, the prime 2^64 - 59), since in HAP's 3072-bit group an exchange, as
//! instrumented for fuzzing, takes about a tenth of a second (8 inputs a second were run). Each
//! process first runs one whole pair-setup in HAP's own group (M1–M6, a real controller),
//! checked the same way, so the 3072-bit arithmetic is met and checked on every run.
//!
//! One pair-setup lives as long as the process, as the listener's does, so its offer (M2, made
//! by the first M1) answers every M1 until an M3 spends it. Each input starts alike: nothing
//! proven, the offer sent to connection 1 only (its M2 carries a `B` of the group's length and
//! a 16-byte salt). `[step, data...]`:
//! - 0: `data` is `[connection, request...]` (TLV8) from connection 1 (sent the offer) or 2
//!   (not sent it);
//! - 1: the same after connection 2 has sent a real M1 (and been sent the same offer);
//! - 2: a real controller's M3 (private value from `data`, which knows the setup code), its M4
//!   checked against that controller's own SRP arithmetic (`controller::srp`), then the rest of
//!   `data` as M5 (`controller::m5`); a pairing it makes is removed again.
//!
//! Checked in steps 0 and 1: an M1 is answered with the one offer (the same bytes) or refused
//! for its method; an M3 with `A` and a proof from a connection sent the offer is a wrong code
//! (`Authentication`), counted once, and spends the offer (the same M3 again is `Unknown` and
//! not counted); every other request is refused (`Unknown`, the next state) and changes
//! nothing: the count is the same and an M1 is answered with the same offer afterwards.
//! `pair_setup` fuzzes M5 apart from this (`PairSetup::proven`).
use std::sync::OnceLock;

use hearth::hap::identity::Identity;
use hearth::hap::pair_setup::{MAX_FAILURES, PairSetup};
use hearth::hap::srp::Group;
use hearth::hap::tlv::{Tlv, TlvError, error, kind};
use hearth::util::clock::Clock;
use hearth_fuzz::controller::{self, Controller, restore, srp};
use libfuzzer_sys::fuzz_target;

struct Harness {
    identity: Identity,
    controller: Controller,
    /// In the small group.
    setup: PairSetup,
}

fn small() -> Group {
    Group::hap_over(srp::N_SMALL)
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        let h = Harness {
            identity: controller::identity("setup-srp"),
            controller: Controller::new("fuzz-controller"),
            setup: PairSetup::over(Clock::system(), small),
        };
        // One whole pair-setup in HAP's group.
        let hap = PairSetup::new(Clock::system());
        let offer = hap.handle(1, &h.identity, &m1());
        exchange(&h, &hap, srp::N_3072, &offer, &[0x80; 32], &[2]);
        assert!(h.identity.pairings().is_empty());
        h
    })
}

fn m1() -> Tlv {
    Tlv::new().with(kind::STATE, &[1]).with(kind::METHOD, &[0])
}

/// Checks an M2 in the group of `n_hex` and gives its salt and `B`.
fn m2(reply: &Tlv, n_hex: &str) -> (Vec<u8>, Vec<u8>) {
    assert_eq!(reply.byte(kind::STATE), Some(2));
    assert_eq!(reply.get(kind::ERROR), None, "{reply:?}");
    let salt = reply.get(kind::SALT).expect("a salt").to_vec();
    let b_pub = reply.get(kind::PUBLIC_KEY).expect("B").to_vec();
    assert_eq!((salt.len(), b_pub.len()), (16, srp::len(n_hex)));
    (salt, b_pub)
}

/// A real controller's M3 (private value `a`) on `offer` (M2 in the group of `n_hex`, sent to
/// connection 1), M4 checked against the controller's own arithmetic, then `m5` as
/// `controller::m5` reads it; a pairing it makes is removed again.
fn exchange(h: &Harness, setup: &PairSetup, n_hex: &str, offer: &Tlv, a: &[u8; 32], m5: &[u8]) {
    let identity = &h.identity;
    let (salt, b_pub) = m2(offer, n_hex);
    let proof = srp::client(n_hex, &salt, &b_pub, &identity.setup_code(), a);
    let m3 = Tlv::new()
        .with(kind::STATE, &[3])
        .with(kind::PUBLIC_KEY, &proof.a_pub)
        .with(kind::PROOF, &proof.proof);
    let failures = identity.setup_failures();
    let m4 = setup.handle(1, identity, &m3);
    assert_eq!(
        m4,
        Tlv::new()
            .with(kind::STATE, &[4])
            .with(kind::PROOF, &proof.expected)
    );
    assert_eq!(identity.setup_failures(), failures);
    controller::m5(setup, 1, Some(1), identity, &h.controller, &proof.key, m5);
    restore(identity, &[]);
}

/// A request of `connection` on the offer `offer`, which connection 1 (and 2 if `both`) was
/// sent.
fn on_offer(h: &Harness, offer: &Tlv, both: bool, connection: u64, request: &Tlv) {
    let (identity, setup) = (&h.identity, &h.setup);
    let failures = identity.setup_failures();
    let reply = setup.handle(connection, identity, request);
    let state = request.byte(kind::STATE).unwrap_or(0);
    let sent = connection == 1 || both;
    match state {
        1 if matches!(request.byte(kind::METHOD), Some(0 | 1) | None) => {
            assert_eq!(&reply, offer, "an M1 not answered with the offer");
        }
        3 if sent
            && request.get(kind::PUBLIC_KEY).is_some()
            && request.get(kind::PROOF).is_some() =>
        {
            // A wrong code (nobody but a controller that was told it knows it): counted once,
            // and the offer spent.
            assert_eq!(reply, error(4, TlvError::Authentication));
            assert_eq!(identity.setup_failures(), failures + 1);
            assert_eq!(
                setup.handle(connection, identity, request),
                error(4, TlvError::Unknown),
                "a spent offer answered"
            );
            assert_eq!(identity.setup_failures(), failures + 1);
            return;
        }
        _ => assert_eq!(reply, error(state.saturating_add(1), TlvError::Unknown)),
    }
    // Nothing changed: no failure counted, and the same offer.
    assert_eq!(identity.setup_failures(), failures);
    assert_eq!(&setup.handle(1, identity, &m1()), offer);
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, rest)) = data.split_first() else {
        return;
    };
    let h = harness();
    let (identity, setup) = (&h.identity, &h.setup);
    // Keep clear of the lockout (which a reset lifts, as `hearth homekit reset` does).
    if identity.setup_failures() >= MAX_FAILURES - 2 {
        identity.reset().expect("reset");
    }
    setup.abandon(1);
    setup.abandon(2);
    let offer = setup.handle(1, identity, &m1());
    m2(&offer, srp::N_SMALL);
    match step % 3 {
        mode @ (0 | 1) => {
            let Some((&connection, rest)) = rest.split_first() else {
                return;
            };
            let Ok(request) = Tlv::decode(rest) else {
                return;
            };
            if mode == 1 {
                assert_eq!(setup.handle(2, identity, &m1()), offer);
            }
            on_offer(
                h,
                &offer,
                mode == 1,
                u64::from(connection % 2 + 1),
                &request,
            );
        }
        _ => {
            let mut a = [0u8; 32];
            for (i, b) in rest.iter().take(32).enumerate() {
                a[i] = *b;
            }
            a[0] |= 0x80; // a private value of full size
            exchange(
                h,
                setup,
                srp::N_SMALL,
                &offer,
                &a,
                rest.get(32..).unwrap_or_default(),
            );
        }
    }
});
