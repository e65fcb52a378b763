//! Open-Meteo (free, no key) as the thermostats' weather: the postal code and country of the
//! thermostat's query are geocoded once (`/v1/search`), the place's current conditions, next
//! hours and days are asked (`/v1/forecast`), and the answer is written in the shape the
//! firmware reads from weather.nest.com: `{"94304,US": {"current", "location", "forecast":
//! {"daily", "hourly"}}}`. Only the postal code and country leave hearth (to the geocoder), then
//! the place's coordinates (to the forecast); nothing about the thermostat or its owner.

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;

const MAX_BODY: u64 = 512 * 1024;
const MAX_PLACES: usize = 256;
/// Days and hours of forecast passed on (the firmware shows a few of each).
const DAYS: usize = 5;
const HOURS: usize = 24;

/// Where the thermostat is, as its query names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub postal_code: String,
    /// ISO 3166-1 alpha-2, upper case.
    pub country: String,
    /// The query's value as the thermostat sent it, which keys the answer it is served (as
    /// weather.nest.com keyed it).
    asked: String,
}

impl Place {
    /// `94304,US` (the value of the firmware's `query=`); a missing country is `US`, as the
    /// firmware's own cloud took it. `None` for anything that names no place.
    pub fn parse(query: &str) -> Option<Place> {
        let (postal, country) = query.rsplit_once(',').unwrap_or((query, "US"));
        let (postal, country) = (postal.trim(), country.trim().to_ascii_uppercase());
        let postal_ok = (1..=16).contains(&postal.len())
            && postal
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == ' ' || c == '-');
        let country_ok = country.len() == 2 && country.chars().all(|c| c.is_ascii_uppercase());
        (postal_ok && country_ok).then(|| Place {
            postal_code: postal.to_string(),
            country,
            asked: query.to_string(),
        })
    }

    /// The place, tidied (`94304,US`): the same for every way of writing it.
    pub fn key(&self) -> String {
        format!("{},{}", self.postal_code.to_ascii_uppercase(), self.country)
    }

    /// One place's answer (a JSON object's bytes) as served to the thermostat that asked this
    /// way: `{"<as asked>": answer}`.
    pub fn keyed(&self, answer: &[u8]) -> Vec<u8> {
        let asked = Value::from(self.asked.as_str()).to_string();
        let mut body = Vec::with_capacity(asked.len() + answer.len() + 3);
        body.push(b'{');
        body.extend_from_slice(asked.as_bytes());
        body.push(b':');
        body.extend_from_slice(answer);
        body.push(b'}');
        body
    }
}

/// A geocoded place.
#[derive(Clone, Debug)]
pub struct Located {
    latitude: f64,
    longitude: f64,
    name: String,
    /// The region (state, province).
    admin1: String,
    timezone: String,
}

/// Geocoded places, by [`Place::key`].
pub type Places = Mutex<HashMap<String, Located>>;

/// The current temperature (°C) and the firmware-shaped answer for `place` (its object, which
/// [`Place::keyed`] keys as asked), each request bounded by `timeout`.
pub fn fetch(
    places: &Places,
    geocoding: &str,
    forecast: &str,
    place: &Place,
    timeout: Duration,
) -> Result<(f64, Vec<u8>), String> {
    let agent = super::upstream::agent(timeout);
    let located = locate(&agent, places, geocoding, place)?;
    // Written out, not with ureq's `query` (which costs the ARM binary kilobytes): nothing
    // here needs escaping.
    let url = format!(
        "{forecast}/v1/forecast?latitude={}&longitude={}\
         &current=temperature_2m,relative_humidity_2m,weather_code,wind_speed_10m,wind_direction_10m\
         &daily=temperature_2m_max,temperature_2m_min,weather_code,sunrise,sunset\
         &hourly=temperature_2m,relative_humidity_2m&forecast_days={DAYS}\
         &timezone=auto&timeformat=unixtime&wind_speed_unit=mph",
        located.latitude, located.longitude
    );
    let response = agent.get(&url).call().map_err(|e| e.to_string())?;
    let forecast: Value = read_json(response)?;
    let answer = translate(place, &located, &forecast)?;
    let celsius = super::outdoor::current_celsius(&answer).ok_or("no current temperature")?;
    let body = serde_json::to_vec(&answer).map_err(|e| e.to_string())?;
    Ok((celsius, body))
}

/// The place's coordinates: remembered, else asked of the geocoder.
fn locate(
    agent: &ureq::Agent,
    places: &Places,
    geocoding: &str,
    place: &Place,
) -> Result<Located, String> {
    let key = place.key();
    if let Some(l) = places.lock().get(&key) {
        return Ok(l.clone());
    }
    // A postal code is letters, digits, spaces and dashes (see [`Place::parse`]); a country,
    // two letters.
    let url = format!(
        "{geocoding}/v1/search?name={}&countryCode={}&count=1&format=json",
        place.postal_code.replace(' ', "%20"),
        place.country
    );
    let response = agent.get(&url).call().map_err(|e| e.to_string())?;
    let search: Value = read_json(response)?;
    let first = search.pointer("/results/0");
    let coordinate = |field: &str| first.and_then(|r| r.get(field)).and_then(Value::as_f64);
    let text = |field: &str| {
        let t = first.and_then(|r| r.get(field)).and_then(Value::as_str);
        t.unwrap_or_default().to_string()
    };
    let (Some(latitude), Some(longitude)) = (coordinate("latitude"), coordinate("longitude"))
    else {
        return Err(format!("the geocoder knows no place {key:?}"));
    };
    let located = Located {
        latitude,
        longitude,
        name: text("name"),
        admin1: text("admin1"),
        timezone: text("timezone"),
    };
    let mut places = places.lock();
    if places.len() < MAX_PLACES {
        places.insert(key, located.clone());
    }
    Ok(located)
}

fn read_json(response: ureq::Response) -> Result<Value, String> {
    let body = super::upstream::read_body(response, MAX_BODY)?;
    serde_json::from_slice(&body).map_err(|e| format!("unexpected answer: {e}"))
}

/// An object of these fields, in this order. (Written out rather than with `json!`, whose
/// expansion costs the ARM binary more than the whole translation.)
fn object(fields: Vec<(&str, Value)>) -> Value {
    Value::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// The `i`-th number of the forecast's array at `pointer` (`/daily/time`).
fn nth(f: &Value, pointer: &str, i: usize) -> Option<f64> {
    f.pointer(pointer)?.get(i)?.as_f64()
}

/// How many entries the forecast's array at `pointer` has.
fn len(f: &Value, pointer: &str) -> usize {
    f.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// Open-Meteo's answer in weather.nest.com's shape for one place (see the module's doc); `Err`
/// without a current temperature.
fn translate(place: &Place, located: &Located, f: &Value) -> Result<Value, String> {
    let now = |field: &str| {
        f.pointer(&format!("/current/{field}"))
            .and_then(Value::as_f64)
    };
    let temp = now("temperature_2m").ok_or("no current temperature in the answer")?;
    let (now_condition, now_icon) = condition(now("weather_code"));
    let offset = gmt_offset(f["utc_offset_seconds"].as_i64().unwrap_or(0));
    let int = |v: Option<f64>| Value::from(v.map(|v| v as i64));
    let daily: Vec<Value> = (0..len(f, "/daily/time").min(DAYS))
        .map(|i| {
            let (condition, icon) = condition(nth(f, "/daily/weather_code", i));
            let low = nth(f, "/daily/temperature_2m_min", i);
            let high = nth(f, "/daily/temperature_2m_max", i);
            object(vec![
                ("temp_low_f", low.map(fahrenheit).into()),
                ("temp_low_c", low.map(tenth).into()),
                ("temp_high_f", high.map(fahrenheit).into()),
                ("temp_high_c", high.map(tenth).into()),
                ("condition", condition.into()),
                ("icon", icon.into()),
                ("date", int(nth(f, "/daily/time", i))),
            ])
        })
        .collect();
    // The hours from the current one on (Open-Meteo's start at local midnight).
    let this_hour = now("time").map_or(f64::MIN, |t| t - t.rem_euclid(3600.0));
    let hourly: Vec<Value> = (0..len(f, "/hourly/time"))
        .filter(|&i| nth(f, "/hourly/time", i).is_some_and(|t| t >= this_hour))
        .take(HOURS)
        .enumerate()
        .map(|(n, i)| {
            let t = nth(f, "/hourly/temperature_2m", i);
            object(vec![
                ("hour", (n + 1).into()),
                ("temp_f", t.map(fahrenheit).into()),
                ("temp_c", t.map(tenth).into()),
                (
                    "humidity",
                    nth(f, "/hourly/relative_humidity_2m", i)
                        .map(f64::round)
                        .into(),
                ),
                ("time", int(nth(f, "/hourly/time", i))),
            ])
        })
        .collect();
    let short_name = match located.admin1.as_str() {
        "" => located.name.clone(),
        region => format!("{},{region}", located.name),
    };
    let current = object(vec![
        ("temp_f", fahrenheit(temp).into()),
        ("temp_c", tenth(temp).into()),
        ("condition", now_condition.into()),
        ("sunrise", int(nth(f, "/daily/sunrise", 0))),
        ("sunset", int(nth(f, "/daily/sunset", 0))),
        (
            "humidity",
            now("relative_humidity_2m").map(f64::round).into(),
        ),
        ("gmt_offset", offset.clone().into()),
        ("wind_dir", now("wind_direction_10m").map(compass).into()),
        ("wind_mph", now("wind_speed_10m").map(f64::round).into()),
        ("icon", now_icon.into()),
    ]);
    let location = object(vec![
        ("station_id", "unknown".into()),
        ("zip", place.postal_code.clone().into()),
        ("city", located.name.clone().into()),
        ("state", located.admin1.clone().into()),
        ("country", place.country.clone().into()),
        ("lat", format!("{:.2}", located.latitude).into()),
        ("lon", format!("{:.2}", located.longitude).into()),
        ("short_name", short_name.clone().into()),
        (
            "timezone",
            f["timezone_abbreviation"].as_str().unwrap_or("").into(),
        ),
        ("timezone_long", located.timezone.clone().into()),
        (
            "full_name",
            format!("{short_name} {}, {}", place.postal_code, place.country).into(),
        ),
        ("gmt_offset", offset.into()),
    ]);
    let forecast = object(vec![("daily", daily.into()), ("hourly", hourly.into())]);
    Ok(object(vec![
        ("current", current),
        ("location", location),
        ("forecast", forecast),
    ]))
}

/// One decimal, as weather.nest.com gave °C.
fn tenth(c: f64) -> f64 {
    (c * 10.0).round() / 10.0
}

/// Whole °F, as weather.nest.com gave them.
fn fahrenheit(c: f64) -> f64 {
    (c * 9.0 / 5.0 + 32.0).round()
}

/// `-08.00` for UTC−8 (weather.nest.com's form).
fn gmt_offset(seconds: i64) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let minutes = seconds.abs() / 60;
    let (h, m) = (minutes / 60, minutes % 60);
    let frac = m * 100 / 60;
    if sign == '-' {
        format!("-{h:02}.{frac:02}")
    } else {
        format!("{h:02}.{frac:02}")
    }
}

/// Wind direction in degrees as a 16-point compass (`WSW`).
fn compass(degrees: f64) -> &'static str {
    const POINTS: [&str; 16] = [
        "N", "NNE", "NE", "ENE", "E", "ESE", "SE", "SSE", "S", "SSW", "SW", "WSW", "W", "WNW",
        "NW", "NNW",
    ];
    let i = (degrees.rem_euclid(360.0) / 22.5).round() as usize % 16;
    POINTS[i]
}

/// A WMO weather code (Open-Meteo's `weather_code`) as weather.nest.com's condition and icon.
fn condition(code: Option<f64>) -> (&'static str, &'static str) {
    match code.map(|c| c as i64) {
        Some(0) => ("Clear", "clear"),
        Some(1 | 2) => ("Partly Cloudy", "partlycloudy"),
        Some(3) => ("Cloudy", "cloudy"),
        Some(45 | 48) => ("Fog", "fog"),
        Some(51..=57) => ("Drizzle", "rain"),
        Some(61..=67 | 80..=82) => ("Rain", "rain"),
        Some(71..=77 | 85 | 86) => ("Snow", "snow"),
        Some(95..=99) => ("Thunderstorm", "tstorms"),
        _ => ("Unknown", "unknown"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_names_a_place_or_nothing() {
        let p = Place::parse("94304,us").unwrap();
        assert_eq!(
            (p.postal_code.as_str(), p.country.as_str()),
            ("94304", "US")
        );
        assert_eq!(Place::parse("10001").unwrap().country, "US");
        assert_eq!(Place::parse("SW1A 1AA,GB").unwrap().postal_code, "SW1A 1AA");
        for bad in ["", ",US", "94304,USA", "94304,U1", "a/b,US", "x&y=1,US"] {
            assert_eq!(Place::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn one_place_however_it_is_spelled_and_its_answer_keyed_as_asked() {
        let keys: Vec<String> = ["94304,US", "94304,us", " 94304 , US", "94304"]
            .iter()
            .map(|q| Place::parse(q).unwrap().key())
            .collect();
        assert!(keys.iter().all(|k| k == "94304,US"), "{keys:?}");
        assert_eq!(Place::parse("sw1a 1aa,gb").unwrap().key(), "SW1A 1AA,GB");
        let keyed = Place::parse("94304,us")
            .unwrap()
            .keyed(br#"{"current":{}}"#);
        assert_eq!(keyed, br#"{"94304,us":{"current":{}}}"#);
    }

    #[test]
    fn numbers_in_the_firmwares_form() {
        assert_eq!(gmt_offset(-8 * 3600), "-08.00");
        assert_eq!(gmt_offset(5 * 3600 + 1800), "05.50");
        assert_eq!(compass(250.0), "WSW");
        assert_eq!(compass(359.0), "N");
        assert_eq!(fahrenheit(10.6), 51.0);
        assert_eq!(tenth(10.64), 10.6);
        assert_eq!(condition(Some(61.0)), ("Rain", "rain"));
    }
}
