//! The responder on the real port 5353, in a network of the test's own ([`super::lan`]):
//! what the other machines on each link are told and asked, an address that changes and an
//! interface that appears, the goodbye on each link, a second bridge of the same name, and
//! aiohomekit (with python-zeroconf, as Home Assistant runs them) finding the real server and
//! pairing with what it found.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::unbounded;
use hearth::hap::Identity;
use hearth::homekit::mdns::advertise_on;
use hearth::homekit::mdns::wire::{self, Message, Name, Question};
use hearth::util::shutdown::Shutdown;
use serde_json::Value;
use socket2::{Domain, Protocol, Socket, Type};

use super::lan::{Lan, isolated};
use crate::common::{TIMEOUT, TempDir, TestServer};
use crate::homekit_pairing::controller::python;

const GROUP: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 251);
/// The interfaces are read every 10 s: an address that changes is followed within that.
const REREAD: Duration = Duration::from_secs(30);

/// A socket of the peer's on port 5353 that hears the group on `links`, as another responder
/// on those networks would.
fn listener(lan: &Lan, links: &[u8]) -> UdpSocket {
    lan.in_peer(|| {
        let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
        s.set_reuse_address(true).unwrap();
        s.set_reuse_port(true).unwrap();
        s.bind(&SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 5353).into())
            .unwrap();
        for i in links {
            s.join_multicast_v4(&GROUP, &Lan::peer(*i)).unwrap();
        }
        s.into()
    })
}

/// Waits at most `limit` for a response from port 5353 that `want` accepts (with the address
/// it came from).
fn response(
    socket: &UdpSocket,
    limit: Duration,
    what: &str,
    want: impl Fn(&Message, Ipv4Addr) -> bool,
) -> Message {
    let deadline = Instant::now() + limit;
    let mut buf = [0u8; 9000];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "{what}: not within {limit:?}");
        socket.set_read_timeout(Some(left)).unwrap();
        let Ok((n, SocketAddr::V4(from))) = socket.recv_from(&mut buf) else {
            continue;
        };
        let Ok(message) = Message::parse(&buf[..n]) else {
            continue;
        };
        if from.port() == 5353 && message.is_response() && want(&message, *from.ip()) {
            return message;
        }
    }
}

fn addresses(m: &Message) -> Vec<Ipv4Addr> {
    m.records()
        .filter(|r| r.rtype == wire::A)
        .map(|r| Ipv4Addr::new(r.data[0], r.data[1], r.data[2], r.data[3]))
        .collect()
}

/// The instance a response's `_hap._tcp` PTR names, if it has one.
fn instance(m: &Message) -> Option<String> {
    let service = Name::new(&["_hap", "_tcp", "local"]).unwrap();
    m.answers
        .iter()
        .find(|r| r.rtype == wire::PTR && r.name.same(&service))
        .map(|r| {
            let first = r.data[0] as usize;
            String::from_utf8_lossy(&r.data[1..=first]).into_owned()
        })
}

fn host_of(identity: &Identity) -> Name {
    let label = format!(
        "hearth-{}",
        identity.device_id().replace(':', "").to_ascii_lowercase()
    );
    Name::new(&[&label, "local"]).unwrap()
}

#[test]
fn each_link_is_told_its_own_address_and_a_changed_one() {
    let Some(lan) = isolated(
        "homekit_mdns::netns::each_link_is_told_its_own_address_and_a_changed_one",
        2,
    ) else {
        return;
    };
    let listener = listener(&lan, &[0, 1]);
    let dir = TempDir::new("mdns-links");
    let identity = Arc::new(Identity::open(&dir.path().join("homekit")).unwrap());
    let shutdown = Shutdown::new();
    let (_changes, changed) = unbounded();
    let advertisement = advertise_on(
        5353,
        Arc::clone(&identity),
        "hearth test",
        51826,
        || 1,
        changed,
        &shutdown,
    )
    .unwrap();

    // Announced on each link with that link's address only.
    for i in [0, 1] {
        let m = response(
            &listener,
            TIMEOUT,
            &format!("announced on link {i}"),
            |m, from| from == Lan::hearth(i) && instance(m).is_some(),
        );
        assert_eq!(instance(&m).as_deref(), Some("hearth test"));
        assert_eq!(addresses(&m), [Lan::hearth(i)], "link {i}");
    }

    // A resolver's legacy query (from a port of its own) on link 1: answered to that port, from
    // 5353, with its id and question and link 1's address.
    let resolver: UdpSocket = lan.in_peer(|| {
        let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
        s.bind(&SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0).into())
            .unwrap();
        s.set_multicast_if_v4(&Lan::peer(1)).unwrap();
        s.into()
    });
    let query = Message {
        id: 4242,
        questions: vec![Question {
            name: host_of(&identity),
            qtype: wire::A,
            qclass: wire::IN,
        }],
        ..Message::default()
    };
    resolver.send_to(&query.encode(), (GROUP, 5353)).unwrap();
    resolver.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut buf = [0u8; 9000];
    let (n, from) = resolver.recv_from(&mut buf).unwrap();
    assert_eq!(from, SocketAddr::from((Lan::hearth(1), 5353)));
    let answer = Message::parse(&buf[..n]).unwrap();
    assert_eq!(answer.id, 4242);
    assert_eq!(answer.questions, query.questions);
    assert_eq!(addresses(&answer), [Lan::hearth(1)]);
    assert!(answer.answers.iter().all(|r| r.ttl <= 10));

    // Link 0's address changes (a new DHCP lease) and a third link appears: both announced,
    // each with its address, once the interfaces are read again.
    let moved = Ipv4Addr::new(10, 9, 0, 7);
    lan.readdress(0, moved);
    lan.add_link(2);
    listener.join_multicast_v4(&GROUP, &Lan::peer(2)).unwrap();
    // (An announcement already due may still go out from the new address with the old one.)
    for (from_ip, what) in [(moved, "the new address"), (Lan::hearth(2), "the new link")] {
        let m = response(&listener, REREAD, what, |m, from| {
            from == from_ip && instance(m).is_some() && addresses(m).contains(&from_ip)
        });
        assert_eq!(addresses(&m), [from_ip], "{what}");
    }

    // Stopped: a goodbye on every link, at once.
    let stopping = Instant::now();
    shutdown.trigger();
    advertisement.join();
    eprintln!("the advertisement stopped in {:?}", stopping.elapsed());
    for from_ip in [moved, Lan::hearth(1), Lan::hearth(2)] {
        let m = response(&listener, TIMEOUT, "a goodbye", |m, from| {
            from == from_ip && m.answers.iter().all(|r| r.ttl == 0)
        });
        assert_eq!(instance(&m).as_deref(), Some("hearth test"));
        assert_eq!(addresses(&m), [from_ip]);
    }
}

/// Two hearths with the same HOMEKIT_NAME on one network: the second to start finds the name
/// taken while probing and takes "hearth test 2"; neither announces the other's name.
#[test]
fn a_second_bridge_of_the_same_name_takes_another() {
    let Some(lan) = isolated(
        "homekit_mdns::netns::a_second_bridge_of_the_same_name_takes_another",
        1,
    ) else {
        return;
    };
    let listener = listener(&lan, &[0]);
    let dir = TempDir::new("mdns-twins");
    let first_identity = Arc::new(Identity::open(&dir.path().join("first")).unwrap());
    let second_identity = Arc::new(Identity::open(&dir.path().join("second")).unwrap());
    let shutdown = Shutdown::new();
    let (_changes, changed) = unbounded();
    let first = advertise_on(
        5353,
        first_identity,
        "hearth test",
        51826,
        || 1,
        changed.clone(),
        &shutdown,
    )
    .unwrap();
    let m = response(&listener, TIMEOUT, "the first announced", |m, from| {
        from == Lan::hearth(0) && instance(m).is_some()
    });
    assert_eq!(instance(&m).as_deref(), Some("hearth test"));

    // The second, on the peer's side of the link.
    let second = lan.in_peer(|| {
        advertise_on(
            5353,
            second_identity,
            "hearth test",
            51827,
            || 1,
            changed,
            &shutdown,
        )
        .unwrap()
    });
    let m = response(&listener, TIMEOUT, "the second announced", |m, from| {
        from == Lan::peer(0) && instance(m).is_some()
    });
    assert_eq!(instance(&m).as_deref(), Some("hearth test 2"));
    shutdown.trigger();
    first.join();
    second.join();
}

/// aiohomekit, with python-zeroconf (as Home Assistant's HomeKit Controller runs them), on the
/// peer's side: it finds the real server's bridge, reads its TXT record, and pairs over the
/// address and port it found.
#[test]
fn aiohomekit_finds_the_server_and_pairs_with_what_it_found() {
    let Some(python) = python() else { return };
    let Some(lan) = isolated(
        "homekit_mdns::netns::aiohomekit_finds_the_server_and_pairs_with_what_it_found",
        1,
    ) else {
        return;
    };
    let s = TestServer::start_with(|c| c.control_bind = Ipv4Addr::UNSPECIFIED.into());
    let identity = Arc::clone(s.app().homekit().identity().expect("HomeKit is on"));
    let port = s.server().homekit_addr().expect("its listener").port();
    let out = lan
        .in_peer_command(&python)
        .arg(format!(
            "{}/tests/homekit/discover.py",
            env!("CARGO_MANIFEST_DIR")
        ))
        .args([&identity.device_id(), &identity.setup_code(), "20"])
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&out.stdout);
    let found: Value = serde_json::from_str(line.trim())
        .unwrap_or_else(|e| panic!("{e}: {line}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(found["error"], Value::Null, "{found}");
    assert_eq!(found["name"], "hearth");
    assert_eq!(found["id"], identity.device_id().to_lowercase());
    assert_eq!(found["address"], Lan::hearth(0).to_string());
    assert_eq!(found["port"], port);
    assert_eq!(found["status_flags"], 1, "unpaired");
    assert_eq!(found["category"], 2, "a bridge");
    assert_eq!(found["model"], "hearth");
    assert_eq!(found["protocol_version"], "1.1");
    assert_eq!(found["accessories"], 1, "the bridge, no thermostat yet");
    assert!(identity.is_paired());
}
