//! Entry keys: the 7-character code (3 digits, 4 letters) a thermostat shows so its owner can
//! claim it. An active key is returned again on every call; an expired or claimed one is
//! replaced. Keys come from the kernel's CSPRNG.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use parking_lot::Mutex;

use serde_json::json;

use super::DeviceError;
use crate::app::App;
use crate::http::Response;
use crate::hub::Origin;
use crate::state::{Accounts, AccountsTxn, EntryKey, Op, Stamp};
use crate::util::{JsonMap, random};

const ATTEMPTS: usize = 20;

/// Who asks for an entry key (or its status).
#[derive(Clone, Copy, Debug)]
pub struct Asker<'a> {
    /// The Basic-auth password the request carried.
    pub password: Option<&'a str>,
    /// The serial's pinned password, if it has one (see [`crate::accounts::pin`]).
    pub pin: Option<&'a str>,
    /// Let through without the pinned password: a released thermostat may ask with another
    /// (a reflashed one), and so may anyone on the LAN. Such a request is served its own key
    /// only, and leaves the thermostat's things alone.
    pub exempt: bool,
}

impl Asker<'_> {
    /// Whether it gave the serial's pinned password: then it is the thermostat itself.
    fn pinned(&self) -> bool {
        self.pin.is_some() && !self.exempt
    }
}

/// `GET /nest/passphrase`: `{"value": CODE, "expires": ms}` (`expires` is a number: the
/// firmware silently rejects a string). Each password asking for a serial gets its own key, so
/// the code a thermostat shows is the one made for its password (the one a claim pins).
/// At most `max_pending_entry_keys` unclaimed keys are kept: expired ones are pruned to make
/// room, and with none expired a new key is refused (503, nothing stored). Before that, one
/// client address (`remote`; an IPv6 one by its /64) may hold at most
/// `max_entry_keys_per_address` unclaimed, unexpired keys, and one serial at most
/// `max_entry_keys_per_serial` waiting passwords other than its pinned one (429, nothing
/// stored). The pinned password (the thermostat itself) is never crowded out by others: it is
/// not counted among them, and the cap of all keys does not refuse it (expired keys are still
/// pruned to make room). An active key asked for again is returned whatever the caps.
pub fn get(
    app: &App,
    keys_by_address: &Mutex<HashMap<IpAddr, Vec<(String, i64)>>>,
    remote: Option<IpAddr>,
    serial: Option<&str>,
    asker: &Asker<'_>,
) -> Result<Response, DeviceError> {
    let serial = serial.ok_or(DeviceError::SerialRequired)?;
    let ttl_ms =
        i64::try_from(app.config().entry_key_ttl_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
    let client = remote.map(crate::util::client_key);
    // Held across the accounts update, so two requests from one address cannot both pass.
    let mut by_address = keys_by_address.lock();
    let key = app.state().update_accounts(|txn| {
        let now = txn.now_ms();
        if let Some(active) = txn
            .accounts()
            .latest_entry_key_for(serial, asker.password)
            .filter(|k| k.is_active(now))
        {
            return Ok(active.clone());
        }
        let wish = Wish {
            serial,
            asker,
            client,
            now,
        };
        if let Some(expired) = room_for_a_key(app, txn.accounts(), &wish, &mut by_address)? {
            txn.push(Op::DropEntryKeys { codes: expired });
        }
        let key = new_key(txn, &wish, ttl_ms)?;
        if let Some(client) = client {
            by_address
                .entry(client)
                .or_default()
                .push((key.code.clone(), key.created_ms));
        }
        Ok::<_, DeviceError>(key)
    });
    // A key whose update failed (nothing stored) was counted above: forget it.
    if key.is_err() {
        by_address.retain(|_, handed| {
            handed.retain(|(code, _)| app.state().accounts(|a| a.entry_keys.contains_key(code)));
            !handed.is_empty()
        });
    }
    drop(by_address);
    let key = key?;
    // The thermostat's screen is not for whoever else asked.
    if !asker.exempt {
        ensure_pairing_dialog(app, serial)?;
    }
    Ok(Response::json(
        200,
        &json!({"value": key.code, "expires": key.expires_ms}),
    ))
}

/// Who asks for a new entry key, and when.
struct Wish<'a> {
    serial: &'a str,
    asker: &'a Asker<'a>,
    client: Option<IpAddr>,
    now: i64,
}

/// Whether a new key may be made under the caps (per address, per serial, in all): `Ok(None)`
/// when there is room, `Ok(Some(codes))` when there is room once the expired keys `codes` are
/// dropped. Prunes the per-address record of keys no longer waiting on the way.
fn room_for_a_key(
    app: &App,
    accounts: &Accounts,
    wish: &Wish<'_>,
    by_address: &mut HashMap<IpAddr, Vec<(String, i64)>>,
) -> Result<Option<Vec<String>>, DeviceError> {
    let Wish {
        serial,
        asker,
        client,
        now,
    } = *wish;
    // Keys handed out that are claimed, expired or gone no longer count (pruned for every
    // address, so the map holds no more than the keys waiting).
    let waiting = |(code, created): &(String, i64)| {
        accounts
            .entry_keys
            .get(code)
            .is_some_and(|k| k.created_ms == *created && k.is_active(now))
    };
    by_address.retain(|_, handed| {
        handed.retain(waiting);
        !handed.is_empty()
    });
    if let Some(client) = client {
        let handed = by_address.get(&client).map_or(0, Vec::len);
        if handed >= app.config().max_entry_keys_per_address {
            log::warn!(
                "refused an entry key for {serial}: {client} has {handed} unclaimed entry \
                 keys waiting already"
            );
            return Err(DeviceError::TooManyEntryKeysFromAddress);
        }
    }
    // The passwords other than the pinned one waiting for this serial; the pinned one (the
    // thermostat itself) has a place of its own.
    let others = || {
        accounts
            .entry_keys
            .values()
            .filter(|k| k.serial == serial && k.is_active(now))
            .map(|k| k.password.as_deref())
            .filter(|p| {
                asker
                    .pin
                    .is_none_or(|pin| !crate::accounts::pin::matches(pin, *p))
            })
            .collect::<HashSet<_>>()
            .len()
    };
    if !asker.pinned() && others() >= app.config().max_entry_keys_per_serial {
        let passwords = others();
        log::warn!(
            "refused an entry key for {serial}: {passwords} passwords have entry keys \
             waiting for it already"
        );
        return Err(DeviceError::TooManyEntryKeysForSerial);
    }
    // An unclaimed key this one replaces (same serial and password) makes room by itself.
    let replaced = accounts
        .latest_entry_key_for(serial, asker.password)
        .is_some_and(|k| k.claimed_by.is_none());
    let unclaimed = || {
        accounts
            .entry_keys
            .values()
            .filter(|k| k.claimed_by.is_none())
    };
    let cap = app.config().max_pending_entry_keys;
    if unclaimed().count() < cap || replaced {
        return Ok(None);
    }
    let expired: Vec<String> = unclaimed()
        .filter(|k| !k.is_active(now))
        .map(|k| k.code.clone())
        .collect();
    if unclaimed().count() - expired.len() >= cap && !asker.pinned() {
        log::warn!(
            "refused an entry key for {serial}: {cap} unclaimed entry keys are waiting already"
        );
        return Err(DeviceError::TooManyEntryKeys);
    }
    Ok((!expired.is_empty()).then_some(expired))
}

/// A new key with a code no other key has, stored by `txn`.
fn new_key(txn: &mut AccountsTxn, wish: &Wish<'_>, ttl_ms: i64) -> Result<EntryKey, DeviceError> {
    for _ in 0..ATTEMPTS {
        let code = new_code().map_err(|_| DeviceError::RandomUnavailable)?;
        if txn.accounts().entry_keys.contains_key(&code) {
            continue;
        }
        let key = EntryKey {
            code,
            serial: wish.serial.to_string(),
            created_ms: wish.now,
            expires_ms: wish.now.saturating_add(ttl_ms),
            claimed_by: None,
            claimed_ms: None,
            password: wish.asker.password.map(str::to_string),
        };
        txn.push(Op::PutEntryKey { key: key.clone() });
        return Ok(key);
    }
    Err(DeviceError::EntryKeyUnavailable)
}

/// The `device_alert_dialog.<SERIAL>` bucket that makes the thermostat show its
/// "confirm pairing" dialog; created once, with the first entry key.
fn ensure_pairing_dialog(app: &App, serial: &str) -> Result<(), DeviceError> {
    let key = format!("device_alert_dialog.{serial}");
    app.state().update_device(serial, Origin::Device, |txn| {
        if txn.bucket(&key).is_none() {
            let mut value = JsonMap::new();
            value.insert("dialog_data".into(), json!(""));
            value.insert("dialog_id".into(), json!("confirm-pairing"));
            txn.merge(&key, &value, Stamp::Always);
        }
        Ok::<_, DeviceError>(())
    })
}

/// `GET /nest/passphrase/status`: whether the newest key made for this password (else for the
/// serial) has been claimed. A request let through without the pinned password (`exempt`) is
/// told of its own key only: the serial's other keys, and who claimed them, are not its
/// business.
pub fn status(app: &App, serial: Option<&str>, asker: &Asker<'_>) -> Result<Response, DeviceError> {
    let serial = serial.ok_or(DeviceError::SerialRequired)?;
    let key = app.state().accounts(|a| {
        a.latest_entry_key_for(serial, asker.password)
            .or_else(|| {
                (!asker.exempt)
                    .then(|| a.latest_entry_key(serial))
                    .flatten()
            })
            .cloned()
    });
    let body = match key {
        None => {
            json!({"status": "no_key", "claimed": false, "message": "No entry key found for this device"})
        }
        Some(EntryKey {
            claimed_by: Some(by),
            claimed_ms,
            ..
        }) => {
            json!({"status": "claimed", "claimed": true, "claimedBy": by, "claimedAt": claimed_ms})
        }
        // An expired, unclaimed key still reads "pending" (the firmware knows no other state);
        // the next /nest/passphrase call replaces it.
        Some(k) => json!({"status": "pending", "claimed": false, "expiresAt": k.expires_ms}),
    };
    Ok(Response::json(200, &body))
}

/// Three random digits then four random upper-case letters, e.g. `625AZZP`.
fn new_code() -> std::io::Result<String> {
    let mut code = String::with_capacity(7);
    for _ in 0..3 {
        code.push(char::from(b'0' + random::below(10)? as u8));
    }
    for _ in 0..4 {
        code.push(char::from(b'A' + random::below(26)? as u8));
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::new_code;

    #[test]
    fn code_shape() {
        for _ in 0..50 {
            let c = new_code().unwrap();
            assert_eq!(c.len(), 7);
            assert!(c[..3].chars().all(|ch| ch.is_ascii_digit()), "{c}");
            assert!(c[3..].chars().all(|ch| ch.is_ascii_uppercase()), "{c}");
        }
    }
}
