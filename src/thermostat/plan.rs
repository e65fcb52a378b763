//! The one planner: from an intent and a thermostat's current view to the bucket writes that
//! carry it out. Pure (the time is passed in), so every rule is tested here alone.

use serde_json::Value;

use super::course::{self, Local};
use super::intent::{Fan, Intent, Lock, MAX_FAN_SECONDS, Mode, SetpointMode, Step};
use super::refusal::Refusal;
use super::view::View;
use crate::util::JsonMap;

/// Which of a thermostat's buckets a write goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BucketKind {
    Shared,
    Device,
    /// Its owner's structure (away).
    Structure,
    Schedule,
    /// The dialog its screen shows (`device_alert_dialog`: "confirm pairing").
    AlertDialog,
}

impl View {
    /// The key of one of this thermostat's buckets.
    pub fn key(&self, kind: BucketKind) -> String {
        match kind {
            BucketKind::Shared => format!("shared.{}", self.serial),
            BucketKind::Device => format!("device.{}", self.serial),
            BucketKind::Structure => self.structure_key.clone(),
            BucketKind::Schedule => format!("schedule.{}", self.serial),
            BucketKind::AlertDialog => format!("device_alert_dialog.{}", self.serial),
        }
    }
}

/// One bucket write: fields merged into its value, or (a schedule) its whole new value.
#[derive(Clone, Debug, PartialEq)]
pub struct Write {
    pub bucket: BucketKind,
    pub values: JsonMap,
    pub replace: bool,
}

impl Write {
    fn merge(bucket: BucketKind, values: JsonMap) -> Write {
        Write {
            bucket,
            values,
            replace: false,
        }
    }
}

/// The writes that carry out `intent` on the thermostat `view` shows, at `now_ms`; the first
/// is the intent's own bucket. Nothing is written unless every rule passes.
pub fn plan(intent: &Intent, view: &View, now_ms: i64) -> Result<Vec<Write>, Refusal> {
    let (bucket, values) = match intent {
        Intent::Target {
            celsius,
            mode,
            step,
        } => (BucketKind::Shared, target(view, *celsius, *mode, *step)?),
        Intent::Range {
            low,
            high,
            switch_mode,
            step,
        } => (
            BucketKind::Shared,
            target_range(view, (*low, *high), *switch_mode, *step)?,
        ),
        Intent::Mode(mode) => {
            can_run(*mode, view)?;
            (
                BucketKind::Shared,
                one("target_temperature_type", Value::from(mode.nest())),
            )
        }
        Intent::Fan(fan) => {
            let until = fan_timer_timeout(*fan, view, now_ms)?;
            (
                BucketKind::Device,
                one("fan_timer_timeout", Value::from(until)),
            )
        }
        Intent::FanRunTime(seconds) => (BucketKind::Device, fan_run_time(view, *seconds, now_ms)?),
        Intent::Away(away) => return Ok(away_writes(*away, now_ms)),
        Intent::EcoRange { low, high } => (BucketKind::Device, eco_range(view, *low, *high)?),
        Intent::Schedule { schedule, .. } => {
            return Ok(vec![Write {
                bucket: BucketKind::Schedule,
                values: schedule.clone(),
                replace: true,
            }]);
        }
        // Emptied, as the Python server does; a thermostat showing no dialog is left alone.
        Intent::DismissDialog => {
            return Ok(view
                .alert_dialog
                .then(|| Write {
                    bucket: BucketKind::AlertDialog,
                    values: JsonMap::new(),
                    replace: true,
                })
                .into_iter()
                .collect());
        }
        Intent::ScheduleMode(mode) => (
            BucketKind::Shared,
            one("schedule_mode", Value::from(mode.as_str())),
        ),
        Intent::Settings(settings) => (BucketKind::Device, settings.clone()),
        Intent::ResumeSchedule(local) => (BucketKind::Shared, resume(view, *local)?),
        Intent::Lock(lock) => (BucketKind::Device, lock_writes(view, lock)?),
        // `label` is the field every surface reads first (see `names`), and the thermostat
        // never sends it: `shared.name` would be overwritten by the `"name": ""` a thermostat
        // uploads with its full state after a reboot.
        Intent::Name(name) => (BucketKind::Shared, one("label", Value::from(name.as_str()))),
    };
    if values.is_empty() {
        return Err(Refusal::NothingToChange);
    }
    Ok(vec![Write::merge(bucket, values)])
}

/// A bucket's values with one field.
fn one(field: &str, value: Value) -> JsonMap {
    let mut values = JsonMap::new();
    values.insert(field.into(), value);
    values
}

/// One setpoint, fitted to the bounds, switching the mode to heat or cool when the intent
/// says so (the thermostat's equipment must be able to run it).
fn target(view: &View, celsius: f64, mode: SetpointMode, step: Step) -> Result<JsonMap, Refusal> {
    let mode = match mode {
        SetpointMode::Unchanged => None,
        SetpointMode::Heat => Some(Mode::Heat),
        SetpointMode::Cool => Some(Mode::Cool),
        SetpointMode::Current => Some(match view.mode() {
            Some("heat") => Mode::Heat,
            Some("cool") => Mode::Cool,
            other => return Err(Refusal::NotHeatingOrCooling(other.map(str::to_string))),
        }),
    };
    if let Some(mode) = mode {
        can_run(mode, view)?;
    }
    let mut values = JsonMap::new();
    let c = fit(view, "target_temperature", celsius, step);
    values.insert("target_temperature".into(), json_number(c));
    if let Some(mode) = mode {
        values.insert("target_temperature_type".into(), Value::from(mode.nest()));
    }
    // The thermostat lights its display for a pushed setpoint, then acknowledges it.
    values.insert("target_change_pending".into(), Value::Bool(true));
    Ok(values)
}

/// A heat·cool pair (either or both), switching the mode to range when the intent says so.
fn target_range(
    view: &View,
    (low, high): (Option<f64>, Option<f64>),
    switch_mode: bool,
    step: Step,
) -> Result<JsonMap, Refusal> {
    if switch_mode {
        if let (Some(l), Some(h)) = (low, high) {
            if l >= h {
                return Err(Refusal::LowNotBelowHigh);
            }
        }
        can_run(Mode::Range, view)?;
    }
    let mut values = JsonMap::new();
    let fields = ("target_temperature_low", "target_temperature_high");
    range(view, (low, high), fields, step, &mut values)?;
    if switch_mode {
        values.insert("target_temperature_type".into(), Value::from("range"));
    }
    values.insert("target_change_pending".into(), Value::Bool(true));
    Ok(values)
}

/// The setpoints the schedule has in force now, ending a manual hold; refused when there is
/// nothing to resume (no schedule for the mode it runs in, or it already follows it).
fn resume(view: &View, local: Local) -> Result<JsonMap, Refusal> {
    let nothing = |why: &str| Refusal::Invalid(format!("Nothing to resume: {why}"));
    let schedule = view
        .schedule
        .as_ref()
        .ok_or_else(|| nothing("the thermostat has no schedule"))?;
    let mode = view.mode().unwrap_or("off");
    let scheduled = course::in_force(schedule, mode, local).ok_or_else(|| {
        nothing(&format!(
            "its schedule has no setpoint for the mode it runs in ({mode})"
        ))
    })?;
    let fields: &[&str] = if mode == "range" {
        &["target_temperature_low", "target_temperature_high"]
    } else {
        &["target_temperature"]
    };
    let now: Option<Vec<f64>> = fields
        .iter()
        .map(|f| view.field(f).and_then(Value::as_f64))
        .collect();
    if now.is_some_and(|now| course::same(&now, &scheduled, course::TOLERANCE_C)) {
        return Err(nothing("the thermostat already follows its schedule"));
    }
    let mut values = JsonMap::new();
    for (field, c) in fields.iter().zip(&scheduled) {
        values.insert(field.to_string(), json_number(view.clamp(field, *c)));
    }
    values.insert("target_change_pending".into(), Value::Bool(true));
    Ok(values)
}

/// A new length for "fan on"; a timer already running is restarted with it.
fn fan_run_time(view: &View, seconds: i64, now_ms: i64) -> Result<JsonMap, Refusal> {
    if !(1..=MAX_FAN_SECONDS).contains(&seconds) {
        return Err(Refusal::Invalid(format!(
            "The fan run time must be from 1 to {MAX_FAN_SECONDS} seconds"
        )));
    }
    let mut values = one("fan_timer_duration", Value::from(seconds));
    if fan_running(view, now_ms) {
        let until = fan_timer_timeout(Fan::For(seconds), view, now_ms)?;
        values.insert("fan_timer_timeout".into(), Value::from(until));
    }
    Ok(values)
}

/// The eco temperatures (either or both), each fitted to its bounds as sent (no half-degree
/// step).
fn eco_range(view: &View, low: Option<f64>, high: Option<f64>) -> Result<JsonMap, Refusal> {
    if low.is_none() && high.is_none() {
        return Err(Refusal::NothingToChange);
    }
    let mut values = JsonMap::new();
    let fields = ("away_temperature_low", "away_temperature_high");
    range(view, (low, high), fields, Step::Exact, &mut values)?;
    Ok(values)
}

/// The temperature lock off, or on with its PIN's hash and its bounds.
fn lock_writes(view: &View, lock: &Lock) -> Result<JsonMap, Refusal> {
    let mut values = JsonMap::new();
    match lock {
        Lock::Off => {
            values.insert("temperature_lock".into(), Value::Bool(false));
            values.insert("temperature_lock_pin_hash".into(), Value::from(""));
        }
        Lock::On {
            pin_hash,
            low,
            high,
        } => {
            // Compared after clamping, so 36/40 °C is refused rather than stored as a lock to
            // the single value 35 °C.
            let low = view.clamp("temperature_lock_low_temp", *low);
            let high = view.clamp("temperature_lock_high_temp", *high);
            if low >= high {
                return Err(Refusal::LockLowNotBelowHigh);
            }
            values.insert("temperature_lock".into(), Value::Bool(true));
            values.insert(
                "temperature_lock_pin_hash".into(),
                Value::from(pin_hash.as_str()),
            );
            values.insert("temperature_lock_low_temp".into(), json_number(low));
            values.insert("temperature_lock_high_temp".into(), json_number(high));
        }
    }
    Ok(values)
}

/// Whether the thermostat's equipment can run `mode`. `can_heat` and `can_cool` default to
/// true, `has_emer_heat` to false.
pub fn can_run(mode: Mode, view: &View) -> Result<(), Refusal> {
    match mode {
        Mode::Heat | Mode::Range if !view.flag("can_heat", true) => Err(Refusal::CannotHeat),
        Mode::Cool | Mode::Range if !view.flag("can_cool", true) => Err(Refusal::CannotCool),
        Mode::Emergency if !view.flag("has_emer_heat", false) => Err(Refusal::NoEmergencyHeat),
        _ => Ok(()),
    }
}

fn fit(view: &View, field: &str, celsius: f64, step: Step) -> f64 {
    match step {
        Step::Exact => view.clamp(field, celsius),
        Step::Half => view.clamp_to_half(field, celsius),
    }
}

/// A low/high pair (either or both) written to `fields` after fitting each to the bounds. Low
/// must stay below high: the other side as sent, or else as the thermostat holds it, is
/// compared after fitting (so 36/40 °C is not stored as 35/35).
fn range(
    view: &View,
    (low, high): (Option<f64>, Option<f64>),
    (low_field, high_field): (&str, &str),
    step: Step,
    values: &mut JsonMap,
) -> Result<(), Refusal> {
    let low = low.map(|c| fit(view, low_field, c, step));
    let high = high.map(|c| fit(view, high_field, c, step));
    let stored = |field: &str| view.field(field).and_then(Value::as_f64);
    let effective = (
        low.or_else(|| stored(low_field)),
        high.or_else(|| stored(high_field)),
    );
    if let (Some(l), Some(h)) = effective {
        if l >= h {
            return Err(Refusal::LowNotBelowHigh);
        }
    }
    for (field, v) in [(low_field, low), (high_field, high)] {
        if let Some(c) = v {
            values.insert(field.into(), json_number(c));
        }
    }
    Ok(())
}

/// `device.fan_timer_timeout` (Unix seconds; 0 stops the timer) for a fan request. The
/// thermostat must have a fan. `On` runs for [`fan_run_seconds`].
fn fan_timer_timeout(fan: Fan, view: &View, now_ms: i64) -> Result<i64, Refusal> {
    if !view.flag("has_fan", false) {
        return Err(Refusal::NoFan);
    }
    let seconds = match fan {
        Fan::Auto => return Ok(0),
        Fan::For(s) => s.clamp(1, MAX_FAN_SECONDS),
        Fan::On => fan_run_seconds(view),
    };
    Ok(now_ms / 1000 + seconds)
}

/// Whether the fan timer is running at `now_ms`.
pub fn fan_running(view: &View, now_ms: i64) -> bool {
    fan_running_until(fan_timeout(view), now_ms)
}

/// The thermostat's `fan_timer_timeout` (Unix seconds), when it has a number there.
pub fn fan_timeout(view: &View) -> Option<f64> {
    view.device_field("fan_timer_timeout")
        .and_then(Value::as_f64)
}

/// Whether a fan timer ending at `timeout` (Unix seconds) is running at `now_ms`.
pub fn fan_running_until(timeout: Option<f64>, now_ms: i64) -> bool {
    timeout.is_some_and(|t| t > (now_ms / 1000) as f64)
}

/// How long "fan on" runs, in seconds: the thermostat's `fan_timer_duration`, else the Python
/// server's `fan_timer_duration_minutes`, else one hour; at most [`MAX_FAN_SECONDS`].
pub fn fan_run_seconds(view: &View) -> i64 {
    view.device_field("fan_timer_duration")
        .and_then(Value::as_i64)
        .filter(|s| *s > 0)
        .or_else(|| {
            view.device_field("fan_timer_duration_minutes")
                .and_then(Value::as_i64)
                .filter(|m| *m > 0)
                .map(|m| m.saturating_mul(60))
        })
        .unwrap_or(3600)
        .min(MAX_FAN_SECONDS)
}

/// Away on or off: manual eco on the owner's structure, which the firmware honours (schedule
/// preconditioning reverts auto-eco; `away` itself is not used; the timestamp is in seconds and
/// must be close to the thermostat's clock), and `shared.auto_away` 2 or 0, which clients of
/// the hosted API read as presence.
fn away_writes(away: bool, now_ms: i64) -> Vec<Write> {
    let mut eco = JsonMap::new();
    eco.insert("manual_eco_all".into(), Value::Bool(away));
    eco.insert("manual_eco_timestamp".into(), Value::from(now_ms / 1000));
    let mut presence = JsonMap::new();
    presence.insert("auto_away".into(), Value::from(if away { 2 } else { 0 }));
    vec![
        Write::merge(BucketKind::Structure, eco),
        Write::merge(BucketKind::Shared, presence),
    ]
}

/// A JSON number for `x`, exact for values that came in as decimals (21.5 stays 21.5).
pub fn json_number(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thermostat::intent::ScheduleMode;
    use crate::thermostat::view::tests::view;
    use serde_json::json;

    const NOW: i64 = 1_795_262_650_000;
    const NOW_S: i64 = NOW / 1000;

    /// The kinds of thermostat every rule is checked on.
    fn kinds() -> Vec<(&'static str, View)> {
        vec![
            ("heat and cool", view(json!({}), json!({}))),
            ("heat only", view(json!({"can_cool": false}), json!({}))),
            (
                "with fan",
                view(
                    json!({}),
                    json!({"has_fan": true, "fan_timer_duration": 900}),
                ),
            ),
            (
                "°F",
                view(
                    json!({}),
                    json!({"temperature_scale": "F", "has_fan": true}),
                ),
            ),
            (
                "safety bounds 10–30 °C, heating, range set",
                view(
                    json!({"target_temperature_type": "heat", "target_temperature_low": 19.0,
                           "target_temperature_high": 24.0}),
                    json!({"safety_temp_min": 10, "safety_temp_max": 30,
                           "has_emer_heat": true, "fan_timer_timeout": NOW_S + 60, "has_fan": true}),
                ),
            ),
        ]
    }

    // Indices into `kinds()`.
    const HEAT_ONLY: usize = 1;
    const FAN: usize = 2;
    const FAHRENHEIT: usize = 3;
    const BOUNDED: usize = 4;

    type Expected = Result<Vec<(BucketKind, Value)>, Refusal>;

    /// One write of these fields to `bucket`.
    fn one(bucket: BucketKind, values: Value) -> Expected {
        Ok(vec![(bucket, values)])
    }

    /// A setpoint write: these fields and `target_change_pending`.
    fn pending(values: Value) -> Expected {
        let mut values = values;
        values["target_change_pending"] = json!(true);
        one(BucketKind::Shared, values)
    }

    fn target(celsius: f64, mode: SetpointMode, step: Step) -> Intent {
        Intent::Target {
            celsius,
            mode,
            step,
        }
    }

    fn range_of(low: Option<f64>, high: Option<f64>, switch_mode: bool, step: Step) -> Intent {
        Intent::Range {
            low,
            high,
            switch_mode,
            step,
        }
    }

    /// One row: an intent, what it plans on most kinds of thermostat, and where a kind differs.
    struct Row {
        intent: Intent,
        usually: Expected,
        except: Vec<(usize, Expected)>,
    }

    fn row(intent: Intent, usually: Expected, except: Vec<(usize, Expected)>) -> Row {
        Row {
            intent,
            usually,
            except,
        }
    }

    fn rows() -> Vec<Row> {
        use BucketKind::*;
        use SetpointMode::*;
        use Step::*;
        let no_fan = || vec![(0, Err(Refusal::NoFan)), (HEAT_ONLY, Err(Refusal::NoFan))];
        let lock = |low: f64, high: f64| {
            one(
                Device,
                json!({"temperature_lock": true, "temperature_lock_pin_hash": "h",
                       "temperature_lock_low_temp": low, "temperature_lock_high_temp": high}),
            )
        };
        vec![
            row(
                target(21.3, Unchanged, Exact),
                pending(json!({"target_temperature": 21.3})),
                vec![],
            ),
            row(
                target(3.0, Unchanged, Exact),
                pending(json!({"target_temperature": 7.222})),
                vec![(BOUNDED, pending(json!({"target_temperature": 10.0})))],
            ),
            row(
                target(21.3, Cool, Half),
                pending(json!({"target_temperature": 21.5, "target_temperature_type": "cool"})),
                vec![(HEAT_ONLY, Err(Refusal::CannotCool))],
            ),
            row(
                target(40.0, Current, Half),
                Err(Refusal::NotHeatingOrCooling(None)),
                vec![(
                    BOUNDED,
                    pending(json!({"target_temperature": 30.0, "target_temperature_type": "heat"})),
                )],
            ),
            row(
                range_of(Some(3.0), Some(24.0), false, Exact),
                pending(json!({"target_temperature_low": 7.222, "target_temperature_high": 24.0})),
                vec![(
                    BOUNDED,
                    pending(
                        json!({"target_temperature_low": 10.0, "target_temperature_high": 24.0}),
                    ),
                )],
            ),
            // Both clamp to the top of the bounds, so low is no longer below high.
            row(
                range_of(Some(36.0), Some(40.0), false, Exact),
                Err(Refusal::LowNotBelowHigh),
                vec![],
            ),
            // One side alone is compared with the thermostat's other one.
            row(
                range_of(Some(25.0), None, false, Exact),
                pending(json!({"target_temperature_low": 25.0})),
                vec![(BOUNDED, Err(Refusal::LowNotBelowHigh))],
            ),
            row(
                range_of(Some(19.3), Some(23.6), true, Half),
                pending(
                    json!({"target_temperature_low": 19.5, "target_temperature_high": 23.5,
                               "target_temperature_type": "range"}),
                ),
                vec![(HEAT_ONLY, Err(Refusal::CannotCool))],
            ),
            // Low above high is refused before the equipment is looked at.
            row(
                range_of(Some(24.0), Some(20.0), true, Half),
                Err(Refusal::LowNotBelowHigh),
                vec![],
            ),
            row(
                Intent::Mode(Mode::Range),
                one(Shared, json!({"target_temperature_type": "range"})),
                vec![(HEAT_ONLY, Err(Refusal::CannotCool))],
            ),
            row(
                Intent::Mode(Mode::Emergency),
                Err(Refusal::NoEmergencyHeat),
                vec![(
                    BOUNDED,
                    one(Shared, json!({"target_temperature_type": "emergency"})),
                )],
            ),
            row(
                Intent::Fan(Fan::On),
                one(Device, json!({"fan_timer_timeout": NOW_S + 3600})),
                [
                    no_fan(),
                    vec![(FAN, one(Device, json!({"fan_timer_timeout": NOW_S + 900})))],
                ]
                .concat(),
            ),
            row(
                Intent::Fan(Fan::For(50_000)),
                one(Device, json!({"fan_timer_timeout": NOW_S + 43_200})),
                no_fan(),
            ),
            row(
                Intent::Fan(Fan::Auto),
                one(Device, json!({"fan_timer_timeout": 0})),
                no_fan(),
            ),
            // A running fan restarts for the new length; a stopped one only stores it.
            row(
                Intent::FanRunTime(1800),
                one(Device, json!({"fan_timer_duration": 1800})),
                vec![(
                    BOUNDED,
                    one(
                        Device,
                        json!({"fan_timer_duration": 1800, "fan_timer_timeout": NOW_S + 1800}),
                    ),
                )],
            ),
            row(
                Intent::FanRunTime(0),
                Err(Refusal::Invalid(
                    "The fan run time must be from 1 to 43200 seconds".into(),
                )),
                vec![],
            ),
            row(
                Intent::Away(true),
                Ok(vec![
                    (
                        Structure,
                        json!({"manual_eco_all": true, "manual_eco_timestamp": NOW_S}),
                    ),
                    (Shared, json!({"auto_away": 2})),
                ]),
                vec![],
            ),
            row(
                Intent::Away(false),
                Ok(vec![
                    (
                        Structure,
                        json!({"manual_eco_all": false, "manual_eco_timestamp": NOW_S}),
                    ),
                    (Shared, json!({"auto_away": 0})),
                ]),
                vec![],
            ),
            row(
                Intent::EcoRange {
                    low: Some(3.0),
                    high: Some(40.0),
                },
                one(
                    Device,
                    json!({"away_temperature_low": 7.222, "away_temperature_high": 35.0}),
                ),
                vec![(
                    BOUNDED,
                    one(
                        Device,
                        json!({"away_temperature_low": 10.0, "away_temperature_high": 30.0}),
                    ),
                )],
            ),
            row(
                Intent::EcoRange {
                    low: Some(1.0),
                    high: Some(5.0),
                },
                Err(Refusal::LowNotBelowHigh),
                vec![],
            ),
            row(
                Intent::EcoRange {
                    low: None,
                    high: None,
                },
                Err(Refusal::NothingToChange),
                vec![],
            ),
            row(
                Intent::ScheduleMode(ScheduleMode::Range),
                one(Shared, json!({"schedule_mode": "RANGE"})),
                vec![],
            ),
            row(
                Intent::Settings(JsonMap::new()),
                Err(Refusal::NothingToChange),
                vec![],
            ),
            row(
                Intent::Lock(Lock::On {
                    pin_hash: "h".into(),
                    low: 5.0,
                    high: 24.0,
                }),
                lock(7.222, 24.0),
                vec![(BOUNDED, lock(10.0, 24.0))],
            ),
            row(
                Intent::Lock(Lock::On {
                    pin_hash: "h".into(),
                    low: 36.0,
                    high: 40.0,
                }),
                Err(Refusal::LockLowNotBelowHigh),
                vec![],
            ),
            row(
                Intent::Lock(Lock::Off),
                one(
                    Device,
                    json!({"temperature_lock": false, "temperature_lock_pin_hash": ""}),
                ),
                vec![],
            ),
            row(
                Intent::Name("Hallway".into()),
                one(Shared, json!({"label": "Hallway"})),
                vec![],
            ),
        ]
    }

    #[test]
    fn every_rule_on_every_kind_of_thermostat() {
        let kinds = kinds();
        assert_eq!(kinds[FAHRENHEIT].0, "°F");
        for Row {
            intent,
            usually,
            except,
        } in rows()
        {
            for (i, (kind, view)) in kinds.iter().enumerate() {
                let expected = except
                    .iter()
                    .find(|(k, _)| *k == i)
                    .map_or(&usually, |(_, e)| e);
                let planned = plan(&intent, view, NOW).map(|writes| {
                    writes
                        .into_iter()
                        .map(|w| {
                            assert!(!w.replace, "{intent:?}: only a schedule replaces");
                            (w.bucket, Value::Object(w.values))
                        })
                        .collect::<Vec<_>>()
                });
                assert_eq!(&planned, expected, "{intent:?} on a thermostat {kind}");
            }
        }
    }

    #[test]
    fn a_schedule_replaces_the_whole_bucket() {
        let schedule = json!({"ver": 2, "name": "", "schedule_mode": "HEAT", "days": {}});
        let intent = Intent::Schedule {
            schedule: schedule.as_object().cloned().unwrap(),
            only_over: crate::thermostat::ScheduleRevision::Any,
        };
        for (kind, view) in kinds() {
            let writes = plan(&intent, &view, NOW).unwrap();
            assert_eq!(writes.len(), 1, "{kind}");
            assert!(writes[0].replace);
            assert_eq!(writes[0].bucket, BucketKind::Schedule);
            assert_eq!(Value::Object(writes[0].values.clone()), schedule);
        }
    }

    #[test]
    fn keys_follow_the_serial_and_the_owners_structure() {
        let mut v = view(json!({}), json!({}));
        v.structure_key = "structure.alice".into();
        assert_eq!(v.key(BucketKind::Shared), "shared.S");
        assert_eq!(v.key(BucketKind::Device), "device.S");
        assert_eq!(v.key(BucketKind::Schedule), "schedule.S");
        assert_eq!(v.key(BucketKind::Structure), "structure.alice");
        assert_eq!(v.key(BucketKind::AlertDialog), "device_alert_dialog.S");
    }

    #[test]
    fn a_dialog_is_dismissed_only_when_there_is_one() {
        let mut v = view(json!({}), json!({}));
        assert_eq!(plan(&Intent::DismissDialog, &v, NOW), Ok(vec![]));
        v.alert_dialog = true;
        let writes = plan(&Intent::DismissDialog, &v, NOW).unwrap();
        assert_eq!(
            writes,
            vec![Write {
                bucket: BucketKind::AlertDialog,
                values: JsonMap::new(),
                replace: true,
            }]
        );
    }

    #[test]
    fn modes_by_every_name() {
        for (asked, mode) in [
            ("heat-cool", Mode::Range),
            ("heat_cool", Mode::Range),
            ("AUTO", Mode::Range),
            ("range", Mode::Range),
            ("Off", Mode::Off),
            (" cool ", Mode::Cool),
            ("emergency", Mode::Emergency),
        ] {
            assert_eq!(Mode::parse(asked), Ok(mode), "{asked}");
        }
        assert_eq!(Mode::parse("eco"), Err(Refusal::EcoIsNotAMode));
        assert_eq!(
            Mode::parse("turbo"),
            Err(Refusal::UnknownMode("turbo".into()))
        );
    }

    #[test]
    fn resume_sets_what_the_schedule_has_in_force_and_ends_the_hold() {
        let schedule = json!({"schedule_mode": "HEAT", "days": {"0": [
            {"time": 25200, "type": "HEAT", "temp": 21.0},
            {"time": 79200, "type": "HEAT", "temp": 17.0},
        ]}});
        // Monday (day 0: 1970-01-05 was a Monday), 12:00 on the structure's clock.
        let noon = Local {
            day: 4,
            secs: 43_200,
        };
        let mut v = view(
            json!({"target_temperature": 22.5, "target_temperature_type": "heat"}),
            json!({}),
        );
        v.schedule = schedule.as_object().map(crate::state::Fields::from_map);
        let writes = plan(&Intent::ResumeSchedule(noon), &v, NOW).unwrap();
        assert_eq!(writes[0].bucket, BucketKind::Shared);
        assert_eq!(
            Value::Object(writes[0].values.clone()),
            json!({"target_temperature": 21.0, "target_change_pending": true})
        );
        let following = view(
            json!({"target_temperature": 21.0, "target_temperature_type": "heat"}),
            json!({}),
        );
        let following = View {
            schedule: v.schedule.clone(),
            ..following
        };
        assert_eq!(
            plan(&Intent::ResumeSchedule(noon), &following, NOW),
            Err(Refusal::Invalid(
                "Nothing to resume: the thermostat already follows its schedule".into()
            ))
        );
        let cooling = View {
            schedule: v.schedule.clone(),
            ..view(
                json!({"target_temperature": 25.0, "target_temperature_type": "cool"}),
                json!({}),
            )
        };
        assert_eq!(
            plan(&Intent::ResumeSchedule(noon), &cooling, NOW),
            Err(Refusal::Invalid(
                "Nothing to resume: its schedule has no setpoint for the mode it runs in (cool)"
                    .into()
            ))
        );
        assert_eq!(
            plan(
                &Intent::ResumeSchedule(noon),
                &view(json!({"target_temperature": 22.5}), json!({})),
                NOW
            ),
            Err(Refusal::Invalid(
                "Nothing to resume: the thermostat has no schedule".into()
            ))
        );
    }
}
