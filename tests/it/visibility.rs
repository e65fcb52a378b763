//! The table "Who sees a thermostat" in docs/hosted-api.md, walked: each of its rows (a mode and
//! where a thermostat stands) is built on a real server, and every surface is asked whether it
//! lists the thermostat, reads it and takes its commands; the answers must be the table's
//! cells. The table is read from the page, so the page and the behaviour cannot drift apart.
//!
//! One server per mode, with MQTT on a broker of its own, holds one thermostat per row (rows
//! share nothing but the users alice, bob and owner and their keys) and a witness: a thermostat
//! every surface lists, whose changes show that a surface has dealt with what came before. A
//! surface is said not to show a row's change only after it was seen to show the witness's
//! change made after it.
//!
//! A row's "change" is written through the one mutation path (as a command would be) where the
//! server knows the thermostat, so a thermostat whose own uploads are not stored (waiting, with
//! pairing required) still has changes for the surfaces to leave out; where the server has
//! never heard of it (never claimed, with pairing required), the change is the thermostat's own
//! upload, which the device protocol refuses.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use common::homekit::{bridge_of, characteristic, database};
use common::hosted::{api, hosted_serials, new_key, share};
use common::mqtt::{Broker, Watcher};
use common::*;
use hearth::alerts::Kind;
use hearth::config::MqttConfig;
use hearth::homekit::{Attributes, Bridge, Sent, Subscriptions};
use hearth::http::client::{ChunkStream, ClientResponse};
use hearth::simulator::Thermostat;
use hearth::state::ShareAccess;
use hearth::util::JsonMap;
use serde_json::{Value, json};

/// Where a thermostat stands: the table's rows, for either mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Row {
    NeverClaimed,
    Waiting,
    Claimed,
    Shared,
    Removed,
}

const ROWS: [Row; 5] = [
    Row::NeverClaimed,
    Row::Waiting,
    Row::Claimed,
    Row::Shared,
    Row::Removed,
];

impl Row {
    /// The row the table's "Thermostat" column names.
    fn of(label: &str) -> Option<Row> {
        Some(match label {
            "never claimed" => Row::NeverClaimed,
            "waiting (holds an entry code)" => Row::Waiting,
            "claimed by alice" => Row::Claimed,
            "alice's, shared with bob" => Row::Shared,
            "removed" => Row::Removed,
            _ => return None,
        })
    }

    /// The row's own thermostat.
    fn serial(self) -> &'static str {
        match self {
            Row::NeverClaimed => "02AA01AC0000VIS1",
            Row::Waiting => "02AA01AC0000VIS2",
            Row::Claimed => "02AA01AC0000VIS3",
            Row::Shared => "02AA01AC0000VIS4",
            Row::Removed => "02AA01AC0000VIS5",
        }
    }
}

/// A thermostat every surface lists (carol's), whose changes mark how far a surface got.
const WITNESS: &str = "02AA01AC0000WTNS";
const PREFIX: &str = "nle";
/// HAP's status for a characteristic (or accessory) that does not exist.
const HAP_NOT_FOUND: i64 = -70409;
/// Too cold for the alert rules (`low_c` is 7 °C here).
const COLD: f64 = 5.0;

/// One cell of the table: listed, read, commanded.
type Cell = [bool; 3];

/// `lrc`, `-r-`, ...: each letter in its place, or `-`.
fn cell(text: &str) -> Cell {
    let chars: Vec<char> = text.chars().collect();
    assert_eq!(chars.len(), 3, "a cell of the visibility table: {text:?}");
    let mut out = [false; 3];
    for (i, letter) in ['l', 'r', 'c'].into_iter().enumerate() {
        out[i] = match chars[i] {
            c if c == letter => true,
            '-' => false,
            other => panic!("{other:?} in the cell {text:?} of the visibility table"),
        };
    }
    out
}

struct Entry {
    pairing: bool,
    mode: String,
    label: String,
    row: Row,
    /// Column name → cell.
    cells: BTreeMap<String, Cell>,
}

/// The table's rows, read from docs/hosted-api.md.
fn table() -> (Vec<String>, Vec<Entry>) {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/hosted-api.md");
    let text = fs::read_to_string(&page).unwrap();
    let (_, section) = text
        .split_once("### Who sees a thermostat")
        .expect("docs/hosted-api.md has the section \"Who sees a thermostat\"");
    let lines: Vec<&str> = section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .collect();
    let cells = |line: &str| -> Vec<String> {
        line.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    assert!(lines.len() > 2, "no table in the section: {section}");
    let header = cells(lines[0]);
    assert_eq!(header[..2], ["Mode", "Thermostat"], "{}", lines[0]);
    let entries = lines[2..]
        .iter()
        .map(|line| {
            let c = cells(line);
            assert_eq!(c.len(), header.len(), "{line}");
            let pairing = match c[0].as_str() {
                "open" => false,
                "pairing" => true,
                other => panic!("no mode {other:?}: {line}"),
            };
            Entry {
                pairing,
                mode: c[0].clone(),
                label: c[1].clone(),
                row: Row::of(&c[1]).unwrap_or_else(|| panic!("no row {:?}: {line}", c[1])),
                cells: header[2..]
                    .iter()
                    .cloned()
                    .zip(c[2..].iter().map(|t| cell(t)))
                    .collect(),
            }
        })
        .collect();
    (header[2..].to_vec(), entries)
}

/// What a surface showed of one thermostat; `None` for what it has no way to show (an event
/// stream lists nothing and takes no commands).
#[derive(Default)]
struct Seen {
    listed: Option<bool>,
    read: Option<bool>,
    commanded: Option<bool>,
    /// The requests and their answers, for the report.
    how: Vec<String>,
    /// Answers that fit no rule (a status or body the page does not give for the case).
    wrong: Vec<String>,
}

impl Seen {
    fn note(&mut self, request: &str, r: &ClientResponse) {
        let text = r.text();
        let short: String = text.chars().take(240).collect();
        let more = if short.len() < text.len() { "…" } else { "" };
        self.how
            .push(format!("{request} → {} {short}{more}", r.status));
    }

    fn answer(&self) -> String {
        [self.listed, self.read, self.commanded]
            .iter()
            .zip(['l', 'r', 'c'])
            .map(|(seen, letter)| match seen {
                Some(true) => letter,
                Some(false) => '-',
                None => '·',
            })
            .collect()
    }

    /// Where the answer differs from `want`.
    fn differs(&self, want: Cell) -> bool {
        [self.listed, self.read, self.commanded]
            .iter()
            .zip(want)
            .any(|(seen, want)| seen.is_some_and(|s| s != want))
    }
}

type Check = fn(&mut Home, Row) -> Seen;

struct Surface {
    name: &'static str,
    /// The table's column that says how it answers.
    column: &'static str,
    check: Check,
}

const SURFACES: [Surface; 9] = [
    Surface {
        name: "control port: /api/devices, /status, /api/history, /api/schedule, /command",
        column: "Control port",
        check: control,
    },
    Surface {
        name: "control port: the live event stream /api/events",
        column: "Control port",
        check: live_events,
    },
    Surface {
        name: "control port: /metrics",
        column: "Control port",
        check: metrics,
    },
    Surface {
        name: "Apple Home (the HomeKit bridge's attribute database)",
        column: "Bridges",
        check: homekit,
    },
    Surface {
        name: "MQTT",
        column: "Bridges",
        check: mqtt,
    },
    Surface {
        name: "alerts (the board, and /api/alerts)",
        column: "Bridges",
        check: alerts,
    },
    Surface {
        name: "/api/v1 with alice's key",
        column: "alice's key",
        check: alice_key,
    },
    Surface {
        name: "/api/v1 with bob's key",
        column: "bob's key",
        check: bob_key,
    },
    Surface {
        name: "/api/v1 with owner's key",
        column: "owner's key",
        check: owner_key,
    },
];

/// One mode's server, with everything the surfaces are reached through. Fields are dropped in
/// order: the bridge and the clients before the server, the server before its broker.
struct Home {
    bridge: Bridge,
    events: ChunkStream,
    mqtt: Watcher,
    s: TestServer,
    _broker: Broker,
    pairing: bool,
    keys: BTreeMap<&'static str, String>,
    /// Each row's simulated thermostat (the one never claimed with pairing required uploads
    /// through it).
    sims: BTreeMap<Row, Thermostat>,
    /// The accessory id the removed thermostat had while HomeKit listed it.
    removed_aid: Option<u64>,
    /// The iids of a thermostat accessory's current and target temperatures (the same on
    /// every thermostat), from the witness's accessory.
    current_iid: u64,
    target_iid: u64,
    /// Counts the values handed out, so each is new.
    counter: u32,
}

impl Home {
    fn start(pairing: bool) -> Home {
        let broker = Broker::start();
        let s = TestServer::start_with(|c| {
            c.require_device_pairing = pairing;
            c.mqtt = Some(MqttConfig {
                topic_prefix: PREFIX.into(),
                ..MqttConfig::new("127.0.0.1", broker.port)
            });
            c.alerts.low_c = 7.0;
            c.alerts.offline_after = None;
            c.alerts.no_effect_after = None;
            // Each key makes three requests per row; the default 20 a minute is not the point.
            c.api_rate_limit_per_minute = 1000;
            // Every row's thermostat comes from this one address: more than it may add in open
            // mode (`tests/it/minted.rs`), which is not the point either.
            c.max_new_thermostats_per_client = 0;
        });
        let mqtt = Watcher::connect(broker.port);
        let bridge = bridge_of(s.server().app());
        let keys = ["alice", "bob", "owner"]
            .into_iter()
            .map(|user| (user, new_key(&s, user, "read,write", &[])))
            .collect();
        hearth::accounts::add_user(s.app().state(), "carol").unwrap();
        s.set_owner(WITNESS, "carol");
        let (mut witness, _) = thermostat(&s.origin(), WITNESS);
        witness.boot().unwrap();
        let mut events = open_events(s.control(), "/api/events");
        assert_eq!(events.next_chunk().unwrap().unwrap(), b": connected\n\n");
        let db = database(&bridge);
        let accessory = accessory_of(&db, WITNESS).expect("HomeKit lists the witness");
        let iid = |char_type: &str| {
            characteristic(&accessory, "4A", char_type)["iid"]
                .as_u64()
                .unwrap()
        };
        let (current_iid, target_iid) = (iid("11"), iid("35"));
        Home {
            bridge,
            events,
            mqtt,
            s,
            _broker: broker,
            pairing,
            keys,
            sims: BTreeMap::new(),
            removed_aid: None,
            current_iid,
            target_iid,
            counter: 0,
        }
    }

    /// Puts `row`'s thermostat where the row says.
    fn build(&mut self, row: Row) {
        let serial = row.serial();
        let (mut sim, _) = thermostat(&self.s.origin(), serial);
        sim.register().unwrap();
        // With pairing required, a thermostat is removed by the user who claimed it; in open
        // mode by the default user, whose it is until then.
        let claimed =
            matches!(row, Row::Claimed | Row::Shared) || (row == Row::Removed && self.pairing);
        if claimed {
            let (code, _) = sim.passphrase().unwrap();
            let body = json!({"code": code, "userId": "alice"}).to_string();
            let r = call(self.s.control(), "POST", "/api/register", &body);
            assert_eq!(r.status, 200, "claim of {serial}: {}", r.text());
        }
        match (row, self.pairing) {
            (Row::NeverClaimed, true) => {
                let refused = sim.boot().unwrap_err().to_string();
                assert!(refused.contains("401"), "{refused}");
            }
            (Row::Waiting, true) => {
                sim.passphrase().unwrap();
            }
            (Row::Waiting, false) => {
                sim.boot().unwrap();
                sim.passphrase().unwrap();
            }
            _ => sim.boot().unwrap(),
        }
        if row == Row::Shared {
            share(&self.s, serial, "bob", ShareAccess::Read);
        }
        if row == Row::Removed {
            self.removed_aid = self.bridge.aid_of(serial);
            assert!(self.removed_aid.is_some(), "HomeKit listed {serial} before");
            let r = remove_device(self.s.control(), serial);
            assert_eq!(r.status, 200, "{}", r.text());
            assert!(self.s.app().state().accounts(|a| a.is_released(serial)));
        }
        // The server knows each of them but the one it refused.
        let known = !(row == Row::NeverClaimed && self.pairing);
        assert_eq!(self.s.app().state().device_exists(serial), known, "{row:?}");
        self.sims.insert(row, sim);
    }

    fn key(&self, user: &str) -> &str {
        &self.keys[user]
    }

    fn known(&self, serial: &str) -> bool {
        self.s.app().state().device_exists(serial)
    }

    /// The thermostat's shared bucket: its revision and value.
    fn shared_of(&self, serial: &str) -> Option<(i64, JsonMap)> {
        self.s
            .bucket(serial, &format!("shared.{serial}"))
            .map(|b| (b.revision, b.value.to_map()))
    }

    fn target_of(&self, serial: &str) -> Option<f64> {
        self.shared_of(serial)
            .and_then(|(_, v)| v.get("target_temperature").and_then(Value::as_f64))
    }

    /// A setpoint (°C, on the hosted API's half-degree grid) that `serial` does not have now.
    fn new_target(&mut self, serial: &str) -> f64 {
        let now = self.target_of(serial);
        loop {
            self.counter += 1;
            let value = 16.0 + f64::from(self.counter % 24) * 0.5;
            if Some(value) != now {
                return value;
            }
        }
    }

    /// A room temperature (°C) no thermostat has had before, none of them cold.
    fn new_temperature(&mut self) -> f64 {
        self.counter += 1;
        18.0 + f64::from(self.counter) / 100.0
    }

    /// Whether a command for `serial` to `value` was carried out, its shared bucket having
    /// been `before`; a refused one must have changed nothing.
    fn took(
        &self,
        serial: &str,
        before: &Option<(i64, JsonMap)>,
        value: f64,
        seen: &mut Seen,
    ) -> bool {
        let after = self.shared_of(serial);
        let took = after != *before
            && after
                .as_ref()
                .and_then(|(_, v)| v.get("target_temperature").and_then(Value::as_f64))
                == Some(value);
        if !took && after != *before {
            seen.wrong.push(format!(
                "not carried out, yet its shared bucket changed: {before:?} → {after:?}"
            ));
        }
        took
    }

    /// A change to `row`'s thermostat (see the module's comment).
    fn change(&mut self, row: Row, fields: Value) {
        let serial = row.serial();
        if self.known(serial) {
            self.s
                .server_change(serial, &format!("shared.{serial}"), fields);
            return;
        }
        let sim = self.sims.get_mut(&row).unwrap();
        for (field, value) in fields.as_object().unwrap() {
            sim.report("shared", field, value.clone());
        }
        let refused = sim.put().unwrap_err().to_string();
        assert!(refused.contains("401"), "{refused}");
        assert!(!self.known(serial));
    }

    /// Changes the witness's room temperature; gives its shared bucket's new revision.
    fn witness_change(&self, temperature: f64) -> i64 {
        let key = format!("shared.{WITNESS}");
        self.s
            .server_change(WITNESS, &key, json!({"current_temperature": temperature}));
        self.s.bucket(WITNESS, &key).unwrap().revision
    }

    /// Changes the witness and reads the event stream up to that change: the events before it.
    fn events_to_mark(&mut self) -> Vec<Value> {
        let t = self.new_temperature();
        let revision = self.witness_change(t);
        let mut before = Vec::new();
        loop {
            let e = next_event(&mut self.events);
            if e["serial"] == json!(WITNESS) && e["revision"] == json!(revision) {
                return before;
            }
            before.push(e);
        }
    }

    /// Waits until MQTT has dealt with every change made before: the bridge publishes what a
    /// batch of changes made dirty in no particular order, so the witness changes twice, the
    /// second time after its first change was published (a later batch).
    fn mqtt_to_mark(&mut self) {
        let topic = format!("{PREFIX}/{WITNESS}/shared/current_temperature");
        for _ in 0..2 {
            let t = self.new_temperature();
            self.witness_change(t);
            wait_until("the witness's change on MQTT", || {
                self.mqtt
                    .latest()
                    .get(&topic)
                    .and_then(|p| p.parse::<f64>().ok())
                    == Some(t)
            });
        }
    }

    fn witness_alert(&self) -> bool {
        self.s
            .app()
            .alerts()
            .active()
            .iter()
            .any(|a| a.serial == WITNESS && a.kind == Kind::LowTemperature)
    }
}

/// The accessory whose serial number (Accessory Information's `30`) is `serial`.
fn accessory_of(db: &Value, serial: &str) -> Option<Value> {
    db["accessories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["aid"] != json!(1) && characteristic(a, "3E", "30")["value"] == json!(serial))
        .cloned()
}

/// `/api/devices`, `/status` with `/api/history` and `/api/schedule`, and `/command`.
fn control(h: &mut Home, row: Row) -> Seen {
    let serial = row.serial();
    let addr = h.s.control();
    let mut seen = Seen::default();
    let r = get(addr, "/api/devices");
    seen.note("GET /api/devices", &r);
    seen.listed = Some(
        r.json()["devices"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["serial"] == json!(serial)),
    );
    let not_found = json!({"error": "Device not found"});
    let mut reads = BTreeSet::new();
    for path in ["/status", "/api/history", "/api/schedule"] {
        let target = format!("{path}?serial={serial}");
        let r = get(addr, &target);
        seen.note(&format!("GET {target}"), &r);
        match r.status {
            200 => reads.insert(true),
            404 if r.json() == not_found => reads.insert(false),
            _ => {
                seen.wrong
                    .push(format!("GET {target} is neither 200 nor 404 {not_found}"));
                false
            }
        };
    }
    match reads.len() {
        1 => seen.read = reads.first().copied(),
        _ => seen
            .wrong
            .push("/status, /api/history and /api/schedule disagree".into()),
    }
    let before = h.shared_of(serial);
    let value = h.new_target(serial);
    let r = command(addr, serial, "set_temperature", json!(value));
    seen.note(&format!("POST /command set_temperature {value}"), &r);
    let took = h.took(serial, &before, value, &mut seen);
    // Refused: 409 for a thermostat the server knows (nobody's), 404 for one it does not.
    let refusal = if h.known(serial) { 409 } else { 404 };
    if r.status != if took { 200 } else { refusal } {
        seen.wrong.push(format!(
            "/command answered {} (carried out: {took}; expected 200 when carried out, else {refusal})",
            r.status
        ));
    }
    seen.commanded = Some(took);
    seen
}

/// A change to the thermostat reaches `/api/events` iff the control port may read it.
fn live_events(h: &mut Home, row: Row) -> Seen {
    let serial = row.serial();
    let mut seen = Seen::default();
    // What earlier checks' commands queued goes first, up to a first mark.
    h.events_to_mark();
    let t = h.new_temperature();
    h.change(row, json!({"current_temperature": t}));
    let before = h.events_to_mark();
    let serials: Vec<&Value> = before.iter().map(|e| &e["serial"]).collect();
    seen.how.push(format!(
        "changed its current_temperature to {t}, then the witness's; events before the \
         witness's: {serials:?}"
    ));
    seen.read = Some(serials.contains(&&json!(serial)));
    seen
}

/// `/metrics` has the thermostat's series iff the control port lists it.
fn metrics(h: &mut Home, row: Row) -> Seen {
    let serial = row.serial();
    let mut seen = Seen::default();
    let r = get(h.s.control(), "/metrics");
    assert_eq!(r.status, 200);
    let label = format!("serial=\"{serial}\"");
    let lines: Vec<String> = r
        .text()
        .lines()
        .filter(|l| l.contains(&label))
        .map(str::to_string)
        .collect();
    seen.how.push(format!(
        "GET /metrics: its lines {:?}",
        &lines[..lines.len().min(3)]
    ));
    seen.listed = Some(!lines.is_empty());
    seen
}

/// The accessory database lists it; a read and a write of its characteristics by the accessory
/// id it has (or had, while listed).
fn homekit(h: &mut Home, row: Row) -> Seen {
    let serial = row.serial();
    let mut seen = Seen::default();
    let db = database(&h.bridge);
    let listed = accessory_of(&db, serial).is_some();
    seen.listed = Some(listed);
    let aid = h.bridge.aid_of(serial);
    seen.how.push(format!(
        "database lists it: {listed}; aid_of: {aid:?}; aid while it was listed: {:?}",
        h.removed_aid
    ));
    if aid.is_some() != listed {
        seen.wrong.push("the database and aid_of disagree".into());
    }
    let aid = match (aid, row) {
        (Some(aid), _) => aid,
        (None, Row::Removed) => h.removed_aid.unwrap(),
        (None, _) => {
            // Never listed, it never had an accessory id: no controller can name it.
            seen.how
                .push("no accessory id: nothing to read or write".into());
            seen.read = Some(false);
            seen.commanded = Some(false);
            return seen;
        }
    };
    let hap_not_found = |body: &[u8]| {
        serde_json::from_slice::<Value>(body)
            .ok()
            .is_some_and(|b| b["characteristics"][0]["status"] == json!(HAP_NOT_FOUND))
    };
    let query = format!("id={aid}.{}", h.current_iid);
    let r = h.bridge.read(&query, &Subscriptions::new());
    seen.how.push(format!(
        "read {query} → {} {}",
        r.status,
        String::from_utf8_lossy(&r.body)
    ));
    seen.read = match r.status {
        200 => Some(true),
        207 if hap_not_found(&r.body) => Some(false),
        _ => {
            seen.wrong
                .push("a read neither answered nor not found".into());
            None
        }
    };
    let before = h.shared_of(serial);
    let value = h.new_target(serial);
    let items = json!({"characteristics": [{"aid": aid, "iid": h.target_iid, "value": value}]});
    let r = h.bridge.write(
        items.to_string().as_bytes(),
        &mut Subscriptions::new(),
        &mut Sent::new(),
    );
    seen.how.push(format!(
        "write {items} → {} {}",
        r.status,
        String::from_utf8_lossy(&r.body)
    ));
    let took = h.took(serial, &before, value, &mut seen);
    if !(took && r.status == 204 || !took && r.status == 207 && hap_not_found(&r.body)) {
        seen.wrong.push(format!(
            "a write answered {} (carried out: {took}; expected 204 when carried out, else \
             207 with {HAP_NOT_FOUND})",
            r.status
        ));
    }
    seen.commanded = Some(took);
    seen
}

/// Published (discovery and state) iff listed; a command topic acts iff commanded.
fn mqtt(h: &mut Home, row: Row) -> Seen {
    let serial = row.serial();
    let mut seen = Seen::default();
    let t = h.new_temperature();
    h.change(row, json!({"current_temperature": t}));
    h.mqtt_to_mark();
    let latest = h.mqtt.latest();
    let discovery = format!("homeassistant/climate/nest_{serial}/thermostat/config");
    let state = format!("{PREFIX}/{serial}/shared/current_temperature");
    let retained: BTreeMap<&String, &String> = latest
        .iter()
        .filter(|(topic, payload)| topic.contains(serial) && !payload.is_empty())
        .collect();
    seen.how.push(format!(
        "changed its current_temperature to {t}; then: {discovery} {:?}, {state} {:?}, {} \
         topics of it hold something",
        latest.get(&discovery).map(|p| p.len()),
        latest.get(&state),
        retained.len()
    ));
    let listed = latest.get(&discovery).is_some_and(|p| !p.is_empty());
    let read = latest.get(&state).and_then(|p| p.parse::<f64>().ok()) == Some(t);
    if !listed && !read && !retained.is_empty() {
        seen.wrong.push(format!(
            "unpublished, yet topics of it still hold something: {:?}",
            retained.keys().take(5).collect::<Vec<_>>()
        ));
    }
    seen.listed = Some(listed);
    seen.read = Some(read);

    let before = h.shared_of(serial);
    let value = h.new_target(serial);
    let topic = format!("{PREFIX}/{serial}/ha/target_temperature/set");
    h.mqtt.publish(&topic, &value.to_string());
    // Commands are run one at a time in the order they arrive: once the witness's, sent
    // after, has run, so has this one (or it was refused).
    let mark = h.new_target(WITNESS);
    h.mqtt.publish(
        &format!("{PREFIX}/{WITNESS}/ha/target_temperature/set"),
        &mark.to_string(),
    );
    wait_until("the witness's command over MQTT", || {
        h.target_of(WITNESS) == Some(mark)
    });
    let took = h.took(serial, &before, value, &mut seen);
    seen.how
        .push(format!("published {value} to {topic}: carried out {took}"));
    seen.commanded = Some(took);
    seen
}

/// Too cold: an alert iff the alerts list it (and `/api/alerts` shows it iff there is one and
/// the control port may read the thermostat).
fn alerts(h: &mut Home, row: Row) -> Seen {
    let serial = row.serial();
    let mut seen = Seen::default();
    h.change(row, json!({"current_temperature": COLD}));
    // The rules look at the thermostats of a batch of changes in turn: once the witness's
    // alert has started and then cleared, on two later changes, the row's change was looked at.
    h.witness_change(COLD);
    wait_until("the witness's alert", || h.witness_alert());
    let warm = h.new_temperature();
    h.witness_change(warm);
    wait_until("the witness's alert clears", || !h.witness_alert());
    let board: Vec<Kind> =
        h.s.app()
            .alerts()
            .active()
            .iter()
            .filter(|a| a.serial == serial)
            .map(|a| a.kind)
            .collect();
    let alerted = board.contains(&Kind::LowTemperature);
    let r = get(h.s.control(), "/api/alerts");
    let shown = r.json()["active"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["serial"] == json!(serial));
    let readable = get(h.s.control(), &format!("/status?serial={serial}")).status == 200;
    seen.how.push(format!(
        "its current_temperature {COLD} °C: active alerts of it {board:?}; /api/alerts shows \
         one: {shown}"
    ));
    if shown != (alerted && readable) {
        seen.wrong.push(format!(
            "/api/alerts shows an alert of it: {shown}; on the board: {alerted}; the control \
             port reads it: {readable}"
        ));
    }
    seen.listed = Some(alerted);
    seen
}

/// `/api/v1` with `user`'s key (both scopes, no serial list).
fn key(h: &mut Home, row: Row, user: &str) -> Seen {
    let serial = row.serial();
    let key = h.key(user).to_string();
    let mut seen = Seen::default();
    let listed = hosted_serials(&h.s, &key).contains(&json!(serial));
    seen.how
        .push(format!("GET /api/v1/devices lists it: {listed}"));
    seen.listed = Some(listed);
    let not_found = json!({"error": "Device not found"});
    let denied = json!({"error": "Access denied to this device"});
    let path = format!("/thermostat/{serial}/status");
    let r = api(&h.s, "GET", &path, &key, Value::Null);
    seen.note(&format!("GET /api/v1{path}"), &r);
    // A key with both scopes and no serial list is refused a read only where its user has no
    // relation to the thermostat: as if it did not exist.
    seen.read = match r.status {
        200 => Some(true),
        404 if r.json() == not_found => Some(false),
        _ => {
            seen.wrong
                .push(format!("a read neither 200 nor 404 {not_found}"));
            None
        }
    };
    let before = h.shared_of(serial);
    let value = h.new_target(serial);
    let path = format!("/thermostat/{serial}/temperature");
    let body = json!({"value": value, "mode": "heat"});
    let r = api(&h.s, "POST", &path, &key, body.clone());
    seen.note(&format!("POST /api/v1{path} {body}"), &r);
    let took = h.took(serial, &before, value, &mut seen);
    // A change refused to a user who may read it (a `read` share) is 403, else 404.
    let refusal = if seen.read == Some(true) {
        (403, denied)
    } else {
        (404, not_found)
    };
    let answered = (
        r.status,
        if r.status == 200 {
            Value::Null
        } else {
            r.json()
        },
    );
    if took && r.status != 200 || !took && answered != refusal {
        seen.wrong.push(format!(
            "a change answered {answered:?} (carried out: {took}; expected 200 when carried \
             out, else {refusal:?})"
        ));
    }
    seen.commanded = Some(took);
    seen
}

fn alice_key(h: &mut Home, row: Row) -> Seen {
    key(h, row, "alice")
}

fn bob_key(h: &mut Home, row: Row) -> Seen {
    key(h, row, "bob")
}

fn owner_key(h: &mut Home, row: Row) -> Seen {
    key(h, row, "owner")
}

#[test]
fn every_surface_answers_as_the_visibility_table_says() {
    let (columns, entries) = table();
    // The table and the checks cover each other: every mode and row once, every column
    // checked by a surface and every surface's column in the table.
    let mut got: Vec<(bool, Row)> = entries.iter().map(|e| (e.pairing, e.row)).collect();
    let mut want: Vec<(bool, Row)> = [false, true]
        .into_iter()
        .flat_map(|p| ROWS.map(|r| (p, r)))
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want, "the table's rows");
    let checked: BTreeSet<&str> = SURFACES.iter().map(|s| s.column).collect();
    let columns: BTreeSet<&str> = columns.iter().map(String::as_str).collect();
    assert_eq!(
        checked, columns,
        "the table's columns and the surfaces checked"
    );

    let mut disagreements = Vec::new();
    for pairing in [false, true] {
        let mut home = Home::start(pairing);
        for row in ROWS {
            home.build(row);
        }
        for entry in entries.iter().filter(|e| e.pairing == pairing) {
            for surface in &SURFACES {
                let want = entry.cells[surface.column];
                let seen = (surface.check)(&mut home, entry.row);
                if seen.differs(want) || !seen.wrong.is_empty() {
                    let want: String = want
                        .iter()
                        .zip(['l', 'r', 'c'])
                        .map(|(w, l)| if *w { l } else { '-' })
                        .collect();
                    disagreements.push(format!(
                        "{} | {} | {}: the table says {want} ({}), it answered {}{}\n      {}",
                        entry.mode,
                        entry.label,
                        surface.name,
                        surface.column,
                        seen.answer(),
                        seen.wrong
                            .iter()
                            .map(|w| format!("; {w}"))
                            .collect::<String>(),
                        seen.how.join("\n      ")
                    ));
                }
            }
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} answers differ from docs/hosted-api.md's \"Who sees a thermostat\" (· is what a \
         surface cannot show):\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
}
