//! The local day of a thermostat: its structure's IANA `time_zone`, read from the system's
//! tz database (`/usr/share/zoneinfo`, TZif files) by the small reader below, so no crate
//! bundles the database into the binary. A zone that is unset, unknown or unreadable falls
//! back to UTC, and the API says `"UTC"` (not the zone it could not read).
//!
//! Times after a file's last transition keep its last offset: Debian's and Alpine's files
//! list transitions to 2037 ("fat"); a "slim" file's POSIX footer rule is not read, so there
//! such a zone's later DST changes are missed (docs/energy.md).

use std::path::Path;

use super::day::DAY_S;

/// Where the tz database lives.
pub const ZONEINFO: &str = "/usr/share/zoneinfo";

/// A time zone: its name and its offsets from UTC.
#[derive(Clone, Debug, PartialEq)]
pub struct Zone {
    pub name: String,
    /// Transition times (Unix seconds, ascending) and the offset from each on.
    transitions: Vec<(i64, i64)>,
    /// The offset before the first transition.
    initial: i64,
}

impl Zone {
    pub fn utc() -> Zone {
        Zone {
            name: "UTC".into(),
            transitions: Vec::new(),
            initial: 0,
        }
    }

    /// The zone named `name` from `dir`, or UTC.
    pub fn resolve(name: Option<&str>, dir: &Path) -> Zone {
        name.filter(|n| plausible(n))
            .and_then(|n| {
                let bytes = std::fs::read(dir.join(n)).ok()?;
                let (initial, transitions) = parse_tzif(&bytes)?;
                Some(Zone {
                    name: n.to_string(),
                    transitions,
                    initial,
                })
            })
            .unwrap_or_else(Zone::utc)
    }

    /// Seconds east of UTC at Unix time `t`.
    pub fn offset(&self, t: i64) -> i64 {
        match self.transitions.partition_point(|(at, _)| *at <= t) {
            0 => self.initial,
            i => self.transitions[i - 1].1,
        }
    }

    /// The local date (days since 1970-01-01) of Unix milliseconds `ms`.
    pub fn day_of(&self, ms: i64) -> i64 {
        let t = ms.div_euclid(1000);
        (t + self.offset(t)).div_euclid(DAY_S)
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

/// A TZif file (RFC 8536), version 2 or later (its 64-bit part): the initial offset and the
/// transitions. `None` for anything else.
fn parse_tzif(b: &[u8]) -> Option<(i64, Vec<(i64, i64)>)> {
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
    // isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt
    let [isut, isstd, leap, time, types, chars] = header(0)?;
    // Real files hold a few hundred transitions: counts beyond these are a damaged file, and
    // would overflow the sums below or ask for a huge allocation.
    let sane = |n: &[usize]| n.iter().all(|c| *c <= 100_000);
    if *b.get(4)? < b'2' || !sane(&[isut, isstd, leap, time, types, chars]) {
        return None;
    }
    let v1 = 44 + time * 5 + types * 6 + chars + leap * 8 + isstd + isut;
    let [_, _, _, time, types, _] = header(v1)?;
    if !sane(&[time, types]) {
        return None;
    }
    let body = v1 + 44;
    let times = body;
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
    Some((offset_of(0)?, transitions))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_days_split_at_midnight() {
        let z = Zone::utc();
        assert_eq!(z.day_of(0), 0);
        assert_eq!(z.day_of(DAY_S * 1000 - 1), 0);
        assert_eq!(z.next_midnight_ms(5_000), DAY_S * 1000);
        assert_eq!(z.day_of(-1), -1);
    }

    #[test]
    fn unknown_or_odd_names_fall_back_to_utc() {
        let dir = Path::new(ZONEINFO);
        for name in [None, Some(""), Some("Nowhere/Else"), Some("../etc/passwd")] {
            assert_eq!(Zone::resolve(name, dir).name, "UTC");
        }
    }

    #[test]
    fn a_system_zone_is_read_when_present() {
        let dir = Path::new(ZONEINFO);
        if !dir.join("Europe/Berlin").exists() {
            return;
        }
        let z = Zone::resolve(Some("Europe/Berlin"), dir);
        assert_eq!(z.name, "Europe/Berlin");
        // 2026-01-15 12:00 UTC: CET (+1 h); 2026-07-15: CEST (+2 h).
        assert_eq!(z.offset(1_768_478_400), 3600);
        assert_eq!(z.offset(1_784_116_800), 7200);
        // Local midnight of 2026-07-16 is 22:00 UTC the day before.
        let noon = 1_784_116_800_000;
        assert_eq!(z.next_midnight_ms(noon), 1_784_152_800_000);
    }
}
