//! Small helpers shared by every surface: the wall clock, randomness, and JSON shorthands.

pub mod clock;
pub mod memory;
pub mod outbound;
pub mod random;

/// Bytes as lower-case hex digits, two per byte (key hashes, ids, simulated identities).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A JSON object with keys in insertion order (serde_json's `preserve_order` feature).
pub type JsonMap = serde_json::Map<String, serde_json::Value>;

/// A finite number: a JSON number, or a string holding a plain decimal number (the Python
/// server accepted `"21.5"`, and MQTT payloads are text). `NaN`, `Infinity`, booleans and null
/// are not numbers.
pub fn number(v: &serde_json::Value) -> Option<f64> {
    let n = match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => serde_json::from_str::<serde_json::Number>(s.trim())
            .ok()
            .and_then(|n| n.as_f64()),
        _ => None,
    }?;
    n.is_finite().then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers() {
        assert_eq!(number(&json!(21.5)), Some(21.5));
        assert_eq!(number(&json!("21.5")), Some(21.5));
        for bad in [
            json!(null),
            json!(true),
            json!("abc"),
            json!("NaN"),
            json!("Infinity"),
            json!("1e999"),
            json!([1]),
        ] {
            assert_eq!(number(&bad), None, "{bad}");
        }
    }
}
