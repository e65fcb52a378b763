//! What every handler shares: configuration, state (with its hub), and runtime bookkeeping.

use std::net::{IpAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};

use crate::accounts::{Sight, Viewer, Visibility};
use crate::browser::Browsers;
use crate::config::{ApiOrigin, Config};
use crate::events::EventStreams;
use crate::hub::Hub;
use crate::metrics::StatusCounts;
use crate::presence::{Availability, Presence};
use crate::state::State;
use crate::thermostat::readings::{Sources, Stamp};
use crate::thermostat::{Reading, Readings};
use crate::weather::Weather;

/// The server's shared parts, one of each: what every surface and background thread is built
/// on. Read through its methods; what is one surface's business lives in that surface (the
/// device port's entry-key counts and outbound gate in `device::Local`, the control port's
/// status cache, scan lock and gate in `control::Local`), and the background threads see a
/// narrow view of it (`alerts::Context`, `history::Context`, `mqtt::Context`,
/// `homekit::Context`).
pub struct App {
    config: Config,
    state: State,
    origin: PublicOrigin,
    /// The browser rule both ports apply, with its log of refused names.
    browsers: Browsers,
    /// When each thermostat was last heard from.
    presence: Presence,
    weather: Weather,
    /// Active and recent alerts, as the surfaces read them (fed by the alert rules).
    alerts: crate::alerts::Alerts,
    /// Each thermostat's live day of energy history (kept by the history recorder).
    energy: crate::energy::Live,
    events: EventStreams,
    /// Each thermostat's reading, kept between changes.
    readings: Readings,
    /// Statuses answered by each port (counted by their listeners; `/metrics`).
    answered: Answered,
    /// When this process started serving, by the server's clock (`/metrics`).
    started_ms: i64,
    /// The presence rule (`crate::people`).
    people: crate::people::People,
    homekit: HomeKit,
}

/// Statuses answered by the device and the control port, counted by their listeners.
#[derive(Default)]
pub struct Answered {
    pub device: Arc<StatusCounts>,
    pub control: Arc<StatusCounts>,
}

/// The HomeKit accessory: its identity (setup code, pairings), shared by the HAP listener, its
/// advertisement, the page and the admin socket (`None` with `HOMEKIT=false` or when it could
/// not be opened, logged), and the port its listener took.
pub struct HomeKit {
    #[cfg(feature = "homekit")]
    identity: Option<Arc<crate::hap::Identity>>,
    port: AtomicU16,
}

impl HomeKit {
    #[cfg(feature = "homekit")]
    pub fn identity(&self) -> Option<&Arc<crate::hap::Identity>> {
        self.identity.as_ref()
    }

    /// The port HomeKit's listener took, once it listens.
    pub fn port(&self) -> Option<u16> {
        Some(self.port.load(Ordering::Relaxed)).filter(|p| *p != 0)
    }

    pub fn listening_on(&self, port: u16) {
        self.port.store(port, Ordering::Relaxed);
    }
}

impl App {
    pub fn new(config: Config, state: State, origin: PublicOrigin) -> App {
        let events = EventStreams::new(config.event_keep_alive, config.clock.clone());
        let started_ms = config.clock.now_ms();
        let config_away_after = config.away_after;
        let energy = crate::energy::Live::new(crate::energy::dir(&config.data_dir));
        // Outdoor readings are kept by place in the data directory (see `crate::weather`).
        let weather = Weather::new(
            config.clock.clone(),
            Some(config.data_dir.join("weather")),
            std::time::Duration::from_millis(config.weather_cache_ttl_ms),
        );
        let homekit = HomeKit {
            #[cfg(feature = "homekit")]
            identity: open_homekit(&config),
            port: AtomicU16::new(0),
        };
        #[cfg(not(feature = "homekit"))]
        if config.homekit.enabled {
            log::info!(
                "HomeKit is not in this build of hearth (a build for routers): HOMEKIT is ignored"
            );
        }
        App {
            homekit,
            browsers: Browsers::new(&config),
            presence: Presence::new(config.availability_timeout, config.clock.clone()),
            config,
            state,
            origin,
            weather,
            alerts: crate::alerts::Alerts::default(),
            energy,
            events,
            readings: Readings::default(),
            answered: Answered::default(),
            people: crate::people::People::new(config_away_after),
            started_ms,
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn state(&self) -> &State {
        &self.state
    }

    /// The origin thermostats are given.
    pub fn origin(&self) -> &PublicOrigin {
        &self.origin
    }

    /// The browser rule both ports apply before routing.
    pub(crate) fn browsers(&self) -> &Browsers {
        &self.browsers
    }

    /// The presence rule's handle: its wait, and the nudge that makes it decide again.
    pub fn people(&self) -> &crate::people::People {
        &self.people
    }

    pub fn presence(&self) -> &Presence {
        &self.presence
    }

    pub fn weather(&self) -> &Weather {
        &self.weather
    }

    pub fn alerts(&self) -> &crate::alerts::Alerts {
        &self.alerts
    }

    pub fn energy(&self) -> &crate::energy::Live {
        &self.energy
    }

    pub fn events(&self) -> &EventStreams {
        &self.events
    }

    pub fn answered(&self) -> &Answered {
        &self.answered
    }

    pub fn started_ms(&self) -> i64 {
        self.started_ms
    }

    pub fn homekit(&self) -> &HomeKit {
        &self.homekit
    }

    pub fn hub(&self) -> &Arc<Hub> {
        self.state.hub()
    }

    pub fn availability(&self, serial: &str) -> Availability {
        let holding = self.hub().subscriptions_of(serial) > 0;
        self.presence.availability(serial, holding)
    }

    /// A known thermostat's reading now ([`crate::thermostat::reading`]); `None` for a serial
    /// never seen.
    pub fn reading(&self, serial: &str) -> Option<Arc<Reading>> {
        self.reading_with(serial, self.availability(serial))
    }

    /// The reading, its availability given (counted once for many thermostats: [`Self::availability`]
    /// asks the hub each time).
    pub fn reading_with(&self, serial: &str, availability: Availability) -> Option<Arc<Reading>> {
        self.reading_stamped(serial, availability).map(|(r, _)| r)
    }

    /// The reading and what it was made from, for what a surface keeps made of it.
    pub fn reading_stamped(
        &self,
        serial: &str,
        availability: Availability,
    ) -> Option<(Arc<Reading>, Stamp)> {
        let now_ms = self.config.clock.now_ms();
        self.readings.get(
            &self.state,
            serial,
            availability,
            now_ms,
            &self.weather,
            &self.config.zoneinfo,
        )
    }

    /// The time now on the clock of `serial`'s structure (its time zone, as its reading names
    /// it; UTC without one).
    pub fn local_time(&self, serial: &str) -> crate::thermostat::course::Local {
        crate::thermostat::course::Local::at(&self.zone_of(serial), self.config.clock.now_ms())
    }

    /// The time zone of `serial`'s structure, as its reading names it (resolved once per name).
    pub fn zone_of(&self, serial: &str) -> Arc<crate::zone::Zone> {
        let name = self.reading(serial).and_then(|r| r.time_zone.clone());
        self.readings.zone(name.as_deref(), &self.config.zoneinfo)
    }

    /// What `serial`'s reading would be made from now (to tell whether something made from an
    /// earlier reading is still current: [`Stamp::still`]).
    pub fn sources(&self, serial: &str, availability: Availability) -> Option<Sources> {
        Sources::now(&self.state, serial, availability, &self.weather)
    }

    /// Who may see a thermostat: the accounts' one rule, in this server's mode.
    pub fn visibility(&self) -> Visibility {
        Visibility::new(self.config.require_device_pairing)
    }

    /// What `viewer` may do with `serial` ([`crate::accounts::visibility`]).
    pub fn sight(&self, serial: &str, viewer: Viewer<'_>) -> Sight {
        self.visibility().sight(&self.state, serial, viewer)
    }
}

impl crate::people::engine::Context for App {
    fn config(&self) -> &Config {
        &self.config
    }

    fn state(&self) -> &State {
        &self.state
    }

    fn people(&self) -> &crate::people::People {
        &self.people
    }

    fn reading(&self, serial: &str) -> Option<Arc<Reading>> {
        App::reading(self, serial)
    }

    fn visibility(&self) -> Visibility {
        App::visibility(self)
    }
}

impl crate::alerts::Context for App {
    fn config(&self) -> &Config {
        &self.config
    }

    fn state(&self) -> &State {
        &self.state
    }

    fn alerts(&self) -> &crate::alerts::Alerts {
        &self.alerts
    }

    fn energy(&self) -> &crate::energy::Live {
        &self.energy
    }

    fn last_seen(&self, serial: &str) -> Option<i64> {
        self.presence.last_seen(serial)
    }

    fn reading(&self, serial: &str) -> Option<Arc<Reading>> {
        App::reading(self, serial)
    }

    fn started_ms(&self) -> i64 {
        self.started_ms
    }

    fn sight(&self, serial: &str) -> Sight {
        App::sight(self, serial, Viewer::Alerts)
    }
}

/// The HomeKit identity, made on first use. A convenience like history: one that cannot be
/// opened (an unwritable directory, a damaged file, which is named and kept) turns HomeKit off
/// and is logged loudly, rather than keeping the thermostats from being served.
#[cfg(feature = "homekit")]
fn open_homekit(config: &Config) -> Option<Arc<crate::hap::Identity>> {
    if !config.homekit.enabled {
        return None;
    }
    crate::hap::Identity::open(&config.homekit_dir())
        .map(Arc::new)
        .map_err(|e| log::error!("HomeKit is off: {e}"))
        .ok()
}

/// The origin thermostats are given, worked out once at startup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicOrigin {
    /// As configured (or detected), without an added port.
    pub raw: String,
    /// With an explicit port: the base of every URL handed to a thermostat.
    pub with_port: String,
    /// The host as an IP address where it can be resolved, else the host name.
    pub ip: String,
    pub port: u16,
    pub ssl: bool,
}

impl PublicOrigin {
    /// From the configured origin, or (when none is set) this machine's LAN address and the
    /// device port actually bound.
    pub fn resolve(configured: Option<&ApiOrigin>, device_port: u16, tls: bool) -> PublicOrigin {
        let origin = match configured {
            Some(o) => o.clone(),
            None => ApiOrigin {
                scheme: if tls { "https" } else { "http" }.into(),
                host: lan_address().map_or_else(|| "127.0.0.1".to_string(), |ip| ip.to_string()),
                port: Some(device_port),
            },
        };
        let port = origin.port.unwrap_or(device_port);
        let host = origin.bare_host();
        let ip = match host.parse::<IpAddr>() {
            Ok(ip) => ip.to_string(),
            Err(_) => (host, port)
                .to_socket_addrs()
                .ok()
                .and_then(|mut addrs| addrs.find(|a| a.is_ipv4()))
                .map_or_else(|| host.to_string(), |a| a.ip().to_string()),
        };
        PublicOrigin {
            raw: origin.raw(),
            with_port: origin.with_port(device_port),
            ip,
            port,
            ssl: origin.is_https(),
        }
    }

    /// The URL a thermostat's `cloudregisterurl` must be set to.
    pub fn cloud_register_url(&self) -> String {
        format!("{}/entry", self.with_port)
    }

    /// Whether it names this machine's loopback (`127.0.0.1`, `localhost`, `::1`), which only
    /// this machine can reach.
    pub fn is_loopback(&self) -> bool {
        self.ip.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

/// Why what the page shows a person to hand to a thermostat or a phone cannot work from
/// another machine, said plainly; `None` when nothing says so. The one place the page's Add
/// and Apple Home panels learn it (`/api/config`, `/api/homekit`).
pub fn unreachable_from_lan(what: Reach, origin: &PublicOrigin, config: &Config) -> Option<String> {
    match what {
        Reach::Thermostats if config.device_bind.is_loopback() => Some(format!(
            "hearth's device port listens only on {} (SERVER_HOST), so no thermostat can reach \
             it: set SERVER_HOST to 0.0.0.0 or this machine's LAN address.",
            config.device_bind
        )),
        Reach::Thermostats if origin.is_loopback() => Some(format!(
            "{} is this machine's own loopback address: a thermostat cannot reach it. Set \
             API_ORIGIN to this machine's LAN address (http://192.168.1.10:8000, say).",
            origin.raw
        )),
        Reach::Phones if config.control_bind.is_loopback() => Some(format!(
            "The bridge listens only on {} (CONTROL_HOST), so no phone can pair or reach it: \
             set CONTROL_HOST to 0.0.0.0 or this machine's LAN address.",
            config.control_bind
        )),
        Reach::Thermostats | Reach::Phones => None,
    }
}

/// Who must reach what the page shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Thermostats, at the address they register at (the device port).
    Thermostats,
    /// Phones, at the HomeKit bridge.
    Phones,
}

/// The address this machine uses to reach other hosts: connecting a UDP socket picks the
/// outgoing interface without sending anything.
fn lan_address() -> Option<IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?; // TEST-NET-1: never routed anywhere real
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_unspecified()).then_some(ip)
}

impl crate::history::Context for App {
    fn config(&self) -> &Config {
        &self.config
    }

    fn state(&self) -> &State {
        &self.state
    }

    fn energy(&self) -> &crate::energy::Live {
        &self.energy
    }

    fn availability(&self, serial: &str, holding: bool) -> Availability {
        self.presence.availability(serial, holding)
    }

    fn reading_with(&self, serial: &str, availability: Availability) -> Option<Arc<Reading>> {
        App::reading_with(self, serial, availability)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_origin_gets_an_explicit_port() {
        let o = ApiOrigin::parse("http://192.168.1.10").unwrap();
        let p = PublicOrigin::resolve(Some(&o), 8000, false);
        assert_eq!(p.with_port, "http://192.168.1.10:8000");
        assert_eq!(p.raw, "http://192.168.1.10");
        assert_eq!(p.cloud_register_url(), "http://192.168.1.10:8000/entry");
        assert_eq!(
            (p.ip.as_str(), p.port, p.ssl),
            ("192.168.1.10", 8000, false)
        );
    }

    #[test]
    fn detected_origin_uses_the_bound_port() {
        let p = PublicOrigin::resolve(None, 18000, false);
        assert!(p.with_port.starts_with("http://"), "{}", p.with_port);
        assert!(p.with_port.ends_with(":18000"), "{}", p.with_port);
    }

    #[test]
    fn what_cannot_work_from_another_machine_is_said() {
        let lan = PublicOrigin::resolve(
            ApiOrigin::parse("http://192.168.1.10").ok().as_ref(),
            8000,
            false,
        );
        let mut config = Config::local("/nonexistent");
        let open: IpAddr = "0.0.0.0".parse().unwrap();
        config.device_bind = open;
        config.control_bind = open;
        assert_eq!(
            unreachable_from_lan(Reach::Thermostats, &lan, &config),
            None
        );
        assert_eq!(unreachable_from_lan(Reach::Phones, &lan, &config), None);
        for name in ["http://localhost", "http://127.0.0.1", "http://[::1]"] {
            let own = PublicOrigin::resolve(ApiOrigin::parse(name).ok().as_ref(), 8000, false);
            let said = unreachable_from_lan(Reach::Thermostats, &own, &config).unwrap_or_default();
            assert!(
                said.contains("loopback address: a thermostat cannot reach it"),
                "{name}: {said}"
            );
        }
        config.device_bind = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
        config.control_bind = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
        let said = unreachable_from_lan(Reach::Thermostats, &lan, &config).unwrap_or_default();
        assert!(
            said.starts_with("hearth's device port listens only on 127.0.0.1 (SERVER_HOST)"),
            "{said}"
        );
        let said = unreachable_from_lan(Reach::Phones, &lan, &config).unwrap_or_default();
        assert!(
            said.starts_with("The bridge listens only on 127.0.0.1 (CONTROL_HOST)"),
            "{said}"
        );
    }
}
