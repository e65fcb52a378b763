//! Home/Away by who is home, on the page (issue 51), in Chromium: add a person and see their
//! presence URL and, once, its token apart (a Copy button each, a guide per tool), "never heard from";
//! a report through that URL (Bearer, as a phone's shortcut sends it) shows them away and the
//! home's wait; a vacation shows "Away until …"; a new URL, and a revoked one whose line goes.
//! Named, reachable by the keyboard, readable, no sideways scroll at 360 px; screenshots at 1280
//! and 360 px, light and dark.
//!
//! A report from a phone changes no thermostat, so no event tells the page: it reads
//! `api/people` again on its 30-second refresh. The test calls that refresh (`loadPeople()`)
//! instead of waiting for it.

use serde_json::{Value, json};

use super::browser::*;
use super::{LOW_CONTRAST, SHOWN, UNLABELLED, unreachable_by_tab};
use crate::common::mqtt::Broker;
use crate::common::*;
use hearth::Config;
use hearth::http::client;
use hearth::util::clock::ManualClock;

/// What the page shows of the people and the home (an expression).
const SHOWN_PEOPLE: &str = "({
    state: document.getElementById('home-state').hidden ? '' : document.getElementById('home-state').textContent,
    invite: !document.getElementById('people-invite').hidden,
    people: [...document.querySelectorAll('#people-list li')].map((li) => ({
      name: li.dataset.person, home: li.dataset.home,
      status: li.querySelector('.people-status').textContent,
      token: li.querySelector('.token').textContent,
      revoke: !li.querySelector('button[aria-label^=\"Revoke\"]').hidden })) })";

fn people(b: &Browser) -> Value {
    b.js(&format!("return {SHOWN_PEOPLE}"))
}

/// Reads `api/people` again (the page's own refresh) and waits until `ok` holds of what it shows.
fn refreshed_until(b: &Browser, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let mut seen = Value::Null;
    let done = poll_until(TIMEOUT, || {
        b.js("return loadPeople().then(() => true)");
        seen = people(b);
        ok(&seen)
    });
    assert!(done, "{what}: the page shows {seen}");
    seen
}

/// `POST /api/presence/{name}` as a phone's shortcut sends it: the token as a Bearer.
fn report(control: std::net::SocketAddr, name: &str, token: &str, home: bool) -> (u16, Value) {
    let auth = format!("Bearer {token}");
    let target = format!("/api/presence/{name}?home={}", u8::from(home));
    let r = client::request(
        &url(control, &target),
        "POST",
        &[("Authorization", auth.as_str())],
        &[],
        TIMEOUT,
    )
    .expect("request");
    let body = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
    (r.status, body)
}

/// The URL the page shows, and its token, shown once on a line of its own.
fn shown_url(b: &Browser) -> (String, String) {
    let url = b.wait_for(
        "the presence URL, shown once",
        "const box = document.getElementById('person-url'); \
         return !box.hidden && document.getElementById('person-url-value').value",
    );
    let token = b.js("return document.getElementById('person-token').value");
    (
        url.as_str().unwrap().to_string(),
        token.as_str().unwrap().to_string(),
    )
}

fn add_person(b: &Browser, name: &str) -> (String, String) {
    if b.js("return document.getElementById('person-add').hidden") == json!(true) {
        b.click("#person-add-open");
    }
    b.type_into("#person-name", name);
    b.js("document.getElementById('person-url-value').value = ''; return true");
    b.click("#person-add button[type=submit]");
    shown_url(b)
}

#[test]
fn people_their_urls_and_a_vacation_on_the_page() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let broker = Broker::start();
    let dir = TempDir::new("people-page");
    let mut config = Config::local(dir.path());
    config.api_origin = Some(hearth::config::ApiOrigin::parse("http://127.0.0.1").unwrap());
    let mqtt = hearth::config::MqttConfig::new("127.0.0.1", broker.port);
    let topic = format!("{}/presence/alice/state", mqtt.topic_prefix);
    config.mqtt = Some(mqtt);
    // The wait before away passes when the test says.
    let time = ManualClock::starting_now();
    config.clock = time.clock();
    let server = start_server(config);
    let control = server.control_addr();
    let sim = TestThermostat::start(&format!("http://{}", server.device_addr()));
    let page = format!("http://{control}/");
    b.goto(&page);
    b.wait_for(
        "the thermostat's card and the Home section",
        &format!(
            "return !!document.querySelector('#card-{TEST_SERIAL} svg.chart') && !document.getElementById('people').hidden"
        ),
    );
    b.wait_for(
        "the live indicator",
        "return document.getElementById('live').textContent === 'Live'",
    );

    // No people: one line inviting to add one, and nothing else.
    assert_eq!(
        people(&b),
        json!({"state": "", "invite": true, "people": []})
    );
    assert_eq!(
        b.js("return document.getElementById('people-invite').textContent"),
        json!("Home/Away by who is home: add a person.")
    );

    // Add alice: her URL made from the page's own address, without the token (a reverse proxy
    // logs URLs); the token once, on its own; Copy for each; a guide.
    let (url, token) = add_person(&b, "alice");
    assert_eq!(url, format!("http://{control}/api/presence/alice"));
    assert!(token.starts_with("hp_"), "{token}");
    assert_eq!(token.len(), 3 + 64, "{token}");
    assert!(token[3..].chars().all(|c| c.is_ascii_hexdigit()), "{token}");
    assert_eq!(
        b.js("return ['person-url-copy', 'person-token-copy'].map((id) => document.getElementById(id).textContent)"),
        json!(["Copy", "Copy"])
    );
    let guide = b.js(
        "return [...document.querySelectorAll('#person-url-guide details summary')].map((s) => s.textContent)",
    );
    assert_eq!(
        guide,
        json!([
            "Home Assistant (works from anywhere)",
            "iOS Shortcuts",
            "Android",
            "OwnTracks"
        ])
    );
    // The phone's tools send the token in a header, OwnTracks as its password; ?token= only as
    // the last resort, with why.
    let words = b.js("return document.getElementById('person-url-guide').textContent");
    let words = words.as_str().unwrap();
    assert_eq!(
        words
            .matches("the header Authorization: Bearer <token>")
            .count(),
        2,
        "{words}"
    );
    assert!(
        words.contains("any user name, and the token as the password")
            && words.contains("?home=1&token=<token>, as a last resort: a reverse proxy logs URLs"),
        "{words}"
    );
    let yaml = b.js("return document.querySelector('#person-url-guide pre').textContent");
    assert!(
        yaml.as_str().unwrap().contains(&format!("topic: {topic}"))
            && yaml.as_str().unwrap().contains("states('person.alice')"),
        "{yaml}"
    );
    let shown = people(&b);
    assert_eq!(shown["invite"], json!(false), "{shown}");
    let alice = &shown["people"][0];
    assert_eq!(alice["name"], json!("alice"), "{shown}");
    assert_eq!(alice["home"], json!("unknown"), "{shown}");
    assert_eq!(
        alice["status"],
        json!("never heard from (counts as home)"),
        "{shown}"
    );
    let preview = alice["token"].as_str().unwrap();
    assert!(
        preview.starts_with("URL token hp_") && !preview.contains(&token[3..]),
        "the row shows a preview only: {preview}"
    );
    // Done hides the URL for good: the page keeps no copy of it.
    b.click("#person-url-done");
    let gone = format!(
        "return [document.getElementById('person-url').hidden, document.getElementById('person-url-value').value,
                 document.getElementById('person-token').value, document.body.innerHTML.includes('{}')]",
        &token[3..]
    );
    assert_eq!(b.js(&gone), json!([true, "", "", false]));

    // A second person, bob, reports home from his phone; alice reports she has left.
    let (_, bob_token) = add_person(&b, "bob");
    b.click("#person-url-done");
    assert_eq!(report(control, "bob", &bob_token, true).0, 200);
    let (status, body) = report(control, "alice", &token, false);
    assert_eq!((status, &body["home"]), (200, &json!(false)), "{body}");
    let shown = refreshed_until(&b, "alice away, bob home", |v| {
        v["people"][0]["home"] == json!("false") && v["people"][1]["home"] == json!("true")
    });
    let status = shown["people"][0]["status"].as_str().unwrap().to_string();
    assert!(
        status.starts_with("Away since ") && status.ends_with(" · phone"),
        "{shown}"
    );
    assert_eq!(shown["state"], json!("Home — bob is home"), "{shown}");

    // bob leaves too: everyone is away, and the home goes away after the wait.
    assert_eq!(report(control, "bob", &bob_token, false).0, 200);
    let shown = refreshed_until(&b, "the wait before away", |v| {
        v["state"]
            .as_str()
            .is_some_and(|s| s.starts_with("Everyone has left — away at "))
    });
    assert!(
        shown["state"]
            .as_str()
            .unwrap()
            .ends_with(" unless someone returns"),
        "{shown}"
    );
    // The wait passes: the home is away, and says since when and why.
    time.advance(std::time::Duration::from_secs(11 * 60));
    wait_until("the thermostat away", || {
        hearth::control::status::record(server.app(), TEST_SERIAL).unwrap()["away"] == json!(true)
    });
    let shown = refreshed_until(&b, "away, everyone having left", |v| {
        v["state"]
            .as_str()
            .is_some_and(|s| s.ends_with(" — everyone left"))
    });
    assert!(
        shown["state"].as_str().unwrap().starts_with("Away since "),
        "{shown}"
    );
    // bob comes back: home again, at once.
    assert_eq!(report(control, "bob", &bob_token, true).0, 200);
    refreshed_until(&b, "home again", |v| {
        v["state"] == json!("Home — bob is home")
    });
    wait_until("the thermostat home", || {
        hearth::control::status::record(server.app(), TEST_SERIAL).unwrap()["away"] == json!(false)
    });

    // A vacation, from yesterday (so it has begun in any time zone) to two days from now.
    b.click("#vacation-open");
    let days = b.js(
        "const day = (n) => { const d = new Date(); d.setDate(d.getDate() + n);
           return d.getFullYear() + '-' + String(d.getMonth() + 1).padStart(2, '0') + '-' + String(d.getDate()).padStart(2, '0'); };
         const to = new Date(); to.setDate(to.getDate() + 2);
         return [day(-1), day(2), to.toLocaleDateString([], { weekday: 'long' })]",
    );
    b.js(&format!(
        "document.getElementById('vacation-from').value = '{}';
         document.getElementById('vacation-to').value = '{}'; return true",
        days[0].as_str().unwrap(),
        days[1].as_str().unwrap()
    ));
    b.click("#vacation-form button[type=submit]");
    let until = format!("Away until {} — vacation", days[2].as_str().unwrap());
    b.wait_for(
        "the vacation on the home's line",
        &format!(
            "return document.getElementById('home-state').textContent === {}",
            json!(until)
        ),
    );
    wait_until("the thermostat away", || {
        hearth::control::status::record(server.app(), TEST_SERIAL).unwrap()["away"] == json!(true)
    });
    // An arrival does not end it.
    assert_eq!(report(control, "alice", &token, true).0, 200);
    let shown = refreshed_until(&b, "alice home", |v| {
        v["people"][0]["home"] == json!("true")
    });
    assert_eq!(shown["state"], json!(until), "{shown}");
    assert_eq!(
        b.js("return document.getElementById('vacation-cancel').hidden"),
        json!(false)
    );

    // Named, reachable by the keyboard, readable; the URL box of a new one open, with the Home
    // Assistant recipe, for the screenshots.
    b.click("button[aria-label='New presence URL for bob']");
    let (_, new_bob) = shown_url(&b);
    assert_ne!(new_bob, bob_token);
    assert_eq!(report(control, "bob", &bob_token, true).0, 401);
    assert_eq!(report(control, "bob", &new_bob, false).0, 200);
    refreshed_until(&b, "bob away, the vacation still on", |v| {
        v["people"][1]["home"] == json!("false") && v["state"] == json!(until)
    });
    b.js("document.querySelector('#person-url-guide details').open = true; return true");
    // The add form closed, as it is once people are added.
    b.click("#person-add-open");
    assert_eq!(
        b.js("return [document.getElementById('person-add').hidden, document.getElementById('person-add-open').getAttribute('aria-expanded')]"),
        json!([true, "false"])
    );
    let labels = b.js(&format!("{SHOWN}{UNLABELLED}"));
    assert_eq!(labels["unlabelled"], json!([]), "{labels}");
    assert_eq!(unreachable_by_tab(&b), Vec::<String>::new());
    for (theme, is_dark) in [("", false), ("-dark", true)] {
        b.dark(is_dark);
        b.viewport(1280, 900, false);
        b.js("document.getElementById('person-url-value').setSelectionRange(0, 0); window.getSelection().removeAllRanges();
              document.activeElement.blur(); document.getElementById('people').scrollIntoView(); return true");
        b.painted();
        let contrast = b.js(LOW_CONTRAST);
        assert_eq!(contrast["bad"], json!([]), "{theme} {contrast}");
        b.screenshot(&format!("people-1280{theme}.png"));
        b.as_phone();
        // At 360 px the box of the new URL, from its top: the URL and the token apart.
        b.js("document.getElementById('person-url').scrollIntoView(); return true");
        b.painted();
        let contrast = b.js(LOW_CONTRAST);
        assert_eq!(contrast["bad"], json!([]), "{theme} 360 {contrast}");
        b.screenshot(&format!("people-360{theme}.png"));
    }
    b.dark(false);
    b.viewport(1280, 900, false);
    b.click("#person-url-done");

    // Cancel the vacation: the line has no "until" any more.
    b.click("#vacation-cancel");
    b.wait_for(
        "the vacation gone",
        "return document.getElementById('vacation-cancel').hidden && !document.getElementById('home-state').textContent.includes('vacation')",
    );

    // Away by hand, on the card: it holds until the next arrival or departure, and says so.
    // (A moment after the last report: the clock stands still otherwise.)
    time.advance(std::time::Duration::from_secs(1));
    b.click(&format!("#away-{TEST_SERIAL}"));
    refreshed_until(&b, "away by hand", |v| {
        v["state"] == json!("Away — set by hand; holds until someone arrives or leaves")
    });

    // Revoke alice's URL (asked twice): the token line goes, and the URL is refused from now on.
    b.click("button[aria-label='Revoke the presence URL of alice']");
    b.click("#people-list li[data-person=alice] .confirm button.danger");
    b.wait_for(
        "alice's token line gone",
        "const li = document.querySelector('#people-list li[data-person=alice]');
         return li.querySelector('.token').textContent === 'No presence URL'
           && li.querySelector('button[aria-label^=\"Revoke\"]').hidden",
    );
    assert_eq!(report(control, "alice", &token, false).0, 401);
    assert_eq!(
        b.js("return document.getElementById('people-done').textContent"),
        json!("alice's presence URL is revoked.")
    );

    // Remove bob (asked twice): his row goes.
    b.click("button[aria-label='Remove bob']");
    b.click("#people-list li[data-person=bob] .confirm button.danger");
    b.wait_for(
        "bob gone",
        "return !document.querySelector('#people-list li[data-person=bob]')",
    );
    assert_eq!(report(control, "bob", &new_bob, false).0, 401);

    drop(sim);
    drop(b);
    server.shutdown();
    drop(broker);
}

/// The page's refusal of a bad name is the server's, in words, and nothing is added.
#[test]
fn a_bad_name_is_refused_in_words() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let dir = TempDir::new("people-bad");
    let mut config = Config::local(dir.path());
    config.api_origin = Some(hearth::config::ApiOrigin::parse("http://127.0.0.1").unwrap());
    let server = start_server(config);
    b.goto(&format!("http://{}/", server.control_addr()));
    b.wait_for(
        "the Home section",
        "return !document.getElementById('people').hidden",
    );
    b.click("#person-add-open");
    b.click("#person-add button[type=submit]");
    assert_eq!(
        b.js("return document.getElementById('person-add-result').textContent"),
        json!("Enter the person's name.")
    );
    b.type_into("#person-name", "not a name!");
    b.click("#person-add button[type=submit]");
    let said = b.wait_for(
        "the server's refusal",
        "const r = document.getElementById('person-add-result'); return r.className.includes('error') && r.textContent",
    );
    assert!(!said.as_str().unwrap().is_empty(), "{said}");
    assert_eq!(
        b.js("return [document.getElementById('person-url').hidden, document.querySelectorAll('#people-list li').length]"),
        json!([true, 0])
    );
    // The vacation needs a thermostat of the home to name it by: without one (never another
    // user's), the form cannot be sent, and says why.
    b.click("#vacation-open");
    assert_eq!(
        b.js(
            "return [document.querySelector('#vacation-form [type=submit]').disabled,
                      document.getElementById('vacation-result').textContent]"
        ),
        json!([
            true,
            "No thermostat of this home yet: a vacation is away on its thermostats."
        ])
    );
    drop(b);
    server.shutdown();
}
