//! Starting and stopping the whole server.
//!
//! [`Server::start`] reads this box's names when the configuration holds none (for the `Host`
//! check: [`BoxNames`]), loads the store, loads `CERT_DIR`'s certificate, sizes the listeners to
//! the box ([`Budget`]: the soft descriptor limit raised to the hard one, the tasks the process
//! may start), binds both ports, and starts the threads below. Every one of them watches
//! one [`Shutdown`] signal; [`Server::shutdown`] triggers it stage by stage, waiting for the
//! threads that must end before the next stage begins.
//!
//! The threads, by name, and how the signal reaches each:
//!
//! - Stage 1, intake:
//!   - `device-conn`, `control-conn` take turns accepting connections, and each serves what it
//!     accepted (with `CERT_DIR`, over TLS). The signal shuts the listening socket down, which
//!     wakes the threads accepting; then connections waiting for a request (or in their TLS
//!     handshake) are closed and requests in hand answered. Parked connections are the hub's.
//!   - `admin`, the CLI's admin socket (`admin.sock`): the signal shuts its socket down (its
//!     file may be gone); the file is removed.
//!   - `maintenance` (snapshots, heap trimming, the service manager's watchdog, the
//!     self-probe): its timed wait on the signal returns.
//!   - With HomeKit (`HOMEKIT`, on by default): `homekit-accept`, each controller's
//!     `homekit-conn` and `homekit-events` (the signal shuts the listening socket down and
//!     closes the controllers' connections), `homekit-mdns` (it sends the advertisement's
//!     goodbye) and the bridge's `homekit-watch` (it ends with the bridge).
//! - Stage 2, bridges:
//!   - `mqtt` (with MQTT), and the MQTT client's own threads: its `select!` sees the signal's
//!     channel close; it publishes `offline` and disconnects, which ends the client's threads.
//!     Waited for at most 8 s.
//!   - `history` (unless its directory cannot be made): its `select!` sees the channel close.
//!   - `alerts` and `alert-delivery` (unless the alert record cannot be opened): their
//!     `select!`s see the channel close; a delivery under way ends within its timeout (5 s),
//!     and what is still owed is delivered after the next start.
//!   - `people`, the presence rule: its `select!` sees the channel close.
//! - Stage 3, pushes:
//!   - `notifier`, with its `push-writer-N`: the signal sets the hub's flag and notifies its
//!     condition variable; it ends every held subscribe after writing what is queued.
//!   - `events`, with its `event-writer-N`: the signal sends a stop on its control channel;
//!     it ends every stream after what is queued.
//!
//! Short-lived threads (a weather fetch, an onboarding scan) are not watched: they end on their
//! own timeouts. A start that fails half-way triggers every stage at once, without waiting.
//! [`Server::shutdown`] does exactly this, in this order:
//!
//! 1. **Intake**: both listeners, the admin socket, the maintenance thread and HomeKit stop.
//!    First, so that once anything else begins to stop no new request can change the
//!    state or park a subscribe; a request already being handled is answered, and what it
//!    commits still reaches everything below, which is still running. The maintenance thread
//!    stops here because its self-probe would find the listeners closing.
//! 2. **Bridges**: MQTT, history, alerts and the presence rule. After intake, so no thermostat
//!    or client changes what MQTT last published (its `offline` is the last word) or what
//!    history last recorded; before the hub, so a command MQTT ran in the meantime still
//!    reaches the thermostat through its held subscribe. MQTT, alerts and the presence rule,
//!    which can commit a change, are waited for here; history, which only reads the state,
//!    writes its last minute of energy beside stages 3 and 4 and is waited for with them.
//! 3. **Pushes**: the hub's notifier and the event streams. After everything that can commit
//!    a change, so every push is written before held subscribes and streams are ended.
//! 4. **Store**: a final snapshot, so the next start replays little or no journal: written
//!    when the journal since the last one is an eighth of its size or more (or one is due),
//!    else the next start replays that journal, in less time than the snapshot would take
//!    here ([`crate::store::Store::snapshot_due_at_stop`]; with 10,000 thermostats a snapshot
//!    is some 0.3 s of a stop). Nothing that can commit is left once stage 3 begins, so it is
//!    written on its own thread (`snapshot`) while the pushes end.

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::accounts::Viewer;
use crate::admin::socket::{AdminReply, AdminSocket, Handler, SOCKET_FILE};
use crate::app::{App, PublicOrigin};
use crate::config::{BoxNames, Config};
use crate::control_port::ControlPort;
use crate::device::DeviceApi;
use crate::history::Recorder;
use crate::http::admission::{Admission, Bounds, Budget};
use crate::http::client::{self, Url};
use crate::http::listener::{BODY_BUDGET_PER_CLIENT, CONNECTION_STACK, Limits, Listener};
use crate::http::tls::{self, TlsError};
use crate::hub::Hub;
use crate::mqtt::Mqtt;
use crate::service;
use crate::state::State;
use crate::store::StoreError;
use crate::util::clock::Stopwatch;
use crate::util::memory;
use crate::util::outbound::OutboundGate;
use crate::util::shutdown::Shutdown;

const SMALL_STACK: usize = 256 * 1024;
/// Consecutive self-probes of a listener that answered nobody before the watchdog gives up on
/// it.
const WATCHDOG_FAILURES: u32 = 3;

/// Called if a listener stops answering the watchdog's self-probe; the command line exits so
/// that systemd restarts it.
pub type FatalHook = Arc<dyn Fn(String) + Send + Sync>;

/// The stages of stopping, in order (see the module's documentation for why).
#[derive(Clone, Copy)]
enum Stage {
    Intake = 1,
    Bridges = 2,
    Pushes = 3,
}

impl Stage {
    /// The signal, as the threads of this stage watch it.
    fn of(self, shutdown: &Shutdown) -> Shutdown {
        shutdown.at(self as u8)
    }
}

/// Stops what a start that failed half-way had started (without waiting for it: such a start
/// is followed by the process's exit, or by a test's next step), unless disarmed.
struct StopUnlessStarted(Shutdown);

impl StopUnlessStarted {
    fn disarm(self) {
        std::mem::forget(self);
    }
}

impl Drop for StopUnlessStarted {
    fn drop(&mut self) {
        self.0.trigger();
    }
}

/// A running server: its threads, by the stage that stops them.
pub struct Server {
    app: Arc<App>,
    /// The two ports' services (for what each keeps for itself: [`Server::outbound`]).
    device_api: Arc<DeviceApi>,
    control_api: Arc<ControlPort>,
    shutdown: Shutdown,
    public: Public,
    // Stage 1.
    device: Listener,
    control: Listener,
    admin: Option<AdminSocket>,
    maintenance: JoinHandle<()>,
    // Stage 2.
    mqtt: Option<Mqtt>,
    history: Option<Recorder>,
    alerts: Option<crate::alerts::engine::Threads>,
    /// The presence rule's thread (`people`).
    people: JoinHandle<()>,
    /// The HomeKit bridge's listener and advertisement (`HOMEKIT`).
    homekit: Option<HomeKitRunning>,
    // Stage 3.
    notifier: JoinHandle<()>,
    events: JoinHandle<()>,
}

#[derive(Debug)]
pub enum StartError {
    Store(StoreError),
    Bind {
        what: &'static str,
        addr: SocketAddr,
        error: io::Error,
    },
    Thread(io::Error),
    /// `CERT_DIR`'s certificate or key cannot be used.
    Tls(TlsError),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Store(e) => write!(f, "{e}"),
            StartError::Bind { what, addr, error } => {
                write!(f, "could not listen on {addr} ({what}): {error}")
            }
            StartError::Thread(e) => write!(f, "could not start a thread: {e}"),
            StartError::Tls(e) => write!(f, "CERT_DIR: {e}"),
        }
    }
}

impl std::error::Error for StartError {}

impl From<StoreError> for StartError {
    fn from(e: StoreError) -> Self {
        StartError::Store(e)
    }
}

impl Server {
    /// Starts a server; a dead listener is only logged (see [`Server::start_with`]).
    pub fn start(config: Config) -> Result<Server, StartError> {
        Server::start_with(config, Arc::new(|why: String| log::error!("{why}")))
    }

    /// Starts a server: the list of what it starts, in order. `on_fatal` is called if the
    /// watchdog's self-probe of a listener fails repeatedly. If a step fails, the threads
    /// already started are stopped.
    pub fn start_with(config: Config, on_fatal: FatalHook) -> Result<Server, StartError> {
        let shutdown = Shutdown::new();
        let (intake, bridges, pushes) = (
            Stage::Intake.of(&shutdown),
            Stage::Bridges.of(&shutdown),
            Stage::Pushes.of(&shutdown),
        );
        let unfinished = StopUnlessStarted(pushes.clone());
        let config = with_box_names(config);
        let (state, hub) = load_store(&config)?;
        let tls = load_tls(&config)?;
        let mut ports = bind_ports(&config, tls.as_ref())?;
        let origin = public_origin(&config, ports.public.device, tls.is_some());
        let app = Arc::new(App::new(config, state, origin));
        ports.device.limits.answered = Arc::clone(&app.answered().device);
        ports.control.limits.answered = Arc::clone(&app.answered().control);
        let notifier = start_notifier(&hub, &pushes)?;
        let events = start_events(&app, &hub, &pushes)?;
        let device_api = Arc::new(DeviceApi::new(Arc::clone(&app)));
        let device = ports
            .device
            .serve(Arc::clone(&device_api) as _, intake.clone())?;
        let control_api = Arc::new(ControlPort::new(Arc::clone(&app)));
        let control = ports
            .control
            .serve(Arc::clone(&control_api) as _, intake.clone())?;
        let probed = vec![
            (device.addr(), device.answers()),
            (control.addr(), control.answers()),
        ];
        let maintenance = start_maintenance(&app, probed, on_fatal, intake.clone())?;
        let admin = start_admin(&app, &intake);
        let mqtt = Mqtt::start(&(Arc::clone(&app) as _), &bridges).map_err(StartError::Thread)?;
        let history = start_history(&app, &bridges);
        let alerts = start_alerts(&app, &bridges);
        let people = crate::people::engine::start(&(Arc::clone(&app) as _), &bridges)
            .map_err(StartError::Thread)?;
        let homekit = start_homekit(&app, &intake);
        log_started(&app, &ports.public, tls.is_some());
        unfinished.disarm();
        Ok(Server {
            app,
            device_api,
            control_api,
            shutdown,
            public: ports.public,
            device,
            control,
            admin,
            maintenance,
            mqtt,
            history,
            alerts,
            people,
            homekit,
            notifier,
            events,
        })
    }

    /// The device port's public address (the TLS front's, with `CERT_DIR`).
    pub fn device_addr(&self) -> SocketAddr {
        self.public.device
    }

    pub fn control_addr(&self) -> SocketAddr {
        self.public.control
    }

    /// Each port's connections now (device, control), as its admission counts them.
    #[doc(hidden)]
    pub fn connections(&self) -> [crate::http::admission::Counts; 2] {
        [
            self.device.admission().counts(),
            self.control.admission().counts(),
        ]
    }

    /// The HomeKit listener's address, when HomeKit runs.
    pub fn homekit_addr(&self) -> Option<SocketAddr> {
        self.homekit.as_ref().map(|h| h.addr())
    }

    pub fn app(&self) -> &Arc<App> {
        &self.app
    }

    /// Each port's gate of requests waiting on an outbound call (device, control), for the
    /// tests that hold them.
    #[doc(hidden)]
    pub fn outbound(&self) -> [&OutboundGate; 2] {
        [self.device_api.outbound(), self.control_api.outbound()]
    }

    /// Stops the server in the order written down in the module's documentation: triggers
    /// each stage of the shutdown signal and waits for the threads that must end before the
    /// next; then ends the pushes, writes the final snapshot (when it is worth it) and lets
    /// history write its last minute, all three at once.
    pub fn shutdown(self) {
        let Server {
            app,
            shutdown,
            device,
            control,
            admin,
            maintenance,
            mqtt,
            history,
            alerts,
            people,
            homekit,
            notifier,
            events,
            // Nothing to stop: a new field that runs a thread must be stopped above or below.
            device_api: _,
            control_api: _,
            public: _,
        } = self;
        // How long each stage took, in the log: where a slow stop spends its time.
        let began = Stopwatch::start();
        let ms = |since: &Stopwatch| since.elapsed().as_millis();
        // 1. Intake.
        let stage = Stopwatch::start();
        Stage::Intake.of(&shutdown).trigger();
        device.join();
        control.join();
        if let Some(admin) = admin {
            admin.join();
        }
        let _ = maintenance.join();
        if let Some(homekit) = homekit {
            homekit.join();
        }
        let intake = ms(&stage);
        // 2. Bridges: those that can commit a change are waited for. History only reads the
        // state; its last minute of energy is written beside what follows.
        let stage = Stopwatch::start();
        Stage::Bridges.of(&shutdown).trigger();
        if let Some(mqtt) = mqtt {
            mqtt.join();
        }
        if let Some(alerts) = alerts {
            alerts.join();
        }
        let _ = people.join();
        let bridges = ms(&stage);
        // 3 and 4. Nothing that can commit is left: the snapshot is written while the pushes
        // end (each on its own threads; 10,000 held thermostats made the two, one after the
        // other, most of a stop).
        let stage = Stopwatch::start();
        Stage::Pushes.of(&shutdown).trigger();
        let snapshot = || {
            let took = Stopwatch::start();
            let (due, journal, last) = app.state().snapshot_due_at_stop();
            if !due {
                return format!(
                    "no snapshot: the next start replays the journal's {} kB (the snapshot is {} kB)",
                    journal / 1024,
                    last / 1024
                );
            }
            if let Err(e) = app.state().snapshot() {
                log::error!("final snapshot failed (the journal still holds every change): {e}");
            }
            format!("snapshot took {} ms", ms(&took))
        };
        let (pushes, last_minute, store) = thread::scope(|scope| {
            let writing = thread::Builder::new()
                .name("snapshot".into())
                .spawn_scoped(scope, snapshot)
                .map_err(|e| log::warn!("writing the final snapshot on this thread: {e}"));
            let _ = notifier.join();
            let _ = events.join();
            let pushes = ms(&stage);
            if let Some(history) = history {
                history.join();
            }
            let last_minute = ms(&stage);
            let store = match writing {
                Ok(writing) => writing
                    .join()
                    .unwrap_or_else(|_| "the snapshot's thread panicked".into()),
                Err(()) => snapshot(),
            };
            (pushes, last_minute, store)
        });
        log::info!(
            "stopped in {} ms: intake {intake} ms, bridges {bridges} ms, then pushes, history and \
             snapshot at once {} ms (pushes ended at {pushes} ms, history at {last_minute} ms; \
             {store})",
            ms(&began),
            ms(&stage)
        );
    }
}

/// Opens the data directory's store (snapshot, then journal) and the hub its commits publish to.
fn load_store(config: &Config) -> Result<(State, Arc<Hub>), StartError> {
    let hub = Arc::new(Hub::with_clock(config.clock.clone()));
    let (state, report) = State::open(&config.data_dir, Arc::clone(&hub))?;
    let state = state.with_clock(config.clock.clone());
    log::info!(
        "loaded {} (snapshot at record {}, {} journal records replayed{})",
        config.data_dir.display(),
        report.snapshot_seq.map_or("none".into(), |s| s.to_string()),
        report.replayed_records,
        if report.torn_bytes > 0 {
            format!(", dropped a torn {}-byte tail", report.torn_bytes)
        } else {
            String::new()
        }
    );
    Ok((state, hub))
}

/// `CERT_DIR`'s certificate and key, if it is set.
fn load_tls(config: &Config) -> Result<Option<Arc<rustls::ServerConfig>>, StartError> {
    config
        .cert_dir
        .as_deref()
        .map(tls::load_config)
        .transpose()
        .map_err(StartError::Tls)
}

/// Both ports bound: their addresses and the sockets the HTTP listeners will serve.
struct Ports {
    public: Public,
    device: Bound,
    control: Bound,
}

/// The ports' addresses.
#[derive(Clone, Copy)]
struct Public {
    device: SocketAddr,
    control: SocketAddr,
}

/// A socket for an HTTP listener, with its limits and its admission.
struct Bound {
    name: &'static str,
    socket: TcpListener,
    limits: Limits,
    admission: Arc<Admission>,
}

impl Bound {
    fn serve(
        self,
        service: Arc<dyn crate::http::Service>,
        shutdown: Shutdown,
    ) -> Result<Listener, StartError> {
        Listener::start_admitted(
            self.name,
            self.socket,
            self.limits,
            self.admission,
            service,
            shutdown,
        )
        .map_err(StartError::Thread)
    }
}

/// The HomeKit bridge's listener and advertisement, when HomeKit is on (`HOMEKIT`).
#[cfg(feature = "homekit")]
use crate::homekit::run::Running as HomeKitRunning;

#[cfg(feature = "homekit")]
fn start_homekit(app: &Arc<App>, intake: &Shutdown) -> Option<HomeKitRunning> {
    crate::homekit::run::start(&(Arc::clone(app) as _), intake)
}

/// The connections HomeKit's listener may hold, kept out of the ports' share.
#[cfg(feature = "homekit")]
fn homekit_connections(config: &Config) -> usize {
    if config.homekit.enabled {
        crate::homekit::server::Limits::default().total
    } else {
        0
    }
}

/// A build without HomeKit (`--no-default-features`, a router's): nothing of it runs, which
/// this type, having no value, makes the compiler check.
#[cfg(not(feature = "homekit"))]
enum HomeKitRunning {}

#[cfg(not(feature = "homekit"))]
impl HomeKitRunning {
    fn addr(&self) -> SocketAddr {
        match *self {}
    }

    fn join(self) {
        match self {}
    }
}

#[cfg(not(feature = "homekit"))]
fn start_homekit(_: &Arc<App>, _: &Shutdown) -> Option<HomeKitRunning> {
    None
}

#[cfg(not(feature = "homekit"))]
fn homekit_connections(_: &Config) -> usize {
    0
}

/// How many connections each port may hold: sized from what the process may open and start
/// (its soft descriptor limit raised to the hard one first), said in the log.
fn size_to_the_box(config: &Config) -> (Bounds, Bounds) {
    let budget = Budget::measure();
    let homekit = homekit_connections(config);
    let sizing = budget.size(
        config.max_connections_per_client,
        config.max_connections,
        homekit,
        CONNECTION_STACK,
    );
    if let Some(asked) = config.max_connections {
        let got = sizing.device.total.min(sizing.control.total);
        if asked > got {
            log::warn!(
                "MAX_CONNECTIONS={asked} is more than this process can hold; {got} per port at most"
            );
        }
    }
    log::info!(
        "connections sized to {budget}: device {} ({} served at once), control {} ({}), \
         {} from one address; HomeKit {homekit}",
        sizing.device.total,
        sizing.device.threaded,
        sizing.control.total,
        sizing.control.threaded,
        config.max_connections_per_client,
    );
    (sizing.device, sizing.control)
}

fn bind_ports(
    config: &Config,
    tls: Option<&Arc<rustls::ServerConfig>>,
) -> Result<Ports, StartError> {
    let bind = |what, ip, port| {
        let addr = SocketAddr::new(ip, port);
        TcpListener::bind(addr).map_err(|error| StartError::Bind { what, addr, error })
    };
    let device_socket = bind("device port", config.device_bind, config.device_port)?;
    let control_socket = bind("control port", config.control_bind, config.control_port)?;
    let device_public = device_socket.local_addr().map_err(StartError::Thread)?;
    let control_public = control_socket.local_addr().map_err(StartError::Thread)?;
    let (device_bounds, control_bounds) = size_to_the_box(config);
    let bound = |name, socket, bounds: Bounds| {
        let limits = Limits {
            workers: config.http_workers,
            body_timeout: config.body_read_timeout,
            head_timeout: config.head_timeout,
            idle_timeout: config.idle_timeout,
            per_client: config.max_connections_per_client,
            max_connections: bounds.total,
            max_threads: bounds.threaded,
            tls: tls.cloned(),
            clock: config.clock.clone(),
            // The App's counters, once it exists (see `start_with`).
            answered: Arc::default(),
        };
        let admission = Arc::new(Admission::new(
            match name {
                "device" => "device port",
                _ => "control port",
            },
            bounds,
            BODY_BUDGET_PER_CLIENT,
            config.clock.clone(),
        ));
        Bound {
            name,
            socket,
            limits,
            admission,
        }
    };
    Ok(Ports {
        public: Public {
            device: device_public,
            control: control_public,
        },
        device: bound("device", device_socket, device_bounds),
        control: bound("control", control_socket, control_bounds),
    })
}

/// The origin thermostats are told to use, with a warning when it cannot be reached from the
/// LAN although the device port listens there. A device port bound to loopback (`SERVER_HOST`,
/// as `hearth demo` does for its simulated thermostats) is meant for this machine alone: the
/// warning would ask for a change the owner does not want.
fn public_origin(config: &Config, device_public: SocketAddr, tls: bool) -> PublicOrigin {
    let origin = PublicOrigin::resolve(config.api_origin.as_ref(), device_public.port(), tls);
    if unreachable_from_the_lan(&origin, device_public) {
        log::warn!(
            "thermostats are told to use {}, which they cannot reach; set API_ORIGIN to this machine's LAN address",
            origin.with_port
        );
    }
    origin
}

/// Whether thermostats on the LAN are told a loopback address while the device port listens
/// for them there.
fn unreachable_from_the_lan(origin: &PublicOrigin, device_public: SocketAddr) -> bool {
    !device_public.ip().is_loopback() && (origin.ip.starts_with("127.") || origin.ip == "::1")
}

/// `config` with this box's names (the `Host` check admits them), read from this machine now
/// if it holds none; logged, since they change only with a restart.
fn with_box_names(mut config: Config) -> Config {
    let names = config.box_names.get_or_insert_with(BoxNames::of_this_box);
    if !names.names().is_empty() {
        log::info!(
            "this box's names, which both ports answer to (a new host name or search domain \
             needs a restart): {}",
            names.names().join(", ")
        );
    }
    config
}

fn log_started(app: &App, public: &Public, https: bool) {
    log::info!(
        "device port {}, control port {}; {}thermostats register at {}",
        public.device,
        public.control,
        if https { "HTTPS on both; " } else { "" },
        app.origin().cloud_register_url()
    );
}

/// The hub's notifier: ends held subscribes at their deadline and writes pushes.
fn start_notifier(hub: &Arc<Hub>, shutdown: &Shutdown) -> Result<JoinHandle<()>, StartError> {
    hub.stop_on(shutdown);
    spawn("notifier", {
        let hub = Arc::clone(hub);
        move || hub.run_notifier()
    })
}

/// The control API's live event streams.
fn start_events(
    app: &Arc<App>,
    hub: &Hub,
    shutdown: &Shutdown,
) -> Result<JoinHandle<()>, StartError> {
    app.events().stop_on(shutdown);
    spawn("events", {
        let app = Arc::clone(app);
        let changes = hub.watch_if(app.events().interest());
        let alerts = app.alerts().watch();
        move || {
            app.events().run(
                changes,
                alerts,
                |id| {
                    let now = app.config().clock.now_ms();
                    app.state()
                        .accounts(|a| a.api_keys.get(id).is_some_and(|k| !k.is_expired(now)))
                },
                // Nobody sees the events of a thermostat the control port keeps out of sight.
                |serial| app.sight(serial, Viewer::Lan).addressable(),
            )
        }
    })
}

/// Energy History's recorder. A convenience: a data directory it cannot write to is logged,
/// not fatal.
fn start_history(app: &Arc<App>, shutdown: &Shutdown) -> Option<Recorder> {
    Recorder::start(&(Arc::clone(app) as _), shutdown)
        .map_err(|e| log::error!("temperature history is off: {e}"))
        .ok()
}

/// The alert rules and their delivery. A record that cannot be opened (an unwritable data
/// directory, a damaged file) is logged loudly, not fatal: the thermostats matter more.
fn start_alerts(app: &Arc<App>, shutdown: &Shutdown) -> Option<crate::alerts::engine::Threads> {
    let context: Arc<dyn crate::alerts::Context> = Arc::clone(app) as _;
    crate::alerts::engine::start(&context, shutdown)
        .map_err(|e| log::error!("alerts are off: {e}"))
        .ok()
}

/// The admin socket the CLI's account commands use while this server holds the store. Without
/// it those commands cannot run until the server stops, so a failure is logged loudly but does
/// not stop the server.
fn start_admin(app: &Arc<App>, shutdown: &Shutdown) -> Option<AdminSocket> {
    let path = app.config().data_dir.join(SOCKET_FILE);
    let handler: Handler = Arc::new({
        let app = Arc::clone(app);
        move |request| {
            let last_seen = |serial: &str| app.presence().last_seen(serial);
            let ctx = crate::admin::Context {
                state: app.state(),
                open_mode: !app.config().require_device_pairing,
                last_seen: Some(&last_seen),
                #[cfg(feature = "homekit")]
                homekit: app.homekit().identity().map(|i| &**i),
            };
            let answer = crate::admin::run(&ctx, request);
            if !request.reads_only() {
                // A person added or removed, a token replaced: the presence rule looks again.
                app.people().nudge();
            }
            match answer {
                Ok(text) => AdminReply { ok: true, text },
                Err(text) => AdminReply { ok: false, text },
            }
        }
    });
    match AdminSocket::start(path.clone(), handler, shutdown.clone()) {
        Ok(socket) => Some(socket),
        Err(e) => {
            log::error!(
                "could not open the admin socket {} ({e}); `hearth users|keys|claim|share|devices` \
                 will not work on this data directory while the server runs",
                path.display()
            );
            None
        }
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, StartError> {
    thread::Builder::new()
        .name(name.to_string())
        .stack_size(SMALL_STACK)
        .spawn(f)
        .map_err(StartError::Thread)
}

/// Every few seconds: write a snapshot if the journal has grown enough, give freed heap back
/// after a burst of requests ([`memory::Trimmer`]); and every `watchdog_interval_secs` probe
/// both listeners ([`Watchdog`]), calling `on_fatal` once one is hung. Runs until `shutdown`.
fn start_maintenance(
    app: &Arc<App>,
    listeners: Vec<(SocketAddr, Arc<AtomicU64>)>,
    on_fatal: FatalHook,
    shutdown: Shutdown,
) -> Result<JoinHandle<()>, StartError> {
    let app = Arc::clone(app);
    let interval = Duration::from_secs(app.config().watchdog_interval_secs);
    // A service manager's watchdog (systemd `WatchdogSec=`) is fed from this loop while no
    // listener is found hung, so a hung process (or a dead listener) is restarted.
    let feed_every = service::watchdog_interval();
    let tick = feed_every
        .map_or(Duration::from_secs(5), |f| f.min(Duration::from_secs(5)))
        .max(Duration::from_millis(100));
    // With `CERT_DIR` the ports speak TLS: the probe does too, trusting our own certificate.
    let prober = match HealthProbe::new(app.config().cert_dir.as_deref()) {
        Err(e) => {
            log::error!("the watchdog cannot probe the TLS ports ({e}); it is off");
            return spawn("maintenance", move || {
                let mut trimmer = memory::Trimmer::default();
                while !shutdown.wait_timeout(tick) {
                    trimmer.tick();
                    snapshot_if_due(&app);
                }
            });
        }
        Ok(prober) => prober,
    };
    let probe = move |addr: SocketAddr| prober.health(addr, Duration::from_secs(5));
    spawn("maintenance", move || {
        let mut watchdog = Watchdog::new(listeners);
        // The watchdog's probes are about the machine, so real time paces them.
        let mut since_probe = Stopwatch::start();
        let mut trimmer = memory::Trimmer::default();
        // A long journal left by a crash is folded into a snapshot at once, not at the first
        // tick: a server that keeps being killed young (a crash loop, a flaky power supply)
        // would otherwise replay an ever longer journal at every start.
        snapshot_if_due(&app);
        while !shutdown.wait_timeout(tick) {
            trimmer.tick();
            snapshot_if_due(&app);
            if feed_every.is_some() && !watchdog.failing() {
                service::notify("WATCHDOG=1");
            }
            if interval.is_zero() || since_probe.elapsed() < interval {
                continue;
            }
            since_probe = Stopwatch::start();
            if let Some(hung) = watchdog.round(&probe) {
                on_fatal(format!("listener {hung} is hung: it answered nobody"));
            }
        }
    })
}

/// What one self-probe of a listener found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// `/health` answered 200.
    Answering,
    /// It answered, but not 200: it is refusing connections under load, and alive.
    Refusing,
    /// The probe got no answer, but the listener answered others meanwhile: busy, not hung.
    Busy,
    /// No answer to anyone since the last probe: hung, if it lasts.
    Silent,
}

impl Verdict {
    /// The probe's outcome, and whether the listener answered anyone (the probe's answer
    /// aside) since the probe before.
    pub fn of(probe: &Result<u16, String>, answered_others: bool) -> Verdict {
        match probe {
            Ok(200) => Verdict::Answering,
            Ok(_) => Verdict::Refusing,
            Err(_) if answered_others => Verdict::Busy,
            Err(_) => Verdict::Silent,
        }
    }
}

/// The listeners' self-probes. A listener is hung after [`WATCHDOG_FAILURES`] probes in a row
/// that nobody was answered by it (not the probe, nor anyone else): one that refuses
/// connections, or answers others while the probe waits, is under load, and alive.
pub struct Watchdog {
    listeners: Vec<Watched>,
}

struct Watched {
    addr: SocketAddr,
    /// The listener's count of answers written, and its value at the last probe.
    answers: Arc<AtomicU64>,
    seen: u64,
    failures: u32,
    last: Verdict,
}

impl Watchdog {
    /// Watches listeners by address and count of answers ([`Listener::answers`]).
    pub fn new(listeners: Vec<(SocketAddr, Arc<AtomicU64>)>) -> Watchdog {
        let listeners = listeners
            .into_iter()
            .map(|(addr, answers)| Watched {
                seen: answers.load(Ordering::Relaxed),
                addr,
                answers,
                failures: 0,
                last: Verdict::Answering,
            })
            .collect();
        Watchdog { listeners }
    }

    /// Whether a listener has gone silent at its last probe.
    pub fn failing(&self) -> bool {
        self.listeners.iter().any(|l| l.failures > 0)
    }

    /// Probes each listener with `probe`; the address of one found hung, if any.
    pub fn round(
        &mut self,
        mut probe: impl FnMut(SocketAddr) -> Result<u16, String>,
    ) -> Option<SocketAddr> {
        let mut hung = None;
        for l in &mut self.listeners {
            let outcome = probe(l.addr);
            let now = l.answers.load(Ordering::Relaxed);
            // The probe's own answer, if it had one, is one of them.
            let others = now.saturating_sub(l.seen) > u64::from(outcome.is_ok());
            l.seen = now;
            let verdict = Verdict::of(&outcome, others);
            if verdict != l.last {
                match (verdict, &outcome) {
                    (Verdict::Answering, _) => log::info!("self-probe of {}: answering", l.addr),
                    (Verdict::Refusing, Ok(status)) => log::warn!(
                        "self-probe of {} answered {status}: refusing connections under load, \
                         not hung",
                        l.addr
                    ),
                    (Verdict::Busy, Err(e)) => log::warn!(
                        "self-probe of {} got no answer ({e}), but others are answered: under \
                         load, not hung",
                        l.addr
                    ),
                    _ => {}
                }
            }
            l.last = verdict;
            if verdict != Verdict::Silent {
                l.failures = 0;
                continue;
            }
            l.failures += 1;
            if let Err(e) = &outcome {
                log::warn!(
                    "self-probe of {} failed ({e}) and it answered nobody else ({} in a row)",
                    l.addr,
                    l.failures
                );
            }
            if l.failures >= WATCHDOG_FAILURES {
                hung = Some(l.addr);
            }
        }
        hung
    }
}

fn snapshot_if_due(app: &App) {
    if app.state().snapshot_due() {
        if let Err(e) = app.state().snapshot() {
            log::error!("snapshot failed (the journal still holds every change): {e}");
        }
    }
}

/// `GET /health` over plain HTTP on a listener of ours bound to `addr` (an unspecified
/// address is asked on loopback): the status it answered, or why there was none within
/// `timeout` per step ([`HealthProbe`] without `CERT_DIR`).
fn health(addr: SocketAddr, timeout: Duration) -> Result<u16, String> {
    let ip = loopback(addr).ip();
    let host = match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    };
    let url = Url {
        host,
        port: Some(addr.port()),
        target: "/health".into(),
    };
    client::request(&url, "GET", &[], &[], timeout)
        .map(|r| r.status)
        .map_err(|e| e.to_string())
}

/// How this machine asks a listener of this server for `/health`: the watchdog's self-probe
/// and `hearth healthcheck`. With `CERT_DIR` both ports speak TLS, and so does the probe,
/// trusting the server's own certificate; else plain HTTP.
pub struct HealthProbe(Option<Arc<rustls::ClientConfig>>);

impl HealthProbe {
    /// The probe for a server with `cert_dir` (`CERT_DIR`), or an error naming the
    /// certificate that cannot be read.
    pub fn new(cert_dir: Option<&Path>) -> Result<HealthProbe, tls::TlsError> {
        cert_dir.map(tls::self_probe).transpose().map(HealthProbe)
    }

    /// The status `/health` answered on the listener bound to `addr` (asked on loopback when
    /// it is bound to every address), each step within `timeout`.
    pub fn health(&self, addr: SocketAddr, timeout: Duration) -> Result<u16, String> {
        match &self.0 {
            Some(config) => tls::health(loopback(addr), config, timeout),
            None => health(addr, timeout),
        }
    }
}

/// Where to reach a listener bound to `addr` from this machine: an unspecified address is
/// asked on loopback.
fn loopback(addr: SocketAddr) -> SocketAddr {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, addr.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The warning asks for API_ORIGIN only where thermostats on the LAN could reach the
    /// device port: not for `hearth demo`'s loopback-only server.
    #[test]
    fn a_loopback_origin_is_a_problem_only_for_a_port_on_the_lan() {
        let origin = |api: &str| {
            PublicOrigin::resolve(
                crate::config::ApiOrigin::parse(api).ok().as_ref(),
                8000,
                false,
            )
        };
        let lan: SocketAddr = ([0, 0, 0, 0], 8000).into();
        let loopback: SocketAddr = ([127, 0, 0, 1], 8000).into();
        assert!(unreachable_from_the_lan(&origin("http://127.0.0.1"), lan));
        assert!(unreachable_from_the_lan(&origin("http://[::1]"), lan));
        assert!(!unreachable_from_the_lan(
            &origin("http://192.168.1.10"),
            lan
        ));
        assert!(!unreachable_from_the_lan(
            &origin("http://127.0.0.1"),
            loopback
        ));
    }

    /// A listener that refuses (503) or answers others while the probe waits is alive, however
    /// long it lasts; one that answers nobody is hung at the third probe in a row, and an
    /// answer in between starts the count again.
    #[test]
    fn a_listener_is_hung_only_when_it_answers_nobody() {
        let addr: SocketAddr = ([127, 0, 0, 1], 8082).into();
        let answers = Arc::new(AtomicU64::new(0));
        let mut watchdog = Watchdog::new(vec![(addr, Arc::clone(&answers))]);
        let timed_out = |_| Err("timed out".to_string());
        for _ in 0..10 {
            // The listener counts its own 503 to the probe.
            answers.fetch_add(1, Ordering::Relaxed);
            assert_eq!(watchdog.round(|_| Ok(503)), None);
            assert!(!watchdog.failing());
        }
        for _ in 0..10 {
            answers.fetch_add(5, Ordering::Relaxed);
            assert_eq!(watchdog.round(timed_out), None);
            assert!(!watchdog.failing());
        }
        assert_eq!(watchdog.round(timed_out), None);
        assert!(watchdog.failing());
        assert_eq!(watchdog.round(timed_out), None);
        answers.fetch_add(1, Ordering::Relaxed);
        assert_eq!(watchdog.round(|_| Ok(200)), None);
        assert!(!watchdog.failing());
        for _ in 0..2 {
            assert_eq!(watchdog.round(timed_out), None);
        }
        assert_eq!(watchdog.round(timed_out), Some(addr));
    }

    #[test]
    fn verdicts() {
        let none: Result<u16, String> = Err("refused".into());
        assert_eq!(Verdict::of(&Ok(200), false), Verdict::Answering);
        assert_eq!(Verdict::of(&Ok(503), false), Verdict::Refusing);
        assert_eq!(Verdict::of(&none, true), Verdict::Busy);
        assert_eq!(Verdict::of(&none, false), Verdict::Silent);
    }
}
