//! Live event streams (`GET /api/events`): Server-Sent Events, one per committed bucket change.
//!
//! Streams are parked like held subscribes: the worker that accepted the request writes the
//! response head and hands the raw writer to this module's own thread, then goes back to
//! serving requests. The thread receives every change from the hub's watch channel and writes
//! it to each stream whose filter matches, writes a comment every [`KEEP_ALIVE`] so proxies
//! and clients see the connection is alive, and drops a stream whose write fails. It is a
//! separate thread from the hub's notifier so a dashboard that reads slowly never delays a
//! push to a thermostat.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, select, unbounded};
use serde::Serialize;

use crate::http::chunked;
use crate::hub::{ChangeEvent, Origin, Writer};

/// Streams open at once; one more gets 503.
pub const MAX_STREAMS: usize = 64;
/// A comment line this often keeps idle streams alive.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

pub struct EventStreams {
    keep_alive: Duration,
    open: Arc<AtomicUsize>,
    control: Sender<Control>,
    inbox: Receiver<Control>,
}

enum Control {
    Open(Stream),
    Stop,
}

/// A place among the [`MAX_STREAMS`]; given back when dropped (unused, or with its stream).
pub struct Admission {
    open: Arc<AtomicUsize>,
    control: Sender<Control>,
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Admission {
    /// Hands a stream whose response head has been written to the streams' thread. `key_id`:
    /// the API key that opened it (with `CONTROL_REQUIRE_KEY`), checked before every write.
    pub fn park(self, writer: Writer, serial: Option<String>, key_id: Option<String>) {
        let control = self.control.clone();
        let stream = Stream {
            writer,
            serial,
            key_id,
            _admission: self,
        };
        // If the thread has stopped, the stream is dropped here, which closes it.
        let _ = control.send(Control::Open(stream));
    }
}

struct Stream {
    writer: Writer,
    /// Only this thermostat's events (`?serial=`).
    serial: Option<String>,
    /// The API key the stream was opened with; once it is revoked or expired the stream ends.
    key_id: Option<String>,
    _admission: Admission,
}

impl Stream {
    fn send(&mut self, text: &[u8]) -> bool {
        chunked::write_chunk(&mut self.writer, text).is_ok()
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
    /// `device` (the thermostat reported it) or `server` (a command or claim).
    origin: &'static str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    deleted: bool,
}

/// One event in SSE framing: `data: {...}` and a blank line.
pub fn format_event(event: &ChangeEvent) -> Vec<u8> {
    let data = EventData {
        serial: &event.serial,
        object_key: &event.change.key,
        revision: event.change.revision,
        timestamp: event.change.timestamp,
        changed: &event.change.changed,
        origin: match event.origin {
            Origin::Device => "device",
            Origin::Server => "server",
        },
        deleted: event.change.deleted,
    };
    let json = serde_json::to_string(&data).unwrap_or_else(|_| "{}".into());
    format!("data: {json}\n\n").into_bytes()
}

impl Default for EventStreams {
    fn default() -> Self {
        EventStreams::new(KEEP_ALIVE)
    }
}

impl EventStreams {
    /// Streams that get a comment line every `keep_alive` when there is nothing else to send.
    pub fn new(keep_alive: Duration) -> EventStreams {
        let (control, inbox) = unbounded();
        EventStreams {
            keep_alive,
            open: Arc::new(AtomicUsize::new(0)),
            control,
            inbox,
        }
    }

    /// A place for a new stream, or `None` when [`MAX_STREAMS`] are open.
    pub fn admit(&self) -> Option<Admission> {
        let admitted = self
            .open
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < MAX_STREAMS).then_some(n + 1)
            })
            .is_ok();
        admitted.then(|| Admission {
            open: Arc::clone(&self.open),
            control: self.control.clone(),
        })
    }

    /// Streams open (or being opened).
    pub fn open_count(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// Ends every stream and stops [`EventStreams::run`].
    pub fn stop(&self) {
        let _ = self.control.send(Control::Stop);
    }

    /// The streams' thread: runs until [`EventStreams::stop`]. `key_valid` says whether an API
    /// key (by id) still works; a stream opened with one that no longer does is ended before
    /// anything more is written to it (at its next event or keep-alive).
    pub fn run(&self, changes: Receiver<Arc<ChangeEvent>>, key_valid: impl Fn(&str) -> bool) {
        // Ends (with the chunked terminator) a stream whose key no longer works.
        let allowed = |s: &mut Stream| {
            let ok = s.key_id.as_deref().is_none_or(&key_valid);
            if !ok {
                let _ = chunked::write_end(&mut s.writer);
                let _ = s.writer.flush();
            }
            ok
        };
        let mut streams: Vec<Stream> = Vec::new();
        let mut next_keep_alive = Instant::now() + self.keep_alive;
        loop {
            let wait = next_keep_alive.saturating_duration_since(Instant::now());
            select! {
                recv(changes) -> event => {
                    let Ok(event) = event else { break };
                    let text = format_event(&event);
                    streams.retain_mut(|s| {
                        allowed(s)
                            && (s.serial.as_ref().is_some_and(|f| *f != event.serial)
                                || s.send(&text))
                    });
                }
                recv(self.inbox) -> msg => match msg {
                    Ok(Control::Open(mut stream)) => {
                        // The first bytes tell the client (and any proxy) the stream is live.
                        if stream.send(b": connected\n\n") {
                            streams.push(stream);
                        }
                    }
                    Ok(Control::Stop) | Err(_) => break,
                },
                default(wait) => {
                    streams.retain_mut(|s| allowed(s) && s.send(b": keep-alive\n\n"));
                    next_keep_alive = Instant::now() + self.keep_alive;
                }
            }
        }
        for mut s in streams {
            let _ = chunked::write_end(&mut s.writer);
            let _ = s.writer.flush();
        }
        // Streams parked after the stop are dropped (closed) with the channel's contents.
        while let Ok(Control::Open(s)) = self.inbox.try_recv() {
            drop(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::BucketChange;

    #[test]
    fn at_most_max_streams_are_admitted_and_places_come_back() {
        let streams = EventStreams::default();
        let admitted: Vec<_> = (0..MAX_STREAMS).filter_map(|_| streams.admit()).collect();
        assert_eq!(admitted.len(), MAX_STREAMS);
        assert!(streams.admit().is_none());
        drop(admitted);
        assert_eq!(streams.open_count(), 0);
        assert!(streams.admit().is_some());
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
                deleted: false,
            },
        };
        assert_eq!(
            String::from_utf8(format_event(&event)).unwrap(),
            "data: {\"serial\":\"S\",\"object_key\":\"shared.S\",\"revision\":3,\"timestamp\":9,\"changed\":[\"target_temperature\"],\"origin\":\"server\"}\n\n"
        );
    }
}
