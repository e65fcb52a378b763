//! The running server's admin socket: `<data dir>/admin.sock`, a Unix stream socket through
//! which `hearth users|keys|claim|share|devices` reach a server that holds the store.
//!
//! One request per connection: the client writes an [`AdminRequest`] as JSON and shuts down
//! its write side; the server answers an [`AdminReply`] as JSON and closes. Only the server's
//! own user and root may use it: the data directory is private (0700), the socket is 0600,
//! and the peer's uid is checked on every connection.

use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::AdminRequest;
use crate::util::shutdown::Shutdown;

pub const SOCKET_FILE: &str = "admin.sock";
/// Requests are a few hundred bytes; anything near this is not a CLI.
const MAX_REQUEST: u64 = 64 * 1024;
const IO_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdminReply {
    pub ok: bool,
    /// What the CLI prints: the output, or the error.
    pub text: String,
}

pub type Handler = Arc<dyn Fn(&AdminRequest) -> AdminReply + Send + Sync>;

pub struct AdminSocket {
    path: PathBuf,
    thread: JoinHandle<()>,
}

impl AdminSocket {
    /// Listens at `path` (a leftover socket file there is removed: the caller holds the store's
    /// lock, so no other server can be using it), until `shutdown` is triggered.
    pub fn start(path: PathBuf, handler: Handler, shutdown: Shutdown) -> io::Result<AdminSocket> {
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        // Shutting the listening socket down wakes the blocking accept, which then fails. A
        // connection would wake it too, but not once the socket's file is deleted (the data
        // directory removed under the server).
        let waker = listener.try_clone()?;
        shutdown.on_trigger(move || {
            let _ = rustix::net::shutdown(&waker, rustix::net::Shutdown::Both);
        });
        let thread = thread::Builder::new()
            .name("admin".into())
            .stack_size(256 * 1024)
            .spawn(move || accept_loop(&listener, &handler, &shutdown))?;
        Ok(AdminSocket { path, thread })
    }

    /// After the shutdown signal: waits for the accept loop and removes the socket's file.
    pub fn join(self) {
        let _ = self.thread.join();
        let _ = std::fs::remove_file(&self.path);
    }
}

fn accept_loop(listener: &UnixListener, handler: &Handler, shutdown: &Shutdown) {
    for stream in listener.incoming() {
        if shutdown.is_triggered() {
            return;
        }
        match stream {
            Ok(stream) => {
                if let Err(e) = serve(stream, handler) {
                    log::warn!("admin socket: {e}");
                }
            }
            Err(e) => {
                log::warn!("admin socket: accept failed: {e}");
                thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

fn serve(mut stream: UnixStream, handler: &Handler) -> io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let reply = match peer_uid(&stream) {
        Some(uid) if uid == 0 || uid == rustix::process::getuid().as_raw() => {
            let mut body = Vec::new();
            (&mut stream).take(MAX_REQUEST).read_to_end(&mut body)?;
            match serde_json::from_slice::<AdminRequest>(&body) {
                Ok(request) => {
                    log::info!("admin command from uid {uid}: {}", summary(&request));
                    handler(&request)
                }
                Err(e) => AdminReply {
                    ok: false,
                    text: format!("not an admin request: {e}"),
                },
            }
        }
        other => AdminReply {
            ok: false,
            text: format!("refused: uid {other:?} may not manage this server"),
        },
    };
    let bytes = serde_json::to_vec(&reply).map_err(io::Error::other)?;
    stream.write_all(&bytes)
}

/// The command's name only: arguments may hold an entry code.
fn summary(request: &AdminRequest) -> String {
    serde_json::to_value(request)
        .ok()
        .and_then(|v| v.get("op").and_then(|o| o.as_str()).map(str::to_string))
        .unwrap_or_default()
}

fn peer_uid(stream: &UnixStream) -> Option<u32> {
    rustix::net::sockopt::socket_peercred(stream)
        .ok()
        .map(|cred| cred.uid.as_raw())
}

/// Sends one request to the server listening at `path` and returns its reply.
pub fn send(path: &Path, request: &AdminRequest) -> io::Result<AdminReply> {
    let mut stream = UnixStream::connect(path)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    stream.write_all(&serde_json::to_vec(request).map_err(io::Error::other)?)?;
    stream.shutdown(std::net::Shutdown::Write)?;
    let mut body = Vec::new();
    stream.take(1024 * 1024).read_to_end(&mut body)?;
    serde_json::from_slice(&body).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the server's reply was not understood: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_when_its_socket_file_was_deleted() {
        let dir = std::env::temp_dir().join(format!("hearth-admin-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let handler: Handler = Arc::new(|_| AdminReply {
            ok: true,
            text: String::new(),
        });
        let shutdown = Shutdown::new();
        let socket = AdminSocket::start(dir.join(SOCKET_FILE), handler, shutdown.clone()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        // Before the fix, stopping waited for ever on an accept nothing could wake.
        let (done, stopped) = crossbeam_channel::bounded(1);
        thread::spawn(move || {
            shutdown.trigger();
            socket.join();
            let _ = done.send(());
        });
        assert!(stopped.recv_timeout(Duration::from_secs(20)).is_ok());
    }
}
