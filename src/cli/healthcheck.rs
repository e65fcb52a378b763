//! `hearth healthcheck`: whether the hearth serving here answers, for a container's
//! `HEALTHCHECK` (the add-on's image is `FROM scratch`: no shell or curl to ask with). It asks
//! the control port's `/health` on loopback, as the server's own watchdog does (over TLS with
//! `CERT_DIR`, trusting the server's certificate: [`crate::server::HealthProbe`]), and exits 0
//! (healthy) or 1 (unhealthy), the two codes Docker gives a meaning to.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use argh::{CommandInfo, EarlyExit, FromArgs, SubCommand};

use super::options::{self, Spec, Takes};
use crate::config::Config;
use crate::config::settings::{Setting, ip, number, text};
use crate::server::HealthProbe;

/// Each of connecting, sending and reading the answer: well inside the image's `HEALTHCHECK
/// --timeout`, so an answer that never comes is reported by hearth rather than killed by
/// Docker without a word.
const STEP_TIMEOUT: Duration = Duration::from_secs(3);

/// `hearth healthcheck`.
pub struct HealthcheckArgs {
    settings: options::Parsed,
}

const SETTINGS: &[(&Setting, &str)] = &[
    (
        ip("CONTROL_HOST").setting,
        "the address the control port listens on, as for serve",
    ),
    (number("CONTROL_PORT").setting, "the control port"),
    (
        text("CERT_DIR").setting,
        "the directory of the server's certificate, as for serve: the port speaks HTTPS",
    ),
];

const HEALTHCHECK: Spec = Spec {
    command: CommandInfo {
        name: "healthcheck",
        short: &'\0',
        description: "ask the hearth serving on this machine whether it is healthy: GET \
                      /health on its control port (settings as for serve: the options given, \
                      the options file, the environment); exit 0 if it answers, 1 if not",
    },
    positionals: &[],
    options: &[],
    settings: Takes::These(SETTINGS),
};

impl FromArgs for HealthcheckArgs {
    fn from_args(command: &[&str], args: &[&str]) -> Result<Self, EarlyExit> {
        let settings = HEALTHCHECK.parse(command, args)?;
        Ok(HealthcheckArgs { settings })
    }
}

impl SubCommand for HealthcheckArgs {
    const COMMAND: &'static CommandInfo = &HEALTHCHECK.command;
}

pub fn run(args: HealthcheckArgs) -> ExitCode {
    let env = |k: &str| std::env::var(k).ok();
    let config = match Config::resolve(&args.settings.sources(&env)) {
        Ok(c) => c,
        Err(e) => {
            println!("unhealthy: {e}");
            return ExitCode::FAILURE;
        }
    };
    let addr = SocketAddr::new(config.control_bind, config.control_port);
    let probe = match HealthProbe::new(config.cert_dir.as_deref()) {
        Ok(probe) => probe,
        Err(e) => {
            println!("unhealthy: cannot ask the control port {addr} over HTTPS: {e}");
            return ExitCode::FAILURE;
        }
    };
    // 503 is the listener over its connection caps: busy, not dead (as for the watchdog).
    match probe.health(addr, STEP_TIMEOUT) {
        Ok(status @ (200 | 503)) => {
            println!("healthy: the control port {addr} answered /health with {status}");
            ExitCode::SUCCESS
        }
        Ok(status) => {
            println!("unhealthy: the control port {addr} answered /health with {status}");
            ExitCode::FAILURE
        }
        Err(e) => {
            println!("unhealthy: no answer from the control port {addr}: {e}");
            ExitCode::FAILURE
        }
    }
}
