//! The service manager's notification protocol (systemd's `sd_notify`): a datagram of
//! `KEY=value` lines sent to the Unix socket named by `$NOTIFY_SOCKET` (a path, or an abstract
//! name written with a leading `@`). hearth says `READY=1` once both ports serve, `STOPPING=1`
//! when it shuts down, and `WATCHDOG=1` while its listeners answer their self-probes, so a unit
//! with `Type=notify` and `WatchdogSec=` knows when hearth is up and restarts it if it hangs.
//! Without `$NOTIFY_SOCKET` (a plain run, the tests) every call does nothing.

use std::io;
use std::os::unix::net::UnixDatagram;
use std::time::Duration;

/// Sends `message` to the service manager, if there is one.
pub fn notify(message: &str) {
    let Some(target) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    if let Err(e) = send(&target.to_string_lossy(), message) {
        log::warn!("could not notify the service manager ({message:?}): {e}");
    }
}

/// How often the service manager wants `WATCHDOG=1`: half its `WATCHDOG_USEC`, if that was
/// meant for this process.
pub fn watchdog_interval() -> Option<Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    if let Ok(pid) = std::env::var("WATCHDOG_PID") {
        if pid.parse::<u32>().ok() != Some(std::process::id()) {
            return None;
        }
    }
    (usec > 0).then(|| Duration::from_micros(usec / 2))
}

/// Sends one datagram to a socket path or `@abstract` name.
pub fn send(target: &str, message: &str) -> io::Result<()> {
    let socket = UnixDatagram::unbound()?;
    match target.strip_prefix('@') {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
            socket.send_to_addr(message.as_bytes(), &addr)?;
        }
        None => {
            socket.send_to(message.as_bytes(), target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_reach_a_path_and_an_abstract_name() {
        let dir = std::env::temp_dir().join(format!("hearth-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify.sock");
        let _ = std::fs::remove_file(&path);
        let listener = UnixDatagram::bind(&path).unwrap();
        send(path.to_str().unwrap(), "READY=1").unwrap();
        let mut buf = [0u8; 64];
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");

        use std::os::linux::net::SocketAddrExt;
        let name = format!("hearth-test-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let abstract_listener = UnixDatagram::bind_addr(&addr).unwrap();
        send(&format!("@{name}"), "WATCHDOG=1").unwrap();
        let n = abstract_listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"WATCHDOG=1");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
