//! Running a page: its server, simulated thermostat and shell, block by block.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hearth::simulator::{Options, Thermostat};
use hearth::state::{EntryKey, Op};

use crate::common::docs::{Block, blocks};
use crate::common::{SERIAL, TempDir, TestServer, wait_until};
use crate::is_shell;
use crate::markers::{Needs, needs};
use crate::script::{Cmd, commands, lines_match, refusal};
use crate::shell::{COMMAND_LIMIT, Shell};

/// The documented address the test server stands for in outputs (the docs' LAN address).
const DOC_HOST: &str = "192.168.1.10";

/// A simulated thermostat running as a real one does (registers, uploads, holds subscribes,
/// acknowledges), on a thread of its own until stopped.
struct Sim {
    stop: Arc<AtomicBool>,
}

impl Sim {
    fn start(server: &TestServer) -> Sim {
        let stop = Arc::new(AtomicBool::new(false));
        let observer: hearth::simulator::Observer = Arc::new(|_: &str, _: &_| {});
        let mut thermostat = Thermostat::new(Options::new(&server.origin(), SERIAL), observer);
        let flag = Arc::clone(&stop);
        std::thread::spawn(move || thermostat.run(&|| !flag.load(Ordering::SeqCst), None));
        Sim { stop }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        // A thread held in a subscribe ends when the server shuts down.
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// A page being run: its server, simulated thermostat and shell, kept from block to block.
struct PageRun {
    name: String,
    dir: TempDir,
    bin: PathBuf,
    shell: Option<Shell>,
    // Field order is drop order: the thermostat stops before its server.
    sim: Option<Sim>,
    server: Option<TestServer>,
    failures: Vec<String>,
    compared: usize,
    run_only: usize,
    illustrative: Vec<String>,
    background: usize,
    /// A command did not finish: the shell is stuck, so the page's later examples are not run.
    stuck: bool,
}

impl PageRun {
    fn new(name: &str) -> PageRun {
        let dir = TempDir::new("docs-examples");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_hearth"), bin.join("hearth")).unwrap();
        PageRun {
            name: name.to_string(),
            dir,
            bin,
            shell: None,
            sim: None,
            server: None,
            failures: Vec::new(),
            compared: 0,
            run_only: 0,
            illustrative: Vec::new(),
            background: 0,
            stuck: false,
        }
    }

    fn server(&self) -> &TestServer {
        self.server.as_ref().expect("a server")
    }

    fn shell(&mut self) -> &mut Shell {
        self.shell.as_mut().expect("a shell")
    }

    /// Starts what `needs` asks for: a new server for the page's first block and for a
    /// `fresh` one; a thermostat if asked and none runs yet.
    fn prepare(&mut self, needs: &Needs) {
        if self.server.is_none() || needs.fresh {
            self.sim = None;
            self.server = None;
            let pairing = needs.pairing;
            self.server = Some(TestServer::start_with(|c| {
                c.require_device_pairing = pairing
            }));
            if self.shell.is_none() {
                let work = self.dir.path().join("work");
                std::fs::create_dir_all(&work).unwrap();
                self.shell = Some(Shell::start(&work, &self.bin));
            }
            let data = self.server().dir.path().display().to_string();
            let (status, out) = self
                .shell()
                .run(&format!("export DATA_DIR='{data}'"))
                .unwrap();
            assert_eq!(status, 0, "{out}");
        }
        if let Some(code) = &needs.entry_code {
            let code = hearth::accounts::links::entry_code(code).unwrap();
            self.server()
                .app()
                .state
                .update_accounts(|txn| {
                    let now = txn.now_ms();
                    txn.push(Op::PutEntryKey {
                        key: EntryKey {
                            code: code.clone(),
                            serial: SERIAL.to_string(),
                            created_ms: now,
                            expires_ms: now + 3_600_000,
                            claimed_by: None,
                            claimed_ms: None,
                        },
                    });
                    Ok::<_, hearth::store::StoreError>(())
                })
                .unwrap();
        }
        if needs.thermostat && self.sim.is_none() {
            self.sim = Some(Sim::start(self.server()));
        }
    }

    /// Waits until the simulated thermostat has uploaded its state and holds a subscribe, as a
    /// real one almost always does, so that what a command pushes reaches it. (Its first
    /// subscribe, before the upload, may be held for a moment too.)
    fn wait_for_thermostat(&self) {
        let server = self.server();
        let shared = format!("shared.{SERIAL}");
        wait_until("the simulated thermostat holds a subscribe", || {
            server.bucket(SERIAL, &shared).is_some()
                && server.app().hub().subscriptions_of(SERIAL) >= 1
        });
    }

    /// The command as run: documented addresses become the test server's, and the block's
    /// `replace` markers are applied.
    fn rewrite(&self, text: &str, needs: &Needs) -> String {
        let device = self.server().device();
        let control = self.server().control();
        let mut text = text
            .replace("localhost:8000", &device.to_string())
            .replace("localhost:8082", &control.to_string());
        for (from, to) in &needs.replace {
            text = text.replace(from, to);
        }
        text
    }

    /// The output as the page shows it: the test server's addresses written as the docs'
    /// server at 192.168.1.10 with ports 8000 and 8082.
    fn normalise(&self, output: &str) -> String {
        let device = self.server().device();
        let control = self.server().control();
        output
            .replace(&device.to_string(), &format!("{DOC_HOST}:8000"))
            .replace(&control.to_string(), &format!("{DOC_HOST}:8082"))
            .replace(&format!("\"port\":{}", device.port()), "\"port\":8000")
            .replace(
                "\"http://127.0.0.1\"",
                &format!("\"http://{DOC_HOST}:8000\""),
            )
            .replace("127.0.0.1", DOC_HOST)
    }

    fn fail(&mut self, cmd: &Cmd, what: &str) {
        self.failures.push(format!(
            "{}:{}: {}\n  command: {}\n{what}",
            self.name,
            cmd.line,
            "the example does not do what the page shows",
            cmd.text.replace('\n', "\n           ")
        ));
    }

    fn compare(&mut self, cmd: &Cmd, status: i32, output: &str) {
        let output = self.normalise(output);
        if std::env::var_os("HEARTH_DOCS_SHOW").is_some() {
            eprintln!("{}:{}: {}\n{output}\n", self.name, cmd.line, cmd.text);
        }
        let lines: Vec<&str> = output.lines().collect();
        match &cmd.expected {
            Some(expected) if !lines_match(expected, &lines) => {
                let what = format!(
                    "  expected (the page):\n    {}\n  actual (exit status {status}):\n    {}",
                    expected.join("\n    "),
                    lines.join("\n    ")
                );
                self.fail(cmd, &what);
            }
            Some(_) if status != 0 => self.fail(
                cmd,
                &format!("  exit status {status}; output:\n    {output}"),
            ),
            Some(_) => self.compared += 1,
            None if status != 0 || refusal(&output) => self.fail(
                cmd,
                &format!("  exit status {status}; output:\n    {output}"),
            ),
            None => self.run_only += 1,
        }
    }

    fn run_block(&mut self, block: &Block) {
        let needs = match needs(block) {
            Ok(n) => n,
            Err(e) => {
                self.failures
                    .push(format!("{}:{}: {e}", self.name, block.line));
                return;
            }
        };
        if let Some(reason) = &needs.illustrative {
            self.illustrative
                .push(format!("{}:{}: {reason}", self.name, block.line));
            return;
        }
        self.prepare(&needs);
        let mut background: Vec<(Cmd, PathBuf, String)> = Vec::new();
        for cmd in commands(block) {
            if needs.thermostat {
                self.wait_for_thermostat();
            }
            let text = self.rewrite(&cmd.text, &needs);
            if cmd.background {
                let held = self.server().app().hub().subscriptions_of(SERIAL);
                self.background += 1;
                let file = self
                    .dir
                    .path()
                    .join(format!("background-{}", self.background));
                let script = format!("{text} >'{}' 2>&1 </dev/null &\necho $!", file.display());
                let pid = match self.shell().run(&script) {
                    Ok((0, pid)) => pid.trim().to_string(),
                    Ok((status, out)) => {
                        self.fail(&cmd, &format!("  exit status {status}; output:\n    {out}"));
                        continue;
                    }
                    Err(e) => {
                        self.fail(&cmd, &format!("  {e}"));
                        self.stuck = true;
                        return;
                    }
                };
                // Its first line (an event stream's `: connected`), or for a subscribe the
                // server holding it, says it is listening, so nothing the next commands cause
                // is missed.
                let hub = self.server().app().hub();
                let shown = || {
                    hub.subscriptions_of(SERIAL) > held
                        || std::fs::read_to_string(&file)
                            .unwrap_or_default()
                            .contains('\n')
                };
                let deadline = Instant::now() + COMMAND_LIMIT;
                while !shown() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
                background.push((cmd, file, pid));
                continue;
            }
            match self.shell().run(&text) {
                Ok((status, output)) => self.compare(&cmd, status, &output),
                Err(e) => {
                    self.fail(
                        &cmd,
                        &format!("  {e}\n  (the page's later examples were not run)"),
                    );
                    self.stuck = true;
                    return;
                }
            }
        }
        // A background command's output is compared once it shows all the page shows (or
        // its time is up), then it is stopped.
        for (cmd, file, pid) in background {
            let read = || std::fs::read_to_string(&file).unwrap_or_default();
            let complete = |text: &str| {
                let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
                let normal = self.normalise(whole);
                let lines: Vec<&str> = normal.lines().collect();
                cmd.expected.as_ref().is_none_or(|e| lines_match(e, &lines))
            };
            let deadline = Instant::now() + COMMAND_LIMIT;
            while !complete(&read()) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = self.shell().run(&format!("kill {pid}"));
            let text = read();
            let whole = text[..text.rfind('\n').map_or(0, |i| i + 1)].to_string();
            self.compare(&cmd, 0, &whole);
        }
    }
}

/// Runs every shell example of `page` (relative to the crate), failing with every mismatch.
pub fn run_page(page: &str) {
    if !curl_present() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(page)).unwrap();
    let mut run = PageRun::new(page);
    for block in blocks(&text).iter().filter(|b| is_shell(b)) {
        if !run.stuck {
            run.run_block(block);
        }
    }
    eprintln!(
        "{page}: {} commands compared with the page, {} run without shown output, \
         {} illustrative blocks{}{}",
        run.compared,
        run.run_only,
        run.illustrative.len(),
        if run.illustrative.is_empty() {
            ""
        } else {
            ":\n  "
        },
        run.illustrative.join("\n  ")
    );
    let failures = std::mem::take(&mut run.failures);
    drop(run);
    assert!(
        failures.is_empty(),
        "{} example(s) of {page} failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Whether curl is installed. Without it the examples are skipped with a message, unless
/// `HEARTH_REQUIRE_CURL=1` (CI), which makes that a failure.
fn curl_present() -> bool {
    let ok = Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert_ne!(
            std::env::var("HEARTH_REQUIRE_CURL").as_deref(),
            Ok("1"),
            "curl is not installed (apt-get install curl; .ci/run does)"
        );
        eprintln!("skipped: curl is not installed, so the docs' examples cannot run");
    }
    ok
}
