//! The timed parts of the benchmark: commands to held thermostats, command and `/status`
//! throughput from keep-alive clients, start-up, and CPU time while idle.

use std::path::Path;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;

use super::fleet::HeldFleet;
use crate::http::client::{self, KeepAlive, Url};
use crate::process::ServerProcess;

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
    let body = json!({"serial": serial, "command": "set_temperature", "value": 16.0 + (i % 20) as f64 * 0.5});
    let r = client
        .request(
            "POST",
            "/command",
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        )
        .map_err(|e| e.to_string())?;
    if r.status != 200 {
        return Err(format!("/command answered {}: {}", r.status, r.text()));
    }
    Ok(())
}

/// `count` commands, one at a time, spread round the fleet: each timed from sending
/// `POST /command` (keep-alive connection; the journal fsync included) to the thermostat having
/// read the pushed `shared` object off its held subscribe. Latencies in µs.
pub fn timed_commands(
    server: &ServerProcess,
    fleet: &HeldFleet,
    count: usize,
) -> Result<Vec<u64>, String> {
    let mut client = KeepAlive::connect(&control_url(server, "/"), Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let serial = &fleet.serials[i % fleet.serials.len()];
        let wanted = format!("shared.{serial}");
        while fleet.pushes.try_recv().is_ok() {}
        let started = Instant::now();
        send_command(&mut client, serial, i)?;
        let deadline = started + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match fleet.pushes.recv_timeout(left) {
                Ok((key, at)) if key == wanted => {
                    out.push(at.duration_since(started).as_micros() as u64);
                    break;
                }
                Ok(_) => {}
                Err(_) => return Err(format!("{serial} did not receive its push within 10 s")),
            }
        }
    }
    Ok(out)
}

/// One request of a load client: its connection and the request's running index.
type Request = Arc<dyn Fn(&mut KeepAlive, usize) -> Result<(), String> + Send + Sync>;

/// Runs `clients` threads for `seconds`, each with its own keep-alive connection, calling
/// `request(client, index)` until time is up. Returns requests per second and the latencies.
fn keep_alive_load(
    server: &ServerProcess,
    clients: usize,
    seconds: u64,
    request: Request,
) -> Result<(f64, Vec<u64>), String> {
    let url = control_url(server, "/");
    let until = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let workers: Vec<_> = (0..clients)
        .map(|c| {
            let (url, request) = (url.clone(), Arc::clone(&request));
            thread::spawn(move || -> Result<Vec<u64>, String> {
                let mut client =
                    KeepAlive::connect(&url, Duration::from_secs(10)).map_err(|e| e.to_string())?;
                let mut times = Vec::new();
                let mut i = c;
                while Instant::now() < until {
                    let t = Instant::now();
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
    Ok((all.len() as f64 / started.elapsed().as_secs_f64(), all))
}

/// Acknowledged `POST /command set_temperature` from `clients` keep-alive clients: each answer
/// is a 200, sent only once the change is fsynced.
pub fn command_load(
    server: &ServerProcess,
    serials: &[String],
    clients: usize,
    seconds: u64,
) -> Result<(f64, Vec<u64>), String> {
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
) -> Result<(f64, Vec<u64>), String> {
    let targets: Vec<String> = serials
        .iter()
        .map(|s| format!("/status?serial={s}"))
        .collect();
    let request: Request = Arc::new(move |client, i| {
        let r = client
            .request("GET", &targets[i % targets.len()], &[], &[])
            .map_err(|e| e.to_string())?;
        if r.status != 200 {
            return Err(format!("/status answered {}", r.status));
        }
        Ok(())
    });
    keep_alive_load(server, clients, seconds, request)
}

/// Starts `exe serve` on `data_dir` and times it until `/health` answers 200.
pub fn start_and_time(exe: &Path, data_dir: &Path) -> Result<(ServerProcess, Duration), String> {
    let started = Instant::now();
    let server = ServerProcess::start_with(exe, data_dir, &[])
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
