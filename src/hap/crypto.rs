//! The primitives HAP's pairing and session use, from `ring`: HKDF-SHA512 to 32-byte keys,
//! ChaCha20-Poly1305 with HAP's 96-bit nonces (four zero bytes, then eight bytes: a message
//! label such as `PS-Msg05` or a little-endian counter), Ed25519 verification.

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use ring::hkdf;
use ring::signature::{ED25519, UnparsedPublicKey};

/// The tag ChaCha20-Poly1305 appends.
pub const TAG_LEN: usize = 16;

struct Len32;

impl hkdf::KeyType for Len32 {
    fn len(&self) -> usize {
        32
    }
}

/// HKDF-SHA512 of `secret` with `salt` and `info`, 32 bytes.
pub fn hkdf(secret: &[u8], salt: &[u8], info: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA512, salt).extract(secret);
    // 32 bytes is far below HKDF-SHA512's limit (255 × 64): neither step can fail.
    if let Ok(okm) = prk.expand(&[info], Len32) {
        let _ = okm.fill(&mut out);
    }
    out
}

/// The nonce of a pairing message: four zero bytes and its 8-byte label.
pub fn label_nonce(label: &[u8; 8]) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(label);
    n
}

/// The nonce of a session frame: four zero bytes and the little-endian counter.
pub fn counter_nonce(counter: u64) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&counter.to_le_bytes());
    n
}

fn key(key: &[u8; 32]) -> Option<LessSafeKey> {
    UnboundKey::new(&CHACHA20_POLY1305, key)
        .ok()
        .map(LessSafeKey::new)
}

/// Encrypts `plain` and appends the tag.
pub fn seal(k: &[u8; 32], nonce: [u8; 12], aad: &[u8], plain: &[u8]) -> Vec<u8> {
    let mut out = plain.to_vec();
    if let Some(k) = key(k) {
        // Sealing fails only for a message over ChaCha20's 256 GiB limit.
        let _ = k.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad),
            &mut out,
        );
    }
    out
}

/// Decrypts `sealed` (ciphertext and tag); `None` if it was not sealed with this key, nonce
/// and `aad`.
pub fn open(k: &[u8; 32], nonce: [u8; 12], aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
    let mut buf = sealed.to_vec();
    let plain = key(k)?
        .open_in_place(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad),
            &mut buf,
        )
        .ok()?;
    let n = plain.len();
    buf.truncate(n);
    Some(buf)
}

/// Whether `signature` is `public_key`'s Ed25519 signature of `message`.
pub fn verify(public_key: &[u8], message: &[u8], signature: &[u8]) -> bool {
    UnparsedPublicKey::new(&ED25519, public_key)
        .verify(message, signature)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_messages_open_only_with_their_key_nonce_and_aad() {
        let k = hkdf(b"secret", b"Control-Salt", b"Control-Read-Encryption-Key");
        assert_ne!(
            k,
            hkdf(b"secret", b"Control-Salt", b"Control-Write-Encryption-Key")
        );
        let sealed = seal(&k, counter_nonce(0), &[5, 0], b"hello");
        assert_eq!(sealed.len(), 5 + TAG_LEN);
        assert_eq!(
            open(&k, counter_nonce(0), &[5, 0], &sealed).as_deref(),
            Some(&b"hello"[..])
        );
        assert_eq!(open(&k, counter_nonce(1), &[5, 0], &sealed), None);
        assert_eq!(open(&k, counter_nonce(0), &[6, 0], &sealed), None);
        assert_eq!(label_nonce(b"PS-Msg05")[..4], [0; 4]);
    }

    /// RFC 5869's third test case shape with SHA-512 is not published; HKDF itself is ring's.
    /// This pins the nonce layout HAP uses.
    #[test]
    fn nonces_put_the_label_or_counter_last() {
        assert_eq!(&label_nonce(b"PV-Msg02")[4..], b"PV-Msg02");
        assert_eq!(counter_nonce(1), [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
    }
}
