//! `hearth-dev`: the tools only developers run, kept out of the `hearth` binary that routers
//! and Raspberry Pis carry (as Redis ships `redis-benchmark` beside `redis-server`):
//! - `hearth-dev bench`: the performance figures and their budgets ([`mod@bench`]);
//! - `hearth-dev bench-energy`: what the energy history costs: CPU per upload and per flush,
//!   store growth per thermostat per day, and idle RSS ([`bench::energy`]);
//! - `hearth-dev bench-stop`: how long `hearth serve` takes to stop (SIGTERM) holding N
//!   thermostats whose energy history changes every minute ([`bench::stop`]);
//! - `hearth-dev crash-test`: SIGKILL during mixed writes, and no acknowledged write lost
//!   ([`bench::crash`]);
//! - `hearth-dev simulate`: simulated thermostats against any server, printing one line per
//!   event (the simulator itself stays in the library: `hearth demo` runs three).
//!
//! The benchmarks and the crash test run a real `hearth serve` as a child process: by default the `hearth` beside this
//! executable (cargo builds both into one directory), or the one `--server` names.
//! `scripts/bench.sh` and `scripts/crash-test.sh` build and run them.

mod bench;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use argh::FromArgs;
use hearth::simulator::fleet::Fleet;

#[derive(FromArgs)]
/// hearth's developer tools: benchmarks and the crash test (against a `hearth serve` child
/// process on 127.0.0.1), and simulated thermostats
struct Cli {
    #[argh(subcommand)]
    command: Command,
}

#[derive(FromArgs)]
#[argh(subcommand)]
enum Command {
    Bench(BenchArgs),
    BenchEnergy(BenchEnergyArgs),
    BenchStop(BenchStopArgs),
    CrashTest(CrashTestArgs),
    Simulate(SimulateArgs),
}

#[derive(FromArgs)]
#[argh(subcommand, name = "bench-energy")]
/// measure the energy history's accrual (CPU time per upload and per flush, in this process),
/// its store growth per thermostat per day, and a server's idle RSS
struct BenchEnergyArgs {
    /// thermostats observed (default 1000)
    #[argh(option, default = "1000")]
    thermostats: usize,
    /// uploads timed, spread across the thermostats (default 200000)
    #[argh(option, default = "200000")]
    uploads: usize,
    /// simulated days of the store-growth figure (default 30)
    #[argh(option, default = "30")]
    days: i64,
    /// also write the figures as JSON to this file
    #[argh(option)]
    json: Option<String>,
    /// the hearth executable whose idle RSS is measured (default: the hearth beside this one)
    #[argh(option)]
    server: Option<PathBuf>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "bench-stop")]
/// time SIGTERM of a server holding N simulated thermostats with their fans running, a few
/// seconds after the energy history's minute flush and a few before the next (127.0.0.1 only)
struct BenchStopArgs {
    /// thermostats holding subscribes (default 1000; the device port takes three quarters of
    /// the descriptors the server may open, so 10,000 need a hard limit above about 14,000)
    #[argh(option, default = "1000")]
    thermostats: usize,
    /// trials of each case, each a fresh server and fleet, about two minutes (default 3)
    #[argh(option, default = "3")]
    trials: usize,
    /// also count fsync, fdatasync and rename calls over one minute and over a stop, with
    /// strace (one more trial, untimed)
    #[argh(switch)]
    strace: bool,
    /// also write the figures as JSON to this file
    #[argh(option)]
    json: Option<String>,
    /// the hearth executable to measure (default: the hearth beside this one)
    #[argh(option)]
    server: Option<PathBuf>,
}

#[derive(FromArgs)]
#[argh(subcommand, name = "crash-test")]
/// kill the server with SIGKILL during mixed writes, restart it, and check every acknowledged
/// write survived (127.0.0.1 only)
struct CrashTestArgs {
    /// trials, each one kill and restart (default 100)
    #[argh(option, default = "100")]
    trials: usize,
    /// the hearth executable to test (default: the hearth beside this one)
    #[argh(option)]
    server: Option<PathBuf>,
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
    /// concurrent clients sending the timed commands, each one at a time (default 4: the
    /// budget's figure; 1 shows a command's latency with nothing else in flight)
    #[argh(option, default = "4")]
    commanders: usize,
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
    /// the hearth executable to measure (default: the hearth beside this one), e.g. a static
    /// build
    #[argh(option)]
    server: Option<PathBuf>,
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
    /// thermostats that keep reporting but apply no pushed change (to see `not_applied`)
    #[argh(switch)]
    ignore_pushes: bool,
}

fn main() -> ExitCode {
    let cli: Cli = argh::from_env();
    hearth::cli::init_logging(false);
    match cli.command {
        Command::Bench(args) => bench(args),
        Command::BenchEnergy(args) => bench_energy(args),
        Command::BenchStop(args) => bench_stop(args),
        Command::CrashTest(args) => crash_test(args),
        Command::Simulate(args) => simulate(args),
    }
}

/// `server`, or the `hearth` executable in this one's directory.
fn server_executable(server: Option<PathBuf>) -> Result<PathBuf, String> {
    if let Some(path) = server {
        return Ok(path);
    }
    let me = std::env::current_exe().map_err(|e| format!("where is this executable? {e}"))?;
    let beside = me.with_file_name("hearth");
    if beside.is_file() {
        Ok(beside)
    } else {
        Err(format!(
            "no hearth executable at {} (build it with `cargo build --release`, or name one \
             with --server)",
            beside.display()
        ))
    }
}

fn crash_test(args: CrashTestArgs) -> ExitCode {
    let report =
        server_executable(args.server).and_then(|exe| bench::crash::run(&exe, args.trials.max(1)));
    match report {
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
            eprintln!("hearth-dev crash-test: {e}");
            ExitCode::FAILURE
        }
    }
}

fn bench(args: BenchArgs) -> ExitCode {
    let server = match server_executable(args.server) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("hearth-dev bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    let opts = bench::BenchOptions {
        thermostats: args.thermostats.max(1),
        commands: args.commands.max(1),
        commanders: args.commanders.max(1),
        load_seconds: args.load_seconds.max(1),
        idle_thermostats: args.idle_thermostats.max(1),
        idle_seconds: args.idle_seconds.max(1),
        server,
    };
    let report = match bench::run(&opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("hearth-dev bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", report.table());
    if let Some(path) = args.json {
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        if let Err(e) = std::fs::write(&path, text + "\n") {
            eprintln!("hearth-dev bench: could not write {path}: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn bench_energy(args: BenchEnergyArgs) -> ExitCode {
    let figures = server_executable(args.server).and_then(|server| {
        bench::energy::run(&bench::energy::Options {
            thermostats: args.thermostats.max(1),
            uploads: args.uploads.max(1),
            days: args.days.max(1),
            server,
        })
    });
    let figures = match figures {
        Ok(f) => f,
        Err(e) => {
            eprintln!("hearth-dev bench-energy: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", figures.table());
    if let Some(path) = args.json {
        let text = serde_json::to_string_pretty(&figures).unwrap_or_default();
        if let Err(e) = std::fs::write(&path, text + "\n") {
            eprintln!("hearth-dev bench-energy: could not write {path}: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn bench_stop(args: BenchStopArgs) -> ExitCode {
    let figures = server_executable(args.server).and_then(|server| {
        bench::stop::run(&bench::stop::Options {
            thermostats: args.thermostats.max(1),
            trials: args.trials,
            strace: args.strace,
            server,
        })
    });
    let figures = match figures {
        Ok(f) => f,
        Err(e) => {
            eprintln!("hearth-dev bench-stop: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", figures.table());
    if let Some(path) = args.json {
        let text = serde_json::to_string_pretty(&figures).unwrap_or_default();
        if let Err(e) = std::fs::write(&path, text + "\n") {
            eprintln!("hearth-dev bench-stop: could not write {path}: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn simulate(args: SimulateArgs) -> ExitCode {
    let fleet = Fleet {
        server: args.server,
        devices: args.devices,
        serial_prefix: args.serial_prefix,
        seconds: args.seconds,
        drift_every: (args.drift_seconds > 0).then(|| Duration::from_secs(args.drift_seconds)),
        ignore_pushes: args.ignore_pushes,
    };
    match fleet.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hearth-dev simulate: {e}");
            ExitCode::from(2)
        }
    }
}
