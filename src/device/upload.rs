//! `POST /nest/upload`: device logs. With `STORE_DEVICE_LOGS=true` each upload is written as
//! received to `<DEVICE_LOGS_DIR>/<SERIAL>/<UTC time>.log` (`.log.gz` for a gzip body), never
//! over an earlier one, and fsynced before the answer.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::DeviceError;
use crate::app::App;
use crate::http::Response;
use crate::store::files;
use crate::util::clock;

/// Device logs may be larger than other requests.
pub const BODY_LIMIT: usize = 8 * 1024 * 1024;

pub fn upload(app: &App, serial: Option<&str>, body: &[u8]) -> Result<Response, DeviceError> {
    if app.config.store_device_logs {
        let dir = app
            .config
            .device_logs_dir()
            .join(serial.unwrap_or("unknown"));
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
