//! The attribute database: the bridge (aid 1) and one accessory per thermostat the page lists
//! ([`super::thermostat`]), each characteristic at a fixed instance id (controllers key what
//! they cache by it), and the fingerprint of its shape the configuration number follows.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::Context;
use super::characteristics::{Characteristic, Kind};
use crate::accounts::Viewer;

/// HAP's version this bridge speaks (HAP Protocol Information).
pub const PROTOCOL_VERSION: &str = "1.1.0";
/// Most accessories HAP lets a bridge hold, itself included.
pub const MAX_ACCESSORIES: usize = 150;

/// Instance ids. Accessory Information is service 1 on every accessory.
const INFO: u64 = 1;
const IDENTIFY: u64 = 2;
const MANUFACTURER: u64 = 3;
const MODEL: u64 = 4;
pub(super) const NAME: u64 = 5;
const SERIAL: u64 = 6;
pub(super) const FIRMWARE: u64 = 7;
/// The bridge's HAP Protocol Information service and its version.
const PROTOCOL: u64 = 8;
const PROTOCOL_VERSION_IID: u64 = 9;

pub struct Service {
    pub iid: u64,
    pub hap_type: &'static str,
    pub primary: bool,
    pub characteristics: Vec<Characteristic>,
}

pub struct Accessory {
    pub aid: u64,
    pub services: Vec<Service>,
}

impl Accessory {
    pub fn characteristic(&self, iid: u64) -> Option<&Characteristic> {
        self.services
            .iter()
            .flat_map(|s| &s.characteristics)
            .find(|c| c.iid == iid)
    }

    pub fn characteristics(&self) -> impl Iterator<Item = &Characteristic> {
        self.services.iter().flat_map(|s| &s.characteristics)
    }

    pub fn to_json(&self) -> Value {
        let services: Vec<Value> = self
            .services
            .iter()
            .map(|s| {
                let mut service = json!({
                    "iid": s.iid,
                    "type": s.hap_type,
                    "characteristics": s.characteristics.iter().map(Characteristic::to_json).collect::<Vec<_>>(),
                });
                if s.primary {
                    service["primary"] = json!(true);
                }
                service
            })
            .collect();
        json!({"aid": self.aid, "services": services})
    }
}

/// Longest string HAP lets a characteristic hold unless it says otherwise (`maxLen`).
pub(super) const MAX_LEN: usize = 64;

/// `text` as a string characteristic: at most [`MAX_LEN`] characters (a name a thermostat
/// reported itself is not bound by hearth's own limit on names).
pub(super) fn text(iid: u64, kind: Kind, text: &str) -> Characteristic {
    Characteristic::new(
        iid,
        kind,
        json!(text.chars().take(MAX_LEN).collect::<String>()),
    )
}

pub(super) fn info(
    name: &str,
    manufacturer: &str,
    model: &str,
    serial: &str,
    firmware: &str,
) -> Service {
    Service {
        iid: INFO,
        hap_type: "3E",
        primary: false,
        characteristics: vec![
            Characteristic::new(IDENTIFY, Kind::Identify, Value::Null),
            text(MANUFACTURER, Kind::Manufacturer, manufacturer),
            text(MODEL, Kind::Model, model),
            text(NAME, Kind::Name, name),
            text(SERIAL, Kind::SerialNumber, serial),
            text(FIRMWARE, Kind::FirmwareRevision, firmware),
        ],
    }
}

/// The bridge itself: `name` (`HOMEKIT_NAME`), its device id as serial number.
pub fn bridge(name: &str, device_id: &str) -> Accessory {
    Accessory {
        aid: super::aids::BRIDGE_AID,
        services: vec![
            info(
                name,
                "hearth",
                "hearth",
                device_id,
                env!("CARGO_PKG_VERSION"),
            ),
            Service {
                iid: PROTOCOL,
                hap_type: "A2",
                primary: false,
                characteristics: vec![Characteristic::new(
                    PROTOCOL_VERSION_IID,
                    Kind::ProtocolVersion,
                    json!(PROTOCOL_VERSION),
                )],
            },
        ],
    }
}

/// The serials of the thermostats HomeKit lists ([`crate::accounts::visibility`]: those the page
/// lists; not unclaimed ones with pairing required, nor removed ones, which nobody may see or
/// control).
pub fn listed(app: &dyn Context) -> Vec<String> {
    app.visibility()
        .listed(app.state(), app.state().serials(), Viewer::HomeKit)
}

/// What a controller caches of the database, hashed: accessories, services, characteristics
/// with their metadata, and names. Values that change by themselves (temperatures, states)
/// are not in it, so they never move the configuration number. SHA-256, so the number stays
/// put across hearth versions as long as the shape does.
pub fn fingerprint(accessories: &[Accessory]) -> u64 {
    let mut hash = Sha256::new();
    for a in accessories {
        hash.update(format!("a{}", a.aid));
        for s in &a.services {
            hash.update(format!("s{}:{}:{}", s.iid, s.hap_type, s.primary));
            for c in &s.characteristics {
                let mut meta = serde_json::Map::new();
                c.meta_into(&mut meta);
                hash.update(format!(
                    "c{}:{}:{:?}:{}",
                    c.iid,
                    c.kind.hap_type(),
                    c.kind.perms(),
                    Value::Object(meta)
                ));
                if c.kind == Kind::Name {
                    hash.update(c.value.to_string());
                }
            }
        }
    }
    let digest = hash.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::homekit::thermostat::thermostat;
    use crate::thermostat::reading::tests::reading;

    #[test]
    fn readings_do_not_move_the_fingerprint() {
        let at = |t: f64| thermostat(2, &reading(json!({"current_temperature": t}), json!({})));
        assert_eq!(fingerprint(&[at(19.0)]), fingerprint(&[at(23.0)]));
        let dry = thermostat(2, &reading(json!({}), json!({})));
        let damp = thermostat(2, &reading(json!({}), json!({"current_humidity": 40})));
        assert_ne!(
            fingerprint(&[dry]),
            fingerprint(&[damp]),
            "a new characteristic"
        );
    }
}
