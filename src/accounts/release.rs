//! Letting a thermostat go, and the one rule that says when pairing applies to it.
//!
//! The rule: a thermostat nobody owns is treated as pairing mode treats a thermostat nobody has
//! claimed when pairing is required (`REQUIRE_DEVICE_PAIRING`), or when its owner released it.
//! On every surface: nobody owns it (the hosted API shows it to no one, the control API's
//! device list leaves it out, commands to it are refused with 409), and the device protocol
//! refuses what it sends until it holds an entry key (and then stores nothing). Its buckets
//! stay, so it comes back with its settings. It waits (`GET /api/waiting`) until someone claims
//! it with a new entry key or, in open mode, adopts it (`POST /api/adopt`).
//!
//! A thermostat is released when it is unlinked or deleted in open mode, whoever owned it (the
//! user who claimed it, or the default user by rule). Otherwise "unlink" would mean two things:
//! a claimed thermostat would silently become the default user's, and the default user could
//! not let go of one at all. With pairing required an unlinked thermostat is simply unclaimed,
//! which is the same treatment, so nothing is recorded.

use super::AccountsError;
use super::access::effective_owner;
use crate::state::{Accounts, AccountsTxn, Op, State};

/// Whether `serial` gets pairing mode's treatment of an unclaimed thermostat (see the module
/// comment): it has no owner, and pairing is required or its owner released it.
pub fn pairing_applies(accounts: &Accounts, serial: &str, require_pairing: bool) -> bool {
    accounts.owner_of(serial).is_none() && (require_pairing || accounts.is_released(serial))
}

/// Ends every link to `serial` in `txn`: its shares and its owner; in open mode it is also
/// marked released, so the default user does not take it back.
pub(super) fn let_go(txn: &mut AccountsTxn, serial: &str, open_mode: bool) {
    end_shares(txn, serial);
    if txn.accounts().owner_of(serial).is_some() {
        txn.push(Op::SetOwner {
            serial: serial.to_string(),
            owner: None,
        });
    }
    if open_mode && !txn.accounts().is_released(serial) {
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

/// Drops the owner and the shares of `serial` whoever holds them, and in open mode releases it
/// (a thermostat being forgotten must not come back as the default user's).
pub fn release(state: &State, serial: &str, open_mode: bool) -> Result<(), AccountsError> {
    state.update_accounts(|txn| {
        let_go(txn, serial, open_mode);
        Ok::<_, AccountsError>(())
    })?;
    log::info!("{serial} released");
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

    #[test]
    fn pairing_applies_to_the_unowned_with_pairing_and_to_the_released() {
        let mut a = Accounts::default();
        assert!(!pairing_applies(&a, S, false));
        assert!(pairing_applies(&a, S, true));
        a.apply(&Op::SetReleased {
            serial: S.into(),
            released: true,
        });
        assert!(pairing_applies(&a, S, false));
        assert_eq!(effective_owner(&a, S, true), None);
        // An owner wins (a claim clears the release; this holds even if it did not).
        a.apply(&Op::SetOwner {
            serial: S.into(),
            owner: Some(Owner {
                user: "alice".into(),
                since_ms: 0,
            }),
        });
        assert!(!pairing_applies(&a, S, false) && !pairing_applies(&a, S, true));
        a.apply(&Op::SetReleased {
            serial: S.into(),
            released: false,
        });
        assert!(!a.is_released(S));
    }
}
