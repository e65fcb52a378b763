//! The demo's weather and rooms. A room warms while its heating runs, cools while its air
//! conditioning runs, and otherwise drifts towards the weather outside, faster when the wind
//! blows or a door stands open; the sun through its windows and the people in it warm it. The
//! house has one weather ([`HOME`]), which every room leaks to: it follows the seasons (warmest
//! in mid-July), warmer and colder spells from one day to the next, and the time of day
//! (coldest around 03:00 UTC), with clouds passing and wind rising and falling over minutes;
//! people come and go in the hours they are usually home. The thermostat reads the air by its
//! sensor, which moves a little with the air around it, and switches its HVAC with a dead band,
//! as a real one does.
//!
//! The rooms are small and their furnaces strong, so that a visitor sees them move: a heating
//! cycle takes minutes rather than an hour, and every reading changes within a minute.
//!
//! Pure functions of the time, so the same model replays the last 24 hours for the demo's
//! history and the tests step it on a manual clock.

use std::f64::consts::PI;

/// Degrees per second while heating or cooling runs.
const HVAC_RATE: f64 = 0.008;
/// How fast a room follows the weather: per second, per degree of difference, in still air.
const LEAK: f64 = 0.00015;
/// How much faster it follows while a door to the outside stands open.
const DOOR_OPEN: f64 = 5.0;
/// Heat one person brings to a room, degrees per second.
const PERSON: f64 = 0.0006;
/// The HVAC starts this far past the setpoint and stops this far beyond it.
const START_BELOW: f64 = 0.4;
const STOP_BEYOND: f64 = 0.2;
/// People come and go at most once in a block of this many seconds.
const BLOCK: i64 = 600;
/// A door opened by someone coming or going stays open this long.
const DOOR_SECONDS: i64 = 45;

/// The weather outside the house.
#[derive(Clone, Copy, Debug)]
pub struct Weather {
    /// The year's mean outside temperature, how far the seasons move a day's mean from it and
    /// how far a day swings either side of its mean (°C).
    pub mean: f64,
    pub seasons: f64,
    pub swing: f64,
}

/// The demo house's weather: every demo thermostat's room leaks to it, and its energy history's
/// outdoor readings are of it. Mild enough that a sunny room needs cooling on an autumn
/// afternoon, cold enough that the hallway heats on a summer night.
pub const HOME: Weather = Weather {
    mean: 14.0,
    seasons: 8.0,
    swing: 6.0,
};

/// The house around a room with inside walls, whatever the weather (°C).
const HOUSE: f64 = 20.0;

/// How far a warm or cold spell moves a day's mean, either way (°C).
const SPELLS: f64 = 2.5;

/// Fraction of the day at Unix time `t`, 0 at midnight UTC.
fn day(t: i64) -> f64 {
    t.rem_euclid(86_400) as f64 / 86_400.0
}

/// A wave of `period` seconds at Unix time `t`, between -1 and 1.
fn wave(t: i64, period: f64, phase: f64) -> f64 {
    (2.0 * PI * (t.rem_euclid(86_400 * 7) as f64 / period) + phase).sin()
}

/// The season on `date` (days since 1970-01-01): -1 in mid-January, 1 in mid-July. 365.2425
/// days a year from day 0, which was January 1st, is near enough for a season.
pub fn season(date: f64) -> f64 {
    (2.0 * PI * (date.rem_euclid(365.2425) - 105.0) / 365.2425).sin()
}

/// A number in [0, 1) that depends only on `date`, `seed` and `salt`.
pub fn noise(date: i64, seed: u64, salt: u64) -> f64 {
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

impl Weather {
    /// The day's mean outside at `date` (days since 1970-01-01, fractional): the season's, and a
    /// warm or cold spell that moves smoothly from one day's to the next's.
    pub fn day_mean(&self, date: f64) -> f64 {
        let (d, f) = (date.floor() as i64, date - date.floor());
        let spell = |d: i64| SPELLS * 2.0 * (noise(d, 0, 1) - 0.5);
        self.mean + self.seasons * season(date) + spell(d) + (spell(d + 1) - spell(d)) * f
    }

    /// Outside temperature at Unix time `t`: the day's mean, coldest around 03:00 UTC and
    /// warmest around 15:00, a little warmer in the sun and cooler under a passing cloud.
    pub fn outside(&self, t: i64) -> f64 {
        self.day_mean(t as f64 / 86_400.0) - self.swing * (2.0 * PI * (day(t) - 0.125)).cos()
            + 1.5 * self.sunshine(t)
    }

    /// How high the sun stands, 0 (night, 18:00 to 06:00 UTC) to 1 (noon).
    pub fn sun(&self, t: i64) -> f64 {
        (2.0 * PI * (day(t) - 0.25)).sin().max(0.0)
    }

    /// How much sunshine reaches the ground, 0 to 1: the sun's height, less the clouds that
    /// pass over minutes.
    pub fn sunshine(&self, t: i64) -> f64 {
        let clouds = 0.45 + 0.3 * wave(t, 1_730.0, 0.0) + 0.25 * wave(t, 410.0, 1.0);
        self.sun(t) * (1.0 - clouds.clamp(0.0, 1.0))
    }

    /// The wind, 0 (still) to 1 (a gale, for a house), rising and falling over minutes.
    pub fn wind(&self, t: i64) -> f64 {
        (0.5 + 0.3 * wave(t, 1_130.0, 2.0) + 0.2 * wave(t, 290.0, 0.5)).clamp(0.0, 1.0)
    }
}

/// Indoor humidity around a daily mean `mean` at Unix time `t` (whole percent).
pub fn humidity(mean: f64, t: i64) -> f64 {
    (mean + 6.0 * (2.0 * PI * day(t)).sin() + 2.0 * wave(t, 370.0, 0.0)).round()
}

/// The room a demo thermostat hangs in.
#[derive(Clone, Copy, Debug)]
pub struct Room {
    /// Heat the sun brings through its windows at noon on a clear day, degrees per second.
    pub sun: f64,
    /// The hours (UTC, from and until) when people are usually in, and how many at most.
    pub occupied: &'static [(u8, u8)],
    pub people: u8,
    /// Whether it has a door to the outside, opened whenever someone comes or goes.
    pub door: bool,
    /// The share of its walls it shares with the heated house ([`HOUSE`]) rather than with
    /// the outside, 0 to 1.
    pub interior: f64,
    /// Makes the room's comings and goings its own.
    pub seed: u64,
}

/// What acts on a room at one moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Conditions {
    pub outside: f64,
    /// What the room drifts towards: the outside, and the house beyond its inside walls.
    pub around: f64,
    /// Per second, per degree of difference from outside.
    pub leak: f64,
    /// Degrees per second from the sun and the people.
    pub gain: f64,
    pub people: u8,
    pub door_open: bool,
}

impl Room {
    /// How many people are in at Unix time `t`: in the usual hours, between one and
    /// [`Room::people`], changing from one ten-minute block to the next; otherwise nobody.
    pub fn people_at(&self, t: i64) -> u8 {
        let block = t.div_euclid(BLOCK);
        let hour = (block * BLOCK).rem_euclid(86_400) / 3600;
        let usual = self.occupied.iter().any(|&(from, until)| {
            let (from, until) = (i64::from(from), i64::from(until));
            if from <= until {
                (from..until).contains(&hour)
            } else {
                hour >= from || hour < until
            }
        });
        if !usual || self.people == 0 {
            return 0;
        }
        1 + (mix(block as u64 ^ self.seed) % u64::from(self.people)) as u8
    }

    /// Whether the outside door stands open at `t`: for a while after someone came or went.
    pub fn door_open(&self, t: i64) -> bool {
        let start = t.div_euclid(BLOCK) * BLOCK;
        self.door && t - start < DOOR_SECONDS && self.people_at(start) != self.people_at(start - 1)
    }

    pub fn conditions(&self, weather: &Weather, t: i64) -> Conditions {
        let people = self.people_at(t);
        let door_open = self.door_open(t);
        let draught = if door_open { DOOR_OPEN } else { 1.0 };
        let outside = weather.outside(t);
        Conditions {
            outside,
            around: outside + (HOUSE - outside) * self.interior,
            leak: LEAK * (0.6 + 0.8 * weather.wind(t)) * draught,
            gain: self.sun * weather.sunshine(t) + PERSON * f64::from(people),
            people,
            door_open,
        }
    }
}

/// SplitMix64's finaliser: a well-spread hash of a block number.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What the thermostat's sensor reads of a room at `temp` at Unix time `t`: the air around it
/// moves a little (a tenth of a degree either way, over a minute), to a tenth of a degree.
pub fn sensed(temp: f64, t: i64) -> f64 {
    reading(temp + 0.08 * wave(t, 67.0, 0.0) + 0.03 * wave(t, 37.0, 2.0))
}

/// What the thermostat is set to do.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    /// `off`, `heat`, `cool`, `range` or `emergency`.
    pub mode: String,
    pub target: f64,
    pub low: f64,
    pub high: f64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hvac {
    pub heating: bool,
    pub cooling: bool,
}

/// Which of heating and cooling should run, given what runs now (the dead band keeps a
/// running system on until it is a little past the setpoint).
pub fn decide(temp: f64, setting: &Setting, now: Hvac) -> Hvac {
    let (heat_to, cool_to) = match setting.mode.as_str() {
        "heat" | "emergency" => (Some(setting.target), None),
        "cool" => (None, Some(setting.target)),
        "range" => (Some(setting.low), Some(setting.high)),
        _ => (None, None),
    };
    let heating = heat_to.is_some_and(|to| {
        if now.heating {
            temp < to + STOP_BEYOND
        } else {
            temp < to - START_BELOW
        }
    });
    let cooling = !heating
        && cool_to.is_some_and(|to| {
            if now.cooling {
                temp > to - STOP_BEYOND
            } else {
                temp > to + START_BELOW
            }
        });
    Hvac { heating, cooling }
}

/// The room's temperature `dt` seconds later (`dt` short enough that what acts on it holds).
pub fn advance(temp: f64, now: &Conditions, hvac: Hvac, dt: f64) -> f64 {
    let mut next = temp + (now.around - temp) * now.leak * dt + now.gain * dt;
    if hvac.heating {
        next += HVAC_RATE * dt;
    }
    if hvac.cooling {
        next -= HVAC_RATE * dt;
    }
    next
}

/// A reading as the thermostat reports it: a tenth of a degree.
pub fn reading(temp: f64) -> f64 {
    (temp * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::{Profile, STEP, profiles};

    fn heat(target: f64) -> Setting {
        Setting {
            mode: "heat".into(),
            target,
            low: 19.0,
            high: 24.0,
        }
    }

    /// 2026-11-26 00:00 UTC.
    const MIDNIGHT: i64 = 1_795_651_200;

    /// The room's sensed reading and HVAC at every step of `hours` from `from`, after a day
    /// of settling in from its start temperature.
    fn run(p: &Profile, from: i64, hours: i64) -> Vec<(i64, f64, Hvac)> {
        let (mut temp, mut hvac) = (p.start_temp, Hvac::default());
        let mut out = Vec::new();
        let mut t = from - 24 * 3600;
        while t < from + hours * 3600 {
            (temp, hvac) = p.step(temp, hvac, &p.setting, t, STEP as f64);
            t += STEP;
            if t >= from {
                out.push((t, sensed(temp, t), hvac));
            }
        }
        out
    }

    /// The longest time (seconds) the reading stood still.
    fn longest_still(steps: &[(i64, f64, Hvac)]) -> i64 {
        let (mut still, mut longest) = (0, 0);
        for w in steps.windows(2) {
            still = if w[0].1 == w[1].1 { still + STEP } else { 0 };
            longest = longest.max(still);
        }
        longest
    }

    /// Whatever is on the page: every room's reading and HVAC, at every step.
    #[test]
    fn the_page_changes_within_a_minute() {
        let rooms: Vec<_> = profiles().iter().map(|p| run(p, MIDNIGHT, 48)).collect();
        let (mut still, mut longest) = (0, 0);
        let mut running = [0; 3];
        for i in 1..rooms[0].len() {
            let mut changed = false;
            for (r, steps) in rooms.iter().enumerate() {
                let (before, now) = (steps[i - 1], steps[i]);
                let moved = before.1 != now.1;
                changed |= moved || before.2 != now.2;
                // A room whose HVAC runs moves on its own, whatever the others do.
                let runs = now.2.heating || now.2.cooling;
                running[r] = if runs && !moved { running[r] + STEP } else { 0 };
                assert!(
                    running[r] < 60,
                    "room {r} ran its HVAC at {} for a minute",
                    now.1
                );
            }
            still = if changed { 0 } else { still + STEP };
            longest = longest.max(still);
        }
        assert!(longest < 60, "the page stood still {longest} s");
        for (p, steps) in profiles().iter().zip(&rooms) {
            // And each room on its own moves every minute or so.
            let longest = longest_still(steps);
            assert!(longest <= 90, "{} stood still {longest} s", p.name);
            let runs = steps.iter().filter(|s| s.2.heating || s.2.cooling).count();
            assert!(runs > 0, "{} never ran its HVAC", p.name);
        }
    }

    #[test]
    fn a_room_at_night_heats_in_cycles_of_minutes() {
        let hallway = &profiles()[0];
        let night = run(hallway, MIDNIGHT + 2 * 3600, 3);
        let mut runs = Vec::new();
        let mut started: Option<(i64, f64)> = None;
        for &(t, temp, hvac) in &night {
            match (started, hvac.heating) {
                (None, true) => started = Some((t, temp)),
                (Some((from, first)), false) => {
                    runs.push((t - from, temp - first));
                    started = None;
                }
                _ => {}
            }
        }
        assert!(runs.len() >= 6, "{runs:?}");
        for (seconds, warmed) in &runs {
            assert!(*seconds <= 6 * 60, "heating ran {seconds} s: {runs:?}");
            assert!(*warmed > 0.3, "heating warmed it {warmed}: {runs:?}");
        }
        // And the reading never stands still while heating runs.
        let heating: Vec<_> = night.iter().filter(|s| s.2.heating).copied().collect();
        assert!(longest_still(&heating) < 60);
    }

    #[test]
    fn the_sun_warms_by_day_and_clouds_pass() {
        let w = HOME;
        assert_eq!(w.sun(MIDNIGHT), 0.0);
        assert_eq!(w.sunshine(MIDNIGHT + 20 * 3600), 0.0);
        let day: Vec<f64> = (0..120)
            .map(|m| w.sunshine(MIDNIGHT + 11 * 3600 + m * 60))
            .collect();
        let (lo, hi) = day
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), s| (lo.min(*s), hi.max(*s)));
        assert!(hi > 0.5 && hi - lo > 0.2, "{lo}..{hi}");
        assert!(w.outside(MIDNIGHT + 15 * 3600) > w.outside(MIDNIGHT + 3 * 3600) + 5.0);
        let wind: Vec<f64> = (0..60).map(|m| w.wind(MIDNIGHT + m * 60)).collect();
        assert!(wind.iter().all(|v| (0.0..=1.0).contains(v)));
        assert!(wind.iter().any(|v| *v > 0.6) && wind.iter().any(|v| *v < 0.4));
    }

    #[test]
    fn people_come_and_go_in_their_hours_and_warm_the_room() {
        let p = &profiles()[1];
        let room = p.room;
        assert_eq!(room.people_at(MIDNIGHT + 3 * 3600), 0);
        let evening: Vec<u8> = (0..36)
            .map(|b| room.people_at(MIDNIGHT + 17 * 3600 + b * BLOCK))
            .collect();
        assert!(evening.iter().all(|n| (1..=room.people).contains(n)));
        assert!(evening.windows(2).any(|w| w[0] != w[1]), "{evening:?}");
        let night = room.conditions(&HOME, MIDNIGHT + 3 * 3600);
        let busy = room.conditions(&HOME, MIDNIGHT + 20 * 3600);
        assert_eq!(night.gain, 0.0);
        assert!(busy.gain >= PERSON, "{busy:?}");
        // The hallway's front door opens when someone comes or goes, and lets the cold in.
        let hallway = profiles()[0].clone();
        let mut opened = 0;
        for b in 0..36 {
            let start = MIDNIGHT + 16 * 3600 + b * BLOCK;
            let changed = hallway.room.people_at(start) != hallway.room.people_at(start - 1);
            assert_eq!(hallway.room.door_open(start), changed);
            assert!(!hallway.room.door_open(start + DOOR_SECONDS));
            if changed {
                opened += 1;
                let open = hallway.room.conditions(&HOME, start);
                let shut = hallway.room.conditions(&HOME, start + DOOR_SECONDS);
                assert!(
                    open.door_open && open.leak > 3.0 * shut.leak,
                    "{open:?} {shut:?}"
                );
            }
        }
        assert!(opened >= 3, "the door opened {opened} times in an evening");
    }

    #[test]
    fn heating_starts_below_the_band_and_stops_past_the_setpoint() {
        let off = Hvac::default();
        assert!(!decide(20.8, &heat(21.0), off).heating);
        assert!(decide(20.5, &heat(21.0), off).heating);
        let on = Hvac {
            heating: true,
            cooling: false,
        };
        assert!(decide(21.1, &heat(21.0), on).heating);
        assert!(!decide(21.2, &heat(21.0), on).heating);
        assert_eq!(
            decide(
                10.0,
                &Setting {
                    mode: "off".into(),
                    ..heat(21.0)
                },
                off
            ),
            off
        );
    }

    #[test]
    fn range_mode_cools_above_the_high_setpoint() {
        let range = Setting {
            mode: "range".into(),
            target: 21.0,
            low: 20.0,
            high: 24.0,
        };
        let h = decide(24.5, &range, Hvac::default());
        assert!(h.cooling && !h.heating);
        assert_eq!(decide(22.0, &range, Hvac::default()), Hvac::default());
    }

    #[test]
    fn a_heated_room_warms_and_an_idle_one_drifts_outside() {
        let on = Hvac {
            heating: true,
            cooling: false,
        };
        let cold = Conditions {
            outside: 5.0,
            around: 5.0,
            leak: LEAK,
            gain: 0.0,
            people: 0,
            door_open: false,
        };
        assert!(advance(20.0, &cold, on, 60.0) > 20.0);
        let idle = advance(20.0, &cold, Hvac::default(), 60.0);
        assert!(idle < 20.0 && idle > 19.5);
        assert_eq!(reading(20.04), 20.0);
        let humidity: Vec<f64> = (0..10).map(|m| humidity(45.0, m * 60)).collect();
        assert!(humidity.windows(2).any(|p| p[0] != p[1]), "{humidity:?}");
    }
}
