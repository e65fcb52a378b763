//! The server's state and its one mutation path.
//!
//! Every accepted change, from a thermostat or from the server side, goes through
//! [`State::update_device`] or [`State::update_accounts`]: the transaction describes the change,
//! the journal record is made durable, the change is installed in memory, and then it is
//! published to the hub (held subscribes for server-side changes; change watchers always).
//! Nothing is visible, pushed or acknowledged before it is durable.
//!
//! Locking: each serial has a writer lock held for its whole transaction (so its changes are
//! journaled and published in order) and a data lock that readers take only briefly; different
//! serials commit concurrently and share fsyncs. A snapshot takes the `gate` exclusively, which
//! waits for in-flight commits so the snapshot matches a journal position exactly.
//!
//! Lock order: serial writer → gate → device map → serial data → accounts → store → hub.
//! Never call `update_device` or `update_accounts` from inside another one's closure: both take
//! the gate, and a second read of it blocks behind a waiting snapshot.

pub(crate) mod accounts;
pub(crate) mod bucket;
pub(crate) mod compact;
pub(crate) mod device;
pub(crate) mod fields;
pub mod limits;
pub(crate) mod ops;
mod people;
pub(crate) mod txn;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

pub use accounts::{
    Accounts, ApiKey, DEFAULT_USER, EntryKey, Owner, Scope, Share, ShareAccess, User, structure_id,
    structure_key, user_key,
};
pub use bucket::{Bucket, WireObject, WireObjects};
pub use compact::Compact;
pub use device::{ChangeKind, DeviceData, DeviceMeta, LastChange};
pub use fields::Fields;
pub use limits::TooLarge;
pub use ops::Op;
pub use people::{Applied, Home, Person, PresenceSource, PresenceToken, Seen, Vacation, Why};
pub use txn::{AccountsTxn, DeviceTxn, Stamp, Written, change_key};

use crate::hub::{Hub, Origin};
use crate::store::{LoadReport, Replay, Store, StoreError, snapshot};
use crate::util::clock::{self, Clock};

/// Everything that is persisted: what a snapshot holds and the journal replays into.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Data {
    #[serde(default)]
    pub devices: BTreeMap<String, DeviceData>,
    #[serde(default)]
    pub accounts: Accounts,
}

impl Replay for Data {
    type Op = Op;

    fn apply(&mut self, op: &Op) {
        match op.device_serial() {
            Some(serial) => self
                .devices
                .entry(serial.to_string())
                .or_default()
                .apply(op),
            None => self.accounts.apply(op),
        }
    }
}

/// The same shape as [`Data`], borrowed, for writing a snapshot without copying.
#[derive(Serialize)]
struct DataRef<'a> {
    devices: BTreeMap<&'a str, &'a DeviceData>,
    accounts: &'a Accounts,
}

struct DeviceSlot {
    writer: Mutex<()>,
    data: RwLock<DeviceData>,
    /// The data's version (see [`State::device_version`]): set from the state's counter when
    /// the slot is made and whenever its data changes, with `data`'s write lock held.
    version: AtomicU64,
}

impl DeviceSlot {
    fn new(data: DeviceData, version: u64) -> DeviceSlot {
        DeviceSlot {
            writer: Mutex::new(()),
            data: RwLock::new(data),
            version: AtomicU64::new(version),
        }
    }
}

pub struct State {
    devices: RwLock<HashMap<String, Arc<DeviceSlot>>>,
    accounts: Mutex<Accounts>,
    store: Store,
    hub: Arc<Hub>,
    gate: RwLock<()>,
    snapshotting: Mutex<()>,
    /// Gives every transaction its time.
    clock: Clock,
    /// The last version given to a thermostat's data: versions are never reused, even by a
    /// serial that is deleted and comes back.
    versions: AtomicU64,
}

impl State {
    /// Loads the store in `dir` and returns the state with a report of what was loaded.
    pub fn open(dir: &Path, hub: Arc<Hub>) -> Result<(State, LoadReport), StoreError> {
        let (store, data, report) = Store::open::<Data>(dir)?;
        let mut accounts = data.accounts;
        accounts
            .users
            .entry(DEFAULT_USER.to_string())
            .or_insert(User { created_ms: 0 });
        let devices = data
            .devices
            .into_iter()
            .enumerate()
            .map(|(i, (serial, d))| (serial, Arc::new(DeviceSlot::new(d, i as u64 + 1))))
            .collect::<HashMap<_, _>>();
        let versions = AtomicU64::new(devices.len() as u64);
        let state = State {
            devices: RwLock::new(devices),
            accounts: Mutex::new(accounts),
            store,
            hub,
            gate: RwLock::new(()),
            snapshotting: Mutex::new(()),
            clock: Clock::system(),
            versions,
        };
        Ok((state, report))
    }

    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    /// The same state, its transactions timed by `clock` (the system clock by default).
    pub fn with_clock(self, clock: Clock) -> State {
        State { clock, ..self }
    }

    /// Reads a known thermostat's data; `None` for a serial the server has never seen.
    pub fn read_device<R>(&self, serial: &str, f: impl FnOnce(&DeviceData) -> R) -> Option<R> {
        self.read_device_versioned(serial, |data, _| f(data))
    }

    /// The version of a known thermostat's data: it changes whenever the data does, and no
    /// other data ever had it, so anything derived from the data can be kept until it moves.
    /// `None` for a serial the server has never seen.
    pub fn device_version(&self, serial: &str) -> Option<u64> {
        self.read_device_versioned(serial, |_, version| version)
    }

    /// [`State::read_device`], with the data's [`State::device_version`].
    pub fn read_device_versioned<R>(
        &self,
        serial: &str,
        f: impl FnOnce(&DeviceData, u64) -> R,
    ) -> Option<R> {
        let slot = self.devices.read().get(serial).cloned()?;
        let data = slot.data.read();
        // Written under the write lock held by any change: this read lock orders it.
        let version = slot.version.load(Ordering::Relaxed);
        data.exists().then(|| f(&data, version))
    }

    fn next_version(&self) -> u64 {
        self.versions.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn device_exists(&self, serial: &str) -> bool {
        self.read_device(serial, |_| ()).is_some()
    }

    /// The serial of a known thermostat named by its serial (any case) or by its stable id
    /// (the UUID made when it first appeared).
    pub fn find_device(&self, id: &str) -> Option<String> {
        let upper = id.to_ascii_uppercase();
        if self.device_exists(&upper) {
            return Some(upper);
        }
        let devices = self.devices.read();
        devices
            .iter()
            .find(|(_, slot)| {
                let data = slot.data.read();
                data.exists()
                    && data
                        .meta
                        .as_ref()
                        .is_some_and(|m| m.id.eq_ignore_ascii_case(id))
            })
            .map(|(serial, _)| serial.clone())
    }

    /// Serials of every known thermostat, sorted.
    pub fn serials(&self) -> Vec<String> {
        let devices = self.devices.read();
        let mut out: Vec<String> = devices
            .iter()
            .filter(|(_, slot)| slot.data.read().exists())
            .map(|(s, _)| s.clone())
            .collect();
        out.sort();
        out
    }

    /// Reads accounts (users, owners, entry keys).
    pub fn accounts<R>(&self, f: impl FnOnce(&Accounts) -> R) -> R {
        f(&self.accounts.lock())
    }

    /// The one way to change a thermostat's state. `f` describes the change; if it returns
    /// `Ok` and recorded anything, the change is journaled (durable before this returns),
    /// installed, and published with the given origin. If `f` fails, nothing changes.
    pub fn update_device<R, E>(
        &self,
        serial: &str,
        origin: Origin,
        f: impl FnOnce(&mut DeviceTxn<'_>) -> Result<R, E>,
    ) -> Result<R, E>
    where
        E: From<StoreError>,
    {
        let slot = self.slot(serial);
        let _writer = slot.writer.lock();
        let computed = {
            let data = slot.data.read();
            let mut txn = DeviceTxn::new(serial, &data, self.clock.now_ms());
            f(&mut txn).map(|r| (r, txn.finish()))
        };
        let (result, (ops, changes)) = match computed {
            Ok(done) => done,
            Err(e) => {
                self.drop_slot_if_unused(serial, &slot);
                return Err(e);
            }
        };
        if ops.is_empty() {
            self.drop_slot_if_unused(serial, &slot);
            return Ok(result);
        }
        {
            let _gate = self.gate.read();
            if let Err(e) = self.store.append(&ops) {
                self.drop_slot_if_unused(serial, &slot);
                return Err(e.into());
            }
            let mut data = slot.data.write();
            for op in &ops {
                data.apply(op);
            }
            slot.version.store(self.next_version(), Ordering::Relaxed);
        }
        if !changes.is_empty() {
            let push = origin
                .pushes()
                .then(|| {
                    let data = slot.data.read();
                    let objects: Vec<_> = changes
                        .iter()
                        .filter_map(|c| {
                            let (key, bucket) = data.buckets.get_key_value(&c.key)?;
                            Some(WireObject::with_value(key, bucket))
                        })
                        .collect();
                    // A deletion leaves nothing to push.
                    (!objects.is_empty()).then(|| WireObjects { objects }.to_bytes())
                })
                .flatten();
            // Published while this serial's writer lock is held, so events leave in commit order.
            self.hub.publish(serial, origin, push, changes);
        }
        Ok(result)
    }

    /// Pushes every bucket of a known thermostat, unchanged, to its held subscribes (a nudge
    /// after it missed something). Returns how many subscribes it was queued for, or `None`
    /// for a serial the server has never seen.
    pub fn repush(&self, serial: &str) -> Option<usize> {
        let slot = self.devices.read().get(serial).cloned()?;
        // The writer lock keeps this push in order with committed changes.
        let _writer = slot.writer.lock();
        let bytes = {
            let data = slot.data.read();
            if !data.exists() {
                return None;
            }
            let objects = data
                .buckets
                .iter()
                .map(|(k, b)| WireObject::with_value(k, b))
                .collect();
            WireObjects { objects }.to_bytes()
        };
        Some(
            self.hub
                .publish(serial, Origin::Server, Some(bytes), Vec::new()),
        )
    }

    /// The one way to change accounts; same guarantees as [`State::update_device`].
    pub fn update_accounts<R, E>(
        &self,
        f: impl FnOnce(&mut AccountsTxn) -> Result<R, E>,
    ) -> Result<R, E>
    where
        E: From<StoreError>,
    {
        let _gate = self.gate.read();
        let mut accounts = self.accounts.lock();
        let mut txn = AccountsTxn::new(&accounts, self.clock.now_ms());
        let result = f(&mut txn)?;
        let (draft, ops) = txn.finish();
        if !ops.is_empty() {
            self.store.append(&ops)?;
            *accounts = draft;
        }
        Ok(result)
    }

    /// The journal's fsync latency since open (see [`Store::fsync_latency`]).
    pub fn fsync_latency(&self) -> crate::metrics::HistogramSnapshot {
        self.store.fsync_latency()
    }

    /// Bytes of the store's journal and snapshot on disk.
    pub fn store_bytes(&self) -> u64 {
        self.store.size_bytes()
    }

    /// True when enough journal has accumulated for [`State::snapshot`] to be worth it.
    pub fn snapshot_due(&self) -> bool {
        self.store.snapshot_due()
    }

    /// Whether a stopping server should write the final snapshot
    /// ([`crate::store::Store::snapshot_due_at_stop`]), and the journal's and the last
    /// snapshot's sizes in bytes, for its log.
    pub fn snapshot_due_at_stop(&self) -> (bool, u64, u64) {
        let (journal, snapshot) = self.store.journal_beside_snapshot();
        (self.store.snapshot_due_at_stop(), journal, snapshot)
    }

    /// Writes the whole state to `state.json` and drops the journal it covers.
    pub fn snapshot(&self) -> Result<(), StoreError> {
        let _one_at_a_time = self.snapshotting.lock();
        let (bytes, keep_from) = {
            let _gate = self.gate.write();
            let devices = self.devices.read();
            let guards: Vec<_> = devices
                .iter()
                .map(|(s, slot)| (s.as_str(), slot.data.read()))
                .collect();
            let accounts = self.accounts.lock();
            let (last_seq, keep_from) = self.store.rotate()?;
            let data = DataRef {
                devices: guards
                    .iter()
                    .filter(|(_, d)| d.exists())
                    .map(|(s, d)| (*s, &**d))
                    .collect(),
                accounts: &accounts,
            };
            let bytes = snapshot::encode(&data, last_seq, clock::now_ms()).map_err(|e| {
                StoreError::WriteFailed {
                    path: self.store.dir().join(snapshot::FILE),
                    detail: e.to_string(),
                }
            })?;
            (bytes, keep_from)
        };
        self.store.write_snapshot(&bytes, keep_from)
    }

    fn slot(&self, serial: &str) -> Arc<DeviceSlot> {
        if let Some(slot) = self.devices.read().get(serial) {
            return Arc::clone(slot);
        }
        let mut devices = self.devices.write();
        Arc::clone(devices.entry(serial.to_string()).or_insert_with(|| {
            Arc::new(DeviceSlot::new(DeviceData::default(), self.next_version()))
        }))
    }

    /// Removes the slot of a serial that has no data and that nobody else is using, so failed
    /// or empty writes for unknown serials leave nothing behind.
    fn drop_slot_if_unused(&self, serial: &str, slot: &DeviceSlot) {
        // The common case (a known thermostat) must not take the map's write lock.
        if slot.data.read().exists() {
            return;
        }
        let mut devices = self.devices.write();
        if let Some(slot) = devices.get(serial) {
            // The map's reference plus the caller's: nobody else holds this slot.
            if Arc::strong_count(slot) <= 2 && !slot.data.read().exists() {
                devices.remove(serial);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No hearth writes `delete_device` any more (a removed thermostat keeps operating), but
    /// journals written by one that did still load: the thermostat's buckets and metadata
    /// before the operation are gone, what came after it stays.
    #[test]
    fn a_journal_with_an_old_delete_device_still_loads() {
        let dir = std::env::temp_dir().join(format!("hearth-state-delete-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        crate::store::files::create_private_dir(&dir).unwrap();
        let merge = |seq: u64, serial: &str, n: i64| {
            format!(
                r#"{{"seq":{seq},"ops":[{{"op":"merge","serial":"{serial}","key":"shared.{serial}","rev":{n},"ts":{n},"updated":{n},"set":{{"n":{n}}}}}]}}"#
            )
        };
        let lines = [
            merge(1, "S1", 1),
            merge(2, "S2", 1),
            r#"{"seq":3,"ops":[{"op":"delete_device","serial":"S1"}]}"#.to_string(),
            merge(4, "S2", 2),
        ];
        std::fs::write(
            crate::store::journal::segment_path(&dir, 1),
            lines.join("\n") + "\n",
        )
        .unwrap();
        let (state, _) = State::open(&dir, Arc::new(Hub::new())).unwrap();
        let buckets = |serial: &str| {
            state
                .read_device(serial, |d| d.buckets.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default()
        };
        assert!(buckets("S1").is_empty());
        assert_eq!(buckets("S2"), ["shared.S2"]);
        let n = state.read_device("S2", |d| {
            d.buckets["shared.S2"].value.to_map().get("n").cloned()
        });
        assert_eq!(n, Some(Some(serde_json::json!(2))));
        drop(state);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// What a stop's snapshot costs beside the next start's replay of the journal it would fold,
/// printed, not asserted (a measurement, not a test; `Store::snapshot_due_at_stop` rests on
/// it): `cargo test --release --lib state::measure -- --ignored --nocapture`.
#[cfg(test)]
mod measure {
    use super::*;
    use crate::util::JsonMap;
    use crate::util::clock::Stopwatch;
    use serde_json::json;

    #[test]
    #[ignore = "a measurement: run it with --release --ignored --nocapture"]
    fn snapshot_against_replay() {
        let dir = std::env::temp_dir().join(format!("hearth-state-measure-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let open = || State::open(&dir, Arc::new(Hub::new())).unwrap();
        let serials: Vec<String> = (0..2000).map(|n| format!("02AA01AC{n:08}")).collect();
        // Each thermostat's device bucket about 3 KB, as a Gen2's is once booted.
        let device: JsonMap = (0..100)
            .map(|i| {
                (
                    format!("field_name_{i:03}"),
                    json!(format!("value-{i}-abcdefgh")),
                )
            })
            .collect();
        let state = open().0;
        for serial in &serials {
            let _: Result<(), StoreError> = state.update_device(serial, Origin::Device, |txn| {
                txn.merge(&format!("device.{serial}"), &device, Stamp::IfChanged);
                Ok(())
            });
        }
        let took = Stopwatch::start();
        state.snapshot().unwrap();
        let (_, snapshot_bytes) = state.store.journal_beside_snapshot();
        let write_ms = took.elapsed().as_secs_f64() * 1000.0;
        // A journal after it: one small change to each thermostat, three times.
        for n in 0..3 {
            for serial in &serials {
                let _: Result<(), StoreError> =
                    state.update_device(serial, Origin::Device, |txn| {
                        let set: JsonMap = [(
                            "current_temperature".to_string(),
                            json!(20.0 + n as f64 / 10.0),
                        )]
                        .into_iter()
                        .collect();
                        txn.merge(&format!("shared.{serial}"), &set, Stamp::IfChanged);
                        Ok(())
                    });
            }
        }
        let (journal_bytes, _) = state.store.journal_beside_snapshot();
        drop(state);
        let took = Stopwatch::start();
        let (state, report) = open();
        let with_journal_ms = took.elapsed().as_secs_f64() * 1000.0;
        state.snapshot().unwrap();
        drop(state);
        let took = Stopwatch::start();
        let _ = open();
        let snapshot_only_ms = took.elapsed().as_secs_f64() * 1000.0;
        println!(
            "{} thermostats: a {snapshot_bytes}-byte snapshot written in {write_ms:.1} ms; \
             a start loading it took {snapshot_only_ms:.1} ms, and {with_journal_ms:.1} ms with \
             {} records ({journal_bytes} bytes) of journal to replay",
            serials.len(),
            report.replayed_records
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
