//! `cross/archive.sh`: a release archive is the same bytes whenever it is made from the same
//! binary and tree, whatever the files' times, the umask or the directory it is made in; its
//! entries are sorted, owned by 0:0, timed at the last commit (or `SOURCE_DATE_EPOCH`), and
//! hold what an install needs, LICENSE included.

use super::{repo, text};
use crate::common;

use std::path::Path;
use std::process::Command;

use common::TempDir;

/// Makes `out/hearth-0.1.0-x86_64.tar.gz` from `bin_dir` under `umask`, with `epoch` as
/// SOURCE_DATE_EPOCH if given (else the last commit's time); returns its bytes.
fn make(bin_dir: &Path, out: &Path, umask: &str, epoch: Option<&str>) -> Vec<u8> {
    std::fs::create_dir_all(out).unwrap();
    let archive = out.join("hearth-0.1.0-x86_64.tar.gz");
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(format!(
            "umask {umask} && exec bash cross/archive.sh \"$0\" \"$1\""
        ))
        .arg(bin_dir)
        .arg(&archive)
        .current_dir(repo())
        .env_remove("SOURCE_DATE_EPOCH");
    if let Some(epoch) = epoch {
        cmd.env("SOURCE_DATE_EPOCH", epoch);
    }
    let made = cmd.output().unwrap();
    assert!(made.status.success(), "{}", text(&made));
    std::fs::read(&archive).unwrap()
}

/// A binary and its checksum in `dir`, written now.
fn binary(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("hearth"), b"#!/bin/sh\necho hearth 0.1.0\n").unwrap();
    std::fs::write(dir.join("hearth.sha256"), b"0123  hearth\n").unwrap();
}

/// `tar -tv` of an archive, in UTC with full times and numeric owners.
fn listing(archive: &[u8], dir: &Path) -> String {
    let path = dir.join("listed.tar.gz");
    std::fs::write(&path, archive).unwrap();
    let out = Command::new("tar")
        .args(["--numeric-owner", "--full-time", "-tvzf"])
        .arg(&path)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn two_archives_of_one_binary_are_the_same_bytes() {
    let dir = TempDir::new("archive");
    binary(&dir.path().join("a"));
    let first = make(
        &dir.path().join("a"),
        &dir.path().join("out-a"),
        "022",
        None,
    );
    // The same binary copied elsewhere (new files, new times), made under another umask.
    binary(&dir.path().join("b"));
    let touched = Command::new("touch")
        .args(["-d", "2001-02-03 04:05:06"])
        .arg(dir.path().join("b/hearth"))
        .output()
        .unwrap();
    assert!(touched.status.success(), "{}", text(&touched));
    let second = make(
        &dir.path().join("b"),
        &dir.path().join("out-b"),
        "077",
        None,
    );
    assert!(first == second, "two archives of one binary differ");

    // gzip stored neither a name nor a time (bytes 4..8 are its MTIME).
    assert_eq!(&first[..4], &[0x1f, 0x8b, 8, 0]);
    assert_eq!(&first[4..8], &[0, 0, 0, 0]);

    let list = listing(&first, dir.path());
    let names: Vec<&str> = list
        .lines()
        .map(|l| l.split_whitespace().last().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "entries in name order:\n{list}");
    for needed in [
        "hearth-0.1.0-x86_64/hearth",
        "hearth-0.1.0-x86_64/hearth.sha256",
        "hearth-0.1.0-x86_64/LICENSE",
        "hearth-0.1.0-x86_64/README.md",
        "hearth-0.1.0-x86_64/docs/running.md",
        "hearth-0.1.0-x86_64/docs/openwrt.md",
        "hearth-0.1.0-x86_64/scripts/install.sh",
        "hearth-0.1.0-x86_64/scripts/uninstall.sh",
        "hearth-0.1.0-x86_64/scripts/install-lib.sh",
        "hearth-0.1.0-x86_64/systemd/hearth.service",
        "hearth-0.1.0-x86_64/systemd/hearth.default",
        "hearth-0.1.0-x86_64/openwrt/hearth.init",
        "hearth-0.1.0-x86_64/openwrt/install.sh",
        "hearth-0.1.0-x86_64/openwrt/uninstall.sh",
    ] {
        assert!(names.contains(&needed), "{needed} is not in:\n{list}");
    }
    let commit = Command::new("git")
        .args([
            "log",
            "-1",
            "--format=%cd",
            "--date=format-local:%Y-%m-%d %H:%M:%S",
        ])
        .env("TZ", "UTC")
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(commit.status.success(), "{}", text(&commit));
    let commit = String::from_utf8(commit.stdout).unwrap();
    for line in list.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (mode, owner, date, time) = (fields[0], fields[1], fields[3], fields[4]);
        assert_eq!(owner, "0/0", "{line}");
        assert_eq!(format!("{date} {time}"), commit.trim(), "{line}");
        let executable = ["/hearth", ".sh", ".init"]
            .iter()
            .any(|e| line.ends_with(e));
        let expected = match (mode.starts_with('d'), executable) {
            (true, _) => "drwxr-xr-x",
            (false, true) => "-rwxr-xr-x",
            (false, false) => "-rw-r--r--",
        };
        assert_eq!(mode, expected, "{line}");
    }

    // SOURCE_DATE_EPOCH, when set, is the time.
    let dated = make(
        &dir.path().join("a"),
        &dir.path().join("out-c"),
        "022",
        Some("1700000000"),
    );
    let list = listing(&dated, dir.path());
    assert!(
        list.lines().all(|l| l.contains(" 2023-11-14 22:13:20 ")),
        "{list}"
    );
}
