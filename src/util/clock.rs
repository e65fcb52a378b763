//! Wall-clock helpers. The protocol counts object timestamps in milliseconds and a few fields
//! (`manual_eco_timestamp`, `fan_timer_timeout`) in seconds since the Unix epoch.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the clock is before 1970).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for a millisecond timestamp (UTC).
pub fn iso8601_ms(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    match time::OffsetDateTime::from_unix_timestamp_nanos(nanos) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second(),
            t.millisecond()
        ),
        Err(_) => String::from("1970-01-01T00:00:00.000Z"),
    }
}

/// `YYYYmmddTHHMMSSZ` (UTC), for file names.
pub fn compact_utc(ms: i64) -> String {
    let iso = iso8601_ms(ms);
    // 2026-11-21T12:03:25.457Z -> 20261121T120325Z
    let digits: String = iso[..19].chars().filter(|c| c.is_ascii_digit()).collect();
    format!("{}T{}Z", &digits[..8], &digits[8..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc() {
        assert_eq!(iso8601_ms(1_766_166_234_000), "2025-12-19T17:43:54.000Z");
        assert_eq!(compact_utc(1_766_166_234_000), "20251219T174354Z");
        assert_eq!(iso8601_ms(0), "1970-01-01T00:00:00.000Z");
    }
}
