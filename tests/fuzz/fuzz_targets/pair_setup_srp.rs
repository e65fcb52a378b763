#![no_main]
//! Pair-setup whole (`hap/pair_setup.rs`, `hap/srp.rs`), SRP arithmetic included, on an
//! unpaired accessory with a fresh identity; slow (each exchange is several 3072-bit modular
//! exponentiations), so `pair_setup` fuzzes M5 apart from it. `[step, data...]`, a new
//! pair-setup per input; the step picks which message is `data` (the ones before it are a real
//! controller's, knowing the setup code):
//! - 0: `data` is M1 (TLV8). An M2 must carry a 384-byte `B` and a 16-byte salt, and only
//!   answer a state-1 request with method 0 or 1 (or none).
//! - 1: `data` is M3 (TLV8), sent by the connection that sent M1 or another. Never accepted
//!   (nobody but the controller knows the code): a wrong proof is counted, a request missing a
//!   part or from another connection is not.
//! - 2: M1 and M3 real, M4 checked (the accessory's proof is the one SRP gives), then `data`
//!   is M5 as `controller::m5` reads it; a pairing it makes is removed again.
use std::sync::OnceLock;

use hearth::hap::identity::Identity;
use hearth::hap::pair_setup::{MAX_FAILURES, PairSetup};
use hearth::hap::tlv::{Tlv, TlvError, error, kind};
use hearth_fuzz::controller::{self, Controller, restore, srp};
use libfuzzer_sys::fuzz_target;

struct Harness {
    identity: Identity,
    controller: Controller,
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| Harness {
        identity: controller::identity("setup-srp"),
        controller: Controller::new("fuzz-controller"),
    })
}

fn m1() -> Tlv {
    Tlv::new().with(kind::STATE, &[1]).with(kind::METHOD, &[0])
}

/// Checks an M2 and gives its salt and `B`.
fn m2(reply: &Tlv) -> (Vec<u8>, Vec<u8>) {
    assert_eq!(reply.byte(kind::STATE), Some(2));
    assert_eq!(reply.get(kind::ERROR), None, "{reply:?}");
    let salt = reply.get(kind::SALT).expect("a salt").to_vec();
    let b_pub = reply.get(kind::PUBLIC_KEY).expect("B").to_vec();
    assert_eq!((salt.len(), b_pub.len()), (16, 384));
    (salt, b_pub)
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, rest)) = data.split_first() else {
        return;
    };
    let h = harness();
    let identity = &h.identity;
    // Keep clear of the lockout (which `hearth homekit reset` lifts, as this does).
    if identity.setup_failures() >= MAX_FAILURES - 2 {
        identity.reset().expect("reset");
    }
    let setup = PairSetup::new(hearth::util::clock::Clock::system());
    match step % 3 {
        0 => {
            let Ok(request) = Tlv::decode(rest) else {
                return;
            };
            let reply = setup.handle(1, identity, &request);
            let state = request.byte(kind::STATE).unwrap_or(0);
            if reply.get(kind::ERROR).is_none() {
                assert_eq!(state, 1, "{request:?} answered {reply:?}");
                assert!(matches!(request.byte(kind::METHOD), Some(0 | 1) | None));
                m2(&reply);
            } else {
                assert_eq!(reply.byte(kind::STATE), Some(state.saturating_add(1)));
            }
        }
        1 => {
            let Some((&connection, rest)) = rest.split_first() else {
                return;
            };
            let Ok(request) = Tlv::decode(rest) else {
                return;
            };
            m2(&setup.handle(1, identity, &m1()));
            let connection = u64::from(connection % 2 + 1);
            let failures = identity.setup_failures();
            let reply = setup.handle(connection, identity, &request);
            let state = request.byte(kind::STATE).unwrap_or(0);
            if state == 1 {
                // Another M1: a new exchange, or another connection's refused as busy.
                if connection == 2 {
                    assert_eq!(reply, error(2, TlvError::Busy));
                } else if matches!(request.byte(kind::METHOD), Some(0 | 1) | None) {
                    m2(&reply);
                } else {
                    assert_eq!(reply, error(2, TlvError::Unknown));
                }
                return;
            }
            let wrong_code = connection == 1
                && state == 3
                && request.get(kind::PUBLIC_KEY).is_some()
                && request.get(kind::PROOF).is_some();
            let expected = if wrong_code {
                TlvError::Authentication
            } else {
                TlvError::Unknown
            };
            assert_eq!(reply, error(state.saturating_add(1), expected));
            let counted = u32::from(wrong_code);
            assert_eq!(identity.setup_failures(), failures + counted);
        }
        _ => {
            let (salt, b_pub) = m2(&setup.handle(1, identity, &m1()));
            let mut a = [0u8; 32];
            for (i, b) in rest.iter().take(32).enumerate() {
                a[i] = *b;
            }
            a[0] |= 0x80; // a private value of full size
            let proof = srp::client(&salt, &b_pub, &identity.setup_code(), &a);
            let m3 = Tlv::new()
                .with(kind::STATE, &[3])
                .with(kind::PUBLIC_KEY, &proof.a_pub)
                .with(kind::PROOF, &proof.proof);
            let m4 = setup.handle(1, identity, &m3);
            assert_eq!(
                m4,
                Tlv::new()
                    .with(kind::STATE, &[4])
                    .with(kind::PROOF, &proof.expected)
            );
            controller::m5(
                &setup,
                1,
                Some(1),
                identity,
                &h.controller,
                &proof.key,
                rest.get(32..).unwrap_or_default(),
            );
            restore(identity, &[]);
        }
    }
});
