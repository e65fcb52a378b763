//! The benchmark's figures, printed as one table beside their budgets and written as JSON.

use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct Report {
    pub idle_rss_kb: u64,
    pub held_thermostats: usize,
    pub held_rss_kb: u64,
    pub held_threads: u64,
    pub commands_timed: usize,
    pub push_p50_us: u64,
    pub push_p99_us: u64,
    pub push_max_us: u64,
    pub clients: usize,
    pub load_seconds: u64,
    pub commands_per_sec: u64,
    pub status_per_sec: u64,
    pub status_p99_us: u64,
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
                figure: format!("command -> push, p50 of {}", self.commands_timed),
                value: ms(self.push_p50_us),
                budget: "",
                met: true,
            },
            Row {
                figure: "command -> push, p99".into(),
                value: ms(self.push_p99_us),
                budget: "<= 3 ms",
                met: self.push_p99_us <= 3000,
            },
            Row {
                figure: "command -> push, max".into(),
                value: ms(self.push_max_us),
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
