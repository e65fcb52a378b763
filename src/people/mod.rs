//! People: whose presence moves their home between Home and Away (what Nest's Home/Away Assist
//! did). The data lives in [`crate::state::Accounts`] (`people`, `homes`) and changes only
//! through `State::update_accounts`; this module holds the rules on it: names, presence tokens
//! (made, checked in constant time, revoked), reports (only a change is journaled, never a
//! location), vacations, and what the page shows ([`status`]). The rule that turns presence into
//! Home or Away is [`rule::decide`]; the thread that carries it out is [`engine`]. Every surface
//! that takes presence (the presence URL, MQTT, the command line, the page) calls these.

pub mod engine;
pub mod report;
pub mod rule;

use std::fmt;

pub use engine::{HomeStatus, People, status};
pub use report::{BadReport, Report};

use crate::accounts::keys;
use crate::state::{
    Accounts, Home, Op, Person, PresenceSource, PresenceToken, Seen, State, Vacation,
};
use crate::store::StoreError;
use crate::zone::Zone;

/// What every presence token starts with (an API key's is `nle_`).
pub const TOKEN_PREFIX: &str = "hp_";
/// People kept at most, on the whole server.
pub const MAX_PEOPLE: usize = 64;
/// The OwnTracks region that means home unless the owner names another.
pub const DEFAULT_REGION: &str = "home";
/// The longest vacation, in days.
pub const MAX_VACATION_DAYS: i64 = 366;

#[derive(Debug)]
pub enum PeopleError {
    InvalidName,
    InvalidRegion,
    Exists(String),
    Unknown(String),
    UnknownUser(String),
    TooMany,
    RandomUnavailable,
    /// A vacation that cannot be: the text says why.
    Vacation(String),
    /// The presence rule could not change a thermostat (its serial, and why).
    Thermostat(String, String),
    Storage(StoreError),
}

impl fmt::Display for PeopleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeopleError::InvalidName => write!(
                f,
                "Invalid name: use 1 to 32 letters, digits, '_' or '-' (it is part of the \
                 person's presence URL)"
            ),
            PeopleError::InvalidRegion => write!(
                f,
                "Invalid region: use 1 to 64 characters, the name of the OwnTracks region that \
                 means home"
            ),
            PeopleError::Exists(n) => write!(f, "There is already a person named {n}"),
            PeopleError::Unknown(n) => write!(f, "No person named {n}"),
            PeopleError::UnknownUser(u) => {
                write!(f, "No user named {u} (add it with: hearth users add {u})")
            }
            PeopleError::TooMany => write!(
                f,
                "Too many people: hearth keeps at most {MAX_PEOPLE}; remove some first"
            ),
            PeopleError::RandomUnavailable => {
                write!(f, "The system's random number source cannot be read")
            }
            PeopleError::Vacation(why) => write!(f, "{why}"),
            PeopleError::Thermostat(serial, why) => write!(f, "{serial}: {why}"),
            PeopleError::Storage(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for PeopleError {}

impl From<StoreError> for PeopleError {
    fn from(e: StoreError) -> Self {
        PeopleError::Storage(e)
    }
}

/// A person's name as it is kept: 1 to 32 of `a-z 0-9 _ -`, lower-cased (it is a path segment
/// of the presence URL and a level of the MQTT topic).
pub fn person_name(raw: &str) -> Result<String, PeopleError> {
    let name = raw.trim().to_ascii_lowercase();
    let ok = (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(name)
    } else {
        Err(PeopleError::InvalidName)
    }
}

/// An OwnTracks region name: 1 to 64 characters, no control characters, trimmed.
pub fn region(raw: &str) -> Result<String, PeopleError> {
    let region = raw.trim();
    let ok = (1..=64).contains(&region.chars().count()) && !region.chars().any(char::is_control);
    if ok {
        Ok(region.to_string())
    } else {
        Err(PeopleError::InvalidRegion)
    }
}

/// A person's new presence token, shown once.
#[derive(Clone, Debug, PartialEq)]
pub struct NewToken {
    pub name: String,
    pub token: String,
}

impl NewToken {
    /// The presence URL's path.
    pub fn path(&self) -> String {
        path(&self.name)
    }
}

/// The path of `name`'s presence URL on the control port.
pub fn path(name: &str) -> String {
    format!("/api/presence/{name}")
}

fn new_token(now_ms: i64) -> Result<(String, PresenceToken), PeopleError> {
    let token = keys::secret(TOKEN_PREFIX).ok_or(PeopleError::RandomUnavailable)?;
    let kept = PresenceToken {
        hash: keys::hash(&token),
        preview: keys::preview(&token),
        created_ms: now_ms,
    };
    Ok((token, kept))
}

/// Adds a person to `user`'s home, with a new token.
pub fn add(
    state: &State,
    user: &str,
    name: &str,
    region_name: Option<&str>,
) -> Result<NewToken, PeopleError> {
    let name = person_name(name)?;
    let region = region(region_name.unwrap_or(DEFAULT_REGION))?;
    state.update_accounts(|txn| {
        let accounts = txn.accounts();
        if !accounts.users.contains_key(user) {
            return Err(PeopleError::UnknownUser(user.to_string()));
        }
        if accounts.people.contains_key(&name) {
            return Err(PeopleError::Exists(name.clone()));
        }
        if accounts.people.len() >= MAX_PEOPLE {
            return Err(PeopleError::TooMany);
        }
        let (token, kept) = new_token(txn.now_ms())?;
        let person = Person {
            user: user.to_string(),
            region,
            token: Some(kept),
            created_ms: txn.now_ms(),
            seen: None,
        };
        txn.push(Op::PutPerson {
            name: name.clone(),
            person,
        });
        Ok(NewToken { name, token })
    })
}

/// Removes a person: their token stops working and their presence no longer counts.
pub fn remove(state: &State, name: &str) -> Result<Person, PeopleError> {
    let name = person_name(name)?;
    state.update_accounts(|txn| {
        let person = txn
            .accounts()
            .people
            .get(&name)
            .cloned()
            .ok_or_else(|| PeopleError::Unknown(name.clone()))?;
        txn.push(Op::RemovePerson { name: name.clone() });
        Ok(person)
    })
}

/// Gives a person a new token (`Some`, shown once) or none (`revoke`); the old one stops working
/// at once.
pub fn replace_token(
    state: &State,
    name: &str,
    revoke: bool,
) -> Result<Option<NewToken>, PeopleError> {
    let name = person_name(name)?;
    state.update_accounts(|txn| {
        let mut person = txn
            .accounts()
            .people
            .get(&name)
            .cloned()
            .ok_or_else(|| PeopleError::Unknown(name.clone()))?;
        let made = if revoke {
            if person.token.take().is_none() {
                // Revoked already: nothing to write.
                return Ok(None);
            }
            None
        } else {
            let (token, kept) = new_token(txn.now_ms())?;
            person.token = Some(kept);
            Some(NewToken {
                name: name.clone(),
                token,
            })
        };
        txn.push(Op::PutPerson {
            name: name.clone(),
            person,
        });
        Ok(made)
    })
}

/// The person a presence URL names, if `presented` is their token. Every person's hash is
/// compared in constant time, whichever is named, so neither timing nor the answer tells which
/// names exist.
pub fn authenticate(accounts: &Accounts, name: &str, presented: Option<&str>) -> Option<String> {
    let presented = presented?;
    let wanted = keys::hash(presented);
    let mut found = None;
    for (n, person) in &accounts.people {
        let Some(token) = &person.token else {
            continue;
        };
        if keys::constant_time_eq(token.hash.as_bytes(), wanted.as_bytes()) && n == name {
            found = Some(n.clone());
        }
    }
    found
}

/// What a report did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reported {
    /// The person's presence changed (journaled).
    Changed,
    /// The same as before: nothing written.
    Same,
    /// Older than what the person last reported (a queued message): ignored.
    Stale,
}

/// Records that `name` is home or away, reported through `source` at `at_ms` (the server's
/// clock, or an earlier time the report carries). Only a change is written, so a hub that
/// repeats a state costs nothing; a report older than the last one changes nothing.
pub fn report(
    state: &State,
    name: &str,
    home: bool,
    source: PresenceSource,
    at_ms: Option<i64>,
) -> Result<Reported, PeopleError> {
    state.update_accounts(|txn| {
        let now = txn.now_ms();
        let person = txn
            .accounts()
            .people
            .get(name)
            .ok_or_else(|| PeopleError::Unknown(name.to_string()))?;
        // A time the report carries is believed between the person's making and now (a queued
        // message is late; one that says 1970 is wrong).
        let at_ms = at_ms.map_or(now, |t| t.clamp(person.created_ms.min(now), now));
        match person.seen {
            Some(seen) if at_ms < seen.at_ms => return Ok(Reported::Stale),
            Some(seen) if seen.home == home => return Ok(Reported::Same),
            _ => {}
        }
        txn.push(Op::PersonSeen {
            name: name.to_string(),
            seen: Seen {
                home,
                at_ms,
                source,
            },
        });
        Ok(Reported::Changed)
    })
}

/// A vacation from the local day `from` to the local day `to` (`YYYY-MM-DD`, both included) in
/// `zone`: from 00:00 of the first to 00:00 after the last.
pub fn vacation(from: &str, to: &str, zone: &Zone, now_ms: i64) -> Result<Vacation, PeopleError> {
    let day = |text: &str| {
        crate::zone::parse_date(text.trim()).ok_or_else(|| {
            PeopleError::Vacation(format!(
                "Invalid date {text:?}: expected YYYY-MM-DD, e.g. 2026-12-24"
            ))
        })
    };
    let (first, last) = (day(from)?, day(to)?);
    if last < first {
        return Err(PeopleError::Vacation(
            "A vacation's last day cannot be before its first".into(),
        ));
    }
    if last - first >= MAX_VACATION_DAYS {
        return Err(PeopleError::Vacation(format!(
            "A vacation lasts at most {MAX_VACATION_DAYS} days"
        )));
    }
    let (from_ms, to_ms) = (zone.day_start_ms(first), zone.day_start_ms(last + 1));
    if to_ms <= now_ms {
        return Err(PeopleError::Vacation(
            "That vacation is already over".into(),
        ));
    }
    Ok(Vacation {
        from: crate::zone::date_text(first),
        to: crate::zone::date_text(last),
        from_ms,
        to_ms,
    })
}

/// Sets (`Some`) or cancels `user`'s vacation. Cancelling one that has begun is a presence
/// change: the rule decides again from who is home.
pub fn set_vacation(
    state: &State,
    user: &str,
    vacation: Option<Vacation>,
) -> Result<(), PeopleError> {
    state.update_accounts(|txn| {
        if !txn.accounts().users.contains_key(user) {
            return Err(PeopleError::UnknownUser(user.to_string()));
        }
        let now = txn.now_ms();
        let mut home = txn.accounts().homes.get(user).cloned().unwrap_or_default();
        if vacation.is_none() {
            match &home.vacation {
                None => return Ok(()),
                Some(v) if v.from_ms <= now => home.vacation_ended_ms = Some(now),
                Some(_) => {}
            }
        }
        home.vacation = vacation;
        txn.push(Op::PutHome {
            user: user.to_string(),
            home,
        });
        Ok(())
    })
}

/// `user`'s home as the presence rule sees it.
pub fn home_of(accounts: &Accounts, user: &str) -> Home {
    accounts.homes.get(user).cloned().unwrap_or_default()
}

/// `user`'s people, by name.
pub fn people_of<'a>(
    accounts: &'a Accounts,
    user: &'a str,
) -> impl Iterator<Item = (&'a String, &'a Person)> + 'a {
    accounts.people.iter().filter(move |(_, p)| p.user == user)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    use crate::hub::Hub;
    use crate::util::clock::ManualClock;

    /// A store of its own in the temporary directory (removed on the next run of the test).
    fn state(test: &str) -> (State, ManualClock) {
        let dir = std::env::temp_dir().join(format!("hearth-people-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let clock = ManualClock::starting_now();
        let (state, _) = State::open(&dir, Arc::new(Hub::new())).unwrap();
        (state.with_clock(clock.clock()), clock)
    }

    #[test]
    fn names_and_regions() {
        assert_eq!(person_name(" Alice ").unwrap(), "alice");
        assert_eq!(person_name("bob_2-x").unwrap(), "bob_2-x");
        for bad in ["", "a b", "a/b", "ä", &"x".repeat(33), "a.b"] {
            assert!(person_name(bad).is_err(), "{bad}");
        }
        assert_eq!(region(" Home ").unwrap(), "Home");
        assert!(region("").is_err());
        assert!(region("a\nb").is_err());
    }

    #[test]
    fn tokens_are_shown_once_kept_hashed_checked_and_revoked() {
        let (state, _clock) = state("tokens");
        let made = add(&state, "owner", "Alice", None).unwrap();
        assert_eq!(made.name, "alice");
        assert!(made.token.starts_with("hp_") && made.token.len() == 3 + 64);
        assert_eq!(made.path(), "/api/presence/alice");
        let kept = state.accounts(|a| a.people["alice"].clone());
        let kept_token = kept.token.clone().unwrap();
        assert_eq!(kept_token.hash, keys::hash(&made.token));
        assert!(!format!("{kept:?}").contains(&made.token[3..]));
        assert_eq!(kept.region, "home");
        let check = |name: &str, t: Option<&str>| state.accounts(|a| authenticate(a, name, t));
        assert_eq!(check("alice", Some(&made.token)).as_deref(), Some("alice"));
        assert_eq!(check("alice", Some("hp_wrong")), None);
        assert_eq!(check("alice", None), None);
        // Another person's URL with this token.
        add(&state, "owner", "bob", Some("Casa")).unwrap();
        assert_eq!(check("bob", Some(&made.token)), None);
        assert!(matches!(
            add(&state, "owner", "alice", None),
            Err(PeopleError::Exists(_))
        ));
        assert!(matches!(
            add(&state, "nobody", "carol", None),
            Err(PeopleError::UnknownUser(_))
        ));
        let fresh = replace_token(&state, "alice", false).unwrap().unwrap();
        assert_eq!(check("alice", Some(&made.token)), None);
        assert_eq!(check("alice", Some(&fresh.token)).as_deref(), Some("alice"));
        assert_eq!(replace_token(&state, "alice", true).unwrap(), None);
        assert_eq!(check("alice", Some(&fresh.token)), None);
        remove(&state, "alice").unwrap();
        assert!(matches!(
            remove(&state, "alice"),
            Err(PeopleError::Unknown(_))
        ));
    }

    #[test]
    fn only_changes_are_journaled_and_older_reports_are_ignored() {
        let (state, clock) = state("reports");
        add(&state, "owner", "alice", None).unwrap();
        let added = clock.now_ms();
        clock.advance(Duration::from_secs(60));
        let now = clock.now_ms();
        let r = |home, at| report(&state, "alice", home, PresenceSource::Url, at).unwrap();
        assert_eq!(r(false, None), Reported::Changed);
        assert_eq!(r(false, None), Reported::Same);
        // Late (a queued message, sent after it): ignored.
        assert_eq!(r(true, Some(now - 30_000)), Reported::Stale);
        clock.advance(Duration::from_secs(1));
        assert_eq!(r(true, None), Reported::Changed);
        let seen = state.accounts(|a| a.people["alice"].seen).unwrap();
        assert!(seen.home);
        assert_eq!(seen.at_ms, now + 1000);
        // A time from before the person was added (a phone's clock in 1970) counts from then.
        let (state, _clock) = (state, clock);
        add(&state, "owner", "bob", None).unwrap();
        report(&state, "bob", false, PresenceSource::Owntracks, Some(0)).unwrap();
        let bob = state.accounts(|a| a.people["bob"].clone());
        assert_eq!(bob.seen.unwrap().at_ms, bob.created_ms);
        assert!(bob.created_ms > added);
        assert!(matches!(
            report(&state, "nobody", true, PresenceSource::Url, None),
            Err(PeopleError::Unknown(_))
        ));
    }

    #[test]
    fn vacations_are_whole_local_days() {
        let zone = Zone::utc();
        // 2026-12-02 12:00 UTC.
        let now = 1_796_212_800_000;
        let v = vacation("2026-12-03", "2026-12-06", &zone, now).unwrap();
        assert_eq!(v.from_ms, 1_796_256_000_000);
        assert_eq!(v.to_ms - v.from_ms, 4 * 86_400_000);
        assert_eq!(
            (v.from.as_str(), v.to.as_str()),
            ("2026-12-03", "2026-12-06")
        );
        let bad = |f, t| vacation(f, t, &zone, now).unwrap_err().to_string();
        assert!(bad("2026-12-06", "2026-12-03").contains("before its first"));
        assert!(bad("2026-11-01", "2026-11-02").contains("already over"));
        assert!(bad("tomorrow", "2026-12-03").contains("YYYY-MM-DD"));
        assert!(bad("2026-12-03", "2028-12-03").contains("at most"));
        // Today counts while it lasts.
        assert!(vacation("2026-12-02", "2026-12-02", &zone, now).is_ok());
    }
}
