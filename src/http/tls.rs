//! HTTPS without tiny_http's `ssl-rustls` feature (which pins the end-of-life rustls 0.20).
//!
//! With `CERT_DIR` set, each port's public socket belongs to a [`TlsFront`]: it accepts
//! connections, runs the TLS handshake with rustls 0.23 (ring), and relays the plaintext to
//! hearth's HTTP listener on a private loopback port, one relay per connection. Everything
//! behind that (handler permits, parked responses, body limits, head deadlines, idle
//! connections) works unchanged on the loopback connection; when either side closes, the relay
//! closes the other. The client's real address is looked up in [`Peers`] by the loopback
//! connection's port (recorded before the relay connects), so the per-address connection cap,
//! logs and rate limits see the client, not 127.0.0.1.
//!
//! Relays are counted per client address (`MAX_CONNECTIONS_PER_CLIENT`) and in all, with the
//! listener's own counting code, before a thread is started, and a handshake must be over within
//! `HEAD_TIMEOUT_SECONDS`: a flood of idle connections from one address costs at most that many
//! threads and cannot starve other clients.
//!
//! A relay costs two threads (one per direction) besides the listener's. That is fine for the
//! control API's few clients; thermostats speak plain HTTP to a LAN server and never use it.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rustls::ServerConnection;

use super::listener::{Counts, Live, log_refusal, take_slot};
use crate::util::clock::Clock;
use crate::util::shutdown::Shutdown as Signal;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

pub const CERT_FILE: &str = "fullchain.pem";
pub const KEY_FILE: &str = "privkey.pem";
/// A relay thread per TLS connection, started and ended as often as connections: sized as a
/// connection thread's stack, for the same reason (glibc's cache of ended threads' stacks).
const RELAY_STACK: usize = super::listener::CONNECTION_STACK;
const BUFFER: usize = 16 * 1024;
/// Relays per front at once, all clients together. Each holds three descriptors (the client's
/// socket, its own to the listener, the listener's end of that) and two threads: both ports'
/// fronts at their bound keep 6,144 descriptors, within the systemd unit's
/// `LimitNOFILE=8192`.
pub const MAX_RELAYS: usize = 1024;
/// Writes to a client that stopped reading give up after this long (as without TLS).
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// A certificate or key that could not be used; names the file.
#[derive(Debug)]
pub struct TlsError {
    pub path: PathBuf,
    pub why: String,
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.why)
    }
}

/// The server's TLS settings from `<dir>/fullchain.pem` and `<dir>/privkey.pem` (a PKCS#8,
/// PKCS#1 RSA or SEC1 EC key).
pub fn load_config(dir: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let cert_path = dir.join(CERT_FILE);
    let key_path = dir.join(KEY_FILE);
    let err = |path: &Path, why: String| TlsError {
        path: path.to_path_buf(),
        why,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert_path)
        .map_err(|e| err(&cert_path, pem_problem(e)))?
        .collect::<Result<_, _>>()
        .map_err(|e| err(&cert_path, pem_problem(e)))?;
    if certs.is_empty() {
        return Err(err(&cert_path, "holds no certificate".into()));
    }
    let key =
        PrivateKeyDer::from_pem_file(&key_path).map_err(|e| err(&key_path, pem_problem(e)))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| err(&cert_path, e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| err(&key_path, format!("does not fit the certificate: {e}")))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn pem_problem(e: rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error;
    match e {
        Error::Io(io) => io.to_string(),
        Error::NoItemsFound => "holds no PEM item of the expected kind".into(),
        other => format!("is not valid PEM ({other:?})"),
    }
}

/// Real client addresses of one front's relayed connections, by the loopback port each relay
/// connected from (unique among connections to the one inner port the front relays to).
#[derive(Debug, Default)]
pub struct Peers(Mutex<HashMap<u16, SocketAddr>>);

impl Peers {
    /// The client behind a loopback connection from `relay`, if it is one of ours.
    pub fn client_of(&self, relay: SocketAddr) -> Option<SocketAddr> {
        relay
            .ip()
            .is_loopback()
            .then(|| self.0.lock().get(&relay.port()).copied())
            .flatten()
    }

    /// Records `client` behind `relay_port` until the returned entry is dropped.
    fn enter(&self, relay_port: u16, client: SocketAddr) -> PeerEntry<'_> {
        self.0.lock().insert(relay_port, client);
        PeerEntry(self, relay_port)
    }
}

struct PeerEntry<'a>(&'a Peers, u16);

impl Drop for PeerEntry<'_> {
    fn drop(&mut self) {
        self.0.0.lock().remove(&self.1);
    }
}

/// The client sockets of handshakes under way, shut down when the server stops: a client that
/// never finishes its handshake would otherwise keep its relay (and the stop, which waits for
/// relays) for the handshake's whole deadline.
#[derive(Default)]
struct Handshakes {
    sockets: Mutex<HashMap<u64, Arc<TcpStream>>>,
    next_id: AtomicU64,
}

impl Handshakes {
    /// Records `sock` until the returned entry is dropped.
    fn enter(&self, sock: &Arc<TcpStream>) -> HandshakeEntry<'_> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.sockets.lock().insert(id, Arc::clone(sock));
        HandshakeEntry(self, id)
    }

    fn end_all(&self) {
        for sock in self.sockets.lock().values() {
            let _ = sock.shutdown(Shutdown::Both);
        }
    }
}

/// What a relay's handshake needs: where it is recorded, the signal, its deadline.
struct Handshake<'a> {
    under_way: &'a Handshakes,
    shutdown: &'a Signal,
    timeout: Duration,
}

struct HandshakeEntry<'a>(&'a Handshakes, u64);

impl Drop for HandshakeEntry<'_> {
    fn drop(&mut self) {
        self.0.sockets.lock().remove(&self.1);
    }
}

/// A TLS front's bounds: `handshake_timeout` for a client's handshake, `per_client` relays per
/// client address; `clock` paces the log of refusals.
pub struct FrontLimits {
    pub handshake_timeout: Duration,
    pub per_client: usize,
    pub clock: Clock,
}

pub struct TlsFront {
    /// Until [`TlsFront::join_accept`].
    accept: Option<JoinHandle<()>>,
    /// The relay threads running.
    relays: Arc<Live>,
}

impl TlsFront {
    /// Accepts TLS on `public` and relays each connection to `inner` (the HTTP listener). A client
    /// that has not finished its handshake within `handshake_timeout` is dropped. Relays are
    /// counted per client address (at most `per_client`) and in all (at most
    /// [`MAX_RELAYS`]) before their thread starts; a connection over a count is closed at
    /// once (a refusal without TLS would mean nothing to the client). `clock` paces the log of
    /// refusals. It accepts until `shutdown` is triggered.
    pub fn start(
        name: &'static str,
        public: TcpListener,
        inner: SocketAddr,
        config: Arc<rustls::ServerConfig>,
        peers: Arc<Peers>,
        limits: FrontLimits,
        shutdown: Signal,
    ) -> io::Result<TlsFront> {
        let FrontLimits {
            handshake_timeout,
            per_client,
            clock,
        } = limits;
        let listener = public.try_clone()?;
        // shutdown() on a listening socket makes a blocked accept() fail at once (Linux).
        shutdown.on_trigger(move || {
            let _ = rustix::net::shutdown(&listener, rustix::net::Shutdown::Both);
        });
        let relays = Arc::new(Live::default());
        let handshakes = Arc::new(Handshakes::default());
        shutdown.on_trigger({
            let handshakes = Arc::clone(&handshakes);
            move || handshakes.end_all()
        });
        let accept = thread::Builder::new()
            .name(format!("{name}-tls"))
            .stack_size(RELAY_STACK)
            .spawn({
                let relays = Arc::clone(&relays);
                let shutdown = shutdown.clone();
                move || {
                    let counts = Counts::default();
                    loop {
                        let accepted = public.accept();
                        if shutdown.is_triggered() {
                            return;
                        }
                        let Ok((client, peer)) = accepted else {
                            // EMFILE and the like: back off rather than spin; the connection
                            // stays in the backlog until descriptors free up.
                            thread::sleep(Duration::from_millis(100));
                            continue;
                        };
                        let slot = match take_slot(
                            &counts,
                            crate::util::client_key(peer.ip()),
                            per_client,
                            MAX_RELAYS,
                        ) {
                            Ok(slot) => slot,
                            Err(why) => {
                                log_refusal(&counts, &clock, name, peer, why);
                                drop(client);
                                continue;
                            }
                        };
                        let (config, peers) = (Arc::clone(&config), Arc::clone(&peers));
                        let (handshakes, shutdown) = (Arc::clone(&handshakes), shutdown.clone());
                        // Dropped with the closure: when the relay ends, or if it cannot start.
                        let running = relays.enter();
                        let spawned = thread::Builder::new()
                            .name("tls-relay".into())
                            .stack_size(RELAY_STACK)
                            .spawn(move || {
                                // Counted until the relay (both directions) is over.
                                let (_slot, _running) = (slot, running);
                                let handshake = Handshake {
                                    under_way: &handshakes,
                                    shutdown: &shutdown,
                                    timeout: handshake_timeout,
                                };
                                if let Err(e) = relay(client, inner, config, &peers, handshake) {
                                    log::debug!("TLS connection ended: {e}");
                                }
                            });
                        if let Err(e) = spawned {
                            log::warn!("could not start a TLS relay: {e}");
                        }
                    }
                }
            })?;
        Ok(TlsFront {
            accept: Some(accept),
            relays,
        })
    }

    /// After the shutdown signal: waits for the accept loop to end. Relays already running
    /// end with their connections: see [`TlsFront::wait_relays`].
    pub fn join_accept(&mut self) {
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }

    /// Waits for every relay thread to end, which each does when its connection ends: the HTTP
    /// listener closes idle ones when it stops, the hub and the event streams end held ones
    /// when they stop, and the shutdown signal ends handshakes under way.
    pub fn wait_relays(self) {
        self.relays.wait_none();
    }
}

/// One client: handshake, then relay both ways until either side closes.
fn relay(
    client: TcpStream,
    inner: SocketAddr,
    config: Arc<rustls::ServerConfig>,
    peers: &Peers,
    handshake: Handshake<'_>,
) -> io::Result<()> {
    let peer = client.peer_addr()?;
    let mut tls = ServerConnection::new(config).map_err(io::Error::other)?;
    let sock = Arc::new(client);
    {
        let _entry = handshake.under_way.enter(&sock);
        if handshake.shutdown.is_triggered() {
            return Err(io::Error::other("the server is stopping"));
        }
        complete_handshake(&mut tls, &sock, handshake.timeout)?;
    }
    // From here idle connections are the listener's to time out; a held response
    // may be silent for minutes. Writes to a client that stops reading still give up.
    sock.set_read_timeout(None)?;
    // The client is recorded under the relay's port before it connects, so the listener
    // counts and serves the connection as the client's from its accept on.
    let (mut backend, _entry) = connect_as(inner, peers, peer)?;
    backend.set_nodelay(true)?;
    // A TLS 1.3 client may send its request right behind its Finished message: rustls has
    // decrypted it already.
    let early = plaintext(&mut tls)?;
    backend.write_all(&early)?;
    let tls = Arc::new(Mutex::new(tls));
    let outbound = {
        let (tls, sock, backend) = (Arc::clone(&tls), sock.try_clone()?, backend.try_clone()?);
        thread::Builder::new()
            .name("tls-relay-out".into())
            .stack_size(RELAY_STACK)
            .spawn(move || server_to_client(&tls, sock, backend))?
    };
    let result = client_to_server(&tls, &sock, &backend);
    // The client is done sending (or gone): the listener still answers what it has, then closes,
    // which ends the other direction. A broken connection ends both at once.
    let _ = backend.shutdown(if result.is_ok() {
        Shutdown::Write
    } else {
        Shutdown::Both
    });
    let _ = outbound.join();
    let _ = sock.shutdown(Shutdown::Both);
    result
}

/// A connection to `inner` from a loopback port recorded in `peers` as `client`'s first.
fn connect_as(
    inner: SocketAddr,
    peers: &Peers,
    client: SocketAddr,
) -> io::Result<(TcpStream, PeerEntry<'_>)> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType};
    let family = if inner.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let socket = rustix::net::socket_with(family, SocketType::STREAM, SocketFlags::CLOEXEC, None)?;
    rustix::net::bind(&socket, &SocketAddr::new(inner.ip(), 0))?;
    let local = rustix::net::getsockname(&socket)?;
    let port = SocketAddr::try_from(local)
        .map_err(|_| io::Error::other("no local address"))?
        .port();
    let entry = peers.enter(port, client);
    rustix::net::connect(&socket, &inner)?;
    Ok((TcpStream::from(socket), entry))
}

/// The handshake, which must be over within `timeout` in all (not per read).
fn complete_handshake(
    tls: &mut ServerConnection,
    sock: &TcpStream,
    timeout: Duration,
) -> io::Result<()> {
    let deadline = Instant::now() + timeout;
    let mut io = sock;
    while tls.is_handshaking() {
        let left = deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| io::Error::new(ErrorKind::TimedOut, "TLS handshake too slow"))?;
        sock.set_read_timeout(Some(left))?;
        sock.set_write_timeout(Some(left))?;
        tls.complete_io(&mut io)?;
    }
    sock.set_write_timeout(Some(WRITE_TIMEOUT))?;
    Ok(())
}

/// Plaintext rustls has decrypted and not yet handed out.
fn plaintext(tls: &mut ServerConnection) -> io::Result<Vec<u8>> {
    let mut plain = Vec::new();
    match tls.reader().read_to_end(&mut plain) {
        Ok(_) => Ok(plain),
        Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(plain),
        Err(e) => Err(e),
    }
}

/// Decrypts what the client sends and passes it on to the listener.
fn client_to_server(
    tls: &Mutex<ServerConnection>,
    sock: &TcpStream,
    mut backend: &TcpStream,
) -> io::Result<()> {
    let mut buf = vec![0u8; BUFFER];
    let mut plain = Vec::new();
    loop {
        let n = match (&*sock).read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let mut closed = false;
        {
            // TLS records go out under the lock, so the two directions cannot interleave
            // them; the plaintext goes to the listener after it is released.
            let mut tls = tls.lock();
            let mut input = &buf[..n];
            while !input.is_empty() && !closed {
                tls.read_tls(&mut input)?;
                let state = tls.process_new_packets();
                // Alerts (and any handshake bytes) go out before an error is reported.
                while tls.wants_write() {
                    tls.write_tls(&mut &*sock)?;
                }
                let state = state.map_err(io::Error::other)?;
                plain.append(&mut plaintext(&mut tls)?);
                closed = state.peer_has_closed();
            }
        }
        backend.write_all(&plain)?;
        plain.clear();
        if closed {
            return Ok(());
        }
    }
}

/// Encrypts the listener's answers for the client; sends close_notify when it closes.
fn server_to_client(tls: &Mutex<ServerConnection>, sock: TcpStream, mut backend: TcpStream) {
    let mut buf = vec![0u8; BUFFER];
    loop {
        let n = match backend.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => 0,
        };
        let mut tls = tls.lock();
        if n == 0 {
            tls.send_close_notify();
        } else if tls.writer().write_all(&buf[..n]).is_err() {
            break;
        }
        let mut failed = false;
        while tls.wants_write() {
            if tls.write_tls(&mut &sock).is_err() {
                failed = true;
                break;
            }
        }
        if n == 0 || failed {
            break;
        }
    }
    let _ = sock.shutdown(Shutdown::Both);
}
