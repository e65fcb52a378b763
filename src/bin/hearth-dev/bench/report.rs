//! The benchmark's figures, printed as one table beside their budgets and written as JSON.

use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct Report {
    pub idle_rss_kb: u64,
    pub held_thermostats: usize,
    pub held_rss_kb: u64,
    pub held_threads: u64,
    pub commands_timed: usize,
    pub commanders: usize,
    pub push_p50_us: u64,
    pub push_p99_us: u64,
    pub push_max_us: u64,
    /// Timed commands per second, and CPU time per timed command (µs) of the server and of
    /// the bench process (simulated thermostats and clients).
    pub pushes_per_sec: u64,
    pub push_server_cpu_us: f64,
    pub push_bench_cpu_us: f64,
    pub clients: usize,
    pub load_seconds: u64,
    pub commands_per_sec: u64,
    /// Server CPU time per request (user + system over the load / requests answered), µs.
    pub command_cpu_us: f64,
    pub status_per_sec: u64,
    pub status_p99_us: u64,
    pub status_cpu_us: f64,
    pub health_per_sec: u64,
    pub health_cpu_us: f64,
    pub startup_ms: f64,
    pub idle_held: usize,
    pub idle_seconds: u64,
    pub idle_cpu_ms: f64,
}

/// One row: the figure, its value, the budget, and whether it is met.
struct Row {
    figure: String,
    value: String,
    budget: &'static str,
    met: bool,
}

impl Report {
    pub fn table(&self) -> String {
        let ms = |us: u64| format!("{:.2} ms", us as f64 / 1000.0);
        let mb = |kb: u64| format!("{:.1} MB", kb as f64 / 1024.0);
        let cpu = |us: f64| format!("{:.3} ms", us / 1000.0);
        let rows = [
            Row {
                figure: "idle RSS, 2 s after start".into(),
                value: mb(self.idle_rss_kb),
                budget: "<= 3 MB",
                met: self.idle_rss_kb <= 3 * 1024,
            },
            Row {
                figure: format!(
                    "RSS, {} held subscribes ({} threads)",
                    self.held_thermostats, self.held_threads
                ),
                value: mb(self.held_rss_kb),
                budget: "<= 24 MB",
                met: self.held_rss_kb <= 24 * 1024,
            },
            Row {
                figure: format!(
                    "command -> push, p50 of {}, {} clients",
                    self.commands_timed, self.commanders
                ),
                value: ms(self.push_p50_us),
                budget: "<= 0.6 ms",
                met: self.push_p50_us <= 600,
            },
            Row {
                figure: "command -> push, p99".into(),
                value: ms(self.push_p99_us),
                budget: "<= 1.5 ms",
                met: self.push_p99_us <= 1500,
            },
            Row {
                figure: "command -> push, max".into(),
                value: ms(self.push_max_us),
                budget: "",
                met: true,
            },
            Row {
                figure: "timed commands/s".into(),
                value: self.pushes_per_sec.to_string(),
                budget: "",
                met: true,
            },
            Row {
                figure: "CPU per timed command: server + bench".into(),
                value: format!(
                    "{} + {}",
                    cpu(self.push_server_cpu_us),
                    cpu(self.push_bench_cpu_us)
                ),
                budget: "",
                met: true,
            },
            Row {
                figure: format!("durable commands/s, {} clients", self.clients),
                value: self.commands_per_sec.to_string(),
                budget: ">= 3000",
                met: self.commands_per_sec >= 3000,
            },
            Row {
                figure: "server CPU per durable command".into(),
                value: cpu(self.command_cpu_us),
                budget: "",
                met: true,
            },
            Row {
                figure: format!("GET /status/s, {} clients", self.clients),
                value: self.status_per_sec.to_string(),
                budget: ">= 20000",
                met: self.status_per_sec >= 20_000,
            },
            Row {
                figure: "GET /status p99".into(),
                value: ms(self.status_p99_us),
                budget: "",
                met: true,
            },
            Row {
                figure: "server CPU per GET /status".into(),
                value: cpu(self.status_cpu_us),
                budget: "<= 0.04 ms",
                met: self.status_cpu_us <= 40.0,
            },
            Row {
                figure: format!("GET /health/s, {} clients", self.clients),
                value: self.health_per_sec.to_string(),
                budget: "",
                met: true,
            },
            Row {
                figure: "server CPU per GET /health".into(),
                value: cpu(self.health_cpu_us),
                budget: "<= 0.025 ms",
                met: self.health_cpu_us <= 25.0,
            },
            Row {
                figure: format!("start-up, {} thermostats stored", self.held_thermostats),
                value: format!("{:.1} ms", self.startup_ms),
                budget: "<= 50 ms",
                met: self.startup_ms <= 50.0,
            },
            Row {
                figure: format!("idle CPU, {} s, {} held", self.idle_seconds, self.idle_held),
                value: format!("{:.1} ms", self.idle_cpu_ms),
                budget: "<= 20 ms",
                met: self.idle_cpu_ms <= 20.0,
            },
        ];
        let mut out = format!(
            "{:<44} {:>12}  {:<10} {}\n",
            "figure", "value", "budget", ""
        );
        for r in rows {
            let verdict = match (r.budget.is_empty(), r.met) {
                (true, _) => "",
                (false, true) => "met",
                (false, false) => "MISSED",
            };
            out.push_str(&format!(
                "{:<44} {:>12}  {:<10} {verdict}\n",
                r.figure, r.value, r.budget
            ));
        }
        out.trim_end().to_string()
    }
}
