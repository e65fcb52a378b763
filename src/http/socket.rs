//! Reaching the socket behind a tiny_http request. tiny_http 0.12 hides it, but a few things
//! need it (shutting down a connection whose body never arrives, refusing a huge body, and
//! releasing tiny_http's thread once a response is parked), so we find our descriptor by its
//! addresses in `/proc/self/fd`. That costs a scan of the open descriptors once per held
//! subscribe: one system call each (`getpeername`; the one whose peer matches is then checked
//! in full). It took about a millisecond with 1,000 thermostats connected when it was two.
//!
//! The descriptors are asked about through rustix (`getpeername`, `getsockname`,
//! `getsockopt`), which on a descriptor that is not a socket just fail, so a file is never
//! treated as a socket; whatever acts on a connection acts on our own duplicate, checked again
//! after it was made.

use std::fs;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::{AsFd, BorrowedFd, RawFd};
use std::time::Duration;

use rustix::net::{SocketType, sockopt};

/// This process's open descriptors, as listed when called (empty if `/proc` is unreadable).
pub fn open_descriptors() -> Vec<RawFd> {
    let Ok(entries) = fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
        .collect()
}

/// Runs `f` on the descriptor numbered `fd`, found in `/proc/self/fd`.
pub fn with_descriptor<R>(fd: RawFd, f: impl FnOnce(BorrowedFd<'_>) -> R) -> R {
    // SAFETY: `fd` was listed open in /proc/self/fd, and the borrow does not outlive `f`. If
    // another thread closes it meanwhile (and the number is reused), the calls `f` makes on it
    // (rustix's getpeername, getsockname, getsockopt, a non-blocking peek that consumes
    // nothing, dup) touch only their own buffers and report on or copy whatever the number
    // then refers to; nothing here closes, consumes from or writes through it, and every
    // result is checked again on our own duplicate ([`connection`]) before anything acts on a
    // connection. (Closing a duplicate of a reused number would drop that file's fcntl record
    // locks; hearth takes none, its one lock is flock's, which a duplicate's close keeps.)
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    f(borrowed)
}

/// The peer of a connected IP socket; `None` for anything else.
fn peer(fd: BorrowedFd<'_>) -> Option<SocketAddr> {
    SocketAddr::try_from(rustix::net::getpeername(fd).ok()??).ok()
}

/// The peer and our local port of a connected TCP socket; `None` for anything else.
pub fn addresses(fd: BorrowedFd<'_>) -> Option<(SocketAddr, u16)> {
    let peer = peer(fd)?;
    let local = SocketAddr::try_from(rustix::net::getsockname(fd).ok()?).ok()?;
    let stream = sockopt::socket_type(fd).ok()? == SocketType::STREAM;
    stream.then_some((peer, local.port()))
}

/// Our own duplicate of the descriptor `fd` if it is (still) the connection from `peer` on
/// `local_port`.
pub fn connection(fd: RawFd, peer: SocketAddr, local_port: u16) -> Option<TcpStream> {
    let own = with_descriptor(fd, |b| b.try_clone_to_owned()).ok()?;
    (addresses(own.as_fd()) == Some((peer, local_port))).then(|| TcpStream::from(own))
}

/// Our own duplicate of the TCP socket connected to `peer` on `local_port`.
pub fn find_socket(peer: SocketAddr, local_port: u16) -> Option<TcpStream> {
    // Only a descriptor with that peer is looked at further.
    open_descriptors().into_iter().find_map(|fd| {
        let candidate = with_descriptor(fd, self::peer) == Some(peer);
        candidate
            .then(|| connection(fd, peer, local_port))
            .flatten()
    })
}

/// How long a write to a parked connection (a held subscribe, an event stream) may block
/// before the connection is given up. Pushes are small and the kernel buffers a few hundred
/// KB, so a write blocks only when the client has stopped reading altogether.
pub const PARKED_SEND_TIMEOUT: Duration = Duration::from_secs(2);

/// Readies the connection from `peer` on `local_port`, whose response is about to be parked
/// (a held subscribe, an event stream; both are sent with `Connection: close`, so the client
/// sends nothing more on it):
/// - tiny_http stops reading it. Its thread for that connection, blocked reading for a next
///   request, sees the end of input and goes back to its pool, so a held connection costs a
///   socket and the parked writer rather than a thread (about 18 KB of stack and buffers
///   each). Bytes already received (a request pipelined with the subscribe) are still read.
/// - Writes give up after [`PARKED_SEND_TIMEOUT`] rather than the listener's 10 s, so a
///   client that stops reading is dropped soon and holds up the thread writing to it briefly.
///
/// Call it while holding the response's writer, so the connection is alive.
pub fn park(peer: SocketAddr, local_port: u16) {
    let Some(own) = find_socket(peer, local_port) else {
        return;
    };
    if let Err(e) = own.shutdown(Shutdown::Read) {
        log::debug!("could not stop reading the connection from {peer}: {e}");
    }
    // A socket option: it holds for every descriptor of the connection, tiny_http's included.
    if let Err(e) = own.set_write_timeout(Some(PARKED_SEND_TIMEOUT)) {
        log::debug!("could not shorten the send timeout to {peer}: {e}");
    }
}
