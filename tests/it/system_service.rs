//! Running as a system service: the notify protocol the systemd unit relies on (real binary,
//! real datagram socket), and `scripts/install.sh` / `scripts/uninstall.sh` against a temporary
//! root.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{TempDir, wait_until_within};

const EXE: &str = env!("CARGO_BIN_EXE_hearth");

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn recv(socket: &UnixDatagram) -> String {
    let mut buf = [0u8; 512];
    let n = socket
        .recv(&mut buf)
        .expect("a notification within the timeout");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[test]
fn serve_reports_ready_feeds_the_watchdog_and_reports_stopping() {
    let dir = TempDir::new("notify");
    let socket_path = dir.path().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut child = Command::new(EXE)
        .args(["serve", "--bind", "127.0.0.1", "--device-port", "0"])
        .args([
            "--control-port",
            "0",
            "--api-origin",
            "http://127.0.0.1:8000",
        ])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .env("NOTIFY_SOCKET", &socket_path)
        // 400 ms: hearth must feed it every 200 ms.
        .env("WATCHDOG_USEC", "400000")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    let ready = recv(&socket);
    assert!(ready.starts_with("READY=1\n"), "{ready:?}");
    assert!(
        ready.contains("STATUS=thermostats register at http://127.0.0.1:8000/entry"),
        "{ready:?}"
    );
    // Three feeds. Their 200 ms interval is real time in another process, which this does not
    // bound: each must come within the socket's read timeout.
    for _ in 0..3 {
        assert_eq!(recv(&socket), "WATCHDOG=1");
    }

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut stopping = recv(&socket);
    while stopping == "WATCHDOG=1" {
        stopping = recv(&socket);
    }
    assert_eq!(stopping, "STOPPING=1");
    assert!(child.wait().unwrap().success());
}

#[test]
fn without_a_notify_socket_serve_runs_as_before() {
    // An unset NOTIFY_SOCKET is the plain case every other test covers; a socket that does not
    // exist must not stop the server either (it logs a warning and serves).
    let dir = TempDir::new("notify-missing");
    let data = dir.path().join("data");
    let mut child = Command::new(EXE)
        .args(["serve", "--bind", "127.0.0.1", "--device-port", "0"])
        .args(["--control-port", "0", "--api-origin", "http://127.0.0.1"])
        .arg("--data-dir")
        .arg(&data)
        .env("NOTIFY_SOCKET", dir.path().join("nobody-listens.sock"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_within(Duration::from_secs(20), "the server's start", || {
        assert!(child.try_wait().unwrap().is_none(), "the server exited");
        data.join("admin.sock").exists()
    });
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("could not notify the service manager"),
        "{log}"
    );
}

fn script(name: &str, args: &[&str]) -> Output {
    Command::new("bash")
        .arg(repo().join("scripts").join(name))
        .args(args)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn install_stages_binary_unit_and_settings_and_is_idempotent() {
    let root = TempDir::new("install-root");
    let r = root.path().to_str().unwrap();
    let bin = root.path().join("usr/local/bin/hearth");
    let unit = root.path().join("etc/systemd/system/hearth.service");
    let settings = root.path().join("etc/default/hearth");

    let out = script("install.sh", &["--root", r, "--binary", EXE]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read(&bin).unwrap(), std::fs::read(EXE).unwrap());
    assert_eq!(mode(&bin), 0o755);
    assert_eq!(
        std::fs::read(&unit).unwrap(),
        std::fs::read(repo().join("systemd/hearth.service")).unwrap()
    );
    assert_eq!(mode(&unit), 0o644);
    assert_eq!(
        std::fs::read(&settings).unwrap(),
        std::fs::read(repo().join("systemd/hearth.default")).unwrap()
    );
    // The staged binary is the real thing.
    let version = Command::new(&bin).arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("hearth {}", env!("CARGO_PKG_VERSION"))
    );

    // The user edits the settings; a second install (an upgrade) keeps them and leaves no
    // temporary files behind.
    std::fs::write(&settings, "API_ORIGIN=http://192.168.1.10:8000\n").unwrap();
    let out = script("install.sh", &["--root", r, "--binary", EXE]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("kept"), "{}", text(&out));
    assert!(text(&out).contains("unchanged"), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        "API_ORIGIN=http://192.168.1.10:8000\n"
    );
    let leftovers: Vec<_> = std::fs::read_dir(bin.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["hearth"]);

    // Uninstall removes the binary and unit, keeps edited settings and the data; twice is fine.
    let data = root.path().join("var/lib/private/hearth");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("snapshot.json"), "{}").unwrap();
    for _ in 0..2 {
        let out = script("uninstall.sh", &["--root", r]);
        assert!(out.status.success(), "{}", text(&out));
        assert!(!bin.exists() && !unit.exists());
        assert!(settings.exists(), "edited settings must stay");
        assert!(data.join("snapshot.json").exists(), "data must stay");
    }

    // Untouched example settings are removed with the rest.
    let out = script("install.sh", &["--root", r, "--binary", EXE]);
    assert!(out.status.success(), "{}", text(&out));
    std::fs::remove_file(&settings).unwrap();
    let out = script("install.sh", &["--root", r, "--binary", EXE]);
    assert!(out.status.success(), "{}", text(&out));
    let out = script("uninstall.sh", &["--root", r]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!settings.exists() && !bin.exists() && !unit.exists());
}

#[test]
fn install_refuses_bad_arguments_and_changes_nothing() {
    let root = TempDir::new("install-bad");
    let r = root.path().to_str().unwrap();
    let missing = root.path().join("no-such-binary");
    let out = script(
        "install.sh",
        &["--root", r, "--binary", missing.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("no hearth binary at"), "{}", text(&out));
    let out = script("install.sh", &["--root", r, "--frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("usage:"), "{}", text(&out));
    let out = script("install.sh", &["--root", "/no/such/dir", "--binary", EXE]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
}

/// Runs a script without root and without `--root`: as this user if it is not root, else as
/// `nobody` through setpriv.
fn unprivileged(name: &str, args: &[&str]) -> Output {
    let mut command = if rustix::process::geteuid().is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "bash"]);
        c
    } else {
        Command::new("bash")
    };
    command.arg(repo().join("scripts").join(name)).args(args);
    command.output().unwrap()
}

#[test]
fn install_and_uninstall_refuse_to_run_without_root() {
    for (name, args) in [
        ("install.sh", &["--binary", EXE][..]),
        ("install.sh", &["--check"][..]),
        ("uninstall.sh", &[][..]),
    ] {
        let out = unprivileged(name, args);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out));
        assert!(
            text(&out).contains("run it as root"),
            "{name}: {}",
            text(&out)
        );
    }
}
