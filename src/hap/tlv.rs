//! TLV8, the type-length-value encoding of HAP's pairing messages: one byte of type, one of
//! length, then up to 255 bytes. A longer value is split into consecutive items of the same
//! type (every one 255 bytes but the last), which a reader joins back together. Two separate
//! items of the same type are told apart by a `Separator` item between them (`/pairings`'
//! list).

/// The item types HAP's pairing messages use.
pub mod kind {
    pub const METHOD: u8 = 0x00;
    pub const IDENTIFIER: u8 = 0x01;
    pub const SALT: u8 = 0x02;
    pub const PUBLIC_KEY: u8 = 0x03;
    pub const PROOF: u8 = 0x04;
    pub const ENCRYPTED_DATA: u8 = 0x05;
    pub const STATE: u8 = 0x06;
    pub const ERROR: u8 = 0x07;
    pub const SIGNATURE: u8 = 0x0A;
    pub const PERMISSIONS: u8 = 0x0B;
    pub const FLAGS: u8 = 0x13;
    pub const SEPARATOR: u8 = 0xFF;
}

/// `kTLVError_*`: why a pairing step was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum TlvError {
    Unknown = 0x01,
    Authentication = 0x02,
    MaxPeers = 0x04,
    MaxTries = 0x05,
    Unavailable = 0x06,
    Busy = 0x07,
}

/// A TLV8 message: items in order, each value whole (fragments joined).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tlv {
    items: Vec<(u8, Vec<u8>)>,
}

/// A message that is not TLV8: an item runs past the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncated;

impl Tlv {
    pub fn new() -> Tlv {
        Tlv::default()
    }

    /// Appends an item (builder style).
    pub fn with(mut self, kind: u8, value: &[u8]) -> Tlv {
        self.push(kind, value);
        self
    }

    pub fn push(&mut self, kind: u8, value: &[u8]) {
        self.items.push((kind, value.to_vec()));
    }

    /// The first item of `kind`.
    pub fn get(&self, kind: u8) -> Option<&[u8]> {
        self.items
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, v)| v.as_slice())
    }

    /// The first item of `kind` if it is one byte long.
    pub fn byte(&self, kind: u8) -> Option<u8> {
        match self.get(kind) {
            Some([b]) => Some(*b),
            _ => None,
        }
    }

    pub fn items(&self) -> &[(u8, Vec<u8>)] {
        &self.items
    }

    /// Reads a message; consecutive items of one type are one value split in fragments.
    pub fn decode(mut bytes: &[u8]) -> Result<Tlv, Truncated> {
        let mut items: Vec<(u8, Vec<u8>)> = Vec::new();
        // Whether the previous item was a full 255-byte fragment (so the next of its type
        // continues it).
        let mut continues = false;
        while let [kind, len, rest @ ..] = bytes {
            let len = usize::from(*len);
            let value = rest.get(..len).ok_or(Truncated)?;
            match items.last_mut() {
                Some((last, joined)) if continues && last == kind => {
                    joined.extend_from_slice(value)
                }
                _ => items.push((*kind, value.to_vec())),
            }
            continues = len == 255;
            bytes = &rest[len..];
        }
        if bytes.is_empty() {
            Ok(Tlv { items })
        } else {
            Err(Truncated)
        }
    }

    /// Writes the message, splitting values over 255 bytes into fragments.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (kind, value) in &self.items {
            if value.is_empty() {
                out.extend_from_slice(&[*kind, 0]);
            }
            for chunk in value.chunks(255) {
                out.push(*kind);
                out.push(chunk.len() as u8);
                out.extend_from_slice(chunk);
            }
        }
        out
    }
}

/// A reply of one step: its state and an error.
pub fn error(state: u8, error: TlvError) -> Tlv {
    Tlv::new()
        .with(kind::STATE, &[state])
        .with(kind::ERROR, &[error as u8])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_items_round_trip() {
        let tlv = Tlv::new()
            .with(kind::STATE, &[1])
            .with(kind::IDENTIFIER, b"abc")
            .with(kind::PROOF, &[]);
        let bytes = tlv.encode();
        assert_eq!(bytes, [6, 1, 1, 1, 3, b'a', b'b', b'c', 4, 0]);
        assert_eq!(Tlv::decode(&bytes), Ok(tlv));
    }

    #[test]
    fn long_values_are_fragmented_and_joined() {
        let key: Vec<u8> = (0..384u32).map(|i| i as u8).collect();
        let tlv = Tlv::new()
            .with(kind::PUBLIC_KEY, &key)
            .with(kind::STATE, &[2]);
        let bytes = tlv.encode();
        assert_eq!(bytes.len(), 2 + 255 + 2 + 129 + 3);
        assert_eq!(&bytes[..2], &[kind::PUBLIC_KEY, 255]);
        assert_eq!(&bytes[257..259], &[kind::PUBLIC_KEY, 129]);
        let back = Tlv::decode(&bytes).unwrap();
        assert_eq!(back.get(kind::PUBLIC_KEY), Some(key.as_slice()));
        assert_eq!(back.byte(kind::STATE), Some(2));
    }

    #[test]
    fn exactly_255_bytes_then_a_separate_item_of_another_type() {
        let tlv = Tlv::new()
            .with(kind::SALT, &[9; 255])
            .with(kind::STATE, &[3]);
        assert_eq!(Tlv::decode(&tlv.encode()), Ok(tlv));
    }

    #[test]
    fn separated_items_of_one_type_stay_apart() {
        let tlv = Tlv::new()
            .with(kind::IDENTIFIER, b"a")
            .with(kind::SEPARATOR, &[])
            .with(kind::IDENTIFIER, b"b");
        let back = Tlv::decode(&tlv.encode()).unwrap();
        assert_eq!(back.items().len(), 3);
    }

    #[test]
    fn truncated_messages_are_refused() {
        assert_eq!(Tlv::decode(&[6, 2, 1]), Err(Truncated));
        assert_eq!(Tlv::decode(&[6]), Err(Truncated));
        assert_eq!(Tlv::decode(&[]), Ok(Tlv::new()));
    }
}
