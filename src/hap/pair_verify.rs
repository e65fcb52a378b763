//! Pair-verify (HAP's M1–M4): a paired controller and the accessory agree an ephemeral X25519
//! secret, each signs both ephemeral keys with its long-term key, and the session's keys come
//! from the secret. One per connection; the state lives with the connection.

use ring::agreement::{self, EphemeralPrivateKey, UnparsedPublicKey, X25519};
use ring::rand::SystemRandom;

use super::crypto;
use super::identity::Identity;
use super::tlv::{Tlv, TlvError, error, kind};

/// One connection's pair-verify.
#[derive(Default)]
pub enum PairVerify {
    #[default]
    Idle,
    /// M2 sent.
    Sent {
        secret: [u8; 32],
        ours: [u8; 32],
        theirs: [u8; 32],
    },
}

/// A verified session: who the controller is and the keys of each direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub controller: String,
    /// Accessory → controller (`Control-Read-Encryption-Key`).
    pub read_key: [u8; 32],
    /// Controller → accessory (`Control-Write-Encryption-Key`).
    pub write_key: [u8; 32],
}

impl PairVerify {
    /// Answers one request; the second value is the session once M4 is sent.
    pub fn handle(&mut self, identity: &Identity, request: &Tlv) -> (Tlv, Option<Verified>) {
        match request.byte(kind::STATE) {
            Some(1) => (self.start(identity, request), None),
            Some(3) => self.finish(identity, request),
            other => {
                *self = PairVerify::Idle;
                (
                    error(other.unwrap_or(0).saturating_add(1), TlvError::Unknown),
                    None,
                )
            }
        }
    }

    /// M1 → M2.
    fn start(&mut self, identity: &Identity, request: &Tlv) -> Tlv {
        *self = PairVerify::Idle;
        let Some(theirs) = request
            .get(kind::PUBLIC_KEY)
            .and_then(|k| <[u8; 32]>::try_from(k).ok())
        else {
            return error(2, TlvError::Unknown);
        };
        let rng = SystemRandom::new();
        let Ok(private) = EphemeralPrivateKey::generate(&X25519, &rng) else {
            return error(2, TlvError::Unknown);
        };
        let Some(ours) = private
            .compute_public_key()
            .ok()
            .and_then(|k| <[u8; 32]>::try_from(k.as_ref()).ok())
        else {
            return error(2, TlvError::Unknown);
        };
        let peer = UnparsedPublicKey::new(&X25519, theirs);
        let Ok(secret) = agreement::agree_ephemeral(private, &peer, |s| {
            let mut out = [0u8; 32];
            out.copy_from_slice(s);
            out
        }) else {
            return error(2, TlvError::Authentication);
        };
        let Ok(signing) = identity.signing_key() else {
            return error(2, TlvError::Unknown);
        };
        let device_id = identity.device_id();
        let info = [&ours[..], device_id.as_bytes(), &theirs].concat();
        let sub = Tlv::new()
            .with(kind::IDENTIFIER, device_id.as_bytes())
            .with(kind::SIGNATURE, signing.sign(&info).as_ref());
        let sealed = crypto::seal(
            &session_key(&secret),
            crypto::label_nonce(b"PV-Msg02"),
            &[],
            &sub.encode(),
        );
        *self = PairVerify::Sent {
            secret,
            ours,
            theirs,
        };
        Tlv::new()
            .with(kind::STATE, &[2])
            .with(kind::PUBLIC_KEY, &ours)
            .with(kind::ENCRYPTED_DATA, &sealed)
    }

    /// M3 → M4: checks the controller's signature with its stored long-term key.
    fn finish(&mut self, identity: &Identity, request: &Tlv) -> (Tlv, Option<Verified>) {
        let PairVerify::Sent {
            secret,
            ours,
            theirs,
        } = std::mem::take(self)
        else {
            return (error(4, TlvError::Unknown), None);
        };
        let Some(sub) = request
            .get(kind::ENCRYPTED_DATA)
            .and_then(|sealed| {
                crypto::open(
                    &session_key(&secret),
                    crypto::label_nonce(b"PV-Msg03"),
                    &[],
                    sealed,
                )
            })
            .and_then(|plain| Tlv::decode(&plain).ok())
        else {
            return (error(4, TlvError::Authentication), None);
        };
        let (Some(id), Some(signature)) = (sub.get(kind::IDENTIFIER), sub.get(kind::SIGNATURE))
        else {
            return (error(4, TlvError::Unknown), None);
        };
        let Some(pairing) = std::str::from_utf8(id)
            .ok()
            .and_then(|id| identity.pairing(id))
        else {
            return (error(4, TlvError::Authentication), None);
        };
        let info = [&theirs[..], id, &ours].concat();
        if !crypto::verify(&pairing.public_key, &info, signature) {
            return (error(4, TlvError::Authentication), None);
        }
        let verified = Verified {
            controller: pairing.id,
            read_key: crypto::hkdf(&secret, b"Control-Salt", b"Control-Read-Encryption-Key"),
            write_key: crypto::hkdf(&secret, b"Control-Salt", b"Control-Write-Encryption-Key"),
        };
        (Tlv::new().with(kind::STATE, &[4]), Some(verified))
    }
}

fn session_key(secret: &[u8; 32]) -> [u8; 32] {
    crypto::hkdf(
        secret,
        b"Pair-Verify-Encrypt-Salt",
        b"Pair-Verify-Encrypt-Info",
    )
}
