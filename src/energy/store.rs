//! A thermostat's energy history on disk, in `DATA_DIR/energy/`:
//! - `SERIAL.days`: finished days, one [`Day::to_line`] a line, appended (and fsynced) when a
//!   day ends: about 55 bytes a day.
//! - `SERIAL.today`: the live day's line, replaced whole (written aside, then renamed) at most
//!   once a minute while it changes, so a kill -9 loses at most the last minute.
//!
//! A day can be in both (a crash between the append and the replacement): the `days` line wins.
//! A torn or damaged line is skipped.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use super::day::Day;
use crate::store::files;

fn days_path(dir: &Path, serial: &str) -> PathBuf {
    dir.join(format!("{serial}.days"))
}

fn today_path(dir: &Path, serial: &str) -> PathBuf {
    dir.join(format!("{serial}.today"))
}

/// Every stored day of `serial` by date: the finished days, and the live one's last flush.
pub fn read(dir: &Path, serial: &str) -> io::Result<BTreeMap<i64, Day>> {
    let mut days = BTreeMap::new();
    match fs::File::open(days_path(dir, serial)) {
        Ok(file) => {
            for line in BufReader::new(file).split(b'\n') {
                if let Some(day) = Day::from_line(&line?) {
                    days.insert(day.date, day);
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    if let Some(today) = read_today(dir, serial)? {
        days.entry(today.date).or_insert(today);
    }
    Ok(days)
}

/// The live day's last flush.
pub fn read_today(dir: &Path, serial: &str) -> io::Result<Option<Day>> {
    match fs::read(today_path(dir, serial)) {
        Ok(bytes) => Ok(Day::from_line(bytes.trim_ascii())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Appends a finished day, durably (once a day per thermostat: the fsync is cheap).
pub fn append_day(dir: &Path, serial: &str, day: &Day) -> io::Result<()> {
    let path = days_path(dir, serial);
    let mut file = files::open_append_in(dir, &path)?;
    // A torn last line (a crash mid-append) is ended first, so this line stands alone.
    let len = file.metadata()?.len();
    let mut line = Vec::with_capacity(64);
    if len > 0 && !ends_with_newline(&path)? {
        line.push(b'\n');
    }
    line.extend_from_slice(day.to_line().as_bytes());
    line.push(b'\n');
    file.write_all(&line)?;
    file.sync_data()?;
    // A new file is only durable once its directory entry is.
    if len == 0 {
        files::sync_dir(dir)?;
    }
    Ok(())
}

fn ends_with_newline(path: &Path) -> io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = fs::File::open(path)?;
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

/// Replaces the live day's line whole.
pub fn write_today(dir: &Path, serial: &str, day: &Day) -> io::Result<()> {
    let path = today_path(dir, serial);
    let aside = dir.join(format!("{serial}.today.new"));
    let write = || -> io::Result<()> {
        files::remove_if_present(&aside)?;
        let mut file = files::create_new(&aside)?;
        file.write_all(day.to_line().as_bytes())?;
        // On disk before it replaces the last flush, so a power cut leaves one or the other.
        file.sync_data()?;
        fs::rename(&aside, &path)
    };
    match write() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            files::create_private_dir(dir)?;
            write()
        }
        other => other,
    }
}

/// Keeps only the finished days from `first` on (`ENERGY_KEEP_DAYS`): rewritten aside, then
/// renamed, so a crash leaves the old file or the new one.
pub fn prune(dir: &Path, serial: &str, first: i64) -> io::Result<()> {
    let path = days_path(dir, serial);
    let text = match fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let lines: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
    let kept: Vec<&[u8]> = lines
        .iter()
        .copied()
        .filter(|l| Day::from_line(l).is_some_and(|d| d.date >= first))
        .collect();
    if kept.len() == lines.iter().filter(|l| Day::from_line(l).is_some()).count() {
        return Ok(());
    }
    replace_lines(dir, serial, &kept)
}

/// Replaces a thermostat's finished days with `days` (ascending) at once: how `hearth demo`
/// writes the year of history it shows.
pub fn replace_days(dir: &Path, serial: &str, days: &[Day]) -> io::Result<()> {
    files::create_private_dir(dir)?;
    let lines: Vec<String> = days.iter().map(Day::to_line).collect();
    let lines: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
    replace_lines(dir, serial, &lines)
}

/// Writes the days file aside, then renames it over the old one: a crash leaves one or the
/// other.
fn replace_lines(dir: &Path, serial: &str, lines: &[&[u8]]) -> io::Result<()> {
    let aside = dir.join(format!("{serial}.days.new"));
    files::remove_if_present(&aside)?;
    let mut file = files::create_new(&aside)?;
    for line in lines {
        file.write_all(line)?;
        file.write_all(b"\n")?;
    }
    file.sync_data()?;
    fs::rename(&aside, days_path(dir, serial))?;
    files::sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("hearth-energy-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn day(date: i64, heat_s: i64) -> Day {
        Day {
            heat_ms: heat_s * 1000,
            ..Day::new(date)
        }
    }

    #[test]
    fn days_and_today_are_read_back_and_days_win() {
        let dir = temp_dir("read");
        assert!(read(&dir, "S").unwrap().is_empty());
        append_day(&dir, "S", &day(1, 10)).unwrap();
        write_today(&dir, "S", &day(1, 5)).unwrap();
        assert_eq!(read(&dir, "S").unwrap()[&1].heat_ms, 10_000);
        write_today(&dir, "S", &day(2, 7)).unwrap();
        let all = read(&dir, "S").unwrap();
        assert_eq!(all.keys().copied().collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(all[&2].heat_ms, 7_000);
    }

    #[test]
    fn a_torn_line_is_skipped_and_ended() {
        let dir = temp_dir("torn");
        fs::write(
            days_path(&dir, "S"),
            b"[1,1,0,0,0,0,null,0,null,null,0]\n[2,3,",
        )
        .unwrap();
        append_day(&dir, "S", &day(3, 9)).unwrap();
        let all = read(&dir, "S").unwrap();
        assert_eq!(all.keys().copied().collect::<Vec<_>>(), vec![1, 3]);
    }

    #[test]
    fn pruning_keeps_the_recent_days() {
        let dir = temp_dir("prune");
        for d in 1..=5 {
            append_day(&dir, "S", &day(d, d)).unwrap();
        }
        prune(&dir, "S", 4).unwrap();
        let all = read(&dir, "S").unwrap();
        assert_eq!(all.keys().copied().collect::<Vec<_>>(), vec![4, 5]);
    }
}
