//! `hearth demo` on a manual clock: its rooms move with the server's clock (`Config::clock`),
//! and a minute of it changes what the page shows.

use crate::common::*;
use hearth::Config;
use hearth::control::status::record;
use hearth::demo::{Demo, TICK, profiles};
use hearth::util::clock::ManualClock;
use serde_json::Value;

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
