//! `hearth import-nle` and `hearth import` against a database the test makes in the Python
//! server's schema (with python3's sqlite3 module, as the import itself reads it).

use crate::common;

use std::path::Path;
use std::process::Command;

use common::nle::{NLAPI_KEY, make_database};
use common::*;
use hearth::Config;
use serde_json::json;

/// Starts a server on an imported data directory.
fn serve(data: &Path) -> TestServer {
    let mut config = Config::local(data);
    config.api_origin = Some(hearth::config::ApiOrigin::parse("http://127.0.0.1").unwrap());
    TestServer {
        server: Some(common::start_server(config)),
        dir: TempDir::new("unused"),
    }
}

#[test]
fn import_nle_brings_thermostats_owners_and_keys_across() {
    let dir = TempDir::new("nle");
    let db = make_database(dir.path());
    let data = dir.path().join("data");
    let data_arg = data.to_str().unwrap();
    let (ok, out, err) = run_hearth(&["import-nle", db.to_str().unwrap(), "--data-dir", data_arg]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with(
            "imported 2 thermostats (4 buckets), 1 users, 2 owners, 1 API keys, 1 entry keys\nskipped 1 rows:\n  states row 5: the value of device.02AA01AC0000NLE2 is not a JSON object"
        ),
        "{out}"
    );

    let s = serve(&data);
    // Buckets keep their revisions and timestamps: a thermostat that was in sync stays so.
    let b = s
        .bucket("02AA01AC0000NLE1", "shared.02AA01AC0000NLE1")
        .unwrap();
    assert_eq!((b.revision, b.timestamp), (30, 1_700_000_000_456));
    let b = s
        .bucket("02AA01AC0000NLE1", "structure.homeassistant")
        .unwrap();
    assert_eq!((b.revision, b.timestamp), (3, 1_700_000_000_789));
    let status = get(s.control(), "/status?serial=02AA01AC0000NLE1").json();
    assert_eq!(status["current_temperature"], json!(20.5));
    assert_eq!(status["name"], json!("Hallway"));
    // The owner, and the old nlapi_ key, which works on the hosted API as it is.
    let owners = s.app().state().accounts(|a| a.owners.clone());
    assert_eq!(owners["02AA01AC0000NLE2"].user, "homeassistant");
    let r = hearth::http::client::request(
        &url(s.control(), "/api/v1/devices"),
        "GET",
        &[("Authorization", &format!("Bearer {NLAPI_KEY}"))],
        b"",
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let serials: Vec<String> = r.json()["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["serial"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(serials, ["02AA01AC0000NLE1", "02AA01AC0000NLE2"]);
    // control maps to write.
    let r = hearth::http::client::request(
        &url(
            s.control(),
            "/api/v1/thermostat/02AA01AC0000NLE1/temperature",
        ),
        "POST",
        &[("Authorization", &format!("Bearer {NLAPI_KEY}"))],
        json!({"value": 20.0}).to_string().as_bytes(),
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());

    // A running server's data directory is never replaced.
    let (ok, _, err) = run_hearth(&[
        "import-nle",
        db.to_str().unwrap(),
        "--data-dir",
        data_arg,
        "--force",
    ]);
    assert!(!ok && err.contains("stop it before importing"), "{err}");
    drop(s);

    // Not over existing data without --force; with it, the old files are moved aside.
    let before = store_bytes(&data);
    let (ok, _, err) = run_hearth(&["import-nle", db.to_str().unwrap(), "--data-dir", data_arg]);
    assert!(
        !ok && err.contains("is not empty") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(store_bytes(&data), before);
    let (ok, out, err) = run_hearth(&[
        "import-nle",
        db.to_str().unwrap(),
        "--data-dir",
        data_arg,
        "--force",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("previous contents are in"), "{out}");
    let aside: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("replaced-"))
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(store_bytes(&aside[0].path()), before);
}

#[test]
fn import_takes_the_scripts_json_and_refuses_what_is_not_one() {
    let dir = TempDir::new("nle-json");
    let db = make_database(dir.path());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/nle-export.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success());
    let export = dir.path().join("nle.json");
    std::fs::write(&export, &out.stdout).unwrap();
    let data = dir.path().join("data");
    let data_arg = data.to_str().unwrap();

    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, b"{\"tables\": 5}").unwrap();
    let (ok, _, err) = run_hearth(&["import", garbage.to_str().unwrap(), "--data-dir", data_arg]);
    assert!(
        !ok && err.contains("not an export of the Python server's database"),
        "{err}"
    );
    assert!(!data.exists(), "nothing was written");

    let (ok, _, err) = run_hearth(&[
        "import-nle",
        db.to_str().unwrap(),
        "--data-dir",
        data_arg,
        "--python",
        "/nonexistent/python3",
    ]);
    assert!(!ok && err.contains("hearth import nle.json"), "{err}");
    let (ok, _, err) = run_hearth(&["import-nle", "/nonexistent.sqlite", "--data-dir", data_arg]);
    assert!(
        !ok && err.contains("no database at /nonexistent.sqlite"),
        "{err}"
    );
    assert!(!data.exists(), "nothing was written");

    let (ok, out, err) = run_hearth(&["import", export.to_str().unwrap(), "--data-dir", data_arg]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with("imported 2 thermostats (4 buckets)"),
        "{out}"
    );
}
