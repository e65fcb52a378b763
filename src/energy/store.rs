//! The energy history on disk, in `DATA_DIR/energy/`:
//! - `journal`: every thermostat's live row and the days it finished lately, one line each,
//!   `SERIAL ROW` ([`Day::to_line`]). A write is a group write ([`Store::write`]): the lines of
//!   every thermostat whose row changed, appended with one write and one fdatasync (once a
//!   minute, when a run starts or stops, and at shutdown), however many thermostats there are.
//!   For each serial and date the last line wins; a serial's latest date is its live row, an
//!   earlier one a finished day not yet moved to its days file. The journal is rewritten whole
//!   (aside, fsync, rename, fsync dir: [`crate::util::durable::replace`]) at the first write
//!   after a start (so a torn last line is gone before anything follows it), after a failed
//!   write, and when it has grown to [`GROWTH`] times what it holds.
//! - `SERIAL.days`: finished days, one line each: about 55 bytes a day. A finished day is
//!   durable once the journal holds it; [`Store::move_finished`] then moves it here (appended,
//!   fsynced, then pruned to `ENERGY_KEEP_DAYS`) a few thermostats a minute, so midnight costs
//!   no fsync per thermostat in the minute's write, and a stop none at all.
//!
//! A day can be in both (moved, and the journal not rewritten since): the days line wins. A
//! torn or damaged line is skipped. Whatever reads a thermostat's stored history reads the
//! journal's rows (kept in memory once read) before its days file, so a day being moved is
//! seen in one or the other.
//!
//! Once `ENERGY_KEEP_DAYS` has pruned days, the days file begins with one more line, a JSON
//! object: `{"pruned_through":DATE,"heat_s":..,"cool_s":..,"fan_s":..,"aux_s":..}`, the runtime
//! of every day pruned so far (those up to DATE), so the running [`Totals`] never go down. It
//! is written in the same rename as the pruning, so a crash leaves the days or their sum, never
//! both or neither. A reader that knows only day lines skips it as a line it cannot read. A
//! journal row of a date the sum holds is not counted again.
//!
//! An older hearth kept each live row in `SERIAL.today`, replaced every minute. Those files are
//! read into the journal's rows when the journal is first read (the journal's row wins for the
//! same date), and deleted once the first write has made them part of the journal.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use parking_lot::{Mutex, RwLock};
use serde_json::{Value, json};

use super::Totals;
use super::day::Day;
use crate::store::files;

/// The journal's name in the energy directory.
pub const JOURNAL: &str = "journal";
/// The journal is rewritten once it is this many times the size of what it holds...
const GROWTH: u64 = 8;
/// ...and at least this large (a home's few thermostats rewrite it every few hours).
const MIN_REWRITE_BYTES: u64 = 64 * 1024;

/// The runtime of the pruned days: those up to `through`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pruned {
    pub through: i64,
    pub totals: Totals,
}

impl Pruned {
    fn to_line(self) -> String {
        let t = self.totals;
        json!({"pruned_through": self.through, "heat_s": t.heat_s, "cool_s": t.cool_s,
               "fan_s": t.fan_s, "aux_s": t.aux_s})
        .to_string()
    }

    fn from_line(line: &[u8]) -> Option<Pruned> {
        let v: Value = serde_json::from_slice(line).ok()?;
        let int = |k: &str| v.get(k)?.as_i64().filter(|n| *n >= 0);
        Some(Pruned {
            through: v.get("pruned_through")?.as_i64()?,
            totals: Totals {
                heat_s: int("heat_s")?,
                cool_s: int("cool_s")?,
                fan_s: int("fan_s")?,
                aux_s: int("aux_s")?,
            },
        })
    }
}

/// Everything stored of one thermostat.
#[derive(Debug, Default)]
pub struct Stored {
    /// The finished days by date (after `pruned.through`).
    pub days: BTreeMap<i64, Day>,
    pub pruned: Option<Pruned>,
    /// The live day's last write, unless its date is among `days` (which wins).
    pub today: Option<Day>,
}

impl Stored {
    /// The runtime of the finished and pruned days (not `today`).
    pub fn finished_totals(&self) -> Totals {
        let pruned = self.pruned.map(|p| p.totals).unwrap_or_default();
        self.days
            .values()
            .map(Totals::of_day)
            .fold(pruned, Totals::plus)
    }

    /// The last date a finished or pruned day has.
    pub fn last_finished(&self) -> Option<i64> {
        let pruned = self.pruned.map(|p| p.through);
        self.days.keys().next_back().copied().max(pruned)
    }

    /// The running totals (every day, the live one's last write too).
    pub fn totals(&self) -> Totals {
        let today = self.today.as_ref().map(Totals::of_day).unwrap_or_default();
        self.finished_totals().plus(today)
    }

    /// Every day by date: the finished ones and the live one's last write.
    pub fn all_days(self) -> BTreeMap<i64, Day> {
        let mut days = self.days;
        if let Some(today) = self.today {
            days.insert(today.date, today);
        }
        days
    }

    /// Whether a day of `date` is stored as finished (or pruned) already.
    fn holds(&self, date: i64) -> bool {
        self.days.contains_key(&date) || self.pruned.is_some_and(|p| date <= p.through)
    }
}

/// One thermostat's rows in the journal: (date, line), ascending by date.
type Rows = Vec<(i64, Box<str>)>;

/// The energy history's files, and what the journal holds, read once.
pub struct Store {
    dir: PathBuf,
    /// Each thermostat's rows in the journal; `None` until the journal has been read (one that
    /// cannot be read now is not an empty one: every read fails until it can be).
    rows: RwLock<Option<HashMap<String, Rows>>>,
    /// Held by whoever reads or writes the journal, one at a time.
    writer: Mutex<Writer>,
}

#[derive(Default)]
struct Writer {
    /// The journal's size as this process wrote it; `None` before the first write and after a
    /// failed one (the next write rewrites it whole).
    bytes: Option<u64>,
    /// Its size when it was last rewritten.
    rewritten: u64,
    /// An older hearth's `SERIAL.today` files (and leftovers of their writes), deleted once a
    /// rewrite of the journal holds their rows.
    old_files: Vec<PathBuf>,
}

impl Store {
    /// The energy history kept in `dir` (`DATA_DIR/energy`). Reads nothing yet.
    pub fn new(dir: PathBuf) -> Store {
        Store {
            dir,
            rows: RwLock::new(None),
            writer: Mutex::new(Writer::default()),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Reads the journal (and an older hearth's live rows) unless it has been read.
    fn load(&self) -> io::Result<()> {
        if self.rows.read().is_some() {
            return Ok(());
        }
        let mut writer = self.writer.lock();
        if self.rows.read().is_some() {
            return Ok(());
        }
        let (rows, old_files) = read_journal(&self.dir)?;
        writer.old_files = old_files;
        *self.rows.write() = Some(rows);
        Ok(())
    }

    /// Everything stored of `serial`: finished days, the pruned days' sum and the live day's
    /// last write.
    pub fn read_stored(&self, serial: &str) -> io::Result<Stored> {
        self.load()?;
        // The journal's rows first, then the days file: a day moved meanwhile is in the file.
        let mut rows: Vec<Day> = self
            .rows
            .read()
            .as_ref()
            .and_then(|rows| rows.get(serial))
            .map(|rows| {
                rows.iter()
                    .filter_map(|(_, line)| Day::from_line(line.as_bytes()))
                    .collect()
            })
            .unwrap_or_default();
        let mut stored = read_days(&self.dir, serial)?;
        let today = rows.pop();
        // A day that ended with nothing recorded is not a day of the history.
        for day in rows.into_iter().filter(|d| !d.is_empty()) {
            if !stored.holds(day.date) {
                stored.days.insert(day.date, day);
            }
        }
        stored.today = today.filter(|t| !stored.holds(t.date));
        Ok(stored)
    }

    /// Makes `rows` (a thermostat's serial and a day of it: finished days, live rows) durable
    /// at once: one append and one fdatasync of the journal for all of them (or, when the
    /// journal is due to be rewritten, one rewrite holding them). Nothing is taken for written
    /// unless it all is.
    pub fn write(&self, rows: &[(&str, &Day)]) -> io::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        self.load()?;
        let lines: Vec<(&str, i64, String)> = rows
            .iter()
            .map(|(serial, day)| (*serial, day.date, day.to_line()))
            .collect();
        let mut writer = self.writer.lock();
        let limit = (GROWTH * writer.rewritten).max(MIN_REWRITE_BYTES);
        let result = match writer.bytes {
            Some(bytes) if bytes < limit => self.append(bytes, &lines),
            _ => self.rewrite(&lines),
        };
        match result {
            Ok((bytes, rewritten)) => {
                writer.bytes = Some(bytes);
                if rewritten {
                    writer.rewritten = bytes;
                    for path in std::mem::take(&mut writer.old_files) {
                        if let Err(e) = files::remove_if_present(&path) {
                            log::warn!("energy history: {}: {e}", path.display());
                        }
                    }
                }
            }
            Err(e) => {
                writer.bytes = None;
                return Err(e);
            }
        }
        let mut all = self.rows.write();
        let all = all.get_or_insert_with(HashMap::new);
        for (serial, date, line) in lines {
            let rows = all.entry(serial.to_string()).or_default();
            match rows.binary_search_by_key(&date, |(d, _)| *d) {
                Ok(i) => rows[i].1 = line.into(),
                Err(i) => rows.insert(i, (date, line.into())),
            }
        }
        Ok(())
    }

    /// Appends `lines` to the journal, which this process left `bytes` long: (its new size,
    /// false). A journal of another size (deleted, replaced) is rewritten instead.
    fn append(&self, bytes: u64, lines: &[(&str, i64, String)]) -> io::Result<(u64, bool)> {
        let path = self.dir.join(JOURNAL);
        let mut file = files::open_append_in(&self.dir, &path)?;
        if file.metadata()?.len() != bytes {
            log::warn!("energy history: {} changed under hearth", path.display());
            return self.rewrite(lines);
        }
        let mut text = Vec::with_capacity(lines.len() * 72);
        for (serial, _, line) in lines {
            push_line(&mut text, serial, line);
        }
        file.write_all(&text)?;
        file.sync_data()?;
        Ok((bytes + text.len() as u64, false))
    }

    /// Rewrites the journal whole: every row it holds, with `lines` in place of those of the
    /// same serial and date: (its size, true).
    fn rewrite(&self, lines: &[(&str, i64, String)]) -> io::Result<(u64, bool)> {
        let new: std::collections::HashSet<(&str, i64)> = lines
            .iter()
            .map(|(serial, date, _)| (*serial, *date))
            .collect();
        let mut text = Vec::new();
        if let Some(all) = self.rows.read().as_ref() {
            for (serial, rows) in all {
                for (date, line) in rows {
                    if !new.contains(&(serial.as_str(), *date)) {
                        push_line(&mut text, serial, line);
                    }
                }
            }
        }
        for (serial, _, line) in lines {
            push_line(&mut text, serial, line);
        }
        crate::util::durable::replace(&self.dir, JOURNAL, &text)?;
        Ok((text.len() as u64, true))
    }

    /// Moves the finished days of at most `budget` thermostats from the journal to their days
    /// files (appended and fsynced, then pruned to `keep_days` counted back from the live
    /// day, 0 keeping every day): a day leaves the journal's rows only once its file holds it.
    /// Returns how many thermostats' days were moved. The journal itself sheds them at its
    /// next rewrite.
    pub fn move_finished(&self, keep_days: u32, budget: usize) -> usize {
        if self.load().is_err() {
            return 0;
        }
        let due: Vec<(String, Vec<Day>, i64)> = {
            let all = self.rows.read();
            let Some(all) = all.as_ref() else {
                return 0;
            };
            all.iter()
                .filter(|(_, rows)| rows.len() > 1)
                .take(budget)
                .map(|(serial, rows)| {
                    let live = rows.last().map_or(i64::MIN, |(d, _)| *d);
                    let days = rows[..rows.len() - 1]
                        .iter()
                        .filter_map(|(_, line)| Day::from_line(line.as_bytes()))
                        .filter(|day| !day.is_empty())
                        .collect();
                    (serial.clone(), days, live)
                })
                .collect()
        };
        let mut moved = 0;
        for (serial, days, live) in due {
            let keep = i64::from(keep_days);
            let result = append_days(&self.dir, &serial, &days).and_then(|()| match keep {
                0 => Ok(()),
                _ => prune(&self.dir, &serial, live - keep + 1),
            });
            if let Err(e) = result {
                // Kept in the journal, and tried again at the next minute.
                log::warn!("could not move the energy history of {serial} to its days file: {e}");
                continue;
            }
            if let Some(rows) = self.rows.write().as_mut().and_then(|r| r.get_mut(&serial)) {
                rows.retain(|(date, _)| *date >= live);
            }
            moved += 1;
        }
        moved
    }
}

fn push_line(text: &mut Vec<u8>, serial: &str, line: &str) {
    text.extend_from_slice(serial.as_bytes());
    text.push(b' ');
    text.extend_from_slice(line.as_bytes());
    text.push(b'\n');
}

/// A journal line: its serial and day. `None` for one torn or damaged (or naming no serial).
fn journal_line(line: &[u8]) -> Option<(&str, &str, Day)> {
    let space = line.iter().position(|b| *b == b' ')?;
    let serial = std::str::from_utf8(&line[..space]).ok()?;
    let row = std::str::from_utf8(&line[space + 1..]).ok()?;
    let day = Day::from_line(row.as_bytes())?;
    valid_serial(serial).then_some((serial, row, day))
}

/// A serial as hearth keeps it (it names a file here).
fn valid_serial(serial: &str) -> bool {
    crate::accounts::serial(serial).as_deref() == Some(serial)
}

/// The journal's rows in `dir`, with an older hearth's `SERIAL.today` files read in (the
/// journal's row wins for the same serial and date), and those files' paths.
fn read_journal(dir: &Path) -> io::Result<(HashMap<String, Rows>, Vec<PathBuf>)> {
    let mut all: HashMap<String, BTreeMap<i64, Box<str>>> = HashMap::new();
    let mut old_files = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => Some(entries),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    for entry in entries.into_iter().flatten() {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if let Some(serial) = name.strip_suffix(".today") {
            if !valid_serial(serial) {
                continue;
            }
            let bytes = fs::read(&path)?;
            if let Some(day) = Day::from_line(bytes.trim_ascii()) {
                let row = day.to_line().into();
                all.entry(serial.to_string())
                    .or_default()
                    .insert(day.date, row);
            }
            old_files.push(path);
        } else if name.strip_suffix(".today.new").is_some_and(valid_serial) {
            old_files.push(path);
        }
    }
    match fs::File::open(dir.join(JOURNAL)) {
        Ok(file) => {
            for line in BufReader::new(file).split(b'\n') {
                let line = line?;
                if let Some((serial, row, day)) = journal_line(&line) {
                    all.entry(serial.to_string())
                        .or_default()
                        .insert(day.date, row.into());
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let rows = all
        .into_iter()
        .map(|(serial, rows)| (serial, rows.into_iter().collect()))
        .collect();
    Ok((rows, old_files))
}

/// The days file of `serial`: its finished days and the pruned days' sum.
fn read_days(dir: &Path, serial: &str) -> io::Result<Stored> {
    let mut stored = Stored::default();
    match fs::File::open(days_path(dir, serial)) {
        Ok(file) => {
            for line in BufReader::new(file).split(b'\n') {
                let line = line?;
                if let Some(day) = Day::from_line(&line) {
                    stored.days.insert(day.date, day);
                } else if let Some(p) = Pruned::from_line(&line) {
                    stored.pruned = Some(p);
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    if let Some(p) = stored.pruned {
        // Days the sum holds are not counted twice.
        stored.days.retain(|date, _| *date > p.through);
    }
    Ok(stored)
}

fn days_path(dir: &Path, serial: &str) -> PathBuf {
    dir.join(format!("{serial}.days"))
}

/// Appends the finished `days` the days file does not hold yet, durably (once a day per
/// thermostat, a few thermostats a minute: see [`Store::move_finished`]).
pub fn append_days(dir: &Path, serial: &str, days: &[Day]) -> io::Result<()> {
    let stored = read_days(dir, serial)?;
    let mut lines = Vec::with_capacity(64 * days.len());
    for day in days.iter().filter(|d| !stored.holds(d.date)) {
        lines.extend_from_slice(day.to_line().as_bytes());
        lines.push(b'\n');
    }
    if lines.is_empty() {
        return Ok(());
    }
    let path = days_path(dir, serial);
    let mut file = files::open_append_in(dir, &path)?;
    // A torn last line (a crash mid-append) is ended first, so this line stands alone.
    let len = file.metadata()?.len();
    if len > 0 && !ends_with_newline(&path)? {
        lines.insert(0, b'\n');
    }
    file.write_all(&lines)?;
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

/// Keeps only the finished days from `first` on (`ENERGY_KEEP_DAYS`), and the runtime of the
/// days it drops added to the pruned days' sum: rewritten aside, then renamed, so a crash
/// leaves the old file or the new one.
pub fn prune(dir: &Path, serial: &str, first: i64) -> io::Result<()> {
    let stored = read_days(dir, serial)?;
    if stored.days.keys().next().is_none_or(|d| *d >= first) {
        return Ok(());
    }
    let mut pruned = stored.pruned.unwrap_or_default();
    let mut kept = Vec::new();
    for day in stored.days.values() {
        if day.date < first {
            pruned.totals = pruned.totals.plus(Totals::of_day(day));
            pruned.through = pruned.through.max(day.date);
        } else {
            kept.push(day.to_line());
        }
    }
    // Never below `first - 1`, so days older than it that arrive later are still dropped.
    pruned.through = pruned.through.max(first - 1);
    let mut lines = vec![pruned.to_line()];
    lines.extend(kept);
    replace_lines(dir, serial, &lines)
}

/// Replaces a thermostat's finished days with `days` (ascending) at once: how `hearth demo`
/// writes the year of history it shows.
pub fn replace_days(dir: &Path, serial: &str, days: &[Day]) -> io::Result<()> {
    let lines: Vec<String> = days.iter().map(Day::to_line).collect();
    replace_lines(dir, serial, &lines)
}

/// Writes the days file aside, then renames it over the old one: a crash leaves one or the
/// other.
fn replace_lines(dir: &Path, serial: &str, lines: &[String]) -> io::Result<()> {
    let mut text = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    crate::util::durable::replace(dir, &format!("{serial}.days"), text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &str = "02AA01AC0000TEST";
    const T: &str = "02AA01AC0000TWO2";

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

    fn dates(stored: Stored) -> Vec<i64> {
        stored.all_days().keys().copied().collect()
    }

    /// The dates in `S`'s days file.
    fn days_file_dates(dir: &Path) -> Vec<i64> {
        read_days(dir, S).unwrap().days.keys().copied().collect()
    }

    /// What a restart reads: a new store on the same directory.
    fn reopened(dir: &Path) -> Store {
        Store::new(dir.to_path_buf())
    }

    #[test]
    fn rows_of_many_thermostats_are_one_write_and_read_back() {
        let dir = temp_dir("journal");
        let store = Store::new(dir.clone());
        assert!(dates(store.read_stored(S).unwrap()).is_empty());
        store.write(&[(S, &day(1, 10)), (T, &day(1, 3))]).unwrap();
        store.write(&[(S, &day(1, 12)), (S, &day(2, 5))]).unwrap();
        for store in [&store, &reopened(&dir)] {
            let s = store.read_stored(S).unwrap();
            assert_eq!(s.days[&1].heat_ms, 12_000);
            assert_eq!(
                s.today.as_ref().map(|d| (d.date, d.heat_ms)),
                Some((2, 5_000))
            );
            assert_eq!(s.totals().heat_s, 17);
            assert_eq!(store.read_stored(T).unwrap().totals().heat_s, 3);
        }
        // One file for all: the first write rewrote it, the second appended.
        let names: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, [JOURNAL]);
        let text = fs::read_to_string(dir.join(JOURNAL)).unwrap();
        assert_eq!(text.lines().count(), 4, "{text}");
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dir.join(JOURNAL))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    /// A torn last line is skipped, and gone from the journal after the next write (the first
    /// after a start rewrites it), so nothing is appended to it.
    #[test]
    fn a_torn_line_is_skipped_and_dropped() {
        let dir = temp_dir("torn");
        fs::write(
            dir.join(JOURNAL),
            format!("{S} [1,1,0,0,0,0,null,0,null,null,0]\n{S} [2,3,"),
        )
        .unwrap();
        let store = Store::new(dir.clone());
        assert_eq!(dates(store.read_stored(S).unwrap()), vec![1]);
        store.write(&[(T, &day(1, 9))]).unwrap();
        let text = fs::read_to_string(dir.join(JOURNAL)).unwrap();
        assert!(!text.contains("[2,3,"), "{text}");
        assert_eq!(dates(reopened(&dir).read_stored(S).unwrap()), vec![1]);
        // A damaged days file line too.
        fs::write(
            days_path(&dir, S),
            b"[1,1,0,0,0,0,null,0,null,null,0]\n[2,3,",
        )
        .unwrap();
        append_days(&dir, S, &[day(3, 9)]).unwrap();
        assert_eq!(days_file_dates(&dir), vec![1, 3]);
    }

    /// Finished days move to the days file (and leave the journal at its next rewrite); the
    /// live row stays. Read at every step, the days are all there, once.
    #[test]
    fn finished_days_move_to_the_days_file() {
        let dir = temp_dir("move");
        let store = Store::new(dir.clone());
        // Day 0 ended with nothing recorded: never a day of the history.
        store
            .write(&[(S, &Day::new(0)), (S, &day(1, 10)), (S, &day(2, 20))])
            .unwrap();
        assert_eq!(dates(store.read_stored(S).unwrap()), vec![1, 2]);
        store.write(&[(S, &day(3, 1))]).unwrap();
        store.write(&[(T, &day(3, 2))]).unwrap();
        let before = store.read_stored(S).unwrap().totals();
        assert_eq!(store.move_finished(0, 10), 1);
        assert_eq!(store.move_finished(0, 10), 0);
        assert_eq!(days_file_dates(&dir), vec![1, 2]);
        for store in [&store, &reopened(&dir)] {
            let stored = store.read_stored(S).unwrap();
            assert_eq!(stored.totals(), before);
            assert_eq!(dates(stored), vec![1, 2, 3]);
        }
        // Moved again after a restart (the journal still has them): not written twice.
        let again = reopened(&dir);
        assert_eq!(again.move_finished(0, 10), 1);
        let text = fs::read_to_string(days_path(&dir, S)).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        // The next rewrite (here the first write after the start) drops them from the journal.
        again.write(&[(S, &day(3, 5))]).unwrap();
        let text = fs::read_to_string(dir.join(JOURNAL)).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert_eq!(dates(reopened(&dir).read_stored(S).unwrap()), vec![1, 2, 3]);
    }

    /// Moving prunes to `ENERGY_KEEP_DAYS` counted back from the live day; the pruned days'
    /// runtime stays in the totals, through a second pruning too, and a day the sum already
    /// holds is not counted twice.
    #[test]
    fn pruning_keeps_the_recent_days_and_the_pruned_days_sum() {
        let dir = temp_dir("prune");
        let store = Store::new(dir.clone());
        for d in 1..=5 {
            store.write(&[(S, &day(d, d))]).unwrap();
        }
        store.write(&[(S, &day(6, 100))]).unwrap();
        let before = store.read_stored(S).unwrap().totals();
        assert_eq!(before.heat_s, 115);
        // Keep 4 days, today (6) included.
        assert_eq!(store.move_finished(4, 10), 1);
        let stored = store.read_stored(S).unwrap();
        assert_eq!(stored.totals(), before);
        assert_eq!(dates(stored), vec![3, 4, 5, 6]);
        prune(&dir, S, 5).unwrap();
        let stored = reopened(&dir).read_stored(S).unwrap();
        assert_eq!(stored.totals(), before);
        assert_eq!(
            stored.pruned,
            Some(Pruned {
                through: 4,
                totals: Totals {
                    heat_s: 10,
                    ..Totals::default()
                }
            })
        );
        assert_eq!(stored.last_finished(), Some(5));
        // A day line the sum holds (the crash of an older version, say) is not counted again,
        // nor a journal row of it.
        fs::OpenOptions::new()
            .append(true)
            .open(days_path(&dir, S))
            .unwrap()
            .write_all(format!("{}\n", day(2, 1000).to_line()).as_bytes())
            .unwrap();
        store.write(&[(S, &day(3, 1000))]).unwrap();
        let stored = reopened(&dir).read_stored(S).unwrap();
        assert_eq!(stored.totals(), before);
        assert_eq!(dates(stored), vec![5, 6]);
    }

    /// An older hearth's layout: each thermostat's live row in `SERIAL.today`. Read as the
    /// journal's rows (a finished day's line winning over a `.today` of the same date), and
    /// deleted once the first write has put them in the journal; nothing is lost.
    #[test]
    fn an_older_hearths_today_files_are_taken_into_the_journal() {
        let dir = temp_dir("upgrade");
        let old = |serial: &str, days: &[Day], today: &Day| {
            let lines: String = days.iter().map(|d| d.to_line() + "\n").collect();
            fs::write(days_path(&dir, serial), lines).unwrap();
            fs::write(dir.join(format!("{serial}.today")), today.to_line()).unwrap();
        };
        old(S, &[day(1, 10), day(2, 20)], &day(3, 30));
        // A crash between the older hearth's append and its `.today` replacement.
        old(T, &[day(1, 1), day(2, 2)], &day(2, 1));
        fs::write(dir.join(format!("{T}.today.new")), b"[2,").unwrap();
        let store = Store::new(dir.clone());
        let s = store.read_stored(S).unwrap();
        assert_eq!((s.totals().heat_s, dates(s)), (60, vec![1, 2, 3]));
        let t = store.read_stored(T).unwrap();
        assert_eq!((t.totals().heat_s, dates(t)), (3, vec![1, 2]));
        store.write(&[(S, &day(3, 31))]).unwrap();
        let mut names: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [format!("{S}.days"), format!("{T}.days"), JOURNAL.into()]
        );
        let again = reopened(&dir);
        let s = again.read_stored(S).unwrap();
        assert_eq!((s.totals().heat_s, dates(s)), (61, vec![1, 2, 3]));
        let t = again.read_stored(T).unwrap();
        assert_eq!((t.totals().heat_s, dates(t)), (3, vec![1, 2]));
    }

    /// A journal that cannot be read is not an empty one: reads fail until it can be.
    #[test]
    fn an_unreadable_journal_is_not_an_empty_one() {
        let dir = temp_dir("unreadable");
        fs::create_dir(dir.join(JOURNAL)).unwrap();
        let store = Store::new(dir.clone());
        assert!(store.read_stored(S).is_err());
        assert!(store.write(&[(S, &day(1, 1))]).is_err());
        assert_eq!(store.move_finished(0, 10), 0);
        fs::remove_dir(dir.join(JOURNAL)).unwrap();
        assert!(store.read_stored(S).unwrap().today.is_none());
    }

    /// The journal deleted (or replaced) while hearth runs: rewritten whole at the next write,
    /// with every row it held.
    #[test]
    fn a_journal_changed_under_hearth_is_rewritten() {
        let dir = temp_dir("changed");
        let store = Store::new(dir.clone());
        store.write(&[(S, &day(1, 10)), (T, &day(1, 2))]).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        store.write(&[(S, &day(1, 11))]).unwrap();
        let again = reopened(&dir);
        assert_eq!(again.read_stored(S).unwrap().totals().heat_s, 11);
        assert_eq!(again.read_stored(T).unwrap().totals().heat_s, 2);
    }
}
