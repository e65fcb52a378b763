//! Moving from the NoLongerEvil Python server: `hearth import-nle PATH/database.sqlite` and
//! `hearth import FILE.json`.
//!
//! hearth does not link SQLite: a bundled SQLite would add about a megabyte and a C build to
//! a binary meant for routers, for a command run once. The Python server's database is read by
//! `scripts/nle-export.py` (Python's standard `sqlite3` module; anyone leaving the Python
//! server has Python), which `import-nle` carries inside the binary and runs with `python3`.
//! `hearth import` takes the script's JSON made elsewhere. [`plan`] decides what is imported.
//!
//! The import never mixes with existing data: it refuses a data directory that has anything
//! in it unless `--force`, which moves what is there into `replaced-<time>/` inside it (nothing
//! is deleted), and refuses one a running server holds. Everything is checked before anything
//! is written, and the result is written like any change (journal, then a snapshot).

pub mod plan;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use crate::hub::{Hub, Origin};
use crate::state::{DeviceMeta, Op, Owner, Stamp, State};
use crate::store::{StoreError, files};
use crate::util::{clock, random};
use plan::{Export, Plan};

/// The converter, as shipped in `scripts/`.
pub const EXPORT_SCRIPT: &str = include_str!("../../scripts/nle-export.py");

/// Reads the Python server's database through `python` running [`EXPORT_SCRIPT`].
pub fn export_sqlite(python: &str, database: &Path) -> Result<Vec<u8>, String> {
    if !database.is_file() {
        return Err(format!("no database at {}", database.display()));
    }
    let out = Command::new(python)
        .arg("-c")
        .arg(EXPORT_SCRIPT)
        .arg(database)
        .output()
        .map_err(|e| {
            format!(
                "could not run {python} ({e}). Reading the Python server's SQLite database needs \
                 Python 3 (the one the Python server ran on will do). Or, on a machine that has it, \
                 run `python3 scripts/nle-export.py database.sqlite > nle.json` and then \
                 `hearth import nle.json` here."
            )
        })?;
    if !out.status.success() {
        return Err(format!(
            "{python} could not read {}: {}",
            database.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(out.stdout)
}

/// Imports an export (the script's JSON) into `data_dir`; gives the summary to print.
pub fn import(json: &[u8], data_dir: &Path, force: bool) -> Result<String, String> {
    let export: Export = serde_json::from_slice(json)
        .map_err(|e| format!("not an export of the Python server's database: {e}"))?;
    let plan = plan::plan(export, clock::now_ms());
    let set_aside = make_room(data_dir, force)?;
    let (state, _) = State::open(data_dir, Arc::new(Hub::new())).map_err(|e| e.to_string())?;
    write(&state, &plan).map_err(|e| format!("the import stopped part way: {e}"))?;
    state.snapshot().map_err(|e| e.to_string())?;
    drop(state);
    if let Err(e) = files::give_to_dir_owner(data_dir) {
        eprintln!(
            "hearth: warning: could not hand the imported files in {} to its owner: {e}",
            data_dir.display()
        );
    }
    let mut summary = plan.summary();
    if let Some(old) = set_aside {
        summary.push_str(&format!(
            "\nthe data directory's previous contents are in {}",
            old.display()
        ));
    }
    Ok(summary)
}

/// Makes sure `data_dir` is empty (creating it if missing), moving what is in it aside with
/// `force`. Refuses while a server holds it.
fn make_room(data_dir: &Path, force: bool) -> Result<Option<PathBuf>, String> {
    let entries: Vec<PathBuf> = match fs::read_dir(data_dir) {
        Ok(list) => list.flatten().map(|e| e.path()).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", data_dir.display())),
    };
    if entries.is_empty() {
        return Ok(None);
    }
    if !force {
        return Err(format!(
            "{} is not empty; importing would mix with the data there. Use --force to import \
             anyway: what is there now is moved into a replaced-<time> directory inside it, \
             not deleted.",
            data_dir.display()
        ));
    }
    // A running server holds the store's lock; this fails rather than move its files.
    match State::open(data_dir, Arc::new(Hub::new())) {
        Ok(state) => drop(state),
        Err(e @ StoreError::Locked { .. }) => {
            return Err(format!("{e}; stop it before importing"));
        }
        // A store that does not load is still moved aside, untouched.
        Err(_) => {}
    }
    let aside = data_dir.join(format!("replaced-{}", clock::now_ms()));
    fs::create_dir(&aside).map_err(|e| format!("cannot create {}: {e}", aside.display()))?;
    for path in entries {
        let Some(name) = path.file_name() else {
            continue;
        };
        fs::rename(&path, aside.join(name))
            .map_err(|e| format!("cannot move {} aside: {e}", path.display()))?;
    }
    Ok(Some(aside))
}

fn write(state: &State, plan: &Plan) -> Result<(), String> {
    for (serial, buckets) in &plan.devices {
        let since = plan.owners.get(serial).map_or(clock::now_ms(), |o| o.1);
        let id = random::uuid_v4().map_err(|e| format!("no random numbers: {e}"))?;
        state
            .update_device(serial, Origin::Device, |txn| {
                txn.set_meta(DeviceMeta {
                    id,
                    api_key: None,
                    created_ms: since,
                });
                for b in buckets {
                    let stamp = Stamp::Exactly {
                        revision: b.revision,
                        timestamp: b.timestamp,
                    };
                    txn.replace(&b.key, b.value.clone(), stamp);
                }
                Ok::<_, StoreError>(())
            })
            .map_err(|e| e.to_string())?;
    }
    state
        .update_accounts(|txn| {
            for (name, created_ms) in &plan.users {
                if !txn.accounts().users.contains_key(name) {
                    txn.push(Op::AddUser {
                        name: name.clone(),
                        created_ms: *created_ms,
                    });
                }
            }
            for (serial, (user, since_ms)) in &plan.owners {
                txn.push(Op::SetOwner {
                    serial: serial.clone(),
                    owner: Some(Owner {
                        user: user.clone(),
                        since_ms: *since_ms,
                    }),
                });
            }
            for key in &plan.api_keys {
                txn.push(Op::PutApiKey { key: key.clone() });
            }
            for key in &plan.entry_keys {
                txn.push(Op::PutEntryKey { key: key.clone() });
            }
            Ok::<_, StoreError>(())
        })
        .map_err(|e| e.to_string())
}
