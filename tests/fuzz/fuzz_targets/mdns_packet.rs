#![no_main]
//! Multicast DNS packets, as anyone on the network may send them to port 5353
//! (`homekit/mdns/wire.rs`, `homekit/mdns/responder.rs`). The input is read as a packet: one
//! that reads has names of at most 255 bytes and labels of at most 63, and written back it
//! reads as the same message. Then it goes to a responder that has announced, as each kind of
//! packet it may be (sent to the group from port 5353, sent to hearth's address, a legacy query
//! from another port, from off the interface's network), and again a second later (what it
//! delayed is then sent): everything the responder sends reads, is at most a packet's size,
//! carries only hearth's own records (a legacy answer echoes the questions it was asked),
//! goes to the group on the interface the packet came in on or back to its sender, and a
//! unicast answer only to an address on that interface's network.
//!
//! Random bytes seldom name hearth's records, so the input is also made into a packet that
//! does ([`made`]): questions and records about hearth's names, the browsed type and others,
//! of the types it answers and others, with data that is sometimes hearth's own (a known
//! answer, its own packet coming back) and sometimes not (a conflict, a rival probe); that
//! packet goes to the responder the same way.
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use hearth::homekit::mdns::responder::{
    Datagram, Interface, Outgoing, Responder, Setup, To, txt_data,
};
use hearth::homekit::mdns::wire::{self, MAX_PACKET, Message, Name, Question, Record};
use libfuzzer_sys::fuzz_target;

const LAN: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

fn check_names(m: &Message) {
    for name in m
        .questions
        .iter()
        .map(|q| &q.name)
        .chain(m.records().map(|r| &r.name))
    {
        assert!(name.as_bytes().len() <= 255);
        assert!(name.labels().all(|l| !l.is_empty() && l.len() <= 63));
    }
}

/// A responder with its names probed and announced on interface 2 (10.0.0.1/24), and the time
/// it is there: made once, each input starts from a copy.
fn announced() -> (Responder, Instant) {
    static ANNOUNCED: OnceLock<(Responder, Instant)> = OnceLock::new();
    ANNOUNCED.get_or_init(|| make_announced(Instant::now())).clone()
}

fn make_announced(start: Instant) -> (Responder, Instant) {
    let mut r = Responder::new(
        Setup {
            mdns_port: 5353,
            port: 51826,
            name: "hearth".into(),
            host: "hearth-aabbccddeeff".into(),
            txt: txt_data(&[("c#", "1".into()), ("sf", "1".into())]),
        },
        start,
        1,
    );
    r.set_interfaces(
        start,
        vec![Interface {
            index: 2,
            addresses: vec![(LAN, 24)],
        }],
    );
    let mut now = start;
    while let Some(at) = r.next_due() {
        now = at;
        r.due(now);
    }
    assert!(r.announced());
    (r, now)
}

fn check_sent(r: &Responder, datagram: &Datagram<'_>, asked: Option<&Message>, out: &[Outgoing]) {
    let ours = [
        Name::new(&["_hap", "_tcp", "local"]).unwrap(),
        Name::new(&["_services", "_dns-sd", "_udp", "local"]).unwrap(),
        Name::new(&[&r.instance(), "_hap", "_tcp", "local"]).unwrap(),
        r.host().clone(),
    ];
    for o in out {
        assert!(o.packet.len() <= MAX_PACKET);
        let m = Message::parse(&o.packet).expect("what hearth sends reads");
        check_names(&m);
        for record in m.records() {
            assert!(ours.iter().any(|n| n.same(&record.name)), "{record:?}");
        }
        match o.to {
            To::Multicast(index) => assert_eq!(index, datagram.interface),
            To::Unicast(to) => {
                assert_eq!(to, datagram.source);
                let on_link = to.ip().octets()[..3] == LAN.octets()[..3];
                assert!(on_link, "unicast off the network: {to}");
            }
        }
        if m.is_response() && !m.questions.is_empty() {
            // A legacy answer: the questions it was asked, its id.
            let asked = asked.expect("a question echoed from a packet that read");
            assert_eq!(m.questions, asked.questions);
            assert_eq!(m.id, asked.id);
            assert!(m.records().all(|r| r.ttl <= 10));
        }
    }
}

/// A packet about hearth's names, made from `data`: a byte of flags (response, truncated),
/// then items of a kind byte (question, answer, authority or additional record; QU or
/// cache-flush in its top bit), a name byte, a type byte and, for a record, a length and data.
fn made(data: &[u8]) -> Vec<u8> {
    let host = Name::new(&["hearth-aabbccddeeff", "local"]).unwrap();
    let names = [
        Name::new(&["_hap", "_tcp", "local"]).unwrap(),
        Name::new(&["_services", "_dns-sd", "_udp", "local"]).unwrap(),
        Name::new(&["hearth", "_hap", "_tcp", "local"]).unwrap(),
        host.clone(),
        Name::new(&["hearth 2", "_hap", "_tcp", "local"]).unwrap(),
        Name::new(&["other", "local"]).unwrap(),
    ];
    let types = [
        wire::PTR,
        wire::SRV,
        wire::TXT,
        wire::A,
        wire::AAAA,
        wire::ANY,
        wire::NSEC,
        99,
    ];
    let mut bytes = data.iter().copied();
    let mut m = Message {
        flags: (u16::from(bytes.next().unwrap_or(0)) << 8) & (wire::RESPONSE | wire::TRUNCATED),
        ..Message::default()
    };
    while let (Some(kind), Some(n), Some(t)) = (bytes.next(), bytes.next(), bytes.next()) {
        // Within what a packet may hold (64 questions, 256 records, 9,000 bytes).
        if m.questions.len() + m.records().count() >= 64 {
            break;
        }
        let name = names[usize::from(n) % names.len()].clone();
        let rtype = types[usize::from(t) % types.len()];
        let top = if kind & 0x80 != 0 { wire::TOP_BIT } else { 0 };
        if kind % 4 == 0 {
            m.questions.push(Question {
                name,
                qtype: rtype,
                qclass: wire::IN | top,
            });
            continue;
        }
        let len = usize::from(bytes.next().unwrap_or(0) % 32);
        let raw: Vec<u8> = (&mut bytes).take(len).collect();
        let own = raw.first().is_some_and(|b| b % 2 == 0);
        let data = match rtype {
            wire::PTR => names[len % names.len()].as_bytes().to_vec(),
            wire::SRV => {
                let port: u16 = if own {
                    51826
                } else {
                    u16::from(raw.get(1).copied().unwrap_or(0))
                };
                [&[0, 0, 0, 0][..], &port.to_be_bytes(), host.as_bytes()].concat()
            }
            wire::A if own => vec![10, 0, 0, 1],
            wire::TXT if own => txt_data(&[("c#", "1".into()), ("sf", "1".into())]),
            wire::NSEC => [names[len % names.len()].as_bytes(), &raw].concat(),
            _ => raw,
        };
        let record = Record {
            name,
            rtype,
            rclass: wire::IN | top,
            ttl: u32::from(kind) * 40,
            data,
        };
        match kind % 4 {
            1 => m.answers.push(record),
            2 => m.authority.push(record),
            _ => m.additional.push(record),
        }
    }
    m.encode()
}

fuzz_target!(|data: &[u8]| {
    let made = made(data);
    Message::parse(&made).expect("a made packet reads");
    for packet in [data, &made[..]] {
        respond(packet);
    }
});

fn respond(data: &[u8]) {
    let asked = Message::parse(data).ok();
    if let Some(m) = &asked {
        check_names(m);
        let again = Message::parse(&m.encode()).expect("an encoded message reads");
        assert_eq!(&again, m);
    }
    let neighbour = Ipv4Addr::new(10, 0, 0, 9);
    let stranger = Ipv4Addr::new(172, 16, 0, 1);
    for (source, multicast) in [
        (SocketAddrV4::new(neighbour, 5353), true),
        (SocketAddrV4::new(neighbour, 5353), false),
        (SocketAddrV4::new(neighbour, 40000), true),
        (SocketAddrV4::new(stranger, 5353), false),
        (SocketAddrV4::new(stranger, 40000), true),
    ] {
        let (mut r, now) = announced();
        let datagram = Datagram {
            interface: 2,
            source,
            multicast,
            bytes: data,
        };
        let out = r.received(now, datagram);
        check_sent(&r, &datagram, asked.as_ref(), &out);
        // What was delayed, or the probes after a conflict (queries, to the group).
        let later = r.due(now + Duration::from_secs(1));
        check_sent(&r, &datagram, asked.as_ref(), &later);
    }
}
