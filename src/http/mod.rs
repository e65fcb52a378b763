//! The HTTP edge. Handlers see a parsed [`Request`] (body already read, within a limit) and
//! return a [`Reply`]; hearth's own HTTP/1.1 server ([`listener`], [`connection`], [`head`],
//! [`body`], [`respond`], [`tls`]) does all socket work, so handlers are plain functions
//! testable without sockets. Every connection to every listener, HomeKit's too, is admitted by
//! [`admission`].

pub mod admission;
pub(crate) mod body;
pub(crate) mod chunked;
pub mod client;
mod connection;
pub(crate) mod head;
pub mod listener;
mod respond;
pub(crate) mod tls;

pub use connection::redact;

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use serde::Serialize;

use crate::util::shutdown::Shutdown;

pub use chunked::ChunkedWriter;

/// The edge's parsers over a connection's input, for the fuzz targets (`tests/fuzz`), which
/// cannot reach these private modules otherwise: a request head, a body's framing, a chunked
/// or `Content-Length` body, and the stream an input reads.
#[doc(hidden)]
pub mod parsers {
    pub use super::body::{BodyError, Framing, FramingError, framing, read_chunked, read_length};
    pub use super::chunked::chunk_size;
    pub use super::head::{HEAD_LIMIT, Head, HeadError, Input, Timing, read as read_head};
    pub use super::tls::Stream;
}

/// Body limit for ordinary requests.
pub const BODY_LIMIT: usize = 1024 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Delete,
    Options,
    Other,
}

impl Method {
    /// Its name on the wire; `request` for a method hearth answers none of (in a log line).
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Other => "request",
        }
    }
}

/// A request as handlers see it.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: Method,
    /// The path without the query string, as sent (not percent-decoded).
    pub path: String,
    /// The raw query string (without `?`).
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// HTTP/1.0 clients cannot receive chunked responses.
    pub http10: bool,
    pub remote: Option<SocketAddr>,
}

impl Request {
    /// A request with no headers or body (for handler tests).
    pub fn new(method: Method, target: &str) -> Request {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        Request {
            method,
            path: path.to_string(),
            query: query.to_string(),
            headers: Vec::new(),
            body: Vec::new(),
            http10: false,
            remote: None,
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// The API key a request presents: `Authorization: Bearer <key>` (the hosted API's way),
    /// else an `X-API-Key` header (which the Python server's key check also read).
    pub fn api_key(&self) -> Option<&str> {
        let bearer = self.header("Authorization").and_then(|v| {
            v.trim()
                .split_once(' ')
                .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                .map(|(_, key)| key.trim())
        });
        bearer
            .or_else(|| self.header("X-API-Key").map(str::trim))
            .filter(|k| !k.is_empty())
    }

    /// The user and password of a Basic `Authorization` header. A header that is not Basic or
    /// not valid base64 gives none; one that decodes to something other than UTF-8 is `Err`.
    pub fn basic_credentials(&self) -> Result<Option<(String, String)>, InvalidEncoding> {
        use base64::Engine as _;
        let Some(value) = self.header("Authorization") else {
            return Ok(None);
        };
        let Some(encoded) = value
            .trim()
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"))
            .map(|(_, rest)| rest.trim())
        else {
            return Ok(None);
        };
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(encoded) else {
            return Ok(None);
        };
        let text = String::from_utf8(bytes).map_err(|_| InvalidEncoding)?;
        let (user, password) = text.split_once(':').unwrap_or((text.as_str(), ""));
        Ok(Some((user.to_string(), password.to_string())))
    }

    /// Whether `Accept-Encoding` accepts gzip (RFC 9110, section 12.5.3): `gzip` (or its old
    /// name `x-gzip`), else `*`, with a weight above 0; every `Accept-Encoding` line counts,
    /// names are case-insensitive. No header, or one that names neither, accepts only the
    /// file as it is (what hearth sends then), as does a weight that is not a qvalue.
    pub fn accepts_gzip(&self) -> bool {
        let (mut gzip, mut any) = (None, None);
        let items = self
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("Accept-Encoding"))
            .flat_map(|(_, v)| v.split(','));
        for item in items {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or_default().trim();
            let weight = parts.find_map(|p| {
                let (name, value) = p.split_once('=')?;
                name.trim().eq_ignore_ascii_case("q").then(|| value.trim())
            });
            let accepted = weight.is_none_or(positive_qvalue);
            if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
                gzip = gzip.or(Some(accepted));
            } else if coding == "*" {
                any = any.or(Some(accepted));
            }
        }
        gzip.or(any).unwrap_or(false)
    }

    /// A query parameter, percent-decoded (`+` is a space). `Err` if it decodes to invalid UTF-8.
    pub fn query_param(&self, name: &str) -> Result<Option<String>, InvalidEncoding> {
        for pair in self.query.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            if percent_decode(k)? == name {
                return percent_decode(v).map(Some);
            }
        }
        Ok(None)
    }
}

/// A qvalue (`0`, `0.5`, `1.000`; RFC 9110, section 12.4.2) above 0. Anything else is not one,
/// and counts as 0.
fn positive_qvalue(q: &str) -> bool {
    let (whole, fraction) = q.split_once('.').unwrap_or((q, ""));
    let digits = fraction.len() <= 3 && fraction.bytes().all(|b| b.is_ascii_digit());
    match whole {
        "0" => digits && fraction.bytes().any(|b| b != b'0'),
        "1" => digits && fraction.bytes().all(|b| b == b'0'),
        _ => false,
    }
}

/// The first header with this name (case-insensitive).
pub fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Percent-encoded text that does not decode to UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidEncoding;

/// Decodes `%XX` escapes and `+`; malformed escapes are kept as written.
pub fn percent_decode(s: &str) -> Result<String, InvalidEncoding> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                // Two hex digits only: `from_str_radix` alone would also take a sign (`%+1`).
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| InvalidEncoding)
}

/// What a handler answers.
pub enum Reply {
    Full(Response),
    /// A chunked response (a thermostat's subscribe, a live event stream): the head is written
    /// at once, then the body.
    Chunked(ChunkedReply),
}

/// An ordinary response with a known length.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

pub const JSON: &str = "application/json; charset=utf-8";

impl Response {
    pub fn json(status: u16, body: &impl Serialize) -> Response {
        // Serializing our own reply types cannot fail; fall back to an empty object if it did.
        Response::json_bytes(
            status,
            serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec()),
        )
    }

    /// A JSON body that is already encoded.
    pub fn json_bytes(status: u16, body: Vec<u8>) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".to_string(), JSON.to_string())],
            body,
        }
    }

    /// `{"error": message}`.
    pub fn error(status: u16, message: &str) -> Response {
        Response::json(status, &serde_json::json!({ "error": message }))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }
}

pub struct ChunkedReply {
    /// Headers besides `Transfer-Encoding` and `Connection`, which the adapter adds.
    pub headers: Vec<(String, String)>,
    pub body: ChunkedBody,
}

pub enum ChunkedBody {
    /// One chunk, then the end.
    Now(Vec<u8>),
    /// The open body is handed to this once the head is written, and owns the connection from
    /// then on (a held subscribe, an event stream). If the head cannot be written it is dropped
    /// unused, which must free whatever it holds.
    Park(Box<dyn FnOnce(ChunkedWriter) + Send>),
}

/// A surface (device protocol, control API) as the listener sees it.
pub trait Service: Send + Sync + 'static {
    /// The largest body accepted for this path (larger ones get 413 unread).
    fn body_limit(&self, _path: &str) -> usize {
        BODY_LIMIT
    }

    fn handle(&self, request: Request) -> Reply;

    /// The answer to a request the listener refuses before the handler sees it (a body too
    /// large or unreadable), so each surface words it in its own shape. `{"error": message}`
    /// unless the surface says otherwise.
    fn refusal(&self, _method: Method, _path: &str, status: u16, message: &str) -> Response {
        Response::error(status, message)
    }
}

/// Serves `handler` on `addr` (port 0 picks a free one) through this edge, with the default
/// [`listener::Limits`], until the returned [`Served`] is dropped. For HTTP servers that are
/// not hearth's surfaces: the simulated thermostat's settings API and the tests' fake
/// upstreams. `name` names its threads.
pub fn serve(
    name: &'static str,
    addr: SocketAddr,
    handler: impl Fn(Request) -> Reply + Send + Sync + 'static,
) -> io::Result<Served> {
    let shutdown = Shutdown::new();
    let listener = listener::Listener::start(
        name,
        TcpListener::bind(addr)?,
        listener::Limits::default(),
        Arc::new(HandlerFn(handler)),
        shutdown.clone(),
    )?;
    Ok(Served {
        addr: listener.addr(),
        listener: Some(listener),
        shutdown,
    })
}

/// A handler function being served ([`serve`]); dropping it stops the listener and waits for
/// its threads.
pub struct Served {
    addr: SocketAddr,
    /// Taken when dropped.
    listener: Option<listener::Listener>,
    shutdown: Shutdown,
}

impl Served {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.shutdown.trigger();
        if let Some(listener) = self.listener.take() {
            listener.join();
        }
    }
}

/// A handler function as a [`Service`]: the default body limit and refusals.
struct HandlerFn<F>(F);

impl<F: Fn(Request) -> Reply + Send + Sync + 'static> Service for HandlerFn<F> {
    fn handle(&self, request: Request) -> Reply {
        (self.0)(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_encoding_is_read_as_rfc_9110_says() {
        let accepts = |values: &[&str]| {
            values
                .iter()
                .fold(Request::new(Method::Get, "/"), |r, v| {
                    r.with_header("Accept-Encoding", v)
                })
                .accepts_gzip()
        };
        for yes in [
            &["gzip"][..],
            &["gzip, deflate, br, zstd"],
            &["br;q=1.0, gzip;q=0.8, *;q=0.1"],
            &["GZip"],
            &[" deflate ,\tgzip ; q = 0.5 "],
            &["x-gzip"],
            &["*"],
            &["br", "gzip"],
            &["gzip;q=0.001"],
            &["gzip;q=1", "*;q=0"],
            &["deflate;q=0, *"],
        ] {
            assert!(accepts(yes), "{yes:?}");
        }
        for no in [
            &[][..],
            &[""],
            &["identity"],
            &["deflate, br"],
            &["gzip;q=0"],
            &["gzip;Q=0.000"],
            &["gzip;q=0, *"],
            &["*;q=0"],
            &["gzipped"],
            &["gzip;q=2"],
            &["gzip;q=0.0001"],
            &["gzip;q=abc"],
            &["gzip;q=-1"],
        ] {
            assert!(!accepts(no), "{no:?}");
        }
        // Another header that only looks like it.
        let other = Request::new(Method::Get, "/").with_header("Accept", "gzip");
        assert!(!other.accepts_gzip());
    }

    #[test]
    fn query_decoding() {
        let r = Request::new(Method::Get, "/x?serial=02aa%2D01&q=a+b&bad=%FF&raw=%zz");
        assert_eq!(r.query_param("serial").unwrap().as_deref(), Some("02aa-01"));
        assert_eq!(r.query_param("q").unwrap().as_deref(), Some("a b"));
        assert_eq!(r.query_param("raw").unwrap().as_deref(), Some("%zz"));
        assert_eq!(r.query_param("missing").unwrap(), None);
        assert_eq!(r.query_param("bad"), Err(InvalidEncoding));
        assert_eq!(percent_decode("%4"), Ok("%4".to_string()));
    }

    /// Found by the `query` fuzz target: `%+0` decoded to a NUL byte, since `from_str_radix`
    /// takes a leading `+`; an escape is two hex digits, anything else is kept as written.
    #[test]
    fn an_escape_is_two_hex_digits_and_no_sign() {
        assert_eq!(percent_decode("AA%+0"), Ok("AA% 0".to_string()));
        assert_eq!(percent_decode("%+41"), Ok("% 41".to_string()));
        assert_eq!(percent_decode("%-1x"), Ok("%-1x".to_string()));
        assert_eq!(percent_decode("%4a%4A"), Ok("JJ".to_string()));
        let r = Request::new(Method::Get, "/x?name=%+1");
        assert_eq!(r.query_param("name").unwrap().as_deref(), Some("% 1"));
    }

    /// A handler function served on loopback answers through the edge; dropping it stops
    /// the listener (its port refuses connections).
    #[test]
    fn serve_answers_with_a_handler_function() {
        let listener = serve("test-serve", ([127, 0, 0, 1], 0).into(), |rq: Request| {
            Reply::Full(Response::json(200, &serde_json::json!({"path": rq.path})))
        })
        .unwrap();
        let url = client::Url::parse(&format!("http://{}/a?b", listener.addr())).unwrap();
        let r = client::request(&url, "GET", &[], &[], std::time::Duration::from_secs(10)).unwrap();
        assert_eq!(
            (r.status, r.json()),
            (200, serde_json::json!({"path": "/a"}))
        );
        assert_eq!(r.header("Server"), Some("hearth"));
        let addr = listener.addr();
        drop(listener);
        assert!(std::net::TcpStream::connect(addr).is_err());
    }
}
