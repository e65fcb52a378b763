//! The rows a surface answers with (`GET /api/energy`, the hosted API's `.../energy`): the
//! stored days and the live one, in a period, as JSON or CSV. Each surface parses its own
//! request and words its own errors; the period's rules and the rows are the same for all.

use std::io;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::Live;
use super::day::{self, COLUMNS, Day};
use super::zone::{Named, Zone};

/// The days asked for, inclusive; `None` is open.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Period {
    pub from: Option<i64>,
    pub to: Option<i64>,
}

impl Period {
    /// `from` and `to` as given (absent or empty: open). The error is the message to answer.
    pub fn parse(from: Option<&str>, to: Option<&str>) -> Result<Period, String> {
        let date = |name: &str, raw: Option<&str>| match raw {
            None | Some("") => Ok(None),
            Some(text) => day::parse_date(text)
                .map(Some)
                .ok_or_else(|| format!("{name} must be a date as YYYY-MM-DD")),
        };
        let period = Period {
            from: date("from", from)?,
            to: date("to", to)?,
        };
        match period {
            Period {
                from: Some(f),
                to: Some(t),
            } if f > t => Err("from must not be after to".into()),
            _ => Ok(period),
        }
    }

    fn holds(&self, date: i64) -> bool {
        self.from.is_none_or(|f| date >= f) && self.to.is_none_or(|t| date <= t)
    }
}

/// A thermostat's energy history in a period: the zone its days are counted in and the days,
/// ascending.
pub struct Report {
    pub serial: String,
    pub zone: Named,
    pub days: Vec<Day>,
}

impl Report {
    /// Reads `serial`'s days, stored and live ([`Live::days`]); `time_zone` is the
    /// structure's zone, resolved in the tz database `zoneinfo` when no live day says which
    /// zone the days are kept in.
    pub fn read(
        live: &Live,
        serial: &str,
        time_zone: Option<&str>,
        zoneinfo: &Path,
        period: Period,
    ) -> io::Result<Report> {
        let (zone, days) = live.days(serial)?;
        let zone = zone.unwrap_or_else(|| Zone::resolve(time_zone, zoneinfo).named);
        Ok(Report {
            serial: serial.to_string(),
            zone,
            days: days
                .into_values()
                .filter(|d| period.holds(d.date))
                .collect(),
        })
    }

    /// `{"serial","time_zone","time_zone_source","structure_time_zone","days"}`: the control
    /// port's answer.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("serial".into(), json!(self.serial));
        self.zone.put(&mut out);
        out.insert("days".into(), Value::Array(self.days_json()));
        Value::Object(out)
    }

    /// The days, each as a JSON row (docs/energy.md).
    pub fn days_json(&self) -> Vec<Value> {
        self.days.iter().map(Day::to_json).collect()
    }

    /// A header row of the JSON rows' names, then one row per day (empty for null).
    pub fn to_csv(&self) -> String {
        let mut out = COLUMNS.join(",");
        out.push_str("\r\n");
        for day in &self.days {
            let row = day.to_json();
            let cells: Vec<String> = COLUMNS
                .iter()
                .map(|c| match &row[*c] {
                    Value::Null => String::new(),
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            out.push_str(&cells.join(","));
            out.push_str("\r\n");
        }
        out
    }
}

/// Whether a request asks for CSV: `format=csv`, or an `Accept` naming `text/csv` (and no
/// `format` saying otherwise).
pub fn wants_csv(format: Option<&str>, accept: Option<&str>) -> Result<bool, String> {
    match format {
        Some("csv") => Ok(true),
        Some("json") => Ok(false),
        Some("") | None => Ok(accept.is_some_and(|a| {
            a.split(',').any(|part| {
                part.split(';')
                    .next()
                    .is_some_and(|m| m.trim().eq_ignore_ascii_case("text/csv"))
            })
        })),
        Some(_) => Err("format must be json or csv".into()),
    }
}

pub const CSV: &str = "text/csv; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_are_checked() {
        assert_eq!(Period::parse(None, Some("")), Ok(Period::default()));
        let p = Period::parse(Some("1970-01-02"), Some("1970-01-03")).unwrap();
        assert!(!p.holds(0) && p.holds(1) && p.holds(2) && !p.holds(3));
        assert_eq!(
            Period::parse(Some("2026-02-30"), None),
            Err("from must be a date as YYYY-MM-DD".into())
        );
        assert_eq!(
            Period::parse(Some("2026-01-02"), Some("2026-01-01")),
            Err("from must not be after to".into())
        );
    }

    #[test]
    fn csv_is_asked_for_by_format_or_accept() {
        assert_eq!(wants_csv(Some("csv"), None), Ok(true));
        assert_eq!(wants_csv(None, Some("text/html, text/csv;q=0.9")), Ok(true));
        assert_eq!(wants_csv(Some("json"), Some("text/csv")), Ok(false));
        assert_eq!(wants_csv(None, None), Ok(false));
        assert!(wants_csv(Some("xml"), None).is_err());
    }

    #[test]
    fn csv_has_the_header_and_a_row_per_day() {
        let mut day = Day::new(0);
        day.heat_ms = 60_000;
        let r = Report {
            serial: "S".into(),
            zone: Zone::utc().named,
            days: vec![day],
        };
        assert_eq!(
            r.to_csv(),
            "date,heat_s,cool_s,fan_s,aux_s,away_s,indoor_avg_c,indoor_min_c,indoor_max_c,\
             outdoor_avg_c,target_changes\r\n1970-01-01,60,0,0,0,0,,,,,0\r\n"
        );
    }
}
