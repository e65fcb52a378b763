//! What paired controllers hear of unasked: [`Attributes::watch`](super::Attributes::watch)
//! signals when something they see may have changed, and [`changed`] computes each
//! connection's EVENT body from what it subscribed to and what it was last sent.
//!
//! Signals come from the hub's change events (a thermostat's buckets: any surface's writes and
//! the thermostat's own reports, so a `/command` reaches controllers at once), and from the set
//! of listed thermostats changing. Adding, removing or claiming a thermostat changes accounts,
//! which the hub does not carry, so one thread also looks at that set every [`LOOK_EVERY`]
//! (a cheap look: the serials and the accounts' owners), and at once when a serial it has not
//! seen reports.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::{Arc, Weak};
use std::thread;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, TrySendError, bounded, select};
use parking_lot::Mutex;
use serde_json::json;

use super::accessories;
use super::bridge::{Accessories, Shared};
use super::{Sent, Subscriptions};
use crate::hap::Identity;
use crate::hub::{ChangeEvent, Hub};
use crate::util::clock::Stopwatch;

/// How often the set of listed thermostats is looked at.
pub const LOOK_EVERY: Duration = Duration::from_secs(2);
const STACK: usize = 128 * 1024;

/// The receivers [`Attributes::watch`](super::Attributes::watch) handed out. Each holds at
/// most one pending signal: a connection busy writing gets one wake-up for many changes, and
/// a committer never waits for a controller.
#[derive(Default)]
pub struct Watchers(Mutex<Vec<Sender<()>>>);

impl Watchers {
    pub fn subscribe(&self) -> Receiver<()> {
        let (tx, rx) = bounded(1);
        self.0.lock().push(tx);
        rx
    }

    /// Signals every receiver still held; forgets the dropped ones.
    pub fn notify(&self) {
        self.0
            .lock()
            .retain(|w| !matches!(w.try_send(()), Err(TrySendError::Disconnected(_))));
    }
}

/// The hub's changes a controller can see: a thermostat's `shared` and `device` buckets, and
/// the structure its away lives in; none while no controller is paired (none could be
/// listening), so a hearth nobody paired spends nothing per change on HomeKit (the set of
/// thermostats is still looked at every [`LOOK_EVERY`]).
pub fn interesting_changes(hub: &Hub, identity: Arc<Identity>) -> Receiver<Arc<ChangeEvent>> {
    hub.watch_if(Box::new(move |e: &ChangeEvent| {
        let key = e.change.key.as_str();
        ["shared.", "device.", "structure."]
            .iter()
            .any(|p| key.starts_with(p))
            && identity.is_paired()
    }))
}

/// Starts the thread that turns `changes` and changes of the listed set into signals; it ends
/// when `stop` disconnects (the bridge is dropped).
pub(super) fn forward(
    bridge: Weak<Shared>,
    changes: Receiver<Arc<ChangeEvent>>,
    stop: Receiver<()>,
) -> io::Result<thread::JoinHandle<()>> {
    let mut listed: Option<BTreeSet<String>> = None;
    let mut looked = Stopwatch::start();
    thread::Builder::new()
        .name("homekit-watch".into())
        .stack_size(STACK)
        .spawn(move || {
            loop {
                let event = select! {
                    recv(stop) -> _ => return,
                    recv(changes) -> got => match got {
                        Ok(e) => Some(e),
                        Err(_) => return,
                    },
                    default(LOOK_EVERY) => None,
                };
                let Some(shared) = bridge.upgrade() else {
                    return;
                };
                let newcomer = event
                    .as_ref()
                    .is_some_and(|e| listed.as_ref().is_some_and(|l| !l.contains(&e.serial)));
                let mut signal = event.is_some();
                if newcomer || listed.is_none() || looked.elapsed() >= LOOK_EVERY {
                    looked = Stopwatch::start();
                    let now: BTreeSet<String> = accessories::listed(shared.app.as_ref())
                        .into_iter()
                        .collect();
                    signal |= listed.as_ref().is_some_and(|l| *l != now);
                    listed = Some(now);
                }
                if signal {
                    shared.watchers.notify();
                }
            }
        })
}

/// The EVENT body for the subscribed characteristics whose values differ from `sent` (which
/// it updates), or `None` when none does. A characteristic whose accessory is gone is skipped:
/// the configuration number tells the controller to read the database again.
pub(super) fn changed(
    accessories: &mut Accessories<'_>,
    subscriptions: &Subscriptions,
    sent: &mut Sent,
) -> Option<Vec<u8>> {
    let mut by_aid: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for (aid, iid) in subscriptions {
        by_aid.entry(*aid).or_default().push(*iid);
    }
    let mut out = Vec::new();
    for (aid, iids) in by_aid {
        let Some(accessory) = accessories.get(aid) else {
            continue;
        };
        for iid in iids {
            let Some(c) = accessory.characteristic(iid) else {
                continue;
            };
            if sent.get(&(aid, iid)) != Some(&c.value) {
                sent.insert((aid, iid), c.value.clone());
                out.push(json!({"aid": aid, "iid": iid, "value": c.value}));
            }
        }
    }
    (!out.is_empty()).then(|| json!({"characteristics": out}).to_string().into_bytes())
}
