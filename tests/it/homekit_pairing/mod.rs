//! HAP's transport (`hearth::homekit::server`) started directly with a fake accessory side: one
//! accessory with a readable, writable, notifying characteristic. Raw-socket tests for what a
//! controller must not get (470 before verification, bounds, bad requests, pair-setup's one
//! offer spent by the first M3, refused while paired), and a real controller, aiohomekit (the
//! library behind Home Assistant's HomeKit Controller), driven by `tests/homekit/driver.py`:
//! pair by address with the setup code, read, write, hear an EVENT, reconnect after a restart
//! with the same pairing, refused with a wrong code, remove the pairing, and pair while a
//! neighbour sends M1s.
//!
//! The controller test needs `HEARTH_AIOHOMEKIT_PYTHON`, an interpreter with aiohomekit
//! (`bash .ci/aiohomekit.sh` makes one and prints its path); it skips with a message without
//! one, unless `HEARTH_REQUIRE_AIOHOMEKIT=1`.

pub(crate) mod controller;
mod fake;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use hearth::hap::Pairing;
use hearth::hap::tlv::{Tlv, TlvError, kind};
use hearth::homekit::server::Limits;
use serde_json::{Value, json};

use crate::common::{TIMEOUT, TempDir, wait_until};
use controller::{Controller, Typing, pair, python};
use fake::{Fake, Hap, any_port};

/// One raw HTTP exchange on `stream`: status, body.
fn exchange(stream: &mut TcpStream, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    read_answer(stream)
}

fn read_answer(stream: &mut TcpStream) -> (u16, Vec<u8>) {
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        assert_eq!(
            stream.read(&mut byte).unwrap(),
            1,
            "closed mid-head: {buf:?}"
        );
        buf.push(byte[0]);
    }
    let head = String::from_utf8(buf).unwrap();
    let status = head[9..12].parse().unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .parse()
        .unwrap();
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).unwrap();
    (status, body)
}

/// A controller paired out of band (as if by an earlier pair-setup).
fn pair_someone(hap: &Hap) {
    hap.identity
        .add_pairing(Pairing {
            id: "someone".into(),
            public_key: [1; 32],
            admin: true,
        })
        .unwrap();
}

fn m1() -> Vec<u8> {
    Tlv::new()
        .with(kind::STATE, &[1])
        .with(kind::METHOD, &[0])
        .encode()
}

fn tlv_error(body: &[u8]) -> Option<u8> {
    Tlv::decode(body).unwrap().byte(kind::ERROR)
}

/// Whether the peer closed the connection (a read gives end of file or a reset).
fn closed(stream: &mut TcpStream) -> bool {
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut byte = [0u8; 1];
    matches!(stream.read(&mut byte), Ok(0) | Err(_))
}

#[test]
fn before_pair_verify_only_the_pairing_routes_answer() {
    let dir = TempDir::new("hap-470");
    let hap = Hap::start(&Fake::new(20.0), dir.path(), any_port(), Limits::default());
    let mut s = TcpStream::connect(hap.addr()).unwrap();
    for (method, path) in [
        ("GET", "/accessories"),
        ("GET", "/characteristics?id=1.10"),
        ("PUT", "/characteristics"),
        ("POST", "/pairings"),
    ] {
        assert_eq!(
            exchange(&mut s, method, path, b"{}"),
            (470, br#"{"status":-70401}"#.to_vec()),
            "{method} {path}"
        );
    }
    assert_eq!(
        exchange(&mut s, "GET", "/nope", b""),
        (404, br#"{"status":-70409}"#.to_vec())
    );
    assert_eq!(
        exchange(&mut s, "GET", "/pair-setup", b""),
        (405, br#"{"status":-70409}"#.to_vec())
    );
    // Identify answers while unpaired, and not once paired.
    assert_eq!(
        exchange(&mut s, "POST", "/identify", b""),
        (204, Vec::new())
    );
    pair_someone(&hap);
    assert_eq!(
        exchange(&mut s, "POST", "/identify", b""),
        (400, br#"{"status":-70401}"#.to_vec())
    );
    // A pair-verify by an unknown controller gets M2, then is refused at M4 (it cannot sign).
    let (status, body) = exchange(
        &mut s,
        "POST",
        "/pair-verify",
        &Tlv::new()
            .with(kind::STATE, &[1])
            .with(kind::PUBLIC_KEY, &[9; 32])
            .encode(),
    );
    assert_eq!(status, 200);
    let m2 = Tlv::decode(&body).unwrap();
    assert_eq!(m2.byte(kind::STATE), Some(2));
    assert_eq!(m2.get(kind::PUBLIC_KEY).map(<[u8]>::len), Some(32));
    let (status, body) = exchange(
        &mut s,
        "POST",
        "/pair-verify",
        &Tlv::new()
            .with(kind::STATE, &[3])
            .with(kind::ENCRYPTED_DATA, &[0; 40])
            .encode(),
    );
    assert_eq!(
        (status, tlv_error(&body)),
        (200, Some(TlvError::Authentication as u8))
    );
    assert_eq!(
        exchange(&mut s, "GET", "/accessories", b""),
        (470, br#"{"status":-70401}"#.to_vec())
    );
    hap.stop();
}

#[test]
fn a_web_page_cannot_spend_the_pair_setup_tries() {
    let dir = TempDir::new("hap-browser");
    let hap = Hap::start(&Fake::new(20.0), dir.path(), any_port(), Limits::default());
    for header in ["Origin: http://hearth.local", "Sec-Fetch-Site: cross-site"] {
        let mut s = TcpStream::connect(hap.addr()).unwrap();
        let body = m1();
        let head = format!(
            "POST /pair-setup HTTP/1.1\r\n{header}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(&body).unwrap();
        assert_eq!(read_answer(&mut s), (403, br#"{"status":-70401}"#.to_vec()));
        assert!(closed(&mut s));
    }
    // The same request from a controller is served: the refusal was the header's.
    let mut s = TcpStream::connect(hap.addr()).unwrap();
    let (_, body) = exchange(&mut s, "POST", "/pair-setup", &m1());
    assert_eq!(Tlv::decode(&body).unwrap().byte(kind::STATE), Some(2));
    hap.stop();
}

fn wrong_m3() -> Vec<u8> {
    Tlv::new()
        .with(kind::STATE, &[3])
        .with(kind::PUBLIC_KEY, &[2; 384])
        .with(kind::PROOF, &[0; 64])
        .encode()
}

#[test]
fn every_m1_gets_one_offer_until_an_m3_spends_it_and_none_once_paired() {
    let dir = TempDir::new("hap-offer");
    let hap = Hap::start(&Fake::new(20.0), dir.path(), any_port(), Limits::default());
    let mut first = TcpStream::connect(hap.addr()).unwrap();
    let (status, offer) = exchange(&mut first, "POST", "/pair-setup", &m1());
    let m2 = Tlv::decode(&offer).unwrap();
    assert_eq!((status, m2.byte(kind::STATE)), (200, Some(2)));
    assert_eq!(m2.get(kind::SALT).map(<[u8]>::len), Some(16));
    assert_eq!(m2.get(kind::PUBLIC_KEY).map(<[u8]>::len), Some(384));
    // A second controller is not kept out: it is handed the same salt and B.
    let mut second = TcpStream::connect(hap.addr()).unwrap();
    assert_eq!(
        exchange(&mut second, "POST", "/pair-setup", &m1()),
        (200, offer.clone())
    );
    // The first M3 spends the offer: a wrong proof, counted ...
    let (_, body) = exchange(&mut first, "POST", "/pair-setup", &wrong_m3());
    assert_eq!(tlv_error(&body), Some(TlvError::Authentication as u8));
    assert_eq!(hap.identity.setup_failures(), 1);
    // ... so the second's M3 finds it spent (and counts nothing), and its next M1 gets a new
    // offer.
    let (_, body) = exchange(&mut second, "POST", "/pair-setup", &wrong_m3());
    assert_eq!(tlv_error(&body), Some(TlvError::Unknown as u8));
    assert_eq!(hap.identity.setup_failures(), 1);
    let (_, again) = exchange(&mut second, "POST", "/pair-setup", &m1());
    assert_eq!(Tlv::decode(&again).unwrap().byte(kind::STATE), Some(2));
    assert_ne!(again, offer);
    // A step out of order is refused and changes nothing.
    let (_, body) = exchange(
        &mut first,
        "POST",
        "/pair-setup",
        &Tlv::new().with(kind::STATE, &[5]).encode(),
    );
    assert_eq!(tlv_error(&body), Some(TlvError::Unknown as u8));
    // A body that is not TLV8, to either pairing route.
    let (status, body) = exchange(&mut first, "POST", "/pair-verify", &[6, 9, 1]);
    assert_eq!(
        (status, tlv_error(&body)),
        (400, Some(TlvError::Unknown as u8))
    );
    let (status, body) = exchange(&mut first, "POST", "/pair-setup", &[6, 9, 1]);
    assert_eq!(
        (status, tlv_error(&body)),
        (400, Some(TlvError::Unknown as u8))
    );
    assert_eq!(hap.identity.setup_failures(), 1);
    pair_someone(&hap);
    let (_, body) = exchange(&mut first, "POST", "/pair-setup", &m1());
    assert_eq!(tlv_error(&body), Some(TlvError::Unavailable as u8));
    assert_eq!(hap.identity.pairings().len(), 1);
    hap.stop();
}

#[test]
fn connections_heads_and_deadlines_are_bounded() {
    let dir = TempDir::new("hap-bounds");
    let limits = Limits {
        per_address: 2,
        head: 256,
        unverified: Duration::from_millis(300),
        ..Limits::default()
    };
    let hap = Hap::start(&Fake::new(20.0), dir.path(), any_port(), limits);
    let mut a = TcpStream::connect(hap.addr()).unwrap();
    let mut b = TcpStream::connect(hap.addr()).unwrap();
    // Both are served (so both are counted) ...
    assert_eq!(exchange(&mut a, "POST", "/identify", b"").0, 204);
    assert_eq!(exchange(&mut b, "POST", "/identify", b"").0, 204);
    // ... and a third from the same address is closed unread.
    let mut c = TcpStream::connect(hap.addr()).unwrap();
    assert!(closed(&mut c));
    // A head over the limit is answered 431 and closed.
    let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(300)).into_bytes();
    a.write_all(&long).unwrap();
    assert_eq!(read_answer(&mut a).0, 431);
    assert!(closed(&mut a));
    // One that never completes pair-verify is closed at the deadline.
    assert!(closed(&mut b));
    // Their places are free again.
    wait_until("a new connection is served", || {
        let mut d = TcpStream::connect(hap.addr()).unwrap();
        d.write_all(b"POST /identify HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
            .unwrap();
        let mut first = [0u8; 12];
        d.set_read_timeout(Some(TIMEOUT)).unwrap();
        d.read_exact(&mut first).is_ok() && &first == b"HTTP/1.1 204"
    });
    hap.stop();
}

// ---- the real controller ----

fn value_of(answer: &Value) -> Value {
    answer["values"][0][2].clone()
}

#[test]
fn aiohomekit_pairs_reads_writes_hears_events_and_reconnects() {
    let Some(python) = python() else { return };
    let dir = TempDir::new("hap-aiohomekit");
    let fake = Fake::new(20.0);
    let hap = Hap::start(&fake, dir.path(), any_port(), Limits::default());
    let addr = hap.addr();
    let file = dir.path().join("pairing.json");
    let code = hap.identity.setup_code();

    // A wrong code is refused and pairs nothing; the right one then still works.
    let wrong = if code == "101-48-005" {
        "101-48-006"
    } else {
        "101-48-005"
    };
    assert_eq!(
        pair(&python, addr, wrong, &file),
        json!({"error": "AuthenticationError"})
    );
    assert!(!hap.identity.is_paired());
    assert_eq!(pair(&python, addr, &code, &file), json!({"ok": true}));
    let pairings = hap.identity.pairings();
    assert_eq!(pairings.len(), 1);
    assert!(pairings[0].admin);
    // Paired: a second pair-setup is refused.
    assert_eq!(
        pair(&python, addr, &code, &dir.path().join("other.json")),
        json!({"error": "UnavailableError"})
    );

    let mut c = Controller::start(&python, &file, addr.port());
    let listed = c.ask(json!({"op": "accessories"}));
    assert_eq!(listed["accessories"][0]["aid"], 1);
    assert_eq!(
        listed["accessories"][0]["services"][1]["characteristics"][0]["iid"],
        10
    );
    assert_eq!(
        value_of(&c.ask(json!({"op": "get", "ids": [[1, 10]]}))),
        json!(20.0)
    );
    c.ask(json!({"op": "put", "values": [[1, 10, 22.5]]}));
    assert_eq!(fake.get(), 22.5);
    c.ask(json!({"op": "subscribe", "ids": [[1, 10]]}));
    fake.set(19.0);
    assert_eq!(
        c.ask(json!({"op": "event", "timeout": 10}))["event"],
        json!([[1, 10, 19.0]])
    );
    let listed = c.ask(json!({"op": "list_pairings"}));
    assert_eq!(listed["pairings"].as_array().map(Vec::len), Some(1));
    let ios_id = c.ask(json!({"op": "ios_id"}))["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(listed["pairings"][0]["pairingId"], ios_id);
    c.stop();

    // The listener restarts on the same port with the identity it stored: the controller
    // verifies with the pairing it holds.
    hap.stop();
    let hap = Hap::start(&fake, dir.path(), addr, Limits::default());
    let mut c = Controller::start(&python, &file, addr.port());
    assert_eq!(
        value_of(&c.ask(json!({"op": "get", "ids": [[1, 10]]}))),
        json!(19.0)
    );
    c.ask(json!({"op": "remove_pairing", "id": ios_id}));
    assert!(!hap.identity.is_paired());
    c.stop();
    // Unpaired again: pair-setup with the code is open.
    assert_eq!(pair(&python, addr, &code, &file), json!({"ok": true}));
    // A reset (`hearth homekit reset`) closes the open session (were it open, the read would
    // succeed), and the controller's pairing no longer verifies.
    let mut c = Controller::start(&python, &file, addr.port());
    assert_eq!(
        value_of(&c.ask(json!({"op": "get", "ids": [[1, 10]]}))),
        json!(19.0)
    );
    hap.identity.reset().unwrap();
    // The read fails: either on the session being closed under it ("Transport is closed"),
    // or, once aiohomekit has seen the close, on reconnecting: pair-verify's M2 names another
    // accessory (a reset takes a new device id; aiohomekit gives up after its own 10 s).
    let mut refused = c.ask_raw(json!({"op": "get", "ids": [[1, 10]]}));
    assert!(refused.get("error").is_some(), "{refused}");
    if !refused.to_string().contains("IncorrectPairingIdError") {
        refused = c.ask_raw(json!({"op": "get", "ids": [[1, 10]]}));
    }
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("IncorrectPairingIdError")),
        "{refused}"
    );
    c.stop();
    hap.stop();
}

/// A neighbour's M1s cannot keep the owner from pairing: aiohomekit stops between M2 and M3
/// (as Home Assistant does while its user types the code) while another controller sends M1s
/// on two connections in turn and on new ones. Each is answered with the offer the neighbour
/// was first given (the same bytes: no arithmetic for them), which the owner was given too, and
/// the owner then pairs with the code.
#[test]
fn aiohomekit_pairs_while_a_neighbour_sends_m1s() {
    let Some(python) = python() else { return };
    let dir = TempDir::new("hap-flood");
    let hap = Hap::start(&Fake::new(20.0), dir.path(), any_port(), Limits::default());
    let (mut a, mut b) = (
        TcpStream::connect(hap.addr()).unwrap(),
        TcpStream::connect(hap.addr()).unwrap(),
    );
    let (_, offer) = exchange(&mut a, "POST", "/pair-setup", &m1());
    let salt = Tlv::decode(&offer)
        .unwrap()
        .get(kind::SALT)
        .unwrap()
        .to_vec();
    let file = dir.path().join("pairing.json");
    let (owner, m2) = Typing::start(&python, hap.addr(), &hap.identity.setup_code(), &file);
    let hex: String = salt.iter().map(|x| format!("{x:02x}")).collect();
    assert_eq!(
        m2,
        json!({"m2": true, "salt": hex}),
        "the owner joined the offer"
    );
    // The owner types; the neighbour goes on.
    for _ in 0..10 {
        for stream in [&mut b, &mut a] {
            assert_eq!(
                exchange(stream, "POST", "/pair-setup", &m1()),
                (200, offer.clone())
            );
        }
        let mut new = TcpStream::connect(hap.addr()).unwrap();
        assert_eq!(
            exchange(&mut new, "POST", "/pair-setup", &m1()),
            (200, offer.clone())
        );
    }
    assert_eq!(owner.finish(), json!({"ok": true}));
    assert_eq!(hap.identity.pairings().len(), 1);
    assert_eq!(hap.identity.setup_failures(), 0);
    let (_, body) = exchange(&mut b, "POST", "/pair-setup", &m1());
    assert_eq!(tlv_error(&body), Some(TlvError::Unavailable as u8));
    hap.stop();
}

/// Bytes sent in plain after pair-verify's M3, in the same write, are never served as the
/// verified controller's: someone on the path appending a request to a real controller's
/// pair-verify (here: adding themselves as an admin) gets the connection closed instead, and
/// nothing is stored.
#[test]
fn plain_bytes_after_pair_verify_are_not_served_as_the_controllers() {
    use hearth::hap::crypto;
    use ring::agreement::{self, EphemeralPrivateKey, UnparsedPublicKey, X25519};
    use ring::rand::SystemRandom;
    use ring::signature::{Ed25519KeyPair, KeyPair};

    let dir = TempDir::new("hap-plain-after-m3");
    let hap = Hap::start(&Fake::new(20.0), dir.path(), any_port(), Limits::default());
    let rng = SystemRandom::new();
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
    let long_term = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    let public_key: [u8; 32] = long_term.public_key().as_ref().try_into().unwrap();
    let phone = Pairing {
        id: "phone".into(),
        public_key,
        admin: true,
    };
    hap.identity.add_pairing(phone).unwrap();
    let mut s = TcpStream::connect(hap.addr()).unwrap();
    let ephemeral = EphemeralPrivateKey::generate(&X25519, &rng).unwrap();
    let ours = ephemeral.compute_public_key().unwrap().as_ref().to_vec();
    let m1 = Tlv::new()
        .with(kind::STATE, &[1])
        .with(kind::PUBLIC_KEY, &ours)
        .encode();
    let (status, body) = exchange(&mut s, "POST", "/pair-verify", &m1);
    assert_eq!(status, 200);
    let theirs = Tlv::decode(&body)
        .unwrap()
        .get(kind::PUBLIC_KEY)
        .unwrap()
        .to_vec();
    let shared =
        agreement::agree_ephemeral(ephemeral, &UnparsedPublicKey::new(&X25519, &theirs), |k| {
            k.to_vec()
        })
        .unwrap();
    let key = crypto::hkdf(
        &shared,
        b"Pair-Verify-Encrypt-Salt",
        b"Pair-Verify-Encrypt-Info",
    );
    let signed = [&ours[..], b"phone", &theirs[..]].concat();
    let proof = Tlv::new()
        .with(kind::IDENTIFIER, b"phone")
        .with(kind::SIGNATURE, long_term.sign(&signed).as_ref())
        .encode();
    let sealed = crypto::seal(&key, crypto::label_nonce(b"PV-Msg03"), &[], &proof);
    let m3 = Tlv::new()
        .with(kind::STATE, &[3])
        .with(kind::ENCRYPTED_DATA, &sealed)
        .encode();
    let add = Tlv::new()
        .with(kind::STATE, &[1])
        .with(kind::METHOD, &[3])
        .with(kind::IDENTIFIER, b"mallory")
        .with(kind::PUBLIC_KEY, &[9; 32])
        .with(kind::PERMISSIONS, &[1])
        .encode();
    let mut wire = format!(
        "POST /pair-verify HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
        m3.len()
    )
    .into_bytes();
    wire.extend_from_slice(&m3);
    wire.extend_from_slice(
        format!(
            "POST /pairings HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            add.len()
        )
        .as_bytes(),
    );
    wire.extend_from_slice(&add);
    s.write_all(&wire).unwrap();
    // No M4: the connection closes, after which nothing of it can be served.
    assert!(closed(&mut s), "the connection stays open");
    assert_eq!(hap.identity.pairing("mallory"), None);
    assert_eq!(hap.identity.pairings().len(), 1);
}
