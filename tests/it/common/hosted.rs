//! Calling the hosted API (`/api/v1`) as its clients do: with a Bearer key.

use hearth::accounts::keys::{self, KeySpec};
use hearth::http::client::{self, ClientResponse};
use serde_json::Value;

use super::{TIMEOUT, TestServer, url};

/// `method /api/v1{path}` with `key` and a JSON body (none for `null`).
pub fn api(s: &TestServer, method: &str, path: &str, key: &str, body: Value) -> ClientResponse {
    let auth = format!("Bearer {key}");
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    client::request(
        &url(s.control(), &format!("/api/v1{path}")),
        method,
        &[
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
        ],
        body.as_bytes(),
        TIMEOUT,
    )
    .expect("request")
}

/// The serials `key`'s user sees in the hosted device list.
pub fn hosted_serials(s: &TestServer, key: &str) -> Vec<Value> {
    let r = api(s, "GET", "/devices", key, Value::Null);
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["devices"]
        .as_array()
        .expect("a device list")
        .iter()
        .map(|d| d["serial"].clone())
        .collect()
}

/// A key for `user` (created if new) with `scopes`, limited to `serials` if any.
pub fn new_key(s: &TestServer, user: &str, scopes: &str, serials: &[&str]) -> String {
    hearth::accounts::add_user(s.app().state(), user).unwrap();
    let spec = KeySpec {
        user: user.into(),
        name: "test".into(),
        scopes: keys::parse_scopes(scopes).unwrap(),
        serials: serials.iter().map(|s| s.to_string()).collect(),
        expires_days: None,
    };
    keys::create(s.app().state(), &spec).unwrap().key
}

/// Shares `serial` with `user` (created here) with `access`, as the owner's page would.
pub fn share(s: &TestServer, serial: &str, user: &str, access: hearth::state::ShareAccess) {
    hearth::accounts::add_user(s.app().state(), user).unwrap();
    s.app()
        .state()
        .update_accounts(|txn| {
            txn.push(hearth::state::Op::SetShare {
                serial: serial.into(),
                user: user.into(),
                share: Some(hearth::state::Share {
                    access,
                    since_ms: 0,
                }),
            });
            Ok::<_, hearth::store::StoreError>(())
        })
        .unwrap();
}
