//! The long-poll subscribe (`POST /nest/transport`, `/nest/transport/{v}/subscribe`).
//!
//! The thermostat lists the buckets it knows with their timestamps. Whatever the server holds
//! newer is "outdated" and answered at once; otherwise a chunked subscribe is parked in the hub
//! until a server-side change is pushed or the hold runs out. On the way, a subscribe may carry
//! inline uploads, acknowledge `target_change_pending`, or hand over the thermostat's own newer
//! copies; and for an owned thermostat the owner's `user` and `structure` buckets are added.

use std::io;
use std::sync::Arc;

use serde_json::{Value, json};

use super::wire::{self, SubscribeBody};
use super::{Caller, DeviceError, Local, Tier};
use crate::app::App;
use crate::http::{ChunkedBody, ChunkedReply, ChunkedWriter, Reply, Request, Response};
use crate::hub::{Origin, Sink};
use crate::state::{
    Bucket, Compact, DeviceTxn, Fields, Stamp, WireObject, WireObjects, structure_id, user_key,
};
use crate::thermostat::taken;
use crate::util::JsonMap;

/// Fields whose presence in an immediate answer earns `X-nl-disable-defer-window`, so the
/// thermostat reports the user's reaction to a new setpoint without its usual random delay.
const SETPOINT_FIELDS: [&str; 5] = [
    "target_temperature",
    "target_temperature_high",
    "target_temperature_low",
    "target_temperature_type",
    "hvac_mode",
];

pub fn subscribe(
    app: &App,
    local: &Local,
    caller: &Caller,
    req: &Request,
) -> Result<Reply, DeviceError> {
    let body = wire::json_object(&req.body)?;
    let sub = SubscribeBody::parse(&body);
    // HTTP/1.0 cannot carry a chunked body: answer such a client at once.
    let chunked = sub.chunked && !req.http10;
    let hub = Arc::clone(app.hub());
    // Reserve before reading the state, so a push committed in between is queued for us.
    let reservation = chunked.then(|| hub.reserve_as(&caller.serial, caller.password.as_deref()));
    // On an error the reservation is dropped, which frees it.
    let outdated = outdated_objects(app, local, caller, &sub)?;
    let mut headers = wire::transport_headers(app.config());
    let body = WireObjects {
        objects: outdated
            .iter()
            .map(|(k, b)| WireObject::with_value(k, b))
            .collect(),
    }
    .to_bytes();

    let Some(reservation) = reservation else {
        let mut response = Response::json_bytes(200, body);
        response.headers.extend(headers);
        return Ok(Reply::Full(response));
    };
    headers.insert(0, ("Content-Type".into(), "application/json".into()));
    let now_or_hold = if !outdated.is_empty() {
        drop(reservation);
        if outdated.iter().any(|(_, b)| {
            let value = Fields::of(&b.value);
            SETPOINT_FIELDS.iter().any(|f| value.contains_key(f))
        }) {
            headers.push((
                "X-nl-disable-defer-window".into(),
                app.config().disable_defer_window_secs.to_string(),
            ));
        }
        ChunkedBody::Now(body)
    } else if hub.subscriptions_of(&caller.serial) > app.config().max_subscriptions_per_device {
        drop(reservation);
        log::warn!(
            "{}: too many held subscribes; answering this one empty",
            caller.serial
        );
        ChunkedBody::Now(br#"{"objects":[]}"#.to_vec())
    } else {
        let deadline = hub.clock().now() + app.config().hold();
        ChunkedBody::Park(Box::new(move |body| {
            let hub = Arc::clone(reservation.hub());
            if let Err(mut held) = hub.hold(reservation, Box::new(Held(body)), deadline) {
                let _ = held.end();
            }
        }))
    };
    Ok(Reply::Chunked(ChunkedReply {
        headers,
        body: now_or_hold,
    }))
}

/// A held subscribe's response body, as the hub writes to it: each push one chunk.
struct Held(ChunkedWriter);

impl Sink for Held {
    fn push(&mut self, document: &[u8]) -> io::Result<()> {
        self.0.chunk(document)
    }

    fn end(&mut self) -> io::Result<()> {
        self.0.end()
    }
}

/// Applies what the subscribe carries and returns the objects the thermostat is behind on.
fn outdated_objects(
    app: &App,
    local: &Local,
    caller: &Caller,
    sub: &SubscribeBody,
) -> Result<Vec<(String, Bucket)>, DeviceError> {
    // A thermostat still waiting to be claimed may listen, but nothing it sends is stored.
    let writable = caller.tier == Tier::Paired;
    let owner = app
        .state()
        .accounts(|a| a.owner_of(&caller.serial).map(|o| o.user.clone()));
    let first_since_start = local.first_subscribe_since_start(&caller.serial);
    app.state()
        .update_device(&caller.serial, Origin::Device, |txn| {
            if writable {
                super::ensure_meta(txn, caller)?;
            }
            let mut outdated: Vec<(String, Bucket)> = Vec::new();
            for obj in &sub.objects {
                if let (true, Some(value)) = (writable, &obj.value) {
                    taken::observe(txn, &obj.key, value, Some(obj.revision));
                    acknowledge_target_change(txn, &obj.key, value);
                    if obj.is_inline_update() {
                        txn.checked_merge(
                            &obj.key,
                            &with_weave(value, &obj.key, caller),
                            Stamp::IfChanged,
                        )?;
                    }
                }
                // After an inline update this is the post-update object (the Python server answers
                // with the old one).
                let candidate = txn.bucket(&obj.key).cloned().unwrap_or_else(placeholder);
                if server_is_newer(candidate.timestamp, obj.timestamp) {
                    if !outdated.iter().any(|(k, _)| k == &obj.key) {
                        outdated.push((obj.key.clone(), candidate));
                    }
                } else if writable && obj.timestamp > candidate.timestamp && !obj.is_inline_update()
                {
                    // The thermostat holds a newer copy: keep it, with its revision and timestamp.
                    if let Some(value) = obj.value.as_ref().filter(|v| !v.is_empty()) {
                        let stamp = Stamp::Exactly {
                            revision: obj.revision,
                            timestamp: obj.timestamp,
                        };
                        txn.checked_merge(&obj.key, &with_weave(value, &obj.key, caller), stamp)?;
                    }
                }
            }
            add_owner_buckets(txn, sub, owner.as_deref(), first_since_start, &mut outdated);
            Ok(outdated)
        })
}

/// Only the timestamp decides: a client timestamp of 0 means "I have nothing" (answer even a
/// placeholder), a server timestamp of 0 means the server has nothing, equal means in sync.
fn server_is_newer(server_ts: i64, client_ts: i64) -> bool {
    client_ts == 0 || (server_ts != 0 && server_ts > client_ts)
}

/// What is answered for a bucket the server does not have.
fn placeholder() -> Bucket {
    Bucket {
        revision: 0,
        timestamp: 0,
        updated_at: 0,
        value: Compact::empty(),
    }
}

/// `shared.*` with `target_change_pending: false` acknowledges a pushed setpoint: the flag is
/// cleared without changing revision or timestamp (which would look like news).
fn acknowledge_target_change(txn: &mut DeviceTxn<'_>, key: &str, value: &JsonMap) {
    if !key.starts_with("shared.")
        || value.get("target_change_pending") != Some(&Value::Bool(false))
    {
        return;
    }
    let Some(server) = txn.bucket(key) else {
        return;
    };
    if server.value.get("target_change_pending") != Some(Value::Bool(true)) {
        return;
    }
    let stamp = Stamp::Exactly {
        revision: server.revision,
        timestamp: server.timestamp,
    };
    let mut clear = JsonMap::new();
    clear.insert("target_change_pending".into(), Value::Bool(false));
    txn.merge(key, &clear, stamp);
}

/// The value with `weave_device_id` from the request header, for the device bucket only.
pub(super) fn with_weave(value: &JsonMap, key: &str, caller: &Caller) -> JsonMap {
    let mut value = value.clone();
    if let (true, Some(id)) = (key.starts_with("device."), &caller.weave_device_id) {
        value.insert("weave_device_id".into(), Value::String(id.clone()));
    }
    value
}

/// For an owned thermostat: the owner's `user.<id>` (whose `name` is what takes the thermostat
/// off its pairing screen) and `structure.<id>`, created if missing and included whenever the
/// thermostat is behind on them. The structure is also re-sent once after each server start.
/// An unowned thermostat gets `structure.default` (where away is set) if it exists.
fn add_owner_buckets(
    txn: &mut DeviceTxn<'_>,
    sub: &SubscribeBody,
    owner: Option<&str>,
    first_since_start: bool,
    outdated: &mut Vec<(String, Bucket)>,
) {
    let serial = txn.serial().to_string();
    let mut offer =
        |txn: &mut DeviceTxn<'_>, key: String, default: Option<JsonMap>, force: bool| {
            if outdated.iter().any(|(k, _)| *k == key) {
                return;
            }
            if txn.bucket(&key).is_none() {
                let Some(value) = default else { return };
                txn.merge(&key, &value, Stamp::Always);
            }
            if let Some(bucket) = txn.bucket(&key) {
                if sub.timestamp_of(&key) < bucket.timestamp || force {
                    outdated.push((key, bucket.clone()));
                }
            }
        };
    match owner {
        Some(user) => {
            let name = json!({ "name": user });
            offer(txn, user_key(Some(user)), name.as_object().cloned(), false);
            let home = json!({"name": "Home", "devices": [serial]});
            offer(
                txn,
                format!("structure.{}", structure_id(user)),
                home.as_object().cloned(),
                first_since_start,
            );
        }
        None => offer(txn, "structure.default".into(), None, first_since_start),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_rule() {
        assert!(server_is_newer(0, 0));
        assert!(server_is_newer(5, 0));
        assert!(!server_is_newer(0, 1000));
        assert!(server_is_newer(2000, 1000));
        assert!(!server_is_newer(1000, 2000));
        assert!(!server_is_newer(1000, 1000));
    }
}
