//! The repository as Home Assistant's add-on store sees it when a user adds its URL: the
//! Supervisor clones it, reads `repository.yaml` at its root (`store/data.py`,
//! `_read_git_repository`: `find_one_filetype(path, "repository", ...)`) and takes every
//! `config.yaml|yml|json` below the root for an add-on's manifest (`_find_app_configs`: the
//! glob `**/config.*`, skipping any path with a part starting with `.` or named `rootfs`).
//! Also: the version and project URL the manifest shares with Cargo.toml, the changelog the
//! store shows on an update, and the container name the Documentation tab gives.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha1::{Digest, Sha1};

use super::manifest::{addon_dir, manifest, yaml_file};

const SUFFIXES: [&str; 3] = ["yaml", "yml", "json"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The project's home: Cargo.toml's `repository`.
fn project_url() -> String {
    env!("CARGO_PKG_REPOSITORY").to_string()
}

/// The files a clone holds: git's list, or (no git, say an unpacked source
/// archive) every file but `target/`, which .gitignore keeps out of a clone.
fn cloned_files() -> Vec<String> {
    let listed = Command::new("git")
        .current_dir(root())
        // Tracked and new files, not the ignored ones: what a commit of this tree holds.
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output();
    if let Some(out) = listed.ok().filter(|o| o.status.success()) {
        return out
            .stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8(p.to_vec()).unwrap())
            .collect();
    }
    eprintln!("git cannot list the files here: walking the tree, target/ left out");
    let ignore = std::fs::read_to_string(root().join(".gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l.trim_matches('/') == "target"));
    let mut files = Vec::new();
    let mut dirs = vec![root()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel == "target" {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(rel);
            }
        }
    }
    files
}

/// What the store takes for add-on manifests among `files`, as its `_find_app_configs` does.
fn store_manifests(files: &[String]) -> Vec<String> {
    let mut found: Vec<String> = files
        .iter()
        .filter(|f| {
            let path = Path::new(f.as_str());
            let named = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("config."))
                .is_some_and(|suffix| SUFFIXES.contains(&suffix));
            let skipped = path.components().any(|c| {
                let part = c.as_os_str().to_string_lossy();
                part.starts_with('.') || part == "rootfs"
            });
            named && !skipped
        })
        .cloned()
        .collect();
    found.sort();
    found
}

#[test]
fn the_store_finds_exactly_our_add_on_from_the_repository_root() {
    let files = cloned_files();
    assert!(files.iter().any(|f| f == "Cargo.toml"), "{files:?}");
    assert_eq!(
        store_manifests(&files),
        ["cross/addon/hearth/config.yaml"],
        "the only config.yaml/yml/json outside hidden folders and rootfs/"
    );
    // The rule itself, on what it must skip and what it must not.
    let sample: Vec<String> = [
        "a/config.json",
        ".github/config.yml",
        "b/rootfs/config.yaml",
        "c/config.toml",
        "d/my-config.yaml",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(store_manifests(&sample), ["a/config.json"]);

    // One repository file, at the root, as its schema wants it (name; url a URL).
    let repository_files: Vec<&String> = files
        .iter()
        .filter(|f| SUFFIXES.iter().any(|s| **f == format!("repository.{s}")))
        .collect();
    assert_eq!(repository_files, ["repository.yaml"]);
    let repository = yaml_file(&root().join("repository.yaml"));
    assert!(repository["name"].as_str().is_some_and(|n| !n.is_empty()));
    assert_eq!(repository["url"], project_url());
    assert!(repository["maintainer"].is_string());
    assert!(
        !addon_dir().join("repository.yaml").exists(),
        "one repository.yaml: cross/addon.sh copies the root's"
    );
}

#[test]
fn the_manifest_shares_cargos_version_and_home() {
    let m = manifest();
    assert_eq!(m["version"], env!("CARGO_PKG_VERSION"));
    let url = project_url();
    assert_eq!(m["url"], url.as_str());
    // The image CI publishes under the project's owner: ghcr.io/OWNER/{arch}-hearth.
    let owner = url
        .strip_prefix("https://github.com/")
        .and_then(|rest| rest.split('/').next())
        .unwrap();
    assert_eq!(m["image"], format!("ghcr.io/{owner}/{{arch}}-hearth"));
    // ghcr.io links the published images to the repository by this label.
    let dockerfile = std::fs::read_to_string(addon_dir().join("hearth/Dockerfile")).unwrap();
    assert!(
        dockerfile.contains(&format!("org.opencontainers.image.source=\"{url}\"")),
        "the Dockerfile's org.opencontainers.image.source is not {url}"
    );
}

#[test]
fn the_changelog_starts_with_this_version() {
    let changelog = std::fs::read_to_string(addon_dir().join("hearth/CHANGELOG.md")).unwrap();
    let first = changelog
        .lines()
        .find(|l| l.starts_with("## "))
        .expect("a `## VERSION` heading");
    assert!(
        first == format!("## {}", env!("CARGO_PKG_VERSION"))
            || first.starts_with(&format!("## {} ", env!("CARGO_PKG_VERSION"))),
        "the newest entry is this version's: {first}"
    );
}

/// The store's slug for a repository URL: the first 8 hex digits of its SHA-1, lower-cased
/// (`store/utils.py`, `get_hash_from_repository`).
fn repository_slug(url: &str) -> String {
    let digest = Sha1::digest(url.to_lowercase().as_bytes());
    digest.iter().take(4).map(|b| format!("{b:02x}")).collect()
}

#[test]
fn the_documentation_names_the_add_ons_container() {
    let docs = std::fs::read_to_string(addon_dir().join("hearth/DOCS.md")).unwrap();
    // `docker/app.py`, `slug_to_name`: `app_` and the add-on's slug, the repository's slug
    // and the manifest's joined by `_` (`local` for the local add-on).
    let slug = manifest()["slug"].as_str().unwrap().to_string();
    let from_url = format!("app_{}_{slug}", repository_slug(&project_url()));
    for name in [format!("app_local_{slug}"), from_url] {
        assert!(docs.contains(&name), "DOCS.md: {name}");
    }
    assert!(
        !docs.contains("exec addon_"),
        "the container names before 2026.07"
    );
}
