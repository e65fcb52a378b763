//! The weather thermostats show: answers from Open-Meteo (see [`open_meteo`]) or from
//! `WEATHER_URL`, cached per full query string, or nothing at all (`WEATHER_PROVIDER=off`).
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
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::util::clock::Clock;
use crate::util::outbound::OutboundGate;

pub mod open_meteo;

/// `WEATHER_PROVIDER`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    OpenMeteo,
    Upstream,
    Off,
}

impl Provider {
    pub fn parse(raw: &str) -> Result<Provider, String> {
        match raw {
            "open-meteo" => Ok(Provider::OpenMeteo),
            "upstream" => Ok(Provider::Upstream),
            "off" => Ok(Provider::Off),
            _ => Err("must be open-meteo, upstream or off".into()),
        }
    }
}

/// Who is asked for an answer.
#[derive(Clone, Debug)]
pub enum Source {
    /// `WEATHER_URL`: the thermostat's query string is appended, the answer passed on.
    Upstream(String),
    /// Open-Meteo's geocoding and forecast services (base URLs), for one place.
    OpenMeteo {
        geocoding: String,
        forecast: String,
        place: open_meteo::Place,
    },
}

const MAX_ENTRIES: usize = 256;
const MAX_BODY: u64 = 2 * 1024 * 1024;
/// Background fetches running at once (each for another query): beyond, a query with nothing
/// cached is answered "unavailable" at once and a stale answer is served without a refresh.
pub const MAX_FETCHES: usize = 4;
/// Upstream requests started in a row before the pace below applies: a home's thermostats ask
/// for a place or two every few minutes, so this is never reached by them, but a client
/// inventing queries (each one a cache miss) cannot make hearth call out without end.
pub const FETCH_BURST: u32 = 12;
/// After the burst, one more upstream request may start per this many milliseconds.
pub const FETCH_PACE_MS: u64 = 60_000;
/// Connecting to upstream gives up after this (or the whole timeout, if shorter).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// A cached answer and when it was fetched (ms, by the server's clock).
type Entry = (i64, Arc<Vec<u8>>);

/// Where answers come from and how long they keep.
pub struct Upstream {
    pub source: Source,
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
    /// Where each postal code is, once Open-Meteo's geocoding said so (places do not move).
    places: open_meteo::Places,
    /// The outdoor temperature (°C) of the last answer for each place (`POSTAL,CC`), for
    /// `/status`.
    outdoor: Mutex<HashMap<String, f64>>,
    /// Bumped whenever `outdoor` changes (see [`Outdoor::generation`]).
    outdoor_generation: AtomicU64,
    /// The token bucket of upstream requests ([`FETCH_BURST`], [`FETCH_PACE_MS`]): tokens
    /// spent and when the bucket was last topped up.
    pace: Mutex<Option<(u32, std::time::Instant)>>,
}

impl Inner {
    /// Takes a token for one more upstream request, if the pace allows it.
    fn may_start(&self, now: std::time::Instant) -> bool {
        let mut pace = self.pace.lock();
        let (spent, since) = pace.get_or_insert((0, now));
        let earned = now.saturating_duration_since(*since).as_millis() as u64 / FETCH_PACE_MS;
        if earned > 0 {
            *spent = spent.saturating_sub(u32::try_from(earned).unwrap_or(u32::MAX));
            *since += std::time::Duration::from_millis(earned.saturating_mul(FETCH_PACE_MS));
        }
        if *spent >= FETCH_BURST {
            return false;
        }
        *spent += 1;
        true
    }
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
        upstream: &Upstream,
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
        upstream: &Upstream,
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
        if !self.inner.may_start(clock.now()) {
            log::warn!(
                "weather: {FETCH_BURST} upstream requests in a row; the next may start within a minute (not asking for {query:?})"
            );
            return None;
        }
        let flight = Arc::new(Flight::new(clock));
        let (inner, source, query_owned, timeout, clock) = (
            Arc::clone(&self.inner),
            upstream.source.clone(),
            query.to_string(),
            upstream.timeout,
            clock.clone(),
        );
        let theirs = Arc::clone(&flight);
        let spawned = thread::Builder::new()
            .name("weather-fetch".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                let fetched = match &source {
                    Source::Upstream(url) => fetch(url, &query_owned, timeout),
                    Source::OpenMeteo {
                        geocoding,
                        forecast,
                        place,
                    } => open_meteo::fetch(&inner.places, geocoding, forecast, place, timeout),
                };
                let answer = match fetched {
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
        self.remember_outdoor(&body);
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

/// The outdoor temperature by place, as the weather service last heard it.
pub trait Outdoor {
    /// A number that changes whenever any place's temperature does (so a kept record made
    /// with an older one is made again).
    fn generation(&self) -> u64;
    /// °C at this postal code and country.
    fn celsius(&self, postal_code: &str, country: &str) -> Option<f64>;
}

/// The outdoor temperature (°C) of the last answer for the place with this postal code and
/// country (the thermostat's query names the same place), whoever gave it.
impl Outdoor for Weather {
    fn generation(&self) -> u64 {
        self.inner.outdoor_generation.load(Ordering::Relaxed)
    }

    fn celsius(&self, postal_code: &str, country: &str) -> Option<f64> {
        let key = open_meteo::Place::parse(&format!("{postal_code},{country}"))?.key();
        self.inner.outdoor.lock().get(&key).copied()
    }
}

impl Inner {
    /// Keeps `current.temp_c` of each place in an answer (keyed by its query, `94304,US`).
    fn remember_outdoor(&self, body: &[u8]) {
        let Ok(serde_json::Value::Object(places)) = serde_json::from_slice(body) else {
            return;
        };
        let mut outdoor = self.outdoor.lock();
        for (query, answer) in places {
            let temp = answer.pointer("/current/temp_c").and_then(|t| t.as_f64());
            let Some(place) = open_meteo::Place::parse(&query) else {
                continue;
            };
            let key = place.key();
            let room = outdoor.len() < MAX_ENTRIES || outdoor.contains_key(&key);
            if let (Some(t), true) = (temp, room) {
                if outdoor.insert(key, t) != Some(t) {
                    self.outdoor_generation.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// Asks upstream with the thermostat's query string appended; only a JSON object counts.
fn fetch(base: &str, query: &str, timeout: Duration) -> Result<Vec<u8>, String> {
    let url = match (query.is_empty(), base.contains('?')) {
        (true, _) => base.to_string(),
        (false, true) => format!("{base}&{query}"),
        (false, false) => format!("{base}?{query}"),
    };
    let response = agent(timeout).get(&url).call().map_err(|e| e.to_string())?;
    let body = read_body(response, MAX_BODY)?;
    match serde_json::from_slice::<serde_json::Value>(&body) {
        Ok(serde_json::Value::Object(_)) => Ok(body),
        _ => Err("upstream did not answer with a JSON object".into()),
    }
}

/// An agent whose every request gives up after `timeout` (connecting: [`CONNECT_TIMEOUT`], if
/// shorter).
fn agent(timeout: Duration) -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout_connect(CONNECT_TIMEOUT.min(timeout))
        .timeout(timeout)
        .build()
}

/// At most `limit` bytes of an answer's body.
fn read_body(response: ureq::Response, limit: u64) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    response
        .into_reader()
        .take(limit)
        .read_to_end(&mut body)
        .map_err(|e| e.to_string())?;
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn upstream_requests_start_in_a_burst_then_at_a_pace() {
        let inner = Inner::default();
        let t0 = Instant::now();
        for _ in 0..FETCH_BURST {
            assert!(inner.may_start(t0));
        }
        assert!(!inner.may_start(t0));
        assert!(!inner.may_start(t0 + Duration::from_millis(FETCH_PACE_MS - 1)));
        assert!(inner.may_start(t0 + Duration::from_millis(FETCH_PACE_MS)));
        assert!(!inner.may_start(t0 + Duration::from_millis(FETCH_PACE_MS + 1)));
        assert!(inner.may_start(t0 + Duration::from_millis(3 * FETCH_PACE_MS)));
        assert!(inner.may_start(t0 + Duration::from_millis(3 * FETCH_PACE_MS)));
        assert!(!inner.may_start(t0 + Duration::from_millis(3 * FETCH_PACE_MS)));
    }
}
