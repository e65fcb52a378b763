//! On a phone's home screen: the page names a manifest, icons and a favicon, all relative; each is
//! served with its content type; Chromium reads the manifest without errors and loads every icon
//! at the size the manifest gives; the title names the server by the name it is reached at.

use serde_json::{Value, json};

use super::browser::*;
use crate::common::*;

const FILES: [(&str, &str); 8] = [
    ("manifest.webmanifest", "application/manifest+json"),
    ("icon.svg", "image/svg+xml"),
    ("favicon-32.png", "image/png"),
    ("apple-touch-icon.png", "image/png"),
    ("icon-192.png", "image/png"),
    ("icon-512.png", "image/png"),
    ("icon-maskable-512.png", "image/png"),
    ("title.js", "text/javascript; charset=utf-8"),
];

#[test]
fn the_manifest_and_icons_are_served_relative_with_their_types() {
    let s = TestServer::start();
    let page = get(s.control(), "/").text();
    for needle in [
        "<link rel=\"manifest\" href=\"ui/manifest.webmanifest\" crossorigin=\"use-credentials\">",
        "<link rel=\"icon\" href=\"ui/icon.svg\" type=\"image/svg+xml\">",
        "<link rel=\"icon\" href=\"ui/favicon-32.png\" type=\"image/png\" sizes=\"32x32\">",
        "<link rel=\"apple-touch-icon\" href=\"ui/apple-touch-icon.png\">",
        "<meta name=\"theme-color\"",
        "<title>hearth</title>",
    ] {
        assert!(page.contains(needle), "the page has no {needle}");
    }
    for (name, content_type) in FILES {
        let r = get(s.control(), &format!("/ui/{name}"));
        assert_eq!(r.status, 200, "{name}");
        assert_eq!(r.header("Content-Type"), Some(content_type), "{name}");
        assert_eq!(
            r.header("X-Content-Type-Options"),
            Some("nosniff"),
            "{name}"
        );
        assert_eq!(
            r.header("Content-Security-Policy"),
            Some("default-src 'none'"),
            "{name}"
        );
        assert!(!r.body.is_empty(), "{name}");
    }
    let manifest = get(s.control(), "/ui/manifest.webmanifest").json();
    assert_eq!(manifest["name"], json!("hearth"));
    assert_eq!(manifest["short_name"], json!("hearth"));
    assert_eq!(manifest["start_url"], json!("../"));
    assert!(manifest["theme_color"].as_str().unwrap().starts_with('#'));
    let purposes: Vec<&str> = manifest["icons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["purpose"].as_str().unwrap())
        .collect();
    assert!(purposes.contains(&"maskable"), "{manifest}");
    // Nothing else is served under ui/.
    assert_eq!(get(s.control(), "/ui/icon-1024.png").status, 404);
}

#[test]
fn a_browser_reads_the_manifest_and_every_icon_and_titles_the_tab() {
    let Some(b) = Browser::launch_with(&["--host-resolver-rules=MAP study-pi.local 127.0.0.1"])
    else {
        return;
    };
    let s = TestServer::start();
    let port = s.control().port();
    b.goto(&format!("http://study-pi.local:{port}/"));
    b.wait_for(
        "the title with the server's name",
        "return document.title === 'hearth · study-pi'",
    );
    let manifest = b.call(
        "POST",
        "/goog/cdp/execute",
        json!({"cmd": "Page.getAppManifest", "params": {}}),
    );
    assert_eq!(manifest["errors"], json!([]), "{manifest}");
    assert_eq!(
        manifest["url"],
        json!(format!(
            "http://study-pi.local:{port}/ui/manifest.webmanifest"
        )),
        "{manifest}"
    );
    // Every icon, the manifest's and the page's, loads at the size it claims.
    let loaded = b.js("return (async () => {
           const url = document.querySelector('link[rel=manifest]').href;
           const m = await (await fetch(url)).json();
           const size = (src) => new Promise((done) => {
             const img = new Image();
             img.onload = () => done(img.naturalWidth + 'x' + img.naturalHeight);
             img.onerror = () => done('failed');
             img.src = src;
           });
           const out = {};
           for (const i of m.icons) out[i.src] = [i.sizes, await size(new URL(i.src, url).href)];
           for (const l of document.querySelectorAll('link[rel=icon], link[rel=apple-touch-icon]'))
             out[l.getAttribute('href')] = [l.getAttribute('sizes') || '', await size(l.href)];
           out.start = new URL(m.start_url, url).href;
           return out;
         })()");
    let page = format!("http://study-pi.local:{port}/");
    assert_eq!(loaded["start"], json!(page), "{loaded}");
    for (src, pair) in loaded.as_object().unwrap() {
        if src == "start" {
            continue;
        }
        let (claimed, got) = (&pair[0], pair[1].as_str().unwrap());
        assert_ne!(got, "failed", "{src}: {loaded}");
        if claimed != &Value::from("any") && claimed != &Value::from("") {
            assert_eq!(claimed, &json!(got), "{src}: {loaded}");
        }
    }
    assert_eq!(
        loaded["ui/apple-touch-icon.png"][1],
        json!("180x180"),
        "{loaded}"
    );

    // By address, the title has no name to give.
    b.goto(&format!("http://127.0.0.1:{port}/"));
    b.wait_for(
        "the page by address",
        "return document.readyState === 'complete' && document.getElementById('live') !== null",
    );
    assert_eq!(b.js("return document.title"), json!("hearth"));
}
