//! Starting and stopping the whole server: the store, both listeners, the hub's notifier, and
//! a maintenance thread (snapshots when the journal has grown; the watchdog's self-probe).

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crossbeam_channel::{Sender, bounded};

use crate::admin::socket::{AdminReply, AdminSocket, Handler, SOCKET_FILE};
use crate::app::{App, PublicOrigin};
use crate::config::Config;
use crate::control_port::ControlPort;
use crate::device::DeviceApi;
use crate::history::Recorder;
use crate::http::client::{self, Url};
use crate::http::listener::{FatalHook, Limits, Listener};
use crate::http::tls::{self, Peers, TlsError, TlsFront};
use crate::hub::Hub;
use crate::mqtt::Mqtt;
use crate::service;
use crate::state::State;
use crate::store::StoreError;
use crate::util::memory;

const SMALL_STACK: usize = 256 * 1024;
/// Consecutive failed self-probes before the watchdog gives up on a listener.
const WATCHDOG_FAILURES: u32 = 3;

pub struct Server {
    app: Arc<App>,
    device: Listener,
    control: Listener,
    notifier: JoinHandle<()>,
    events: JoinHandle<()>,
    maintenance: (Sender<()>, JoinHandle<()>),
    admin: Option<AdminSocket>,
    mqtt: Option<Mqtt>,
    history: Option<Recorder>,
    /// With `CERT_DIR`: the TLS fronts owning the public ports (device, control).
    fronts: Vec<TlsFront>,
    device_public: SocketAddr,
    control_public: SocketAddr,
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

    /// Starts a server. `on_fatal` is called if a listener stops accepting or the watchdog's
    /// self-probe fails; the command line exits so that systemd restarts it.
    pub fn start_with(config: Config, on_fatal: FatalHook) -> Result<Server, StartError> {
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
        let bind = |what, ip, port| {
            let addr = SocketAddr::new(ip, port);
            TcpListener::bind(addr).map_err(|error| StartError::Bind { what, addr, error })
        };
        let tls = config
            .cert_dir
            .as_deref()
            .map(tls::load_config)
            .transpose()
            .map_err(StartError::Tls)?;
        let device_socket = bind("device port", config.device_bind, config.device_port)?;
        let control_socket = bind("control port", config.control_bind, config.control_port)?;
        let device_addr = device_socket.local_addr().map_err(StartError::Thread)?;
        let origin = PublicOrigin::resolve(
            config.api_origin.as_ref(),
            device_addr.port(),
            tls.is_some(),
        );
        if origin.ip.starts_with("127.") || origin.ip == "::1" {
            log::warn!(
                "thermostats are told to use {}, which they cannot reach; set API_ORIGIN to this machine's LAN address",
                origin.with_port
            );
        }
        let control_public = control_socket.local_addr().map_err(StartError::Thread)?;
        let (device_socket, device_front) =
            behind_tls("device", device_socket, tls.as_ref(), &config)?;
        let (control_socket, control_front) =
            behind_tls("control", control_socket, tls.as_ref(), &config)?;
        let limits = |front: &Option<Front>| Limits {
            workers: config.http_workers,
            body_timeout: config.body_read_timeout,
            head_timeout: config.head_timeout,
            idle_timeout: config.idle_timeout,
            per_client: config.max_connections_per_client,
            peers: front.as_ref().map(|(_, peers)| Arc::clone(peers)),
            clock: config.clock.clone(),
        };
        let (device_limits, control_limits) = (limits(&device_front), limits(&control_front));
        let fronts: Vec<TlsFront> = [device_front, control_front]
            .into_iter()
            .flatten()
            .map(|(front, _)| front)
            .collect();
        let app = Arc::new(App::new(config, state, origin));

        let notifier = spawn("notifier", {
            let hub = Arc::clone(&hub);
            move || hub.run_notifier()
        })?;
        let events = spawn("events", {
            let app = Arc::clone(&app);
            let changes = hub.watch_if(app.events.interest());
            move || {
                app.events.run(changes, |id| {
                    let now = app.config.clock.now_ms();
                    app.state
                        .accounts(|a| a.api_keys.get(id).is_some_and(|k| !k.is_expired(now)))
                })
            }
        })?;
        let device = Listener::start(
            "device",
            device_socket,
            device_limits,
            Arc::new(DeviceApi::new(Arc::clone(&app))),
            Arc::clone(&on_fatal),
        )
        .map_err(StartError::Thread)?;
        let control = Listener::start(
            "control",
            control_socket,
            control_limits,
            Arc::new(ControlPort::new(Arc::clone(&app))),
            Arc::clone(&on_fatal),
        )
        .map_err(StartError::Thread)?;
        let maintenance = start_maintenance(
            Arc::clone(&app),
            vec![device.addr(), control.addr()],
            on_fatal,
        )?;
        let admin = start_admin(&app);
        let mqtt = Mqtt::start(&app).map_err(StartError::Thread)?;
        // History is a convenience: a data directory it cannot write to is logged, not fatal.
        let history = Recorder::start(&app)
            .map_err(|e| log::error!("temperature history is off: {e}"))
            .ok();
        log::info!(
            "device port {device_addr}, control port {control_public}; {}thermostats register at {}",
            if fronts.is_empty() {
                ""
            } else {
                "HTTPS on both; "
            },
            app.origin.cloud_register_url()
        );
        Ok(Server {
            app,
            device,
            control,
            notifier,
            events,
            maintenance,
            admin,
            mqtt,
            history,
            fronts,
            device_public: device_addr,
            control_public,
        })
    }

    /// The device port's public address (the TLS front's, with `CERT_DIR`).
    pub fn device_addr(&self) -> SocketAddr {
        self.device_public
    }

    pub fn control_addr(&self) -> SocketAddr {
        self.control_public
    }

    pub fn app(&self) -> &Arc<App> {
        &self.app
    }

    /// Stops accepting requests, ends held subscribes, and writes a final snapshot.
    pub fn shutdown(self) {
        if let Some(admin) = self.admin {
            admin.stop();
        }
        for front in self.fronts {
            front.stop();
        }
        self.device.stop();
        self.control.stop();
        // After the listeners, so no thermostat changes what it last published; before the
        // hub, so a command it ran in the meantime still reaches the thermostat.
        if let Some(mqtt) = self.mqtt {
            mqtt.stop();
        }
        if let Some(history) = self.history {
            history.stop();
        }
        self.app.hub().shutdown(Duration::from_secs(2));
        let _ = self.notifier.join();
        self.app.events.stop();
        let _ = self.events.join();
        drop(self.maintenance.0);
        let _ = self.maintenance.1.join();
        if let Err(e) = self.app.state.snapshot() {
            log::error!("final snapshot failed (the journal still holds every change): {e}");
        }
    }
}

/// The admin socket the CLI's account commands use while this server holds the store. Without
/// it those commands cannot run until the server stops, so a failure is logged loudly but does
/// not stop the server.
fn start_admin(app: &Arc<App>) -> Option<AdminSocket> {
    let path = app.config.data_dir.join(SOCKET_FILE);
    let handler: Handler = Arc::new({
        let app = Arc::clone(app);
        move |request| {
            let last_seen = |serial: &str| app.presence.last_seen(serial);
            let ctx = crate::admin::Context {
                state: &app.state,
                open_mode: !app.config.require_device_pairing,
                last_seen: Some(&last_seen),
            };
            match crate::admin::run(&ctx, request) {
                Ok(text) => AdminReply { ok: true, text },
                Err(e) => AdminReply {
                    ok: false,
                    text: e.to_string(),
                },
            }
        }
    });
    match AdminSocket::start(path.clone(), handler) {
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

/// A TLS front and the map of its relayed clients.
type Front = (TlsFront, Arc<Peers>);

/// Without TLS, `public` itself. With it, a private loopback listener for the HTTP edge, and the
/// front that owns `public` and relays to it, with the map of its clients.
fn behind_tls(
    name: &'static str,
    public: TcpListener,
    tls: Option<&Arc<rustls::ServerConfig>>,
    settings: &Config,
) -> Result<(TcpListener, Option<Front>), StartError> {
    let Some(config) = tls else {
        return Ok((public, None));
    };
    let inner = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(StartError::Thread)?;
    let inner_addr = inner.local_addr().map_err(StartError::Thread)?;
    let peers = Arc::new(Peers::default());
    let front = TlsFront::start(
        name,
        public,
        inner_addr,
        Arc::clone(config),
        Arc::clone(&peers),
        // A handshake is a request head's worth of bytes: it gets the head's deadline.
        settings.head_timeout,
        settings.max_connections_per_client,
        settings.clock.clone(),
    )
    .map_err(StartError::Thread)?;
    Ok((inner, Some((front, peers))))
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, StartError> {
    thread::Builder::new()
        .name(name.to_string())
        .stack_size(SMALL_STACK)
        .spawn(f)
        .map_err(StartError::Thread)
}

/// Every few seconds: write a snapshot if the journal has grown enough, give freed heap back after a burst of requests
/// ([`memory::Trimmer`]); and every
/// `watchdog_interval_secs` probe both listeners, calling `on_fatal` after repeated failures.
fn start_maintenance(
    app: Arc<App>,
    addrs: Vec<SocketAddr>,
    on_fatal: FatalHook,
) -> Result<(Sender<()>, JoinHandle<()>), StartError> {
    let (stop, stopped) = bounded::<()>(0);
    let interval = Duration::from_secs(app.config.watchdog_interval_secs);
    // A service manager's watchdog (systemd `WatchdogSec=`) is fed from this loop while the
    // self-probes pass, so a hung process (or a dead listener) is restarted.
    let feed_every = service::watchdog_interval();
    let tick = feed_every
        .map_or(Duration::from_secs(5), |f| f.min(Duration::from_secs(5)))
        .max(Duration::from_millis(100));
    let handle = spawn("maintenance", move || {
        let mut failures = vec![0u32; addrs.len()];
        let clock = app.config.clock.clone();
        let mut next_probe = clock.now() + interval;
        let mut trimmer = memory::Trimmer::default();
        // A long journal left by a crash is folded into a snapshot at once, not at the first
        // tick: a server that keeps being killed young (a crash loop, a flaky power supply)
        // would otherwise replay an ever longer journal at every start.
        snapshot_if_due(&app);
        while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = stopped.recv_timeout(tick) {
            trimmer.tick();
            snapshot_if_due(&app);
            if feed_every.is_some() && failures.iter().all(|f| *f == 0) {
                service::notify("WATCHDOG=1");
            }
            if interval.is_zero() || clock.now() < next_probe {
                continue;
            }
            next_probe = clock.now() + interval;
            for (addr, failed) in addrs.iter().zip(failures.iter_mut()) {
                if probe(*addr) {
                    *failed = 0;
                    continue;
                }
                *failed += 1;
                log::warn!("self-probe of {addr} failed ({failed} in a row)");
                if *failed >= WATCHDOG_FAILURES {
                    on_fatal(format!("listener {addr} stopped answering"));
                }
            }
        }
    })?;
    Ok((stop, handle))
}

fn snapshot_if_due(app: &App) {
    if app.state.snapshot_due() {
        if let Err(e) = app.state.snapshot() {
            log::error!("snapshot failed (the journal still holds every change): {e}");
        }
    }
}

/// `GET /health` on our own listener: whether it answers.
fn probe(addr: SocketAddr) -> bool {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    let host = match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    };
    let url = Url {
        host,
        port: Some(addr.port()),
        target: "/health".into(),
    };
    // A 503 is the listener refusing a connection over its caps: its accept loop is alive.
    matches!(client::request(&url, "GET", &[], &[], Duration::from_secs(5)), Ok(r) if r.status == 200 || r.status == 503)
}
