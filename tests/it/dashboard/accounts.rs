//! Keys, users and sharing on the page, in Chromium, every control named, reached by Tab and
//! readable, at 360 px too: a key created on the page works against `/api/v1` at once and is
//! shown once with a Copy button; revoked on the page, it gets 401. A user is added, given a
//! share and removed. With `CONTROL_REQUIRE_KEY` the page asks once for a key, keeps it in the
//! browser, and says in words why a key that cannot write may not manage accounts.

use serde_json::{Value, json};

use super::browser::*;
use super::{LOW_CONTRAST, SHOWN, UNLABELLED, unreachable_by_tab};
use crate::common::hosted::{api, new_key};
use crate::common::*;

fn v1_devices(s: &TestServer, key: &str) -> (u16, Value) {
    let r = api(s, "GET", "/devices", key, Value::Null);
    (r.status, r.json())
}

/// Opens the panel and waits for its lists.
fn open_panel(b: &Browser) {
    b.click("#accounts > summary");
    b.wait_for(
        "the users",
        "return document.querySelectorAll('#users-list li').length > 0",
    );
}

#[test]
fn keys_users_and_sharing_on_the_page() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let s = TestServer::start();
    let _t = TestThermostat::start(&s.origin());
    b.goto(&format!("http://{}/", s.control()));
    b.wait_for(
        "the thermostat's card",
        "return document.querySelectorAll('.card').length === 1",
    );
    open_panel(&b);
    assert_eq!(
        b.js("return document.getElementById('keys-none').hidden"),
        json!(false)
    );

    // Create a key: shown once, with a Copy button, and it works against /api/v1 at once.
    b.type_into("#key-name", "Home Assistant");
    b.click("#key-create button[type=submit]");
    let key = b.wait_for(
        "the new key",
        "const v = document.getElementById('new-key-value').value; return v.startsWith('nle_') ? v : ''",
    );
    let key = key.as_str().unwrap().to_string();
    assert_eq!(key.len(), 68);
    let (status, body) = v1_devices(&s, &key);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["devices"][0]["serial"], json!(TEST_SERIAL));
    b.wait_for(
        "the key in the list",
        "return document.querySelectorAll('#keys-list li').length === 1",
    );
    let row = b.js("return document.getElementById('keys-list').textContent");
    let row = row.as_str().unwrap();
    assert!(
        row.contains("Home Assistant") && row.contains("owner"),
        "{row}"
    );
    assert!(!row.contains(&key), "the list shows the key itself: {row}");
    b.click("#new-key-copy");
    let copied = b.wait_for(
        "the copy's answer",
        "return document.getElementById('new-key-copied').textContent",
    );
    assert!(
        ["Copied.", "Select the key and copy it."].contains(&copied.as_str().unwrap()),
        "{copied}"
    );

    // Every control of the panel has a name, and 360 px needs no sideways scrolling.
    let labels = b.js(&format!("{SHOWN}{UNLABELLED}"));
    assert_eq!(labels["unlabelled"], json!([]), "{labels}");
    assert_eq!(unreachable_by_tab(&b), Vec::<String>::new());
    let contrast = b.js(LOW_CONTRAST);
    assert_eq!(contrast["bad"], json!([]), "{contrast}");
    b.as_phone();
    b.js("document.getElementById('accounts').scrollIntoView(); return true");
    b.painted();
    b.screenshot("accounts-360.png");
    b.viewport(1280, 900, false);
    b.js("document.getElementById('accounts').scrollIntoView(); return true");
    b.painted();
    b.screenshot("accounts-1280.png");

    // Done hides the key for good.
    b.click("#new-key-done");
    assert_eq!(
        b.js("const v = document.getElementById('new-key-value'); return [v.value, document.getElementById('new-key').hidden]"),
        json!(["", true])
    );

    // Revoke on the page (asked twice): refused at once.
    b.click("#keys-list li button");
    b.click("#keys-list .confirm button.danger");
    b.wait_for(
        "the key gone from the list",
        "return document.querySelectorAll('#keys-list li').length === 0",
    );
    assert_eq!(
        v1_devices(&s, &key),
        (401, json!({"error": "Unauthorized"}))
    );
    assert!(
        b.js("return document.getElementById('accounts-done').textContent")
            .as_str()
            .unwrap()
            .starts_with("Revoked API key"),
    );

    // A user, a share with them, then the user removed with their key.
    b.type_into("#user-name", "bob");
    b.click("#user-add button[type=submit]");
    b.wait_for(
        "bob in the list",
        "return document.querySelector('#users-list li[data-user=bob]')",
    );
    b.wait_for(
        "bob to share with",
        "return [...document.getElementById('share-user').options].some((o) => o.value === 'bob')",
    );
    b.js("document.getElementById('share-access').value = 'control'; return true");
    b.click("#share-form button[type=submit]");
    b.wait_for(
        "the share in the list",
        "return document.querySelectorAll('#shares-list li').length === 1",
    );
    let shared = s.app().state().accounts(|a| {
        a.shares_of(TEST_SERIAL)
            .and_then(|m| m.get("bob"))
            .map(|s| s.access.as_str())
    });
    assert_eq!(shared, Some("control"));
    b.click("#shares-list li button");
    b.wait_for(
        "the share gone",
        "return document.querySelectorAll('#shares-list li').length === 0",
    );
    let bob = new_key(&s, "bob", "read", &[]);
    // Closed and opened again, the panel loads its lists again.
    b.click("#accounts > summary");
    b.click("#accounts > summary");
    b.wait_for(
        "bob's key counted",
        "const li = document.querySelector('#users-list li[data-user=bob]'); return li && li.textContent.includes('1 API key')",
    );
    b.click("#users-list li[data-user=bob] button");
    b.click("#users-list .confirm button.danger");
    b.wait_for(
        "bob gone",
        "return !document.querySelector('#users-list li[data-user=bob]')",
    );
    assert_eq!(v1_devices(&s, &bob).0, 401);
}

#[test]
fn with_a_key_required_the_page_asks_once_and_says_why_a_key_may_not_manage() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let s = TestServer::start_with(|c| c.control_require_key = true);
    let read = new_key(&s, "owner", "read", &[]);
    let write = new_key(&s, "owner", "read,write", &[]);
    let page = format!("http://{}/", s.control());
    b.goto(&page);
    b.wait_for(
        "the key's question",
        "return !document.getElementById('key-panel').hidden",
    );
    b.type_into("#key-input", &read);
    b.click("#key-form button[type=submit]");
    b.click("#accounts > summary");
    let why = b.wait_for(
        "why the read key may not",
        "return document.getElementById('accounts-error').textContent",
    );
    assert_eq!(
        why,
        json!(
            "Access denied: this API key lacks the write scope. Keys, users and sharing need a key of owner with the write scope and no thermostat limit."
        )
    );
    assert_eq!(
        b.js("return document.getElementById('accounts-body').hidden"),
        json!(true)
    );

    // Asked once: a new visit keeps the key, and does not ask again.
    b.goto(&page);
    b.wait_for(
        "the page loaded",
        "return document.getElementById('live').textContent === 'Live'",
    );
    assert_eq!(
        b.js("return [document.getElementById('key-panel').hidden, localStorage.getItem('hearth-key')]"),
        json!([true, read])
    );
    b.js(&format!(
        "localStorage.setItem('hearth-key', '{write}'); return true"
    ));
    b.goto(&page);
    b.wait_for(
        "the page loaded",
        "return document.getElementById('live').textContent === 'Live'",
    );
    assert_eq!(
        b.js("return document.getElementById('key-panel').hidden"),
        json!(true)
    );
    open_panel(&b);
    assert_eq!(
        b.js("return document.getElementById('accounts-error').textContent"),
        json!("")
    );
    assert_eq!(
        b.js("return document.querySelectorAll('#keys-list li').length"),
        json!(2)
    );
    assert_eq!(
        b.js("return document.getElementById('saved-key').hidden"),
        json!(false)
    );
    b.click("#forget-key");
    assert_eq!(
        b.js("return localStorage.getItem('hearth-key')"),
        Value::Null
    );
}
