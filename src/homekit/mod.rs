//! Apple Home without a bridge: hearth as a HomeKit bridge accessory, one Thermostat service per
//! thermostat it serves. A surface like the others: it speaks HAP over IP on its own listener
//! and commits what a controller writes as the thermostat core's intents.
//!
//! The transport (listener, pair-setup and pair-verify, the encrypted session, `/pairings`,
//! EVENT messages) asks the accessory side for everything about thermostats through
//! [`Attributes`], so the two are written and tested apart.

pub mod accessories;
pub mod aids;
pub mod bridge;
pub mod characteristics;
pub mod events;
pub mod requests;
pub mod status;
pub mod thermostat;

pub use bridge::Bridge;
mod connection;
mod http;
/// The transport's request parser, for the fuzz target (`tests/fuzz`).
#[doc(hidden)]
pub mod wire {
    pub use super::http::{Incomplete, Request, parse};
}
pub mod mdns;
pub mod run;
pub mod server;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crossbeam_channel::Receiver;

use crate::accounts::Visibility;
use crate::config::Config;
use crate::state::State;
use crate::thermostat::Reading;

/// What the bridge reads of the running server (the server's `App`): its narrow view.
pub trait Context: Send + Sync {
    fn config(&self) -> &Config;
    fn state(&self) -> &State;
    /// Who sees a thermostat ([`crate::accounts::visibility`]): HomeKit lists and commands
    /// what [`crate::accounts::Viewer::HomeKit`] may.
    fn visibility(&self) -> Visibility;
    /// A thermostat's reading now.
    fn reading(&self, serial: &str) -> Option<Arc<Reading>>;
    /// The accessory's identity, and where its listener listens.
    fn homekit(&self) -> &crate::app::HomeKit;
}

/// The server's view for the bridge (here, since the server's shared parts sit below the
/// surfaces and know none of them).
impl Context for crate::app::App {
    fn config(&self) -> &Config {
        crate::app::App::config(self)
    }

    fn state(&self) -> &State {
        crate::app::App::state(self)
    }

    fn visibility(&self) -> Visibility {
        crate::app::App::visibility(self)
    }

    fn reading(&self, serial: &str) -> Option<Arc<Reading>> {
        crate::app::App::reading(self, serial)
    }

    fn homekit(&self) -> &crate::app::HomeKit {
        crate::app::App::homekit(self)
    }
}

/// A characteristic's address: (accessory id, instance id).
pub type Address = (u64, u64);

/// The characteristics one controller connection asked to hear of (`"ev": true`).
pub type Subscriptions = BTreeSet<Address>;

/// The values last sent to one controller connection, by characteristic: an EVENT carries only
/// what differs from these.
pub type Sent = BTreeMap<Address, serde_json::Value>;

/// An HTTP answer inside the HAP session: a status and an `application/hap+json` body (empty
/// for 204).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
}

/// What the transport asks of the accessory side, for a controller that has completed
/// pair-verify.
pub trait Attributes: Send + Sync {
    /// `GET /accessories`: the attribute database.
    fn accessories(&self) -> Reply;
    /// `GET /characteristics?{query}` (the query string without `?`); `ev=1` answers from this
    /// connection's `subscriptions`.
    fn read(&self, query: &str, subscriptions: &Subscriptions) -> Reply;
    /// `PUT /characteristics` with `body`: writes values (through the thermostat core) and
    /// changes this connection's `subscriptions`; the written values go into `sent`, so the
    /// writer is not sent its own change back.
    fn write(&self, body: &[u8], subscriptions: &mut Subscriptions, sent: &mut Sent) -> Reply;
    /// The body of an EVENT message for the subscribed characteristics whose values differ
    /// from `sent` (which it then updates), or `None` when nothing subscribed changed.
    fn changed(&self, subscriptions: &Subscriptions, sent: &mut Sent) -> Option<Vec<u8>>;
    /// Receives `()` whenever something a controller sees may have changed (a thermostat's
    /// state, the set of thermostats): the transport then calls [`Attributes::changed`] for
    /// each connection.
    fn watch(&self) -> Receiver<()>;
    /// The configuration number (`c#`) of the database as it is now.
    fn config_number(&self) -> u32;
}
