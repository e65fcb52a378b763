//! Reaching the socket behind a tiny_http request. tiny_http 0.12 hides it, but a few things
//! need it (shutting down a connection whose body never arrives, refusing a huge body, and
//! releasing tiny_http's thread once a response is parked), so we find our descriptor by its
//! addresses in `/proc/self/fd`. That costs a scan of the open descriptors (two system calls
//! each): about a millisecond with 1,000 thermostats connected, once per held subscribe.

use std::fs;
use std::mem::ManuallyDrop;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::unix::io::{FromRawFd, RawFd};
use std::time::Duration;

/// Runs `f` on a borrowed view of the socket `fd` (the descriptor stays open afterwards).
pub fn with_socket<R>(fd: RawFd, f: impl FnOnce(&mut TcpStream) -> R) -> R {
    // SAFETY: `fd` is an open socket owned by tiny_http for as long as the request we hold is
    // alive; ManuallyDrop keeps this view from closing it.
    let mut stream = ManuallyDrop::new(unsafe { TcpStream::from_raw_fd(fd) });
    f(&mut stream)
}

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

/// The descriptor of our TCP socket connected to `peer` on `local_port`.
pub fn find_socket(peer: SocketAddr, local_port: u16) -> Option<RawFd> {
    for fd in open_descriptors() {
        // getpeername on a descriptor that is not a connected socket just fails.
        let matches = with_socket(fd, |s| {
            s.peer_addr().ok() == Some(peer)
                && s.local_addr().map(|a| a.port()).ok() == Some(local_port)
        });
        if matches {
            return Some(fd);
        }
    }
    None
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
/// Call it while holding the response's writer, so the connection is alive; the descriptor
/// found is duplicated and checked again before use, so a descriptor closed and reused
/// meanwhile is never touched.
pub fn park(peer: SocketAddr, local_port: u16) {
    let Some(fd) = find_socket(peer, local_port) else {
        return;
    };
    let Ok(own) = with_socket(fd, |s| s.try_clone()) else {
        return;
    };
    let same = own.peer_addr().ok() == Some(peer)
        && own.local_addr().map(|a| a.port()).ok() == Some(local_port);
    if !same {
        return;
    }
    if let Err(e) = own.shutdown(Shutdown::Read) {
        log::debug!("could not stop reading the connection from {peer}: {e}");
    }
    // A socket option: it holds for every descriptor of the connection, tiny_http's included.
    if let Err(e) = own.set_write_timeout(Some(PARKED_SEND_TIMEOUT)) {
        log::debug!("could not shorten the send timeout to {peer}: {e}");
    }
}
