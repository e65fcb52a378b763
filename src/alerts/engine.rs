//! The `alerts` thread: reads each thermostat as the rules see it ([`rules::Facts`]) when the
//! hub says it changed and on a tick of the clock (offline, heating without effect and the
//! filter are about time passing), starts and clears episodes, and acknowledges filter alerts.
//!
//! A start or clear is written to the record (fsynced) first; only then is it put on the
//! board and handed to the delivery thread. A write that fails changes nothing, and the next
//! look tries again.

use std::collections::HashMap;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, select};
use parking_lot::Mutex;

use super::deliver::{self, Courier};
use super::record::{self, Delivery, Record};
use super::rules::{self, Facts, Memory};
use super::settings::Settings;
use super::{Alert, Context, Event, Kind, Notice};
use crate::config::AlertConfig;
use crate::hub::ChangeEvent;
use crate::thermostat::reading::{Reading, Safety};
use crate::util::clock::iso8601_ms;
use crate::util::shutdown::Shutdown;

/// How often every thermostat is looked at without a change (on the system clock; a manual
/// clock's moves wake the thread at once).
const TICK: Duration = Duration::from_secs(10);
/// How often a thermostat's filter runtime is read from the energy history.
const FILTER_READ_MS: i64 = 60_000;

/// What the thread and `POST /api/alerts/ack` share.
pub struct Engine {
    record: Arc<Mutex<Record>>,
    /// The settings in force, read at each look (the receivers a notice is owed to, too).
    settings: Arc<Settings>,
    outbox: Sender<Delivery>,
    memory: Mutex<HashMap<String, Memory>>,
    /// Per thermostat: its filter runtime (s, all time) and when it was read.
    runtime: Mutex<HashMap<String, (i64, i64)>>,
}

/// Why an acknowledgement was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum AckError {
    /// No active alert has this id.
    Unknown,
    /// The alert is not a filter alert: it clears by itself.
    NotAcknowledgeable(Kind),
    /// The reset could not be made durable; nothing changed.
    Storage(String),
}

/// The rules' and the delivery's threads.
pub struct Threads {
    rules: JoinHandle<()>,
    courier: Courier,
}

impl Threads {
    /// After the shutdown signal: waits for both threads.
    pub fn join(self) {
        let _ = self.rules.join();
        self.courier.join();
    }
}

/// Opens the record and the settings, puts what the record holds on the board, and starts both
/// threads.
pub fn start(app: &Arc<dyn Context>, shutdown: &Shutdown) -> std::io::Result<Threads> {
    let dir = app.config().data_dir.join(record::DIR);
    let settings = Arc::new(Settings::open(app.config(), &dir)?);
    let record = Record::open(&dir)?;
    for notice in record.notices() {
        app.alerts().note(notice);
    }
    let record = Arc::new(Mutex::new(record));
    let (outbox, fresh) = crossbeam_channel::unbounded();
    let courier = Courier::start(
        Arc::clone(&settings),
        app.config().clock.clone(),
        Arc::clone(&record),
        fresh,
        shutdown,
    )?;
    let engine = Arc::new(Engine {
        record,
        settings: Arc::clone(&settings),
        outbox,
        memory: Mutex::new(HashMap::new()),
        runtime: Mutex::new(HashMap::new()),
    });
    // Set once per App; a second start (never done) keeps the first.
    let _ = app.alerts().engine.set(Arc::clone(&engine));
    let _ = app.alerts().settings.set(settings);
    // Readings, HVAC state and setpoints live in these two buckets; a change made or taken
    // is `change.<serial>`.
    let changes = app.state().hub().watch_if(Box::new(|e: &ChangeEvent| {
        ["shared.", "device.", "change."]
            .iter()
            .any(|p| e.change.key.starts_with(p))
    }));
    let stopped = shutdown.receiver();
    let app = Arc::clone(app);
    let rules = thread::Builder::new()
        .name("alerts".into())
        .stack_size(256 * 1024)
        .spawn(move || run(app.as_ref(), &engine, changes, stopped))?;
    Ok(Threads { rules, courier })
}

fn run(
    app: &dyn Context,
    engine: &Engine,
    changes: Receiver<Arc<ChangeEvent>>,
    stopped: Receiver<()>,
) {
    let clock = app.config().clock.clone();
    let moved = clock.moves();
    let settings = engine.settings.changes();
    let tick_ms = TICK.as_millis() as i64;
    let mut due = clock.now_ms();
    loop {
        let now = clock.now_ms();
        if now >= due || due - now > tick_ms {
            for serial in app.state().serials() {
                engine.look(app, &serial, true);
            }
            due = clock.now_ms() + tick_ms;
            continue;
        }
        select! {
            recv(stopped) -> _ => break,
            recv(changes) -> event => match event {
                Ok(event) => {
                    // Changes that queued up meanwhile (a burst of commands, a thermostat's
                    // upload of several buckets) are looked at once per thermostat: a look
                    // reads the thermostat as it is now, so one covers them all.
                    let mut serials = std::collections::BTreeSet::from([event.serial.clone()]);
                    serials.extend(changes.try_iter().map(|queued| queued.serial.clone()));
                    for serial in &serials {
                        engine.look(app, serial, false);
                    }
                }
                Err(_) => break,
            },
            recv(moved) -> _ => due = clock.now_ms(),
            // New settings: every thermostat is looked at with them now.
            recv(settings) -> _ => due = clock.now_ms(),
            default(clock.wait_time_ms(due)) => {}
        }
    }
}

impl Engine {
    /// Looks at one thermostat and starts or clears what the rules say. `timed`: a look of
    /// the tick, which may also read the filter runtime.
    fn look(&self, app: &dyn Context, serial: &str, timed: bool) {
        // Held throughout, so an acknowledgement never interleaves with a look.
        let mut memory = self.memory.lock();
        let now_ms = app.config().clock.now_ms();
        let active = self.record.lock().active_of(serial);
        // A thermostat out of sight (unclaimed with pairing required, or removed in either
        // mode) has no alerts: what was active clears, and nothing starts.
        if !app.sight(serial).listed {
            for alert in active {
                let cleared = Alert {
                    cleared_at: Some(iso8601_ms(now_ms)),
                    ..alert
                };
                let _ = self.publish(app, Event::Cleared, cleared, now_ms);
            }
            return;
        }
        let in_force = self.settings.now();
        let config = &in_force.config;
        let Some(facts) = self.facts(app, config, serial, now_ms, timed) else {
            return;
        };
        let memory = memory.entry(serial.to_string()).or_default();
        for kind in Kind::ALL {
            let current = active.iter().find(|a| a.kind == kind);
            // A rule turned off starts nothing and clears what it started; it still reads the
            // thermostat, so its memory is current when it is turned on again.
            let wanted = rules::wanted(kind, &facts, current.is_some(), memory, config, now_ms);
            let wanted = if config.rule_on(kind.as_str()) {
                wanted
            } else {
                Some(false)
            };
            match (wanted, current) {
                (Some(true), None) => {
                    let alert = Alert {
                        id: alert_id(serial, kind, now_ms),
                        serial: serial.to_string(),
                        kind,
                        started_at: iso8601_ms(now_ms),
                        cleared_at: None,
                        message: rules::message(kind, &facts, config),
                    };
                    let _ = self.publish(app, Event::Started, alert, now_ms);
                }
                (Some(false), Some(alert)) => {
                    let alert = Alert {
                        cleared_at: Some(iso8601_ms(now_ms)),
                        ..alert.clone()
                    };
                    let _ = self.publish(app, Event::Cleared, alert, now_ms);
                }
                _ => {}
            }
        }
    }

    /// Writes the notice, then puts it on the board and hands its deliveries over. A notice
    /// that cannot be written changes nothing (the next look tries again).
    fn publish(
        &self,
        app: &dyn Context,
        event: Event,
        alert: Alert,
        now_ms: i64,
    ) -> std::io::Result<()> {
        let notice = Notice { event, alert };
        // Owed to the receivers set now (on the page too).
        let targets = deliver::targets(&self.settings.now().config);
        let written = self.record.lock().notice(notice.clone(), now_ms, &targets);
        let deliveries = written.inspect_err(|e| {
            log::error!(
                "alert record: could not write alert {}: {e}",
                notice.alert.id
            );
        })?;
        let what = match event {
            Event::Started => "started",
            Event::Cleared => "cleared",
        };
        // The message names the thermostat as it named itself: escaped, so a name cannot start
        // a line of its own.
        log::info!(
            "alert {} {what}: {}",
            notice.alert.id,
            crate::util::logged(&notice.alert.message)
        );
        app.alerts().note(notice);
        for d in deliveries {
            let _ = self.outbox.send(d);
        }
        Ok(())
    }

    /// The thermostat as the rules see it: its reading's mapping, every field decided (see
    /// [`crate::thermostat::reading`]), with what the alerts know of it themselves.
    fn facts(
        &self,
        app: &dyn Context,
        config: &AlertConfig,
        serial: &str,
        now_ms: i64,
        timed: bool,
    ) -> Option<Facts> {
        let reading = app.reading(serial)?;
        let Reading {
            serial: _,
            api_key: _,
            availability,
            name,
            room,
            targets: _,
            humidity: _,
            target_humidity: _,
            target_humidity_enabled: _,
            mode: _,
            hvac,
            fan: _,
            eco: _,
            is_online: _,
            has_leaf: _,
            scale: _,
            capabilities: _,
            safety:
                Safety {
                    state: _,
                    temp_activating_hvac: _,
                    shutoff,
                },
            diagnostics: _,
            structure_id: _,
            away: _,
            sensed_away: _,
            schedule_mode: _,
            lock: _,
            bounds: _,
            outside: _,
            time_zone: _,
            battery_volts,
            battery_percent: _,
            reported: _,
            change,
            course: _,
        } = &*reading;
        let filter_s = match config.filter_after_s {
            Some(_) => self
                .runtime_s(app, serial, now_ms, timed)
                .map(|total| total - self.record.lock().filter_base(serial)),
            None => None,
        };
        Some(Facts {
            name: name.clone(),
            temp: room.as_f64(),
            heat_target: reading.heat_target(),
            cool_target: reading.cool_target(),
            heating: hvac.heating(),
            cooling: hvac.cooling(),
            in_touch: in_touch(app, config, serial, now_ms),
            available: availability.available,
            battery_v: *battery_volts,
            safety_shutoff: *shutoff,
            filter_s,
            waiting: change.and_then(|c| Some((c.kind, c.waiting_since()?))),
        })
    }

    /// The thermostat's heating and cooling runtime of all time (s), read at most once a
    /// [`FILTER_READ_MS`] (on a timed look), else the last reading.
    fn runtime_s(&self, app: &dyn Context, serial: &str, now_ms: i64, timed: bool) -> Option<i64> {
        let last = self.runtime.lock().get(serial).copied();
        match last {
            Some((total, at)) if !timed || now_ms - at < FILTER_READ_MS => Some(total),
            _ => {
                let total = runtime_total_s(app, serial)?;
                self.runtime
                    .lock()
                    .insert(serial.to_string(), (total, now_ms));
                Some(total)
            }
        }
    }

    /// `POST /api/alerts/ack`: a filter alert's filter is reset (durably) and the alert
    /// cleared. Any other kind clears by itself once the thermostat is back to normal.
    pub fn ack(&self, app: &dyn Context, id: &str) -> Result<Alert, AckError> {
        // No look runs meanwhile (it could start the alert again from a stale runtime).
        let _looks = self.memory.lock();
        let alert = self.record.lock().active(id).ok_or(AckError::Unknown)?;
        if alert.kind != Kind::Filter {
            return Err(AckError::NotAcknowledgeable(alert.kind));
        }
        let now_ms = app.config().clock.now_ms();
        let cached = self.runtime.lock().get(&alert.serial).map(|(t, _)| *t);
        let total = runtime_total_s(app, &alert.serial)
            .or(cached)
            .ok_or_else(|| AckError::Storage("the energy history cannot be read".into()))?;
        self.record
            .lock()
            .filter_reset(&alert.serial, total)
            .map_err(|e| AckError::Storage(e.to_string()))?;
        self.runtime
            .lock()
            .insert(alert.serial.clone(), (total, now_ms));
        let cleared = Alert {
            cleared_at: Some(iso8601_ms(now_ms)),
            ..alert
        };
        // Reset and written: were the clear's own write to fail, the next look clears it.
        let _ = self.publish(app, Event::Cleared, cleared.clone(), now_ms);
        Ok(cleared)
    }
}

/// Whether the thermostat is in touch for the offline rule: holding its long poll, or heard
/// from within `ALERT_OFFLINE_MINUTES`. One not heard from since this process started counts
/// from the start, and cannot be told until the limit has passed.
fn in_touch(app: &dyn Context, config: &AlertConfig, serial: &str, now_ms: i64) -> Option<bool> {
    if app.state().hub().subscriptions_of(serial) > 0 {
        return Some(true);
    }
    // With the offline rule off (0), `not_applied` still needs to know: heard from within its
    // own limit.
    let limit = config.offline_after.or(config.not_applied_after)?;
    let limit_ms = i64::try_from(limit.as_millis()).unwrap_or(i64::MAX);
    let last = app.last_seen(serial);
    let since = last.unwrap_or(app.started_ms()).max(app.started_ms());
    if now_ms - since > limit_ms {
        Some(false)
    } else if last.is_some() {
        Some(true)
    } else {
        None
    }
}

/// The heating and cooling runtime the energy history has counted (s): its running total,
/// which pruning and restarts never lower ([`crate::energy::Live::totals`]).
fn runtime_total_s(app: &dyn Context, serial: &str) -> Option<i64> {
    let totals = app.energy().totals(serial)?;
    Some(totals.heat_s.saturating_add(totals.cool_s))
}

/// Unique per episode: the serial, the kind, the start (ms, hex) and 16 random bits.
fn alert_id(serial: &str, kind: Kind, now_ms: i64) -> String {
    let salt = crate::util::random::hex(2).unwrap_or_default();
    format!("{serial}-{}-{now_ms:x}{salt}", kind.as_str())
}
