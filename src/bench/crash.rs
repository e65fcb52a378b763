//! `hearth crash-test`: kill the server with SIGKILL in the middle of mixed writes, start it
//! again on the same data directory, and check that every write it acknowledged is there.
//!
//! Each trial starts `hearth serve` on 127.0.0.1, runs three writers at once (thermostat PUTs
//! on the device port, `POST /command` on the control port, API keys created through the admin
//! socket), kills the server at a random moment between 50 ms and 1.5 s in, and restarts it.
//! The restart must load the store; then:
//! - PUTs: each writer puts an increasing counter `n` into its own bucket, so the stored `n`
//!   must be the last acknowledged one (or the one in flight at the kill, which may have been
//!   made durable without its acknowledgement arriving);
//! - commands: each sets a target temperature from a sequence; the stored one must be the
//!   last acknowledged value or the one in flight;
//! - keys: every acknowledged key must authenticate on `/api/v1`.
//!
//! One data directory serves all trials, so later trials load ever larger journals and
//! snapshots.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

use super::TempDir;
use crate::admin::AdminRequest;
use crate::admin::socket as admin;
use crate::http::client::{self, Url};
use crate::process::ServerProcess;
use crate::util::random;

const PUT_SERIAL: &str = "02AA01ACCRASH0PUT";
const COMMAND_SERIAL: &str = "02AA01ACCRASH0CMD";
const KEY_USER: &str = "crash";
const TIMEOUT: Duration = Duration::from_secs(10);

/// What the trials found.
#[derive(Debug, Default)]
pub struct CrashReport {
    pub trials: usize,
    /// Acknowledged writes, over all trials.
    pub acknowledged: usize,
    /// Of which thermostat PUTs, commands and API keys.
    pub puts: usize,
    pub commands: usize,
    pub keys: usize,
    /// Acknowledged writes missing after a restart (a stream's rolled-back writes counted from
    /// its last acknowledged one).
    pub lost: usize,
    /// What was missing, one line each.
    pub problems: Vec<String>,
}

/// The last acknowledged write of each writer in one trial.
#[derive(Default)]
struct Acks {
    put_n: u64,
    puts: usize,
    command_n: u64,
    commands: usize,
    keys: Vec<String>,
    /// Keys acknowledged before this trial.
    keys_before: usize,
}

pub fn run(exe: &Path, trials: usize) -> Result<CrashReport, String> {
    let dir = TempDir::new("crash")?;
    let mut report = CrashReport::default();
    let mut acks = Acks::default();
    for trial in 1..=trials {
        let server = ServerProcess::start(exe, &dir.0)
            .map_err(|log| format!("trial {trial}: the server did not start:\n{log}"))?;
        if trial == 1 {
            prepare(&server, &dir.0)?;
        }
        let before = (acks.puts, acks.commands, acks.keys.len());
        acks = write_until_killed(server, &dir.0, acks)?;
        report.puts = acks.puts;
        report.commands = acks.commands;
        report.keys = acks.keys.len();
        report.acknowledged +=
            acks.puts - before.0 + acks.commands - before.1 + acks.keys.len() - before.2;
        let server = ServerProcess::start(exe, &dir.0).map_err(|log| {
            format!("trial {trial}: the store did not load after SIGKILL:\n{log}")
        })?;
        let (lost, problems) = check(&server, &acks)?;
        report.lost += lost;
        report
            .problems
            .extend(problems.into_iter().map(|p| format!("trial {trial}: {p}")));
        report.trials = trial;
        // The next trial kills this server too, after its own writes.
        server.kill();
    }
    Ok(report)
}

/// A user for the keys, and both thermostats known to the server.
fn prepare(server: &ServerProcess, dir: &Path) -> Result<(), String> {
    let socket = dir.join(admin::SOCKET_FILE);
    let add = AdminRequest::UsersAdd {
        name: KEY_USER.into(),
    };
    let reply = admin::send(&socket, &add).map_err(|e| format!("admin socket: {e}"))?;
    if !reply.ok {
        return Err(format!("adding the user: {}", reply.text));
    }
    for serial in [PUT_SERIAL, COMMAND_SERIAL] {
        put(server, serial, 0)?;
    }
    Ok(())
}

fn put(server: &ServerProcess, serial: &str, n: u64) -> Result<(), String> {
    let body =
        json!({"objects": [{"object_key": format!("shared.{serial}"), "value": {"crash_n": n}}]});
    let target = format!("http://{}/nest/transport/v7/put", server.device);
    post_ok(&target, &[("Authorization", &basic(serial))], &body)
}

/// POSTs `body` and wants a 200 (that is, an acknowledged write).
fn post_ok(target: &str, headers: &[(&str, &str)], body: &Value) -> Result<(), String> {
    let r = client::request(
        &Url::parse(target)?,
        "POST",
        headers,
        body.to_string().as_bytes(),
        TIMEOUT,
    )
    .map_err(|e| e.to_string())?;
    if r.status == 200 {
        Ok(())
    } else {
        Err(format!("{target} answered {}: {}", r.status, r.text()))
    }
}

fn basic(serial: &str) -> String {
    use base64::Engine;
    let raw = format!("{serial}:crash-test");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

/// The target temperature of the `n`th command: 0.5 °C steps that repeat every 20, so the
/// last acknowledged command and the one after it always differ.
fn command_value(n: u64) -> f64 {
    10.0 + (n % 20) as f64 * 0.5
}

fn command(server: &ServerProcess, n: u64) -> Result<(), String> {
    let body =
        json!({"serial": COMMAND_SERIAL, "command": "set_temperature", "value": command_value(n)});
    let target = format!("http://{}/command", server.control);
    post_ok(&target, &[("Content-Type", "application/json")], &body)
}

fn create_key(dir: &Path, n: usize) -> Result<String, String> {
    let request = AdminRequest::KeysCreate {
        user: KEY_USER.into(),
        name: format!("crash-{n}"),
        scopes: "read".into(),
        serials: Vec::new(),
        expires_days: None,
    };
    let reply = admin::send(&dir.join(admin::SOCKET_FILE), &request).map_err(|e| e.to_string())?;
    if !reply.ok {
        return Err(reply.text);
    }
    reply
        .text
        .lines()
        .last()
        .map(|k| k.trim().to_string())
        .ok_or_else(|| "no key in the reply".into())
}

/// Runs the three writers until the server is killed at a random moment; returns the
/// acknowledged writes added to `acks`.
fn write_until_killed(server: ServerProcess, dir: &Path, acks: Acks) -> Result<Acks, String> {
    let server = Arc::new(server);
    let killed = Arc::new(AtomicBool::new(false));
    let puts = {
        let (server, killed, from) = (Arc::clone(&server), Arc::clone(&killed), acks.put_n);
        thread::spawn(move || {
            let mut last = from;
            let mut count = 0;
            while !killed.load(Ordering::SeqCst) && put(&server, PUT_SERIAL, last + 1).is_ok() {
                last += 1;
                count += 1;
            }
            (last, count)
        })
    };
    let commands = {
        let (server, killed, from) = (Arc::clone(&server), Arc::clone(&killed), acks.command_n);
        thread::spawn(move || {
            let mut last = from;
            let mut count = 0;
            while !killed.load(Ordering::SeqCst) && command(&server, last + 1).is_ok() {
                last += 1;
                count += 1;
            }
            (last, count)
        })
    };
    let keys = {
        let (killed, dir, start) = (Arc::clone(&killed), dir.to_path_buf(), acks.keys.len());
        thread::spawn(move || {
            let mut made = Vec::new();
            while !killed.load(Ordering::SeqCst) {
                match create_key(&dir, start + made.len()) {
                    Ok(key) => made.push(key),
                    Err(_) => break,
                }
                // Keys are made now and then, not thousands a second: every request with a key
                // is checked against every stored hash.
                thread::sleep(Duration::from_millis(20));
            }
            made
        })
    };
    let delay = 50 + random::below(1450).map_err(|e| e.to_string())?;
    thread::sleep(Duration::from_millis(u64::from(delay)));
    // Kill first, then tell the writers to stop: acknowledgements that raced with the kill
    // are kept.
    server.signal(crate::process::Signal::KILL);
    killed.store(true, Ordering::SeqCst);
    let (put_n, put_count) = puts.join().map_err(|_| "the PUT writer panicked")?;
    let (command_n, command_count) = commands.join().map_err(|_| "the command writer panicked")?;
    let mut keys_made = keys.join().map_err(|_| "the key writer panicked")?;
    let keys_made_count = keys_made.len();
    let mut all_keys = acks.keys;
    all_keys.append(&mut keys_made);
    Ok(Acks {
        put_n,
        puts: acks.puts + put_count,
        command_n,
        commands: acks.commands + command_count,
        keys_before: all_keys.len() - keys_made_count,
        keys: all_keys,
    })
}

/// Lost acknowledged writes, and a line about each stream that lost some.
fn check(server: &ServerProcess, acks: &Acks) -> Result<(usize, Vec<String>), String> {
    let mut lost = 0;
    let mut problems = Vec::new();
    let stored_n = shared(server, PUT_SERIAL)?["crash_n"].as_u64().unwrap_or(0);
    if stored_n < acks.put_n || stored_n > acks.put_n + 1 {
        lost += usize::try_from(acks.put_n.saturating_sub(stored_n)).unwrap_or(usize::MAX);
        problems.push(format!(
            "PUT: acknowledged n={}, stored n={stored_n}",
            acks.put_n
        ));
    }
    let target = shared(server, COMMAND_SERIAL)?["target_temperature"].as_f64();
    let expected = [
        command_value(acks.command_n),
        command_value(acks.command_n + 1),
    ];
    if acks.command_n > 0 && !target.is_some_and(|t| expected.contains(&t)) {
        lost += 1;
        problems.push(format!(
            "command: acknowledged #{} ({} °C), stored {target:?}",
            acks.command_n, expected[0]
        ));
    }
    let devices = Url::parse(&format!("http://{}/api/v1/devices", server.control))?;
    // This trial's keys, and up to 20 from earlier trials (each was checked in its own trial;
    // the sample shows that later restarts kept them).
    let mut to_check: Vec<&String> = acks.keys[acks.keys_before..].iter().collect();
    for _ in 0..acks.keys_before.min(20) {
        let i = random::below(u32::try_from(acks.keys_before).unwrap_or(u32::MAX))
            .map_err(|e| e.to_string())?;
        to_check.push(&acks.keys[i as usize]);
    }
    for key in to_check {
        let auth = format!("Bearer {key}");
        let r = client::request(&devices, "GET", &[("Authorization", &auth)], &[], TIMEOUT)
            .map_err(|e| e.to_string())?;
        if r.status != 200 {
            lost += 1;
            problems.push(format!(
                "API key {}…: answered {}",
                &key[..key.len().min(12)],
                r.status
            ));
        }
    }
    Ok((lost, problems))
}

/// The stored value of `shared.<serial>`, read back the way a thermostat reads it.
fn shared(server: &ServerProcess, serial: &str) -> Result<Value, String> {
    let url = Url::parse(&format!("http://{}/nest/transport", server.device))?;
    let key = format!("shared.{serial}");
    let body =
        json!({"objects": [{"object_key": key, "object_revision": 0, "object_timestamp": 0}]});
    let r = client::request(
        &url,
        "POST",
        &[("Authorization", &basic(serial))],
        body.to_string().as_bytes(),
        TIMEOUT,
    )
    .map_err(|e| e.to_string())?;
    if r.status != 200 {
        return Err(format!("reading {key} answered {}", r.status));
    }
    Ok(r.json()["objects"][0]["value"].clone())
}
