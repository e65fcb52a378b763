//! The simulated thermostat against the real server: boot, upload, hold, push, acknowledge,
//! CAS retry, strict key order, and `hearth-dev simulate`.

use crate::common;

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use common::*;
use hearth::simulator::Event;
use hearth::util::clock::ManualClock;
use serde_json::json;

#[test]
fn boot_subscribe_push_acknowledge_cycle() {
    let s = TestServer::start();
    let (mut sim, events) = thermostat(&s.origin(), SERIAL);
    sim.boot().unwrap();
    expect_event(&events, "registered", |e| {
        matches!(e, Event::Registered { .. })
    });
    // The first subscribe named device/shared/schedule with timestamp 0; the server had
    // nothing, so the thermostat uploaded its full state.
    let up = expect_event(&events, "upload", |e| matches!(e, Event::Uploaded { .. }));
    assert_eq!(
        up,
        Event::Uploaded {
            keys: vec![
                format!("schedule.{SERIAL}"),
                shared(),
                format!("device.{SERIAL}")
            ],
            full: true
        }
    );
    let device = s.bucket(SERIAL, &format!("device.{SERIAL}")).unwrap();
    assert_eq!(device.value.to_map()["serial_number"], json!(SERIAL));
    assert_eq!(
        device.value.to_map()["weave_device_id"]
            .as_str()
            .map(str::len),
        Some(16)
    );
    assert_eq!(
        s.bucket(SERIAL, &format!("schedule.{SERIAL}"))
            .unwrap()
            .value
            .to_map()["ver"],
        json!(2)
    );
    let meta = s
        .app()
        .state()
        .read_device(SERIAL, |d| d.meta.clone())
        .flatten()
        .unwrap();
    assert_eq!(
        meta.api_key,
        Some(sim.password()),
        "the Basic password is kept as the api_key"
    );

    // Hold a subscribe; a server-side change arrives as a push.
    let mut held = sim.open_subscribe().unwrap();
    expect_event(&events, "held", |e| *e == Event::Held);
    s.server_change(
        SERIAL,
        &shared(),
        json!({"target_temperature": 22.5, "target_change_pending": true}),
    );
    let chunk = held.next_chunk().unwrap().expect("a push");
    let applied = sim.apply_chunk(&chunk).unwrap();
    assert_eq!(applied, vec![shared()]);
    expect_event(
        &events,
        "applied push",
        |e| matches!(e, Event::Pushed { key, .. } if *key == shared()),
    );
    expect_event(&events, "acknowledgement", |e| {
        matches!(e, Event::Acknowledged { .. })
    });
    assert_eq!(
        sim.bucket(&shared()).unwrap()["target_temperature"],
        json!(22.5)
    );
    let server = s.bucket(SERIAL, &shared()).unwrap();
    assert_eq!(
        server.value.to_map()["target_change_pending"],
        json!(false),
        "the acknowledgement reached the server"
    );
    assert_eq!(server.value.to_map()["target_temperature"], json!(22.5));
    assert!(
        held.next_chunk().unwrap().is_none(),
        "the response ends after 3 s of quiet"
    );

    // Resubscribe at once: in sync, so it is held again.
    let _again = sim.open_subscribe().unwrap();
    s.wait_held(SERIAL, 1);
    assert!(events.try_iter().all(|e| !matches!(
        e,
        Event::RejectedOrder { .. } | Event::PutEcho { .. } | Event::Problem(_)
    )));
}

#[test]
fn the_run_loop_resubscribes_and_applies_pushes() {
    let s = TestServer::start_with(|c| c.suspend_time_max_secs = 11);
    let (mut sim, events) = thermostat(&s.origin(), SERIAL);
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let runner = thread::spawn(move || sim.run(&|| !flag.load(Ordering::SeqCst), None));
    expect_event(&events, "held", |e| *e == Event::Held);
    // The 1 s hold ends; the thermostat resubscribes at once.
    expect_event(&events, "end", |e| {
        matches!(e, Event::SubscribeEnded { chunks: 0 })
    });
    expect_event(&events, "held again", |e| *e == Event::Held);
    s.wait_held(SERIAL, 1);
    s.server_change(SERIAL, &shared(), json!({"target_temperature": 19.5}));
    expect_event(
        &events,
        "push",
        |e| matches!(e, Event::Pushed { fields, .. } if fields.contains(&"target_temperature".to_string())),
    );
    stop.store(true, Ordering::SeqCst);
    runner.join().unwrap();
}

#[test]
fn a_cas_conflict_is_retried_with_the_server_revision() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| c.clock = time.clock());
    let (mut sim, events) = thermostat(&s.origin(), SERIAL);
    sim.boot().unwrap();
    time.advance(Duration::from_secs(1));
    // The server changes shared once behind the thermostat's back (it is not subscribed), so
    // the server is exactly one revision ahead: the receipt's revision alone cannot tell a
    // conflict from a success, its timestamp can.
    s.server_change(
        SERIAL,
        &shared(),
        json!({"target_temperature_type": "heat"}),
    );
    time.advance(Duration::from_secs(1));
    let server_rev = s.bucket(SERIAL, &shared()).unwrap().revision;
    sim.turn_dial(23.0);
    sim.put().unwrap();
    let conflict = expect_event(&events, "conflict", |e| {
        matches!(e, Event::CasConflict { .. })
    });
    assert_eq!(
        conflict,
        Event::CasConflict {
            key: shared(),
            server_revision: server_rev
        }
    );
    expect_event(&events, "upload after retry", |e| {
        matches!(e, Event::Uploaded { full: false, .. })
    });
    let after = s.bucket(SERIAL, &shared()).unwrap();
    assert_eq!(after.value.to_map()["target_temperature"], json!(23.0));
    assert_eq!(after.revision, server_rev + 1);
    assert!(!sim.has_pending_changes());
}

#[test]
fn the_simulator_rejects_objects_with_keys_out_of_order() {
    let s = TestServer::start();
    let (mut sim, events) = thermostat(&s.origin(), SERIAL);
    sim.register().unwrap();
    let bad = format!(
        r#"{{"objects":[{{"object_key":"{}","object_revision":9,"object_timestamp":99999999999999,"value":{{"target_temperature":30.0}}}}]}}"#,
        shared()
    );
    assert!(sim.apply_chunk(bad.as_bytes()).unwrap().is_empty());
    expect_event(&events, "rejection", |e| {
        matches!(e, Event::RejectedOrder { .. })
    });
    assert_ne!(
        sim.bucket(&shared()).unwrap()["target_temperature"],
        json!(30.0)
    );
    // Newer timestamps are applied, older ones ignored, equal ones decided by revision.
    let good = |rev: i64, ts: i64, t: f64| {
        format!(
            r#"{{"objects":[{{"object_revision":{rev},"object_timestamp":{ts},"object_key":"{}","value":{{"target_temperature":{t:?}}}}}]}}"#,
            shared()
        )
    };
    let far = hearth::util::clock::now_ms() + 60_000;
    sim.apply_chunk(good(5, far, 18.0).as_bytes()).unwrap();
    assert_eq!(
        sim.bucket(&shared()).unwrap()["target_temperature"],
        json!(18.0)
    );
    sim.apply_chunk(good(6, far - 1, 30.0).as_bytes()).unwrap();
    expect_event(&events, "ignored", |e| {
        matches!(
            e,
            Event::Ignored {
                why: "older than ours",
                ..
            }
        )
    });
    sim.apply_chunk(good(5, far, 31.0).as_bytes()).unwrap();
    expect_event(&events, "ignored", |e| {
        matches!(
            e,
            Event::Ignored {
                why: "same timestamp",
                ..
            }
        )
    });
    assert_eq!(
        sim.bucket(&shared()).unwrap()["target_temperature"],
        json!(18.0)
    );
    sim.apply_chunk(good(6, far, 17.5).as_bytes()).unwrap();
    assert_eq!(
        sim.bucket(&shared()).unwrap()["target_temperature"],
        json!(17.5),
        "equal timestamp, higher revision"
    );
}

#[test]
fn every_object_the_server_sends_passes_the_strict_parser() {
    let s = TestServer::start();
    s.set_owner(SERIAL, "alice");
    let (mut sim, events) = thermostat(&s.origin(), SERIAL);
    sim.boot().unwrap();
    s.server_change(
        SERIAL,
        &shared(),
        json!({"target_temperature": 20.0, "target_change_pending": true}),
    );
    sim.subscribe_once().unwrap();
    let seen: Vec<Event> = events.try_iter().collect();
    assert!(
        seen.iter()
            .any(|e| matches!(e, Event::Pushed { key, .. } if key == "user.alice")),
        "{seen:?}"
    );
    assert!(
        !seen.iter().any(|e| matches!(
            e,
            Event::RejectedOrder { .. } | Event::PutEcho { .. } | Event::Problem(_)
        )),
        "{seen:?}"
    );
}

#[test]
fn hearth_dev_simulate_runs_a_fleet() {
    let s = TestServer::start();
    let out = Command::new(env!("CARGO_BIN_EXE_hearth-dev"))
        .args([
            "simulate",
            "--server",
            &s.origin(),
            "--devices",
            "3",
            "--serial-prefix",
            "02AA01AC77",
            "--seconds",
            "2",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for i in 1..=3 {
        let serial = format!("02AA01AC7700000{i}");
        assert!(text.contains(&format!("{serial} registered")), "{text}");
        assert!(
            text.contains(&format!("{serial} uploaded full state")),
            "{text}"
        );
        assert!(s.app().state().device_exists(&serial));
    }
    assert!(text.lines().all(|l| l.split(' ').count() > 1));
    let serials = s.app().state().serials();
    assert_eq!(serials.len(), 3, "{serials:?}");
}
