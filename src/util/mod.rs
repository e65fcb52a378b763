//! Small helpers shared by every surface: the wall clock, randomness, and JSON shorthands.

pub mod clock;
pub mod memory;
pub mod random;

/// A JSON object with keys in insertion order (serde_json's `preserve_order` feature).
pub type JsonMap = serde_json::Map<String, serde_json::Value>;
