//! Journal operations: every accepted change is one or more of these. The same `apply` functions
//! install a change in memory after it is durable and replay the journal at startup, so the two
//! can never disagree.

use serde::{Deserialize, Serialize};

use super::accounts::{Accounts, ApiKey, EntryKey, Owner, Share, User};
use super::bucket::Bucket;
use super::compact::Compact;
use super::device::{ChangeKind, DeviceData, DeviceMeta, LastChange};
use super::people::{Home, Person, Seen};
use crate::util::JsonMap;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Set these fields of a bucket (creating it if missing) and stamp it.
    Merge {
        serial: String,
        key: String,
        rev: i64,
        ts: i64,
        updated: i64,
        set: JsonMap,
    },
    /// Replace a bucket's whole value (a schedule, a dismissed dialog) and stamp it.
    Replace {
        serial: String,
        key: String,
        rev: i64,
        ts: i64,
        updated: i64,
        value: JsonMap,
    },
    DeviceMeta {
        serial: String,
        meta: DeviceMeta,
    },
    /// The latest change a person made to a thermostat, or its state now (taken).
    LastChange {
        serial: String,
        change: LastChange,
    },
    /// Forget a thermostat's buckets and metadata (its owner and entry keys are accounts).
    /// Nothing writes it any more: removing a thermostat releases it and keeps what it has
    /// (see `crate::accounts::release`). It is kept so journals written by an older hearth,
    /// which deleted thermostats, still replay.
    DeleteDevice {
        serial: String,
    },
    AddUser {
        name: String,
        created_ms: i64,
    },
    /// Removes a user, with its API keys and the shares made to it (a user who owns a
    /// thermostat is never removed: see `crate::accounts::users`).
    RemoveUser {
        name: String,
    },
    /// Marks an entry key as used by `user` and drops the serial's other unclaimed keys.
    ClaimEntryKey {
        code: String,
        user: String,
        at_ms: i64,
    },
    SetOwner {
        serial: String,
        owner: Option<Owner>,
    },
    /// Stores an entry key and drops the other key of the same serial and password.
    PutEntryKey {
        key: EntryKey,
    },
    /// Drops entry keys (expired ones, pruned to make room).
    DropEntryKeys {
        codes: Vec<String>,
    },
    /// Shares a thermostat with a user (`None`: stops sharing it).
    SetShare {
        serial: String,
        user: String,
        share: Option<Share>,
    },
    /// Stores a new API key.
    PutApiKey {
        key: ApiKey,
    },
    /// Deletes an API key: it stops working at once.
    RevokeApiKey {
        id: String,
    },
    /// Records when an API key was last used.
    ApiKeyUsed {
        id: String,
        at_ms: i64,
    },
    /// Marks a thermostat as let go of by its owner in open mode (`false`: claimed or adopted
    /// again).
    SetReleased {
        serial: String,
        released: bool,
    },
    /// Adds a person or replaces one (a new token, a revoked one, a new region).
    PutPerson {
        name: String,
        person: Person,
    },
    RemovePerson {
        name: String,
    },
    /// A person's presence changed (only changes are journaled).
    PersonSeen {
        name: String,
        seen: Seen,
    },
    /// A home's vacation and the presence rule's decision, as a whole.
    PutHome {
        user: String,
        home: Home,
    },
}

impl Op {
    /// The serial a device operation belongs to; `None` for account operations.
    pub fn device_serial(&self) -> Option<&str> {
        match self {
            Op::Merge { serial, .. }
            | Op::Replace { serial, .. }
            | Op::DeviceMeta { serial, .. }
            | Op::LastChange { serial, .. }
            | Op::DeleteDevice { serial } => Some(serial),
            Op::AddUser { .. }
            | Op::RemoveUser { .. }
            | Op::ClaimEntryKey { .. }
            | Op::SetOwner { .. }
            | Op::PutEntryKey { .. }
            | Op::DropEntryKeys { .. }
            | Op::SetShare { .. }
            | Op::PutApiKey { .. }
            | Op::RevokeApiKey { .. }
            | Op::ApiKeyUsed { .. }
            | Op::SetReleased { .. }
            | Op::PutPerson { .. }
            | Op::RemovePerson { .. }
            | Op::PersonSeen { .. }
            | Op::PutHome { .. } => None,
        }
    }
}

/// A bucket after a merge or replace operation; `None` for other operations.
pub fn apply_to_bucket(previous: Option<&Bucket>, op: &Op) -> Option<Bucket> {
    let (rev, ts, updated, value) = match op {
        Op::Merge {
            rev,
            ts,
            updated,
            set,
            ..
        } => {
            let value = match previous {
                Some(b) => b.value.merged(set),
                None => Compact::from_map(set),
            };
            (rev, ts, updated, value)
        }
        Op::Replace {
            rev,
            ts,
            updated,
            value,
            ..
        } => (rev, ts, updated, Compact::from_map(value)),
        _ => return None,
    };
    Some(Bucket {
        revision: *rev,
        timestamp: *ts,
        updated_at: *updated,
        value,
    })
}

impl DeviceData {
    /// Applies a device operation (account operations are ignored here).
    pub fn apply(&mut self, op: &Op) {
        match op {
            Op::Merge { key, .. } | Op::Replace { key, .. } => {
                if let Some(b) = apply_to_bucket(self.buckets.get(key), op) {
                    self.buckets.insert(key.clone(), b);
                }
            }
            Op::DeviceMeta { meta, .. } => self.meta = Some(meta.clone()),
            Op::LastChange { change, .. } => {
                if change.kind == ChangeKind::Away {
                    self.last_away = Some(change.clone());
                }
                self.last_change = Some(change.clone());
            }
            Op::DeleteDevice { .. } => *self = DeviceData::default(),
            Op::AddUser { .. }
            | Op::RemoveUser { .. }
            | Op::ClaimEntryKey { .. }
            | Op::SetOwner { .. }
            | Op::PutEntryKey { .. }
            | Op::DropEntryKeys { .. }
            | Op::SetShare { .. }
            | Op::PutApiKey { .. }
            | Op::RevokeApiKey { .. }
            | Op::ApiKeyUsed { .. }
            | Op::SetReleased { .. }
            | Op::PutPerson { .. }
            | Op::RemovePerson { .. }
            | Op::PersonSeen { .. }
            | Op::PutHome { .. } => {}
        }
    }
}

impl Accounts {
    /// Applies an account operation (device operations are ignored here).
    pub fn apply(&mut self, op: &Op) {
        match op {
            Op::SetOwner { serial, owner } => match owner {
                Some(o) => {
                    self.owners.insert(serial.clone(), o.clone());
                }
                None => {
                    self.owners.remove(serial);
                }
            },
            Op::PutEntryKey { key } => {
                self.entry_keys
                    .retain(|_, k| k.serial != key.serial || k.password != key.password);
                self.entry_keys.insert(key.code.clone(), key.clone());
            }
            Op::DropEntryKeys { codes } => {
                for code in codes {
                    self.entry_keys.remove(code);
                }
            }
            Op::AddUser { name, created_ms } => {
                self.users.entry(name.clone()).or_insert(User {
                    created_ms: *created_ms,
                });
            }
            Op::RemoveUser { name } => {
                self.users.remove(name);
                self.people.retain(|_, p| &p.user != name);
                self.homes.remove(name);
                self.api_keys.retain(|_, k| &k.user != name);
                for shares in self.shares.values_mut() {
                    shares.remove(name);
                }
                self.shares.retain(|_, m| !m.is_empty());
            }
            Op::ClaimEntryKey { code, user, at_ms } => {
                if let Some(k) = self.entry_keys.get_mut(code) {
                    k.claimed_by = Some(user.clone());
                    k.claimed_ms = Some(*at_ms);
                    let serial = k.serial.clone();
                    // Keys other requests asked for with other passwords can no longer be
                    // claimed: the thermostat has its owner and its pinned password.
                    self.entry_keys
                        .retain(|c, k| c == code || k.serial != serial || k.claimed_by.is_some());
                }
            }
            Op::SetShare {
                serial,
                user,
                share,
            } => {
                let shares = self.shares.entry(serial.clone()).or_default();
                match share {
                    Some(s) => {
                        shares.insert(user.clone(), s.clone());
                    }
                    None => {
                        shares.remove(user);
                    }
                }
                if shares.is_empty() {
                    self.shares.remove(serial);
                }
            }
            Op::PutApiKey { key } => {
                self.api_keys.insert(key.id.clone(), key.clone());
            }
            Op::RevokeApiKey { id } => {
                self.api_keys.remove(id);
            }
            Op::ApiKeyUsed { id, at_ms } => {
                if let Some(k) = self.api_keys.get_mut(id) {
                    k.last_used_ms = Some(k.last_used_ms.map_or(*at_ms, |t| t.max(*at_ms)));
                }
            }
            Op::SetReleased { serial, released } => {
                if *released {
                    self.released.insert(serial.clone());
                } else {
                    self.released.remove(serial);
                }
            }
            Op::PutPerson { name, person } => {
                self.people.insert(name.clone(), person.clone());
            }
            Op::RemovePerson { name } => {
                self.people.remove(name);
            }
            Op::PersonSeen { name, seen } => {
                if let Some(p) = self.people.get_mut(name) {
                    p.seen = Some(*seen);
                }
            }
            Op::PutHome { user, home } => {
                if *home == Home::default() {
                    self.homes.remove(user);
                } else {
                    self.homes.insert(user.clone(), home.clone());
                }
            }
            Op::Merge { .. }
            | Op::Replace { .. }
            | Op::DeviceMeta { .. }
            | Op::LastChange { .. }
            | Op::DeleteDevice { .. } => {}
        }
    }
}
