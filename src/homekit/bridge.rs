//! [`Bridge`]: the accessory side of the HomeKit surface, what the HAP transport asks through
//! [`Attributes`]. Reads come from the thermostat core's view of each thermostat, writes are
//! the core's intents committed as every surface commits them ([`fn@crate::thermostat::commit`]),
//! so clamping and refusals are the same as on `/command`; a refusal is answered with HAP's
//! status for that characteristic ([`super::status`]).

use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crossbeam_channel::Receiver;
use serde_json::{Value, json};

use super::Context;
use super::accessories::{self, Accessory, MAX_ACCESSORIES};
use super::aids::{Aids, BRIDGE_AID};
use super::characteristics::{self, Refused};
use super::events::{self, Watchers};
use super::requests::{ReadQuery, WriteItem};
use super::status::{self, status_of};
use super::{Address, Attributes, Reply, Sent, Subscriptions};
use crate::accounts::Viewer;
use crate::hap::Identity;
use crate::thermostat::{self, Intent};
use crate::util::JsonMap;

/// Most characteristics one write may carry: each value is a durable commit, so a body full of
/// them would hold the connection for seconds. A scene over every thermostat of a large home
/// (a few values each) stays well within it.
pub const MAX_WRITES: usize = 256;

/// hearth as a HomeKit bridge over the thermostats it serves.
pub struct Bridge {
    shared: Arc<Shared>,
    /// The watch thread: dropping the sender stops it, and the bridge's drop waits for it, so
    /// nothing of the server (its state, the data directory's lock) outlives a stop.
    watch: Option<(crossbeam_channel::Sender<()>, std::thread::JoinHandle<()>)>,
}

impl Drop for Bridge {
    fn drop(&mut self) {
        if let Some((stop, thread)) = self.watch.take() {
            drop(stop);
            let _ = thread.join();
        }
    }
}

pub(super) struct Shared {
    pub(super) app: Arc<dyn Context>,
    identity: Arc<Identity>,
    name: String,
    aids: Aids,
    pub(super) watchers: Watchers,
    /// The configuration number last counted, answered if counting it again fails.
    number: AtomicU32,
}

impl Bridge {
    /// The bridge named `name` (`HOMEKIT_NAME`). Reads the accessory ids kept in
    /// `DATA_DIR/homekit/` (an unreadable file is an error naming it) and starts the thread
    /// that turns the hub's changes into [`Attributes::watch`] signals (the bridge's drop
    /// stops it and waits for it).
    pub fn new(app: Arc<dyn Context>, identity: Arc<Identity>, name: String) -> io::Result<Bridge> {
        let aids = Aids::open(&app.config().homekit_dir())?;
        let changes = events::interesting_changes(app.state().hub(), Arc::clone(&identity));
        let shared = Arc::new(Shared {
            app,
            identity,
            name,
            aids,
            watchers: Watchers::default(),
            number: AtomicU32::new(1),
        });
        let (stop, stopped) = crossbeam_channel::bounded(0);
        let thread = events::forward(Arc::downgrade(&shared), changes, stopped)?;
        Ok(Bridge {
            shared,
            watch: Some((stop, thread)),
        })
    }

    /// The accessory id of a thermostat the database lists, if it has one.
    pub fn aid_of(&self, serial: &str) -> Option<u64> {
        self.shared
            .aids
            .of(
                &accessories::listed(self.shared.app.as_ref()),
                MAX_ACCESSORIES - 1,
            )
            .get(serial)
            .copied()
    }

    /// `GET /characteristics?{query}`, answering `ev=1` from this connection's
    /// `subscriptions`.
    fn read_for(&self, query: &str, subscriptions: &Subscriptions) -> Reply {
        let Some(q) = ReadQuery::parse(query) else {
            return error(400, status::INVALID_VALUE);
        };
        let mut cache = Accessories::new(&self.shared);
        let mut failed = false;
        let mut items = Vec::with_capacity(q.ids.len());
        for &(aid, iid) in &q.ids {
            let mut item = JsonMap::new();
            item.insert("aid".into(), json!(aid));
            item.insert("iid".into(), json!(iid));
            match cache.get(aid).and_then(|a| a.characteristic(iid)) {
                None => {
                    failed = true;
                    item.insert("status".into(), json!(status::NOT_FOUND));
                }
                Some(c) if !c.kind.readable() => {
                    failed = true;
                    item.insert("status".into(), json!(status::WRITE_ONLY));
                }
                Some(c) => {
                    item.insert("value".into(), c.value.clone());
                    if q.meta {
                        c.meta_into(&mut item);
                    }
                    if q.perms {
                        item.insert("perms".into(), json!(c.kind.perms()));
                    }
                    if q.hap_type {
                        item.insert("type".into(), json!(c.kind.hap_type()));
                    }
                    if q.ev {
                        item.insert("ev".into(), json!(subscriptions.contains(&(aid, iid))));
                    }
                }
            }
            items.push(item);
        }
        if failed {
            for item in &mut items {
                item.entry("status").or_insert(json!(status::OK));
            }
        }
        let body = json!({"characteristics": items});
        reply(if failed { 207 } else { 200 }, &body)
    }

    fn commit(&self, serial: &str, intent: &Intent) -> i64 {
        let app = &self.shared.app;
        match thermostat::commit(
            app.state(),
            serial,
            intent,
            app.visibility(),
            Viewer::HomeKit,
        ) {
            Ok(_) => status::OK,
            Err(e) => status_of(serial, &e),
        }
    }
}

/// The accessories one request looks at, each read once.
pub(super) struct Accessories<'a> {
    shared: &'a Shared,
    read: BTreeMap<u64, Option<Accessory>>,
}

impl<'a> Accessories<'a> {
    pub(super) fn new(shared: &'a Shared) -> Accessories<'a> {
        Accessories {
            shared,
            read: BTreeMap::new(),
        }
    }

    pub(super) fn get(&mut self, aid: u64) -> Option<&Accessory> {
        let shared = self.shared;
        self.read
            .entry(aid)
            .or_insert_with(|| shared.accessory(aid))
            .as_ref()
    }

    /// Reads `aid` again (after a write to it).
    fn forget(&mut self, aid: u64) {
        self.read.remove(&aid);
    }
}

impl Shared {
    fn bridge(&self) -> Accessory {
        accessories::bridge(&self.name, &self.identity.device_id())
    }

    fn thermostat(&self, aid: u64, serial: &str) -> Option<Accessory> {
        let reading = self.app.reading(serial)?;
        Some(super::thermostat::thermostat(aid, &reading))
    }

    /// The whole database: the bridge, then the listed thermostats by accessory id (at most
    /// HAP's limit for a bridge; the rest are left out, with a warning, and get no id until
    /// there is room).
    fn database(&self) -> Vec<Accessory> {
        let listed = accessories::listed(self.app.as_ref());
        let mut ids: Vec<(u64, String)> = self
            .aids
            .of(&listed, MAX_ACCESSORIES - 1)
            .into_iter()
            .map(|(serial, aid)| (aid, serial))
            .collect();
        ids.sort();
        if listed.len() >= MAX_ACCESSORIES {
            log::warn!(
                "HomeKit: a bridge holds at most {} thermostats; {} are left out",
                MAX_ACCESSORIES - 1,
                listed.len() + 1 - MAX_ACCESSORIES
            );
        }
        // Thermostats that had ids and come back to the list (adopted again) can make more
        // with ids than there is room for: the newest ids wait.
        ids.truncate(MAX_ACCESSORIES - 1);
        let mut all = vec![self.bridge()];
        all.extend(
            ids.iter()
                .filter_map(|(aid, serial)| self.thermostat(*aid, serial)),
        );
        all
    }

    /// One accessory, if the database lists it now.
    fn accessory(&self, aid: u64) -> Option<Accessory> {
        if aid == BRIDGE_AID {
            return Some(self.bridge());
        }
        let serial = self.aids.serial(aid)?;
        let sight = (self.app.visibility()).sight(self.app.state(), &serial, Viewer::HomeKit);
        if !sight.listed {
            return None;
        }
        self.thermostat(aid, &serial)
    }
}

impl Attributes for Bridge {
    fn accessories(&self) -> Reply {
        let all: Vec<Value> = self
            .shared
            .database()
            .iter()
            .map(Accessory::to_json)
            .collect();
        reply(200, &json!({"accessories": all}))
    }

    fn read(&self, query: &str, subscriptions: &Subscriptions) -> Reply {
        self.read_for(query, subscriptions)
    }

    fn write(&self, body: &[u8], subscriptions: &mut Subscriptions, sent: &mut Sent) -> Reply {
        let Some(items) = WriteItem::parse(body) else {
            return error(400, status::INVALID_VALUE);
        };
        if items.len() > MAX_WRITES {
            return error(400, status::OUT_OF_RESOURCES);
        }
        let mut cache = Accessories::new(&self.shared);
        let mut statuses = vec![status::OK; items.len()];
        // The two thresholds of one thermostat, joined into one intent (see
        // `characteristics::joined`): aid → (low, high, the items that asked).
        let mut ranges: BTreeMap<u64, Range> = BTreeMap::new();
        let mut written: Vec<(u64, usize)> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let Some(value) = &item.value else { continue };
            let Some(c) = cache.get(item.aid).and_then(|a| a.characteristic(item.iid)) else {
                statuses[i] = status::NOT_FOUND;
                continue;
            };
            match characteristics::intent(c, value) {
                Err(Refused::ReadOnly) => statuses[i] = status::READ_ONLY,
                Err(Refused::InvalidValue) => statuses[i] = status::INVALID_VALUE,
                Ok(None) => log::info!("HomeKit: identify accessory {}", item.aid),
                Ok(Some(Intent::Range { low, high, .. })) => {
                    let r = ranges.entry(item.aid).or_default();
                    r.low = low.or(r.low);
                    r.high = high.or(r.high);
                    r.asked.push(i);
                }
                Ok(Some(intent)) => {
                    let serial = self.shared.aids.serial(item.aid).unwrap_or_default();
                    statuses[i] = self.commit(&serial, &intent);
                    written.push((item.aid, i));
                    cache.forget(item.aid);
                }
            }
        }
        for (aid, range) in ranges {
            let serial = self.shared.aids.serial(aid).unwrap_or_default();
            let outcome = self.commit(&serial, &characteristics::joined(range.low, range.high));
            for i in range.asked {
                statuses[i] = outcome;
                written.push((aid, i));
            }
            cache.forget(aid);
        }
        // What the writer now sees of its own writes is what it was told: no event echoes them.
        for (aid, i) in written {
            if statuses[i] == status::OK {
                let now = cache
                    .get(aid)
                    .and_then(|a| a.characteristic(items[i].iid))
                    .map(|c| c.value.clone());
                if let Some(v) = now {
                    sent.insert((aid, items[i].iid), v);
                }
            }
        }
        for (i, item) in items.iter().enumerate() {
            let Some(ev) = item.ev else { continue };
            let address: Address = (item.aid, item.iid);
            let Some(c) = cache.get(item.aid).and_then(|a| a.characteristic(item.iid)) else {
                statuses[i] = status::NOT_FOUND;
                continue;
            };
            if !c.kind.notifies() {
                statuses[i] = status::NO_NOTIFICATION;
            } else if ev {
                subscriptions.insert(address);
                sent.insert(address, c.value.clone());
            } else {
                subscriptions.remove(&address);
                sent.remove(&address);
            }
        }
        let wants_values = items.iter().any(|i| i.response);
        if statuses.iter().all(|s| *s == status::OK) && !wants_values {
            return Reply {
                status: 204,
                body: Vec::new(),
            };
        }
        let answers: Vec<Value> = items
            .iter()
            .zip(&statuses)
            .map(|(item, s)| {
                let mut a = json!({"aid": item.aid, "iid": item.iid, "status": s});
                if item.response && *s == status::OK {
                    if let Some(c) = cache.get(item.aid).and_then(|x| x.characteristic(item.iid)) {
                        a["value"] = c.value.clone();
                    }
                }
                a
            })
            .collect();
        reply(207, &json!({"characteristics": answers}))
    }

    fn changed(&self, subscriptions: &Subscriptions, sent: &mut Sent) -> Option<Vec<u8>> {
        events::changed(&mut Accessories::new(&self.shared), subscriptions, sent)
    }

    fn watch(&self) -> Receiver<()> {
        self.shared.watchers.subscribe()
    }

    fn config_number(&self) -> u32 {
        let fingerprint = accessories::fingerprint(&self.shared.database());
        match self.shared.identity.config_number(fingerprint) {
            Ok(n) => {
                self.shared.number.store(n, Ordering::Relaxed);
                n
            }
            Err(e) => {
                log::warn!("HomeKit: the configuration number could not be stored: {e}");
                self.shared.number.load(Ordering::Relaxed)
            }
        }
    }
}

/// The thresholds one write asks of one thermostat, and the items that asked.
#[derive(Default)]
struct Range {
    low: Option<f64>,
    high: Option<f64>,
    asked: Vec<usize>,
}

fn reply(status: u16, body: &Value) -> Reply {
    Reply {
        status,
        body: body.to_string().into_bytes(),
    }
}

/// A request HAP cannot take at all: its HTTP status with the HAP status as the body.
fn error(http: u16, hap: i64) -> Reply {
    reply(http, &json!({"status": hap}))
}
