//! HTTPS inside the edge. With `CERT_DIR`, a port's listener hands each connection's thread a
//! TLS [`Stream`] over the accepted socket (rustls 0.23, ring): the thread does the handshake
//! within the head's deadline and then reads requests and writes answers through it, exactly as
//! it does in plain text, so the client's address, the admission, every deadline and the
//! parked replies are the same with TLS or without. No relay, no second socket: one
//! descriptor and, while it is served, one thread per connection.

use std::fmt;
use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rustls::ServerConnection;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

pub const CERT_FILE: &str = "fullchain.pem";
pub const KEY_FILE: &str = "privkey.pem";

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

/// A connection's bytes: its socket, or TLS over it. A handle: the thread that reads the
/// connection and the worker that writes its answer (or a parked reply's writer) each hold
/// one; TLS's state is shared under a lock, never held while waiting for the client. Reads
/// wait until a deadline at most; writes wait as the socket's send timeout says. When the last
/// handle goes, a TLS client is told the connection ends (close_notify), so it can tell an
/// answer's end from a cut.
#[derive(Clone)]
pub struct Stream(Arc<Shared>);

struct Shared {
    socket: Arc<TcpStream>,
    tls: Option<Mutex<ServerConnection>>,
}

/// Bytes asked of the socket at a time when TLS needs more.
const TLS_READ: usize = 4096;

impl Stream {
    /// The socket's own bytes.
    pub fn plain(socket: Arc<TcpStream>) -> Stream {
        Stream(Arc::new(Shared { socket, tls: None }))
    }

    /// TLS over `socket`, as `config` says; the handshake is [`Stream::handshake`]'s.
    pub fn tls(socket: Arc<TcpStream>, config: Arc<rustls::ServerConfig>) -> io::Result<Stream> {
        let conn = ServerConnection::new(config).map_err(io::Error::other)?;
        Ok(Stream(Arc::new(Shared {
            socket,
            tls: Some(Mutex::new(conn)),
        })))
    }

    pub fn socket(&self) -> &Arc<TcpStream> {
        &self.0.socket
    }

    /// Completes a TLS handshake by `deadline` (in all, not per read); then writes wait
    /// `send_timeout` at most. Nothing to do in plain text.
    pub fn handshake(&self, deadline: Instant, send_timeout: Duration) -> io::Result<()> {
        let Some(tls) = &self.0.tls else {
            return Ok(());
        };
        let socket = &self.0.socket;
        let mut conn = tls.lock();
        let mut io: &TcpStream = socket;
        while conn.is_handshaking() {
            let left = deadline
                .checked_duration_since(Instant::now())
                .filter(|d| !d.is_zero())
                .ok_or_else(|| io::Error::new(ErrorKind::TimedOut, "TLS handshake too slow"))?;
            socket.set_read_timeout(Some(left))?;
            socket.set_write_timeout(Some(left))?;
            conn.complete_io(&mut io)?;
        }
        socket.set_write_timeout(Some(send_timeout))?;
        // Session tickets, if any, go out now.
        while conn.wants_write() {
            conn.write_tls(&mut io)?;
        }
        Ok(())
    }

    /// One read, waiting until `deadline` at most: `Ok(0)` when the client closed (with or
    /// without TLS's close_notify); a missed deadline is `ErrorKind::TimedOut`. One thread
    /// reads a connection.
    pub fn read_by(&self, out: &mut [u8], deadline: Instant) -> io::Result<usize> {
        let Some(tls) = &self.0.tls else {
            return super::head::read_by(&self.0.socket, out, deadline);
        };
        let mut raw = [0u8; TLS_READ];
        loop {
            match tls.lock().reader().read(out) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            // The lock is not held while waiting: the worker may be writing an answer.
            let n = match super::head::read_by(&self.0.socket, &mut raw, deadline) {
                Ok(0) => return Ok(0),
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let mut conn = tls.lock();
            let mut records = &raw[..n];
            let mut io: &TcpStream = &self.0.socket;
            while !records.is_empty() {
                if conn.read_tls(&mut records)? == 0 {
                    return Err(io::Error::other("TLS input not taken"));
                }
                let state = conn.process_new_packets();
                // An alert (or a key update) goes out before an error is reported.
                while conn.wants_write() {
                    conn.write_tls(&mut io)?;
                }
                state.map_err(io::Error::other)?;
            }
        }
    }

    /// Writes all of `bytes` (encrypted, with TLS).
    pub fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        let Some(tls) = &self.0.tls else {
            return (&*self.0.socket).write_all(bytes);
        };
        let mut conn = tls.lock();
        let mut io: &TcpStream = &self.0.socket;
        let mut rest = bytes;
        while !rest.is_empty() {
            let n = conn.writer().write(rest)?;
            rest = &rest[n..];
            while conn.wants_write() {
                conn.write_tls(&mut io)?;
            }
        }
        Ok(())
    }

    /// A writer over this stream, for a parked reply.
    pub fn writer(&self) -> Writer {
        Writer(self.clone())
    }
}

/// A [`Stream`] as `io::Write`.
pub struct Writer(Stream);

impl Write for Writer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Shared {
    /// TLS's close_notify, without waiting for a client that does not read; nothing in plain
    /// text, or before the handshake is over (such a client is just dropped).
    fn drop(&mut self) {
        let Some(tls) = &self.tls else {
            return;
        };
        let mut conn = tls.lock();
        if conn.is_handshaking() {
            return;
        }
        conn.send_close_notify();
        let _ = self.socket.set_nonblocking(true);
        let mut io: &TcpStream = &self.socket;
        while conn.wants_write() {
            if conn.write_tls(&mut io).is_err() {
                break;
            }
        }
    }
}

/// A TLS client that trusts exactly one certificate, the server's own (`CERT_DIR`'s first):
/// the watchdog's self-probe of a port that speaks TLS. The name it connects to is not
/// checked, since it connects to itself by address.
pub fn self_probe(dir: &Path) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let cert_path = dir.join(CERT_FILE);
    let cert = CertificateDer::pem_file_iter(&cert_path)
        .and_then(|mut certs| certs.next().transpose())
        .map_err(|e| TlsError {
            path: cert_path.clone(),
            why: pem_problem(e),
        })?
        .ok_or_else(|| TlsError {
            path: cert_path.clone(),
            why: "holds no certificate".into(),
        })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let pinned = Arc::new(Pinned {
        cert,
        provider: Arc::clone(&provider),
    });
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError {
            path: cert_path,
            why: e.to_string(),
        })?
        .dangerous()
        .with_custom_certificate_verifier(pinned)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Trusts the one certificate it holds.
#[derive(Debug)]
struct Pinned {
    cert: CertificateDer<'static>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl rustls::client::danger::ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.cert.as_ref() {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// `GET /health` over TLS to `addr` with `config` ([`self_probe`]): the status, or why there
/// was none within `timeout` per step.
pub fn health(
    addr: std::net::SocketAddr,
    config: &Arc<rustls::ClientConfig>,
    timeout: Duration,
) -> Result<u16, String> {
    let sock = TcpStream::connect_timeout(&addr, timeout).map_err(|e| e.to_string())?;
    sock.set_read_timeout(Some(timeout))
        .and_then(|()| sock.set_write_timeout(Some(timeout)))
        .map_err(|e| e.to_string())?;
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    let conn =
        rustls::ClientConnection::new(Arc::clone(config), name).map_err(|e| e.to_string())?;
    let mut tls = rustls::StreamOwned::new(conn, sock);
    tls.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while !answer.windows(2).any(|w| w == b"\r\n") {
        match tls.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) => return Err(e.to_string()),
        }
    }
    let text = String::from_utf8_lossy(&answer);
    text.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("not an HTTP answer: {text:?}"))
}
