//! The hub: where committed changes go.
//!
//! - Held subscribes. A worker that decides a thermostat's subscribe must wait writes the
//!   chunked response head, parks the raw writer here with its deadline, and goes back to
//!   serving requests. Each push is written as one chunk `{"objects":[...]}` by one of a few
//!   writer threads; the response is kept open for further pushes until 3 s pass without one,
//!   and ended with the zero-length chunk. A subscribe with no push is ended at its deadline.
//!   Every held subscribe of a serial gets every push; a push that could not be written is
//!   replayed to that serial's next held subscribe.
//! - Scheduling. Whenever a subscribe changes (held, pushed to, written, released), the hub
//!   decides at once what it needs next ([`Hub::schedule`]): a write now, handed straight to a
//!   writer thread; a wake-up at its deadline or at the end of its batch window, kept in a timer
//!   set; or nothing. The notifier thread, woken by a condition variable, only ends the
//!   subscribes whose timers ran out. So a push costs the publisher a look-up of its serial's
//!   subscribes and one hand-over, never a pass over every held subscribe.
//! - Change watchers (the control API's live stream, the MQTT bridge): every committed bucket
//!   change, from any origin, as a [`ChangeEvent`].
//!
//! Writes happen outside the hub's lock, so a slow socket never blocks a publisher.

mod change;
mod notifier;

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use parking_lot::{Condvar, Mutex};

pub use change::{BucketChange, ChangeEvent, Origin};

use crate::util::shutdown::Shutdown;

/// How long a held subscribe stays open after a push, waiting for more (the firmware closes
/// its side about 5 s after the last data).
pub const BATCH_WINDOW: Duration = Duration::from_secs(3);
/// Undelivered pushes kept per serial for its next subscribe, and for how long.
const REPLAY_LIMIT: usize = 16;
const REPLAY_MAX_AGE: Duration = Duration::from_secs(600);
/// Events buffered per watcher before a slow watcher starts missing them.
const WATCH_BUFFER: usize = 1024;
/// Threads writing pushes; a thermostat that stopped reading occupies one until it is dropped.
const WRITERS: usize = 3;
const WRITER_STACK: usize = 128 * 1024;

/// Where a held subscribe's pushes go: the body of a thermostat's subscribe response. The hub
/// hands over whole `{"objects":[...]}` documents; the HTTP edge frames them.
pub trait Sink: Send {
    /// Writes one push and flushes it.
    fn push(&mut self, document: &[u8]) -> io::Result<()>;
    /// Ends the response.
    fn end(&mut self) -> io::Result<()>;
}

pub type Writer = Box<dyn Sink>;

/// One push, shared by every subscribe of the serial. `delivered` is set once any of them has
/// written it, so a copy that failed on a stale connection is not replayed needlessly.
struct Push {
    bytes: Vec<u8>,
    delivered: AtomicBool,
}

/// A place for a subscribe, taken before the worker reads the state so that a push committed
/// in between is queued for it. Dropping it unused (the subscribe was answered at once, or the
/// handler failed) gives the place back.
#[must_use]
pub struct Reservation {
    id: u64,
    hub: Arc<Hub>,
    held: bool,
}

impl Reservation {
    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.held {
            self.hub.inner.lock().remove(self.id);
        }
    }
}

enum Phase {
    Reserved,
    Held {
        deadline: Instant,
    },
    /// A push was written; ends at `until` (3 s after the latest push) or, however busy, at
    /// `cap` (3 s after the hold deadline) so it never outlasts the thermostat's suspend time.
    Batching {
        until: Instant,
        cap: Instant,
    },
}

struct Sub {
    serial: String,
    phase: Phase,
    queue: Vec<Arc<Push>>,
    /// `None` while reserved or while a write to it is under way.
    writer: Option<Writer>,
    /// End as soon as possible (the connection sent another request).
    release: bool,
    /// Its entry in [`Inner::timers`], if it has one.
    timer: Option<Instant>,
    /// The password the subscribe was made with, so a claim can end the others
    /// ([`Hub::end_other_holders`]).
    password: Option<String>,
}

/// A change watcher: where its events go, and which it wants (all when `None`).
struct Watcher {
    events: Sender<Arc<ChangeEvent>>,
    wants: Option<Interest>,
}

/// Whether a watcher wants an event. Asked in the publisher's thread: it must be quick.
pub type Interest = Box<dyn Fn(&ChangeEvent) -> bool + Send>;

#[derive(Default)]
struct Inner {
    subs: HashMap<u64, Sub>,
    by_serial: HashMap<String, Vec<u64>>,
    /// When parked subscribes next need the notifier (their deadline or batch window's end).
    timers: BTreeSet<(Instant, u64)>,
    /// Subscribes due now that no writer thread took: the notifier writes them itself.
    ready: Vec<u64>,
    /// Where writes go: the writer threads' queue, while they run.
    writers: Option<crossbeam_channel::Sender<notifier::Job>>,
    next_id: u64,
    /// Pushes no subscribe could take, with when they were made.
    replay: HashMap<String, Vec<(Instant, Arc<Push>)>>,
    watchers: Vec<Watcher>,
    stopping: bool,
    notifier_done: bool,
}

impl Inner {
    fn remove(&mut self, id: u64) -> Option<Sub> {
        let sub = self.subs.remove(&id)?;
        if let Some(at) = sub.timer {
            self.timers.remove(&(at, id));
        }
        if let Some(ids) = self.by_serial.get_mut(&sub.serial) {
            ids.retain(|i| *i != id);
            if ids.is_empty() {
                self.by_serial.remove(&sub.serial);
            }
        }
        Some(sub)
    }

    /// The subscribes of `serial` (held or reserved).
    fn ids_of(&self, serial: &str) -> &[u64] {
        self.by_serial.get(serial).map_or(&[], Vec::as_slice)
    }
}

#[derive(Default)]
pub struct Hub {
    inner: Mutex<Inner>,
    wake: Condvar,
}

impl Hub {
    pub fn new() -> Hub {
        Hub::default()
    }

    /// Reserves a subscribe slot for `serial`; pushes published from now on are queued for it.
    pub fn reserve(self: &Arc<Self>, serial: &str) -> Reservation {
        self.reserve_as(serial, None)
    }

    /// [`Hub::reserve`] for a subscribe made with `password`.
    pub fn reserve_as(self: &Arc<Self>, serial: &str, password: Option<&str>) -> Reservation {
        let mut inner = self.inner.lock();
        inner.next_id += 1;
        let id = inner.next_id;
        inner.subs.insert(
            id,
            Sub {
                serial: serial.to_string(),
                phase: Phase::Reserved,
                queue: Vec::new(),
                writer: None,
                release: false,
                timer: None,
                password: password.map(str::to_string),
            },
        );
        inner
            .by_serial
            .entry(serial.to_string())
            .or_default()
            .push(id);
        Reservation {
            id,
            hub: Arc::clone(self),
            held: false,
        }
    }

    /// Parks a subscribe whose response head has been written. Pushes queued since the
    /// reservation, and recent pushes no subscribe could take, are written at once. If the hub
    /// is shutting down the writer is handed back so the caller can end the response.
    pub fn hold(
        &self,
        mut reservation: Reservation,
        writer: Writer,
        deadline: Instant,
    ) -> Result<(), Writer> {
        let mut inner = self.inner.lock();
        let id = reservation.id;
        if inner.stopping || !inner.subs.contains_key(&id) {
            // The reservation's drop removes it; it locks the hub, so release the lock first.
            drop(inner);
            drop(reservation);
            return Err(writer);
        }
        reservation.held = true;
        let Inner { subs, replay, .. } = &mut *inner;
        let Some(sub) = subs.get_mut(&id) else {
            return Err(writer);
        };
        if let Some(missed) = replay.remove(&sub.serial) {
            let queued = std::mem::take(&mut sub.queue);
            sub.queue = missed
                .into_iter()
                .filter(|(at, p)| {
                    at.elapsed() < REPLAY_MAX_AGE && !p.delivered.load(Ordering::SeqCst)
                })
                .map(|(_, p)| p)
                .collect();
            sub.queue.extend(queued);
        }
        sub.phase = Phase::Held { deadline };
        sub.writer = Some(writer);
        self.schedule(&mut inner, id, Instant::now());
        Ok(())
    }

    /// Ends every subscribe of `serial`, held or about to be, that was not made with
    /// `password`, once the pushes already queued for it are written. A claim does this: a
    /// subscribe held in the thermostat's name by whoever asked for another entry code must
    /// not receive what the claim and the owner's commands push next (its next subscribe is
    /// refused), while the thermostat's own keeps its hold and receives the claim's push.
    pub fn end_other_holders(&self, serial: &str, password: Option<&str>) {
        let mut inner = self.inner.lock();
        let now = Instant::now();
        for id in inner.ids_of(serial).to_vec() {
            match inner.subs.get_mut(&id) {
                Some(sub) if sub.password.as_deref() != password => sub.release = true,
                _ => continue,
            }
            self.schedule(&mut inner, id, now);
        }
    }

    /// Subscribes of `serial` that are held or about to be.
    pub fn subscriptions_of(&self, serial: &str) -> usize {
        self.inner.lock().ids_of(serial).len()
    }

    /// Subscribes held (or about to be) per serial, for every serial that has any.
    pub fn subscription_counts(&self) -> HashMap<String, usize> {
        self.inner
            .lock()
            .by_serial
            .iter()
            .map(|(serial, ids)| (serial.clone(), ids.len()))
            .collect()
    }

    /// Delivers committed changes: `push` (a whole `{"objects":[...]}` document, for
    /// server-side changes) to every subscribe of the serial, and an event per change to every
    /// watcher. Returns how many subscribes the push was queued for.
    pub fn publish(
        &self,
        serial: &str,
        origin: Origin,
        push: Option<Vec<u8>>,
        changes: Vec<BucketChange>,
    ) -> usize {
        let mut queued = 0;
        let mut inner = self.inner.lock();
        if let Some(bytes) = push {
            let push = Arc::new(Push {
                bytes,
                delivered: AtomicBool::new(false),
            });
            let now = Instant::now();
            // Scheduling never adds or removes a subscribe, so the list stays as it is.
            for i in 0..inner.ids_of(serial).len() {
                let id = inner.ids_of(serial)[i];
                if let Some(sub) = inner.subs.get_mut(&id) {
                    sub.queue.push(Arc::clone(&push));
                    queued += 1;
                    self.schedule(&mut inner, id, now);
                }
            }
        }
        if !inner.watchers.is_empty() {
            for change in changes {
                let event = Arc::new(ChangeEvent {
                    serial: serial.to_string(),
                    origin,
                    change,
                });
                inner.watchers.retain(|w| {
                    if w.wants.as_ref().is_some_and(|wants| !wants(&event)) {
                        return true;
                    }
                    match w.events.try_send(Arc::clone(&event)) {
                        Ok(()) => true,
                        Err(TrySendError::Full(_)) => {
                            log::debug!("a change watcher is not keeping up; it missed an event");
                            true
                        }
                        Err(TrySendError::Disconnected(_)) => false,
                    }
                });
            }
        }
        queued
    }

    /// A stream of every committed change. Dropping the receiver unsubscribes.
    pub fn watch(&self) -> Receiver<Arc<ChangeEvent>> {
        self.watcher(None)
    }

    /// A stream of the committed changes `wants` says yes to, so a watcher that has no use
    /// for an event (nobody is listening) is not woken for it.
    pub fn watch_if(&self, wants: Interest) -> Receiver<Arc<ChangeEvent>> {
        self.watcher(Some(wants))
    }

    fn watcher(&self, wants: Option<Interest>) -> Receiver<Arc<ChangeEvent>> {
        let (events, rx) = crossbeam_channel::bounded(WATCH_BUFFER);
        self.inner.lock().watchers.push(Watcher { events, wants });
        rx
    }

    /// When `shutdown` is triggered: ends every held subscribe (after writing what is queued)
    /// and stops the notifier, whose thread then ends.
    pub fn stop_on(self: &Arc<Self>, shutdown: &Shutdown) {
        let hub = Arc::clone(self);
        shutdown.on_trigger(move || {
            hub.inner.lock().stopping = true;
            hub.wake.notify_all();
        });
    }

    /// Ends every held subscribe (after writing what is queued) and stops the notifier.
    /// Returns once the notifier has finished, or after `timeout`.
    pub fn shutdown(&self, timeout: Duration) {
        let mut inner = self.inner.lock();
        inner.stopping = true;
        self.wake.notify_all();
        let until = Instant::now() + timeout;
        while !inner.notifier_done {
            if self.wake.wait_until(&mut inner, until).timed_out() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::thread;

    /// A sink that records what it was given (each push on a line, then `END`), and can be
    /// made to fail.
    #[derive(Clone, Default)]
    struct Probe {
        out: Arc<Mutex<Vec<u8>>>,
        fail: Arc<Mutex<bool>>,
    }

    impl Probe {
        fn record(&self, bytes: &[u8]) -> io::Result<()> {
            if *self.fail.lock() {
                return Err(io::Error::new(io::ErrorKind::BrokenPipe, "gone"));
            }
            self.out.lock().extend_from_slice(bytes);
            Ok(())
        }
    }

    impl Sink for Probe {
        fn push(&mut self, document: &[u8]) -> io::Result<()> {
            self.record(&[document, b"\n"].concat())
        }
        fn end(&mut self) -> io::Result<()> {
            self.record(b"END")
        }
    }

    fn start() -> Arc<Hub> {
        let hub = Arc::new(Hub::new());
        let h = Arc::clone(&hub);
        thread::spawn(move || h.run_notifier());
        hub
    }

    fn wait_for(probe: &Probe, needle: &str) -> String {
        for _ in 0..400 {
            let text = String::from_utf8_lossy(&probe.out.lock()).to_string();
            if text.contains(needle) {
                return text;
            }
            thread::sleep(Duration::from_millis(10));
        }
        panic!(
            "never saw {needle:?}; got {:?}",
            String::from_utf8_lossy(&probe.out.lock())
        );
    }

    #[test]
    fn push_to_every_held_subscribe_then_end_after_quiet() {
        let hub = start();
        let (a, b) = (Probe::default(), Probe::default());
        let far = Instant::now() + Duration::from_secs(60);
        let ra = hub.reserve("S");
        hub.hold(ra, Box::new(a.clone()), far).ok().unwrap();
        let rb = hub.reserve("S");
        hub.hold(rb, Box::new(b.clone()), far).ok().unwrap();
        hub.publish(
            "S",
            Origin::Server,
            Some(b"{\"objects\":[1]}".to_vec()),
            vec![],
        );
        hub.publish(
            "OTHER",
            Origin::Server,
            Some(b"{\"objects\":[2]}".to_vec()),
            vec![],
        );
        for p in [&a, &b] {
            let text = wait_for(p, "END");
            assert_eq!(text, "{\"objects\":[1]}\nEND");
        }
        hub.shutdown(Duration::from_secs(1));
    }

    #[test]
    fn push_during_reservation_is_delivered_on_hold() {
        let hub = start();
        let p = Probe::default();
        let r = hub.reserve("S");
        hub.publish("S", Origin::Server, Some(b"{}".to_vec()), vec![]);
        hub.hold(
            r,
            Box::new(p.clone()),
            Instant::now() + Duration::from_secs(60),
        )
        .ok()
        .unwrap();
        assert_eq!(wait_for(&p, "END"), "{}\nEND");
        hub.shutdown(Duration::from_secs(1));
    }

    #[test]
    fn deadline_ends_with_zero_length_chunk() {
        let hub = start();
        let p = Probe::default();
        let r = hub.reserve("S");
        hub.hold(
            r,
            Box::new(p.clone()),
            Instant::now() + Duration::from_millis(50),
        )
        .ok()
        .unwrap();
        assert_eq!(wait_for(&p, "END"), "END");
        assert_eq!(hub.subscriptions_of("S"), 0);
        hub.shutdown(Duration::from_secs(1));
    }

    #[test]
    fn failed_push_is_replayed_to_next_subscribe() {
        let hub = start();
        let dead = Probe::default();
        *dead.fail.lock() = true;
        let r = hub.reserve("S");
        hub.hold(r, Box::new(dead), Instant::now() + Duration::from_secs(60))
            .ok()
            .unwrap();
        hub.publish("S", Origin::Server, Some(b"{\"n\":1}".to_vec()), vec![]);
        for _ in 0..200 {
            if hub.subscriptions_of("S") == 0 {
                break;
            }
            thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(hub.subscriptions_of("S"), 0);
        let next = Probe::default();
        let r = hub.reserve("S");
        hub.hold(
            r,
            Box::new(next.clone()),
            Instant::now() + Duration::from_secs(60),
        )
        .ok()
        .unwrap();
        assert_eq!(wait_for(&next, "END"), "{\"n\":1}\nEND");
        hub.shutdown(Duration::from_secs(1));
    }

    #[test]
    fn a_push_delivered_elsewhere_is_not_replayed() {
        let hub = start();
        let (live, dead) = (Probe::default(), Probe::default());
        *dead.fail.lock() = true;
        let far = Instant::now() + Duration::from_secs(60);
        let r = hub.reserve("S");
        hub.hold(r, Box::new(dead), far).ok().unwrap();
        let r = hub.reserve("S");
        hub.hold(r, Box::new(live.clone()), far).ok().unwrap();
        hub.publish("S", Origin::Server, Some(b"{\"n\":1}".to_vec()), vec![]);
        wait_for(&live, "{\"n\":1}");
        for _ in 0..200 {
            if hub.subscriptions_of("S") == 1 {
                break;
            }
            thread::sleep(Duration::from_millis(10));
        }
        let next = Probe::default();
        let r = hub.reserve("S");
        hub.hold(
            r,
            Box::new(next.clone()),
            Instant::now() + Duration::from_millis(100),
        )
        .ok()
        .unwrap();
        assert_eq!(wait_for(&next, "END"), "END");
        hub.shutdown(Duration::from_secs(1));
    }

    #[test]
    fn an_unused_reservation_gives_its_place_back() {
        let hub = Arc::new(Hub::new());
        let r = hub.reserve("S");
        assert_eq!(hub.subscriptions_of("S"), 1);
        drop(r);
        assert_eq!(hub.subscriptions_of("S"), 0);
    }

    #[test]
    fn hold_after_shutdown_hands_the_writer_back() {
        let hub = start();
        let r = hub.reserve("S");
        hub.shutdown(Duration::from_secs(1));
        assert!(
            hub.hold(r, Box::new(Probe::default()), Instant::now())
                .is_err()
        );
        assert_eq!(hub.subscriptions_of("S"), 0);
    }

    #[test]
    fn batching_never_outlasts_the_hold_deadline_by_more_than_the_window() {
        let hub = start();
        let p = Probe::default();
        let r = hub.reserve("S");
        let started = Instant::now();
        hub.hold(r, Box::new(p.clone()), started + Duration::from_millis(200))
            .ok()
            .unwrap();
        // Pushes every 500 ms would keep a plain 3 s window open forever.
        for _ in 0..12 {
            hub.publish("S", Origin::Server, Some(b"{}".to_vec()), vec![]);
            thread::sleep(Duration::from_millis(500));
            if p.out.lock().ends_with(b"END") {
                break;
            }
        }
        assert!(
            p.out.lock().ends_with(b"END"),
            "still open after {:?}",
            started.elapsed()
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        hub.shutdown(Duration::from_secs(1));
    }

    #[test]
    fn watchers_see_every_change() {
        let hub = Hub::new();
        let rx = hub.watch();
        let change = BucketChange {
            key: "device.S".into(),
            revision: 1,
            timestamp: 2,
            changed: vec!["a".into()],
            deleted: false,
        };
        hub.publish("S", Origin::Device, None, vec![change.clone()]);
        let ev = rx.try_recv().unwrap();
        assert_eq!(ev.serial, "S");
        assert_eq!(ev.origin, Origin::Device);
        assert_eq!(ev.change, change);
    }
}
