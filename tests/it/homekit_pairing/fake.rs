//! The fake accessory side and the listener harness: one accessory with a readable, writable,
//! notifying characteristic, and the HAP listener started on it with an identity in a
//! temporary directory.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender, unbounded};
use hearth::hap::Identity;
use hearth::homekit::server::{self, Handle, Limits};
use hearth::homekit::{Address, Attributes, Reply, Sent, Subscriptions};
use hearth::util::clock::Clock;
use hearth::util::shutdown::Shutdown;
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::common::share_process;

/// The fake characteristic: a target temperature.
pub const TARGET: Address = (1, 10);

/// One accessory: its information service and one writable, notifying characteristic.
#[derive(Default)]
pub struct Fake {
    value: Mutex<f64>,
    watchers: Mutex<Vec<Sender<()>>>,
}

impl Fake {
    pub fn new(value: f64) -> Arc<Fake> {
        let fake = Fake::default();
        *fake.value.lock() = value;
        Arc::new(fake)
    }

    /// A change from elsewhere (as a `/command` would make).
    pub fn set(&self, value: f64) {
        *self.value.lock() = value;
        self.watchers.lock().retain(|w| w.send(()).is_ok());
    }

    pub fn get(&self) -> f64 {
        *self.value.lock()
    }
}

fn json_reply(status: u16, body: Value) -> Reply {
    Reply {
        status,
        body: serde_json::to_vec(&body).unwrap(),
    }
}

impl Attributes for Fake {
    fn accessories(&self) -> Reply {
        let info = |iid: u64, kind: &str, value: &str| json!({"iid": iid, "type": kind, "perms": ["pr"], "format": "string", "value": value});
        json_reply(
            200,
            json!({"accessories": [{"aid": 1, "services": [
                {"iid": 1, "type": "3E", "characteristics": [
                    {"iid": 2, "type": "14", "perms": ["pw"], "format": "bool"},
                    info(3, "20", "hearth"),
                    info(4, "21", "fake"),
                    info(5, "23", "Fake"),
                    info(6, "30", "1"),
                    info(7, "52", "0.1.0"),
                ]},
                {"iid": 8, "type": "4A", "characteristics": [
                    {"iid": 10, "type": "35", "perms": ["pr", "pw", "ev"], "format": "float",
                     "unit": "celsius", "minValue": 10, "maxValue": 38, "minStep": 0.5,
                     "value": self.get()},
                ]},
            ]}]}),
        )
    }

    fn read(&self, query: &str, _subscriptions: &Subscriptions) -> Reply {
        let ids = query
            .split('&')
            .find_map(|p| p.strip_prefix("id="))
            .unwrap_or("");
        let mut all_ok = true;
        let rows: Vec<Value> = ids
            .split(',')
            .map(|id| {
                let (aid, iid) = id.split_once('.').unwrap_or((id, ""));
                let (aid, iid) = (aid.parse().unwrap_or(0), iid.parse().unwrap_or(0));
                if (aid, iid) == TARGET {
                    json!({"aid": aid, "iid": iid, "value": self.get()})
                } else {
                    all_ok = false;
                    json!({"aid": aid, "iid": iid, "status": -70409})
                }
            })
            .collect();
        json_reply(
            if all_ok { 200 } else { 207 },
            json!({"characteristics": rows}),
        )
    }

    fn write(&self, body: &[u8], subscriptions: &mut Subscriptions, sent: &mut Sent) -> Reply {
        let Ok(body) = serde_json::from_slice::<Value>(body) else {
            return json_reply(400, json!({"status": -70410}));
        };
        let mut changed = false;
        for row in body["characteristics"].as_array().into_iter().flatten() {
            let address = (
                row["aid"].as_u64().unwrap_or(0),
                row["iid"].as_u64().unwrap_or(0),
            );
            if address != TARGET {
                return json_reply(
                    207,
                    json!({"characteristics": [{"aid": address.0, "iid": address.1, "status": -70409}]}),
                );
            }
            if let Some(value) = row["value"].as_f64() {
                *self.value.lock() = value;
                sent.insert(TARGET, json!(value));
                changed = true;
            }
            match row["ev"].as_bool() {
                Some(true) => {
                    subscriptions.insert(TARGET);
                    sent.insert(TARGET, json!(self.get()));
                }
                Some(false) => {
                    subscriptions.remove(&TARGET);
                }
                None => {}
            }
        }
        if changed {
            self.watchers.lock().retain(|w| w.send(()).is_ok());
        }
        Reply {
            status: 204,
            body: Vec::new(),
        }
    }

    fn changed(&self, subscriptions: &Subscriptions, sent: &mut Sent) -> Option<Vec<u8>> {
        let now = json!(self.get());
        if !subscriptions.contains(&TARGET) || sent.get(&TARGET) == Some(&now) {
            return None;
        }
        sent.insert(TARGET, now.clone());
        Some(
            serde_json::to_vec(&json!({"characteristics": [{"aid": 1, "iid": 10, "value": now}]}))
                .unwrap(),
        )
    }

    fn watch(&self) -> Receiver<()> {
        let (tx, rx) = unbounded();
        self.watchers.lock().push(tx);
        rx
    }

    fn config_number(&self) -> u32 {
        1
    }
}

/// A listener on a port of 127.0.0.1, with its identity in `dir`.
pub struct Hap {
    handle: Option<Handle>,
    shutdown: Shutdown,
    pub identity: Arc<Identity>,
}

impl Hap {
    pub fn start(fake: &Arc<Fake>, dir: &Path, bind: SocketAddr, limits: Limits) -> Hap {
        share_process();
        let identity = Arc::new(Identity::open(&dir.join("homekit")).unwrap());
        let shutdown = Shutdown::new();
        let attributes: Arc<dyn Attributes> = Arc::clone(fake) as Arc<dyn Attributes>;
        let handle = server::start_with(
            attributes,
            Arc::clone(&identity),
            bind,
            limits,
            Clock::system(),
            &shutdown,
        )
        .unwrap();
        Hap {
            handle: Some(handle),
            shutdown,
            identity,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.handle.as_ref().unwrap().addr()
    }

    pub fn stop(mut self) {
        self.shutdown.trigger();
        if let Some(h) = self.handle.take() {
            h.join();
        }
    }
}

impl Drop for Hap {
    fn drop(&mut self) {
        self.shutdown.trigger();
        if let Some(h) = self.handle.take() {
            h.join();
        }
    }
}

pub fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}
