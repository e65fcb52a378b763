//! Accounts: users, who owns and who shares each thermostat, API keys, and claiming a
//! thermostat with its entry key. The data lives in [`crate::state::Accounts`] and changes only
//! through `State::update_accounts`; this module holds the rules. The control API, the hosted
//! API and the command line (`hearth users|keys|claim|share|devices`) all use them, so a rule
//! is written once.

pub(crate) mod access;
mod error;
pub mod keys;
pub mod links;
pub(crate) mod pin;
pub(crate) mod release;
pub mod users;
pub mod visibility;

pub use access::{Need, Relation, effective_owner, relation};
pub use error::AccountsError;
pub use keys::{KEY_PREFIX, NewKey};
pub use links::{Link, claim, share, unlink, unshare};
pub use release::{adopt, needs_entry_key, release};
pub use visibility::{Sight, Standing, Viewer, Visibility};

use crate::state::{Op, State, structure_id};

/// A user name: 1 to 64 letters, digits, `_`, `-`, `.` or `@` (the Python server's dashboard
/// and Home Assistant add-on use `homeassistant`). `user_` alone is refused: a user's structure
/// id is its name without a leading `user_`, which would leave nothing.
pub fn user_name(raw: &str) -> Result<String, AccountsError> {
    let raw = raw.trim();
    let ok = (1..=64).contains(&raw.len())
        && raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.@".contains(&b))
        && !structure_id(raw).is_empty();
    if ok {
        Ok(raw.to_string())
    } else {
        Err(AccountsError::InvalidUserName)
    }
}

/// Users kept at most (the control port may add them without a key).
pub const MAX_USERS: usize = 1000;

/// Adds a user; `Ok(false)` if it already exists.
pub fn add_user(state: &State, name: &str) -> Result<bool, AccountsError> {
    let name = user_name(name)?;
    state.update_accounts(|txn| {
        if txn.accounts().users.contains_key(&name) {
            return Ok(false);
        }
        if txn.accounts().users.len() >= MAX_USERS {
            return Err(AccountsError::TooMany {
                what: "users",
                limit: MAX_USERS,
            });
        }
        txn.push(Op::AddUser {
            name: name.clone(),
            created_ms: txn.now_ms(),
        });
        Ok(true)
    })
}

/// A serial as a client names it: 10 to 64 ASCII letters and digits, upper-cased. Anything else
/// is refused rather than cleaned, so a typo never addresses a different thermostat.
pub fn serial(raw: &str) -> Option<String> {
    let ok = (10..=64).contains(&raw.len()) && raw.bytes().all(|b| b.is_ascii_alphanumeric());
    ok.then(|| raw.to_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_names_and_serials() {
        assert_eq!(user_name(" homeassistant ").unwrap(), "homeassistant");
        assert!(user_name("a b").is_err());
        assert!(user_name("user_").is_err());
        assert!(user_name("user_x").is_ok());
        assert!(user_name(&"x".repeat(65)).is_err());
        assert_eq!(
            serial("02aa01ac0000sim1").as_deref(),
            Some("02AA01AC0000SIM1")
        );
        assert_eq!(serial("02AA-01AC0000SIM1"), None);
        assert_eq!(serial("SHORT"), None);
    }
}
