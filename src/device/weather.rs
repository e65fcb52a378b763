//! `GET /nest/weather/v1?query=94304,US`: the thermostat's weather (see [`crate::weather`]).
//! A cached answer is served at once (an old one is refreshed in the background). With nothing
//! cached, the request waits for the provider at most 2 s (`Config::weather_wait`, or the
//! timeout, if shorter), and only while fewer than half the port's workers are waiting so; with
//! `WEATHER_PROVIDER=off` (nothing is sent anywhere), or no answer in that time, the thermostat
//! gets `502 {"error":"Weather service unavailable"}`. With Open-Meteo a query that names no
//! place gets a 400 and asks nobody.

use std::time::Duration;

use super::DeviceError;
use crate::app::App;
use crate::config::WeatherProvider;
use crate::http::{Response, percent_decode};
use crate::util::outbound::OutboundGate;
use crate::weather::open_meteo::Place;
use crate::weather::{Source, Upstream};

/// `outbound`: the device port's gate for requests waiting on an outbound call.
pub fn weather(app: &App, outbound: &OutboundGate, query: &str) -> Result<Response, DeviceError> {
    let config = &app.config();
    let source = match config.weather_provider() {
        WeatherProvider::Off => return Err(DeviceError::WeatherUnavailable),
        WeatherProvider::Upstream => Source::Upstream(
            config
                .weather_url
                .clone()
                .ok_or(DeviceError::WeatherUnavailable)?,
        ),
        WeatherProvider::OpenMeteo => Source::OpenMeteo {
            geocoding: config.open_meteo_geocoding_url.clone(),
            forecast: config.open_meteo_url.clone(),
            place: place(query)?,
        },
    };
    let upstream = Upstream {
        source,
        fresh_for: Duration::from_millis(config.weather_cache_ttl_ms),
        timeout: config.weather_timeout,
        wait: config.weather_timeout.min(config.weather_wait),
    };
    let body = app
        .weather()
        .answer(&upstream, query, &config.clock, outbound)
        .ok_or(DeviceError::WeatherUnavailable)?;
    Ok(Response::json_bytes(200, body.to_vec()))
}

/// The place `query=` names (the firmware's `<postal code>,<country>`).
fn place(query: &str) -> Result<Place, DeviceError> {
    let value = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("query="))
        .ok_or(DeviceError::WeatherQuery)?;
    let value = percent_decode(value).map_err(|_| DeviceError::WeatherQuery)?;
    Place::parse(&value).ok_or(DeviceError::WeatherQuery)
}
