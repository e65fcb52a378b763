//! Durability, tested on the real binary: every acknowledged write survives SIGKILL; a torn last
//! journal line is dropped; a corrupt file stops startup with its name and is left untouched;
//! SIGTERM writes a snapshot (a fresh store's journal is all there is); a second process cannot open the same data directory.

use crate::common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

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

/// Sends SIGTERM and waits for the exit. The deadline stands for systemd's, which is longer
/// (`TimeoutStopSec=20` in the unit): a server that waited for its held subscribes (minutes)
/// would miss it; how fast it stops is for the benchmarks.
fn terminate(mut p: ServerProcess) -> std::process::ExitStatus {
    p.signal(hearth::process::Signal::TERM);
    let mut status = None;
    wait_until("the exit after SIGTERM", || {
        status = p.exited();
        status.is_some()
    });
    status.unwrap()
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
    let status = terminate(p);
    assert!(status.success(), "{status:?}");
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

    // Truncated, then replaced by garbage: each refused, naming the file, touching nothing.
    std::fs::write(&snapshot, b"{\"format\":1,\"last_seq\":3,\"data\":{\"devi").unwrap();
    let before = store_bytes(dir.path());
    let log = try_start(dir.path()).err().expect("startup must fail");
    assert!(log.contains("state.json"), "{log}");
    assert_eq!(store_bytes(dir.path()), before);
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&snapshot, &garbage).unwrap();
    let before = store_bytes(dir.path());
    let log = try_start(dir.path()).err().expect("startup must fail");
    assert!(log.contains("state.json"), "{log}");
    assert_eq!(store_bytes(dir.path()), before);
}

#[test]
fn sigterm_ends_held_subscribes_and_event_streams_and_exits() {
    let dir = TempDir::new("term-held");
    let p = start(dir.path());
    let (mut sim, _events) = thermostat(&format!("http://{}", p.device), SERIAL);
    sim.boot().unwrap();
    let mut held = sim.open_subscribe().unwrap();
    let mut stream = open_events(p.control, "/api/events");
    // Both are parked in the server before it is told to stop: the stream has sent its first
    // line, and the subscribe is counted (a subscribe whose hold comes after the stop is ended
    // at once, cleanly).
    assert_eq!(stream.next_chunk().unwrap().unwrap(), b": connected\n\n");
    let stats = get(p.control, "/api/stats").json();
    assert_eq!(
        stats["subscriptions"]["total_subscriptions"],
        json!(1),
        "{stats}"
    );
    // Held for minutes (the default hold): the exit cannot wait for it.
    let status = terminate(p);
    assert!(status.success(), "{status:?}");
    // Each ended with the chunked terminator, not a cut connection.
    assert!(
        held.next_chunk().unwrap().is_none(),
        "the subscribe ends cleanly"
    );
    loop {
        match stream.next_chunk().unwrap() {
            Some(chunk) if chunk.starts_with(b":") => continue,
            Some(chunk) => panic!("unexpected event {}", String::from_utf8_lossy(&chunk)),
            None => break,
        }
    }
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

/// Caps the size any file of process `pid` may grow to (RLIMIT_FSIZE), as a full disk would.
fn limit_file_size(pid: u32, bytes: Option<u64>) {
    use rustix::process::{Pid, Resource, Rlimit, prlimit};
    let limit = Rlimit {
        current: bytes,
        maximum: None,
    };
    let pid = Pid::from_raw(pid as i32).unwrap();
    prlimit(Some(pid), Resource::Fsize, limit).unwrap();
}

#[test]
fn a_write_the_disk_cannot_take_is_answered_503_and_never_acknowledged() {
    let dir = TempDir::new("full");
    let p = start(dir.path());
    let key = format!("shared.{SERIAL}");
    let put = |n: u64, filler: usize| {
        post_json(
            p.device,
            "/nest/transport/v7/put",
            SERIAL,
            json!({"objects": [{"object_key": key, "value": {"n": n, "note": "x".repeat(filler)}}]}),
        )
    };
    assert_eq!(put(1, 10).status, 200);
    let journal = journal_segments(dir.path()).pop().unwrap();
    let used = std::fs::metadata(&journal).unwrap().len();
    // Room for a few bytes more, not for the next record.
    limit_file_size(p.pid(), Some(used + 64));
    let r = put(2, 500);
    assert_eq!(r.status, 503, "{}", r.text());
    assert_eq!(
        r.json()["error"],
        json!("Storage unavailable; the change was not saved")
    );
    let r = command(p.control, SERIAL, "set_temperature", json!(23.0));
    assert_eq!(r.status, 503, "{}", r.text());
    // Nothing of either is visible, and the half-written record was taken back.
    let o = read_bucket(p.device, SERIAL, &key);
    assert_eq!(o["value"]["n"], json!(1));
    assert!(o["value"].get("target_temperature").is_none(), "{o}");
    assert_eq!(std::fs::metadata(&journal).unwrap().len(), used);

    // Space again: writes are accepted, and everything acknowledged survives a restart.
    limit_file_size(p.pid(), None);
    assert_eq!(put(3, 10).status, 200);
    p.kill();
    let p = start(dir.path());
    let o = read_bucket(p.device, SERIAL, &key);
    assert_eq!(o["value"]["n"], json!(3));
    assert_eq!(o["value"]["note"], json!("x".repeat(10)));
}

fn open_descriptors(p: &ServerProcess) -> u64 {
    std::fs::read_dir(format!("/proc/{}/fd", p.pid()))
        .unwrap()
        .count() as u64
}

/// Out of descriptors, `accept` fails; the listener's accept loop logs that, backs off and
/// tries again (it never ends), so a client that connected meanwhile waits in the backlog and
/// is served once descriptors free up. (tiny_http's accept loop died here; hearth's watchdog
/// then had to exit for a restart.)
#[test]
fn out_of_descriptors_the_accept_loop_waits_and_serves_the_connection_later() {
    use rustix::process::{Pid, Resource, Rlimit, prlimit};
    use std::io::{Read, Write};
    let dir = TempDir::new("emfile");
    let mut p = start(dir.path());
    assert_eq!(get(p.device, "/health").status, 200);
    let pid = Pid::from_raw(p.pid() as i32).unwrap();
    let original = rustix::process::getrlimit(Resource::Nofile);
    // No new descriptor at all (0, 1 and 2 are taken).
    let none_left = Rlimit {
        current: Some(3),
        maximum: original.maximum,
    };
    prlimit(Some(pid), Resource::Nofile, none_left).unwrap();
    let mut conn = std::net::TcpStream::connect(p.device).unwrap();
    conn.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    wait_until("the failed accept's log line", || {
        p.log().contains("accept failed")
    });
    prlimit(Some(pid), Resource::Nofile, original).unwrap();
    conn.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}\n{}", p.log());
    assert!(p.exited().is_none(), "{}", p.log());
    assert_eq!(get(p.control, "/health").status, 200);
}

#[test]
fn with_descriptors_exhausted_the_server_recovers_or_exits_for_a_restart() {
    let dir = TempDir::new("nofile");
    // A service manager's socket: the server feeds its watchdog (every 200 ms here) only
    // while its own self-probes of both listeners pass. It is read all along (a full one
    // would block the server's maintenance loop); `fed` says whether a feed came since the
    // last look.
    let manager = TempDir::new("nofile-manager");
    let socket = manager.path().join("notify.sock");
    let notify = std::os::unix::net::UnixDatagram::bind(&socket).unwrap();
    notify.set_nonblocking(true).unwrap();
    let fed = || {
        let mut buf = [0u8; 512];
        let mut fed = false;
        while let Ok(n) = notify.recv(&mut buf) {
            fed |= buf[..n] == *b"WATCHDOG=1";
        }
        fed
    };
    let mut p = ServerProcess::start_with_env(
        Path::new(env!("CARGO_BIN_EXE_hearth")),
        dir.path(),
        &["--watchdog-interval-seconds", "1"],
        &[
            ("NOTIFY_SOCKET", socket.as_os_str()),
            ("WATCHDOG_USEC", std::ffi::OsStr::new("400000")),
        ],
    )
    .unwrap();
    let open_now = open_descriptors(&p);
    let limit = rustix::process::Rlimit {
        current: Some(open_now + 8),
        maximum: Some(open_now + 8),
    };
    let pid = rustix::process::Pid::from_raw(p.pid() as i32).unwrap();
    rustix::process::prlimit(Some(pid), rustix::process::Resource::Nofile, limit).unwrap();
    // Far more connections than descriptors left, on both ports, held until the watchdog's
    // self-probe has failed (it needs a descriptor too), or the server has exited.
    let hogs: Vec<std::net::TcpStream> = (0..40)
        .filter_map(|i| {
            let addr = if i % 2 == 0 { p.device } else { p.control };
            std::net::TcpStream::connect(addr).ok()
        })
        .collect();
    wait_until_within(Duration::from_secs(20), "a failed self-probe", || {
        fed();
        p.exited().is_some() || p.log().contains("self-probe of")
    });
    // Every feed sent before that failure is in the socket by now: drop them. The watchdog
    // feeds again only once every listener has answered its probe since.
    fed();
    drop(hogs);
    // Either it serves both ports again, or it has exited non-zero for systemd to restart
    // it; never alive with a dead listener.
    wait_until_within(Duration::from_secs(20), "a restart or a recovery", || {
        fed() || p.exited().is_some()
    });
    if let Some(status) = p.exited() {
        assert!(!status.success(), "exited {status:?}");
        assert!(p.log().contains("restarts hearth"), "{}", p.log());
        return;
    }
    // Recovered: its own probes of both listeners passed, so no failures are left to count
    // towards an exit; and both answer.
    let health = |addr: SocketAddr| get(addr, "/health").status;
    assert_eq!((health(p.device), health(p.control)), (200, 200));
    assert!(p.exited().is_none(), "{}", p.log());
}

#[test]
fn the_data_directory_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let parent = TempDir::new("private");
    let dir = parent.path().join("data");
    let p = start(&dir);
    post_json(
        p.device,
        "/nest/transport/v7/put",
        SERIAL,
        json!({"objects": [{"object_key": format!("shared.{SERIAL}"), "value": {"n": 1, "current_temperature": 20.0}}]}),
    );
    // The first reading starts the thermostat's history.
    let history = dir.join("history").join(format!("{SERIAL}.jsonl"));
    wait_until("the history file", || history.exists());
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700, "the directory");
    assert_eq!(mode(&dir.join("admin.sock")), 0o600, "the admin socket");
    assert!(terminate(p).success());
    // Files 0600, directories (the history's) 0700, all the way down.
    let mut pending = vec![dir.clone()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                assert_eq!(mode(&path), 0o700, "{}", path.display());
                pending.push(path);
            } else {
                assert_eq!(mode(&path), 0o600, "{}", path.display());
            }
        }
    }
    assert!(dir.join("state.json").exists() && !journal_segments(&dir).is_empty());
}

#[test]
fn a_data_directory_that_exists_as_0755_is_made_0700() {
    use std::os::unix::fs::PermissionsExt;
    let parent = TempDir::new("loose");
    let dir = parent.path().join("data");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o755, "the test starts from a loose directory");
    let server = common::start_server(hearth::Config::local(&dir));
    assert_eq!(mode(&dir), 0o700, "the data directory");
    assert_eq!(mode(parent.path()), 0o755, "its parent is left alone");
    // It still serves, and its files are there.
    assert_eq!(get(server.device_addr(), "/health").status, 200);
    server.shutdown();
    assert!(dir.join("LOCK").exists());
}
