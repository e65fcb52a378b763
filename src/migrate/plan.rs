//! The Python server's tables (as `scripts/nle-export.py` writes them) turned into what hearth
//! stores, checked in full before anything is written. Rows hearth cannot use are skipped and
//! listed, never guessed at:
//! - `states`: every bucket with its revision and timestamp, under its serial;
//! - `users`: by `clerkId`; `deviceOwners`: the owner of each serial (a user it names that the
//!   `users` table lacks is added);
//! - `apiKeys`: the SHA-256 hash carries over, so the `nlapi_` keys keep working; scopes `read`
//!   and `write` as they are, `control` and `admin` as `write` (plus `read` for `admin`);
//!   `devices` becomes the key's serial list;
//! - `entryKeys`: the newest code of each serial (hearth keeps one per serial).

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::Value;

use crate::accounts::{serial as parse_serial, user_name};
use crate::state::{ApiKey, EntryKey, Scope};
use crate::util::JsonMap;

/// The export's shape.
#[derive(Deserialize)]
pub struct Export {
    pub tables: Tables,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Tables {
    pub states: Vec<JsonMap>,
    #[serde(rename = "deviceOwners")]
    pub device_owners: Vec<JsonMap>,
    #[serde(rename = "entryKeys")]
    pub entry_keys: Vec<JsonMap>,
    pub users: Vec<JsonMap>,
    #[serde(rename = "apiKeys")]
    pub api_keys: Vec<JsonMap>,
}

/// One bucket to store exactly as it was.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportedBucket {
    pub key: String,
    pub revision: i64,
    pub timestamp: i64,
    pub value: JsonMap,
}

/// Everything to write, and what was left out.
#[derive(Debug, Default)]
pub struct Plan {
    /// serial → buckets.
    pub devices: BTreeMap<String, Vec<ImportedBucket>>,
    /// name → created (ms).
    pub users: BTreeMap<String, i64>,
    /// serial → (user, since ms).
    pub owners: BTreeMap<String, (String, i64)>,
    pub api_keys: Vec<ApiKey>,
    pub entry_keys: Vec<EntryKey>,
    /// One line per row that was not imported, saying why.
    pub skipped: Vec<String>,
}

impl Plan {
    /// A summary for the person running the import.
    pub fn summary(&self) -> String {
        let buckets: usize = self.devices.values().map(Vec::len).sum();
        let mut text = format!(
            "imported {} thermostats ({buckets} buckets), {} users, {} owners, {} API keys, {} entry keys",
            self.devices.len(),
            self.users.len(),
            self.owners.len(),
            self.api_keys.len(),
            self.entry_keys.len()
        );
        if !self.skipped.is_empty() {
            text.push_str(&format!("\nskipped {} rows:", self.skipped.len()));
            for s in &self.skipped {
                text.push_str("\n  ");
                text.push_str(s);
            }
        }
        text
    }
}

fn text<'a>(row: &'a JsonMap, column: &str) -> Option<&'a str> {
    row.get(column).and_then(Value::as_str)
}

/// An integer column (milliseconds, revisions); numbers written as text are accepted too.
fn int(row: &JsonMap, column: &str) -> Option<i64> {
    match row.get(column)? {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Builds the plan from an export; `now_ms` stands in for missing creation times.
pub fn plan(export: Export, now_ms: i64) -> Plan {
    let mut p = Plan::default();
    let t = export.tables;
    for (i, row) in t.states.iter().enumerate() {
        match bucket(row) {
            Ok((serial, b)) => p.devices.entry(serial).or_default().push(b),
            Err(why) => p.skipped.push(format!("states row {}: {why}", i + 1)),
        }
    }
    for (i, row) in t.users.iter().enumerate() {
        match text(row, "clerkId").map(user_name) {
            Some(Ok(name)) => {
                p.users.insert(name, int(row, "createdAt").unwrap_or(now_ms));
            }
            _ => p.skipped.push(format!(
                "users row {}: clerkId is not a usable user name (1 to 64 letters, digits, '_', '-', '.' or '@')",
                i + 1
            )),
        }
    }
    for (i, row) in t.device_owners.iter().enumerate() {
        let serial = text(row, "serial").and_then(parse_serial);
        let user = text(row, "userId").map(user_name);
        match (serial, user) {
            (Some(serial), Some(Ok(user))) => {
                let since = int(row, "createdAt").unwrap_or(now_ms);
                p.users.entry(user.clone()).or_insert(since);
                p.owners.insert(serial, (user, since));
            }
            _ => p
                .skipped
                .push(format!("deviceOwners row {}: bad serial or userId", i + 1)),
        }
    }
    for (i, row) in t.api_keys.iter().enumerate() {
        match api_key(row, now_ms) {
            Ok(key) => {
                p.users.entry(key.user.clone()).or_insert(now_ms);
                p.api_keys.push(key);
            }
            Err(why) => p.skipped.push(format!("apiKeys row {}: {why}", i + 1)),
        }
    }
    let mut newest: BTreeMap<String, EntryKey> = BTreeMap::new();
    for (i, row) in t.entry_keys.iter().enumerate() {
        match entry_key(row) {
            Some(key) => {
                if newest
                    .get(&key.serial)
                    .is_none_or(|k| k.created_ms <= key.created_ms)
                {
                    newest.insert(key.serial.clone(), key);
                }
            }
            None => p.skipped.push(format!(
                "entryKeys row {}: bad code, serial or times",
                i + 1
            )),
        }
    }
    p.entry_keys = newest.into_values().collect();
    p
}

fn bucket(row: &JsonMap) -> Result<(String, ImportedBucket), String> {
    let serial = text(row, "serial")
        .and_then(parse_serial)
        .ok_or("serial is not 10 to 64 letters and digits")?;
    let key = text(row, "object_key")
        .filter(|k| !k.is_empty() && k.len() <= 256 && k.contains('.'))
        .ok_or("object_key is not like device.SERIAL")?;
    let revision = int(row, "object_revision").ok_or("object_revision is not a number")?;
    let timestamp = int(row, "object_timestamp").ok_or("object_timestamp is not a number")?;
    let value = match row.get("value") {
        Some(Value::String(s)) => serde_json::from_str::<Value>(s).ok(),
        Some(v) => Some(v.clone()),
        None => None,
    };
    let Some(Value::Object(value)) = value else {
        return Err(format!("the value of {key} is not a JSON object"));
    };
    Ok((
        serial,
        ImportedBucket {
            key: key.to_string(),
            revision,
            timestamp,
            value,
        },
    ))
}

fn api_key(row: &JsonMap, now_ms: i64) -> Result<ApiKey, String> {
    let hash = text(row, "keyHash")
        .map(str::to_ascii_lowercase)
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or("keyHash is not a SHA-256 in hex")?;
    let user = text(row, "userId")
        .map(user_name)
        .and_then(Result::ok)
        .ok_or("userId is not a usable user name")?;
    let permissions: Value = match row.get("permissions") {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::Null),
        Some(v) => v.clone(),
        None => Value::Null,
    };
    let mut scopes = BTreeSet::new();
    for s in permissions["scopes"].as_array().into_iter().flatten() {
        match s.as_str().map(str::to_ascii_lowercase).as_deref() {
            Some("read") => {
                scopes.insert(Scope::Read);
            }
            Some("write" | "control") => {
                scopes.insert(Scope::Write);
            }
            Some("admin") => {
                scopes.extend([Scope::Read, Scope::Write]);
            }
            _ => {}
        }
    }
    if scopes.is_empty() {
        return Err("no scope hearth knows (read, write, control, admin)".into());
    }
    let mut serials = Vec::new();
    for d in permissions["devices"].as_array().into_iter().flatten() {
        let serial = d
            .as_str()
            .and_then(parse_serial)
            .ok_or("a serial in its devices is not 10 to 64 letters and digits")?;
        serials.push(serial);
    }
    let id = match row.get("id") {
        Some(Value::Number(n)) => format!("nlapi-{n}"),
        _ => format!("nlapi-{}", &hash[..8]),
    };
    Ok(ApiKey {
        id,
        preview: text(row, "keyPreview").unwrap_or("nlapi_…").to_string(),
        name: text(row, "name").unwrap_or("imported").to_string(),
        hash,
        user,
        scopes: scopes.into_iter().collect(),
        serials,
        created_ms: int(row, "createdAt").unwrap_or(now_ms),
        expires_ms: int(row, "expiresAt"),
        last_used_ms: int(row, "lastUsedAt"),
    })
}

fn entry_key(row: &JsonMap) -> Option<EntryKey> {
    let code = text(row, "code")
        .filter(|c| c.len() == 7 && c.bytes().all(|b| b.is_ascii_alphanumeric()))?
        .to_ascii_uppercase();
    Some(EntryKey {
        code,
        serial: text(row, "serial").and_then(parse_serial)?,
        created_ms: int(row, "createdAt")?,
        expires_ms: int(row, "expiresAt")?,
        claimed_by: text(row, "claimedBy").and_then(|u| user_name(u).ok()),
        claimed_ms: int(row, "claimedAt"),
        // The Python server keeps no password: the thermostat's next registration pins it.
        password: None,
    })
}
