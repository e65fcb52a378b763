//! The encrypted session after pair-verify: everything in both directions is sent as frames of
//! at most [`MAX_FRAME`] plaintext bytes, each a 2-byte little-endian length (also the
//! frame's additional authenticated data), the ChaCha20-Poly1305 ciphertext and its tag, with a
//! 64-bit counter per direction as the nonce. A frame that does not open ends the session.

use super::crypto;
use super::pair_verify::Verified;

/// The most plaintext one frame carries.
pub const MAX_FRAME: usize = 1024;

/// One connection's session keys and counters.
pub struct Session {
    /// Accessory → controller.
    read_key: [u8; 32],
    /// Controller → accessory.
    write_key: [u8; 32],
    sent: u64,
    received: u64,
}

/// A frame that did not open (wrong key, replayed or reordered, tampered): the connection must
/// close.
#[derive(Debug, PartialEq, Eq)]
pub struct Forged;

impl Session {
    pub fn new(verified: &Verified) -> Session {
        Session {
            read_key: verified.read_key,
            write_key: verified.write_key,
            sent: 0,
            received: 0,
        }
    }

    /// `plain` as frames, ready to write.
    pub fn seal(&mut self, plain: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(plain.len() + plain.len() / MAX_FRAME * 18 + 18);
        for chunk in plain.chunks(MAX_FRAME) {
            // A chunk is at most 1024 bytes, so its length fits two bytes.
            let len = (chunk.len() as u16).to_le_bytes();
            out.extend_from_slice(&len);
            out.extend_from_slice(&crypto::seal(
                &self.read_key,
                crypto::counter_nonce(self.sent),
                &len,
                chunk,
            ));
            self.sent += 1;
        }
        out
    }

    /// The length a frame's header announces, if it is a length a frame may have.
    pub fn frame_len(header: [u8; 2]) -> Option<usize> {
        let len = usize::from(u16::from_le_bytes(header));
        (len <= MAX_FRAME).then_some(len)
    }

    /// Opens one received frame: its header and its `len + 16` sealed bytes.
    pub fn open(&mut self, header: [u8; 2], sealed: &[u8]) -> Result<Vec<u8>, Forged> {
        let plain = crypto::open(
            &self.write_key,
            crypto::counter_nonce(self.received),
            &header,
            sealed,
        )
        .ok_or(Forged)?;
        self.received += 1;
        Ok(plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (Session, Session) {
        let keys = Verified {
            controller: "c".into(),
            read_key: [1; 32],
            write_key: [2; 32],
        };
        // The controller's view: what it writes the accessory reads, and the other way round.
        let mirrored = Verified {
            controller: "c".into(),
            read_key: [2; 32],
            write_key: [1; 32],
        };
        (Session::new(&keys), Session::new(&mirrored))
    }

    fn open_all(to: &mut Session, mut bytes: &[u8]) -> Result<Vec<u8>, Forged> {
        let mut plain = Vec::new();
        while bytes.len() >= 2 {
            let header = [bytes[0], bytes[1]];
            let len = Session::frame_len(header).ok_or(Forged)?;
            plain.extend(to.open(header, &bytes[2..2 + len + crypto::TAG_LEN])?);
            bytes = &bytes[2 + len + crypto::TAG_LEN..];
        }
        Ok(plain)
    }

    #[test]
    fn long_messages_are_split_into_frames_and_counted() {
        let (mut accessory, mut controller) = (pair().0, pair().1);
        let body = vec![7u8; 2500];
        let sealed = accessory.seal(&body);
        assert_eq!(sealed.len(), 2500 + 3 * (2 + crypto::TAG_LEN));
        assert_eq!(&sealed[..2], &1024u16.to_le_bytes());
        assert_eq!(open_all(&mut controller, &sealed).unwrap(), body);
        // The counters moved on: the same bytes do not open twice.
        assert_eq!(open_all(&mut controller, &sealed), Err(Forged));
    }

    #[test]
    fn a_tampered_frame_is_refused() {
        let (mut accessory, mut controller) = pair();
        let mut sealed = accessory.seal(b"hello");
        sealed[4] ^= 1;
        assert_eq!(open_all(&mut controller, &sealed), Err(Forged));
        assert_eq!(Session::frame_len(1025u16.to_le_bytes()), None);
    }
}
