//! The timed parts of the benchmark: commands to held thermostats, command and `/status`
//! throughput from keep-alive clients, start-up, and CPU time while idle.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use hearth::util::clock::real_now;

use serde_json::json;

use super::fleet::HeldFleet;
use hearth::http::client::{self, KeepAlive, Url};
use hearth::process::ServerProcess;

fn control_url(server: &ServerProcess, target: &str) -> Url {
    Url {
        host: server.control.ip().to_string(),
        port: Some(server.control.port()),
        target: target.into(),
    }
}

/// `POST /command set_temperature` (a value from the request's index) on a keep-alive
/// connection; anything but a 200 is an error.
fn send_command(client: &mut KeepAlive, serial: &str, i: usize) -> Result<(), String> {
    set_temperature(client, serial, 16.0 + (i % 20) as f64 * 0.5)
}

/// `POST /command set_temperature` on a keep-alive connection, as a control client sends it;
/// anything but a 200 (an acknowledged, durable write) is an error.
pub(super) fn set_temperature(
    client: &mut KeepAlive,
    serial: &str,
    value: f64,
) -> Result<(), String> {
    let body = json!({"serial": serial, "command": "set_temperature", "value": value});
    let r = client
        .request(
            "POST",
            "/command",
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        )
        .map_err(|e| format!("POST /command: {e}"))?;
    if r.status != 200 {
        return Err(format!("/command answered {}: {}", r.status, r.text()));
    }
    Ok(())
}

/// `count` commands from `commanders` concurrent clients, each on its own keep-alive
/// connection and with its own share of the fleet, one command at a time: each timed from
/// sending `POST /command` (the journal fsync included) to the thermostat having read the
/// pushed `shared` object off its held subscribe.
pub fn timed_commands(
    server: &ServerProcess,
    fleet: &HeldFleet,
    count: usize,
    commanders: usize,
) -> Result<Pushes, String> {
    let commanders = commanders.clamp(1, fleet.serials.len());
    // Each thermostat belongs to one commander; pushes are routed to the commander of the
    // thermostat that read them.
    let mut routes = HashMap::new();
    let mut inboxes = Vec::with_capacity(commanders);
    let mut shares: Vec<Vec<String>> = vec![Vec::new(); commanders];
    for (i, serial) in fleet.serials.iter().enumerate() {
        shares[i % commanders].push(serial.clone());
    }
    let mut receivers = Vec::with_capacity(commanders);
    for (c, share) in shares.iter().enumerate() {
        let (tx, rx) = crossbeam_channel::unbounded::<Instant>();
        for serial in share {
            routes.insert(format!("shared.{serial}"), c);
        }
        inboxes.push(tx);
        receivers.push(rx);
    }
    let pushes = fleet.pushes.clone();
    let (finished, done) = crossbeam_channel::bounded::<()>(0);
    let router = thread::spawn(move || {
        loop {
            crossbeam_channel::select! {
                recv(pushes) -> push => match push {
                    Ok((key, at)) => {
                        if let Some(&c) = routes.get(&key) {
                            let _ = inboxes[c].send(at);
                        }
                    }
                    Err(_) => return,
                },
                // Every commander is done once this is dropped.
                recv(done) -> _ => return,
            }
        }
    });
    let url = control_url(server, "/");
    let cpu_before = Cpu::now(server)?;
    let started = real_now();
    let threads: Vec<_> = shares
        .into_iter()
        .zip(receivers)
        .enumerate()
        .map(|(c, (share, inbox))| {
            let n = count / commanders + usize::from(c < count % commanders);
            let url = url.clone();
            thread::spawn(move || -> Result<Vec<u64>, String> {
                let mut client =
                    KeepAlive::connect(&url, Duration::from_secs(10)).map_err(|e| e.to_string())?;
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let serial = &share[i % share.len()];
                    while inbox.try_recv().is_ok() {}
                    let started = real_now();
                    send_command(&mut client, serial, i * commanders + c)?;
                    let left =
                        (started + Duration::from_secs(10)).saturating_duration_since(real_now());
                    let at = inbox
                        .recv_timeout(left)
                        .map_err(|_| format!("{serial} did not receive its push within 10 s"))?;
                    out.push(at.saturating_duration_since(started).as_micros() as u64);
                }
                Ok(out)
            })
        })
        .collect();
    let mut all = Vec::with_capacity(count);
    let mut failure = None;
    for t in threads {
        match t.join().map_err(|_| "a commander panicked".to_string()) {
            Ok(Ok(times)) => all.extend(times),
            Ok(Err(e)) | Err(e) => failure = failure.or(Some(e)),
        }
    }
    let elapsed = started.elapsed();
    let cpu = Cpu::now(server)?.since(&cpu_before);
    drop(finished);
    let _ = router.join();
    if let Some(e) = failure {
        return Err(e);
    }
    let per_command = |t: Duration| t.as_secs_f64() * 1e6 / all.len().max(1) as f64;
    Ok(Pushes {
        per_sec: all.len() as f64 / elapsed.as_secs_f64(),
        server_cpu_us: per_command(cpu.server),
        bench_cpu_us: per_command(cpu.bench),
        latencies: all,
    })
}

/// What the command → push run measured.
pub struct Pushes {
    /// Each command's latency to its push, in µs.
    pub latencies: Vec<u64>,
    pub per_sec: f64,
    /// CPU time per timed command, in µs, of the server (the command, its push, and the
    /// thermostat's acknowledging PUT and new subscribe) and of this process (the simulated
    /// thermostats and the clients). With no pause between commands, the run is limited by
    /// the two together: a command waits for the cores as much as for anything else.
    pub server_cpu_us: f64,
    pub bench_cpu_us: f64,
}

/// CPU time so far of the server and of this process.
struct Cpu {
    server: Duration,
    bench: Duration,
}

impl Cpu {
    fn now(server: &ServerProcess) -> Result<Cpu, String> {
        Ok(Cpu {
            server: server.cpu_time().ok_or("no CPU time for the server")?,
            bench: hearth::process::cpu_time_of("self").ok_or("no CPU time for this process")?,
        })
    }

    fn since(&self, before: &Cpu) -> Cpu {
        Cpu {
            server: self.server.saturating_sub(before.server),
            bench: self.bench.saturating_sub(before.bench),
        }
    }
}

/// One request of a load client: its connection and the request's running index.
type Request = Arc<dyn Fn(&mut KeepAlive, usize) -> Result<(), String> + Send + Sync>;

/// What a load measured.
pub struct Load {
    pub per_sec: f64,
    /// Each request's latency in µs.
    pub latencies: Vec<u64>,
    /// The server's CPU time (user + system, all threads) over the load, divided by the
    /// requests answered, in µs.
    pub server_cpu_us: f64,
}

/// Runs `clients` threads for `seconds`, each with its own keep-alive connection, calling
/// `request(client, index)` until time is up.
fn keep_alive_load(
    server: &ServerProcess,
    clients: usize,
    seconds: u64,
    request: Request,
) -> Result<Load, String> {
    let url = control_url(server, "/");
    let cpu_before = server.cpu_time().ok_or("no CPU time for the server")?;
    let until = real_now() + Duration::from_secs(seconds);
    let started = real_now();
    let workers: Vec<_> = (0..clients)
        .map(|c| {
            let (url, request) = (url.clone(), Arc::clone(&request));
            thread::spawn(move || -> Result<Vec<u64>, String> {
                let mut client =
                    KeepAlive::connect(&url, Duration::from_secs(10)).map_err(|e| e.to_string())?;
                let mut times = Vec::new();
                let mut i = c;
                while real_now() < until {
                    let t = real_now();
                    request(&mut client, i)?;
                    times.push(t.elapsed().as_micros() as u64);
                    i += clients;
                }
                Ok(times)
            })
        })
        .collect();
    let mut all = Vec::new();
    for w in workers {
        all.extend(w.join().map_err(|_| "a load client panicked")??);
    }
    let elapsed = started.elapsed();
    let cpu = server
        .cpu_time()
        .ok_or("no CPU time for the server")?
        .saturating_sub(cpu_before);
    Ok(Load {
        per_sec: all.len() as f64 / elapsed.as_secs_f64(),
        server_cpu_us: cpu.as_secs_f64() * 1e6 / all.len().max(1) as f64,
        latencies: all,
    })
}

/// Acknowledged `POST /command set_temperature` from `clients` keep-alive clients: each answer
/// is a 200, sent only once the change is fsynced.
pub fn command_load(
    server: &ServerProcess,
    serials: &[String],
    clients: usize,
    seconds: u64,
) -> Result<Load, String> {
    let serials = serials.to_vec();
    let request: Request =
        Arc::new(move |client, i| send_command(client, &serials[i % serials.len()], i));
    keep_alive_load(server, clients, seconds, request)
}

/// `GET /status` for the thermostats in turn from `clients` keep-alive clients.
pub fn status_load(
    server: &ServerProcess,
    serials: &[String],
    clients: usize,
    seconds: u64,
) -> Result<Load, String> {
    let targets: Vec<String> = serials
        .iter()
        .map(|s| format!("/status?serial={s}"))
        .collect();
    get_load(server, targets, clients, seconds)
}

/// `GET /health` (what every request costs: reading it, handing it to a worker, answering)
/// from `clients` keep-alive clients.
pub fn health_load(server: &ServerProcess, clients: usize, seconds: u64) -> Result<Load, String> {
    get_load(server, vec!["/health".to_string()], clients, seconds)
}

/// `GET` of `targets` in turn; anything but a 200 is an error.
fn get_load(
    server: &ServerProcess,
    targets: Vec<String>,
    clients: usize,
    seconds: u64,
) -> Result<Load, String> {
    let request: Request = Arc::new(move |client, i| {
        let target = &targets[i % targets.len()];
        let r = client
            .request("GET", target, &[], &[])
            .map_err(|e| e.to_string())?;
        if r.status != 200 {
            return Err(format!("{target} answered {}", r.status));
        }
        Ok(())
    });
    keep_alive_load(server, clients, seconds, request)
}

/// Starts `exe serve` on `data_dir` and times it until `/health` answers 200.
pub fn start_and_time(exe: &Path, data_dir: &Path) -> Result<(ServerProcess, Duration), String> {
    let started = real_now();
    let server = ServerProcess::start_for_timing(exe, data_dir, &[])
        .map_err(|log| format!("the server did not start:\n{log}"))?;
    let health = control_url(&server, "/health");
    loop {
        if let Ok(r) = client::request(&health, "GET", &[], &[], Duration::from_secs(5)) {
            if r.status == 200 {
                return Ok((server, started.elapsed()));
            }
        }
        if started.elapsed() > Duration::from_secs(60) {
            return Err("/health did not answer within 60 s of start".into());
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// The server's CPU time over `seconds` of doing nothing but holding what it holds.
pub fn idle_cpu(server: &ServerProcess, seconds: u64) -> Result<Duration, String> {
    let before = server.cpu_time().ok_or("no CPU time for the server")?;
    thread::sleep(Duration::from_secs(seconds));
    let after = server.cpu_time().ok_or("no CPU time for the server")?;
    Ok(after.saturating_sub(before))
}
