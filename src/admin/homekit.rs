//! `hearth homekit code`, `hearth homekit unlock` and `hearth homekit reset`: the setup code and
//! URI a person needs to add hearth to the Home app, the way out of pair-setup's lock after too
//! many wrong setup codes, and forgetting every controller paired with it. Run like the account
//! commands: on the identity's file when no server runs on the data directory, else by the
//! running server on the identity it serves (so its listener and advertisement follow at once:
//! a file changed under a running server would be overwritten by its next change).

use crate::hap::pair_setup::MAX_FAILURES;
use crate::hap::setup_uri::{CATEGORY_BRIDGE, setup_uri};
use crate::hap::{Identity, IdentityError};

/// What the running server answers when it has no HomeKit.
const OFF: &str = "HomeKit is off on the hearth server running on this data directory \
                   (HOMEKIT=false, or its identity could not be opened: see its log)";

/// The setup code, the setup URI and whether anyone is paired; or, while pair-setup is locked,
/// that it is and how to unlock it (the code pairs nothing then, and the unlock replaces it).
pub fn code(identity: Option<&Identity>) -> Result<String, String> {
    let identity = identity.ok_or(OFF)?;
    let paired = match identity.pairings().len() {
        0 => "not paired yet: in the Home app, Add Accessory, then scan the QR code on \
              hearth's page or type the setup code"
            .to_string(),
        1 => "paired with 1 controller (hearth homekit reset removes it)".to_string(),
        n => format!("paired with {n} controllers (hearth homekit reset removes them)"),
    };
    if identity.is_locked() {
        return Ok(format!(
            "pairing is locked: {MAX_FAILURES} wrong setup codes were tried (someone on your \
             network may have been guessing it), so HomeKit refuses to pair by code\n\
             to unlock: hearth homekit unlock, or Unlock under Apple Home on hearth's page; \
             either takes a new setup code and keeps paired controllers\n{paired}"
        ));
    }
    let code = identity.setup_code();
    let uri = setup_uri(CATEGORY_BRIDGE, &code, &identity.setup_id())
        .ok_or_else(|| format!("the stored setup code {code:?} is not eight digits"))?;
    Ok(format!("setup code: {code}\nsetup URI:  {uri}\n{paired}"))
}

/// Unlocks pair-setup: clears the wrong setup codes and takes a new setup code, keeping the
/// pairings. Refused, changing nothing, when it is not locked.
pub fn unlock(identity: Option<&Identity>) -> Result<String, String> {
    let identity = identity.ok_or(OFF)?;
    let code = identity.unlock().map_err(|e| match e {
        IdentityError::NotLocked(_) => format!("{e}; hearth homekit code prints the setup code"),
        e => e.to_string(),
    })?;
    let uri = setup_uri(CATEGORY_BRIDGE, &code, &identity.setup_id())
        .ok_or_else(|| format!("the new setup code {code:?} is not eight digits"))?;
    let kept = match identity.pairings().len() {
        0 => String::new(),
        1 => "; the 1 paired controller stays paired".to_string(),
        n => format!("; the {n} paired controllers stay paired"),
    };
    Ok(format!(
        "unlocked: the wrong setup codes are cleared and the old code no longer works{kept}\n\
         setup code: {code}\nsetup URI:  {uri}"
    ))
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
