//! The temperature lock's PIN. The firmware compares a hash, never the PIN: the hosted
//! documentation gives it as the standard Base64 of SHA-1 over the 4-digit PIN immediately
//! followed by the serial (unconfirmed on real hardware). A surface that is sent a PIN hashes
//! it here at once and keeps only the hash; the PIN is never stored, logged or echoed.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha1::{Digest, Sha1};

use super::refusal::Refusal;

/// `base64(sha1(pin ‖ serial))` for a PIN of exactly 4 ASCII digits (0000 to 9999); `serial`
/// as the thermostat is stored (upper-case), since the same PIN hashes differently per device.
pub fn hash(pin: &str, serial: &str) -> Result<String, Refusal> {
    if pin.len() != 4 || !pin.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Refusal::PinFormat);
    }
    let mut sha = Sha1::new();
    sha.update(pin.as_bytes());
    sha.update(serial.as_bytes());
    Ok(STANDARD.encode(sha.finalize()))
}

/// Whether `text` can be a PIN hash: the standard Base64 (padded) of a 20-byte SHA-1 digest.
pub fn is_hash(text: &str) -> bool {
    STANDARD.decode(text).is_ok_and(|d| d.len() == 20)
}

/// The fields a thermostat keeps its PIN's hash in (the firmware's name, and the name the
/// Python server's device settings use). A 4-digit PIN is 10,000 SHA-1s away from its hash, so
/// the hash is as good as the PIN: it is shown only to whoever may change the lock anyway (see
/// [`hide_hash`]).
pub const HASH_FIELDS: [&str; 2] = ["temperature_lock_pin_hash", "temp_lock_pin_hash"];

/// `value` without the PIN's hash, for a reader who may not change the lock (a read-only key,
/// a read share, a broker's subscribers).
pub fn hide_hash(value: &mut crate::util::JsonMap) {
    for field in HASH_FIELDS {
        value.remove(field);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_formula() {
        // The vector worked out independently in the reference notes.
        assert_eq!(
            hash("0000", "02AA01AB01234567").unwrap(),
            "kFRc/skLylZUKACup2bPzjQDUII="
        );
        let h = hash("1234", "02AA01AC0000SIM1").unwrap();
        assert!(is_hash(&h));
        assert_ne!(h, hash("1234", "02AA01AC0000SIM2").unwrap());
    }

    #[test]
    fn only_four_ascii_digits_are_a_pin() {
        for bad in [
            "",
            "123",
            "12345",
            "12a4",
            " 123",
            "１２３４",
            "-123",
            "12.4",
        ] {
            assert_eq!(hash(bad, "S"), Err(Refusal::PinFormat), "{bad:?}");
        }
        assert!(hash("0007", "S").is_ok());
    }

    #[test]
    fn hashes_are_standard_base64_of_20_bytes() {
        assert!(is_hash("kFRc/skLylZUKACup2bPzjQDUII="));
        for bad in [
            "7d6e26483cfb49747943cb1bd7773629de072937",
            "c2hvcnQ=",
            "kFRc_skLylZUKACup2bPzjQDUII=",
            "",
        ] {
            assert!(!is_hash(bad), "{bad}");
        }
    }
}
