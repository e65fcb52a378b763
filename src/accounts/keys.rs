//! API keys: `nle_` followed by 64 lowercase hex digits from the kernel's CSPRNG (the hosted
//! service's format). Only the SHA-256 of the whole key is stored; a presented key is hashed
//! and compared with every stored hash in constant time.

use sha2::{Digest, Sha256};

use super::{AccountsError, serial, user_name};
use crate::state::{Accounts, ApiKey, Op, Scope, State};
use crate::store::StoreError;
use crate::util::{hex, random};

pub const KEY_PREFIX: &str = "nle_";
const SECRET_BYTES: usize = 32;
const MAX_EXPIRY_DAYS: u32 = 3650;
/// Keys kept at most: a household needs a handful, and every request's key is compared with
/// each of them (and the control port may create them without a key).
pub const MAX_KEYS: usize = 1000;
const DAY_MS: i64 = 86_400_000;
/// `last_used` is written to the store at most this often per key (to the minute is plenty,
/// and a read must not cost an fsync every time).
const LAST_USED_EVERY_MS: i64 = 60_000;

/// What a new key is for.
#[derive(Clone, Debug)]
pub struct KeySpec {
    pub user: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub serials: Vec<String>,
    pub expires_days: Option<u32>,
}

/// A key just made: the key itself (shown once) and what is stored.
#[derive(Clone, Debug)]
pub struct NewKey {
    pub key: String,
    pub record: ApiKey,
}

/// `read`, `write` or `read,write` (any case, spaces allowed), as a sorted list without repeats.
pub fn parse_scopes(raw: &str) -> Result<Vec<Scope>, AccountsError> {
    let mut scopes = Vec::new();
    for part in raw.split(',').map(str::trim) {
        let scope = match part.to_ascii_lowercase().as_str() {
            "read" => Scope::Read,
            "write" => Scope::Write,
            _ => return Err(AccountsError::InvalidScopes(raw.to_string())),
        };
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    scopes.sort();
    Ok(scopes)
}

/// Makes and stores a key for an existing user. The serials need not be known yet: a key may
/// be made before its thermostat first connects.
pub fn create(state: &State, spec: &KeySpec) -> Result<NewKey, AccountsError> {
    let user = user_name(&spec.user)?;
    if spec.scopes.is_empty() {
        return Err(AccountsError::InvalidScopes(String::new()));
    }
    let mut serials = Vec::new();
    for raw in &spec.serials {
        let s = serial(raw.trim()).ok_or_else(|| AccountsError::InvalidSerial(raw.clone()))?;
        if !serials.contains(&s) {
            serials.push(s);
        }
    }
    let days = match spec.expires_days {
        Some(d) if !(1..=MAX_EXPIRY_DAYS).contains(&d) => return Err(AccountsError::InvalidExpiry),
        d => d,
    };
    let key = new_secret()?;
    state.update_accounts(|txn| {
        if !txn.accounts().users.contains_key(&user) {
            return Err(AccountsError::UnknownUser(user.clone()));
        }
        if txn.accounts().api_keys.len() >= MAX_KEYS {
            return Err(AccountsError::TooMany {
                what: "API keys",
                limit: MAX_KEYS,
            });
        }
        let id = unused_id(txn.accounts())?;
        let now = txn.now_ms();
        let record = ApiKey {
            id,
            hash: hash(&key),
            preview: preview(&key),
            user: user.clone(),
            name: spec.name.trim().to_string(),
            scopes: spec.scopes.clone(),
            serials: serials.clone(),
            created_ms: now,
            expires_ms: days.map(|d| now + i64::from(d) * DAY_MS),
            last_used_ms: None,
        };
        txn.push(Op::PutApiKey {
            key: record.clone(),
        });
        Ok(NewKey {
            key: key.clone(),
            record,
        })
    })
}

/// Deletes a key; it stops working at once.
pub fn revoke(state: &State, id: &str) -> Result<ApiKey, AccountsError> {
    let id = id.trim();
    state.update_accounts(|txn| {
        let key = txn
            .accounts()
            .api_keys
            .get(id)
            .cloned()
            .ok_or_else(|| AccountsError::UnknownKey(id.to_string()))?;
        txn.push(Op::RevokeApiKey { id: key.id.clone() });
        Ok(key)
    })
}

/// The valid (known, unexpired) key a request presents (see [`crate::http::Request::api_key`]),
/// with its use recorded. `None` means 401. A failure to record the use is logged; it does not
/// refuse the request.
pub fn authenticate(state: &State, presented: Option<&str>, now_ms: i64) -> Option<ApiKey> {
    let presented = presented?;
    let key = state.accounts(|a| find(a, presented).cloned())?;
    if key.is_expired(now_ms) {
        return None;
    }
    if key
        .last_used_ms
        .is_none_or(|t| now_ms - t >= LAST_USED_EVERY_MS)
    {
        let recorded = state.update_accounts(|txn| {
            // Revoked meanwhile: then the request is refused below.
            if txn.accounts().api_keys.contains_key(&key.id) {
                txn.push(Op::ApiKeyUsed {
                    id: key.id.clone(),
                    at_ms: now_ms,
                });
                Ok::<_, StoreError>(true)
            } else {
                Ok(false)
            }
        });
        match recorded {
            Ok(false) => return None,
            Ok(true) => {}
            Err(e) => log::warn!("could not record the use of API key {}: {e}", key.id),
        }
    }
    Some(key)
}

/// The stored key a presented key hashes to, whether or not it has expired. Every stored hash
/// is compared, in constant time, so timing says nothing about which keys exist.
pub fn find<'a>(accounts: &'a Accounts, presented: &str) -> Option<&'a ApiKey> {
    let wanted = hash(presented);
    let mut found = None;
    for key in accounts.api_keys.values() {
        if constant_time_eq(key.hash.as_bytes(), wanted.as_bytes()) {
            found = Some(key);
        }
    }
    found
}

/// Lowercase hex SHA-256 of the whole key, prefix included.
pub fn hash(key: &str) -> String {
    hex(&Sha256::digest(key.as_bytes()))
}

/// `nle_1a2b…9f0e`: the prefix (up to its `_`), four characters, an ellipsis and the last four.
pub(crate) fn preview(key: &str) -> String {
    let prefix = key.find('_').map_or(0, |i| i + 1);
    let head: String = key.chars().take(prefix + 4).collect();
    let tail: String = key
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("{head}…{tail}")
}

fn new_secret() -> Result<String, AccountsError> {
    secret(KEY_PREFIX).ok_or(AccountsError::RandomUnavailable)
}

/// A new secret: `prefix` and 64 lowercase hex digits from the system's CSPRNG (`None` when
/// it cannot be read). API keys and presence tokens are made by it.
pub(crate) fn secret(prefix: &str) -> Option<String> {
    let mut bytes = [0u8; SECRET_BYTES];
    random::fill(&mut bytes).ok()?;
    Some(format!("{prefix}{}", hex(&bytes)))
}

/// A short id (8 hex digits) no other key has.
fn unused_id(accounts: &Accounts) -> Result<String, AccountsError> {
    loop {
        let mut bytes = [0u8; 4];
        random::fill(&mut bytes).map_err(|_| AccountsError::RandomUnavailable)?;
        let id = hex(&bytes);
        if !accounts.api_keys.contains_key(&id) {
            return Ok(id);
        }
    }
}

/// Whether two byte strings are equal, in a time that depends only on their lengths.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_have_the_hosted_format() {
        let k = new_secret().unwrap();
        assert_eq!(k.len(), 4 + 64);
        assert!(k.starts_with("nle_"));
        assert!(
            k[4..]
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_ne!(k, new_secret().unwrap());
    }

    #[test]
    fn hashes_and_previews() {
        // SHA-256("abc"), a published test vector.
        assert_eq!(
            hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let key = format!("nle_1a2b{}9f0e", "0".repeat(56));
        assert_eq!(preview(&key), "nle_1a2b…9f0e");
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }

    #[test]
    fn scopes() {
        assert_eq!(
            parse_scopes("write, READ,read").unwrap(),
            vec![Scope::Read, Scope::Write]
        );
        assert!(parse_scopes("admin").is_err());
        assert!(parse_scopes("").is_err());
    }
}
