//! Linking thermostats to users: claiming with an entry key, unlinking, sharing.
//!
//! A claim makes the user the thermostat's owner and pushes `user.<id>` (whose `name` takes the
//! thermostat off its pairing screen) and `structure.<id>` to it in one chunk. A claim may move
//! a thermostat away from the default user of open mode (`owner`), never away from another
//! user: that user must unlink it first. When the owner changes, the old owner's shares end.
//! A claim also takes a thermostat back from release; unlinking releases it (see
//! [`mod@super::release`]).

use serde_json::Value;

use super::access::effective_owner;
use super::release::{end_shares, let_go};
use super::{AccountsError, user_name};
use crate::hub::Origin;
use crate::state::{
    DEFAULT_USER, Op, Owner, Share, ShareAccess, Stamp, State, structure_id, user_key,
};
use crate::util::JsonMap;

/// `XXX-XXXX` or `XXXXXXX`, any case: seven letters and digits, upper-cased.
pub fn entry_code(raw: &str) -> Result<String, AccountsError> {
    let code: String = raw
        .trim()
        .chars()
        .filter(|c| *c != '-')
        .map(|c| c.to_ascii_uppercase())
        .collect();
    if code.len() == 7 && code.bytes().all(|b| b.is_ascii_alphanumeric()) {
        Ok(code)
    } else {
        Err(AccountsError::CodeFormat)
    }
}

/// Claims the thermostat showing `code` for `user` (created if new); returns its serial.
pub fn claim(state: &State, code: &str, user: &str) -> Result<String, AccountsError> {
    let code = entry_code(code)?;
    let user = user_name(user)?;
    let (serial, password) = state.update_accounts(|txn| {
        let now = txn.now_ms();
        let key = txn
            .accounts()
            .entry_keys
            .get(&code)
            .filter(|k| k.is_active(now))
            .ok_or(AccountsError::CodeNotValid)?;
        let serial = key.serial.clone();
        let password = key.password.clone();
        let current = txn.accounts().owner_of(&serial).map(|o| o.user.clone());
        if let Some(owner) = current
            .as_ref()
            .filter(|o| *o != DEFAULT_USER && **o != user)
        {
            return Err(AccountsError::OwnedByOther {
                serial,
                owner: owner.clone(),
            });
        }
        if !txn.accounts().users.contains_key(&user) {
            txn.push(Op::AddUser {
                name: user.clone(),
                created_ms: now,
            });
        }
        txn.push(Op::ClaimEntryKey {
            code: code.clone(),
            user: user.clone(),
            at_ms: now,
        });
        if txn.accounts().is_released(&serial) {
            txn.push(Op::SetReleased {
                serial: serial.clone(),
                released: false,
            });
        }
        if current.as_deref() != Some(user.as_str()) {
            end_shares(txn, &serial);
            txn.push(Op::SetOwner {
                serial: serial.clone(),
                owner: Some(Owner {
                    user: user.clone(),
                    since_ms: now,
                }),
            });
        }
        Ok((serial, password))
    })?;
    // A crash between the two commits leaves an owner without the pushed buckets; the next
    // subscribe creates and sends them (see the device protocol's owner buckets). Until the
    // pin is stored, the claimed key's password stands in for it (see [`super::pin`]).
    // Every subscribe held in its name with another password ends first, so a device that
    // asked for another code gets nothing from here on (its next subscribe is refused: the
    // claimed key's password now stands in for the pin).
    state.hub().end_other_holders(&serial, password.as_deref());
    push_owner_buckets(state, &serial, &user, password.as_deref())?;
    log::info!("{serial} claimed by {user}");
    Ok(serial)
}

/// Writes (and so pushes) the owner's `user.<id>` and `structure.<id>` buckets, and pins the
/// claimed key's password (see [`super::pin::pin_claimed`]).
fn push_owner_buckets(
    state: &State,
    serial: &str,
    user: &str,
    password: Option<&str>,
) -> Result<(), AccountsError> {
    state.update_device(serial, Origin::Server, |txn| {
        super::pin::pin_claimed(txn, password).map_err(|_| AccountsError::RandomUnavailable)?;
        let mut name = JsonMap::new();
        name.insert("name".into(), Value::String(user.to_string()));
        txn.merge(&user_key(Some(user)), &name, Stamp::Always);
        let key = format!("structure.{}", structure_id(user));
        let existing = txn.bucket(&key).map(|b| b.value.to_map());
        let mut devices = existing
            .as_ref()
            .and_then(|v| v.get("devices"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !devices.iter().any(|d| d.as_str() == Some(serial)) {
            devices.push(Value::String(serial.to_string()));
        }
        let mut structure = JsonMap::new();
        if existing.is_none_or(|v| !v.contains_key("name")) {
            structure.insert("name".into(), Value::from("Home"));
        }
        structure.insert("devices".into(), Value::Array(devices));
        txn.merge(&key, &structure, Stamp::Always);
        Ok(())
    })
}

/// Whose link to a thermostat an unlink ends.
#[derive(Clone, Copy, Debug)]
pub enum Link<'a> {
    /// This user's, as the access rules see it (the hosted API): the user who claimed it, or in
    /// open mode the default user for one nobody claimed.
    User(&'a str),
    /// The claim's (the control API's registered devices): only a claimed thermostat is linked,
    /// and with `Some(user)` only if that user claimed it.
    Claim(Option<&'a str>),
}

/// Unlinks a thermostat and ends every share: it is released (see [`mod@super::release`]). Its
/// state, its pinned password and its connection stay and it keeps working, but it is nobody's
/// until claimed again with a new entry key (or, in open mode, adopted). `NotLinked` when
/// `link` does not hold; then nothing changes.
pub fn unlink(
    state: &State,
    serial: &str,
    link: Link<'_>,
    open_mode: bool,
) -> Result<(), AccountsError> {
    state.update_accounts(|txn| {
        let accounts = txn.accounts();
        let linked = match link {
            Link::User(user) => effective_owner(accounts, serial, open_mode) == Some(user),
            Link::Claim(by) => accounts
                .owner_of(serial)
                .is_some_and(|o| by.is_none_or(|u| o.user == u)),
        };
        if !linked {
            return Err(AccountsError::NotLinked(serial.to_string()));
        }
        let_go(txn, serial);
        Ok(())
    })?;
    log::info!("{serial} unlinked: released, it keeps operating");
    Ok(())
}

/// Shares a known thermostat someone owns with an existing user (changing the access if
/// already shared). A thermostat nobody owns (pairing applies to it: unclaimed with pairing
/// required, or removed) is seen by nobody, so it is shared with nobody: `NoOwner`, checked in
/// the same transaction as the share, so a removal at the same moment cannot slip between.
pub fn share(
    state: &State,
    serial: &str,
    with: &str,
    access: ShareAccess,
    open_mode: bool,
) -> Result<(), AccountsError> {
    let with = user_name(with)?;
    // Thermostats are never forgotten, so one known now is known when the share commits.
    let known = state.device_exists(serial);
    state.update_accounts(|txn| {
        let accounts = txn.accounts();
        if !known && accounts.owner_of(serial).is_none() {
            return Err(AccountsError::UnknownDevice(serial.to_string()));
        }
        let Some(owner) = effective_owner(accounts, serial, open_mode) else {
            return Err(AccountsError::NoOwner(serial.to_string()));
        };
        if !accounts.users.contains_key(&with) {
            return Err(AccountsError::UnknownUser(with.clone()));
        }
        if owner == with {
            return Err(AccountsError::ShareWithOwner {
                serial: serial.to_string(),
                user: with.clone(),
            });
        }
        let unchanged = accounts
            .shares_of(serial)
            .and_then(|m| m.get(&with))
            .is_some_and(|s| s.access == access);
        if !unchanged {
            let since_ms = txn.now_ms();
            txn.push(Op::SetShare {
                serial: serial.to_string(),
                user: with.clone(),
                share: Some(Share { access, since_ms }),
            });
        }
        Ok(())
    })
}

pub fn unshare(state: &State, serial: &str, with: &str) -> Result<(), AccountsError> {
    let with = user_name(with)?;
    state.update_accounts(|txn| {
        if txn
            .accounts()
            .shares_of(serial)
            .is_none_or(|m| !m.contains_key(&with))
        {
            return Err(AccountsError::NotShared {
                serial: serial.to_string(),
                user: with.clone(),
            });
        }
        txn.push(Op::SetShare {
            serial: serial.to_string(),
            user: with.clone(),
            share: None,
        });
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_codes() {
        assert_eq!(entry_code("184-gund").unwrap(), "184GUND");
        assert_eq!(entry_code("625AZZP").unwrap(), "625AZZP");
        for bad in ["625AZZ", "625AZZPP", "625 AZZP", "62?AZZP"] {
            assert!(
                matches!(entry_code(bad), Err(AccountsError::CodeFormat)),
                "{bad}"
            );
        }
    }
}
