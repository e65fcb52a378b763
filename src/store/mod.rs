//! The durable store: an append-only journal of changes plus a periodic snapshot, in flat JSON
//! files in the data directory.
//!
//! - A change is acknowledged only after its journal record is fsynced. Writers that arrive
//!   while a flush is running queue their records, and the next flush writes all of them with
//!   one fsync (group commit; the first waiter does the flush, no extra thread).
//! - A snapshot (`state.json`) covers every record up to a sequence number; the journal then
//!   moves to a new segment and older segments are deleted.
//! - Startup loads the snapshot, replays newer records, drops a torn last line, and refuses to
//!   start on anything else that does not parse (the error names the file).
//!
//! The store knows nothing of what it keeps: the state is any [`Replay`] type, whose operations
//! are the journal's records.

mod error;
pub(crate) mod files;
pub(crate) mod journal;
pub(crate) mod snapshot;

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, MutexGuard};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use error::StoreError;

use crate::metrics::{Histogram, HistogramSnapshot};
use crate::util::clock::Stopwatch;

/// What a store keeps: a state that a snapshot holds and its journal's operations change.
pub trait Replay: Default + DeserializeOwned {
    type Op: DeserializeOwned;

    /// Applies one journaled operation (at startup, in journal order).
    fn apply(&mut self, op: &Self::Op);
}

/// Journal bytes after which a snapshot is due.
const SNAPSHOT_AFTER_BYTES: u64 = 4 * 1024 * 1024;

/// At a stop, a journal smaller than this part of the snapshot is left for the next start
/// to replay ([`Store::snapshot_due_at_stop`]).
const STOP_SNAPSHOT_PART: u64 = 8;

pub struct Store {
    dir: PathBuf,
    /// Held for the life of the store: the flock on `<dir>/LOCK`.
    _lock: File,
    commit: Mutex<Commit>,
    flushed: Condvar,
    /// How long each group commit's fsync took (for `/metrics`).
    fsync: Histogram,
    /// Tests hold a flush until they open this, to make group commit observable.
    #[cfg(test)]
    flush_gate: tests::Gate,
}

struct Commit {
    file: Arc<File>,
    path: PathBuf,
    /// Bytes of the current segment known to be durable.
    len: u64,
    next_seq: u64,
    /// Records waiting for the next flush, and the first sequence among them.
    queue: Vec<u8>,
    queue_first: u64,
    flushing: bool,
    /// Every sequence at or below this is durable, unless it is in `failed`.
    durable: u64,
    failed: Vec<(u64, u64, String)>,
    /// Set when a failed write could not be undone; every later write fails.
    poisoned: Option<String>,
    bytes_since_snapshot: u64,
    /// The size of the snapshot on disk (0 without one).
    snapshot_bytes: u64,
    /// Records appended and fsyncs done, since open.
    records: u64,
    flushes: u64,
}

/// What loading found, for the startup log.
#[derive(Debug, Default)]
pub struct LoadReport {
    pub snapshot_seq: Option<u64>,
    pub replayed_records: usize,
    pub torn_bytes: u64,
}

impl Store {
    /// Opens (creating if needed) the store in `dir` and returns it with the loaded state.
    pub fn open<D: Replay>(dir: &Path) -> Result<(Store, D, LoadReport), StoreError> {
        files::create_private_dir(dir).map_err(|e| StoreError::io(dir, e))?;
        let lock = files::lock_dir(dir)
            .map_err(|e| StoreError::io(&dir.join("LOCK"), e))?
            .ok_or_else(|| StoreError::Locked {
                path: dir.to_path_buf(),
            })?;
        snapshot::remove_stale_temps(dir)?;

        let mut report = LoadReport::default();
        let (mut data, snapshot_seq) = match snapshot::load(dir)? {
            Some((data, seq)) => {
                report.snapshot_seq = Some(seq);
                (data, seq)
            }
            None => (D::default(), 0),
        };

        let segments = journal::list_segments(dir)?;
        check_no_gap(dir, snapshot_seq, &segments)?;
        let mut last_seq = snapshot_seq;
        let mut bytes_since_snapshot = 0;
        let mut newest_len = 0;
        for (i, (_, path)) in segments.iter().enumerate() {
            let newest = i + 1 == segments.len();
            let contents = journal::read_segment::<D::Op>(path, newest)?;
            for record in contents.records {
                if record.seq <= snapshot_seq {
                    continue;
                }
                if record.seq <= last_seq {
                    return Err(StoreError::Corrupt {
                        path: path.clone(),
                        detail: format!("record {} is out of order", record.seq),
                    });
                }
                last_seq = record.seq;
                for op in &record.ops {
                    data.apply(op);
                }
                report.replayed_records += 1;
            }
            bytes_since_snapshot += contents.valid_len;
            if newest {
                newest_len = contents.valid_len;
                if contents.torn_bytes > 0 {
                    report.torn_bytes = contents.torn_bytes;
                    truncate(path, contents.valid_len)?;
                }
            }
        }

        let (path, len) = match segments.last() {
            Some((_, path)) => (path.clone(), newest_len),
            None => (journal::segment_path(dir, last_seq + 1), 0),
        };
        let file = files::open_append(&path).map_err(|e| StoreError::io(&path, e))?;
        files::sync_dir(dir).map_err(|e| StoreError::io(dir, e))?;
        let snapshot_bytes = fs::metadata(dir.join(snapshot::FILE)).map_or(0, |m| m.len());

        let store = Store {
            dir: dir.to_path_buf(),
            _lock: lock,
            commit: Mutex::new(Commit {
                file: Arc::new(file),
                path,
                len,
                next_seq: last_seq + 1,
                queue: Vec::new(),
                queue_first: 0,
                flushing: false,
                durable: last_seq,
                failed: Vec::new(),
                poisoned: None,
                bytes_since_snapshot,
                snapshot_bytes,
                records: 0,
                flushes: 0,
            }),
            flushed: Condvar::new(),
            fsync: Histogram::default(),
            #[cfg(test)]
            flush_gate: tests::Gate::default(),
        };
        Ok((store, data, report))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends one record holding `ops` and returns once it is durable.
    pub fn append<O: Serialize>(&self, ops: &[O]) -> Result<(), StoreError> {
        let body = serde_json::to_string(ops).map_err(|e| StoreError::WriteFailed {
            path: self.dir.clone(),
            detail: e.to_string(),
        })?;
        let mut c = self.commit.lock();
        if let Some(why) = &c.poisoned {
            return Err(StoreError::WriteFailed {
                path: c.path.clone(),
                detail: why.clone(),
            });
        }
        let seq = c.next_seq;
        c.next_seq += 1;
        c.records += 1;
        if c.queue.is_empty() {
            c.queue_first = seq;
        }
        c.queue
            .extend_from_slice(format!("{{\"seq\":{seq},\"ops\":{body}}}\n").as_bytes());
        #[cfg(test)]
        self.flush_gate.moved();

        loop {
            if let Some((_, _, why)) = c
                .failed
                .iter()
                .find(|(lo, hi, _)| (*lo..=*hi).contains(&seq))
            {
                return Err(StoreError::WriteFailed {
                    path: c.path.clone(),
                    detail: why.clone(),
                });
            }
            if seq <= c.durable {
                return Ok(());
            }
            if c.flushing {
                self.flushed.wait(&mut c);
            } else {
                self.flush(&mut c);
            }
        }
    }

    /// Writes and fsyncs everything queued, with the lock released during the I/O.
    fn flush(&self, c: &mut MutexGuard<'_, Commit>) {
        let batch = std::mem::take(&mut c.queue);
        let (first, last) = (c.queue_first, c.next_seq - 1);
        if let Some(why) = c.poisoned.clone() {
            // A broken line may end the file: nothing more may be written after it.
            c.failed.push((first, last, why));
            self.flushed.notify_all();
            return;
        }
        let file = Arc::clone(&c.file);
        let start_len = c.len;
        c.flushing = true;
        c.flushes += 1;
        let result = MutexGuard::unlocked(c, || {
            #[cfg(test)]
            self.flush_gate.pass();
            (&*file).write_all(&batch)?;
            // Real time, not the server's clock: a latency, which a test's clock cannot fake.
            let started = Stopwatch::start();
            let synced = file.sync_data();
            self.fsync.observe(started.elapsed());
            synced
        });
        c.flushing = false;
        match result {
            Ok(()) => {
                c.len += batch.len() as u64;
                c.bytes_since_snapshot += batch.len() as u64;
                c.durable = last;
            }
            Err(e) => {
                let why = e.to_string();
                log::error!("journal write to {} failed: {why}", c.path.display());
                // Cut off whatever part of the batch reached the file, so later records do not
                // follow a broken line. If even that fails, stop accepting writes.
                if let Err(e2) = file.set_len(start_len).and_then(|()| file.sync_data()) {
                    c.poisoned = Some(format!("{why}; then truncating failed: {e2}"));
                }
                c.failed.push((first, last, why));
                if c.failed.len() > 64 {
                    c.failed.remove(0);
                }
            }
        }
        self.flushed.notify_all();
    }

    /// Records appended and fsyncs done since the store was opened (fewer fsyncs than records
    /// means writers shared them).
    pub fn commit_counts(&self) -> (u64, u64) {
        let c = self.commit.lock();
        (c.records, c.flushes)
    }

    /// The fsync latency of the group commits since open.
    pub fn fsync_latency(&self) -> HistogramSnapshot {
        self.fsync.snapshot()
    }

    /// Bytes of the journal segments and the snapshot on disk now (0 for what cannot be read:
    /// a figure for a dashboard, not a check).
    pub fn size_bytes(&self) -> u64 {
        let segments = journal::list_segments(&self.dir).unwrap_or_default();
        let files = segments
            .iter()
            .map(|(_, path)| path.clone())
            .chain([self.dir.join(snapshot::FILE)]);
        files
            .filter_map(|path| fs::metadata(path).ok())
            .map(|m| m.len())
            .sum()
    }

    /// True when enough journal has accumulated that a snapshot should be written.
    pub fn snapshot_due(&self) -> bool {
        self.commit.lock().bytes_since_snapshot >= SNAPSHOT_AFTER_BYTES
    }

    /// Whether a stopping server should write a snapshot: when one is due, and also when the
    /// journal since the last is an eighth of its size or more ([`STOP_SNAPSHOT_PART`]), or
    /// there is none yet. A smaller journal is left for the next start to replay, which costs
    /// the start less than the snapshot would have cost the stop: a byte of journal replays
    /// in six to seven times what a byte of snapshot takes to write (`state::measure`: 1.1 MB
    /// of small records replayed in 17–20 ms, a 7.6 MB snapshot written in 19–22 ms). With
    /// 10,000 thermostats the snapshot, 29 MB, was half of a stop. A stop with nothing
    /// journaled writes nothing.
    pub fn snapshot_due_at_stop(&self) -> bool {
        let c = self.commit.lock();
        c.bytes_since_snapshot > 0
            && (c.bytes_since_snapshot >= SNAPSHOT_AFTER_BYTES
                || c.bytes_since_snapshot.saturating_mul(STOP_SNAPSHOT_PART) >= c.snapshot_bytes)
    }

    /// Journal bytes since the last snapshot, and that snapshot's size.
    pub fn journal_beside_snapshot(&self) -> (u64, u64) {
        let c = self.commit.lock();
        (c.bytes_since_snapshot, c.snapshot_bytes)
    }

    /// Starts a new journal segment and returns the last sequence before it. Call only when no
    /// append is in progress (the state's snapshot gate guarantees that).
    pub fn rotate(&self) -> Result<(u64, u64), StoreError> {
        let mut c = self.commit.lock();
        let first = c.next_seq;
        let path = journal::segment_path(&self.dir, first);
        if path != c.path {
            let file = files::open_append(&path).map_err(|e| StoreError::io(&path, e))?;
            files::sync_dir(&self.dir).map_err(|e| StoreError::io(&self.dir, e))?;
            c.file = Arc::new(file);
            c.path = path;
            c.len = 0;
        }
        c.bytes_since_snapshot = 0;
        Ok((first - 1, first))
    }

    /// Writes a snapshot (already encoded) and deletes journal segments older than `keep_from`.
    pub fn write_snapshot(&self, bytes: &[u8], keep_from: u64) -> Result<(), StoreError> {
        snapshot::write(&self.dir, bytes)?;
        self.commit.lock().snapshot_bytes = bytes.len() as u64;
        for (first, path) in journal::list_segments(&self.dir)? {
            if first < keep_from {
                files::remove_if_present(&path).map_err(|e| StoreError::io(&path, e))?;
            }
        }
        files::sync_dir(&self.dir).map_err(|e| StoreError::io(&self.dir, e))
    }
}

/// The journal must go on where the snapshot ends. A snapshot is written after the journal has
/// moved to a segment named for the record after it, and only then are older segments
/// deleted, so that segment (or an older one) is always there. When the oldest segment starts
/// later, records in between are missing: typically a copy of the directory taken while the
/// server ran, holding an old `state.json` but not the segments a newer snapshot replaced.
/// Loading it would silently go back in time, so the store refuses.
fn check_no_gap(
    dir: &Path,
    snapshot_seq: u64,
    segments: &[(u64, PathBuf)],
) -> Result<(), StoreError> {
    let Some((oldest, _)) = segments.first() else {
        return Ok(());
    };
    if *oldest <= snapshot_seq + 1 {
        return Ok(());
    }
    Err(StoreError::Corrupt {
        path: dir.join(snapshot::FILE),
        detail: format!(
            "it covers the journal up to record {snapshot_seq}, but the oldest journal file \
             starts at record {oldest}: the records in between are missing (was this directory \
             copied while hearth was running?)"
        ),
    })
}

fn truncate(path: &Path, len: u64) -> Result<(), StoreError> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| StoreError::io(path, e))?;
    f.set_len(len)
        .and_then(|()| f.sync_all())
        .map_err(|e| StoreError::io(path, e))?;
    log::warn!(
        "{}: dropped a torn last record (a write cut off by a crash; it was never acknowledged)",
        path.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Bucket, Data, Op};

    /// A flush waits here while the gate is closed. It also tells a waiting test when the
    /// store moved on (a record queued, a flush at the gate), so the test waits for that
    /// rather than polling.
    #[derive(Default)]
    pub(super) struct Gate {
        /// Closed?, and how many times the store moved on.
        state: Mutex<(bool, u64)>,
        changed: Condvar,
    }

    impl Gate {
        pub(super) fn pass(&self) {
            let mut state = self.state.lock();
            state.1 += 1;
            self.changed.notify_all();
            while state.0 {
                self.changed.wait(&mut state);
            }
        }

        pub(super) fn set(&self, closed: bool) {
            self.state.lock().0 = closed;
            self.changed.notify_all();
        }

        pub(super) fn moved(&self) {
            self.state.lock().1 += 1;
            self.changed.notify_all();
        }

        /// Waits until `ok` holds, looking again each time the store moves on.
        fn wait_until(&self, what: &str, ok: impl Fn() -> bool) {
            loop {
                let seen = self.state.lock().1;
                if ok() {
                    return;
                }
                let mut state = self.state.lock();
                while state.1 == seen {
                    let timed_out = self
                        .changed
                        .wait_for(&mut state, Duration::from_secs(10))
                        .timed_out();
                    assert!(!timed_out, "never saw {what}");
                }
            }
        }
    }
    use std::sync::Arc;
    use std::time::Duration;

    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("hearth-store-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn merge(serial: &str, n: i64) -> Op {
        let mut set = crate::util::JsonMap::new();
        set.insert("n".into(), serde_json::json!(n));
        Op::Merge {
            serial: serial.into(),
            key: format!("device.{serial}"),
            rev: n,
            ts: n,
            updated: n,
            set,
        }
    }

    fn value_of(data: &Data, serial: &str) -> Option<Bucket> {
        data.devices
            .get(serial)?
            .buckets
            .get(&format!("device.{serial}"))
            .cloned()
    }

    #[test]
    fn writers_that_arrive_during_a_flush_share_the_next_one() {
        let dir = tempdir("group");
        let (store, _, _) = Store::open::<Data>(&dir).unwrap();
        let store = Arc::new(store);
        store.flush_gate.set(true);
        let leader = {
            let s = Arc::clone(&store);
            std::thread::spawn(move || s.append(&[merge("LEADER0000", 1)]).unwrap())
        };
        // Wait until the leader's flush is under way, then queue ten more writers behind it.
        store
            .flush_gate
            .wait_until("the flush", || store.commit.lock().flushing);
        let followers: Vec<_> = (0..10)
            .map(|i| {
                let s = Arc::clone(&store);
                std::thread::spawn(move || {
                    s.append(&[merge(&format!("FOLLOWER{i:02}"), 1)]).unwrap()
                })
            })
            .collect();
        store
            .flush_gate
            .wait_until("11 records", || store.commit.lock().records >= 11);
        store.flush_gate.set(false);
        leader.join().unwrap();
        for f in followers {
            f.join().unwrap();
        }
        assert_eq!(
            store.commit_counts(),
            (11, 2),
            "ten queued writers, one fsync"
        );
        drop(store);
        let (_, data, report) = Store::open::<Data>(&dir).unwrap();
        assert_eq!(report.replayed_records, 11);
        assert_eq!(data.devices.len(), 11);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn snapshot_rotates_the_journal_and_replay_resumes_after_it() {
        let dir = tempdir("snap");
        let (store, _, _) = Store::open::<Data>(&dir).unwrap();
        for n in 1..=3 {
            store.append(&[merge("SERIAL0001", n)]).unwrap();
        }
        // What State::snapshot does: rotate, encode the state as of the rotation, write.
        let mut data = Data::default();
        for n in 1..=3 {
            data.apply(&merge("SERIAL0001", n));
        }
        let (last, keep_from) = store.rotate().unwrap();
        assert_eq!((last, keep_from), (3, 4));
        store.append(&[merge("SERIAL0001", 4)]).unwrap();
        store
            .write_snapshot(&snapshot::encode(&data, last, 0).unwrap(), keep_from)
            .unwrap();
        let segments = journal::list_segments(&dir).unwrap();
        assert_eq!(
            segments.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            vec![4]
        );
        drop(store);
        let (store, data, report) = Store::open::<Data>(&dir).unwrap();
        assert_eq!((report.snapshot_seq, report.replayed_records), (Some(3), 1));
        assert_eq!(value_of(&data, "SERIAL0001").unwrap().revision, 4);
        store.append(&[merge("SERIAL0001", 5)]).unwrap();
        drop(store);
        let (_, data, _) = Store::open::<Data>(&dir).unwrap();
        assert_eq!(
            value_of(&data, "SERIAL0001").unwrap().value.to_map()["n"],
            serde_json::json!(5)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_stop_snapshots_a_journal_an_eighth_of_the_snapshot_or_more() {
        let dir = tempdir("stop-snap");
        let (store, _, _) = Store::open::<Data>(&dir).unwrap();
        assert!(
            !store.snapshot_due_at_stop(),
            "nothing journaled: nothing to fold"
        );
        store.append(&[merge("SERIAL0001", 1)]).unwrap();
        assert!(store.snapshot_due_at_stop(), "no snapshot yet");
        // A snapshot of many thermostats, then one record: far under an eighth of it.
        let mut data = Data::default();
        for n in 0..64 {
            data.apply(&merge(&format!("SERIAL{n:04}"), 1));
        }
        let (last, keep_from) = store.rotate().unwrap();
        store
            .write_snapshot(&snapshot::encode(&data, last, 0).unwrap(), keep_from)
            .unwrap();
        assert!(!store.snapshot_due_at_stop(), "nothing journaled since");
        store.append(&[merge("SERIAL0001", 2)]).unwrap();
        let (journal, snapshot) = store.journal_beside_snapshot();
        assert!(
            journal * STOP_SNAPSHOT_PART < snapshot,
            "{journal} {snapshot}"
        );
        assert!(!store.snapshot_due_at_stop(), "the next start replays it");
        // The journal grows to an eighth of the snapshot: the stop folds it.
        while {
            let (journal, snapshot) = store.journal_beside_snapshot();
            journal * STOP_SNAPSHOT_PART < snapshot
        } {
            store.append(&[merge("SERIAL0001", 3)]).unwrap();
        }
        assert!(store.snapshot_due_at_stop());
        // And the size it compares with is the one on disk after a restart too.
        drop(store);
        let (store, _, _) = Store::open::<Data>(&dir).unwrap();
        assert!(store.snapshot_due_at_stop());
        assert_eq!(
            store.journal_beside_snapshot().1,
            std::fs::metadata(dir.join(snapshot::FILE)).unwrap().len()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A backup taken while the server ran: the old `state.json`, then only the segment that a
    /// newer snapshot kept. Loading it would lose records 3 and 4 without a word.
    #[test]
    fn a_journal_that_does_not_reach_back_to_the_snapshot_is_refused() {
        let dir = tempdir("gap");
        let (store, _, _) = Store::open::<Data>(&dir).unwrap();
        let mut data = Data::default();
        let snapshot_at = |store: &Store, data: &Data| {
            let (last, keep_from) = store.rotate().unwrap();
            let bytes = snapshot::encode(data, last, 0).unwrap();
            store.write_snapshot(&bytes, keep_from).unwrap();
            std::fs::read(dir.join(snapshot::FILE)).unwrap()
        };
        for n in 1..=2 {
            store.append(&[merge("SERIAL0001", n)]).unwrap();
            data.apply(&merge("SERIAL0001", n));
        }
        let old_snapshot = snapshot_at(&store, &data);
        for n in 3..=4 {
            store.append(&[merge("SERIAL0001", n)]).unwrap();
            data.apply(&merge("SERIAL0001", n));
        }
        snapshot_at(&store, &data);
        store.append(&[merge("SERIAL0001", 5)]).unwrap();
        drop(store);
        // The directory as it is loads, with every record.
        let (store, loaded, _) = Store::open::<Data>(&dir).unwrap();
        assert_eq!(value_of(&loaded, "SERIAL0001").unwrap().revision, 5);
        drop(store);

        std::fs::write(dir.join(snapshot::FILE), &old_snapshot).unwrap();
        let before = std::fs::read_dir(&dir).unwrap().count();
        let err = Store::open::<Data>(&dir).err().expect("a gap is refused");
        let text = err.to_string();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{text}");
        assert!(text.contains("state.json"), "{text}");
        assert!(text.contains("up to record 2"), "{text}");
        assert!(text.contains("starts at record 5"), "{text}");
        assert_eq!(
            std::fs::read(dir.join(snapshot::FILE)).unwrap(),
            old_snapshot
        );
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            before,
            "nothing written"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_store_with_a_torn_tail_keeps_appending_after_the_last_good_record() {
        let dir = tempdir("tail");
        let (store, _, _) = Store::open::<Data>(&dir).unwrap();
        store.append(&[merge("SERIAL0001", 1)]).unwrap();
        drop(store);
        let (_, path) = journal::list_segments(&dir).unwrap().pop().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(b"{\"seq\":2,\"ops\":[{\"op\":\"me");
        std::fs::write(&path, &bytes).unwrap();
        let (store, _, report) = Store::open::<Data>(&dir).unwrap();
        assert!(report.torn_bytes > 0);
        store.append(&[merge("SERIAL0001", 2)]).unwrap();
        drop(store);
        let (_, data, report) = Store::open::<Data>(&dir).unwrap();
        assert_eq!((report.replayed_records, report.torn_bytes), (2, 0));
        assert_eq!(value_of(&data, "SERIAL0001").unwrap().revision, 2);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
