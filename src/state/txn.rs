//! Transactions: how a change is described before it is made durable. A transaction reads the
//! current state, records journal operations, and sees its own pending changes; nothing is
//! visible to anyone else until the state commits it (see `State::update_device`).

use indexmap::IndexMap;

use super::accounts::Accounts;
use super::bucket::Bucket;
use super::device::{DeviceData, DeviceMeta, LastChange};
use super::fields::Fields;
use super::limits::{self, TooLarge};
use super::ops::{Op, apply_to_bucket};
use crate::hub::BucketChange;
use crate::util::JsonMap;

/// How a write sets revision and timestamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamp {
    /// Server-side changes: revision + 1 and timestamp now, even when nothing changed, so the
    /// thermostat always receives them.
    Always,
    /// Thermostat writes: revision + 1 and timestamp now only when the value changed, so a
    /// repeated PUT does not look like news.
    IfChanged,
    /// Stored with exactly this revision and timestamp (the thermostat's own newer copy, or an
    /// acknowledgement that must not look like news).
    Exactly { revision: i64, timestamp: i64 },
}

/// The outcome of one bucket write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    pub revision: i64,
    pub timestamp: i64,
    /// Whether anything was recorded (value, revision or timestamp changed).
    pub recorded: bool,
}

pub struct DeviceTxn<'a> {
    serial: &'a str,
    base: &'a DeviceData,
    pending: IndexMap<String, Bucket>,
    meta: Option<DeviceMeta>,
    last_change: Option<LastChange>,
    ops: Vec<Op>,
    changes: Vec<BucketChange>,
    now: i64,
}

impl<'a> DeviceTxn<'a> {
    pub(super) fn new(serial: &'a str, base: &'a DeviceData, now: i64) -> DeviceTxn<'a> {
        DeviceTxn {
            serial,
            base,
            pending: IndexMap::new(),
            meta: None,
            last_change: None,
            ops: Vec::new(),
            changes: Vec::new(),
            now,
        }
    }

    pub fn serial(&self) -> &str {
        self.serial
    }

    /// The transaction's clock (milliseconds): every write in it gets this timestamp.
    pub fn now_ms(&self) -> i64 {
        self.now
    }

    /// A bucket as this transaction sees it (its own writes included).
    pub fn bucket(&self, key: &str) -> Option<&Bucket> {
        self.pending.get(key).or_else(|| self.base.buckets.get(key))
    }

    /// Keys of every bucket as this transaction sees it.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.base.buckets.keys().cloned().collect();
        for k in self.pending.keys() {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
        keys
    }

    /// Whether the thermostat is known (has buckets or metadata) as this transaction sees it.
    pub fn exists(&self) -> bool {
        !self.pending.is_empty() || self.meta.is_some() || self.base.exists()
    }

    pub fn meta(&self) -> Option<&DeviceMeta> {
        self.meta.as_ref().or(self.base.meta.as_ref())
    }

    pub fn set_meta(&mut self, meta: DeviceMeta) {
        if self.meta() == Some(&meta) {
            return;
        }
        self.ops.push(Op::DeviceMeta {
            serial: self.serial.to_string(),
            meta: meta.clone(),
        });
        self.meta = Some(meta);
    }

    /// The latest change a person made to the thermostat, as this transaction sees it.
    pub fn last_change(&self) -> Option<&LastChange> {
        self.last_change.as_ref().or(self.base.last_change.as_ref())
    }

    /// Records the latest change (a new one, or the same one now taken). It is reported to the
    /// change watchers as a change of the object `change.<serial>` (which no thermostat is
    /// sent: it is not a bucket), so the event stream, MQTT and the alerts hear of it even
    /// when no bucket changed.
    pub fn set_last_change(&mut self, change: LastChange) {
        if self.last_change() == Some(&change) {
            return;
        }
        self.ops.push(Op::LastChange {
            serial: self.serial.to_string(),
            change: change.clone(),
        });
        let key = change_key(self.serial);
        self.changes.retain(|c| c.key != key);
        self.changes.push(BucketChange {
            key,
            revision: 0,
            timestamp: change.taken_ms.unwrap_or(change.sent_ms),
            changed: vec![
                if change.taken_ms.is_some() {
                    "taken"
                } else {
                    "sent"
                }
                .to_string(),
            ],
        });
        self.last_change = Some(change);
    }

    /// [`DeviceTxn::merge`] for a write from outside (a thermostat, a command): refused, with
    /// nothing written, if it would store more than a thermostat may hold (see
    /// [`super::limits`]).
    pub fn checked_merge(
        &mut self,
        key: &str,
        delta: &JsonMap,
        stamp: Stamp,
    ) -> Result<Written, TooLarge> {
        self.check(key, delta, false)?;
        Ok(self.merge(key, delta, stamp))
    }

    /// [`DeviceTxn::replace`], checked as [`DeviceTxn::checked_merge`] is.
    pub fn checked_replace(
        &mut self,
        key: &str,
        value: JsonMap,
        stamp: Stamp,
    ) -> Result<Written, TooLarge> {
        self.check(key, &value, true)?;
        Ok(self.replace(key, value, stamp))
    }

    fn check(&self, key: &str, delta: &JsonMap, replace: bool) -> Result<(), TooLarge> {
        let target = limits::Target {
            key,
            existing: self.bucket(key).map(|b| &b.value),
            buckets: &|| self.keys().len(),
        };
        limits::check(&target, delta, replace)
    }

    /// Shallow-merges `delta` into the bucket (creating it if missing) and stamps it.
    pub fn merge(&mut self, key: &str, delta: &JsonMap, stamp: Stamp) -> Written {
        let previous = self.bucket(key).map(|b| Fields::of(&b.value));
        let set: JsonMap = delta
            .iter()
            .filter(|(k, v)| previous.as_ref().and_then(|b| b.get(k)) != Some(*v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let changed: Vec<String> = set.keys().cloned().collect();
        let value_changed = previous.is_none() || !set.is_empty();
        self.write(
            key,
            stamp,
            value_changed,
            changed,
            |serial, rev, ts, updated| Op::Merge {
                serial,
                key: key.to_string(),
                rev,
                ts,
                updated,
                set,
            },
        )
    }

    /// Replaces the bucket's whole value (creating it if missing) and stamps it.
    pub fn replace(&mut self, key: &str, value: JsonMap, stamp: Stamp) -> Written {
        let previous = self.bucket(key).map(|b| b.value.to_map());
        let previous = previous.as_ref();
        let mut changed: Vec<String> = value
            .iter()
            .filter(|(k, v)| previous.and_then(|p| p.get(*k)) != Some(*v))
            .map(|(k, _)| k.clone())
            .collect();
        if let Some(p) = previous {
            changed.extend(p.keys().filter(|k| !value.contains_key(*k)).cloned());
        }
        let value_changed = previous != Some(&value);
        self.write(
            key,
            stamp,
            value_changed,
            changed,
            |serial, rev, ts, updated| Op::Replace {
                serial,
                key: key.to_string(),
                rev,
                ts,
                updated,
                value,
            },
        )
    }

    /// Stamps and records one bucket write built by `op(serial, rev, ts, updated)`.
    fn write(
        &mut self,
        key: &str,
        stamp: Stamp,
        value_changed: bool,
        mut changed: Vec<String>,
        op: impl FnOnce(String, i64, i64, i64) -> Op,
    ) -> Written {
        let previous = self.bucket(key);
        let (old_rev, old_ts) = previous.map_or((0, 0), |b| (b.revision, b.timestamp));
        // A new stamp never goes back in time for its bucket (a thermostat's copy may carry a
        // timestamp from a fast clock, or our clock may have stepped back): an older timestamp
        // would make the thermostat ignore the change. Revisions come from the network too, so
        // they saturate rather than overflow.
        let fresh = || {
            (
                old_rev.saturating_add(1),
                self.now.max(old_ts.saturating_add(1)),
            )
        };
        let (rev, ts) = match stamp {
            Stamp::Always => fresh(),
            Stamp::IfChanged if value_changed => fresh(),
            Stamp::IfChanged => (old_rev, old_ts),
            Stamp::Exactly {
                revision,
                timestamp,
            } => (revision, timestamp),
        };
        if !value_changed && (rev, ts) == (old_rev, old_ts) {
            return Written {
                revision: rev,
                timestamp: ts,
                recorded: false,
            };
        }
        let op = op(self.serial.to_string(), rev, ts, self.now);
        if let Some(next) = apply_to_bucket(previous, &op) {
            self.pending.insert(key.to_string(), next);
        }
        self.ops.push(op);
        // A bucket written twice in one transaction reports every field either write changed.
        if let Some(i) = self.changes.iter().position(|c| c.key == key) {
            let earlier = self.changes.remove(i);
            let mut all = earlier.changed;
            all.retain(|f| !changed.contains(f));
            all.append(&mut changed);
            changed = all;
        }
        self.changes.push(BucketChange {
            key: key.to_string(),
            revision: rev,
            timestamp: ts,
            changed,
        });
        Written {
            revision: rev,
            timestamp: ts,
            recorded: true,
        }
    }

    /// The operations to make durable, and the changes to publish: the buckets' in the order
    /// they were written, then the latest change's (`change.<serial>`), so a watcher hears of a
    /// value before it hears it was sent or taken.
    pub(super) fn finish(mut self) -> (Vec<Op>, Vec<BucketChange>) {
        let key = change_key(self.serial);
        if let Some(i) = self.changes.iter().position(|c| c.key == key) {
            let change = self.changes.remove(i);
            self.changes.push(change);
        }
        (self.ops, self.changes)
    }
}

/// The object key under which a change to a thermostat's [`LastChange`] reaches the change
/// watchers.
pub fn change_key(serial: &str) -> String {
    format!("change.{serial}")
}

/// A change to accounts (users, owners, entry keys), worked on a draft copy.
pub struct AccountsTxn {
    draft: Accounts,
    ops: Vec<Op>,
    now: i64,
}

impl AccountsTxn {
    pub(super) fn new(current: &Accounts, now: i64) -> AccountsTxn {
        AccountsTxn {
            draft: current.clone(),
            ops: Vec::new(),
            now,
        }
    }

    pub fn accounts(&self) -> &Accounts {
        &self.draft
    }

    pub fn now_ms(&self) -> i64 {
        self.now
    }

    /// Records an account operation (device operations do not belong here).
    pub fn push(&mut self, op: Op) {
        debug_assert!(op.device_serial().is_none());
        self.draft.apply(&op);
        self.ops.push(op);
    }

    pub(super) fn finish(self) -> (Accounts, Vec<Op>) {
        (self.draft, self.ops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Compact;
    use serde_json::json;

    fn map(v: serde_json::Value) -> JsonMap {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn if_changed_keeps_revision_and_timestamp_for_identical_values() {
        let mut base = DeviceData::default();
        base.buckets.insert(
            "device.S".into(),
            Bucket {
                revision: 4,
                timestamp: 100,
                updated_at: 100,
                value: Compact::from_map(&map(json!({"a": 1}))),
            },
        );
        let mut t = DeviceTxn::new("S", &base, 200);
        let w = t.merge("device.S", &map(json!({"a": 1})), Stamp::IfChanged);
        assert_eq!((w.revision, w.timestamp, w.recorded), (4, 100, false));
        let w = t.merge("device.S", &map(json!({"a": 2, "b": 3})), Stamp::IfChanged);
        assert_eq!((w.revision, w.timestamp, w.recorded), (5, 200, true));
        let (ops, changes) = t.finish();
        assert_eq!(ops.len(), 1);
        assert_eq!(changes[0].changed, vec!["a".to_string(), "b".to_string()]);
    }

    #[test]
    fn always_bumps_even_without_a_change() {
        let base = DeviceData::default();
        let mut t = DeviceTxn::new("S", &base, 50);
        let w = t.merge("shared.S", &map(json!({"x": 1})), Stamp::Always);
        assert_eq!((w.revision, w.timestamp), (1, 50));
        let w = t.merge("shared.S", &map(json!({"x": 1})), Stamp::Always);
        // Same millisecond, still a newer timestamp: equal timestamps would read as "in sync".
        assert_eq!((w.revision, w.timestamp), (2, 51));
        assert_eq!(
            t.bucket("shared.S").unwrap().value.to_map(),
            map(json!({"x": 1}))
        );
    }

    #[test]
    fn revisions_saturate_and_timestamps_never_go_back() {
        let mut base = DeviceData::default();
        base.buckets.insert(
            "shared.S".into(),
            Bucket {
                revision: i64::MAX,
                timestamp: 5_000,
                updated_at: 0,
                value: Compact::from_map(&map(json!({"a": 1}))),
            },
        );
        // The stored copy is "from the future" relative to this transaction's clock.
        let mut t = DeviceTxn::new("S", &base, 1_000);
        let w = t.merge("shared.S", &map(json!({"a": 2})), Stamp::IfChanged);
        assert_eq!((w.revision, w.timestamp), (i64::MAX, 5_001));
        let w = t.merge("shared.S", &map(json!({"a": 3})), Stamp::Always);
        assert_eq!((w.revision, w.timestamp), (i64::MAX, 5_002));
    }

    #[test]
    fn a_bucket_written_twice_reports_every_changed_field() {
        let base = DeviceData::default();
        let mut t = DeviceTxn::new("S", &base, 10);
        t.merge("shared.S", &map(json!({"a": 1, "b": 1})), Stamp::IfChanged);
        t.merge("shared.S", &map(json!({"b": 2, "c": 3})), Stamp::IfChanged);
        let (ops, changes) = t.finish();
        assert_eq!(ops.len(), 2);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].changed, vec!["a", "b", "c"]);
    }

    #[test]
    fn replace_drops_missing_fields_and_reports_them() {
        let base = DeviceData::default();
        let mut t = DeviceTxn::new("S", &base, 10);
        t.merge(
            "schedule.S",
            &map(json!({"ver": 2, "days": {"0": {}}})),
            Stamp::Always,
        );
        let w = t.replace(
            "schedule.S",
            map(json!({"ver": 2, "name": "x"})),
            Stamp::Always,
        );
        assert_eq!((w.revision, w.timestamp), (2, 11));
        assert_eq!(
            t.bucket("schedule.S").unwrap().value.to_map(),
            map(json!({"ver": 2, "name": "x"}))
        );
        let (_, changes) = t.finish();
        assert_eq!(changes[0].changed, vec!["ver", "name", "days"]);
    }

    #[test]
    fn exactly_with_same_stamp_and_value_records_nothing() {
        let mut base = DeviceData::default();
        base.buckets.insert(
            "shared.S".into(),
            Bucket {
                revision: 2,
                timestamp: 9,
                updated_at: 9,
                value: Compact::from_map(&map(json!({"target_change_pending": true}))),
            },
        );
        let mut t = DeviceTxn::new("S", &base, 77);
        let stamp = Stamp::Exactly {
            revision: 2,
            timestamp: 9,
        };
        let w = t.merge(
            "shared.S",
            &map(json!({"target_change_pending": true})),
            stamp,
        );
        assert!(!w.recorded);
        let w = t.merge(
            "shared.S",
            &map(json!({"target_change_pending": false})),
            stamp,
        );
        assert_eq!((w.revision, w.timestamp, w.recorded), (2, 9, true));
    }
}
