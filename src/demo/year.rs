//! A year and a month of energy history for each demo thermostat, so the page's Energy view
//! can be seen without waiting a year. Made up, but shaped like a house's: the seasons (the
//! outside follows the calendar, warmest in mid-July), more heating at the weekend when people
//! are in, a few days away and a summer holiday with the heating or cooling held back, the fan
//! running with the heating and cooling it serves. Written through the energy store, in its
//! format, so the bytes per day of `docs/energy.md` are the demo's own.

use std::io;
use std::path::Path;

use super::Profile;
use super::climate::{HOME, noise};
use crate::energy::day::Day;
use crate::energy::store;

/// How many made-up days are written before yesterday (which, with today, the demo replays).
pub const DAYS: i64 = 400;

/// 0 for Monday … 6 for Sunday (1970-01-01 was a Thursday).
fn weekday(date: i64) -> i64 {
    (date + 3).rem_euclid(7)
}

/// How long a room's heating and cooling run in a day, for the day's mean outside: fitted to
/// the room's climate model ([`super::climate`]), so the year's days look like the days the
/// demo replays and runs (`typical_days_are_the_models` checks it).
#[derive(Clone, Copy, Debug, Default)]
pub struct Runs {
    /// Hours of heating per degree the day's mean outside is below the heat setpoint less
    /// `heat_below`, and likewise of cooling above the cool setpoint less `cool_below`.
    pub heat_per_degree: f64,
    pub heat_below: f64,
    pub cool_per_degree: f64,
    pub cool_below: f64,
}

/// `x` when it is large, a little above 0 when it is below 0, smooth between (a room runs its
/// heating on a cold night of a mild day).
fn soft(x: f64) -> f64 {
    2.0 * (1.0 + (x / 2.0).exp()).ln()
}

/// Hours of heating and of cooling on a usual day (not away, not a weekend) with the day's
/// mean outside at `outside`.
pub fn typical(profile: &Profile, outside: f64) -> (f64, f64) {
    let s = &profile.setting;
    let r = &profile.runs;
    let (heat_to, cool_to) = match s.mode.as_str() {
        "range" => (Some(s.low), Some(s.high)),
        "cool" => (None, Some(s.target)),
        "off" => (None, None),
        _ => (Some(s.target), None),
    };
    let heat = heat_to.map_or(0.0, |t| {
        r.heat_per_degree * soft(t - r.heat_below - outside)
    });
    let cool = cool_to.filter(|_| profile.can_cool).map_or(0.0, |t| {
        r.cool_per_degree * soft(outside - t + r.cool_below)
    });
    (heat, cool)
}

/// One made-up day of `profile` on `date`.
pub fn day(profile: &Profile, date: i64) -> Day {
    let seed = profile.room.seed;
    let s = &profile.setting;
    // The day's mean outside: the house's weather, the same for every room.
    let outside = HOME.day_mean(date as f64 + 0.5);
    let weekend = weekday(date) >= 5;
    // A summer holiday (the two weeks around day 200 of the year) and one day in twenty away.
    let holiday = (193.0..207.0).contains(&(date as f64).rem_euclid(365.2425));
    let away = holiday || noise(date, seed, 2) < 0.05;
    let mut factor = if weekend { 1.12 } else { 1.0 };
    if away {
        factor *= 0.35;
    }
    let hours = |h: f64| (h.clamp(0.0, 22.0) * factor * 3600.0) as i64 * 1000;
    let (heat, cool) = typical(profile, outside);
    let (heat_ms, cool_ms) = (hours(heat), hours(cool));
    let fan_ms = if profile.has_fan {
        heat_ms + cool_ms
    } else {
        0
    };
    let setpoint = match s.mode.as_str() {
        "range" => s.low,
        _ => s.target,
    };
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

/// Writes `profile`'s finished days into the energy directory: `yesterday` (replayed by the
/// demo) and the [`DAYS`] days before it, made up.
pub fn write(energy_dir: &Path, profile: &Profile, yesterday: &Day) -> io::Result<()> {
    let mut days: Vec<Day> = (1..=DAYS)
        .rev()
        .map(|k| day(profile, yesterday.date - k))
        .collect();
    days.push(yesterday.clone());
    store::replace_days(energy_dir, profile.serial, &days)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::profiles;

    /// The rooms' day in the climate model, against [`typical`]: within an hour or a third.
    /// `cargo test --lib demo::year -- --nocapture` prints them, to fit [`Runs`] again after
    /// the model changes.
    #[test]
    fn typical_days_are_the_models() {
        use crate::demo::{STEP, climate::Hvac};
        for p in profiles() {
            // Mid-January, April, July and October 2026.
            for date in [20_468, 20_558, 20_649, 20_741] {
                let (mut temp, mut hvac) = (p.start_temp, Hvac::default());
                let (mut heat, mut cool) = (0, 0);
                let mut t = (date - 1) * 86_400;
                while t < (date + 1) * 86_400 {
                    (temp, hvac) = p.step(temp, hvac, &p.setting, t, STEP as f64);
                    if t >= date * 86_400 {
                        heat += if hvac.heating { STEP } else { 0 };
                        cool += if hvac.cooling { STEP } else { 0 };
                    }
                    t += STEP;
                }
                let outside = HOME.day_mean(date as f64 + 0.5);
                let (heat, cool) = (heat as f64 / 3600.0, cool as f64 / 3600.0);
                let (h, c) = typical(&p, outside);
                println!(
                    "{} on {date}, outside {outside:.1}: the model heats {heat:.2} h, cools {cool:.2} h; the year {h:.2} h, {c:.2} h",
                    p.name
                );
                for (model, year) in [(heat, h), (cool, c)] {
                    assert!(
                        (model - year).abs() <= (model / 3.0).max(1.0),
                        "{} on {date}: the model {model:.2} h, the year {year:.2} h",
                        p.name
                    );
                }
            }
        }
    }

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
