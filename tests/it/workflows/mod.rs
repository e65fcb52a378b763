//! Releases without a compiler (issue 39): the CI and release workflows in `.github/`, checked
//! by actionlint where it is installed (CI installs it) and "on paper" against the scripts they
//! run: every archive and image the release job names is one `cross/build.sh all` makes, under
//! the name it writes; the files the release carries are what the README's download links name.
//! `install_archive` installs such an archive by path and by URL, and refuses a bad one.

use crate::common;

mod install_archive;

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

/// The target triples `cross/build.sh all` builds, read from its `all)` line.
fn build_all_triples() -> Vec<String> {
    let script = read("cross/build.sh");
    let line = script
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("all)"))
        .expect("cross/build.sh has an `all)` case");
    let inside = line
        .split_once("triples=(")
        .and_then(|(_, rest)| rest.split_once(')'))
        .expect("`all)` sets triples=(...)")
        .0;
    inside.split_whitespace().map(str::to_string).collect()
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

#[test]
fn the_release_job_names_only_what_cross_build_makes() {
    let release = workflow("release.yml");
    let tags: Vec<_> = release["on"]["push"]["tags"]
        .as_vec()
        .expect("on.push.tags")
        .iter()
        .filter_map(Yaml::as_str)
        .collect();
    assert_eq!(tags, ["v*"]);
    let job = release_job();
    assert_eq!(job["container"]["image"].as_str(), Some("debian:12"));
    let script = runs(&job).join("\n");
    for needed in [
        "bash cross/setup-toolchain.sh",
        "bash cross/build.sh all",
        r#"read -ra archives <<< "$ARCHIVES""#,
        r#"bash .github/scripts/release-assets.sh "$VERSION" "${archives[@]}""#,
        // The tag is Cargo.toml's version; images go where the add-on's `image:` says.
        r#"[ "$GITHUB_REF_NAME" != "v$version" ]"#,
        r#"cross/addon/hearth/config.yaml"#,
        r#""ghcr.io/$owner/{arch}-hearth""#,
        r#""oci-archive:target/hearth-$VERSION-$arch.oci.tar""#,
        r#""docker://ghcr.io/$OWNER/$arch-hearth:$tag""#,
        r#""docker://ghcr.io/$OWNER/hearth:$tag""#,
    ] {
        assert!(script.contains(needed), "release.yml does not run {needed}");
    }

    // Archives: exactly the architectures `cross/build.sh all` builds, named as it names them
    // (`name="hearth-$version-${t%%-*}"`, then target/$name.tar.gz).
    let triples = build_all_triples();
    let built: BTreeSet<String> = triples
        .iter()
        .map(|t| t.split('-').next().unwrap().to_string())
        .collect();
    let archives: BTreeSet<String> = env_list(&job, "ARCHIVES").into_iter().collect();
    assert_eq!(archives, built, "ARCHIVES against cross/build.sh's `all`");
    let build = read("cross/build.sh");
    assert!(build.contains(r#"name="hearth-$version-${t%%-*}""#));
    assert!(build.contains(r#""target/$name.tar.gz""#));
    let assets = read(".github/scripts/release-assets.sh");
    assert!(assets.contains(r#""$from/hearth-$version-$arch.tar.gz""#));

    // Images: each one cross/build.sh hands to cross/addon.sh, which writes
    // $out/hearth-$version-$arch.oci.tar (out: target).
    let addon = read("cross/addon.sh");
    assert!(addon.contains(r#"image="$out/hearth-$version-$arch.oci.tar""#));
    assert!(addon.contains("out=target\n"));
    let images = env_list(&job, "IMAGES");
    assert_eq!(
        images,
        ["aarch64", "amd64"],
        "Home Assistant's architectures"
    );
    for arch in &images {
        assert!(
            build.contains(&format!("addon+=(\"{arch}=$out/hearth\")")),
            "cross/build.sh does not build the {arch} image"
        );
    }
    // Every triple named anywhere in the workflow is one cross/build.sh builds.
    for word in script.split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_')) {
        if word.contains("-unknown-linux-") {
            assert!(triples.iter().any(|t| t == word), "{word}");
        }
    }
}

/// The files the release carries for `version`, made by the release job's own script from
/// archives named as `cross/build.sh` names them.
fn release_files(version: &str) -> BTreeSet<String> {
    let dir = TempDir::new("release-assets");
    let from = dir.path().join("target");
    let out = dir.path().join("assets");
    std::fs::create_dir_all(&from).unwrap();
    let archives = env_list(&release_job(), "ARCHIVES");
    for arch in &archives {
        std::fs::write(from.join(format!("hearth-{version}-{arch}.tar.gz")), arch).unwrap();
    }
    let out_run = Command::new("bash")
        .arg(repo().join(".github/scripts/release-assets.sh"))
        .arg("--from")
        .arg(&from)
        .arg("--out")
        .arg(&out)
        .arg(version)
        .args(&archives)
        .output()
        .unwrap();
    assert!(out_run.status.success(), "{}", text(&out_run));
    let files: BTreeSet<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // Each checksum file checks its archive, as a user's `sha256sum -c` does.
    for f in files.iter().filter(|f| f.ends_with(".sha256")) {
        let check = Command::new("sha256sum")
            .args(["-c", f])
            .current_dir(&out)
            .output()
            .unwrap();
        assert!(check.status.success(), "{f}: {}", text(&check));
    }
    files
}

#[test]
fn the_release_carries_each_archive_under_a_lasting_name_with_its_checksum() {
    let files = release_files("0.1.0");
    let mut expected = BTreeSet::new();
    for arch in ["aarch64", "armv7", "x86_64"] {
        for name in [
            format!("hearth-0.1.0-{arch}.tar.gz"),
            format!("hearth-{arch}.tar.gz"),
        ] {
            expected.insert(format!("{name}.sha256"));
            expected.insert(name);
        }
    }
    assert_eq!(files, expected);
}

#[test]
fn release_assets_refuses_a_missing_archive_and_writes_nothing() {
    let dir = TempDir::new("release-assets-missing");
    let out = dir.path().join("assets");
    let run = Command::new("bash")
        .arg(repo().join(".github/scripts/release-assets.sh"))
        .arg("--from")
        .arg(dir.path())
        .arg("--out")
        .arg(&out)
        .args(["0.1.0", "aarch64"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1), "{}", text(&run));
    assert!(
        text(&run).contains("hearth-0.1.0-aarch64.tar.gz is missing (cross/build.sh all makes it)"),
        "{}",
        text(&run)
    );
    assert!(!out.exists());
}

/// The links in the README under `prefix`, as the file names they end in.
fn links_under(readme: &str, prefix: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in readme.match_indices(prefix) {
        let rest = &readme[at + prefix.len()..];
        let end = rest
            .find(|c: char| c.is_whitespace() || matches!(c, ')' | '`' | '"' | '\'' | '>'))
            .unwrap_or(rest.len());
        names.push(rest[..end].to_string());
    }
    names
}

#[test]
fn the_readmes_download_links_name_files_the_release_carries() {
    let home = env!("CARGO_PKG_REPOSITORY");
    assert_eq!(home, "https://github.com/hearth-thermostat/hearth");
    let readme = read("README.md");
    let files = release_files(env!("CARGO_PKG_VERSION"));
    let links = links_under(&readme, &format!("{home}/releases/latest/download/"));
    assert!(
        links.iter().any(|l| l.ends_with(".tar.gz"))
            && links.iter().any(|l| l.ends_with(".sha256")),
        "the README downloads an archive and its checksum: {links:?}"
    );
    for name in &links {
        // `hearth-$arch.tar.gz` in a command stands for each architecture.
        let named: Vec<String> = if name.contains("$arch") {
            ["aarch64", "armv7", "x86_64"]
                .iter()
                .map(|a| name.replace("$arch", a))
                .collect()
        } else {
            vec![name.clone()]
        };
        for n in named {
            assert!(
                files.contains(&n),
                "README links {n}, which no release carries: {files:?}"
            );
        }
    }
    // The store opens with this repository filled in.
    let add = format!(
        "https://my.home-assistant.io/redirect/supervisor_add_addon_repository/?repository_url={}",
        home.replace(':', "%3A").replace('/', "%2F")
    );
    assert!(readme.contains(&add), "README lacks {add}");
}

#[test]
fn a_fork_changes_one_line() {
    // Outside Cargo.toml, the owner's name is written only where a reader needs a literal
    // (the README's links and the docs); the workflows take it from GitHub at run time.
    for path in [
        ".github/workflows/ci.yml",
        ".github/workflows/release.yml",
        ".github/scripts/release-assets.sh",
    ] {
        assert!(!read(path).contains("hearth-thermostat"), "{path}");
    }
}

/// Runs the release job's check step as GitHub runs it (`bash -eo pipefail`), in a folder
/// holding the repository's Cargo.toml and an add-on manifest whose `image:` is `image`.
fn release_check(tag: &str, repository: &str, image: &str) -> (Output, String) {
    let job = release_job();
    let step = job["steps"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|s| s["id"].as_str() == Some("check"))
        .expect("a step with id: check")
        .clone();
    let dir = TempDir::new("release-check");
    std::fs::copy(repo().join("Cargo.toml"), dir.path().join("Cargo.toml")).unwrap();
    let manifest = dir.path().join("cross/addon/hearth");
    std::fs::create_dir_all(&manifest).unwrap();
    std::fs::write(
        manifest.join("config.yaml"),
        format!("name: hearth\nimage: {image}\narch:\n  - aarch64\n"),
    )
    .unwrap();
    let output = dir.path().join("github-output");
    let out = Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c"])
        .arg(step["run"].as_str().unwrap())
        .current_dir(dir.path())
        .env("GITHUB_REF_NAME", tag)
        .env("GITHUB_OUTPUT", &output)
        .env("OWNER", repository.split('/').next().unwrap())
        .env("REPOSITORY", repository)
        .output()
        .unwrap();
    let written = std::fs::read_to_string(&output).unwrap_or_default();
    (out, written)
}

#[test]
fn the_release_starts_only_from_its_versions_tag_and_its_owners_images() {
    let version = env!("CARGO_PKG_VERSION");
    let tag = format!("v{version}");
    let ours = "ghcr.io/hearth-thermostat/{arch}-hearth";
    // GitHub keeps an owner's capitals; ghcr.io wants lower case.
    for image in [ours.to_string(), format!("\"{ours}\""), format!("'{ours}'")] {
        let (out, written) = release_check(&tag, "Hearth-Thermostat/hearth", &image);
        assert!(out.status.success(), "{image}: {}", text(&out));
        assert_eq!(
            written,
            format!("version={version}\nowner=hearth-thermostat\n")
        );
    }

    let refusals = [
        (
            "v9.9.9".to_string(),
            "hearth-thermostat/hearth",
            ours,
            format!("::error::the tag v9.9.9 is not v{version}, Cargo.toml's version"),
        ),
        (
            version.to_string(),
            "hearth-thermostat/hearth",
            ours,
            format!("::error::the tag {version} is not v{version}, Cargo.toml's version"),
        ),
        (
            tag.clone(),
            "someone/hearth",
            ours,
            "::error::Cargo.toml's repository is https://github.com/hearth-thermostat/hearth, not https://github.com/someone/hearth (a fork changes that line)".to_string(),
        ),
        (
            tag.clone(),
            "hearth-thermostat/hearth",
            "ghcr.io/someone/{arch}-hearth",
            "::error::cross/addon/hearth/config.yaml's image is 'ghcr.io/someone/{arch}-hearth', not ghcr.io/hearth-thermostat/{arch}-hearth".to_string(),
        ),
    ];
    for (tag, repository, image, message) in refusals {
        let (out, written) = release_check(&tag, repository, image);
        assert_eq!(out.status.code(), Some(1), "{tag} {repository} {image}");
        assert!(text(&out).contains(&message), "{}", text(&out));
        assert_eq!(written, "", "nothing is passed on to the build");
    }
}
