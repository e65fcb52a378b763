//! Small helpers shared by every surface: the wall clock, randomness, and JSON shorthands.

pub mod clock;
pub mod memory;
pub mod random;

/// Bytes as lower-case hex digits, two per byte (key hashes, ids, simulated identities).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A JSON object with keys in insertion order (serde_json's `preserve_order` feature).
pub type JsonMap = serde_json::Map<String, serde_json::Value>;
