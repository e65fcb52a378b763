//! `GET /api/events[?serial=S][&alerts=1]`: the live event stream (Server-Sent Events). The stream itself
//! is written by [`crate::events`]; this handler admits it and hands it over.

use super::ControlError;
use super::input;
use crate::app::App;
use crate::events::Refused;
use crate::http::{ChunkedBody, ChunkedReply, Method, Reply, Request, Response};

/// `key_id`: the API key the request was authorised with (with `CONTROL_REQUIRE_KEY`); the
/// stream ends once that key is revoked or expires.
pub fn events(
    app: &App,
    req: &Request,
    cors: &[(String, String)],
    key_id: Option<String>,
) -> Result<Reply, ControlError> {
    let serial = match req.query_param("serial") {
        Err(_) => return Err(ControlError::BadEncoding),
        Ok(None) => None,
        Ok(Some(s)) if s.is_empty() => None,
        Ok(Some(s)) => Some(input::serial(&s)?),
    };
    // Alert events only for a client that asks: one that reads every `data:` line as a bucket
    // change would not know what to make of them.
    let alerts = match req.query_param("alerts") {
        Err(_) => return Err(ControlError::BadEncoding),
        Ok(None) => false,
        Ok(Some(v)) => match v.as_str() {
            "1" | "true" => true,
            "0" | "false" | "" => false,
            _ => {
                return Err(ControlError::Invalid(
                    "alerts must be 1 (alert events too) or 0".into(),
                ));
            }
        },
    };
    if req.http10 {
        return Err(ControlError::Invalid(
            "Live events need HTTP/1.1 (chunked responses)".into(),
        ));
    }
    let mut headers: Vec<(String, String)> = [
        ("Content-Type", "text/event-stream"),
        ("Cache-Control", "no-cache"),
        ("X-Accel-Buffering", "no"),
    ]
    .iter()
    .map(|(n, v)| (n.to_string(), v.to_string()))
    .collect();
    // HEAD: the headers a stream would have, and no stream (it takes no place among the 64).
    if req.method == Method::Head {
        return Ok(Reply::Full(Response {
            status: 200,
            headers,
            body: Vec::new(),
        }));
    }
    let client = req.remote.map(|a| crate::util::client_key(a.ip()));
    let per_client = app.config().max_event_streams_per_client;
    let admission = app
        .events()
        .admit(client, per_client)
        .map_err(|refused| match refused {
            Refused::Full => ControlError::TooManyStreams,
            Refused::ClientFull { limit } => ControlError::TooManyStreamsFromClient(limit),
        })?;
    headers.extend_from_slice(cors);
    Ok(Reply::Chunked(ChunkedReply {
        headers,
        body: ChunkedBody::Park(Box::new(move |writer| {
            admission.park(writer, serial, alerts, key_id);
        })),
    }))
}
