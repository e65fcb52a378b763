//! Each thermostat's accessory id, kept in `DATA_DIR/homekit/aids.json`. HomeKit keys a
//! person's rooms, scenes and automations by accessory id, so a thermostat keeps its id for
//! good: across restarts, and across being removed and added again (an id is never taken back
//! or given to another thermostat). Id 1 is the bridge itself.
//!
//! Only a thermostat the bridge shows gets one: one the visibility rule lists for HomeKit
//! (the bridge asks with the listed serials only), within HAP's limit of accessories. So the
//! file keeps the ids of thermostats a paired phone was shown, whose rooms it keeps, and of no
//! other: not of one nobody owns (pairing mode's unclaimed), not of one listed beyond the
//! limit while the bridge was full.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::util::durable;

const FILE: &str = "aids.json";
/// The bridge's own accessory id; thermostats count from the next.
pub const BRIDGE_AID: u64 = 1;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Stored {
    /// Serial → accessory id.
    aids: BTreeMap<String, u64>,
}

pub struct Aids {
    dir: PathBuf,
    stored: Mutex<Stored>,
}

impl Aids {
    /// Reads `dir/aids.json` (none yet: no thermostat has an id). A file that is there but
    /// unreadable stops the caller, named and untouched: guessing would move every automation.
    pub fn open(dir: &Path) -> io::Result<Aids> {
        let path = dir.join(FILE);
        let stored = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} is not a list of accessory ids: {e}", path.display()),
                )
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Stored::default(),
            Err(e) => return Err(e),
        };
        Ok(Aids {
            dir: dir.to_path_buf(),
            stored: Mutex::new(stored),
        })
    }

    /// The ids of `serials` (the thermostats the bridge lists), giving the next free id
    /// (durably, before it is returned) to those that have none, in their order, while fewer
    /// than `most` of `serials` have one; the others get none yet (a place frees when a
    /// thermostat leaves the list). If that write fails, those are left out (logged) and the
    /// rest returned.
    pub fn of(&self, serials: &[String], most: usize) -> BTreeMap<String, u64> {
        let mut stored = self.stored.lock();
        let with_id = serials
            .iter()
            .filter(|s| stored.aids.contains_key(*s))
            .count();
        let missing: Vec<&String> = serials
            .iter()
            .filter(|s| !stored.aids.contains_key(*s))
            .take(most.saturating_sub(with_id))
            .collect();
        if !missing.is_empty() {
            let mut next = stored.clone();
            let mut aid = next.aids.values().max().copied().unwrap_or(BRIDGE_AID);
            for serial in missing {
                aid += 1;
                next.aids.insert(serial.clone(), aid);
            }
            match save(&self.dir, &next) {
                Ok(()) => *stored = next,
                Err(e) => log::warn!(
                    "HomeKit: could not store accessory ids in {}: {e}; new thermostats are \
                     left out until it can",
                    self.dir.join(FILE).display()
                ),
            }
        }
        serials
            .iter()
            .filter_map(|s| stored.aids.get(s).map(|aid| (s.clone(), *aid)))
            .collect()
    }

    /// The thermostat an id was given to, if any.
    pub fn serial(&self, aid: u64) -> Option<String> {
        self.stored
            .lock()
            .aids
            .iter()
            .find(|(_, a)| **a == aid)
            .map(|(s, _)| s.clone())
    }
}

fn save(dir: &Path, stored: &Stored) -> io::Result<()> {
    let bytes = serde_json::to_vec_pretty(stored).map_err(io::Error::other)?;
    durable::replace(dir, FILE, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_given_once_and_kept() {
        let dir = std::env::temp_dir().join(format!("hearth-aids-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let aids = Aids::open(&dir).unwrap();
        let ab = aids.of(&["A".into(), "B".into()], 10);
        assert_eq!((ab["A"], ab["B"]), (2, 3));
        // B gone from the list and back: same id; a newcomer takes a fresh one.
        let c = aids.of(&["C".into()], 10);
        assert_eq!(c["C"], 4);
        let again = Aids::open(&dir).unwrap();
        assert_eq!(again.of(&["B".into()], 10)["B"], 3);
        assert_eq!(again.serial(4).as_deref(), Some("C"));
        // Room for three: D waits while A, B and C are listed, and E is never given one.
        let listed = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let full = again.of(&listed(&["A", "B", "C", "D", "E"]), 3);
        assert_eq!(full.keys().collect::<Vec<_>>(), ["A", "B", "C"]);
        // C leaves the list (removed): it keeps its id, and D takes the place, not E.
        let freed = again.of(&listed(&["A", "B", "D", "E"]), 3);
        assert_eq!((freed.get("D"), freed.get("E")), (Some(&5), None));
        let kept = Aids::open(&dir).unwrap();
        assert_eq!(kept.serial(4).as_deref(), Some("C"));
        assert_eq!(kept.serial(6), None);
        let file = std::fs::read_to_string(dir.join(FILE)).unwrap();
        assert!(!file.contains("\"E\""), "{file}");
        std::fs::write(dir.join(FILE), b"[").unwrap();
        let err = Aids::open(&dir).err().unwrap();
        assert!(err.to_string().contains("aids.json"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
