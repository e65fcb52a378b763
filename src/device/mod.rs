//! The thermostats' cloud protocol (port 8000): the [browser rule](crate::browser), URL
//! normalisation, then identification, then the pairing checks, then the route. See
//! docs/device-protocol.md.

mod entry;
pub(crate) mod error;
pub mod identity;
mod listing;
mod newcomers;
pub mod normalize;
mod passphrase;
mod put;
mod subscribe;
mod upload;
pub(crate) mod weather;
pub(crate) mod wire;

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

use parking_lot::Mutex;

pub use error::DeviceError;
use identity::Identity;

use crate::accounts;
use crate::app::App;
use crate::browser::Guard;
use crate::config::NEW_THERMOSTATS_WINDOW;
use crate::http::{self, Method, Reply, Request, Response, Service};
use crate::info;
use crate::state::DeviceTxn;
use crate::util::outbound::OutboundGate;

/// The device-port service.
pub struct DeviceApi {
    app: Arc<App>,
    local: Local,
}

/// What only the device port keeps, in memory, for this process.
pub(crate) struct Local {
    /// The entry keys (code and creation time) handed to each client address, for the
    /// per-address cap of `GET /nest/passphrase`.
    entry_keys_by_address: Mutex<HashMap<IpAddr, Vec<(String, i64)>>>,
    /// The thermostats new to hearth each client address added lately, for the per-address
    /// limit of open mode (see [`newcomers`]).
    newcomers: Mutex<newcomers::Newcomers>,
    /// Serials that have subscribed since this process started (the structure bucket is
    /// re-sent once to each after a restart).
    subscribed_since_start: Mutex<HashSet<String>>,
    /// Requests waiting on an outbound call (the weather): at most half the port's workers.
    outbound: OutboundGate,
}

impl Local {
    /// True the first time a serial subscribes in this process.
    pub(crate) fn first_subscribe_since_start(&self, serial: &str) -> bool {
        self.subscribed_since_start
            .lock()
            .insert(serial.to_string())
    }
}

impl DeviceApi {
    /// The gate of requests waiting on an outbound call.
    pub fn outbound(&self) -> &OutboundGate {
        &self.local.outbound
    }

    pub fn new(app: Arc<App>) -> DeviceApi {
        DeviceApi {
            local: Local {
                entry_keys_by_address: Mutex::default(),
                newcomers: Mutex::default(),
                subscribed_since_start: Mutex::default(),
                outbound: OutboundGate::for_workers(app.config().http_workers),
            },
            app,
        }
    }
}

impl Service for DeviceApi {
    fn body_limit(&self, path: &str) -> usize {
        if self.app.config().store_device_logs && normalize::normalize(path) == "/nest/upload" {
            upload::BODY_LIMIT
        } else {
            http::BODY_LIMIT
        }
    }

    fn handle(&self, request: Request) -> Reply {
        let path = normalize::normalize(&request.path);
        // Thermostats send no Origin and name API_ORIGIN's host (or its address). Nothing here
        // is for a web page: only /health and /info answer one (without CORS headers).
        let guard = match (request.method, path.as_str()) {
            (Method::Options, _) => Guard::Full,
            (_, "/health") => Guard::Open,
            (_, "/info") => Guard::Host,
            _ => Guard::Full,
        };
        if let Err(refusal) = self.app.browsers().check(&request, guard) {
            self.app.browsers().log("device port", &request, &refusal);
            return Reply::Full(DeviceError::Browser(refusal).response());
        }
        route(&self.app, &self.local, &request).unwrap_or_else(|e| Reply::Full(e.response()))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Info,
    Health,
    Entry,
    Ping,
    Passphrase,
    PassphraseStatus,
    ProInfo,
    Listing,
    Subscribe,
    Put,
    Upload,
    Weather,
}

impl Route {
    fn of(method: Method, path: &str) -> Result<Route, DeviceError> {
        let get = matches!(method, Method::Get | Method::Head);
        let post = method == Method::Post;
        let (route, allowed) = match path {
            "/info" => (Route::Info, get),
            "/health" => (Route::Health, get),
            "/nest/entry" => (Route::Entry, get || post),
            "/nest/ping" => (Route::Ping, get),
            "/nest/passphrase" => (Route::Passphrase, get),
            "/nest/passphrase/status" => (Route::PassphraseStatus, get),
            "/nest/upload" => (Route::Upload, post),
            "/nest/transport" | "/nest/transport/" if post => (Route::Subscribe, true),
            "/nest/transport" | "/nest/transport/" => (Route::Listing, get),
            p if p == "/nest/pro_info" || p.starts_with("/nest/pro_info/") => (Route::ProInfo, get),
            p if p.starts_with("/nest/weather/") => (Route::Weather, get),
            p => match p.strip_prefix("/nest/transport/") {
                Some(rest) if post => match transport_action(rest) {
                    Some(route) => (route, true),
                    None => (Route::Listing, false),
                },
                Some(_) => (Route::Listing, get),
                None => return Err(DeviceError::NotFound),
            },
        };
        if allowed {
            Ok(route)
        } else {
            Err(DeviceError::MethodNotAllowed)
        }
    }

    /// Subscribe and PUT are refused to unpaired thermostats in pairing mode, and so are uploads.
    fn is_gated(self) -> bool {
        matches!(self, Route::Subscribe | Route::Put | Route::Upload)
    }

    /// The routes that store something for the serial they are served for (its buckets, an
    /// entry key and the pairing dialog, an upload), and so make a serial hearth has never
    /// seen a thermostat it knows (or would, for an upload, in open mode).
    fn stores(self) -> bool {
        self.is_gated() || self == Route::Passphrase
    }
}

/// `subscribe`, `{version}/subscribe`, `put`, `{version}/put`.
fn transport_action(rest: &str) -> Option<Route> {
    let action = match rest.split('/').collect::<Vec<_>>().as_slice() {
        [action] | [_, action] => *action,
        _ => return None,
    };
    match action {
        "subscribe" => Some(Route::Subscribe),
        "put" => Some(Route::Put),
        _ => None,
    }
}

/// How far a thermostat is through pairing (always `Paired` when pairing is off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    Paired,
    /// It has an active entry key: it may subscribe, but nothing it sends is stored.
    Pending,
}

/// An identified thermostat that passed the pairing checks.
pub struct Caller {
    pub serial: String,
    pub password: Option<String>,
    /// The password a claim pins, when no key is stored yet (see [`accounts::pin::Pin`]).
    pub claimed_pin: Option<String>,
    pub tier: Tier,
    /// `X-nl-weave-device-id`, written into the device bucket as `weave_device_id`.
    pub weave_device_id: Option<String>,
}

fn route(app: &App, local: &Local, req: &Request) -> Result<Reply, DeviceError> {
    let path = normalize::normalize(&req.path);
    let route = Route::of(req.method, &path)?;
    let full = |r: Response| Ok(Reply::Full(r));
    match route {
        Route::Info => return full(info::info(app)),
        Route::Health => return full(info::health()),
        _ => {}
    }
    let path_serial = (route == Route::Listing)
        .then(|| listing::serial_in_path(&path))
        .flatten();
    let id = identity::identify(req, path_serial.as_deref())?;
    // Before anything else looks at the serial: a request for a pinned thermostat without its
    // password changes nothing, not even its last-seen time.
    let Pins { pin, exempt } = check_pins(app, &id, route)?;
    // Then, before anything is stored or tracked for it: a serial hearth has never seen is
    // admitted only within its client address's share of new thermostats (open mode).
    if let Some(serial) = id.serial.as_deref().filter(|_| route.stores() && !exempt) {
        admit_newcomer(app, local, req.remote.map(|a| a.ip()), serial)?;
    }
    // Ungated routes never build a Caller; pairing only decides gated ones.
    let tier = if route.is_gated() {
        check_pairing(app, &id, route)
    } else {
        Ok(Tier::Paired)
    };
    // Only thermostats that passed the pairing checks, or that the server knows, are tracked
    // (any string of 10 letters and digits in a query is not a thermostat). A known one is
    // tracked even when refused: one waiting to be claimed or adopted is still there. A
    // request let through without the pinned password (`exempt`) is not the thermostat's, as
    // far as anyone knows: it does not make it look online.
    if let Some(serial) = id.serial.as_ref().filter(|_| !exempt) {
        if (route.is_gated() && tier.is_ok()) || known(app, serial) {
            app.presence().seen(serial);
        }
    }
    let tier = tier?;
    let asker = passphrase::Asker {
        password: id.password.as_deref(),
        pin: pin.expected(),
        exempt,
    };
    let caller = || -> Result<Caller, DeviceError> {
        Ok(Caller {
            serial: id.serial.clone().ok_or(DeviceError::SerialRequired)?,
            password: id.password.clone(),
            claimed_pin: pin.claimed.clone(),
            tier,
            weave_device_id: req.header("X-nl-weave-device-id").map(str::to_string),
        })
    };
    match route {
        // Answered before identification.
        Route::Info | Route::Health => Err(DeviceError::NotFound),
        Route::Entry => full(entry::entry(app, req)),
        Route::Ping => full(entry::ping()),
        Route::ProInfo => full(entry::pro_info(&path, req)),
        Route::Passphrase => full(passphrase::get(
            app,
            &local.entry_keys_by_address,
            req.remote.map(|a| a.ip()),
            id.serial.as_deref(),
            &asker,
        )?),
        Route::PassphraseStatus => full(passphrase::status(app, id.serial.as_deref(), &asker)?),
        Route::Listing => full(listing::list(app, path_serial.or(id.serial))?),
        Route::Subscribe => subscribe::subscribe(app, local, &caller()?, req),
        Route::Put => full(put::put(app, &caller()?, req)?),
        Route::Upload => full(upload::upload(app, id.serial.as_deref(), &req.body)?),
        Route::Weather => full(weather::weather(app, &local.outbound, &req.query)?),
    }
}

/// What [`check_pins`] found.
struct Pins {
    /// The pin of the serial the request is served for.
    pin: accounts::pin::Pin,
    /// The request was let through without a pinned password it should have carried (a
    /// released thermostat asking for an entry key with another password). Whoever sent it
    /// may be anyone on the LAN: it gets its own entry key and that key's status, nothing of
    /// the thermostat's, and it changes nothing the thermostat has (not its last-seen time,
    /// not its buckets, not its own entry key's place).
    exempt: bool,
}

/// Checks that every serial the request names is given its pinned password (see
/// [`accounts::pin`]). A released thermostat may ask for an entry key (and its status) with
/// another password: a claim of that code is how its owner lets it in after a reflash, and the
/// code is shown only to whoever asked.
fn check_pins(app: &App, id: &Identity, route: Route) -> Result<Pins, DeviceError> {
    let entry_key = matches!(route, Route::Passphrase | Route::PassphraseStatus);
    let mut first = None;
    let mut exempted = false;
    for serial in &id.named {
        let pin = accounts::pin::lookup(app.state(), serial);
        if let Some(expected) = pin.expected() {
            if !accounts::pin::matches(expected, id.password.as_deref()) {
                if !(entry_key && app.state().accounts(|a| a.is_released(serial))) {
                    return Err(DeviceError::WrongPassword(serial.clone()));
                }
                exempted = true;
            }
        }
        first.get_or_insert(pin);
    }
    Ok(Pins {
        pin: first.unwrap_or_default(),
        exempt: exempted,
    })
}

/// A thermostat the server has state for, or one someone owns or its owner released (whose
/// state an older hearth may have deleted).
fn known(app: &App, serial: &str) -> bool {
    app.state().device_exists(serial)
        || app
            .state()
            .accounts(|a| a.is_released(serial) || a.owner_of(serial).is_some())
}

/// In open mode, a request that would store something for `serial`, which hearth has never
/// seen, from `remote`: let in within the client's share of new thermostats
/// (`max_new_thermostats_per_client` per [`NEW_THERMOSTATS_WINDOW`]), else refused before
/// anything is stored (see [`newcomers`]). A known thermostat, pairing mode (which stores
/// nothing before a claim), a limit of 0 and a request without a client address (none comes
/// from the network) are not limited.
fn admit_newcomer(
    app: &App,
    local: &Local,
    remote: Option<IpAddr>,
    serial: &str,
) -> Result<(), DeviceError> {
    let config = app.config();
    let cap = config.max_new_thermostats_per_client;
    let Some(client) = remote.map(crate::util::client_key) else {
        return Ok(());
    };
    if config.require_device_pairing || cap == 0 || known(app, serial) {
        return Ok(());
    }
    let window_ms = i64::try_from(NEW_THERMOSTATS_WINDOW.as_millis()).unwrap_or(i64::MAX);
    let now = (config.clock.now_ms(), config.clock.now());
    let refused = match local
        .newcomers
        .lock()
        .admit(client, serial, cap, window_ms, now)
    {
        Ok(()) => return Ok(()),
        Err(refused) => refused,
    };
    refused.log.write(
        (module_path!(), log::Level::Warn),
        "device port",
        &format_args!(
            "refused a new thermostat {serial} from {client}: {} thermostats new to hearth came \
             from it in the last 24 hours (MAX_NEW_THERMOSTATS_PER_CLIENT is {cap}; thermostats \
             hearth knows are never refused); nothing of it was stored",
            refused.added
        ),
    );
    Err(DeviceError::TooManyNewThermostats {
        retry_after_secs: refused.retry_after_secs,
    })
}

/// The pairing checks for a gated route: a thermostat counts as paired unless it needs an entry
/// key ([`accounts::needs_entry_key`]: pairing mode, and never anyone's; a released one keeps
/// operating); then it needs an active one (pending, and no uploads).
fn check_pairing(app: &App, id: &Identity, route: Route) -> Result<Tier, DeviceError> {
    let serial = id.serial.as_deref();
    let now = app.config().clock.now_ms();
    let pairing = app.config().require_device_pairing;
    let tier = app.state().accounts(|a| match serial {
        // Without a serial only open mode's rule can let a request through.
        None if pairing => Err(DeviceError::SerialRequired),
        None => Ok(Some(Tier::Paired)),
        Some(s) if !accounts::needs_entry_key(a, s, pairing) => Ok(Some(Tier::Paired)),
        Some(s) => Ok(a
            .active_entry_key(s, now)
            .is_some()
            .then_some(Tier::Pending)),
    })?;
    match (tier, route) {
        (None, _) => Err(DeviceError::NotPaired),
        (Some(Tier::Pending), Route::Upload) => Err(DeviceError::UploadNotAuthorized),
        (Some(t), _) => Ok(t),
    }
}

/// Makes sure a paired thermostat has its metadata (stable id) and that `caller`'s password is
/// its pinned one, pinning it if none is (see [`accounts::pin`]).
pub(crate) fn ensure_meta(txn: &mut DeviceTxn<'_>, caller: &Caller) -> Result<(), DeviceError> {
    use accounts::pin::{self, PinError};
    pin::ensure(
        txn,
        caller.password.as_deref(),
        caller.claimed_pin.as_deref(),
    )
    .map_err(|e| match e {
        PinError::Mismatch => DeviceError::WrongPassword(caller.serial.clone()),
        PinError::RandomUnavailable => DeviceError::RandomUnavailable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let ok = |m, p| Route::of(m, p).unwrap();
        assert_eq!(ok(Method::Post, "/nest/transport"), Route::Subscribe);
        assert_eq!(
            ok(Method::Post, "/nest/transport/v7/subscribe"),
            Route::Subscribe
        );
        assert_eq!(ok(Method::Post, "/nest/transport/put"), Route::Put);
        assert_eq!(ok(Method::Post, "/nest/transport/v5/put"), Route::Put);
        assert_eq!(
            ok(Method::Get, "/nest/transport/v7/device/device.S"),
            Route::Listing
        );
        assert_eq!(ok(Method::Get, "/nest/weather/v1"), Route::Weather);
        assert_eq!(ok(Method::Post, "/nest/entry"), Route::Entry);
        assert!(matches!(
            Route::of(Method::Post, "/nest/ping"),
            Err(DeviceError::MethodNotAllowed)
        ));
        assert!(matches!(
            Route::of(Method::Post, "/nest/transport/v7/other"),
            Err(DeviceError::MethodNotAllowed)
        ));
        assert!(matches!(
            Route::of(Method::Get, "/nope"),
            Err(DeviceError::NotFound)
        ));
    }
}
