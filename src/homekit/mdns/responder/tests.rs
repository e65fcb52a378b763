//! The responder's rules, driven without sockets: a clock of its own (`now` moved by hand),
//! queries made as controllers make them, and every packet it sends read back.

use super::*;

const PORT: u16 = 5353;
const HOST: &str = "hearth-aabbccddeeff";
const LAN: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const LAN2: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const OTHER: Ipv4Addr = Ipv4Addr::new(192, 168, 5, 1);

fn setup() -> Setup {
    Setup {
        mdns_port: PORT,
        port: 51826,
        name: "hearth".into(),
        host: HOST.into(),
        txt: txt_data(&[("c#", "1".into()), ("sf", "1".into())]),
    }
}

fn interfaces() -> Vec<Interface> {
    vec![
        Interface {
            index: 2,
            addresses: vec![(LAN, 24), (LAN2, 24)],
        },
        Interface {
            index: 3,
            addresses: vec![(OTHER, 24)],
        },
    ]
}

fn name(labels: &[&str]) -> Name {
    Name::new(labels).unwrap()
}

fn service() -> Name {
    name(&["_hap", "_tcp", "local"])
}

fn instance(label: &str) -> Name {
    name(&[label, "_hap", "_tcp", "local"])
}

fn host() -> Name {
    name(&[HOST, "local"])
}

/// A responder whose names are probed and announced, at `now`, with its announcements sent.
fn announced(start: Instant) -> (Responder, Instant) {
    let mut r = Responder::new(setup(), start, 7);
    r.set_interfaces(start, interfaces());
    let mut now = start;
    while !r.announced() {
        now = r.next_due().unwrap();
        r.due(now);
    }
    // Both announcements.
    while let Some(at) = r.next_due() {
        now = at;
        r.due(now);
    }
    (r, now)
}

fn query(questions: &[(Name, u16, bool)], known: Vec<Record>) -> Vec<u8> {
    Message {
        questions: questions
            .iter()
            .map(|(name, qtype, qu)| Question {
                name: name.clone(),
                qtype: *qtype,
                qclass: if *qu {
                    wire::IN | wire::TOP_BIT
                } else {
                    wire::IN
                },
            })
            .collect(),
        answers: known,
        ..Message::default()
    }
    .encode()
}

fn from(ip: Ipv4Addr, port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(ip, port)
}

fn multicast(interface: u32, source: SocketAddrV4, bytes: &[u8]) -> Datagram<'_> {
    Datagram {
        interface,
        source,
        multicast: true,
        bytes,
    }
}

fn read(out: &Outgoing) -> Message {
    Message::parse(&out.packet).unwrap()
}

fn types(records: &[Record]) -> Vec<u16> {
    records.iter().map(|r| r.rtype).collect()
}

fn addresses_in(message: &Message) -> Vec<Ipv4Addr> {
    message
        .records()
        .filter(|r| r.rtype == wire::A)
        .map(|r| Ipv4Addr::new(r.data[0], r.data[1], r.data[2], r.data[3]))
        .collect()
}

/// Runs what is due until `until`, collecting it.
fn run_until(r: &mut Responder, until: Instant) -> Vec<(Instant, Outgoing)> {
    let mut out = Vec::new();
    while let Some(at) = r.next_due().filter(|at| *at <= until) {
        out.extend(r.due(at).into_iter().map(|o| (at, o)));
    }
    out
}

#[test]
fn probes_three_times_then_announces_twice_a_second_apart() {
    let start = Instant::now();
    let mut r = Responder::new(setup(), start, 7);
    assert_eq!(r.next_due(), None, "no interface: nothing to do");
    r.set_interfaces(start, interfaces());
    let first = r.next_due().unwrap();
    assert!(first < start + Duration::from_millis(250));
    let sent = run_until(&mut r, start + Duration::from_secs(5));
    let probes: Vec<&(Instant, Outgoing)> = sent
        .iter()
        .filter(|(_, o)| !read(o).is_response())
        .collect();
    assert_eq!(probes.len(), 6, "three on each interface");
    for (i, (at, out)) in probes.iter().enumerate() {
        let probe = read(out);
        assert_eq!(*at, first + PROBE_WAIT * (i as u32 / 2));
        let questions: Vec<(&Name, u16, bool)> = probe
            .questions
            .iter()
            .map(|q| (&q.name, q.qtype, q.unicast_response()))
            .collect();
        let qu = i < 2;
        assert_eq!(
            questions,
            [
                (&instance("hearth"), wire::ANY, qu),
                (&host(), wire::ANY, qu)
            ]
        );
        assert_eq!(types(&probe.authority)[..2], [wire::SRV, wire::TXT]);
        let addresses = addresses_in(&probe);
        match out.to {
            To::Multicast(2) => assert_eq!(addresses, [LAN, LAN2]),
            To::Multicast(3) => assert_eq!(addresses, [OTHER]),
            other => panic!("{other:?}"),
        }
        assert!(probe.authority.iter().all(|r| r.rclass == wire::IN));
    }
    let announcements: Vec<&(Instant, Outgoing)> =
        sent.iter().filter(|(_, o)| read(o).is_response()).collect();
    assert_eq!(announcements.len(), 4, "two on each interface");
    let owned = first + PROBE_WAIT * 3;
    for (i, (at, out)) in announcements.iter().enumerate() {
        assert_eq!(*at, owned + ANNOUNCE_INTERVAL * (i as u32 / 2));
        let m = read(out);
        assert_eq!(m.id, 0);
        assert!(m.questions.is_empty());
        assert_eq!(types(&m.answers)[..3], [wire::PTR, wire::SRV, wire::TXT]);
        assert_eq!(types(&m.additional), [wire::NSEC, wire::NSEC]);
        // Unique records carry the cache-flush bit, the shared PTR not.
        for record in m.records() {
            assert_eq!(
                record.rclass & wire::TOP_BIT != 0,
                record.rtype != wire::PTR
            );
        }
    }
    assert!(r.announced());
    assert_eq!(r.next_due(), None, "then quiet");
}

#[test]
fn a_browse_is_answered_after_a_short_delay_with_what_a_resolver_needs() {
    let (mut r, now) = announced(Instant::now());
    let now = now + Duration::from_secs(5);
    let asked = query(&[(service(), wire::PTR, false)], vec![]);
    let phone = from(Ipv4Addr::new(10, 0, 0, 9), PORT);
    assert!(
        r.received(now, multicast(2, phone, &asked)).is_empty(),
        "delayed"
    );
    let due = r.next_due().unwrap();
    assert!(due >= now + Duration::from_millis(20) && due <= now + Duration::from_millis(120));
    let out = r.due(due);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].to, To::Multicast(2));
    let m = read(&out[0]);
    assert!(m.is_response() && m.flags & wire::AUTHORITATIVE != 0);
    assert_eq!(types(&m.answers), [wire::PTR]);
    assert_eq!(m.answers[0].data, instance("hearth").as_bytes());
    assert_eq!(
        types(&m.additional),
        [wire::SRV, wire::TXT, wire::A, wire::A, wire::NSEC]
    );
    assert_eq!(addresses_in(&m), [LAN, LAN2], "only this interface's");
    let srv = &m.additional[0];
    assert_eq!(&srv.data[4..6], &51826u16.to_be_bytes());
    assert_eq!(&srv.data[6..], host().as_bytes());
    assert_eq!(srv.ttl, TTL_HOST);
    assert_eq!(m.answers[0].ttl, TTL_OTHER);
    // The host says it has no AAAA.
    assert_eq!(
        m.additional[4].data,
        [host().as_bytes(), &[0, 1, 0x40]].concat()
    );

    // The same on the other interface: its own address.
    let asked = query(&[(host(), wire::A, false)], vec![]);
    let other = from(Ipv4Addr::new(192, 168, 5, 7), PORT);
    let out = r.received(due, multicast(3, other, &asked));
    assert_eq!(out.len(), 1, "a unique answer goes at once");
    assert_eq!(addresses_in(&read(&out[0])), [OTHER]);

    // And the service types.
    let types_asked = query(
        &[(
            name(&["_services", "_dns-sd", "_udp", "local"]),
            wire::PTR,
            false,
        )],
        vec![],
    );
    r.received(due, multicast(3, other, &types_asked));
    let out = r.due(r.next_due().unwrap());
    assert_eq!(read(&out[0]).answers[0].data, service().as_bytes());
}

#[test]
fn questions_hearth_has_no_records_for_get_a_negative_answer_or_none() {
    let (mut r, now) = announced(Instant::now());
    let now = now + Duration::from_secs(5);
    let phone = from(Ipv4Addr::new(10, 0, 0, 9), PORT);
    let asked = query(&[(host(), wire::AAAA, false)], vec![]);
    let out = r.received(now, multicast(2, phone, &asked));
    let m = read(&out[0]);
    assert_eq!(types(&m.answers), [wire::NSEC]);
    assert_eq!(types(&m.additional), [wire::A, wire::A]);
    let asked = query(&[(name(&["other", "local"]), wire::A, false)], vec![]);
    assert!(r.received(now, multicast(2, phone, &asked)).is_empty());
    // Another class.
    let mut chaos = Message::parse(&query(&[(host(), wire::A, false)], vec![])).unwrap();
    chaos.questions[0].qclass = 3;
    assert!(
        r.received(
            now + Duration::from_secs(2),
            multicast(2, phone, &chaos.encode())
        )
        .is_empty()
    );
}

#[test]
fn known_answers_are_not_sent_again() {
    let (mut r, now) = announced(Instant::now());
    let now = now + Duration::from_secs(5);
    let phone = from(Ipv4Addr::new(10, 0, 0, 9), PORT);
    let pointer = r.record(Key::Pointer, &interfaces()[0]);
    let asked = query(&[(service(), wire::PTR, false)], vec![pointer.clone()]);
    assert!(r.received(now, multicast(2, phone, &asked)).is_empty());
    assert_eq!(r.next_due(), None, "nothing to answer");
    // Known with less than half its TTL left: answered.
    let stale = Record {
        ttl: TTL_OTHER / 2 - 1,
        ..pointer
    };
    let asked = query(&[(service(), wire::PTR, false)], vec![stale]);
    r.received(now, multicast(2, phone, &asked));
    assert_eq!(r.due(r.next_due().unwrap()).len(), 1);
    // A known SRV (in another case) leaves it out of the additional records.
    let later = now + Duration::from_secs(2);
    let mut srv = r.record(Key::Service, &interfaces()[0]);
    srv.data = [
        &srv.data[..6],
        name(&["HEARTH-AABBCCDDEEFF", "local"]).as_bytes(),
    ]
    .concat();
    srv.rclass = wire::IN;
    let asked = query(&[(service(), wire::PTR, false)], vec![srv]);
    r.received(later, multicast(2, phone, &asked));
    let m = read(&r.due(r.next_due().unwrap())[0]);
    assert!(!types(&m.additional).contains(&wire::SRV));
}

/// A truncated query's answer waits 400-500 ms for the rest of its known answers.
#[test]
fn a_truncated_query_waits_for_its_other_known_answers() {
    let (mut r, now) = announced(Instant::now());
    let now = now + Duration::from_secs(5);
    let phone = from(Ipv4Addr::new(10, 0, 0, 9), PORT);
    let mut asked = Message::parse(&query(&[(service(), wire::PTR, false)], vec![])).unwrap();
    asked.flags |= wire::TRUNCATED;
    r.received(now, multicast(2, phone, &asked.encode()));
    let due = r.next_due().unwrap();
    assert!(due >= now + Duration::from_millis(400) && due <= now + Duration::from_millis(500));
    let rest = Message {
        answers: vec![r.record(Key::Pointer, &interfaces()[0])],
        ..Message::default()
    };
    r.received(now, multicast(2, phone, &rest.encode()));
    assert!(r.due(due).is_empty(), "it knew the answer");
}

#[test]
fn a_flood_of_queries_gets_one_answer_a_second_on_each_interface() {
    let (mut r, now) = announced(Instant::now());
    let start = now + Duration::from_secs(5);
    let asked = query(&[(instance("hearth"), wire::SRV, false)], vec![]);
    let browse = query(&[(service(), wire::PTR, false)], vec![]);
    let mut sent = 0;
    for i in 0..2000u32 {
        let now = start + Duration::from_millis(u64::from(i));
        let phone = from(Ipv4Addr::new(10, 0, 0, 100 + (i % 50) as u8), PORT);
        sent += r.received(now, multicast(2, phone, &asked)).len();
        sent += r.received(now, multicast(2, phone, &browse)).len();
        sent += r.due(now).len();
    }
    // Two seconds of queries: the SRV once a second, the PTR once a second.
    assert!(sent <= 4, "{sent} packets for 4,000 queries");
    assert!(sent >= 3, "{sent}");
}

#[test]
fn qu_questions_are_answered_by_unicast_when_the_record_was_multicast_lately() {
    let (mut r, now) = announced(Instant::now());
    let now = now + Duration::from_secs(5);
    let phone = from(Ipv4Addr::new(10, 0, 0, 9), PORT);
    let mut asked =
        Message::parse(&query(&[(instance("hearth"), wire::SRV, true)], vec![])).unwrap();
    asked.id = 0x1234;
    let out = r.received(now, multicast(2, phone, &asked.encode()));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].to, To::Unicast(phone));
    let m = read(&out[0]);
    assert_eq!(m.id, 0x1234);
    assert!(m.questions.is_empty());
    assert_eq!(types(&m.answers), [wire::SRV]);
    assert_eq!(m.answers[0].rclass, wire::IN | wire::TOP_BIT);

    // Not multicast for a quarter of its TTL: multicast, so every cache hears it.
    let later = now + Duration::from_secs(u64::from(TTL_HOST / 4) + 1);
    let out = r.received(later, multicast(2, phone, &asked.encode()));
    assert_eq!(out[0].to, To::Multicast(2));
}

#[test]
fn a_query_sent_to_hearths_address_is_answered_to_its_sender() {
    let (mut r, now) = announced(Instant::now());
    let now = now + Duration::from_secs(5);
    let phone = from(Ipv4Addr::new(10, 0, 0, 9), PORT);
    let asked = query(&[(service(), wire::PTR, false)], vec![]);
    let direct = Datagram {
        multicast: false,
        ..multicast(2, phone, &asked)
    };
    let out = r.received(now, direct);
    assert_eq!(out.len(), 1, "at once");
    assert_eq!(out[0].to, To::Unicast(phone));
    // From off the interface's network: ignored (RFC 6762 §11).
    let stranger = from(Ipv4Addr::new(172, 16, 0, 1), PORT);
    let direct = Datagram {
        multicast: false,
        ..multicast(2, stranger, &asked)
    };
    assert!(r.received(now, direct).is_empty());
    assert_eq!(r.next_due(), None);
}

#[test]
fn legacy_queries_get_their_id_their_question_and_short_ttls() {
    let (mut r, now) = announced(Instant::now());
    let now = now + Duration::from_secs(5);
    let resolver = from(Ipv4Addr::new(10, 0, 0, 9), 40000);
    let mut asked = Message::parse(&query(&[(host(), wire::A, false)], vec![])).unwrap();
    asked.id = 77;
    let out = r.received(now, multicast(2, resolver, &asked.encode()));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].to, To::Unicast(resolver));
    let m = read(&out[0]);
    assert_eq!(m.id, 77);
    assert_eq!(m.questions, asked.questions);
    assert_eq!(addresses_in(&m), [LAN, LAN2]);
    for record in m.records() {
        assert!(record.ttl <= 10, "{record:?}");
        assert_eq!(record.rclass, wire::IN, "no cache-flush bit");
    }
    // From off the network: not answered.
    let stranger = from(Ipv4Addr::new(172, 16, 0, 1), 40000);
    assert!(
        r.received(now, multicast(2, stranger, &asked.encode()))
            .is_empty()
    );
}

#[test]
fn unicast_answers_are_bounded_and_qu_falls_back_to_multicast() {
    let (mut r, now) = announced(Instant::now());
    let now = now + Duration::from_secs(5);
    let asked = query(&[(host(), wire::A, false)], vec![]);
    let legacy = |i: u16| from(Ipv4Addr::new(10, 0, 0, 9), 40000 + i);
    let answered = (0..200)
        .filter(|i| !r.received(now, multicast(2, legacy(*i), &asked)).is_empty())
        .count();
    assert_eq!(answered, UNICAST_BURST as usize);
    let second = now + Duration::from_secs(1);
    let answered = (0..200)
        .filter(|i| {
            !r.received(second, multicast(2, legacy(*i), &asked))
                .is_empty()
        })
        .count();
    assert_eq!(answered, UNICAST_PER_SECOND as usize);
    // A QU question now gets its answer by multicast.
    let qu = query(&[(host(), wire::A, true)], vec![]);
    let phone = from(Ipv4Addr::new(10, 0, 0, 9), PORT);
    let out = r.received(second, multicast(2, phone, &qu));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].to, To::Multicast(2));
}

#[test]
fn nothing_is_answered_while_probing_and_bad_packets_change_nothing() {
    let start = Instant::now();
    let mut r = Responder::new(setup(), start, 7);
    r.set_interfaces(start, interfaces());
    let phone = from(Ipv4Addr::new(10, 0, 0, 9), PORT);
    let asked = query(&[(service(), wire::PTR, false)], vec![]);
    assert!(r.received(start, multicast(2, phone, &asked)).is_empty());
    let (mut r, now) = announced(start);
    let due = r.next_due();
    for bad in [
        &b""[..],
        b"\x00\x00\x00\x00\x00\x01",
        &[0xFF; 40],
        &[0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 12, 0, 1, 0, 1],
    ] {
        assert!(r.received(now, multicast(2, phone, bad)).is_empty());
    }
    // A query on an interface hearth does not answer on; a response from another port.
    assert!(r.received(now, multicast(9, phone, &asked)).is_empty());
    let mut response =
        Message::parse(&query(&[], vec![r.record(Key::Service, &interfaces()[0])])).unwrap();
    response.flags = wire::RESPONSE;
    response.answers[0].data[5] ^= 1;
    let elsewhere = from(Ipv4Addr::new(10, 0, 0, 9), 40000);
    assert!(
        r.received(now, multicast(2, elsewhere, &response.encode()))
            .is_empty()
    );
    assert!(r.announced());
    assert_eq!(r.next_due(), due);
    assert_eq!(r.instance(), "hearth");
}

/// A second hearth with the same HOMEKIT_NAME: the one probing sees the other's answer and
/// takes "hearth 2" (and its host, were it the same, "-2").
#[test]
fn a_name_another_device_answers_for_is_renamed_while_probing() {
    let start = Instant::now();
    let mut r = Responder::new(setup(), start, 7);
    r.set_interfaces(start, interfaces());
    let first = r.next_due().unwrap();
    r.due(first);
    let other = from(Ipv4Addr::new(10, 0, 0, 50), PORT);
    let theirs = Message {
        flags: wire::RESPONSE | wire::AUTHORITATIVE,
        answers: vec![Record {
            name: instance("hearth"),
            rtype: wire::SRV,
            rclass: wire::IN | wire::TOP_BIT,
            ttl: 120,
            data: [
                &[0, 0, 0, 0, 0xCA, 0x12][..],
                name(&["hearth-0123", "local"]).as_bytes(),
            ]
            .concat(),
        }],
        ..Message::default()
    };
    r.received(first, multicast(2, other, &theirs.encode()));
    assert_eq!(r.instance(), "hearth 2");
    let sent = run_until(&mut r, first + Duration::from_secs(3));
    let probe = read(&sent[0].1);
    assert_eq!(probe.questions[0].name, instance("hearth 2"));
    assert!(r.announced());
    let m = read(&sent.last().unwrap().1);
    assert_eq!(m.answers[0].data, instance("hearth 2").as_bytes());

    // The host, too.
    let mut r = Responder::new(setup(), start, 7);
    r.set_interfaces(start, interfaces());
    let theirs = Message {
        flags: wire::RESPONSE,
        answers: vec![Record {
            name: host(),
            rtype: wire::A,
            rclass: wire::IN | wire::TOP_BIT,
            ttl: 120,
            data: vec![10, 0, 0, 50],
        }],
        ..Message::default()
    };
    r.received(start, multicast(2, other, &theirs.encode()));
    assert_eq!(r.host(), &name(&["hearth-aabbccddeeff-2", "local"]));
    assert_eq!(r.instance(), "hearth");
}

/// Every probe and announcement comes back (on the interface it went out of, and on another
/// on the same network): none is a conflict.
#[test]
fn hearths_own_packets_coming_back_are_no_conflict() {
    let start = Instant::now();
    let mut r = Responder::new(setup(), start, 7);
    r.set_interfaces(start, interfaces());
    let me = from(LAN, PORT);
    let mut last = None;
    while let Some(at) = r.next_due() {
        for out in r.due(at) {
            for interface in [2, 3] {
                assert!(
                    r.received(at, multicast(interface, me, &out.packet))
                        .is_empty()
                );
            }
            last = Some((at, out));
        }
    }
    assert!(r.announced());
    assert_eq!(r.instance(), "hearth");
    assert_eq!(r.next_due(), None);
    // A TXT record that just changed: the old one coming back late is still hearth's.
    let (at, old) = last.unwrap();
    let now = at + Duration::from_secs(1);
    r.set_txt(now, txt_data(&[("c#", "2".into())]));
    r.received(now, multicast(2, me, &old.packet));
    assert!(r.announced());
}

#[test]
fn a_conflict_after_announcing_probes_again_then_renames() {
    let (mut r, now) = announced(Instant::now());
    let now = now + Duration::from_secs(5);
    let other = from(Ipv4Addr::new(10, 0, 0, 50), PORT);
    let mut txt = r.record(Key::Text, &interfaces()[0]);
    txt.data = txt_data(&[("c#", "9".into())]);
    let theirs = Message {
        flags: wire::RESPONSE,
        answers: vec![txt],
        ..Message::default()
    };
    r.received(now, multicast(2, other, &theirs.encode()));
    assert!(!r.announced(), "probing again");
    assert_eq!(r.instance(), "hearth");
    // Its AAAA for hearth's host is no conflict once announced (another type)...
    // ...but while probing, anything for the name is.
    r.received(now, multicast(2, other, &theirs.encode()));
    assert_eq!(r.instance(), "hearth 2");
    // A goodbye (TTL 0) from another device is no conflict.
    let (mut r, now) = announced(now);
    let mut gone = theirs.clone();
    gone.answers[0].ttl = 0;
    r.received(now, multicast(2, other, &gone.encode()));
    assert!(r.announced());
}

#[test]
fn a_simultaneous_probe_is_a_tie_broken_by_the_records() {
    let start = Instant::now();
    let other = from(Ipv4Addr::new(10, 0, 0, 50), PORT);
    // The same TXT record as hearth's, and an SRV record with another port.
    let probe_with = |port: u16| {
        Message {
            questions: vec![Question {
                name: instance("hearth"),
                qtype: wire::ANY,
                qclass: wire::IN,
            }],
            authority: vec![
                Record {
                    name: instance("hearth"),
                    rtype: wire::SRV,
                    rclass: wire::IN,
                    ttl: 120,
                    data: [&[0, 0, 0, 0][..], &port.to_be_bytes(), host().as_bytes()].concat(),
                },
                Record {
                    name: instance("hearth"),
                    rtype: wire::TXT,
                    rclass: wire::IN,
                    ttl: 4500,
                    data: setup().txt,
                },
            ],
            ..Message::default()
        }
        .encode()
    };
    // Theirs is earlier (a lower port): hearth wins and goes on.
    let mut r = Responder::new(setup(), start, 7);
    r.set_interfaces(start, interfaces());
    let due = r.next_due().unwrap();
    r.received(start, multicast(2, other, &probe_with(1)));
    assert_eq!(r.next_due(), Some(due));
    // Later (a higher port): hearth loses and probes again a second later, the same name.
    r.received(start, multicast(2, other, &probe_with(60000)));
    assert_eq!(r.next_due(), Some(start + LOST_TIE_WAIT));
    assert_eq!(r.instance(), "hearth");
}

#[test]
fn many_conflicts_slow_probing_down() {
    let start = Instant::now();
    let mut r = Responder::new(setup(), start, 7);
    r.set_interfaces(start, interfaces());
    let other = from(Ipv4Addr::new(10, 0, 0, 50), PORT);
    let mut now = start;
    for _ in 0..CONFLICT_LIMIT {
        let theirs = Message {
            flags: wire::RESPONSE,
            answers: vec![Record {
                name: r.names.instance.clone(),
                rtype: wire::TXT,
                rclass: wire::IN,
                ttl: 120,
                data: b"\x03x=y".to_vec(),
            }],
            ..Message::default()
        };
        r.received(now, multicast(2, other, &theirs.encode()));
        now += Duration::from_millis(100);
    }
    assert_eq!(r.instance(), format!("hearth {}", CONFLICT_LIMIT + 1));
    assert_eq!(
        r.next_due(),
        Some(now - Duration::from_millis(100) + CONFLICT_WAIT)
    );
}

#[test]
fn a_changed_record_and_a_new_interface_are_announced() {
    let (mut r, now) = announced(Instant::now());
    let now = now + Duration::from_secs(5);
    r.set_txt(now, txt_data(&[("c#", "2".into()), ("sf", "0".into())]));
    let sent = run_until(&mut r, now + Duration::from_secs(5));
    assert_eq!(sent.len(), 4, "twice on each interface");
    let m = read(&sent[0].1);
    let txt = m.answers.iter().find(|r| r.rtype == wire::TXT).unwrap();
    assert_eq!(
        txt.data,
        txt_data(&[("c#", "2".into()), ("sf", "0".into())])
    );
    // The same record again: nothing.
    let later = now + Duration::from_secs(10);
    r.set_txt(later, txt_data(&[("c#", "2".into()), ("sf", "0".into())]));
    assert_eq!(r.next_due(), None);
    // A new address on interface 3 (DHCP): announced there only.
    let mut moved = interfaces();
    moved[1].addresses = vec![(Ipv4Addr::new(192, 168, 5, 99), 24)];
    r.set_interfaces(later, moved);
    let sent = run_until(&mut r, later + Duration::from_secs(5));
    assert_eq!(sent.len(), 2);
    for (_, out) in &sent {
        assert_eq!(out.to, To::Multicast(3));
        assert_eq!(addresses_in(&read(out)), [Ipv4Addr::new(192, 168, 5, 99)]);
    }
}

#[test]
fn the_goodbye_withdraws_every_record_with_ttl_zero() {
    let start = Instant::now();
    let mut r = Responder::new(setup(), start, 7);
    r.set_interfaces(start, interfaces());
    assert!(r.goodbye().is_empty(), "nothing announced yet");
    let (r, _) = announced(start);
    let goodbye = r.goodbye();
    assert_eq!(goodbye.len(), 2);
    for out in &goodbye {
        let m = read(out);
        assert_eq!(types(&m.answers)[..3], [wire::PTR, wire::SRV, wire::TXT]);
        assert!(m.records().all(|r| r.ttl == 0));
    }
}

#[test]
fn a_new_identity_withdraws_the_old_host_and_probes_the_new() {
    let (mut r, now) = announced(Instant::now());
    let goodbye = r.set_host(now, "hearth-001122334455");
    assert_eq!(goodbye.len(), 2);
    assert!(!r.announced());
    assert_eq!(r.host(), &name(&["hearth-001122334455", "local"]));
    assert!(r.set_host(now, "hearth-001122334455").is_empty());
}

#[test]
fn renamed_names_are_names_homekit_name_accepts() {
    assert_eq!(numbered("hearth", 2), "hearth 2");
    assert_eq!(numbered("Tom's Nest", 10), "Tom's Nest 10");
    let long = "x".repeat(63);
    assert_eq!(numbered(&long, 2), format!("{} 2", "x".repeat(61)));
    // Cut before a space or an apostrophe: what is left ends with a letter.
    let spaced = format!("{} y", "x".repeat(59));
    assert_eq!(numbered(&spaced, 12), format!("{} 12", "x".repeat(59)));
    let wide = "é".repeat(31);
    let renamed = numbered(&wide, 2);
    assert!(renamed.len() <= 63 && renamed.ends_with(" 2"), "{renamed}");
    for n in [2, 99, u32::MAX] {
        assert!(crate::config::parse_homekit_name(&numbered(&long, n)).is_ok());
    }
}

#[test]
fn interfaces_know_their_networks() {
    let i = Interface {
        index: 1,
        addresses: vec![
            (Ipv4Addr::new(10, 1, 2, 3), 16),
            (Ipv4Addr::new(1, 2, 3, 4), 32),
        ],
    };
    assert!(i.on_link(Ipv4Addr::new(10, 1, 200, 1)));
    assert!(!i.on_link(Ipv4Addr::new(10, 2, 0, 1)));
    assert!(i.on_link(Ipv4Addr::new(1, 2, 3, 4)));
    assert!(!i.on_link(Ipv4Addr::new(1, 2, 3, 5)));
    let everything = Interface {
        index: 1,
        addresses: vec![(Ipv4Addr::new(10, 1, 2, 3), 0)],
    };
    assert!(everything.on_link(Ipv4Addr::new(8, 8, 8, 8)));
}
