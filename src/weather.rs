//! The weather thermostats show: answers from `WEATHER_URL`, cached per full query string. A
//! fresh cached answer is served without asking upstream; when upstream fails (or does not
//! answer within the timeout) the last answer for that query is served, however old.

use std::collections::HashMap;
use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::util::clock::Clock;

const MAX_ENTRIES: usize = 256;
const MAX_BODY: u64 = 2 * 1024 * 1024;

/// A cached answer and when it was fetched (ms, by the server's clock).
type Entry = (i64, Arc<Vec<u8>>);

/// Where answers come from and how long they keep.
pub struct Upstream<'a> {
    pub url: &'a str,
    pub fresh_for: Duration,
    pub timeout: Duration,
}

#[derive(Default)]
pub struct Weather {
    entries: Mutex<HashMap<String, Entry>>,
}

impl Weather {
    /// The answer for `query` (a JSON object's bytes), or `None` when upstream fails and
    /// nothing was ever cached for it. `clock`: the server's, which ages the answers.
    pub fn answer(
        &self,
        upstream: &Upstream<'_>,
        query: &str,
        clock: &Clock,
    ) -> Option<Arc<Vec<u8>>> {
        if let Some(body) = self.cached(query, Some(upstream.fresh_for), clock.now_ms()) {
            return Some(body);
        }
        match fetch(upstream.url, query, upstream.timeout) {
            Ok(body) => {
                let body = Arc::new(body);
                self.put(query, Arc::clone(&body), clock.now_ms());
                Some(body)
            }
            Err(why) => {
                log::warn!("weather upstream failed for {query:?}: {why}");
                self.cached(query, None, clock.now_ms())
            }
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

/// Asks upstream with the thermostat's query string appended; only a JSON object counts.
fn fetch(base: &str, query: &str, timeout: Duration) -> Result<Vec<u8>, String> {
    let url = match (query.is_empty(), base.contains('?')) {
        (true, _) => base.to_string(),
        (false, true) => format!("{base}&{query}"),
        (false, false) => format!("{base}?{query}"),
    };
    let agent = ureq::AgentBuilder::new().timeout(timeout).build();
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
