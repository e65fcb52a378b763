//! `hearth serve` as the add-on starts it, refusing: a bad option, or no address from the
//! Supervisor, stops it before it listens or writes anything, with the message the add-on's
//! log shows.

use std::process::Command;

use serde_json::json;

use super::fake_supervisor::*;
use crate::common::TempDir;

/// Runs `hearth serve` with the add-on's environment around `options` and the Supervisor at
/// `supervisor`; gives its exit code and what it wrote to stderr.
fn serve(dir: &TempDir, options: serde_json::Value, supervisor: &str) -> (Option<i32>, String) {
    let data = dir.path().join("data");
    let options_file = dir.path().join("options.json");
    std::fs::write(&options_file, options.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("serve")
        .env_clear()
        .env("DATA_DIR", &data)
        .env("OPTIONS_FILE", &options_file)
        .env("SERVER_HOST", "127.0.0.1")
        .env("SERVER_PORT", "0")
        .env("CONTROL_PORT", "0")
        .env("SUPERVISOR_TOKEN", TOKEN)
        .env("SUPERVISOR_API", supervisor)
        .output()
        .unwrap();
    assert!(!data.exists(), "nothing was written");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_bad_option_stops_start_up_naming_it() {
    let dir = TempDir::new("addon-bad-option");
    let supervisor = FakeSupervisor::start(&[]);
    let (code, stderr) = serve(
        &dir,
        json!({"mqtt_port": 0, "debug_logging": false}),
        &supervisor.url,
    );
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        "hearth: invalid option \"MQTT port\" (mqtt_port): must be a whole number from 1 to \
         65535 (got \"0\")\n"
    );
    assert!(
        supervisor.asked().is_empty(),
        "checked before asking anyone"
    );
}

#[test]
fn no_address_from_the_supervisor_stops_start_up() {
    let dir = TempDir::new("addon-no-address");
    let supervisor = FakeSupervisor::start(&[
        ("/network/info", error(403, "Forbidden")),
        ("/addons/self/info", addon_info(json!({"8000/tcp": 9543}))),
    ]);
    let (code, stderr) = serve(&dir, json!({"api_origin": ""}), &supervisor.url);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains(
            "could not learn this host's address from the Supervisor (403 Forbidden); set the \
             option \"Address thermostats use\" (api_origin)"
        ),
        "{stderr}"
    );
}
