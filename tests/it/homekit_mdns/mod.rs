//! The `_hap._tcp` advertisement as a controller on the network sees it.
//!
//! Here, with `mdns-sd` as the browser (an implementation independent of hearth's responder):
//! found with the TXT record HAP requires, announced again when the pairing state or the
//! configuration number changes, withdrawn when the server stops. It needs multicast to loop
//! back to this machine over an interface with multicast (mDNS responders skip the loopback
//! interface). Where a multicast datagram sent here does not come back, the test says so and
//! skips, unless `HEARTH_REQUIRE_MDNS=1` (then it fails). It uses a port other than 5353, so it
//! neither announces to the network's responders nor collides with one running here.
//!
//! In [`netns`], on port 5353 in network namespaces of the tests' own ([`lan`]): the
//! addresses each link is told, legacy queries, an address that changes and an interface that
//! appears, the goodbye, a second bridge of the same name, and aiohomekit with python-zeroconf.

mod lan;
mod netns;

use crate::common;

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use common::*;
use crossbeam_channel::unbounded;
use hearth::hap::{Identity, Pairing};
use hearth::homekit::mdns::{SERVICE_TYPE, advertise_on};
use hearth::util::shutdown::Shutdown;
use mdns_sd::{ResolvedService, ServiceDaemon, ServiceEvent};

const GROUP: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 251);

/// A free UDP port for this test's multicast DNS.
fn free_udp_port() -> u16 {
    UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .unwrap()
}

/// Whether a datagram sent to the mDNS group on `port` comes back to a socket here that
/// joined it: what both the responder and the browser below rely on.
fn multicast_loops_back(port: u16) -> Result<(), String> {
    let receiver = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port))
        .map_err(|e| format!("bind: {e}"))?;
    receiver
        .join_multicast_v4(&GROUP, &Ipv4Addr::UNSPECIFIED)
        .map_err(|e| format!("joining {GROUP}: {e}"))?;
    receiver
        .set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| e.to_string())?;
    let sender = UdpSocket::bind("0.0.0.0:0").map_err(|e| e.to_string())?;
    sender
        .set_multicast_loop_v4(true)
        .map_err(|e| e.to_string())?;
    sender
        .send_to(b"hearth", SocketAddrV4::new(GROUP, port))
        .map_err(|e| format!("sending to {GROUP}: {e}"))?;
    let mut buf = [0u8; 16];
    match receiver.recv_from(&mut buf) {
        Ok((6, _)) if &buf[..6] == b"hearth" => Ok(()),
        Ok(_) => Err("something else came back".into()),
        Err(e) => Err(format!("nothing came back within 2 s ({e})")),
    }
}

/// Waits for the browser to resolve `fullname` with a TXT record that `want` accepts.
fn resolved(
    events: &mdns_sd::Receiver<ServiceEvent>,
    fullname: &str,
    what: &str,
    want: impl Fn(&ResolvedService) -> bool,
) -> ResolvedService {
    loop {
        match events.recv_timeout(TIMEOUT) {
            Ok(ServiceEvent::ServiceResolved(s)) if s.fullname == fullname && want(&s) => {
                return *s;
            }
            Ok(_) => {}
            Err(e) => panic!("{what}: not seen within {TIMEOUT:?} ({e})"),
        }
    }
}

fn txt<'a>(s: &'a ResolvedService, key: &str) -> &'a str {
    s.get_property_val_str(key).unwrap_or("(missing)")
}

#[test]
fn controllers_find_the_bridge_and_see_its_changes() {
    let port = free_udp_port();
    if let Err(why) = multicast_loops_back(port) {
        let message = format!("multicast does not loop back here: {why}");
        assert!(
            std::env::var("HEARTH_REQUIRE_MDNS").as_deref() != Ok("1"),
            "{message} (HEARTH_REQUIRE_MDNS=1)"
        );
        eprintln!("skipping the mDNS test: {message}");
        return;
    }
    let dir = TempDir::new("homekit-mdns");
    let identity = Arc::new(Identity::open(&dir.path().join("homekit")).unwrap());
    let name = format!("hearth test {}", std::process::id());
    let fullname = format!("{name}.{SERVICE_TYPE}");
    let number = Arc::new(AtomicU32::new(1));
    let (changed_tx, changed) = unbounded();
    let shutdown = Shutdown::new();
    let advertisement = advertise_on(
        port,
        Arc::clone(&identity),
        &name,
        51826,
        {
            let number = Arc::clone(&number);
            move || number.load(Ordering::SeqCst)
        },
        changed,
        &shutdown,
    )
    .unwrap();

    let browser = mdns_sd::ServiceDaemon::new_with_port(port).unwrap();
    let events = browser.browse(SERVICE_TYPE).unwrap();
    let first = resolved(&events, &fullname, "the bridge, unpaired", |s| {
        txt(s, "sf") == "1"
    });
    assert_eq!(first.port, 51826);
    assert!(!first.addresses.is_empty());
    for (key, value) in [
        ("c#", "1".to_string()),
        ("ff", "0".into()),
        ("id", identity.device_id()),
        ("md", name.clone()),
        ("pv", "1.1".into()),
        ("s#", "1".into()),
        ("ci", "2".into()),
        (
            "sh",
            hearth::hap::setup_uri::setup_hash(&identity.setup_id(), &identity.device_id()),
        ),
    ] {
        assert_eq!(txt(&first, key), value, "{key}");
    }

    // Paired: no longer offered for pairing.
    identity
        .add_pairing(Pairing {
            id: "phone".into(),
            public_key: [3; 32],
            admin: true,
        })
        .unwrap();
    resolved(&events, &fullname, "sf=0 once paired", |s| {
        txt(s, "sf") == "0"
    });

    // A thermostat added: the accessory side's number moves and it says something changed.
    number.store(2, Ordering::SeqCst);
    changed_tx.send(()).unwrap();
    resolved(&events, &fullname, "c#=2", |s| txt(s, "c#") == "2");

    // Stopped: withdrawn.
    shutdown.trigger();
    advertisement.join();
    loop {
        match events.recv_timeout(TIMEOUT) {
            Ok(ServiceEvent::ServiceRemoved(_, gone)) if gone == fullname => break,
            Ok(_) => {}
            Err(e) => panic!("no goodbye within {TIMEOUT:?} ({e})"),
        }
    }
    stop(&browser);
}

fn stop(browser: &ServiceDaemon) {
    if let Ok(done) = browser.shutdown() {
        let _ = done.recv_timeout(Duration::from_secs(2));
    }
}
