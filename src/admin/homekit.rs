//! `hearth homekit code` and `hearth homekit reset`: the setup code and URI a person needs to
//! add hearth to the Home app, and forgetting every controller paired with it. Run like the
//! account commands: on the identity's file when no server runs on the data directory, else by
//! the running server on the identity it serves (so its listener and advertisement follow at
//! once: a file changed under a running server would be overwritten by its next change).

use crate::hap::Identity;
use crate::hap::setup_uri::{CATEGORY_BRIDGE, setup_uri};

/// What the running server answers when it has no HomeKit.
const OFF: &str = "HomeKit is off on the hearth server running on this data directory \
                   (HOMEKIT=false, or its identity could not be opened: see its log)";

/// The setup code, the setup URI and whether anyone is paired.
pub fn code(identity: Option<&Identity>) -> Result<String, String> {
    let identity = identity.ok_or(OFF)?;
    let code = identity.setup_code();
    let uri = setup_uri(CATEGORY_BRIDGE, &code, &identity.setup_id())
        .ok_or_else(|| format!("the stored setup code {code:?} is not eight digits"))?;
    let paired = match identity.pairings().len() {
        0 => "not paired yet: in the Home app, Add Accessory, then scan the QR code on \
              hearth's page or type the setup code"
            .to_string(),
        1 => "paired with 1 controller (hearth homekit reset removes it)".to_string(),
        n => format!("paired with {n} controllers (hearth homekit reset removes them)"),
    };
    Ok(format!("setup code: {code}\nsetup URI:  {uri}\n{paired}"))
}

/// Removes every pairing (and takes a new device id, so a controller that kept the old pairing
/// sees a new accessory rather than one that refuses it).
pub fn reset(identity: Option<&Identity>) -> Result<String, String> {
    let identity = identity.ok_or(OFF)?;
    let before = identity.pairings().len();
    identity.reset().map_err(|e| e.to_string())?;
    Ok(format!(
        "removed {before} pairing{}; to use hearth in the Home app again, remove the old \
         bridge there and add hearth anew (hearth homekit code)",
        if before == 1 { "" } else { "s" }
    ))
}
