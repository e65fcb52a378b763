//! Reaching the socket behind a tiny_http request. tiny_http 0.12 hides it, but a few
//! protections need it (shutting down a connection whose body never arrives, refusing a huge
//! body), so we find our descriptor by its addresses in `/proc/self/fd`. This costs a scan of
//! the open descriptors and is only done on those rare paths.

use std::fs;
use std::mem::ManuallyDrop;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::io::{FromRawFd, RawFd};

/// Runs `f` on a borrowed view of the socket `fd` (the descriptor stays open afterwards).
pub fn with_socket<R>(fd: RawFd, f: impl FnOnce(&mut TcpStream) -> R) -> R {
    // SAFETY: `fd` is an open socket owned by tiny_http for as long as the request we hold is
    // alive; ManuallyDrop keeps this view from closing it.
    let mut stream = ManuallyDrop::new(unsafe { TcpStream::from_raw_fd(fd) });
    f(&mut stream)
}

/// The descriptor of our TCP socket connected to `peer` on `local_port`.
pub fn find_socket(peer: SocketAddr, local_port: u16) -> Option<RawFd> {
    for entry in fs::read_dir("/proc/self/fd").ok()?.flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<RawFd>().ok())
        else {
            continue;
        };
        let is_socket = fs::read_link(entry.path())
            .map(|t| t.to_string_lossy().starts_with("socket:"))
            .unwrap_or(false);
        if !is_socket {
            continue;
        }
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
