//! Raw chunked framing for chunked replies (held subscribes, event streams), written straight
//! to the connection's socket, each chunk as it comes.

use std::io::{self, Write};

/// The size a chunk-size line gives (`1a`, `1a;name=value`), for reading a chunked body
/// (a request's, or a response's in the client): hex digits only, at most 16 of them (a `+`,
/// which `from_str_radix` would take, or an empty size is malformed: `None`).
pub fn chunk_size(line: &[u8]) -> Option<u64> {
    let size = line.split(|b| *b == b';').next()?;
    let size = std::str::from_utf8(size).ok()?.trim();
    let hex = !size.is_empty() && size.len() <= 16 && size.bytes().all(|b| b.is_ascii_hexdigit());
    hex.then(|| u64::from_str_radix(size, 16).ok()).flatten()
}

/// The head of a chunked 200 response ([`ChunkedWriter::head`]).
fn head(headers: &[(String, String)]) -> Vec<u8> {
    let mut head = String::from("HTTP/1.1 200 OK\r\n");
    for (name, value) in headers {
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    head.push_str("Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
    head.into_bytes()
}

/// A whole chunked 200 response of one chunk (none if `data` is empty), in bytes.
pub fn whole(headers: &[(String, String)], data: &[u8]) -> Vec<u8> {
    let mut out = head(headers);
    if !data.is_empty() {
        out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
        out.extend_from_slice(data);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// A chunked response body on a connection taken over from the listener.
pub struct ChunkedWriter(Box<dyn Write + Send>);

impl ChunkedWriter {
    pub fn new(raw: Box<dyn Write + Send>) -> ChunkedWriter {
        ChunkedWriter(raw)
    }

    /// The status line and headers of a chunked 200 response, ending the head. `Connection:
    /// close` keeps a parked response from being followed by pipelined requests on the same
    /// connection.
    pub fn head(&mut self, headers: &[(String, String)]) -> io::Result<()> {
        self.0.write_all(&head(headers))?;
        self.0.flush()
    }

    /// One chunk holding `data`, flushed.
    pub fn chunk(&mut self, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(()); // a zero-length chunk would end the body
        }
        let mut frame = Vec::with_capacity(data.len() + 16);
        frame.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
        frame.extend_from_slice(data);
        frame.extend_from_slice(b"\r\n");
        self.0.write_all(&frame)?;
        self.0.flush()
    }

    /// The zero-length chunk that ends the body, flushed.
    pub fn end(&mut self) -> io::Result<()> {
        self.0.write_all(b"0\r\n\r\n")?;
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::chunk_size;

    #[test]
    fn chunk_sizes_are_hex_digits_only() {
        assert_eq!(chunk_size(b"1a"), Some(26));
        assert_eq!(chunk_size(b" 1A ;name=value"), Some(26));
        assert_eq!(chunk_size(b"0"), Some(0));
        assert_eq!(chunk_size(b"ffffffffffffffff"), Some(u64::MAX));
        for bad in [
            &b"+2"[..],
            b"",
            b";x",
            b"-1",
            b"0x10",
            b"1 2",
            b"10000000000000000",
        ] {
            assert_eq!(chunk_size(bad), None, "{bad:?}");
        }
    }
}
