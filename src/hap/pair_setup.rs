//! Pair-setup (HAP's M1–M6): a controller proves it knows the setup code (SRP), then both
//! exchange long-term Ed25519 keys under the SRP key, and the controller is stored as an admin
//! pairing.
//!
//! Who may pair, and when:
//!
//! - Nobody while the accessory is paired (`Unavailable`: further controllers are added by an
//!   admin through `/pairings`), and nobody after [`MAX_FAILURES`] wrong codes (`MaxTries`)
//!   until the owner unlocks pair-setup ([`Identity::unlock`]: the page's Unlock, `hearth
//!   homekit unlock`, both of which take a new code) or resets the accessory. The count is kept
//!   in the identity's file, so a restart gives no more tries, and a random 8-digit code leaves
//!   a guesser one chance in a million.
//! - An M1 takes nothing: it is answered with the **offer**, M2's salt and `B`, made by the
//!   first M1 (the SRP arithmetic, two 3072-bit exponentiations) and handed unchanged to every
//!   M1 after it, from any connection, until an M3 spends it or the setup code changes. So any
//!   number of controllers may stand between M2 and M3 at once, for as long as a person takes
//!   to type the code (Home Assistant asks for it after M2), and M1s sent in a loop, on one
//!   connection or many, cost no arithmetic and push nobody out: a neighbour sending them
//!   cannot keep the owner from pairing. Only a connection the offer was sent to may answer it.
//! - The first M3 spends the offer, right or wrong (its private value `b` meets one proof
//!   only, as SRP wants); the next M1 makes a new one. Another controller's M3 on the spent
//!   offer is refused (`Unknown`) and that controller starts again; so a neighbour can spoil
//!   the owner's attempt only by spending a try of the hundred on it.
//! - An exchange whose M3 proved the code holds pair-setup until its M5 (other M1s get `Busy`),
//!   for at most [`PROVEN_HOLD`]: M5 follows M4 at once, with no person in between, so after
//!   that (or once its connection closes) another M1 may take over.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::crypto;
use super::identity::{self, Identity, IdentityError, Pairing};
use super::srp::{self, Group};
use super::tlv::{Tlv, TlvError, error, kind};
use crate::util::clock::Clock;
use crate::util::random;

/// Wrong setup codes after which pair-setup is refused (HAP: 100).
pub const MAX_FAILURES: u32 = 100;
/// How long an exchange that proved the code (M4 sent) keeps pair-setup from other
/// controllers' M1s while it waits for its M5.
pub const PROVEN_HOLD: Duration = Duration::from_secs(10);

/// The accessory's pair-setup: the offer M1s are answered with, and the exchange that proved
/// the code.
pub struct PairSetup {
    clock: Clock,
    /// SRP's group: HAP's ([`Group::hap`]), but for the fuzz target's [`PairSetup::over`].
    group: fn() -> Group,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    offer: Option<Offer>,
    proven: Option<Proven>,
}

/// M2 as every M1 is answered until an M3 spends it.
struct Offer {
    /// The setup code it was made for: an unlock's new code makes it stale.
    code: String,
    server: Box<srp::Server>,
    reply: Tlv,
    /// The connections it was sent to, which alone may answer it (as many as the listener
    /// lets be open: a closed one is forgotten, [`PairSetup::abandon`]).
    sent_to: BTreeSet<u64>,
}

/// An exchange past M4: its connection, the SRP key, and when its M3 was proven.
struct Proven {
    connection: u64,
    key: Vec<u8>,
    at: Instant,
}

impl PairSetup {
    /// Pair-setup reading the time (for [`PROVEN_HOLD`]) from `clock`.
    pub fn new(clock: Clock) -> PairSetup {
        PairSetup {
            clock,
            group: Group::hap,
            state: Mutex::new(State::default()),
        }
    }

    /// Pair-setup whose offers are made in `group`'s SRP group: for the fuzz target
    /// (`tests/fuzz`), with a small group ([`Group::hap_over`]).
    #[doc(hidden)]
    pub fn over(clock: Clock, group: fn() -> Group) -> PairSetup {
        PairSetup {
            group,
            ..PairSetup::new(clock)
        }
    }

    /// A pair-setup whose exchange with `connection` has proved the code (M4 sent) with the
    /// SRP key `key`, reading the time from `clock`: for the fuzz targets (`tests/fuzz`), which
    /// reach M5 this way without the SRP arithmetic.
    #[doc(hidden)]
    pub fn proven(clock: Clock, connection: u64, key: Vec<u8>) -> PairSetup {
        let at = clock.now();
        PairSetup {
            clock,
            group: Group::hap,
            state: Mutex::new(State {
                offer: None,
                proven: Some(Proven {
                    connection,
                    key,
                    at,
                }),
            }),
        }
    }

    /// Forgets a connection that closed: its exchange, and the offer it was sent.
    pub fn abandon(&self, connection: u64) {
        let mut state = self.state.lock();
        if matches!(&state.proven, Some(p) if p.connection == connection) {
            state.proven = None;
        }
        if let Some(offer) = &mut state.offer {
            offer.sent_to.remove(&connection);
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

    /// M1 → M2: the offer (made now if there is none).
    fn start(&self, connection: u64, identity: &Identity, request: &Tlv) -> Tlv {
        let mut state = self.state.lock();
        if identity.is_paired() {
            return error(2, TlvError::Unavailable);
        }
        if identity.is_locked() {
            return error(2, TlvError::MaxTries);
        }
        // Method 0 (pair setup) or 1 (with MFi authentication, which this accessory has
        // not: it answers as for 0, as uncertified accessories do).
        if !matches!(request.byte(kind::METHOD), Some(0 | 1) | None) {
            return error(2, TlvError::Unknown);
        }
        let now = self.clock.now();
        match &state.proven {
            // Its own connection starting again lets go of it; so does one that stalled.
            Some(p) if p.connection != connection && now.duration_since(p.at) < PROVEN_HOLD => {
                return error(2, TlvError::Busy);
            }
            Some(_) => state.proven = None,
            None => {}
        }
        let code = identity.setup_code();
        if state.offer.as_ref().is_some_and(|offer| offer.code != code) {
            state.offer = None;
        }
        let offer = match &mut state.offer {
            Some(offer) => offer,
            empty @ None => match make_offer((self.group)(), code) {
                Some(offer) => empty.insert(offer),
                None => return error(2, TlvError::Unknown),
            },
        };
        offer.sent_to.insert(connection);
        offer.reply.clone()
    }

    /// M3 → M4: checks the controller's proof of the code against the offer, which it spends.
    fn prove(&self, connection: u64, identity: &Identity, request: &Tlv) -> Tlv {
        let mut state = self.state.lock();
        let (Some(a_pub), Some(proof)) = (request.get(kind::PUBLIC_KEY), request.get(kind::PROOF))
        else {
            return error(4, TlvError::Unknown);
        };
        if !state
            .offer
            .as_ref()
            .is_some_and(|offer| offer.sent_to.contains(&connection))
        {
            return error(4, TlvError::Unknown);
        }
        let Some(offer) = state.offer.take() else {
            return error(4, TlvError::Unknown);
        };
        if identity.is_locked() {
            return error(4, TlvError::MaxTries);
        }
        if offer.code != identity.setup_code() {
            // Made for the code before an unlock: whatever the proof, it is not of this code.
            return error(4, TlvError::Authentication);
        }
        match offer.server.verify(a_pub, proof) {
            Ok(verified) => {
                state.proven = Some(Proven {
                    connection,
                    key: verified.key,
                    at: self.clock.now(),
                });
                Tlv::new()
                    .with(kind::STATE, &[4])
                    .with(kind::PROOF, &verified.proof)
            }
            Err(srp::Refused) => {
                match identity.count_setup_failure() {
                    Ok(n) if n >= MAX_FAILURES => log::warn!(
                        "HomeKit pair-setup: a wrong setup code ({n} of {MAX_FAILURES}): pairing \
                         by code is locked until it is unlocked (Unlock under Apple Home on the \
                         page, or hearth homekit unlock)"
                    ),
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
        let key = match state.proven.take() {
            Some(p) if p.connection == connection => p.key,
            other => {
                state.proven = other;
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

/// A new offer for `code`: a fresh salt and private value, and the SRP arithmetic (`None`
/// without randomness).
fn make_offer(group: Group, code: String) -> Option<Offer> {
    let (mut salt, mut b) = ([0u8; 16], [0u8; 32]);
    random::fill(&mut salt).ok()?;
    random::fill(&mut b).ok()?;
    let server = srp::Server::new(group, srp::USERNAME, code.as_bytes(), &salt, &b);
    let reply = Tlv::new()
        .with(kind::STATE, &[2])
        .with(kind::PUBLIC_KEY, &server.public_key())
        .with(kind::SALT, server.salt());
    Some(Offer {
        code,
        server: Box::new(server),
        reply,
        sent_to: BTreeSet::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::clock::ManualClock;
    use ring::signature::{Ed25519KeyPair, KeyPair};

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

    /// A controller's M3 for the offer `m2` with `code`, and the SRP key it will share.
    fn m3(m2: &Tlv, code: &str) -> (Tlv, Vec<u8>) {
        let (a_pub, proof, key) = srp::client(
            m2.get(kind::SALT).unwrap(),
            m2.get(kind::PUBLIC_KEY).unwrap(),
            code.as_bytes(),
            &[7; 32],
        );
        let m3 = Tlv::new()
            .with(kind::STATE, &[3])
            .with(kind::PUBLIC_KEY, &a_pub)
            .with(kind::PROOF, &proof);
        (m3, key)
    }

    /// A controller's M5 under the SRP key: its pairing id and long-term key, signed.
    fn m5(key: &[u8], id: &str, controller: &Ed25519KeyPair) -> Tlv {
        let session = crypto::hkdf(key, b"Pair-Setup-Encrypt-Salt", b"Pair-Setup-Encrypt-Info");
        let x = crypto::hkdf(
            key,
            b"Pair-Setup-Controller-Sign-Salt",
            b"Pair-Setup-Controller-Sign-Info",
        );
        let ltpk = controller.public_key().as_ref();
        let signature = controller.sign(&[&x[..], id.as_bytes(), ltpk].concat());
        let sub = Tlv::new()
            .with(kind::IDENTIFIER, id.as_bytes())
            .with(kind::PUBLIC_KEY, ltpk)
            .with(kind::SIGNATURE, signature.as_ref());
        let sealed = crypto::seal(
            &session,
            crypto::label_nonce(b"PS-Msg05"),
            &[],
            &sub.encode(),
        );
        Tlv::new()
            .with(kind::STATE, &[5])
            .with(kind::ENCRYPTED_DATA, &sealed)
    }

    fn controller_key() -> Ed25519KeyPair {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&ring::rand::SystemRandom::new()).unwrap();
        Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap()
    }

    /// M6 opened with the SRP key: the accessory's pairing id.
    fn m6_identifier(m6: &Tlv, key: &[u8]) -> Vec<u8> {
        assert_eq!(m6.byte(kind::STATE), Some(6), "{m6:?}");
        let session = crypto::hkdf(key, b"Pair-Setup-Encrypt-Salt", b"Pair-Setup-Encrypt-Info");
        let plain = crypto::open(
            &session,
            crypto::label_nonce(b"PS-Msg06"),
            &[],
            m6.get(kind::ENCRYPTED_DATA).unwrap(),
        )
        .unwrap();
        Tlv::decode(&plain)
            .unwrap()
            .get(kind::IDENTIFIER)
            .unwrap()
            .to_vec()
    }

    fn has_offer(setup: &PairSetup) -> bool {
        setup.state.lock().offer.is_some()
    }

    #[test]
    fn the_hundredth_wrong_code_locks_pair_setup_until_an_unlock() {
        let (id, dir) = identity("tries");
        let setup = PairSetup::new(Clock::system());
        // 98 failures without the cost of 98 exchanges; the 99th and 100th are real.
        for _ in 0..MAX_FAILURES - 2 {
            id.count_setup_failure().unwrap();
        }
        for _ in 0..2 {
            assert!(!id.is_locked());
            assert_eq!(setup.handle(1, &id, &m1()).byte(kind::STATE), Some(2));
            assert_eq!(
                setup.handle(1, &id, &wrong_m3()),
                error(4, TlvError::Authentication)
            );
        }
        assert_eq!(id.setup_failures(), MAX_FAILURES);
        assert!(id.is_locked());
        // Refused before any arithmetic: no offer is made for a refused M1.
        assert!(!has_offer(&setup));
        assert_eq!(setup.handle(1, &id, &m1()), error(2, TlvError::MaxTries));
        assert_eq!(setup.handle(2, &id, &m1()), error(2, TlvError::MaxTries));
        assert!(!has_offer(&setup));
        // Kept: a restart (a new pair-setup, the identity read again) gives no more tries.
        let again = Identity::open(&dir).unwrap();
        assert_eq!(
            PairSetup::new(Clock::system()).handle(3, &again, &m1()),
            error(2, TlvError::MaxTries)
        );
        // An unlock lets pairing start again, with a new code (and a kept count of zero).
        let old = again.setup_code();
        let code = again.unlock().unwrap();
        assert_ne!(code, old);
        assert_eq!(again.setup_code(), code);
        assert_eq!(again.setup_failures(), 0);
        assert_eq!(Identity::open(&dir).unwrap().setup_code(), code, "durable");
        let setup = PairSetup::new(Clock::system());
        let m2 = setup.handle(3, &again, &m1());
        assert_eq!(m2.byte(kind::STATE), Some(2));
        let (m3, _) = m3(&m2, &code);
        assert_eq!(setup.handle(3, &again, &m3).byte(kind::STATE), Some(4));
        // A reset unlocks too (and keeps the code).
        for _ in 0..MAX_FAILURES {
            again.count_setup_failure().unwrap();
        }
        assert!(again.is_locked());
        again.reset().unwrap();
        assert!(!again.is_locked());
        assert_eq!(again.setup_code(), code);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_unlock_is_refused_while_nothing_is_locked_and_keeps_the_pairings() {
        let (id, dir) = identity("unlock");
        let code = id.setup_code();
        id.count_setup_failure().unwrap();
        assert!(matches!(id.unlock(), Err(IdentityError::NotLocked(1))));
        assert_eq!(
            id.unlock().err().map(|e| e.to_string()),
            Some(
                "HomeKit pairing is not locked (1 wrong setup code of 100): nothing to unlock"
                    .into()
            )
        );
        assert_eq!((id.setup_code(), id.setup_failures()), (code.clone(), 1));
        // Paired, then locked (a count left from before a pairing was removed, say): the
        // unlock keeps the pairing, the device id and the key.
        let phone = Pairing {
            id: "phone".into(),
            public_key: [4; 32],
            admin: true,
        };
        id.add_pairing(phone.clone()).unwrap();
        for _ in 0..MAX_FAILURES {
            id.count_setup_failure().unwrap();
        }
        let (device, key) = (
            id.device_id(),
            identity::public_key(&id.signing_key().unwrap()),
        );
        assert_ne!(id.unlock().unwrap(), code);
        assert_eq!(id.pairings(), vec![phone]);
        assert_eq!(id.device_id(), device);
        assert_eq!(identity::public_key(&id.signing_key().unwrap()), key);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn every_m1_gets_the_one_offer_until_an_m3_spends_it() {
        let (id, dir) = identity("offer");
        let code = id.setup_code();
        let setup = PairSetup::new(Clock::system());
        let m2 = setup.handle(1, &id, &m1());
        assert_eq!(m2.byte(kind::STATE), Some(2));
        assert_eq!(m2.get(kind::SALT).map(<[u8]>::len), Some(16));
        assert_eq!(m2.get(kind::PUBLIC_KEY).map(<[u8]>::len), Some(384));
        // Another connection, and the first again: the same salt and B, no arithmetic.
        assert_eq!(setup.handle(2, &id, &m1()), m2);
        assert_eq!(setup.handle(1, &id, &m1()), m2);
        // An M3 from a connection the offer was not sent to, or without its fields, is
        // refused and spends nothing.
        let (right, _) = m3(&m2, &code);
        assert_eq!(setup.handle(3, &id, &right), error(4, TlvError::Unknown));
        assert_eq!(
            setup.handle(1, &id, &Tlv::new().with(kind::STATE, &[3])),
            error(4, TlvError::Unknown)
        );
        assert!(has_offer(&setup));
        // A step out of order.
        assert_eq!(
            setup.handle(1, &id, &Tlv::new().with(kind::STATE, &[5])),
            error(6, TlvError::Unknown)
        );
        // The first M3 spends it, right or wrong: here a wrong one, counted.
        assert_eq!(
            setup.handle(2, &id, &wrong_m3()),
            error(4, TlvError::Authentication)
        );
        assert_eq!(id.setup_failures(), 1);
        assert!(!has_offer(&setup));
        // The other controller's M3 on the spent offer is refused, and counts nothing.
        assert_eq!(setup.handle(1, &id, &right), error(4, TlvError::Unknown));
        assert_eq!(id.setup_failures(), 1);
        // It starts again: a new offer, which its proof of the code passes.
        let again = setup.handle(1, &id, &m1());
        assert_eq!(again.byte(kind::STATE), Some(2));
        assert_ne!(again.get(kind::PUBLIC_KEY), m2.get(kind::PUBLIC_KEY));
        let (right, _) = m3(&again, &code);
        assert_eq!(setup.handle(1, &id, &right).byte(kind::STATE), Some(4));
        // A closed connection is forgotten: its proven exchange (so others may start), and
        // the offer it was sent (no longer its to answer).
        assert_eq!(setup.handle(4, &id, &m1()), error(2, TlvError::Busy));
        setup.abandon(1);
        let third = setup.handle(4, &id, &m1());
        assert_eq!(third.byte(kind::STATE), Some(2));
        setup.abandon(4);
        let (right, _) = m3(&third, &code);
        assert_eq!(setup.handle(4, &id, &right), error(4, TlvError::Unknown));
        // None while paired.
        id.add_pairing(Pairing {
            id: "c".into(),
            public_key: [1; 32],
            admin: true,
        })
        .unwrap();
        assert_eq!(setup.handle(5, &id, &m1()), error(2, TlvError::Unavailable));
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The brief's case on a driven clock: a neighbour sends M1 every second, on two
    /// connections in turn and on a new one each time, while the owner's controller takes 20 s
    /// between M2 and M3 (a person typing the code). The owner pairs; the neighbour is told
    /// `Busy` only while the owner's proven exchange waits for its M5.
    #[test]
    fn the_owner_pairs_while_a_neighbour_sends_m1_every_second() {
        let (id, dir) = identity("flood");
        let time = ManualClock::at(1_000_000);
        let setup = PairSetup::new(time.clock());
        let owner = 1000;
        let mut neighbour = 1..;
        let mut flood = |setup: &PairSetup, want: Option<TlvError>| {
            for connection in [2, 3, neighbour.next().unwrap() + 10] {
                let answer = setup.handle(connection, &id, &m1());
                assert_eq!(
                    answer.byte(kind::ERROR),
                    want.map(|e| e as u8),
                    "{answer:?}"
                );
            }
        };
        let mut m2 = None;
        for second in 0..30 {
            flood(&setup, None);
            if second == 3 {
                m2 = Some(setup.handle(owner, &id, &m1()));
            }
            time.advance(Duration::from_secs(1));
        }
        let m2 = m2.unwrap();
        assert_eq!(m2.byte(kind::STATE), Some(2));
        let (m3, key) = m3(&m2, &id.setup_code());
        let m4 = setup.handle(owner, &id, &m3);
        assert_eq!(m4.byte(kind::STATE), Some(4), "{m4:?}");
        // Proven: the neighbour waits, as long as PROVEN_HOLD at most.
        time.advance(PROVEN_HOLD - Duration::from_millis(1));
        flood(&setup, Some(TlvError::Busy));
        let signer = controller_key();
        let m6 = setup.handle(owner, &id, &m5(&key, "owner-phone", &signer));
        assert_eq!(m6_identifier(&m6, &key), id.device_id().into_bytes());
        assert_eq!(id.pairings().len(), 1);
        assert_eq!(id.pairings()[0].id, "owner-phone");
        assert_eq!(id.setup_failures(), 0);
        flood(&setup, Some(TlvError::Unavailable));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_proven_exchange_holds_pair_setup_for_ten_seconds_at_most() {
        let (id, dir) = identity("hold");
        let code = id.setup_code();
        let time = ManualClock::at(1_000_000);
        let setup = PairSetup::new(time.clock());
        let m2 = setup.handle(1, &id, &m1());
        let (m3_1, key) = m3(&m2, &code);
        assert_eq!(setup.handle(1, &id, &m3_1).byte(kind::STATE), Some(4));
        time.advance(PROVEN_HOLD - Duration::from_millis(1));
        assert_eq!(setup.handle(2, &id, &m1()), error(2, TlvError::Busy));
        // Past the hold, a stalled exchange gives way: the next M1 takes over ...
        time.advance(Duration::from_millis(1));
        let m2 = setup.handle(2, &id, &m1());
        assert_eq!(m2.byte(kind::STATE), Some(2));
        // ... and the stalled one's M5 is refused, storing nothing.
        let signer = controller_key();
        assert_eq!(
            setup.handle(1, &id, &m5(&key, "late", &signer)),
            error(6, TlvError::Unknown)
        );
        assert!(!id.is_paired());
        // A proven exchange whose connection closes lets go at once.
        let (m3_2, _) = m3(&m2, &code);
        assert_eq!(setup.handle(2, &id, &m3_2).byte(kind::STATE), Some(4));
        assert_eq!(setup.handle(3, &id, &m1()), error(2, TlvError::Busy));
        setup.abandon(2);
        assert_eq!(setup.handle(3, &id, &m1()).byte(kind::STATE), Some(2));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_offer_made_before_an_unlock_proves_nothing() {
        let (id, dir) = identity("stale");
        let old = id.setup_code();
        let setup = PairSetup::new(Clock::system());
        let m2 = setup.handle(1, &id, &m1());
        for _ in 0..MAX_FAILURES {
            id.count_setup_failure().unwrap();
        }
        assert_eq!(setup.handle(2, &id, &m1()), error(2, TlvError::MaxTries));
        let code = id.unlock().unwrap();
        // The old code's proof on the old offer: refused, not counted.
        let (stale, _) = m3(&m2, &old);
        assert_eq!(
            setup.handle(1, &id, &stale),
            error(4, TlvError::Authentication)
        );
        assert_eq!(id.setup_failures(), 0);
        // A new M1 is offered for the new code, which pairs.
        let m2 = setup.handle(1, &id, &m1());
        let (fresh, _) = m3(&m2, &code);
        assert_eq!(setup.handle(1, &id, &fresh).byte(kind::STATE), Some(4));
        // An offer that goes stale with no M3 on it is made anew at the next M1.
        let (id2, dir2) = identity("stale-m1");
        let setup = PairSetup::new(Clock::system());
        let before = setup.handle(1, &id2, &m1());
        for _ in 0..MAX_FAILURES {
            id2.count_setup_failure().unwrap();
        }
        let code = id2.unlock().unwrap();
        let after = setup.handle(1, &id2, &m1());
        assert_ne!(after, before);
        let (fresh, _) = m3(&after, &code);
        assert_eq!(setup.handle(1, &id2, &fresh).byte(kind::STATE), Some(4));
        std::fs::remove_dir_all(dir).unwrap();
        std::fs::remove_dir_all(dir2).unwrap();
    }
}
