//! Answering a request whose declared body is over the limit, without reading the body and
//! without letting tiny_http 0.12 read it either.
//!
//! tiny_http drains an unread body when the request is dropped, into a buffer of the whole
//! remaining length (`EqualReader::drop`): a `Content-Length` of 10^12 aborts the process on
//! that allocation, and a few megabytes from a slow client pin the dropping thread until the
//! client sends them. So before answering we find the connection's socket and shut its read
//! side: the drain then ends at once. For lengths too large to allocate even lazily we cannot
//! let tiny_http drop the request at all: the 413 is written straight to the socket and the
//! request is leaked (one parked tiny_http connection thread and its two descriptors; see
//! docs/known-limits.md).

use std::io::Write;
use std::net::Shutdown;

use super::Response;
use super::listener::to_tiny;
use super::socket::find_socket;

/// Declared lengths up to this are drained safely after the read side is shut down (the
/// drain buffer is allocated zeroed, so untouched pages cost no memory).
const SAFE_DRAIN: u64 = 64 * 1024 * 1024;

/// Answers `response` (a 413) to a request whose `Content-Length` is `declared` (over the limit).
pub fn reject(rq: tiny_http::Request, declared: u64, local_port: u16, response: Response) {
    // If tiny_http could not parse the length as usize it treats the request as bodiless, and
    // dropping it is harmless.
    let tiny_sees_body = usize::try_from(declared).is_ok();
    let socket = rq
        .remote_addr()
        .copied()
        .and_then(|peer| find_socket(peer, local_port));
    match socket {
        _ if !tiny_sees_body => respond(rq, response),
        Some(socket) if declared <= SAFE_DRAIN => {
            let _ = socket.shutdown(Shutdown::Read);
            respond(rq, response);
        }
        Some(mut socket) => {
            let _ = socket.write_all(&raw_bytes(&response));
            let _ = socket.shutdown(Shutdown::Both);
            log::warn!(
                "refused a {declared}-byte body; its tiny_http connection thread stays parked \
                 (tiny_http 0.12 would allocate the whole length to discard it)"
            );
            std::mem::forget(rq);
        }
        None => {
            log::warn!(
                "refused a {declared}-byte body but could not find its socket; dropping the request unanswered"
            );
            std::mem::forget(rq);
        }
    }
}

/// Answers `response` to a request whose body (if any, within the limit) is not wanted: its
/// read side is shut first, so tiny_http's drain of the body ends at once however the body
/// is sent (an endless chunked one included), and the connection closes after the answer.
pub fn refuse_unread(rq: tiny_http::Request, local_port: u16, response: Response) {
    let socket = rq
        .remote_addr()
        .copied()
        .and_then(|peer| find_socket(peer, local_port));
    if let Some(socket) = socket {
        let _ = socket.shutdown(Shutdown::Read);
    }
    respond(rq, response);
}

fn respond(rq: tiny_http::Request, response: Response) {
    let _ = rq.respond(to_tiny(response));
}

/// The whole HTTP/1.1 answer, for writing straight to the socket.
fn raw_bytes(response: &Response) -> Vec<u8> {
    let mut head = format!("HTTP/1.1 {} Payload Too Large\r\n", response.status);
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        response.body.len()
    ));
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&response.body);
    bytes
}
