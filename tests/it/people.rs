//! Home and Away by who is home (docs/presence.md): two people, the wait, a change by hand that
//! holds, a vacation, OwnTracks and Home Assistant, and the presence token's bounds. The server
//! runs on a test clock; each step waits for the presence rule's pass that looked at it
//! (`People::mark`, `wait_pass`), so "nothing happened" is shown after the rule has looked.

use crate::common;

use std::time::Duration;

use common::hosted::{api, new_key};
use common::mqtt::{Broker, Watcher};
use common::*;
use hearth::config::MqttConfig;
use hearth::http::client::{self, ClientResponse};
use hearth::util::clock::ManualClock;
use serde_json::{Value, json};

const OTHER: &str = "02AA01AC0000SIM2";
const PREFIX: &str = "nle";
const MINUTE: Duration = Duration::from_secs(60);

/// `POST /api/presence/{person}` with these headers and body.
fn presence(s: &TestServer, target: &str, headers: &[(&str, &str)], body: &str) -> ClientResponse {
    client::request(
        &url(s.control(), &format!("/api/presence/{target}")),
        "POST",
        headers,
        body.as_bytes(),
        TIMEOUT,
    )
    .unwrap()
}

/// A person's report with their token as a Bearer header.
fn report(s: &TestServer, name: &str, token: &str, home: bool) -> ClientResponse {
    let auth = format!("Bearer {token}");
    presence(
        s,
        name,
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        &json!({ "home": home }).to_string(),
    )
}

/// Adds a person on the page's route; their token.
fn add(s: &TestServer, name: &str) -> String {
    let r = call(
        s.control(),
        "POST",
        "/api/people",
        &json!({ "name": name }).to_string(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let made = r.json();
    assert_eq!(
        made["path"],
        json!(format!("/api/presence/{}", name.to_lowercase()))
    );
    made["token"].as_str().unwrap().to_string()
}

/// Runs `act`, then waits for the presence rule to have looked at what it did.
fn then_rule<T>(s: &TestServer, act: impl FnOnce() -> T) -> T {
    let people = s.app().people();
    let mark = people.mark();
    let out = act();
    assert!(
        people.wait_pass(mark, TIMEOUT),
        "the presence rule made no pass"
    );
    out
}

fn status(s: &TestServer, serial: &str) -> Value {
    let r = get(s.control(), &format!("/status?serial={serial}"));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn away(s: &TestServer, serial: &str) -> bool {
    status(s, serial)["away"].as_bool().unwrap()
}

fn people(s: &TestServer) -> Value {
    let r = get(s.control(), "/api/people");
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn booted(
    s: &TestServer,
    serial: &str,
) -> (hearth::simulator::Thermostat, hearth::simulator::Held) {
    let (mut sim, _events) = thermostat(&s.origin(), serial);
    sim.boot().unwrap();
    let held = sim.open_subscribe().unwrap();
    s.wait_held(serial, 1);
    (sim, held)
}

#[test]
fn two_people_the_last_to_leave_makes_the_home_away_after_the_wait_and_one_back_makes_it_home() {
    let time = ManualClock::starting_now();
    let broker = Broker::start();
    let s = TestServer::start_with(|c| {
        c.clock = time.clock();
        // No keep-alive comments while the clock jumps: the stream is quiet unless something
        // changed.
        c.event_keep_alive = 7 * DAY;
        c.mqtt = Some(MqttConfig {
            topic_prefix: PREFIX.into(),
            ..MqttConfig::new("127.0.0.1", broker.port)
        });
    });
    let watch = Watcher::connect(broker.port);
    let (mut one, _) = booted(&s, SERIAL);
    let (mut two, _) = booted(&s, OTHER);
    let alice = add(&s, "alice");
    let bob = add(&s, "Bob");
    let listed = people(&s);
    assert_eq!(listed["away_after_minutes"], json!(10));
    assert_eq!(
        listed["people"][0]["topic"],
        json!("nle/presence/alice/state")
    );
    assert_eq!(listed["people"][1]["name"], json!("bob"));
    assert_eq!(listed["people"][1]["home"], Value::Null, "never heard from");
    let mut stream = open_events(s.control(), "/api/events");
    assert_eq!(stream.next_chunk().unwrap().unwrap(), b": connected\n\n");

    // Bob is home, Alice leaves: nothing, then or half an hour later.
    then_rule(&s, || assert_eq!(report(&s, "bob", &bob, true).status, 200));
    let r = then_rule(&s, || report(&s, "alice", &alice, false));
    assert_eq!(
        r.json(),
        json!({"person": "alice", "home": false, "changed": true})
    );
    then_rule(&s, || time.advance(30 * MINUTE));
    assert!(!away(&s, SERIAL) && !away(&s, OTHER));
    assert!(nothing_arrived(&mut stream), "no change was made");
    // Bob leaves: the wait runs from him, and the page says when it ends.
    let left_ms = time.now_ms();
    then_rule(&s, || report(&s, "bob", &bob, false));
    let home = people(&s)["home"].clone();
    assert_eq!(home["away"], json!(false));
    assert_eq!(home["leaving_at"], json!(left_ms + 10 * 60_000));
    then_rule(&s, || time.advance(10 * MINUTE - Duration::from_secs(1)));
    assert!(!away(&s, SERIAL) && !away(&s, OTHER), "not before the wait");
    assert!(nothing_arrived(&mut stream));

    // The clock's jumps ended the thermostats' held subscribes; they subscribe again, as they
    // do.
    let mut held = one.open_subscribe().unwrap();
    let mut held_other = two.open_subscribe().unwrap();
    s.wait_held(SERIAL, 1);
    s.wait_held(OTHER, 1);

    // The wait ends: every thermostat is away, pushed, with origin presence everywhere.
    then_rule(&s, || time.advance(Duration::from_secs(1)));
    for (serial, held) in [(SERIAL, &mut held), (OTHER, &mut held_other)] {
        let st = status(&s, serial);
        assert_eq!(st["away"], json!(true), "{serial}");
        assert_eq!(st["last_change"]["kind"], json!("away"));
        assert_eq!(st["last_change"]["origin"], json!("presence"));
        let (_, doc) = next_push(held);
        assert_eq!(
            object(&doc, "structure.default")["value"]["manual_eco_all"],
            json!(true),
            "{serial} was pushed its away"
        );
    }
    let e = next_event(&mut stream);
    assert_eq!(
        (e["object_key"].clone(), e["origin"].clone()),
        (json!("structure.default"), json!("presence"))
    );
    let home = people(&s)["home"].clone();
    assert_eq!(
        (home["away"].clone(), home["why"].clone()),
        (json!(true), json!("everyone_left"))
    );
    let key = new_key(&s, "owner", "read", &[]);
    let hosted = api(
        &s,
        "GET",
        &format!("/thermostat/{SERIAL}/status"),
        &key,
        Value::Null,
    );
    assert_eq!(hosted.status, 200, "{}", hosted.text());
    assert_eq!(hosted.json()["last_change"]["origin"], json!("presence"));
    assert!(
        hosted.text().contains("\"manual_eco_all\":true"),
        "{}",
        hosted.text()
    );
    watch.wait_for(&format!("{PREFIX}/{SERIAL}/ha/preset"), "away");
    let seen = watch.wait("last_change_json", |m| {
        m.get(&format!("{PREFIX}/{SERIAL}/ha/last_change_json"))
            .is_some_and(|v| v.contains("presence"))
    });
    let change: Value =
        serde_json::from_str(&seen[&format!("{PREFIX}/{SERIAL}/ha/last_change_json")]).unwrap();
    assert_eq!(change["origin"], json!("presence"));
    let bridge = common::homekit::bridge_of(s.server().app());
    let db = common::homekit::database(&bridge);
    for accessory in db["accessories"].as_array().unwrap().iter().skip(1) {
        let switch = common::homekit::characteristic(accessory, "49", "25");
        assert_eq!(switch["value"], json!(true), "Apple Home's Away switch");
    }

    // Alice comes back: home at once, with no clock move.
    then_rule(&s, || report(&s, "alice", &alice, true));
    assert!(!away(&s, SERIAL) && !away(&s, OTHER));
    assert_eq!(
        status(&s, SERIAL)["last_change"]["origin"],
        json!("presence")
    );
    assert_eq!(people(&s)["home"]["why"], json!("arrived"));
}

#[test]
fn a_change_by_hand_holds_until_the_next_arrival_or_departure() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| c.clock = time.clock());
    let (_sim, _held) = booted(&s, SERIAL);
    let alice = add(&s, "alice");
    then_rule(&s, || report(&s, "alice", &alice, false));
    then_rule(&s, || time.advance(10 * MINUTE));
    assert!(away(&s, SERIAL));

    // Home by hand while everyone is away: it holds, however long.
    assert_eq!(
        command(s.control(), SERIAL, "set_away", json!(false)).status,
        200
    );
    then_rule(&s, || time.advance(120 * MINUTE));
    assert!(!away(&s, SERIAL), "the change by hand holds");
    assert_eq!(people(&s)["home"]["why"], json!("manual"));
    // The next arrival and departure: the rule again.
    then_rule(&s, || report(&s, "alice", &alice, true));
    then_rule(&s, || report(&s, "alice", &alice, false));
    then_rule(&s, || time.advance(10 * MINUTE));
    assert!(away(&s, SERIAL), "away again after the next departure");

    // Home by hand during the wait holds too.
    then_rule(&s, || report(&s, "alice", &alice, true));
    assert!(!away(&s, SERIAL));
    then_rule(&s, || report(&s, "alice", &alice, false));
    then_rule(&s, || time.advance(5 * MINUTE));
    assert_eq!(
        command(s.control(), SERIAL, "set_away", json!(false)).status,
        200
    );
    then_rule(&s, || time.advance(10 * MINUTE));
    assert!(!away(&s, SERIAL), "a Home made during the wait holds");
    assert_eq!(status(&s, SERIAL)["last_change"]["origin"], json!("server"));

    // Eco not made through hearth (the thermostat's own button; here a bare bucket write) is
    // left alone however long, until the next presence change.
    then_rule(&s, || report(&s, "alice", &alice, true));
    s.server_change(SERIAL, "structure.default", json!({"manual_eco_all": true}));
    assert!(away(&s, SERIAL));
    then_rule(&s, || time.advance(180 * MINUTE));
    assert!(
        away(&s, SERIAL),
        "the rule does not undo it between presence changes"
    );
    then_rule(&s, || report(&s, "alice", &alice, false));
    then_rule(&s, || report(&s, "alice", &alice, true));
    assert!(!away(&s, SERIAL), "an arrival makes the home home");
}

/// 2026-12-02 (a Wednesday) 12:00 UTC; the thermostat names no time zone, so its days are UTC's.
const WEDNESDAY_NOON: i64 = 1_796_212_800_000;
const DAY: Duration = Duration::from_secs(86_400);

#[test]
fn a_vacation_is_not_ended_by_an_arrival_and_ends_by_itself() {
    let time = ManualClock::at(WEDNESDAY_NOON);
    let s = TestServer::start_with(|c| c.clock = time.clock());
    let (_sim, _held) = booted(&s, SERIAL);
    let alice = add(&s, "alice");
    then_rule(&s, || report(&s, "alice", &alice, true));

    // Bad values: 400, and nothing set.
    for (value, error) in [
        (
            json!(true),
            "set_vacation value must be {\"from\": \"YYYY-MM-DD\", \"to\": \"YYYY-MM-DD\"} or false",
        ),
        (
            json!({"from": "2026-12-03"}),
            "set_vacation value must be {\"from\": \"YYYY-MM-DD\", \"to\": \"YYYY-MM-DD\"} or false",
        ),
        (
            json!({"from": "2026-12-06", "to": "2026-12-03"}),
            "A vacation's last day cannot be before its first",
        ),
        (
            json!({"from": "2026-11-01", "to": "2026-11-02"}),
            "That vacation is already over",
        ),
        (
            json!({"from": "Thursday", "to": "2026-12-06"}),
            "Invalid date \"Thursday\": expected YYYY-MM-DD, e.g. 2026-12-24",
        ),
    ] {
        let r = command(s.control(), SERIAL, "set_vacation", value.clone());
        assert_eq!(r.status, 400, "{value}");
        assert_eq!(r.json()["message"], json!(error), "{value}");
    }
    assert_eq!(people(&s)["home"]["vacation"], Value::Null);

    // From tomorrow (Thursday) to Sunday.
    let r = then_rule(&s, || {
        command(
            s.control(),
            SERIAL,
            "set_vacation",
            json!({"from": "2026-12-03", "to": "2026-12-06"}),
        )
    });
    assert_eq!(r.status, 200, "{}", r.text());
    let monday = WEDNESDAY_NOON + 4 * 86_400_000 + 12 * 3_600_000;
    assert_eq!(r.json()["data"]["vacation"]["to_ms"], json!(monday));
    assert!(!away(&s, SERIAL), "it has not begun");
    then_rule(&s, || time.advance(DAY / 2));
    assert!(away(&s, SERIAL), "Thursday 00:00");
    let home = people(&s)["home"].clone();
    assert_eq!(
        (home["why"].clone(), home["until"].clone()),
        (json!("vacation"), json!(monday))
    );
    // Someone arrives: still away.
    then_rule(&s, || report(&s, "alice", &alice, false));
    then_rule(&s, || report(&s, "alice", &alice, true));
    then_rule(&s, || time.advance(DAY));
    assert!(away(&s, SERIAL), "an arrival does not end it");
    // Monday 00:00: over by itself, and Alice is home.
    then_rule(&s, || time.set_ms(monday));
    assert!(!away(&s, SERIAL));
    assert_eq!(people(&s)["home"]["vacation"], Value::Null);
    assert_eq!(
        status(&s, SERIAL)["last_change"]["origin"],
        json!("presence")
    );
}

#[test]
fn home_assistant_over_mqtt_moves_a_person() {
    let time = ManualClock::starting_now();
    let broker = Broker::start();
    let s = TestServer::start_with(|c| {
        c.clock = time.clock();
        c.mqtt = Some(MqttConfig {
            topic_prefix: PREFIX.into(),
            ..MqttConfig::new("127.0.0.1", broker.port)
        });
    });
    let watch = Watcher::connect(broker.port);
    let (_sim, _held) = booted(&s, SERIAL);
    add(&s, "bob");
    watch.wait_for(&format!("{PREFIX}/availability"), "online");
    let seen = |s: &TestServer| people(s)["people"][0]["home"].clone();
    let topic = format!("{PREFIX}/presence/bob/state");
    let publish = |payload: &str| then_rule(&s, || watch.publish(&topic, payload));
    // Home Assistant's words: a zone or not_home is away, unknown and unavailable nothing.
    wait_until("bob home", || {
        watch.publish(&topic, "\"home\"");
        seen(&s) == json!(true)
    });
    publish("not_home");
    wait_until("bob away", || seen(&s) == json!(false));
    assert_eq!(people(&s)["people"][0]["source"], json!("home_assistant"));
    watch.publish(&topic, "home");
    wait_until("bob home", || seen(&s) == json!(true));
    watch.publish(&topic, "Work");
    wait_until("bob at work", || seen(&s) == json!(false));
    for nothing in ["unknown", "unavailable", ""] {
        watch.publish(&topic, nothing);
    }
    // A last message after them shows they were taken and changed nothing.
    watch.publish(&format!("{PREFIX}/presence/nobody/state"), "home");
    watch.publish(&topic, "not_home");
    then_rule(&s, || time.advance(10 * MINUTE));
    assert_eq!(seen(&s), json!(false));
    assert!(
        away(&s, SERIAL),
        "Home Assistant's not_home made the home away"
    );
}

#[test]
fn a_presence_token_does_nothing_else_and_bad_input_changes_nothing() {
    let s = TestServer::start_with(|c| {
        c.control_require_key = true;
        c.api_rate_limit_per_minute = 1000;
    });
    let (_sim, _held) = booted(&s, SERIAL);
    let owner_key = new_key(&s, "owner", "read,write", &[]);
    let made = |name: &str| -> String {
        let made = hearth::people::add(s.app().state(), "owner", name, None).unwrap();
        made.token
    };
    let alice = made("alice");
    let bob = made("bob");
    let bearer = format!("Bearer {alice}");

    // Nothing else: not /status, not /command, not /api/v1, not another person's URL.
    let with = |method: &str, target: &str, body: &str| {
        client::request(
            &url(s.control(), target),
            method,
            &[("Authorization", &bearer)],
            body.as_bytes(),
            TIMEOUT,
        )
        .unwrap()
    };
    assert_eq!(
        with("GET", &format!("/status?serial={SERIAL}"), "").status,
        401
    );
    let cmd = json!({"serial": SERIAL, "command": "set_away", "value": true}).to_string();
    assert_eq!(with("POST", "/command", &cmd).status, 401);
    assert_eq!(with("GET", "/api/people", "").status, 401);
    assert_eq!(with("GET", "/api/v1/devices", "").status, 401);
    let r = report(&s, "bob", &alice, false);
    assert_eq!(r.status, 401);
    assert_eq!(
        r.json(),
        json!({"error": "This presence URL needs its person's token"})
    );
    assert_eq!(
        r.header("WWW-Authenticate"),
        Some("Bearer, Basic realm=\"hearth\"")
    );
    // Wrong, missing, for nobody: the same 401.
    assert_eq!(report(&s, "alice", "hp_wrong", false).status, 401);
    assert_eq!(presence(&s, "alice", &[], "{\"home\":false}").status, 401);
    assert_eq!(report(&s, "nobody", &alice, false).status, 401);

    // Bad bodies: 400 with what was expected, and the store unchanged.
    let before = store_bytes(&s.server().app().config().data_dir);
    for body in [
        "",
        "not json",
        "[]",
        "{\"home\":\"yes\"}",
        "{\"away\":true}",
    ] {
        let r = presence(&s, "alice", &[("Authorization", &bearer)], body);
        assert_eq!(r.status, 400, "{body:?}: {}", r.text());
        assert_eq!(
            r.json()["error"],
            json!(
                "Expected {\"home\": true} or {\"home\": false}, ?home=1 or ?home=0, or an OwnTracks message"
            ),
            "{body:?}"
        );
    }
    let r = presence(&s, "alice?home=maybe", &[("Authorization", &bearer)], "");
    assert_eq!(r.status, 400);
    // The presence URL takes small bodies only (an OwnTracks message is under 2 KiB).
    let big = format!("{{\"home\":false,\"pad\":\"{}\"}}", "x".repeat(20 * 1024));
    assert_eq!(
        presence(&s, "alice", &[("Authorization", &bearer)], &big).status,
        413
    );
    assert_eq!(store_bytes(&s.server().app().config().data_dir), before);

    // The ways a token may come: Bearer, ?token=, Basic's password (OwnTracks).
    let r = presence(&s, &format!("alice?home=0&token={alice}"), &[], "");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["home"], json!(false));
    let basic = basic("alice-phone", &bob);
    let r = presence(&s, "bob?home=1", &[("Authorization", &basic)], "");
    assert_eq!(
        r.json(),
        json!({"person": "bob", "home": true, "changed": true})
    );

    // A revoked token stops at once; the list shows no token.
    let r = client::request(
        &url(s.control(), "/api/people/alice/token"),
        "DELETE",
        &[("Authorization", &format!("Bearer {owner_key}"))],
        b"",
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(report(&s, "alice", &alice, true).status, 401);

    // All of it survives a restart, and no token is stored.
    let dir = s.stop();
    let stored: String = store_bytes(dir.path())
        .into_iter()
        .map(|(_, b)| String::from_utf8_lossy(&b).into_owned())
        .collect();
    assert!(!stored.contains(&bob[3..]) && !stored.contains(&alice[3..]));
    assert!(stored.contains(&hearth::accounts::keys::hash(&bob)));
    let again = restart(&dir);
    let kept = again.app().state().accounts(|a| a.people.clone());
    assert_eq!(kept["alice"].token, None);
    assert_eq!(kept["alice"].seen.map(|s| s.home), Some(false));
    assert_eq!(kept["bob"].seen.map(|s| s.home), Some(true));
    let r = client::request(
        &url(again.control_addr(), "/api/presence/bob?home=0"),
        "POST",
        &[("Authorization", &format!("Bearer {bob}"))],
        b"",
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    again.shutdown();
}

#[test]
fn the_presence_url_is_rate_limited_by_address_and_by_person() {
    let s = TestServer::start_with(|c| c.api_rate_limit_per_minute = 3);
    let token = add(&s, "alice");
    for _ in 0..3 {
        assert_eq!(report(&s, "alice", "hp_guess", false).status, 401);
    }
    // The address has used its window on wrong tokens: more guesses are refused outright...
    let r = report(&s, "alice", "hp_guess", false);
    assert_eq!(r.status, 429, "{}", r.text());
    assert!(r.header("Retry-After").is_some());
    // ...but the right token still passes (phones behind one reverse proxy share its address),
    // counted against its person.
    for home in [true, false, true] {
        assert_eq!(report(&s, "alice", &token, home).status, 200);
    }
    let r = report(&s, "alice", &token, false);
    assert_eq!(r.status, 429, "{}", r.text());
    assert_eq!(
        r.json()["error"]
            .as_str()
            .map(|e| e.starts_with("Too many requests")),
        Some(true)
    );
    assert!(r.header("Retry-After").is_some());
}

#[test]
fn a_token_in_the_query_is_never_written_to_the_log() {
    common::log_capture::start();
    let s = TestServer::start();
    let token = add(&s, "alice");
    let r = presence(&s, &format!("alice?home=0&token={token}"), &[], "");
    assert_eq!(r.status, 200);
    let wrong = "hp_0123456789abcdef";
    assert_eq!(
        presence(&s, &format!("alice?home=0&token={wrong}"), &[], "").status,
        401
    );
    let logged = common::log_capture::lines("alice");
    assert!(!logged.is_empty(), "the requests were logged");
    for line in logged {
        assert!(
            !line.contains(&token[3..]) && !line.contains(&wrong[3..]),
            "{line}"
        );
    }
}

#[test]
fn hearth_people_with_and_without_a_server_and_the_token_works_at_once() {
    use common::cli::{hearth, ok};
    use hearth::process::ServerProcess;
    use std::path::Path;
    let dir = TempDir::new("people-cli");
    // No server: written to the store.
    let text = ok(&hearth(
        dir.path(),
        &["people", "add", "Alice", "--region", "Casa"],
    ));
    assert!(text.contains("/api/presence/alice"), "{text}");
    let token = text.trim_end().lines().last().unwrap().to_string();
    assert!(token.starts_with("hp_") && token.len() == 67, "{text}");
    let listed = ok(&hearth(dir.path(), &["people", "list"]));
    assert!(
        listed.contains("never heard from") && listed.contains("Casa"),
        "{listed}"
    );
    assert!(!listed.contains(&token), "{listed}");
    let refused = hearth(dir.path(), &["people", "add", "alice"]);
    assert!(!refused.status.success());
    let bad = hearth(dir.path(), &["people", "add", "a b"]);
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("Invalid name"),
        "{bad:?}"
    );

    // With a server on it: the token works at once, and a new one replaces it at once.
    let server = ServerProcess::start(Path::new(env!("CARGO_BIN_EXE_hearth")), dir.path())
        .unwrap_or_else(|log| panic!("server did not start:\n{log}"));
    let post = |token: &str| {
        client::request(
            &url(server.control, "/api/presence/alice?home=0"),
            "POST",
            &[("Authorization", &format!("Bearer {token}"))],
            b"",
            TIMEOUT,
        )
        .unwrap()
    };
    assert_eq!(post(&token).status, 200);
    let text = ok(&hearth(dir.path(), &["people", "token", "alice"]));
    let fresh = text.trim_end().lines().last().unwrap().to_string();
    assert_eq!(post(&token).status, 401);
    assert_eq!(post(&fresh).status, 200);
    let listed = ok(&hearth(dir.path(), &["people", "list"]));
    assert!(
        listed.contains("away") && listed.contains("url"),
        "{listed}"
    );
    ok(&hearth(dir.path(), &["people", "remove", "alice"]));
    assert_eq!(post(&fresh).status, 401);
    server.kill();
}

#[test]
fn a_wait_that_ended_while_hearth_was_down_is_applied_at_start() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| c.clock = time.clock());
    let (_sim, _held) = booted(&s, SERIAL);
    let alice = add(&s, "alice");
    then_rule(&s, || report(&s, "alice", &alice, false));
    assert!(!away(&s, SERIAL));
    let dir = s.stop();
    time.advance(11 * MINUTE);
    let mut config = hearth::config::Config::local(dir.path());
    config.clock = time.clock();
    let again = start_server(config);
    let people = again.app().people();
    // The first pass at start, or the next one.
    assert!(people.wait_pass(people.mark().saturating_sub(1), TIMEOUT));
    let r = get(again.control_addr(), &format!("/status?serial={SERIAL}"));
    assert_eq!(r.json()["away"], json!(true), "{}", r.text());
    assert_eq!(r.json()["last_change"]["origin"], json!("presence"));
    again.shutdown();
}

#[test]
fn with_pairing_each_users_home_has_its_own_people() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| {
        c.clock = time.clock();
        c.require_device_pairing = true;
    });
    // Two thermostats the server knows (a thermostat waiting to be claimed cannot subscribe).
    for serial in [SERIAL, OTHER] {
        s.server_change(
            serial,
            &format!("shared.{serial}"),
            json!({"target_temperature": 20.0}),
        );
    }
    let state = s.app().state();
    for (serial, user) in [(SERIAL, "alice"), (OTHER, "bob")] {
        hearth::accounts::add_user(state, user).unwrap();
        s.set_owner(serial, user);
    }
    let ann = hearth::people::add(state, "alice", "ann", None)
        .unwrap()
        .token;
    let ben = hearth::people::add(state, "bob", "ben", None)
        .unwrap()
        .token;
    then_rule(&s, || report(&s, "ben", &ben, true));
    then_rule(&s, || report(&s, "ann", &ann, false));
    then_rule(&s, || time.advance(10 * MINUTE));
    assert!(away(&s, SERIAL), "alice's home is away");
    assert!(!away(&s, OTHER), "bob's is not");
    // The control port shows the owner's home, which has nobody.
    assert_eq!(people(&s)["people"], json!([]));
}

#[test]
fn owntracks_transitions_and_locations_move_a_person_and_are_answered_as_it_expects() {
    let time = ManualClock::starting_now();
    let s = TestServer::start_with(|c| c.clock = time.clock());
    let r = call(
        s.control(),
        "POST",
        "/api/people",
        &json!({"name": "alice", "region": "Home"}).to_string(),
    );
    let token = r.json()["token"].as_str().unwrap().to_string();
    // OwnTracks' HTTP mode: Basic with its own user name, and its headers.
    let auth = basic("alice", &token);
    let owntracks = |body: &str| {
        presence(
            &s,
            "alice",
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
                ("X-Limit-U", "alice"),
                ("X-Limit-D", "phone"),
            ],
            body,
        )
    };
    let seen = || people(&s)["people"][0].clone();
    // Times are the event's (seconds): a minute ago, then now, some time after alice was added.
    time.advance(5 * MINUTE);
    let now_s = time.now_ms() / 1000;
    let leave = format!(
        r#"{{"_type":"transition","wtst":1444755752,"lat":49.1383109,"lon":13.4277182,"acc":481,"tst":{},"tid":"al","event":"leave","desc":"home","t":"c","rid":"6da9cf"}}"#,
        now_s - 60
    );
    let r = owntracks(&leave);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json(), json!([]));
    assert!(
        r.header("Content-Type")
            .is_some_and(|t| t.starts_with("application/json"))
    );
    assert_eq!(
        (seen()["home"].clone(), seen()["source"].clone()),
        (json!(false), json!("owntracks"))
    );
    // Another region, a last will, an empty body: answered, and nothing changes.
    let before = store_bytes(&s.server().app().config().data_dir);
    for nothing in [
        r#"{"_type":"transition","event":"enter","desc":"Work","tst":1700000000,"acc":10,"wtst":1}"#,
        r#"{"_type":"lwt","tst":1700000000}"#,
        r#"{"_type":"location","lat":1.0,"lon":2.0,"tst":1700000000}"#,
        "",
    ] {
        let r = owntracks(nothing);
        assert_eq!((r.status, r.json()), (200, json!([])), "{nothing:?}");
    }
    // Payload encryption is refused, and changes nothing.
    let r = owntracks(r#"{"_type":"encrypted","data":"c2VjcmV0"}"#);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(store_bytes(&s.server().app().config().data_dir), before);
    assert_eq!(seen()["home"], json!(false));
    // A location inside the region: home. No coordinate is kept.
    let arrive = format!(
        r#"{{"_type":"location","lat":49.1,"lon":13.4,"tst":{now_s},"inregions":["HOME"],"acc":5}}"#
    );
    // Queued and sent late, the older leave changes nothing after it.
    let r = owntracks(&arrive);
    assert_eq!((r.status, r.json()), (200, json!([])));
    assert_eq!(seen()["home"], json!(true));
    assert_eq!(owntracks(&leave).status, 200);
    assert_eq!(seen()["home"], json!(true), "an older message is ignored");
    let stored: String = store_bytes(&s.server().app().config().data_dir)
        .into_iter()
        .map(|(_, b)| String::from_utf8_lossy(&b).into_owned())
        .collect();
    assert!(
        !stored.contains("49.1") && !stored.contains("13.4"),
        "no location is stored"
    );
}
