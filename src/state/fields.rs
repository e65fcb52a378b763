//! A bucket value read field by field: where each field's value lies in the stored JSON text is
//! found in one pass, and a value is parsed only when it is first asked for.
//!
//! A real thermostat's `device` bucket has about 200 fields (6 KB of text). Parsing all of it
//! into a map of `serde_json` values, hundreds of small allocations, took about 50 µs on the
//! development machine, for a status record that reads some 60 of them; finding the fields
//! takes about a fifth of that, and what is never read is never parsed.

use std::cell::OnceCell;
use std::fmt;
use std::ops::Range;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::Compact;
use crate::util::JsonMap;

/// One bucket value's fields. Reading a field that is absent gives `None`, as a map would.
#[derive(Clone)]
pub struct Fields {
    text: Box<str>,
    /// In the order of the text.
    entries: Vec<Entry>,
}

#[derive(Clone)]
struct Entry {
    /// [`hash`] of the name: a lookup compares names only where this matches.
    hash: u32,
    key: Key,
    value: Range<usize>,
    parsed: OnceCell<Value>,
}

#[derive(Clone)]
enum Key {
    /// Where the name lies in the text (a name without escapes, as every real one is).
    At(Range<usize>),
    /// A name written with escapes, decoded.
    Decoded(Box<str>),
}

impl Fields {
    /// The fields of a stored value.
    pub fn of(value: &Compact) -> Fields {
        Fields::from_text(value.text())
    }

    /// The fields of a map (for tests and values that are not stored).
    pub fn from_map(map: &JsonMap) -> Fields {
        Fields::of(&Compact::from_map(map))
    }

    fn from_text(text: &str) -> Fields {
        // Every Compact holds a JSON object; should that ever not hold, the value reads as
        // empty, as `Compact::to_map` reads it.
        let found = serde_json::from_str::<Found<'_>>(text).map(|f| f.0);
        let base = text.as_ptr() as usize;
        let at = |part: &str| {
            let start = part.as_ptr() as usize - base;
            start..start + part.len()
        };
        let entries = found
            .unwrap_or_default()
            .into_iter()
            .map(|(name, raw)| Entry {
                hash: hash(name.as_str()),
                key: match name {
                    Name::Borrowed(n) => Key::At(at(n)),
                    Name::Owned(n) => Key::Decoded(n.into()),
                },
                value: at(raw.get()),
                parsed: OnceCell::new(),
            })
            .collect();
        Fields {
            text: text.into(),
            entries,
        }
    }

    fn name<'a>(&'a self, entry: &'a Entry) -> &'a str {
        match &entry.key {
            Key::At(range) => &self.text[range.clone()],
            Key::Decoded(name) => name,
        }
    }

    /// The field called `name`: its last occurrence, as a map reads a repeated name.
    fn entry(&self, name: &str) -> Option<&Entry> {
        let wanted = hash(name);
        self.entries
            .iter()
            .rev()
            .find(|e| e.hash == wanted && self.name(e) == name)
    }

    /// A field's value.
    pub fn get(&self, name: &str) -> Option<&Value> {
        let entry = self.entry(name)?;
        Some(entry.parsed.get_or_init(|| {
            serde_json::from_str(&self.text[entry.value.clone()]).unwrap_or(Value::Null)
        }))
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.entry(name).is_some()
    }

    /// The whole value as a map.
    pub fn to_map(&self) -> JsonMap {
        serde_json::from_str(&self.text).unwrap_or_default()
    }

    /// The value's JSON text, as stored.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The text with each of `set`'s fields written into it: a field it has gets the new value
    /// where the old one was (its last occurrence), a new one is added at the end. That is the
    /// text of the value as a map with `set` inserted, serialized again (insertion order, as
    /// the map keeps it), without parsing and rewriting every other field.
    pub fn merged_text(&self, set: &JsonMap) -> String {
        let mut replaced: Vec<(Range<usize>, &Value)> = Vec::new();
        let mut added: Vec<(&String, &Value)> = Vec::new();
        for (name, value) in set {
            match self.entry(name) {
                Some(entry) => replaced.push((entry.value.clone(), value)),
                None => added.push((name, value)),
            }
        }
        replaced.sort_by_key(|(range, _)| range.start);
        let mut out = String::with_capacity(self.text.len() + 64 * set.len());
        let mut copied = 0;
        for (range, value) in replaced {
            out.push_str(&self.text[copied..range.start]);
            push_json(&mut out, value);
            copied = range.end;
        }
        // What is left ends with the object's closing brace; new fields go before it.
        let rest = &self.text[copied..];
        let close = rest.rfind('}').unwrap_or(rest.len());
        out.push_str(&rest[..close]);
        for (name, value) in added {
            if !self.entries.is_empty() || !out.ends_with('{') {
                out.push(',');
            }
            push_json(&mut out, name);
            out.push(':');
            push_json(&mut out, value);
        }
        out.push_str(&rest[close..]);
        out
    }
}

/// Appends `value` as compact JSON (what serializing a map writes for it).
fn push_json(out: &mut String, value: &(impl serde::Serialize + ?Sized)) {
    // Serializing a string or a JSON value cannot fail.
    out.push_str(&serde_json::to_string(value).unwrap_or_else(|_| "null".into()));
}

impl fmt::Debug for Fields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// FNV-1a: a few instructions per byte, and field names are short.
fn hash(name: &str) -> u32 {
    name.bytes().fold(0x811c_9dc5, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// A field name as the text has it: borrowed unless it had to be unescaped.
enum Name<'a> {
    Borrowed(&'a str),
    Owned(String),
}

impl Name<'_> {
    fn as_str(&self) -> &str {
        match self {
            Name::Borrowed(n) => n,
            Name::Owned(n) => n,
        }
    }
}

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl<'de> Visitor<'de> for NameVisitor {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Name<'de>, E> {
                Ok(Name::Borrowed(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Name<'de>, E> {
                Ok(Name::Owned(v.to_string()))
            }
        }
        d.deserialize_str(NameVisitor)
    }
}

/// Each field's name and the text of its value, in order.
struct Found<'a>(Vec<(Name<'a>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Found<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FoundVisitor;
        impl<'de> Visitor<'de> for FoundVisitor {
            type Value = Found<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found<'de>, A::Error> {
                let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some(entry) = map.next_entry::<Name<'de>, &'de RawValue>()? {
                    fields.push(entry);
                }
                Ok(Found(fields))
            }
        }
        d.deserialize_map(FoundVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(v: Value) -> Fields {
        Fields::from_map(v.as_object().unwrap())
    }

    #[test]
    fn fields_read_as_the_map_would() {
        let value = json!({
            "t": 21.5, "s": "a \"quoted\" \\ text", "n": null, "o": {"mode": "manual-eco"},
            "l": [1, 2.25, "x"], "b": false, "big": 1.222_222_222_222_223_9_f64, "é\n": 1
        });
        let f = fields(value.clone());
        let map = value.as_object().unwrap();
        for (name, v) in map {
            assert_eq!(f.get(name), Some(v), "{name}");
            assert!(f.contains_key(name));
        }
        assert_eq!(f.get("missing"), None);
        assert!(!f.contains_key("missing"));
        assert_eq!(&f.to_map(), map);
        // Asked twice, parsed once, same answer.
        assert_eq!(f.get("o"), f.get("o"));
    }

    #[test]
    fn a_merge_written_into_the_text_is_the_map_merged_and_serialized() {
        let stored = json!({
            "a": 1, "s": "x,}{\"y", "o": {"n": [1, {"m": "}"}]}, "é\n": true, "z": null
        });
        let cases = [
            json!({}),
            json!({"a": 2}),
            json!({"o": "flat", "a": [1.5, 2], "new": {"k": "}"}}),
            json!({"z": 0, "later": 1, "é\n": false, "\"q\"": "v"}),
        ];
        for set in cases {
            let set = set.as_object().unwrap();
            let mut map = stored.as_object().unwrap().clone();
            for (k, v) in set {
                map.insert(k.clone(), v.clone());
            }
            let expected = serde_json::to_string(&map).unwrap();
            let f = fields(stored.clone());
            assert_eq!(f.merged_text(set), expected, "{set:?}");
        }
        let empty = Fields::from_text("{}");
        let set = json!({"a": 1, "b": "c"});
        assert_eq!(
            empty.merged_text(set.as_object().unwrap()),
            r#"{"a":1,"b":"c"}"#
        );
        // Spaced or repeated fields (not what hearth writes) still merge to the right value.
        let odd = Fields::from_text(r#"{ "a" : 1 , "a" : 2 }"#);
        let merged = odd.merged_text(json!({"a": 3, "b": 4}).as_object().unwrap());
        let read: JsonMap = serde_json::from_str(&merged).unwrap();
        assert_eq!(Value::Object(read), json!({"a": 3, "b": 4}));
    }

    #[test]
    fn escaped_names_repeats_and_non_objects() {
        let f = Fields::from_text(r#"{"a\u0062":1,"x":1,"x":2}"#);
        assert_eq!(f.get("ab"), Some(&json!(1)));
        assert_eq!(f.get("x"), Some(&json!(2)));
        let spaced = Fields::from_text(r#"{ "a" : [ 1 , 2 ] ,"b":{ } }"#);
        assert_eq!(spaced.get("a"), Some(&json!([1, 2])));
        assert_eq!(spaced.get("b"), Some(&json!({})));
        let empty = Fields::from_text("[1]");
        assert_eq!(empty.get("a"), None);
        assert!(empty.to_map().is_empty());
    }
}
