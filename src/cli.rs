//! The command line: `hearth serve`, the account commands (`users`, `keys`, `claim`, `share`,
//! `unshare`, `devices`; see [`crate::admin`]), `hearth simulate` and `hearth bench`.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use argh::FromArgs;

use crate::admin::AdminRequest;
use crate::config::{Config, Sources};
use crate::server::Server;
use crate::simulator::fleet::Fleet;

#[derive(FromArgs)]
/// hearth: a home server for Nest Gen1/Gen2 thermostats running No Longer Evil firmware.
struct Cli {
    /// print the version and exit
    #[argh(switch)]
    version: bool,
    #[argh(subcommand)]
    command: Option<Command>,
}

#[derive(FromArgs)]
#[argh(subcommand)]
enum Command {
    Serve(Box<ServeArgs>),
    Users(UsersArgs),
    Keys(KeysArgs),
    Claim(ClaimArgs),
    Share(ShareArgs),
    Unshare(UnshareArgs),
    Devices(DevicesArgs),
    Scan(ScanArgs),
    Point(PointArgs),
    ImportNle(ImportNleArgs),
    Import(ImportArgs),
    Simulate(SimulateArgs),
    Demo(DemoArgs),
    Bench(BenchArgs),
    CrashTest(CrashTestArgs),
}

#[derive(FromArgs)]
#[argh(subcommand, name = "users")]
/// manage users (the default user `owner` always exists)
struct UsersArgs {
    #[argh(subcommand)]
    command: UsersCommand,
}

#[derive(FromArgs)]
#[argh(subcommand)]
enum UsersCommand {
    Add(UsersAdd),
    List(UsersList),
}

#[derive(FromArgs)]
#[argh(subcommand, name = "add")]
/// add a user
struct UsersAdd {
    /// the user's name: 1 to 64 letters, digits, '_', '-', '.' or '@'
    #[argh(positional)]
    name: String,
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "list")]
/// list users
struct UsersList {
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "keys")]
/// manage API keys for /api/v1 (and the control API with CONTROL_REQUIRE_KEY)
struct KeysArgs {
    #[argh(subcommand)]
    command: KeysCommand,
}

#[derive(FromArgs)]
#[argh(subcommand)]
enum KeysCommand {
    Create(KeysCreate),
    List(KeysList),
    Revoke(KeysRevoke),
}

#[derive(FromArgs)]
#[argh(subcommand, name = "create")]
/// create an API key; it is printed once, alone on the last line
struct KeysCreate {
    /// the user the key acts for
    #[argh(option)]
    user: String,
    /// a label, to tell keys apart
    #[argh(option)]
    name: String,
    /// read, write, or read,write
    #[argh(option)]
    scopes: String,
    /// limit the key to this thermostat (repeat for several; default: all of the user's)
    #[argh(option)]
    serial: Vec<String>,
    /// the key stops working after this many days (default: never)
    #[argh(option)]
    expires_days: Option<u32>,
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "list")]
/// list API keys (never the keys themselves)
struct KeysList {
    /// only this user's keys
    #[argh(option)]
    user: Option<String>,
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "revoke")]
/// revoke an API key (it stops working at once)
struct KeysRevoke {
    /// the key's id, as `hearth keys list` shows it
    #[argh(positional)]
    id: String,
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "claim")]
/// claim a thermostat with the entry code it shows (like POST /api/register)
struct ClaimArgs {
    /// the code, e.g. 625-AZZP
    #[argh(positional)]
    code: String,
    /// the user who will own it (created if new)
    #[argh(option)]
    user: String,
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "share")]
/// share a thermostat with another user
struct ShareArgs {
    /// the thermostat's serial
    #[argh(positional)]
    serial: String,
    /// the user to share it with
    #[argh(option)]
    with: String,
    /// read (see it) or control (see and change it)
    #[argh(option)]
    access: String,
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "unshare")]
/// stop sharing a thermostat with a user
struct UnshareArgs {
    /// the thermostat's serial
    #[argh(positional)]
    serial: String,
    /// the user it is shared with
    #[argh(option)]
    with: String,
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "devices")]
/// list thermostats: serial, id, name, owner, shares, last seen
struct DevicesArgs {
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "serve")]
/// run the server (device port 8000, control port 8082, data in ./data). Every option can also
/// be set by the environment variable named in its description; options win.
struct ServeArgs {
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
    /// address to listen on (SERVER_HOST; default 0.0.0.0)
    #[argh(option)]
    bind: Option<String>,
    /// address for the control port (CONTROL_HOST; default: the --bind address)
    #[argh(option)]
    control_bind: Option<String>,
    /// thermostat protocol port (SERVER_PORT; default 8000; 0 picks a free port)
    #[argh(option)]
    device_port: Option<String>,
    /// control API port (CONTROL_PORT; default 8082; 0 picks a free port)
    #[argh(option)]
    control_port: Option<String>,
    /// origin thermostats are told to use, e.g. http://192.168.1.10:8000 (API_ORIGIN; default:
    /// this machine's LAN address and the device port)
    #[argh(option)]
    api_origin: Option<String>,
    /// directory with fullchain.pem and privkey.pem: HTTPS on both ports (CERT_DIR; default unset)
    #[argh(option)]
    cert_dir: Option<String>,
    /// true: new thermostats must be claimed with an entry key (REQUIRE_DEVICE_PAIRING; default false)
    #[argh(option)]
    require_device_pairing: Option<String>,
    /// entry key lifetime in seconds (ENTRY_KEY_TTL_SECONDS; default 3600)
    #[argh(option)]
    entry_key_ttl_seconds: Option<String>,
    /// seconds a thermostat may sleep on a subscribe; held for this minus 10 (SUSPEND_TIME_MAX; default 300)
    #[argh(option)]
    suspend_time_max: Option<String>,
    /// random delay window for thermostat writes, seconds (DEFER_DEVICE_WINDOW; default 15)
    #[argh(option)]
    defer_device_window: Option<String>,
    /// seconds without that delay after a pushed setpoint (DISABLE_DEFER_WINDOW; default 60)
    #[argh(option)]
    disable_defer_window: Option<String>,
    /// held subscribes allowed per thermostat (MAX_SUBSCRIPTIONS_PER_DEVICE; default 100)
    #[argh(option)]
    max_subscriptions_per_device: Option<String>,
    /// true: log every request (DEBUG_LOGGING; default false)
    #[argh(option)]
    debug_logging: Option<String>,
    /// true: keep thermostat log uploads (STORE_DEVICE_LOGS; default false)
    #[argh(option)]
    store_device_logs: Option<String>,
    /// where uploads are kept (DEVICE_LOGS_DIR; default <data dir>/device-logs)
    #[argh(option)]
    device_logs_dir: Option<String>,
    /// weather upstream; the thermostat's query is appended (WEATHER_URL; default none)
    #[argh(option)]
    weather_url: Option<String>,
    /// weather cache lifetime in ms (WEATHER_CACHE_TTL_MS; default 600000)
    #[argh(option)]
    weather_cache_ttl_ms: Option<String>,
    /// worker threads per port (HTTP_WORKERS; default 4)
    #[argh(option)]
    http_workers: Option<String>,
    /// seconds after which a connection with no traffic is closed (IDLE_TIMEOUT_SECONDS; default 60)
    #[argh(option)]
    idle_timeout_seconds: Option<String>,
    /// seconds between self-probes; 0 turns the watchdog off (WATCHDOG_INTERVAL_SECONDS; default 30)
    #[argh(option)]
    watchdog_interval_seconds: Option<String>,
    /// requests per minute per API key on /api/v1 (API_RATE_LIMIT_PER_MINUTE; default 20)
    #[argh(option)]
    api_rate_limit_per_minute: Option<String>,
    /// true: the control API wants an API key of the user `owner` (CONTROL_REQUIRE_KEY; default false)
    #[argh(option)]
    control_require_key: Option<String>,
    /// port of the thermostats' local settings API, for /api/scan-network and
    /// /api/configure-nest (THERMOSTAT_API_PORT; default 8080)
    #[argh(option)]
    thermostat_api_port: Option<String>,
    /// seconds without a request or held subscribe before a thermostat counts as offline
    /// (AVAILABILITY_TIMEOUT_SECONDS; default 300)
    #[argh(option)]
    availability_timeout_seconds: Option<String>,
    /// seconds between history samples of each thermostat (HISTORY_INTERVAL_SECONDS; default 300)
    #[argh(option)]
    history_interval_seconds: Option<String>,
    /// MQTT broker host; unset turns MQTT off (MQTT_HOST)
    #[argh(option)]
    mqtt_host: Option<String>,
    /// MQTT broker port (MQTT_PORT; default 1883)
    #[argh(option)]
    mqtt_port: Option<String>,
    /// MQTT user name (MQTT_USER)
    #[argh(option)]
    mqtt_user: Option<String>,
    /// MQTT password; prefer the variable, a flag shows in `ps` (MQTT_PASSWORD)
    #[argh(option)]
    mqtt_password: Option<String>,
    /// first topic level(s) of state and command topics (MQTT_TOPIC_PREFIX; default nolongerevil)
    #[argh(option)]
    mqtt_topic_prefix: Option<String>,
    /// discovery prefix Home Assistant reads (MQTT_DISCOVERY_PREFIX; default homeassistant)
    #[argh(option)]
    mqtt_discovery_prefix: Option<String>,
    /// MQTT client id (MQTT_CLIENT_ID; default hearth-<8 random hex digits>)
    #[argh(option)]
    mqtt_client_id: Option<String>,
}

impl ServeArgs {
    fn into_sources<'a>(self, env: &'a dyn Fn(&str) -> Option<String>) -> Sources<'a> {
        let mut s = Sources::new(env);
        s.flag("DATA_DIR", self.data_dir);
        s.flag("SERVER_HOST", self.bind);
        s.flag("CONTROL_HOST", self.control_bind);
        s.flag("SERVER_PORT", self.device_port);
        s.flag("CONTROL_PORT", self.control_port);
        s.flag("API_ORIGIN", self.api_origin);
        s.flag("CERT_DIR", self.cert_dir);
        s.flag("REQUIRE_DEVICE_PAIRING", self.require_device_pairing);
        s.flag("ENTRY_KEY_TTL_SECONDS", self.entry_key_ttl_seconds);
        s.flag("SUSPEND_TIME_MAX", self.suspend_time_max);
        s.flag("DEFER_DEVICE_WINDOW", self.defer_device_window);
        s.flag("DISABLE_DEFER_WINDOW", self.disable_defer_window);
        s.flag(
            "MAX_SUBSCRIPTIONS_PER_DEVICE",
            self.max_subscriptions_per_device,
        );
        s.flag("DEBUG_LOGGING", self.debug_logging);
        s.flag("STORE_DEVICE_LOGS", self.store_device_logs);
        s.flag("DEVICE_LOGS_DIR", self.device_logs_dir);
        s.flag("WEATHER_URL", self.weather_url);
        s.flag("WEATHER_CACHE_TTL_MS", self.weather_cache_ttl_ms);
        s.flag("HTTP_WORKERS", self.http_workers);
        s.flag("IDLE_TIMEOUT_SECONDS", self.idle_timeout_seconds);
        s.flag("WATCHDOG_INTERVAL_SECONDS", self.watchdog_interval_seconds);
        s.flag("API_RATE_LIMIT_PER_MINUTE", self.api_rate_limit_per_minute);
        s.flag("CONTROL_REQUIRE_KEY", self.control_require_key);
        s.flag("THERMOSTAT_API_PORT", self.thermostat_api_port);
        s.flag(
            "AVAILABILITY_TIMEOUT_SECONDS",
            self.availability_timeout_seconds,
        );
        s.flag("HISTORY_INTERVAL_SECONDS", self.history_interval_seconds);
        s.flag("MQTT_HOST", self.mqtt_host);
        s.flag("MQTT_PORT", self.mqtt_port);
        s.flag("MQTT_USER", self.mqtt_user);
        s.flag("MQTT_PASSWORD", self.mqtt_password);
        s.flag("MQTT_TOPIC_PREFIX", self.mqtt_topic_prefix);
        s.flag("MQTT_DISCOVERY_PREFIX", self.mqtt_discovery_prefix);
        s.flag("MQTT_CLIENT_ID", self.mqtt_client_id);
        s
    }
}

#[derive(FromArgs)]
#[argh(subcommand, name = "scan")]
/// find thermostats running No Longer Evil firmware on the local network (their settings API
/// on port 8080) and say which already point at this server
struct ScanArgs {
    /// the subnet to probe, at most a /24 (default: the /24 of API_ORIGIN's address)
    #[argh(option)]
    subnet: Option<String>,
    #[argh(option)]
    /// this server's origin, as for serve (API_ORIGIN; default: this machine's LAN address)
    api_origin: Option<String>,
    /// this server's device port, when API_ORIGIN has none (SERVER_PORT; default 8000)
    #[argh(option)]
    device_port: Option<String>,
    /// data directory, for the names of thermostats seen before (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
    /// port of the thermostats' settings API (THERMOSTAT_API_PORT; default 8080)
    #[argh(option)]
    thermostat_api_port: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "point")]
/// point a thermostat at this server: set its cloud-register URL to API_ORIGIN's /entry, and
/// read it back
struct PointArgs {
    /// the thermostat's IPv4 address
    #[argh(positional)]
    ip: String,
    /// the thermostat's API key (default: the one it sent this server, if it ever connected;
    /// none is needed in its first 30 minutes after power-on)
    #[argh(option)]
    api_key: Option<String>,
    /// this server's origin, as for serve (API_ORIGIN; default: this machine's LAN address)
    #[argh(option)]
    api_origin: Option<String>,
    /// this server's device port, when API_ORIGIN has none (SERVER_PORT; default 8000)
    #[argh(option)]
    device_port: Option<String>,
    /// data directory, for the key the thermostat sent (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
    /// port of the thermostats' settings API (THERMOSTAT_API_PORT; default 8080)
    #[argh(option)]
    thermostat_api_port: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "import-nle")]
/// import the NoLongerEvil Python server's database (thermostats, users, owners, API keys) into
/// an empty data directory; reads SQLite with python3
struct ImportNleArgs {
    /// the Python server's database.sqlite
    #[argh(positional)]
    database: String,
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
    /// import into a data directory that is not empty, moving its contents aside first
    #[argh(switch)]
    force: bool,
    /// the Python interpreter (default python3)
    #[argh(option, default = "String::from(\"python3\")")]
    python: String,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "import")]
/// import a JSON export made by scripts/nle-export.py (for a machine without python3)
struct ImportArgs {
    /// the export (JSON)
    #[argh(positional)]
    file: String,
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
    /// import into a data directory that is not empty, moving its contents aside first
    #[argh(switch)]
    force: bool,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "demo")]
/// try the dashboard with no thermostat: the server on a temporary data directory with three
/// simulated thermostats, on 127.0.0.1 and ignoring the environment's settings; Ctrl-C stops
/// it and removes the directory
struct DemoArgs {
    /// device port, on 127.0.0.1 (default 8000)
    #[argh(option)]
    device_port: Option<String>,
    /// control port, where the dashboard is (default 8082)
    #[argh(option)]
    control_port: Option<String>,
    /// address the control port listens on (default 127.0.0.1; 0.0.0.0 lets a phone on the
    /// network see the demo)
    #[argh(option)]
    control_bind: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "simulate")]
/// run simulated thermostats against a server, printing one line per event
struct SimulateArgs {
    /// the server's device-port origin (default http://127.0.0.1:8000)
    #[argh(option, default = "String::from(\"http://127.0.0.1:8000\")")]
    server: String,
    /// how many thermostats (default 1)
    #[argh(option, default = "1")]
    devices: usize,
    /// serial prefix; each serial is the prefix and a counter, 16 characters (default 02AA01AC51)
    #[argh(option, default = "String::from(\"02AA01AC51\")")]
    serial_prefix: String,
    /// stop after this many seconds (default: run until interrupted)
    #[argh(option)]
    seconds: Option<u64>,
    /// seconds between simulated temperature changes; 0 turns them off (default 0)
    #[argh(option, default = "0")]
    drift_seconds: u64,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "crash-test")]
/// kill the server with SIGKILL during mixed writes, restart it, and check every acknowledged
/// write survived (127.0.0.1 only)
struct CrashTestArgs {
    /// trials, each one kill and restart (default 100)
    #[argh(option, default = "100")]
    trials: usize,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "bench")]
/// measure memory, command-to-push latency, throughput, start-up and idle CPU on 127.0.0.1
struct BenchArgs {
    /// simulated thermostats holding subscribes (default 1000)
    #[argh(option, default = "1000")]
    thermostats: usize,
    /// commands timed from POST /command to the pushed chunk, spread across the thermostats
    /// (default 1000)
    #[argh(option, default = "1000")]
    commands: usize,
    /// seconds of each throughput run (default 10)
    #[argh(option, default = "10")]
    load_seconds: u64,
    /// held subscribes during the idle-CPU measurement (default 100)
    #[argh(option, default = "100")]
    idle_thermostats: usize,
    /// seconds of the idle-CPU measurement (default 60)
    #[argh(option, default = "60")]
    idle_seconds: u64,
    /// also write the figures as JSON to this file
    #[argh(option)]
    json: Option<String>,
    /// the hearth executable to measure (default: this one), e.g. a static build
    #[argh(option)]
    server: Option<String>,
}

pub fn main() -> ExitCode {
    let cli: Cli = argh::from_env();
    let Some(command) = cli.command else {
        if cli.version {
            println!("hearth {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        eprintln!(
            "hearth: a command is required (serve, users, keys, claim, share, unshare, devices, scan, point, import-nle, import, simulate, bench, crash-test); see hearth --help"
        );
        return ExitCode::from(2);
    };
    match command {
        Command::Serve(args) => serve(*args),
        Command::Users(args) => match args.command {
            UsersCommand::Add(a) => admin(a.data_dir, AdminRequest::UsersAdd { name: a.name }),
            UsersCommand::List(a) => admin(a.data_dir, AdminRequest::UsersList),
        },
        Command::Keys(args) => match args.command {
            KeysCommand::Create(a) => admin(
                a.data_dir,
                AdminRequest::KeysCreate {
                    user: a.user,
                    name: a.name,
                    scopes: a.scopes,
                    serials: a.serial,
                    expires_days: a.expires_days,
                },
            ),
            KeysCommand::List(a) => admin(a.data_dir, AdminRequest::KeysList { user: a.user }),
            KeysCommand::Revoke(a) => admin(a.data_dir, AdminRequest::KeysRevoke { id: a.id }),
        },
        Command::Claim(a) => admin(
            a.data_dir,
            AdminRequest::Claim {
                code: a.code,
                user: a.user,
            },
        ),
        Command::Share(a) => admin(
            a.data_dir,
            AdminRequest::Share {
                serial: a.serial,
                with: a.with,
                access: a.access,
            },
        ),
        Command::Unshare(a) => admin(
            a.data_dir,
            AdminRequest::Unshare {
                serial: a.serial,
                with: a.with,
            },
        ),
        Command::Devices(a) => admin(a.data_dir, AdminRequest::Devices),
        Command::Scan(a) => onboarding(
            [
                a.api_origin,
                a.device_port,
                a.data_dir,
                a.thermostat_api_port,
            ],
            |origin, config| {
                crate::admin::onboarding::scan(
                    origin,
                    a.subnet.as_deref(),
                    config.thermostat_api_port,
                    &config.data_dir,
                )
            },
        ),
        Command::Point(a) => onboarding(
            [
                a.api_origin,
                a.device_port,
                a.data_dir,
                a.thermostat_api_port,
            ],
            |origin, config| {
                crate::admin::onboarding::point(
                    origin,
                    &a.ip,
                    a.api_key.as_deref(),
                    config.thermostat_api_port,
                    &config.data_dir,
                )
            },
        ),
        Command::ImportNle(a) => import(a.data_dir, a.force, || {
            crate::migrate::export_sqlite(&a.python, std::path::Path::new(&a.database))
        }),
        Command::Import(a) => import(a.data_dir, a.force, || {
            std::fs::read(&a.file).map_err(|e| format!("cannot read {}: {e}", a.file))
        }),
        Command::Simulate(args) => simulate(args),
        Command::Demo(args) => demo(args),
        Command::Bench(args) => bench(args),
        Command::CrashTest(args) => crash_test(args),
    }
}

/// Runs an account command on the data directory (`--data-dir`, else `DATA_DIR`, else
/// `./data`), locally or through the server running on it. `REQUIRE_DEVICE_PAIRING` from the
/// environment says whether unclaimed thermostats count as the default user's.
fn admin(data_dir: Option<String>, request: AdminRequest) -> ExitCode {
    let env = |k: &str| std::env::var(k).ok();
    let mut sources = Sources::new(&env);
    sources.flag("DATA_DIR", data_dir);
    let config = match Config::resolve(&sources) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("hearth: {e}");
            return ExitCode::from(2);
        }
    };
    report(crate::admin::execute(
        &config.data_dir,
        !config.require_device_pairing,
        &request,
    ))
}

/// Prints a command's text (to stderr, prefixed, if it failed) and gives its exit code.
fn report(outcome: Result<String, String>) -> ExitCode {
    match outcome {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(text) => {
            eprintln!("hearth: {text}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `hearth scan` or `hearth point` with the server's settings: `flags` are
/// `--api-origin`, `--device-port`, `--data-dir` and `--thermostat-api-port`, over the
/// environment.
fn onboarding(
    flags: [Option<String>; 4],
    run: impl FnOnce(&crate::app::PublicOrigin, &Config) -> Result<String, String>,
) -> ExitCode {
    let env = |k: &str| std::env::var(k).ok();
    let mut sources = Sources::new(&env);
    let [api_origin, device_port, data_dir, thermostat_api_port] = flags;
    sources.flag("API_ORIGIN", api_origin);
    sources.flag("SERVER_PORT", device_port);
    sources.flag("DATA_DIR", data_dir);
    sources.flag("THERMOSTAT_API_PORT", thermostat_api_port);
    let config = match Config::resolve(&sources) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("hearth: {e}");
            return ExitCode::from(2);
        }
    };
    init_logging(false);
    let origin = crate::app::PublicOrigin::resolve(
        config.api_origin.as_ref(),
        config.device_port,
        config.cert_dir.is_some(),
    );
    report(run(&origin, &config))
}

/// Runs an import into the data directory (`--data-dir`, else `DATA_DIR`, else `./data`) from
/// the export `read` gives.
fn import(
    data_dir: Option<String>,
    force: bool,
    read: impl FnOnce() -> Result<Vec<u8>, String>,
) -> ExitCode {
    let env = |k: &str| std::env::var(k).ok();
    let mut sources = Sources::new(&env);
    sources.flag("DATA_DIR", data_dir);
    let result = Config::resolve(&sources)
        .map_err(|e| e.to_string())
        .and_then(|config| {
            let export = read()?;
            crate::migrate::import(&export, &config.data_dir, force)
        });
    report(result)
}

fn crash_test(args: CrashTestArgs) -> ExitCode {
    init_logging(false);
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("hearth crash-test: {e}");
            return ExitCode::FAILURE;
        }
    };
    match crate::bench::crash::run(&exe, args.trials.max(1)) {
        Ok(report) => {
            for problem in &report.problems {
                println!("{problem}");
            }
            println!(
                "{} trials: lost {}/{} acknowledged writes ({} thermostat PUTs, {} commands, {} API keys)",
                report.trials,
                report.lost,
                report.acknowledged,
                report.puts,
                report.commands,
                report.keys
            );
            if report.lost == 0 && report.problems.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("hearth crash-test: {e}");
            ExitCode::FAILURE
        }
    }
}

fn bench(args: BenchArgs) -> ExitCode {
    init_logging(false);
    let opts = crate::bench::BenchOptions {
        thermostats: args.thermostats.max(1),
        commands: args.commands.max(1),
        load_seconds: args.load_seconds.max(1),
        idle_thermostats: args.idle_thermostats.max(1),
        idle_seconds: args.idle_seconds.max(1),
        server: args.server.map(std::path::PathBuf::from),
    };
    let report = match crate::bench::run(&opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("hearth bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", report.table());
    if let Some(path) = args.json {
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        if let Err(e) = std::fs::write(&path, text + "\n") {
            eprintln!("hearth bench: could not write {path}: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn serve(args: ServeArgs) -> ExitCode {
    let env = |k: &str| std::env::var(k).ok();
    let config = match Config::resolve(&args.into_sources(&env)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("hearth: {e}");
            return ExitCode::from(2);
        }
    };
    init_logging(config.debug_logging);
    std::panic::set_hook(Box::new(|info| log::error!("panic: {info}")));
    // A write past the file-size limit (RLIMIT_FSIZE) then fails with EFBIG, which the store
    // answers with 503 like a full disk, instead of killing the process.
    // SAFETY: setting a signal's disposition to "ignore" before any thread starts.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    // Block SIGTERM/SIGINT before any thread starts, so only `wait_for_signal` receives them.
    let signals = block_termination_signals();
    let on_fatal = Arc::new(|why: String| {
        log::error!("{why}; exiting so the service manager restarts hearth");
        std::process::exit(70);
    });
    let server = match Server::start_with(config, on_fatal) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hearth: {e}");
            return ExitCode::from(1);
        }
    };
    crate::service::notify(&format!(
        "READY=1\nSTATUS=thermostats register at {}",
        server.app().origin.cloud_register_url()
    ));
    let signal = wait_for_signal(&signals);
    log::info!("signal {signal}: shutting down");
    crate::service::notify("STOPPING=1");
    server.shutdown();
    ExitCode::SUCCESS
}

fn demo(args: DemoArgs) -> ExitCode {
    // Only the options count: the environment may hold a real server's settings.
    let no_environment = |_: &str| None;
    let mut sources = Sources::new(&no_environment);
    sources.flag("SERVER_PORT", args.device_port);
    sources.flag("CONTROL_PORT", args.control_port);
    sources.flag("SERVER_HOST", Some("127.0.0.1".to_string()));
    sources.flag(
        "CONTROL_HOST",
        Some(args.control_bind.unwrap_or_else(|| "127.0.0.1".to_string())),
    );
    let mut config = match Config::resolve(&sources) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("hearth demo: {e}");
            return ExitCode::from(2);
        }
    };
    init_logging(false);
    let signals = block_termination_signals();
    let suffix = match crate::util::random::hex(4) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hearth demo: no randomness for the data directory's name: {e}");
            return ExitCode::from(1);
        }
    };
    config.data_dir = std::env::temp_dir().join(format!("hearth-demo-{suffix}"));
    let data_dir = config.data_dir.clone();
    let code = match crate::demo::Demo::start(config) {
        Ok(demo) => {
            let port = demo.server().control_addr().port();
            println!(
                "hearth demo: three simulated thermostats; data in {}",
                data_dir.display()
            );
            println!("Open the dashboard at http://127.0.0.1:{port}/ (Ctrl-C stops the demo)");
            let signal = wait_for_signal(&signals);
            log::info!("signal {signal}: stopping the demo");
            demo.stop();
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hearth demo: {e}");
            ExitCode::from(1)
        }
    };
    if let Err(e) = std::fs::remove_dir_all(&data_dir) {
        eprintln!("hearth demo: could not remove {}: {e}", data_dir.display());
    }
    code
}

fn simulate(args: SimulateArgs) -> ExitCode {
    let fleet = Fleet {
        server: args.server,
        devices: args.devices,
        serial_prefix: args.serial_prefix,
        seconds: args.seconds,
        drift_every: (args.drift_seconds > 0).then(|| Duration::from_secs(args.drift_seconds)),
    };
    match fleet.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hearth simulate: {e}");
            ExitCode::from(2)
        }
    }
}

/// `RUST_LOG` wins; otherwise `info`, or `debug` for hearth itself with DEBUG_LOGGING.
fn init_logging(debug: bool) {
    let default = if debug { "info,hearth=debug" } else { "info" };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(default))
        .format(|buf, record| {
            writeln!(
                buf,
                "{} {:<5} {}: {}",
                crate::util::clock::iso8601_ms(crate::util::clock::now_ms()),
                record.level(),
                record.target(),
                record.args()
            )
        })
        .init();
}

fn block_termination_signals() -> libc::sigset_t {
    // SAFETY: plain libc signal-set manipulation on a local, zero-initialised set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

fn wait_for_signal(set: &libc::sigset_t) -> i32 {
    let mut signal = 0;
    // SAFETY: sigwait on a valid set with a valid out pointer.
    unsafe { libc::sigwait(set, &mut signal) };
    signal
}
