//! The one signal that stops a server: every long-lived thread it starts watches it.
//!
//! A [`Shutdown`] is cheap to clone and every clone is the same signal. A thread learns it
//! must stop in whichever way suits where it blocks:
//! - it polls [`Shutdown::is_triggered`] between pieces of work (an accept loop, after each
//!   accept);
//! - it waits on the signal itself, [`Shutdown::wait_timeout`] (a periodic loop: the wait
//!   returns early when the signal is triggered);
//! - it selects on [`Shutdown::receiver`], a channel that disconnects when the signal is
//!   triggered (a thread already waiting on channels);
//! - or it is blocked elsewhere (an `accept`, a condition variable of its own), and whoever
//!   starts it registers a wake-up with [`Shutdown::on_trigger`] (shut the listening socket
//!   down, set a flag and notify the condition variable), run by the thread that triggers.
//!
//! Stopping goes in stages, because some threads must end before others begin to (a server
//! stops accepting before it ends held subscribes). A thread watches the signal at its stage
//! ([`Shutdown::at`]); triggering a stage triggers it and every earlier one. The stages and
//! why they are in that order are the server's, written down once in [`crate::server`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use crossbeam_channel::Receiver;
use parking_lot::{Condvar, Mutex};

/// A wake-up for a thread blocked somewhere the signal cannot reach.
type Waker = Box<dyn FnOnce() + Send>;

/// The signal, watched at one stage (see the module's documentation).
#[derive(Clone)]
pub struct Shutdown {
    shared: Arc<Shared>,
    /// The stage this handle watches and triggers (1 for a new signal).
    stage: u8,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    /// [`State::reached`], for [`Shutdown::is_triggered`] without the lock (a connection's
    /// thread asks between requests).
    reached: AtomicU8,
}

#[derive(Default)]
struct State {
    /// The latest stage triggered (0: none).
    reached: u8,
    /// Wake-ups not yet run, with the stage each is for.
    wakers: Vec<(u8, Waker)>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown::new()
    }
}

impl std::fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Shutdown(stage {}, triggered: {})",
            self.stage,
            self.is_triggered()
        )
    }
}

impl Shutdown {
    /// A signal not yet triggered, watched at stage 1.
    pub fn new() -> Shutdown {
        Shutdown {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
                reached: AtomicU8::new(0),
            }),
            stage: 1,
        }
    }

    /// The same signal, watched at `stage` (at least 1): triggered once the stop reaches it.
    pub fn at(&self, stage: u8) -> Shutdown {
        Shutdown {
            shared: Arc::clone(&self.shared),
            stage: stage.max(1),
        }
    }

    /// Triggers this handle's stage (and every earlier one): wakes every thread waiting on it
    /// and runs their wake-ups, here, outside the signal's lock. Triggering again does nothing.
    pub fn trigger(&self) {
        let due: Vec<Waker> = {
            let mut state = self.shared.state.lock();
            if state.reached >= self.stage {
                return;
            }
            state.reached = self.stage;
            self.shared.reached.store(self.stage, Ordering::SeqCst);
            let (due, later) = std::mem::take(&mut state.wakers)
                .into_iter()
                .partition(|(stage, _)| *stage <= self.stage);
            state.wakers = later;
            self.shared.changed.notify_all();
            due.into_iter().map(|(_, wake)| wake).collect()
        };
        for wake in due {
            wake();
        }
    }

    /// Whether the stop has reached this handle's stage.
    pub fn is_triggered(&self) -> bool {
        self.shared.reached.load(Ordering::SeqCst) >= self.stage
    }

    /// Waits until the signal is triggered. (Every thread of the server has something else to
    /// do meanwhile, so only the tests wait on the signal alone.)
    #[cfg(test)]
    fn wait(&self) {
        let mut state = self.shared.state.lock();
        while state.reached < self.stage {
            self.shared.changed.wait(&mut state);
        }
    }

    /// Waits at most `timeout`, returning at once when the signal is (or becomes) triggered;
    /// returns whether it is. It may also return early, not triggered, when an earlier stage
    /// is triggered: a periodic loop just takes its turn early.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let mut state = self.shared.state.lock();
        if state.reached < self.stage {
            self.shared.changed.wait_for(&mut state, timeout);
        }
        state.reached >= self.stage
    }

    /// Runs `wake` when the signal is triggered (at once, here, if it already is): the way to
    /// reach a thread blocked somewhere else.
    pub fn on_trigger(&self, wake: impl FnOnce() + Send + 'static) {
        {
            let mut state = self.shared.state.lock();
            if state.reached < self.stage {
                state.wakers.push((self.stage, Box::new(wake)));
                return;
            }
        }
        wake();
    }

    /// A channel that never carries anything and disconnects when the signal is triggered, for
    /// a thread that `select!`s on channels: `recv(stopped) -> _ => return`.
    pub fn receiver(&self) -> Receiver<()> {
        let (tx, rx) = crossbeam_channel::bounded::<()>(0);
        self.on_trigger(move || drop(tx));
        rx
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::thread;

    const LONG: Duration = Duration::from_secs(600);

    /// A thread waiting on the signal, one blocked in `accept` (woken by the socket's shutdown
    /// registered with `on_trigger`) and one in `select!` all end when it is triggered; and
    /// every wait after that returns at once.
    #[test]
    fn triggering_wakes_waiting_and_blocked_threads_and_later_waits_return_at_once() {
        let stop = Shutdown::new();
        let (started, ready) = crossbeam_channel::unbounded::<&str>();

        let waiting = thread::spawn({
            let (stop, started) = (stop.clone(), started.clone());
            move || {
                started.send("waiting").unwrap();
                stop.wait_timeout(LONG)
            }
        });

        let socket = TcpListener::bind("127.0.0.1:0").unwrap();
        let waker = socket.try_clone().unwrap();
        stop.on_trigger(move || {
            let _ = rustix::net::shutdown(&waker, rustix::net::Shutdown::Both);
        });
        let accepting = thread::spawn({
            let (stop, started) = (stop.clone(), started.clone());
            move || {
                started.send("accepting").unwrap();
                // Blocks in accept until the wake-up shuts the socket down.
                let accepted = socket.accept();
                (accepted.is_err(), stop.is_triggered())
            }
        });

        let stopped = stop.receiver();
        let selecting = thread::spawn(move || {
            started.send("selecting").unwrap();
            crossbeam_channel::select! {
                recv(stopped) -> got => got.is_err(),
            }
        });

        for _ in 0..3 {
            ready.recv().unwrap();
        }
        assert!(!stop.is_triggered());
        stop.trigger();
        assert!(waiting.join().unwrap(), "the wait returned triggered");
        assert_eq!(accepting.join().unwrap(), (true, true));
        assert!(selecting.join().unwrap(), "the channel disconnected");

        // After the trigger: waits return at once, and a wake-up registered now runs at once.
        assert!(stop.wait_timeout(LONG));
        stop.wait();
        assert!(stop.receiver().recv().is_err());
        let (ran, woken) = crossbeam_channel::bounded(1);
        stop.on_trigger(move || ran.send(()).unwrap());
        assert!(woken.try_recv().is_ok(), "ran at once");
        stop.trigger();
    }

    /// A later stage is not triggered by an earlier one; triggering it triggers the earlier
    /// ones too, and runs only the wake-ups due.
    #[test]
    fn stages_trigger_in_order() {
        let first = Shutdown::new();
        let second = first.at(2);
        let (tx, woken) = crossbeam_channel::unbounded();
        let tx2 = tx.clone();
        first.on_trigger(move || tx.send(1).unwrap());
        second.on_trigger(move || tx2.send(2).unwrap());

        first.trigger();
        assert!(first.is_triggered() && !second.is_triggered());
        assert_eq!(woken.try_iter().collect::<Vec<_>>(), [1]);
        // Returns (early, not triggered) or times out: either way not triggered.
        assert!(!second.wait_timeout(Duration::ZERO));

        second.trigger();
        assert!(second.is_triggered());
        assert_eq!(woken.try_iter().collect::<Vec<_>>(), [2]);

        let third = Shutdown::new().at(3);
        third.trigger();
        assert!(third.at(1).is_triggered() && third.at(2).is_triggered());
    }
}
