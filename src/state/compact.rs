//! A bucket's value as it is held in memory: its JSON text, not a tree.
//!
//! A thermostat's `device` bucket has about 150 fields. As a `serde_json` map (insertion
//! ordered) that is some 30 KB of small allocations per thermostat, and building it from uploads
//! leaves the heap fragmented; as text it is about 3 KB in one allocation. Pushes and snapshots
//! write the text as it is; code that reads fields parses it into a map ([`Compact::to_map`]),
//! which costs microseconds and is done only by commands, status reads and subscribes.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::Fields;
use crate::util::JsonMap;

/// The JSON text of one object (compact, keys in their order).
#[derive(Clone)]
pub struct Compact(Box<RawValue>);

impl Compact {
    pub fn from_map(map: &JsonMap) -> Compact {
        // Serializing a map of JSON values cannot fail; "{}" keeps the type's promise if it did.
        match serde_json::value::to_raw_value(map) {
            Ok(raw) => Compact(raw),
            Err(e) => {
                log::error!("could not serialize a bucket value: {e}");
                Compact::empty()
            }
        }
    }

    pub fn empty() -> Compact {
        Compact(
            serde_json::from_str::<Box<RawValue>>("{}")
                .unwrap_or_else(|_| RawValue::NULL.to_owned()),
        )
    }

    /// The value as a map (a fresh copy). Every `Compact` parses: values made here are
    /// serialized maps, and values loaded from a snapshot are checked by parsing them.
    pub fn to_map(&self) -> JsonMap {
        serde_json::from_str(self.0.get()).unwrap_or_default()
    }

    /// One field's value.
    pub fn get(&self, field: &str) -> Option<Value> {
        Fields::of(self).get(field).cloned()
    }

    /// This value with `set`'s fields written into it: the same text as parsing it into a
    /// map, inserting them and serializing it again (see [`Fields::merged_text`]), at a
    /// fraction of the cost for the large buckets thermostats keep.
    pub fn merged(&self, set: &JsonMap) -> Compact {
        if set.is_empty() {
            return self.clone();
        }
        match RawValue::from_string(Fields::of(self).merged_text(set)) {
            Ok(raw) => Compact(raw),
            // Cannot happen (the pieces are valid JSON); the slow way is right regardless.
            Err(e) => {
                log::error!("a merged bucket value did not parse ({e}); merging it as a map");
                let mut map = self.to_map();
                for (k, v) in set {
                    map.insert(k.clone(), v.clone());
                }
                Compact::from_map(&map)
            }
        }
    }

    pub fn text(&self) -> &str {
        self.0.get()
    }
}

impl Default for Compact {
    fn default() -> Self {
        Compact::empty()
    }
}

impl From<&JsonMap> for Compact {
    fn from(map: &JsonMap) -> Self {
        Compact::from_map(map)
    }
}

impl PartialEq for Compact {
    /// Equal as JSON values (key order aside, as JSON objects compare).
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get() || self.to_map() == other.to_map()
    }
}

impl fmt::Debug for Compact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.get())
    }
}

impl Serialize for Compact {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Compact {
    /// Any JSON object that parses as a map, kept as its text. Parsing it here means
    /// [`Compact::to_map`] can never lose a value later: a number out of range, a lone
    /// surrogate or nesting too deep stops the load (naming the file) instead of being read as
    /// an empty bucket and written back.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        let text = raw.get();
        // `RawValue` has checked the syntax. Parsing into a map can still fail only on what
        // `may_not_parse` looks for, so the full parse (slow for 1,000 thermostats) runs only
        // on values that contain such things, and on values that are not objects.
        if !text.starts_with('{') || may_not_parse(text) {
            serde_json::from_str::<JsonMap>(text).map_err(|e| {
                serde::de::Error::custom(format!("a bucket value must be a JSON object ({e})"))
            })?;
        }
        Ok(Compact(raw))
    }
}

/// Whether syntactically valid JSON `text` might still fail to parse into a map: a `\u`
/// escape (a lone surrogate), a number with an exponent or with 300 or more digits (out of
/// range), or nesting deeper than 100 (serde_json stops at 128).
fn may_not_parse(text: &str) -> bool {
    let (mut in_string, mut escaped) = (false, false);
    let (mut depth, mut digits) = (0usize, 0usize);
    for b in text.bytes() {
        if in_string {
            match (escaped, b) {
                (true, b'u') => return true,
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > 100 {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            // An exponent follows a digit (`1e5`, `1.5E2`); the `e` of `true` does not.
            b'e' | b'E' if digits > 0 => return true,
            _ => {}
        }
        digits = if b.is_ascii_digit() { digits + 1 } else { 0 };
        if digits >= 300 {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_round_trips_in_order_and_objects_only_are_accepted() {
        let Value::Object(map) = json!({"z": 1, "a": [true, null], "m": {"x": "y"}}) else {
            unreachable!()
        };
        let c = Compact::from_map(&map);
        assert_eq!(c.text(), r#"{"z":1,"a":[true,null],"m":{"x":"y"}}"#);
        assert_eq!(c.to_map(), map);
        assert_eq!(c.get("z"), Some(json!(1)));
        let spaced: Compact =
            serde_json::from_str(r#"{ "z": 1, "a": [true, null], "m": {"x":"y"} }"#).unwrap();
        assert_eq!(spaced, c);
        assert_eq!(serde_json::to_string(&c).unwrap(), c.text());
        assert!(serde_json::from_str::<Compact>("[1]").is_err());
        for unreadable in [r#"{"a":1e400}"#, r#"{"a":"\ud800"}"#] {
            assert!(
                serde_json::from_str::<Compact>(unreadable).is_err(),
                "{unreadable}"
            );
        }
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(200), "]".repeat(200));
        assert!(serde_json::from_str::<Compact>(&deep).is_err());
        let huge = format!("{{\"a\":1{}}}", "0".repeat(400));
        assert!(serde_json::from_str::<Compact>(&huge).is_err());
        // Ordinary values, with strings full of escapes, exponents and brackets, load.
        let fine = r#"{"name":"e [x] {\"y\"} \\ \n","t":1.5e2,"s":"\u00e9","n":[1,{"a":true}]}"#;
        assert!(serde_json::from_str::<Compact>(fine).is_ok());
        assert!(!may_not_parse(
            r#"{"name":"eEe\\u","t":21.5,"l":[[1]],"b":true,"f":false}"#
        ));
        assert!(may_not_parse(r#"{"t":2E5}"#) && may_not_parse(r#"{"s":"\u0041"}"#));
        // Floats survive the text round trip exactly (serde_json's float_roundtrip).
        let Value::Object(f) = json!({"t": 1.222_222_222_222_223_9_f64}) else {
            unreachable!()
        };
        assert_eq!(Compact::from_map(&f).to_map(), f);
        assert!(serde_json::from_reader::<_, Compact>(&b"{\"a\":1}"[..]).is_ok());
        assert!(Compact::empty().to_map().is_empty());
    }
}
