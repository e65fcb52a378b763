//! The alerts' durable record, `DATA_DIR/alerts/record.jsonl`: one JSON line per fact, appended
//! and fsynced before the fact is acted on. A notice (an episode's start or clear) is written
//! with the receivers it is for before it reaches the board or any receiver; a delivery's
//! outcome is written once the receiver answered (or was given up on); a filter reset before
//! it is acknowledged. Replaying the lines after a crash gives the active episodes, the recent
//! ones and the deliveries still owed, so nothing is lost and nothing delivered is sent again.
//!
//! Bounded: once the file holds many more lines than it needs, it is rewritten (aside, fsync,
//! rename, fsync the directory) with only the active episodes, the recent ones
//! ([`super::RECENT_KEEP`]), the deliveries still owed and each thermostat's last filter reset.
//! A torn last line (a crash mid-append) is dropped and the file rewritten at once; any other
//! line that does not parse stops the alerts (the file is left for a person to look at).

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::{Alert, Event, Kind, Notice, RECENT_KEEP};
use crate::store::files;

/// The directory under `DATA_DIR`.
pub const DIR: &str = "alerts";
const FILE: &str = "record.jsonl";
/// Lines beyond what a rewrite would keep before the file is rewritten.
const SLACK_LINES: usize = 500;

/// A receiver of notices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    Ntfy,
    Webhook,
}

impl Target {
    pub fn as_str(self) -> &'static str {
        match self {
            Target::Ntfy => "ntfy",
            Target::Webhook => "webhook",
        }
    }
}

/// How a delivery ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The receiver answered 2xx.
    Sent,
    /// Given up on after [`super::deliver::GIVE_UP_MS`].
    Dropped,
}

/// One line of the record, as it is written (read back by [`line_of`]).
#[derive(Debug, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Line {
    Notice {
        event: Event,
        alert: Alert,
        at_ms: i64,
        /// The receivers it is owed to (those configured when it was written).
        targets: Vec<Target>,
    },
    Delivered {
        delivery: String,
        outcome: Outcome,
    },
    FilterReset {
        serial: String,
        runtime_s: i64,
    },
}

/// A line as read, from JSON's tree (which the binary has already) rather than through
/// derived `Deserialize`s of the line and the alert (which cost it about 20 KB). `None`: not a
/// line of the record.
fn line_of(v: &Value) -> Option<Line> {
    let text = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).map(str::to_string);
    let number = |f: &str| v.get(f).and_then(Value::as_i64);
    Some(match v.get("op")?.as_str()? {
        "notice" => {
            let a = v.get("alert")?;
            let targets = v.get("targets")?.as_array()?;
            Line::Notice {
                event: match v.get("event")?.as_str()? {
                    "started" => Event::Started,
                    "cleared" => Event::Cleared,
                    _ => return None,
                },
                alert: Alert {
                    id: text(a, "id")?,
                    serial: text(a, "serial")?,
                    kind: Kind::parse(a.get("kind")?.as_str()?)?,
                    started_at: text(a, "started_at")?,
                    cleared_at: text(a, "cleared_at"),
                    message: text(a, "message")?,
                },
                at_ms: number("at_ms")?,
                targets: targets
                    .iter()
                    .map(|t| target(t.as_str()?))
                    .collect::<Option<Vec<Target>>>()?,
            }
        }
        "delivered" => Line::Delivered {
            delivery: text(v, "delivery")?,
            outcome: match v.get("outcome")?.as_str()? {
                "sent" => Outcome::Sent,
                "dropped" => Outcome::Dropped,
                _ => return None,
            },
        },
        "filter_reset" => Line::FilterReset {
            serial: text(v, "serial")?,
            runtime_s: number("runtime_s")?,
        },
        _ => return None,
    })
}

fn target(name: &str) -> Option<Target> {
    [Target::Ntfy, Target::Webhook]
        .into_iter()
        .find(|t| t.as_str() == name)
}

/// One notice owed to one receiver. `id` is what the receiver may deduplicate on (the
/// `X-Hearth-Delivery` header): the same for every attempt, also after a restart.
#[derive(Clone, Debug)]
pub struct Delivery {
    pub id: String,
    pub target: Target,
    pub notice: Arc<Notice>,
    /// When the notice was written (by the server's clock).
    pub at_ms: i64,
}

/// The delivery id of `notice` for `target`: `<alert id>.<started|cleared>.<target>`.
pub fn delivery_id(notice: &Notice, target: Target) -> String {
    let event = match notice.event {
        Event::Started => "started",
        Event::Cleared => "cleared",
    };
    format!("{}.{event}.{}", notice.alert.id, target.as_str())
}

/// An episode as the record knows it.
#[derive(Clone, Debug)]
struct Episode {
    started: Option<(Arc<Notice>, i64)>,
    cleared: Option<(Arc<Notice>, i64)>,
}

impl Episode {
    fn alert(&self) -> Option<&Alert> {
        self.cleared
            .as_ref()
            .or(self.started.as_ref())
            .map(|(n, _)| &n.alert)
    }
}

pub struct Record {
    dir: PathBuf,
    file: File,
    lines: usize,
    /// Oldest first.
    episodes: Vec<Episode>,
    /// Owed deliveries, oldest first (a few at most: a list costs the binary less than a map).
    owed: Vec<Delivery>,
    /// Each thermostat's filter runtime (s) at its last reset.
    filter_base: Vec<(String, i64)>,
    /// The file may end in something that is not a whole line (a torn tail found at open, an
    /// append that failed and could not be cut back): it is rewritten from memory before the
    /// next append, so no fragment is glued onto the next line.
    dirty: bool,
}

impl Record {
    /// Opens (or creates) the record in `dir`.
    pub fn open(dir: &Path) -> io::Result<Record> {
        files::create_private_dir(dir)?;
        let path = dir.join(FILE);
        // Bytes, not text: a tear can fall inside a character ('°', '—'), and a torn tail must
        // be dropped, not taken for a damaged record.
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let mut record = Record {
            dir: dir.to_path_buf(),
            file: files::open_append(&path)?,
            lines: 0,
            episodes: Vec::new(),
            owed: Vec::new(),
            filter_base: Vec::new(),
            dirty: false,
        };
        // Every append ends in '\n': a last segment without one was never acknowledged (the
        // writer died mid-append), so it is torn, whatever it holds.
        let torn = !bytes.is_empty() && !bytes.ends_with(b"\n");
        let mut segments: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
        segments.pop(); // after the last '\n': empty, or the torn tail
        let mut lines = 0;
        for (i, raw) in segments.iter().enumerate() {
            if raw.trim_ascii().is_empty() {
                continue;
            }
            let line = serde_json::from_slice::<Value>(raw)
                .map_err(|e| e.to_string())
                .and_then(|v| line_of(&v).ok_or_else(|| "not a line of the record".into()));
            match line {
                Ok(line) => record.apply(line),
                Err(e) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("{} line {}: {e}", path.display(), i + 1),
                    ));
                }
            }
            lines += 1;
        }
        record.lines = lines;
        if torn {
            log::warn!("alert record: dropped a torn last line (hearth stopped mid-write)");
            record.dirty = true;
            if let Err(e) = record.rewrite_if_dirty() {
                // Not fatal: the next append rewrites it first.
                log::error!("alert record: could not rewrite it without the torn line: {e}");
            }
        }
        record.tidy();
        Ok(record)
    }

    /// The active alerts and then the recent ones, each as a notice, oldest first: what the
    /// board is given at start.
    pub fn notices(&self) -> Vec<Notice> {
        self.episodes
            .iter()
            .filter_map(|e| e.cleared.as_ref().or(e.started.as_ref()))
            .map(|(n, _)| (**n).clone())
            .collect()
    }

    /// The active alert of `serial` of each kind.
    pub fn active_of(&self, serial: &str) -> Vec<Alert> {
        self.episodes
            .iter()
            .filter(|e| e.cleared.is_none())
            .filter_map(Episode::alert)
            .filter(|a| a.serial == serial)
            .cloned()
            .collect()
    }

    /// The active alert with this id.
    pub fn active(&self, id: &str) -> Option<Alert> {
        self.episodes
            .iter()
            .filter(|e| e.cleared.is_none())
            .filter_map(Episode::alert)
            .find(|a| a.id == id)
            .cloned()
    }

    /// Every delivery still owed, oldest first.
    pub fn owed(&self) -> Vec<Delivery> {
        self.owed.clone()
    }

    pub fn filter_base(&self, serial: &str) -> i64 {
        self.filter_base
            .iter()
            .find(|(s, _)| s == serial)
            .map_or(0, |(_, t)| *t)
    }

    /// Writes a notice owed to `targets`, durably; then returns its deliveries.
    pub fn notice(
        &mut self,
        notice: Notice,
        at_ms: i64,
        targets: &[Target],
    ) -> io::Result<Vec<Delivery>> {
        let line = Line::Notice {
            event: notice.event,
            alert: notice.alert,
            at_ms,
            targets: targets.to_vec(),
        };
        self.append(&line)?;
        let before = self.owed.len();
        self.apply(line);
        let new = self.owed.get(before..).unwrap_or_default().to_vec();
        self.tidy();
        Ok(new)
    }

    /// Rewrites the file if it has grown large. The fact was durable before this, so a failed
    /// rewrite must not fail the call (the episode would be active but neither shown nor
    /// delivered): it is logged, and tried again after a later append.
    fn tidy(&mut self) {
        if self.lines > self.kept_lines() + SLACK_LINES {
            if let Err(e) = self.compact() {
                log::error!("alert record: could not rewrite it smaller: {e}");
            }
        }
    }

    fn rewrite_if_dirty(&mut self) -> io::Result<()> {
        if self.dirty {
            self.compact()?;
        }
        Ok(())
    }

    /// Writes a delivery's outcome, durably.
    pub fn delivered(&mut self, delivery: &str, outcome: Outcome) -> io::Result<()> {
        let line = Line::Delivered {
            delivery: delivery.to_string(),
            outcome,
        };
        self.append(&line)?;
        self.apply(line);
        self.tidy();
        Ok(())
    }

    /// Writes a filter reset, durably.
    pub fn filter_reset(&mut self, serial: &str, runtime_s: i64) -> io::Result<()> {
        let line = Line::FilterReset {
            serial: serial.to_string(),
            runtime_s,
        };
        self.append(&line)?;
        self.apply(line);
        Ok(())
    }

    fn append(&mut self, line: &Line) -> io::Result<()> {
        let mut bytes = serde_json::to_vec(line).map_err(io::Error::other)?;
        bytes.push(b'\n');
        self.rewrite_if_dirty()?;
        let before = self.file.metadata()?.len();
        let written = self
            .file
            .write_all(&bytes)
            .and_then(|()| self.file.sync_data());
        if let Err(e) = written {
            // Cut back whatever part of the line reached the file; if even that fails, the
            // next append rewrites the file from memory first.
            if self.file.set_len(before).is_err() {
                self.dirty = true;
            }
            return Err(e);
        }
        self.lines += 1;
        Ok(())
    }

    fn apply(&mut self, line: Line) {
        match line {
            Line::Notice {
                event,
                alert,
                at_ms,
                targets,
            } => {
                let notice = Arc::new(Notice { event, alert });
                for target in targets {
                    let id = delivery_id(&notice, target);
                    self.owed.retain(|d| d.id != id);
                    self.owed.push(Delivery {
                        id,
                        target,
                        notice: Arc::clone(&notice),
                        at_ms,
                    });
                }
                let id = notice.alert.id.clone();
                let found = self
                    .episodes
                    .iter_mut()
                    .find(|e| e.alert().is_some_and(|a| a.id == id));
                let episode = match found {
                    Some(e) => e,
                    None => {
                        self.episodes.push(Episode {
                            started: None,
                            cleared: None,
                        });
                        let last = self.episodes.len() - 1;
                        &mut self.episodes[last]
                    }
                };
                match event {
                    Event::Started => episode.started = Some((notice, at_ms)),
                    Event::Cleared => episode.cleared = Some((notice, at_ms)),
                }
                self.prune();
            }
            Line::Delivered { delivery, .. } => {
                self.owed.retain(|d| d.id != delivery);
            }
            Line::FilterReset { serial, runtime_s } => {
                self.filter_base.retain(|(s, _)| *s != serial);
                self.filter_base.push((serial, runtime_s));
            }
        }
    }

    /// Forgets cleared episodes beyond the newest [`RECENT_KEEP`] whose deliveries are done.
    fn prune(&mut self) {
        let cleared = self.episodes.iter().filter(|e| e.cleared.is_some()).count();
        let mut extra = cleared.saturating_sub(RECENT_KEEP);
        let owed: Vec<String> = self
            .owed
            .iter()
            .map(|d| d.notice.alert.id.clone())
            .collect();
        self.episodes.retain(|e| {
            let old = extra > 0
                && e.cleared.is_some()
                && !e.alert().is_some_and(|a| owed.contains(&a.id));
            if old {
                extra -= 1;
            }
            !old
        });
    }

    /// Lines a rewrite would write.
    fn kept_lines(&self) -> usize {
        let notices: usize = self
            .episodes
            .iter()
            .map(|e| usize::from(e.started.is_some()) + usize::from(e.cleared.is_some()))
            .sum();
        notices + self.filter_base.len()
    }

    /// Rewrites the file with what it must keep: aside, fsync, rename, fsync the directory.
    fn compact(&mut self) -> io::Result<()> {
        let mut lines = Vec::new();
        for e in &self.episodes {
            for (notice, at_ms) in [&e.started, &e.cleared].into_iter().flatten() {
                let targets = [Target::Ntfy, Target::Webhook]
                    .into_iter()
                    .filter(|t| {
                        let id = delivery_id(notice, *t);
                        self.owed.iter().any(|d| d.id == id)
                    })
                    .collect();
                lines.push(Line::Notice {
                    event: notice.event,
                    alert: notice.alert.clone(),
                    at_ms: *at_ms,
                    targets,
                });
            }
        }
        for (serial, runtime_s) in &self.filter_base {
            lines.push(Line::FilterReset {
                serial: serial.clone(),
                runtime_s: *runtime_s,
            });
        }
        let mut bytes = Vec::new();
        for line in &lines {
            serde_json::to_writer(&mut bytes, line).map_err(io::Error::other)?;
            bytes.push(b'\n');
        }
        let path = self.dir.join(FILE);
        let aside = self.dir.join(format!("{FILE}.new"));
        files::remove_if_present(&aside)?;
        let mut file = files::create_new(&aside)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        fs::rename(&aside, &path)?;
        self.dirty = true; // until the append handle is the new file's
        // The append handle follows the rename at once: were the directory's fsync to fail,
        // appends must not go on into the old, unlinked file.
        self.file = files::open_append(&path)?;
        self.lines = lines.len();
        self.dirty = false;
        files::sync_dir(&self.dir)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "hearth-alert-record-{tag}-{}-{}",
            std::process::id(),
            crate::util::clock::now_ms()
        ));
        let _ = fs::remove_dir_all(&d);
        d
    }

    fn notice(id: &str, event: Event) -> Notice {
        Notice {
            event,
            alert: Alert {
                id: id.into(),
                serial: "02AA01AC0000SIM1".into(),
                kind: Kind::LowTemperature,
                started_at: "2026-11-26T10:00:00.000Z".into(),
                cleared_at: (event == Event::Cleared).then(|| "2026-11-26T11:00:00.000Z".into()),
                message: "Hallway is 5.8°C (below 7°C)".into(),
            },
        }
    }

    #[test]
    fn owed_deliveries_survive_a_reopen_until_delivered() {
        let d = dir("owed");
        let mut r = Record::open(&d).unwrap();
        let owed = r
            .notice(
                notice("a1", Event::Started),
                1,
                &[Target::Ntfy, Target::Webhook],
            )
            .unwrap();
        assert_eq!(owed.len(), 2);
        r.delivered("a1.started.ntfy", Outcome::Sent).unwrap();
        drop(r);
        let mut r = Record::open(&d).unwrap();
        let ids: Vec<String> = r.owed().into_iter().map(|d| d.id).collect();
        assert_eq!(ids, ["a1.started.webhook"]);
        assert_eq!(r.active_of("02AA01AC0000SIM1").len(), 1);
        r.delivered("a1.started.webhook", Outcome::Dropped).unwrap();
        r.notice(notice("a1", Event::Cleared), 2, &[]).unwrap();
        r.filter_reset("02AA01AC0000SIM1", 3600).unwrap();
        drop(r);
        let r = Record::open(&d).unwrap();
        assert!(r.owed().is_empty());
        assert_eq!(r.notices(), [notice("a1", Event::Cleared)]);
        assert!(r.active("a1").is_none());
        assert_eq!(r.notices().len(), 1);
        assert_eq!(r.filter_base("02AA01AC0000SIM1"), 3600);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_a_bad_middle_line_refused() {
        let d = dir("torn");
        let mut r = Record::open(&d).unwrap();
        r.notice(notice("a1", Event::Started), 1, &[Target::Webhook])
            .unwrap();
        drop(r);
        let path = d.join(FILE);
        let mut f = files::open_append(&path).unwrap();
        f.write_all(b"{\"op\":\"deliv").unwrap();
        drop(f);
        let r = Record::open(&d).unwrap();
        assert_eq!(r.owed().len(), 1);
        assert!(fs::read_to_string(&path).unwrap().ends_with('\n'));
        drop(r);
        let text = fs::read_to_string(&path).unwrap();
        fs::write(&path, format!("garbage\n{text}")).unwrap();
        let err = Record::open(&d).err().unwrap();
        assert!(err.to_string().contains("line 1"), "{err}");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn the_file_stays_bounded() {
        let d = dir("bounded");
        let mut r = Record::open(&d).unwrap();
        for i in 0..(RECENT_KEEP + SLACK_LINES) {
            let id = format!("a{i}");
            r.notice(notice(&id, Event::Started), 1, &[Target::Webhook])
                .unwrap();
            r.delivered(&format!("{id}.started.webhook"), Outcome::Sent)
                .unwrap();
            r.notice(notice(&id, Event::Cleared), 2, &[]).unwrap();
        }
        let lines = fs::read_to_string(d.join(FILE)).unwrap().lines().count();
        assert!(lines <= 2 * RECENT_KEEP + SLACK_LINES + 3, "{lines}");
        drop(r);
        let r = Record::open(&d).unwrap();
        assert_eq!(r.notices().len(), RECENT_KEEP);
        let _ = fs::remove_dir_all(&d);
    }

    /// The first `n` bytes of the line `notice` would be.
    fn line_bytes(n: &Notice) -> Vec<u8> {
        let line = Line::Notice {
            event: n.event,
            alert: n.alert.clone(),
            at_ms: 2,
            targets: vec![Target::Webhook],
        };
        serde_json::to_vec(&line).unwrap()
    }

    #[test]
    fn a_tear_inside_a_character_is_a_torn_line_not_a_damaged_record() {
        let d = dir("torn-utf8");
        let mut r = Record::open(&d).unwrap();
        r.notice(notice("a1", Event::Started), 1, &[Target::Webhook])
            .unwrap();
        drop(r);
        let path = d.join(FILE);
        let whole = line_bytes(&notice("a2", Event::Started));
        let degree = whole.windows(2).position(|w| w == "°".as_bytes()).unwrap();
        let mut f = files::open_append(&path).unwrap();
        f.write_all(&whole[..=degree]).unwrap(); // half of '°'
        drop(f);
        let mut r = Record::open(&d).unwrap();
        assert_eq!(r.owed().len(), 1);
        assert!(fs::read(&path).unwrap().ends_with(b"\n"));
        r.notice(notice("a3", Event::Started), 3, &[Target::Webhook])
            .unwrap();
        drop(r);
        let r = Record::open(&d).unwrap();
        let ids: Vec<String> = r.owed().into_iter().map(|d| d.id).collect();
        assert_eq!(ids, ["a1.started.webhook", "a3.started.webhook"]);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn an_unterminated_last_line_is_dropped_before_the_next_append() {
        // Whole JSON but no '\n': the append never finished, so never acknowledged; were it
        // kept, the next line would be glued onto it and the record damaged.
        let d = dir("unterminated");
        let path = d.join(FILE);
        drop(Record::open(&d).unwrap());
        fs::write(&path, line_bytes(&notice("a1", Event::Started))).unwrap();
        let mut r = Record::open(&d).unwrap();
        assert!(r.owed().is_empty());
        r.notice(notice("a2", Event::Started), 3, &[Target::Webhook])
            .unwrap();
        drop(r);
        let r = Record::open(&d).unwrap();
        let ids: Vec<String> = r.owed().into_iter().map(|d| d.id).collect();
        assert_eq!(ids, ["a2.started.webhook"]);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_failed_rewrite_does_not_fail_a_written_fact() {
        let d = dir("rewrite-fails");
        let mut r = Record::open(&d).unwrap();
        // The rewrite's aside cannot be made: a directory (not empty) holds its name.
        let aside = d.join(format!("{FILE}.new"));
        fs::create_dir_all(aside.join("x")).unwrap();
        for i in 0..(SLACK_LINES + 2) {
            let id = format!("a{i}");
            r.notice(notice(&id, Event::Started), 1, &[Target::Webhook])
                .unwrap();
            r.delivered(&format!("{id}.started.webhook"), Outcome::Sent)
                .unwrap();
            r.notice(notice(&id, Event::Cleared), 2, &[]).unwrap();
        }
        assert!(r.owed().is_empty());
        fs::remove_dir_all(&aside).unwrap();
        r.notice(notice("b", Event::Started), 3, &[Target::Webhook])
            .unwrap();
        let lines = fs::read_to_string(d.join(FILE)).unwrap().lines().count();
        assert!(lines <= 2 * RECENT_KEEP + SLACK_LINES, "rewritten: {lines}");
        drop(r);
        let r = Record::open(&d).unwrap();
        assert_eq!(r.owed().len(), 1);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_failed_append_leaves_nothing_for_the_next_line_to_glue_onto() {
        let d = dir("append-fails");
        let mut r = Record::open(&d).unwrap();
        r.notice(notice("a1", Event::Started), 1, &[Target::Webhook])
            .unwrap();
        // A handle that cannot write (nor be cut back): the append fails.
        r.file = File::open(d.join(FILE)).unwrap();
        assert!(
            r.notice(notice("a2", Event::Started), 2, &[Target::Webhook])
                .is_err()
        );
        // The next append rewrites the file from memory first, with a handle that writes.
        r.notice(notice("a3", Event::Started), 3, &[Target::Webhook])
            .unwrap();
        drop(r);
        let r = Record::open(&d).unwrap();
        let ids: Vec<String> = r.owed().into_iter().map(|d| d.id).collect();
        assert_eq!(ids, ["a1.started.webhook", "a3.started.webhook"]);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_rewrite_keeps_what_is_owed_and_drops_what_was_delivered() {
        let d = dir("rewrite-owed");
        let mut r = Record::open(&d).unwrap();
        let both = [Target::Ntfy, Target::Webhook];
        r.notice(notice("a1", Event::Started), 1, &both).unwrap();
        r.notice(notice("a2", Event::Started), 2, &both).unwrap();
        r.delivered("a1.started.ntfy", Outcome::Sent).unwrap();
        r.delivered("a2.started.webhook", Outcome::Dropped).unwrap();
        r.compact().unwrap();
        let text = fs::read_to_string(d.join(FILE)).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(!text.contains("\"op\":\"delivered\""), "{text}");
        drop(r);
        let r = Record::open(&d).unwrap();
        let ids: Vec<String> = r.owed().into_iter().map(|d| d.id).collect();
        assert_eq!(ids, ["a1.started.webhook", "a2.started.ntfy"]);
        assert_eq!(r.active_of("02AA01AC0000SIM1").len(), 2);
        let _ = fs::remove_dir_all(&d);
    }
}
