//! Users, device ownership and entry keys (the pairing codes a thermostat shows).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

/// The user every unclaimed thermostat belongs to in open mode; it always exists.
pub const DEFAULT_USER: &str = "owner";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Accounts {
    pub users: BTreeMap<String, User>,
    /// serial → owner.
    pub owners: HashMap<String, Owner>,
    /// code → key. At most one key per serial is kept (making a new one drops the old ones).
    pub entry_keys: HashMap<String, EntryKey>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct User {
    pub created_ms: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Owner {
    pub user: String,
    pub since_ms: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EntryKey {
    pub code: String,
    pub serial: String,
    pub created_ms: i64,
    pub expires_ms: i64,
    pub claimed_by: Option<String>,
    pub claimed_ms: Option<i64>,
}

impl EntryKey {
    /// Unclaimed and not expired: the device may show it and subscribe while it waits.
    pub fn is_active(&self, now_ms: i64) -> bool {
        self.claimed_by.is_none() && self.expires_ms > now_ms
    }
}

/// The structure an owner's thermostats belong to: the user id with one leading `user_`
/// removed (the Python server's rule, so migrated structures keep their keys).
pub fn structure_id(user: &str) -> &str {
    user.strip_prefix("user_").unwrap_or(user)
}

/// The structure bucket a thermostat's away state lives in: its owner's, or
/// `structure.default` for an unowned thermostat.
pub fn structure_key(owner: Option<&str>) -> String {
    format!("structure.{}", owner.map_or("default", structure_id))
}

impl Accounts {
    /// The newest entry key made for a serial, claimed or not.
    pub fn latest_entry_key(&self, serial: &str) -> Option<&EntryKey> {
        self.entry_keys
            .values()
            .filter(|k| k.serial == serial)
            .max_by_key(|k| k.created_ms)
    }

    pub fn active_entry_key(&self, serial: &str, now_ms: i64) -> Option<&EntryKey> {
        self.latest_entry_key(serial)
            .filter(|k| k.is_active(now_ms))
    }

    pub fn owner_of(&self, serial: &str) -> Option<&Owner> {
        self.owners.get(serial)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structure_ids() {
        assert_eq!(structure_id("user_abc123"), "abc123");
        assert_eq!(structure_id("my_user_id"), "my_user_id");
        assert_eq!(structure_id("user_"), "");
        assert_eq!(structure_key(None), "structure.default");
        assert_eq!(structure_key(Some("user_x")), "structure.x");
    }
}
