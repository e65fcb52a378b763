//! `scripts/install.sh ARCHIVE`: a release archive, by path or by URL (file:// or http://), is
//! checked against the `.sha256` beside it before anything is unpacked, then installed (here into
//! a temporary root, without root or systemd); an upgrade replaces the binary and keeps the
//! settings and the data; a bad archive is refused with a clear message and changes nothing. With
//! `--root` the script does not run the binary, so the archives hold a small stand-in (the real,
//! 90 MB debug build would make each archive take seconds); `cross/smoke.sh` installs a real
//! archive.

use super::{repo, text};
use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use common::TempDir;

const EXE: &str = env!("CARGO_BIN_EXE_hearth");
/// The binary the archives hold.
const BINARY: &[u8] = b"#!/bin/sh\necho hearth 0.1.0\n";

/// A release archive laid out as `cross/build.sh` lays it out, holding `binary`, written as
/// `dir/file_name` with `dir/file_name.sha256` beside it (as the release carries them).
fn archive(dir: &Path, file_name: &str, version: &str, binary: &[u8]) -> PathBuf {
    let top = format!("hearth-{version}-x86_64");
    let stage = dir.join(format!("stage-{file_name}"));
    let inner = stage.join(&top);
    for sub in ["scripts", "systemd", "docs"] {
        std::fs::create_dir_all(inner.join(sub)).unwrap();
    }
    std::fs::write(inner.join("hearth"), binary).unwrap();
    sha256sum(&inner, "hearth");
    for (from, to) in [
        ("scripts/install.sh", "scripts/install.sh"),
        ("scripts/uninstall.sh", "scripts/uninstall.sh"),
        ("scripts/install-lib.sh", "scripts/install-lib.sh"),
        ("systemd/hearth.service", "systemd/hearth.service"),
        ("systemd/hearth.default", "systemd/hearth.default"),
        ("README.md", "README.md"),
    ] {
        std::fs::copy(repo().join(from), inner.join(to)).unwrap();
    }
    let path = dir.join(file_name);
    let tar = Command::new("tar")
        .arg("-C")
        .arg(&stage)
        .args(["--owner=0", "--group=0", "-czf"])
        .arg(&path)
        .arg(&top)
        .output()
        .unwrap();
    assert!(tar.status.success(), "{}", text(&tar));
    sha256sum(dir, file_name);
    path
}

/// `sha256sum NAME > NAME.sha256` in `dir`.
fn sha256sum(dir: &Path, name: &str) {
    let out = Command::new("sha256sum")
        .arg(name)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    std::fs::write(dir.join(format!("{name}.sha256")), &out.stdout).unwrap();
}

fn install(root: &Path, args: &[&str]) -> Output {
    Command::new("bash")
        .arg(repo().join("scripts/install.sh"))
        .arg("--root")
        .arg(root)
        .args(args)
        .output()
        .unwrap()
}

/// Every file under `dir` with its contents.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

#[test]
fn an_archive_by_path_is_checked_installed_and_upgraded_in_place_keeping_the_data() {
    let dir = TempDir::new("install-archive");
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let exe = BINARY;
    let first = archive(dir.path(), "hearth-0.1.0-x86_64.tar.gz", "0.1.0", exe);

    let out = install(&root, &[first.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("checked    hearth-0.1.0-x86_64.tar.gz (sha256 "));
    let bin = root.join("usr/local/bin/hearth");
    let settings = root.join("etc/default/hearth");
    assert_eq!(std::fs::read(&bin).unwrap(), exe);
    assert!(root.join("etc/systemd/system/hearth.service").exists());

    // The owner's settings and data, then the next release under the lasting name.
    std::fs::write(&settings, "API_ORIGIN=http://192.168.1.10:8000\n").unwrap();
    let data = root.join("var/lib/private/hearth");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("snapshot.json"), "{\"kept\":true}").unwrap();
    let newer = b"#!/bin/sh\necho hearth 0.2.0\n";
    let second = archive(dir.path(), "hearth-x86_64.tar.gz", "0.2.0", newer);
    // By its file:// URL, as the OpenWrt installer takes it too (scripts/install-lib.sh).
    let url = format!("file://{}", second.display());
    let out = install(&root, &[&url]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("checked    hearth-x86_64.tar.gz (sha256 "),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read(&bin).unwrap(), newer);
    assert!(text(&out).contains("kept       "), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        "API_ORIGIN=http://192.168.1.10:8000\n"
    );
    assert_eq!(
        std::fs::read_to_string(data.join("snapshot.json")).unwrap(),
        "{\"kept\":true}"
    );
    let leftovers: Vec<_> = std::fs::read_dir(bin.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["hearth"]);
}

#[test]
fn a_bad_archive_is_refused_with_a_clear_message_and_changes_nothing() {
    let dir = TempDir::new("install-bad-archive");
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let exe = BINARY;
    let good = archive(dir.path(), "hearth-0.1.0-x86_64.tar.gz", "0.1.0", exe);
    let out = install(&root, &[good.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let installed = tree(&root);
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();

    // Tampered with after its checksum was made.
    let tampered = archive(dir.path(), "tampered.tar.gz", "0.2.0", b"#!/bin/sh\n");
    std::fs::write(&tampered, b"not what was released").unwrap();
    // No checksum beside it.
    archive(dir.path(), "unchecked.tar.gz", "0.2.0", b"#!/bin/sh\n");
    std::fs::remove_file(dir.path().join("unchecked.tar.gz.sha256")).unwrap();
    // A checksum file that holds none.
    archive(dir.path(), "garbled.tar.gz", "0.2.0", b"#!/bin/sh\n");
    std::fs::write(
        dir.path().join("garbled.tar.gz.sha256"),
        "<html>404</html>\n",
    )
    .unwrap();
    // The archive matches, the binary inside does not match its own hearth.sha256.
    let stage = dir.path().join("stage-inner.tar.gz/hearth-0.2.0-x86_64");
    archive(dir.path(), "inner.tar.gz", "0.2.0", b"#!/bin/sh\n");
    std::fs::write(stage.join("hearth"), b"#!/bin/sh\necho changed\n").unwrap();
    let tar = Command::new("tar")
        .arg("-C")
        .arg(stage.parent().unwrap())
        .args(["-czf", &path("inner.tar.gz"), "hearth-0.2.0-x86_64"])
        .output()
        .unwrap();
    assert!(tar.status.success(), "{}", text(&tar));
    sha256sum(dir.path(), "inner.tar.gz");

    let refusals: [(&[&str], i32, String); 7] = [
        (
            &[&path("tampered.tar.gz")],
            1,
            format!(
                "install.sh: {} does not match its checksum (expected ",
                path("tampered.tar.gz")
            ),
        ),
        (
            &[&path("unchecked.tar.gz")],
            1,
            format!(
                "install.sh: could not read its checksum, {}.sha256; nothing was installed",
                path("unchecked.tar.gz")
            ),
        ),
        (
            &[&path("garbled.tar.gz")],
            1,
            format!(
                "install.sh: {}.sha256 holds no SHA-256 checksum; nothing was installed",
                path("garbled.tar.gz")
            ),
        ),
        (
            &[&path("inner.tar.gz")],
            1,
            format!(
                "install.sh: the binary in {} does not match its hearth.sha256; nothing was installed",
                path("inner.tar.gz")
            ),
        ),
        (
            &[&path("missing.tar.gz")],
            1,
            format!(
                "install.sh: could not read {}; nothing was installed",
                path("missing.tar.gz")
            ),
        ),
        (
            &[&path("hearth-0.1.0-x86_64.tar.gz.sha256")],
            2,
            "is not a release archive (hearth-...tar.gz)".to_string(),
        ),
        (
            &[good.to_str().unwrap(), "--binary", EXE],
            2,
            "install.sh: give a release archive or --binary, not both".to_string(),
        ),
    ];
    for (args, code, message) in refusals {
        let out = install(&root, args);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(&message), "{args:?}: {}", text(&out));
        assert!(tree(&root) == installed, "{args:?} changed the root");
    }
}

/// Serves the files of `dir` over HTTP on 127.0.0.1, one request per connection, for `count`
/// connections; returns its port and the paths asked for.
fn serve(dir: &Path, count: usize) -> (u16, Arc<Mutex<Vec<String>>>) {
    common::share_process();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let (dir, seen) = (dir.to_path_buf(), asked.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(count) {
            let mut stream = stream.unwrap();
            let mut line = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            reader.read_line(&mut line).unwrap();
            let mut header = String::new();
            while reader.read_line(&mut header).unwrap() > 2 {
                header.clear();
            }
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
            seen.lock().unwrap().push(path.clone());
            let answer = match std::fs::read(dir.join(path.trim_start_matches('/'))) {
                Ok(body) => {
                    let mut a = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    a.extend(body);
                    a
                }
                Err(_) => {
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        .to_vec()
                }
            };
            stream.write_all(&answer).unwrap();
        }
    });
    (port, asked)
}

#[test]
fn an_archive_by_url_is_downloaded_with_its_checksum_beside_it() {
    let what = "install.sh cannot download";
    if !common::tools::present("curl", "HEARTH_REQUIRE_CURL", "apt-get install curl", what) {
        return;
    }
    let dir = TempDir::new("install-url");
    let files = dir.path().join("download");
    let root = dir.path().join("root");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::create_dir(&root).unwrap();
    let exe = BINARY;
    archive(&files, "hearth-x86_64.tar.gz", "0.1.0", exe);
    archive(&files, "unchecked.tar.gz", "0.1.0", exe);
    std::fs::remove_file(files.join("unchecked.tar.gz.sha256")).unwrap();
    let (port, asked) = serve(&files, 4);

    // The checksum answers 404: refused, nothing installed.
    let url = format!("http://127.0.0.1:{port}/unchecked.tar.gz");
    let out = install(&root, &[&url]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("could not read its checksum, {url}.sha256")),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0);

    let url = format!("http://127.0.0.1:{port}/hearth-x86_64.tar.gz");
    let out = install(&root, &[&url]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read(root.join("usr/local/bin/hearth")).unwrap(),
        exe
    );
    assert_eq!(
        *asked.lock().unwrap(),
        [
            "/unchecked.tar.gz",
            "/unchecked.tar.gz.sha256",
            "/hearth-x86_64.tar.gz",
            "/hearth-x86_64.tar.gz.sha256"
        ]
    );
}

/// The first 20 bytes of an ELF file of `class` (1: 32-bit, 2: 64-bit) for `machine`, little
/// endian: all `install.sh` reads of a binary, or of the userland it compares it with.
fn elf(class: u8, machine: u16) -> Vec<u8> {
    let mut head = vec![0x7f, b'E', b'L', b'F', class, 1, 1];
    head.resize(18, 0);
    head.extend(machine.to_le_bytes());
    head.extend(b"\0\0 the rest of a binary\n");
    head
}

const AARCH64: (u8, u16) = (2, 183);
const ARMV7: (u8, u16) = (1, 40);
const X86_64: (u8, u16) = (2, 62);
const RISCV64: (u8, u16) = (2, 243);

#[test]
fn a_build_the_userland_would_kill_is_refused_naming_the_archive_to_take() {
    let dir = TempDir::new("install-userland");
    // A Pi 4 with 32-bit Raspberry Pi OS, staged: its kernel is 64-bit, its userland (the
    // system manager and /bin/sh) 32-bit ARM; the machine running the test is neither.
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("usr/lib/systemd")).unwrap();
    std::fs::write(root.join("usr/lib/systemd/systemd"), elf(ARMV7.0, ARMV7.1)).unwrap();
    let aarch64 = elf(AARCH64.0, AARCH64.1);
    let wrong = archive(dir.path(), "hearth-aarch64.tar.gz", "0.1.0", &aarch64);
    let loose = dir.path().join("hearth");
    std::fs::write(&loose, &aarch64).unwrap();
    let installed = tree(&root);
    let refusal = "is built for 64-bit ARM (aarch64, arm64), but this system's userland is 32-bit \
                   ARM (armv7, armhf)";
    for args in [
        vec![wrong.to_str().unwrap()],
        vec!["--binary", loose.to_str().unwrap()],
    ] {
        let out = install(&root, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(refusal), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains(&format!(
                "({}/usr/lib/systemd/systemd): the service would be killed at its first system call; nothing was installed",
                root.display()
            )),
            "{}",
            text(&out)
        );
        assert!(
            text(&out).contains("take hearth-armv7.tar.gz (the armv7 build) instead"),
            "{}",
            text(&out)
        );
        assert!(tree(&root) == installed, "{args:?} changed the root");
    }

    // The build it names is installed.
    let armv7 = elf(ARMV7.0, ARMV7.1);
    let right = archive(dir.path(), "hearth-armv7.tar.gz", "0.1.0", &armv7);
    let out = install(&root, &[right.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read(root.join("usr/local/bin/hearth")).unwrap(),
        armv7
    );

    // Without a system manager, /bin/sh tells; a userland hearth has no build for is said so.
    for (userland, binary, advice) in [
        (
            X86_64,
            ARMV7,
            "take hearth-x86_64.tar.gz (the x86_64 build) instead",
        ),
        (
            RISCV64,
            X86_64,
            "hearth has no build for it: build one on this machine",
        ),
    ] {
        let root = dir.path().join(format!("root-{}", userland.1));
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::write(root.join("bin/sh"), elf(userland.0, userland.1)).unwrap();
        let binary_path = dir.path().join(format!("hearth-{}", binary.1));
        std::fs::write(&binary_path, elf(binary.0, binary.1)).unwrap();
        let out = install(&root, &["--binary", binary_path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(text(&out).contains(advice), "{}", text(&out));
        assert!(
            text(&out).contains(&format!("({}/bin/sh)", root.display())),
            "{}",
            text(&out)
        );
        assert!(!root.join("usr").exists());
    }
}

fn check(root: &Path) -> Output {
    install(root, &["--check"])
}

#[test]
fn the_running_service_is_asked_where_the_settings_put_it_and_without_a_key() {
    let dir = TempDir::new("install-check");
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let first = archive(dir.path(), "hearth-0.1.0-x86_64.tar.gz", "0.1.0", BINARY);
    let out = install(&root, &[first.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let settings = root.join("etc/default/hearth");

    // The control API wants a key and listens on another address (127.0.0.2 stands in for the
    // box's LAN address); the device port listens on all addresses (here loopback).
    let lan: IpAddr = [127, 0, 0, 2].into();
    let keyed = common::TestServer::start_with(|c| {
        c.control_require_key = true;
        c.control_bind = lan;
    });
    let (d, c) = (keyed.device().port(), keyed.control().port());
    assert_eq!(common::get(keyed.control(), "/info").status, 401);
    std::fs::write(
        &settings,
        format!(
            "# the owner's settings\nCONTROL_REQUIRE_KEY=true\nCONTROL_HOST=127.0.0.2\n\
             CONTROL_PORT={c}\nSERVER_PORT=8000\nSERVER_PORT=\"{d}\"  \n"
        ),
    )
    .unwrap();
    let newer = b"#!/bin/sh\necho hearth 0.2.0\n";
    let second = archive(dir.path(), "hearth-x86_64.tar.gz", "0.2.0", newer);
    let out = install(&root, &[second.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let out = check(&root);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "hearth answers on http://127.0.0.1:{d}\n\nPoint each thermostat's cloudregisterurl at: http://127.0.0.1:{d}/entry\n"
        )),
        "{}",
        text(&out)
    );

    // Both ports on the LAN address: asked there.
    let on_lan = common::TestServer::start_with(|c| {
        c.device_bind = lan;
        c.control_bind = lan;
    });
    let d2 = on_lan.device().port();
    std::fs::write(
        &settings,
        format!("SERVER_HOST='127.0.0.2'\nSERVER_PORT={d2}\n"),
    )
    .unwrap();
    let out = check(&root);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("cloudregisterurl at: http://127.0.0.1:{d2}/entry")),
        "{}",
        text(&out)
    );

    // Nothing there: said, exit 1.
    drop(on_lan.stop());
    let out = check(&root);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "hearth did not answer on http://127.0.0.2:{d2}/info (SERVER_HOST and SERVER_PORT in {})",
            settings.display()
        )),
        "{}",
        text(&out)
    );

    // --check installs nothing.
    let out = install(&root, &["--check", first.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--check installs nothing"));
}

#[test]
fn a_service_speaking_https_is_asked_in_https() {
    let what = "install.sh's check of an HTTPS service is not tested";
    if !common::tools::present("curl", "HEARTH_REQUIRE_CURL", "apt-get install curl", what) {
        return;
    }
    let dir = TempDir::new("install-check-tls");
    let certs = dir.path().join("certs");
    std::fs::create_dir(&certs).unwrap();
    common::tls::make_certificates(&certs, common::tls::KeyKind::Pkcs8Rsa);
    let server = common::TestServer::start_with(|c| c.cert_dir = Some(certs.clone()));
    let d = server.device().port();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("etc/default")).unwrap();
    std::fs::write(
        root.join("etc/default/hearth"),
        format!("CERT_DIR={}\nSERVER_PORT={d}\n", certs.display()),
    )
    .unwrap();
    let out = check(&root);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("hearth answers on https://127.0.0.1:{d}\n")),
        "{}",
        text(&out)
    );
}
