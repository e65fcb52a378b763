//! Durability, tested on the real binary: every acknowledged write survives SIGKILL; a torn last
//! journal line is dropped; a corrupt file stops startup with its name and is left untouched;
//! SIGTERM writes a snapshot; a second process cannot open the same data directory.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use crossbeam_channel::unbounded;
use hearth::process::ServerProcess;
use serde_json::{Value, json};

fn start(dir: &Path) -> ServerProcess {
    try_start(dir).unwrap_or_else(|log| panic!("server did not start:\n{log}"))
}

fn try_start(dir: &Path) -> Result<ServerProcess, String> {
    ServerProcess::start(Path::new(env!("CARGO_BIN_EXE_hearth")), dir)
}

/// The value of a bucket as the server answers it (non-chunked subscribe with timestamp 0).
fn read_bucket(addr: SocketAddr, serial: &str, key: &str) -> Value {
    let r = post_json(
        addr,
        "/nest/transport",
        serial,
        json!({"objects": [{"object_key": key, "object_revision": 0, "object_timestamp": 0}]}),
    );
    r.json()["objects"][0].clone()
}

fn journal_segments(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("journal-")
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_acknowledged_write_survives_sigkill() {
    let dir = TempDir::new("kill");
    let p = start(dir.path());
    let serials: Vec<String> = (1..=4).map(|i| format!("02AA01AC00KILL{i:02}")).collect();
    let codes = Arc::new(Mutex::new(Vec::new()));
    for serial in &serials {
        let r = get_as(p.device, "/nest/passphrase", serial);
        codes.lock().unwrap().push((
            serial.clone(),
            r.json()["value"].as_str().unwrap().to_string(),
        ));
    }
    // Writers on four serials at once (their fsyncs are shared); every acknowledgement is
    // reported, and the server is killed right after the 300th.
    let (acks, acked) = unbounded::<(String, i64, i64)>();
    let addr = p.device;
    for serial in serials.clone() {
        let acks = acks.clone();
        thread::spawn(move || {
            for n in 1.. {
                let body = json!({"objects": [{"object_key": format!("shared.{serial}"), "value": {"n": n, "current_temperature": 20.0 + (n % 10) as f64 / 4.0}}]});
                let auth = basic(&serial, "pw");
                let r = hearth::http::client::request(
                    &url(addr, "/nest/transport/v7/put"),
                    "POST",
                    &[("Authorization", &auth)],
                    body.to_string().as_bytes(),
                    TIMEOUT,
                );
                match r {
                    Ok(r) if r.status == 200 => {
                        let rev = r.json()["objects"][0]["object_revision"].as_i64().unwrap();
                        if acks.send((serial.clone(), n, rev)).is_err() {
                            return;
                        }
                    }
                    _ => return,
                }
            }
        });
    }
    drop(acks);
    let mut last: std::collections::HashMap<String, (i64, i64)> = Default::default();
    for (count, (serial, n, rev)) in acked.iter().enumerate() {
        last.insert(serial, (n, rev));
        if count + 1 == 300 {
            break;
        }
    }
    p.kill();
    // Acknowledgements that raced with the kill count too.
    for (serial, n, rev) in acked.try_iter() {
        last.insert(serial, (n, rev));
    }

    let p = start(dir.path());
    for (serial, (n, rev)) in &last {
        let o = read_bucket(p.device, serial, &format!("shared.{serial}"));
        let stored_n = o["value"]["n"].as_i64().unwrap();
        let stored_rev = o["object_revision"].as_i64().unwrap();
        assert!(
            stored_n >= *n,
            "{serial}: acknowledged n={n}, found n={stored_n}"
        );
        assert!(
            stored_rev >= *rev,
            "{serial}: acknowledged rev {rev}, found {stored_rev}"
        );
        assert!(
            stored_n <= *n + 1,
            "{serial}: at most the one write in flight may also have landed"
        );
    }
    for (serial, code) in codes.lock().unwrap().iter() {
        assert_eq!(
            get_as(p.device, "/nest/passphrase", serial).json()["value"],
            json!(code),
            "entry key of {serial} survived"
        );
    }
    assert_eq!(last.len(), 4);
}

#[test]
fn a_torn_last_line_is_dropped_and_a_corrupt_one_stops_startup() {
    let dir = TempDir::new("torn");
    let p = start(dir.path());
    for n in 1..=5 {
        post_json(
            p.device,
            "/nest/transport/v7/put",
            SERIAL,
            json!({"objects": [{"object_key": format!("device.{SERIAL}"), "value": {"n": n}}]}),
        );
    }
    p.kill();

    // A record cut off mid-write (no newline): dropped at startup, everything before it kept.
    let segment = journal_segments(dir.path()).pop().unwrap();
    let good = std::fs::read(&segment).unwrap();
    let mut torn = good.clone();
    torn.extend_from_slice(br#"{"seq":99,"ops":[{"op":"merge","serial":"X","ke"#);
    std::fs::write(&segment, &torn).unwrap();
    let p = start(dir.path());
    assert_eq!(
        read_bucket(p.device, SERIAL, &format!("device.{SERIAL}"))["value"]["n"],
        json!(5)
    );
    assert!(p.log().contains("torn"), "{}", p.log());
    p.kill();
    assert_eq!(
        std::fs::read(&segment).unwrap(),
        good,
        "the torn tail was cut off"
    );

    // A complete line that does not parse, followed by more records: refuse, name the file,
    // touch nothing.
    let mut corrupt = b"{\"seq\":1,\"ops\":[{\"op\":\"bogus\"}]}\n".to_vec();
    corrupt.extend_from_slice(&good);
    std::fs::write(&segment, &corrupt).unwrap();
    let before = store_bytes(dir.path());
    let log = try_start(dir.path()).err().expect("startup must fail");
    assert!(log.contains(&segment.display().to_string()), "{log}");
    assert!(log.contains("corrupt"), "{log}");
    assert_eq!(store_bytes(dir.path()), before, "nothing was overwritten");
}

#[test]
fn sigterm_ends_cleanly_with_a_snapshot_and_a_corrupt_snapshot_stops_startup() {
    let dir = TempDir::new("term");
    let p = start(dir.path());
    post_json(
        p.device,
        "/nest/transport/v7/put",
        SERIAL,
        json!({"objects": [{"object_key": format!("shared.{SERIAL}"), "value": {"target_temperature": 21.5}}]}),
    );
    let started = Instant::now();
    let status = p.terminate().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let snapshot = dir.path().join("state.json");
    assert!(snapshot.exists());
    assert_eq!(
        journal_segments(dir.path()).len(),
        1,
        "older segments are dropped after a snapshot"
    );

    let p = start(dir.path());
    assert!(p.log().contains("snapshot at record"), "{}", p.log());
    let o = read_bucket(p.device, SERIAL, &format!("shared.{SERIAL}"));
    assert_eq!(o["value"]["target_temperature"], json!(21.5));
    p.kill();

    std::fs::write(&snapshot, b"{\"format\":1,\"last_seq\":3,\"data\":{\"devi").unwrap();
    let before = store_bytes(dir.path());
    let log = try_start(dir.path()).err().expect("startup must fail");
    assert!(log.contains("state.json"), "{log}");
    assert_eq!(store_bytes(dir.path()), before);
}

#[test]
fn a_second_process_cannot_open_the_same_data_directory() {
    let dir = TempDir::new("lock");
    let _first = start(dir.path());
    let log = try_start(dir.path()).err().expect("second start must fail");
    assert!(log.contains("in use by another hearth process"), "{log}");
}

#[test]
fn invalid_configuration_stops_startup_with_the_setting_and_its_range() {
    let dir = TempDir::new("cfg");
    let out = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(["serve", "--data-dir"])
        .arg(dir.path())
        .env("SUSPEND_TIME_MAX", "600")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("SUSPEND_TIME_MAX (--suspend-time-max)") && err.contains("11 to 350"),
        "{err}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(["serve", "--device-port", "99999", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("SERVER_PORT (--device-port)") && err.contains("0 to 65535"),
        "{err}"
    );
}
