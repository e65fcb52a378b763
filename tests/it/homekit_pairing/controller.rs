//! The real controller: aiohomekit in a Python interpreter, driven by
//! `tests/homekit/driver.py` (one pair-setup per run, or a session taking one JSON command a
//! line).

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use crossbeam_channel::{Receiver, unbounded};
use serde_json::Value;

/// The interpreter with aiohomekit, or `None` (and the test skips) where there is none.
pub fn python() -> Option<String> {
    let required = std::env::var("HEARTH_REQUIRE_AIOHOMEKIT").as_deref() == Ok("1");
    let python = std::env::var("HEARTH_AIOHOMEKIT_PYTHON").ok();
    let usable = python.as_ref().is_some_and(|p| {
        Command::new(p)
            .args(["-c", "import aiohomekit"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if usable {
        return python;
    }
    assert!(
        !required,
        "HEARTH_AIOHOMEKIT_PYTHON does not name a python with aiohomekit \
         (bash .ci/aiohomekit.sh makes one and prints its path)"
    );
    eprintln!(
        "skipped: no HEARTH_AIOHOMEKIT_PYTHON with aiohomekit (bash .ci/aiohomekit.sh makes one)"
    );
    None
}

fn driver() -> String {
    format!("{}/tests/homekit/driver.py", env!("CARGO_MANIFEST_DIR"))
}

/// `driver.py pair`: its one line of JSON.
pub fn pair(python: &str, addr: SocketAddr, code: &str, file: &Path) -> Value {
    let out = Command::new(python)
        .arg(driver())
        .args(["pair", "127.0.0.1", &addr.port().to_string(), code])
        .arg(file)
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// A `driver.py pair-typing`: pair-setup that stops between M2 and M3 until told to go on,
/// as a person typing the setup code would.
pub struct Typing(Controller);

impl Typing {
    /// Starts the pair-setup and returns once M2 is in (`{"m2": true, "salt": "<hex>"}`).
    pub fn start(python: &str, addr: SocketAddr, code: &str, file: &Path) -> (Typing, Value) {
        let mut command = Command::new(python);
        command
            .arg(driver())
            .args(["pair-typing", "127.0.0.1", &addr.port().to_string(), code])
            .arg(file);
        let c = Controller::spawn(command);
        let m2 = c.next_answer("M2");
        (Typing(c), m2)
    }

    /// The code is typed: M3 to M6; the driver's last line.
    pub fn finish(mut self) -> Value {
        let stdin = self.0.stdin.as_mut().unwrap();
        writeln!(stdin).unwrap();
        stdin.flush().unwrap();
        self.0.next_answer("the end of pair-setup")
    }
}

/// A `driver.py session`: one JSON command a line, one answer a line.
pub struct Controller {
    child: Child,
    stdin: Option<ChildStdin>,
    answers: Receiver<String>,
}

impl Controller {
    pub fn start(python: &str, file: &Path, port: u16) -> Controller {
        let mut command = Command::new(python);
        command
            .arg(driver())
            .arg("session")
            .arg(file)
            .arg(port.to_string());
        Controller::spawn(command)
    }

    fn spawn(mut command: Command) -> Controller {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, answers) = unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Controller {
            stdin: child.stdin.take(),
            child,
            answers,
        }
    }

    pub fn ask(&mut self, command: Value) -> Value {
        let answer = self.ask_raw(command.clone());
        assert!(answer.get("error").is_none(), "{command}: {answer}");
        answer
    }

    /// [`Controller::ask`] that may fail.
    pub fn ask_raw(&mut self, command: Value) -> Value {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{command}").unwrap();
        stdin.flush().unwrap();
        self.next_answer(&command.to_string())
    }

    /// The driver's next line, as JSON.
    fn next_answer(&self, what: &str) -> Value {
        let line = self
            .answers
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no answer to {what}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    pub fn stop(mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
