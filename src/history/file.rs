//! One thermostat's history on disk: JSON lines in two segments, `SERIAL.jsonl` (being
//! appended to) and `SERIAL.old.jsonl` (the one before). When the current segment's first
//! sample is older than [`RETAIN_SECS`], or it reaches [`SEGMENT_MAX_BYTES`], it becomes the
//! old segment (replacing the previous old one) and a new one starts. So at least 7 days are
//! kept (unless a thermostat changes HVAC state more than about 30 times an hour), at most two
//! segments per thermostat are on disk, and nothing is held in memory but each segment's
//! first time and size.
//!
//! Samples are history, not acknowledged writes: they are appended without an fsync, so a
//! power cut may lose the last few. A torn last line is skipped when reading, and a newline
//! is added before the next sample is appended after one.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::Sample;
use crate::store::files;

/// A segment whose first sample is older than this is retired (becomes the old segment).
pub const RETAIN_SECS: i64 = 7 * 24 * 3600;
/// A segment this large is retired whatever its age: the bound on disk use.
pub const SEGMENT_MAX_BYTES: u64 = 1024 * 1024;

/// What is known about a thermostat's current segment without reading it again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    /// Time of its first sample; `None` when it is empty or missing.
    pub first_t: Option<i64>,
    pub bytes: u64,
}

pub fn current_path(dir: &Path, serial: &str) -> PathBuf {
    dir.join(format!("{serial}.jsonl"))
}

pub fn old_path(dir: &Path, serial: &str) -> PathBuf {
    dir.join(format!("{serial}.old.jsonl"))
}

/// Looks at the current segment once (at the first sample after start-up): its first
/// sample's time and its size, ending a torn last line so the next append starts clean.
pub fn inspect(dir: &Path, serial: &str) -> io::Result<Segment> {
    let path = current_path(dir, serial);
    let mut file = match OpenOptions::new().read(true).append(true).open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Segment::default()),
        Err(e) => return Err(e),
    };
    let mut bytes = file.metadata()?.len();
    if bytes > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::End(-1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            file.write_all(b"\n")?;
            bytes += 1;
        }
        file.seek(SeekFrom::Start(0))?;
    }
    let mut first_t = None;
    each_sample(file, |s| {
        first_t = Some(s.t);
        false
    })?;
    Ok(Segment { first_t, bytes })
}

/// Appends one sample, first retiring the current segment if it is due. Returns the
/// segment's new state.
pub fn append(dir: &Path, serial: &str, segment: Segment, sample: &Sample) -> io::Result<Segment> {
    let mut segment = segment;
    let too_old = segment
        .first_t
        .is_some_and(|first| sample.t - first > RETAIN_SECS);
    if too_old || segment.bytes >= SEGMENT_MAX_BYTES {
        match fs::rename(current_path(dir, serial), old_path(dir, serial)) {
            // Gone already (someone cleared the history): a new segment starts anyway.
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => segment = Segment::default(),
        }
    }
    let mut line = serde_json::to_vec(sample).map_err(io::Error::other)?;
    line.push(b'\n');
    let path = current_path(dir, serial);
    let mut file = files::open_append_in(dir, &path)?;
    // One write, so a concurrent reader sees whole lines (or a torn last one, which it skips).
    file.write_all(&line)?;
    Ok(Segment {
        first_t: segment.first_t.or(Some(sample.t)),
        bytes: segment.bytes + line.len() as u64,
    })
}

/// Every readable sample at or after `since` (Unix seconds), oldest first.
pub fn read_since(dir: &Path, serial: &str, since: i64) -> io::Result<Vec<Sample>> {
    // Both opened before either is read, so a retirement in between cannot hide a segment.
    let mut opened = Vec::new();
    for path in [old_path(dir, serial), current_path(dir, serial)] {
        match File::open(&path) {
            Ok(f) => opened.push(f),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    let mut out = Vec::new();
    for file in opened {
        each_sample(file, |sample| {
            if sample.t >= since {
                out.push(sample);
            }
            true
        })?;
    }
    // Samples are appended in time order; a clock stepped back is put right here.
    out.sort_by_key(|s| s.t);
    Ok(out)
}

/// Hands each readable sample of `file` to `f` until it returns false. A line that is not a
/// sample (torn, or damaged on disk, even as bytes that are not UTF-8) is skipped.
fn each_sample(file: File, mut f: impl FnMut(Sample) -> bool) -> io::Result<()> {
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        if let Ok(sample) = serde_json::from_slice::<Sample>(&line) {
            if !f(sample) {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t: i64) -> Sample {
        Sample {
            t,
            temp: Some(20.5),
            ..Sample::default()
        }
    }

    /// The times of every sample read back for thermostat `S`.
    fn times(dir: &Path) -> Vec<i64> {
        read_since(dir, "S", 0)
            .unwrap()
            .iter()
            .map(|s| s.t)
            .collect()
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("hearth-history-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_week_old_segment_is_retired_and_both_are_read() {
        let dir = temp_dir("retire");
        let mut seg = inspect(&dir, "S").unwrap();
        assert_eq!(seg, Segment::default());
        seg = append(&dir, "S", seg, &sample(1_000)).unwrap();
        seg = append(&dir, "S", seg, &sample(1_000 + RETAIN_SECS)).unwrap();
        assert!(!old_path(&dir, "S").exists());
        seg = append(&dir, "S", seg, &sample(1_001 + RETAIN_SECS)).unwrap();
        assert!(old_path(&dir, "S").exists());
        assert_eq!(seg.first_t, Some(1_001 + RETAIN_SECS));
        let all = times(&dir);
        assert_eq!(all, vec![1_000, 1_000 + RETAIN_SECS, 1_001 + RETAIN_SECS]);
        let recent = read_since(&dir, "S", 1_001 + RETAIN_SECS).unwrap();
        assert_eq!(recent.len(), 1);
        // A third retirement drops the oldest segment.
        let later = 2_002 + 2 * RETAIN_SECS;
        append(&dir, "S", seg, &sample(later)).unwrap();
        let all = times(&dir);
        assert_eq!(all, vec![1_001 + RETAIN_SECS, later]);
    }

    #[test]
    fn a_full_segment_is_retired_whatever_its_age() {
        let dir = temp_dir("full");
        let seg = Segment {
            first_t: Some(5),
            bytes: SEGMENT_MAX_BYTES,
        };
        fs::write(current_path(&dir, "S"), b"").unwrap();
        let seg = append(&dir, "S", seg, &sample(6)).unwrap();
        assert!(old_path(&dir, "S").exists());
        assert_eq!(seg.first_t, Some(6));
    }

    #[test]
    fn a_deleted_directory_is_made_again() {
        let dir = temp_dir("gone");
        let seg = append(&dir, "S", Segment::default(), &sample(1)).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        let full = Segment {
            bytes: SEGMENT_MAX_BYTES,
            ..seg
        };
        append(&dir, "S", full, &sample(2)).unwrap();
        let all = times(&dir);
        assert_eq!(all, vec![2]);
    }

    #[test]
    fn a_torn_or_damaged_line_is_skipped_and_ended() {
        let dir = temp_dir("torn");
        let line = serde_json::to_string(&sample(7)).unwrap();
        let mut bytes = b"\xff\xfe not a sample\n".to_vec();
        bytes.extend_from_slice(format!("{line}\n{{\"t\":8,\"te").as_bytes());
        fs::write(current_path(&dir, "S"), bytes).unwrap();
        let seg = inspect(&dir, "S").unwrap();
        assert_eq!(seg.first_t, Some(7));
        append(&dir, "S", seg, &sample(9)).unwrap();
        let all = times(&dir);
        assert_eq!(all, vec![7, 9]);
    }
}
