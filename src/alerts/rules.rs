//! The rules: from what hearth knows of one thermostat now, whether each kind of alert should
//! be active. Pure functions of a [`Facts`] and a little memory per thermostat ([`Memory`]),
//! so each rule is tested without a server.
//!
//! A rule answers `Some(true)` (should be active), `Some(false)` (should be clear) or `None`
//! (cannot tell now: keep what is). Hysteresis lives here: a temperature alert clears only once
//! the room is [`HYSTERESIS_C`] back inside its limit.

use crate::config::AlertConfig;
use crate::state::ChangeKind;

use super::Kind;

/// How far back inside a limit a room must come before its alert clears, and how far it must
/// move toward the target for heating (cooling) to count as working.
pub const HYSTERESIS_C: f64 = 0.5;
/// `battery_level` (volts) below which the battery is low: the firmware's own low-battery
/// point, as every surface reads it; the alert clears at [`BATTERY_OK_V`].
pub use crate::thermostat::reading::BATTERY_LOW_V;
pub const BATTERY_OK_V: f64 = 3.75;

/// One thermostat as the rules see it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Facts {
    /// The thermostat's name (its serial if it has none).
    pub name: String,
    pub temp: Option<f64>,
    /// The heating target (`target_temperature`, or the range's low end).
    pub heat_target: Option<f64>,
    /// The cooling target (`target_temperature`, or the range's high end).
    pub cool_target: Option<f64>,
    pub heating: bool,
    pub cooling: bool,
    /// In touch now (holding its long poll, or heard from within `ALERT_OFFLINE_MINUTES`);
    /// `None` while it cannot be told (not heard from since start, within the limit).
    pub in_touch: Option<bool>,
    /// Whether its readings are current (available as `/status` says): heating without effect
    /// is judged only then.
    pub available: bool,
    /// `device.battery_level`, volts.
    pub battery_v: Option<f64>,
    /// `device.hvac_safety_shutoff_active` or `device.hvac_smoke_safety_shutoff_active`;
    /// `None` when the firmware reports neither.
    pub safety_shutoff: Option<bool>,
    /// Seconds of heating and cooling since the filter was last reset; `None` if unknown.
    pub filter_s: Option<i64>,
    /// The latest change, while it waits for the thermostat to take it: its kind and when it
    /// was sent (ms).
    pub waiting: Option<(ChangeKind, i64)>,
}

/// What the rules remember of a thermostat between readings: where the room was when the
/// heating (cooling) last began or last made progress.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Memory {
    heat_from: Option<(i64, f64)>,
    cool_from: Option<(i64, f64)>,
}

/// Whether `kind` should be active for `r` at `now_ms`, given whether it is (`active`).
pub fn wanted(
    kind: Kind,
    r: &Facts,
    active: bool,
    memory: &mut Memory,
    config: &AlertConfig,
    now_ms: i64,
) -> Option<bool> {
    match kind {
        Kind::LowTemperature => {
            let t = r.temp?;
            Some(if active {
                t < config.low_c + HYSTERESIS_C
            } else {
                t < config.low_c
            })
        }
        Kind::HighTemperature => {
            let t = r.temp?;
            Some(if active {
                t > config.high_c - HYSTERESIS_C
            } else {
                t > config.high_c
            })
        }
        Kind::Offline => match config.offline_after {
            None => Some(false),
            Some(_) => r.in_touch.map(|in_touch| !in_touch),
        },
        Kind::NotHeating => no_effect(
            r.heating,
            r.temp,
            r.heat_target,
            r.available,
            &mut memory.heat_from,
            config,
            now_ms,
            1.0,
        ),
        Kind::NotCooling => no_effect(
            r.cooling,
            r.temp,
            r.cool_target,
            r.available,
            &mut memory.cool_from,
            config,
            now_ms,
            -1.0,
        ),
        Kind::Filter => match config.filter_after_s {
            None => Some(false),
            Some(limit) => Some(r.filter_s? >= limit),
        },
        Kind::LowBattery => {
            let v = r.battery_v?;
            Some(if active {
                v < BATTERY_OK_V
            } else {
                v < BATTERY_LOW_V
            })
        }
        Kind::SafetyShutoff => r.safety_shutoff,
        Kind::NotApplied => not_applied(r, config, now_ms),
    }
}

/// A change waiting `ALERT_NOT_APPLIED_MINUTES` for a thermostat that is in touch all the
/// while: it reports, so it could have taken it. Out of touch, nothing is judged (that is the
/// `offline` alert's business); taken, replaced by a change of a kind it never confirms, or
/// none, it is clear.
fn not_applied(r: &Facts, config: &AlertConfig, now_ms: i64) -> Option<bool> {
    let (Some(limit), Some((_, sent_ms))) = (config.not_applied_after, r.waiting) else {
        return Some(false);
    };
    if r.in_touch != Some(true) {
        return None;
    }
    let limit_ms = i64::try_from(limit.as_millis()).unwrap_or(i64::MAX);
    Some(now_ms.saturating_sub(sent_ms) >= limit_ms)
}

/// Heating (`sign` 1) or cooling (`sign` -1) that has run `ALERT_NOT_HEATING_MINUTES` since
/// the room last moved [`HYSTERESIS_C`] the right way. `from` is where the room was then.
/// A room at its target or within [`HYSTERESIS_C`] of it is not failing.
#[allow(clippy::too_many_arguments)]
fn no_effect(
    running: bool,
    temp: Option<f64>,
    target: Option<f64>,
    available: bool,
    from: &mut Option<(i64, f64)>,
    config: &AlertConfig,
    now_ms: i64,
    sign: f64,
) -> Option<bool> {
    let Some(limit) = config.no_effect_after else {
        *from = None;
        return Some(false);
    };
    if !running {
        *from = None;
        return Some(false);
    }
    // Stale readings of a thermostat out of touch say nothing of the room now.
    if !available {
        return None;
    }
    let t = temp?;
    let (since, start) = *from.get_or_insert((now_ms, t));
    if (t - start) * sign >= HYSTERESIS_C {
        // Progress: the room moved the right way; the count starts again from here.
        *from = Some((now_ms, t));
        return Some(false);
    }
    // A room at its target, or within HYSTERESIS_C of it, can never show that much progress:
    // the thermostat holds it there, nothing is failing. The count starts again from here, so
    // a room that later falls away is given the whole limit to recover.
    if target.is_some_and(|target| (target - t) * sign < HYSTERESIS_C) {
        *from = Some((now_ms, t));
        return Some(false);
    }
    let elapsed = now_ms - since;
    if elapsed >= i64::try_from(limit.as_millis()).unwrap_or(i64::MAX) {
        Some(true)
    } else {
        None
    }
}

/// A temperature as people write it: one decimal, none when whole (`5.8`, `7`).
pub fn degrees(t: f64) -> String {
    let s = format!("{t:.1}");
    s.strip_suffix(".0").map_or(s.clone(), str::to_string)
}

/// Minutes as people say them (`90 min`, `1.5 min`).
fn minutes(d: Option<std::time::Duration>) -> String {
    let m = d.map_or(0.0, |d| d.as_secs_f64() / 60.0);
    let s = format!("{m:.1}");
    format!("{} min", s.strip_suffix(".0").unwrap_or(&s))
}

/// What a person reads on a lock screen when `kind` starts for `r`.
pub fn message(kind: Kind, r: &Facts, config: &AlertConfig) -> String {
    let name = &r.name;
    let temp = r.temp.map(degrees).unwrap_or_else(|| "?".into());
    match kind {
        Kind::LowTemperature => {
            let heating = if r.heating {
                " — heating is on"
            } else {
                " — heating is off"
            };
            format!(
                "{name} is {temp}°C (below {}°C){heating}",
                degrees(config.low_c)
            )
        }
        Kind::HighTemperature => {
            format!("{name} is {temp}°C (above {}°C)", degrees(config.high_c))
        }
        Kind::Offline => format!(
            "{name} has not been in touch with hearth for {}",
            minutes(config.offline_after)
        ),
        Kind::NotHeating => format!(
            "{name} is {temp}°C — heating is on but the room is not warming{}",
            target_note(r.heat_target, config)
        ),
        Kind::NotCooling => format!(
            "{name} is {temp}°C — cooling is on but the room is not cooling down{}",
            target_note(r.cool_target, config)
        ),
        Kind::Filter => format!(
            "{name}: time to change the filter ({} hours of heating and cooling since the last change)",
            degrees(config.filter_after_s.unwrap_or(0) as f64 / 3600.0)
        ),
        Kind::LowBattery => format!(
            "{name}'s battery is low ({} V): check its power wires",
            r.battery_v
                .map_or_else(|| "?".into(), |v| format!("{v:.2}"))
        ),
        Kind::SafetyShutoff => {
            format!("{name} has shut its heating and cooling off for safety")
        }
        Kind::NotApplied => {
            let what = r.waiting.map_or("change", |(kind, _)| match kind {
                ChangeKind::Setpoint => "temperature change",
                _ => "change",
            });
            format!(
                "{name} has not taken the {what} sent {} ago: it still reports to hearth but is not following changes",
                minutes(config.not_applied_after)
            )
        }
    }
}

fn target_note(target: Option<f64>, config: &AlertConfig) -> String {
    let after = minutes(config.no_effect_after);
    match target {
        Some(t) => format!(" (target {}°C, {after})", degrees(t)),
        None => format!(" ({after})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    fn config() -> AlertConfig {
        AlertConfig::default()
    }

    fn room(temp: f64) -> Facts {
        Facts {
            name: "Hallway".into(),
            temp: Some(temp),
            heat_target: Some(21.0),
            cool_target: Some(21.0),
            available: true,
            in_touch: Some(true),
            ..Facts::default()
        }
    }

    fn check(kind: Kind, r: &Facts, active: bool) -> Option<bool> {
        wanted(kind, r, active, &mut Memory::default(), &config(), 0)
    }

    #[test]
    fn low_and_high_clear_only_half_a_degree_back_inside() {
        let low = Kind::LowTemperature;
        assert_eq!(check(low, &room(7.0), false), Some(false), "at the limit");
        assert_eq!(check(low, &room(6.9), false), Some(true));
        assert_eq!(check(low, &room(7.4), true), Some(true), "still within 0.5");
        assert_eq!(check(low, &room(7.5), true), Some(false));
        let high = Kind::HighTemperature;
        assert_eq!(check(high, &room(35.1), false), Some(true));
        assert_eq!(check(high, &room(34.6), true), Some(true));
        assert_eq!(check(high, &room(34.5), true), Some(false));
        let unknown = Facts {
            temp: None,
            ..room(0.0)
        };
        assert_eq!(check(low, &unknown, true), None);
    }

    #[test]
    fn heating_without_effect_starts_after_the_limit_and_clears_on_progress() {
        let c = config();
        let mut m = Memory::default();
        let mut r = room(18.0);
        r.heating = true;
        let at = |m: &mut Memory, r: &Facts, min: i64, active| {
            wanted(Kind::NotHeating, r, active, m, &c, min * MIN)
        };
        assert_eq!(at(&mut m, &r, 0, false), None);
        r.temp = Some(18.4);
        assert_eq!(at(&mut m, &r, 89, false), None, "not yet 90 minutes");
        assert_eq!(at(&mut m, &r, 90, false), Some(true));
        // Unavailable: stale readings decide nothing.
        r.available = false;
        assert_eq!(at(&mut m, &r, 100, true), None);
        r.available = true;
        r.temp = Some(18.5);
        assert_eq!(at(&mut m, &r, 101, true), Some(false), "warmed 0.5");
        assert_eq!(
            at(&mut m, &r, 190, false),
            None,
            "counted from the progress"
        );
        assert_eq!(at(&mut m, &r, 191, false), Some(true));
        r.heating = false;
        assert_eq!(at(&mut m, &r, 192, true), Some(false));
        // A room at its target is not failing to heat.
        r.heating = true;
        r.temp = Some(21.0);
        assert_eq!(at(&mut m, &r, 300, false), Some(false));
        assert_eq!(at(&mut m, &r, 500, false), Some(false));
    }

    #[test]
    fn a_room_within_half_a_degree_of_its_target_is_not_failing() {
        let c = config();
        for (kind, sign) in [(Kind::NotHeating, 1.0), (Kind::NotCooling, -1.0)] {
            let mut m = Memory::default();
            let mut r = room(21.0 - 0.4 * sign);
            r.heating = kind == Kind::NotHeating;
            r.cooling = kind == Kind::NotCooling;
            let at = |m: &mut Memory, r: &Facts, min: i64| wanted(kind, r, false, m, &c, min * MIN);
            // Held 0.4 °C short of the target for hours: the thermostat cycling, not failing.
            assert_eq!(at(&mut m, &r, 0), Some(false), "{kind:?}");
            assert_eq!(at(&mut m, &r, 300), Some(false), "{kind:?}");
            // It reaches the target at 400, then falls away: counted from the target.
            r.temp = Some(21.0);
            assert_eq!(at(&mut m, &r, 400), Some(false), "{kind:?}");
            r.temp = Some(21.0 - 2.0 * sign);
            assert_eq!(
                at(&mut m, &r, 401),
                None,
                "{kind:?}: counted from the target"
            );
            assert_eq!(at(&mut m, &r, 489), None, "{kind:?}");
            assert_eq!(at(&mut m, &r, 490), Some(true), "{kind:?}");
        }
    }

    #[test]
    fn cooling_without_effect_mirrors_heating() {
        let c = config();
        let mut m = Memory::default();
        let mut r = room(28.0);
        r.cooling = true;
        r.cool_target = Some(24.0);
        assert_eq!(wanted(Kind::NotCooling, &r, false, &mut m, &c, 0), None);
        r.temp = Some(28.3);
        assert_eq!(
            wanted(Kind::NotCooling, &r, false, &mut m, &c, 90 * MIN),
            Some(true)
        );
        r.temp = Some(27.5);
        assert_eq!(
            wanted(Kind::NotCooling, &r, true, &mut m, &c, 91 * MIN),
            Some(false)
        );
    }

    #[test]
    fn offline_filter_battery_and_safety() {
        let mut r = room(20.0);
        r.in_touch = Some(false);
        assert_eq!(check(Kind::Offline, &r, false), Some(true));
        r.in_touch = None;
        assert_eq!(check(Kind::Offline, &r, true), None);
        let off = AlertConfig {
            offline_after: None,
            ..config()
        };
        assert_eq!(
            wanted(Kind::Offline, &r, true, &mut Memory::default(), &off, 0),
            Some(false)
        );
        r.filter_s = Some(3600);
        assert_eq!(
            check(Kind::Filter, &r, false),
            Some(false),
            "off by default"
        );
        let filter = AlertConfig {
            filter_after_s: Some(3600),
            ..config()
        };
        assert_eq!(
            wanted(Kind::Filter, &r, false, &mut Memory::default(), &filter, 0),
            Some(true)
        );
        r.battery_v = Some(3.64);
        assert_eq!(check(Kind::LowBattery, &r, false), Some(true));
        r.battery_v = Some(3.7);
        assert_eq!(check(Kind::LowBattery, &r, true), Some(true));
        assert_eq!(check(Kind::LowBattery, &r, false), Some(false));
        assert_eq!(check(Kind::SafetyShutoff, &r, false), None);
        r.safety_shutoff = Some(true);
        assert_eq!(check(Kind::SafetyShutoff, &r, false), Some(true));
    }

    #[test]
    fn a_change_waiting_while_in_touch_is_not_applied_after_the_limit() {
        let mut r = room(20.0);
        let at = |r: &Facts, min: i64| {
            wanted(
                Kind::NotApplied,
                r,
                false,
                &mut Memory::default(),
                &config(),
                min * MIN,
            )
        };
        assert_eq!(at(&r, 100), Some(false), "no change waiting");
        r.waiting = Some((ChangeKind::Setpoint, 10 * MIN));
        assert_eq!(at(&r, 24), Some(false), "14 minutes");
        assert_eq!(at(&r, 25), Some(true), "15 minutes");
        r.in_touch = Some(false);
        assert_eq!(
            at(&r, 30),
            None,
            "out of touch: the offline alert's business"
        );
        r.in_touch = None;
        assert_eq!(at(&r, 30), None);
        let off = AlertConfig {
            not_applied_after: None,
            ..config()
        };
        assert_eq!(
            wanted(Kind::NotApplied, &r, true, &mut Memory::default(), &off, 0),
            Some(false)
        );
    }

    #[test]
    fn messages_name_the_thermostat_and_say_what_is_wrong() {
        let mut r = room(5.8);
        r.heating = true;
        assert_eq!(
            message(Kind::LowTemperature, &r, &config()),
            "Hallway is 5.8°C (below 7°C) — heating is on"
        );
        r.temp = Some(18.0);
        assert_eq!(
            message(Kind::NotHeating, &r, &config()),
            "Hallway is 18°C — heating is on but the room is not warming (target 21°C, 90 min)"
        );
        assert_eq!(
            message(Kind::Offline, &r, &config()),
            "Hallway has not been in touch with hearth for 30 min"
        );
    }
}
