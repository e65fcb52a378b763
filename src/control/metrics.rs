//! `GET /metrics`: the thermostats and the server in the Prometheus text format 0.0.4 (see
//! docs/metrics.md). Thermostats are the ones `/api/devices` lists (with pairing required,
//! only claimed ones), each labelled by its serial: a name is free text, so it appears only
//! as a label of `hearth_thermostat_info`. A reading the thermostat has not reported (null)
//! is left out rather than written as a made-up number.

use std::sync::Arc;

use crate::accounts::Viewer;
use crate::app::App;
use crate::http::Response;
use crate::metrics::StatusCounts;
use crate::metrics::text::{CONTENT_TYPE, Exposition};
use crate::thermostat::reading::{Reading, Reported, Targets};

pub fn metrics(app: &App) -> Response {
    let mut out = Exposition::default();
    thermostats(app, &mut out);
    server(app, &mut out);
    Response {
        status: 200,
        headers: vec![("Content-Type".to_string(), CONTENT_TYPE.to_string())],
        body: out.finish().into_bytes(),
    }
}

/// A thermostat as `/metrics` shows it: its reading's mapping, every field decided (see
/// [`crate::thermostat::reading`]). A reading the thermostat has not reported is `None`.
struct Shown<'a> {
    serial: &'a str,
    name: &'a str,
    online: bool,
    /// The value of each of [`GAUGES`], in its order.
    gauges: [Option<f64>; 5],
    /// Heat, cool, fan and aux.
    running: [bool; 4],
}

impl<'a> Shown<'a> {
    fn of(reading: &'a Reading) -> Shown<'a> {
        let Reading {
            serial,
            api_key: _,
            availability,
            name,
            room,
            targets: Targets { target, high, low },
            humidity,
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
            safety: _,
            diagnostics: _,
            structure_id: _,
            away: _,
            sensed_away: _,
            schedule_mode: _,
            lock: _,
            bounds: _,
            outside: _,
            time_zone: _,
            battery_volts: _,
            battery_percent: _,
            reported: _,
            change: _,
            course: _,
        } = reading;
        Shown {
            serial,
            name,
            online: availability.available,
            gauges: [room, target, low, high, humidity].map(Reported::as_f64),
            running: [hvac.heater, hvac.ac, hvac.fan, hvac.aux_heat],
        }
    }
}

/// The readings of the thermostats the control API lists, by serial.
fn listed(app: &App) -> Vec<Arc<Reading>> {
    let mut serials = app
        .visibility()
        .listed(app.state(), app.state().serials(), Viewer::Lan);
    serials.sort();
    serials.iter().filter_map(|s| app.reading(s)).collect()
}

/// The per-thermostat gauges, in [`Shown::gauges`]' order: name and help.
const GAUGES: [(&str, &str); 5] = [
    (
        "hearth_thermostat_temperature_celsius",
        "Room temperature the thermostat reports.",
    ),
    (
        "hearth_thermostat_target_temperature_celsius",
        "Target temperature (heat or cool mode).",
    ),
    (
        "hearth_thermostat_target_temperature_low_celsius",
        "Lower target of heat-cool (range) mode.",
    ),
    (
        "hearth_thermostat_target_temperature_high_celsius",
        "Upper target of heat-cool (range) mode.",
    ),
    (
        "hearth_thermostat_humidity_percent",
        "Relative humidity the thermostat reports.",
    ),
];

fn thermostats(app: &App, out: &mut Exposition) {
    let readings = listed(app);
    let records: Vec<Shown> = readings.iter().map(|r| Shown::of(r)).collect();
    runtimes(app, &records, out);
    out.family(
        "hearth_thermostat_info",
        "gauge",
        "Always 1; labels the serial with the thermostat's name.",
    );
    for s in &records {
        out.sample(
            "hearth_thermostat_info",
            &[("serial", s.serial), ("name", s.name)],
            1.0,
        );
    }
    out.family(
        "hearth_thermostat_online",
        "gauge",
        "1 if the thermostat reached hearth within AVAILABILITY_TIMEOUT_SECONDS or holds a subscribe.",
    );
    for s in &records {
        let online = f64::from(u8::from(s.online));
        out.sample("hearth_thermostat_online", &[("serial", s.serial)], online);
    }
    for (i, (name, help)) in GAUGES.iter().enumerate() {
        out.family(name, "gauge", help);
        for s in &records {
            if let Some(v) = s.gauges[i].filter(|v| v.is_finite()) {
                out.sample(name, &[("serial", s.serial)], v);
            }
        }
    }
    out.family(
        "hearth_thermostat_hvac_running",
        "gauge",
        "1 while the thermostat reports the stage on: heat (hvac_heater_state), cool (hvac_ac_state), fan (hvac_fan_state), aux (hvac_aux_heater_state).",
    );
    for s in &records {
        for (mode, on) in ["heat", "cool", "fan", "aux"].into_iter().zip(s.running) {
            let labels = [("serial", s.serial), ("mode", mode)];
            out.sample(
                "hearth_thermostat_hvac_running",
                &labels,
                f64::from(u8::from(on)),
            );
        }
    }
}

/// Run time by mode over every day the energy history ever counted (docs/energy.md), pruned
/// days and today's row as last written included: the running totals kept in memory, so a
/// scrape reads no file. It never decreases, not across a restart (a kill -9 included) nor
/// when `ENERGY_KEEP_DAYS` prunes a day.
fn runtimes(app: &App, records: &[Shown], out: &mut Exposition) {
    out.family(
        "hearth_thermostat_runtime_seconds_total",
        "counter",
        "Seconds the heating (heat), cooling (cool), fan (fan) and auxiliary heat (aux) ran, over the whole energy history.",
    );
    for s in records {
        let Some(t) = app.energy().totals(s.serial) else {
            continue;
        };
        for (mode, seconds) in [
            ("heat", t.heat_s),
            ("cool", t.cool_s),
            ("fan", t.fan_s),
            ("aux", t.aux_s),
        ] {
            let seconds = seconds as f64;
            out.sample(
                "hearth_thermostat_runtime_seconds_total",
                &[("serial", s.serial), ("mode", mode)],
                seconds,
            );
        }
    }
}

fn server(app: &App, out: &mut Exposition) {
    let held: usize = app.hub().subscription_counts().values().sum();
    out.family(
        "hearth_held_subscribes",
        "gauge",
        "Thermostat subscribes (long polls) held open now.",
    );
    out.sample("hearth_held_subscribes", &[], held as f64);

    // Every kind, 0 included, so an alerting rule on it has a series before the first alert.
    let active = app.alerts().active();
    out.family(
        "hearth_alerts_active",
        "gauge",
        "Alerts active now, by kind (docs/alerts.md).",
    );
    for kind in crate::alerts::Kind::ALL {
        let n = active
            .iter()
            .filter(|a| a.kind == kind && app.sight(&a.serial, Viewer::Lan).addressable())
            .count();
        out.sample("hearth_alerts_active", &[("kind", kind.as_str())], n as f64);
    }

    out.family(
        "hearth_http_requests_total",
        "counter",
        "HTTP requests answered since start, by port and status code.",
    );
    let ports: [(&str, &StatusCounts); 2] = [
        ("device", &app.answered().device),
        ("control", &app.answered().control),
    ];
    for (port, counts) in ports {
        for (code, n) in counts.answered() {
            let code = code.to_string();
            out.sample(
                "hearth_http_requests_total",
                &[("port", port), ("code", &code)],
                n as f64,
            );
        }
    }

    out.family(
        "hearth_journal_fsync_seconds",
        "histogram",
        "Time each group commit's fsync of the journal took.",
    );
    out.histogram("hearth_journal_fsync_seconds", &app.state().fsync_latency());

    out.family(
        "hearth_store_size_bytes",
        "gauge",
        "Bytes of the data directory's journal and snapshot.",
    );
    out.sample(
        "hearth_store_size_bytes",
        &[],
        app.state().store_bytes() as f64,
    );

    out.family(
        "process_start_time_seconds",
        "gauge",
        "Start time of the process since the Unix epoch in seconds.",
    );
    out.sample(
        "process_start_time_seconds",
        &[],
        app.started_ms() as f64 / 1000.0,
    );
}
