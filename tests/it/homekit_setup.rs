//! What a person needs to add hearth to the Home app, and to undo it: `hearth homekit code`,
//! `hearth homekit unlock` and `hearth homekit reset` of the real binary (with no server on the
//! data directory, and through the admin socket of one running on it), and the control port's
//! `GET /api/homekit` that the page's HomeKit panel reads and its `POST /api/homekit/unlock`.

use crate::common;

use std::path::Path;

use common::cli::{hearth, ok};
use common::*;
use hearth::hap::{Identity, Pairing};
use hearth::process::ServerProcess;
use serde_json::{Value, json};

fn controller(id: &str) -> Pairing {
    Pairing {
        id: id.into(),
        public_key: [9; 32],
        admin: true,
    }
}

/// The lines `hearth homekit code` prints: the code, the URI and the pairing state.
fn code_lines(text: &str) -> (String, String, String) {
    let mut lines = text.lines();
    let mut field = |prefix: &str| {
        let line = lines.next().unwrap_or_default();
        line.strip_prefix(prefix)
            .unwrap_or_else(|| panic!("{line:?} does not start with {prefix:?}:\n{text}"))
            .trim()
            .to_string()
    };
    (
        field("setup code:"),
        field("setup URI:"),
        lines.next().unwrap_or_default().to_string(),
    )
}

#[test]
fn code_and_reset_without_a_server() {
    let dir = TempDir::new("homekit-cli-offline");
    std::fs::create_dir_all(dir.path()).unwrap();
    let first = ok(&hearth(dir.path(), &["homekit", "code"]));
    let (code, uri, state) = code_lines(&first);
    // What it printed is what the server will serve: the identity it made on the way.
    let identity = Identity::open(&dir.path().join("homekit")).unwrap();
    assert_eq!(code, identity.setup_code());
    assert_eq!(
        Some(uri.clone()),
        hearth::hap::setup_uri::setup_uri(2, &code, &identity.setup_id())
    );
    assert!(uri.starts_with("X-HM://") && uri.ends_with(&identity.setup_id()));
    assert!(state.starts_with("not paired yet"), "{state}");
    assert_eq!(ok(&hearth(dir.path(), &["homekit", "code"])), first, "kept");

    identity.add_pairing(controller("phone")).unwrap();
    identity.add_pairing(controller("ipad")).unwrap();
    let device_id = identity.device_id();
    drop(identity);
    let (_, _, state) = code_lines(&ok(&hearth(dir.path(), &["homekit", "code"])));
    assert!(state.starts_with("paired with 2 controllers"), "{state}");
    let reset = hearth(dir.path(), &["homekit", "reset"]);
    assert!(
        ok(&reset).starts_with("removed 2 pairings;"),
        "{}",
        ok(&reset)
    );
    assert!(
        String::from_utf8_lossy(&reset.stderr).contains("no hearth server is running on it"),
        "{}",
        String::from_utf8_lossy(&reset.stderr)
    );
    let after = Identity::open(&dir.path().join("homekit")).unwrap();
    assert!(!after.is_paired());
    assert_ne!(
        after.device_id(),
        device_id,
        "a new accessory to controllers"
    );
    assert_eq!(after.setup_code(), code, "the code stays");
}

#[test]
fn code_needs_a_data_directory() {
    let dir = TempDir::new("homekit-cli-nodir");
    let out = hearth(&dir.path().join("missing"), &["homekit", "code"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no data directory at"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dir.path().join("missing").exists(), "nothing made");
}

#[test]
fn reset_reaches_a_running_server() {
    let dir = TempDir::new("homekit-cli-online");
    std::fs::create_dir_all(dir.path()).unwrap();
    let identity = Identity::open(&dir.path().join("homekit")).unwrap();
    identity.add_pairing(controller("phone")).unwrap();
    let code = identity.setup_code();
    drop(identity);
    let server = ServerProcess::start(Path::new(env!("CARGO_BIN_EXE_hearth")), dir.path())
        .unwrap_or_else(|log| panic!("server did not start:\n{log}"));

    let out = hearth(dir.path(), &["homekit", "code"]);
    let (printed, _, state) = code_lines(&ok(&out));
    assert_eq!(printed, code);
    assert!(state.starts_with("paired with 1 controller"), "{state}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("answered by the hearth server running on it"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = hearth(dir.path(), &["homekit", "reset"]);
    assert!(ok(&out).starts_with("removed 1 pairing;"), "{}", ok(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the hearth server running on it took"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The server wrote it, durably, and serves the same.
    let (_, _, state) = code_lines(&ok(&hearth(dir.path(), &["homekit", "code"])));
    assert!(state.starts_with("not paired yet"), "{state}");
    server.terminate().unwrap();
    assert!(
        !Identity::open(&dir.path().join("homekit"))
            .unwrap()
            .is_paired()
    );
}

#[test]
fn a_taken_homekit_port_is_replaced_by_a_free_one() {
    // Homebridge's default port is HomeKit's too: hearth must still start, and HomeKit with it.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let s = TestServer::start_with(|c| c.homekit.port = port);
    let bound = s.server().homekit_addr().expect("HomeKit listens");
    assert_ne!(bound.port(), port);
    assert_eq!(get(s.control(), "/health").status, 200);
    assert_eq!(homekit_api(&s, &[]).json()["port"], json!(bound.port()));
}

#[test]
fn a_server_with_homekit_off_says_so() {
    let dir = TempDir::new("homekit-cli-off");
    std::fs::create_dir_all(dir.path()).unwrap();
    let server = ServerProcess::start_with(
        Path::new(env!("CARGO_BIN_EXE_hearth")),
        dir.path(),
        &["--watchdog-interval-seconds", "0", "--homekit", "false"],
    )
    .unwrap_or_else(|log| panic!("server did not start:\n{log}"));
    let out = hearth(dir.path(), &["homekit", "reset"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("HomeKit is off"), "{err}");
    assert!(!dir.path().join("homekit").exists(), "nothing made");
    drop(server);
}

fn homekit_api(s: &TestServer, headers: &[(&str, &str)]) -> hearth::http::client::ClientResponse {
    hearth::http::client::request(
        &url(s.control(), "/api/homekit"),
        "GET",
        headers,
        &[],
        TIMEOUT,
    )
    .unwrap()
}

#[test]
fn the_page_reads_the_code_until_someone_pairs() {
    let s = TestServer::start();
    let identity = s
        .app()
        .homekit()
        .identity()
        .cloned()
        .expect("HomeKit is on by default");
    let r = homekit_api(&s, &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("Cache-Control"), Some("no-store"), "a secret");
    let body = r.json();
    let code = identity.setup_code();
    let uri = hearth::hap::setup_uri::setup_uri(2, &code, &identity.setup_id()).unwrap();
    assert_eq!(body["enabled"], json!(true));
    assert_eq!(body["name"], json!("hearth"));
    // The port its listener took (the tests' servers ask for a free one).
    let bound = s.server().homekit_addr().expect("HomeKit listens").port();
    assert_eq!(body["port"], json!(bound));
    assert_eq!(body["paired"], json!(false));
    assert_eq!(body["pairings"], json!(0));
    assert_eq!(body["locked"], json!(false));
    assert_eq!(body["setup_code"], json!(code));
    assert_eq!(body["setup_uri"], json!(uri));
    let svg = body["qr_svg"].as_str().unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("<path"), "{svg}");

    identity.add_pairing(controller("phone")).unwrap();
    let body = homekit_api(&s, &[]).json();
    assert_eq!(body["paired"], json!(true));
    assert_eq!(body["pairings"], json!(1));
    for hidden in ["setup_code", "setup_uri", "qr_svg"] {
        assert_eq!(body[hidden], Value::Null, "{hidden} once paired");
    }
}

#[test]
fn with_homekit_off_the_page_is_told_so() {
    let s = TestServer::start_with(|c| c.homekit.enabled = false);
    assert!(s.app().homekit().identity().is_none());
    let r = homekit_api(&s, &[]);
    assert_eq!((r.status, r.json()), (200, json!({"enabled": false})));
    assert!(!s.dir.path().join("homekit").exists(), "nothing made");
}

#[test]
fn a_foreign_page_cannot_read_the_code() {
    let s = TestServer::start();
    // (A foreign Host is refused too: tests/it/browser.rs lists this route among the secret ones.)
    for headers in [
        vec![("Origin", "http://evil.example")],
        vec![("Sec-Fetch-Site", "cross-site")],
    ] {
        let r = homekit_api(&s, &headers);
        assert_eq!(r.status, 403, "{headers:?}");
        assert!(
            !r.text()
                .contains(&s.app().homekit().identity().unwrap().setup_code())
        );
    }
}

#[test]
fn with_a_key_required_only_a_write_key_reads_the_code() {
    let s = TestServer::start_with(|c| c.control_require_key = true);
    let key = |scopes: &str| {
        let spec = hearth::accounts::keys::KeySpec {
            user: "owner".into(),
            name: scopes.into(),
            scopes: hearth::accounts::keys::parse_scopes(scopes).unwrap(),
            serials: vec![],
            expires_days: None,
        };
        format!(
            "Bearer {}",
            hearth::accounts::keys::create(s.app().state(), &spec)
                .unwrap()
                .key
        )
    };
    let r = homekit_api(&s, &[]);
    assert_eq!(r.status, 401);
    let r = homekit_api(&s, &[("Authorization", &key("read"))]);
    assert_eq!(
        (r.status, r.json()),
        (
            403,
            json!({"error": "Access denied: this API key lacks the write scope"})
        )
    );
    let r = homekit_api(&s, &[("Authorization", &key("read,write"))]);
    assert_eq!(r.status, 200);
    assert!(r.json()["setup_code"].is_string());
}

/// Counts wrong setup codes up to the lock, as pair-setup does (unit-tested in `hap::pair_setup`).
fn lock(identity: &Identity) {
    while !identity.is_locked() {
        identity.count_setup_failure().unwrap();
    }
}

fn unlock_api(s: &TestServer, headers: &[(&str, &str)]) -> hearth::http::client::ClientResponse {
    hearth::http::client::request(
        &url(s.control(), "/api/homekit/unlock"),
        "POST",
        headers,
        b"{}",
        TIMEOUT,
    )
    .unwrap()
}

#[test]
fn a_locked_pairing_is_said_and_unlocked_with_a_new_code() {
    let s = TestServer::start();
    let identity = s.app().homekit().identity().cloned().unwrap();
    let old = identity.setup_code();
    let file = s.dir.path().join("homekit").join("accessory.json");
    // Not locked: refused, and nothing changed (not even the file's bytes).
    identity.count_setup_failure().unwrap();
    let before = std::fs::read(&file).unwrap();
    let r = unlock_api(&s, &[]);
    assert_eq!(
        (r.status, r.json()),
        (
            409,
            json!({"error": "HomeKit pairing is not locked (1 wrong setup code of 100): nothing to unlock"})
        )
    );
    assert_eq!(std::fs::read(&file).unwrap(), before);
    assert_eq!(homekit_api(&s, &[]).json()["setup_code"], json!(old));

    // Locked: said, and no code offered (it pairs nothing now).
    lock(&identity);
    let body = homekit_api(&s, &[]).json();
    assert_eq!(body["locked"], json!(true));
    assert_eq!(body["paired"], json!(false));
    for hidden in ["setup_code", "setup_uri", "qr_svg"] {
        assert_eq!(body[hidden], Value::Null, "{hidden} while locked");
    }
    // A foreign page cannot unlock it (it would hand that page a new code).
    let r = unlock_api(&s, &[("Origin", "http://evil.example")]);
    assert_eq!(r.status, 403);
    assert!(identity.is_locked());

    // Unlocked: a new code, answered as GET answers, on disk before the answer.
    let r = unlock_api(&s, &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("Cache-Control"), Some("no-store"), "a secret");
    let body = r.json();
    let code = identity.setup_code();
    assert_ne!(code, old);
    assert_eq!(body["locked"], json!(false));
    assert_eq!(body["setup_code"], json!(code));
    assert_eq!(
        body["setup_uri"],
        json!(hearth::hap::setup_uri::setup_uri(2, &code, &identity.setup_id()).unwrap())
    );
    assert!(body["qr_svg"].as_str().unwrap().starts_with("<svg"));
    assert_eq!(homekit_api(&s, &[]).json(), body);
    let stored = Identity::open(&s.dir.path().join("homekit")).unwrap();
    assert_eq!(
        (stored.setup_code(), stored.setup_failures()),
        (code.clone(), 0)
    );

    // Paired controllers stay paired through an unlock.
    identity.add_pairing(controller("phone")).unwrap();
    lock(&identity);
    let device_id = identity.device_id();
    let r = unlock_api(&s, &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        (r.json()["paired"].clone(), r.json()["pairings"].clone()),
        (json!(true), json!(1))
    );
    assert_eq!(identity.pairings(), vec![controller("phone")]);
    assert_eq!(identity.device_id(), device_id);
    assert_ne!(identity.setup_code(), code);
}

#[test]
fn with_homekit_off_there_is_nothing_to_unlock() {
    let s = TestServer::start_with(|c| c.homekit.enabled = false);
    let r = unlock_api(&s, &[]);
    assert_eq!(
        (r.status, r.json()),
        (
            404,
            json!({"error": "HomeKit is off (HOMEKIT=false, or its identity could not be opened: see the log)"})
        )
    );
    assert!(!s.dir.path().join("homekit").exists(), "nothing made");
}

#[test]
fn with_a_key_required_only_a_write_key_unlocks() {
    let s = TestServer::start_with(|c| c.control_require_key = true);
    let identity = s.app().homekit().identity().cloned().unwrap();
    lock(&identity);
    let spec = |scopes: &str| hearth::accounts::keys::KeySpec {
        user: "owner".into(),
        name: scopes.into(),
        scopes: hearth::accounts::keys::parse_scopes(scopes).unwrap(),
        serials: vec![],
        expires_days: None,
    };
    let key = |scopes: &str| {
        let created = hearth::accounts::keys::create(s.app().state(), &spec(scopes)).unwrap();
        format!("Bearer {}", created.key)
    };
    assert_eq!(unlock_api(&s, &[]).status, 401);
    let r = unlock_api(&s, &[("Authorization", &key("read"))]);
    assert_eq!(
        (r.status, r.json()),
        (
            403,
            json!({"error": "Access denied: this API key lacks the write scope"})
        )
    );
    assert!(identity.is_locked());
    let r = unlock_api(&s, &[("Authorization", &key("read,write"))]);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(!identity.is_locked());
}

/// What `hearth homekit code` says while locked: that it is, and how to unlock.
fn assert_says_locked(text: &str) {
    assert!(
        text.starts_with("pairing is locked: 100 wrong setup codes were tried"),
        "{text}"
    );
    assert!(text.contains("hearth homekit unlock"), "{text}");
    assert!(text.contains("Unlock under Apple Home"), "{text}");
    assert!(!text.contains("setup code:"), "{text}");
}

#[test]
fn code_says_locked_and_unlock_works_without_a_server() {
    let dir = TempDir::new("homekit-cli-unlock");
    std::fs::create_dir_all(dir.path()).unwrap();
    let identity = Identity::open(&dir.path().join("homekit")).unwrap();
    let old = identity.setup_code();
    identity.add_pairing(controller("phone")).unwrap();
    lock(&identity);
    drop(identity);
    let text = ok(&hearth(dir.path(), &["homekit", "code"]));
    assert_says_locked(&text);
    assert!(
        text.trim_end()
            .ends_with("\npaired with 1 controller (hearth homekit reset removes it)"),
        "{text}"
    );

    let out = hearth(dir.path(), &["homekit", "unlock"]);
    let text = ok(&out);
    let identity = Identity::open(&dir.path().join("homekit")).unwrap();
    let code = identity.setup_code();
    assert_ne!(code, old);
    let uri = hearth::hap::setup_uri::setup_uri(2, &code, &identity.setup_id()).unwrap();
    assert_eq!(
        text.trim_end(),
        format!(
            "unlocked: the wrong setup codes are cleared and the old code no longer works; the \
             1 paired controller stays paired\nsetup code: {code}\nsetup URI:  {uri}"
        )
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no hearth server is running on it"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(identity.pairings(), vec![controller("phone")]);
    assert_eq!(identity.setup_failures(), 0);
    drop(identity);

    // Not locked now: refused, nothing changed.
    let out = hearth(dir.path(), &["homekit", "unlock"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "HomeKit pairing is not locked (0 wrong setup codes of 100): nothing to unlock; \
             hearth homekit code prints the setup code"
        ),
        "{err}"
    );
    let after = Identity::open(&dir.path().join("homekit")).unwrap();
    assert_eq!(after.setup_code(), code);
}

#[test]
fn unlock_reaches_a_running_server() {
    let dir = TempDir::new("homekit-cli-unlock-online");
    std::fs::create_dir_all(dir.path()).unwrap();
    let identity = Identity::open(&dir.path().join("homekit")).unwrap();
    let old = identity.setup_code();
    lock(&identity);
    drop(identity);
    let server = ServerProcess::start(Path::new(env!("CARGO_BIN_EXE_hearth")), dir.path())
        .unwrap_or_else(|log| panic!("server did not start:\n{log}"));
    assert_says_locked(&ok(&hearth(dir.path(), &["homekit", "code"])));
    let out = hearth(dir.path(), &["homekit", "unlock"]);
    let text = ok(&out);
    assert!(
        text.starts_with("unlocked: the wrong setup codes are cleared"),
        "{text}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the hearth server running on it took"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The server serves the new code (and wrote it: it is there after it stops).
    let (code, _, state) = code_lines(&ok(&hearth(dir.path(), &["homekit", "code"])));
    assert_ne!(code, old);
    assert!(text.contains(&format!("setup code: {code}")), "{text}");
    assert!(state.starts_with("not paired yet"), "{state}");
    server.terminate().unwrap();
    let stored = Identity::open(&dir.path().join("homekit")).unwrap();
    assert_eq!((stored.setup_code(), stored.is_locked()), (code, false));
}
