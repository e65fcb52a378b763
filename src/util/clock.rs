//! Time, as a running server reads it. The protocol counts object timestamps in milliseconds
//! and a few fields (`manual_eco_timestamp`, `fan_timer_timeout`) in seconds since the Unix
//! epoch; the hub, the event streams and the bridges count deadlines in monotonic time.
//!
//! The server reads both through one [`Clock`] (`Config::clock`): the system clock, or a
//! [`ManualClock`] that a test sets and advances, so that expiry (entry keys, API keys,
//! availability, the weather cache) and every deadline (a held subscribe's hold and batch
//! window, the replay age, keep-alives, the MQTT bridge's ticks) is tested by moving time
//! rather than by waiting for it.
//!
//! - [`Clock::now_ms`]: wall time, milliseconds since the Unix epoch.
//! - [`Clock::now`]: monotonic time, an [`Instant`]. On the system clock it is
//!   `Instant::now()`; on a manual clock it is the instant the clock was made plus how far it
//!   has been moved forward since, so it never goes back and stands still between moves.
//!   Instants of different clocks must not be mixed, and a manual clock's must never reach the
//!   operating system as a deadline: wait for them through the clock.
//! - Waiting for a deadline of the clock, in one of two ways. A thread that waits on a
//!   condition variable registers its mutex and condition variable once
//!   ([`Clock::wake_on_move`]) and then waits with [`Clock::wait_until`]. A thread that waits in
//!   a `select!` adds a `recv` of [`Clock::moves`] and uses [`Clock::wait_time`] as its
//!   timeout. On the system clock both are ordinary timed waits (`moves` never fires). On a
//!   manual clock nothing times out by itself: every [`ManualClock::advance`] or
//!   [`ManualClock::set_ms`] wakes every registered waiter, which reads the time again and
//!   either acts or waits on. The wake takes the waiter's mutex first, so a move that lands
//!   between the waiter reading the time and starting to wait is not lost.
//! - [`Stopwatch`]: real elapsed time, for what measures the machine rather than the protocol
//!   (benchmarks, how long a pass took for a log line).
//!
//! [`now_ms`] is the system clock, for code that is not part of a running server (the command
//! line, migration, log file names).

use std::fmt;
use std::sync::{Arc, Mutex as StdMutex, PoisonError, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::{Condvar, Mutex, MutexGuard};

/// Milliseconds since the Unix epoch (0 if the clock is before 1970).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// How long a `select!` on a manual clock waits when its deadline is not reached: for ever,
/// in effect (crossbeam treats a timeout past the end of time as none); a move wakes it.
const UNTIL_MOVED: Duration = Duration::MAX;

/// Where a running server reads the time. Cheap to clone; every clone reads the same time.
/// The default is the system clock.
#[derive(Clone, Default)]
pub struct Clock {
    /// `None`: the system clock. Otherwise the time a [`ManualClock`] holds.
    manual: Option<Arc<Manual>>,
}

/// A manual clock's time and who to wake when it moves.
struct Manual {
    time: StdMutex<Time>,
    /// The instant that [`Time::moved`] counts from.
    base: Instant,
    wakers: StdMutex<Vec<Waker>>,
    /// Held through a whole move, wakes included, so two moves never share one round of wakes.
    moving: StdMutex<()>,
}

#[derive(Clone, Copy)]
struct Time {
    wall_ms: i64,
    /// How far the clock has moved forward in all, which is its monotonic time.
    moved: Duration,
}

/// Called on each move; says `false` once what it wakes is gone, and is then forgotten.
type Waker = Box<dyn Fn() -> bool + Send>;

impl Manual {
    fn time(&self) -> Time {
        *self.time.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets the wall time, moving monotonic time forward by as much as it went forward;
    /// then wakes every waiter.
    fn step(&self, to: impl FnOnce(i64) -> i64) {
        let _moving = self.moving.lock().unwrap_or_else(PoisonError::into_inner);
        {
            let mut time = self.time.lock().unwrap_or_else(PoisonError::into_inner);
            let wall_ms = to(time.wall_ms);
            let forward = u64::try_from(wall_ms.saturating_sub(time.wall_ms)).unwrap_or(0);
            time.wall_ms = wall_ms;
            time.moved = time.moved.saturating_add(Duration::from_millis(forward));
        }
        // Wakers take other locks: call them without the list's, so that a waker registered
        // meanwhile (a new server's hub) cannot deadlock against a move.
        let wakers =
            std::mem::take(&mut *self.wakers.lock().unwrap_or_else(PoisonError::into_inner));
        let alive: Vec<Waker> = wakers.into_iter().filter(|wake| wake()).collect();
        self.wakers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(alive);
    }
}

impl Clock {
    /// The system's clocks.
    pub fn system() -> Clock {
        Clock::default()
    }

    /// Wall time: milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> i64 {
        match &self.manual {
            None => now_ms(),
            Some(m) => m.time().wall_ms,
        }
    }

    /// Monotonic time, for deadlines and ages. Compare it only with instants of this clock.
    pub fn now(&self) -> Instant {
        match &self.manual {
            None => Instant::now(),
            Some(m) => m.base + m.time().moved,
        }
    }

    /// Whether this is a manual clock (time moves only when a test moves it).
    pub fn is_manual(&self) -> bool {
        self.manual.is_some()
    }

    /// Has every move of a manual clock wake the threads waiting on `condvar` (after taking
    /// `mutex`, so that a waiter that read the time under the lock is waiting by then). Kept
    /// until either is dropped. Nothing for the system clock.
    pub fn wake_on_move<T: Send + 'static>(&self, mutex: &Arc<Mutex<T>>, condvar: &Arc<Condvar>) {
        let Some(m) = &self.manual else { return };
        let (mutex, condvar) = (Arc::downgrade(mutex), Arc::downgrade(condvar));
        m.add_waker(Box::new(move || {
            let (Some(mutex), Some(condvar)) = (Weak::upgrade(&mutex), Weak::upgrade(&condvar))
            else {
                return false;
            };
            drop(mutex.lock());
            condvar.notify_all();
            true
        }));
    }

    /// Waits on `condvar` until notified or `deadline` (of this clock) is reached; `true` when
    /// the deadline is reached. On a manual clock only a notification or a move ends the wait,
    /// so the mutex and condition variable must be registered with [`Clock::wake_on_move`].
    pub fn wait_until<T>(
        &self,
        condvar: &Condvar,
        guard: &mut MutexGuard<'_, T>,
        deadline: Instant,
    ) -> bool {
        match &self.manual {
            None => condvar.wait_until(guard, deadline).timed_out(),
            Some(_) => {
                if self.now() < deadline {
                    condvar.wait(guard);
                }
                self.now() >= deadline
            }
        }
    }

    /// A channel that receives a message after each move of a manual clock (several moves
    /// may come as one), for a `select!` loop that waits for a deadline of this clock. It
    /// never receives anything on the system clock.
    pub fn moves(&self) -> crossbeam_channel::Receiver<()> {
        let Some(m) = &self.manual else {
            return crossbeam_channel::never();
        };
        let (tx, rx) = crossbeam_channel::bounded(1);
        m.add_waker(Box::new(move || {
            !matches!(
                tx.try_send(()),
                Err(crossbeam_channel::TrySendError::Disconnected(_))
            )
        }));
        rx
    }

    /// [`Clock::wait_time`] for a deadline in wall time (milliseconds since the Unix epoch).
    pub fn wait_time_ms(&self, deadline_ms: i64) -> Duration {
        let left = u64::try_from(deadline_ms.saturating_sub(self.now_ms())).unwrap_or(0);
        match &self.manual {
            None => Duration::from_millis(left),
            Some(_) if left == 0 => Duration::ZERO,
            Some(_) => UNTIL_MOVED,
        }
    }

    /// The timeout for a `select!` that waits until `deadline` (of this clock), alongside a
    /// `recv` of [`Clock::moves`]: what is left of it on the system clock; on a manual clock
    /// zero once it is reached, else until the clock moves.
    pub fn wait_time(&self, deadline: Instant) -> Duration {
        match &self.manual {
            None => deadline.saturating_duration_since(Instant::now()),
            Some(_) if self.now() >= deadline => Duration::ZERO,
            Some(_) => UNTIL_MOVED,
        }
    }
}

impl Manual {
    fn add_waker(&self, waker: Waker) {
        self.wakers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(waker);
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.manual {
            None => f.write_str("Clock(system)"),
            Some(m) => write!(f, "Clock(manual at {})", m.time().wall_ms),
        }
    }
}

/// A clock that stands still until it is set or advanced: the handle a test keeps while the
/// server reads [`ManualClock::clock`].
#[derive(Clone)]
pub struct ManualClock {
    manual: Arc<Manual>,
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ManualClock(at {})", self.now_ms())
    }
}

impl ManualClock {
    /// Stopped at `ms` (milliseconds since the Unix epoch).
    pub fn at(ms: i64) -> ManualClock {
        ManualClock {
            manual: Arc::new(Manual {
                time: StdMutex::new(Time {
                    wall_ms: ms,
                    moved: Duration::ZERO,
                }),
                base: Instant::now(),
                wakers: StdMutex::new(Vec::new()),
                moving: StdMutex::new(()),
            }),
        }
    }

    /// Stopped at the system clock's time now, so timestamps still look current.
    pub fn starting_now() -> ManualClock {
        ManualClock::at(now_ms())
    }

    /// The clock to hand to the server; it reads this handle's time.
    pub fn clock(&self) -> Clock {
        Clock {
            manual: Some(Arc::clone(&self.manual)),
        }
    }

    pub fn now_ms(&self) -> i64 {
        self.manual.time().wall_ms
    }

    /// Sets the wall time. Monotonic time moves forward by as much as this moves the wall
    /// time forward, and stays where it is when it moves it back.
    pub fn set_ms(&self, ms: i64) {
        self.manual.step(|_| ms);
    }

    /// Moves the time forward by `by` (whole milliseconds).
    pub fn advance(&self, by: Duration) {
        let by = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.manual.step(|ms| ms.saturating_add(by));
    }
}

/// The machine's monotonic time, whatever clock a server reads: for the benchmarks, which pass
/// instants between threads to time a command's push. Never for a server's deadlines (those
/// read [`Clock::now`]); elapsed time in one place is a [`Stopwatch`].
pub fn real_now() -> Instant {
    Instant::now()
}

/// Real elapsed time, whatever clock the server reads: for measuring the machine (benchmarks,
/// how long a pass took), never for the protocol's deadlines.
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch(Instant);

impl Stopwatch {
    pub fn start() -> Stopwatch {
        Stopwatch(real_now())
    }

    pub fn elapsed(&self) -> Duration {
        self.0.elapsed()
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for a millisecond timestamp (UTC).
pub fn iso8601_ms(ms: i64) -> String {
    let Some(t) = utc(ms) else {
        return String::from("1970-01-01T00:00:00.000Z");
    };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// The UTC date and time of a millisecond timestamp (`None` past the year 9999), for hearth's
/// own formats: jiff's printers (its `Display`, RFC 2822's) cost some 90 kB of an ARM binary.
pub fn utc(ms: i64) -> Option<jiff::civil::DateTime> {
    let t = jiff::Timestamp::from_millisecond(ms).ok()?;
    Some(jiff::tz::Offset::UTC.to_datetime(t))
}

/// `YYYYmmddTHHMMSSZ` (UTC), for file names.
pub fn compact_utc(ms: i64) -> String {
    let iso = iso8601_ms(ms);
    // 2026-11-21T12:03:25.457Z -> 20261121T120325Z
    let digits: String = iso[..19].chars().filter(|c| c.is_ascii_digit()).collect();
    format!("{}T{}Z", &digits[..8], &digits[8..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_every_clone_sees_it() {
        let manual = ManualClock::at(1_000);
        let (a, b) = (manual.clock(), manual.clock().clone());
        assert_eq!((a.now_ms(), b.now_ms()), (1_000, 1_000));
        manual.advance(Duration::from_millis(1_500));
        assert_eq!((a.now_ms(), b.now_ms()), (2_500, 2_500));
        manual.set_ms(10);
        assert_eq!(a.now_ms(), 10);
        let system = Clock::system();
        let before = now_ms();
        let read = system.now_ms();
        assert!(read >= before && read <= now_ms());
        assert_eq!(format!("{a:?}"), "Clock(manual at 10)");
    }

    #[test]
    fn a_manual_clock_s_monotonic_time_moves_forward_only() {
        let manual = ManualClock::at(10_000);
        let clock = manual.clock();
        let start = clock.now();
        manual.advance(Duration::from_millis(250));
        assert_eq!(clock.now() - start, Duration::from_millis(250));
        manual.set_ms(5_000);
        assert_eq!(
            (clock.now_ms(), clock.now() - start),
            (5_000, Duration::from_millis(250))
        );
        manual.set_ms(6_000);
        assert_eq!(clock.now() - start, Duration::from_millis(1_250));
        assert!(clock.is_manual() && !Clock::system().is_manual());
    }

    /// A thread waiting for a deadline of a manual clock sleeps through moves that do not reach
    /// it and wakes at the one that does; a `select!` waiter hears of every move.
    #[test]
    fn a_move_wakes_whoever_waits_for_the_clock() {
        let manual = ManualClock::at(0);
        let clock = manual.clock();
        let state = Arc::new(Mutex::new(0u32));
        let wake = Arc::new(Condvar::new());
        clock.wake_on_move(&state, &wake);
        let moves = clock.moves();
        let deadline = clock.now() + Duration::from_secs(5);
        assert_eq!(clock.wait_time(deadline), UNTIL_MOVED);
        let (started_tx, started) = crossbeam_channel::bounded(1);
        let waiter = {
            let (clock, state, wake) = (clock.clone(), Arc::clone(&state), Arc::clone(&wake));
            std::thread::spawn(move || {
                let mut guard = state.lock();
                started_tx.send(()).unwrap();
                let mut wakes = 0;
                while !clock.wait_until(&wake, &mut guard, deadline) {
                    wakes += 1;
                }
                (wakes, clock.now_ms())
            })
        };
        started.recv().unwrap();
        manual.advance(Duration::from_secs(2));
        assert!(moves.try_recv().is_ok());
        manual.advance(Duration::from_secs(3));
        let (wakes, woke_at) = waiter.join().unwrap();
        assert!(wakes <= 1, "woken {wakes} times before its deadline");
        assert_eq!(woke_at, 5_000);
        assert_eq!(clock.wait_time(deadline), Duration::ZERO);
        assert!(moves.try_recv().is_ok());
        drop(wake);
        manual.advance(Duration::from_secs(1));
        assert_eq!(
            manual.manual.wakers.lock().unwrap().len(),
            1,
            "the dropped waker is gone"
        );
    }

    #[test]
    fn formats_utc() {
        assert_eq!(iso8601_ms(1_766_166_234_000), "2025-12-19T17:43:54.000Z");
        assert_eq!(compact_utc(1_766_166_234_000), "20251219T174354Z");
        assert_eq!(iso8601_ms(0), "1970-01-01T00:00:00.000Z");
    }
}
