//! The page's Apple Home panel, in Chromium: the setup code and its QR code until a controller
//! pairs, then how many have and how to start again; after too many wrong codes, that pairing
//! is locked and an Unlock button; no panel with HomeKit off.

use serde_json::json;

use super::browser::*;
use super::{LOW_CONTRAST, SHOWN, UNLABELLED, unreachable_by_tab};
use crate::common::*;
use hearth::Config;
use hearth::hap::Pairing;

fn page(
    b: &Browser,
    adjust: impl FnOnce(&mut Config),
) -> (TempDir, hearth::Server, TestThermostat) {
    let dir = TempDir::new("homekit-page");
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
    (dir, server, sim)
}

/// The panel as the page shows it (an expression).
const PANEL: &str = "(() => { const p = document.getElementById('homekit'); return {
    hidden: p.hidden, open: p.open, summary: p.querySelector('summary').textContent,
    unpaired: !document.getElementById('homekit-unpaired').hidden,
    locked: !document.getElementById('homekit-locked').hidden,
    paired: !document.getElementById('homekit-paired').hidden,
    code: document.getElementById('homekit-code').textContent,
    qr: document.getElementById('homekit-qr').getAttribute('src') !== null }; })()";

#[test]
fn the_panel_shows_the_code_until_a_controller_pairs() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let (_dir, server, sim) = page(&b, |_| {});
    let identity = server.app().homekit().identity().cloned().unwrap();
    let code = identity.setup_code();
    b.wait_for(
        "the Apple Home panel",
        "return !document.getElementById('homekit').hidden",
    );
    assert_eq!(
        b.js(&format!("return {PANEL}")),
        json!({"hidden": false, "open": false, "summary": "Apple Home (not paired)",
               "unpaired": true, "locked": false, "paired": false, "code": code, "qr": true})
    );

    // Open: the QR code is drawn (an image the browser decoded, square, readable size).
    b.click("#homekit summary");
    b.wait_for(
        "the QR code decoded",
        "const i = document.getElementById('homekit-qr'); return i.complete && i.naturalWidth > 0",
    );
    let size = b.js("const r = document.getElementById('homekit-qr').getBoundingClientRect(); return [r.width, r.height]");
    assert_eq!(size, json!([176, 176]));
    // The test's bridge listens on 127.0.0.1 only: the panel says no phone can reach it.
    let warning = b.js(
        "const w = document.getElementById('homekit-warning'); return !w.hidden && w.textContent",
    );
    assert!(
        warning
            .as_str()
            .is_some_and(|w| w.starts_with("The bridge listens only on 127.0.0.1 (CONTROL_HOST)")),
        "{warning}"
    );

    // Named, reachable, readable; at 1280 and 360 px, light and dark.
    let labels = b.js(&format!("{SHOWN}{UNLABELLED}"));
    assert_eq!(labels["unlabelled"], json!([]), "{labels}");
    assert_eq!(unreachable_by_tab(&b), Vec::<String>::new());
    for (theme, is_dark) in [("", false), ("-dark", true)] {
        b.dark(is_dark);
        b.viewport(1280, 860, false);
        b.js("document.activeElement.blur(); document.getElementById('homekit').scrollIntoView(); return true");
        b.painted();
        let contrast = b.js(LOW_CONTRAST);
        assert_eq!(contrast["bad"], json!([]), "{theme} {contrast}");
        b.screenshot(&format!("homekit-1280{theme}.png"));
        b.as_phone();
        b.js("document.getElementById('homekit').scrollIntoView(); return true");
        b.painted();
        let contrast = b.js(LOW_CONTRAST);
        assert_eq!(contrast["bad"], json!([]), "{theme} 360 {contrast}");
        b.screenshot(&format!("homekit-360{theme}.png"));
    }
    b.dark(false);
    b.viewport(1280, 860, false);

    // A phone pairs: opening the panel again shows that, and no code.
    identity
        .add_pairing(Pairing {
            id: "phone".into(),
            public_key: [5; 32],
            admin: true,
        })
        .unwrap();
    b.click("#homekit summary");
    b.click("#homekit summary");
    let panel = b.wait_for(
        "the panel saying it is paired",
        &format!("const p = {PANEL}; return p.paired ? p : null"),
    );
    assert_eq!(
        panel,
        json!({"hidden": false, "open": true, "summary": "Apple Home (paired with 1 controller)",
               "unpaired": false, "locked": false, "paired": true, "code": "", "qr": false})
    );
    assert_eq!(
        b.js("return document.getElementById('homekit-paired-text').textContent"),
        json!(
            "hearth is in the Home app: paired with 1 controller. Each thermostat shows up there as its own accessory."
        )
    );
    b.js("document.getElementById('homekit').scrollIntoView(); return true");
    b.painted();
    b.screenshot("homekit-paired-1280.png");
    drop(sim);
    drop(b);
    server.shutdown();
}

#[test]
fn the_panel_says_when_pairing_is_locked_and_unlocks_it_from_the_keyboard() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let (_dir, server, sim) = page(&b, |_| {});
    let identity = server.app().homekit().identity().cloned().unwrap();
    let old = identity.setup_code();
    // 100 wrong codes, counted as pair-setup counts them (hap::pair_setup's tests try them).
    while !identity.is_locked() {
        identity.count_setup_failure().unwrap();
    }
    // The page loaded before the lock: opening the panel looks again.
    b.wait_for(
        "the Apple Home panel",
        "return !document.getElementById('homekit').hidden",
    );
    b.click("#homekit summary");
    let panel = b.wait_for(
        "the panel saying pairing is locked",
        &format!("const p = {PANEL}; return p.locked ? p : null"),
    );
    assert_eq!(
        panel,
        json!({"hidden": false, "open": true, "summary": "Apple Home (pairing locked)",
               "unpaired": false, "locked": true, "paired": false, "code": "", "qr": false})
    );
    assert_eq!(
        b.js("return document.getElementById('homekit-locked').innerText"),
        json!(
            "Pairing is locked. Someone tried 100 wrong setup codes (perhaps a device on your network guessing it), so hearth refuses every attempt to add it to the Home app.\n\nUnlock takes a new setup code and shows it here. The old code stops working; controllers already paired stay paired.\n\nUnlock"
        )
    );

    // Named, reachable, readable; at 1280 and 360 px, light and dark.
    let labels = b.js(&format!("{SHOWN}{UNLABELLED}"));
    assert_eq!(labels["unlabelled"], json!([]), "{labels}");
    assert_eq!(unreachable_by_tab(&b), Vec::<String>::new());
    for (theme, is_dark) in [("", false), ("-dark", true)] {
        b.dark(is_dark);
        b.viewport(1280, 860, false);
        b.js("document.activeElement.blur(); document.getElementById('homekit').scrollIntoView(); return true");
        b.painted();
        let contrast = b.js(LOW_CONTRAST);
        assert_eq!(contrast["bad"], json!([]), "{theme} {contrast}");
        b.screenshot(&format!("homekit-locked-1280{theme}.png"));
        b.as_phone();
        b.js("document.getElementById('homekit').scrollIntoView(); return true");
        b.painted();
        let contrast = b.js(LOW_CONTRAST);
        assert_eq!(contrast["bad"], json!([]), "{theme} 360 {contrast}");
        b.screenshot(&format!("homekit-locked-360{theme}.png"));
    }
    b.dark(false);
    b.viewport(1280, 860, false);

    // Tab to Unlock and press Enter: a new code, shown at once with its QR code, and said.
    b.js("document.activeElement.blur(); window.scrollTo(0, 0); return true");
    let mut reached = false;
    for _ in 0..300 {
        if b.js("return document.activeElement.id") == json!("homekit-unlock") {
            reached = true;
            break;
        }
        b.press("\u{E004}");
    }
    assert!(reached, "Tab never reached Unlock");
    b.press("\u{E007}");
    let panel = b.wait_for(
        "the panel showing the new code",
        &format!("const p = {PANEL}; return p.unpaired && p.code ? p : null"),
    );
    let code = identity.setup_code();
    assert_ne!(code, old);
    assert!(!identity.is_locked());
    assert_eq!(
        panel,
        json!({"hidden": false, "open": true, "summary": "Apple Home (not paired)",
               "unpaired": true, "locked": false, "paired": false, "code": code, "qr": true})
    );
    assert_eq!(
        b.js("return [document.getElementById('homekit-result').textContent, document.activeElement.id]"),
        json!([
            "Unlocked: pairing works again with the new setup code shown above.",
            "homekit-code"
        ])
    );
    b.wait_for(
        "the new QR code decoded",
        "const i = document.getElementById('homekit-qr'); return i.complete && i.naturalWidth > 0",
    );
    b.js("document.getElementById('homekit').scrollIntoView(); return true");
    b.painted();
    b.screenshot("homekit-unlocked-1280.png");

    // An unlock nobody needed (another tab unlocked first) says why and changes nothing.
    b.js("document.getElementById('homekit-locked').hidden = false; return true");
    b.click("#homekit-unlock");
    b.wait_for(
        "the refusal said",
        "return document.getElementById('homekit-result').textContent.startsWith('HomeKit pairing is not locked')",
    );
    assert_eq!(identity.setup_code(), code);
    b.wait_for(
        "the panel as it is",
        &format!("const p = {PANEL}; return !p.locked && p.unpaired ? p : null"),
    );
    drop(sim);
    drop(b);
    server.shutdown();
}

#[test]
fn no_panel_with_homekit_off() {
    let Some(b) = Browser::launch() else {
        return;
    };
    let (_dir, server, sim) = page(&b, |c| c.homekit.enabled = false);
    // The page has asked (its answer is what hides the panel): shown it would have been by now.
    b.wait_for(
        "the page's request answered",
        "return performance.getEntriesByType('resource').some((e) => e.name.endsWith('/api/homekit') && e.responseEnd > 0)",
    );
    b.painted();
    assert_eq!(
        b.js("return document.getElementById('homekit').hidden"),
        json!(true)
    );
    drop(sim);
    drop(b);
    server.shutdown();
}
