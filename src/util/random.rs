//! Randomness from the kernel's CSPRNG (`/dev/urandom`). Used for entry keys and device ids;
//! both are rare, so opening the device each time keeps this free of state.

use std::fs::File;
use std::io::{self, Read};

/// Fills `buf` from `/dev/urandom`.
pub fn fill(buf: &mut [u8]) -> io::Result<()> {
    File::open("/dev/urandom")?.read_exact(buf)
}

/// A uniformly random number below `bound` (rejection sampling, no modulo bias).
pub fn below(bound: u32) -> io::Result<u32> {
    if bound == 0 {
        return Ok(0);
    }
    let zone = u32::MAX - (u32::MAX % bound);
    loop {
        let mut b = [0u8; 4];
        fill(&mut b)?;
        let n = u32::from_le_bytes(b);
        if n < zone {
            return Ok(n % bound);
        }
    }
}

/// `bytes` random bytes as lower-case hex digits (two per byte).
pub fn hex(bytes: usize) -> io::Result<String> {
    let mut b = vec![0u8; bytes];
    fill(&mut b)?;
    Ok(super::hex(&b))
}

/// A random (version 4) UUID in its lower-case hyphenated form.
pub fn uuid_v4() -> io::Result<String> {
    let mut b = [0u8; 16];
    fill(&mut b)?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_two_digits_a_byte() {
        let h = hex(4).unwrap();
        assert_eq!(h.len(), 8);
        assert!(
            h.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }

    #[test]
    fn uuid_shape() {
        let u = uuid_v4().unwrap();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert_ne!(u, uuid_v4().unwrap());
    }

    #[test]
    fn below_stays_in_range() {
        for _ in 0..200 {
            assert!(below(26).unwrap() < 26);
        }
    }
}
