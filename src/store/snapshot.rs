//! The snapshot file `state.json`: the whole state as of one journal sequence number, written
//! temp → fsync → rename → fsync dir so a reader sees the old file or the new one, never a mix.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::error::StoreError;
use super::files;

pub const FILE: &str = "state.json";
const FORMAT: u32 = 1;

#[derive(Serialize)]
struct EnvelopeOut<'a, T: Serialize> {
    format: u32,
    last_seq: u64,
    saved_ms: i64,
    data: &'a T,
}

#[derive(Deserialize)]
struct EnvelopeIn<D> {
    format: u32,
    last_seq: u64,
    data: D,
}

/// Encodes a snapshot of `data` covering journal records up to `last_seq`.
pub fn encode<T: Serialize>(
    data: &T,
    last_seq: u64,
    saved_ms: i64,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut bytes = serde_json::to_vec(&EnvelopeOut {
        format: FORMAT,
        last_seq,
        saved_ms,
        data,
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Reads the snapshot, if there is one: the data and the last journal sequence it covers.
pub fn load<D: DeserializeOwned>(dir: &Path) -> Result<Option<(D, u64)>, StoreError> {
    let path = dir.join(FILE);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io(&path, e)),
    };
    let env: EnvelopeIn<D> = serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
        path: path.clone(),
        detail: format!("not a hearth snapshot: {e}"),
    })?;
    if env.format != FORMAT {
        return Err(StoreError::Corrupt {
            path,
            detail: format!("unknown snapshot format {}", env.format),
        });
    }
    Ok(Some((env.data, env.last_seq)))
}

/// Atomically replaces the snapshot with `bytes`.
pub fn write(dir: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let path = dir.join(FILE);
    let tmp = temp_path(dir);
    let result = (|| {
        let mut f = files::create_new(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, &path)?;
        files::sync_dir(dir)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(StoreError::io(&path, e));
    }
    Ok(())
}

fn temp_path(dir: &Path) -> PathBuf {
    dir.join(format!("{FILE}.tmp.{}", std::process::id()))
}

/// Removes temp files left by a crash in the middle of `write`.
pub fn remove_stale_temps(dir: &Path) -> Result<(), StoreError> {
    let entries = fs::read_dir(dir).map_err(|e| StoreError::io(dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with(&format!("{FILE}.tmp.")) {
            files::remove_if_present(&entry.path())
                .map_err(|e| StoreError::io(&entry.path(), e))?;
        }
    }
    Ok(())
}
