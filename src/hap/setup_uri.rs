//! What a person scans or a controller checks to pair: the `X-HM://` setup URI that the QR
//! code carries, and the setup hash (`sh`) the mDNS advertisement carries so a controller that
//! scanned the code finds this accessory among others.
//!
//! The URI is `X-HM://`, nine base-36 digits, then the four-character setup id. The digits
//! encode one 45-bit number: the version (0, bits 43–45), the accessory category (bits 31–38),
//! the transports it pairs over (bit 28: IP), and the setup code's eight digits as one number
//! (bits 0–26).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha512};

/// The accessory category hearth announces: a bridge (HAP's category 2), not a thermostat (9),
/// since it is one accessory in front of several thermostats; the Home app pairs the bridge and
/// then lists each thermostat on its own.
pub const CATEGORY_BRIDGE: u8 = 2;

/// The "pairs over IP" flag.
const FLAG_IP: u64 = 1 << 28;

/// The setup URI of an accessory of `category` with `setup_code` (`XXX-XX-XXX`) and
/// `setup_id` (four of `0-9A-Z`); `None` for a code that is not eight digits.
pub fn setup_uri(category: u8, setup_code: &str, setup_id: &str) -> Option<String> {
    let digits: String = setup_code.chars().filter(|c| *c != '-').collect();
    if digits.len() != 8 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let code = digits.parse::<u64>().ok()?;
    Some(encode(category, code, setup_id))
}

/// The URI for a setup code given as its number (the published vectors use codes of more than
/// eight digits, whose high bits overlap the flags: they are or-ed in, as the reference
/// implementations do).
fn encode(category: u8, code: u64, setup_id: &str) -> String {
    let payload = code | FLAG_IP | (u64::from(category) << 31);
    format!("X-HM://{}{setup_id}", base36(payload, 9))
}

/// `n` in upper-case base 36, zero-padded to `width` digits.
fn base36(mut n: u64, width: usize) -> String {
    const DIGITS: &[u8; 36] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.resize(out.len().max(width), b'0');
    out.iter().rev().map(|&b| char::from(b)).collect()
}

/// The advertisement's `sh`: Base64 of the first four bytes of SHA-512 over the setup id and
/// the device id (`AA:BB:CC:DD:EE:FF`) written one after the other.
pub fn setup_hash(setup_id: &str, device_id: &str) -> String {
    let digest = Sha512::new()
        .chain_update(setup_id.as_bytes())
        .chain_update(device_id.as_bytes())
        .finalize();
    STANDARD.encode(&digest[..4])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vectors HAP-python's tests publish (test_accessory.py's `test_xhm_uri`): a camera
    /// (17), a television (31) and a target controller (32).
    #[test]
    fn published_vectors() {
        assert_eq!(encode(17, 653_321_211, "AAAA"), "X-HM://00H708WSBAAAA");
        assert_eq!(encode(31, 323_231_212, "BBBB"), "X-HM://00UQBOTF0BBBB");
        assert_eq!(encode(32, 323_231_212, "BBBB"), "X-HM://00VPU8UEKBBBB");
    }

    #[test]
    fn a_bridge_with_an_eight_digit_code() {
        let uri = setup_uri(CATEGORY_BRIDGE, "518-08-582", "1QJ8").unwrap();
        assert_eq!(uri.len(), "X-HM://".len() + 9 + 4);
        // Decoded back: category 2, the IP flag, the code.
        let payload = u64::from_str_radix(&uri[7..16], 36).unwrap();
        assert_eq!(payload & ((1 << 27) - 1), 51_808_582);
        assert_eq!(payload & FLAG_IP, FLAG_IP);
        assert_eq!((payload >> 31) & 0xff, 2);
        assert_eq!(payload >> 43, 0, "version 0");
        assert!(uri.ends_with("1QJ8"));
        assert_eq!(
            setup_uri(2, "000-00-001", "AAAA").as_deref(),
            Some("X-HM://0023GXK3LAAAA")
        );
    }

    #[test]
    fn codes_that_are_not_eight_digits() {
        for bad in ["", "123-45-67", "123-45-6789", "abc-de-fgh", "12345678x"] {
            assert_eq!(setup_uri(2, bad, "AAAA"), None, "{bad:?}");
        }
    }

    /// Checked against SHA-512 computed apart (Python's `hashlib`) for one pair.
    #[test]
    fn setup_hash_is_four_bytes_of_sha512() {
        assert_eq!(setup_hash("AAAA", "AA:BB:CC:DD:EE:FF").len(), 8);
        assert_eq!(setup_hash("7OSX", "C2:22:5E:B5:49:6F"), "GMvHQw==");
    }
}
