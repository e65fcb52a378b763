//! Delivery of notices to ntfy and the webhook, on the `alert-delivery` thread: never on a
//! request worker or the hub's threads. Each delivery is owed in the durable record before it is
//! first attempted; it is attempted until the receiver answers 2xx, with backoff (1 s, doubling,
//! at most [`MAX_BACKOFF_MS`]) while it is down or answers anything else, and given up on with
//! a log line once [`GIVE_UP_MS`] (25 h) have passed since the notice. Its outcome is then
//! written to the record, so a restart attempts only what is still owed.
//!
//! Every request is bounded (connect [`CONNECT_TIMEOUT`], whole request [`TIMEOUT`]), its
//! answer's body is read up to [`MAX_ANSWER`] and thrown away, never logged; the URLs (which may
//! hold an ntfy token) and the secret are never logged either.
//!
//! The page's "Send a test" ([`test`]) goes through the same agent and the same request
//! building, and reports only each receiver's status (or why it could not be reached, in a
//! word) and the time it took.

use std::collections::VecDeque;
use std::io::Read;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crossbeam_channel::{Receiver, TryRecvError, select};
use parking_lot::Mutex;

use super::record::{Delivery, Outcome, Record, Target};
use super::settings::Settings;
use super::{Event, Kind, Notice};
use crate::config::AlertConfig;
use crate::util::clock::Clock;
use crate::util::shutdown::Shutdown;

/// A notice not delivered within this long of being written is dropped (with a log line).
pub const GIVE_UP_MS: i64 = 25 * 3600 * 1000;
pub const MAX_BACKOFF_MS: i64 = 10 * 60 * 1000;
const FIRST_BACKOFF_MS: i64 = 1000;
/// Short enough that a stop waits little for a request in flight (within systemd's 20 s).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
pub const TIMEOUT: Duration = Duration::from_secs(5);
const MAX_ANSWER: u64 = 64 * 1024;

/// The header a receiver may deduplicate on.
pub const DELIVERY_HEADER: &str = "X-Hearth-Delivery";
pub const SIGNATURE_HEADER: &str = "X-Hearth-Signature";

/// The receivers configured, in the order they are written in the record.
pub fn targets(config: &AlertConfig) -> Vec<Target> {
    let mut targets = Vec::new();
    if config.ntfy_url.is_some() {
        targets.push(Target::Ntfy);
    }
    if config.webhook_url.is_some() {
        targets.push(Target::Webhook);
    }
    targets
}

/// The agent every request to a receiver goes through, the delivery's and the page's tests
/// alike: bounded ([`CONNECT_TIMEOUT`], [`TIMEOUT`]), following no redirect.
pub fn agent() -> ureq::Agent {
    crate::util::outbound::agent(CONNECT_TIMEOUT, TIMEOUT)
}

/// What a receiver answered, or why it could not be reached: never its body, the URL or the
/// secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The HTTP status it answered (a 3xx is its answer: redirects are not followed).
    Status(u16),
    /// `timeout`, `refused`, `dns` or `unreachable`.
    Failed(&'static str),
}

/// One request to a receiver, as sent.
struct Post<'a> {
    url: &'a str,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

/// The request of `notice` to ntfy at `url`.
fn ntfy_post<'a>(url: &'a str, notice: &Notice, id: &str) -> Post<'a> {
    let (title, priority, tags, body) = ntfy_parts(notice);
    Post {
        url,
        headers: vec![
            ("Title", title),
            ("Priority", priority.to_string()),
            ("Tags", tags),
            (DELIVERY_HEADER, id.to_string()),
        ],
        body: body.into_bytes(),
    }
}

/// The request of `body` (JSON) to the webhook at `url`, signed with `secret` if set.
fn webhook_post<'a>(url: &'a str, body: Vec<u8>, secret: Option<&str>, id: &str) -> Post<'a> {
    let mut headers = vec![
        ("Content-Type", "application/json".to_string()),
        (DELIVERY_HEADER, id.to_string()),
    ];
    if let Some(secret) = secret {
        headers.push((SIGNATURE_HEADER, signature(secret, &body)));
    }
    Post { url, headers, body }
}

/// Sends `post` through `agent`; a bounded part of the answer is read (so the connection ends
/// cleanly) and thrown away, never kept or logged.
fn send(agent: &ureq::Agent, post: &Post<'_>) -> Answer {
    let mut request = agent.post(post.url);
    for (name, value) in &post.headers {
        request = request.set(name, value);
    }
    match request.send_bytes(&post.body) {
        Ok(response) => {
            let status = response.status();
            let _ = std::io::copy(
                &mut response.into_reader().take(MAX_ANSWER),
                &mut std::io::sink(),
            );
            Answer::Status(status)
        }
        Err(ureq::Error::Status(status, response)) => {
            let _ = std::io::copy(
                &mut response.into_reader().take(MAX_ANSWER),
                &mut std::io::sink(),
            );
            Answer::Status(status)
        }
        Err(ureq::Error::Transport(t)) => Answer::Failed(failure(&t)),
    }
}

/// Why a request got no answer, in a word.
fn failure(t: &ureq::Transport) -> &'static str {
    let mut source = std::error::Error::source(t);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => return "timeout",
                std::io::ErrorKind::ConnectionRefused => return "refused",
                _ => {}
            }
        }
        source = e.source();
    }
    match t.kind() {
        ureq::ErrorKind::Dns => "dns",
        _ => "unreachable",
    }
}

/// The outcome of a test sent to one receiver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tried {
    pub target: Target,
    pub answer: Answer,
    /// How long it took, in milliseconds.
    pub ms: u64,
}

/// What a test says to ntfy and the webhook.
pub const TEST_MESSAGE: &str = "A test from hearth: its alerts will reach you here.";

/// Sends a test to each receiver `config` sets, one after the other, and says what each
/// answered: its status and how long it took, or why it could not be reached.
pub fn test(agent: &ureq::Agent, config: &AlertConfig, id: &str) -> Vec<Tried> {
    let mut tried = Vec::new();
    for target in targets(config) {
        let delivery = format!("{id}.test.{}", target.as_str());
        let post = match target {
            Target::Ntfy => Post {
                url: config.ntfy_url.as_deref().unwrap_or_default(),
                headers: vec![
                    ("Title", "Test from hearth".to_string()),
                    ("Priority", "default".to_string()),
                    ("Tags", "test".to_string()),
                    (DELIVERY_HEADER, delivery),
                ],
                body: TEST_MESSAGE.as_bytes().to_vec(),
            },
            Target::Webhook => webhook_post(
                config.webhook_url.as_deref().unwrap_or_default(),
                serde_json::to_vec(&serde_json::json!({"event": "test", "message": TEST_MESSAGE}))
                    .unwrap_or_default(),
                config.webhook_secret.as_deref(),
                &delivery,
            ),
        };
        let began = std::time::Instant::now();
        let answer = send(agent, &post);
        let ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
        tried.push(Tried { target, answer, ms });
    }
    tried
}

/// `sha256=<hex HMAC-SHA256 of body with secret>`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let tag = ring::hmac::sign(&key, body);
    format!("sha256={}", crate::util::hex(tag.as_ref()))
}

/// ntfy's `Title`, `Priority`, `Tags` and body for a notice.
pub fn ntfy_parts(notice: &Notice) -> (String, &'static str, String, String) {
    let kind: Kind = notice.alert.kind;
    let (title, tag, body) = match notice.event {
        Event::Started => (
            kind.title().to_string(),
            "warning",
            notice.alert.message.clone(),
        ),
        Event::Cleared => (
            format!("Cleared: {}", kind.title()),
            "white_check_mark",
            format!("Cleared: {}", notice.alert.message),
        ),
    };
    let priority = if kind.is_safety() && notice.event == Event::Started {
        "high"
    } else {
        "default"
    };
    (title, priority, format!("{tag},{}", kind.as_str()), body)
}

/// The delivery thread.
pub struct Courier {
    handle: JoinHandle<()>,
}

impl Courier {
    /// Starts delivering what `record` owes, then what arrives on `fresh`.
    pub fn start(
        settings: Arc<Settings>,
        clock: Clock,
        record: Arc<Mutex<Record>>,
        fresh: Receiver<Delivery>,
        shutdown: &Shutdown,
    ) -> std::io::Result<Courier> {
        let owed = record.lock().owed();
        let mut run = Run {
            settings,
            agent: agent(),
            now: clock.now_ms(),
            clock,
            record,
            lanes: Vec::new(),
        };
        for delivery in owed {
            run.enqueue(delivery);
        }
        let stopped = shutdown.receiver();
        let handle = thread::Builder::new()
            .name("alert-delivery".into())
            .stack_size(256 * 1024)
            .spawn(move || run.run(fresh, stopped))?;
        Ok(Courier { handle })
    }

    /// After the shutdown signal: waits for the thread (at most one request's timeout).
    pub fn join(self) {
        let _ = self.handle.join();
    }
}

/// One receiver's deliveries, first in first out: only the head is ever attempted, so a
/// receiver sees an episode's start before its clear however long it was down. The backoff is
/// the receiver's, not a delivery's.
struct Lane {
    target: Target,
    queue: VecDeque<Delivery>,
    due_ms: i64,
    attempts: u32,
}

struct Run {
    /// Read at each attempt: a receiver changed on the page is used from its next attempt.
    settings: Arc<Settings>,
    agent: ureq::Agent,
    clock: Clock,
    now: i64,
    record: Arc<Mutex<Record>>,
    lanes: Vec<Lane>,
}

impl Run {
    fn enqueue(&mut self, delivery: Delivery) {
        if let Some(lane) = self.lanes.iter_mut().find(|l| l.target == delivery.target) {
            lane.queue.push_back(delivery);
        } else {
            self.lanes.push(Lane {
                target: delivery.target,
                queue: VecDeque::from([delivery]),
                due_ms: 0,
                attempts: 0,
            });
        }
    }

    fn run(mut self, fresh: Receiver<Delivery>, stopped: Receiver<()>) {
        let moved = self.clock.moves();
        loop {
            self.now = self.clock.now_ms();
            let now = self.now;
            if let Some(i) = self
                .lanes
                .iter()
                .position(|l| !l.queue.is_empty() && l.due_ms <= now)
            {
                self.attempt(i);
                if stopped.try_recv() == Err(TryRecvError::Disconnected) {
                    break;
                }
                continue;
            }
            let next = self
                .lanes
                .iter()
                .filter(|l| !l.queue.is_empty())
                .map(|l| l.due_ms)
                .min();
            let wait = next.map_or(Duration::from_secs(3600), |d| self.clock.wait_time_ms(d));
            select! {
                recv(stopped) -> _ => break,
                recv(fresh) -> d => match d {
                    Ok(delivery) => self.enqueue(delivery),
                    Err(_) => break,
                },
                recv(moved) -> _ => {}
                default(wait) => {}
            }
        }
    }

    /// Attempts the head of lane `i`.
    fn attempt(&mut self, i: usize) {
        let Some(d) = self.lanes[i].queue.front().cloned() else {
            return;
        };
        match self.send(&d) {
            Ok(()) => self.done(i, &d, Outcome::Sent),
            Err(why) => {
                let lane = &mut self.lanes[i];
                lane.attempts += 1;
                if self.now - d.at_ms >= GIVE_UP_MS {
                    log::warn!(
                        "alert delivery {} to {} dropped after {} attempts over 25 h: {why}",
                        d.id,
                        d.target.as_str(),
                        lane.attempts
                    );
                    self.done(i, &d, Outcome::Dropped);
                    return;
                }
                let backoff = FIRST_BACKOFF_MS
                    .saturating_mul(1 << lane.attempts.min(20).saturating_sub(1))
                    .min(MAX_BACKOFF_MS);
                log::info!(
                    "alert delivery {} to {} failed ({why}); trying again in {} s",
                    d.id,
                    d.target.as_str(),
                    backoff / 1000
                );
                lane.due_ms = self.now + backoff;
            }
        }
    }

    /// The head of lane `i` is settled: recorded, and the next one may go at once.
    fn done(&mut self, i: usize, d: &Delivery, outcome: Outcome) {
        let lane = &mut self.lanes[i];
        lane.queue.pop_front();
        lane.due_ms = 0;
        lane.attempts = 0;
        self.outcome(d, outcome);
    }

    fn outcome(&self, d: &Delivery, outcome: Outcome) {
        if let Err(e) = self.record.lock().delivered(&d.id, outcome) {
            // Not fatal: at worst the next start delivers it once more, with the same id.
            log::error!("alert record: could not write delivery {}: {e}", d.id);
        }
    }

    /// One attempt. The error says what went wrong without the URL, the secret or the body.
    fn send(&self, d: &Delivery) -> Result<(), String> {
        let in_force = self.settings.now();
        let config = &in_force.config;
        let post = match d.target {
            Target::Ntfy => {
                let Some(url) = &config.ntfy_url else {
                    return Err("NTFY_URL is no longer set".into());
                };
                ntfy_post(url, &d.notice, &d.id)
            }
            Target::Webhook => {
                let Some(url) = &config.webhook_url else {
                    return Err("WEBHOOK_URL is no longer set".into());
                };
                let body = serde_json::to_vec(&*d.notice).map_err(|e| e.to_string())?;
                webhook_post(url, body, config.webhook_secret.as_deref(), &d.id)
            }
        };
        // Only 2xx is delivered: a redirect (a proxy's login page, a moved topic) is not
        // followed, and is retried like any other refusal.
        match send(&self.agent, &post) {
            Answer::Status(status) if crate::util::outbound::succeeded(status) => Ok(()),
            Answer::Status(status) => Err(format!("answered {status}")),
            Answer::Failed(why) => Err(format!("unreachable ({why})")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerts::Alert;

    #[test]
    fn the_signature_is_hex_hmac_sha256() {
        // RFC 4231, test case 2.
        assert_eq!(
            signature("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn ntfy_says_high_for_safety_starts_only() {
        let mut notice = Notice {
            event: Event::Started,
            alert: Alert {
                id: "a".into(),
                serial: "S".into(),
                kind: Kind::LowTemperature,
                started_at: String::new(),
                cleared_at: None,
                message: "Hallway is 5.8°C (below 7°C)".into(),
            },
        };
        let (title, priority, tags, body) = ntfy_parts(&notice);
        assert_eq!(
            (title.as_str(), priority, tags.as_str()),
            ("Too cold", "high", "warning,low_temperature")
        );
        assert_eq!(body, "Hallway is 5.8°C (below 7°C)");
        notice.event = Event::Cleared;
        let (_, priority, _, body) = ntfy_parts(&notice);
        assert_eq!(priority, "default");
        assert!(body.starts_with("Cleared: "));
        notice.event = Event::Started;
        notice.alert.kind = Kind::Filter;
        assert_eq!(ntfy_parts(&notice).1, "default");
    }
}
