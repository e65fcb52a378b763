//! Running a page: its server, simulated thermostat and shell, block by block.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hearth::Server;
use hearth::demo::Demo;
use hearth::simulator::settings_api::{Settings, SettingsApi};
use hearth::simulator::{Options, Thermostat};
use hearth::state::{EntryKey, Op};

use super::is_shell;
use super::markers::{Needs, needs};
use super::mqtt::LocalBroker;
use super::script::{Cmd, commands, lines_match, refusal};
use super::shell::{COMMAND_LIMIT, Shell};
use crate::common::docs::{Block, blocks};
use crate::common::nle::make_database;
use crate::common::tls::{KeyKind, make_certificates};
use crate::common::{SERIAL, TempDir, TestServer, poll_until, wait_until};

/// The `demo` marker's thermostat the page's commands name: `hearth demo`'s first (Hallway).
const DEMO_SERIAL: &str = "02AA01AC5100DE01";

/// The documented address the test server stands for in outputs (the docs' LAN address).
const DOC_HOST: &str = "192.168.1.10";

/// The `lan` marker's stand-in for the docs' LAN: `192.168.` in a command becomes `127.168.`
/// (loopback on Linux, and as long, so the page's columns stay), and back in the output.
const DOC_LAN: &str = "192.168.";
const TEST_LAN: &str = "127.168.";
/// Where the `lan` marker's server listens (the docs' 192.168.1.10), and its fake thermostat.
const LAN_SERVER: Ipv4Addr = Ipv4Addr::new(127, 168, 1, 10);
const LAN_THERMOSTAT: Ipv4Addr = Ipv4Addr::new(127, 168, 1, 50);
/// A thermostat's `cloudregisterurl` as No Longer Evil's installer leaves it.
const FACTORY_URL: &str = "https://backdoor.nolongerevil.com/entry";

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

/// The `demo` marker's demo, stopped when dropped (a demo dropped running would leave its
/// server and thermostats running in the test process), and its data directory.
struct RunningDemo {
    demo: Option<Demo>,
    _dir: TempDir,
}

impl Drop for RunningDemo {
    fn drop(&mut self) {
        if let Some(demo) = self.demo.take() {
            demo.stop();
        }
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
    /// The `demo` marker's `hearth demo` (in place of `server`), and its data directory.
    demo: Option<RunningDemo>,
    /// The `mqtt` marker's broker, and the `tls` marker's certificates.
    broker: Option<LocalBroker>,
    certs: Option<TempDir>,
    /// The `lan` marker's fake thermostat (its settings API).
    lan: Option<SettingsApi>,
    /// The shell's directory (the `nle-database` marker moves it), and how many times it did.
    work: PathBuf,
    imports: usize,
    failures: Vec<String>,
    compared: usize,
    run_only: usize,
    /// `hearth serve` commands, for which the test's server stands.
    served: usize,
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
            demo: None,
            broker: None,
            certs: None,
            lan: None,
            work: PathBuf::new(),
            imports: 0,
            failures: Vec::new(),
            compared: 0,
            run_only: 0,
            served: 0,
            illustrative: Vec::new(),
            background: 0,
            stuck: false,
        }
    }

    fn server(&self) -> &TestServer {
        self.server.as_ref().expect("a server")
    }

    /// The server the commands talk to: the demo's, or the test's.
    fn hearth(&self) -> Option<&Server> {
        match &self.demo {
            Some(running) => running.demo.as_ref().map(Demo::server),
            None => self.server.as_ref().map(TestServer::server),
        }
    }

    /// The thermostat the page's commands name: the demo's first, or the simulated one.
    fn serial(&self) -> &'static str {
        match &self.demo {
            Some(_) => DEMO_SERIAL,
            None => SERIAL,
        }
    }

    /// The `demo` marker: `hearth demo` as an owner runs it (its three thermostats, a year of
    /// energy history), on free ports, in place of the test's server.
    fn prepare_demo(&mut self) {
        if self.demo.is_some() {
            return;
        }
        self.sim = None;
        self.server = None;
        self.lan = None;
        self.broker = None;
        self.certs = None;
        let dir = TempDir::new("docs-demo");
        crate::common::share_process();
        let demo = Demo::start(hearth::Config::local(dir.path())).expect("the demo starts");
        if self.shell.is_none() {
            let work = self.dir.path().join("work");
            std::fs::create_dir_all(&work).unwrap();
            self.shell = Some(Shell::start(&work, &self.bin));
            self.work = work;
        }
        let data = dir.path().display().to_string();
        self.demo = Some(RunningDemo {
            demo: Some(demo),
            _dir: dir,
        });
        self.setup(&format!(
            "export DATA_DIR='{data}'; unset API_ORIGIN THERMOSTAT_API_PORT"
        ));
    }

    fn shell(&mut self) -> &mut Shell {
        self.shell.as_mut().expect("a shell")
    }

    /// Runs a line of the test's own in the page's shell (a setting, a `cd`).
    fn setup(&mut self, line: &str) {
        let (status, out) = self.shell().run(line).unwrap();
        assert_eq!(status, 0, "{line}: {out}");
    }

    /// The `nle-database` marker: no server runs, and the shell is in a new directory holding
    /// the test's database of the Python server (`database.sqlite`) and `scripts/nle-export.py`,
    /// with no `DATA_DIR`, so an import goes to `./data`.
    fn prepare_nle_database(&mut self) {
        self.sim = None;
        self.server = None;
        self.lan = None;
        self.broker = None;
        self.certs = None;
        self.imports += 1;
        let work = self.dir.path().join(format!("nle-{}", self.imports));
        std::fs::create_dir_all(work.join("scripts")).unwrap();
        make_database(&work);
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        std::fs::copy(
            root.join("scripts/nle-export.py"),
            work.join("scripts/nle-export.py"),
        )
        .unwrap();
        if self.shell.is_none() {
            self.shell = Some(Shell::start(&work, &self.bin));
        }
        self.setup(&format!(
            "cd '{}' && unset DATA_DIR API_ORIGIN THERMOSTAT_API_PORT",
            work.display()
        ));
        self.work = work;
    }

    /// `hearth serve` in an `nle-database` block: the page's server, on the `./data` just
    /// imported.
    fn serve_imported(&mut self) {
        let data = self.work.join("data");
        let mut config = hearth::Config::local(&data);
        config.api_origin = Some(hearth::config::ApiOrigin::parse("http://127.0.0.1").unwrap());
        self.server = Some(TestServer {
            server: Some(crate::common::start_server(config)),
            dir: TempDir::new("unused"),
        });
        self.setup(&format!("export DATA_DIR='{}'", data.display()));
    }

    /// Starts what `needs` asks for: a new server for the page's first block and for a
    /// `fresh` one; a thermostat if asked and none runs yet.
    fn prepare(&mut self, needs: &Needs) {
        if needs.nle_database {
            self.prepare_nle_database();
            return;
        }
        if needs.demo {
            self.prepare_demo();
            return;
        }
        self.demo = None;
        if self.server.is_none() || needs.fresh || needs.mqtt || needs.tls || needs.lan {
            self.sim = None;
            self.server = None;
            self.lan = needs.lan.then(|| {
                let settings = Settings {
                    serial: SERIAL.to_string(),
                    api_key: "0123456789AB".to_string(),
                    cloudregisterurl: Some(FACTORY_URL.to_string()),
                    // In its first 30 minutes after power-on: it takes a URL without a key.
                    key_required: false,
                };
                crate::common::share_process();
                SettingsApi::start(SocketAddr::from((LAN_THERMOSTAT, 0)), settings)
                    .expect("the fake thermostat's settings API starts")
            });
            let lan_port = self.lan.as_ref().map(|l| l.addr().port());
            self.broker = needs.mqtt.then(LocalBroker::start);
            self.certs = needs.tls.then(|| {
                let certs = TempDir::new("docs-certs");
                make_certificates(certs.path(), KeyKind::Sec1Ec);
                certs
            });
            let pairing = needs.pairing;
            let mqtt = self.broker.as_ref().map(LocalBroker::config);
            let cert_dir = self.certs.as_ref().map(|c| c.path().to_path_buf());
            self.server = Some(TestServer::start_with(|c| {
                c.require_device_pairing = pairing;
                c.mqtt = mqtt;
                if cert_dir.is_some() {
                    // As API_ORIGIN defaults to with CERT_DIR set.
                    c.api_origin = hearth::config::ApiOrigin::parse("https://127.0.0.1").ok();
                }
                c.cert_dir = cert_dir;
                if let Some(port) = lan_port {
                    c.device_bind = LAN_SERVER.into();
                    c.control_bind = LAN_SERVER.into();
                    c.api_origin =
                        hearth::config::ApiOrigin::parse(&format!("http://{LAN_SERVER}")).ok();
                    c.thermostat_api_port = port;
                }
            }));
            if self.shell.is_none() {
                let work = self.dir.path().join("work");
                std::fs::create_dir_all(&work).unwrap();
                self.shell = Some(Shell::start(&work, &self.bin));
                self.work = work;
            }
            if let Some(certs) = &self.certs {
                // The CA the page's client trusts, where the page's command finds it.
                let ca = self.dir.path().join("work/my-ca.pem");
                std::fs::copy(certs.path().join("ca.pem"), ca).unwrap();
            }
            let data = self.server().dir.path().display().to_string();
            self.setup(&format!(
                "export DATA_DIR='{data}'; unset API_ORIGIN THERMOSTAT_API_PORT"
            ));
            if let Some(port) = lan_port {
                // What `hearth scan` and `point` would work out on the docs' LAN machine.
                let origin = format!("http://{}", self.server().device());
                self.setup(&format!(
                    "export API_ORIGIN='{origin}' THERMOSTAT_API_PORT={port}"
                ));
            }
        }
        if let Some(code) = &needs.entry_code {
            let code = hearth::accounts::links::entry_code(code).unwrap();
            self.server()
                .app()
                .state()
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
                            password: None,
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
        let (app, serial) = (self.hearth().expect("a server").app(), self.serial());
        let shared = format!("shared.{serial}");
        wait_until("the thermostat holds a subscribe", || {
            app.state()
                .read_device(serial, |d| d.buckets.contains_key(&shared))
                .unwrap_or(false)
                && app.hub().subscriptions_of(serial) >= 1
        });
    }

    /// The command as run: documented addresses become the test server's, and the block's
    /// `replace` markers are applied.
    fn rewrite(&self, text: &str, needs: &Needs) -> String {
        let mut text = text.to_string();
        if let Some(server) = self.hearth() {
            text = text
                .replace("localhost:8000", &server.device_addr().to_string())
                .replace("localhost:8082", &server.control_addr().to_string());
        }
        if self.lan.is_some() {
            text = text.replace(DOC_LAN, TEST_LAN);
        }
        if let Some(broker) = &self.broker {
            text = broker.rewrite(&text);
        }
        if let Some(certs) = &self.certs {
            text = text
                .replace("hearth.lan:8082", &self.server().control().to_string())
                .replace("/etc/hearth/certs", &certs.path().display().to_string());
        }
        for (from, to) in &needs.replace {
            text = text.replace(from, to);
        }
        text
    }

    /// The output as the page shows it: the test server's addresses written as the docs'
    /// server at 192.168.1.10 with ports 8000 and 8082.
    fn normalise(&self, output: &str) -> String {
        let output = match &self.broker {
            Some(broker) => broker.normalise(output),
            None => output.to_string(),
        };
        let Some(server) = self.hearth() else {
            return output;
        };
        let (device, control) = (server.device_addr(), server.control_addr());
        let output = output
            .replace(&device.to_string(), &format!("{DOC_HOST}:8000"))
            .replace(&control.to_string(), &format!("{DOC_HOST}:8082"))
            .replace(&format!("\"port\":{}", device.port()), "\"port\":8000")
            .replace(
                "\"http://127.0.0.1\"",
                &format!("\"http://{DOC_HOST}:8000\""),
            )
            .replace("127.0.0.1", DOC_HOST);
        if self.lan.is_some() {
            // The server's API_ORIGIN has no port, as the test server's (it is its port).
            output.replace(TEST_LAN, DOC_LAN).replace(
                &format!("\"http://{DOC_HOST}\""),
                &format!("\"http://{DOC_HOST}:8000\""),
            )
        } else {
            output
        }
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
            if is_serve(&cmd.text) {
                // The server the test started for this block (with what its markers ask
                // for) stands for it; after an import, a server on the data imported.
                if needs.nle_database {
                    self.serve_imported();
                }
                self.served += 1;
                continue;
            }
            if needs.thermostat || needs.demo {
                self.wait_for_thermostat();
                if let Some(broker) = &self.broker {
                    broker.wait_for_thermostat();
                }
            }
            let published = self.broker.as_ref().and_then(|b| b.before(&cmd.text));
            let text = self.rewrite(&cmd.text, &needs);
            if cmd.background {
                let serial = self.serial();
                let held = self
                    .hearth()
                    .expect("a server")
                    .app()
                    .hub()
                    .subscriptions_of(serial);
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
                let hub = self.hearth().expect("a server").app().hub();
                let shown = || {
                    hub.subscriptions_of(serial) > held
                        || std::fs::read_to_string(&file)
                            .unwrap_or_default()
                            .contains('\n')
                };
                // A background command that never shows anything fails its comparison below.
                poll_until(COMMAND_LIMIT, shown);
                background.push((cmd, file, pid));
                continue;
            }
            match self.shell().run(&text) {
                Ok((status, output)) => {
                    self.compare(&cmd, status, &output);
                    if let (0, Some(broker), Some(published)) = (status, &self.broker, published) {
                        broker.after(published);
                    }
                }
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
            poll_until(COMMAND_LIMIT, || complete(&read()));
            let _ = self.shell().run(&format!("kill {pid}"));
            let text = read();
            let whole = text[..text.rfind('\n').map_or(0, |i| i + 1)].to_string();
            self.compare(&cmd, 0, &whole);
        }
    }
}

/// Whether a command starts a server (`hearth serve`, maybe after settings such as
/// `MQTT_HOST=...`): it would run until stopped, on fixed ports, so the test's own server
/// stands for it.
fn is_serve(command: &str) -> bool {
    let words: Vec<&str> = command
        .split_whitespace()
        .skip_while(|w| w.contains('='))
        .collect();
    words == ["hearth", "serve"]
}

/// Runs every shell example of `page` (relative to the crate), failing with every mismatch.
pub fn run_page(page: &str) {
    if !curl_present() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(page)).unwrap();
    let mqtt = blocks(&text)
        .iter()
        .any(|b| needs(b).is_ok_and(|n| n.mqtt && n.illustrative.is_none()));
    if mqtt && !mqtt_clients_present() {
        return;
    }
    let mut run = PageRun::new(page);
    for block in blocks(&text).iter().filter(|b| is_shell(b)) {
        if !run.stuck {
            run.run_block(block);
        }
    }
    eprintln!(
        "{page}: {} commands compared with the page, {} run without shown output, \
         {} `hearth serve` stood for by the test's server, {} illustrative blocks{}{}",
        run.compared,
        run.run_only,
        run.served,
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
    crate::common::tools::present(
        "curl",
        "HEARTH_REQUIRE_CURL",
        "apt-get install curl; .ci/run does",
        "the docs' examples cannot run",
    )
}

/// Whether mosquitto_sub and mosquitto_pub are installed (package `mosquitto-clients`), for
/// the `mqtt` examples. Without them those pages are skipped with a message, unless
/// `HEARTH_REQUIRE_MQTT_CLIENTS=1` (CI), which makes that a failure.
fn mqtt_clients_present() -> bool {
    let ok = ["mosquitto_sub", "mosquitto_pub"].iter().all(|tool| {
        Command::new(tool)
            .arg("--help")
            .output()
            .is_ok_and(|o| !o.stdout.is_empty() || !o.stderr.is_empty())
    });
    if !ok {
        assert_ne!(
            std::env::var("HEARTH_REQUIRE_MQTT_CLIENTS").as_deref(),
            Ok("1"),
            "mosquitto_sub/mosquitto_pub are not installed \
             (apt-get install mosquitto-clients; .ci/run does)"
        );
        eprintln!("skipped: mosquitto-clients is not installed, so the MQTT examples cannot run");
    }
    ok
}
