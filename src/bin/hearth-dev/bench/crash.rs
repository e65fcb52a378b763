//! `hearth-dev crash-test`: kill the server with SIGKILL in the middle of mixed writes, start it
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
//!
//! Connections: the thermostat writer opens a new one for every PUT, as a thermostat does; the
//! command writer and the checks keep theirs open (HTTP keep-alive), as control clients do.
//! Thousands of new connections a second would otherwise fill the connection-tracking table
//! of a machine with netfilter (262,144 entries, each kept 120 s after the close), and
//! connects would time out halfway through a long run. The PUTs alone (about 1,300 a second)
//! stay under that table for the default 100 trials; a smaller table (they are sized by
//! memory) or a much longer run can still fill it. An error names the trial and the step it
//! happened in.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

use super::TempDir;
use hearth::admin::AdminRequest;
use hearth::admin::socket as admin;
use hearth::http::client::{ChunkStream, ClientResponse, KeepAlive, Url};
use hearth::process::ServerProcess;
use hearth::util::random;

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
        let step = |what: &'static str| move |e: String| format!("trial {trial}, {what}: {e}");
        let server = ServerProcess::start(exe, &dir.0)
            .map_err(|log| format!("trial {trial}: the server did not start:\n{log}"))?;
        if trial == 1 {
            prepare(&server, &dir.0).map_err(step("preparing"))?;
        }
        let before = (acks.puts, acks.commands, acks.keys.len());
        acks = write_until_killed(server, &dir.0, acks).map_err(step("writing"))?;
        report.puts = acks.puts;
        report.commands = acks.commands;
        report.keys = acks.keys.len();
        report.acknowledged +=
            acks.puts - before.0 + acks.commands - before.1 + acks.keys.len() - before.2;
        let server = ServerProcess::start(exe, &dir.0).map_err(|log| {
            format!("trial {trial}: the store did not load after SIGKILL:\n{log}")
        })?;
        let (lost, problems) = check(&server, &acks).map_err(step("checking after the restart"))?;
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
    let reply = admin::send(&socket, &add).map_err(|e| format!("the admin socket: {e}"))?;
    if !reply.ok {
        return Err(format!("adding the user: {}", reply.text));
    }
    for serial in [PUT_SERIAL, COMMAND_SERIAL] {
        put(server, serial, 0)?;
    }
    Ok(())
}

/// A thermostat's PUT, on a new connection.
fn put(server: &ServerProcess, serial: &str, n: u64) -> Result<(), String> {
    let body =
        json!({"objects": [{"object_key": format!("shared.{serial}"), "value": {"crash_n": n}}]});
    let target = format!("http://{}/nest/transport/v7/put", server.device);
    let r = ChunkStream::open(
        &Url::parse(&target)?,
        "POST",
        &[("Authorization", &basic(serial))],
        body.to_string().as_bytes(),
        TIMEOUT,
        false,
    )
    .and_then(|mut r| r.read_all())
    .map_err(|e| format!("PUT {target}: {e}"))?;
    ok(&target, &r)
}

/// A 200, that is an acknowledged write.
fn ok(target: &str, r: &ClientResponse) -> Result<(), String> {
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

/// A command, on the control client's kept-open connection.
fn command(control: &mut KeepAlive, n: u64) -> Result<(), String> {
    super::load::set_temperature(control, COMMAND_SERIAL, command_value(n))
}

/// A kept-open connection to `addr`.
fn keep_alive(addr: std::net::SocketAddr) -> Result<KeepAlive, String> {
    let url = Url::parse(&format!("http://{addr}/"))?;
    KeepAlive::connect(&url, TIMEOUT).map_err(|e| format!("connecting to {addr}: {e}"))
}

fn create_key(dir: &Path, n: usize) -> Result<String, String> {
    let request = AdminRequest::KeysCreate {
        user: KEY_USER.into(),
        name: format!("crash-{n}"),
        scopes: "read".into(),
        serials: Vec::new(),
        expires_days: None,
    };
    let reply = admin::send(&dir.join(admin::SOCKET_FILE), &request)
        .map_err(|e| format!("the admin socket: {e}"))?;
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
    // `killing` is set before the SIGKILL, `killed` after it: a write that fails before
    // `killing` failed for another reason (a connect timing out, say) and ends the test; one
    // acknowledged before `killed` counts.
    let killing = Arc::new(AtomicBool::new(false));
    let killed = Arc::new(AtomicBool::new(false));
    // Everything that can fail is done before the writers start, so an early return never
    // leaves a writer holding the server (which is killed when the last holder drops it).
    let mut control = keep_alive(server.control)?;
    let delay = 50 + random::below(1450).map_err(|e| e.to_string())?;
    let puts = {
        let (server, from) = (Arc::clone(&server), acks.put_n);
        let writer = Writer::new(&killing, &killed, "the thermostat writer");
        thread::spawn(move || writer.run(from, |n| put(&server, PUT_SERIAL, n)))
    };
    let commands = {
        let writer = Writer::new(&killing, &killed, "the command writer");
        let from = acks.command_n;
        thread::spawn(move || writer.run(from, |n| command(&mut control, n)))
    };
    let keys = {
        let writer = Writer::new(&killing, &killed, "the key writer");
        let (dir, start) = (dir.to_path_buf(), acks.keys.len());
        thread::spawn(move || {
            let mut made = Vec::new();
            writer.run(0, |n| {
                made.push(create_key(&dir, start + n as usize)?);
                // Keys are made now and then, not thousands a second: every request with a
                // key is checked against every stored hash.
                thread::sleep(Duration::from_millis(20));
                Ok(())
            })?;
            Ok::<_, String>(made)
        })
    };
    thread::sleep(Duration::from_millis(u64::from(delay)));
    // Kill first, then tell the writers to stop: acknowledgements that raced with the kill
    // are kept.
    killing.store(true, Ordering::SeqCst);
    server.signal(hearth::process::Signal::KILL);
    killed.store(true, Ordering::SeqCst);
    let (put_n, put_count) = puts
        .join()
        .map_err(|_| "the thermostat writer panicked")??;
    let (command_n, command_count) = commands
        .join()
        .map_err(|_| "the command writer panicked")??;
    let mut keys_made = keys.join().map_err(|_| "the key writer panicked")??;
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

/// One writer's loop: numbered writes until the server is killed.
struct Writer {
    killing: Arc<AtomicBool>,
    killed: Arc<AtomicBool>,
    name: &'static str,
}

impl Writer {
    fn new(killing: &Arc<AtomicBool>, killed: &Arc<AtomicBool>, name: &'static str) -> Writer {
        Writer {
            killing: Arc::clone(killing),
            killed: Arc::clone(killed),
            name,
        }
    }

    /// Writes `from + 1`, `from + 2`, … until told the server is killed or a write fails
    /// after the kill began; the last acknowledged number and how many were.
    fn run(
        &self,
        from: u64,
        mut write: impl FnMut(u64) -> Result<(), String>,
    ) -> Result<(u64, usize), String> {
        let (mut last, mut count) = (from, 0);
        while !self.killed.load(Ordering::SeqCst) {
            match write(last + 1) {
                Ok(()) => {
                    last += 1;
                    count += 1;
                }
                Err(e) if !self.killing.load(Ordering::SeqCst) => {
                    return Err(format!("{} failed before the kill: {e}", self.name));
                }
                Err(_) => break,
            }
        }
        Ok((last, count))
    }
}

/// Lost acknowledged writes, and a line about each stream that lost some.
fn check(server: &ServerProcess, acks: &Acks) -> Result<(usize, Vec<String>), String> {
    let mut lost = 0;
    let mut problems = Vec::new();
    let mut device = keep_alive(server.device)?;
    let stored_n = shared(&mut device, PUT_SERIAL)?["crash_n"]
        .as_u64()
        .unwrap_or(0);
    if stored_n < acks.put_n || stored_n > acks.put_n + 1 {
        lost += usize::try_from(acks.put_n.saturating_sub(stored_n)).unwrap_or(usize::MAX);
        problems.push(format!(
            "PUT: acknowledged n={}, stored n={stored_n}",
            acks.put_n
        ));
    }
    let target = shared(&mut device, COMMAND_SERIAL)?["target_temperature"].as_f64();
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
    let mut control = keep_alive(server.control)?;
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
        let r = control
            .request("GET", "/api/v1/devices", &[("Authorization", &auth)], &[])
            .map_err(|e| format!("GET /api/v1/devices with a key: {e}"))?;
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
fn shared(device: &mut KeepAlive, serial: &str) -> Result<Value, String> {
    let key = format!("shared.{serial}");
    let body =
        json!({"objects": [{"object_key": key, "object_revision": 0, "object_timestamp": 0}]});
    let r = device
        .request(
            "POST",
            "/nest/transport",
            &[("Authorization", &basic(serial))],
            body.to_string().as_bytes(),
        )
        .map_err(|e| format!("reading {key}: {e}"))?;
    if r.status != 200 {
        return Err(format!("reading {key} answered {}", r.status));
    }
    Ok(r.json()["objects"][0]["value"].clone())
}
