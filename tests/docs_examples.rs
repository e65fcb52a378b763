//! Every shell example in README.md and docs/*.md runs against a server started for it, and
//! its output is compared with what the page shows. The convention (markers, expected output,
//! wildcards, what carries from one block to the next) is written down in docs/development.md,
//! "Examples in the docs are tests"; this file is its only reader.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, unbounded};
use hearth::simulator::{Options, Thermostat};
use hearth::state::{EntryKey, Op};

use common::docs::{Block, blocks, pages};
use common::{SERIAL, TempDir, TestServer, wait_until};

/// How long one command may run: only a failing run waits this long.
const COMMAND_LIMIT: Duration = Duration::from_secs(30);
/// The documented address the test server stands for in outputs (the docs' LAN address).
const DOC_HOST: &str = "192.168.1.10";

/// The shell examples: fenced blocks whose info string is `sh`.
fn is_shell(block: &Block) -> bool {
    block.info.split_whitespace().next() == Some("sh")
}

/// What a block's `<!-- example: ... -->` markers ask for.
#[derive(Debug, Default)]
struct Needs {
    illustrative: Option<String>,
    fresh: bool,
    pairing: bool,
    thermostat: bool,
    entry_code: Option<String>,
    replace: Vec<(String, String)>,
}

fn needs(block: &Block) -> Result<Needs, String> {
    let mut needs = Needs::default();
    for marker in &block.markers {
        if let Some(reason) = marker.strip_prefix("illustrative") {
            let reason = reason.trim_start_matches(':').trim();
            if reason.is_empty() {
                return Err("`illustrative` needs a reason: `illustrative: why`".into());
            }
            needs.illustrative = Some(reason.to_string());
        } else if let Some(rest) = marker.strip_prefix("replace ") {
            let (from, to) = rest
                .split_once(" by ")
                .ok_or_else(|| format!("`{marker}`: expected `replace TEXT by SHELL`"))?;
            needs
                .replace
                .push((from.trim().to_string(), to.trim().to_string()));
        } else {
            for word in marker.split_whitespace() {
                match word.split_once('=') {
                    None if word == "fresh" => needs.fresh = true,
                    None if word == "pairing" => needs.pairing = true,
                    None if word == "thermostat" => needs.thermostat = true,
                    Some(("entry-code", code)) => needs.entry_code = Some(code.to_string()),
                    _ => return Err(format!("unknown example marker `{word}`")),
                }
            }
        }
    }
    Ok(needs)
}

/// One command of a block, with the output the page shows for it.
#[derive(Debug)]
struct Cmd {
    line: usize,
    /// The command (continuation lines included), without its trailing comment.
    text: String,
    /// The page's output lines (a wrapped line joined), with `...` wildcards. `None`: the
    /// page shows none, so the output is not compared.
    expected: Option<Vec<String>>,
    /// Ends with `&`: runs in the background (an event stream).
    background: bool,
}

/// Where a line's trailing shell comment starts: a `#` outside quotes at the start of a word.
fn comment_start(line: &str) -> Option<usize> {
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if !single => escaped = true,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && previous.is_whitespace() => return Some(i),
            _ => {}
        }
        previous = c;
    }
    None
}

/// The commands of a block. A command is a line that is not a comment, joined with the lines
/// it continues onto (`\`). Comment lines right after it (no blank line between) are its
/// output: `# ` and the output line; a line starting with more than one space after the `#`
/// continues the output line before it (a long line wrapped for the page). A trailing comment
/// starting with `{` or `[` is its output (one line); any other trailing comment, and comment
/// lines after a blank line or at the start of a block, are remarks.
fn commands(block: &Block) -> Vec<Cmd> {
    let mut out: Vec<Cmd> = Vec::new();
    let mut collecting = false;
    let mut lines = block.lines.iter();
    while let Some((n, line)) = lines.next() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            collecting = false;
        } else if let Some(comment) = trimmed.strip_prefix('#') {
            if !collecting {
                continue;
            }
            let cmd = out.last_mut().expect("collecting after a command");
            let expected = cmd.expected.get_or_insert_with(Vec::new);
            let text = comment.strip_prefix(' ').unwrap_or(comment);
            match expected.last_mut() {
                Some(last) if text.starts_with(' ') => last.push_str(text.trim_start()),
                _ => expected.push(text.to_string()),
            }
        } else {
            let mut text = String::new();
            let mut last = line.as_str();
            while last.trim_end().ends_with('\\') {
                text.push_str(last);
                text.push('\n');
                match lines.next() {
                    Some((_, next)) => last = next,
                    None => break,
                }
            }
            let (command, remark) = match comment_start(last) {
                Some(at) => (&last[..at], Some(last[at + 1..].trim())),
                None => (last, None),
            };
            text.push_str(command.trim_end());
            let expected = remark
                .filter(|r| r.starts_with('{') || r.starts_with('['))
                .map(|r| vec![r.to_string()]);
            let background = text.ends_with('&') && !text.ends_with("&&");
            if background {
                text.pop();
            }
            out.push(Cmd {
                line: *n,
                text: text.trim_end().to_string(),
                expected,
                background,
            });
            collecting = true;
        }
    }
    out
}

/// One line against a pattern whose `...` matches any run of characters.
fn line_matches(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split("...").collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return pattern == text;
    };
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// Lines against patterns: a pattern line `...` matches any number of lines (none too).
fn lines_match(patterns: &[String], lines: &[&str]) -> bool {
    match patterns.split_first() {
        None => lines.is_empty(),
        Some((p, rest)) if p == "..." => (0..=lines.len()).any(|k| lines_match(rest, &lines[k..])),
        Some((p, rest)) => {
            !lines.is_empty() && line_matches(p, lines[0]) && lines_match(rest, &lines[1..])
        }
    }
}

/// Whether an answer is a refusal (`{"error":...}`, `"success":false`): a command whose page
/// shows no output must not get one, since curl itself succeeds whatever the status.
fn refusal(output: &str) -> bool {
    output.trim_start().starts_with("{\"error\"") || output.contains("\"success\":false")
}

/// One `sh` for a whole page: variables set in one block are there in the next.
struct Shell {
    child: Child,
    stdin: ChildStdin,
    output: Receiver<Vec<u8>>,
    pending: Vec<u8>,
}

const END: &str = "\u{1e}END ";

impl Shell {
    fn start(cwd: &Path, bin: &Path) -> Shell {
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut child = Command::new("sh")
            .current_dir(cwd)
            .env_clear()
            .env("PATH", path)
            .env("HOME", cwd)
            .env("LC_ALL", "C.UTF-8")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("sh starts");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (tx, output) = unbounded();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        let mut shell = Shell {
            child,
            stdin,
            output,
            pending: Vec::new(),
        };
        shell.run("exec 2>&1").expect("the shell answers");
        shell
    }

    /// Runs `script` (its standard input is /dev/null) and gives its exit status and output.
    fn run(&mut self, script: &str) -> Result<(i32, String), String> {
        let framed = format!("{{ {script}\n}} </dev/null\nprintf '\\036END %s\\036\\n' \"$?\"\n");
        self.stdin
            .write_all(framed.as_bytes())
            .map_err(|e| format!("the shell is gone: {e}"))?;
        let deadline = Instant::now() + COMMAND_LIMIT;
        loop {
            let text = String::from_utf8_lossy(&self.pending).into_owned();
            if let Some(at) = text.find(END) {
                if let Some(len) = text[at + END.len()..].find("\u{1e}\n") {
                    let status = text[at + END.len()..at + END.len() + len]
                        .parse()
                        .unwrap_or(-1);
                    let consumed = at + END.len() + len + 2;
                    self.pending = text.as_bytes()[consumed..].to_vec();
                    return Ok((status, text[..at].to_string()));
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(bytes) => self.pending.extend(bytes),
                Err(_) => {
                    return Err(format!(
                        "did not finish within {COMMAND_LIMIT:?}; output so far:\n{text}"
                    ));
                }
            }
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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
fn run_page(page: &str) {
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

macro_rules! pages {
    ($($test:ident => $page:literal,)*) => {
        $(
            #[test]
            fn $test() {
                run_page($page);
            }
        )*

        /// Every page with a shell example has a test above.
        #[test]
        fn every_page_with_examples_is_run() {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            let listed = [$($page),*];
            for page in pages(root) {
                let text = std::fs::read_to_string(&page).unwrap();
                let name = page.strip_prefix(root).unwrap().display().to_string();
                if blocks(&text).iter().any(is_shell) {
                    assert!(listed.contains(&name.as_str()), "{name} has shell examples but no test in tests/docs_examples.rs");
                }
            }
        }
    };
}

pages! {
    readme => "README.md",
    configuration => "docs/configuration.md",
    control_api => "docs/control-api.md",
    dashboard => "docs/dashboard.md",
    development => "docs/development.md",
    device_protocol => "docs/device-protocol.md",
    hosted_api => "docs/hosted-api.md",
    mqtt_home_assistant => "docs/mqtt-home-assistant.md",
    onboarding => "docs/onboarding.md",
    performance => "docs/performance.md",
    running => "docs/running.md",
}

#[test]
fn the_parser_reads_the_convention() {
    let page = "<!-- example: thermostat -->\n```sh\nS=X\ncurl a   # a remark\ncurl b # {\"ok\":true}\ncurl c \\\n  -d 'x # y'\n# {\"a\":1,\n#   \"b\":2}\n# ...\n\n# a remark after a blank line\ncurl -sN d &\n```\n";
    let block = &blocks(page)[0];
    assert!(needs(block).unwrap().thermostat);
    let cmds = commands(block);
    let shown: Vec<(&str, Option<Vec<String>>, bool)> = cmds
        .iter()
        .map(|c| (c.text.as_str(), c.expected.clone(), c.background))
        .collect();
    assert_eq!(
        shown,
        [
            ("S=X", None, false),
            ("curl a", None, false),
            ("curl b", Some(vec!["{\"ok\":true}".to_string()]), false),
            (
                "curl c \\\n  -d 'x # y'",
                Some(vec!["{\"a\":1,\"b\":2}".to_string(), "...".to_string()]),
                false
            ),
            ("curl -sN d", None, true),
        ]
    );
    assert!(line_matches(
        "{\"id\":\"...\",\"n\":1}",
        "{\"id\":\"6c1f\",\"n\":1}"
    ));
    assert!(!line_matches(
        "{\"id\":\"...\",\"n\":1}",
        "{\"id\":\"6c1f\",\"n\":2}"
    ));
    assert!(line_matches("a...b...c", "abc"));
    assert!(!line_matches("a...b", "a"));
    let pats: Vec<String> = ["x", "...", "z"].map(String::from).to_vec();
    assert!(lines_match(&pats, &["x", "y", "y", "z"]));
    assert!(lines_match(&pats, &["x", "z"]));
    assert!(!lines_match(&pats, &["x", "y"]));
}
