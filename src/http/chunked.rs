//! Raw chunked framing for chunked replies (held subscribes, event streams), written straight
//! to the connection's socket, each chunk as it comes.

use std::io::{self, Write};

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
        let mut head = String::from("HTTP/1.1 200 OK\r\n");
        for (name, value) in headers {
            head.push_str(name);
            head.push_str(": ");
            head.push_str(value);
            head.push_str("\r\n");
        }
        head.push_str("Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
        self.0.write_all(head.as_bytes())?;
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
