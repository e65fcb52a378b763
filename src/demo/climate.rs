//! The demo's weather and rooms: a room warms while its heating runs, cools while its air
//! conditioning runs, and otherwise drifts towards the weather outside, which follows the time
//! of day. The thermostat switches its HVAC with a dead band, as a real one does. Pure
//! functions, so the same model replays the last 24 hours for the demo's history.

use std::f64::consts::PI;

/// Degrees per second while heating or cooling runs.
const HVAC_RATE: f64 = 0.0008;
/// How fast a room follows the weather: per second, per degree of difference.
const LEAK: f64 = 0.00004;
/// The HVAC starts this far past the setpoint and stops this far beyond it.
const START_BELOW: f64 = 0.4;
const STOP_BEYOND: f64 = 0.2;

/// The climate a demo thermostat lives in.
#[derive(Clone, Copy, Debug)]
pub struct Weather {
    /// Outside temperature at its daily mean, and how far it swings (°C).
    pub mean: f64,
    pub swing: f64,
    /// Indoor humidity's daily mean (%), if the thermostat reports it.
    pub humidity: Option<f64>,
}

impl Weather {
    /// Outside temperature at Unix time `t`: coldest around 03:00 UTC, warmest around 15:00.
    pub fn outside(&self, t: i64) -> f64 {
        let day = (t.rem_euclid(86_400)) as f64 / 86_400.0;
        self.mean - self.swing * (2.0 * PI * (day - 0.125)).cos()
    }

    pub fn humidity(&self, t: i64) -> Option<f64> {
        let day = (t.rem_euclid(86_400)) as f64 / 86_400.0;
        self.humidity
            .map(|h| (h + 6.0 * (2.0 * PI * day).sin()).round())
    }
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

/// The room's temperature `dt` seconds later.
pub fn advance(temp: f64, outside: f64, hvac: Hvac, dt: f64) -> f64 {
    let mut next = temp + (outside - temp) * LEAK * dt;
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

    fn heat(target: f64) -> Setting {
        Setting {
            mode: "heat".into(),
            target,
            low: 19.0,
            high: 24.0,
        }
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
        assert!(advance(20.0, 5.0, on, 600.0) > 20.0);
        let idle = advance(20.0, 5.0, Hvac::default(), 600.0);
        assert!(idle < 20.0 && idle > 19.0);
        let w = Weather {
            mean: 8.0,
            swing: 5.0,
            humidity: Some(45.0),
        };
        assert!(w.outside(15 * 3600) > w.outside(3 * 3600));
        assert_eq!(reading(20.04), 20.0);
    }
}
