//! `POST /nest/transport/put` and `/nest/transport/{v}/put`: the thermostat writes its state.
//!
//! The answer holds revision, timestamp and key for each object and never a value (a value in a
//! PUT answer is applied by the firmware as authoritative and clears its dirty flags, which
//! corrupts setpoints). A PUT is never pushed back to the thermostat's held subscribes; it does
//! reach change watchers.

use super::subscribe::with_weave;
use super::wire::{self, parse_put};
use super::{Caller, DeviceError, Tier};
use crate::app::App;
use crate::http::Response;
use crate::hub::Origin;
use crate::state::{Stamp, WireObject, WireObjects};

pub fn put(
    app: &App,
    caller: &Caller,
    req: &crate::http::Request,
) -> Result<Response, DeviceError> {
    if caller.tier == Tier::Pending {
        // A thermostat waiting to be claimed is told its write went through, whatever it sent;
        // nothing is stored.
        return Ok(Response::json_bytes(200, br#"{"objects":[]}"#.to_vec()));
    }
    let body = wire::json_object(&req.body)?;
    let objects = parse_put(&body);
    let receipts = app
        .state()
        .update_device(&caller.serial, Origin::Device, |txn| {
            super::ensure_meta(txn, caller)?;
            let mut receipts = Vec::with_capacity(objects.len());
            for obj in &objects {
                if obj.value.is_empty() {
                    continue;
                }
                if let Some(expected) = obj.if_revision {
                    let (rev, ts) = txn
                        .bucket(&obj.key)
                        .map_or((0, 0), |b| (b.revision, b.timestamp));
                    if expected != Some(rev) {
                        // Conflict: answer the server's revision and timestamp without a value, so
                        // the thermostat keeps its edit and retries with the new revision. The
                        // other objects of the request are still written.
                        receipts.push((obj.key.clone(), rev, ts));
                        continue;
                    }
                }
                crate::thermostat::taken::observe(txn, &obj.key, &obj.value, obj.holds);
                // One object too large refuses the whole PUT (nothing of it is written).
                let written = txn.checked_merge(
                    &obj.key,
                    &with_weave(&obj.value, &obj.key, caller),
                    Stamp::IfChanged,
                )?;
                receipts.push((obj.key.clone(), written.revision, written.timestamp));
            }
            Ok::<_, DeviceError>(receipts)
        })?;
    let body = WireObjects {
        objects: receipts
            .iter()
            .map(|(k, rev, ts)| WireObject::receipt(k, *rev, *ts))
            .collect(),
    };
    let mut response = Response::json_bytes(200, body.to_bytes());
    response
        .headers
        .extend(wire::transport_headers(app.config()));
    Ok(response)
}
