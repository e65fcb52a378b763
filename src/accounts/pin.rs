//! A thermostat's pinned password: the Basic-auth password it sends (its settings API key,
//! stable across reboots) is pinned the first time the server registers it, and every request
//! that names its serial must carry it from then on.
//!
//! - Open mode: the first request that stores something for it (a subscribe or a PUT) pins the
//!   password it carries.
//! - Pairing mode, and a released thermostat: a claim pins the password of the request that
//!   asked for the claimed entry key. Each password gets its own entry key, so when two asked
//!   (the thermostat and someone pretending to be it), the code on the thermostat's screen, the
//!   one its owner types, is the thermostat's own: the claim pins the password of whoever was
//!   shown the code that was claimed.
//! - The pin is the thermostat's stored `api_key` ([`crate::state::DeviceMeta`]), which only a
//!   claim replaces: data from before pins existed is pinned to the key it already holds.
//!   Between a claim and the thermostat's next registration (which stores it there), the
//!   claimed key's password stands in for it.
//! - Removing the thermostat (deleting it, `DELETE /api/device`, the page's Remove, or its
//!   owner unlinking it) keeps the pin: a removed thermostat keeps operating (see
//!   [`mod@super::release`]), so nothing else may take its serial meanwhile. A claim pins the
//!   claimed key's password, replacing the stored one: that is how an owner lets a reflashed
//!   thermostat (a new password) back in. It is refused until its owner removes it; a removed
//!   thermostat may then ask for an entry key with another password (the device protocol
//!   skips the pin for `/nest/passphrase` and its status only), and the claim of the code on
//!   its screen pins its new password. Anything else that asks gets a code of its own, which
//!   the owner does not type, and that code's status only; it does not make the thermostat
//!   look online, and it cannot crowd out the pinned password's own code (see
//!   `crate::device`'s passphrase routes).
//! - A thermostat that sends no password has nothing to pin; the first password it sends is.

use sha2::{Digest, Sha256};

use crate::state::{DeviceMeta, DeviceTxn, State};
use crate::util::random;

/// Why a thermostat's transaction refused its password.
#[derive(Debug, PartialEq, Eq)]
pub enum PinError {
    /// Another password is pinned.
    Mismatch,
    /// A new thermostat's id could not be made.
    RandomUnavailable,
}

/// Where a thermostat's pin is, as read before its transaction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pin {
    /// The stored key.
    pub stored: Option<String>,
    /// With no stored key: the password its current owner's claim pins.
    pub claimed: Option<String>,
}

impl Pin {
    /// The password requests for the thermostat must carry, if any.
    pub fn expected(&self) -> Option<&str> {
        self.stored.as_deref().or(self.claimed.as_deref())
    }
}

/// The pin of `serial`.
pub fn lookup(state: &State, serial: &str) -> Pin {
    let stored = state
        .read_device(serial, |d| d.meta.as_ref().and_then(|m| m.api_key.clone()))
        .flatten();
    let claimed = match stored {
        Some(_) => None,
        None => claimed(state, serial),
    };
    Pin { stored, claimed }
}

/// The password of the entry key the thermostat's current owner claimed it with.
pub fn claimed(state: &State, serial: &str) -> Option<String> {
    state.accounts(|a| a.claimed_password(serial).map(str::to_string))
}

/// Whether `given` is the pinned password, compared in constant time (of the digests, so the
/// lengths do not show either).
pub fn matches(pinned: &str, given: Option<&str>) -> bool {
    let Some(given) = given else {
        return false;
    };
    let (a, b) = (Sha256::digest(pinned), Sha256::digest(given));
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// Inside a thermostat's transaction: makes sure it has its metadata (its stable id) and that
/// `password` is its pinned one, pinning it if none is (`claimed`: [`Pin::claimed`], read
/// before the transaction, which stands in for a pin not yet stored). Refuses, changing
/// nothing, when another password is pinned.
pub fn ensure(
    txn: &mut DeviceTxn<'_>,
    password: Option<&str>,
    claimed: Option<&str>,
) -> Result<(), PinError> {
    let stored = txn.meta().and_then(|m| m.api_key.clone());
    match stored.as_deref().or(claimed) {
        Some(pin) if !matches(pin, password) => Err(PinError::Mismatch),
        Some(pin) => set(txn, Some(pin)),
        None => set(txn, password),
    }
}

/// A claim's pin: the claimed key's `password` replaces the stored one (the owner vouched for
/// the code on the thermostat's screen, which was made for that password); a key made for no
/// password keeps the stored pin. Makes the metadata if needed.
pub fn pin_claimed(txn: &mut DeviceTxn<'_>, password: Option<&str>) -> Result<(), PinError> {
    let Some(password) = password else {
        return set(txn, None);
    };
    set(txn, Some(password))?;
    if let Some(meta) = txn
        .meta()
        .filter(|m| m.api_key.as_deref() != Some(password))
    {
        let meta = DeviceMeta {
            api_key: Some(password.to_string()),
            ..meta.clone()
        };
        txn.set_meta(meta);
    }
    Ok(())
}

/// Writes the metadata with `api_key` set to `key` unless one is stored (never replaced).
fn set(txn: &mut DeviceTxn<'_>, key: Option<&str>) -> Result<(), PinError> {
    let meta = match txn.meta() {
        Some(m) => DeviceMeta {
            api_key: m.api_key.clone().or_else(|| key.map(str::to_string)),
            ..m.clone()
        },
        None => DeviceMeta {
            id: random::uuid_v4().map_err(|_| PinError::RandomUnavailable)?,
            api_key: key.map(str::to_string),
            created_ms: txn.now_ms(),
        },
    };
    txn.set_meta(meta);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn comparing() {
        assert!(matches("c0ffee", Some("c0ffee")));
        assert!(!matches("c0ffee", Some("c0ffeE")));
        assert!(!matches("c0ffee", Some("c0ffee ")));
        assert!(!matches("c0ffee", Some("")));
        assert!(!matches("c0ffee", None));
    }
}
