//! One `sh` for a whole page, run command by command.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, unbounded};

/// How long one command may run: only a failing run waits this long.
pub const COMMAND_LIMIT: Duration = Duration::from_secs(30);

/// One `sh` for a whole page: variables set in one block are there in the next.
pub struct Shell {
    child: Child,
    stdin: ChildStdin,
    output: Receiver<Vec<u8>>,
    pending: Vec<u8>,
}

const END: &str = "\u{1e}END ";

impl Shell {
    pub fn start(cwd: &Path, bin: &Path) -> Shell {
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
    pub fn run(&mut self, script: &str) -> Result<(i32, String), String> {
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
