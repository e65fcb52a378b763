#![no_main]
//! Pair-verify (`hap/pair_verify.rs`) against a fresh identity paired with one controller.
//! `[mode, data...]`:
//! - 0: `data` (TLV8) to a connection that has not begun: M1 with any key, or any other step;
//! - 1–3: the controller sends a real M1 and checks M2 (the accessory's ephemeral key, its id
//!   and its signature of both keys, sealed with the agreed key); then M3 is `data` as TLV8
//!   (1), `data` as the sealed sub-message (2), or a sub-message of the controller's id or
//!   one from `data` (`flags & 1`, `[len, id...]`) and its signature or 64 bytes of `data`
//!   (`flags & 2`), followed by the rest of `data` (3).
//!
//! Checked: every answer is the one HAP requires (computed apart, from the sub-message as the
//! controller sealed it); a session is set up only for the paired controller's own signature
//! of both ephemeral keys, with the keys both sides derive; a second M3 is refused.
use std::sync::OnceLock;

use hearth::hap::crypto;
use hearth::hap::identity::{self, Identity};
use hearth::hap::pair_verify::{PairVerify, Verified};
use hearth::hap::tlv::{Tlv, TlvError, error, kind};
use hearth_fuzz::controller::{self, Controller, restore};
use libfuzzer_sys::fuzz_target;
use ring::agreement::{self, EphemeralPrivateKey, UnparsedPublicKey, X25519};
use ring::rand::SystemRandom;

struct Harness {
    identity: Identity,
    controller: Controller,
    /// The accessory's long-term public key.
    accessory: [u8; 32],
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        let identity = controller::identity("verify");
        let controller = Controller::new("fuzz-controller");
        restore(&identity, &[controller.pairing()]);
        let accessory = identity::public_key(&identity.signing_key().expect("a key"));
        Harness {
            identity,
            controller,
            accessory,
        }
    })
}

fn session_key(secret: &[u8; 32]) -> [u8; 32] {
    crypto::hkdf(
        secret,
        b"Pair-Verify-Encrypt-Salt",
        b"Pair-Verify-Encrypt-Info",
    )
}

/// A verification begun by the controller: the agreed secret and both ephemeral keys.
struct Begun {
    secret: [u8; 32],
    /// The controller's.
    ours: [u8; 32],
    /// The accessory's.
    theirs: [u8; 32],
}

/// Sends a real M1 and checks M2.
fn begin(h: &Harness, verify: &mut PairVerify) -> Begun {
    let rng = SystemRandom::new();
    let private = EphemeralPrivateKey::generate(&X25519, &rng).expect("a key");
    let mut ours = [0u8; 32];
    ours.copy_from_slice(private.compute_public_key().expect("a key").as_ref());
    let m1 = Tlv::new()
        .with(kind::STATE, &[1])
        .with(kind::PUBLIC_KEY, &ours);
    let (m2, verified) = verify.handle(&h.identity, &m1);
    assert!(verified.is_none());
    assert_eq!(m2.byte(kind::STATE), Some(2));
    let theirs: [u8; 32] = m2
        .get(kind::PUBLIC_KEY)
        .and_then(|k| k.try_into().ok())
        .expect("the accessory's key");
    let secret =
        agreement::agree_ephemeral(private, &UnparsedPublicKey::new(&X25519, theirs), |s| {
            let mut out = [0u8; 32];
            out.copy_from_slice(s);
            out
        })
        .expect("agreed");
    let plain = crypto::open(
        &session_key(&secret),
        crypto::label_nonce(b"PV-Msg02"),
        &[],
        m2.get(kind::ENCRYPTED_DATA).expect("sealed"),
    )
    .expect("M2 opens");
    let sub = Tlv::decode(&plain).expect("M2 is TLV8");
    let device_id = h.identity.device_id();
    assert_eq!(sub.get(kind::IDENTIFIER), Some(device_id.as_bytes()));
    let info = [&theirs[..], device_id.as_bytes(), &ours].concat();
    assert!(crypto::verify(
        &h.accessory,
        &info,
        sub.get(kind::SIGNATURE).expect("signed")
    ));
    Begun {
        secret,
        ours,
        theirs,
    }
}

/// What M3 with this sealed sub-message must give.
fn expected(h: &Harness, begun: &Begun, sealed: Option<&[u8]>) -> Result<Verified, TlvError> {
    let sub = sealed
        .and_then(|s| {
            crypto::open(
                &session_key(&begun.secret),
                crypto::label_nonce(b"PV-Msg03"),
                &[],
                s,
            )
        })
        .and_then(|p| Tlv::decode(&p).ok())
        .ok_or(TlvError::Authentication)?;
    let (Some(id), Some(signature)) = (sub.get(kind::IDENTIFIER), sub.get(kind::SIGNATURE)) else {
        return Err(TlvError::Unknown);
    };
    if id != h.controller.id.as_bytes() {
        return Err(TlvError::Authentication);
    }
    let info = [&begun.ours[..], id, &begun.theirs].concat();
    let public = h.controller.public();
    if ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, &public)
        .verify(&info, signature)
        .is_err()
    {
        return Err(TlvError::Authentication);
    }
    Ok(Verified {
        controller: h.controller.id.clone(),
        read_key: crypto::hkdf(
            &begun.secret,
            b"Control-Salt",
            b"Control-Read-Encryption-Key",
        ),
        write_key: crypto::hkdf(
            &begun.secret,
            b"Control-Salt",
            b"Control-Write-Encryption-Key",
        ),
    })
}

fn fresh(h: &Harness, data: &[u8]) {
    let Ok(request) = Tlv::decode(data) else {
        return;
    };
    let mut verify = PairVerify::default();
    let (reply, verified) = verify.handle(&h.identity, &request);
    assert!(verified.is_none());
    let state = request.byte(kind::STATE);
    let key = request.get(kind::PUBLIC_KEY);
    match state {
        Some(1) if key.is_some_and(|k| k.len() == 32) => {
            if reply.get(kind::ERROR).is_some() {
                // A key whose agreement is all zeros (a point of small order).
                assert_eq!(reply, error(2, TlvError::Authentication));
                assert!(matches!(verify, PairVerify::Idle));
            } else {
                assert_eq!(reply.byte(kind::STATE), Some(2));
                assert_eq!(reply.get(kind::PUBLIC_KEY).map(<[u8]>::len), Some(32));
                assert!(reply.get(kind::ENCRYPTED_DATA).is_some());
                assert!(matches!(verify, PairVerify::Sent { .. }));
            }
        }
        Some(1) => assert_eq!(reply, error(2, TlvError::Unknown)),
        Some(3) => assert_eq!(reply, error(4, TlvError::Unknown)),
        other => {
            assert_eq!(
                reply,
                error(other.unwrap_or(0).saturating_add(1), TlvError::Unknown)
            );
            assert!(matches!(verify, PairVerify::Idle));
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    let h = harness();
    if mode % 4 == 0 {
        fresh(h, data);
        return;
    }
    let mut verify = PairVerify::default();
    let begun = begin(h, &mut verify);
    let seal = |plain: &[u8]| {
        crypto::seal(
            &session_key(&begun.secret),
            crypto::label_nonce(b"PV-Msg03"),
            &[],
            plain,
        )
    };
    let m3 = match mode % 4 {
        1 => match Tlv::decode(data) {
            Ok(tlv) => tlv,
            Err(_) => return,
        },
        2 => Tlv::new()
            .with(kind::STATE, &[3])
            .with(kind::ENCRYPTED_DATA, &seal(data)),
        _ => {
            let Some((&flags, mut rest)) = data.split_first() else {
                return;
            };
            let mut take = |n: usize| {
                let (a, b) = rest.split_at(n.min(rest.len()));
                rest = b;
                a.to_vec()
            };
            let id = if flags & 1 != 0 {
                let n = take(1).first().copied().unwrap_or(0);
                take(usize::from(n))
            } else {
                h.controller.id.clone().into_bytes()
            };
            let signature = if flags & 2 != 0 {
                take(64)
            } else {
                h.controller
                    .sign(&[&begun.ours[..], &id, &begun.theirs].concat())
            };
            let mut plain = Tlv::new()
                .with(kind::IDENTIFIER, &id)
                .with(kind::SIGNATURE, &signature)
                .encode();
            plain.extend_from_slice(rest);
            Tlv::new()
                .with(kind::STATE, &[3])
                .with(kind::ENCRYPTED_DATA, &seal(&plain))
        }
    };
    let (reply, verified) = verify.handle(&h.identity, &m3);
    match m3.byte(kind::STATE) {
        Some(3) => {
            match expected(h, &begun, m3.get(kind::ENCRYPTED_DATA)) {
                Ok(want) => {
                    assert_eq!(reply, Tlv::new().with(kind::STATE, &[4]));
                    assert_eq!(verified, Some(want));
                }
                Err(e) => {
                    assert_eq!((reply, verified), (error(4, e), None));
                }
            }
            // One M3 per M1.
            let (again, verified) = verify.handle(&h.identity, &m3);
            assert_eq!((again, verified), (error(4, TlvError::Unknown), None));
        }
        // M1 again: verification begins anew.
        Some(1) => assert!(verified.is_none()),
        other => {
            assert!(verified.is_none());
            assert_eq!(
                reply,
                error(other.unwrap_or(0).saturating_add(1), TlvError::Unknown)
            );
        }
    }
});
