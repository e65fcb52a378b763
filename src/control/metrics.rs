//! `GET /metrics`: the thermostats and the server in the Prometheus text format 0.0.4 (see
//! docs/metrics.md). Thermostats are the ones `/api/devices` lists (with pairing required,
//! only claimed ones), each labelled by its serial: a name is free text, so it appears only
//! as a label of `hearth_thermostat_info`. A reading the thermostat has not reported (null)
//! is left out rather than written as a made-up number.

use crate::accounts::Viewer;
use crate::app::App;
use crate::http::Response;
use crate::metrics::StatusCounts;
use crate::metrics::text::{CONTENT_TYPE, Exposition};
use crate::thermostat;
use crate::thermostat::status::Status;

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

/// The status records of the thermostats the control API lists, by serial.
fn listed(app: &App) -> Vec<Status> {
    let now = app.config.clock.now_ms();
    let mut serials = app
        .visibility()
        .listed(&app.state, app.state.serials(), Viewer::Lan);
    serials.sort();
    serials
        .iter()
        .filter_map(|serial| {
            let view = thermostat::view(&app.state, serial)?;
            Some(thermostat::status::record(
                &view,
                app.availability(serial),
                now,
            ))
        })
        .collect()
}

/// A per-thermostat reading: its name, help, and how to read it from a status record.
type Reading = (&'static str, &'static str, fn(&Status) -> Option<f64>);

const READINGS: [Reading; 5] = [
    (
        "hearth_thermostat_temperature_celsius",
        "Room temperature the thermostat reports.",
        |s| s.current_temperature.as_f64(),
    ),
    (
        "hearth_thermostat_target_temperature_celsius",
        "Target temperature (heat or cool mode).",
        |s| s.target_temperature.as_f64(),
    ),
    (
        "hearth_thermostat_target_temperature_low_celsius",
        "Lower target of heat-cool (range) mode.",
        |s| s.target_temperature_low.as_f64(),
    ),
    (
        "hearth_thermostat_target_temperature_high_celsius",
        "Upper target of heat-cool (range) mode.",
        |s| s.target_temperature_high.as_f64(),
    ),
    (
        "hearth_thermostat_humidity_percent",
        "Relative humidity the thermostat reports.",
        |s| s.humidity.as_f64(),
    ),
];

fn thermostats(app: &App, out: &mut Exposition) {
    let records = listed(app);
    runtimes(app, &records, out);
    out.family(
        "hearth_thermostat_info",
        "gauge",
        "Always 1; labels the serial with the thermostat's name.",
    );
    for s in &records {
        out.sample(
            "hearth_thermostat_info",
            &[("serial", &s.serial), ("name", &s.name)],
            1.0,
        );
    }
    out.family(
        "hearth_thermostat_online",
        "gauge",
        "1 if the thermostat reached hearth within AVAILABILITY_TIMEOUT_SECONDS or holds a subscribe.",
    );
    for s in &records {
        let online = f64::from(u8::from(s.is_available));
        out.sample("hearth_thermostat_online", &[("serial", &s.serial)], online);
    }
    for (name, help, read) in READINGS {
        out.family(name, "gauge", help);
        for s in &records {
            if let Some(v) = read(s).filter(|v| v.is_finite()) {
                out.sample(name, &[("serial", &s.serial)], v);
            }
        }
    }
    out.family(
        "hearth_thermostat_hvac_running",
        "gauge",
        "1 while the thermostat reports the stage on: heat (hvac_heater_state), cool (hvac_ac_state), fan (hvac_fan_state), aux (hvac_aux_heater_state).",
    );
    for s in &records {
        let h = &s.hvac;
        for (mode, on) in [
            ("heat", h.heater),
            ("cool", h.ac),
            ("fan", h.fan),
            ("aux", h.aux_heat),
        ] {
            let labels = [("serial", s.serial.as_str()), ("mode", mode)];
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
fn runtimes(app: &App, records: &[Status], out: &mut Exposition) {
    out.family(
        "hearth_thermostat_runtime_seconds_total",
        "counter",
        "Seconds the heating (heat), cooling (cool), fan (fan) and auxiliary heat (aux) ran, over the whole energy history.",
    );
    for s in records {
        let Some(t) = app.energy.totals(&s.serial) else {
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
                &[("serial", s.serial.as_str()), ("mode", mode)],
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
    let active = app.alerts.active();
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
        ("device", &app.answered_device),
        ("control", &app.answered_control),
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
    out.histogram("hearth_journal_fsync_seconds", &app.state.fsync_latency());

    out.family(
        "hearth_store_size_bytes",
        "gauge",
        "Bytes of the data directory's journal and snapshot.",
    );
    out.sample(
        "hearth_store_size_bytes",
        &[],
        app.state.store_bytes() as f64,
    );

    out.family(
        "process_start_time_seconds",
        "gauge",
        "Start time of the process since the Unix epoch in seconds.",
    );
    out.sample(
        "process_start_time_seconds",
        &[],
        app.started_ms as f64 / 1000.0,
    );
}
