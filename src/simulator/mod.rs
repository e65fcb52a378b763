//! A simulated Nest Gen2 thermostat, faithful where a server can get things wrong: it registers
//! at `/entry` and then uses only the URLs it was given; uploads its full state after boot (or
//! when the server says it has nothing) and only changed fields afterwards; holds a chunked
//! subscribe and reads it chunk by chunk; rejects pushed objects whose keys are out of order;
//! applies objects by timestamp (equal timestamps: revision decides); acknowledges
//! `target_change_pending`; retries a CAS conflict with the server's revision; treats a value
//! in a PUT answer as authoritative (reporting it, since a correct server never sends one); and
//! resubscribes at once. Every step is reported as an [`Event`].

pub mod fleet;
mod initial;
pub mod settings_api;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

use crate::http::client::{ChunkStream, ClientResponse, Url};
use crate::util::JsonMap;
use crate::util::clock::{Clock, Stopwatch};

const USER_AGENT: &str = "AddLightness/5.9.4-5 (Display-2.12; wireless_reg_domain=A2)";
const CAS_RETRIES: usize = 2;

#[derive(Clone, Debug)]
pub struct Options {
    /// Where the thermostat's `cloudregisterurl` points, without `/entry`
    /// (e.g. `http://192.168.1.10:8000`).
    pub server: String,
    pub serial: String,
    /// Reject pushed objects whose `object_key` comes before revision or timestamp.
    pub strict_key_order: bool,
    /// Treat equal timestamps as "in sync" (the Python server's tests) instead of letting the
    /// revision decide (the protocol reference).
    pub equal_timestamp_in_sync: bool,
    /// Connect and read timeout for ordinary requests.
    pub timeout: Duration,
    /// A broken thermostat: it keeps reporting and receives every push (its next subscribe
    /// names the pushed revision) but applies and acknowledges none of them, as a thermostat
    /// whose reads work and whose control does not.
    pub ignore_pushes: bool,
}

impl Options {
    pub fn new(server: &str, serial: &str) -> Options {
        Options {
            server: server.trim_end_matches('/').to_string(),
            serial: serial.to_string(),
            strict_key_order: true,
            equal_timestamp_in_sync: false,
            timeout: Duration::from_secs(10),
            ignore_pushes: false,
        }
    }
}

/// What the thermostat saw or did.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Registered {
        transport: String,
    },
    /// A subscribe's response head arrived; the thermostat sleeps until data or the end.
    Held,
    Pushed {
        key: String,
        revision: i64,
        timestamp: i64,
        fields: Vec<String>,
    },
    Ignored {
        key: String,
        timestamp: i64,
        why: &'static str,
    },
    RejectedOrder {
        key: String,
        text: String,
    },
    SubscribeEnded {
        chunks: usize,
    },
    Uploaded {
        keys: Vec<String>,
        full: bool,
    },
    CasConflict {
        key: String,
        server_revision: i64,
    },
    Acknowledged {
        key: String,
    },
    /// A `user.*` bucket with a name arrived: the thermostat leaves its pairing screen.
    Paired {
        user: String,
    },
    /// A PUT answer carried a value (a server bug: it overwrites pending local edits).
    PutEcho {
        key: String,
    },
    Problem(String),
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Registered { transport } => write!(f, "registered; transport {transport}"),
            Event::Held => write!(f, "subscribe held"),
            Event::Pushed {
                key,
                revision,
                timestamp,
                fields,
            } => {
                write!(
                    f,
                    "applied {key} rev={revision} ts={timestamp} fields={}",
                    fields.join(",")
                )
            }
            Event::Ignored {
                key,
                timestamp,
                why,
            } => write!(f, "ignored {key} ts={timestamp}: {why}"),
            Event::RejectedOrder { key, .. } => {
                write!(f, "rejected {key}: object_key before revision/timestamp")
            }
            Event::SubscribeEnded { chunks } => {
                write!(f, "subscribe ended after {chunks} chunk(s)")
            }
            Event::Uploaded { keys, full } => {
                write!(
                    f,
                    "{} {}",
                    if *full {
                        "uploaded full state"
                    } else {
                        "uploaded changes to"
                    },
                    keys.join(",")
                )
            }
            Event::CasConflict {
                key,
                server_revision,
            } => {
                write!(
                    f,
                    "CAS conflict on {key}; server at rev {server_revision}, retrying"
                )
            }
            Event::Acknowledged { key } => write!(f, "acknowledged target_change_pending on {key}"),
            Event::Paired { user } => write!(f, "paired with {user}"),
            Event::PutEcho { key } => write!(f, "server echoed a value for {key} in a PUT answer"),
            Event::Problem(why) => write!(f, "problem: {why}"),
        }
    }
}

pub type Observer = Arc<dyn Fn(&str, &Event) + Send + Sync>;

#[derive(Debug)]
pub enum SimError {
    Io(io::Error),
    Protocol(String),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Io(e) => write!(f, "{e}"),
            SimError::Protocol(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for SimError {}

impl From<io::Error> for SimError {
    fn from(e: io::Error) -> Self {
        SimError::Io(e)
    }
}

fn protocol(why: impl Into<String>) -> SimError {
    SimError::Protocol(why.into())
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Version {
    revision: i64,
    timestamp: i64,
}

impl Version {
    /// The revision and timestamp of an object the server sent (0 where missing).
    fn of(obj: &JsonMap) -> Version {
        let field = |name: &str| obj.get(name).and_then(Value::as_i64).unwrap_or(0);
        Version {
            revision: field("object_revision"),
            timestamp: field("object_timestamp"),
        }
    }
}

/// The URLs handed out by `/entry`.
#[derive(Clone, Debug)]
struct Urls {
    transport: Url,
    passphrase: Url,
}

pub struct Thermostat {
    opts: Options,
    observer: Observer,
    urls: Option<Urls>,
    basic: String,
    session: String,
    weave_id: String,
    request_id: u64,
    /// The thermostat's copy of each bucket it knows.
    local: BTreeMap<String, JsonMap>,
    versions: BTreeMap<String, Version>,
    /// Fields changed locally and not yet accepted by the server.
    dirty: BTreeMap<String, BTreeSet<String>>,
    /// Buckets whose pending change was made by the user (written with `if_object_revision`).
    user_edits: BTreeSet<String>,
    /// The next PUT sends every field of these buckets (after boot, or when the server says it
    /// has nothing).
    full_upload: BTreeSet<String>,
    /// Buckets whose pushed setpoint is waiting for its `target_change_pending: false`.
    acknowledging: BTreeSet<String>,
    /// How long the server said it may hold a subscribe.
    suspend_max: Duration,
}

/// One object of a PUT, as sent.
struct PutObject {
    key: String,
    /// A user's change: written with `if_object_revision` (else `base_object_revision`).
    cas: bool,
    /// The revision it is based on (0 for one the server has not sent).
    revision: i64,
    value: JsonMap,
}

impl PutObject {
    fn to_json(&self) -> Value {
        let revision_field = if self.cas {
            "if_object_revision"
        } else {
            "base_object_revision"
        };
        json!({"object_key": self.key, revision_field: self.revision, "value": self.value})
    }
}

/// A subscribe being held: read it with [`Held::next_chunk`], hand each chunk to
/// [`Thermostat::apply_chunk`].
pub struct Held {
    stream: ChunkStream,
    pub chunks: usize,
}

impl Held {
    /// The next chunk; `None` once the server ended the response.
    pub fn next_chunk(&mut self) -> io::Result<Option<Vec<u8>>> {
        let chunk = self.stream.next_chunk()?;
        if chunk.is_some() {
            self.chunks += 1;
        }
        Ok(chunk)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.stream.header(name)
    }

    /// Waits up to `timeout` for a push: true once one is arriving (or the server ended the
    /// subscribe), so [`Held::next_chunk`] will not wait. For a thermostat that does other
    /// things while it holds a subscribe.
    pub fn wait(&mut self, timeout: Duration) -> io::Result<bool> {
        self.stream.wait_readable(timeout)
    }

    /// How long [`Held::next_chunk`] waits before failing with a timeout.
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.stream.set_read_timeout(timeout)
    }
}

impl Thermostat {
    pub fn new(opts: Options, observer: Observer) -> Thermostat {
        let id = initial::identity(&opts.serial);
        let serial = opts.serial.clone();
        let basic = base64::engine::general_purpose::STANDARD
            .encode(format!("d.{serial}.{}:{}", id.suffix, id.password));
        let mut local = BTreeMap::new();
        local.insert(
            format!("device.{serial}"),
            initial::device(&serial, &id.mac),
        );
        local.insert(format!("shared.{serial}"), initial::shared());
        local.insert(format!("schedule.{serial}"), initial::schedule());
        let full_upload = local.keys().cloned().collect();
        Thermostat {
            session: format!("{}{serial}", id.mac),
            weave_id: id.weave_id,
            basic: format!("Basic {basic}"),
            opts,
            observer,
            urls: None,
            request_id: 1_766_166_000,
            local,
            versions: BTreeMap::new(),
            dirty: BTreeMap::new(),
            user_edits: BTreeSet::new(),
            full_upload,
            acknowledging: BTreeSet::new(),
            suspend_max: Duration::from_secs(300),
        }
    }

    pub fn serial(&self) -> &str {
        &self.opts.serial
    }

    /// The Basic-auth password this thermostat sends (its local API key).
    pub fn password(&self) -> String {
        initial::identity(&self.opts.serial).password
    }

    /// The thermostat's copy of a bucket.
    pub fn bucket(&self, key: &str) -> Option<&JsonMap> {
        self.local.get(key)
    }

    /// Every bucket the thermostat holds, by key.
    pub fn buckets(&self) -> impl Iterator<Item = (&String, &JsonMap)> {
        self.local.iter()
    }

    /// Revision and timestamp the thermostat holds for a bucket.
    pub fn version(&self, key: &str) -> Option<(i64, i64)> {
        self.versions.get(key).map(|v| (v.revision, v.timestamp))
    }

    /// The user this thermostat is linked to: the name in a `user.*` bucket it holds (what
    /// takes a real thermostat off its pairing screen).
    pub fn paired_with(&self) -> Option<&str> {
        self.local
            .iter()
            .filter(|(k, _)| k.starts_with("user."))
            .find_map(|(_, v)| v.get("name").and_then(Value::as_str))
            .filter(|n| !n.is_empty())
    }

    pub fn has_pending_changes(&self) -> bool {
        !self.dirty.is_empty() || !self.full_upload.is_empty()
    }

    fn emit(&self, event: Event) {
        (self.observer)(&self.opts.serial, &event);
    }

    fn key(&self, kind: &str) -> String {
        format!("{kind}.{}", self.opts.serial)
    }

    fn transport_headers(&self) -> Vec<(&'static str, &str)> {
        vec![
            ("Authorization", self.basic.as_str()),
            ("User-Agent", USER_AGENT),
            ("X-nl-protocol-version", "1"),
            ("X-nl-device-swversion", "5.9.4-5"),
            ("X-nl-weave-device-id", self.weave_id.as_str()),
            ("Content-Type", "application/json"),
        ]
    }

    /// One request as the thermostat sends it (HTTP/1.1 keep-alive, no `Connection: close`;
    /// the socket is closed once the answer is read), and its whole answer.
    fn send(
        &self,
        url: &Url,
        method: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<ClientResponse, SimError> {
        let mut stream = ChunkStream::open(url, method, headers, body, self.opts.timeout, false)?;
        Ok(stream.read_all()?)
    }

    fn urls(&self) -> Result<&Urls, SimError> {
        self.urls.as_ref().ok_or_else(|| protocol("not registered"))
    }

    /// `POST <cloudregisterurl>` and keep the URLs it returns.
    pub fn register(&mut self) -> Result<(), SimError> {
        self.request_id += 1;
        let id = initial::identity(&self.opts.serial);
        let form = format!(
            "reset=FALSE&mac={}&model=Display-2.12&request_id={}&software_version=5.9.4-5&wireless_reg_domain=A2&backplate_model=Backplate-2.8",
            id.mac.to_uppercase(),
            self.request_id
        );
        let url = Url::parse(&format!("{}/entry", self.opts.server)).map_err(protocol)?;
        let headers = [
            ("Accept", "*/*"),
            ("Authorization", self.basic.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("User-Agent", USER_AGENT),
            ("X-nl-accepts", "register-redirection"),
            ("X-nl-weave-device-descriptor", "AAECAwQFBgcICQ=="),
            ("X-nl-weave-device-id", self.weave_id.as_str()),
            ("X-nl-weave-provisioning-state", "not-provisioned"),
        ];
        let r = self.send(&url, "POST", &headers, form.as_bytes())?;
        if r.status != 200 {
            return Err(protocol(format!("entry answered {}", r.status)));
        }
        let body = r.json();
        let get = |name: &str| {
            body.get(name)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let transport = get("transport_url");
        if transport.is_empty() {
            return Err(protocol("entry gave no transport_url (blocked)"));
        }
        let parse = |raw: &str| -> Result<Url, SimError> {
            let url = Url::parse(raw).map_err(protocol)?;
            if url.port.is_none() {
                // Real firmware then cannot be woken by pushes; report it loudly.
                self.emit(Event::Problem(format!("{raw} has no explicit port")));
            }
            Ok(url)
        };
        self.urls = Some(Urls {
            transport: parse(&transport)?,
            passphrase: parse(&get("passphrase_url"))?,
        });
        self.emit(Event::Registered { transport });
        Ok(())
    }

    /// `GET <passphrase_url>`: the entry key and when it expires (ms).
    pub fn passphrase(&self) -> Result<(String, i64), SimError> {
        let urls = self.urls()?;
        let headers = [
            ("Authorization", self.basic.as_str()),
            ("User-Agent", USER_AGENT),
        ];
        let r = self.send(&urls.passphrase, "GET", &headers, &[])?;
        let body = r.json();
        match (
            body.get("value").and_then(Value::as_str),
            body.get("expires"),
        ) {
            // A string `expires` is silently rejected by real firmware.
            (Some(code), Some(Value::Number(n))) => Ok((code.to_string(), n.as_i64().unwrap_or(0))),
            _ => Err(protocol(format!(
                "passphrase answered {} {}",
                r.status,
                r.text()
            ))),
        }
    }

    /// Registers, then syncs once: the first subscribe names its buckets and the thermostat
    /// uploads whatever the server lacks.
    pub fn boot(&mut self) -> Result<(), SimError> {
        self.register()?;
        self.subscribe_once()?;
        if self.has_pending_changes() {
            self.put()?;
        }
        Ok(())
    }

    fn subscribe_body(&self) -> Vec<u8> {
        let mut keys: BTreeSet<String> = ["device", "shared", "schedule"]
            .iter()
            .map(|k| self.key(k))
            .collect();
        keys.extend(self.versions.keys().cloned());
        let objects: Vec<Value> = keys
            .iter()
            .map(|k| {
                let v = self.versions.get(k).copied().unwrap_or_default();
                json!({"object_key": k, "object_revision": v.revision, "object_timestamp": v.timestamp})
            })
            .collect();
        serde_json::to_vec(&json!({"chunked": true, "session": self.session, "objects": objects}))
            .unwrap_or_default()
    }

    /// Opens a chunked subscribe and waits for its head.
    pub fn open_subscribe(&mut self) -> Result<Held, SimError> {
        let url = {
            let t = &self.urls()?.transport;
            t.with_target(&format!("{}/v7/subscribe", t.target.trim_end_matches('/')))
        };
        let body = self.subscribe_body();
        let stream = ChunkStream::open(
            &url,
            "POST",
            &self.transport_headers(),
            &body,
            self.opts.timeout,
            false,
        )?;
        if stream.status != 200 {
            let mut s = stream;
            let text = s.next_chunk().ok().flatten().unwrap_or_default();
            return Err(protocol(format!(
                "subscribe answered {}: {}",
                s.status,
                String::from_utf8_lossy(&text)
            )));
        }
        if let Some(secs) = stream
            .header("X-nl-suspend-time-max")
            .and_then(|v| v.parse().ok())
        {
            self.suspend_max = Duration::from_secs(secs);
        }
        // A held subscribe must end before the suspend maximum; give the server a margin.
        stream.set_read_timeout(Some(self.suspend_max + Duration::from_secs(15)))?;
        self.emit(Event::Held);
        Ok(Held { stream, chunks: 0 })
    }

    /// One whole subscribe: open it, apply every chunk, return when the server ends it.
    pub fn subscribe_once(&mut self) -> Result<usize, SimError> {
        let mut held = self.open_subscribe()?;
        while let Some(chunk) = held.next_chunk()? {
            self.apply_chunk(&chunk)?;
        }
        self.emit(Event::SubscribeEnded {
            chunks: held.chunks,
        });
        Ok(held.chunks)
    }

    /// Applies one pushed chunk (`{"objects":[...]}`), then sends whatever it calls for
    /// (an acknowledgement, an upload) on a separate connection. Returns the keys applied.
    pub fn apply_chunk(&mut self, chunk: &[u8]) -> Result<Vec<String>, SimError> {
        let doc: Value = serde_json::from_slice(chunk)
            .map_err(|e| protocol(format!("chunk is not one JSON document: {e}")))?;
        let objects = doc
            .get("objects")
            .and_then(Value::as_array)
            .ok_or_else(|| protocol("chunk has no objects array"))?;
        let mut applied = Vec::new();
        for obj in objects.iter().filter_map(Value::as_object) {
            let key = obj
                .get("object_key")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if self.opts.strict_key_order && !key_order_ok(obj) {
                self.emit(Event::RejectedOrder {
                    key,
                    text: Value::Object(obj.clone()).to_string(),
                });
                continue;
            }
            let pushed = Version::of(obj);
            let value = obj
                .get("value")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            if pushed.timestamp == 0 {
                // The server has nothing for this bucket: upload ours, if it is ours.
                if self.local.contains_key(&key) {
                    self.full_upload.insert(key.clone());
                }
                self.versions.entry(key).or_default();
                continue;
            }
            if let Some(why) = self.staleness(&key, pushed) {
                self.emit(Event::Ignored {
                    key,
                    timestamp: pushed.timestamp,
                    why,
                });
                continue;
            }
            if self.opts.ignore_pushes {
                self.versions.insert(key.clone(), pushed);
                self.emit(Event::Ignored {
                    key,
                    timestamp: pushed.timestamp,
                    why: "ignoring pushes",
                });
                continue;
            }
            let entry = self.local.entry(key.clone()).or_default();
            for (k, v) in &value {
                entry.insert(k.clone(), v.clone());
            }
            self.versions.insert(key.clone(), pushed);
            if let Some(fields) = self.dirty.get_mut(&key) {
                fields.retain(|f| !value.contains_key(f));
            }
            self.dirty.retain(|_, f| !f.is_empty());
            self.emit(Event::Pushed {
                key: key.clone(),
                revision: pushed.revision,
                timestamp: pushed.timestamp,
                fields: value.keys().cloned().collect(),
            });
            if key.starts_with("user.") {
                if let Some(user) = value.get("name").and_then(Value::as_str) {
                    if !user.is_empty() {
                        self.emit(Event::Paired {
                            user: user.to_string(),
                        });
                    }
                }
            }
            // The display lights only for a setpoint pushed with target_change_pending; the
            // thermostat then acknowledges it.
            if key == self.key("shared")
                && value.get("target_change_pending") == Some(&Value::Bool(true))
            {
                self.set_local(&key, "target_change_pending", Value::Bool(false), false);
                self.acknowledging.insert(key.clone());
            }
            applied.push(key);
        }
        if self.has_pending_changes() {
            self.put()?;
        }
        Ok(applied)
    }

    /// Why a pushed version is not newer than ours, if it is not.
    fn staleness(&self, key: &str, pushed: Version) -> Option<&'static str> {
        let ours = self.versions.get(key).filter(|v| v.timestamp != 0)?;
        if pushed.timestamp < ours.timestamp {
            Some("older than ours")
        } else if pushed.timestamp > ours.timestamp {
            None
        } else if self.opts.equal_timestamp_in_sync || pushed.revision <= ours.revision {
            Some("same timestamp")
        } else {
            None
        }
    }

    fn set_local(&mut self, key: &str, field: &str, value: Value, by_user: bool) {
        self.local
            .entry(key.to_string())
            .or_default()
            .insert(field.to_string(), value);
        self.dirty
            .entry(key.to_string())
            .or_default()
            .insert(field.to_string());
        if by_user {
            self.user_edits.insert(key.to_string());
        }
    }

    /// The user turns the dial: a new setpoint, written with `if_object_revision`.
    pub fn turn_dial(&mut self, target: f64) {
        let key = self.key("shared");
        self.set_local(&key, "target_temperature", json!(target), true);
    }

    /// The thermostat itself changes a field of one of its buckets (`kind` is `shared`,
    /// `device` or `schedule`): a sensor reading, the HVAC relays, or its initial setup before
    /// [`Thermostat::boot`]. Uploaded by the next [`Thermostat::put`].
    pub fn report(&mut self, kind: &str, field: &str, value: Value) {
        let key = self.key(kind);
        if self.local.get(&key).and_then(|b| b.get(field)) != Some(&value) {
            self.set_local(&key, field, value, false);
        }
    }

    /// Whether [`Thermostat::boot`] has succeeded (and no error has reset it since).
    pub fn is_registered(&self) -> bool {
        self.urls.is_some()
    }

    /// Forgets the server's URLs after an error, so the next step boots afresh.
    pub fn reset(&mut self) {
        self.urls = None;
    }

    /// A sensor reading changes a little.
    pub fn drift(&mut self) {
        let key = self.key("shared");
        let now = self
            .local
            .get(&key)
            .and_then(|v| v.get("current_temperature"))
            .and_then(Value::as_f64)
            .unwrap_or(20.5);
        let next = if now >= 22.0 {
            19.5
        } else {
            ((now + 0.1) * 10.0).round() / 10.0
        };
        self.set_local(&key, "current_temperature", json!(next), false);
    }

    /// Uploads pending changes (everything, for buckets marked for a full upload), retrying a
    /// CAS conflict with the server's revision.
    pub fn put(&mut self) -> Result<(), SimError> {
        for _ in 0..=CAS_RETRIES {
            if !self.has_pending_changes() {
                return Ok(());
            }
            let conflicts = self.put_once()?;
            if conflicts == 0 {
                return Ok(());
            }
        }
        Err(protocol("CAS conflicts persisted after retries"))
    }

    /// One PUT; returns how many objects hit a CAS conflict.
    fn put_once(&mut self) -> Result<usize, SimError> {
        let full = !self.full_upload.is_empty();
        let sent = self.pending_objects();
        if sent.is_empty() {
            self.full_upload.clear();
            self.dirty.clear();
            return Ok(0);
        }
        let (answer, arrived_after) = self.send_put(&sent)?;
        let receipts: Vec<&JsonMap> = answer
            .get("objects")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_object).collect())
            .unwrap_or_default();
        let mut conflicts = 0;
        let mut uploaded = Vec::new();
        for object in sent {
            let Some(receipt) = receipts
                .iter()
                .find(|o| o.get("object_key").and_then(Value::as_str) == Some(&object.key))
            else {
                if !receipts.is_empty() {
                    self.emit(Event::Problem(format!("no receipt for {}", object.key)));
                }
                continue;
            };
            let key = object.key.clone();
            if self.apply_receipt(object, receipt, arrived_after) {
                uploaded.push(key);
            } else {
                conflicts += 1;
            }
        }
        if !uploaded.is_empty() {
            self.emit(Event::Uploaded {
                keys: uploaded,
                full,
            });
        }
        Ok(conflicts)
    }

    /// What the next PUT sends, in the firmware's order of buckets (schedule, shared, device,
    /// then any others): every field of a bucket marked for a full upload, else its changed
    /// fields; a bucket the user changed is written with `if_object_revision` (CAS).
    fn pending_objects(&self) -> Vec<PutObject> {
        let rank = |k: &str| {
            ["schedule.", "shared.", "device."]
                .iter()
                .position(|p| k.starts_with(p))
                .unwrap_or(3)
        };
        let mut keys: Vec<String> = self
            .full_upload
            .iter()
            .chain(self.dirty.keys())
            .cloned()
            .collect();
        keys.sort_by_key(|k| (rank(k), k.clone()));
        keys.dedup();
        let mut objects = Vec::new();
        for key in keys {
            let local = self.local.get(&key).cloned().unwrap_or_default();
            let value: JsonMap = if self.full_upload.contains(&key) {
                local
            } else {
                let fields = self.dirty.get(&key).cloned().unwrap_or_default();
                local
                    .into_iter()
                    .filter(|(k, _)| fields.contains(k))
                    .collect()
            };
            if value.is_empty() {
                continue;
            }
            objects.push(PutObject {
                revision: self.versions.get(&key).map_or(0, |v| v.revision),
                cas: self.user_edits.contains(&key),
                key,
                value,
            });
        }
        objects
    }

    /// `POST <transport>/v7/put` with `objects`: the answer (200 only), and a lower bound (on
    /// the server's clock) for when the request arrived, if the server sent its time.
    fn send_put(&self, objects: &[PutObject]) -> Result<(Value, Option<i64>), SimError> {
        let url = {
            let t = &self.urls()?.transport;
            t.with_target(&format!("{}/v7/put", t.target.trim_end_matches('/')))
        };
        let objects: Vec<Value> = objects.iter().map(PutObject::to_json).collect();
        let body = serde_json::to_vec(&json!({"session": self.session, "objects": objects}))
            .unwrap_or_default();
        let request_started = Stopwatch::start();
        let r = self.send(&url, "POST", &self.transport_headers(), &body)?;
        // A lower bound (on the server's clock) for when this request arrived: the answer's
        // service timestamp minus the round trip. A write the server accepted is stamped at or
        // after it; a conflict answers the server's older stamp.
        let rtt_ms = i64::try_from(request_started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let arrived_after = r
            .header("X-nl-service-timestamp")
            .and_then(|v| v.parse::<i64>().ok())
            .map(|t| t.saturating_sub(rtt_ms + 1));
        if r.status != 200 {
            return Err(protocol(format!("put answered {}: {}", r.status, r.text())));
        }
        Ok((r.json(), arrived_after))
    }

    /// Takes the server's receipt for one object it was sent: false for a CAS conflict (the
    /// object stays pending, to be retried with the server's revision), true once accepted.
    fn apply_receipt(
        &mut self,
        sent: PutObject,
        receipt: &JsonMap,
        arrived_after: Option<i64>,
    ) -> bool {
        let PutObject {
            key,
            cas,
            revision: sent_rev,
            value,
        } = sent;
        let got = Version::of(receipt);
        if let Some(echo) = receipt.get("value").and_then(Value::as_object) {
            // Real firmware applies it as authoritative, clobbering local edits.
            self.emit(Event::PutEcho { key: key.clone() });
            let entry = self.local.entry(key.clone()).or_default();
            for (k, v) in echo {
                entry.insert(k.clone(), v.clone());
            }
        }
        // A conditional write succeeded if the revision is unchanged (nothing to write) or
        // one up with a fresh stamp. Anything else is the server's own newer copy: a
        // conflict. (The protocol gives no explicit flag; this is the best a client can do.)
        let fresh = arrived_after.is_none_or(|t| got.timestamp >= t);
        let accepted = got.revision == sent_rev || (got.revision == sent_rev + 1 && fresh);
        if cas && !accepted {
            self.emit(Event::CasConflict {
                key: key.clone(),
                server_revision: got.revision,
            });
            self.versions.entry(key).or_default().revision = got.revision;
            return false;
        }
        self.versions.insert(key.clone(), got);
        self.full_upload.remove(&key);
        if let Some(fields) = self.dirty.get_mut(&key) {
            fields.retain(|f| !value.contains_key(f));
        }
        self.dirty.retain(|_, f| !f.is_empty());
        self.user_edits.remove(&key);
        if self.acknowledging.remove(&key) {
            self.emit(Event::Acknowledged { key: key.clone() });
        }
        true
    }

    /// Runs until `keep_going` says stop: register, sync, then hold subscribes back to back,
    /// uploading sensor drift every `drift_every` between them. Errors are reported and
    /// retried after a pause, as a real thermostat backs off.
    pub fn run(&mut self, keep_going: &dyn Fn() -> bool, drift_every: Option<Duration>) {
        // A thermostat of its own, outside the server: the system clock.
        let clock = Clock::system();
        let mut last_drift = clock.now();
        while keep_going() {
            let step = (|| -> Result<(), SimError> {
                if self.urls.is_none() {
                    self.boot()?;
                }
                if let Some(every) = drift_every {
                    if clock.now() - last_drift >= every {
                        last_drift = clock.now();
                        self.drift();
                    }
                }
                if self.has_pending_changes() {
                    self.put()?;
                }
                self.subscribe_once().map(|_| ())
            })();
            if let Err(e) = step {
                self.emit(Event::Problem(e.to_string()));
                self.urls = None;
                std::thread::sleep(Duration::from_secs(2));
            }
        }
    }
}

/// `object_revision` and `object_timestamp` both present and before `object_key`.
fn key_order_ok(obj: &JsonMap) -> bool {
    let position = |name: &str| obj.keys().position(|k| k == name);
    match (
        position("object_revision"),
        position("object_timestamp"),
        position("object_key"),
    ) {
        (Some(r), Some(t), Some(k)) => r < k && t < k,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_check_follows_document_order() {
        let good: JsonMap = serde_json::from_str(
            r#"{"object_revision":1,"object_timestamp":2,"object_key":"k","value":{}}"#,
        )
        .unwrap();
        let bad: JsonMap = serde_json::from_str(
            r#"{"object_key":"k","object_revision":1,"object_timestamp":2,"value":{}}"#,
        )
        .unwrap();
        assert!(key_order_ok(&good));
        assert!(!key_order_ok(&bad));
    }
}
