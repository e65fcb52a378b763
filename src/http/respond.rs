//! Writing a [`Response`] to a connection: the status line, `Server`, `Date`, the handler's
//! headers, `Content-Length` and `Connection` where needed, and the body, in one write.

use std::cell::RefCell;
use std::io::Write;

use super::Response;

/// How a response ends its connection, as the request asked and the edge decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Persist {
    /// HTTP/1.1 keep-alive: nothing said.
    KeepAlive,
    /// HTTP/1.0 keep-alive: `Connection: keep-alive` said.
    KeepAlive10,
    /// `Connection: close`; the connection ends after this response.
    Close,
}

/// Headers the edge writes itself: a handler's own are left out.
const OURS: [&str; 5] = [
    "Content-Length",
    "Transfer-Encoding",
    "Connection",
    "Date",
    "Server",
];

/// How a request is answered: its version (an HTTP/1.0 request is answered `HTTP/1.0`, as
/// tiny_http did), whether it is a HEAD (the length of the body it would have had, no body),
/// and whether the connection stays open.
#[derive(Clone, Copy, Debug)]
pub struct Answer {
    pub http10: bool,
    pub head_only: bool,
    pub persist: Persist,
}

impl Answer {
    /// A refusal before (or regardless of) a request: HTTP/1.1, then the connection closes.
    pub const REFUSAL: Answer = Answer {
        http10: false,
        head_only: false,
        persist: Persist::Close,
    };
}

/// The bytes of `response`, answered as `how` says.
pub fn encode(response: &Response, how: Answer) -> Vec<u8> {
    let Answer {
        http10,
        head_only,
        persist,
    } = how;
    let status = response.status;
    let mut out = Vec::with_capacity(response.body.len() + 256);
    let _ = write!(
        out,
        "HTTP/1.{} {status} {}\r\nServer: hearth\r\nDate: ",
        if http10 { 0 } else { 1 },
        reason(status)
    );
    with_date(|date| out.extend_from_slice(date.as_bytes()));
    out.extend_from_slice(b"\r\n");
    for (name, value) in &response.headers {
        if OURS.iter().any(|o| o.eq_ignore_ascii_case(name)) {
            continue;
        }
        // A handler's header cannot split the head: a value with a line break is left out.
        if value.contains(['\r', '\n']) || name.contains(['\r', '\n', ':']) {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let bodiless = matches!(status, 100..=199 | 204 | 304);
    if !bodiless {
        let _ = write!(out, "Content-Length: {}\r\n", response.body.len());
    }
    match persist {
        Persist::KeepAlive => {}
        Persist::KeepAlive10 => out.extend_from_slice(b"Connection: keep-alive\r\n"),
        Persist::Close => out.extend_from_slice(b"Connection: close\r\n"),
    }
    out.extend_from_slice(b"\r\n");
    if !head_only && !bodiless {
        out.extend_from_slice(&response.body);
    }
    out
}

/// The IMF-fixdate of now (`Sun, 06 Nov 1994 08:49:37 GMT`), formatted once a second per
/// thread.
fn with_date(f: impl FnOnce(&str)) {
    thread_local! {
        static DATE: RefCell<(i64, String)> = const { RefCell::new((i64::MIN, String::new())) };
    }
    let now = crate::util::clock::now_ms().div_euclid(1000);
    DATE.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.0 != now {
            cell.1 = imf_fixdate(now);
            cell.0 = now;
        }
        f(&cell.1);
    });
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` for Unix time `t` (RFC 9110's preferred date).
fn imf_fixdate(t: i64) -> String {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let Some(d) = t.checked_mul(1000).and_then(crate::util::clock::utc) else {
        return String::new();
    };
    let weekday = usize::from(d.weekday().to_monday_zero_offset().unsigned_abs());
    let month = usize::from(d.month().unsigned_abs()).saturating_sub(1);
    format!(
        "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
        DAYS[weekday % 7],
        d.day(),
        MONTHS[month % 12],
        d.year(),
        d.hour(),
        d.minute(),
        d.second()
    )
}

/// The reason phrase of a status hearth sends.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Payload Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Entity",
        423 => "Locked",
        425 => "Too Early",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        507 => "Insufficient Storage",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn how(head_only: bool, persist: Persist) -> Answer {
        Answer {
            http10: persist == Persist::KeepAlive10,
            head_only,
            persist,
        }
    }

    #[test]
    fn the_date_is_rfc_9110s() {
        assert_eq!(imf_fixdate(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(imf_fixdate(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(imf_fixdate(1_772_323_199), "Sat, 28 Feb 2026 23:59:59 GMT");
    }

    #[test]
    fn a_response_in_bytes() {
        let r = Response::error(404, "Device not found");
        let text = String::from_utf8(encode(&r, how(false, Persist::KeepAlive))).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert_eq!(body, r#"{"error":"Device not found"}"#);
        let lines: Vec<&str> = head.split("\r\n").collect();
        assert_eq!(lines[0], "HTTP/1.1 404 Not Found");
        assert_eq!(lines[1], "Server: hearth");
        assert!(
            lines[2].starts_with("Date: ") && lines[2].ends_with(" GMT"),
            "{head}"
        );
        assert_eq!(lines[2].len(), "Date: Sun, 06 Nov 1994 08:49:37 GMT".len());
        assert_eq!(lines[3], "Content-Type: application/json; charset=utf-8");
        assert_eq!(lines[4], "Content-Length: 28");
        assert_eq!(lines.len(), 5);

        let text = String::from_utf8(encode(&r, how(true, Persist::Close))).unwrap();
        assert!(text.ends_with("Content-Length: 28\r\nConnection: close\r\n\r\n"));
        let text = String::from_utf8(encode(&r, how(false, Persist::KeepAlive10))).unwrap();
        assert!(text.starts_with("HTTP/1.0 404 Not Found\r\n"));
        assert!(text.contains("\r\nConnection: keep-alive\r\n\r\n{"));
    }

    #[test]
    fn a_handlers_framing_headers_and_line_breaks_are_left_out() {
        let mut r = Response::error(200, "x");
        r.headers.push(("Content-Length".into(), "999".into()));
        r.headers
            .push(("X-Evil".into(), "a\r\nSet-Cookie: b".into()));
        let text = String::from_utf8(encode(&r, how(false, Persist::KeepAlive))).unwrap();
        assert!(!text.contains("999") && !text.contains("Evil"), "{text}");
        let r = Response::json_bytes(204, b"ignored".to_vec());
        let text = String::from_utf8(encode(&r, how(false, Persist::KeepAlive))).unwrap();
        assert!(text.ends_with("charset=utf-8\r\n\r\n"), "{text}");
    }
}
