//! The container runtime the image test plays (`podman run` does not work on these machines):
//! the image built (or named), its OCI archive unpacked, Docker's port mapping, the process.

use std::collections::BTreeSet;
use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

/// Home Assistant's name for this machine's architecture.
pub fn this_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "aarch64",
        "arm" => "armv7",
        other => panic!("no add-on image for {other}"),
    }
}

pub fn run(what: &str, command: &mut Command) -> String {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The image archive to test: `HEARTH_ADDON_IMAGE`, else one built now from the test's own
/// binary. `None` (the test is skipped) without podman, unless `HEARTH_REQUIRE_PODMAN=1`.
pub fn image_archive(dir: &Path) -> Option<PathBuf> {
    if let Ok(path) = std::env::var("HEARTH_ADDON_IMAGE") {
        return Some(PathBuf::from(path));
    }
    let podman = Command::new("podman").arg("--version").output();
    if !podman.is_ok_and(|o| o.status.success()) {
        assert_ne!(
            std::env::var("HEARTH_REQUIRE_PODMAN").as_deref(),
            Ok("1"),
            "podman is not installed (apt-get install podman; .ci/run does)"
        );
        eprintln!("skipped: podman is not installed");
        return None;
    }
    let name = format!("localhost/hearth-test-{}", std::process::id());
    let arch = this_arch();
    let built = Command::new("bash")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("cross/addon.sh")
        .arg("--out")
        .arg(dir)
        .args(["--name", &name])
        .arg(format!("{arch}={}", env!("CARGO_BIN_EXE_hearth")))
        .output()
        .unwrap();
    // The archive is what is tested: the image leaves podman's store, whatever happened.
    let version = env!("CARGO_PKG_VERSION");
    let _ = Command::new("podman")
        .args(["rmi", "-f", &format!("{name}:{version}-{arch}")])
        .output();
    assert!(
        built.status.success(),
        "cross/addon.sh failed: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    eprintln!("{}", String::from_utf8_lossy(&built.stdout));
    Some(dir.join(format!("hearth-{version}-{arch}.oci.tar")))
}

/// An OCI image archive, unpacked: its configuration and its file system.
pub struct Image {
    pub config: Value,
    pub rootfs: PathBuf,
}

impl Image {
    pub fn unpack(archive: &Path, dir: &Path) -> Image {
        let oci = dir.join("oci");
        let rootfs = dir.join("rootfs");
        std::fs::create_dir_all(&oci).unwrap();
        std::fs::create_dir_all(&rootfs).unwrap();
        run(
            "tar",
            Command::new("tar")
                .arg("-xf")
                .arg(archive)
                .arg("-C")
                .arg(&oci),
        );
        let blob = |digest: &Value| {
            let hex = digest.as_str().unwrap().strip_prefix("sha256:").unwrap();
            oci.join("blobs/sha256").join(hex)
        };
        let json = |path: PathBuf| -> Value {
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
        };
        let index = json(oci.join("index.json"));
        let manifests = index["manifests"].as_array().unwrap();
        assert_eq!(manifests.len(), 1, "one image per archive");
        let manifest = json(blob(&manifests[0]["digest"]));
        for layer in manifest["layers"].as_array().unwrap() {
            run(
                "tar",
                Command::new("tar")
                    .arg("-xf")
                    .arg(blob(&layer["digest"]))
                    .arg("-C")
                    .arg(&rootfs),
            );
        }
        Image {
            config: json(blob(&manifest["config"]["digest"])),
            rootfs,
        }
    }

    /// The container configuration (`Entrypoint`, `Env`, ...).
    pub fn container(&self) -> &Value {
        &self.config["config"]
    }

    /// `KEY=value` pairs of the image's environment.
    pub fn env(&self) -> Vec<(String, String)> {
        self.container()["Env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let (k, v) = e.as_str().unwrap().split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect()
    }
}

pub fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

/// Docker's port mapping: connections to `from` are relayed to `to`, both ways.
pub struct PortMap {
    stop: Arc<AtomicBool>,
    from: String,
}

impl PortMap {
    /// Maps `port` on `ip` (else a free port there, when something holds that one) to `to`;
    /// gives the map and the port it listens on.
    pub fn start(ip: &str, port: u16, to: &str) -> (PortMap, u16) {
        let listener = TcpListener::bind((ip, port))
            .or_else(|_| TcpListener::bind((ip, 0)))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let (stopped, to) = (Arc::clone(&stop), to.to_string());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let (Ok(client), Ok(server)) = (client, TcpStream::connect(&to)) else {
                    continue;
                };
                relay(&client, &server);
                relay(&server, &client);
            }
        });
        let map = PortMap {
            stop,
            from: format!("{ip}:{port}"),
        };
        (map, port)
    }
}

/// Copies what `from` sends to `to` until `from` ends, then ends `to`'s sending side.
pub fn relay(from: &TcpStream, to: &TcpStream) {
    let (mut from, mut to) = (from.try_clone().unwrap(), to.try_clone().unwrap());
    std::thread::spawn(move || {
        let _ = io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Write);
    });
}

impl Drop for PortMap {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(&self.from);
    }
}

/// A free port on `ip`.
pub fn free_port(ip: &str) -> u16 {
    TcpListener::bind((ip, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The server process, stopped with SIGKILL if the test ends early.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
