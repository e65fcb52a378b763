//! The account commands of the real binary (`hearth users|keys|claim|share|unshare|devices`),
//! with no server on the data directory and with one running on it: a key created or revoked
//! while the server runs takes effect at once, and only the server writes the store. Each
//! command says on stderr which data directory it used and whether a running server took the
//! change; `hearth demo` prints the `--data-dir` that reaches it.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::cli::{hearth, ok};
use common::*;
use hearth::http::client::{self, ClientResponse};
use hearth::process::ServerProcess;
use serde_json::{Value, json};

/// The error: the first line on stderr (the note on the data directory follows it).
fn refused(out: &Output) -> String {
    assert!(!out.status.success(), "unexpected success");
    let text = String::from_utf8_lossy(&out.stderr);
    text.lines().next().unwrap_or_default().trim().to_string()
}

/// The note on stderr that says where the command ran.
fn note(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    text.lines()
        .find(|l| l.starts_with("hearth: data directory "))
        .unwrap_or_else(|| panic!("no note on the data directory in {text:?}"))
        .to_string()
}

/// `hearth keys create`: the key is alone on the last line.
fn create_key(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["keys", "create"];
    all.extend_from_slice(args);
    let text = ok(&hearth(dir, &all));
    let key = text.trim_end().lines().last().unwrap().to_string();
    assert!(
        key.starts_with("nle_") && key.len() == 68,
        "last line: {key:?}"
    );
    key
}

fn v1(addr: std::net::SocketAddr, path: &str, key: &str) -> ClientResponse {
    let auth = format!("Bearer {key}");
    client::request(
        &url(addr, &format!("/api/v1{path}")),
        "GET",
        &[("Authorization", &auth)],
        &[],
        TIMEOUT,
    )
    .unwrap()
}

#[test]
fn commands_work_without_a_server() {
    let dir = TempDir::new("cli-offline");
    let data = dir.path().join("data");
    // Reads never create a data directory.
    assert!(refused(&hearth(&data, &["keys", "list"])).contains("no data directory"));
    assert!(!data.exists());

    let added = hearth(&data, &["users", "add", "alice"]);
    assert_eq!(ok(&added).trim(), "added user alice");
    let full = std::path::absolute(&data).unwrap();
    assert_eq!(
        note(&added),
        format!(
            "hearth: data directory {} (created now): no hearth server is running on it. The \
             change is saved there for a server started on it; a server running on another \
             data directory does not see it (pass that server's --data-dir; hearth demo prints \
             its own)",
            full.display()
        )
    );
    assert_eq!(
        note(&hearth(&data, &["users", "list"])),
        format!(
            "hearth: data directory {}: no hearth server is running on it (read from its files)",
            full.display()
        )
    );
    let refusal = hearth(&data, &["users", "remove", "nobody"]);
    assert_eq!(
        refused(&refusal),
        "hearth: No user named nobody (add it with: hearth users add nobody)"
    );
    assert_eq!(
        note(&refusal),
        format!(
            "hearth: data directory {}: no hearth server is running on it; nothing changed",
            full.display()
        )
    );
    assert_eq!(
        ok(&hearth(&data, &["users", "add", "alice"])).trim(),
        "user alice already exists"
    );
    let users = ok(&hearth(&data, &["users", "list"]));
    assert!(
        users.contains("alice") && users.contains("owner"),
        "{users}"
    );

    let key = create_key(
        &data,
        &[
            "--user",
            "alice",
            "--name",
            "ha",
            "--scopes",
            "read",
            "--serial",
            "02aa01ac0000sim1",
            "--expires-days",
            "30",
        ],
    );
    let list = ok(&hearth(&data, &["keys", "list"]));
    assert!(!list.contains(&key), "the key itself is never listed");
    assert!(
        list.contains(&format!("{}…{}", &key[..8], &key[64..])),
        "{list}"
    );
    assert!(
        list.contains("02AA01AC0000SIM1") && list.contains("read"),
        "{list}"
    );
    let id = list
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    assert_eq!(id.len(), 8);

    // Bad input: a message, a failure status, nothing stored.
    let before = store_bytes(&data);
    for (args, expected) in [
        (
            vec![
                "keys", "create", "--user", "bob", "--name", "x", "--scopes", "read",
            ],
            "No user named bob (add it with: hearth users add bob)",
        ),
        (
            vec![
                "keys", "create", "--user", "alice", "--name", "x", "--scopes", "admin",
            ],
            "Invalid scopes \"admin\": use read, write, or read,write",
        ),
        (
            vec![
                "keys", "create", "--user", "alice", "--name", "x", "--scopes", "read", "--serial",
                "no such",
            ],
            "Invalid serial \"no such\": expected 10 to 64 letters and digits",
        ),
        (
            vec![
                "keys",
                "create",
                "--user",
                "alice",
                "--name",
                "x",
                "--scopes",
                "read",
                "--expires-days",
                "0",
            ],
            "Invalid expiry: use a whole number of days from 1 to 3650",
        ),
        (vec!["keys", "revoke", "nope"], "No API key with id nope"),
        (
            vec!["users", "remove", "owner"],
            "The default user owner cannot be removed: it always exists",
        ),
        (
            vec!["users", "add", "a b"],
            "Invalid user name: use 1 to 64 letters, digits, '_', '-', '.' or '@'",
        ),
        (
            vec!["claim", "123-ABCD", "--user", "alice"],
            "Invalid, expired, or already claimed entry key",
        ),
        (
            vec!["claim", "12", "--user", "alice"],
            "Invalid entry code format. Must be exactly 7 alphanumeric characters.",
        ),
        (
            vec![
                "share",
                "02AA01AC0000SIM1",
                "--with",
                "alice",
                "--access",
                "read",
            ],
            "Device 02AA01AC0000SIM1 not found",
        ),
        (
            vec![
                "share",
                "02AA01AC0000SIM1",
                "--with",
                "alice",
                "--access",
                "admin",
            ],
            "Invalid access \"admin\": use read or control",
        ),
        (
            vec!["unshare", "02AA01AC0000SIM1", "--with", "alice"],
            "02AA01AC0000SIM1 is not shared with alice",
        ),
    ] {
        assert_eq!(
            refused(&hearth(&data, &args)),
            format!("hearth: {expected}"),
            "{args:?}"
        );
    }
    assert!(
        store_bytes(&data) == before,
        "a refused command changed the store"
    );

    assert_eq!(
        ok(&hearth(&data, &["keys", "revoke", &id])).trim(),
        format!("revoked API key {id} (\"ha\") of alice")
    );
    assert!(!ok(&hearth(&data, &["keys", "list"])).contains(&id));
}

#[test]
fn commands_reach_a_running_server_and_take_effect_at_once() {
    let dir = TempDir::new("cli-online");
    let mut server = ServerProcess::start(Path::new(env!("CARGO_BIN_EXE_hearth")), dir.path())
        .unwrap_or_else(|log| panic!("server did not start:\n{log}"));
    let origin = format!("http://{}", server.device);
    let (mut sim, _events) = thermostat(&origin, SERIAL);
    sim.boot().unwrap();

    // Created while the server runs: works at once, no restart.
    let key = create_key(
        dir.path(),
        &[
            "--user",
            "owner",
            "--name",
            "script",
            "--scopes",
            "read,write",
        ],
    );
    let r = v1(server.control, "/devices", &key);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["devices"][0]["serial"], json!(SERIAL));

    // Sharing through the server.
    let added = hearth(dir.path(), &["users", "add", "bob"]);
    ok(&added);
    assert_eq!(
        note(&added),
        format!(
            "hearth: data directory {}: the hearth server running on it took the change; it \
             applies at once",
            std::path::absolute(dir.path()).unwrap().display()
        )
    );
    assert_eq!(
        ok(&hearth(
            dir.path(),
            &["share", SERIAL, "--with", "bob", "--access", "read"]
        ))
        .trim(),
        format!("shared {SERIAL} with bob (read)")
    );
    let bob = create_key(
        dir.path(),
        &["--user", "bob", "--name", "phone", "--scopes", "read"],
    );
    let list = v1(server.control, "/devices", &bob).json();
    assert_eq!(list["devices"][0]["accessType"], json!("shared"));
    let devices = ok(&hearth(dir.path(), &["devices"]));
    let row = devices
        .lines()
        .find(|l| l.starts_with(SERIAL))
        .unwrap_or_else(|| panic!("{devices}"));
    assert!(
        row.contains("owner (unclaimed)") && row.contains("bob:read"),
        "{row}"
    );
    assert!(
        !row.contains("(server not running)"),
        "the server knows when it last saw it: {row}"
    );
    assert!(
        ok(&hearth(dir.path(), &["unshare", SERIAL, "--with", "bob"])).contains("no longer shared")
    );
    assert_eq!(
        v1(server.control, "/devices", &bob).json(),
        json!({"devices": []})
    );

    // Revoked while the server runs: refused at once.
    let list = ok(&hearth(dir.path(), &["keys", "list", "--user", "owner"]));
    let id = list
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    ok(&hearth(dir.path(), &["keys", "revoke", &id]));
    assert_eq!(
        (
            v1(server.control, "/devices", &key).status,
            v1(server.control, "/devices", &key).json()
        ),
        (401, json!({"error": "Unauthorized"}))
    );
    // The key's use was recorded by the server.
    let list = ok(&hearth(dir.path(), &["keys", "list", "--user", "bob"]));
    let last_used = list.lines().nth(1).unwrap();
    assert!(
        last_used.matches('Z').count() >= 2,
        "created and last used: {last_used}"
    );

    // Removing a user through the server: its keys stop working at once.
    assert_eq!(
        ok(&hearth(dir.path(), &["users", "remove", "bob"])).trim(),
        "removed user bob (1 API key revoked, 0 shares ended)"
    );
    assert_eq!(v1(server.control, "/devices", &bob).status, 401);
    let refusal = hearth(dir.path(), &["users", "remove", "bob"]);
    assert_eq!(
        refused(&refusal),
        "hearth: No user named bob (add it with: hearth users add bob)"
    );
    assert!(
        note(&refusal).ends_with("the hearth server running on it refused; nothing changed"),
        "{}",
        note(&refusal)
    );

    // Claim through the server: the thermostat is pushed its owner's buckets.
    let (code, _) = sim.passphrase().unwrap();
    let mut held = sim.open_subscribe().unwrap();
    assert_eq!(
        ok(&hearth(dir.path(), &["claim", &code, "--user", "carol"])).trim(),
        format!("Device {SERIAL} linked to carol")
    );
    let (_, doc) = next_push(&mut held);
    let keys: Vec<&Value> = doc["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["object_key"])
        .collect();
    assert!(keys.contains(&&json!("user.carol")), "{doc}");

    // The server wrote every change: a restart finds them all.
    server.terminate().unwrap();
    let users = ok(&hearth(dir.path(), &["users", "list"]));
    assert!(!users.contains("bob") && users.contains("carol"), "{users}");
    let devices = ok(&hearth(dir.path(), &["devices"]));
    assert!(
        devices.contains("carol") && devices.contains("(server not running)"),
        "{devices}"
    );
}

/// A removed thermostat is nobody's, so `hearth share` refuses it, with the control API's words,
/// whether a running server or the files take the command, and changes nothing; added back,
/// it can be shared again.
#[test]
fn share_refuses_a_removed_thermostat_with_or_without_a_server() {
    let dir = TempDir::new("cli-share-removed");
    let mut server = ServerProcess::start(Path::new(env!("CARGO_BIN_EXE_hearth")), dir.path())
        .unwrap_or_else(|log| panic!("server did not start:\n{log}"));
    let origin = format!("http://{}", server.device);
    let (mut sim, _events) = thermostat(&origin, SERIAL);
    sim.boot().unwrap();
    ok(&hearth(dir.path(), &["users", "add", "bob"]));
    let bob = create_key(
        dir.path(),
        &["--user", "bob", "--name", "phone", "--scopes", "read"],
    );
    let r = remove_device(server.control, SERIAL);
    assert_eq!(r.status, 200, "{}", r.text());
    let share = ["share", SERIAL, "--with", "bob", "--access", "read"];
    let no_owner = format!(
        "Device {SERIAL} has no owner: add it (or claim it with its entry code) before sharing it"
    );
    // The control API's route says the same, with 409.
    let body = json!({"serial": SERIAL, "user": "bob", "access": "read"}).to_string();
    let r = call(server.control, "POST", "/api/shares", &body);
    assert_eq!(
        (r.status, r.json()),
        (409, json!({"error": no_owner.clone()}))
    );
    let before = store_bytes(dir.path());
    assert_eq!(
        refused(&hearth(dir.path(), &share)),
        format!("hearth: {no_owner}")
    );
    assert!(
        store_bytes(dir.path()) == before,
        "the refusal changed the store"
    );
    assert_eq!(
        v1(server.control, "/devices", &bob).json(),
        json!({"devices": []})
    );
    server.terminate().unwrap();

    // Without a server, from the files: the same refusal, nothing written.
    let before = store_bytes(dir.path());
    let out = hearth(dir.path(), &share);
    assert_eq!(refused(&out), format!("hearth: {no_owner}"));
    assert!(note(&out).contains("no hearth server is running on it; nothing changed"));
    assert!(
        store_bytes(dir.path()) == before,
        "the refusal changed the store"
    );

    // Added back (open mode), it is the default user's and can be shared.
    let mut server = ServerProcess::start(Path::new(env!("CARGO_BIN_EXE_hearth")), dir.path())
        .unwrap_or_else(|log| panic!("server did not start:\n{log}"));
    let r = call(
        server.control,
        "POST",
        "/api/adopt",
        &json!({"serial": SERIAL}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        ok(&hearth(dir.path(), &share)).trim(),
        format!("shared {SERIAL} with bob (read)")
    );
    let list = v1(server.control, "/devices", &bob).json();
    assert_eq!(list["devices"][0]["serial"], json!(SERIAL), "{list}");
    server.terminate().unwrap();
}

/// The trap: `hearth keys create` while `hearth demo` runs wrote to `./data`, and the
/// key got 401 with nothing saying why. The demo now prints the `--data-dir` to pass, and a
/// key created with it works against the demo at once.
#[test]
fn the_demo_prints_the_data_directory_that_reaches_it() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    /// Stops the demo (SIGTERM, so it deletes its directory) however the test ends.
    struct Stopped(std::process::Child);
    impl Drop for Stopped {
        fn drop(&mut self) {
            let pid = rustix::process::Pid::from_child(&self.0);
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            let _ = self.0.wait();
        }
    }
    let mut demo = Stopped(
        Command::new(env!("CARGO_BIN_EXE_hearth"))
            .args(["demo", "--device-port", "0", "--control-port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the demo starts"),
    );
    let mut lines = BufReader::new(demo.0.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    let (mut data_dir, mut port) = (None, None);
    while data_dir.is_none() || port.is_none() {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("the demo stopped: {printed:?}"))
            .unwrap();
        if let Some(rest) = line.split("--data-dir ").nth(1) {
            data_dir = rest.split_whitespace().next().map(str::to_string);
        }
        if let Some(rest) = line.split("http://127.0.0.1:").nth(1) {
            port = rest.split('/').next().map(|p| p.parse::<u16>().unwrap());
        }
        printed.push(line);
    }
    let data_dir = std::path::PathBuf::from(data_dir.unwrap());
    let made = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args([
            "keys", "create", "--user", "owner", "--name", "t", "--scopes", "read",
        ])
        .arg("--data-dir")
        .arg(&data_dir)
        .env_remove("DATA_DIR")
        .output()
        .unwrap();
    let key = ok(&made).trim_end().lines().last().unwrap().to_string();
    assert!(
        note(&made).contains("the hearth server running on it took the change"),
        "{}",
        note(&made)
    );
    let control = std::net::SocketAddr::from(([127, 0, 0, 1], port.unwrap()));
    let r = v1(control, "/devices", &key);
    drop(demo);
    assert_eq!(r.status, 200, "{}", r.text());
}
