//! `GET /api/homekit`: what the page's HomeKit panel shows; `POST /api/homekit/unlock`: the way
//! out of pair-setup's lock after too many wrong setup codes. The setup code is a secret (with
//! it, anyone on the network could pair and control every thermostat until the first controller
//! pairs), so both routes are under the browser rule's full guard like every route that shows
//! one (a foreign web page cannot read it), want a `write` key with `CONTROL_REQUIRE_KEY` as the
//! account routes do, and are never cached; the code is given only while it can pair: nobody
//! paired (after that, pair-setup is refused anyway until `hearth homekit reset`) and pair-setup
//! not locked (then the unlock gives a new one).

use qrcode::{Color, EcLevel, QrCode};
use serde_json::json;

use super::ControlError;
use crate::app::App;
use crate::hap::IdentityError;
use crate::hap::setup_uri::{CATEGORY_BRIDGE, setup_uri};
use crate::http::Response;
use crate::store::StoreError;

/// Blank modules around the code: the quiet zone QR readers need.
const QUIET: usize = 4;

/// `{"enabled", "name", "port", "paired", "pairings", "locked", "setup_code", "setup_uri",
/// "qr_svg"}`; with HomeKit off only `{"enabled": false}`. The code, the URI and the QR code
/// (an SVG of the URI) are `null` once a controller is paired, and while pair-setup is locked.
pub fn homekit(app: &App) -> Response {
    let Some(identity) = app.homekit().identity() else {
        return no_store(Response::json(200, &json!({ "enabled": false })));
    };
    let pairings = identity.pairings().len();
    let locked = identity.is_locked();
    let code = identity.setup_code();
    let uri = (pairings == 0 && !locked)
        .then(|| setup_uri(CATEGORY_BRIDGE, &code, &identity.setup_id()))
        .flatten();
    no_store(Response::json(
        200,
        &json!({
            "enabled": true,
            "name": app.config().homekit.name,
            // The port it listens on (null if its listener could not start).
            "port": app.homekit().port(),
            // Why no phone can reach it, if none can.
            "warning": crate::app::unreachable_from_lan(
                crate::app::Reach::Phones,
                app.origin(),
                app.config(),
            ),
            "paired": pairings > 0,
            "pairings": pairings,
            // Too many wrong setup codes: every pair-setup is refused until an unlock.
            "locked": locked,
            "setup_code": uri.as_ref().map(|_| code),
            "setup_uri": uri,
            "qr_svg": uri.as_deref().and_then(qr_svg),
        }),
    ))
}

/// `POST /api/homekit/unlock` (its body is not read): clears the count of wrong setup codes and
/// takes a new setup code, durably, keeping the pairings ([`crate::hap::Identity::unlock`]);
/// answers as `GET /api/homekit` does, with the new code. 409 when pair-setup is not locked,
/// 404 with HomeKit off; either changes nothing.
pub fn unlock(app: &App) -> Result<Response, ControlError> {
    let identity = app.homekit().identity().ok_or_else(|| {
        ControlError::Missing(
            "HomeKit is off (HOMEKIT=false, or its identity could not be opened: see the log)"
                .into(),
        )
    })?;
    match identity.unlock() {
        Ok(_) => {
            log::info!("HomeKit: pair-setup unlocked from the control API, with a new setup code");
            Ok(homekit(app))
        }
        Err(e @ IdentityError::NotLocked(_)) => Err(ControlError::Conflict(e.to_string())),
        Err(e) => Err(ControlError::Storage(StoreError::WriteFailed {
            path: identity.file(),
            detail: e.to_string(),
        })),
    }
}

fn no_store(mut response: Response) -> Response {
    response
        .headers
        .push(("Cache-Control".into(), "no-store".into()));
    response
}

/// `text` as a QR code, drawn as one SVG path of dark modules on a white square (readable in
/// dark mode too). Medium error correction: an `X-HM://` URI is 20 characters of the QR
/// alphanumeric set, which fit the smallest code (21 modules a side).
pub fn qr_svg(text: &str) -> Option<String> {
    let code = QrCode::with_error_correction_level(text.as_bytes(), EcLevel::M).ok()?;
    let width = code.width();
    let size = width + 2 * QUIET;
    let mut path = String::new();
    for (i, color) in code.to_colors().iter().enumerate() {
        if *color == Color::Dark {
            let (x, y) = (i % width + QUIET, i / width + QUIET);
            path.push_str(&format!("M{x} {y}h1v1h-1z"));
        }
    }
    Some(format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {size} {size}\" \
         shape-rendering=\"crispEdges\" role=\"img\" aria-label=\"HomeKit setup code\">\
         <rect width=\"{size}\" height=\"{size}\" fill=\"#fff\"/>\
         <path fill=\"#000\" d=\"{path}\"/></svg>"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The modules drawn are the encoder's: counted back from the path.
    #[test]
    fn the_svg_draws_every_dark_module() {
        let uri = "X-HM://0023GXK3LAAAA";
        let svg = qr_svg(uri).unwrap();
        let code = QrCode::with_error_correction_level(uri, EcLevel::M).unwrap();
        assert_eq!(
            code.width(),
            21,
            "version 1: 20 characters of the alphanumeric set"
        );
        let dark = code
            .to_colors()
            .iter()
            .filter(|c| **c == Color::Dark)
            .count();
        assert_eq!(svg.matches("h1v1h-1z").count(), dark);
        assert!(svg.contains("viewBox=\"0 0 29 29\""));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }
}
