//! A background fetch of one place or query, which requests with nothing cached wait on.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use crate::util::clock::Clock;

/// `Some` once done: the answer, or `None` if upstream failed.
type Outcome = Option<Option<Arc<Vec<u8>>>>;

/// A background fetch of one query, which requests with nothing cached wait on.
pub(super) struct Flight {
    done: Arc<Mutex<Outcome>>,
    cv: Arc<Condvar>,
    /// The server's clock, which times the wait (the fetch's own timeout is the socket's).
    clock: Clock,
}

impl Flight {
    pub(super) fn new(clock: &Clock) -> Flight {
        let flight = Flight {
            done: Arc::default(),
            cv: Arc::default(),
            clock: clock.clone(),
        };
        clock.wake_on_move(&flight.done, &flight.cv);
        flight
    }

    /// The answer, once the fetch is done; `None` if it failed or is not done by `deadline`
    /// (of the server's clock).
    pub(super) fn wait(&self, deadline: Instant) -> Option<Arc<Vec<u8>>> {
        let mut done = self.done.lock();
        while done.is_none() {
            if self.clock.wait_until(&self.cv, &mut done, deadline) {
                break;
            }
        }
        done.clone().flatten()
    }

    pub(super) fn finish(&self, answer: Option<Arc<Vec<u8>>>) {
        *self.done.lock() = Some(answer);
        self.cv.notify_all();
    }
}
