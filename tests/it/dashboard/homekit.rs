//! The page's Apple Home panel, in Chromium: the setup code and its QR code until a controller
//! pairs, then how many have and how to start again; no panel with HomeKit off.

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

fn dark(b: &Browser, on: bool) {
    let value = if on { "dark" } else { "light" };
    b.call(
        "POST",
        "/goog/cdp/execute",
        json!({"cmd": "Emulation.setEmulatedMedia", "params": {
            "features": [{"name": "prefers-color-scheme", "value": value}]}}),
    );
    b.painted();
}

/// The panel as the page shows it (an expression).
const PANEL: &str = "(() => { const p = document.getElementById('homekit'); return {
    hidden: p.hidden, open: p.open, summary: p.querySelector('summary').textContent,
    unpaired: !document.getElementById('homekit-unpaired').hidden,
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
               "unpaired": true, "paired": false, "code": code, "qr": true})
    );

    // Open: the QR code is drawn (an image the browser decoded, square, readable size).
    b.click("#homekit summary");
    b.wait_for(
        "the QR code decoded",
        "const i = document.getElementById('homekit-qr'); return i.complete && i.naturalWidth > 0",
    );
    let size = b.js("const r = document.getElementById('homekit-qr').getBoundingClientRect(); return [r.width, r.height]");
    assert_eq!(size, json!([176, 176]));

    // Named, reachable, readable; at 1280 and 360 px, light and dark.
    let labels = b.js(&format!("{SHOWN}{UNLABELLED}"));
    assert_eq!(labels["unlabelled"], json!([]), "{labels}");
    assert_eq!(unreachable_by_tab(&b), Vec::<String>::new());
    for (theme, is_dark) in [("", false), ("-dark", true)] {
        dark(&b, is_dark);
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
    dark(&b, false);
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
               "unpaired": false, "paired": true, "code": "", "qr": false})
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
