//! The alerts on the page, in Chromium: a banner per active alert above the cards, naming the
//! thermostat, the safety kinds standing out; the recent ones in a closed list below the cards;
//! "Filter changed" on a filter alert. Alerts are raised and cleared on the board directly
//! (`Alerts::note`, as the rules do once a notice is durable), with no change of any thermostat:
//! the page learns of them from the event stream's `alert` events, without a reload.

use serde_json::json;

use super::browser::*;
use super::{LOW_CONTRAST, SHOWN, UNLABELLED, unreachable_by_tab};
use crate::common::*;
use hearth::Config;
use hearth::Server;
use hearth::alerts::{Alert, Event, Kind, Notice};
use hearth::util::clock::iso8601_ms;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn alert(kind: Kind, minutes_ago: i64, message: &str) -> Alert {
    Alert {
        id: format!("{}-{TEST_SERIAL}", kind.as_str()),
        serial: TEST_SERIAL.to_string(),
        kind,
        started_at: iso8601_ms(now_ms() - minutes_ago * 60_000),
        cleared_at: None,
        message: message.to_string(),
    }
}

fn cold() -> Alert {
    alert(
        Kind::LowTemperature,
        42,
        "Test Room is 5.8°C (below 7°C) — heating is on but the room is not warming",
    )
}

fn offline() -> Alert {
    alert(
        Kind::Offline,
        95,
        "Test Room has not been in touch for 30 minutes",
    )
}

fn filter() -> Alert {
    alert(
        Kind::Filter,
        600,
        "Test Room's filter has run 500 hours: time to change it",
    )
}

fn start(server: &Server, a: Alert) {
    server.app().alerts().note(Notice {
        event: Event::Started,
        alert: a,
    });
}

fn clear(server: &Server, mut a: Alert) {
    a.cleared_at = Some(iso8601_ms(now_ms() - 5 * 60_000));
    server.app().alerts().note(Notice {
        event: Event::Cleared,
        alert: a,
    });
}

/// The banners as the page shows them (an expression).
const BANNERS: &str = "[...document.querySelectorAll('#alerts .alert')].map((b) => ({
    kind: b.dataset.kind, safety: b.classList.contains('safety'),
    what: b.querySelector('.what').textContent, words: b.querySelector('.words').textContent,
    button: b.querySelector('button') ? b.querySelector('button').textContent : null }))";

/// The page with the test's thermostat, its card drawn and its stream live.
fn page_with_thermostat(b: &Browser) -> (TempDir, Server, TestThermostat) {
    page_with_thermostat_and(b, |_| {})
}

fn page_with_thermostat_and(
    b: &Browser,
    adjust: impl FnOnce(&mut Config),
) -> (TempDir, Server, TestThermostat) {
    let dir = TempDir::new("alerts-page");
    let mut config = Config::local(dir.path());
    config.api_origin = Some(hearth::config::ApiOrigin::parse("http://127.0.0.1").unwrap());
    adjust(&mut config);
    let server = start_server(config);
    let sim = TestThermostat::start(&format!("http://{}", server.device_addr()));
    b.goto(&format!("http://{}/", server.control_addr()));
    b.wait_for(
        "the thermostat's card",
        &format!("return !!document.querySelector('#card-{TEST_SERIAL} svg.chart')"),
    );
    b.wait_for(
        "the live indicator",
        "return document.getElementById('live').textContent === 'Live'",
    );
    (dir, server, sim)
}

#[test]
fn alerts_show_as_banners_at_once_and_the_cleared_ones_as_a_list() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let (_dir, server, sim) = page_with_thermostat(&b);
    assert_eq!(b.js(&format!("return {BANNERS}")), json!([]));
    assert_eq!(
        b.js("return document.getElementById('alerts-recent').hidden"),
        json!(true)
    );

    // Three alerts start, with no change of the thermostat: each is a banner, without a reload.
    b.js("window.__sameLoad = true; return true");
    start(&server, offline());
    start(&server, filter());
    start(&server, cold());
    let banners = b.wait_for(
        "three banners",
        &format!("const b = {BANNERS}; return b.length === 3 ? b : null"),
    );
    assert_eq!(
        banners,
        json!([
            {"kind": "low_temperature", "safety": true, "what": "Too cold · Test Room",
             "words": cold().message, "button": null},
            {"kind": "offline", "safety": false, "what": "Thermostat offline · Test Room",
             "words": offline().message, "button": null},
            {"kind": "filter", "safety": false, "what": "Filter due · Test Room",
             "words": filter().message, "button": "Filter changed"},
        ])
    );
    // The safety kind first (it started last), the rest oldest first; the banners come before
    // the cards; a safety kind says so to a screen reader as well.
    assert_eq!(
        b.js("return !!(document.getElementById('alerts').compareDocumentPosition(document.getElementById('cards')) & Node.DOCUMENT_POSITION_FOLLOWING)"),
        json!(true)
    );
    assert_eq!(
        b.js("return document.querySelector('#alerts .alert.safety .sr').textContent"),
        json!("Urgent: ")
    );
    assert_eq!(
        b.js("return document.querySelector('#alerts .alert[data-kind=filter] button').getAttribute('aria-label')"),
        json!("Filter changed on Test Room: reset its filter reminder")
    );

    // One clears: its banner goes, and it is listed under "Recent alerts", closed.
    clear(&server, offline());
    b.wait_for(
        "the offline banner gone and listed as recent",
        "return !document.querySelector('#alerts .alert[data-kind=offline]') && !document.getElementById('alerts-recent').hidden",
    );
    assert_eq!(
        b.js("const r = document.getElementById('alerts-recent');
              return [r.open, r.querySelector('summary').textContent,
                      [...r.querySelectorAll('li')].map((li) => li.dataset.kind)]"),
        json!([false, "Recent alerts (1)", ["offline"]])
    );
    let row = b.js("return document.querySelector('#alerts-recent li').textContent");
    assert!(
        row.as_str()
            .unwrap()
            .starts_with("Thermostat offline · Test Room — Test Room has not been in touch"),
        "{row}"
    );
    assert_eq!(b.js("return window.__sameLoad === true"), json!(true));

    // A refused acknowledgement is said in the banner, which stays (the answer is the test's).
    b.js("const realFetch = window.fetch;
          window.fetch = (input, init) => String(input).includes('api/alerts/ack')
            ? Promise.resolve(new Response(JSON.stringify({error: 'Alert not found'}), {status: 404}))
            : realFetch(input, init);
          return true");
    b.click("#alerts .alert[data-kind=filter] button");
    b.wait_for(
        "the refusal in the banner",
        "return document.querySelector('#alerts .alert[data-kind=filter] .error').textContent === 'Alert not found'",
    );
    b.js("document.querySelector('#alerts .alert[data-kind=filter] .error').textContent = ''; return true");

    // Named, reachable by the keyboard, readable; at 1280 and 360 px, light and dark.
    b.js("document.getElementById('alerts-recent').open = true; return true");
    let labels = b.js(&format!("{SHOWN}{UNLABELLED}"));
    assert_eq!(labels["unlabelled"], json!([]), "{labels}");
    assert_eq!(unreachable_by_tab(&b), Vec::<String>::new());
    b.viewport(1280, 860, false);
    for (theme, is_dark) in [("", false), ("-dark", true)] {
        b.dark(is_dark);
        let contrast = b.js(LOW_CONTRAST);
        assert_eq!(contrast["bad"], json!([]), "{theme} {contrast}");
        b.viewport(1280, 860, false);
        b.js("document.activeElement.blur(); window.scrollTo(0, 0); return true");
        b.wait_for("the top of the page", "return window.scrollY === 0");
        b.painted();
        b.screenshot(&format!("alerts-1280{theme}.png"));
        if !is_dark {
            b.js("document.getElementById('alerts-recent').scrollIntoView(); return true");
            b.painted();
            b.screenshot("alerts-recent-1280.png");
        }
        b.as_phone();
        b.js("window.scrollTo(0, 0); return true");
        b.painted();
        let contrast = b.js(LOW_CONTRAST);
        assert_eq!(contrast["bad"], json!([]), "{theme} 360 {contrast}");
        b.screenshot(&format!("alerts-360{theme}.png"));
    }
    drop(sim);
    drop(b);
    server.shutdown();
}

#[test]
fn filter_changed_acknowledges_the_filter_alert() {
    let Some(b) = Browser::launch() else {
        return;
    };
    // Raised by the filter rule itself: two hours of heating in the energy history, a
    // reminder after one.
    let (_dir, server, sim) = page_with_thermostat_and(&b, |c| {
        energy::seed_days(
            &c.data_dir,
            TEST_SERIAL,
            &[energy::SeedDay {
                days_ago: 1,
                heat_s: 7200,
                ..Default::default()
            }],
        );
        c.alerts.filter_after_s = Some(3600);
    });
    b.wait_for(
        "the filter banner",
        "return !!document.querySelector('#alerts .alert[data-kind=filter] button')",
    );
    let filter = server.app().alerts().active().remove(0);
    assert_eq!(filter.kind, Kind::Filter);
    b.js("window.__acks = [];
          const realFetch = window.fetch;
          window.fetch = async (input, init) => {
            const res = await realFetch(input, init);
            if (String(input).includes('api/alerts/ack')) window.__acks.push([init.method, init.body, res.status]);
            return res;
          };
          return true");
    b.click("#alerts .alert[data-kind=filter] button");
    let acks = b.wait_for(
        "the acknowledgement",
        "return window.__acks.length ? window.__acks : null",
    );
    assert_eq!(
        acks,
        json!([["POST", format!("{{\"id\":\"{}\"}}", filter.id), 200]])
    );
    b.wait_for(
        "the filter banner gone",
        "return !document.querySelector('#alerts .alert[data-kind=filter]')",
    );
    assert!(server.app().alerts().active().is_empty());
    drop(sim);
    drop(b);
    server.shutdown();
}

/// The settings panel's rows: each setting's name, source and whether it offers "Use the …".
const SETTING_ROWS: &str =
    "return Object.fromEntries([...document.querySelectorAll('#alert-settings [data-setting]')]
    .map((r) => [r.dataset.setting, [r.dataset.source, !!r.querySelector('button.back')]]))";

#[test]
fn alert_settings_are_set_on_the_page_and_a_test_reports_each_receivers_status() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let ntfy = crate::alerts::Receiver::start(0);
    let (_dir, server, sim) = page_with_thermostat(&b);
    b.click("#alert-settings > summary");
    b.wait_for(
        "the settings",
        "return !!document.getElementById('as-ntfy_url')",
    );
    let rows = b.js(SETTING_ROWS);
    assert_eq!(rows["ntfy_url"], json!(["default", false]), "{rows}");
    assert_eq!(rows["alert_low_c"], json!(["default", false]), "{rows}");
    assert_eq!(
        b.js("return document.getElementById('as-alert_offline_minutes').value"),
        json!("30")
    );

    // A bad URL is refused naming its field, which is marked; nothing is saved.
    b.type_into("#as-webhook_url", "hooks.lan/hearth");
    b.click("#alert-settings-form button[type=submit]");
    b.wait_for(
        "the refusal",
        "return document.getElementById('alert-settings-result').textContent.startsWith('webhook_url must be')",
    );
    assert_eq!(
        b.js("const i = document.getElementById('as-webhook_url'); return [i.getAttribute('aria-invalid'), document.activeElement === i]"),
        json!(["true", true])
    );
    assert_eq!(
        server
            .app()
            .alerts()
            .settings()
            .unwrap()
            .config()
            .webhook_url,
        None
    );

    // The ntfy URL and a low limit, saved: in force at once, each saying it was saved here.
    b.type_into("#as-webhook_url", "");
    b.type_into("#as-ntfy_url", &ntfy.url());
    b.type_into("#as-alert_low_c", "10");
    b.click("#alert-settings-form button[type=submit]");
    b.wait_for(
        "the saved note",
        "return document.getElementById('alert-settings-result').textContent === 'Saved: in force now, no restart needed.'",
    );
    let config = server.app().alerts().settings().unwrap().config();
    assert_eq!(
        (config.ntfy_url.as_deref(), config.low_c),
        (Some(ntfy.url().as_str()), 10.0)
    );
    let rows = b.js(SETTING_ROWS);
    assert_eq!(rows["ntfy_url"], json!(["saved", true]), "{rows}");
    assert_eq!(rows["alert_low_c"], json!(["saved", true]), "{rows}");
    assert_eq!(
        b.js("return document.getElementById('as-alert_low_c-source').textContent"),
        json!("Saved here. The default value: 7.")
    );

    // Send a test: the receiver gets it, and the page says its status.
    b.click("#alert-test");
    let results = b.wait_for(
        "the test's results",
        "const l = document.getElementById('alert-test-results');
         return l.hidden ? null : [...l.querySelectorAll('li')].map((li) => [li.dataset.target, li.dataset.ok, li.querySelector('.grow').textContent])",
    );
    assert_eq!(results, json!([["ntfy", "true", "ntfy answered 200"]]));
    assert_eq!(
        ntfy.wait_for(1)[0].header("Title"),
        Some("Test from hearth")
    );
    assert_eq!(
        b.js("return document.getElementById('alert-settings-result').textContent"),
        json!("Test sent: 1 of 1 reached.")
    );

    // Named, reachable by the keyboard, readable; at 1280 and 360 px, light and dark.
    let labels = b.js(&format!("{SHOWN}{UNLABELLED}"));
    assert_eq!(labels["unlabelled"], json!([]), "{labels}");
    assert_eq!(unreachable_by_tab(&b), Vec::<String>::new());
    for (theme, is_dark) in [("", false), ("-dark", true)] {
        b.dark(is_dark);
        b.viewport(1280, 1000, false);
        b.js("document.activeElement.blur(); document.getElementById('alert-settings').scrollIntoView(); return true");
        b.painted();
        let contrast = b.js(LOW_CONTRAST);
        assert_eq!(contrast["bad"], json!([]), "{theme} {contrast}");
        b.screenshot(&format!("alerts-settings-1280{theme}.png"));
        b.as_phone();
        b.js("document.getElementById('alert-settings').scrollIntoView(); return true");
        b.painted();
        let contrast = b.js(LOW_CONTRAST);
        assert_eq!(contrast["bad"], json!([]), "{theme} 360 {contrast}");
        b.screenshot(&format!("alerts-settings-360{theme}.png"));
    }
    b.dark(false);
    b.viewport(1280, 1000, false);

    // Cleared back to the default.
    b.click("#alert-settings [data-setting=alert_low_c] button.back");
    b.wait_for(
        "the default again",
        "return document.getElementById('as-alert_low_c') && document.getElementById('as-alert_low_c').value === '7'",
    );
    assert_eq!(
        server.app().alerts().settings().unwrap().config().low_c,
        7.0
    );
    drop(sim);
    drop(b);
    server.shutdown();
}
