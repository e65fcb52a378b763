//! Who may do what with a thermostat through an API key.
//!
//! A user relates to a thermostat as its owner or as a user it is shared with (`read` or
//! `control`). In open mode (no pairing) a thermostat nobody has claimed belongs to the default
//! user `owner`, unless it was released (see [`mod@super::release`]). A key acts for its user and is
//! further limited by its scopes and its serial list. The order of the checks decides the
//! answer:
//! 1. no relation → not found (the caller learns nothing about thermostats that are not theirs);
//! 2. unlinking by anyone but the owner → owner only;
//! 3. a serial outside the key's list, a missing scope, or a change through a `read` share →
//!    denied.

use super::visibility::{Standing, standing};
use crate::state::{Accounts, ApiKey, DEFAULT_USER, Scope, ShareAccess};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    Owner,
    Shared(ShareAccess),
}

impl Relation {
    /// `owner` or `shared`, as the hosted device list says it.
    pub fn access_type(self) -> &'static str {
        match self {
            Relation::Owner => "owner",
            Relation::Shared(_) => "shared",
        }
    }
}

/// What a request wants to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    Read,
    Write,
    /// Unlink the thermostat (owner only, and a write).
    Unlink,
}

impl Need {
    pub fn scope(self) -> Scope {
        match self {
            Need::Read => Scope::Read,
            Need::Write | Need::Unlink => Scope::Write,
        }
    }
}

/// Why a key may not act on a thermostat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denied {
    /// Its user has no relation to the thermostat.
    NoRelation,
    /// Only the owner may unlink it.
    OwnerOnly,
    /// The key's serial list, its scopes, or the share do not allow this.
    NotAllowed,
}

/// The thermostat's owner: the user who claimed it, else the default user if it is theirs
/// (open mode, and not released: [`standing`]).
pub fn effective_owner<'a>(
    accounts: &'a Accounts,
    serial: &str,
    open_mode: bool,
) -> Option<&'a str> {
    match standing(accounts, serial, !open_mode) {
        Standing::Claimed => accounts.owner_of(serial).map(|o| o.user.as_str()),
        Standing::DefaultUser => Some(DEFAULT_USER),
        Standing::Unclaimed | Standing::Released => None,
    }
}

/// How `user` relates to `serial`: its owner, a user it is shared with, or nothing. A
/// thermostat nobody owns (unclaimed with pairing required, or released: [`standing`]) relates to nobody, whatever shares are on record: shares end when it is released
/// and none can be made while nobody owns it, but a share left by older data gives nothing.
pub fn relation(
    accounts: &Accounts,
    serial: &str,
    user: &str,
    open_mode: bool,
) -> Option<Relation> {
    if effective_owner(accounts, serial, open_mode)? == user {
        return Some(Relation::Owner);
    }
    accounts
        .shares_of(serial)
        .and_then(|shares| shares.get(user))
        .map(|share| Relation::Shared(share.access))
}

/// Whether `key` may do `need` on `serial`, and how its user relates to it.
pub fn check(
    accounts: &Accounts,
    key: &ApiKey,
    serial: &str,
    need: Need,
    open_mode: bool,
) -> Result<Relation, Denied> {
    let relation = relation(accounts, serial, &key.user, open_mode).ok_or(Denied::NoRelation)?;
    if need == Need::Unlink && relation != Relation::Owner {
        return Err(Denied::OwnerOnly);
    }
    let share_allows = match relation {
        Relation::Owner | Relation::Shared(ShareAccess::Control) => true,
        Relation::Shared(ShareAccess::Read) => need == Need::Read,
    };
    if key.covers(serial) && key.has_scope(need.scope()) && share_allows {
        Ok(relation)
    } else {
        Err(Denied::NotAllowed)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::state::{Op, Owner, Share};

    const S: &str = "02AA01AC0000SIM1";

    /// A key of `user` with these scopes and serials.
    pub(in crate::accounts) fn key(user: &str, scopes: &[Scope], serials: &[&str]) -> ApiKey {
        ApiKey {
            id: "k".into(),
            hash: String::new(),
            preview: String::new(),
            user: user.into(),
            name: String::new(),
            scopes: scopes.to_vec(),
            serials: serials.iter().map(|s| s.to_string()).collect(),
            created_ms: 0,
            expires_ms: None,
            last_used_ms: None,
        }
    }

    fn accounts() -> Accounts {
        let mut a = Accounts::default();
        a.apply(&Op::SetOwner {
            serial: S.into(),
            owner: Some(Owner {
                user: "alice".into(),
                since_ms: 0,
            }),
        });
        for (user, access) in [("bob", ShareAccess::Read), ("carol", ShareAccess::Control)] {
            a.apply(&Op::SetShare {
                serial: S.into(),
                user: user.into(),
                share: Some(Share {
                    access,
                    since_ms: 0,
                }),
            });
        }
        a
    }

    #[test]
    fn owner_shares_scopes_and_serials() {
        let a = accounts();
        let rw = [Scope::Read, Scope::Write];
        let check = |k: &ApiKey, need| check(&a, k, S, need, false);
        assert_eq!(
            check(&key("alice", &rw, &[]), Need::Unlink),
            Ok(Relation::Owner)
        );
        assert_eq!(
            check(&key("alice", &[Scope::Read], &[]), Need::Write),
            Err(Denied::NotAllowed)
        );
        assert_eq!(
            check(&key("alice", &rw, &["02AA01AC0000OTHR"]), Need::Read),
            Err(Denied::NotAllowed)
        );
        assert_eq!(
            check(&key("bob", &rw, &[]), Need::Read),
            Ok(Relation::Shared(ShareAccess::Read))
        );
        assert_eq!(
            check(&key("bob", &rw, &[]), Need::Write),
            Err(Denied::NotAllowed)
        );
        assert!(check(&key("carol", &rw, &[]), Need::Write).is_ok());
        assert_eq!(
            check(&key("carol", &rw, &[]), Need::Unlink),
            Err(Denied::OwnerOnly)
        );
        assert_eq!(
            check(&key("dave", &rw, &[]), Need::Read),
            Err(Denied::NoRelation)
        );
    }

    #[test]
    fn open_mode_gives_unclaimed_thermostats_to_the_default_user() {
        let a = Accounts::default();
        let k = key(DEFAULT_USER, &[Scope::Read], &[]);
        assert_eq!(check(&a, &k, S, Need::Read, true), Ok(Relation::Owner));
        assert_eq!(check(&a, &k, S, Need::Read, false), Err(Denied::NoRelation));
        // A claimed thermostat is its claimer's, in either mode.
        let a = accounts();
        assert_eq!(check(&a, &k, S, Need::Read, true), Err(Denied::NoRelation));
        // A released one is nobody's.
        let mut a = Accounts::default();
        a.apply(&Op::SetReleased {
            serial: S.into(),
            released: true,
        });
        assert_eq!(check(&a, &k, S, Need::Read, true), Err(Denied::NoRelation));
    }

    #[test]
    fn a_share_of_a_thermostat_nobody_owns_gives_nothing() {
        let rw = [Scope::Read, Scope::Write];
        let carol = key("carol", &rw, &[]);
        // Released, with a share left on record (older data): nobody, in either mode.
        let mut a = accounts();
        a.apply(&Op::SetOwner {
            serial: S.into(),
            owner: None,
        });
        a.apply(&Op::SetReleased {
            serial: S.into(),
            released: true,
        });
        for open_mode in [true, false] {
            assert_eq!(relation(&a, S, "carol", open_mode), None);
            assert_eq!(
                check(&a, &carol, S, Need::Read, open_mode),
                Err(Denied::NoRelation)
            );
        }
        // Never claimed with pairing required: nobody; in open mode the default user owns it,
        // and the share counts.
        a.apply(&Op::SetReleased {
            serial: S.into(),
            released: false,
        });
        assert_eq!(relation(&a, S, "carol", false), None);
        assert_eq!(
            relation(&a, S, "carol", true),
            Some(Relation::Shared(ShareAccess::Control))
        );
    }
}
