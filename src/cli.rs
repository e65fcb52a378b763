//! The command line: `hearth serve`, the account commands (`users`, `keys`, `claim`, `share`,
//! `unshare`, `devices`; see [`crate::admin`]), `homekit code|unlock|reset`, onboarding (`scan`,
//! `point`), the imports, `hearth simulate`, `hearth demo` and `hearth healthcheck` (a
//! container's health check). The developer tools (`bench`, `crash-test`) are the separate
//! `hearth-dev` binary.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use argh::{CommandInfo, EarlyExit, FromArgs, SubCommand};
use signal_hook::iterator::Signals;

use crate::admin::AdminRequest;
use crate::config::settings::{Setting, number, text};
use crate::config::{Config, Sources};
use crate::server::Server;
use options::{Spec, Takes};

mod healthcheck;
mod options;

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
    Serve(ServeArgs),
    Users(UsersArgs),
    Keys(KeysArgs),
    People(PeopleArgs),
    Claim(ClaimArgs),
    Share(ShareArgs),
    Unshare(UnshareArgs),
    Devices(DevicesArgs),
    Homekit(HomekitArgs),
    Scan(ScanArgs),
    Point(PointArgs),
    ImportNle(ImportNleArgs),
    Import(ImportArgs),
    Demo(DemoArgs),
    Healthcheck(healthcheck::HealthcheckArgs),
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
    Remove(UsersRemove),
}

#[derive(FromArgs)]
#[argh(subcommand, name = "remove")]
/// remove a user, its API keys and the shares made to it (not `owner`, nor a user who owns a
/// thermostat)
struct UsersRemove {
    /// the user's name
    #[argh(positional)]
    name: String,
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
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
#[argh(subcommand, name = "people")]
/// manage the people whose presence moves a home between Home and Away (docs/presence.md)
struct PeopleArgs {
    #[argh(subcommand)]
    command: PeopleCommand,
}

#[derive(FromArgs)]
#[argh(subcommand)]
enum PeopleCommand {
    Add(PeopleAdd),
    List(PeopleList),
    Remove(PeopleRemove),
    Token(PeopleToken),
}

#[derive(FromArgs)]
#[argh(subcommand, name = "add")]
/// add a person; their presence token is printed once, alone on the last line
struct PeopleAdd {
    /// the name: 1 to 32 letters, digits, '_' or '-' (part of their presence URL)
    #[argh(positional)]
    name: String,
    /// the user whose home they belong to (default: owner)
    #[argh(option, default = "String::from(\"owner\")")]
    user: String,
    /// the OwnTracks region that means home (default: home)
    #[argh(option)]
    region: Option<String>,
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "list")]
/// list people: home, away or never heard from, since when (never their tokens)
struct PeopleList {
    /// only this user's people
    #[argh(option)]
    user: Option<String>,
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "remove")]
/// remove a person (their token stops working at once)
struct PeopleRemove {
    #[argh(positional)]
    name: String,
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "token")]
/// give a person a new presence token, printed once (the old one stops working at once)
struct PeopleToken {
    #[argh(positional)]
    name: String,
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
#[argh(subcommand, name = "homekit")]
/// Apple Home: the setup code to add hearth, unlock pairing after wrong codes, or forget every paired controller
struct HomekitArgs {
    #[argh(subcommand)]
    command: HomekitCommand,
}

#[derive(FromArgs)]
#[argh(subcommand)]
enum HomekitCommand {
    Code(HomekitCode),
    Unlock(HomekitUnlock),
    Reset(HomekitReset),
}

#[derive(FromArgs)]
#[argh(subcommand, name = "code")]
/// print the HomeKit setup code and its X-HM:// setup URI (what the page's QR code holds)
struct HomekitCode {
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "unlock")]
/// unlock HomeKit pairing after 100 wrong setup codes: a new setup code (paired controllers stay)
struct HomekitUnlock {
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "reset")]
/// remove every HomeKit pairing (the Home app must add hearth again; the setup code stays)
struct HomekitReset {
    /// data directory (DATA_DIR; default ./data)
    #[argh(option)]
    data_dir: Option<String>,
}

/// `hearth serve`: every setting is an option ([`options`]).
struct ServeArgs {
    settings: options::Parsed,
}

const SERVE: Spec = Spec {
    command: CommandInfo {
        name: "serve",
        short: &'\0',
        description: "run the server. Every option can also be set by the environment variable \
                      named in its description; options win.",
    },
    positionals: &[],
    options: &[],
    settings: Takes::All,
};

impl FromArgs for ServeArgs {
    fn from_args(command: &[&str], args: &[&str]) -> Result<Self, EarlyExit> {
        let settings = SERVE.parse(command, args)?;
        Ok(ServeArgs { settings })
    }
}

impl SubCommand for ServeArgs {
    const COMMAND: &'static CommandInfo = &SERVE.command;
}

/// What `hearth scan` and `point` take of the server's settings, and what for.
const ONBOARDING_SETTINGS: &[(&Setting, &str)] = &[
    (
        text("API_ORIGIN").setting,
        "this server's origin, as for serve",
    ),
    (
        number("SERVER_PORT").setting,
        "this server's device port, when API_ORIGIN has none",
    ),
    (
        text("DATA_DIR").setting,
        "data directory, for the names and keys thermostats sent this server before",
    ),
    (
        number("THERMOSTAT_API_PORT").setting,
        "port of the thermostats' settings API",
    ),
];

/// `hearth scan`: find thermostats on the local network.
struct ScanArgs {
    subnet: Option<String>,
    settings: options::Parsed,
}

const SCAN: Spec = Spec {
    command: CommandInfo {
        name: "scan",
        short: &'\0',
        description: "find thermostats running No Longer Evil firmware on the local network \
                      (their settings API) and say which already point at this server",
    },
    positionals: &[],
    options: &[(
        "--subnet",
        "the subnet to probe, at most a /24 (default: the /24 of API_ORIGIN's address)",
    )],
    settings: Takes::These(ONBOARDING_SETTINGS),
};

impl FromArgs for ScanArgs {
    fn from_args(command: &[&str], args: &[&str]) -> Result<Self, EarlyExit> {
        let mut settings = SCAN.parse(command, args)?;
        let subnet = settings.option("--subnet");
        Ok(ScanArgs { subnet, settings })
    }
}

impl SubCommand for ScanArgs {
    const COMMAND: &'static CommandInfo = &SCAN.command;
}

/// `hearth point`: point a thermostat at this server.
struct PointArgs {
    ip: String,
    api_key: Option<String>,
    settings: options::Parsed,
}

const POINT: Spec = Spec {
    command: CommandInfo {
        name: "point",
        short: &'\0',
        description: "point a thermostat at this server: set its cloud-register URL to \
                      API_ORIGIN's /entry, and read it back",
    },
    positionals: &[("ip", "the thermostat's IPv4 address")],
    options: &[(
        "--api-key",
        "the thermostat's API key (default: the one it sent this server, if it ever \
         connected; none is needed in its first 30 minutes after power-on)",
    )],
    settings: Takes::These(ONBOARDING_SETTINGS),
};

impl FromArgs for PointArgs {
    fn from_args(command: &[&str], args: &[&str]) -> Result<Self, EarlyExit> {
        let mut settings = POINT.parse(command, args)?;
        let api_key = settings.option("--api-key");
        let ip = settings.positionals.pop().unwrap_or_default();
        Ok(PointArgs {
            ip,
            api_key,
            settings,
        })
    }
}

impl SubCommand for PointArgs {
    const COMMAND: &'static CommandInfo = &POINT.command;
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

pub fn main() -> ExitCode {
    let cli: Cli = argh::from_env();
    let Some(command) = cli.command else {
        if cli.version {
            println!("hearth {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        eprintln!(
            "hearth: a command is required (serve, users, keys, people, claim, share, unshare, devices, homekit, scan, point, import-nle, import, simulate, demo, healthcheck); see hearth --help"
        );
        return ExitCode::from(2);
    };
    match command {
        Command::Serve(args) => serve(args),
        Command::Users(args) => match args.command {
            UsersCommand::Add(a) => admin(a.data_dir, AdminRequest::UsersAdd { name: a.name }),
            UsersCommand::List(a) => admin(a.data_dir, AdminRequest::UsersList),
            UsersCommand::Remove(a) => {
                admin(a.data_dir, AdminRequest::UsersRemove { name: a.name })
            }
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
        Command::People(args) => match args.command {
            PeopleCommand::Add(a) => admin(
                a.data_dir,
                AdminRequest::PeopleAdd {
                    name: a.name,
                    user: a.user,
                    region: a.region,
                },
            ),
            PeopleCommand::List(a) => admin(a.data_dir, AdminRequest::PeopleList { user: a.user }),
            PeopleCommand::Remove(a) => {
                admin(a.data_dir, AdminRequest::PeopleRemove { name: a.name })
            }
            PeopleCommand::Token(a) => {
                admin(a.data_dir, AdminRequest::PeopleToken { name: a.name })
            }
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
        Command::Homekit(args) => match args.command {
            HomekitCommand::Code(a) => admin(a.data_dir, AdminRequest::HomekitCode),
            HomekitCommand::Unlock(a) => admin(a.data_dir, AdminRequest::HomekitUnlock),
            HomekitCommand::Reset(a) => admin(a.data_dir, AdminRequest::HomekitReset),
        },
        Command::Scan(a) => onboarding(a.settings, |origin, config| {
            crate::admin::onboarding::scan(
                origin,
                a.subnet.as_deref(),
                config.thermostat_api_port,
                &config.data_dir,
            )
        }),
        Command::Point(a) => onboarding(a.settings, |origin, config| {
            crate::admin::onboarding::point(
                origin,
                &a.ip,
                a.api_key.as_deref(),
                config.thermostat_api_port,
                &config.data_dir,
            )
        }),
        Command::ImportNle(a) => import(a.data_dir, a.force, || {
            crate::migrate::export_sqlite(&a.python, std::path::Path::new(&a.database))
        }),
        Command::Import(a) => import(a.data_dir, a.force, || {
            std::fs::read(&a.file).map_err(|e| format!("cannot read {}: {e}", a.file))
        }),
        Command::Demo(args) => demo(args),
        Command::Healthcheck(args) => healthcheck::run(args),
    }
}

/// Runs an account command on the data directory (`--data-dir`, else `DATA_DIR`, else
/// `./data`), locally or through the server running on it, and says on stderr which (the
/// directory's full path, and whether a running server took the change): before the output,
/// or after the error. `REQUIRE_DEVICE_PAIRING` from the environment says whether unclaimed
/// thermostats count as the default user's.
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
    let executed =
        crate::admin::execute_via(&config.data_dir, !config.require_device_pairing, &request);
    let note = crate::admin::note(&config.data_dir, &request, &executed);
    match (&executed.outcome, note) {
        (Ok(_), Some(note)) => {
            eprintln!("hearth: {note}");
            report(executed.outcome)
        }
        (Err(_), Some(note)) => {
            let code = report(executed.outcome);
            eprintln!("hearth: {note}");
            code
        }
        (_, None) => report(executed.outcome),
    }
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

/// Runs `hearth scan` or `hearth point` with the server's settings: the options given, over
/// the environment.
fn onboarding(
    settings: options::Parsed,
    run: impl FnOnce(&crate::app::PublicOrigin, &Config) -> Result<String, String>,
) -> ExitCode {
    let env = |k: &str| std::env::var(k).ok();
    let sources = settings.sources(&env);
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

fn serve(args: ServeArgs) -> ExitCode {
    let env = |k: &str| std::env::var(k).ok();
    let mut config = match Config::resolve(&args.settings.sources(&env)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("hearth: {e}");
            return ExitCode::from(2);
        }
    };
    init_logging(config.debug_logging);
    if let Some(path) = &config.options_file {
        log::info!("settings from {}", path.display());
    }
    // As a Home Assistant add-on: the origin and the MQTT broker the options leave out.
    if let Err(e) = crate::supervisor::complete(&mut config) {
        log::error!("{e}");
        return ExitCode::from(2);
    }
    // Every thread of hearth's own is named (the listeners' `<port>-accept` and `<port>-conn`
    // included), so a panic's log line says where it happened.
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("unnamed");
        log::error!("panic in thread {name}: {info}");
    }));
    let mut signals = match survive_file_size_limit().and_then(|()| termination_signals()) {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("hearth: could not install signal handlers: {e}");
            return ExitCode::from(1);
        }
    };
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
        server.app().origin().cloud_register_url()
    ));
    let signal = wait_for_signal(&mut signals);
    log::info!("signal {signal}: shutting down");
    crate::service::notify("STOPPING=1");
    // The process exits next, which gives back its memory at once: the state is not freed
    // piece by piece first (0.3 s of a stop with 10,000 thermostats).
    let app = Arc::clone(server.app());
    server.shutdown();
    std::mem::forget(app);
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
    let mut signals = match termination_signals() {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("hearth demo: could not install signal handlers: {e}");
            return ExitCode::from(1);
        }
    };
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
            println!(
                "Its users and keys, from another terminal (the account commands need this \
                 --data-dir): hearth keys create --user owner --name test --scopes read,write \
                 --data-dir {}",
                data_dir.display()
            );
            println!("Open the dashboard at http://127.0.0.1:{port}/ (Ctrl-C stops the demo)");
            let signal = wait_for_signal(&mut signals);
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

/// `RUST_LOG` wins; otherwise `info`, or `debug` for hearth itself with DEBUG_LOGGING.
pub fn init_logging(debug: bool) {
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

/// A write past the file-size limit (`RLIMIT_FSIZE`) raises SIGXFSZ, whose default action ends
/// the process. With a handler installed (it only sets a flag nobody reads) the write fails
/// with EFBIG instead, which the store answers with 503 like a full disk.
fn survive_file_size_limit() -> std::io::Result<()> {
    let ignored = Arc::new(std::sync::atomic::AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGXFSZ, ignored).map(drop)
}

/// SIGTERM and SIGINT, from now on delivered to [`wait_for_signal`] instead of ending the
/// process. Installed before any thread starts, so one sent during start-up waits there too.
fn termination_signals() -> std::io::Result<Signals> {
    Signals::new([signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT])
}

fn wait_for_signal(signals: &mut Signals) -> i32 {
    signals
        .forever()
        .next()
        .unwrap_or(signal_hook::consts::SIGTERM)
}
