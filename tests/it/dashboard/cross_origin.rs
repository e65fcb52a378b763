//! A web page of another site, in a real browser, against hearth (SECURITY.md, "What a web page
//! can and cannot do"). The page is served by a tiny HTTP server of the test's own on
//! 127.0.0.1, reached as `http://evil.example:<port>/` (Chromium maps the name to 127.0.0.1 with
//! `--host-resolver-rules`). It tries what the attack in issue 34 did: read `/api/devices`, set
//! 29.5 °C with a `text/plain` body (a simple request, no preflight), set away with JSON, and
//! remove the thermostat; it reports what it could read. Against a hearth that lists the page
//! in `ALLOWED_ORIGINS` the same script reads and changes everything, which shows the test sees
//! it when a page gets through. Then the DNS-rebinding shape: the page's own name pointing at
//! hearth's port (Host `evil.example`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use parking_lot::Mutex;

use serde_json::{Value, json};

use super::browser::*;
use crate::common::*;

/// Serves one page (whatever [`PageServer::set`] last gave) for every request, until dropped.
struct PageServer {
    addr: SocketAddr,
    page: Arc<Mutex<String>>,
    stop: Arc<AtomicBool>,
    handle: Option<thread::JoinHandle<()>>,
}

impl PageServer {
    fn start() -> PageServer {
        crate::common::share_process();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let page = Arc::new(Mutex::new(String::new()));
        let serving = Arc::clone(&page);
        let handle = thread::spawn(move || {
            for conn in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(mut conn) = conn else { continue };
                let _ = conn.set_read_timeout(Some(TIMEOUT));
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).is_ok_and(|n| n == 1) {
                    head.push(byte[0]);
                }
                let page = serving.lock().clone();
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\
                     Cache-Control: no-store\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                    page.len()
                );
                let _ = conn.write_all(answer.as_bytes());
            }
        });
        PageServer {
            addr,
            page,
            stop,
            handle: Some(handle),
        }
    }

    fn set(&self, page: String) {
        *self.page.lock() = page;
    }

    /// The page's origin, as the browser reaches it.
    fn origin(&self) -> String {
        format!("http://evil.example:{}", self.addr.port())
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The attacker's page: every attempt against `hearth` (its control port's origin), and what
/// each could read, in `window.__report`.
fn attack_page(hearth: &str) -> String {
    format!(
        r#"<!doctype html><title>Win a prize</title><script>
const H = "{hearth}";
const S = "{SERIAL}";
async function attempt(name, url, init) {{
  try {{
    const r = await fetch(url, init);
    let body = "";
    try {{ body = await r.text(); }} catch (e) {{}}
    return {{ name, fetched: true, type: r.type, status: r.status, body }};
  }} catch (e) {{
    return {{ name, fetched: false, error: String(e) }};
  }}
}}
(async () => {{
  const cmd = (command, value) => JSON.stringify({{ serial: S, command, value }});
  const out = [];
  out.push(await attempt("read devices", H + "/api/devices"));
  out.push(await attempt("read devices, no-cors", H + "/api/devices", {{ mode: "no-cors" }}));
  out.push(await attempt("read status", H + "/status?serial=" + S));
  out.push(await attempt("set 29.5, text/plain", H + "/command", {{ method: "POST", mode: "no-cors",
    headers: {{ "Content-Type": "text/plain" }}, body: cmd("set_temperature", 29.5) }}));
  out.push(await attempt("set away, JSON", H + "/command", {{ method: "POST",
    headers: {{ "Content-Type": "application/json" }}, body: cmd("set_away", true) }}));
  out.push(await attempt("remove, JSON", H + "/api/device", {{ method: "DELETE",
    headers: {{ "Content-Type": "application/json" }}, body: JSON.stringify({{ serial: S }}) }}));
  window.__report = out;
}})();
</script>"#
    )
}

/// What the test watches: the target temperature, away, and whether the thermostat is listed.
fn state(s: &TestServer) -> (Value, Value, bool) {
    let record = hearth::control::status::record(s.app(), SERIAL);
    let listed = get(s.control(), "/api/devices").json()["devices"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["serial"] == json!(SERIAL));
    match record {
        Some(r) => (r["target_temperature"].clone(), r["away"].clone(), listed),
        None => (Value::Null, Value::Null, listed),
    }
}

/// Opens the attacker's page against `s` and returns its report.
fn run_attack(b: &Browser, pages: &PageServer, s: &TestServer) -> Vec<Value> {
    pages.set(attack_page(&format!("http://{}", s.control())));
    b.goto(&format!("{}/", pages.origin()));
    let report = b.wait_for("the page's report", "return window.__report || null");
    report.as_array().unwrap().clone()
}

#[test]
fn a_page_of_another_site_can_neither_read_nor_change_anything() {
    let Some(b) = Browser::launch_with(&["--host-resolver-rules=MAP evil.example 127.0.0.1"])
    else {
        return;
    };
    let pages = PageServer::start();

    // Against a default hearth: nothing read, nothing changed.
    let s = TestServer::start();
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let before = state(&s);
    assert!(before.2);
    let report = run_attack(&b, &pages, &s);
    assert_eq!(report.len(), 6, "{report:?}");
    for r in &report {
        assert_eq!(r["body"].as_str().unwrap_or(""), "", "the page read {r}");
        assert!(
            r["fetched"] == json!(false) || r["type"] == json!("opaque"),
            "the page saw an answer: {r}"
        );
    }
    assert_eq!(state(&s), before);

    // Against a hearth that lists the page in ALLOWED_ORIGINS, the same script reads the list
    // and changes everything: the test would see a page that gets through.
    let open = TestServer::start_with(|c| c.allowed_origins = vec![pages.origin()]);
    let (_sim2, _events2, _held2) = booted_and_held(&open, SERIAL);
    let mut changes = open_events(open.control(), "/api/events");
    let report = run_attack(&b, &pages, &open);
    assert_eq!(report[0]["status"], json!(200), "{report:?}");
    assert!(
        report[0]["body"].as_str().unwrap().contains(SERIAL),
        "{report:?}"
    );
    let statuses: Vec<&Value> = report.iter().map(|r| &r["status"]).collect();
    // The no-cors requests (a read, the text/plain command) get opaque answers (status 0).
    assert_eq!(
        statuses,
        [200, 0, 200, 0, 200, 200]
            .map(|s| json!(s))
            .iter()
            .collect::<Vec<_>>()
    );
    assert!(
        report[4]["body"]
            .as_str()
            .unwrap()
            .contains(r#""success":true"#),
        "{report:?}"
    );
    // The opaque command was carried out: its change event arrives.
    let mut seen = String::new();
    while !seen.contains("target_temperature") {
        let chunk = changes
            .next_chunk()
            .unwrap()
            .expect("the event stream ended");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    // And the thermostat was removed at last.
    assert!(!state(&open).2);

    // The DNS-rebinding shape: the page's name now points at hearth's port, so the page and
    // hearth share an origin, and every request names the page's host.
    let port = s.control().port();
    b.goto(&format!("http://evil.example:{port}/"));
    let shown = b.js("return document.body.innerText");
    assert!(
        shown.as_str().unwrap().contains("Host check error"),
        "{shown}"
    );
    let statuses = b.js(&format!(
        r#"const S = "{SERIAL}";
        const post = (body) => fetch("/command", {{ method: "POST", body }}).then((r) => r.status);
        return Promise.all([
          fetch("/api/devices").then((r) => r.status),
          post(JSON.stringify({{ serial: S, command: "set_temperature", value: 29.5 }})),
          fetch("/api/device", {{ method: "DELETE", body: JSON.stringify({{ serial: S }}) }}).then((r) => r.status),
        ]);"#
    ));
    assert_eq!(statuses, json!([421, 421, 421]));
    assert_eq!(state(&s), before);
    drop(b);
}
