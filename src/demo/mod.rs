//! `hearth demo`: the server on a temporary data directory with three simulated thermostats
//! (heat only; heating and cooling; a fan and a humidity sensor, in °F), so the dashboard can
//! be tried with no thermostat at all. The thermostats speak the real device protocol through
//! [`crate::simulator`]; [`climate`] decides how their rooms warm and cool (the weather, the
//! sun, the people in them) and when their HVAC runs, and they obey commands as a real one
//! does (a pushed setpoint changes what the HVAC does on the next tick). The rooms move on the
//! server's clock (`Config::clock`), fast enough that the page changes within a minute.
//!
//! So that the history chart has something to show at once, the demo first replays the same
//! model from yesterday's midnight (UTC: the demo's thermostats have no time zone) to now into
//! the history directory, and counts what it replays as the energy history's yesterday and
//! today, so the card's "Last 24 h" and the Energy section's days are the same runs; the year
//! before them is made up to match ([`year`]). All of it is simulated, like everything else in
//! the demo.

pub(crate) mod climate;
pub(crate) mod year;

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::config::{ApiOrigin, Config};
use crate::energy::day::{DAY_S, Day};
use crate::history::{self, Sample};
use crate::server::{Server, StartError};
use crate::simulator::{Event, Options, Thermostat};
use crate::util::clock::Clock;
use climate::{Hvac, Room, Setting};

/// How often each demo room is stepped and its readings reported.
pub const TICK: Duration = Duration::from_secs(5);
/// A held subscribe is waited on this long at a time, so a tick or a stop is never late.
const READ_SLICE: Duration = Duration::from_millis(500);
/// The model's step, in the 24-hour replay and within a tick (seconds).
pub(crate) const STEP: i64 = 5;
/// A clock that jumps (a suspended laptop, a test's manual clock) is followed this far at
/// most; the room then goes on from where it was.
const MAX_CATCH_UP: i64 = 24 * 3600;

/// One demo thermostat: who it is and the climate it lives in.
#[derive(Clone, Debug)]
pub struct Profile {
    pub serial: &'static str,
    pub name: &'static str,
    pub can_cool: bool,
    pub has_fan: bool,
    pub scale: &'static str,
    /// Indoor humidity's daily mean (%), if the thermostat reports it.
    pub humidity: Option<f64>,
    pub room: Room,
    pub setting: Setting,
    /// How long its heating and cooling run in a day of its year of history.
    pub runs: year::Runs,
    /// The room's temperature at yesterday's midnight, where the replay starts.
    pub start_temp: f64,
}

pub fn profiles() -> Vec<Profile> {
    let setting = |mode: &str, target: f64, low: f64, high: f64| Setting {
        mode: mode.into(),
        target,
        low,
        high,
    };
    vec![
        Profile {
            serial: "02AA01AC5100DE01",
            name: "Hallway",
            can_cool: false,
            has_fan: false,
            scale: "C",
            humidity: None,
            // A front door, and people passing through morning and evening.
            room: Room {
                sun: 0.0005,
                occupied: &[(6, 9), (16, 23)],
                people: 3,
                door: true,
                interior: 0.0,
                seed: 1,
            },
            setting: setting("heat", 20.5, 19.0, 24.0),
            runs: year::Runs {
                heat_per_degree: 0.4,
                heat_below: 2.0,
                ..year::Runs::default()
            },
            start_temp: 20.3,
        },
        Profile {
            serial: "02AA01AC5100DE02",
            name: "Living Room",
            can_cool: true,
            has_fan: false,
            scale: "C",
            humidity: None,
            // Big windows to the south, and the family in the evening.
            room: Room {
                sun: 0.003,
                occupied: &[(7, 9), (12, 14), (17, 23)],
                people: 4,
                door: false,
                interior: 0.0,
                seed: 2,
            },
            setting: setting("range", 21.0, 20.0, 24.0),
            runs: year::Runs {
                heat_per_degree: 0.23,
                heat_below: 0.0,
                cool_per_degree: 0.27,
                cool_below: 15.0,
            },
            start_temp: 22.0,
        },
        Profile {
            serial: "02AA01AC5100DE03",
            name: "Bedroom",
            can_cool: true,
            has_fan: true,
            scale: "F",
            humidity: Some(50.0),
            // Slept in at night, under the roof with the afternoon sun on its window, between
            // heated rooms.
            room: Room {
                sun: 0.005,
                occupied: &[(21, 7), (14, 15)],
                people: 2,
                door: false,
                interior: 0.6,
                seed: 3,
            },
            setting: setting("cool", 23.5, 20.0, 25.0),
            runs: year::Runs {
                cool_per_degree: 0.11,
                cool_below: 27.0,
                ..year::Runs::default()
            },
            start_temp: 23.6,
        },
    ]
}

pub struct Demo {
    server: Server,
    stop: Arc<AtomicBool>,
    ticks: Arc<AtomicU64>,
    thermostats: Vec<JoinHandle<()>>,
}

impl Demo {
    /// Replays the last day into `config.data_dir` (which should be new and empty), with a
    /// year of energy history before it ([`year`]), starts
    /// the server on it and the three thermostats against it. Whatever `config` says, the
    /// thermostats are told to use this machine's loopback address (never a real server's
    /// `API_ORIGIN`), and MQTT, HTTPS, pairing and control keys are off: simulated thermostats
    /// must not reach a real broker, and the demo must work as it is.
    pub fn start(mut config: Config) -> Result<Demo, StartError> {
        config.api_origin = Some(ApiOrigin {
            scheme: "http".into(),
            host: "127.0.0.1".into(),
            port: None,
        });
        config.mqtt = None;
        config.cert_dir = None;
        config.require_device_pairing = false;
        config.control_require_key = false;
        let history_dir = config.data_dir.join(history::DIR);
        crate::store::files::create_private_dir(&history_dir).map_err(StartError::Thread)?;
        let interval = config.history_interval.as_secs().max(1) as i64;
        let clock = config.clock.clone();
        let now = clock.now_ms().div_euclid(1000);
        let mut rooms = Vec::new();
        let energy_dir = crate::energy::dir(&config.data_dir);
        let mut today = Vec::new();
        for profile in profiles() {
            let (room, [yesterday, live]) =
                replay(&history_dir, &profile, now, interval).map_err(StartError::Thread)?;
            year::write(&energy_dir, &profile, &yesterday).map_err(StartError::Thread)?;
            today.push((profile.serial, live));
            rooms.push((profile, room));
        }
        // Today so far as the thermostats' live rows, which the server carries on from.
        let rows: Vec<(&str, &Day)> = today.iter().map(|(s, d)| (*s, d)).collect();
        crate::energy::store::Store::new(energy_dir)
            .write(&rows)
            .map_err(StartError::Thread)?;
        let server = Server::start(config)?;
        let url = format!("http://127.0.0.1:{}", server.device_addr().port());
        let stop = Arc::new(AtomicBool::new(false));
        let ticks = Arc::new(AtomicU64::new(0));
        let mut thermostats = Vec::new();
        for (profile, (temp, hvac)) in rooms {
            let (url, stop, clock) = (url.clone(), Arc::clone(&stop), clock.clone());
            let ticks = Arc::clone(&ticks);
            let handle = thread::Builder::new()
                .name(format!("demo-{}", profile.name))
                .stack_size(256 * 1024)
                .spawn(move || {
                    DemoThermostat::new(profile, &url, temp, hvac, clock, ticks).run(&stop)
                })
                .map_err(StartError::Thread)?;
            thermostats.push(handle);
        }
        Ok(Demo {
            server,
            stop,
            ticks,
            thermostats,
        })
    }

    pub fn server(&self) -> &Server {
        &self.server
    }

    /// How many ticks the thermostats have taken, all together: each steps its room and
    /// uploads what it reads before it counts one. A test that moves a manual clock by
    /// [`TICK`] waits for three more.
    pub fn ticks(&self) -> u64 {
        self.ticks.load(Ordering::SeqCst)
    }

    /// Stops the thermostats and the server.
    pub fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        // The server first: its shutdown ends every held subscribe, so no thermostat waits.
        self.server.shutdown();
        for t in self.thermostats {
            let _ = t.join();
        }
    }
}

impl Profile {
    /// Indoor humidity at Unix time `t` (whole percent), if the thermostat reports it.
    pub fn humidity(&self, t: i64) -> Option<f64> {
        self.humidity.map(|h| climate::humidity(h, t))
    }

    /// The room from Unix time `t` to `t + dt` (`dt` at most a few seconds) under `setting`:
    /// the thermostat decides on what its sensor reads at `t`, then the room moves.
    pub fn step(&self, temp: f64, hvac: Hvac, setting: &Setting, t: i64, dt: f64) -> (f64, Hvac) {
        let mut hvac = climate::decide(climate::sensed(temp, t), setting, hvac);
        if !self.can_cool {
            hvac.cooling = false;
        }
        let now = self.room.conditions(&climate::HOME, t);
        (climate::advance(temp, &now, hvac, dt), hvac)
    }
}

/// Writes simulated samples from yesterday's midnight (UTC) to `now`: one every `interval`
/// seconds and one at every change of HVAC state. Returns the room as it ends (temperature,
/// HVAC) and what ran yesterday and today so far, counted as the samples say (each one's state
/// until the next), as the energy history's rows.
fn replay(
    dir: &Path,
    profile: &Profile,
    now: i64,
    interval: i64,
) -> io::Result<((f64, Hvac), [Day; 2])> {
    let (mut temp, mut hvac) = (profile.start_temp, Hvac::default());
    let mut segment = history::file::inspect(dir, profile.serial)?;
    let today = now.div_euclid(DAY_S);
    let mut days = [Day::new(today - 1), Day::new(today)];
    let mut t = (today - 1) * DAY_S;
    while t < now {
        let (next_temp, next) = profile.step(temp, hvac, &profile.setting, t, STEP as f64);
        let on_the_interval = t.rem_euclid(interval) < STEP;
        let sensed = climate::sensed(temp, t);
        let day = &mut days[usize::from(t >= today * DAY_S)];
        if next != hvac || on_the_interval {
            let sample = sample(profile, t, sensed, next);
            segment = history::file::append(dir, profile.serial, segment, &sample)?;
        }
        if on_the_interval {
            day.add_indoor(sensed);
            day.add_outdoor(climate::reading(climate::HOME.outside(t)));
        }
        let ms = STEP.min(now - t) * 1000;
        let fan = profile.has_fan && (next.heating || next.cooling);
        for (on, total) in [
            (next.heating, &mut day.heat_ms),
            (next.cooling, &mut day.cool_ms),
            (fan, &mut day.fan_ms),
        ] {
            if on {
                *total += ms;
            }
        }
        (temp, hvac) = (next_temp, next);
        t += STEP;
    }
    Ok(((temp, hvac), days))
}

/// A week in the thermostat's own mode, so the page has a next change to show: the demo's
/// setting from 07:00, a setback from 22:00 (carried over midnight). The demo does not follow
/// it (its rooms keep their setting, so tests on the demo never see a target move by the
/// hour); between 22:00 and 07:00, as the browser counts hours, the page therefore says the
/// setting is held until 07:00, which is what a thermostat set by hand would show.
fn schedule(s: &Setting) -> (&'static str, Value) {
    let (mode, day, night) = match s.mode.as_str() {
        "range" => (
            "RANGE",
            json!({"temp-min": s.low, "temp-max": s.high}),
            json!({"temp-min": s.low - 2.0, "temp-max": s.high + 2.0}),
        ),
        "cool" => (
            "COOL",
            json!({"temp": s.target}),
            json!({"temp": s.target - 1.0}),
        ),
        _ => (
            "HEAT",
            json!({"temp": s.target}),
            json!({"temp": s.target - 3.5}),
        ),
    };
    let entry = |time: u32, kind: &str, temps: &Value| {
        let mut e = json!({"time": time, "type": mode, "entry_type": kind});
        if let (Some(e), Some(t)) = (e.as_object_mut(), temps.as_object()) {
            e.extend(t.clone());
        }
        e
    };
    let week: serde_json::Map<String, Value> = (0..7)
        .map(|d| {
            let day_entries = json!({
                "0": entry(0, "continuation", &night),
                "1": entry(7 * 3600, "setpoint", &day),
                "2": entry(22 * 3600, "setpoint", &night),
            });
            (d.to_string(), day_entries)
        })
        .collect();
    (mode, Value::Object(week))
}

fn sample(profile: &Profile, t: i64, temp: f64, hvac: Hvac) -> Sample {
    let s = &profile.setting;
    Sample {
        t,
        temp: Some(temp),
        target: Some(s.target),
        low: Some(s.low),
        high: Some(s.high),
        humidity: profile.humidity(t),
        mode: Some(s.mode.clone()),
        heating: hvac.heating,
        cooling: hvac.cooling,
        fan: profile.has_fan && (hvac.heating || hvac.cooling),
    }
}

/// A simulated thermostat in a simulated room.
struct DemoThermostat {
    profile: Profile,
    device: Thermostat,
    temp: f64,
    hvac: Hvac,
    /// The server's clock: the room's steps and the pause after an error.
    clock: Clock,
    /// Counts each tick taken and uploaded (shared by the demo's thermostats).
    ticks: Arc<AtomicU64>,
}

impl DemoThermostat {
    fn new(
        profile: Profile,
        server: &str,
        temp: f64,
        hvac: Hvac,
        clock: Clock,
        ticks: Arc<AtomicU64>,
    ) -> DemoThermostat {
        let quiet = Arc::new(|serial: &str, event: &Event| {
            if let Event::Problem(why) = event {
                log::debug!("demo thermostat {serial}: {why}");
            }
        });
        let mut device = Thermostat::new(Options::new(server, profile.serial), quiet);
        let s = &profile.setting;
        for (field, value) in [
            ("name", json!(profile.name)),
            ("can_cool", json!(profile.can_cool)),
            ("target_temperature_type", json!(s.mode)),
            ("target_temperature", json!(s.target)),
            ("target_temperature_low", json!(s.low)),
            ("target_temperature_high", json!(s.high)),
        ] {
            device.report("shared", field, value);
        }
        let (schedule_mode, days) = schedule(s);
        device.report("schedule", "schedule_mode", json!(schedule_mode));
        device.report("schedule", "days", days);
        device.report("device", "has_fan", json!(profile.has_fan));
        device.report("device", "temperature_scale", json!(profile.scale));
        if profile.humidity.is_none() {
            device.report("device", "current_humidity", Value::Null);
        }
        let mut demo = DemoThermostat {
            profile,
            device,
            temp,
            hvac,
            clock,
            ticks,
        };
        demo.report(demo.clock.now_ms().div_euclid(1000));
        demo
    }

    fn run(mut self, stop: &AtomicBool) {
        let mut last_tick = self.clock.now();
        while !stop.load(Ordering::SeqCst) {
            if let Err(e) = self.hold(stop, &mut last_tick) {
                log::debug!("demo thermostat {}: {e}", self.profile.serial);
                self.device.reset();
                pause(stop, &self.clock, Duration::from_secs(2));
            }
        }
    }

    /// Boots if need be, then holds one subscribe, applying what is pushed and stepping the
    /// room every [`TICK`], until the server ends it or stop is asked.
    fn hold(&mut self, stop: &AtomicBool, last_tick: &mut Instant) -> Result<(), String> {
        if !self.device.is_registered() {
            self.device.boot().map_err(|e| e.to_string())?;
        }
        let mut held = self.device.open_subscribe().map_err(|e| e.to_string())?;
        while !stop.load(Ordering::SeqCst) {
            // Waiting for the push to start, then reading it whole, never gives up halfway
            // through a chunk (which a short read timeout would).
            if held.wait(READ_SLICE).map_err(|e| e.to_string())? {
                match held.next_chunk().map_err(|e| e.to_string())? {
                    Some(chunk) => {
                        self.device.apply_chunk(&chunk).map_err(|e| e.to_string())?;
                    }
                    None => return Ok(()),
                }
            }
            let now = self.clock.now();
            if now - *last_tick >= TICK {
                let dt = (now - *last_tick).as_secs_f64();
                *last_tick = now;
                self.step(dt);
                self.device.put().map_err(|e| e.to_string())?;
                self.ticks.fetch_add(1, Ordering::SeqCst);
            }
        }
        Ok(())
    }

    /// The room `dt` seconds on (in steps of [`STEP`]), under the setting the thermostat
    /// holds now.
    fn step(&mut self, dt: f64) {
        let now = self.clock.now_ms().div_euclid(1000);
        let setting = self.setting();
        let mut left = dt.min(MAX_CATCH_UP as f64);
        while left > 0.0 {
            let step = left.min(STEP as f64);
            let t = now - left.ceil() as i64;
            (self.temp, self.hvac) = self.profile.step(self.temp, self.hvac, &setting, t, step);
            left -= step;
        }
        self.report(now);
    }

    fn report(&mut self, now: i64) {
        let fan_timer = self
            .field("device", "fan_timer_timeout")
            .and_then(Value::as_i64)
            .is_some_and(|t| t > now);
        let fan = self.profile.has_fan && (self.hvac.heating || self.hvac.cooling || fan_timer);
        let d = &mut self.device;
        d.report(
            "shared",
            "current_temperature",
            json!(climate::sensed(self.temp, now)),
        );
        d.report("shared", "hvac_heater_state", json!(self.hvac.heating));
        d.report("shared", "hvac_ac_state", json!(self.hvac.cooling));
        d.report("shared", "hvac_fan_state", json!(fan));
        if let Some(h) = self.profile.humidity(now) {
            d.report("device", "current_humidity", json!(h));
        }
    }

    fn field(&self, kind: &str, field: &str) -> Option<&Value> {
        self.device
            .bucket(&format!("{kind}.{}", self.profile.serial))
            .and_then(|b| b.get(field))
    }

    /// What the thermostat is set to now: its mode and setpoints, or its eco temperatures
    /// while its structure is away.
    fn setting(&self) -> Setting {
        let number = |kind, f, default: f64| {
            self.field(kind, f)
                .and_then(Value::as_f64)
                .unwrap_or(default)
        };
        let d = &self.profile.setting;
        let away = self
            .device
            .buckets()
            .filter(|(key, _)| key.starts_with("structure."))
            .any(|(_, b)| {
                ["away", "manual_eco_all"]
                    .iter()
                    .any(|f| b.get(*f).and_then(Value::as_bool) == Some(true))
            });
        let mode = self
            .field("shared", "target_temperature_type")
            .and_then(Value::as_str)
            .unwrap_or(&d.mode)
            .to_string();
        if away && mode != "off" {
            return Setting {
                mode: if self.profile.can_cool {
                    "range"
                } else {
                    "heat"
                }
                .into(),
                target: number("device", "away_temperature_low", 12.5),
                low: number("device", "away_temperature_low", 12.5),
                high: number("device", "away_temperature_high", 26.0),
            };
        }
        Setting {
            mode,
            target: number("shared", "target_temperature", d.target),
            low: number("shared", "target_temperature_low", d.low),
            high: number("shared", "target_temperature_high", d.high),
        }
    }
}

/// Sleeps up to `total`, waking early once stop is asked.
fn pause(stop: &AtomicBool, clock: &Clock, total: Duration) {
    let until = clock.now() + total;
    while !stop.load(Ordering::SeqCst) && clock.now() < until {
        thread::sleep(Duration::from_millis(100));
    }
}
