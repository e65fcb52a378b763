//! A database in the NoLongerEvil Python server's schema, made with python3's sqlite3 module
//! (as `hearth import-nle` itself reads it), for the import tests and the docs' examples.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

pub const NLAPI_KEY: &str = "nlapi_0123456789abcdef0123456789abcdef";

/// The Python server's tables (SQLModel `create_all`), with two thermostats of the user
/// `homeassistant`, its API key, an entry key, and one row hearth cannot use.
pub fn make_database(dir: &Path) -> PathBuf {
    let db = dir.join("database.sqlite");
    let hash = format!("{:x}", Sha256::digest(NLAPI_KEY.as_bytes()));
    let script = format!(
        r#"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.executescript('''
CREATE TABLE states (serial VARCHAR NOT NULL, object_key VARCHAR NOT NULL, object_revision INTEGER NOT NULL,
  object_timestamp INTEGER NOT NULL, value VARCHAR NOT NULL, "updatedAt" INTEGER NOT NULL, PRIMARY KEY (serial, object_key));
CREATE TABLE "entryKeys" (code VARCHAR NOT NULL PRIMARY KEY, serial VARCHAR NOT NULL, "createdAt" INTEGER NOT NULL,
  "expiresAt" INTEGER NOT NULL, "claimedBy" VARCHAR, "claimedAt" INTEGER);
CREATE TABLE "deviceOwners" (serial VARCHAR NOT NULL PRIMARY KEY, "userId" VARCHAR NOT NULL, "createdAt" INTEGER NOT NULL);
CREATE TABLE users ("clerkId" VARCHAR NOT NULL PRIMARY KEY, email VARCHAR NOT NULL, "createdAt" INTEGER NOT NULL);
CREATE TABLE integrations ("userId" VARCHAR NOT NULL, type VARCHAR NOT NULL, enabled INTEGER NOT NULL, config VARCHAR NOT NULL,
  "createdAt" INTEGER NOT NULL, "updatedAt" INTEGER NOT NULL, PRIMARY KEY ("userId", type));
CREATE TABLE "apiKeys" (id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "keyHash" VARCHAR NOT NULL UNIQUE, "keyPreview" VARCHAR NOT NULL,
  "userId" VARCHAR NOT NULL, name VARCHAR NOT NULL, permissions VARCHAR NOT NULL, "createdAt" INTEGER NOT NULL,
  "expiresAt" INTEGER, "lastUsedAt" INTEGER);
''')
rows = [
  ("02AA01AC0000NLE1", "device.02AA01AC0000NLE1", 12, 1700000000123, {{"current_humidity": 41, "temperature_scale": "C"}}),
  ("02AA01AC0000NLE1", "shared.02AA01AC0000NLE1", 30, 1700000000456, {{"current_temperature": 20.5, "target_temperature": 21.5, "target_temperature_type": "heat", "name": "Hallway"}}),
  ("02AA01AC0000NLE1", "structure.homeassistant", 3, 1700000000789, {{"away": False, "name": "Home"}}),
  ("02AA01AC0000NLE2", "shared.02AA01AC0000NLE2", 7, 1700000001000, {{"current_temperature": 18.0}}),
]
for serial, key, rev, ts, value in rows:
    db.execute("INSERT INTO states VALUES (?,?,?,?,?,?)", (serial, key, rev, ts, json.dumps(value), ts))
db.execute("INSERT INTO states VALUES (?,?,?,?,?,?)", ("02AA01AC0000NLE2", "device.02AA01AC0000NLE2", 1, 1, "not json", 1))
db.execute("INSERT INTO users VALUES ('homeassistant', 'homeassistant@local', 1690000000000)")
db.execute("INSERT INTO \"deviceOwners\" VALUES ('02AA01AC0000NLE1', 'homeassistant', 1690000000500)")
db.execute("INSERT INTO \"deviceOwners\" VALUES ('02AA01AC0000NLE2', 'homeassistant', 1690000000600)")
db.execute("INSERT INTO \"entryKeys\" VALUES ('123ABCD', '02AA01AC0000NLE1', 1690000000000, 1690003600000, 'homeassistant', 1690000000400)")
db.execute("INSERT INTO \"apiKeys\" (\"keyHash\", \"keyPreview\", \"userId\", name, permissions, \"createdAt\") VALUES (?,?,?,?,?,?)",
  ("{hash}", "nlapi_0123...cdef", "homeassistant", "home script", json.dumps({{"devices": [], "scopes": ["read", "control"]}}), 1695000000000))
db.commit()
"#
    );
    let status = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&db)
        .status()
        .expect("python3 runs");
    assert!(status.success());
    db
}
