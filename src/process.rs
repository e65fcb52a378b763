//! A `hearth serve` child process on free loopback ports, for `hearth-dev` (benchmarks, the
//! crash test) and the tests that need the real binary (durability across SIGKILL, startup
//! refusals). Killed when dropped.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::process::Pid;
pub use rustix::process::Signal;

pub struct ServerProcess {
    child: Child,
    /// The device port's address, read from the startup log.
    pub device: SocketAddr,
    /// The control port's address, read from the startup log.
    pub control: SocketAddr,
    log: Arc<Mutex<String>>,
}

impl ServerProcess {
    /// Starts `exe serve` on 127.0.0.1 with free ports and `data_dir`, its listener self-probes
    /// off (tests). `Err` holds the log of a server that exited (or did not listen within
    /// 20 s) instead of starting.
    pub fn start(exe: &Path, data_dir: &Path) -> Result<ServerProcess, String> {
        Self::start_with(exe, data_dir, &["--watchdog-interval-seconds", "0"])
    }

    /// Like [`ServerProcess::start`], with `extra` options instead of the probes being off
    /// (the benchmark measures the default configuration).
    pub fn start_with(
        exe: &Path,
        data_dir: &Path,
        extra: &[&str],
    ) -> Result<ServerProcess, String> {
        Self::start_with_env(exe, data_dir, extra, &[])
    }

    /// Like [`ServerProcess::start_with`], with environment variables added (a service
    /// manager's `NOTIFY_SOCKET`, say).
    pub fn start_with_env(
        exe: &Path,
        data_dir: &Path,
        extra: &[&str],
        env: &[(&str, &OsStr)],
    ) -> Result<ServerProcess, String> {
        Self::spawn(orphan_killing_command(exe), exe, data_dir, extra, env)
    }

    /// Like [`ServerProcess::start_with`], but `exe` is started directly rather than through
    /// `setpriv` (see [`orphan_killing_command`]), whose own start (about 1.7 ms) would count
    /// in a start-up time. If whoever started it dies, it lives on.
    pub fn start_for_timing(
        exe: &Path,
        data_dir: &Path,
        extra: &[&str],
    ) -> Result<ServerProcess, String> {
        Self::spawn(Command::new(exe), exe, data_dir, extra, &[])
    }

    fn spawn(
        mut command: Command,
        exe: &Path,
        data_dir: &Path,
        extra: &[&str],
        env: &[(&str, &OsStr)],
    ) -> Result<ServerProcess, String> {
        command
            .args([
                "serve",
                "--bind",
                "127.0.0.1",
                "--device-port",
                "0",
                "--control-port",
                "0",
                // Servers started side by side must not all want HomeKit's 51826.
                "--homekit-port",
                "0",
            ])
            .args(["--api-origin", "http://127.0.0.1"])
            .args(extra)
            .arg("--data-dir")
            .arg(data_dir)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", exe.display()))?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = crossbeam_channel::bounded(1);
        let sink = Arc::clone(&log);
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                // "device port 127.0.0.1:PORT, control port 127.0.0.1:PORT; ..."
                let after = |tag: &str, end: char| {
                    line.split(tag)
                        .nth(1)
                        .and_then(|r| r.split(end).next())
                        .and_then(|a| a.parse::<SocketAddr>().ok())
                };
                if line.contains("device port ") {
                    let _ =
                        tx.try_send(after("device port ", ',').zip(after("control port ", ';')));
                }
                if let Ok(mut l) = sink.lock() {
                    l.push_str(&line);
                    l.push('\n');
                }
            }
            let _ = tx.try_send(None);
        });
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(Some((device, control))) => Ok(ServerProcess {
                child,
                device,
                control,
                log,
            }),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                // The child is gone, so its stderr ends and the reader finishes the log.
                let _ = reader.join();
                Err(log.lock().map(|l| l.clone()).unwrap_or_default())
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How the process ended, if it has.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Everything the server has logged so far.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// A numeric field of `/proc/<pid>/status` in its unit (`VmRSS:` in kB, `Threads:`).
    pub fn status_field(&self, name: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
    }

    /// CPU time the process has used so far (all threads, including those that have exited;
    /// user plus system), from `/proc/<pid>/stat`. Its resolution is the kernel's clock tick
    /// (`CLK_TCK`, 10 ms on Linux).
    pub fn cpu_time(&self) -> Option<Duration> {
        cpu_time_of(&self.child.id().to_string())
    }

    /// SIGKILL, as a power cut would (for the process; the kernel keeps written data).
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends `signal` (the process is reaped when this is dropped).
    pub fn signal(&self, signal: Signal) {
        let _ = rustix::process::kill_process(Pid::from_child(&self.child), signal);
    }

    /// SIGTERM, then wait for the exit (its log stays readable).
    pub fn terminate(&mut self) -> std::io::Result<ExitStatus> {
        rustix::process::kill_process(Pid::from_child(&self.child), Signal::TERM)?;
        self.child.wait()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `exe`, started so that it gets SIGKILL if whoever started it dies (a benchmark or crash
/// test interrupted): through util-linux's `setpriv --pdeathsig` (2.33 or later), which sets
/// that and then replaces itself with `exe` (same process), so no `unsafe` `pre_exec` is
/// needed here. Without `setpriv`, `exe` is started directly, and says so once.
fn orphan_killing_command(exe: &Path) -> Command {
    const SETPRIV: &str = "/usr/bin/setpriv";
    static WARNED: std::sync::Once = std::sync::Once::new();
    if Path::new(SETPRIV).exists() {
        let mut command = Command::new(SETPRIV);
        command.args(["--pdeathsig", "KILL", "--"]).arg(exe);
        command
    } else {
        WARNED.call_once(|| {
            log::warn!("no {SETPRIV}: servers started from here outlive this process if it dies")
        });
        Command::new(exe)
    }
}

/// CPU time process `pid` (a number, or `self`) has used so far: all threads, including those
/// that have exited, user plus system, from `/proc/<pid>/stat`, in clock ticks (`CLK_TCK`,
/// 10 ms on Linux).
pub fn cpu_time_of(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces:
    // state is field 3, utime 14 and stime 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let per_second = Some(rustix::param::clock_ticks_per_second()).filter(|t| *t > 0)?;
    Some(Duration::from_micros(ticks * 1_000_000 / per_second))
}
