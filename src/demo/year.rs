//! A year and a month of energy history for each demo thermostat, so the page's Energy view
//! can be seen without waiting a year. Made up, but shaped like a house's: the seasons (the
//! outside follows the calendar, warmest in mid-July), more heating at the weekend when people
//! are in, a few days away and a summer holiday with the heating or cooling held back, the fan
//! running with the heating and cooling it serves. Written through the energy store, in its
//! format, so the bytes per day of `docs/energy.md` are the demo's own.

use std::f64::consts::PI;
use std::io;
use std::path::Path;

use super::Profile;
use crate::energy::day::Day;
use crate::energy::store;

/// How many days before today are written (today's row is the live one).
pub const DAYS: i64 = 400;

/// Roughly the day of the year (0 is January 1st) of a date in days since 1970-01-01, which
/// was day 0 of its year: 365.2425 days a year is near enough for a season.
fn day_of_year(date: i64) -> f64 {
    (date as f64).rem_euclid(365.2425)
}

/// 0 for Monday … 6 for Sunday (1970-01-01 was a Thursday).
fn weekday(date: i64) -> i64 {
    (date + 3).rem_euclid(7)
}

/// A number in [0, 1) that depends only on the day and the thermostat.
fn noise(date: i64, seed: u64, salt: u64) -> f64 {
    let mut x = (date as u64)
        ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ salt.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// One made-up day of `profile` on `date`.
pub fn day(profile: &Profile, date: i64) -> Day {
    let seed = profile.room.seed;
    let s = &profile.setting;
    // The day's mean outside: the demo's own climate two degrees up, swinging 8 degrees with
    // the seasons, and a few degrees either way from one day to the next.
    let season = (2.0 * PI * (day_of_year(date) - 105.0) / 365.2425).sin();
    let outside = profile.weather.mean + 2.0 + 8.0 * season + 5.0 * (noise(date, seed, 1) - 0.5);
    let (heat_to, cool_to) = match s.mode.as_str() {
        "range" => (Some(s.low), Some(s.high)),
        "cool" => (None, Some(s.target)),
        "off" => (None, None),
        _ => (Some(s.target), None),
    };
    let weekend = weekday(date) >= 5;
    // A summer holiday (the two weeks around day 200 of the year) and one day in twenty away.
    let holiday = (193.0..207.0).contains(&day_of_year(date));
    let away = holiday || noise(date, seed, 2) < 0.05;
    let mut factor = if weekend { 1.12 } else { 1.0 };
    if away {
        factor *= 0.35;
    }
    let hours = |x: f64| (x.clamp(0.0, 22.0) * factor * 3600.0) as i64 * 1000;
    let heat_ms = heat_to.map_or(0, |t| hours((t - 2.0 - outside) * 0.9));
    let cool_ms = match cool_to {
        Some(t) if profile.can_cool => hours((outside - t + 3.0) * 1.1),
        _ => 0,
    };
    let fan_ms = if profile.has_fan {
        heat_ms + cool_ms
    } else {
        0
    };
    let setpoint = heat_to.or(cool_to).unwrap_or(20.0);
    let indoor =
        setpoint + if cool_ms > heat_ms { 0.4 } else { -0.3 } + (noise(date, seed, 3) - 0.5) * 0.6;
    let mut row = Day::new(date);
    row.heat_ms = heat_ms;
    row.cool_ms = cool_ms;
    row.fan_ms = fan_ms;
    row.away_ms = if away { 18 * 3_600_000 } else { 0 };
    row.indoor_sum = indoor * 288.0;
    row.indoor_n = 288;
    row.indoor_min = Some(((indoor - 0.9) * 10.0).round() / 10.0);
    row.indoor_max = Some(((indoor + 0.8) * 10.0).round() / 10.0);
    row.target_changes = (noise(date, seed, 4) * 3.5) as u32;
    row.outdoor_sum = ((outside * 10.0).round() / 10.0) * 288.0;
    row.outdoor_n = 288;
    row
}

/// Writes the [`DAYS`] days before `today` for `profile` into the energy directory.
pub fn write(energy_dir: &Path, profile: &Profile, today: i64) -> io::Result<()> {
    let days: Vec<Day> = (1..=DAYS).rev().map(|k| day(profile, today - k)).collect();
    store::replace_days(energy_dir, profile.serial, &days)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::profiles;

    #[test]
    fn the_year_has_seasons_weekends_and_days_away() {
        let today = 20_418; // 2025-11-26
        let hallway = &profiles()[0];
        let winter: i64 = (0..30).map(|k| day(hallway, today + 30 + k).heat_ms).sum();
        let summer: i64 = (0..30).map(|k| day(hallway, today - 150 + k).heat_ms).sum();
        assert!(
            winter > 2 * summer,
            "winter {winter} ms, summer {summer} ms"
        );
        let living = &profiles()[1];
        let cooling_summer: i64 = (0..30).map(|k| day(living, today - 150 + k).cool_ms).sum();
        let cooling_winter: i64 = (0..30).map(|k| day(living, today + 30 + k).cool_ms).sum();
        assert!(
            cooling_summer > cooling_winter,
            "{cooling_summer} against {cooling_winter}"
        );
        let away = (0..DAYS)
            .filter(|k| day(hallway, today - k).away_ms > 0)
            .count();
        assert!((10..60).contains(&away), "{away} days away");
        // The same day is the same every time (the demo's history does not change on restart).
        assert_eq!(day(hallway, today - 3), day(hallway, today - 3));
    }
}
