//! How controllers find hearth: the DNS-SD service `_hap._tcp` announced over multicast DNS,
//! with the TXT record HAP requires. The Home app lists an unpaired accessory by it (`sf=1`),
//! a paired controller finds the accessory's address and port by its `id` after the address
//! changes, and re-reads the attribute database when `c#` moves.
//!
//! The responder is `mdns-sd`'s daemon, on a thread of its own (no async runtime). One more
//! thread here re-announces the record when it changes: after a pairing is added or removed
//! (the identity's [`Identity::watch`]) and whenever the accessory side says something changed
//! (its configuration number may have moved). Stopping sends the goodbye (the record with TTL
//! 0), so controllers forget the address at once rather than after the record's TTL.

use std::io;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crossbeam_channel::{Receiver, select};
use mdns_sd::{ServiceDaemon, ServiceInfo};

use crate::hap::Identity;
use crate::hap::setup_uri::{CATEGORY_BRIDGE, setup_hash};
use crate::util::shutdown::Shutdown;

#[doc(hidden)]
pub mod responder;
#[doc(hidden)]
pub mod wire;

/// The service type of HAP over IP.
pub const SERVICE_TYPE: &str = "_hap._tcp.local.";
/// The multicast DNS port (RFC 6762).
pub const MDNS_PORT: u16 = 5353;
/// How long the stop waits for the daemon to send the goodbye and end: each is a few packets.
const STOP_WAIT: Duration = Duration::from_secs(2);

/// The TXT record's keys and values, in HAP's order.
pub type Txt = Vec<(&'static str, String)>;

/// The TXT record HAP requires of an IP accessory: the configuration number (`c#`), feature
/// flags (`ff`, 0: no Apple authentication chip), the device id (`id`), the model name (`md`),
/// the protocol version (`pv`), the state number (`s#`, always 1 over IP), whether it can be
/// paired (`sf`, 1 until the first controller pairs), the category (`ci`) and the setup hash
/// (`sh`) a controller that scanned the QR code matches.
pub fn txt(identity: &Identity, name: &str, config_number: u32) -> Txt {
    let device_id = identity.device_id();
    vec![
        ("c#", config_number.to_string()),
        ("ff", "0".into()),
        ("id", device_id.clone()),
        ("md", name.to_string()),
        ("pv", "1.1".into()),
        ("s#", "1".into()),
        ("sf", if identity.is_paired() { "0" } else { "1" }.into()),
        ("ci", CATEGORY_BRIDGE.to_string()),
        ("sh", setup_hash(&identity.setup_id(), &device_id)),
    ]
}

/// The advertisement's thread (the daemon's own thread ends with it).
pub struct Advertisement {
    thread: JoinHandle<()>,
}

impl Advertisement {
    /// Waits until the advertisement has said goodbye and its daemon has stopped (after the
    /// signal it was started with is triggered).
    pub fn join(self) {
        let _ = self.thread.join();
    }
}

/// Announces `name` (the instance name: `HOMEKIT_NAME`) as a HAP accessory on `port` (the bound
/// HomeKit port) on every interface, until `shutdown` is triggered. `config_number` is the
/// accessory side's current `c#`; it is asked again whenever `changed` (the accessory side's
/// [`crate::homekit::Attributes::watch`]) or the identity says something changed, and the
/// record is announced again only when it differs. It ends, with its goodbye, when `shutdown`
/// is triggered or `changed` disconnects.
pub fn advertise(
    identity: Arc<Identity>,
    name: &str,
    port: u16,
    config_number: impl Fn() -> u32 + Send + 'static,
    changed: Receiver<()>,
    shutdown: &Shutdown,
) -> io::Result<Advertisement> {
    advertise_on(
        MDNS_PORT,
        identity,
        name,
        port,
        config_number,
        changed,
        shutdown,
    )
}

/// [`advertise`] with the multicast DNS port given: tests use another one, so that they
/// neither announce to the network's real responders nor collide with a local one.
#[doc(hidden)]
pub fn advertise_on(
    mdns_port: u16,
    identity: Arc<Identity>,
    name: &str,
    port: u16,
    config_number: impl Fn() -> u32 + Send + 'static,
    changed: Receiver<()>,
    shutdown: &Shutdown,
) -> io::Result<Advertisement> {
    let daemon = ServiceDaemon::new_with_port(mdns_port)
        .map_err(|e| io::Error::other(format!("mDNS responder: {e}")))?;
    let name = name.to_string();
    let identity_changes = identity.watch();
    let stopped = shutdown.receiver();
    let thread = thread::Builder::new()
        .name("homekit-mdns".into())
        .stack_size(256 * 1024)
        .spawn(move || {
            let mut announced: Option<Txt> = None;
            loop {
                let record = txt(&identity, &name, config_number());
                if announced.as_ref() != Some(&record) {
                    match service(&identity, &name, port, &record)
                        .and_then(|info| daemon.register(info))
                    {
                        Ok(()) => announced = Some(record),
                        Err(e) => log::error!("HomeKit: could not announce {name:?}: {e}"),
                    }
                }
                select! {
                    recv(stopped) -> _ => break,
                    recv(identity_changes) -> _ => {}
                    recv(changed) -> event => if event.is_err() { break },
                }
                // A burst of changes (every thermostat's reading) makes one look.
                while changed.try_recv().is_ok() || identity_changes.try_recv().is_ok() {}
            }
            say_goodbye(&daemon, &name);
        })?;
    Ok(Advertisement { thread })
}

/// The service as `mdns-sd` announces it: our own host name (from the device id, so it clashes
/// with no machine's), this machine's addresses, kept up to date by the daemon.
fn service(
    identity: &Identity,
    name: &str,
    port: u16,
    record: &Txt,
) -> Result<ServiceInfo, mdns_sd::Error> {
    let host = format!(
        "hearth-{}.local.",
        identity.device_id().replace(':', "").to_ascii_lowercase()
    );
    let properties: Vec<(&str, &str)> = record.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Ok(ServiceInfo::new(SERVICE_TYPE, name, &host, "", port, &properties[..])?.enable_addr_auto())
}

/// Withdraws the record (controllers forget it at once) and stops the daemon, each bounded.
fn say_goodbye(daemon: &ServiceDaemon, name: &str) {
    let fullname = format!("{name}.{SERVICE_TYPE}");
    if let Ok(done) = daemon.unregister(&fullname) {
        let _ = done.recv_timeout(STOP_WAIT);
    }
    if let Ok(done) = daemon.shutdown() {
        let _ = done.recv_timeout(STOP_WAIT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_follows_the_pairing_state() {
        let dir = std::env::temp_dir().join(format!("hearth-mdns-txt-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let identity = Identity::open(&dir).unwrap();
        let record = txt(&identity, "hearth", 3);
        let keys: Vec<&str> = record.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            keys,
            ["c#", "ff", "id", "md", "pv", "s#", "sf", "ci", "sh"],
            "every key HAP requires"
        );
        let get = |record: &Txt, key: &str| {
            record
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(get(&record, "c#"), "3");
        assert_eq!(get(&record, "sf"), "1");
        assert_eq!(get(&record, "ci"), "2");
        assert_eq!(get(&record, "id"), identity.device_id());
        assert_eq!(
            get(&record, "sh"),
            setup_hash(&identity.setup_id(), &identity.device_id())
        );
        identity
            .add_pairing(crate::hap::Pairing {
                id: "phone".into(),
                public_key: [1; 32],
                admin: true,
            })
            .unwrap();
        assert_eq!(get(&txt(&identity, "hearth", 3), "sf"), "0");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
