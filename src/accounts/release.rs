//! Letting a thermostat go, and the rules that say who sees it and what it may send.
//!
//! Removing a thermostat (deleting it on the control API, or its owner unlinking it) *releases*
//! it: its owner and its shares end, and it is recorded as released, in either mode. Nothing
//! of it is forgotten. It keeps operating: its pinned password stays, the device protocol
//! takes what it sends as before (no 401, no reboot needed), so its state stays current and
//! adding it again (`POST /api/adopt` in open mode) or claiming it with a new entry key brings
//! it back at once as it is.
//!
//! Two rules follow:
//! - Who sees it is [`super::visibility`]'s rule: nobody owns it, so no user sees or controls
//!   it on any surface (the hosted API shows it to no one, whatever shares are on record, and
//!   none can be made; the control API's device list leaves it out, commands to it are refused
//!   with 409, MQTT and HomeKit hide it, alerts clear); with pairing required the control API's
//!   reads of it (`/status`, history, schedule, events) answer as for an unknown serial too. It
//!   waits (`GET /api/waiting`) until someone claims it or, in open mode, adopts it.
//! - [`needs_entry_key`]: nobody owns it, pairing is required, and it was never released (it
//!   was never anyone's: [`Standing::Unclaimed`]). Only then does the device protocol refuse
//!   what it sends until it holds an entry key (and then store nothing).
//!
//! A thermostat is released whoever owned it (the user who claimed it, or the default user by
//! rule). Otherwise "unlink" would mean two things in open mode: a claimed thermostat would
//! silently become the default user's, and the default user could not let go of one at all.

use super::AccountsError;
use super::access::effective_owner;
use super::visibility::{Standing, standing};
use crate::state::{Accounts, AccountsTxn, Op, State};

/// Whether the device protocol refuses what `serial` sends until it holds an entry key (see the
/// module comment): pairing is required and it was never anyone's. A released thermostat
/// keeps operating.
pub fn needs_entry_key(accounts: &Accounts, serial: &str, require_pairing: bool) -> bool {
    standing(accounts, serial, require_pairing) == Standing::Unclaimed
}

/// Ends every link to `serial` in `txn`: its shares and its owner, and marks it released, so
/// the default user does not take it back in open mode and it keeps operating in either.
pub(super) fn let_go(txn: &mut AccountsTxn, serial: &str) {
    end_shares(txn, serial);
    if txn.accounts().owner_of(serial).is_some() {
        txn.push(Op::SetOwner {
            serial: serial.to_string(),
            owner: None,
        });
    }
    if !txn.accounts().is_released(serial) {
        txn.push(Op::SetReleased {
            serial: serial.to_string(),
            released: true,
        });
    }
}

pub(super) fn end_shares(txn: &mut AccountsTxn, serial: &str) {
    let users: Vec<String> = txn
        .accounts()
        .shares_of(serial)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    for user in users {
        txn.push(Op::SetShare {
            serial: serial.to_string(),
            user,
            share: None,
        });
    }
}

/// Drops the owner and the shares of `serial` whoever holds them, and releases it (the
/// control API's `DELETE /api/device`). Its state, its pin and its connection stay. A
/// thermostat nobody owns is not released again: one released already stays so, and with
/// pairing required one that was never anyone's stays unclaimed (a release would let it
/// operate, storing what it sends, without a claim); only shares left on record end.
pub fn release(state: &State, serial: &str, open_mode: bool) -> Result<(), AccountsError> {
    let released = state.update_accounts(|txn| {
        let owned = effective_owner(txn.accounts(), serial, open_mode).is_some();
        if owned {
            let_go(txn, serial);
        } else {
            end_shares(txn, serial);
        }
        Ok::<_, AccountsError>(owned)
    })?;
    if released {
        log::info!("{serial} released");
    }
    Ok(())
}

/// Makes a released thermostat the default user's again (open mode only: with pairing
/// required a thermostat is someone's only through a claim with its entry key). Refused, and
/// nothing changes, for a serial the server does not know, with pairing required, and for a
/// thermostat that is not released (someone owns it already).
pub fn adopt(state: &State, serial: &str, open_mode: bool) -> Result<(), AccountsError> {
    let known = state.device_exists(serial);
    state.update_accounts(|txn| {
        let accounts = txn.accounts();
        let released = accounts.is_released(serial);
        if !known && !released && accounts.owner_of(serial).is_none() {
            return Err(AccountsError::UnknownDevice(serial.to_string()));
        }
        if !open_mode {
            return Err(AccountsError::ClaimRequired(serial.to_string()));
        }
        if !released {
            let owner = effective_owner(accounts, serial, open_mode).unwrap_or_default();
            return Err(AccountsError::NotReleased {
                serial: serial.to_string(),
                owner: owner.to_string(),
            });
        }
        txn.push(Op::SetReleased {
            serial: serial.to_string(),
            released: false,
        });
        Ok(())
    })?;
    log::info!("{serial} adopted by the default user");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Owner;

    const S: &str = "02AA01AC0000SIM1";

    /// Whether nobody owns `serial`.
    fn nobodys(a: &Accounts, require_pairing: bool) -> bool {
        !standing(a, S, require_pairing).owned()
    }

    #[test]
    fn nobody_owns_the_unowned_with_pairing_nor_the_released() {
        let mut a = Accounts::default();
        assert!(!nobodys(&a, false));
        assert!(nobodys(&a, true));
        a.apply(&Op::SetReleased {
            serial: S.into(),
            released: true,
        });
        assert!(nobodys(&a, false));
        assert_eq!(effective_owner(&a, S, true), None);
        // An owner wins (a claim clears the release; this holds even if it did not).
        a.apply(&Op::SetOwner {
            serial: S.into(),
            owner: Some(Owner {
                user: "alice".into(),
                since_ms: 0,
            }),
        });
        assert!(!nobodys(&a, false) && !nobodys(&a, true));
        a.apply(&Op::SetReleased {
            serial: S.into(),
            released: false,
        });
        assert!(!a.is_released(S));
    }

    #[test]
    fn only_a_thermostat_never_anyones_needs_an_entry_key_and_only_in_pairing_mode() {
        let mut a = Accounts::default();
        assert!(needs_entry_key(&a, S, true));
        assert!(!needs_entry_key(&a, S, false));
        // Released (it was someone's): it keeps operating, though nobody sees it.
        a.apply(&Op::SetReleased {
            serial: S.into(),
            released: true,
        });
        assert!(!needs_entry_key(&a, S, true) && !needs_entry_key(&a, S, false));
        assert!(nobodys(&a, true) && nobodys(&a, false));
        a.apply(&Op::SetReleased {
            serial: S.into(),
            released: false,
        });
        a.apply(&Op::SetOwner {
            serial: S.into(),
            owner: Some(Owner {
                user: "alice".into(),
                since_ms: 0,
            }),
        });
        assert!(!needs_entry_key(&a, S, true));
    }
}
