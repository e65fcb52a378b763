//! The notifier: one thread that decides which held subscribe is due (a push queued, its
//! deadline or batch window over, the server stopping) and hands the write to a small pool of
//! writer threads.

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
    /// The notifier loop; runs on its own thread until [`Hub::shutdown`]. It decides what is
    /// due and hands each write to one of [`WRITERS`] threads, so a thermostat that stopped
    /// reading holds up only the writer it is on, until the connection's send timeout
    /// ([`crate::http::socket::PARKED_SEND_TIMEOUT`]) drops it, and not every other push. A
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
                            self.settle(&mut self.inner.lock(), done, Instant::now());
                            self.wake.notify_all();
                        }
                    });
                match spawned {
                    Ok(_) => writers += 1,
                    Err(e) => log::warn!("could not start a push writer: {e}"),
                }
            }
            // With no writer thread the notifier writes itself, one job after another.
            self.dispatch(|job| match writers {
                0 => Err(job),
                _ => jobs.send(job).map_err(|e| e.into_inner()),
            });
            drop(jobs);
        });
        self.inner.lock().notifier_done = true;
        self.wake.notify_all();
    }

    /// Takes every due subscribe's writer and passes the job to `send`, or runs it here if
    /// `send` gives it back; returns once stopping and nothing is parked or being written.
    fn dispatch(&self, send: impl Fn(Job) -> Result<(), Job>) {
        let mut inner = self.inner.lock();
        loop {
            let now = Instant::now();
            let stopping = inner.stopping;
            let mut due = Vec::new();
            let mut next_wake: Option<Instant> = None;
            for (id, sub) in inner.subs.iter_mut() {
                let Some(when) = sub.due_at(now, stopping) else {
                    continue;
                };
                if when <= now {
                    let end = stopping || sub.release || sub.queue.is_empty();
                    if let Some(writer) = sub.writer.take() {
                        due.push(Job {
                            id: *id,
                            writer,
                            chunks: std::mem::take(&mut sub.queue),
                            end,
                        });
                    }
                } else {
                    next_wake = Some(next_wake.map_or(when, |t| t.min(when)));
                }
            }
            if due.is_empty() {
                // A subscribe being written is held or batching, so this waits for its writer.
                if stopping
                    && inner
                        .subs
                        .values()
                        .all(|s| matches!(s.phase, Phase::Reserved))
                {
                    return;
                }
                match next_wake {
                    Some(t) => {
                        self.wake.wait_until(&mut inner, t);
                    }
                    None => self.wake.wait(&mut inner),
                }
                continue;
            }
            for job in due {
                if let Err(job) = send(job) {
                    let done = MutexGuard::unlocked(&mut inner, || job.run());
                    self.settle(&mut inner, done, Instant::now());
                }
            }
        }
    }

    fn settle(&self, inner: &mut Inner, done: Done, written_at: Instant) {
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
            replay.retain(|(at, _)| at.elapsed() < REPLAY_MAX_AGE);
            replay.extend(missed.into_iter().map(|p| (written_at, p)));
            let excess = replay.len().saturating_sub(REPLAY_LIMIT);
            replay.drain(..excess);
        }
    }
}

impl Sub {
    /// When this subscribe next needs the notifier, if it is parked.
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

struct Job {
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
