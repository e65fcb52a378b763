//! The weather thermostats show: answers from `WEATHER_URL`, cached per full query string.
//!
//! Stale while revalidating: a fresh cached answer is served as it is; an older one is served
//! at once while a background thread asks upstream for a new one; with nothing cached the
//! request waits for the background fetch, at most [`Upstream::wait`]. Upstream is only ever
//! asked from those background threads (one per query at a time, at most [`MAX_FETCHES`] at
//! once), each bounded by [`Upstream::timeout`] (connect and whole request), so a hung
//! upstream never holds a request worker longer than the wait; the caller also bounds how many
//! workers may wait (see [`crate::util::outbound`]).

use std::collections::HashMap;
use std::io::Read;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::util::clock::Clock;
use crate::util::outbound::OutboundGate;

const MAX_ENTRIES: usize = 256;
const MAX_BODY: u64 = 2 * 1024 * 1024;
/// Background fetches running at once (each for another query): beyond, a query with nothing
/// cached is answered "unavailable" at once and a stale answer is served without a refresh.
pub const MAX_FETCHES: usize = 4;
/// Connecting to upstream gives up after this (or the whole timeout, if shorter).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// A cached answer and when it was fetched (ms, by the server's clock).
type Entry = (i64, Arc<Vec<u8>>);

/// Where answers come from and how long they keep.
pub struct Upstream<'a> {
    pub url: &'a str,
    pub fresh_for: Duration,
    /// One upstream request, connection and answer included.
    pub timeout: Duration,
    /// How long a request with nothing cached waits for the background fetch.
    pub wait: Duration,
}

/// `Some` once done: the answer, or `None` if upstream failed.
type Outcome = Option<Option<Arc<Vec<u8>>>>;

/// A background fetch of one query, which requests with nothing cached wait on.
struct Flight {
    done: Arc<Mutex<Outcome>>,
    cv: Arc<Condvar>,
    /// The server's clock, which times the wait (the fetch's own timeout is the socket's).
    clock: Clock,
}

impl Flight {
    fn new(clock: &Clock) -> Flight {
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
    fn wait(&self, deadline: Instant) -> Option<Arc<Vec<u8>>> {
        let mut done = self.done.lock();
        while done.is_none() {
            if self.clock.wait_until(&self.cv, &mut done, deadline) {
                break;
            }
        }
        done.clone().flatten()
    }

    fn finish(&self, answer: Option<Arc<Vec<u8>>>) {
        *self.done.lock() = Some(answer);
        self.cv.notify_all();
    }
}

#[derive(Default)]
struct Inner {
    entries: Mutex<HashMap<String, Entry>>,
    flights: Mutex<HashMap<String, Arc<Flight>>>,
}

#[derive(Default)]
pub struct Weather {
    inner: Arc<Inner>,
}

impl Weather {
    /// The answer for `query` (a JSON object's bytes), or `None` when nothing is cached for it
    /// and upstream gave nothing within the wait (failed, slow, too many fetches running, or
    /// every place of `gate` taken by other waiting requests). `clock`: the server's, which ages
    /// the answers.
    pub fn answer(
        &self,
        upstream: &Upstream<'_>,
        query: &str,
        clock: &Clock,
        gate: &OutboundGate,
    ) -> Option<Arc<Vec<u8>>> {
        let now = clock.now_ms();
        // The wait is counted from the request's arrival.
        let deadline = clock.now() + upstream.wait;
        if let Some(body) = self.inner.cached(query, Some(upstream.fresh_for), now) {
            return Some(body);
        }
        let flight = self.fetch_in_background(upstream, query, clock);
        if let Some(stale) = self.inner.cached(query, None, now) {
            return Some(stale);
        }
        let flight = flight?;
        let _place = gate.try_enter()?;
        flight.wait(deadline)
    }

    /// The fetch of `query` running now, or a new one; `None` when [`MAX_FETCHES`] run already
    /// (or no thread could be started).
    fn fetch_in_background(
        &self,
        upstream: &Upstream<'_>,
        query: &str,
        clock: &Clock,
    ) -> Option<Arc<Flight>> {
        let mut flights = self.inner.flights.lock();
        if let Some(f) = flights.get(query) {
            return Some(Arc::clone(f));
        }
        if flights.len() >= MAX_FETCHES {
            log::warn!(
                "weather: {MAX_FETCHES} upstream requests still running; not asking for {query:?}"
            );
            return None;
        }
        let flight = Arc::new(Flight::new(clock));
        let (inner, url, query_owned, timeout, clock) = (
            Arc::clone(&self.inner),
            upstream.url.to_string(),
            query.to_string(),
            upstream.timeout,
            clock.clone(),
        );
        let theirs = Arc::clone(&flight);
        let spawned = thread::Builder::new()
            .name("weather-fetch".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                let answer = match fetch(&url, &query_owned, timeout) {
                    Ok(body) => {
                        let body = Arc::new(body);
                        inner.put(&query_owned, Arc::clone(&body), clock.now_ms());
                        Some(body)
                    }
                    Err(why) => {
                        log::warn!("weather upstream failed for {query_owned:?}: {why}");
                        None
                    }
                };
                inner.flights.lock().remove(&query_owned);
                theirs.finish(answer);
            });
        match spawned {
            Ok(_) => {
                flights.insert(query.to_string(), Arc::clone(&flight));
                Some(flight)
            }
            Err(e) => {
                log::warn!("weather: could not start a fetch: {e}");
                None
            }
        }
    }

    /// Upstream requests running now.
    pub fn fetches_running(&self) -> usize {
        self.inner.flights.lock().len()
    }
}

impl Inner {
    /// The answer for `query`; with `max_age`, only one younger than that at `now_ms` (so a
    /// zero age always asks upstream; an answer from the future, after the clock stepped back,
    /// counts as too old).
    fn cached(&self, query: &str, max_age: Option<Duration>, now_ms: i64) -> Option<Arc<Vec<u8>>> {
        let entries = self.entries.lock();
        let (at, body) = entries.get(query)?;
        match max_age {
            Some(age) => {
                let age_ms = i64::try_from(age.as_millis()).unwrap_or(i64::MAX);
                (0..age_ms)
                    .contains(&(now_ms - at))
                    .then(|| Arc::clone(body))
            }
            None => Some(Arc::clone(body)),
        }
    }

    fn put(&self, query: &str, body: Arc<Vec<u8>>, now_ms: i64) {
        let mut entries = self.entries.lock();
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(query) {
            let oldest = entries
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                entries.remove(&k);
            }
        }
        entries.insert(query.to_string(), (now_ms, body));
    }
}

/// Asks upstream with the thermostat's query string appended; only a JSON object counts.
fn fetch(base: &str, query: &str, timeout: Duration) -> Result<Vec<u8>, String> {
    let url = match (query.is_empty(), base.contains('?')) {
        (true, _) => base.to_string(),
        (false, true) => format!("{base}&{query}"),
        (false, false) => format!("{base}?{query}"),
    };
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(CONNECT_TIMEOUT.min(timeout))
        .timeout(timeout)
        .build();
    let response = agent.get(&url).call().map_err(|e| e.to_string())?;
    let mut body = Vec::new();
    response
        .into_reader()
        .take(MAX_BODY)
        .read_to_end(&mut body)
        .map_err(|e| e.to_string())?;
    match serde_json::from_slice::<serde_json::Value>(&body) {
        Ok(serde_json::Value::Object(_)) => Ok(body),
        _ => Err("upstream did not answer with a JSON object".into()),
    }
}
