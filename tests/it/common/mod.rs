//! Shared test harness: an in-process server on 127.0.0.1 with free ports and a temporary data
//! directory, raw HTTP helpers, and simulated thermostats whose events arrive on a channel.
#![allow(dead_code)]

pub mod cli;
pub mod docs;
pub mod energy;
pub mod from_address;
pub mod homekit;
pub mod hosted;
pub mod log_capture;
pub mod mqtt;
pub mod nle;
pub mod redirect;
pub mod tls;
pub mod tools;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use crossbeam_channel::{Receiver, unbounded};
use hearth::http::client::{self, ClientResponse, Url};
use hearth::hub::Origin;
use hearth::simulator::{Event, Options, Thermostat};
use hearth::state::Stamp;
use hearth::{Config, Server};
use serde_json::Value;

pub const SERIAL: &str = "02AA01AC0000SIM1";
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// How often [`wait_until`] looks again.
const POLL: Duration = Duration::from_millis(5);

/// Waits until `ok` holds, failing after [`TIMEOUT`]. For things that announce themselves
/// only by a change of state (a subscribe parked, a file written, a process gone): the one
/// place tests poll. Never a pause "to let something happen": the wait ends at the event.
pub fn wait_until(what: &str, ok: impl FnMut() -> bool) {
    wait_until_within(TIMEOUT, what, ok);
}

/// [`wait_until`] with a deadline of its own (for what is slow by nature, such as a browser
/// starting).
pub fn wait_until_within(limit: Duration, what: &str, ok: impl FnMut() -> bool) {
    assert!(poll_until(limit, ok), "{what}: not within {limit:?}");
}

/// [`wait_until_within`] that reports a missed deadline instead of failing, for a caller that
/// then says better what was missing (the docs' examples compare the output they have).
pub fn poll_until(limit: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !ok() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL);
    }
    true
}

/// A directory under the system temp dir, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        // A random part, so a directory a killed run left behind is never reused.
        let dir = std::env::temp_dir().join(format!(
            "hearth-{tag}-{}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst),
            hearth::util::random::hex(4).unwrap()
        ));
        std::fs::create_dir(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether any thread is measuring the whole process, and how many threads run servers.
/// One test binary holds every test, so a test that counts the process's threads, descriptors
/// or memory ([`alone`]) must not run beside another test's server: every thread that starts
/// one ([`TestServer`], [`start_server`], a fake upstream, the demo) first takes a share of the
/// process ([`share_process`]), held until that test's thread ends (libtest runs each test on a
/// thread of its own).
struct ProcessGate {
    /// Threads holding a share, and whether a test is alone (or waiting to be).
    state: std::sync::Mutex<(Vec<std::thread::ThreadId>, bool)>,
    changed: std::sync::Condvar,
}

static GATE: ProcessGate = ProcessGate {
    state: std::sync::Mutex::new((Vec::new(), false)),
    changed: std::sync::Condvar::new(),
};

/// This thread's share of the process, given back when the thread ends.
struct Share(std::thread::ThreadId);

impl Drop for Share {
    fn drop(&mut self) {
        let mut state = GATE.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0.retain(|t| *t != self.0);
        GATE.changed.notify_all();
    }
}

thread_local! {
    static SHARE: std::cell::RefCell<Option<Share>> = const { std::cell::RefCell::new(None) };
    static ALONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Takes this thread's share of the process (once per thread): waits while a test is alone.
pub fn share_process() {
    if ALONE.with(|a| a.get()) || SHARE.with(|s| s.borrow().is_some()) {
        return;
    }
    let me = std::thread::current().id();
    let mut state = GATE.state.lock().unwrap_or_else(|e| e.into_inner());
    while state.1 {
        state = GATE.changed.wait(state).unwrap_or_else(|e| e.into_inner());
    }
    state.0.push(me);
    drop(state);
    SHARE.with(|s| *s.borrow_mut() = Some(Share(me)));
}

/// The process to this test alone while the guard lives: waits for every other test that runs a
/// server to end, and holds new ones back. For tests that count the process's threads,
/// descriptors or memory.
pub struct Alone(());

pub fn alone() -> Alone {
    let me = std::thread::current().id();
    let mut state = GATE.state.lock().unwrap_or_else(|e| e.into_inner());
    while state.1 {
        state = GATE.changed.wait(state).unwrap_or_else(|e| e.into_inner());
    }
    state.1 = true;
    while state.0.iter().any(|t| *t != me) {
        state = GATE.changed.wait(state).unwrap_or_else(|e| e.into_inner());
    }
    ALONE.with(|a| a.set(true));
    Alone(())
}

impl Drop for Alone {
    fn drop(&mut self) {
        ALONE.with(|a| a.set(false));
        let mut state = GATE.state.lock().unwrap_or_else(|e| e.into_inner());
        state.1 = false;
        GATE.changed.notify_all();
    }
}

/// `Server::start`, after taking this thread's share of the process.
pub fn start_server(config: Config) -> Server {
    share_process();
    Server::start(config).expect("server starts")
}

pub struct TestServer {
    pub server: Option<Server>,
    pub dir: TempDir,
}

impl TestServer {
    pub fn start() -> TestServer {
        TestServer::start_with(|_| {})
    }

    pub fn start_with(adjust: impl FnOnce(&mut Config)) -> TestServer {
        let dir = TempDir::new("srv");
        let mut config = Config::local(dir.path());
        config.api_origin = Some(hearth::config::ApiOrigin::parse("http://127.0.0.1").unwrap());
        adjust(&mut config);
        TestServer {
            server: Some(start_server(config)),
            dir,
        }
    }

    pub fn server(&self) -> &Server {
        self.server.as_ref().expect("running")
    }

    pub fn device(&self) -> SocketAddr {
        self.server().device_addr()
    }

    pub fn control(&self) -> SocketAddr {
        self.server().control_addr()
    }

    /// The origin a simulated thermostat's cloudregisterurl points at (without `/entry`).
    pub fn origin(&self) -> String {
        format!("http://{}", self.device())
    }

    pub fn app(&self) -> &hearth::app::App {
        self.server().app()
    }

    /// A server-side change through the library's one mutation path (pushed to the thermostat).
    pub fn server_change(&self, serial: &str, key: &str, fields: Value) {
        server_change(self.server(), serial, key, fields);
    }

    /// Makes `user` the owner of `serial` (what a claim will do in the control-API issue).
    pub fn set_owner(&self, serial: &str, user: &str) {
        self.app()
            .state()
            .update_accounts(|txn| {
                let now = txn.now_ms();
                txn.push(hearth::state::Op::SetOwner {
                    serial: serial.to_string(),
                    owner: Some(hearth::state::Owner {
                        user: user.to_string(),
                        since_ms: now,
                    }),
                });
                Ok::<_, hearth::store::StoreError>(())
            })
            .unwrap();
    }

    /// Waits until at least `n` subscribes of `serial` are parked in the hub.
    pub fn wait_held(&self, serial: &str, n: usize) {
        wait_until("the subscribe parks", || {
            self.app().hub().subscriptions_of(serial) >= n
        });
    }

    /// Waits until no subscribe of `serial` is held. The notifier forgets a subscribe just
    /// after writing its end, so a client can read the end a moment before that.
    pub fn wait_released(&self, serial: &str) {
        wait_until("the held subscribe is released", || {
            self.app().hub().subscriptions_of(serial) == 0
        });
    }

    pub fn bucket(&self, serial: &str, key: &str) -> Option<hearth::state::Bucket> {
        self.app()
            .state()
            .read_device(serial, |d| d.buckets.get(key).cloned())
            .flatten()
    }

    pub fn stop(mut self) -> TempDir {
        if let Some(s) = self.server.take() {
            s.shutdown();
        }
        std::mem::replace(&mut self.dir, TempDir(PathBuf::new()))
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown();
        }
    }
}

pub fn url(addr: SocketAddr, target: &str) -> Url {
    Url {
        host: addr.ip().to_string(),
        port: Some(addr.port()),
        target: target.to_string(),
    }
}

pub fn basic(serial: &str, password: &str) -> String {
    let raw = format!("d.{serial}.5F3C9A1B:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

/// A server-side change to `server` through the library's one mutation path (pushed to the
/// thermostat).
pub fn server_change(server: &Server, serial: &str, key: &str, fields: Value) {
    let fields = fields.as_object().cloned().unwrap();
    server
        .app()
        .state()
        .update_device(serial, Origin::Server, |txn| {
            txn.merge(key, &fields, Stamp::Always);
            Ok::<_, hearth::store::StoreError>(())
        })
        .unwrap();
}

pub fn get(addr: SocketAddr, target: &str) -> ClientResponse {
    client::request(&url(addr, target), "GET", &[], &[], TIMEOUT).expect("request")
}

pub fn get_as(addr: SocketAddr, target: &str, serial: &str) -> ClientResponse {
    let auth = basic(serial, "pw");
    client::request(
        &url(addr, target),
        "GET",
        &[("Authorization", &auth)],
        &[],
        TIMEOUT,
    )
    .expect("request")
}

/// POST a body as a thermostat (Basic auth for `serial`).
pub fn post_as(addr: SocketAddr, target: &str, serial: &str, body: &[u8]) -> ClientResponse {
    let auth = basic(serial, "pw");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    client::request(&url(addr, target), "POST", &headers, body, TIMEOUT).expect("request")
}

pub fn post_json(addr: SocketAddr, target: &str, serial: &str, body: Value) -> ClientResponse {
    post_as(addr, target, serial, body.to_string().as_bytes())
}

/// [`post_json`] with another password than the `pw` of the other helpers (a simulated
/// thermostat's own, once it has registered: its password is pinned).
pub fn post_json_with_password(
    addr: SocketAddr,
    target: &str,
    serial: &str,
    password: &str,
    body: Value,
) -> ClientResponse {
    let auth = basic(serial, password);
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    client::request(
        &url(addr, target),
        "POST",
        &headers,
        body.to_string().as_bytes(),
        TIMEOUT,
    )
    .expect("request")
}

/// Sends raw bytes and returns everything the server sends back before closing (or timing out).
pub fn raw(addr: SocketAddr, bytes: &[u8], timeout: Duration) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(timeout)).unwrap();
    s.write_all(bytes).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).to_string()
}

/// Whether a thread of this process is blocked writing to a connection accepted on `local` (a
/// server's port): its client stopped reading and the connection's buffers are full. Read from
/// `/proc/self/task/*/syscall`, which gives the system call a sleeping thread is in and its
/// first argument, the descriptor.
pub fn blocked_writing_on(local: SocketAddr) -> bool {
    let accepted: Vec<u64> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|fd| {
            // SAFETY: the descriptor is only asked for its addresses, which fails harmlessly
            // on one that is not a socket or was closed meanwhile.
            let socket = unsafe { std::os::fd::BorrowedFd::borrow_raw(*fd) };
            let ours = rustix::net::getsockname(socket)
                .ok()
                .and_then(|a| SocketAddr::try_from(a).ok());
            ours == Some(local) && matches!(rustix::net::getpeername(socket), Ok(Some(_)))
        })
        .filter_map(|fd| u64::try_from(fd).ok())
        .collect();
    let writes = [
        libc::SYS_write,
        libc::SYS_writev,
        libc::SYS_sendto,
        libc::SYS_sendmsg,
    ]
    .map(i64::from);
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .any(|task| {
            // "running" for a thread that is not asleep in a system call.
            let Ok(line) = std::fs::read_to_string(task.path().join("syscall")) else {
                return false;
            };
            let mut fields = line.split_whitespace();
            let call = fields.next().and_then(|n| n.parse::<i64>().ok());
            let fd = fields
                .next()
                .and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok());
            matches!((call, fd), (Some(c), Some(fd)) if writes.contains(&c) && accepted.contains(&fd))
        })
}

/// A simulated thermostat whose events arrive on the returned channel.
pub fn thermostat(origin: &str, serial: &str) -> (Thermostat, Receiver<Event>) {
    let (tx, rx) = unbounded();
    let observer: hearth::simulator::Observer = Arc::new(move |_serial: &str, e: &Event| {
        let _ = tx.send(e.clone());
    });
    (Thermostat::new(Options::new(origin, serial), observer), rx)
}

/// Waits for the first event matching `pred`, failing after `TIMEOUT`.
pub fn expect_event(rx: &Receiver<Event>, what: &str, pred: impl Fn(&Event) -> bool) -> Event {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(e) if pred(&e) => return e,
            Ok(_) => continue,
            Err(_) => panic!("no {what} event within {TIMEOUT:?}"),
        }
    }
}

/// The journal and snapshot bytes, to prove a bad request changed nothing on disk.
pub fn store_bytes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().to_string(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Asserts the key order of every object in `{"objects":[...]}` text: revision, timestamp,
/// key, then value (if any), checked on the raw text.
pub fn assert_wire_order(text: &str) {
    let doc: Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    for obj in doc["objects"].as_array().expect("objects array") {
        let keys: Vec<&str> = obj
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let expected: &[&str] = if keys.len() == 4 {
            &["object_revision", "object_timestamp", "object_key", "value"]
        } else {
            &["object_revision", "object_timestamp", "object_key"]
        };
        assert_eq!(keys, expected, "key order in {text}");
    }
}

/// A control-API request with a JSON body (as curl would send it).
pub fn call(addr: SocketAddr, method: &str, target: &str, body: &str) -> ClientResponse {
    let headers = [("Content-Type", "application/json")];
    client::request(
        &url(addr, target),
        method,
        &headers,
        body.as_bytes(),
        TIMEOUT,
    )
    .expect("request")
}

/// `DELETE /api/device {"serial"}`: the dashboard's Remove.
pub fn remove_device(addr: SocketAddr, serial: &str) -> ClientResponse {
    let body = serde_json::json!({"serial": serial});
    call(addr, "DELETE", "/api/device", &body.to_string())
}

/// `POST /command` with `{"serial","command","value"}`.
pub fn command(addr: SocketAddr, serial: &str, name: &str, value: Value) -> ClientResponse {
    let body = serde_json::json!({"serial": serial, "command": name, "value": value});
    call(addr, "POST", "/command", &body.to_string())
}

/// A thermostat that has booted (its state is on the server) and holds a subscribe.
pub fn booted_and_held(
    s: &TestServer,
    serial: &str,
) -> (Thermostat, Receiver<Event>, hearth::simulator::Held) {
    let (mut sim, events) = thermostat(&s.origin(), serial);
    sim.boot().unwrap();
    let held = sim.open_subscribe().unwrap();
    s.wait_held(serial, 1);
    (sim, events, held)
}

/// The next pushed chunk as JSON, after checking its key order.
pub fn next_push(held: &mut hearth::simulator::Held) -> (Vec<u8>, Value) {
    let chunk = held.next_chunk().unwrap().expect("a pushed chunk");
    let text = String::from_utf8(chunk.clone()).unwrap();
    assert_wire_order(&text);
    (chunk, serde_json::from_str(&text).unwrap())
}

/// Whether nothing more of `stream` has arrived: a look that does not wait (the peek's 1 ms
/// timeout is the shortest a socket takes), for a test that shows something has not happened
/// yet before it moves the clock to make it happen.
pub fn nothing_arrived(stream: &mut hearth::http::client::ChunkStream) -> bool {
    !stream.wait_readable(Duration::from_millis(1)).unwrap()
}

/// The next event's data on an event stream, skipping comments (`: ...`), parsed the way the
/// Matterbridge plugin does it: split on the blank line, join the `data:` lines.
pub fn next_event(stream: &mut hearth::http::client::ChunkStream) -> Value {
    loop {
        let chunk = stream.next_chunk().unwrap().expect("the stream ended");
        let text = String::from_utf8(chunk).unwrap();
        assert!(text.ends_with("\n\n"), "{text:?}");
        let data: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .collect();
        if !data.is_empty() {
            return serde_json::from_str(&data.join("\n")).unwrap();
        }
    }
}

/// `GET target` (`/api/events...`) opened on `addr` (the control port) as an event stream,
/// its head checked.
pub fn open_events(addr: SocketAddr, target: &str) -> hearth::http::client::ChunkStream {
    let stream = hearth::http::client::ChunkStream::open(
        &url(addr, target),
        "GET",
        &[("Accept", "text/event-stream")],
        &[],
        TIMEOUT,
        false,
    )
    .unwrap();
    assert_eq!(stream.status, 200);
    stream
}

/// Runs the `hearth` binary without the environment's `API_ORIGIN` and `DATA_DIR`; gives
/// whether it succeeded, its standard output and its standard error.
pub fn run_hearth(args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(args)
        .env_remove("API_ORIGIN")
        .env_remove("DATA_DIR")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// The object of `key` in a pushed or answered document (`{"objects": [...]}`).
pub fn object<'a>(doc: &'a Value, key: &str) -> &'a Value {
    doc["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["object_key"] == serde_json::json!(key))
        .unwrap_or_else(|| panic!("{key} not pushed in {doc}"))
}

/// A server on `dir` again, configured as [`TestServer::start`] configures one (a restart).
pub fn restart(dir: &TempDir) -> Server {
    let mut config = Config::local(dir.path());
    config.api_origin = hearth::config::ApiOrigin::parse("http://127.0.0.1").ok();
    start_server(config)
}

/// A server with `REQUIRE_DEVICE_PAIRING` on.
pub fn pairing() -> TestServer {
    TestServer::start_with(|c| c.require_device_pairing = true)
}

/// `shared.<SERIAL>`: the test thermostat's shared bucket's key.
pub fn shared() -> String {
    format!("shared.{SERIAL}")
}

/// `device.<SERIAL>`.
pub fn device() -> String {
    format!("device.{SERIAL}")
}

/// Whether the server has closed `sock` (read to its end within `within`).
pub fn closed_within(sock: &mut TcpStream, within: Duration) -> bool {
    sock.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 1024];
    loop {
        match sock.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}
