//! `hearth demo` on a manual clock: its rooms move with the server's clock (`Config::clock`),
//! and a minute of it changes what the page shows.

use crate::common::*;
use hearth::Config;
use hearth::control::status::record;
use hearth::demo::{Demo, TICK, profiles};
use hearth::util::clock::ManualClock;
use serde_json::{Value, json};

/// 2026-11-26 02:00 UTC: night, when the hallway heats and nobody is in the living room.
const NIGHT_MS: i64 = 1_795_658_400_000;

#[test]
fn the_demo_moves_with_the_servers_clock() {
    let time = ManualClock::at(NIGHT_MS);
    let dir = TempDir::new("demo-clock");
    let mut config = Config::local(dir.path());
    config.clock = time.clock();
    share_process();
    let demo = Demo::start(config).expect("demo starts");
    let app = demo.server().app();
    let serials: Vec<&str> = profiles().iter().map(|p| p.serial).collect();
    let readings = || -> Vec<Value> {
        serials
            .iter()
            .map(|s| record(app, s).map_or(Value::Null, |r| r["current_temperature"].clone()))
            .collect()
    };
    wait_until("the three thermostats report", || {
        readings().iter().all(Value::is_f64)
    });
    // Each move of the clock by TICK is one step of each room, uploaded.
    let mut seen = vec![readings()];
    for tick in 1..=12 {
        time.advance(TICK);
        wait_until("each thermostat takes its tick", || {
            demo.ticks() >= 3 * tick
        });
        seen.push(readings());
    }

    // Within a minute on the server's clock the page has changed: the hallway, which at
    // night either heats or loses heat to the cold outside, reads something new.
    assert!(
        seen.windows(2).any(|w| w[0][0] != w[1][0]),
        "the hallway: {seen:?}"
    );
    demo.stop();
}

/// Seconds of heating and of cooling the samples (oldest first) say ran from `from` to `to`:
/// each sample's state until the next one (the samples of a replay are never an interval
/// apart), the last one until `to`.
fn ran(samples: &[Value], from: i64, to: i64) -> (i64, i64) {
    let (mut heat, mut cool) = (0, 0);
    for (i, s) in samples.iter().enumerate() {
        let t = s["t"].as_i64().unwrap();
        let next = samples.get(i + 1).map_or(to, |n| n["t"].as_i64().unwrap());
        let span = next.min(to) - t.max(from);
        if span > 0 {
            heat += if s["heating"] == json!(true) { span } else { 0 };
            cool += if s["cooling"] == json!(true) { span } else { 0 };
        }
    }
    (heat, cool)
}

/// What a card says of the last 24 hours and what its Energy section says of today and
/// yesterday are the same runs (the demo replays them into both); and the house has one
/// weather: every thermostat's days have the same outdoor average.
#[test]
fn the_demos_cards_and_energy_agree() {
    let time = ManualClock::at(NIGHT_MS);
    let dir = TempDir::new("demo-agree");
    let mut config = Config::local(dir.path());
    config.clock = time.clock();
    share_process();
    let demo = Demo::start(config).expect("demo starts");
    let server = demo.server();
    let app = server.app();
    let serials: Vec<&str> = profiles().iter().map(|p| p.serial).collect();
    wait_until("the three thermostats report", || {
        serials
            .iter()
            .all(|s| record(app, s).is_some_and(|r| r["current_temperature"].is_f64()))
    });
    let now = NIGHT_MS / 1000;
    let midnight = now - now.rem_euclid(86_400);
    let date = |t: i64| hearth::energy::day::date_text(t.div_euclid(86_400));
    let mut outdoor: Vec<Vec<Value>> = Vec::new();
    for serial in &serials {
        let history = get(
            server.control_addr(),
            &format!("/api/history?serial={serial}&hours=48"),
        )
        .json();
        let samples = history["samples"].as_array().unwrap();
        let energy = get(
            server.control_addr(),
            &format!(
                "/api/energy?serial={serial}&from={}&to={}",
                date(now - 40 * 86_400),
                date(now)
            ),
        )
        .json();
        let days = energy["days"].as_array().unwrap();
        let row = |d: String| {
            days.iter()
                .find(|r| r["date"] == json!(d))
                .cloned()
                .unwrap_or_else(|| panic!("{serial}: no row for {d}: {energy}"))
        };
        let (today, yesterday) = (row(date(now)), row(date(midnight - 1)));
        let seconds = |r: &Value| (r["heat_s"].as_i64().unwrap(), r["cool_s"].as_i64().unwrap());
        let close = |a: (i64, i64), b: (i64, i64)| (a.0 - b.0).abs() <= 1 && (a.1 - b.1).abs() <= 1;
        assert!(
            close(seconds(&today), ran(samples, midnight, now)),
            "{serial} today: energy {today}, history {:?}",
            ran(samples, midnight, now)
        );
        assert!(
            close(
                seconds(&yesterday),
                ran(samples, midnight - 86_400, midnight)
            ),
            "{serial} yesterday: energy {yesterday}, history {:?}",
            ran(samples, midnight - 86_400, midnight)
        );
        // The card's "Last 24 h" is made of the same runs: today's and the end of yesterday's.
        let card = get(
            server.control_addr(),
            &format!("/api/history?serial={serial}&hours=24"),
        )
        .json();
        let last_day = (
            card["heating_seconds"].as_i64().unwrap(),
            card["cooling_seconds"].as_i64().unwrap(),
        );
        assert!(
            close(last_day, ran(samples, now - 86_400, now)),
            "{serial}: the card {last_day:?}"
        );
        let (t, y) = (seconds(&today), seconds(&yesterday));
        assert!(
            last_day.0 >= t.0 && last_day.0 <= t.0 + y.0 + 1,
            "{serial}: {last_day:?} {t:?} {y:?}"
        );
        outdoor.push(days.iter().map(|r| r["outdoor_avg_c"].clone()).collect());
    }
    // The hallway heats at night, and its Energy says so.
    let hallway = get(
        server.control_addr(),
        &format!("/api/energy?serial={}&from={}", serials[0], date(now)),
    )
    .json();
    assert!(
        hallway["total"]["heat_s"].as_i64().unwrap() > 0,
        "{hallway}"
    );
    // One weather for the house: every day's outdoor average is the same for every room.
    assert_eq!(outdoor[0].len(), 41, "{outdoor:?}");
    assert!(outdoor[0].iter().all(Value::is_f64), "{outdoor:?}");
    assert_eq!(outdoor[0], outdoor[1]);
    assert_eq!(outdoor[0], outdoor[2]);
    demo.stop();
}
