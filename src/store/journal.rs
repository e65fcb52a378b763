//! Journal segments: `journal-<first seq>.jsonl`, one JSON record per line,
//! `{"seq":N,"ops":[...]}`. A record is one accepted change (possibly several operations); it
//! is written whole and fsynced before the change is acknowledged.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::error::StoreError;

const PREFIX: &str = "journal-";
const SUFFIX: &str = ".jsonl";

pub fn segment_path(dir: &Path, first_seq: u64) -> PathBuf {
    dir.join(format!("{PREFIX}{first_seq:020}{SUFFIX}"))
}

/// The journal segments in `dir`, oldest first.
pub fn list_segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>, StoreError> {
    let mut out = Vec::new();
    let entries = fs::read_dir(dir).map_err(|e| StoreError::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io(dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if let Some(num) = name
            .strip_prefix(PREFIX)
            .and_then(|n| n.strip_suffix(SUFFIX))
        {
            let first = num.parse::<u64>().map_err(|_| StoreError::Corrupt {
                path: entry.path(),
                detail: "journal file name does not end in a sequence number".into(),
            })?;
            out.push((first, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

#[derive(Deserialize)]
pub struct Record<O> {
    pub seq: u64,
    pub ops: Vec<O>,
}

pub struct SegmentContents<O> {
    pub records: Vec<Record<O>>,
    /// Length of the segment up to the end of its last complete record.
    pub valid_len: u64,
    /// Bytes after `valid_len` that were dropped as a torn write.
    pub torn_bytes: u64,
}

/// Reads a segment. In the newest segment an unterminated last line, or a tail of NUL bytes
/// (what a file system can leave after a crash mid-write), is a torn write of a record that was
/// never acknowledged and is dropped. Anything else that does not parse is corruption.
pub fn read_segment<O: DeserializeOwned>(
    path: &Path,
    newest: bool,
) -> Result<SegmentContents<O>, StoreError> {
    let bytes = fs::read(path).map_err(|e| StoreError::io(path, e))?;
    let mut records = Vec::new();
    let mut pos = 0usize;
    let mut line_no = 0usize;
    while pos < bytes.len() {
        line_no += 1;
        let rest = &bytes[pos..];
        let torn_tail = newest && is_torn_tail(rest);
        let Some(nl) = rest.iter().position(|b| *b == b'\n') else {
            if torn_tail {
                break;
            }
            return Err(corrupt(path, line_no, "the last line is incomplete"));
        };
        match serde_json::from_slice::<Record<O>>(&rest[..nl]) {
            Ok(r) => records.push(r),
            Err(_) if torn_tail => break,
            Err(e) => return Err(corrupt(path, line_no, &e.to_string())),
        }
        pos += nl + 1;
    }
    Ok(SegmentContents {
        records,
        valid_len: pos as u64,
        torn_bytes: (bytes.len() - pos) as u64,
    })
}

/// A tail is torn if it has no complete line, or is nothing but NUL bytes and line ends.
fn is_torn_tail(rest: &[u8]) -> bool {
    !rest.contains(&b'\n') || rest.iter().all(|b| *b == 0 || *b == b'\n')
}

fn corrupt(path: &Path, line: usize, why: &str) -> StoreError {
    StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: format!("line {line}: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.join(name);
        fs::write(&p, bytes).unwrap();
        p
    }

    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("hearth-journal-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    const GOOD: &[u8] = b"{\"seq\":1,\"ops\":[]}\n{\"seq\":2,\"ops\":[]}\n";

    #[test]
    fn unterminated_tail_of_newest_segment_is_torn() {
        let d = tempdir("torn");
        let mut bytes = GOOD.to_vec();
        bytes.extend_from_slice(b"{\"seq\":3,\"op");
        let p = write(&d, "j", &bytes);
        let c = read_segment::<serde_json::Value>(&p, true).unwrap();
        assert_eq!(c.records.len(), 2);
        assert_eq!(c.valid_len, GOOD.len() as u64);
        assert_eq!(c.torn_bytes, 12);
        assert!(
            read_segment::<serde_json::Value>(&p, false).is_err(),
            "older segments are never torn"
        );
    }

    #[test]
    fn nul_tail_is_torn() {
        let d = tempdir("nul");
        let mut bytes = GOOD.to_vec();
        bytes.extend_from_slice(&[0u8; 64]);
        bytes.push(b'\n');
        let c = read_segment::<serde_json::Value>(&write(&d, "j", &bytes), true).unwrap();
        assert_eq!(c.records.len(), 2);
    }

    #[test]
    fn garbage_in_the_middle_is_corrupt_and_named() {
        let d = tempdir("mid");
        let mut bytes = b"{\"seq\":1,\"ops\":[]}\nnot json\n".to_vec();
        bytes.extend_from_slice(b"{\"seq\":3,\"ops\":[]}\n");
        let p = write(&d, "j", &bytes);
        let err = read_segment::<serde_json::Value>(&p, true)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("line 2"), "{err}");
        assert!(err.contains(&p.display().to_string()), "{err}");
    }
}
