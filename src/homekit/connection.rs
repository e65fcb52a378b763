//! One controller connection: requests read in plain HTTP until pair-verify completes, then in
//! encrypted frames; each answered in order by the one writer the connection has, which the
//! event thread shares (an EVENT never splits an answer, and the frame counters stay in
//! step).
//!
//! Routes: `/pair-setup`, `/pair-verify` and `/identify` (unpaired accessories only) before
//! verification; `/pairings`, `/accessories` and `/characteristics` after it, 470 before. A
//! request a web page sent (`Origin`, `Sec-Fetch-Site`) gets 403 and the connection closes.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown as Direction, TcpStream};
use std::panic::{self, AssertUnwindSafe};
use std::time::Instant;

use parking_lot::Mutex;

use super::http::{self, HAP_JSON, Incomplete, Request, TLV8};
use super::server::Shared;
use super::{Reply, Sent, Subscriptions};
use crate::hap::crypto::TAG_LEN;
use crate::hap::pair_verify::{PairVerify, Verified};
use crate::hap::pairings;
use crate::hap::session::Session;
use crate::hap::tlv::{Tlv, TlvError, error, kind};

/// HAP's status bodies for the transport's own refusals.
const NOT_AUTHORIZED: &[u8] = br#"{"status":-70401}"#;
const NO_SUCH_RESOURCE: &[u8] = br#"{"status":-70409}"#;
const FAILED: &[u8] = br#"{"status":-70402}"#;

/// A connection as the listener and the event thread see it.
pub(super) struct Conn {
    pub id: u64,
    /// For closing it from outside (shutdown, a removed pairing).
    pub stream: TcpStream,
    out: Mutex<Writer>,
    controller: Mutex<Option<String>>,
    subscriptions: Mutex<(Subscriptions, Sent)>,
}

/// The one writer: the socket and, once verified, the session (whose receive side the reader
/// uses under the same lock).
struct Writer {
    stream: TcpStream,
    session: Option<Session>,
}

/// An answer to write, and what to do after it is written.
struct Answer {
    bytes: Vec<u8>,
    verified: Option<Verified>,
    close: bool,
}

fn answer(status: u16, content_type: &str, body: &[u8]) -> Answer {
    Answer {
        bytes: http::message("HTTP/1.1", status, content_type, body),
        verified: None,
        close: false,
    }
}

fn tlv(status: u16, body: &Tlv) -> Answer {
    answer(status, TLV8, &body.encode())
}

fn reply(r: Reply) -> Answer {
    answer(r.status, HAP_JSON, &r.body)
}

impl Conn {
    pub fn new(id: u64, stream: TcpStream) -> io::Result<Conn> {
        Ok(Conn {
            id,
            out: Mutex::new(Writer {
                stream: stream.try_clone()?,
                session: None,
            }),
            stream,
            controller: Mutex::new(None),
            subscriptions: Mutex::new(Default::default()),
        })
    }

    /// The verified controller's pairing id.
    pub fn controller(&self) -> Option<String> {
        self.controller.lock().clone()
    }

    fn write(&self, bytes: &[u8]) -> io::Result<()> {
        let mut out = self.out.lock();
        let Writer { stream, session } = &mut *out;
        match session {
            Some(session) => stream.write_all(&session.seal(bytes)),
            None => stream.write_all(bytes),
        }
    }
}

/// Serves the connection until it closes, errs, passes a deadline or the listener stops.
pub(super) fn serve(shared: &Shared, conn: &Conn, mut stream: TcpStream, client: IpAddr) {
    let deadline = Instant::now() + shared.limits.unverified;
    let mut buf = Vec::new();
    let mut verify = PairVerify::Idle;
    loop {
        let request = loop {
            match http::parse(&mut buf, shared.limits.head, shared.limits.body) {
                Ok(request) => break request,
                Err(Incomplete::More) => {
                    if shared.shutdown.is_triggered()
                        || fill(shared, conn, &mut stream, &mut buf, deadline).is_err()
                    {
                        return;
                    }
                }
                Err(Incomplete::Refused(status, why)) => {
                    log::debug!("HomeKit: a request refused: {why}");
                    let body = format!(r#"{{"status":-70402,"error":"{why}"}}"#);
                    let _ = conn.write(&http::message(
                        "HTTP/1.1",
                        status,
                        HAP_JSON,
                        body.as_bytes(),
                    ));
                    return;
                }
            }
        };
        let answer = panic::catch_unwind(AssertUnwindSafe(|| {
            route(shared, conn, &mut verify, &request)
        }))
        .unwrap_or_else(|_| {
            log::error!(
                "HomeKit: a handler panicked on {} {}",
                crate::util::logged(&request.method),
                crate::util::logged(&request.path)
            );
            Answer {
                close: true,
                ..answer(500, HAP_JSON, FAILED)
            }
        });
        // Bytes after M3 in the same read were sent in plain where only encrypted frames may
        // follow: served, they would pass as the verified controller's (someone on the path
        // appending a request to a real controller's pair-verify). The exchange is dropped.
        if answer.verified.is_some() && !buf.is_empty() {
            log::warn!("HomeKit: plain bytes after pair-verify's M3; connection closed");
            return;
        }
        if conn.write(&answer.bytes).is_err() || answer.close {
            return;
        }
        if let Some(verified) = answer.verified {
            // The answer to M3 went out in plain; all after it is encrypted.
            conn.out.lock().session = Some(Session::new(&verified));
            *conn.controller.lock() = Some(verified.controller);
            super::server::verified(shared, client);
        }
    }
}

/// Reads more of the request: raw bytes before verification, one decrypted frame after.
fn fill(
    shared: &Shared,
    conn: &Conn,
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    deadline: Instant,
) -> io::Result<()> {
    let verified = conn.controller.lock().is_some();
    let timeout = if verified {
        shared.limits.idle
    } else {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or(io::ErrorKind::TimedOut)?
    };
    stream.set_read_timeout(Some(timeout))?;
    if !verified {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
        return Ok(());
    }
    let mut header = [0u8; 2];
    stream.read_exact(&mut header)?;
    let len = Session::frame_len(header).ok_or(io::ErrorKind::InvalidData)?;
    let mut sealed = vec![0u8; len + TAG_LEN];
    stream.read_exact(&mut sealed)?;
    let mut out = conn.out.lock();
    let session = out.session.as_mut().ok_or(io::ErrorKind::InvalidData)?;
    let plain = session
        .open(header, &sealed)
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
    buf.extend_from_slice(&plain);
    Ok(())
}

fn route(shared: &Shared, conn: &Conn, verify: &mut PairVerify, req: &Request) -> Answer {
    if req.from_browser {
        // A web page on the LAN (or one rebinding a name to it) must not spend the accessory's
        // pair-setup tries nor reach anything else: refused, and the connection closed.
        log::warn!("HomeKit: a request from a web page refused");
        return Answer {
            close: true,
            ..answer(403, HAP_JSON, NOT_AUTHORIZED)
        };
    }
    // Looked up on every request: a pairing removed while this session was being verified
    // (before the session took its controller) ends here too.
    let controller = conn
        .controller()
        .filter(|c| shared.identity.pairing(c).is_some());
    let method = req.method.as_str();
    match (req.path.as_str(), method) {
        ("/pair-setup", "POST") => match Tlv::decode(&req.body) {
            Ok(request) => tlv(
                200,
                &shared.setup.handle(conn.id, &shared.identity, &request),
            ),
            Err(_) => tlv(400, &error(2, TlvError::Unknown)),
        },
        ("/pair-verify", "POST") => {
            let Ok(request) = Tlv::decode(&req.body) else {
                return tlv(400, &error(2, TlvError::Unknown));
            };
            if controller.is_some() {
                // One verification per connection: a second would reset the counters.
                let step = request.byte(kind::STATE).unwrap_or(0);
                return tlv(400, &error(step.saturating_add(1), TlvError::Unknown));
            }
            let (reply, verified) = verify.handle(&shared.identity, &request);
            Answer {
                verified,
                ..tlv(200, &reply)
            }
        }
        ("/identify", "POST") => {
            if shared.identity.is_paired() {
                answer(400, HAP_JSON, NOT_AUTHORIZED)
            } else {
                log::info!("HomeKit: identify");
                answer(204, HAP_JSON, b"")
            }
        }
        ("/pairings", "POST") => {
            let Some(caller) = controller else {
                return answer(470, HAP_JSON, NOT_AUTHORIZED);
            };
            match Tlv::decode(&req.body) {
                Ok(request) => {
                    let outcome = pairings::handle(&shared.identity, &caller, &request);
                    tlv(200, &outcome.reply)
                }
                Err(_) => tlv(400, &error(2, TlvError::Unknown)),
            }
        }
        ("/accessories", "GET") if controller.is_some() => reply(shared.attributes.accessories()),
        ("/characteristics", "GET") if controller.is_some() => {
            let subs = conn.subscriptions.lock();
            reply(shared.attributes.read(&req.query, &subs.0))
        }
        ("/characteristics", "PUT") if controller.is_some() => {
            // Written on a copy: a write commits (durably) up to hundreds of values, and the
            // event thread must not wait for it to send other controllers their events.
            let (mut subscriptions, mut sent) = conn.subscriptions.lock().clone();
            let answer = reply(
                shared
                    .attributes
                    .write(&req.body, &mut subscriptions, &mut sent),
            );
            *conn.subscriptions.lock() = (subscriptions, sent);
            answer
        }
        ("/accessories" | "/characteristics", _) if controller.is_none() => {
            answer(470, HAP_JSON, NOT_AUTHORIZED)
        }
        ("/pair-setup" | "/pair-verify" | "/identify" | "/pairings" | "/accessories", _)
        | ("/characteristics", _) => answer(405, HAP_JSON, NO_SUCH_RESOURCE),
        _ => answer(404, HAP_JSON, NO_SUCH_RESOURCE),
    }
}

/// Sends `conn` an EVENT if something it subscribed to changed; a connection that cannot take
/// it is closed.
pub(super) fn send_event(shared: &Shared, conn: &Conn) {
    if conn.controller.lock().is_none() {
        return;
    }
    let body = {
        let mut subs = conn.subscriptions.lock();
        let (subscriptions, sent) = &mut *subs;
        if subscriptions.is_empty() {
            return;
        }
        shared.attributes.changed(subscriptions, sent)
    };
    if let Some(body) = body {
        if conn
            .write(&http::message("EVENT/1.0", 200, HAP_JSON, &body))
            .is_err()
        {
            let _ = conn.stream.shutdown(Direction::Both);
        }
    }
}
