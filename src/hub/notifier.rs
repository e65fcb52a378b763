//! Scheduling held subscribes: [`Hub::schedule`] decides what one needs next whenever it
//! changes; writes go to a small pool of writer threads; the notifier thread ends the
//! subscribes whose deadline or batch window ran out, and writes itself when no writer thread
//! could be started.
//!
//! Time is the hub's [`crate::util::clock::Clock`]: the notifier sleeps until the earliest
//! timer by that clock, and a manual clock's move wakes it to look again.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::Instant;

use parking_lot::MutexGuard;

use super::{
    BATCH_WINDOW, Hub, Inner, Phase, Push, REPLAY_LIMIT, REPLAY_MAX_AGE, Sub, WRITER_STACK,
    WRITERS, Writer,
};

impl Hub {
    /// The notifier loop; runs on its own thread until [`Hub::stop_on`]. It starts
    /// [`WRITERS`] threads that do every write, so a thermostat that stopped reading holds up
    /// only the writer it is on, until the connection's send timeout
    /// ([`crate::http::listener::PARKED_SEND_TIMEOUT`]) drops it, and not every other push. A
    /// subscribe has at most one write in flight, so its pushes stay in order.
    pub fn run_notifier(&self) {
        let (jobs, queue) = crossbeam_channel::unbounded::<Job>();
        thread::scope(|scope| {
            let mut writers = 0;
            for i in 0..WRITERS {
                let queue = queue.clone();
                let spawned = thread::Builder::new()
                    .name(format!("push-writer-{i}"))
                    .stack_size(WRITER_STACK)
                    .spawn_scoped(scope, move || {
                        for job in queue {
                            let done = job.run();
                            let mut inner = self.inner.lock();
                            self.settle(&mut inner, done, self.clock.now());
                        }
                    });
                match spawned {
                    Ok(_) => writers += 1,
                    Err(e) => log::warn!("could not start a push writer: {e}"),
                }
            }
            // With no writer thread the notifier writes itself, one job after another.
            if writers > 0 {
                self.inner.lock().writers = Some(jobs);
            } else {
                drop(jobs);
            }
            self.dispatch();
            // The writers end once the queue's last sender is gone.
            self.inner.lock().writers = None;
        });
        self.inner.lock().notifier_done = true;
        self.wake.notify_all();
    }

    /// Decides what subscribe `id` needs next, after anything about it changed: a write now
    /// (handed to a writer thread, else left for the notifier), a wake-up at its deadline or
    /// the end of its batch window, or nothing (reserved, or a write is under way).
    pub(super) fn schedule(&self, inner: &mut Inner, id: u64, now: Instant) {
        let Inner {
            subs,
            timers,
            ready,
            writers,
            stopping,
            ..
        } = inner;
        let Some(sub) = subs.get_mut(&id) else {
            return;
        };
        if let Some(at) = sub.timer.take() {
            timers.remove(&(at, id));
        }
        match sub.due_at(now, *stopping) {
            None => {}
            Some(when) if when <= now => {
                let Some(job) = sub.take_job(id, *stopping) else {
                    return;
                };
                if let Some(job) = hand_over(writers, job) {
                    // Given back, for the notifier to write.
                    sub.writer = Some(job.writer);
                    sub.queue = job.chunks;
                    ready.push(id);
                    self.wake.notify_all();
                }
            }
            Some(when) => {
                // The notifier sleeps until the earliest timer: wake it only for an earlier one.
                let sooner = timers.first().is_none_or(|(first, _)| when < *first);
                sub.timer = Some(when);
                timers.insert((when, id));
                if sooner {
                    self.wake.notify_all();
                }
            }
        }
    }

    /// Ends every subscribe whose timer ran out, and writes what no writer thread took;
    /// returns once stopping and nothing is parked or being written.
    fn dispatch(&self) {
        let mut inner = self.inner.lock();
        // Once stopping, every held subscribe is ended by one sweep: after it, a subscribe
        // gets its writer back only through `settle`, which schedules its end itself (or
        // leaves it in `ready`), so the sweep is not repeated for each write that settles
        // (10,000 held subscribes made that ten thousand passes over them all).
        let mut swept = false;
        loop {
            let now = self.clock.now();
            // Every subscribe due at `now` leaves the settled state (its writer taken) before
            // this lock is let go: see `Hub::settled_at`.
            if inner.seen != Some(now) {
                inner.seen = Some(now);
                // For whoever waits to see the notifier look (a test on a manual clock); with
                // no one waiting this is one atomic load.
                self.wake.notify_all();
            }
            let stopping = inner.stopping;
            let mut due = std::mem::take(&mut inner.ready);
            while let Some(&(at, id)) = inner.timers.first() {
                if at > now && !stopping {
                    break;
                }
                inner.timers.pop_first();
                if let Some(sub) = inner.subs.get_mut(&id) {
                    sub.timer = None;
                }
                due.push(id);
            }
            if stopping && !swept {
                swept = true;
                // Held subscribes with nothing queued and no timer (none today) end too.
                due.extend(
                    inner
                        .subs
                        .iter()
                        .filter(|(_, s)| s.writer.is_some())
                        .map(|(id, _)| *id),
                );
            }
            let mut jobs = Vec::new();
            for id in due {
                let Some(sub) = inner.subs.get_mut(&id) else {
                    continue;
                };
                match sub.due_at(now, stopping) {
                    Some(when) if when <= now => jobs.extend(sub.take_job(id, stopping)),
                    // Not due after all (its batch window was extended): wait again.
                    _ => self.schedule(&mut inner, id, now),
                }
            }
            if jobs.is_empty() {
                // A subscribe being written is held or batching, so this waits for its writer.
                if stopping
                    && inner
                        .subs
                        .values()
                        .all(|s| matches!(s.phase, Phase::Reserved))
                {
                    return;
                }
                match inner.timers.first() {
                    Some(&(at, _)) if !stopping => {
                        self.clock.wait_until(&self.wake, &mut inner, at);
                    }
                    _ => self.wake.wait(&mut inner),
                }
                continue;
            }
            for job in jobs {
                if let Some(job) = hand_over(&inner.writers, job) {
                    let done = MutexGuard::unlocked(&mut inner, || job.run());
                    let now = self.clock.now();
                    self.settle(&mut inner, done, now);
                }
            }
        }
    }

    /// After a write: the subscribe goes on (batching, or written again at once if pushes
    /// arrived meanwhile) or is removed, its unwritten pushes kept for the serial's next one.
    fn settle(&self, inner: &mut Inner, done: Done, written_at: Instant) {
        // The notifier waits for writes in flight before it stops. A test on a manual clock
        // waits for a write to settle before it moves the time (the batch window counts from
        // the end of the write), so there every write wakes whoever waits.
        if inner.stopping || self.clock.is_manual() {
            self.wake.notify_all();
        }
        let Some(sub) = inner.subs.get_mut(&done.id) else {
            return;
        };
        if done.ok && !done.ended {
            sub.writer = done.writer;
            let cap = match sub.phase {
                Phase::Held { deadline } => deadline + BATCH_WINDOW,
                Phase::Batching { cap, .. } => cap,
                Phase::Reserved => written_at + BATCH_WINDOW,
            };
            sub.phase = Phase::Batching {
                until: (written_at + BATCH_WINDOW).min(cap),
                cap,
            };
            self.schedule(inner, done.id, written_at);
            return;
        }
        let Some(mut sub) = inner.remove(done.id) else {
            return;
        };
        // Pushes that never reached the thermostat, and any that arrived while we wrote, go to
        // its next subscribe.
        let mut missed = done.unwritten;
        missed.append(&mut sub.queue);
        missed.retain(|p| !p.delivered.load(Ordering::SeqCst));
        if !missed.is_empty() {
            let replay = inner.replay.entry(sub.serial).or_default();
            replay.retain(|(at, _)| written_at.saturating_duration_since(*at) < REPLAY_MAX_AGE);
            replay.extend(missed.into_iter().map(|p| (written_at, p)));
            let excess = replay.len().saturating_sub(REPLAY_LIMIT);
            replay.drain(..excess);
        }
    }
}

/// Gives `job` to the writer threads; gives it back when there are none.
fn hand_over(writers: &Option<crossbeam_channel::Sender<Job>>, job: Job) -> Option<Job> {
    match writers {
        Some(writers) => writers.send(job).err().map(|e| e.into_inner()),
        None => Some(job),
    }
}

impl Sub {
    /// Its writer and queued pushes, as a write to do now; ends the response when nothing is
    /// queued (its time is up) or it must end.
    fn take_job(&mut self, id: u64, stopping: bool) -> Option<Job> {
        let end = stopping || self.release || self.queue.is_empty();
        Some(Job {
            id,
            writer: self.writer.take()?,
            chunks: std::mem::take(&mut self.queue),
            end,
        })
    }

    /// When this subscribe next needs a write, if it is parked.
    fn due_at(&self, now: Instant, stopping: bool) -> Option<Instant> {
        self.writer.as_ref()?;
        if stopping || self.release || !self.queue.is_empty() {
            return Some(now);
        }
        match self.phase {
            Phase::Reserved => None,
            Phase::Held { deadline } => Some(deadline),
            Phase::Batching { until, .. } => Some(until),
        }
    }
}

pub(super) struct Job {
    id: u64,
    writer: Writer,
    chunks: Vec<Arc<Push>>,
    end: bool,
}

struct Done {
    id: u64,
    writer: Option<Writer>,
    ok: bool,
    ended: bool,
    unwritten: Vec<Arc<Push>>,
}

impl Job {
    fn run(mut self) -> Done {
        let mut written = 0;
        let mut result = Ok(());
        for push in &self.chunks {
            result = self.writer.push(&push.bytes);
            if result.is_err() {
                break;
            }
            push.delivered.store(true, Ordering::SeqCst);
            written += 1;
        }
        if result.is_ok() && self.end {
            result = self.writer.end();
        }
        let ok = result.is_ok();
        if let Err(e) = result {
            log::debug!("a held subscribe could not be written: {e}");
        }
        let unwritten = self.chunks.split_off(written);
        Done {
            id: self.id,
            writer: (ok && !self.end).then_some(self.writer),
            ok,
            ended: self.end,
            unwritten,
        }
    }
}
