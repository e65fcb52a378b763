//! Keys, users and shares through the control port (`/api/keys`, `/api/users`, `/api/shares`),
//! as the dashboard manages them: what they do, who may call them (only callers that may
//! already do everything), and every bad input's exact status and body with nothing changed.

use crate::common;

use common::from_address::{SECOND, request_from};
use common::hosted::{api, new_key};
use common::*;
use hearth::http::client::{self, ClientResponse};
use serde_json::{Value, json};

/// `method target` on the control port with a JSON body and these headers.
fn send(
    s: &TestServer,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> ClientResponse {
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let mut all = vec![("Content-Type", "application/json")];
    all.extend_from_slice(headers);
    client::request(
        &url(s.control(), target),
        method,
        &all,
        body.as_bytes(),
        TIMEOUT,
    )
    .expect("request")
}

fn open(s: &TestServer, method: &str, target: &str, body: Value) -> ClientResponse {
    send(s, method, target, &[], body)
}

fn keyed(s: &TestServer, key: &str, method: &str, target: &str, body: Value) -> ClientResponse {
    let auth = format!("Bearer {key}");
    send(s, method, target, &[("Authorization", &auth)], body)
}

fn outcome(r: &ClientResponse) -> (u16, Value) {
    (r.status, r.json())
}

fn v1_status(s: &TestServer, key: &str) -> u16 {
    api(s, "GET", "/devices", key, Value::Null).status
}

#[test]
fn keys_users_and_shares_are_managed_from_the_control_port() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);

    // A key made here works at once against /api/v1, and is shown only in this answer.
    let r = open(
        &s,
        "POST",
        "/api/keys",
        json!({"name": "Home Assistant", "scopes": ["read", "write"]}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("Cache-Control"), Some("no-store"));
    let made = r.json();
    let key = made["key"].as_str().unwrap().to_string();
    assert!(key.starts_with("nle_") && key.len() == 68, "{made}");
    assert_eq!(made["user"], json!("owner"));
    assert_eq!(made["scopes"], json!(["read", "write"]));
    assert_eq!(made["serials"], json!([]));
    assert_eq!(made["expires"], Value::Null);
    let id = made["id"].as_str().unwrap().to_string();
    assert_eq!(v1_status(&s, &key), 200);
    let list = open(&s, "GET", "/api/keys", Value::Null);
    assert_eq!(list.status, 200);
    assert!(!list.text().contains(&key), "a list never shows a key");
    let listed = &list.json()["keys"][0];
    assert_eq!(listed["id"], json!(id));
    assert_eq!(listed["name"], json!("Home Assistant"));
    assert_eq!(
        listed["preview"],
        json!(format!("{}…{}", &key[..8], &key[64..]))
    );
    assert!(
        listed["last_used"].is_string(),
        "its use is recorded: {listed}"
    );
    assert_eq!(listed["expired"], json!(false));

    // Users: add, list, share with, a key of theirs sees what is shared.
    let r = open(&s, "POST", "/api/users", json!({"name": "bob@home"}));
    assert_eq!(
        outcome(&r),
        (
            201,
            json!({"success": true, "name": "bob@home", "message": "Added user bob@home"})
        )
    );
    let r = open(
        &s,
        "POST",
        "/api/keys",
        json!({"name": "phone", "user": "bob@home", "scopes": "read", "expires_days": 30}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let bob = r.json()["key"].as_str().unwrap().to_string();
    assert!(r.json()["expires"].is_string());
    assert_eq!(
        api(&s, "GET", "/devices", &bob, Value::Null).json(),
        json!({"devices": []})
    );
    let r = open(
        &s,
        "POST",
        "/api/shares",
        json!({"serial": SERIAL.to_lowercase(), "user": "bob@home", "access": "read"}),
    );
    assert_eq!(
        outcome(&r),
        (
            200,
            json!({"success": true, "message": format!("Shared {SERIAL} with bob@home (read)")})
        )
    );
    let shares = open(&s, "GET", "/api/shares", Value::Null).json();
    assert_eq!(shares["shares"][0]["serial"], json!(SERIAL));
    assert_eq!(shares["shares"][0]["user"], json!("bob@home"));
    assert_eq!(shares["shares"][0]["access"], json!("read"));
    let seen = api(&s, "GET", "/devices", &bob, Value::Null).json();
    assert_eq!(seen["devices"][0]["accessType"], json!("shared"), "{seen}");
    let users = open(&s, "GET", "/api/users", Value::Null).json();
    let row = |name: &str| {
        users["users"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["name"] == json!(name))
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {users}"))
    };
    assert_eq!(row("owner")["default"], json!(true));
    assert_eq!(row("owner")["owns"], json!([SERIAL]));
    assert_eq!(row("owner")["keys"], json!(1));
    assert_eq!(
        row("bob@home")["shared"],
        json!([{"serial": SERIAL, "access": "read"}])
    );
    assert_eq!(row("bob@home")["keys"], json!(1));

    // Changing the access, then stopping the share (a percent-encoded name in the path).
    let r = open(
        &s,
        "POST",
        "/api/shares",
        json!({"serial": SERIAL, "user": "bob@home", "access": "control"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = open(
        &s,
        "DELETE",
        &format!("/api/shares/{SERIAL}/bob%40home"),
        Value::Null,
    );
    assert_eq!(
        outcome(&r),
        (
            200,
            json!({"success": true, "message": format!("{SERIAL} is no longer shared with bob@home")})
        )
    );
    assert_eq!(
        api(&s, "GET", "/devices", &bob, Value::Null).json(),
        json!({"devices": []})
    );

    // Revoked: refused at once.
    let r = open(&s, "DELETE", &format!("/api/keys/{id}"), Value::Null);
    assert_eq!(
        outcome(&r),
        (
            200,
            json!({"success": true, "message": format!("Revoked API key {id} (Home Assistant) of owner")})
        )
    );
    assert_eq!(v1_status(&s, &key), 401);

    // Removing a user takes its keys with it.
    open(
        &s,
        "POST",
        "/api/shares",
        json!({"serial": SERIAL, "user": "bob@home", "access": "read"}),
    );
    let r = open(&s, "DELETE", "/api/users/bob@home", Value::Null);
    assert_eq!(
        outcome(&r),
        (
            200,
            json!({"success": true, "message": "Removed user bob@home, 1 API key and 1 share"})
        )
    );
    assert_eq!(v1_status(&s, &bob), 401);
    assert_eq!(
        open(&s, "GET", "/api/shares", Value::Null).json(),
        json!({"shares": []})
    );

    // Every answer came after the change was durable: a restart finds exactly this.
    let dir = s.stop();
    let server = restart(&dir);
    let state = &server.app().state();
    state.accounts(|a| {
        assert!(!a.users.contains_key("bob@home"));
        assert!(a.api_keys.is_empty());
        assert!(a.shares.is_empty());
    });
    server.shutdown();
}

#[test]
fn bad_account_inputs_get_exact_errors_and_change_nothing() {
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    open(&s, "POST", "/api/users", json!({"name": "bob"}));
    open(
        &s,
        "POST",
        "/api/shares",
        json!({"serial": SERIAL, "user": "bob", "access": "read"}),
    );
    // A user who owns a thermostat, which pairing's claim would give.
    hearth::accounts::add_user(s.app().state(), "carol").unwrap();
    s.set_owner("02AA01AC0000SIM2", "carol");
    let before = store_bytes(s.dir.path());
    let error = |m: &str| json!({"error": m});
    let user_name = "Invalid user name: use 1 to 64 letters, digits, '_', '-', '.' or '@'";
    let label = "name required: a label of 1 to 64 characters, to tell keys apart";
    let scopes = "Invalid scopes: use read, write, or both";
    let serial = "Invalid serial: expected 10 to 64 letters and digits";
    let expiry = "Invalid expiry: use a whole number of days from 1 to 3650";
    let key = |extra: Value| {
        let mut body = json!({"name": "x", "scopes": "read"});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body.to_string()
    };
    let not_shared = format!("/api/shares/{SERIAL}/zed");
    let one_segment = format!("/api/shares/{SERIAL}");
    let cases: Vec<(&str, &str, String, u16, Value)> = vec![
        (
            "POST",
            "/api/keys",
            "{nope".into(),
            400,
            error("Invalid JSON"),
        ),
        (
            "POST",
            "/api/keys",
            "[]".into(),
            400,
            error("Request body must be a JSON object"),
        ),
        (
            "POST",
            "/api/keys",
            json!({"scopes": "read"}).to_string(),
            400,
            error(label),
        ),
        (
            "POST",
            "/api/keys",
            key(json!({"name": "  "})),
            400,
            error(label),
        ),
        (
            "POST",
            "/api/keys",
            key(json!({"name": "x".repeat(65)})),
            400,
            error(label),
        ),
        (
            "POST",
            "/api/keys",
            key(json!({"name": "a\nb"})),
            400,
            error(label),
        ),
        (
            "POST",
            "/api/keys",
            key(json!({"name": 7})),
            400,
            error(label),
        ),
        (
            "POST",
            "/api/keys",
            json!({"name": "x"}).to_string(),
            400,
            error(scopes),
        ),
        (
            "POST",
            "/api/keys",
            key(json!({"scopes": "admin"})),
            400,
            error(scopes),
        ),
        (
            "POST",
            "/api/keys",
            key(json!({"scopes": []})),
            400,
            error(scopes),
        ),
        (
            "POST",
            "/api/keys",
            key(json!({"scopes": ["read", 1]})),
            400,
            error(scopes),
        ),
        (
            "POST",
            "/api/keys",
            key(json!({"user": "a b"})),
            400,
            error(user_name),
        ),
        (
            "POST",
            "/api/keys",
            key(json!({"user": 3})),
            400,
            error(user_name),
        ),
        (
            "POST",
            "/api/keys",
            key(json!({"user": "zed"})),
            404,
            error("No user named zed"),
        ),
        (
            "POST",
            "/api/keys",
            key(json!({"serials": ["no such"]})),
            400,
            error(serial),
        ),
        (
            "POST",
            "/api/keys",
            key(json!({"serials": [5]})),
            400,
            error(serial),
        ),
        (
            "POST",
            "/api/keys",
            key(json!({"serials": SERIAL})),
            400,
            error("serials must be a list of serials (or left out: every thermostat of the user)"),
        ),
        (
            "POST",
            "/api/keys",
            key(json!({"expires_days": 0})),
            400,
            error(expiry),
        ),
        (
            "POST",
            "/api/keys",
            key(json!({"expires_days": 3651})),
            400,
            error(expiry),
        ),
        (
            "POST",
            "/api/keys",
            key(json!({"expires_days": 1.5})),
            400,
            error(expiry),
        ),
        (
            "POST",
            "/api/keys",
            key(json!({"expires_days": "30"})),
            400,
            error(expiry),
        ),
        (
            "DELETE",
            "/api/keys/nope",
            String::new(),
            404,
            error("No API key with id nope"),
        ),
        (
            "DELETE",
            "/api/keys",
            String::new(),
            405,
            error("Method not allowed"),
        ),
        (
            "GET",
            "/api/keys/nope",
            String::new(),
            405,
            error("Method not allowed"),
        ),
        (
            "DELETE",
            "/api/keys/a/b",
            String::new(),
            404,
            error("Not found"),
        ),
        (
            "PUT",
            "/api/users",
            String::new(),
            405,
            error("Method not allowed"),
        ),
        (
            "POST",
            "/api/users",
            "{}".into(),
            400,
            error("name required: the user's name"),
        ),
        (
            "POST",
            "/api/users",
            json!({"name": "a b"}).to_string(),
            400,
            error(user_name),
        ),
        (
            "POST",
            "/api/users",
            json!({"name": ["bob"]}).to_string(),
            400,
            error(user_name),
        ),
        (
            "POST",
            "/api/users",
            json!({"name": "bob"}).to_string(),
            409,
            error("User bob already exists"),
        ),
        (
            "POST",
            "/api/users",
            json!({"name": "owner"}).to_string(),
            409,
            error("User owner already exists"),
        ),
        (
            "DELETE",
            "/api/users/zed",
            String::new(),
            404,
            error("No user named zed"),
        ),
        (
            "DELETE",
            "/api/users/a%20b",
            String::new(),
            400,
            error(user_name),
        ),
        (
            "DELETE",
            "/api/users/%zz",
            String::new(),
            400,
            error("Invalid path: bad percent-encoding"),
        ),
        (
            "DELETE",
            "/api/users/owner",
            String::new(),
            409,
            error("The default user owner cannot be removed: it always exists"),
        ),
        (
            "DELETE",
            "/api/users/carol",
            String::new(),
            409,
            error("carol owns 02AA01AC0000SIM2; remove those thermostats from carol first"),
        ),
        (
            "POST",
            "/api/shares",
            json!({"user": "bob", "access": "read"}).to_string(),
            400,
            error("Serial required"),
        ),
        (
            "POST",
            "/api/shares",
            json!({"serial": "x y", "user": "bob", "access": "read"}).to_string(),
            400,
            error(serial),
        ),
        (
            "POST",
            "/api/shares",
            json!({"serial": SERIAL, "access": "read"}).to_string(),
            400,
            error("user required: the user to share it with"),
        ),
        (
            "POST",
            "/api/shares",
            json!({"serial": SERIAL, "user": "bob", "access": "admin"}).to_string(),
            400,
            error("Invalid access: use read or control"),
        ),
        (
            "POST",
            "/api/shares",
            json!({"serial": SERIAL, "user": "bob"}).to_string(),
            400,
            error("Invalid access: use read or control"),
        ),
        (
            "POST",
            "/api/shares",
            json!({"serial": "02AA01AC0000NONE", "user": "bob", "access": "read"}).to_string(),
            404,
            error("Device not found"),
        ),
        (
            "POST",
            "/api/shares",
            json!({"serial": SERIAL, "user": "zed", "access": "read"}).to_string(),
            404,
            error("No user named zed"),
        ),
        (
            "POST",
            "/api/shares",
            json!({"serial": SERIAL, "user": "owner", "access": "read"}).to_string(),
            409,
            error(&format!(
                "owner owns {SERIAL}; a thermostat is not shared with its owner"
            )),
        ),
        (
            "DELETE",
            &not_shared,
            String::new(),
            404,
            error(&format!("{SERIAL} is not shared with zed")),
        ),
        (
            "DELETE",
            "/api/shares/x/bob",
            String::new(),
            400,
            error(serial),
        ),
        (
            "DELETE",
            &one_segment,
            String::new(),
            404,
            error("Not found"),
        ),
    ];
    for (method, target, body, status, expected) in &cases {
        let r = call(s.control(), method, target, body);
        assert_eq!(
            (r.status, r.json()),
            (*status, expected.clone()),
            "{method} {target} {body}"
        );
    }
    assert!(
        store_bytes(s.dir.path()) == before,
        "a refused account request changed the store"
    );
}

/// Users and key ids, to show a refused request added or removed none.
fn accounts_of(s: &TestServer) -> (Vec<String>, Vec<String>) {
    s.app().state().accounts(|a| {
        (
            a.users.keys().cloned().collect(),
            a.api_keys.keys().cloned().collect(),
        )
    })
}

#[test]
fn with_a_key_required_only_a_write_key_of_owner_or_the_ingress_proxy_manages_accounts() {
    let s = TestServer::start_with(|c| {
        c.control_require_key = true;
        c.ingress_proxy = Some(SECOND);
    });
    let read = new_key(&s, "owner", "read", &[]);
    let limited = new_key(&s, "owner", "read,write", &[SERIAL]);
    let alice = new_key(&s, "alice", "read,write", &[]);
    let before = accounts_of(&s);
    let routes = [
        ("GET", "/api/keys", Value::Null),
        (
            "POST",
            "/api/keys",
            json!({"name": "x", "scopes": "read,write"}),
        ),
        ("GET", "/api/users", Value::Null),
        ("POST", "/api/users", json!({"name": "mallory"})),
        ("DELETE", "/api/users/alice", Value::Null),
        ("GET", "/api/shares", Value::Null),
    ];
    let not_for_control = json!({"error": "Access denied: the control API takes keys of the user owner with no serial limit (use /api/v1 for other keys)"});
    for (method, target, body) in &routes {
        let what = format!("{method} {target}");
        assert_eq!(
            outcome(&open(&s, method, target, body.clone())),
            (401, json!({"error": "Unauthorized"})),
            "{what}"
        );
        // A read key may read the thermostats, not hand out keys or see who holds them.
        assert_eq!(
            outcome(&keyed(&s, &read, method, target, body.clone())),
            (
                403,
                json!({"error": "Access denied: this API key lacks the write scope"})
            ),
            "{what}"
        );
        for key in [&limited, &alice] {
            assert_eq!(
                outcome(&keyed(&s, key, method, target, body.clone())),
                (403, not_for_control.clone()),
                "{what}"
            );
        }
    }
    assert_eq!(
        accounts_of(&s),
        before,
        "a refused caller changed the accounts"
    );

    // A write key of owner with no serial limit may do everything already: it manages too.
    let write = new_key(&s, "owner", "read,write", &[]);
    let r = keyed(&s, &write, "GET", "/api/keys", Value::Null);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["keys"].as_array().unwrap().len(), 4);
    let r = keyed(&s, &write, "POST", "/api/users", json!({"name": "dave"}));
    assert_eq!(r.status, 201, "{}", r.text());

    // Home Assistant's ingress proxy speaks for its signed-in people: no key.
    let body = json!({"name": "erin"}).to_string();
    let r = request_from(
        SECOND,
        s.control(),
        "POST /api/users HTTP/1.1",
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = request_from(SECOND, s.control(), "GET /api/users HTTP/1.1", &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("\"erin\""), "{}", r.text());
}

#[test]
fn a_web_page_of_another_site_cannot_manage_accounts() {
    let s = TestServer::start();
    let before = accounts_of(&s);
    let evil = [("Origin", "http://evil.example")];
    let cross = [("Sec-Fetch-Site", "cross-site")];
    for headers in [&evil[..], &cross[..]] {
        for (method, target, body) in [
            (
                "POST",
                "/api/keys",
                json!({"name": "x", "scopes": "read,write"}),
            ),
            ("GET", "/api/keys", Value::Null),
            ("POST", "/api/users", json!({"name": "mallory"})),
            ("GET", "/api/users", Value::Null),
            ("DELETE", "/api/keys/00000000", Value::Null),
        ] {
            let r = send(&s, method, target, headers, body);
            assert_eq!(r.status, 403, "{method} {target} {headers:?}: {}", r.text());
            assert!(
                r.json()["error"]
                    .as_str()
                    .unwrap()
                    .starts_with("Origin check error"),
                "{}",
                r.text()
            );
        }
    }
    // A DNS-rebinding name is not this server's.
    let body = json!({"name": "x", "scopes": "read"}).to_string();
    let answer = raw(
        s.control(),
        format!(
            "POST /api/keys HTTP/1.1\r\nHost: attacker.example.com\r\nConnection: close\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
        TIMEOUT,
    );
    assert!(answer.starts_with("HTTP/1.1 421 "), "{answer}");
    assert_eq!(
        accounts_of(&s),
        before,
        "a foreign page changed the accounts"
    );

    // The page itself (its own origin) may.
    let own = format!("http://{}", s.control());
    let r = send(
        &s,
        "POST",
        "/api/keys",
        &[("Origin", &own), ("Sec-Fetch-Site", "same-origin")],
        json!({"name": "x", "scopes": "read"}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
}

#[test]
fn in_pairing_mode_a_thermostat_nobody_claimed_is_shared_with_nobody() {
    let s = pairing();
    // Known to the server (it has state), claimed by nobody.
    s.server_change(SERIAL, &device(), json!({"current_temperature": 20.5}));
    open(&s, "POST", "/api/users", json!({"name": "bob"}));
    let before = store_bytes(s.dir.path());
    let r = open(
        &s,
        "POST",
        "/api/shares",
        json!({"serial": SERIAL, "user": "bob", "access": "control"}),
    );
    assert_eq!(
        outcome(&r),
        (
            409,
            json!({"error": format!("Device {SERIAL} has no owner: add it (or claim it with its entry code) before sharing it")})
        )
    );
    assert!(store_bytes(s.dir.path()) == before);
    // Claimed, it can be shared.
    s.set_owner(SERIAL, "owner");
    let r = open(
        &s,
        "POST",
        "/api/shares",
        json!({"serial": SERIAL, "user": "bob", "access": "control"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn users_and_keys_are_bounded() {
    use hearth::state::{ApiKey, Op, Scope};
    let s = TestServer::start();
    // Filled to the limits in one write (through the API it would take 2,000 fsyncs).
    s.app()
        .state()
        .update_accounts(|txn| {
            for i in 1..hearth::accounts::MAX_USERS {
                txn.push(Op::AddUser {
                    name: format!("user{i}"),
                    created_ms: 0,
                });
            }
            for i in 0..hearth::accounts::keys::MAX_KEYS {
                txn.push(Op::PutApiKey {
                    key: ApiKey {
                        id: format!("{i:08x}"),
                        hash: format!("{i:064x}"),
                        preview: String::new(),
                        user: "owner".into(),
                        name: "k".into(),
                        scopes: vec![Scope::Read],
                        serials: Vec::new(),
                        created_ms: 0,
                        expires_ms: None,
                        last_used_ms: None,
                    },
                });
            }
            Ok::<_, hearth::store::StoreError>(())
        })
        .unwrap();
    let before = store_bytes(s.dir.path());
    assert_eq!(
        outcome(&open(&s, "POST", "/api/users", json!({"name": "one-more"}))),
        (
            409,
            json!({"error": "Too many users: hearth keeps at most 1000; remove some first"})
        )
    );
    assert_eq!(
        outcome(&open(
            &s,
            "POST",
            "/api/keys",
            json!({"name": "one more", "scopes": "read"})
        )),
        (
            409,
            json!({"error": "Too many API keys: hearth keeps at most 1000; remove some first"})
        )
    );
    assert!(store_bytes(s.dir.path()) == before);
    // One gone, one may come.
    let r = open(&s, "DELETE", "/api/keys/00000000", Value::Null);
    assert_eq!(r.status, 200, "{}", r.text());
    let r = open(
        &s,
        "POST",
        "/api/keys",
        json!({"name": "one more", "scopes": "read"}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
}
