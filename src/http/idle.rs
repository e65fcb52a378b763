//! Closing idle connections. tiny_http 0.12 has no read timeout: a client that connects and
//! sends half a request line (or a keep-alive client that goes quiet) holds one of its
//! connection threads forever, and `SO_RCVTIMEO` cannot be set on the listening socket for the
//! accepted ones to inherit (tiny_http's accept loop would end at the first timeout). So the
//! maintenance loop calls [`close_idle`], which walks our descriptors and shuts down every
//! connection on our ports that has neither received nor sent data for the idle timeout, going
//! by the kernel's own clocks (`TCP_INFO`). tiny_http's thread, blocked reading, then sees the
//! end of input and closes the connection.
//!
//! Parked responses (held subscribes, event streams) have had their read half shut down
//! ([`super::socket::park`]), so a peek reads end-of-input at once: they are never
//! idle by this rule, however long they wait for a push. A connection with bytes waiting that
//! tiny_http has not read yet is not idle either, and neither is one whose request a worker
//! is reading or handling ([`Busy`]), however long that takes.

use std::collections::HashMap;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::os::unix::io::{AsRawFd, RawFd};
use std::time::Duration;

use super::socket::{open_descriptors, with_socket};

/// `TCP_ESTABLISHED` in the kernel's `tcp_states.h` (the libc crate does not name it).
const TCP_ESTABLISHED: u8 = 1;

/// Connections (peer, our port) whose request a worker is reading or handling, with a count
/// for the rare pipelined pair.
static BUSY: parking_lot::Mutex<Option<HashMap<(SocketAddr, u16), usize>>> =
    parking_lot::Mutex::new(None);

/// Marks a connection busy until dropped.
pub struct Busy((SocketAddr, u16));

impl Busy {
    pub fn mark(peer: SocketAddr, port: u16) -> Busy {
        *BUSY
            .lock()
            .get_or_insert_with(HashMap::new)
            .entry((peer, port))
            .or_insert(0) += 1;
        Busy((peer, port))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(map) = BUSY.lock().as_mut() {
            if let Some(n) = map.get_mut(&self.0) {
                *n -= 1;
                if *n == 0 {
                    map.remove(&self.0);
                }
            }
        }
    }
}

fn is_busy(peer: SocketAddr, port: u16) -> bool {
    BUSY.lock()
        .as_ref()
        .is_some_and(|map| map.contains_key(&(peer, port)))
}

/// Shuts down every idle connection on `ports`; returns how many.
pub fn close_idle(ports: &[u16], idle: Duration) -> usize {
    let idle_ms = u32::try_from(idle.as_millis()).unwrap_or(u32::MAX);
    let mut closed = 0;
    for fd in open_descriptors() {
        if !is_idle(fd, ports, idle_ms) {
            continue;
        }
        // Our own duplicate refers to the socket itself, so the check that follows and the
        // shutdown are about the same connection even if `fd` is closed and reused meanwhile.
        let Ok(own) = with_socket(fd, |s| s.try_clone()) else {
            continue;
        };
        if is_idle(own.as_raw_fd(), ports, idle_ms) && own.shutdown(Shutdown::Both).is_ok() {
            closed += 1;
        }
    }
    closed
}

/// An established TCP connection on one of `ports` with no data either way for `idle_ms`, and
/// whose reader (tiny_http's thread) is waiting for bytes that have not come.
fn is_idle(fd: RawFd, ports: &[u16], idle_ms: u32) -> bool {
    let Some(info) = tcp_info(fd) else {
        return false;
    };
    if info.tcpi_state != TCP_ESTABLISHED
        || info.tcpi_last_data_recv < idle_ms
        || info.tcpi_last_data_sent < idle_ms
    {
        return false;
    }
    let Ok(port) = with_socket(fd, |s| s.local_addr()).map(|a| a.port()) else {
        return false;
    };
    let Ok(peer) = with_socket(fd, |s| s.peer_addr()) else {
        return false;
    };
    ports.contains(&port) && !is_busy(peer, port) && reader_is_waiting(fd)
}

fn tcp_info(fd: RawFd) -> Option<libc::tcp_info> {
    // SAFETY: tcp_info is plain old data; getsockopt writes at most `len` bytes into it and
    // fails harmlessly on a descriptor that is not a TCP socket.
    unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let rc = libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        (rc == 0).then_some(info)
    }
}

/// Nothing to read yet and not at end of input: a peek would block.
fn reader_is_waiting(fd: RawFd) -> bool {
    let mut byte = 0u8;
    // SAFETY: a one-byte peek into a local buffer; MSG_DONTWAIT keeps it from blocking.
    let n = unsafe {
        libc::recv(
            fd,
            (&mut byte as *mut u8).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
}
