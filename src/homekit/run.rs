//! HomeKit as `hearth serve` runs it: the bridge over the thermostats, its HAP listener and its
//! mDNS advertisement, started after the other surfaces and stopped with the intake (a
//! controller's connection is a client's, as the control port's are).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use super::Context;
use super::mdns::{self, Advertisement};
use super::server::{self, Handle};
use super::{Attributes, Bridge};
use crate::util::shutdown::Shutdown;

/// HomeKit, running.
pub struct Running {
    listener: Handle,
    advertisement: Option<Advertisement>,
    /// Dropped last: its watch thread is stopped and waited for then.
    bridge: Arc<Bridge>,
}

impl Running {
    /// The address its HAP listener took.
    pub fn addr(&self) -> SocketAddr {
        self.listener.addr()
    }

    /// After the shutdown signal: the advertisement's goodbye, the listener's threads, then the
    /// bridge's watch thread (once nothing else holds the bridge).
    pub fn join(self) {
        if let Some(advertisement) = self.advertisement {
            advertisement.join();
        }
        self.listener.join();
        drop(self.bridge);
    }
}

/// Starts HomeKit if it is on (`HOMEKIT`, and the identity could be opened). Like MQTT, a
/// convenience beside the thermostats' own protocol: what fails here is logged loudly and
/// leaves HomeKit off, never the server stopped.
///
/// A `HOMEKIT_PORT` already in use (Homebridge's default is the same 51826) is not fatal
/// either: the listener takes a free port instead and says so, since controllers find the
/// accessory by its advertisement, which carries the port it has.
pub fn start(app: &Arc<dyn Context>, shutdown: &Shutdown) -> Option<Running> {
    let identity = Arc::clone(app.homekit().identity()?);
    let config = &app.config().homekit;
    let bridge = match Bridge::new(Arc::clone(app), Arc::clone(&identity), config.name.clone()) {
        Ok(bridge) => Arc::new(bridge),
        Err(e) => {
            log::error!("HomeKit is off: {e}");
            return None;
        }
    };
    let wanted = SocketAddr::new(app.config().control_bind, config.port);
    let attributes: Arc<dyn Attributes> = bridge.clone();
    let clock = app.config().clock.clone();
    let started = match server::start(
        Arc::clone(&attributes),
        Arc::clone(&identity),
        wanted,
        clock.clone(),
        shutdown,
    ) {
        Err(e) if e.kind() == io::ErrorKind::AddrInUse && wanted.port() != 0 => {
            log::warn!(
                "HomeKit: port {} is in use (Homebridge's default is the same); listening on a \
                 free port instead (set HOMEKIT_PORT to choose one)",
                wanted.port()
            );
            let other = SocketAddr::new(wanted.ip(), 0);
            server::start(attributes, Arc::clone(&identity), other, clock, shutdown)
        }
        other => other,
    };
    let listener = match started {
        Ok(handle) => handle,
        Err(e) => {
            log::error!("HomeKit is off: cannot listen on {wanted}: {e}");
            return None;
        }
    };
    let port = listener.addr().port();
    app.homekit().listening_on(port);
    // Bound to loopback (as the tests' servers are), nobody else could connect: nothing is
    // announced to the network.
    let advertisement = if wanted.ip().is_loopback() {
        None
    } else {
        advertise(&bridge, identity, &config.name, port, shutdown)
    };
    log::info!("HomeKit bridge \"{}\" on port {port}", config.name);
    Some(Running {
        listener,
        advertisement,
        bridge,
    })
}

/// The `_hap._tcp` advertisement, or `None` (logged) if the responder cannot start.
fn advertise(
    bridge: &Arc<Bridge>,
    identity: Arc<crate::hap::Identity>,
    name: &str,
    port: u16,
    shutdown: &Shutdown,
) -> Option<Advertisement> {
    let numbered = Arc::clone(bridge);
    mdns::advertise(
        identity,
        name,
        port,
        move || numbered.config_number(),
        bridge.watch(),
        shutdown,
    )
    .map_err(|e| {
        log::error!(
            "HomeKit's mDNS advertisement is off ({e}): the Home app will not find hearth \
             (docs/homekit.md, troubleshooting)"
        )
    })
    .ok()
}
