//! A HomeKit controller's side, for the pairing targets: an accessory identity in a scratch
//! directory, a controller's long-term key, SRP-6a's client (written from the same formulas as
//! `hap/srp.rs` documents, with its own arithmetic) and pair-setup's M5 with the check of M6.

use std::path::PathBuf;

use hearth::hap::crypto;
use hearth::hap::identity::{self, Identity, MAX_PAIRINGS, Pairing};
use hearth::hap::pair_setup::PairSetup;
use hearth::hap::tlv::{Tlv, TlvError, error, kind};
use num_bigint::BigUint;
use ring::rand::SystemRandom;
use ring::signature::{Ed25519KeyPair, KeyPair};
use sha2::{Digest, Sha512};

/// A directory of its own for this process (in /dev/shm when there is one, where an fsync
/// costs nothing), empty; `scripts/fuzz.sh` removes them (`hearth-fuzz-*`).
pub fn scratch_dir(name: &str) -> PathBuf {
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("hearth-fuzz-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// A fresh accessory identity in a scratch directory.
pub fn identity(name: &str) -> Identity {
    Identity::open(&scratch_dir(name)).expect("an identity")
}

/// A controller: its pairing id and long-term Ed25519 key.
pub struct Controller {
    pub id: String,
    pub key: Ed25519KeyPair,
}

impl Controller {
    pub fn new(id: &str) -> Controller {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).expect("a key");
        Controller {
            id: id.to_string(),
            key: Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("a key"),
        }
    }

    pub fn public(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        out.copy_from_slice(self.key.public_key().as_ref());
        out
    }

    pub fn pairing(&self) -> Pairing {
        Pairing {
            id: self.id.clone(),
            public_key: self.public(),
            admin: true,
        }
    }

    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        self.key.sign(message).as_ref().to_vec()
    }
}

/// Puts the identity's pairings back to `pairings` if an input changed them.
pub fn restore(identity: &Identity, pairings: &[Pairing]) {
    if identity.pairings() == pairings {
        return;
    }
    for p in identity.pairings() {
        identity.remove_pairing(&p.id).expect("removed");
    }
    for p in pairings {
        identity.add_pairing(p.clone()).expect("added");
    }
    assert_eq!(identity.pairings(), pairings);
}

/// SRP-6a's client as HAP's controllers run it: g = 5, SHA-512, RFC 5054's 3072-bit group or
/// another prime (the fuzz target's small group, `hap::srp::Group::hap_over`).
pub mod srp {
    use super::*;

    /// RFC 5054's 3072-bit prime, HAP's.
    pub const N_3072: &str = concat!(
        "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74",
        "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437",
        "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED",
        "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF05",
        "98DA48361C55D39A69163FA8FD24CF5F83655D23DCA3AD961C62F356208552BB",
        "9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B",
        "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF695581718",
        "3995497CEA956AE515D2261898FA051015728E5A8AAAC42DAD33170D04507A33",
        "A85521ABDF1CBA64ECFB850458DBEF0A8AEA71575D060C7DB3970F85A6E1E4C7",
        "ABF5AE8CDB0933D71E8C94E04A25619DCEE3D2261AD2EE6BF12FFA06D98A0864",
        "D87602733EC86A64521F2B18177B200CBBE117577A615D6C770988C0BAD946E2",
        "08E24FA074E5AB3143DB5BFCE0FD108E4B82D120A93AD2CAFFFFFFFFFFFFFFFF",
    );

    /// The small group's prime, 2^64 - 59 (the largest below 2^64): one machine word, so the
    /// arithmetic of an exchange is a few thousand word multiplications.
    pub const N_SMALL: &str = "FFFFFFFFFFFFFFC5";

    /// The length of `n_hex`'s prime in bytes (what `B` and `A` are padded to).
    pub fn len(n_hex: &str) -> usize {
        BigUint::parse_bytes(n_hex.as_bytes(), 16)
            .expect("N")
            .to_bytes_be()
            .len()
    }

    fn h(parts: &[&[u8]]) -> Vec<u8> {
        let mut d = Sha512::new();
        for p in parts {
            d.update(p);
        }
        d.finalize().to_vec()
    }

    fn pad(x: &BigUint, len: usize) -> Vec<u8> {
        let bytes = x.to_bytes_be();
        let mut out = vec![0u8; len.saturating_sub(bytes.len())];
        out.extend_from_slice(&bytes);
        out
    }

    /// What the client sends in M3 and what it expects in M4.
    pub struct Proof {
        /// `A`, padded.
        pub a_pub: Vec<u8>,
        /// `M1`.
        pub proof: Vec<u8>,
        /// `K`, the session key.
        pub key: Vec<u8>,
        /// The accessory's proof `M2` a client accepts.
        pub expected: Vec<u8>,
    }

    /// The client's M3 in the group of `n_hex` for the salt and `B` of M2 and the setup
    /// `code`, with private value `a`.
    pub fn client(n_hex: &str, salt: &[u8], b_pub: &[u8], code: &str, a: &[u8; 32]) -> Proof {
        let n = BigUint::parse_bytes(n_hex.as_bytes(), 16).expect("N");
        let len = n.to_bytes_be().len();
        let g = BigUint::from(5u32);
        let a = BigUint::from_bytes_be(a);
        let a_pub = g.modpow(&a, &n);
        let b_pub = BigUint::from_bytes_be(b_pub);
        let k = BigUint::from_bytes_be(&h(&[&n.to_bytes_be(), &pad(&g, len)]));
        let x = BigUint::from_bytes_be(&h(&[salt, &h(&[b"Pair-Setup:", code.as_bytes()])]));
        let u = BigUint::from_bytes_be(&h(&[&pad(&a_pub, len), &pad(&b_pub, len)]));
        let kv = k * g.modpow(&x, &n) % &n;
        let base = (&b_pub + &n - kv) % &n;
        let s = base.modpow(&(a + u * x), &n);
        let key = h(&[&pad(&s, len)]);
        let group: Vec<u8> = h(&[&n.to_bytes_be()])
            .iter()
            .zip(h(&[&[5u8]]))
            .map(|(a, b)| a ^ b)
            .collect();
        let proof = h(&[
            &group,
            &h(&[b"Pair-Setup"]),
            salt,
            &pad(&a_pub, len),
            &pad(&b_pub, len),
            &key,
        ]);
        let expected = h(&[&pad(&a_pub, len), &proof, &key]);
        Proof {
            a_pub: pad(&a_pub, len),
            proof,
            key,
            expected,
        }
    }
}

/// The key pair-setup's M5 and M6 are sealed with, from the SRP key.
pub fn setup_session_key(srp_key: &[u8]) -> [u8; 32] {
    crypto::hkdf(
        srp_key,
        b"Pair-Setup-Encrypt-Salt",
        b"Pair-Setup-Encrypt-Info",
    )
}

/// Pair-setup's M5 from `data`, sent by `connection` to a pair-setup whose exchange with
/// `holder` (if any) is past M4 with `srp_key`; its answer checked against what HAP says it
/// must be, and a second M5 refused (an exchange ends with its M5, whatever the outcome).
/// `data`: `[flags, bytes...]`; flags `0b11` pick the form:
/// - 0: `bytes` as the whole request (TLV8; others are refused before pair-setup sees them);
/// - 1: `bytes` as the sealed sub-message, in a request with state 5;
/// - 2 and 3: a sub-message of `flags & 0x04`: the controller's id or one from `bytes`
///   (`[len, id...]`), `0x08`: its key or 32 bytes of `bytes`, `0x10`: its signature or
///   64 bytes of `bytes`, followed by the rest of `bytes` (more items, or not TLV8 at all).
///
/// Pairings an accepted M5 adds are left for the caller to remove.
pub fn m5(
    setup: &PairSetup,
    connection: u64,
    holder: Option<u64>,
    identity: &Identity,
    controller: &Controller,
    srp_key: &[u8],
    data: &[u8],
) {
    let Some((&flags, mut bytes)) = data.split_first() else {
        return;
    };
    let session = setup_session_key(srp_key);
    let take = |bytes: &mut &[u8], n: usize| -> Vec<u8> {
        let (a, b) = bytes.split_at(n.min(bytes.len()));
        *bytes = b;
        a.to_vec()
    };
    let controller_x = crypto::hkdf(
        srp_key,
        b"Pair-Setup-Controller-Sign-Salt",
        b"Pair-Setup-Controller-Sign-Info",
    );
    let request = match flags & 0b11 {
        0 => match Tlv::decode(bytes) {
            Ok(tlv) => tlv,
            Err(_) => return,
        },
        1 => Tlv::new().with(kind::STATE, &[5]).with(
            kind::ENCRYPTED_DATA,
            &crypto::seal(&session, crypto::label_nonce(b"PS-Msg05"), &[], bytes),
        ),
        _ => {
            let id = if flags & 0x04 != 0 {
                let n = usize::from(take(&mut bytes, 1).first().copied().unwrap_or(0));
                take(&mut bytes, n)
            } else {
                controller.id.clone().into_bytes()
            };
            let ltpk = if flags & 0x08 != 0 {
                take(&mut bytes, 32)
            } else {
                controller.public().to_vec()
            };
            let signature = if flags & 0x10 != 0 {
                take(&mut bytes, 64)
            } else {
                controller.sign(&[&controller_x[..], &id, &ltpk].concat())
            };
            let mut plain = Tlv::new()
                .with(kind::IDENTIFIER, &id)
                .with(kind::PUBLIC_KEY, &ltpk)
                .with(kind::SIGNATURE, &signature)
                .encode();
            plain.extend_from_slice(bytes);
            Tlv::new().with(kind::STATE, &[5]).with(
                kind::ENCRYPTED_DATA,
                &crypto::seal(&session, crypto::label_nonce(b"PS-Msg05"), &[], &plain),
            )
        }
    };
    let before = identity.pairings();
    let reply = setup.handle(connection, identity, &request);
    let step = request.byte(kind::STATE).unwrap_or(0);
    if step == 1 {
        // M1: nothing further to check here (the identities these targets use are paired, or
        // the exchange is another connection's).
        assert_eq!(reply.byte(kind::STATE), Some(2));
        return;
    }
    let expected = expected_m5(holder == Some(connection), &before, &request, srp_key);
    match expected {
        Err(e) => {
            assert_eq!(reply, error(step.saturating_add(1), e), "{request:?}");
            assert_eq!(
                identity.pairings(),
                before,
                "a refused M5 changed the pairings"
            );
        }
        Ok(pairing) => {
            check_m6(identity, &reply, srp_key);
            assert_eq!(identity.pairing(&pairing.id), Some(pairing));
        }
    }
    // The exchange is over: a second M5 is not taken.
    if step == 5 {
        assert_eq!(
            setup.handle(connection, identity, &request),
            error(6, TlvError::Unknown)
        );
    }
}

/// The answer HAP requires to `request`, sent by the exchange's holder (`holds`) or another
/// connection, when the exchange is past M4: the pairing M5 stores, or the error.
fn expected_m5(
    holds: bool,
    before: &[Pairing],
    request: &Tlv,
    srp_key: &[u8],
) -> Result<Pairing, TlvError> {
    match request.byte(kind::STATE).unwrap_or(0) {
        3 | 5 if !holds => return Err(TlvError::Unknown),
        3 => return Err(TlvError::Unknown), // the exchange is past M4
        5 => {}
        _ => return Err(TlvError::Unknown),
    }
    let sub = request
        .get(kind::ENCRYPTED_DATA)
        .and_then(|sealed| {
            crypto::open(
                &setup_session_key(srp_key),
                crypto::label_nonce(b"PS-Msg05"),
                &[],
                sealed,
            )
        })
        .and_then(|plain| Tlv::decode(&plain).ok())
        .ok_or(TlvError::Authentication)?;
    let (Some(id), Some(ltpk), Some(signature)) = (
        sub.get(kind::IDENTIFIER),
        sub.get(kind::PUBLIC_KEY),
        sub.get(kind::SIGNATURE),
    ) else {
        return Err(TlvError::Unknown);
    };
    let (Ok(id_text), Ok(public_key)) = (std::str::from_utf8(id), <[u8; 32]>::try_from(ltpk))
    else {
        return Err(TlvError::Unknown);
    };
    let controller_x = crypto::hkdf(
        srp_key,
        b"Pair-Setup-Controller-Sign-Salt",
        b"Pair-Setup-Controller-Sign-Info",
    );
    let signed = [&controller_x[..], id, ltpk].concat();
    if ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, ltpk)
        .verify(&signed, signature)
        .is_err()
    {
        return Err(TlvError::Authentication);
    }
    if before.len() >= MAX_PAIRINGS && !before.iter().any(|p| p.id == id_text) {
        return Err(TlvError::MaxPeers);
    }
    Ok(Pairing {
        id: id_text.to_string(),
        public_key,
        admin: true,
    })
}

/// M6: the accessory's id, long-term key and signature, sealed with the session key.
fn check_m6(identity: &Identity, reply: &Tlv, srp_key: &[u8]) {
    assert_eq!(reply.byte(kind::STATE), Some(6));
    assert_eq!(reply.get(kind::ERROR), None);
    let plain = crypto::open(
        &setup_session_key(srp_key),
        crypto::label_nonce(b"PS-Msg06"),
        &[],
        reply.get(kind::ENCRYPTED_DATA).expect("M6 is sealed"),
    )
    .expect("M6 opens");
    let sub = Tlv::decode(&plain).expect("M6 is TLV8");
    let device_id = identity.device_id();
    let public = identity::public_key(&identity.signing_key().expect("a key"));
    assert_eq!(sub.get(kind::IDENTIFIER), Some(device_id.as_bytes()));
    assert_eq!(sub.get(kind::PUBLIC_KEY), Some(&public[..]));
    let accessory_x = crypto::hkdf(
        srp_key,
        b"Pair-Setup-Accessory-Sign-Salt",
        b"Pair-Setup-Accessory-Sign-Info",
    );
    let info = [&accessory_x[..], device_id.as_bytes(), &public].concat();
    assert!(crypto::verify(
        &public,
        &info,
        sub.get(kind::SIGNATURE).expect("signed")
    ));
}
