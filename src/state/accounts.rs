//! Users, device ownership, shares, API keys and entry keys (the pairing codes a thermostat
//! shows). The rules that use them (who may do what, how keys are made and checked) are in
//! [`crate::accounts`].

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use super::people::{Home, Person};

/// The user every unclaimed thermostat belongs to in open mode; it always exists.
pub const DEFAULT_USER: &str = "owner";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Accounts {
    pub users: BTreeMap<String, User>,
    /// serial → owner.
    pub owners: HashMap<String, Owner>,
    /// code → key. At most one key per serial and password is kept (making a new one drops the
    /// old one), and a claim drops the serial's other unclaimed keys.
    pub entry_keys: HashMap<String, EntryKey>,
    /// serial → (user → share): thermostats their owners have shared with other users.
    #[serde(default)]
    pub shares: BTreeMap<String, BTreeMap<String, Share>>,
    /// key id → API key (its hash; the key itself is never stored).
    #[serde(default)]
    pub api_keys: BTreeMap<String, ApiKey>,
    /// Thermostats their owner let go of in open mode: nobody's until claimed or adopted
    /// again (the rule is [`mod@crate::accounts::release`]'s).
    #[serde(default)]
    pub released: BTreeSet<String>,
    /// Person name → person: whose presence moves their home (names are unique on the server:
    /// the presence URL and MQTT topic carry no user).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub people: BTreeMap<String, Person>,
    /// User → their home's vacation and the presence rule's last decision.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub homes: BTreeMap<String, Home>,
}

/// What a user a thermostat is shared with may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum ShareAccess {
    /// See it (status, schedule).
    Read,
    /// See it and change its settings (not unlink it: that is the owner's).
    Control,
}

impl ShareAccess {
    pub fn parse(raw: &str) -> Option<ShareAccess> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "read" | "view" => Some(ShareAccess::Read),
            "control" | "write" => Some(ShareAccess::Control),
            _ => None,
        }
    }
}

crate::util::wire_words!(ShareAccess {
    Read => "read",
    Control => "control",
});

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Share {
    pub access: ShareAccess,
    pub since_ms: i64,
}

/// An API key's scope: `read` for GET endpoints, `write` for the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum Scope {
    Read,
    Write,
}

crate::util::wire_words!(Scope {
    Read => "read",
    Write => "write",
});

/// A stored API key. Only the SHA-256 of the whole key (prefix included) is kept, as lowercase
/// hex; the key is shown once, when it is made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApiKey {
    pub id: String,
    pub hash: String,
    /// The first and last characters, e.g. `nle_1a2b…9f0e`, so a user can tell keys apart.
    pub preview: String,
    pub user: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    /// Serials the key is limited to; empty means every thermostat its user may see.
    #[serde(default)]
    pub serials: Vec<String>,
    pub created_ms: i64,
    #[serde(default)]
    pub expires_ms: Option<i64>,
    #[serde(default)]
    pub last_used_ms: Option<i64>,
}

impl ApiKey {
    pub fn has_scope(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }

    pub fn is_expired(&self, now_ms: i64) -> bool {
        self.expires_ms.is_some_and(|e| e <= now_ms)
    }

    /// Whether the key's serial list (if any) includes `serial`.
    pub fn covers(&self, serial: &str) -> bool {
        self.serials.is_empty() || self.serials.iter().any(|s| s == serial)
    }
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
    /// The Basic-auth password of the request that asked for this key: a claim of this key
    /// pins it as the thermostat's password (see [`crate::accounts::pin`]). Keys stored before
    /// pins existed have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
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

/// The user bucket of a thermostat's owner, as the device protocol names it (`user.<name>`);
/// an unowned thermostat's is the default user's, whose it is in open mode.
pub fn user_key(owner: Option<&str>) -> String {
    format!("user.{}", owner.unwrap_or(DEFAULT_USER))
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

    /// The newest entry key made for a serial by a request with this password.
    pub fn latest_entry_key_for(&self, serial: &str, password: Option<&str>) -> Option<&EntryKey> {
        self.entry_keys
            .values()
            .filter(|k| k.serial == serial && k.password.as_deref() == password)
            .max_by_key(|k| k.created_ms)
    }

    /// The password the thermostat's current owner claimed it with: the newest key of the
    /// serial claimed by that owner since it became the owner. `None` when nobody owns it, or
    /// the claim carried no password.
    pub fn claimed_password(&self, serial: &str) -> Option<&str> {
        let owner = self.owner_of(serial)?;
        self.entry_keys
            .values()
            .filter(|k| {
                k.serial == serial
                    && k.claimed_by.as_deref() == Some(owner.user.as_str())
                    && k.claimed_ms.is_some_and(|at| at >= owner.since_ms)
            })
            .max_by_key(|k| k.claimed_ms)
            .and_then(|k| k.password.as_deref())
    }

    pub fn owner_of(&self, serial: &str) -> Option<&Owner> {
        self.owners.get(serial)
    }

    pub fn is_released(&self, serial: &str) -> bool {
        self.released.contains(serial)
    }

    /// The users a thermostat is shared with.
    pub fn shares_of(&self, serial: &str) -> Option<&BTreeMap<String, Share>> {
        self.shares.get(serial).filter(|m| !m.is_empty())
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
        assert_eq!(user_key(None), "user.owner");
        assert_eq!(user_key(Some("user_x")), "user.user_x");
    }
}
