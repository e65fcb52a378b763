//! How much a thermostat's state may hold, whoever writes it: the one place these sizes live.
//! Every write that comes from outside (a thermostat's PUT or subscribe, a command from any
//! surface) is checked here before it is made ([`super::DeviceTxn::checked_merge`] and
//! [`super::DeviceTxn::checked_replace`]); each surface words a [`TooLarge`] in its own error
//! module. Without them one client could store, and have pushed to the thermostat, a
//! 100,000-character key, a 900 KB postal code or 20,000 schedule entries in a day.
//!
//! The limits are far above anything real firmware sends (measured on the captures of a real
//! Gen2, firmware 5.9.4-5): its longest bucket key is `structure.<uuid>`, 46 characters; its
//! longest field name under 40; its longest string under 200 bytes; its largest bucket,
//! `device.S`, about 200 fields in 6 KB of JSON; some 15 buckets in all; and a schedule has a
//! handful of entries a day (the Nest app offers a few setpoints per day).
//!
//! A limit only stops a write that makes things larger than they were: a bucket stored before
//! these limits existed keeps taking writes that do not grow it.

use std::fmt;

use serde_json::Value;

use super::Compact;
use crate::util::JsonMap;

/// A bucket key (`shared.02AA01AC...`), and a field name at any depth of a value, in bytes.
pub const MAX_KEY_BYTES: usize = 256;
/// A string at any depth of a value, in bytes.
pub const MAX_STRING_BYTES: usize = 8 * 1024;
/// A bucket's whole value as JSON text, in bytes.
pub const MAX_BUCKET_BYTES: usize = 128 * 1024;
/// Buckets one thermostat may have.
pub const MAX_BUCKETS: usize = 256;
/// Entries one day of a schedule (`schedule.S`'s `days."0"` ... `"6"`) may have.
pub const MAX_SCHEDULE_ENTRIES_PER_DAY: usize = 64;

/// A write that would store more than a thermostat may hold. Nothing of it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TooLarge {
    /// A new bucket's key (its length in bytes).
    Key(usize),
    /// A field name within `key`'s value.
    FieldName { key: String, bytes: usize },
    /// A string in `key`'s field `field` (the top-level field that holds it).
    Text {
        key: String,
        field: String,
        bytes: usize,
    },
    /// `key`'s value as it would be after the write.
    Bucket { key: String, bytes: usize },
    /// A new bucket, when the thermostat has [`MAX_BUCKETS`] already.
    Buckets,
    /// A schedule day with this many entries.
    ScheduleDay { day: String, entries: usize },
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TooLarge::Key(bytes) => write!(
                f,
                "Object key too long: {bytes} bytes (at most {MAX_KEY_BYTES})"
            ),
            TooLarge::FieldName { key, bytes } => write!(
                f,
                "Field name too long in {key}: {bytes} bytes (at most {MAX_KEY_BYTES})"
            ),
            TooLarge::Text { key, field, bytes } => write!(
                f,
                "Value too long: {field} in {key} is {bytes} bytes (at most {MAX_STRING_BYTES} per string)"
            ),
            TooLarge::Bucket { key, bytes } => write!(
                f,
                "Object too large: {key} would be {bytes} bytes (at most {MAX_BUCKET_BYTES})"
            ),
            TooLarge::Buckets => write!(
                f,
                "Too many objects for one thermostat (at most {MAX_BUCKETS})"
            ),
            TooLarge::ScheduleDay { day, entries } => write!(
                f,
                "Too many schedule entries on day {day}: {entries} (at most {MAX_SCHEDULE_ENTRIES_PER_DAY})"
            ),
        }
    }
}

/// What is known of the bucket a write goes to, as the transaction sees it.
pub(super) struct Target<'a> {
    pub key: &'a str,
    /// The bucket's value, if it exists.
    pub existing: Option<&'a Compact>,
    /// How many buckets the thermostat has (asked only for a new bucket).
    pub buckets: &'a dyn Fn() -> usize,
}

/// Checks a write of `delta` to `target`: merged into it, or (`replace`) in place of it.
pub(super) fn check(target: &Target<'_>, delta: &JsonMap, replace: bool) -> Result<(), TooLarge> {
    let key = target.key;
    if target.existing.is_none() {
        if key.len() > MAX_KEY_BYTES {
            return Err(TooLarge::Key(key.len()));
        }
        if (target.buckets)() >= MAX_BUCKETS {
            return Err(TooLarge::Buckets);
        }
    }
    // `{}` and, per field, its name, a colon and a comma.
    let mut bound = 2;
    for (field, value) in delta {
        if field.len() > MAX_KEY_BYTES {
            return Err(TooLarge::FieldName {
                key: key.to_string(),
                bytes: field.len(),
            });
        }
        bound += json_string_len(field) + 2 + check_value(key, field, value)?;
    }
    if key.starts_with("schedule.") {
        if let Some(Value::Object(days)) = delta.get("days") {
            check_days(days)?;
        }
    }
    check_size(target, delta, replace, bound)
}

/// Checks strings and field names at any depth of one field's value; gives at least the
/// length of the value's JSON text (exact but for numbers, counted at their longest).
fn check_value(key: &str, field: &str, value: &Value) -> Result<usize, TooLarge> {
    match value {
        Value::String(s) if s.len() > MAX_STRING_BYTES => Err(TooLarge::Text {
            key: key.to_string(),
            field: field.to_string(),
            bytes: s.len(),
        }),
        Value::String(s) => Ok(json_string_len(s)),
        Value::Array(items) => items
            .iter()
            .try_fold(2 + items.len(), |n, v| Ok(n + check_value(key, field, v)?)),
        Value::Object(map) => map.iter().try_fold(2 + 2 * map.len(), |n, (name, v)| {
            if name.len() > MAX_KEY_BYTES {
                return Err(TooLarge::FieldName {
                    key: key.to_string(),
                    bytes: name.len(),
                });
            }
            Ok(n + json_string_len(name) + check_value(key, field, v)?)
        }),
        // The longest a number is written: an f64's shortest form, or an i64/u64.
        Value::Number(_) => Ok(24),
        Value::Bool(_) => Ok(5),
        Value::Null => Ok(4),
    }
}

/// The length of `s` as a JSON string, quotes and escapes included, as serde_json writes it.
fn json_string_len(s: &str) -> usize {
    2 + s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..0x20 => 6,
            _ => 1,
        })
        .sum::<usize>()
}

/// A schedule's days: entries per day, in either form a day is sent in (object or list).
fn check_days(days: &JsonMap) -> Result<(), TooLarge> {
    for (day, entries) in days {
        let n = match entries {
            Value::Object(m) => m.len(),
            Value::Array(l) => l.len(),
            _ => 0,
        };
        if n > MAX_SCHEDULE_ENTRIES_PER_DAY {
            return Err(TooLarge::ScheduleDay {
                day: day.clone(),
                entries: n,
            });
        }
    }
    Ok(())
}

/// The bucket's value after the write, in bytes of JSON text, against [`MAX_BUCKET_BYTES`]. A
/// write that leaves it no larger than it was is let through. `bound`: at least the length of
/// `delta`'s text; the exact length is worked out only when that bound is over the limit (never,
/// for what real firmware sends).
fn check_size(
    target: &Target<'_>,
    delta: &JsonMap,
    replace: bool,
    bound: usize,
) -> Result<(), TooLarge> {
    let before = target.existing.map_or(0, |old| old.text().len());
    let merged = |old: &Compact| old.merged(delta).text().len();
    let after = match target.existing {
        Some(old) if !replace => match before + bound {
            n if n <= MAX_BUCKET_BYTES => n,
            _ => merged(old),
        },
        _ if bound <= MAX_BUCKET_BYTES => bound,
        _ => serde_json::to_string(delta).map_or(usize::MAX, |t| t.len()),
    };
    if after > MAX_BUCKET_BYTES && after > before {
        return Err(TooLarge::Bucket {
            key: target.key.to_string(),
            bytes: after,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> JsonMap {
        v.as_object().cloned().unwrap()
    }

    fn check_new(key: &str, delta: Value) -> Result<(), TooLarge> {
        let target = Target {
            key,
            existing: None,
            buckets: &|| 3,
        };
        check(&target, &map(delta), false)
    }

    #[test]
    fn real_sizes_pass_and_each_limit_is_exact() {
        assert_eq!(
            check_new("shared.02AA01AC0000SIM1", json!({"a": "x"})),
            Ok(())
        );
        let key = format!("k.{}", "x".repeat(MAX_KEY_BYTES - 2));
        assert_eq!(check_new(&key, json!({})), Ok(()));
        assert_eq!(
            check_new(&format!("{key}x"), json!({})),
            Err(TooLarge::Key(MAX_KEY_BYTES + 1))
        );
        let s = "p".repeat(MAX_STRING_BYTES);
        assert_eq!(check_new("device.S", json!({"postal_code": s})), Ok(()));
        assert_eq!(
            check_new("device.S", json!({"where": {"list": [format!("{s}p")]}})),
            Err(TooLarge::Text {
                key: "device.S".into(),
                field: "where".into(),
                bytes: MAX_STRING_BYTES + 1
            })
        );
        let name = "n".repeat(MAX_KEY_BYTES + 1);
        assert!(matches!(
            check_new("device.S", json!({"a": {name.clone(): 1}})),
            Err(TooLarge::FieldName { .. })
        ));
        assert!(matches!(
            check_new("device.S", json!({name: 1})),
            Err(TooLarge::FieldName { .. })
        ));
        let day = |n: usize| Value::Array(vec![json!({"time": 0}); n]);
        let days = json!({"ver": 2, "days": {"0": day(MAX_SCHEDULE_ENTRIES_PER_DAY)}});
        assert_eq!(check_new("schedule.S", days), Ok(()));
        assert_eq!(
            check_new(
                "schedule.S",
                json!({"days": {"1": day(MAX_SCHEDULE_ENTRIES_PER_DAY + 1)}})
            ),
            Err(TooLarge::ScheduleDay {
                day: "1".into(),
                entries: MAX_SCHEDULE_ENTRIES_PER_DAY + 1
            })
        );
        let full = Target {
            key: "new.S",
            existing: None,
            buckets: &|| MAX_BUCKETS,
        };
        assert_eq!(check(&full, &JsonMap::new(), false), Err(TooLarge::Buckets));
    }

    #[test]
    fn the_size_bound_is_never_below_the_text() {
        for v in [
            json!({"a": "plain", "b\"q": "tab\tnew\nline\u{1}\u{7f}é\\", "n": [1, -2.5e300, 18446744073709551615u64],
                   "o": {"x": null, "y": true, "z": {}}, "e": []}),
            json!({}),
            json!({"k": i64::MIN, "f": 0.1}),
        ] {
            let m = map(v);
            let text = serde_json::to_string(&m).unwrap();
            let bound = 2 + m
                .iter()
                .map(|(k, v)| json_string_len(k) + 2 + check_value("k", k, v).unwrap())
                .sum::<usize>();
            assert!(bound >= text.len(), "{bound} < {}: {text}", text.len());
            assert!(
                bound <= text.len() + 80,
                "close: {bound} for {}",
                text.len()
            );
        }
        assert_eq!(
            json_string_len("a\"\u{1}"),
            serde_json::to_string("a\"\u{1}").unwrap().len()
        );
    }

    #[test]
    fn a_bucket_may_not_grow_past_the_limit_but_may_shrink_or_stay() {
        let chunk = "c".repeat(MAX_STRING_BYTES - 100);
        let mut value = JsonMap::new();
        let mut n = 0;
        while serde_json::to_string(&value).unwrap().len() < MAX_BUCKET_BYTES - MAX_STRING_BYTES {
            value.insert(format!("f{n}"), json!(chunk));
            n += 1;
        }
        let old = Compact::from_map(&value);
        let target = Target {
            key: "device.S",
            existing: Some(&old),
            buckets: &|| 3,
        };
        // Replacing a field by one as long keeps the size: let through.
        assert_eq!(check(&target, &map(json!({"f0": chunk})), false), Ok(()));
        // Two more fields pass the limit.
        let more = map(json!({"x": chunk, "y": chunk}));
        assert!(matches!(
            check(&target, &more, false),
            Err(TooLarge::Bucket { .. })
        ));
        // A bucket already over the limit takes a write that does not grow it.
        let big = Compact::from_map(&map(json!({"a": "z".repeat(MAX_BUCKET_BYTES)})));
        let over = Target {
            key: "device.S",
            existing: Some(&big),
            buckets: &|| 3,
        };
        assert_eq!(check(&over, &map(json!({"a": "small"})), false), Ok(()));
        assert!(matches!(
            check(&over, &map(json!({"b": 1})), false),
            Err(TooLarge::Bucket { .. })
        ));
    }
}

/// What the checks cost next to the merge they guard, printed, not asserted (a measurement, not
/// a test): `CARGO_PROFILE_RELEASE_LTO=false cargo test --release --lib limits::measure --
/// --ignored --nocapture`.
#[cfg(test)]
mod measure {
    use super::*;
    use crate::util::clock::Stopwatch;
    use serde_json::json;

    #[test]
    #[ignore = "a measurement: run it with --release --ignored --nocapture"]
    fn cost() {
        // A real Gen2's device bucket is about 198 fields in 6 KB.
        let mut device = JsonMap::new();
        for i in 0..198 {
            let v = match i % 4 {
                0 => json!(format!("value-{i}-abcdefghij")),
                1 => json!(i as f64 + 0.5),
                2 => json!(i % 2 == 0),
                _ => json!({"a": i, "b": "xyz"}),
            };
            device.insert(format!("field_name_{i:03}"), v);
        }
        let stored = Compact::from_map(&device);
        println!("device bucket: {} bytes", stored.text().len());
        let target = Target {
            key: "device.02AA01AC0000SIM1",
            existing: Some(&stored),
            buckets: &|| 12,
        };
        let small = match json!({"fan_timer_timeout": 1_766_000_000, "target_change_pending": true})
        {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        for (what, delta) in [
            ("a command's 2 fields", &small),
            ("a full 198-field PUT", &device),
        ] {
            let n = 20_000;
            let t = Stopwatch::start();
            for _ in 0..n {
                std::hint::black_box(check(&target, std::hint::black_box(delta), false)).unwrap();
            }
            let per = t.elapsed().as_secs_f64() / n as f64 * 1e6;
            let t = Stopwatch::start();
            for _ in 0..n {
                std::hint::black_box(stored.merged(std::hint::black_box(delta)));
            }
            let merge = t.elapsed().as_secs_f64() / n as f64 * 1e6;
            println!("{what}: check {per:.2} µs, the merge itself {merge:.2} µs");
        }
    }
}
