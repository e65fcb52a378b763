//! Small helpers shared by every surface: the wall clock, randomness, the shutdown signal, JSON
//! shorthands, and outside text as log lines show it ([`logged::logged`]).

pub mod clock;
pub mod durable;
pub(crate) mod logged;
pub(crate) mod memory;
pub(crate) mod outbound;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod random;
pub mod ratelimit;
pub(crate) mod refusals;
pub mod shutdown;

pub(crate) use logged::logged;

/// A unit enum written as one word per variant (in the journal and in JSON answers), from one
/// table: its `as_str`, and serde through it (put `#[serde(try_from = "String", into = "&'static
/// str")]` on the enum). Smaller in the binary than serde's derive for an enum, which matters on
/// a router.
macro_rules! wire_words {
    ($ty:ident { $($variant:ident => $word:literal),+ $(,)? }) => {
        impl $ty {
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $word,)+
                }
            }
        }

        impl TryFrom<String> for $ty {
            type Error = String;

            fn try_from(word: String) -> Result<Self, String> {
                match word.as_str() {
                    $($word => Ok($ty::$variant),)+
                    _ => Err(format!("unknown {} {word:?}", stringify!($ty))),
                }
            }
        }

        impl From<$ty> for &'static str {
            fn from(value: $ty) -> &'static str {
                value.as_str()
            }
        }
    };
}
pub(crate) use wire_words;

/// The client a per-client limit counts (connections, request bodies, event streams, failed
/// keys, entry keys): an IPv4 address (an IPv4-mapped IPv6 one as IPv4), or an IPv6 address's
/// /64, since one home network hands out many addresses within it and a host can take a new
/// one at will.
pub(crate) fn client_key(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip.to_canonical() {
        std::net::IpAddr::V6(v6) => {
            let mut segments = v6.segments();
            segments[4..].fill(0);
            std::net::IpAddr::V6(segments.into())
        }
        v4 => v4,
    }
}

/// Bytes as lower-case hex digits, two per byte (key hashes, ids, simulated identities).
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A JSON object with keys in insertion order (serde_json's `preserve_order` feature).
pub type JsonMap = serde_json::Map<String, serde_json::Value>;

/// A finite number: a JSON number, or a string holding a plain decimal number (the Python
/// server accepted `"21.5"`, and MQTT payloads are text). `NaN`, `Infinity`, booleans and null
/// are not numbers.
pub(crate) fn number(v: &serde_json::Value) -> Option<f64> {
    let n = match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => serde_json::from_str::<serde_json::Number>(s.trim())
            .ok()
            .and_then(|n| n.as_f64()),
        _ => None,
    }?;
    n.is_finite().then_some(n)
}

/// The cells of the first Markdown table after `marker` in `docs/<page>`, header and rule left
/// out, each cell trimmed: for the tests that hold a table of the code to its page.
#[cfg(test)]
pub(crate) fn doc_table(page: &str, marker: &str) -> Vec<Vec<String>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join(page);
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let Some((_, after)) = text.split_once(marker) else {
        panic!("docs/{page} has no {marker}");
    };
    after
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|row| {
            let row = row.trim().trim_start_matches('|').trim_end_matches('|');
            row.split('|').map(|c| c.trim().to_string()).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    #[test]
    fn clients_are_ipv4_addresses_and_ipv6_networks() {
        let key = |s: &str| super::client_key(s.parse::<IpAddr>().unwrap()).to_string();
        assert_eq!(key("192.168.1.7"), "192.168.1.7");
        assert_eq!(key("::ffff:192.168.1.7"), "192.168.1.7");
        assert_eq!(key("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), "2001:db8:1:2::");
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
    }

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
