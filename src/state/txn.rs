//! Transactions: how a change is described before it is made durable. A transaction reads the
//! current state, records journal operations, and sees its own pending changes; nothing is
//! visible to anyone else until the state commits it (see `State::update_device`).

use indexmap::IndexMap;

use super::accounts::Accounts;
use super::bucket::Bucket;
use super::device::{DeviceData, DeviceMeta};
use super::ops::{Op, apply_to_bucket};
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

/// A summary of one committed bucket change, for pushes and the live event stream.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketChange {
    pub key: String,
    pub revision: i64,
    pub timestamp: i64,
    /// Names of the value fields whose values changed.
    pub changed: Vec<String>,
    pub deleted: bool,
}

pub struct DeviceTxn<'a> {
    serial: &'a str,
    base: &'a DeviceData,
    pending: IndexMap<String, Option<Bucket>>,
    meta: Option<DeviceMeta>,
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
        match self.pending.get(key) {
            Some(pending) => pending.as_ref(),
            None => self.base.buckets.get(key),
        }
    }

    pub fn meta(&self) -> Option<&DeviceMeta> {
        self.meta.as_ref().or(self.base.meta.as_ref())
    }

    /// Whether the serial is known (before or within this transaction).
    pub fn exists(&self) -> bool {
        self.meta().is_some()
            || self.pending.values().any(Option::is_some)
            || self
                .base
                .buckets
                .keys()
                .any(|k| !matches!(self.pending.get(k), Some(None)))
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

    /// Shallow-merges `delta` into the bucket (creating it if missing).
    pub fn merge(&mut self, key: &str, delta: &JsonMap, stamp: Stamp) -> Written {
        let previous = self.bucket(key);
        let set: JsonMap = delta
            .iter()
            .filter(|(k, v)| previous.and_then(|b| b.value.get(*k)) != Some(*v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let value_changed = previous.is_none() || !set.is_empty();
        let changed_fields = set.keys().cloned().collect();
        self.write(
            key,
            value_changed,
            changed_fields,
            stamp,
            |serial, key, rev, ts, updated| Op::Merge {
                serial,
                key,
                rev,
                ts,
                updated,
                set,
            },
        )
    }

    /// Replaces the bucket's whole value.
    pub fn replace(&mut self, key: &str, value: JsonMap, stamp: Stamp) -> Written {
        let previous = self.bucket(key);
        let value_changed = previous.map(|b| &b.value) != Some(&value);
        let changed_fields = changed_fields(previous.map(|b| &b.value), &value);
        self.write(
            key,
            value_changed,
            changed_fields,
            stamp,
            |serial, key, rev, ts, updated| Op::Replace {
                serial,
                key,
                rev,
                ts,
                updated,
                value,
            },
        )
    }

    pub fn delete(&mut self, key: &str) {
        if self.bucket(key).is_none() {
            return;
        }
        self.ops.push(Op::DeleteBucket {
            serial: self.serial.to_string(),
            key: key.to_string(),
        });
        self.pending.insert(key.to_string(), None);
        self.changes.push(BucketChange {
            key: key.to_string(),
            revision: 0,
            timestamp: 0,
            changed: Vec::new(),
            deleted: true,
        });
    }

    fn write(
        &mut self,
        key: &str,
        value_changed: bool,
        changed_fields: Vec<String>,
        stamp: Stamp,
        make: impl FnOnce(String, String, i64, i64, i64) -> Op,
    ) -> Written {
        let previous = self.bucket(key);
        let (old_rev, old_ts) = previous.map_or((0, 0), |b| (b.revision, b.timestamp));
        let (rev, ts) = match stamp {
            Stamp::Always => (old_rev + 1, self.now),
            Stamp::IfChanged if value_changed => (old_rev + 1, self.now),
            Stamp::IfChanged => (old_rev, old_ts),
            Stamp::Exactly {
                revision,
                timestamp,
            } => (revision, timestamp),
        };
        let recorded = value_changed || previous.is_none() || (rev, ts) != (old_rev, old_ts);
        if !recorded {
            return Written {
                revision: rev,
                timestamp: ts,
                recorded: false,
            };
        }
        let op = make(self.serial.to_string(), key.to_string(), rev, ts, self.now);
        let next = apply_to_bucket(previous, &op);
        self.pending.insert(key.to_string(), next);
        self.ops.push(op);
        self.changes.retain(|c| c.key != key);
        self.changes.push(BucketChange {
            key: key.to_string(),
            revision: rev,
            timestamp: ts,
            changed: changed_fields,
            deleted: false,
        });
        Written {
            revision: rev,
            timestamp: ts,
            recorded: true,
        }
    }

    pub(super) fn finish(self) -> (Vec<Op>, Vec<BucketChange>) {
        (self.ops, self.changes)
    }
}

/// Names of fields that differ between two values (added, changed or removed).
fn changed_fields(old: Option<&JsonMap>, new: &JsonMap) -> Vec<String> {
    let mut out: Vec<String> = new
        .iter()
        .filter(|(k, v)| old.and_then(|o| o.get(*k)) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect();
    if let Some(old) = old {
        out.extend(old.keys().filter(|k| !new.contains_key(*k)).cloned());
    }
    out
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
                value: map(json!({"a": 1})),
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
        assert_eq!((w.revision, w.timestamp), (2, 50));
        assert_eq!(t.bucket("shared.S").unwrap().value, map(json!({"x": 1})));
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
                value: map(json!({"target_change_pending": true})),
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
