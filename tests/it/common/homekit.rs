//! The HomeKit bridge's accessory side as the HAP transport calls it, for the tests that look
//! at what Apple Home is shown without pairing a real controller.

use std::sync::Arc;

use hearth::hap::{Identity, Pairing};
use hearth::homekit::{Attributes, Bridge};
use serde_json::{Value, json};

/// The bridge over `app`'s thermostats, with a controller paired (a bridge nobody paired is
/// not told of changes: nobody could be listening).
pub fn bridge_of(app: &Arc<hearth::app::App>) -> Bridge {
    let identity = Identity::open(&app.config().homekit_dir()).unwrap();
    identity
        .add_pairing(Pairing {
            id: "phone".into(),
            public_key: [1; 32],
            admin: true,
        })
        .unwrap();
    Bridge::new(Arc::clone(app) as _, Arc::new(identity), "hearth".into()).unwrap()
}

/// The attribute database (`GET /accessories`).
pub fn database(b: &Bridge) -> Value {
    let r = b.accessories();
    assert_eq!(r.status, 200);
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{e}: {r:?}"))
}

/// The characteristic of HAP type `char_type` in the service of type `service_type`.
pub fn characteristic(accessory: &Value, service_type: &str, char_type: &str) -> Value {
    accessory["services"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["type"] == json!(service_type))
        .flat_map(|s| s["characteristics"].as_array().unwrap().clone())
        .find(|c| c["type"] == json!(char_type))
        .unwrap_or_else(|| panic!("no {char_type} in {service_type} of {accessory}"))
}
