#![no_main]
//! Request targets, query strings and percent-decoding (`Request::new`, `Request::query_param`,
//! `http::percent_decode`). The first byte picks a mode:
//! - raw: the rest is `name\ntarget`; the target's split into path and query, its decoding and
//!   the parameter `name` are checked against a reference written from the documentation
//!   (`%` and two hex digits is a byte, `+` a space, anything else kept as written; invalid
//!   UTF-8 is an error);
//! - round trip: the rest is `key\nvalue\nkey\nvalue...`, each percent-encoded into a query
//!   string: every key's parameter is the value of its first pair, and every text decodes back
//!   from its encoding.
use hearth::http::{InvalidEncoding, Method, Request, percent_decode};
use libfuzzer_sys::fuzz_target;

fn reference_decode(s: &str) -> Result<String, InvalidEncoding> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b'+', ..) => {
                out.push(b' ');
                i += 1;
            }
            (c, ..) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| InvalidEncoding)
}

fn reference_param(query: &str, name: &str) -> Result<Option<String>, InvalidEncoding> {
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if reference_decode(k)? == name {
            return reference_decode(v).map(Some);
        }
    }
    Ok(None)
}

/// Percent-encodes all but RFC 3986's unreserved characters; a space as `+` when `plus`.
fn encode(s: &str, plus: bool) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            b' ' if plus => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    if mode % 2 == 0 {
        let (name, target) = text.split_once('\n').unwrap_or(("", text));
        let request = Request::new(Method::Get, target);
        assert!(!request.path.contains('?'));
        let rejoined = if target.contains('?') {
            format!("{}?{}", request.path, request.query)
        } else {
            assert!(request.query.is_empty());
            request.path.clone()
        };
        assert_eq!(rejoined, target);
        assert_eq!(percent_decode(target), reference_decode(target));
        assert_eq!(
            request.query_param(name),
            reference_param(&request.query, name)
        );
    } else {
        let plus = mode & 2 != 0;
        let parts: Vec<&str> = text.split('\n').collect();
        let pairs: Vec<(&str, &str)> = parts
            .chunks(2)
            .map(|p| (p[0], p.get(1).copied().unwrap_or("")))
            .collect();
        let query = pairs
            .iter()
            .map(|(k, v)| format!("{}={}", encode(k, plus), encode(v, plus)))
            .collect::<Vec<_>>()
            .join("&");
        let request = Request::new(Method::Get, &format!("/x?{query}"));
        for (k, _) in &pairs {
            let first = pairs
                .iter()
                .find(|(k2, _)| k2 == k)
                .map(|(_, v)| v.to_string());
            assert_eq!(request.query_param(k), Ok(first), "{k:?} in {query:?}");
            assert_eq!(percent_decode(&encode(k, plus)).as_deref(), Ok(*k));
        }
    }
});
