use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Why the store could not load or could not make a write durable. Every variant names the file.
#[derive(Debug)]
pub enum StoreError {
    Io {
        path: PathBuf,
        error: io::Error,
    },
    /// A file that cannot be read back as what we wrote. The server refuses to start rather
    /// than discard it; nothing is overwritten.
    Corrupt {
        path: PathBuf,
        detail: String,
    },
    /// Another process holds the data directory.
    Locked {
        path: PathBuf,
    },
    /// A journal write failed; the change was not applied or acknowledged.
    WriteFailed {
        path: PathBuf,
        detail: String,
    },
}

impl StoreError {
    pub fn io(path: &Path, error: io::Error) -> StoreError {
        StoreError::Io {
            path: path.to_path_buf(),
            error,
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Io { path, error } => write!(f, "{}: {}", path.display(), error),
            StoreError::Corrupt { path, detail } => write!(
                f,
                "{} is corrupt ({}); refusing to start so nothing is lost. Move the file aside \
                 or restore it from a backup, then start again",
                path.display(),
                detail
            ),
            StoreError::Locked { path } => write!(
                f,
                "{} is in use by another hearth process (LOCK is held)",
                path.display()
            ),
            StoreError::WriteFailed { path, detail } => {
                write!(f, "could not write {}: {}", path.display(), detail)
            }
        }
    }
}

impl std::error::Error for StoreError {}
