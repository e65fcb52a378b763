//! `GET /nest/weather/v1?query=94304,US`: the thermostat's weather (see [`crate::weather`]).
//! A cached answer is served at once (an old one is refreshed in the background). With nothing
//! cached, the request waits for upstream at most 2 s (`Config::weather_wait`, or the upstream
//! timeout, if shorter), and only while fewer than half the port's workers are waiting so; with
//! no upstream configured, or no answer in that time, the thermostat gets
//! `502 {"error":"Weather service unavailable"}`.

use std::time::Duration;

use super::DeviceError;
use crate::app::App;
use crate::http::Response;
use crate::weather::Upstream;

pub fn weather(app: &App, query: &str) -> Result<Response, DeviceError> {
    let url = app
        .config
        .weather_url
        .as_deref()
        .ok_or(DeviceError::WeatherUnavailable)?;
    let upstream = Upstream {
        url,
        fresh_for: Duration::from_millis(app.config.weather_cache_ttl_ms),
        timeout: app.config.weather_timeout,
        wait: app.config.weather_timeout.min(app.config.weather_wait),
    };
    let body = app
        .weather
        .answer(&upstream, query, &app.config.clock, &app.outbound_device)
        .ok_or(DeviceError::WeatherUnavailable)?;
    Ok(Response::json_bytes(200, body.to_vec()))
}
