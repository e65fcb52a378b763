//! Requests from a second client address: the socket is bound to another loopback address
//! (127.0.0.2) before it connects, so the server sees a different client.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};

use hearth::http::client::ClientResponse;

use super::TIMEOUT;

/// The second client address the tests use.
pub const SECOND: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));

/// A connection to `to` from `from` (any free port).
pub fn connect_from(from: IpAddr, to: SocketAddr) -> TcpStream {
    use rustix::net::{AddressFamily, SocketType};
    let family = if from.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let fd = rustix::net::socket(family, SocketType::STREAM, None).unwrap();
    rustix::net::bind(&fd, &SocketAddr::new(from, 0)).unwrap();
    rustix::net::connect(&fd, &to).unwrap();
    let stream = TcpStream::from(fd);
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    stream.set_write_timeout(Some(TIMEOUT)).unwrap();
    stream
}

/// Sends `head` (the request line and headers, without the blank line) from `from` with
/// `Connection: close` and `body`, and reads the whole answer (the server closes after it).
pub fn request_from(
    from: IpAddr,
    to: SocketAddr,
    head: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> ClientResponse {
    let mut stream = connect_from(from, to);
    let mut text = format!("{head}\r\nHost: {to}\r\nConnection: close\r\n");
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(text.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    parse(&raw)
}

/// Status, headers and body of a whole answer with a `Content-Length` (as every full answer of
/// the server has).
fn parse(raw: &[u8]) -> ClientResponse {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no head in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    ClientResponse {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    }
}
