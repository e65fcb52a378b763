//! The one commit: an intent planned against the thermostat's state as its transaction sees it
//! and written through the state's one mutation path as a server-side change, so it is durable
//! before anyone hears of it and then pushed at once to every held subscribe.

use super::plan::{BucketKind, plan};
use super::refusal::{Error, Refusal};
use super::taken;
use super::view::View;
use super::{Intent, ScheduleRevision};
use crate::accounts::{Viewer, Visibility};
use crate::hub::Origin;
use crate::state::{Stamp, State};
use crate::util::JsonMap;

/// One bucket write as it was made.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    pub bucket: BucketKind,
    pub key: String,
    pub values: JsonMap,
    pub revision: i64,
    pub timestamp: i64,
}

/// Every write of a commit, the intent's own bucket first.
#[derive(Clone, Debug, PartialEq)]
pub struct Committed {
    pub writes: Vec<Applied>,
}

impl Committed {
    /// The write to `bucket`, else the intent's own one.
    pub fn write_to(&self, bucket: BucketKind) -> Option<&Applied> {
        self.writes
            .iter()
            .find(|w| w.bucket == bucket)
            .or_else(|| self.writes.first())
    }
}

/// Whether `serial` takes commands from `viewer` now: it exists, and the visibility rule lets
/// the viewer command it ([`crate::accounts::visibility`]: nobody commands a thermostat nobody owns,
/// unclaimed with pairing required or released). A surface checks this before it reads a
/// command's value, so an unknown thermostat is a 404 whatever the value; [`commit`] checks it
/// again.
pub fn admit(
    state: &State,
    serial: &str,
    visibility: Visibility,
    viewer: Viewer<'_>,
) -> Result<(), Error> {
    if !state.device_exists(serial) {
        return Err(Error::NotFound);
    }
    if !visibility.sight(state, serial, viewer).commandable() {
        return Err(Error::NotClaimed);
    }
    Ok(())
}

/// Carries out `intent` on the thermostat `serial` for `viewer` as one durable, pushed change,
/// if the visibility rule lets the viewer command it ([`admit`]): a person's change, through
/// whichever surface.
pub fn commit(
    state: &State,
    serial: &str,
    intent: &Intent,
    visibility: Visibility,
    viewer: Viewer<'_>,
) -> Result<Committed, Error> {
    commit_from(state, serial, intent, visibility, viewer, Origin::Server)
}

/// [`commit`], made by `origin` (the presence rule commits its Home and Away as
/// [`Origin::Presence`]; every surface sees the origin in the event stream and `last_change`).
pub fn commit_from(
    state: &State,
    serial: &str,
    intent: &Intent,
    visibility: Visibility,
    viewer: Viewer<'_>,
    origin: Origin,
) -> Result<Committed, Error> {
    let (owner, refused) = state.accounts(|a| {
        let owner = a.owner_of(serial).map(|o| o.user.clone());
        (owner, !visibility.of(a, serial, viewer).commandable())
    });
    if refused && state.device_exists(serial) {
        return Err(Error::NotClaimed);
    }
    state.update_device(serial, origin, |txn| {
        // Checked inside the transaction, so a thermostat deleted meanwhile is not recreated.
        if !txn.exists() {
            return Err(Error::NotFound);
        }
        let view = View::of_txn(txn, owner.as_deref());
        if let Intent::Schedule { only_over, .. } = intent {
            let current = view.schedule_revision;
            let unchanged = match only_over {
                ScheduleRevision::Any => true,
                ScheduleRevision::None => current.is_none(),
                ScheduleRevision::Is(r) => current == Some(*r),
            };
            if !unchanged {
                return Err(Error::ScheduleChanged(current));
            }
        }
        let writes = plan(intent, &view, txn.now_ms())?;
        let mut applied = Vec::with_capacity(writes.len());
        for write in writes {
            let key = view.key(write.bucket);
            let written = if write.replace {
                txn.checked_replace(&key, write.values.clone(), Stamp::Always)
            } else {
                txn.checked_merge(&key, &write.values, Stamp::Always)
            }
            .map_err(Refusal::TooLarge)?;
            applied.push(Applied {
                bucket: write.bucket,
                key,
                values: write.values,
                revision: written.revision,
                timestamp: written.timestamp,
            });
        }
        let committed = Committed { writes: applied };
        if !committed.writes.is_empty() {
            txn.set_last_change(taken::record(intent, &committed, txn.now_ms(), origin));
        }
        Ok(committed)
    })
}
