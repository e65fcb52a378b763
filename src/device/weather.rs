//! `GET /nest/weather/v1?query=94304,US`: the thermostat's weather (see [`crate::weather`]).
//! With no upstream configured, or nothing cached when it fails, the thermostat gets
//! `502 {"error":"Weather service unavailable"}` and never waits longer than the timeout.

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
    };
    let body = app
        .weather
        .answer(&upstream, query, &app.config.clock)
        .ok_or(DeviceError::WeatherUnavailable)?;
    Ok(Response::json_bytes(200, body.to_vec()))
}
