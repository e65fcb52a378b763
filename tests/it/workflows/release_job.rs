//! The release job "on paper" and in part for real: what it names against what
//! `cross/build.sh all` and `cross/addon.sh` make, the files it publishes (its own script, run
//! on fake archives) against the README's download links, and its check step, run as GitHub
//! runs it.

use super::{env_list, read, release_job, repo, runs, text, workflow};
use crate::common;

use std::collections::BTreeSet;
use std::process::{Command, Output};

use common::TempDir;
use yaml_rust2::Yaml;

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
