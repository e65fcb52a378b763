//! Removing a user: its API keys stop working and the shares made to it end, in one write.
//! The default user `owner` always exists, and a user who owns a thermostat stays until the
//! thermostat is unlinked (removing the user must never leave a thermostat to nobody in
//! silence).

use super::{AccountsError, user_name};
use crate::state::{DEFAULT_USER, Op, State};

/// What removing a user took with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removed {
    pub name: String,
    pub keys: usize,
    pub shares: usize,
}

pub fn remove_user(state: &State, name: &str) -> Result<Removed, AccountsError> {
    let name = user_name(name)?;
    if name == DEFAULT_USER {
        return Err(AccountsError::DefaultUserStays);
    }
    state.update_accounts(|txn| {
        let accounts = txn.accounts();
        if !accounts.users.contains_key(&name) {
            return Err(AccountsError::UnknownUser(name.clone()));
        }
        let owned: Vec<String> = accounts
            .owners
            .iter()
            .filter(|(_, o)| o.user == name)
            .map(|(serial, _)| serial.clone())
            .collect();
        if !owned.is_empty() {
            let mut serials = owned;
            serials.sort();
            return Err(AccountsError::UserOwns {
                user: name.clone(),
                serials,
            });
        }
        let removed = Removed {
            name: name.clone(),
            keys: accounts
                .api_keys
                .values()
                .filter(|k| k.user == name)
                .count(),
            shares: accounts
                .shares
                .values()
                .filter(|m| m.contains_key(&name))
                .count(),
        };
        txn.push(Op::RemoveUser { name: name.clone() });
        Ok(removed)
    })
}
