//! `POST /nest/upload`: device logs. With `STORE_DEVICE_LOGS=true` each upload is written as
//! received to `<DEVICE_LOGS_DIR>/<SERIAL>/<UTC time>.log` (`.log.gz` for a gzip body), never
//! over an earlier one, and fsynced before the answer.
//!
//! All kept uploads together, every thermostat's, stay within `DEVICE_LOGS_MAX_MB`: before an
//! upload is written, the oldest kept ones (by modification time) are deleted until it fits.
//! One upload larger than the whole quota is refused (413) and deletes nothing. Each kept file
//! counts as at least [`MIN_CHARGE`] bytes, so the number of kept files is bounded by
//! quota / 4 KiB (256 per MiB), and an empty upload is refused (400) without writing. A
//! thermostat's directory is removed with its last upload. Only files named as uploads are
//! counted or deleted, so other files in the directory are left alone.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use parking_lot::Mutex;

use super::DeviceError;
use crate::app::App;
use crate::http::Response;
use crate::store::files;
use crate::util::clock;

/// Device logs may be larger than other requests.
pub const BODY_LIMIT: usize = 8 * 1024 * 1024;

/// What a kept upload counts against the quota at least: a file's cost is more than its bytes,
/// and this bounds how many files the quota keeps.
pub const MIN_CHARGE: u64 = 4096;

/// What an upload of `bytes` counts against the quota.
fn charge(bytes: u64) -> u64 {
    bytes.max(MIN_CHARGE)
}

/// One upload at a time makes room and writes, so two at once cannot both count the same
/// free space.
static WRITING: Mutex<()> = parking_lot::const_mutex(());

pub fn upload(app: &App, serial: Option<&str>, body: &[u8]) -> Result<Response, DeviceError> {
    if app.config().store_device_logs {
        if body.is_empty() {
            log::warn!(
                "refused an empty device log from {}",
                serial.unwrap_or("unknown")
            );
            return Err(DeviceError::EmptyUpload);
        }
        let quota = app.config().device_logs_max_mb.saturating_mul(1024 * 1024);
        let size = charge(u64::try_from(body.len()).unwrap_or(u64::MAX));
        if size > quota {
            log::warn!(
                "refused a {size}-byte device log from {}: larger than DEVICE_LOGS_MAX_MB ({} MiB)",
                serial.unwrap_or("unknown"),
                app.config().device_logs_max_mb
            );
            return Err(DeviceError::UploadOverQuota {
                quota_mb: app.config().device_logs_max_mb,
            });
        }
        let root = app.config().device_logs_dir();
        let dir = root.join(serial.unwrap_or("unknown"));
        let _writing = WRITING.lock();
        make_room(&root, quota - size).map_err(|e| {
            log::error!(
                "could not make room for a device log in {}: {e}",
                root.display()
            );
            DeviceError::UploadFailed
        })?;
        let path = store(&dir, body).map_err(|e| {
            log::error!("could not store a device log in {}: {e}", dir.display());
            DeviceError::UploadFailed
        })?;
        log::info!(
            "stored a {}-byte device log at {}",
            body.len(),
            path.display()
        );
    }
    Ok(Response::json(200, &serde_json::json!({"status": "ok"})))
}

/// A kept upload: `<root>/<serial>/<name>.log[.gz]`.
struct Kept {
    path: PathBuf,
    modified: SystemTime,
    name: String,
    bytes: u64,
}

/// Every kept upload under `root`, oldest first (by modification time, then by name: an
/// earlier `-n` suffix was written first).
fn kept(root: &Path) -> std::io::Result<Vec<Kept>> {
    let mut found = Vec::new();
    let serials = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(found),
        Err(e) => return Err(e),
    };
    for serial in serials {
        let serial = serial?;
        if !serial.file_type()?.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(serial.path())? {
            let file = file?;
            let name = file.file_name().to_string_lossy().to_string();
            let meta = file.metadata()?;
            if !meta.is_file() || !(name.ends_with(".log") || name.ends_with(".log.gz")) {
                continue;
            }
            found.push(Kept {
                path: file.path(),
                modified: meta.modified()?,
                name,
                bytes: meta.len(),
            });
        }
    }
    found.sort_by(|a, b| {
        (a.modified, a.name.len(), &a.name).cmp(&(b.modified, b.name.len(), &b.name))
    });
    Ok(found)
}

/// Deletes the oldest kept uploads until the rest count at most `room` bytes (each at least
/// [`MIN_CHARGE`]); a thermostat's directory left empty is removed.
fn make_room(root: &Path, room: u64) -> std::io::Result<()> {
    let kept = kept(root)?;
    let mut total: u64 = kept.iter().map(|k| charge(k.bytes)).sum();
    for old in kept {
        if total <= room {
            break;
        }
        files::remove_if_present(&old.path)?;
        total = total.saturating_sub(charge(old.bytes));
        if let Some(dir) = old.path.parent() {
            remove_if_empty(root, dir);
        }
        log::info!(
            "deleted the device log {} ({} bytes) to keep within DEVICE_LOGS_MAX_MB",
            old.path.display(),
            old.bytes
        );
    }
    Ok(())
}

/// Removes a thermostat's log directory once it holds nothing (anything else in it keeps it).
fn remove_if_empty(root: &Path, dir: &Path) {
    let empty = std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none());
    if !empty {
        return;
    }
    match std::fs::remove_dir(dir).and_then(|()| files::sync_dir(root)) {
        Ok(()) => log::info!("removed the empty device log directory {}", dir.display()),
        Err(e) => log::warn!(
            "could not remove the empty directory {}: {e}",
            dir.display()
        ),
    }
}

fn store(dir: &Path, body: &[u8]) -> std::io::Result<PathBuf> {
    files::create_private_dir(dir)?;
    let gzip = body.starts_with(&[0x1f, 0x8b]);
    let stem = clock::compact_utc(clock::now_ms());
    for n in 0..1000 {
        let suffix = if n == 0 {
            String::new()
        } else {
            format!("-{n}")
        };
        let name = format!("{stem}{suffix}.log{}", if gzip { ".gz" } else { "" });
        let path = dir.join(name);
        let mut file = match files::create_new(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        };
        file.write_all(body)?;
        file.sync_all()?;
        files::sync_dir(dir)?;
        return Ok(path);
    }
    Err(std::io::Error::other("too many uploads in one second"))
}
