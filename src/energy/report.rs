//! The rows a surface answers with (`GET /api/energy`, the hosted API's `.../energy`): the
//! stored days and the live one, in a period, as JSON or CSV. Each surface parses its own
//! request and words its own errors; the period's rules and the rows are the same for all.
//! The period's totals and those of the period before it ([`Sum`]) are added here, once, for a
//! thermostat and for a home of them: the page shows these numbers, never sums of its own.

use std::collections::BTreeMap;
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

    /// The period of as many days just before this one: `None` unless both ends are given.
    pub fn before(&self) -> Option<Period> {
        let (from, to) = (self.from?, self.to?);
        Some(Period {
            from: Some(from - (to - from + 1)),
            to: Some(from - 1),
        })
    }
}

/// What ran in a period, in whole seconds (each day's row rounded down on its own, so a sum is
/// the sum of the rows the period lists), and how many days of it have a row.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sum {
    pub heat_s: i64,
    pub cool_s: i64,
    pub fan_s: i64,
    pub aux_s: i64,
    pub away_s: i64,
    pub days: u32,
    /// The outdoor readings of the days' periodic samples: their sum and count.
    pub outdoor_sum: f64,
    pub outdoor_n: u64,
}

impl Sum {
    /// The days of `days` that `period` holds.
    pub fn of<'a>(days: impl IntoIterator<Item = &'a Day>, period: Period) -> Sum {
        days.into_iter()
            .filter(|d| period.holds(d.date))
            .fold(Sum::default(), |s, d| Sum {
                heat_s: s.heat_s.saturating_add(d.heat_ms / 1000),
                cool_s: s.cool_s.saturating_add(d.cool_ms / 1000),
                fan_s: s.fan_s.saturating_add(d.fan_ms / 1000),
                aux_s: s.aux_s.saturating_add(d.aux_ms / 1000),
                away_s: s.away_s.saturating_add(d.away_ms / 1000),
                days: s.days.saturating_add(1),
                outdoor_sum: s.outdoor_sum + d.outdoor_sum,
                outdoor_n: s.outdoor_n + u64::from(d.outdoor_n),
            })
    }

    pub fn plus(self, o: Sum) -> Sum {
        Sum {
            heat_s: self.heat_s.saturating_add(o.heat_s),
            cool_s: self.cool_s.saturating_add(o.cool_s),
            fan_s: self.fan_s.saturating_add(o.fan_s),
            aux_s: self.aux_s.saturating_add(o.aux_s),
            away_s: self.away_s.saturating_add(o.away_s),
            days: self.days.saturating_add(o.days),
            outdoor_sum: self.outdoor_sum + o.outdoor_sum,
            outdoor_n: self.outdoor_n + o.outdoor_n,
        }
    }

    /// `{"from","to","days","heat_s","cool_s","fan_s","aux_s","away_s","outdoor_avg_c"}`
    /// (`from`, `to`: the period's ends as dates, null where open; the outdoor average over
    /// every periodic sample of its days, to a hundredth, null with none).
    fn to_json(self, period: Period) -> Value {
        let date = |d: Option<i64>| d.map(day::date_text);
        let outdoor = (self.outdoor_n > 0)
            .then(|| (self.outdoor_sum / self.outdoor_n as f64 * 100.0).round() / 100.0);
        json!({
            "from": date(period.from),
            "to": date(period.to),
            "days": self.days,
            "heat_s": self.heat_s,
            "cool_s": self.cool_s,
            "fan_s": self.fan_s,
            "aux_s": self.aux_s,
            "away_s": self.away_s,
            "outdoor_avg_c": outdoor,
        })
    }
}

/// A period's and the period before's totals (see [`Period::before`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Totals {
    pub period: Sum,
    pub before: Option<Sum>,
}

impl Totals {
    fn of(days: &BTreeMap<i64, Day>, period: Period) -> Totals {
        Totals {
            period: Sum::of(days.values(), period),
            before: period.before().map(|b| Sum::of(days.values(), b)),
        }
    }

    fn plus(self, o: Totals) -> Totals {
        Totals {
            period: self.period.plus(o.period),
            before: match (self.before, o.before) {
                (Some(a), Some(b)) => Some(a.plus(b)),
                (a, b) => a.or(b),
            },
        }
    }

    /// `"total"` and `"before"` (null without both ends) into `out`.
    fn put(self, period: Period, out: &mut Map<String, Value>) {
        out.insert("total".into(), self.period.to_json(period));
        let before = match (self.before, period.before()) {
            (Some(sum), Some(b)) => sum.to_json(b),
            _ => Value::Null,
        };
        out.insert("before".into(), before);
    }
}

/// The most thermostats a home's totals are summed over: each is a read of its files.
pub const HOME_MAX: usize = 64;

/// The totals of a home: every thermostat in `serials` (those the caller lists), summed; `None`
/// when there are more than [`HOME_MAX`] of them.
pub struct Home {
    pub thermostats: usize,
    pub totals: Totals,
}

impl Home {
    pub fn read(live: &Live, serials: &[String], period: Period) -> io::Result<Option<Home>> {
        if serials.len() > HOME_MAX {
            return Ok(None);
        }
        let mut totals = Totals::default();
        for serial in serials {
            let (_, days) = live.days(serial)?;
            totals = totals.plus(Totals::of(&days, period));
        }
        if period.before().is_none() {
            totals.before = None;
        }
        Ok(Some(Home {
            thermostats: serials.len(),
            totals,
        }))
    }
}

/// A thermostat's energy history in a period: the zone its days are counted in and the days,
/// ascending.
pub struct Report {
    pub serial: String,
    pub zone: Named,
    pub period: Period,
    pub days: Vec<Day>,
    pub totals: Totals,
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
            period,
            totals: Totals::of(&days, period),
            days: days
                .into_values()
                .filter(|d| period.holds(d.date))
                .collect(),
        })
    }

    /// `{"serial","time_zone","time_zone_source","structure_time_zone","total","before",
    /// "home","days"}`: the control port's answer, with the totals of `home` (null when there
    /// are too many thermostats to sum).
    pub fn to_json(&self, home: Option<&Home>) -> Value {
        let mut out = Map::new();
        out.insert("serial".into(), json!(self.serial));
        self.zone.put(&mut out);
        self.totals.put(self.period, &mut out);
        let home = home.map_or(Value::Null, |h| {
            let mut o = Map::new();
            o.insert("thermostats".into(), json!(h.thermostats));
            h.totals.put(self.period, &mut o);
            Value::Object(o)
        });
        out.insert("home".into(), home);
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
    fn a_period_and_the_one_before_are_summed_from_the_rows() {
        let days: BTreeMap<i64, Day> = (0..10)
            .map(|d| {
                let mut day = Day::new(d);
                day.heat_ms = 3_600_500; // an hour and half a second: the row says 3600
                day.cool_ms = d * 1000;
                (d, day)
            })
            .collect();
        let period = Period::parse(Some("1970-01-08"), Some("1970-01-10")).unwrap();
        assert_eq!(
            period.before(),
            Some(Period {
                from: Some(4),
                to: Some(6)
            })
        );
        let t = Totals::of(&days, period);
        assert_eq!(
            (t.period.heat_s, t.period.cool_s, t.period.days),
            (10_800, 24, 3)
        );
        let before = t.before.unwrap();
        assert_eq!((before.heat_s, before.cool_s, before.days), (10_800, 15, 3));
        // Before the first row: nothing, said as no days.
        let early = Totals::of(
            &days,
            Period::parse(Some("1970-01-01"), Some("1970-01-02")).unwrap(),
        );
        assert_eq!(early.before, Some(Sum::default()));
        assert_eq!(Totals::of(&days, Period::default()).before, None);
        let mut out = Map::new();
        t.put(period, &mut out);
        assert_eq!(out["total"]["from"], json!("1970-01-08"));
        assert_eq!(out["before"]["to"], json!("1970-01-07"));
        assert_eq!(out["before"]["cool_s"], json!(15));
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
            period: Period::default(),
            days: vec![day],
            totals: Totals::default(),
        };
        assert_eq!(
            r.to_csv(),
            "date,heat_s,cool_s,fan_s,aux_s,away_s,indoor_avg_c,indoor_min_c,indoor_max_c,\
             outdoor_avg_c,target_changes\r\n1970-01-01,60,0,0,0,0,,,,,0\r\n"
        );
    }
}
