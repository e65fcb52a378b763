//! Live event streams (`GET /api/events`): Server-Sent Events, one per committed bucket change,
//! and, for a stream that asks (`?alerts=1`), one named `alert` per alert that starts or clears
//! (the page's banners: an alert such as offline starts with no change of any thermostat).
//!
//! Streams are parked like held subscribes: the worker that accepted the request writes the
//! response head and hands the raw writer to this module's own thread, then goes back to
//! serving requests. The thread receives every change from the hub's watch channel and queues
//! it for each stream whose filter matches, queues a comment every [`KEEP_ALIVE`] so proxies
//! and clients see the connection is alive, and has its writer threads write what is queued,
//! dropping a stream whose write fails or whose backlog grows too long. It is a
//! separate thread from the hub's notifier so a dashboard that reads slowly never delays a
//! push to a thermostat.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, never, select, unbounded};
use parking_lot::Mutex;
use serde::Serialize;

use crate::alerts::Notice;
use crate::http::ChunkedWriter;
use crate::hub::{ChangeEvent, Interest};
use crate::util::clock::Clock;
use crate::util::shutdown::Shutdown;

/// Streams open at once; one more gets 503.
pub const MAX_STREAMS: usize = 64;
// One client address may hold `MAX_EVENT_STREAMS_PER_CLIENT` of them (8 by default): a
// dashboard tab or an integration holds one, so 8 leave room for a household's tabs on one
// computer, while one address can never take all 64 (a page reopened in a loop, or a client
// that reconnects without closing, would otherwise shut every other one out). It is a setting
// because behind a reverse proxy on the same machine every client has the proxy's address.
/// A comment line this often keeps idle streams alive (the configuration's default).
pub const KEEP_ALIVE: Duration = crate::config::EVENT_KEEP_ALIVE;
/// Text waiting for one stream's writer, beyond which the stream is dropped as not reading.
pub const BACKLOG_LIMIT: usize = 1024 * 1024;
/// Threads writing to streams; a client that stopped reading occupies one until it is dropped.
const WRITERS: usize = 2;
const WRITER_STACK: usize = 128 * 1024;
const CONNECTED: &[u8] = b": connected\n\n";

pub struct EventStreams {
    keep_alive: Duration,
    /// Where keep-alives are timed (the server's clock).
    clock: Clock,
    open: Arc<AtomicUsize>,
    /// Streams open (or being opened) per client address.
    per_client: Arc<Mutex<HashMap<IpAddr, usize>>>,
    control: Sender<Control>,
    inbox: Receiver<Control>,
    /// What the streams' thread has done, for [`EventStreams::settled_at`].
    progress: Mutex<Progress>,
}

/// Writes in flight, and the latest time at which the streams' thread knew every keep-alive
/// due had been handed to its writer.
#[derive(Default)]
struct Progress {
    writing: usize,
    seen: Option<Instant>,
}

enum Control {
    Open(Stream),
    Stop,
}

/// A place among the [`MAX_STREAMS`] and its client's; given back when dropped (unused, or
/// with its stream).
pub struct Admission {
    open: Arc<AtomicUsize>,
    per_client: Arc<Mutex<HashMap<IpAddr, usize>>>,
    client: Option<IpAddr>,
    control: Sender<Control>,
}

impl Drop for Admission {
    fn drop(&mut self) {
        if let Some(client) = self.client {
            let mut per_client = self.per_client.lock();
            if let Some(n) = per_client.get_mut(&client) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    per_client.remove(&client);
                }
            }
        }
        self.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Why a stream was not admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// [`MAX_STREAMS`] are open.
    Full,
    /// The client's address holds its limit of streams already.
    ClientFull { limit: usize },
}

impl Admission {
    /// Hands a stream whose response head has been written to the streams' thread. `key_id`:
    /// the API key that opened it (with `CONTROL_REQUIRE_KEY`), checked before every write;
    /// `alerts`: whether it also gets the `alert` events.
    pub fn park(
        self,
        writer: ChunkedWriter,
        serial: Option<String>,
        alerts: bool,
        key_id: Option<String>,
    ) {
        let control = self.control.clone();
        let stream = Stream {
            writer: Some(writer),
            // The first bytes tell the client (and any proxy) the stream is live.
            pending: vec![Arc::from(CONNECTED)],
            pending_bytes: CONNECTED.len(),
            ending: false,
            serial,
            alerts,
            key_id,
            _admission: self,
        };
        // If the thread has stopped, the stream is dropped here, which closes it.
        let _ = control.send(Control::Open(stream));
    }
}

struct Stream {
    /// `None` while a writer thread is writing to it.
    writer: Option<ChunkedWriter>,
    /// Chunks waiting for the writer (one per event, as clients may expect), and their size.
    pending: Vec<Arc<[u8]>>,
    pending_bytes: usize,
    /// End the stream once `pending` is written (stopping, or its key no longer works).
    ending: bool,
    /// Only this thermostat's events (`?serial=`).
    serial: Option<String>,
    /// Alert notices too (`?alerts=1`).
    alerts: bool,
    /// The API key the stream was opened with; once it is revoked or expired the stream ends.
    key_id: Option<String>,
    _admission: Admission,
}

/// One write, run on a writer thread: each of `chunks`, then the end of the body if `end`.
struct Job {
    id: u64,
    writer: ChunkedWriter,
    chunks: Vec<Arc<[u8]>>,
    end: bool,
}

/// A finished write: the writer back, if the stream goes on.
struct Done {
    id: u64,
    writer: Option<ChunkedWriter>,
}

impl Job {
    fn run(mut self) -> Done {
        let mut result = Ok(());
        for chunk in &self.chunks {
            result = self.writer.chunk(chunk);
            if result.is_err() {
                break;
            }
        }
        if result.is_ok() && self.end {
            result = self.writer.end();
        }
        if let Err(e) = &result {
            log::debug!("an event stream could not be written: {e}");
        }
        Done {
            id: self.id,
            writer: (result.is_ok() && !self.end).then_some(self.writer),
        }
    }
}

/// The JSON of one event's `data:` line.
#[derive(Serialize)]
struct EventData<'a> {
    serial: &'a str,
    object_key: &'a str,
    revision: i64,
    timestamp: i64,
    changed: &'a [String],
    /// `device` (the thermostat reported it), `server` (a command or claim) or `presence` (the
    /// presence rule: `crate::people`).
    origin: &'static str,
}

/// One event in SSE framing: `data: {...}` and a blank line.
pub fn format_event(event: &ChangeEvent) -> Vec<u8> {
    let data = EventData {
        serial: &event.serial,
        object_key: &event.change.key,
        revision: event.change.revision,
        timestamp: event.change.timestamp,
        changed: &event.change.changed,
        origin: event.origin.as_str(),
    };
    let json = serde_json::to_string(&data).unwrap_or_else(|_| "{}".into());
    format!("data: {json}\n\n").into_bytes()
}

/// One alert notice in SSE framing: `event: alert` and the notice as the webhook sends it. Named,
/// so that a client reading only unnamed events (EventSource's `onmessage`) never sees one.
pub fn format_alert(notice: &Notice) -> Vec<u8> {
    let json = serde_json::to_string(notice).unwrap_or_else(|_| "{}".into());
    format!("event: alert\ndata: {json}\n\n").into_bytes()
}

impl Default for EventStreams {
    fn default() -> Self {
        EventStreams::new(KEEP_ALIVE, Clock::system())
    }
}

impl EventStreams {
    /// Streams that get a comment line every `keep_alive` of `clock` when there is nothing
    /// else to send.
    pub fn new(keep_alive: Duration, clock: Clock) -> EventStreams {
        let (control, inbox) = unbounded();
        EventStreams {
            keep_alive,
            clock,
            open: Arc::new(AtomicUsize::new(0)),
            per_client: Arc::new(Mutex::new(HashMap::new())),
            control,
            inbox,
            progress: Mutex::new(Progress::default()),
        }
    }

    /// Whether the streams' thread has looked at the time at `at` or later, handed out every
    /// keep-alive due by then, and has no write in flight. A test that moves a manual clock
    /// waits for this before it looks at what a stream received.
    pub fn settled_at(&self, at: Instant) -> bool {
        let progress = self.progress.lock();
        progress.writing == 0 && progress.seen.is_some_and(|seen| seen >= at)
    }

    /// A place for a new stream from `client` (`None`: not known, counted only in the total),
    /// which may hold `per_client` streams at once; refused when [`MAX_STREAMS`] are open or
    /// the client holds its `per_client`.
    pub fn admit(&self, client: Option<IpAddr>, per_client: usize) -> Result<Admission, Refused> {
        let mut counts = self.per_client.lock();
        let held = client.map_or(0, |c| counts.get(&c).copied().unwrap_or(0));
        if client.is_some() && held >= per_client {
            return Err(Refused::ClientFull { limit: per_client });
        }
        self.open
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < MAX_STREAMS).then_some(n + 1)
            })
            .map_err(|_| Refused::Full)?;
        if let Some(c) = client {
            *counts.entry(c).or_insert(0) += 1;
        }
        Ok(Admission {
            open: Arc::clone(&self.open),
            per_client: Arc::clone(&self.per_client),
            client,
            control: self.control.clone(),
        })
    }

    /// Streams open (or being opened).
    pub fn open_count(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// Whether a change is wanted: only while a stream is open (or being opened), so with
    /// no dashboard watching the streams' thread is not woken for every change.
    pub fn interest(&self) -> Interest {
        let open = Arc::clone(&self.open);
        Box::new(move |_| open.load(Ordering::SeqCst) > 0)
    }

    /// When `shutdown` is triggered: ends every stream and stops [`EventStreams::run`].
    pub fn stop_on(&self, shutdown: &Shutdown) {
        let control = self.control.clone();
        shutdown.on_trigger(move || {
            let _ = control.send(Control::Stop);
        });
    }

    /// The streams' thread: runs until the signal given to [`EventStreams::stop_on`]. `alerts`:
    /// the alert board's notices, for the streams that asked for them. `key_valid` says whether an API
    /// key (by id) still works; a stream opened with one that no longer does is ended before
    /// anything more is written to it (at its next event or keep-alive). `shown` says whether
    /// a thermostat's events may go out at all (with pairing required, not those of one nobody
    /// owns): an event of one that may not is dropped here, for every stream, whatever its
    /// filter. It is asked when the event is handed out, after the change committed.
    ///
    /// It hands the writes to [`WRITERS`] threads, so a dashboard that stopped reading holds up
    /// only the writer it is on, until the connection's send timeout
    /// ([`crate::http::listener::PARKED_SEND_TIMEOUT`]) drops it. A stream has at most one write
    /// in flight; what arrives meanwhile waits in its backlog, and a stream whose backlog passes
    /// [`BACKLOG_LIMIT`] is dropped.
    pub fn run(
        &self,
        changes: Receiver<Arc<ChangeEvent>>,
        alerts: Receiver<Arc<Notice>>,
        key_valid: impl Fn(&str) -> bool,
        shown: impl Fn(&str) -> bool,
    ) {
        let (jobs, queue) = unbounded::<Job>();
        let (finished, done) = unbounded::<Done>();
        thread::scope(|scope| {
            let mut writers = 0;
            for i in 0..WRITERS {
                let (queue, finished) = (queue.clone(), finished.clone());
                let spawned = thread::Builder::new()
                    .name(format!("event-writer-{i}"))
                    .stack_size(WRITER_STACK)
                    .spawn_scoped(scope, move || {
                        for job in queue {
                            let _ = finished.send(job.run());
                        }
                    });
                match spawned {
                    Ok(_) => writers += 1,
                    Err(e) => log::warn!("could not start an event writer: {e}"),
                }
            }
            // With no writer thread this thread writes itself.
            let send = |job: Job| {
                let unsent = match writers {
                    0 => Some(job),
                    _ => jobs.send(job).err().map(|e| e.into_inner()),
                };
                if let Some(job) = unsent {
                    let _ = finished.send(job.run());
                }
            };
            self.serve(&changes, alerts, &done, &send, &key_valid, &shown);
            drop(jobs);
        });
    }

    fn serve(
        &self,
        changes: &Receiver<Arc<ChangeEvent>>,
        mut alerts: Receiver<Arc<Notice>>,
        finished: &Receiver<Done>,
        send: &dyn Fn(Job),
        key_valid: &dyn Fn(&str) -> bool,
        shown: &dyn Fn(&str) -> bool,
    ) {
        let mut streams = Streams {
            open: HashMap::new(),
            next_id: 0,
            send,
            progress: &self.progress,
        };
        let clock = &self.clock;
        // A manual clock's moves wake this loop to look at the time again.
        let moved = clock.moves();
        let mut next_keep_alive = clock.now() + self.keep_alive;
        loop {
            let now = clock.now();
            if now < next_keep_alive {
                // Nothing is due at `now`.
                self.progress.lock().seen = Some(now);
            }
            let wait = clock.wait_time(next_keep_alive);
            select! {
                recv(changes) -> event => {
                    let Ok(event) = event else { break };
                    if !shown(&event.serial) {
                        continue;
                    }
                    // One copy of the text, shared by every stream it is queued for.
                    let text: Arc<[u8]> = format_event(&event).into();
                    streams.each(key_valid, |s| {
                        s.serial.as_ref().is_none_or(|f| *f == event.serial).then_some(&text)
                    });
                }
                recv(alerts) -> notice => {
                    // The board lives as long as the server: a closed channel only stops these.
                    let Ok(notice) = notice else {
                        alerts = never();
                        continue;
                    };
                    let serial = &notice.alert.serial;
                    if !shown(serial) {
                        continue;
                    }
                    let text: Arc<[u8]> = format_alert(&notice).into();
                    streams.each(key_valid, |s| {
                        (s.alerts && s.serial.as_ref().is_none_or(|f| f == serial)).then_some(&text)
                    });
                }
                recv(self.inbox) -> msg => match msg {
                    Ok(Control::Open(stream)) => streams.add(stream),
                    Ok(Control::Stop) | Err(_) => break,
                },
                recv(finished) -> done => {
                    if let Ok(done) = done {
                        streams.settle(done);
                    }
                }
                recv(moved) -> _ => {}
                default(wait) => {
                    // Read before the keep-alives go out, so the next is an interval from
                    // this one however long handing them out takes.
                    let now = clock.now();
                    // A stream being written to needs no keep-alive.
                    let keep_alive: Arc<[u8]> = Arc::from(&b": keep-alive\n\n"[..]);
                    streams.each(key_valid, |s| {
                        (s.writer.is_some() && s.pending.is_empty()).then_some(&keep_alive)
                    });
                    next_keep_alive = now + self.keep_alive;
                    self.progress.lock().seen = Some(now);
                }
            }
        }
        // End every stream after what it has queued, waiting for writes in flight (each
        // finishes within the send timeout).
        for s in streams.open.values_mut() {
            s.ending = true;
        }
        let ids: Vec<u64> = streams.open.keys().copied().collect();
        for id in ids {
            streams.flush(id);
        }
        while !streams.open.is_empty() {
            let Ok(done) = finished.recv() else { break };
            streams.settle(done);
        }
        // Streams parked after the stop are dropped (closed) with the channel's contents.
        while let Ok(Control::Open(s)) = self.inbox.try_recv() {
            drop(s);
        }
    }
}

/// The open streams, as the streams' thread keeps them.
struct Streams<'a> {
    open: HashMap<u64, Stream>,
    next_id: u64,
    send: &'a dyn Fn(Job),
    progress: &'a Mutex<Progress>,
}

impl Streams<'_> {
    fn add(&mut self, stream: Stream) {
        self.next_id += 1;
        let id = self.next_id;
        self.open.insert(id, stream);
        self.flush(id);
    }

    /// Queues `text(stream)` on every stream it gives text for, and ends the streams whose key
    /// no longer works; drops a stream whose backlog is over the limit.
    fn each<'t>(
        &mut self,
        key_valid: &dyn Fn(&str) -> bool,
        text: impl Fn(&Stream) -> Option<&'t Arc<[u8]>>,
    ) {
        let ids: Vec<u64> = self.open.keys().copied().collect();
        for id in ids {
            let Some(s) = self.open.get_mut(&id) else {
                continue;
            };
            if s.ending {
                continue;
            }
            if !s.key_id.as_deref().is_none_or(key_valid) {
                s.ending = true;
            } else if let Some(text) = text(s) {
                // However big one event is, a stream with no backlog takes it.
                if s.pending_bytes > 0 && s.pending_bytes + text.len() > BACKLOG_LIMIT {
                    log::info!("an event stream is not reading; dropping it");
                    self.open.remove(&id);
                    continue;
                }
                s.pending_bytes += text.len();
                s.pending.push(Arc::clone(text));
            }
            self.flush(id);
        }
    }

    /// Starts writing a stream's backlog (and its end, if it is ending) unless a write to it
    /// is already in flight.
    fn flush(&mut self, id: u64) {
        let Some(s) = self.open.get_mut(&id) else {
            return;
        };
        if s.pending.is_empty() && !s.ending {
            return;
        }
        let Some(writer) = s.writer.take() else {
            return;
        };
        s.pending_bytes = 0;
        self.progress.lock().writing += 1;
        (self.send)(Job {
            id,
            writer,
            chunks: std::mem::take(&mut s.pending),
            end: s.ending,
        });
    }

    /// A write finished: the stream goes on with its writer back, or is closed.
    fn settle(&mut self, done: Done) {
        let mut progress = self.progress.lock();
        progress.writing = progress.writing.saturating_sub(1);
        drop(progress);
        match (done.writer, self.open.get_mut(&done.id)) {
            (Some(writer), Some(s)) => {
                s.writer = Some(writer);
                self.flush(done.id);
            }
            _ => {
                self.open.remove(&done.id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::{BucketChange, Origin};

    #[test]
    fn at_most_max_streams_are_admitted_and_places_come_back() {
        let streams = EventStreams::default();
        let admitted: Vec<_> = (0..MAX_STREAMS)
            .filter_map(|_| streams.admit(None, 1).ok())
            .collect();
        assert_eq!(admitted.len(), MAX_STREAMS);
        assert_eq!(streams.admit(None, 1).err(), Some(Refused::Full));
        drop(admitted);
        assert_eq!(streams.open_count(), 0);
        assert!(streams.admit(None, 1).is_ok());
    }

    #[test]
    fn each_client_address_has_its_own_limit() {
        let streams = EventStreams::default();
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let held: Vec<_> = (0..2).map(|_| streams.admit(Some(a), 2).unwrap()).collect();
        assert_eq!(
            streams.admit(Some(a), 2).err(),
            Some(Refused::ClientFull { limit: 2 })
        );
        let other = streams.admit(Some(b), 2).unwrap();
        assert_eq!(streams.open_count(), 3, "a refused client takes no place");
        drop(held);
        assert!(streams.admit(Some(a), 2).is_ok());
        drop(other);
        assert!(
            streams.per_client.lock().is_empty(),
            "addresses are forgotten"
        );
    }

    #[test]
    fn an_alert_is_a_named_event_with_the_notice() {
        use crate::alerts::{Alert, Event, Kind};
        let notice = Notice {
            event: Event::Cleared,
            alert: Alert {
                id: "a1".into(),
                serial: "S".into(),
                kind: Kind::Filter,
                started_at: "t0".into(),
                cleared_at: Some("t1".into()),
                message: "m".into(),
            },
        };
        assert_eq!(
            String::from_utf8(format_alert(&notice)).unwrap(),
            "event: alert\ndata: {\"event\":\"cleared\",\"alert\":{\"id\":\"a1\",\"serial\":\"S\",\"kind\":\"filter\",\"started_at\":\"t0\",\"cleared_at\":\"t1\",\"message\":\"m\"}}\n\n"
        );
    }

    #[test]
    fn event_data_names_the_change() {
        let event = ChangeEvent {
            serial: "S".into(),
            origin: Origin::Server,
            change: BucketChange {
                key: "shared.S".into(),
                revision: 3,
                timestamp: 9,
                changed: vec!["target_temperature".into()],
            },
        };
        assert_eq!(
            String::from_utf8(format_event(&event)).unwrap(),
            "data: {\"serial\":\"S\",\"object_key\":\"shared.S\",\"revision\":3,\"timestamp\":9,\"changed\":[\"target_temperature\"],\"origin\":\"server\"}\n\n"
        );
    }
}
