//! A thermostat's local time (its day for the energy history, its schedule's place in the week):
//! its structure's IANA `time_zone`, resolved in this order:
//!
//! 1. the system's tz database (`/usr/share/zoneinfo`, [`crate::config::Config::zoneinfo`]):
//!    the zone's TZif file, which has the zone's history, and the POSIX rule at its end (its
//!    footer) for the times after the last transition it lists (a "slim" file lists none after
//!    the zone's last change of rules);
//! 2. hearth's own table (`zones.txt`, written by `scripts/zones.sh` from tzdata): every zone
//!    and link name with its current rule as a POSIX TZ string, for systems with no tz
//!    database (hearth's images and add-on are `FROM scratch`; OpenWrt keeps none);
//! 3. else UTC, and every surface says so ([`Source::Fallback`], docs/energy.md).
//!
//! POSIX rules are jiff's (the binary's one date crate). A TZif file's transitions are read by
//! the small reader below rather than by jiff's, which costs some 24 kB more of an ARM binary
//! (17 kB of it CRC-32 tables, for comparing zones); none of jiff's bundled databases is
//! linked.

use std::path::Path;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Map, Value, json};

/// Seconds in a day: local days are whole days since 1970-01-01 (local).
pub const DAY_S: i64 = 86_400;

/// The table of zone names and their current POSIX rules (see `scripts/zones.sh`).
const TABLE: &str = include_str!("zones.txt");

/// The day of the week of a local date (days since 1970-01-01), 0 being Monday as a schedule's
/// day keys count: 1970-01-01 was a Thursday.
pub fn weekday(day: i64) -> i64 {
    (day + 3).rem_euclid(7)
}

/// Where a zone's rules came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The structure's zone, from the system's tz database.
    System,
    /// The structure's zone, from hearth's table (its current rule).
    BuiltIn,
    /// UTC: the structure's zone is unset, or neither knows it.
    Fallback,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::System => "system",
            Source::BuiltIn => "built-in",
            Source::Fallback => "fallback",
        }
    }
}

/// The zone a thermostat's days are counted in, as the surfaces say it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Named {
    /// The zone's name: the structure's, or `UTC` for a fallback.
    pub name: String,
    pub source: Source,
    /// The structure's zone as the thermostat reports it (`None`: unset).
    pub structure: Option<String>,
}

impl Named {
    /// Adds the fields every energy answer carries (docs/energy.md) to `out`: `time_zone`,
    /// `time_zone_source` and `structure_time_zone`.
    pub fn put(&self, out: &mut Map<String, Value>) {
        out.insert("time_zone".into(), json!(self.name));
        out.insert("time_zone_source".into(), json!(self.source.as_str()));
        out.insert("structure_time_zone".into(), json!(self.structure));
    }
}

/// A time zone: what it is called and its offsets from UTC.
#[derive(Clone, Debug)]
pub struct Zone {
    pub named: Named,
    rules: Rules,
}

/// A zone's offsets from UTC: the transitions a TZif file lists, then a POSIX rule.
#[derive(Clone, Debug, Default)]
struct Rules {
    /// The offset before the first transition (with neither transitions nor a rule: always).
    initial: i64,
    /// Transition times (Unix seconds, ascending) and the offset from each on.
    transitions: Vec<(i64, i64)>,
    /// The rule from the last transition on (a TZif file's footer, or the table's rule).
    rule: Option<TimeZone>,
}

impl Zone {
    /// UTC, as the fallback for a structure with no zone.
    pub fn utc() -> Zone {
        Zone::fallback(None)
    }

    fn fallback(structure: Option<String>) -> Zone {
        Zone {
            named: Named {
                name: "UTC".into(),
                source: Source::Fallback,
                structure,
            },
            rules: Rules::default(),
        }
    }

    /// The zone named `name` (the structure's), from the tz database in `dir`, else from
    /// hearth's table, else UTC.
    pub fn resolve(name: Option<&str>, dir: &Path) -> Zone {
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return Zone::utc();
        };
        let found = if plausible(name) {
            rules_of(name, dir)
        } else {
            None
        };
        match found {
            Some((rules, source)) => Zone {
                named: Named {
                    name: name.to_string(),
                    source,
                    structure: Some(name.to_string()),
                },
                rules,
            },
            None => Zone::fallback(Some(name.to_string())),
        }
    }

    /// Seconds east of UTC at Unix time `t`.
    pub fn offset(&self, t: i64) -> i64 {
        let Rules {
            initial,
            transitions,
            rule,
        } = &self.rules;
        let listed = transitions.partition_point(|(at, _)| *at <= t);
        if let (true, Some(rule)) = (listed == transitions.len(), rule) {
            let t = t.clamp(Timestamp::MIN.as_second(), Timestamp::MAX.as_second());
            if let Ok(at) = Timestamp::from_second(t) {
                return i64::from(rule.to_offset(at).seconds());
            }
        }
        match listed {
            0 => *initial,
            i => transitions[i - 1].1,
        }
    }

    /// The local date (days since 1970-01-01) of Unix milliseconds `ms`.
    pub fn day_of(&self, ms: i64) -> i64 {
        let t = ms.div_euclid(1000);
        (t + self.offset(t)).div_euclid(DAY_S)
    }

    /// The local date of Unix milliseconds `ms` (days since 1970-01-01) and the seconds since
    /// local midnight.
    pub fn local(&self, ms: i64) -> (i64, i64) {
        let t = ms.div_euclid(1000);
        let local = t + self.offset(t);
        (local.div_euclid(DAY_S), local.rem_euclid(DAY_S))
    }

    /// Where Unix milliseconds `ms` fall in the local week: the day, 0 being Monday (a
    /// schedule's day keys, as the firmware counts them), and the seconds since local midnight.
    pub fn week_time(&self, ms: i64) -> (i64, i64) {
        let (day, secs) = self.local(ms);
        (weekday(day), secs)
    }

    /// The first Unix millisecond of the local day `day` (days since 1970-01-01).
    pub fn day_start_ms(&self, day: i64) -> i64 {
        // Local noon of the day before is inside that day whatever the offset (±14 h).
        let noon_before = (day - 1) * DAY_S + DAY_S / 2;
        self.next_midnight_ms((noon_before - self.offset(noon_before)) * 1000)
    }

    /// The first Unix millisecond of the local day after the one `ms` is in.
    pub fn next_midnight_ms(&self, ms: i64) -> i64 {
        let t = ms.div_euclid(1000);
        let next = self.day_of(ms) + 1;
        let guess = next * DAY_S - self.offset(t);
        // The offset at midnight may differ from now's (a DST change during the day).
        let at = next * DAY_S - self.offset(guess);
        let at = if self.day_of(at * 1000) < next {
            guess
        } else {
            at
        };
        (at * 1000).max(ms + 1)
    }
}

/// Days since 1970-01-01 → `YYYY-MM-DD` (empty past the year 9999).
pub fn date_text(date: i64) -> String {
    let day = date
        .checked_mul(DAY_S)
        .and_then(|s| EPOCH.checked_add(jiff::SignedDuration::from_secs(s)).ok());
    match day {
        Some(d) => format!("{:04}-{:02}-{:02}", d.year(), d.month(), d.day()),
        None => String::new(),
    }
}

/// Day 0 of the dates above.
const EPOCH: jiff::civil::Date = jiff::civil::Date::constant(1970, 1, 1);

/// `YYYY-MM-DD` (a real calendar date) → days since 1970-01-01.
pub fn parse_date(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| {
        b[r.clone()]
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| &text[r])
    };
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let year = digits(0..4)?.parse().ok()?;
    let month = digits(5..7)?.parse().ok()?;
    let day = digits(8..10)?.parse().ok()?;
    let date = jiff::civil::Date::new(year, month, day).ok()?;
    Some(date.duration_since(EPOCH).as_secs().div_euclid(DAY_S))
}

/// The rules of the zone `name`: its file in the tz database `dir`, else its rule in hearth's
/// table.
fn rules_of(name: &str, dir: &Path) -> Option<(Rules, Source)> {
    let file = std::fs::read(dir.join(name)).ok();
    if let Some(rules) = file.and_then(|bytes| parse_tzif(&bytes)) {
        return Some((rules, Source::System));
    }
    let rules = Rules {
        rule: Some(TimeZone::posix(built_in(name)?).ok()?),
        ..Rules::default()
    };
    Some((rules, Source::BuiltIn))
}

/// The current rule of the zone or link `name` in hearth's table.
fn built_in(name: &str) -> Option<&'static str> {
    TABLE
        .lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (rule, names) = line.split_once('\t')?;
            names.split(' ').any(|n| n == name).then_some(rule)
        })
}

/// A TZif file (RFC 8536), version 2 or later (its 64-bit part): the initial offset, the
/// transitions and the footer's rule. `None` for anything else, a footer jiff cannot read
/// included.
fn parse_tzif(b: &[u8]) -> Option<Rules> {
    let header = |at: usize| -> Option<[usize; 6]> {
        if b.get(at..at + 4)? != b"TZif" {
            return None;
        }
        let mut n = [0usize; 6];
        for (i, slot) in n.iter_mut().enumerate() {
            let o = at + 20 + 4 * i;
            *slot = u32::from_be_bytes(b.get(o..o + 4)?.try_into().ok()?) as usize;
        }
        Some(n)
    };
    // Real files hold a few hundred transitions: counts beyond these are a damaged file, and
    // would overflow the sums below or ask for a huge allocation.
    let sane = |n: &[usize; 6]| n.iter().all(|c| *c <= 100_000);
    // isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt
    let counts = header(0)?;
    if *b.get(4)? < b'2' || !sane(&counts) {
        return None;
    }
    let [isut, isstd, leap, time, types, chars] = counts;
    let v1 = 44 + time * 5 + types * 6 + chars + leap * 8 + isstd + isut;
    let counts = header(v1)?;
    if !sane(&counts) {
        return None;
    }
    let [isut, isstd, leap, time, types, chars] = counts;
    let times = v1 + 44;
    let indices = times + time * 8;
    let infos = indices + time;
    if types == 0 || b.len() < infos + types * 6 {
        return None;
    }
    let offset_of = |ty: usize| -> Option<i64> {
        let o = infos + ty * 6;
        Some(i64::from(i32::from_be_bytes(
            b.get(o..o + 4)?.try_into().ok()?,
        )))
    };
    let mut transitions = Vec::with_capacity(time);
    for i in 0..time {
        let o = times + i * 8;
        let at = i64::from_be_bytes(b.get(o..o + 8)?.try_into().ok()?);
        let ty = usize::from(*b.get(indices + i)?);
        if ty >= types {
            return None;
        }
        transitions.push((at, offset_of(ty)?));
    }
    // The footer: a newline, the rule (empty when none describes the future), a newline.
    let end = infos + types * 6 + chars + leap * 12 + isstd + isut;
    let footer = b.get(end..)?.strip_prefix(b"\n")?;
    let footer = &footer[..footer.iter().position(|c| *c == b'\n')?];
    let rule = match footer {
        [] => None,
        rule => Some(TimeZone::posix(std::str::from_utf8(rule).ok()?).ok()?),
    };
    Some(Rules {
        initial: offset_of(0)?,
        transitions,
        rule,
    })
}

/// A name like `Europe/Berlin`: letters, digits, `_+-/`, no `..`, not absolute.
fn plausible(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('/')
        && !name.contains("..")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_+-/".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ZONEINFO;

    /// No tz database: only the table.
    const NONE: &str = "/nonexistent";

    /// 2026-01-15 and 2026-07-15, 12:00 UTC.
    const JANUARY: i64 = 1_768_478_400;
    const JULY: i64 = 1_784_116_800;

    #[test]
    fn the_week_starts_on_monday_in_the_zone() {
        // 2026-01-15 is a Thursday; 12:00 UTC is 01:00 on Friday in Auckland (UTC+13).
        assert_eq!(Zone::utc().week_time(JANUARY * 1000), (3, 12 * 3600));
        let auckland = Zone::resolve(Some("Pacific/Auckland"), Path::new(NONE));
        assert_eq!(auckland.week_time(JANUARY * 1000), (4, 3600));
        assert_eq!(Zone::utc().week_time(-1), (2, DAY_S - 1));
    }

    #[test]
    fn utc_days_split_at_midnight() {
        let z = Zone::utc();
        assert_eq!(z.day_of(0), 0);
        assert_eq!(z.day_of(DAY_S * 1000 - 1), 0);
        assert_eq!(z.next_midnight_ms(5_000), DAY_S * 1000);
        assert_eq!(z.day_of(-1), -1);
        assert_eq!(z.offset(i64::MIN), 0);
    }

    #[test]
    fn unknown_or_odd_names_fall_back_to_utc_and_say_so() {
        let dir = Path::new(ZONEINFO);
        assert_eq!(Zone::resolve(None, dir).named, Zone::utc().named);
        assert_eq!(Zone::resolve(Some(""), dir).named, Zone::utc().named);
        for name in [
            "Nowhere/Else",
            "../etc/passwd",
            "/etc/passwd",
            "Europe/Berlin\n",
        ] {
            let z = Zone::resolve(Some(name), dir);
            let named = Named {
                name: "UTC".into(),
                source: Source::Fallback,
                structure: Some(name.into()),
            };
            assert_eq!(z.named, named);
            assert_eq!(z.offset(JULY), 0);
        }
    }

    /// The table's rules, read as the footers of tzdata's files say them.
    #[test]
    fn the_table_knows_zones_and_links_by_their_current_rules() {
        for (name, rule) in [
            ("Europe/Berlin", "CET-1CEST,M3.5.0,M10.5.0/3"),
            ("America/New_York", "EST5EDT,M3.2.0,M11.1.0"),
            ("US/Eastern", "EST5EDT,M3.2.0,M11.1.0"),
            ("Australia/Sydney", "AEST-10AEDT,M10.1.0,M4.1.0/3"),
            ("Asia/Kolkata", "IST-5:30"),
            ("America/St_Johns", "NST3:30NDT,M3.2.0,M11.1.0"),
            ("UTC", "UTC0"),
        ] {
            assert_eq!(built_in(name), Some(rule), "{name}");
        }
        assert_eq!(built_in("Europe"), None);
        assert_eq!(built_in("CET-1CEST,M3.5.0,M10.5.0/3"), None);
    }

    /// Every rule in the table is one jiff reads (a rule it could not would fall back to UTC).
    #[test]
    fn every_rule_in_the_table_parses() {
        let lines: Vec<&str> = TABLE.lines().filter(|l| !l.starts_with('#')).collect();
        assert!(lines.len() > 50, "{}", lines.len());
        for line in lines {
            let (rule, names) = line.split_once('\t').expect("a rule and its names");
            assert!(!names.is_empty() && !names.contains("  "), "{line}");
            assert!(TimeZone::posix(rule).is_ok(), "{rule}");
        }
    }

    #[test]
    fn without_a_tz_database_the_table_gives_the_offsets() {
        let hour = 3600;
        for (name, january, july) in [
            ("Europe/Berlin", hour, 2 * hour),
            ("US/Eastern", -5 * hour, -4 * hour),
            // Southern: daylight saving time in January.
            ("Australia/Sydney", 11 * hour, 10 * hour),
            ("Asia/Kolkata", 5 * hour + 1800, 5 * hour + 1800),
            ("America/St_Johns", -3 * hour - 1800, -2 * hour - 1800),
        ] {
            let z = Zone::resolve(Some(name), Path::new(NONE));
            assert_eq!(z.named.source, Source::BuiltIn, "{name}");
            assert_eq!(z.named.name, name);
            assert_eq!(z.named.structure.as_deref(), Some(name));
            assert_eq!(
                (z.offset(JANUARY), z.offset(JULY)),
                (january, july),
                "{name}"
            );
        }
        // Local midnight of 2026-07-16 in Berlin is 22:00 UTC the day before.
        let z = Zone::resolve(Some("Europe/Berlin"), Path::new(NONE));
        assert_eq!(z.next_midnight_ms(JULY * 1000), 1_784_152_800_000);
    }

    /// A file in the tz database wins over the table: here a fixture whose name the table does
    /// not know, built by zic "slim", so its daylight saving time lies only in its footer
    /// (`tests/it/zones/slim.zi`).
    #[test]
    fn a_system_file_is_read_footer_and_all() {
        let dir = std::env::temp_dir().join(format!("hearth-zone-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("Hearth")).unwrap();
        std::fs::write(dir.join("Hearth/Slim"), SLIM).unwrap();
        let z = Zone::resolve(Some("Hearth/Slim"), &dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(z.named.source, Source::System);
        assert_eq!(z.named.name, "Hearth/Slim");
        // The footer: UTC+1 in winter, UTC+2 from the last Sunday of March, in every year.
        assert_eq!((z.offset(JANUARY), z.offset(JULY)), (3600, 7200));
        let year_3000_july = 32_520_571_200;
        assert_eq!(z.offset(year_3000_july), 7200);
    }

    const SLIM: &[u8] = include_bytes!("../tests/it/zones/Hearth/Slim");

    /// The fixture is what the tests take it for: one transition (1970's first daylight saving
    /// time), then only the footer. The old reader of these files, which ignored footers, kept
    /// the last transition's offset (UTC+2) in every winter since.
    #[test]
    fn the_slim_fixture_lists_one_transition_and_a_footer() {
        // RFC 8536: the counts at 20.., the version 1 block, then version 2's header and block.
        let count = |at: usize| u32::from_be_bytes(SLIM[at..at + 4].try_into().unwrap()) as usize;
        let [isut, isstd, leap, time, types, chars] = [20, 24, 28, 32, 36, 40].map(count);
        let v2 = 44 + time * 5 + types * 6 + chars + leap * 8 + isstd + isut;
        assert_eq!(&SLIM[..5], b"TZif2");
        assert_eq!(&SLIM[v2..v2 + 5], b"TZif2");
        assert_eq!(count(v2 + 32), 1);
        assert!(SLIM.ends_with(b"\nCET-1CEST,M3.5.0,M10.5.0/3\n"));
    }

    /// A file cut short or with a footer jiff cannot read is no zone (the table is looked at).
    #[test]
    fn a_damaged_file_is_not_read() {
        assert!(parse_tzif(SLIM).is_some());
        assert!(parse_tzif(&SLIM[..SLIM.len() - 1]).is_none());
        let mut bad = SLIM.to_vec();
        let at = bad.len() - 3;
        bad[at] = b'x';
        assert!(parse_tzif(&bad).is_none());
        assert!(parse_tzif(b"TZif2").is_none());
        assert!(parse_tzif(&SLIM[..60]).is_none());
    }

    /// Every file of this machine's tz database that the table names is read, footer and all.
    #[test]
    fn every_system_zone_file_is_read() {
        let dir = Path::new(ZONEINFO);
        if !dir.join("Europe/Berlin").exists() {
            return;
        }
        let table = TABLE.lines().filter(|l| !l.starts_with('#'));
        let names = table.flat_map(|l| l.split_once('\t').map_or("", |(_, n)| n).split(' '));
        let mut read = 0;
        for name in names {
            let Ok(bytes) = std::fs::read(dir.join(name)) else {
                continue;
            };
            let rules = parse_tzif(&bytes).unwrap_or_else(|| panic!("{name}"));
            assert!(rules.rule.is_some(), "{name}");
            read += 1;
        }
        assert!(read > 300, "{read}");
    }

    #[test]
    fn a_system_zone_is_read_when_present() {
        let dir = Path::new(ZONEINFO);
        if !dir.join("Europe/Berlin").exists() {
            return;
        }
        let z = Zone::resolve(Some("Europe/Berlin"), dir);
        assert_eq!(z.named.source, Source::System);
        assert_eq!((z.offset(JANUARY), z.offset(JULY)), (3600, 7200));
        // History the table does not have: on 1947-06-01 Berlin kept midsummer time, UTC+3.
        assert_eq!(z.offset(-712_756_800), 10_800);
    }
}
