//! A small blocking HTTP/1.1 client over `TcpStream`, for the simulated thermostat, the
//! watchdog's self-probe, `hearth-dev bench` and tests. It exposes chunk boundaries
//! ([`ChunkStream`]) because a thermostat reads a held subscribe chunk by chunk, each chunk a
//! whole JSON document, and it sends requests as a thermostat does (HTTP/1.1 keep-alive
//! without `Connection: close`, or kept open for many requests as dashboards do).
//!
//! Which client for which call: this one talks to hearth (its own ports, or a test's fake
//! server); `ureq` talks to servers hearth does not run: the weather upstream
//! (`crate::weather`), Home Assistant's Supervisor (`crate::supervisor`) and a real
//! thermostat's settings API (`crate::onboarding::thermostat_api`). Those calls need what this
//! client does not have and the simulator does not need: TLS (`WEATHER_URL` and
//! `SUPERVISOR_API` may be `https://`; ureq brings rustls and the web's root certificates), a
//! deadline on the whole request (a slow upstream cannot trickle an answer past it, where this
//! client bounds each read) and no redirects followed; each of those callers also caps the
//! answer's size, which this client does not. Moving them here would mean writing TLS and
//! that deadline again (the size breakdown in `docs/development.md` counts what dropping ureq
//! would save); keeping ureq out of the simulator keeps its chunk-by-chunk reading and its
//! exact bytes on the wire in one small file of ours.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::find_header;

/// An `http://host:port/path?query` URL (no TLS).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    pub host: String,
    pub port: Option<u16>,
    /// Path and query, starting with `/`.
    pub target: String,
}

impl Url {
    pub fn parse(raw: &str) -> Result<Url, String> {
        let rest = raw
            .strip_prefix("http://")
            .ok_or_else(|| format!("{raw:?} is not an http:// URL"))?;
        let (authority, target) = match rest.find(['/', '?']) {
            Some(i) if rest[i..].starts_with('/') => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        let (host, port) =
            split_authority(authority).ok_or_else(|| format!("{raw:?} has a bad host or port"))?;
        Ok(Url { host, port, target })
    }

    /// The host and port to connect to (80 when the URL has none).
    pub fn socket_addr(&self) -> io::Result<SocketAddr> {
        let host = self.host.trim_start_matches('[').trim_end_matches(']');
        (host, self.port.unwrap_or(80))
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, format!("{host} did not resolve"))
            })
    }

    /// The same host with another target.
    pub fn with_target(&self, target: &str) -> Url {
        Url {
            host: self.host.clone(),
            port: self.port,
            target: target.to_string(),
        }
    }

    fn host_header(&self) -> String {
        match self.port {
            Some(p) => format!("{}:{p}", self.host),
            None => self.host.clone(),
        }
    }
}

/// Host and the port found by scanning back from the end for `:digits`, as the firmware does.
fn split_authority(authority: &str) -> Option<(String, Option<u16>)> {
    if authority.is_empty() {
        return None;
    }
    if let Some(v6_end) = authority.find(']') {
        let host = &authority[..=v6_end];
        return match &authority[v6_end + 1..] {
            "" => Some((host.to_string(), None)),
            p => Some((host.to_string(), Some(p.strip_prefix(':')?.parse().ok()?))),
        };
    }
    match authority.rsplit_once(':') {
        Some((h, p)) => Some((h.to_string(), Some(p.parse().ok()?))),
        None => Some((authority.to_string(), None)),
    }
}

#[derive(Clone, Debug)]
pub struct ClientResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl ClientResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).to_string()
    }
}

/// Sends one request (`Connection: close`) and reads the whole response. A thermostat's
/// request, without `Connection: close`, is `ChunkStream::open(.., false)?.read_all()`.
pub fn request(
    url: &Url,
    method: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> io::Result<ClientResponse> {
    ChunkStream::open(url, method, headers, body, timeout, true)?.read_all()
}

/// A connection with `timeout` on connecting, each read and each write.
fn connect(url: &Url, timeout: Duration) -> io::Result<BufReader<TcpStream>> {
    let stream = TcpStream::connect_timeout(&url.socket_addr()?, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.set_nodelay(true)?;
    Ok(BufReader::new(stream))
}

/// One connection kept open for many requests (HTTP/1.1 keep-alive), as dashboards and home
/// automation clients use the control API.
pub struct KeepAlive {
    url: Url,
    reader: Option<BufReader<TcpStream>>,
    timeout: Duration,
}

impl KeepAlive {
    pub fn connect(url: &Url, timeout: Duration) -> io::Result<KeepAlive> {
        Ok(KeepAlive {
            url: url.clone(),
            reader: Some(connect(url, timeout)?),
            timeout,
        })
    }

    /// Sends a request on the connection (reconnecting if the server closed it) and reads the
    /// whole response.
    pub fn request(
        &mut self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<ClientResponse> {
        let reader = match self.reader.take() {
            Some(r) => r,
            None => connect(&self.url, self.timeout)?,
        };
        let url = self.url.with_target(target);
        let mut stream = ChunkStream::send(reader, &url, method, headers, body, false)?;
        let response = stream.read_all()?;
        let closes = response
            .header("Connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        if !closes && !matches!(stream.framing, Framing::UntilClose) {
            self.reader = Some(stream.reader);
        }
        Ok(response)
    }
}

/// A response read piece by piece: each chunk of a chunked body as it arrives.
pub struct ChunkStream {
    reader: BufReader<TcpStream>,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    framing: Framing,
}

enum Framing {
    Chunked,
    Length(u64),
    UntilClose,
    Done,
}

impl ChunkStream {
    /// Connects, sends the request and reads the response head. `timeout` bounds the connect
    /// and each read until changed with [`ChunkStream::set_read_timeout`]. With `close`, the
    /// request says `Connection: close`; without, it relies on HTTP/1.1 keep-alive as a
    /// thermostat does (which keeps the server's connection thread busy while it is open).
    pub fn open(
        url: &Url,
        method: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        timeout: Duration,
        close: bool,
    ) -> io::Result<ChunkStream> {
        ChunkStream::send(connect(url, timeout)?, url, method, headers, body, close)
    }

    /// Sends a request on an open connection and reads the response head.
    fn send(
        mut reader: BufReader<TcpStream>,
        url: &Url,
        method: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        close: bool,
    ) -> io::Result<ChunkStream> {
        let mut head = format!(
            "{method} {} HTTP/1.1\r\nHost: {}\r\n",
            url.target,
            url.host_header()
        );
        let mut has_length = false;
        for (name, value) in headers {
            has_length |= name.eq_ignore_ascii_case("Content-Length")
                || name.eq_ignore_ascii_case("Transfer-Encoding");
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !has_length && (!body.is_empty() || method == "POST" || method == "PUT") {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        if close {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        let mut w = reader.get_ref();
        w.write_all(head.as_bytes())?;
        w.write_all(body)?;
        w.flush()?;

        let status_line = read_line(&mut reader)?;
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse::<u16>().ok())
            .ok_or_else(|| bad(&format!("bad status line {status_line:?}")))?;
        let mut headers = Vec::new();
        loop {
            let line = read_line(&mut reader)?;
            if line.is_empty() {
                break;
            }
            if let Some((n, v)) = line.split_once(':') {
                headers.push((n.trim().to_string(), v.trim().to_string()));
            }
        }
        let framing = if method == "HEAD" || status == 204 || status == 304 {
            Framing::Done
        } else if find_header(&headers, "Transfer-Encoding")
            .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
        {
            Framing::Chunked
        } else if let Some(len) =
            find_header(&headers, "Content-Length").and_then(|v| v.parse().ok())
        {
            Framing::Length(len)
        } else {
            Framing::UntilClose
        };
        Ok(ChunkStream {
            reader,
            status,
            headers,
            framing,
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// The response with the rest of its body, read to its end (its headers are moved out).
    pub fn read_all(&mut self) -> io::Result<ClientResponse> {
        let mut all = Vec::new();
        while let Some(chunk) = self.next_chunk()? {
            all.extend_from_slice(&chunk);
        }
        Ok(ClientResponse {
            status: self.status,
            headers: std::mem::take(&mut self.headers),
            body: all,
        })
    }

    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.reader.get_ref().set_read_timeout(timeout)
    }

    /// Waits up to `timeout` (more than zero) for more of the response to arrive: true once
    /// some has (or the connection ended), so that [`ChunkStream::next_chunk`] then reads a
    /// whole chunk. Polling this way, rather than reading with a short timeout, never gives up
    /// halfway through a chunk and loses it.
    pub fn wait_readable(&mut self, timeout: Duration) -> io::Result<bool> {
        if !self.reader.buffer().is_empty() || matches!(self.framing, Framing::Done) {
            return Ok(true);
        }
        let stream = self.reader.get_ref();
        let previous = stream.read_timeout()?;
        stream.set_read_timeout(Some(timeout))?;
        let peeked = stream.peek(&mut [0u8; 1]);
        stream.set_read_timeout(previous)?;
        match peeked {
            Ok(_) => Ok(true),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// The next piece of the body: one chunk of a chunked body, or the whole body otherwise.
    /// `None` at the end (for a chunked body: the zero-length chunk).
    pub fn next_chunk(&mut self) -> io::Result<Option<Vec<u8>>> {
        match self.framing {
            Framing::Done => Ok(None),
            Framing::Length(len) => {
                self.framing = Framing::Done;
                let mut body = Vec::new();
                (&mut self.reader).take(len).read_to_end(&mut body)?;
                if (body.len() as u64) < len {
                    return Err(bad("connection closed before the whole body arrived"));
                }
                Ok(Some(body))
            }
            Framing::UntilClose => {
                self.framing = Framing::Done;
                let mut body = Vec::new();
                self.reader.read_to_end(&mut body)?;
                Ok(Some(body))
            }
            Framing::Chunked => {
                let size_line = read_line(&mut self.reader)?;
                let size = super::chunked::chunk_size(size_line.as_bytes())
                    .and_then(|s| usize::try_from(s).ok())
                    .ok_or_else(|| bad(&format!("bad chunk size {size_line:?}")))?;
                if size == 0 {
                    // Trailers (none expected) up to the blank line.
                    while !read_line(&mut self.reader)?.is_empty() {}
                    self.framing = Framing::Done;
                    return Ok(None);
                }
                let mut chunk = vec![0u8; size];
                self.reader.read_exact(&mut chunk)?;
                let end = read_line(&mut self.reader)?;
                if !end.is_empty() {
                    return Err(bad("chunk not followed by CRLF"));
                }
                Ok(Some(chunk))
            }
        }
    }
}

fn read_line(reader: &mut impl BufRead) -> io::Result<String> {
    let mut line = Vec::new();
    let n = reader
        .by_ref()
        .take(64 * 1024)
        .read_until(b'\n', &mut line)?;
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed",
        ));
    }
    while matches!(line.last(), Some(b'\n' | b'\r')) {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| bad("response line is not UTF-8"))
}

fn bad(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls_like_the_firmware() {
        let u = Url::parse("http://192.168.1.10:8000/nest/transport").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.target.as_str()),
            ("192.168.1.10", Some(8000), "/nest/transport")
        );
        let u = Url::parse("http://h:9/nest/weather/v1?query=").unwrap();
        assert_eq!(u.target, "/nest/weather/v1?query=");
        let u = Url::parse("http://h?x=1").unwrap();
        assert_eq!((u.port, u.target.as_str()), (None, "/?x=1"));
        let u = Url::parse("http://[::1]:8000").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("[::1]", Some(8000)));
        assert!(Url::parse("https://h").is_err());
        assert!(Url::parse("http://h:port/").is_err());
    }
}
