//! Energy history (`GET /api/energy`): runtime accrued from the thermostat's HVAC reports on
//! a driven clock, split at local midnight, on disk within the minute, carried over a restart
//! without inventing the downtime; CSV; every bad query refused with nothing changed.

use crate::common;

use std::time::Duration;

use common::energy::journal_row;
use common::*;
use hearth::config::Config;
use hearth::util::clock::ManualClock;
use serde_json::{Value, json};

const OTHER: &str = "02AA01AC0000SIM2";

/// 2026-03-10 23:30 UTC.
const LATE_EVENING_MS: i64 = 1_773_185_400_000;

fn energy(s: &TestServer, query: &str) -> (u16, Value) {
    let r = get(s.control(), &format!("/api/energy?{query}"));
    (r.status, r.json())
}

/// The days of `SERIAL` as (date, heat_s).
fn heat_days(s: &TestServer) -> Vec<(String, i64)> {
    let (status, body) = energy(s, &format!("serial={SERIAL}"));
    assert_eq!(status, 200, "{body}");
    body["days"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["date"].as_str().unwrap().to_string(),
                d["heat_s"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn server_at(dir: TempDir, time: &ManualClock) -> TestServer {
    let mut config = Config::local(dir.path());
    config.api_origin = hearth::config::ApiOrigin::parse("http://127.0.0.1").ok();
    config.clock = time.clock();
    // An hour between periodic samples: the accrual here comes from changes and the flushes.
    config.history_interval = Duration::from_secs(3600);
    TestServer {
        server: Some(start_server(config)),
        dir,
    }
}

/// Turns the heater on or off and waits until the recorder has seen it (a new sample in the
/// history's file: the recorder observes for the energy history first).
fn heater(s: &TestServer, sim: &mut hearth::simulator::Thermostat, on: bool) {
    let file = s.dir.path().join("history").join(format!("{SERIAL}.jsonl"));
    let lines = || std::fs::read_to_string(&file).unwrap_or_default();
    let before = lines().lines().count();
    sim.report("shared", "hvac_heater_state", json!(on));
    sim.put().unwrap();
    let want = format!("\"heating\":{on}");
    wait_until("the heater's sample", || {
        lines().lines().skip(before).any(|l| l.contains(&want))
    });
}

#[test]
fn runtime_is_split_at_midnight_kept_on_disk_and_not_invented_over_a_restart() {
    let time = ManualClock::at(LATE_EVENING_MS);
    let s = server_at(TempDir::new("energy"), &time);
    let (mut sim, _events, _held) = booted_and_held(&s, SERIAL);
    heater(&s, &mut sim, true);
    assert_eq!(heat_days(&s), vec![("2026-03-10".to_string(), 0)]);

    // An hour of heating from 23:30: half on each day.
    time.advance(Duration::from_secs(3600));
    let split = vec![
        ("2026-03-10".to_string(), 1800),
        ("2026-03-11".to_string(), 1800),
    ];
    wait_until("the run split at midnight", || heat_days(&s) == split);
    let (_, body) = energy(&s, &format!("serial={SERIAL}"));
    assert_eq!(body["serial"], json!(SERIAL));
    // The simulated thermostat's structure has no time zone: UTC, said to be a fallback.
    assert_eq!(body["time_zone"], json!("UTC"));
    assert_eq!(body["time_zone_source"], json!("fallback"));
    assert_eq!(body["structure_time_zone"], Value::Null);
    let keys: Vec<&str> = body["days"][0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "date",
            "heat_s",
            "cool_s",
            "fan_s",
            "aux_s",
            "away_s",
            "indoor_avg_c",
            "indoor_min_c",
            "indoor_max_c",
            "outdoor_avg_c",
            "target_changes"
        ]
    );
    assert_eq!(body["days"][0]["outdoor_avg_c"], Value::Null);

    // On disk while hearth runs (a kill -9 now loses nothing): today's row in the journal,
    // the finished day moved from there to the days file after the minute's write. (The live
    // row can be served a moment before the minute's write ends: waited for.)
    let energy_dir = s.dir.path().join("energy");
    let read = |name: &str| std::fs::read_to_string(energy_dir.join(name)).unwrap_or_default();
    let today_row = |s: &TestServer| journal_row(s.dir.path(), SERIAL, 20523).unwrap_or_default();
    wait_until("both days on disk", || {
        read(&format!("{SERIAL}.days")).starts_with("[20522,1800,")
            && today_row(&s).starts_with("[20523,1800,")
    });

    // Periods and CSV.
    let (_, body) = energy(
        &s,
        &format!("serial={SERIAL}&from=2026-03-11&to=2026-03-11"),
    );
    assert_eq!(body["days"].as_array().unwrap().len(), 1);
    let (_, body) = energy(&s, &format!("serial={SERIAL}&to=2026-03-09"));
    assert_eq!(body["days"], json!([]));
    let csv = get(
        s.control(),
        &format!("/api/energy?serial={SERIAL}&format=csv"),
    );
    assert_eq!(csv.status, 200);
    assert_eq!(csv.header("content-type"), Some("text/csv; charset=utf-8"));
    let text = csv.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "date,heat_s,cool_s,fan_s,aux_s,away_s,indoor_avg_c,indoor_min_c,indoor_max_c,\
         outdoor_avg_c,target_changes"
    );
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[1].starts_with("2026-03-10,1800,0,0,0,0,"), "{text}");

    // Down for three hours with the heater last seen on: none of it is counted.
    drop(sim);
    drop(_held);
    let dir = s.stop();
    time.advance(Duration::from_secs(3 * 3600));
    let s = server_at(dir, &time);
    assert_eq!(heat_days(&s), split);

    // Back (its stored state still says heating), off and on again: counted from the first
    // report after the start.
    let (mut sim, _events, _held) = booted_and_held(&s, SERIAL);
    heater(&s, &mut sim, false);
    heater(&s, &mut sim, true);
    time.advance(Duration::from_secs(600));
    wait_until("ten more minutes of heating", || {
        heat_days(&s).last() == Some(&("2026-03-11".to_string(), 2400))
    });
    assert_eq!(heat_days(&s)[0], split[0]);
}

/// The wall clock stepped back (an NTP correction) by 40 minutes, across midnight, while
/// hearth ran and again over a restart: the later day already stored is neither dropped nor
/// overwritten, the earlier one is not written twice, and the running totals never go down.
#[test]
fn a_clock_stepped_back_drops_no_stored_later_day() {
    let time = ManualClock::at(LATE_EVENING_MS);
    let s = server_at(TempDir::new("energy-back"), &time);
    let (mut sim, _events, _held) = booted_and_held(&s, SERIAL);
    heater(&s, &mut sim, true);
    time.advance(Duration::from_secs(3600));
    let split = vec![
        ("2026-03-10".to_string(), 1800),
        ("2026-03-11".to_string(), 1800),
    ];
    wait_until("the run split at midnight", || heat_days(&s) == split);
    let energy_dir = s.dir.path().join("energy");
    let read = |name: &str| std::fs::read_to_string(energy_dir.join(name)).unwrap_or_default();
    let today_row = |s: &TestServer| journal_row(s.dir.path(), SERIAL, 20523).unwrap_or_default();
    wait_until("both days on disk", || {
        read(&format!("{SERIAL}.days")).starts_with("[20522,1800,")
            && today_row(&s).starts_with("[20523,1800,")
    });
    let heat_total = |s: &TestServer| s.app().energy().totals(SERIAL).map(|t| t.heat_s);
    // The totals are what is stored: they follow the write just seen.
    wait_until("the totals of both days", || heat_total(&s) == Some(3600));

    // Stepped back to 23:50 the day before: the live day stays 2026-03-11.
    time.set_ms(LATE_EVENING_MS + 20 * 60_000);
    heater(&s, &mut sim, false);
    heater(&s, &mut sim, true);
    assert_eq!(heat_days(&s), split);
    assert_eq!(heat_total(&s), Some(3600));

    // And over a restart at that time: both stored days are kept; the heating from now on is
    // counted in the later day (the live day never goes before a stored one).
    drop(sim);
    drop(_held);
    let dir = s.stop();
    let s = server_at(dir, &time);
    assert_eq!(heat_days(&s), split);
    assert_eq!(heat_total(&s), Some(3600));
    let (mut sim, _events, _held) = booted_and_held(&s, SERIAL);
    heater(&s, &mut sim, false);
    heater(&s, &mut sim, true);
    time.advance(Duration::from_secs(1200));
    let later = vec![
        ("2026-03-10".to_string(), 1800),
        ("2026-03-11".to_string(), 3000),
    ];
    wait_until("twenty more minutes in the later day", || {
        heat_days(&s) == later
    });
    wait_until("the later day on disk", || {
        today_row(&s).starts_with("[20523,3000,")
    });
    // The totals count what is stored (what a restart reads back), so they follow the write.
    wait_until("the totals with the later day's twenty minutes", || {
        heat_total(&s) == Some(4800)
    });
    // The earlier day is on disk once.
    let days = read(&format!("{SERIAL}.days"));
    assert_eq!(days.lines().count(), 1, "{days}");
    assert!(days.starts_with("[20522,1800,"), "{days}");
}

#[test]
fn csv_is_given_for_accept_and_a_target_change_is_counted() {
    let time = ManualClock::at(LATE_EVENING_MS);
    let s = server_at(TempDir::new("energy-csv"), &time);
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    // Counting starts at the recorder's first look at the thermostat (its targets then are
    // where it starts): a command it first sees already applied is not a change. Under load
    // the recorder may reach the boot's events only after the command, so wait for that look.
    wait_until("the boot's row", || !heat_days(&s).is_empty());
    let r = command(s.control(), SERIAL, "set_temperature", json!(22.0));
    assert_eq!(r.status, 200, "{}", r.text());
    wait_until("the change counted", || {
        energy(&s, &format!("serial={SERIAL}")).1["days"][0]["target_changes"] == json!(1)
    });
    let r = hearth::http::client::request(
        &url(s.control(), &format!("/api/energy?serial={SERIAL}")),
        "GET",
        &[("Accept", "text/csv")],
        b"",
        Duration::from_secs(10),
    )
    .unwrap();
    assert_eq!(r.status, 200);
    assert!(r.text().starts_with("date,heat_s,"), "{}", r.text());
}

/// The totals of a period, of as many days before it, and of the home (every thermostat the
/// control port lists), each the sum of the rows the API gives for those days.
#[test]
fn a_period_has_its_totals_the_period_befores_and_the_homes() {
    use common::energy::{SeedDay, seed_days};
    let dir = TempDir::new("energy-totals");
    // SERIAL heated k hours on day k (1 to 10 days ago) and cooled 10 minutes; OTHER heated
    // an hour on each of days 1 to 4.
    let days = |n: i64, heat: &dyn Fn(i64) -> i64, cool_s: i64| -> Vec<SeedDay> {
        (1..=n)
            .rev()
            .map(|k| SeedDay {
                days_ago: k,
                heat_s: heat(k),
                cool_s,
                ..SeedDay::default()
            })
            .collect()
    };
    seed_days(dir.path(), SERIAL, &days(10, &|k| 3600 * k, 600));
    seed_days(dir.path(), OTHER, &days(4, &|_| 3600, 0));
    let time = ManualClock::at(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64,
    );
    let s = server_at(dir, &time);
    for serial in [SERIAL, OTHER] {
        s.server_change(serial, &format!("shared.{serial}"), json!({"name": serial}));
    }
    let today = common::energy::utc_today();
    let date = |k: i64| hearth::energy::day::date_text(today - k);
    // The 3 days ending yesterday (days 1 to 3) against days 4 to 6.
    let (status, body) = energy(
        &s,
        &format!("serial={SERIAL}&from={}&to={}", date(3), date(1)),
    );
    assert_eq!(status, 200, "{body}");
    let rows: i64 = body["days"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["heat_s"].as_i64().unwrap())
        .sum();
    assert_eq!(rows, 3600 * (1 + 2 + 3));
    assert_eq!(
        body["total"],
        json!({"from": date(3), "to": date(1), "days": 3, "heat_s": rows, "cool_s": 1800,
               "fan_s": 0, "aux_s": 0, "away_s": 0, "outdoor_avg_c": null})
    );
    assert_eq!(body["before"]["from"], json!(date(6)));
    assert_eq!(body["before"]["to"], json!(date(4)));
    assert_eq!(body["before"]["heat_s"], json!(3600 * (4 + 5 + 6)));
    assert_eq!(body["before"]["days"], json!(3));
    assert_eq!(body["home"]["thermostats"], json!(2));
    assert_eq!(body["home"]["total"]["heat_s"], json!(3600 * (6 + 3)));
    assert_eq!(body["home"]["total"]["cool_s"], json!(1800));
    assert_eq!(body["home"]["before"]["heat_s"], json!(3600 * (15 + 1)));
    // Before the first recorded day: a period before with no days.
    let (_, early) = energy(
        &s,
        &format!("serial={OTHER}&from={}&to={}", date(4), date(1)),
    );
    assert_eq!(early["total"]["heat_s"], json!(4 * 3600));
    assert_eq!(early["before"]["days"], json!(0));
    assert_eq!(early["before"]["heat_s"], json!(0));
    // An open period has its total and no period before.
    let (_, open) = energy(&s, &format!("serial={SERIAL}"));
    assert_eq!(open["total"]["heat_s"], json!(3600 * 55));
    assert_eq!(open["total"]["from"], Value::Null);
    assert_eq!(open["before"], Value::Null);
    assert_eq!(open["home"]["before"], Value::Null);
}

#[test]
fn bad_energy_queries_are_refused_and_change_nothing() {
    let time = ManualClock::at(LATE_EVENING_MS);
    let s = server_at(TempDir::new("energy-bad"), &time);
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    wait_until("the boot's row", || !heat_days(&s).is_empty());
    let before = store_bytes(s.dir.path());
    let date = |n: &str| format!("{n} must be a date as YYYY-MM-DD");
    for (query, status, error) in [
        (
            format!("serial={SERIAL}&from=2026-02-30"),
            400,
            date("from"),
        ),
        (format!("serial={SERIAL}&to=yesterday"), 400, date("to")),
        (format!("serial={SERIAL}&from=2026-3-01"), 400, date("from")),
        (
            format!("serial={SERIAL}&from=2026-03-02&to=2026-03-01"),
            400,
            "from must not be after to".to_string(),
        ),
        (
            format!("serial={SERIAL}&format=xml"),
            400,
            "format must be json or csv".to_string(),
        ),
        (
            "from=2026-03-01".to_string(),
            400,
            "Serial parameter required".to_string(),
        ),
        (
            "serial=02AA01AC0000NONE".to_string(),
            404,
            "Device not found".to_string(),
        ),
        (
            format!("serial={SERIAL}&from=%FF"),
            400,
            "Invalid query string".to_string(),
        ),
    ] {
        let (got, body) = energy(&s, &query);
        assert_eq!((got, body), (status, json!({ "error": error })), "{query}");
    }
    let r = call(
        s.control(),
        "POST",
        &format!("/api/energy?serial={SERIAL}"),
        "",
    );
    assert_eq!(r.status, 405);
    assert_eq!(store_bytes(s.dir.path()), before);
}

#[test]
fn the_hosted_route_gives_the_same_rows_under_its_access_rules() {
    use common::hosted::{api, new_key};
    let time = ManualClock::at(LATE_EVENING_MS);
    let s = server_at(TempDir::new("energy-hosted"), &time);
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    let (_sim2, _events2, _held2) = booted_and_held(&s, OTHER);
    s.set_owner(SERIAL, "alice");
    s.set_owner(OTHER, "alice");
    wait_until("the boot's row", || !heat_days(&s).is_empty());
    let path = |serial: &str, query: &str| format!("/thermostat/{serial}/energy{query}");
    let denied = (403, json!({"error": "Access denied to this device"}));
    let error = |r: hearth::http::client::ClientResponse| (r.status, r.json());

    // A read key of the owner: the control port's rows and time zone, under the thermostat as
    // every `/api/v1` read names it.
    let read = new_key(&s, "alice", "read", &[]);
    let r = api(&s, "GET", &path(SERIAL, ""), &read, Value::Null);
    assert_eq!(r.status, 200, "{}", r.text());
    let control = energy(&s, &format!("serial={SERIAL}")).1;
    let status = api(
        &s,
        "GET",
        &format!("/thermostat/{SERIAL}/status"),
        &read,
        Value::Null,
    );
    let body = r.json();
    let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    let zone = ["time_zone", "time_zone_source", "structure_time_zone"];
    assert_eq!(keys, ["device", zone[0], zone[1], zone[2], "days"]);
    assert_eq!(body["device"], status.json()["device"]);
    assert_eq!(body["device"]["serial"], json!(SERIAL));
    for field in zone.into_iter().chain(["days"]) {
        assert_eq!(body[field], control[field], "{field}");
    }
    let r = api(&s, "GET", &path(SERIAL, "?format=csv"), &read, Value::Null);
    assert_eq!(r.header("content-type"), Some("text/csv; charset=utf-8"));
    assert!(r.text().starts_with("date,heat_s,"), "{}", r.text());

    // Bad dates: 400 in this API's shape.
    let r = api(
        &s,
        "GET",
        &path(SERIAL, "?from=2026-13-01"),
        &read,
        Value::Null,
    );
    assert_eq!(
        error(r),
        (400, json!({"error": "from must be a date as YYYY-MM-DD"}))
    );
    let r = api(&s, "GET", &path(SERIAL, "?format=xml"), &read, Value::Null);
    assert_eq!(
        error(r),
        (400, json!({"error": "format must be json or csv"}))
    );

    // A write-only key, a key for another serial, a stranger, an unknown thermostat.
    let write_only = new_key(&s, "alice", "write", &[]);
    assert_eq!(
        error(api(&s, "GET", &path(SERIAL, ""), &write_only, Value::Null)),
        denied
    );
    let limited = new_key(&s, "alice", "read", &[OTHER]);
    assert_eq!(
        error(api(&s, "GET", &path(SERIAL, ""), &limited, Value::Null)),
        denied
    );
    let stranger = new_key(&s, "mallory", "read", &[]);
    let not_found = (404, json!({"error": "Device not found"}));
    let r = api(&s, "GET", &path(SERIAL, ""), &stranger, Value::Null);
    assert_eq!(error(r), not_found);
    let r = api(&s, "GET", &path("02AA01AC0000NONE", ""), &read, Value::Null);
    assert_eq!(error(r), not_found);
    let r = api(&s, "POST", &path(SERIAL, ""), &read, Value::Null);
    assert_eq!(error(r), (405, json!({"error": "Method not allowed"})));
}

/// A server whose tz database is `zoneinfo` (a directory of the test's own: never the
/// system's, so the tests read the same zones on every machine).
fn server_with_zones(dir: TempDir, time: &ManualClock, zoneinfo: &std::path::Path) -> TestServer {
    let mut config = Config::local(dir.path());
    config.api_origin = hearth::config::ApiOrigin::parse("http://127.0.0.1").ok();
    config.clock = time.clock();
    config.history_interval = Duration::from_secs(3600);
    config.zoneinfo = zoneinfo.to_path_buf();
    TestServer {
        server: Some(start_server(config)),
        dir,
    }
}

/// The zone fields of the energy answer.
fn zone_of(s: &TestServer) -> Value {
    let (_, body) = energy(s, &format!("serial={SERIAL}"));
    json!([
        body["time_zone"],
        body["time_zone_source"],
        body["structure_time_zone"]
    ])
}

/// The structure's zone set to `zone` half an hour before its local midnight (`start_ms`), in a
/// server whose tz database is `zoneinfo`; then an hour of heating from a minute later: 29
/// minutes on the day `dates[0]`, 31 on `dates[1]`. Returns the server's zone fields.
fn run_across_local_midnight(
    zoneinfo: &std::path::Path,
    zone: &str,
    start_ms: i64,
    dates: [&str; 2],
) -> Value {
    let time = ManualClock::at(start_ms);
    let s = server_with_zones(TempDir::new("energy-zone"), &time, zoneinfo);
    let (mut sim, _events, _held) = booted_and_held(&s, SERIAL);
    wait_until("the boot's row", || !heat_days(&s).is_empty());
    // The simulated thermostat reports no zone: UTC, and said to be a fallback.
    assert_eq!(zone_of(&s), json!(["UTC", "fallback", null]));
    s.server_change(
        SERIAL,
        &format!("device.{SERIAL}"),
        json!({"time_zone": zone}),
    );
    // Taken up at the next minute's write.
    time.advance(Duration::from_secs(60));
    wait_until("the zone taken up", || zone_of(&s)[0] == json!(zone));
    heater(&s, &mut sim, true);
    time.advance(Duration::from_secs(3600));
    let split = vec![(dates[0].to_string(), 1740), (dates[1].to_string(), 1860)];
    wait_until("the run split at the local midnight", || {
        heat_days(&s) == split
    });
    zone_of(&s)
}

/// With no tz database at all (hearth's images, OpenWrt): the structure's zone from hearth's
/// own table, daylight saving time included. 2026-07-10 21:30 UTC is 23:30 in Berlin (CEST).
#[test]
fn without_a_tz_database_days_are_the_structures_local_days() {
    let empty = TempDir::new("zoneinfo-empty");
    let zone = run_across_local_midnight(
        empty.path(),
        "Europe/Berlin",
        1_783_719_000_000,
        ["2026-07-10", "2026-07-11"],
    );
    assert_eq!(zone, json!(["Europe/Berlin", "built-in", "Europe/Berlin"]));
}

/// A zone file whose daylight saving time lies only in its POSIX footer (zic's "slim" output,
/// tests/it/zones/slim.zi: one transition in 1970, then the rule UTC+1, UTC+2 in summer) is
/// read footer and all: in January it is UTC+1, so 2026-01-15 22:30 UTC is 23:30 there. (A
/// reader that kept the last transition's offset would put midnight at 22:00 UTC.)
#[test]
fn a_rule_only_in_the_zone_files_footer_splits_days_at_the_local_midnight() {
    let zoneinfo = TempDir::new("zoneinfo-slim");
    std::fs::create_dir(zoneinfo.path().join("Hearth")).unwrap();
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/zones/Hearth/Slim");
    std::fs::copy(fixture, zoneinfo.path().join("Hearth/Slim")).unwrap();
    let zone = run_across_local_midnight(
        zoneinfo.path(),
        "Hearth/Slim",
        1_768_516_200_000,
        ["2026-01-15", "2026-01-16"],
    );
    assert_eq!(zone, json!(["Hearth/Slim", "system", "Hearth/Slim"]));
}

/// A zone neither the tz database nor the table knows: UTC days, and the answer says so and
/// names the zone it could not find.
#[test]
fn an_unknown_zone_is_said_not_quietly_utc() {
    let empty = TempDir::new("zoneinfo-empty");
    let time = ManualClock::at(LATE_EVENING_MS);
    let s = server_with_zones(TempDir::new("energy-unknown-zone"), &time, empty.path());
    let (_sim, _events, _held) = booted_and_held(&s, SERIAL);
    wait_until("the boot's row", || !heat_days(&s).is_empty());
    s.server_change(
        SERIAL,
        &format!("device.{SERIAL}"),
        json!({"time_zone": "Mars/Olympus_Mons"}),
    );
    time.advance(Duration::from_secs(60));
    wait_until("the zone looked for", || {
        zone_of(&s) == json!(["UTC", "fallback", "Mars/Olympus_Mons"])
    });
}

#[test]
fn energy_keep_days_prunes_older_days_when_a_day_ends() {
    let time = ManualClock::at(LATE_EVENING_MS);
    let dir = TempDir::new("energy-keep");
    let mut config = Config::local(dir.path());
    config.api_origin = hearth::config::ApiOrigin::parse("http://127.0.0.1").ok();
    config.clock = time.clock();
    config.history_interval = Duration::from_secs(3600);
    config.energy_keep_days = 2;
    let s = TestServer {
        server: Some(start_server(config)),
        dir,
    };
    let (mut sim, _events, _held) = booted_and_held(&s, SERIAL);
    heater(&s, &mut sim, true);
    time.advance(Duration::from_secs(3600));
    let dates = |s: &TestServer| -> Vec<String> { heat_days(s).into_iter().map(|d| d.0).collect() };
    wait_until("two days", || dates(&s) == ["2026-03-10", "2026-03-11"]);
    let first_heat = heat_days(&s)[0].1;
    assert!(first_heat > 0);
    // A day later: 2026-03-12 and the day before are kept, 2026-03-10 is pruned from disk,
    // its runtime kept in the pruned days' sum, the file's first line.
    time.advance(Duration::from_secs(24 * 3600));
    wait_until("the oldest day pruned", || {
        dates(&s) == ["2026-03-11", "2026-03-12"]
    });
    let file = s.dir.path().join("energy").join(format!("{SERIAL}.days"));
    let kept = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = kept.lines().collect();
    assert_eq!(
        serde_json::from_str::<Value>(lines[0]).unwrap(),
        json!({"pruned_through": 20522, "heat_s": first_heat, "cool_s": 0, "fan_s": 0, "aux_s": 0}),
        "{kept}"
    );
    assert!(lines[1].starts_with("[20523,"), "{kept}");
    // The running totals still hold the pruned day (they follow the write just seen).
    let all_heat: i64 = first_heat + heat_days(&s).iter().map(|d| d.1).sum::<i64>();
    wait_until("the totals with the pruned day", || {
        s.app().energy().totals(SERIAL).map(|t| t.heat_s) == Some(all_heat)
    });
}

/// An upgrade from a hearth that kept each thermostat's live row in `SERIAL.today` (written
/// here by hand, in that layout): every day is kept and counted, the file is gone once the
/// first write has put its row in the journal (a private file), and a restart after that still
/// has every day.
#[test]
fn an_upgrade_from_the_older_layout_keeps_every_day() {
    let time = ManualClock::at(LATE_EVENING_MS);
    let dir = TempDir::new("energy-upgrade");
    let energy_dir = dir.path().join("energy");
    std::fs::create_dir_all(&energy_dir).unwrap();
    std::fs::write(
        energy_dir.join(format!("{SERIAL}.days")),
        "[20520,600,0,0,0,0,null,0,null,null,0]\n[20521,1200,0,0,0,0,20.5,96,19.0,21.5,2]\n",
    )
    .unwrap();
    let old_today = energy_dir.join(format!("{SERIAL}.today"));
    std::fs::write(&old_today, "[20522,300,0,60,0,0,null,0,null,null,1]").unwrap();
    let s = server_at(dir, &time);
    let (mut sim, _events, _held) = booted_and_held(&s, SERIAL);
    let day = |date: &str, heat_s: i64| (date.to_string(), heat_s);
    wait_until("the boot's row", || !heat_days(&s).is_empty());
    assert_eq!(
        heat_days(&s),
        [
            day("2026-03-08", 600),
            day("2026-03-09", 1200),
            day("2026-03-10", 300)
        ]
    );
    let totals = |s: &TestServer| {
        let t = s.app().energy().totals(SERIAL).unwrap();
        (t.heat_s, t.fan_s)
    };
    assert_eq!(totals(&s), (2100, 60));

    // An hour of heating across midnight. Once written, the journal has both days and the
    // older file is gone.
    heater(&s, &mut sim, true);
    time.advance(Duration::from_secs(3600));
    let all = [
        day("2026-03-08", 600),
        day("2026-03-09", 1200),
        day("2026-03-10", 2100),
        day("2026-03-11", 1800),
    ];
    wait_until("the run split at midnight", || heat_days(&s) == all);
    wait_until("the older file gone", || !old_today.exists());
    let row = journal_row(s.dir.path(), SERIAL, 20522).unwrap();
    assert!(row.starts_with("[20522,2100,0,60,"), "{row}");
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode();
    assert_eq!(mode(&energy_dir.join("journal")) & 0o777, 0o600);
    assert_eq!(mode(&energy_dir) & 0o777, 0o700);

    // A restart: every day.
    drop(sim);
    drop(_held);
    let dir = s.stop();
    let s = server_at(dir, &time);
    assert_eq!(heat_days(&s), all);
    assert_eq!(totals(&s), (5700, 60));
}

/// A kill -9 never takes the running totals down (the real binary): what `/metrics` counted
/// before it (a run that stops is written at once) is there after the restart.
#[test]
fn energy_totals_never_go_down_across_a_kill() {
    use hearth::process::ServerProcess;
    share_process();
    let dir = TempDir::new("energy-kill");
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_hearth"));
    let start = || ServerProcess::start(exe, dir.path()).expect("the server starts");
    let heat_total = |p: &ServerProcess| {
        let text = get(p.control, "/metrics").text();
        crate::metrics::Scrape::parse(&text)
            .value(
                "hearth_thermostat_runtime_seconds_total",
                &[("serial", SERIAL), ("mode", "heat")],
            )
            .unwrap_or(-1.0)
    };
    let p = start();
    let (mut sim, _events) = thermostat(&format!("http://{}", p.device), SERIAL);
    sim.boot().unwrap();
    sim.report("shared", "hvac_heater_state", json!(true));
    sim.put().unwrap();
    // Each turn of the dial is an observation, which counts the heating so far.
    let live_heat = |p: &ServerProcess| {
        let body = get(p.control, &format!("/api/energy?serial={SERIAL}")).json();
        body["days"]
            .as_array()
            .and_then(|d| d.last()?["heat_s"].as_i64())
    };
    let mut target = 20.0;
    wait_until("two seconds of heating counted", || {
        target = if target == 20.0 { 20.5 } else { 20.0 };
        sim.turn_dial(target);
        sim.put().unwrap();
        live_heat(&p).is_some_and(|h| h >= 2)
    });
    sim.report("shared", "hvac_heater_state", json!(false));
    sim.put().unwrap();
    wait_until("the run in the counter", || heat_total(&p) >= 2.0);
    let before = heat_total(&p);
    p.kill();

    let p = start();
    let after = heat_total(&p);
    assert!(after >= before, "{after} after the kill, {before} before");
    assert!(live_heat(&p).is_some_and(|h| h as f64 >= before));
}
