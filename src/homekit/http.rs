//! The HTTP/1.1 of HAP's transport, over bytes already decrypted: a request is a head parsed by
//! the edge's one head parser ([`crate::http::head::parse`]) and a body of `Content-Length`
//! bytes framed as the edge frames bodies (HAP controllers send no chunked bodies); an answer
//! and an `EVENT/1.0` message are a status line, `Content-Type`, `Content-Length` and the body.

use crate::http::body::{self, Framing, FramingError};
use crate::http::head::{self, HeadError};

/// `application/hap+json`: the attribute database, characteristics.
pub const HAP_JSON: &str = "application/hap+json";
/// `application/pairing+tlv8`: the pairing routes.
pub const TLV8: &str = "application/pairing+tlv8";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query string, without `?` (empty if none).
    pub query: String,
    pub body: Vec<u8>,
    /// It carries `Origin` or `Sec-Fetch-Site`: a web page sent it (browsers add `Origin` to
    /// every POST and PUT, and HAP controllers send neither).
    pub from_browser: bool,
}

/// Why no request could be read from the bytes so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incomplete {
    /// More bytes are needed.
    More,
    /// The head is over the limit, malformed, or announces a body over the limit or in a form
    /// HAP does not use: answered with this status and then closed.
    Refused(u16, &'static str),
}

/// Parses one request from the front of `buf`; on success removes it from `buf`.
pub fn parse(
    buf: &mut Vec<u8>,
    head_limit: usize,
    body_limit: usize,
) -> Result<Request, Incomplete> {
    let (head, head_len) = match head::parse(buf, head_limit) {
        Ok(Some(parsed)) => parsed,
        Ok(None) => return Err(Incomplete::More),
        Err(HeadError::TooLarge) => return Err(Incomplete::Refused(431, "head too large")),
        Err(HeadError::TooManyHeaders) => {
            return Err(Incomplete::Refused(431, "too many headers"));
        }
        Err(_) => return Err(Incomplete::Refused(400, "malformed request")),
    };
    let has = |name: &str| {
        head.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    let from_browser = has("origin") || has("sec-fetch-site");
    let body_len = match body::framing(&head.headers, head.http10) {
        _ if has("transfer-encoding") => {
            return Err(Incomplete::Refused(411, "Content-Length required"));
        }
        Ok(Framing::None) => 0,
        Ok(Framing::Length(n)) => usize::try_from(n).unwrap_or(usize::MAX),
        Ok(Framing::Chunked) | Err(FramingError::Unsupported) => {
            return Err(Incomplete::Refused(411, "Content-Length required"));
        }
        Err(FramingError::Huge) => usize::MAX,
        Err(FramingError::Ambiguous) => {
            return Err(Incomplete::Refused(400, "bad Content-Length"));
        }
    };
    if body_len > body_limit {
        return Err(Incomplete::Refused(413, "body too large"));
    }
    if buf.len() < head_len + body_len {
        return Err(Incomplete::More);
    }
    let (path, query) = head.target.split_once('?').unwrap_or((&head.target, ""));
    let request = Request {
        path: if path.is_empty() { "/" } else { path }.to_string(),
        query: query.to_string(),
        method: head.method,
        body: buf[head_len..head_len + body_len].to_vec(),
        from_browser,
    };
    buf.drain(..head_len + body_len);
    Ok(request)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        207 => "Multi-Status",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        470 => "Connection Authorization Required",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// An answer: `HTTP/1.1`, or an unsolicited `EVENT/1.0` message.
pub fn message(protocol: &str, status: u16, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "{protocol} {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        reason(status),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_taken_one_at_a_time() {
        let mut buf = b"PUT /characteristics HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}GET /characteristics?id=1.2 HTTP/1.1\r\n\r\n".to_vec();
        let first = parse(&mut buf, 1024, 1024).unwrap();
        assert_eq!(
            (first.method.as_str(), first.path.as_str(), &first.body[..]),
            ("PUT", "/characteristics", &b"{}"[..])
        );
        let second = parse(&mut buf, 1024, 1024).unwrap();
        assert_eq!(second.query, "id=1.2");
        assert!(!first.from_browser);
        assert!(buf.is_empty());
        assert_eq!(parse(&mut buf, 1024, 1024), Err(Incomplete::More));
    }

    #[test]
    fn a_web_page_is_told_apart() {
        for header in ["Origin: http://evil.example", "sec-fetch-site: cross-site"] {
            let mut buf = format!("POST /pair-setup HTTP/1.1\r\n{header}\r\n\r\n").into_bytes();
            assert!(parse(&mut buf, 1024, 1024).unwrap().from_browser);
        }
    }

    #[test]
    fn a_body_not_yet_arrived_waits() {
        let mut buf = b"POST /pair-setup HTTP/1.1\r\nContent-Length: 5\r\n\r\nab".to_vec();
        assert_eq!(parse(&mut buf, 1024, 1024), Err(Incomplete::More));
        buf.extend_from_slice(b"cde");
        assert_eq!(parse(&mut buf, 1024, 1024).unwrap().body, b"abcde");
    }

    #[test]
    fn limits_and_bad_heads_are_refused() {
        let mut long = b"GET /".to_vec();
        long.extend(vec![b'a'; 100]);
        assert_eq!(
            parse(&mut long, 64, 1024),
            Err(Incomplete::Refused(431, "head too large"))
        );
        let mut big = b"POST / HTTP/1.1\r\nContent-Length: 2000\r\n\r\n".to_vec();
        assert_eq!(
            parse(&mut big, 1024, 1024),
            Err(Incomplete::Refused(413, "body too large"))
        );
        let mut chunked = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        assert_eq!(
            parse(&mut chunked, 1024, 1024),
            Err(Incomplete::Refused(411, "Content-Length required"))
        );
        let mut bad = b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n".to_vec();
        assert_eq!(
            parse(&mut bad, 1024, 1024),
            Err(Incomplete::Refused(400, "bad Content-Length"))
        );
        let mut garbage = b"\x01\x02 nonsense\r\n\r\n".to_vec();
        assert_eq!(
            parse(&mut garbage, 1024, 1024),
            Err(Incomplete::Refused(400, "malformed request"))
        );
    }

    #[test]
    fn messages_carry_their_length() {
        assert_eq!(
            message("EVENT/1.0", 200, HAP_JSON, b"{}"),
            b"EVENT/1.0 200 OK\r\nContent-Type: application/hap+json\r\nContent-Length: 2\r\n\r\n{}"
        );
    }
}
