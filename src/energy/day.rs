//! One thermostat's local day of energy history, and its compact line on disk.

use serde_json::{Value, json};

pub use crate::zone::DAY_S;

/// A local day's totals. Run times are kept in milliseconds while the day is live (so a flush
/// every minute loses nothing to rounding); the disk and the API see whole seconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Day {
    /// Days since 1970-01-01, in the thermostat's local time.
    pub date: i64,
    pub heat_ms: i64,
    pub cool_ms: i64,
    pub fan_ms: i64,
    pub aux_ms: i64,
    pub away_ms: i64,
    /// Indoor readings of the periodic samples: their sum and count, lowest and highest.
    pub indoor_sum: f64,
    pub indoor_n: u32,
    pub indoor_min: Option<f64>,
    pub indoor_max: Option<f64>,
    pub target_changes: u32,
    /// Outdoor readings (the weather hearth last had for the thermostat's place) of the
    /// periodic samples: their sum and count.
    pub outdoor_sum: f64,
    pub outdoor_n: u32,
}

/// The column names of a row, in order: the JSON keys and the CSV header.
pub const COLUMNS: [&str; 11] = [
    "date",
    "heat_s",
    "cool_s",
    "fan_s",
    "aux_s",
    "away_s",
    "indoor_avg_c",
    "indoor_min_c",
    "indoor_max_c",
    "outdoor_avg_c",
    "target_changes",
];

impl Day {
    pub fn new(date: i64) -> Day {
        Day {
            date,
            ..Day::default()
        }
    }

    /// Whether nothing was recorded (such a day is not written).
    pub fn is_empty(&self) -> bool {
        *self == Day::new(self.date)
    }

    pub fn add_indoor(&mut self, temp: f64) {
        self.indoor_sum += temp;
        self.indoor_n += 1;
        self.indoor_min = Some(self.indoor_min.map_or(temp, |m| m.min(temp)));
        self.indoor_max = Some(self.indoor_max.map_or(temp, |m| m.max(temp)));
    }

    fn indoor_avg(&self) -> Option<f64> {
        (self.indoor_n > 0).then(|| round2(self.indoor_sum / f64::from(self.indoor_n)))
    }

    pub fn add_outdoor(&mut self, temp: f64) {
        self.outdoor_sum += temp;
        self.outdoor_n += 1;
    }

    fn outdoor_avg(&self) -> Option<f64> {
        (self.outdoor_n > 0).then(|| round2(self.outdoor_sum / f64::from(self.outdoor_n)))
    }

    /// The line on disk: a JSON array, about 55 bytes (docs/energy.md).
    /// `[date, heat_s, cool_s, fan_s, aux_s, away_s, indoor_avg, indoor_n, min, max, changes]`,
    /// then `outdoor_avg, outdoor_n` on a day with outdoor readings (a line of 11 is a day
    /// without, as every day was before hearth recorded the weather).
    pub fn to_line(&self) -> String {
        let mut line = json!([
            self.date,
            self.heat_ms / 1000,
            self.cool_ms / 1000,
            self.fan_ms / 1000,
            self.aux_ms / 1000,
            self.away_ms / 1000,
            self.indoor_avg(),
            self.indoor_n,
            self.indoor_min,
            self.indoor_max,
            self.target_changes,
        ]);
        if let (Some(avg), Some(fields)) = (self.outdoor_avg(), line.as_array_mut()) {
            fields.push(json!(avg));
            fields.push(json!(self.outdoor_n));
        }
        line.to_string()
    }

    /// A line of [`Day::to_line`]; `None` for one that is torn or damaged.
    pub fn from_line(line: &[u8]) -> Option<Day> {
        let v: Vec<Value> = serde_json::from_slice(line).ok()?;
        if v.len() != 11 && v.len() != 13 {
            return None;
        }
        let (outdoor_sum, outdoor_n) = match (v.get(11).and_then(Value::as_f64), v.get(12)) {
            (Some(avg), Some(n)) => {
                let n = u32::try_from(n.as_i64().filter(|n| *n >= 0)?).ok()?;
                (avg * f64::from(n), n)
            }
            _ => (0.0, 0),
        };
        let int = |i: usize| v[i].as_i64().filter(|n| *n >= 0);
        let num = |i: usize| v[i].as_f64();
        let indoor_n = u32::try_from(int(7)?).ok()?;
        Some(Day {
            date: v[0].as_i64()?,
            heat_ms: int(1)?.checked_mul(1000)?,
            cool_ms: int(2)?.checked_mul(1000)?,
            fan_ms: int(3)?.checked_mul(1000)?,
            aux_ms: int(4)?.checked_mul(1000)?,
            away_ms: int(5)?.checked_mul(1000)?,
            indoor_sum: num(6).unwrap_or(0.0) * f64::from(indoor_n),
            indoor_n,
            indoor_min: num(8),
            indoor_max: num(9),
            target_changes: u32::try_from(int(10)?).ok()?,
            outdoor_sum,
            outdoor_n,
        })
    }

    /// The API's row (keys of [`COLUMNS`]); an average with no reading is null.
    pub fn to_json(&self) -> Value {
        json!({
            "date": date_text(self.date),
            "heat_s": self.heat_ms / 1000,
            "cool_s": self.cool_ms / 1000,
            "fan_s": self.fan_ms / 1000,
            "aux_s": self.aux_ms / 1000,
            "away_s": self.away_ms / 1000,
            "indoor_avg_c": self.indoor_avg(),
            "indoor_min_c": self.indoor_min,
            "indoor_max_c": self.indoor_max,
            "outdoor_avg_c": self.outdoor_avg(),
            "target_changes": self.target_changes,
        })
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

pub use crate::zone::{date_text, parse_date};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip_and_bad_ones_are_refused() {
        assert_eq!(parse_date("1970-01-01"), Some(0));
        assert_eq!(parse_date("2024-02-29"), Some(19_782));
        assert_eq!(date_text(19_782), "2024-02-29");
        assert_eq!(date_text(-1), "1969-12-31");
        assert_eq!(
            parse_date("9999-12-31").map(date_text).as_deref(),
            Some("9999-12-31")
        );
        assert_eq!(date_text(i64::MAX), "");
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "2024-1-01",
            "24-01-01",
            "2024-01-0x",
            "",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_line_round_trips_in_whole_seconds() {
        let mut day = Day::new(20_000);
        day.heat_ms = 3_600_999;
        day.away_ms = 1_000;
        day.add_indoor(20.0);
        day.add_indoor(21.0);
        day.target_changes = 2;
        let line = day.to_line();
        assert!(line.len() < 60, "{line}");
        let back = Day::from_line(line.as_bytes()).unwrap();
        assert_eq!(back.heat_ms, 3_600_000);
        assert_eq!(back.indoor_n, 2);
        assert_eq!(back.to_json(), day.to_json());
        assert_eq!(Day::from_line(b"[1,2,3"), None);
        assert_eq!(Day::from_line(b"[1,-2,0,0,0,0,null,0,null,null,0]"), None);
    }

    #[test]
    fn outdoor_readings_add_two_fields_and_a_line_without_them_still_reads() {
        let mut day = Day::new(20_000);
        day.add_indoor(20.0);
        let before = day.to_line();
        assert_eq!(
            Day::from_line(before.as_bytes()).unwrap().to_json()["outdoor_avg_c"],
            Value::Null
        );
        day.add_outdoor(4.0);
        day.add_outdoor(5.5);
        let line = day.to_line();
        assert_eq!(line, format!("{},4.75,2]", before.trim_end_matches(']')));
        let back = Day::from_line(line.as_bytes()).unwrap();
        assert_eq!(back.to_json()["outdoor_avg_c"], serde_json::json!(4.75));
        assert_eq!(back.to_json(), day.to_json());
        assert_eq!(
            Day::from_line(b"[1,2,0,0,0,0,null,0,null,null,0,4.0]"),
            None
        );
        assert_eq!(
            Day::from_line(b"[1,2,0,0,0,0,null,0,null,null,0,4.0,-1]"),
            None
        );
    }
}
