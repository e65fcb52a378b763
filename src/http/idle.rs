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
use std::net::{Shutdown, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::time::Duration;

use rustix::net::RecvFlags;

use super::socket::{addresses, connection, open_descriptors, with_descriptor};

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
        let Some((peer, port)) = with_descriptor(fd, |b| idle_connection(b, ports, idle_ms)) else {
            continue;
        };
        // Our own duplicate refers to the socket itself, so the check that follows and the
        // shutdown are about the same connection even if `fd` is closed and reused meanwhile.
        let Some(own) = connection(fd, peer, port) else {
            continue;
        };
        if idle_connection(own.as_fd(), ports, idle_ms).is_some()
            && own.shutdown(Shutdown::Both).is_ok()
        {
            closed += 1;
        }
    }
    closed
}

/// An established TCP connection on one of `ports` with no data either way for `idle_ms`, and
/// whose reader (tiny_http's thread) is waiting for bytes that have not come: its peer and
/// port.
fn idle_connection(fd: BorrowedFd<'_>, ports: &[u16], idle_ms: u32) -> Option<(SocketAddr, u16)> {
    // TCP_INFO first: one system call, and it fails at once on anything but a TCP socket.
    let info = tcp_info(fd)?;
    if info.tcpi_state != TCP_ESTABLISHED
        || info.tcpi_last_data_recv < idle_ms
        || info.tcpi_last_data_sent < idle_ms
    {
        return None;
    }
    let (peer, port) = addresses(fd)?;
    (ports.contains(&port) && !is_busy(peer, port) && reader_is_waiting(fd)).then_some((peer, port))
}

/// The kernel's `TCP_INFO` for a TCP socket. Neither rustix nor std offers this option.
fn tcp_info(fd: BorrowedFd<'_>) -> Option<libc::tcp_info> {
    let mut info = std::mem::MaybeUninit::<libc::tcp_info>::zeroed();
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes (the size of `info`) into `info`, a live
    // local. Every field of `tcp_info` is an integer, so the zeroed bytes an older kernel's
    // shorter struct leaves unwritten are valid values, and so is the whole once written.
    unsafe {
        let rc = libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            info.as_mut_ptr().cast(),
            &mut len,
        );
        (rc == 0).then(|| info.assume_init())
    }
}

/// Nothing to read yet and not at end of input: a peek would block.
fn reader_is_waiting(fd: BorrowedFd<'_>) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        rustix::net::recv(fd, &mut byte, RecvFlags::PEEK | RecvFlags::DONTWAIT),
        Err(rustix::io::Errno::AGAIN)
    )
}
