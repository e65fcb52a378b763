//! File-system helpers: private permissions, directory fsync, the data-dir lock.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// Creates `dir` (and parents) readable only by this user, if it does not exist; a `dir` that
/// exists already is made 0700 too (a data directory made by hand or by an older install may be
/// 0755, which would let every local user list it). Parents that exist are left as they are.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let mode = fs::metadata(dir)?.permissions().mode();
    if mode & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
        log::info!(
            "made {} private (mode {:o} -> 700)",
            dir.display(),
            mode & 0o7777
        );
    }
    Ok(())
}

/// Opens a file for appending, creating it with mode 0600.
pub fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

/// Opens `path`, a file in `dir`, for appending as [`open_append`] does, making `dir` again
/// first if it was deleted while hearth ran (docs/running.md says it may be).
pub fn open_append_in(dir: &Path, path: &Path) -> io::Result<File> {
    match open_append(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            create_private_dir(dir)?;
            open_append(path)
        }
        other => other,
    }
}

/// Creates a new file with mode 0600; fails if it exists.
pub fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// Makes a directory entry change (create, rename, unlink) durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    match File::open(dir)?.sync_all() {
        // Some file systems (vfat, some FUSE) cannot fsync a directory; the data itself is
        // already synced, so this is the best that can be done there.
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) => Ok(()),
        other => other,
    }
}

/// An exclusive advisory lock on `<dir>/LOCK`, held while the returned file is open. Two
/// processes writing one store would corrupt it, so a second one is refused.
pub fn lock_dir(dir: &Path) -> io::Result<Option<File>> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(dir.join("LOCK"))?;
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Some(file)),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// When run as root on a data directory that belongs to another user (the service's), hands
/// the files root just created in it to that user, so the service can still write them.
pub fn give_to_dir_owner(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    if !rustix::process::geteuid().is_root() {
        return Ok(());
    }
    let owner = fs::metadata(dir)?;
    if owner.uid() == 0 {
        return Ok(());
    }
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let meta = fs::symlink_metadata(&path)?;
        // lchown: never follows a symlink, even one swapped in after the check above.
        if meta.uid() == 0 && meta.is_file() {
            std::os::unix::fs::lchown(&path, Some(owner.uid()), Some(owner.gid()))?;
        }
    }
    Ok(())
}

/// Removes a file, treating "already gone" as success.
pub fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}
