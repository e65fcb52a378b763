//! Replacing a small file whole, durably: a crash leaves the old contents or the new, never a
//! mix, and the new contents are on disk before the call returns (written aside, fsynced,
//! renamed over, the directory fsynced). The directory is made private (0700) if missing.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// Writes `bytes` as `dir/name` (mode 0600), replacing what was there.
pub fn replace(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let (path, aside) = (dir.join(name), dir.join(format!("{name}.new")));
    let attempt = || -> io::Result<()> {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&aside)?;
        file.write_all(bytes)?;
        file.sync_data()?;
        fs::rename(&aside, &path)?;
        match File::open(dir)?.sync_all() {
            // Some file systems (vfat, some FUSE) cannot fsync a directory; the data itself is
            // synced, which is the best that can be done there.
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => Ok(()),
            other => other,
        }
    };
    match attempt() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
            attempt()
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_and_makes_the_directory() {
        let base = std::env::temp_dir().join(format!("hearth-durable-{}", std::process::id()));
        let dir = base.join("a/b");
        replace(&dir, "f.json", b"one").unwrap();
        replace(&dir, "f.json", b"two").unwrap();
        assert_eq!(fs::read(dir.join("f.json")).unwrap(), b"two");
        assert!(!dir.join("f.json.new").exists());
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dir.join("f.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        fs::remove_dir_all(base).unwrap();
    }
}
