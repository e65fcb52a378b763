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
//!
//! Every deadline, batch window and replay age is reckoned on the server's [`Clock`], so a test
//! that runs the hub on a manual clock ends a hold by advancing the clock, not by waiting.

mod change;
mod notifier;

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use parking_lot::{Condvar, Mutex};

use crate::util::clock::Clock;

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
    /// The time of the notifier's latest look at its timers (see [`Hub::settled_at`]).
    seen: Option<Instant>,
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

    /// See [`Hub::settled`].
    fn settled(&self, serial: &str) -> bool {
        self.ids_of(serial).iter().all(|id| {
            self.subs
                .get(id)
                .is_some_and(|s| s.writer.is_some() && s.queue.is_empty() && s.timer.is_some())
        })
    }

    /// The subscribes of `serial` (held or reserved).
    fn ids_of(&self, serial: &str) -> &[u64] {
        self.by_serial.get(serial).map_or(&[], Vec::as_slice)
    }
}

pub struct Hub {
    inner: Arc<Mutex<Inner>>,
    wake: Arc<Condvar>,
    /// Where deadlines are reckoned; a move of a manual clock wakes the notifier.
    clock: Clock,
}

impl Default for Hub {
    fn default() -> Hub {
        Hub::new()
    }
}

impl Hub {
    /// A hub on the system clock.
    pub fn new() -> Hub {
        Hub::with_clock(Clock::system())
    }

    /// A hub whose deadlines are reckoned on `clock` (the server's).
    pub fn with_clock(clock: Clock) -> Hub {
        let hub = Hub {
            inner: Arc::default(),
            wake: Arc::default(),
            clock,
        };
        hub.clock.wake_on_move(&hub.inner, &hub.wake);
        hub
    }

    /// The clock deadlines given to [`Hub::hold`] are read on.
    pub fn clock(&self) -> &Clock {
        &self.clock
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

    /// Parks a subscribe whose response head has been written, until `deadline` (of
    /// [`Hub::clock`]). Pushes queued since the reservation, and recent pushes no subscribe
    /// could take, are written at once. If the hub is shutting down the writer is handed back
    /// so the caller can end the response.
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
        let now = self.clock.now();
        let Inner { subs, replay, .. } = &mut *inner;
        let Some(sub) = subs.get_mut(&id) else {
            return Err(writer);
        };
        if let Some(missed) = replay.remove(&sub.serial) {
            let queued = std::mem::take(&mut sub.queue);
            sub.queue = missed
                .into_iter()
                .filter(|(at, p)| {
                    now.saturating_duration_since(*at) < REPLAY_MAX_AGE
                        && !p.delivered.load(Ordering::SeqCst)
                })
                .map(|(_, p)| p)
                .collect();
            sub.queue.extend(queued);
        }
        sub.phase = Phase::Held { deadline };
        sub.writer = Some(writer);
        self.schedule(&mut inner, id, now);
        Ok(())
    }

    /// Ends every subscribe of `serial`, held or about to be, that was not made with
    /// `password`, once the pushes already queued for it are written. A claim does this: a
    /// subscribe held in the thermostat's name by whoever asked for another entry code must
    /// not receive what the claim and the owner's commands push next (its next subscribe is
    /// refused), while the thermostat's own keeps its hold and receives the claim's push.
    pub fn end_other_holders(&self, serial: &str, password: Option<&str>) {
        let mut inner = self.inner.lock();
        let now = self.clock.now();
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

    /// Whether every subscribe of `serial` is parked with nothing to write, waiting for a push,
    /// its deadline or the end of its batch window. From then on only a push or time ends one:
    /// a test on a manual clock waits for this before it moves the time.
    pub fn settled(&self, serial: &str) -> bool {
        self.inner.lock().settled(serial)
    }

    /// [`Hub::settled`], and the notifier has looked at its timers at time `at` or later: no
    /// subscribe of `serial` was due then. A test that moves a manual clock to just before a
    /// deadline waits for this to show the subscribe was not ended early.
    pub fn settled_at(&self, serial: &str, at: Instant) -> bool {
        let inner = self.inner.lock();
        inner.seen.is_some_and(|seen| seen >= at) && inner.settled(serial)
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
            let now = self.clock.now();
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::clock::ManualClock;
    use std::io;
    use std::thread;

    /// How long a test waits for an event before failing: real time, generous, never reached
    /// when the hub works. The hub's own time is a manual clock the tests advance.
    const PATIENCE: Duration = Duration::from_secs(10);

    /// A sink that records what it was given (each push on a line, then `END`), can be made to
    /// fail, and wakes whoever waits for it on each write.
    #[derive(Clone, Default)]
    struct Probe {
        out: Arc<(Mutex<Vec<u8>>, Condvar)>,
        fail: Arc<Mutex<bool>>,
    }

    impl Probe {
        fn record(&self, bytes: &[u8]) -> io::Result<()> {
            if *self.fail.lock() {
                return Err(io::Error::new(io::ErrorKind::BrokenPipe, "gone"));
            }
            self.out.0.lock().extend_from_slice(bytes);
            self.out.1.notify_all();
            Ok(())
        }

        fn text(&self) -> String {
            String::from_utf8_lossy(&self.out.0.lock()).to_string()
        }

        /// Waits until what was written contains `needle`; returns all of it.
        fn wait_for(&self, needle: &str) -> String {
            let mut out = self.out.0.lock();
            while !String::from_utf8_lossy(&out).contains(needle) {
                let timed_out = self.out.1.wait_for(&mut out, PATIENCE).timed_out();
                assert!(
                    !timed_out,
                    "never saw {needle:?}; got {:?}",
                    String::from_utf8_lossy(&out)
                );
            }
            String::from_utf8_lossy(&out).to_string()
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

    /// Stops the hub as the server does (its shutdown signal) and waits for the notifier.
    fn stop(hub: &Arc<Hub>) {
        let shutdown = crate::util::shutdown::Shutdown::new();
        hub.stop_on(&shutdown);
        shutdown.trigger();
        wait_state(hub, "the notifier done", |inner| inner.notifier_done);
    }

    /// A hub on a manual clock, its notifier running.
    fn start() -> (Arc<Hub>, ManualClock) {
        let time = ManualClock::at(1_000_000);
        let hub = Arc::new(Hub::with_clock(time.clock()));
        let h = Arc::clone(&hub);
        thread::spawn(move || h.run_notifier());
        (hub, time)
    }

    /// Waits until `ok` holds of the hub's state (on a manual clock the hub wakes its
    /// condition variable after every write).
    fn wait_state(hub: &Hub, what: &str, ok: impl Fn(&Inner) -> bool) {
        let mut inner = hub.inner.lock();
        while !ok(&inner) {
            let timed_out = hub.wake.wait_for(&mut inner, PATIENCE).timed_out();
            assert!(!timed_out, "never saw {what}");
        }
    }

    /// Waits until `serial` has `n` subscribes.
    fn wait_subs(hub: &Hub, serial: &str, n: usize) {
        wait_state(hub, &format!("{n} subscribes of {serial}"), |inner| {
            inner.ids_of(serial).len() == n
        });
    }

    /// Waits until [`Hub::settled`]: from then on only a move of the clock ends a subscribe.
    fn wait_settled(hub: &Hub, serial: &str) {
        wait_state(hub, &format!("{serial} settled"), |inner| {
            inner.settled(serial)
        });
    }

    fn in_a_minute(hub: &Hub) -> Instant {
        hub.clock().now() + Duration::from_secs(60)
    }

    /// Holds a new subscribe of `serial` writing to `sink`, due in a minute of the clock.
    fn hold_a_minute(hub: &Arc<Hub>, serial: &str, sink: Probe) {
        let r = hub.reserve(serial);
        hub.hold(r, Box::new(sink), in_a_minute(hub)).ok().unwrap();
    }

    #[test]
    fn push_to_every_held_subscribe_then_end_after_quiet() {
        let (hub, time) = start();
        let (a, b) = (Probe::default(), Probe::default());
        let far = in_a_minute(&hub);
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
        wait_settled(&hub, "S");
        // Still batching: the window ends only when the clock has moved through it.
        assert_eq!(hub.subscriptions_of("S"), 2);
        time.advance(BATCH_WINDOW - Duration::from_millis(1));
        // Once the notifier has looked at that time, neither has ended.
        let at = hub.clock().now();
        wait_state(&hub, "the notifier looks", |inner| {
            inner.seen.is_some_and(|seen| seen >= at) || inner.ids_of("S").len() < 2
        });
        assert!(hub.settled_at("S", at), "ended before the window's end");
        assert!(!a.text().contains("END") && !b.text().contains("END"));
        time.advance(Duration::from_millis(1));
        for p in [&a, &b] {
            assert_eq!(p.wait_for("END"), "{\"objects\":[1]}\nEND");
        }
        stop(&hub);
    }

    #[test]
    fn push_during_reservation_is_delivered_on_hold() {
        let (hub, time) = start();
        let p = Probe::default();
        let r = hub.reserve("S");
        hub.publish("S", Origin::Server, Some(b"{}".to_vec()), vec![]);
        hub.hold(r, Box::new(p.clone()), in_a_minute(&hub))
            .ok()
            .unwrap();
        wait_settled(&hub, "S");
        assert_eq!(p.text(), "{}\n");
        time.advance(BATCH_WINDOW);
        assert_eq!(p.wait_for("END"), "{}\nEND");
        stop(&hub);
    }

    #[test]
    fn deadline_ends_with_zero_length_chunk() {
        let (hub, time) = start();
        let p = Probe::default();
        let r = hub.reserve("S");
        hub.hold(
            r,
            Box::new(p.clone()),
            hub.clock().now() + Duration::from_millis(50),
        )
        .ok()
        .unwrap();
        // A subscribe due 10 ms from now ends when the clock gets there, and the notifier,
        // having looked at the time, leaves the one due at 50 ms alone.
        let first = Probe::default();
        let r = hub.reserve("T");
        hub.hold(
            r,
            Box::new(first.clone()),
            hub.clock().now() + Duration::from_millis(10),
        )
        .ok()
        .unwrap();
        time.advance(Duration::from_millis(10));
        first.wait_for("END");
        assert_eq!((p.text().as_str(), hub.subscriptions_of("S")), ("", 1));
        time.advance(Duration::from_millis(40));
        assert_eq!(p.wait_for("END"), "END");
        wait_subs(&hub, "S", 0);
        stop(&hub);
    }

    #[test]
    fn failed_push_is_replayed_to_next_subscribe() {
        let (hub, time) = start();
        let dead = Probe::default();
        *dead.fail.lock() = true;
        hold_a_minute(&hub, "S", dead);
        hub.publish("S", Origin::Server, Some(b"{\"n\":1}".to_vec()), vec![]);
        wait_subs(&hub, "S", 0);
        let next = Probe::default();
        hold_a_minute(&hub, "S", next.clone());
        wait_settled(&hub, "S");
        assert_eq!(next.text(), "{\"n\":1}\n");
        time.advance(BATCH_WINDOW);
        assert_eq!(next.wait_for("END"), "{\"n\":1}\nEND");
        stop(&hub);
    }

    #[test]
    fn a_failed_push_is_not_replayed_after_the_replay_age() {
        let (hub, time) = start();
        let dead = Probe::default();
        *dead.fail.lock() = true;
        hold_a_minute(&hub, "S", dead);
        hub.publish("S", Origin::Server, Some(b"{\"n\":1}".to_vec()), vec![]);
        wait_subs(&hub, "S", 0);
        time.advance(REPLAY_MAX_AGE);
        let next = Probe::default();
        let r = hub.reserve("S");
        hub.hold(
            r,
            Box::new(next.clone()),
            hub.clock().now() + Duration::from_millis(100),
        )
        .ok()
        .unwrap();
        time.advance(Duration::from_millis(100));
        assert_eq!(next.wait_for("END"), "END");
        stop(&hub);
    }

    #[test]
    fn a_push_delivered_elsewhere_is_not_replayed() {
        let (hub, time) = start();
        let (live, dead) = (Probe::default(), Probe::default());
        *dead.fail.lock() = true;
        let far = in_a_minute(&hub);
        let r = hub.reserve("S");
        hub.hold(r, Box::new(dead), far).ok().unwrap();
        let r = hub.reserve("S");
        hub.hold(r, Box::new(live.clone()), far).ok().unwrap();
        hub.publish("S", Origin::Server, Some(b"{\"n\":1}".to_vec()), vec![]);
        // The dead one is gone and the live one has written the push (and marked it
        // delivered, which it does after the write).
        wait_subs(&hub, "S", 1);
        wait_settled(&hub, "S");
        assert_eq!(live.text(), "{\"n\":1}\n");
        let next = Probe::default();
        let r = hub.reserve("S");
        hub.hold(
            r,
            Box::new(next.clone()),
            hub.clock().now() + Duration::from_millis(100),
        )
        .ok()
        .unwrap();
        time.advance(Duration::from_millis(100));
        assert_eq!(next.wait_for("END"), "END");
        stop(&hub);
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
        let (hub, _time) = start();
        let r = hub.reserve("S");
        stop(&hub);
        assert!(
            hub.hold(r, Box::new(Probe::default()), hub.clock().now())
                .is_err()
        );
        assert_eq!(hub.subscriptions_of("S"), 0);
    }

    #[test]
    fn batching_never_outlasts_the_hold_deadline_by_more_than_the_window() {
        let (hub, time) = start();
        let p = Probe::default();
        let r = hub.reserve("S");
        let held_at = hub.clock().now();
        hub.hold(r, Box::new(p.clone()), held_at + Duration::from_millis(200))
            .ok()
            .unwrap();
        // A push every 500 ms would keep a plain 3 s window open for ever; the batch is capped
        // at 3 s after the hold's deadline (3.2 s). The pushes at 0 s .. 3.0 s are written and
        // the subscribe stays open; moving on to 3.5 s ends it with no further push.
        for n in 1..=7 {
            hub.publish("S", Origin::Server, Some(b"{}".to_vec()), vec![]);
            wait_settled(&hub, "S");
            assert_eq!(p.text(), "{}\n".repeat(n));
            time.advance(Duration::from_millis(500));
        }
        assert_eq!(p.wait_for("END"), format!("{}END", "{}\n".repeat(7)));
        assert_eq!(
            hub.clock().now() - held_at,
            Duration::from_millis(3_500),
            "the plain window would have ended at 6 s"
        );
        stop(&hub);
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
        };
        hub.publish("S", Origin::Device, None, vec![change.clone()]);
        let ev = rx.try_recv().unwrap();
        assert_eq!(ev.serial, "S");
        assert_eq!(ev.origin, Origin::Device);
        assert_eq!(ev.change, change);
    }
}
