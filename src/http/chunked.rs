//! Raw chunked framing for responses written through tiny_http's `into_writer` (tiny_http does
//! not flush a streamed `Response` until its body ends, so long-polls are framed by hand).

use std::io::{self, Write};

/// The status line and headers of a chunked 200 response, ending the head. `Connection: close`
/// keeps a parked response from being followed by pipelined requests on the same connection.
pub fn write_head(w: &mut dyn Write, headers: &[(String, String)]) -> io::Result<()> {
    let mut head = String::from("HTTP/1.1 200 OK\r\n");
    for (name, value) in headers {
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    head.push_str("Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
    w.write_all(head.as_bytes())?;
    w.flush()
}

/// One chunk holding `data`, flushed.
pub fn write_chunk(w: &mut dyn Write, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(()); // a zero-length chunk would end the body
    }
    let mut frame = Vec::with_capacity(data.len() + 16);
    frame.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
    frame.extend_from_slice(data);
    frame.extend_from_slice(b"\r\n");
    w.write_all(&frame)?;
    w.flush()
}

/// The zero-length chunk that ends the body, flushed.
pub fn write_end(w: &mut dyn Write) -> io::Result<()> {
    w.write_all(b"0\r\n\r\n")?;
    w.flush()
}
