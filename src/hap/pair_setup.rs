//! Pair-setup (HAP's M1–M6): a controller proves it knows the setup code (SRP), then both
//! exchange long-term Ed25519 keys under the SRP key, and the controller is stored as an admin
//! pairing.
//!
//! One exchange at a time across the accessory (another controller gets `Busy`), none while
//! the accessory is paired (`Unavailable`: further controllers are added by an admin through
//! `/pairings`), and after [`MAX_FAILURES`] wrong codes none at all (`MaxTries`) until
//! `hearth homekit reset`: the count is kept in the identity's file, so a restart gives no
//! more tries, and a random 8-digit code leaves a guesser one chance in a million. An
//! exchange left without its next step for [`STAGE_TIMEOUT`] may be taken over by another
//! connection, so one that stalls cannot keep the owner from pairing.

use parking_lot::Mutex;

use super::crypto;
use super::identity::{self, Identity, IdentityError, Pairing};
use super::srp::{self, Group};
use super::tlv::{Tlv, TlvError, error, kind};
use crate::util::random;

/// Wrong setup codes after which pair-setup is refused (HAP: 100).
pub const MAX_FAILURES: u32 = 100;
/// How long an exchange waits for its next step before another connection may take over.
pub const STAGE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The accessory's pair-setup: who holds the exchange, and how far it got.
#[derive(Default)]
pub struct PairSetup {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The connection holding the exchange, and its stage.
    current: Option<(u64, Stage)>,
    /// When the exchange last moved (a step answered).
    moved: Option<std::time::Instant>,
}

enum Stage {
    /// M2 sent: the salt and `B`.
    Salted(Box<srp::Server>),
    /// M4 sent: the SRP key.
    Proven(Vec<u8>),
}

impl PairSetup {
    pub fn new() -> PairSetup {
        PairSetup::default()
    }

    /// A pair-setup whose exchange with `connection` has sent M4 with the SRP key `key`: for
    /// the fuzz target (`tests/fuzz`), which reaches M5 this way without the SRP arithmetic.
    #[doc(hidden)]
    pub fn proven(connection: u64, key: Vec<u8>) -> PairSetup {
        PairSetup {
            state: Mutex::new(State {
                current: Some((connection, Stage::Proven(key))),
                moved: Some(std::time::Instant::now()),
            }),
        }
    }

    /// Lets go of an exchange held by a connection that closed.
    pub fn abandon(&self, connection: u64) {
        let mut state = self.state.lock();
        if matches!(state.current, Some((c, _)) if c == connection) {
            state.current = None;
        }
    }

    /// Answers one pair-setup request of `connection` (a TLV8 body) with a TLV8 body.
    pub fn handle(&self, connection: u64, identity: &Identity, request: &Tlv) -> Tlv {
        let step = request.byte(kind::STATE).unwrap_or(0);
        match step {
            1 => self.start(connection, identity, request),
            3 => self.prove(connection, identity, request),
            5 => self.exchange(connection, identity, request),
            _ => error(step.saturating_add(1), TlvError::Unknown),
        }
    }

    /// M1 → M2: the salt and the accessory's SRP public key.
    fn start(&self, connection: u64, identity: &Identity, request: &Tlv) -> Tlv {
        let mut state = self.state.lock();
        if identity.is_paired() {
            return error(2, TlvError::Unavailable);
        }
        if identity.setup_failures() >= MAX_FAILURES {
            return error(2, TlvError::MaxTries);
        }
        let stalled = state.moved.is_none_or(|at| at.elapsed() >= STAGE_TIMEOUT);
        if matches!(state.current, Some((c, _)) if c != connection) && !stalled {
            return error(2, TlvError::Busy);
        }
        // Method 0 (pair setup) or 1 (with MFi authentication, which this accessory has
        // not: it answers as for 0, as uncertified accessories do).
        if !matches!(request.byte(kind::METHOD), Some(0 | 1) | None) {
            return error(2, TlvError::Unknown);
        }
        let (mut salt, mut b) = ([0u8; 16], [0u8; 32]);
        if random::fill(&mut salt).is_err() || random::fill(&mut b).is_err() {
            return error(2, TlvError::Unknown);
        }
        let code = identity.setup_code();
        let server = srp::Server::new(Group::hap(), srp::USERNAME, code.as_bytes(), &salt, &b);
        let reply = Tlv::new()
            .with(kind::STATE, &[2])
            .with(kind::PUBLIC_KEY, &server.public_key())
            .with(kind::SALT, server.salt());
        // An exchange's clock starts when a connection takes it: sending M1 again on the same
        // connection does not restart it, so one connection cannot hold pair-setup forever.
        let taken = !matches!(state.current, Some((c, _)) if c == connection);
        state.current = Some((connection, Stage::Salted(Box::new(server))));
        if taken || state.moved.is_none() {
            state.moved = Some(std::time::Instant::now());
        }
        reply
    }

    /// M3 → M4: checks the controller's proof of the code.
    fn prove(&self, connection: u64, identity: &Identity, request: &Tlv) -> Tlv {
        let mut state = self.state.lock();
        let server = match state.current.take() {
            Some((c, Stage::Salted(server))) if c == connection => server,
            other => {
                state.current = other;
                return error(4, TlvError::Unknown);
            }
        };
        let (Some(a_pub), Some(proof)) = (request.get(kind::PUBLIC_KEY), request.get(kind::PROOF))
        else {
            return error(4, TlvError::Unknown);
        };
        match server.verify(a_pub, proof) {
            Ok(verified) => {
                state.current = Some((connection, Stage::Proven(verified.key)));
                state.moved = Some(std::time::Instant::now());
                Tlv::new()
                    .with(kind::STATE, &[4])
                    .with(kind::PROOF, &verified.proof)
            }
            Err(srp::Refused) => {
                match identity.count_setup_failure() {
                    Ok(n) => {
                        log::warn!("HomeKit pair-setup: a wrong setup code ({n} of {MAX_FAILURES})")
                    }
                    Err(e) => {
                        log::error!("HomeKit pair-setup: a wrong setup code, not counted ({e})")
                    }
                }
                error(4, TlvError::Authentication)
            }
        }
    }

    /// M5 → M6: stores the controller's long-term key, sends the accessory's.
    fn exchange(&self, connection: u64, identity: &Identity, request: &Tlv) -> Tlv {
        let mut state = self.state.lock();
        let key = match state.current.take() {
            Some((c, Stage::Proven(key))) if c == connection => key,
            other => {
                state.current = other;
                return error(6, TlvError::Unknown);
            }
        };
        let session = crypto::hkdf(&key, b"Pair-Setup-Encrypt-Salt", b"Pair-Setup-Encrypt-Info");
        let Some(sub) = request
            .get(kind::ENCRYPTED_DATA)
            .and_then(|sealed| {
                crypto::open(&session, crypto::label_nonce(b"PS-Msg05"), &[], sealed)
            })
            .and_then(|plain| Tlv::decode(&plain).ok())
        else {
            return error(6, TlvError::Authentication);
        };
        let (Some(id), Some(ltpk), Some(signature)) = (
            sub.get(kind::IDENTIFIER),
            sub.get(kind::PUBLIC_KEY),
            sub.get(kind::SIGNATURE),
        ) else {
            return error(6, TlvError::Unknown);
        };
        let controller_x = crypto::hkdf(
            &key,
            b"Pair-Setup-Controller-Sign-Salt",
            b"Pair-Setup-Controller-Sign-Info",
        );
        let signed = [&controller_x[..], id, ltpk].concat();
        let (Ok(id), Ok(public_key)) = (String::from_utf8(id.to_vec()), <[u8; 32]>::try_from(ltpk))
        else {
            return error(6, TlvError::Unknown);
        };
        if !crypto::verify(ltpk, &signed, signature) {
            return error(6, TlvError::Authentication);
        }
        let Ok(signing) = identity.signing_key() else {
            return error(6, TlvError::Unknown);
        };
        match identity.add_pairing(Pairing {
            id,
            public_key,
            admin: true,
        }) {
            Ok(()) => {}
            Err(IdentityError::Full) => return error(6, TlvError::MaxPeers),
            Err(e) => {
                log::error!("HomeKit pair-setup: the pairing could not be stored: {e}");
                return error(6, TlvError::Unknown);
            }
        }
        log::info!("HomeKit: paired with a controller by pair-setup");
        let accessory_x = crypto::hkdf(
            &key,
            b"Pair-Setup-Accessory-Sign-Salt",
            b"Pair-Setup-Accessory-Sign-Info",
        );
        let device_id = identity.device_id();
        let public = identity::public_key(&signing);
        let info = [&accessory_x[..], device_id.as_bytes(), &public].concat();
        let sub = Tlv::new()
            .with(kind::IDENTIFIER, device_id.as_bytes())
            .with(kind::PUBLIC_KEY, &public)
            .with(kind::SIGNATURE, signing.sign(&info).as_ref());
        let sealed = crypto::seal(
            &session,
            crypto::label_nonce(b"PS-Msg06"),
            &[],
            &sub.encode(),
        );
        Tlv::new()
            .with(kind::STATE, &[6])
            .with(kind::ENCRYPTED_DATA, &sealed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(name: &str) -> (Identity, std::path::PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("hearth-hap-setup-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        (Identity::open(&dir).unwrap(), dir)
    }

    fn m1() -> Tlv {
        Tlv::new().with(kind::STATE, &[1]).with(kind::METHOD, &[0])
    }

    fn wrong_m3() -> Tlv {
        Tlv::new()
            .with(kind::STATE, &[3])
            .with(kind::PUBLIC_KEY, &[2; 384])
            .with(kind::PROOF, &[0; 64])
    }

    #[test]
    fn the_hundredth_wrong_code_closes_pair_setup() {
        let (id, dir) = identity("tries");
        let setup = PairSetup::new();
        // 98 failures without the cost of 98 exchanges; the 99th and 100th are real.
        for _ in 0..MAX_FAILURES - 2 {
            id.count_setup_failure().unwrap();
        }
        for _ in 0..2 {
            assert_eq!(setup.handle(1, &id, &m1()).byte(kind::STATE), Some(2));
            assert_eq!(
                setup.handle(1, &id, &wrong_m3()),
                error(4, TlvError::Authentication)
            );
        }
        assert_eq!(id.setup_failures(), MAX_FAILURES);
        assert_eq!(setup.handle(1, &id, &m1()), error(2, TlvError::MaxTries));
        assert_eq!(setup.handle(2, &id, &m1()), error(2, TlvError::MaxTries));
        // Kept: a restart (a new pair-setup, the identity read again) gives no more tries.
        let again = Identity::open(&dir).unwrap();
        assert_eq!(
            PairSetup::new().handle(3, &again, &m1()),
            error(2, TlvError::MaxTries)
        );
        // A reset lets pairing start again.
        again.reset().unwrap();
        assert_eq!(
            PairSetup::new().handle(3, &again, &m1()).byte(kind::STATE),
            Some(2)
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn one_exchange_at_a_time_and_none_while_paired() {
        let (id, dir) = identity("busy");
        let setup = PairSetup::new();
        assert_eq!(setup.handle(1, &id, &m1()).byte(kind::STATE), Some(2));
        assert_eq!(setup.handle(2, &id, &m1()), error(2, TlvError::Busy));
        // Steps of an exchange the connection does not hold.
        assert_eq!(
            setup.handle(2, &id, &wrong_m3()),
            error(4, TlvError::Unknown)
        );
        assert_eq!(
            setup.handle(1, &id, &Tlv::new().with(kind::STATE, &[5])),
            error(6, TlvError::Unknown)
        );
        setup.abandon(1);
        assert_eq!(setup.handle(2, &id, &m1()).byte(kind::STATE), Some(2));
        assert_eq!(id.setup_failures(), 0);
        id.add_pairing(Pairing {
            id: "c".into(),
            public_key: [1; 32],
            admin: true,
        })
        .unwrap();
        assert_eq!(setup.handle(3, &id, &m1()), error(2, TlvError::Unavailable));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
