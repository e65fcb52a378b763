//! Whether a thermostat has taken the latest change a person made to it: the one place that
//! decides what a change is called ([`kind`]), what of it the thermostat can confirm
//! ([`record`]) and what report of the thermostat confirms it ([`observe`]).
//!
//! What counts as taken, per kind of change:
//! - **setpoint** (a target, the heat-cool pair, with the mode when it switched with them): the
//!   thermostat's own report on its `shared` bucket, once it holds the pushed revision, either
//!   acknowledges the push (`target_change_pending: false`, which the firmware sends after it
//!   applied a pushed setpoint) or carries the new values; a report carrying other values (a
//!   reboot's upload of what it had) is not taken.
//! - **mode, fan, away and eco, schedule, settings, lock, name, a dismissed dialog**: the
//!   firmware applies these silently (it uploads a value only when it changes it itself), so
//!   nothing it reports says it took them: they are only ever **sent**, never claimed as taken,
//!   and never late.
//!
//! A change is sent when it is committed: pushed at once to the thermostat's held subscribe, or
//! answered to its next one.

use serde::Serialize;
use serde::ser::SerializeStruct;
use serde_json::Value;

use super::commit::Committed;
use super::intent::Intent;
use super::plan::BucketKind;
use crate::hub::Origin;
use crate::state::{ChangeKind, DeviceTxn, LastChange};
use crate::util::clock;

/// What the change `intent` is called on every surface.
pub fn kind(intent: &Intent) -> ChangeKind {
    match intent {
        Intent::Target { .. } | Intent::Range { .. } | Intent::ResumeSchedule(_) => {
            ChangeKind::Setpoint
        }
        Intent::Mode(_) => ChangeKind::Mode,
        Intent::Fan(_) => ChangeKind::Fan,
        Intent::Away(_) => ChangeKind::Away,
        Intent::EcoRange { .. } => ChangeKind::Eco,
        Intent::Schedule { .. } => ChangeKind::Schedule,
        Intent::FanRunTime(_) | Intent::ScheduleMode(_) | Intent::Settings(_) => {
            ChangeKind::Settings
        }
        Intent::Lock(_) => ChangeKind::Lock,
        Intent::Name(_) => ChangeKind::Name,
        Intent::DismissDialog => ChangeKind::Dialog,
    }
}

/// The record of `intent`, committed as `committed` at `now_ms`: what the thermostat's report
/// must carry for it to count as taken (a setpoint's values, pushed with
/// `target_change_pending: true`), nothing for a kind it never confirms.
pub fn record(intent: &Intent, committed: &Committed, now_ms: i64, origin: Origin) -> LastChange {
    let confirmable = committed.writes.iter().find(|w| {
        w.bucket == BucketKind::Shared && w.values.get(PENDING) == Some(&Value::Bool(true))
    });
    let (expect, revision) = confirmable.map_or_else(Default::default, |w| {
        let mut values = w.values.clone();
        values.remove(PENDING);
        (values, w.revision)
    });
    LastChange {
        kind: kind(intent),
        sent_ms: now_ms,
        expect,
        revision,
        taken_ms: None,
        origin,
    }
}

const PENDING: &str = "target_change_pending";

/// A report of the thermostat on its bucket `key` (a PUT's object, or a subscribe's): the
/// fields it carries, and the revision it says it holds, when it says. Marks the latest change
/// taken when the report confirms it (see the module comment).
pub fn observe(
    txn: &mut DeviceTxn<'_>,
    key: &str,
    reported: &crate::util::JsonMap,
    holds: Option<i64>,
) {
    let Some(change) = txn.last_change() else {
        return;
    };
    if change.taken_ms.is_some()
        || change.expect.is_empty()
        || key.strip_prefix("shared.") != Some(txn.serial())
        // An acknowledgement of an earlier push, sent before this one reached it.
        || holds.is_some_and(|r| r < change.revision)
    {
        return;
    }
    // Still pending on its side: it has the values, it has not applied them.
    if reported.get(PENDING) == Some(&Value::Bool(true)) {
        return;
    }
    let acknowledged = reported.get(PENDING) == Some(&Value::Bool(false));
    // Holding the pushed revision, its acknowledgement is enough, whatever values come with it
    // (rounded to its °F dial, or already moved on by its schedule or its dial).
    let holds_it = holds.is_some_and(|r| r >= change.revision);
    let mut carried = 0;
    for (field, want) in &change.expect {
        match reported.get(field) {
            None => {}
            Some(got) if same(want, got) => carried += 1,
            // It holds something else: not this change (yet), unless it says it took it.
            Some(_) if holds_it && acknowledged => {}
            Some(_) => return,
        }
    }
    if acknowledged || carried == change.expect.len() {
        let mut taken = change.clone();
        taken.taken_ms = Some(txn.now_ms());
        txn.set_last_change(taken);
    }
}

/// The same value as the thermostat reports it: numbers within [`REPORTED_C`] (it writes
/// five decimals of what it was sent, and a °F dial rounds to its whole degrees), anything
/// else exactly.
fn same(want: &Value, got: &Value) -> bool {
    match (want.as_f64(), got.as_f64()) {
        (Some(a), Some(b)) => (a - b).abs() <= REPORTED_C,
        _ => want == got,
    }
}

/// How far a reported setpoint may be from the one sent and still be it: half a °F and a
/// little, so a °F dial's rounding counts.
const REPORTED_C: f64 = 0.3;

/// Where the latest change stands, as every surface says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Taken {
    /// Sent, of a kind the thermostat never confirms.
    Sent,
    /// Sent, not confirmed yet.
    Waiting,
    /// Confirmed by the thermostat's own report at this time (ms).
    At(i64),
}

/// The latest change, as a [`super::Reading`] carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    pub kind: ChangeKind,
    pub sent_ms: i64,
    pub taken: Taken,
    /// Who made it: a person (`server`) or the presence rule (`presence`).
    pub origin: Origin,
}

impl Change {
    pub fn of(record: &LastChange) -> Change {
        Change {
            kind: record.kind,
            sent_ms: record.sent_ms,
            taken: match record.taken_ms {
                Some(at) => Taken::At(at),
                None if record.expect.is_empty() => Taken::Sent,
                None => Taken::Waiting,
            },
            origin: record.origin,
        }
    }

    /// `sent`, `waiting` or `taken`, as the wire says it.
    pub fn state(&self) -> &'static str {
        match self.taken {
            Taken::Sent => "sent",
            Taken::Waiting => "waiting",
            Taken::At(_) => "taken",
        }
    }

    pub fn taken_ms(&self) -> Option<i64> {
        match self.taken {
            Taken::At(at) => Some(at),
            Taken::Sent | Taken::Waiting => None,
        }
    }

    /// Since when it has been waiting for the thermostat, if it is.
    pub fn waiting_since(&self) -> Option<i64> {
        (self.taken == Taken::Waiting).then_some(self.sent_ms)
    }
}

/// The wire form every surface that shows it writes (`/status`'s and `/api/v1`'s
/// `last_change`, MQTT's `ha/last_change_json`): `{"kind", "state", "sent_at", "taken_at",
/// "origin"}`, times in ISO 8601 UTC, `taken_at` null until taken, `origin` `server` or
/// `presence`.
impl Serialize for Change {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_struct("Change", 5)?;
        out.serialize_field("kind", self.kind.as_str())?;
        out.serialize_field("state", self.state())?;
        out.serialize_field("sent_at", &clock::iso8601_ms(self.sent_ms))?;
        out.serialize_field("taken_at", &self.taken_ms().map(clock::iso8601_ms))?;
        out.serialize_field("origin", self.origin.as_str())?;
        out.end()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::hub::{Hub, Origin};
    use crate::state::State;
    use crate::store::StoreError;
    use crate::thermostat::commit::Applied;
    use crate::thermostat::intent::{SetpointMode, Step};
    use crate::util::JsonMap;

    fn map(v: Value) -> JsonMap {
        v.as_object().unwrap().clone()
    }

    fn setpoint(revision: i64) -> LastChange {
        LastChange {
            kind: ChangeKind::Setpoint,
            sent_ms: 1_000,
            expect: map(json!({"target_temperature": 22.5})),
            revision,
            taken_ms: None,
            origin: Origin::Server,
        }
    }

    /// A state holding `change` for `S`, and a way to report to it as the thermostat.
    struct Fixture {
        state: State,
        dir: std::path::PathBuf,
    }

    impl Fixture {
        fn new(change: LastChange) -> Fixture {
            let dir = std::env::temp_dir().join(format!(
                "hearth-taken-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            let (state, _) = State::open(&dir, Arc::new(Hub::new())).unwrap();
            state
                .update_device("S", Origin::Server, |txn| {
                    let setpoint = map(json!({"target_temperature": 22.5}));
                    txn.merge("shared.S", &setpoint, crate::state::Stamp::Always);
                    txn.set_last_change(change);
                    Ok::<_, StoreError>(())
                })
                .unwrap();
            Fixture { state, dir }
        }

        fn report(&self, key: &str, value: Value, holds: Option<i64>) -> Option<i64> {
            self.state
                .update_device("S", Origin::Device, |txn| {
                    observe(txn, key, &map(value), holds);
                    Ok::<_, StoreError>(())
                })
                .unwrap();
            self.state
                .read_device("S", |d| d.last_change.clone())
                .flatten()
                .and_then(|c| c.taken_ms)
        }
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    #[test]
    fn a_setpoint_expects_its_values_and_other_kinds_nothing() {
        let target = Intent::Target {
            celsius: 22.5,
            mode: SetpointMode::Unchanged,
            step: Step::Exact,
        };
        let write = |bucket, values: Value| Applied {
            bucket,
            key: String::new(),
            values: map(values),
            revision: 7,
            timestamp: 7,
        };
        let committed = Committed {
            writes: vec![write(
                BucketKind::Shared,
                json!({"target_temperature": 22.5, "target_change_pending": true}),
            )],
        };
        let r = record(&target, &committed, 5, Origin::Server);
        assert_eq!(r.kind, ChangeKind::Setpoint);
        assert_eq!(r.expect, map(json!({"target_temperature": 22.5})));
        assert_eq!((r.revision, r.sent_ms, r.taken_ms), (7, 5, None));
        assert_eq!(Change::of(&r).state(), "waiting");

        let mode = Intent::Mode(crate::thermostat::Mode::Cool);
        let committed = Committed {
            writes: vec![write(
                BucketKind::Shared,
                json!({"target_temperature_type": "cool"}),
            )],
        };
        let r = record(&mode, &committed, 5, Origin::Presence);
        assert_eq!(r.origin, Origin::Presence);
        assert_eq!(r.kind, ChangeKind::Mode);
        assert!(r.expect.is_empty());
        assert_eq!(Change::of(&r).state(), "sent");
        assert_eq!(Change::of(&r).waiting_since(), None);
    }

    #[test]
    fn the_acknowledgement_of_the_pushed_revision_takes_it() {
        let f = Fixture::new(setpoint(7));
        // Another bucket, or an acknowledgement of an older push, says nothing of this one.
        assert_eq!(
            f.report("device.S", json!({"target_change_pending": false}), Some(7)),
            None
        );
        assert_eq!(
            f.report("shared.S", json!({"target_change_pending": false}), Some(6)),
            None
        );
        assert!(
            f.report("shared.S", json!({"target_change_pending": false}), Some(7))
                .is_some()
        );
    }

    #[test]
    fn a_report_carrying_the_new_values_takes_it_and_other_values_do_not() {
        let f = Fixture::new(setpoint(7));
        // A reboot's upload of what it had: not taken, even with the flag cleared.
        assert_eq!(
            f.report(
                "shared.S",
                json!({"target_temperature": 20.0, "target_change_pending": false}),
                None
            ),
            None
        );
        assert_eq!(
            f.report("shared.S", json!({"current_temperature": 20.0}), None),
            None
        );
        // Five decimals of what it was sent.
        assert!(
            f.report("shared.S", json!({"target_temperature": 22.50000}), None)
                .is_some()
        );
    }

    #[test]
    fn an_acknowledgement_of_the_revision_takes_it_whatever_values_come_with_it() {
        let f = Fixture::new(setpoint(7));
        // Its schedule moved on in the same report: still the acknowledgement of this push.
        assert!(
            f.report(
                "shared.S",
                json!({"target_temperature": 17.0, "target_change_pending": false}),
                Some(7)
            )
            .is_some()
        );
    }

    #[test]
    fn values_still_pending_on_its_side_or_a_rounded_dial() {
        let f = Fixture::new(setpoint(7));
        assert_eq!(
            f.report(
                "shared.S",
                json!({"target_temperature": 22.5, "target_change_pending": true}),
                Some(7)
            ),
            None,
            "received, not applied"
        );
        // 72.5 °F shown as 73 °F: 22.78 °C.
        assert!(
            f.report("shared.S", json!({"target_temperature": 22.7778}), None)
                .is_some()
        );
    }

    #[test]
    fn a_kind_never_confirmed_is_never_taken() {
        let f = Fixture::new(LastChange {
            kind: ChangeKind::Mode,
            expect: JsonMap::new(),
            revision: 0,
            ..setpoint(0)
        });
        assert_eq!(
            f.report(
                "shared.S",
                json!({"target_temperature_type": "cool", "target_change_pending": false}),
                Some(9)
            ),
            None
        );
    }
}
