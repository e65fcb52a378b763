//! Refusals logged at most once per client a minute, and a few dozen lines a minute in all: a
//! flood of refused requests or connections, from one address or from many, cannot fill the
//! journal, and the line after the quiet minute says how many went unlogged. Whatever refuses
//! a client for a count or a rate (every listener's admission, `http::admission`; the device
//! port's new thermostats, `device::newcomers`) notes it in a [`RefusalLog`] and writes the
//! [`Lines`] it gets back. A log may count refusals by something else than the client's
//! address (a [`Key`]): the browser rule logs a refused `Host` once a minute per name.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::hash::Hash;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Refusals are logged once per client per this long; the line after it says how many were
/// refused in between.
pub const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(60);
/// Clients (keys) whose refusals are remembered for [`REFUSAL_LOG_INTERVAL`]; past this (a flood
/// from many addresses) further clients are counted in the minute's summary line.
const REFUSAL_LOG_ADDRESSES: usize = 1024;

/// What a refusal log counts refusals by: a client's address, or what a client asked for (a
/// `Host` name). Shown in the log's lines, so its `Display` writes outside text through
/// [`crate::util::logged`].
pub(crate) trait Key: Clone + Eq + Hash + Ord + fmt::Display {
    /// How a line names one key's refusals: `from 10.0.0.1`, `for "pi.home"`.
    const BY: &'static str;
    /// What the summary line calls the keys: `addresses`, `names`.
    const KINDS: &'static str;
}

impl Key for IpAddr {
    const BY: &'static str = "from";
    const KINDS: &'static str = "addresses";
}
/// Lines one log writes in a minute at most; the rest are counted in one line the next minute.
pub const LINES_PER_MINUTE: usize = 64;

/// When a refusal of each client was last logged, how many were not logged since, and the
/// minute's line budget.
#[derive(Clone)]
pub(crate) struct RefusalLog<K: Key = IpAddr> {
    /// When a line was last written for each client, and how many refusals were not logged
    /// since.
    clients: HashMap<K, (Instant, u64)>,
    /// The minute the line budget counts, the lines written in it, and what was not written
    /// for want of budget (refusals, and from which clients: at most [`REFUSAL_LOG_ADDRESSES`]
    /// remembered).
    minute: Option<Instant>,
    lines: usize,
    over: (u64, BTreeSet<K>),
}

impl<K: Key> Default for RefusalLog<K> {
    fn default() -> Self {
        RefusalLog {
            clients: HashMap::new(),
            minute: None,
            lines: 0,
            over: (0, BTreeSet::new()),
        }
    }
}

/// A line to write for a refusal.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// The first from this client in a minute.
    First,
    /// The first after a minute, with how many went unlogged before it.
    Again(u64),
    /// The last minute's refusals past the line budget, and from how many clients.
    Others { refusals: u64, clients: usize },
}

/// The lines a refusal of `client` is to be logged with (none, most of the time).
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Lines<K: Key = IpAddr> {
    client: K,
    lines: Vec<Line>,
}

impl<K: Key> RefusalLog<K> {
    /// Notes a refusal of `client` (a [`super::client_key`]) at `now`: the first from a client
    /// in [`REFUSAL_LOG_INTERVAL`] is to be logged (the next one after it with the count of
    /// those that were not), the rest only counted; past [`LINES_PER_MINUTE`] lines in a
    /// minute, or [`REFUSAL_LOG_ADDRESSES`] clients, refusals are counted in one line the next
    /// minute.
    pub(crate) fn refused(&mut self, client: K, now: Instant) -> Lines<K> {
        let recent = |at: &Instant| now.saturating_duration_since(*at) < REFUSAL_LOG_INTERVAL;
        let mut lines = Vec::new();
        if !self.minute.as_ref().is_some_and(recent) {
            let (refusals, clients) = std::mem::take(&mut self.over);
            if refusals > 0 {
                lines.push(Line::Others {
                    refusals,
                    clients: clients.len(),
                });
            }
            self.minute = Some(now);
            self.lines = 0;
        }
        let line = match self.clients.get_mut(&client) {
            Some((at, unlogged)) if recent(at) => {
                *unlogged += 1;
                return Lines { client, lines };
            }
            Some((_, unlogged)) => Line::Again(*unlogged),
            None => {
                if self.clients.len() >= REFUSAL_LOG_ADDRESSES {
                    self.clients.retain(|_, (at, _)| recent(at));
                }
                Line::First
            }
        };
        let remembered = self.clients.contains_key(&client);
        if self.lines >= LINES_PER_MINUTE
            || (!remembered && self.clients.len() >= REFUSAL_LOG_ADDRESSES)
        {
            self.over.0 += 1;
            if self.over.1.len() < REFUSAL_LOG_ADDRESSES {
                self.over.1.insert(client.clone());
            }
            return Lines { client, lines };
        }
        self.lines += 1;
        self.clients.insert(client.clone(), (now, 0));
        lines.push(line);
        Lines { client, lines }
    }
}

impl<K: Key> Lines<K> {
    /// Writes the lines at `level` for `target` (the refusing module's path, as the log shows
    /// it), each starting with `subject` ("device port", "HomeKit"), saying `what` (the
    /// refusal, its client named in it).
    pub(crate) fn write(
        self,
        (target, level): (&str, log::Level),
        subject: &str,
        what: &dyn fmt::Display,
    ) {
        let (client, by, kinds) = (self.client, K::BY, K::KINDS);
        for line in self.lines {
            match line {
                Line::First => log::log!(target: target, level, "{subject}: {what}"),
                Line::Again(unlogged) => log::log!(
                    target: target,
                    level,
                    "{subject}: {what} ({unlogged} more {by} {client} not logged in the last \
                     minute)"
                ),
                Line::Others { refusals, clients } => log::log!(
                    target: target,
                    level,
                    "{subject}: {refusals} more refusals {by} {clients} other {kinds} not \
                     logged in the last minute"
                ),
            }
        }
    }

    /// The lines, for tests.
    #[cfg(test)]
    pub(crate) fn lines(&self) -> &[Line] {
        &self.lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Refusals are logged once per address per minute, the next line counting the rest; a
    /// flood from many addresses writes LINES_PER_MINUTE lines and counts the rest in one line
    /// the next minute, remembering at most REFUSAL_LOG_ADDRESSES addresses.
    #[test]
    fn refusals_are_logged_once_per_address_per_minute_within_a_budget() {
        let mut log = RefusalLog::default();
        let lines = |log: &mut RefusalLog, client: IpAddr, now| log.refused(client, now).lines;
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.2".parse().unwrap(), "::1".parse().unwrap());
        let t0 = crate::util::clock::ManualClock::at(0).clock().now();
        assert_eq!(lines(&mut log, a, t0), vec![Line::First]);
        for i in 1..1000 {
            assert_eq!(lines(&mut log, a, t0 + Duration::from_millis(i)), vec![]);
        }
        assert_eq!(lines(&mut log, b, t0), vec![Line::First]);
        let later = t0 + REFUSAL_LOG_INTERVAL;
        assert_eq!(lines(&mut log, a, later), vec![Line::Again(999)]);
        assert_eq!(lines(&mut log, a, later), vec![]);
        // A flood from many addresses: LINES_PER_MINUTE lines, then the rest counted.
        let mut written = 1;
        for n in 0..5000u32 {
            written += lines(&mut log, IpAddr::from(n.to_be_bytes()), later).len();
        }
        assert_eq!(written, LINES_PER_MINUTE);
        assert!(log.clients.len() <= REFUSAL_LOG_ADDRESSES);
        // The next minute says how many went unlogged, and logs addresses again.
        let next = later + REFUSAL_LOG_INTERVAL;
        assert_eq!(
            lines(&mut log, "10.0.0.1".parse().unwrap(), next),
            vec![
                Line::Others {
                    refusals: 5000 - (LINES_PER_MINUTE as u64 - 1),
                    clients: REFUSAL_LOG_ADDRESSES
                },
                Line::First
            ]
        );
    }
}
