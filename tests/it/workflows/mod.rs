//! Releases without a compiler (issue 39): the CI and release workflows in `.github/`, checked
//! by actionlint where it is installed (CI installs it) and "on paper" against the scripts they
//! run: every archive and image the release job names is one `cross/build.sh all` makes, under
//! the name it writes; the files the release carries are what the README's download links name
//! (`release_job`). `install_archive` installs such an archive by path and by URL, refuses a bad
//! one and a build the userland would kill, and asks the running service where its settings put
//! it; `archive` makes two archives of one binary and finds the same bytes.

use crate::common;

mod archive;
mod install_archive;
mod release_job;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Output};

use common::TempDir;
use yaml_rust2::{Yaml, YamlLoader};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn workflow(name: &str) -> Yaml {
    let path = format!(".github/workflows/{name}");
    let mut docs = YamlLoader::load_from_str(&read(&path)).unwrap();
    assert_eq!(docs.len(), 1, "{path}: one document");
    docs.remove(0)
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The `run:` scripts of a job's steps, in order.
fn runs(job: &Yaml) -> Vec<String> {
    job["steps"]
        .as_vec()
        .expect("steps")
        .iter()
        .filter_map(|s| s["run"].as_str().map(str::to_string))
        .collect()
}

/// A job's space-separated list in its `env:`.
fn env_list(job: &Yaml, name: &str) -> Vec<String> {
    job["env"][name]
        .as_str()
        .unwrap_or_else(|| panic!("the job's env has no {name}"))
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

fn release_job() -> Yaml {
    workflow("release.yml")["jobs"]["release"].clone()
}

#[test]
fn actionlint_passes_both_workflows() {
    let tool = std::env::var("HEARTH_ACTIONLINT").unwrap_or_else(|_| "actionlint".into());
    let install = ".ci/run installs it from .ci/actionlint.txt";
    let what = "the workflows are not linted";
    if !common::tools::present(&tool, "HEARTH_REQUIRE_ACTIONLINT", install, what) {
        return;
    }
    // actionlint runs shellcheck on the `run:` scripts, given one; CI gives it one.
    let shellcheck = std::env::var("HEARTH_SHELLCHECK").unwrap_or_else(|_| "shellcheck".into());
    let install = ".ci/run installs it from .ci/actionlint.txt";
    let what = "the workflows' scripts and the release's are not checked";
    let checked = common::tools::present(&shellcheck, "HEARTH_REQUIRE_ACTIONLINT", install, what);
    let out = Command::new(&tool)
        .current_dir(repo())
        .arg("-no-color")
        .arg(format!(
            "-shellcheck={}",
            if checked { &shellcheck } else { "" }
        ))
        .args([".github/workflows/ci.yml", ".github/workflows/release.yml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "actionlint:\n{}", text(&out));
    if checked {
        let out = Command::new(&shellcheck)
            .current_dir(repo())
            .args([
                "scripts/install.sh",
                "scripts/uninstall.sh",
                "scripts/install-lib.sh",
                "openwrt/install.sh",
                "openwrt/uninstall.sh",
                "openwrt/hearth.init",
                "cross/archive.sh",
                "cross/openwrt-smoke.sh",
                ".github/scripts/release-assets.sh",
                ".ci/run",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "shellcheck:\n{}", text(&out));
    }

    // It would have seen a mistake: an unknown key and an undefined step output.
    let dir = TempDir::new("actionlint");
    let bad = dir.path().join("bad.yml");
    std::fs::write(
        &bad,
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    stepz: []\n    steps:\n      - run: echo ${{ steps.nope.outputs.x }}\n",
    )
    .unwrap();
    let out = Command::new(&tool)
        .args(["-no-color"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("stepz"), "{}", text(&out));
}

#[test]
fn ci_runs_the_same_script_on_pushes_and_pull_requests() {
    let ci = workflow("ci.yml");
    let on = ci["on"].as_hash().expect("on: is a map");
    let events: BTreeSet<&str> = on.keys().filter_map(Yaml::as_str).collect();
    assert_eq!(events, BTreeSet::from(["pull_request", "push"]));
    let jobs = ci["jobs"].as_hash().expect("jobs");
    assert_eq!(jobs.len(), 1, "one job: .ci/run");
    let job = jobs.values().next().unwrap();
    assert_eq!(
        job["container"]["image"].as_str(),
        Some("debian:12"),
        "cross/setup-toolchain.sh is for Debian 12"
    );
    assert_eq!(runs(job).last().map(|r| r.trim()), Some("bash .ci/run"));
}
