//! A deadline on reading a request body. tiny_http has no read timeout, so a client that
//! declares a body and stops sending (a thermostat that drops off Wi-Fi halfway through a
//! PUT) would pin a worker for good. A worker registers its body read here; if the read is
//! still going at the deadline, one reaper thread shuts the connection's socket down, which
//! ends the blocked read.

use std::collections::HashMap;
use std::net::{Shutdown, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::socket::find_socket;

#[derive(Default)]
struct Deadlines {
    watches: Mutex<Watches>,
    wake: Condvar,
}

#[derive(Default)]
struct Watches {
    next: u64,
    items: HashMap<u64, (SocketAddr, u16, Instant)>,
}

/// Ends the watch when dropped (the read finished in time).
pub struct Watch {
    id: u64,
    deadlines: Arc<Deadlines>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.deadlines.watches.lock().items.remove(&self.id);
    }
}

/// `None` if the reaper thread could not be started.
static DEADLINES: OnceLock<Option<Arc<Deadlines>>> = OnceLock::new();

/// Watches a body read from `peer` on our `local_port`; `None` if the reaper thread could not
/// be started (the read then simply has no deadline).
pub fn watch(peer: SocketAddr, local_port: u16, timeout: Duration) -> Option<Watch> {
    let deadlines = DEADLINES.get_or_init(|| {
        let d = Arc::new(Deadlines::default());
        let reaper = Arc::clone(&d);
        let started = std::thread::Builder::new()
            .name("body-deadlines".into())
            .stack_size(128 * 1024)
            .spawn(move || reap(&reaper));
        match started {
            Ok(_) => Some(d),
            Err(e) => {
                log::error!("could not start the body-deadline thread: {e}");
                None
            }
        }
    });
    let deadlines = deadlines.as_ref()?;
    let mut w = deadlines.watches.lock();
    w.next += 1;
    let id = w.next;
    w.items
        .insert(id, (peer, local_port, Instant::now() + timeout));
    deadlines.wake.notify_all();
    Some(Watch {
        id,
        deadlines: Arc::clone(deadlines),
    })
}

fn reap(d: &Deadlines) {
    let mut w = d.watches.lock();
    loop {
        let now = Instant::now();
        let expired: Vec<u64> = w
            .items
            .iter()
            .filter(|(_, (_, _, at))| *at <= now)
            .map(|(id, _)| *id)
            .collect();
        if expired.is_empty() {
            match w.items.values().map(|(_, _, at)| *at).min() {
                Some(at) => {
                    d.wake.wait_until(&mut w, at);
                }
                None => d.wake.wait(&mut w),
            }
            continue;
        }
        let targets: Vec<(SocketAddr, u16)> = expired
            .iter()
            .filter_map(|id| w.items.remove(id))
            .map(|(peer, port, _)| (peer, port))
            .collect();
        parking_lot::MutexGuard::unlocked(&mut w, || {
            for (peer, port) in targets {
                if let Some(socket) = find_socket(peer, port) {
                    let _ = socket.shutdown(Shutdown::Both);
                    log::warn!("{peer} stopped sending its request body; closed the connection");
                }
            }
        });
    }
}
