//! The weather thermostats show: answers from Open-Meteo (see [`open_meteo`]) or from
//! `WEATHER_URL`, or nothing at all (`WEATHER_PROVIDER=off`). Open-Meteo's answers are cached
//! per place (the normalised postal code and country, [`open_meteo::Place::key`]), so every
//! thermostat there, however it spells the place, shares one fetch and one answer (keyed, as
//! served, by the query as that thermostat sent it); `WEATHER_URL`'s, per full query string
//! (its answer may depend on any of it).
//!
//! Stale while revalidating: a fresh cached answer is served as it is; an older one is served
//! at once while a background thread asks upstream for a new one; with nothing cached the
//! request waits for the background fetch, at most [`Upstream::wait`]. Upstream is only ever
//! asked from those background threads (one per query at a time, at most [`MAX_FETCHES`] at
//! once), each bounded by [`Upstream::timeout`] (connect and whole request), so a hung
//! upstream never holds a request worker longer than the wait; the caller also bounds how many
//! workers may wait (see [`crate::util::outbound`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use parking_lot::Mutex;

use crate::util::clock::Clock;
use crate::util::logged;
use crate::util::outbound::OutboundGate;

mod flight;
pub mod open_meteo;
pub mod outdoor;
mod upstream;

use flight::Flight;

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

impl Source {
    /// What the cache and the fetches are keyed by: the place, or the full query.
    fn key(&self, query: &str) -> String {
        match self {
            Source::Upstream(_) => query.to_string(),
            Source::OpenMeteo { place, .. } => place.key(),
        }
    }

    /// A cached answer as served for this request: Open-Meteo's (one place's) keyed by the
    /// query as the thermostat sent it, as weather.nest.com keyed it.
    fn as_asked(&self, cached: Arc<Vec<u8>>) -> Arc<Vec<u8>> {
        match self {
            Source::Upstream(_) => cached,
            Source::OpenMeteo { place, .. } => Arc::new(place.keyed(&cached)),
        }
    }
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

struct Inner {
    entries: Mutex<HashMap<String, Entry>>,
    flights: Mutex<HashMap<String, Arc<Flight>>>,
    /// Where each postal code is, once Open-Meteo's geocoding said so (places do not move).
    places: open_meteo::Places,
    /// The outdoor temperature of the last answer for each place, for `/status` and the
    /// energy history.
    outdoor: outdoor::Readings,
    /// The server's clock, which ages the outdoor readings.
    clock: Clock,
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

pub struct Weather {
    inner: Arc<Inner>,
}

impl Weather {
    /// Outdoor readings kept in `dir` (see [`outdoor`]) and shown for `fresh_for` (at least
    /// [`outdoor::FRESH_AT_LEAST`]), aged by `clock`.
    pub fn new(clock: Clock, dir: Option<std::path::PathBuf>, fresh_for: Duration) -> Weather {
        Weather {
            inner: Arc::new(Inner::new(clock, dir, fresh_for)),
        }
    }

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
        let key = upstream.source.key(query);
        let source = &upstream.source;
        if let Some(body) = self.inner.cached(&key, Some(upstream.fresh_for), now) {
            return Some(source.as_asked(body));
        }
        let flight = self.fetch_in_background(upstream, &key, clock);
        if let Some(stale) = self.inner.cached(&key, None, now) {
            return Some(source.as_asked(stale));
        }
        let flight = flight?;
        let _place = gate.try_enter()?;
        flight.wait(deadline).map(|body| source.as_asked(body))
    }

    /// The fetch for `query` (a [`Source::key`]) running now, or a new one; `None` when
    /// [`MAX_FETCHES`] run already (or no thread could be started).
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
                "weather: {MAX_FETCHES} upstream requests still running; not asking for \"{}\"",
                logged(query)
            );
            return None;
        }
        if !self.inner.may_start(clock.now()) {
            log::warn!(
                "weather: {FETCH_BURST} upstream requests in a row; the next may start within a \
                 minute (not asking for \"{}\")",
                logged(query)
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
                    Source::Upstream(url) => upstream::fetch(url, &query_owned, timeout)
                        .map(|body| (outdoor::in_answer(&body), body)),
                    Source::OpenMeteo {
                        geocoding,
                        forecast,
                        place,
                    } => open_meteo::fetch(&inner.places, geocoding, forecast, place, timeout)
                        .map(|(celsius, body)| (vec![(place.key(), celsius)], body)),
                };
                let answer = match fetched {
                    Ok((readings, body)) => {
                        let body = Arc::new(body);
                        let now = clock.now_ms();
                        inner.outdoor.note(&readings, now);
                        inner.put(&query_owned, Arc::clone(&body), now);
                        Some(body)
                    }
                    Err(why) => {
                        log::warn!(
                            "weather upstream failed for \"{}\": {}",
                            logged(&query_owned),
                            logged(&why)
                        );
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
    fn new(clock: Clock, dir: Option<std::path::PathBuf>, fresh_for: Duration) -> Inner {
        Inner {
            entries: Mutex::default(),
            flights: Mutex::default(),
            places: open_meteo::Places::default(),
            outdoor: outdoor::Readings::load(dir, fresh_for),
            clock,
            pace: Mutex::default(),
        }
    }

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

/// The outdoor temperature by place, as the weather service last heard it.
pub trait Outdoor {
    /// A number that changes whenever any place's shown temperature does (so a kept record
    /// made with an older one is made again).
    fn generation(&self) -> u64;
    /// °C at this postal code and country.
    fn celsius(&self, postal_code: &str, country: &str) -> Option<f64>;
}

/// The outdoor temperature (°C) of the last answer for the place with this postal code and
/// country (the thermostat's query names the same place), whoever gave it, while it is fresh
/// (see [`outdoor`]).
impl Outdoor for Weather {
    fn generation(&self) -> u64 {
        self.inner.outdoor.generation(self.inner.clock.now_ms())
    }

    fn celsius(&self, postal_code: &str, country: &str) -> Option<f64> {
        let key = open_meteo::Place::parse(&format!("{postal_code},{country}"))?.key();
        self.inner.outdoor.celsius(&key, self.inner.clock.now_ms())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn upstream_requests_start_in_a_burst_then_at_a_pace() {
        let inner = Inner::new(Clock::system(), None, Duration::ZERO);
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
