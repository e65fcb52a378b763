//! The accessory's identity, kept in `DATA_DIR/homekit/accessory.json`: the setup code a
//! person types or scans, the setup id of its setup URI, the device id controllers know it by,
//! its long-term Ed25519 key, the controllers paired with it, and the configuration number of
//! its attribute database. Each change is durable before the call returns
//! ([`crate::util::durable::replace`]), so a pairing acknowledged to a controller survives a
//! power cut.
//!
//! Made on first use. A reset removes every pairing and takes a new device id and key, so a
//! controller that still holds the old pairing sees a different accessory rather than one that
//! refuses it; the setup code stays (the page shows it again). An unlock, the way out of
//! pair-setup's `MaxTries`, clears the count of wrong setup codes and takes a new setup code,
//! keeping everything else.

use std::io;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use crossbeam_channel::{Receiver, Sender, unbounded};
use parking_lot::Mutex;
use ring::signature::{Ed25519KeyPair, KeyPair};
use serde::{Deserialize, Serialize};

use super::pair_setup::MAX_FAILURES;
use crate::util::{durable, random};

/// The file in the HomeKit directory.
const FILE: &str = "accessory.json";
/// Most controllers HAP lets an accessory hold.
pub const MAX_PAIRINGS: usize = 16;

/// Codes HAP forbids: trivial ones a person might guess first.
const FORBIDDEN_CODES: [&str; 12] = [
    "000-00-000",
    "111-11-111",
    "222-22-222",
    "333-33-333",
    "444-44-444",
    "555-55-555",
    "666-66-666",
    "777-77-777",
    "888-88-888",
    "999-99-999",
    "123-45-678",
    "876-54-321",
];

/// A controller paired with the accessory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pairing {
    /// The controller's pairing identifier (HAP's `kTLVType_Identifier`, as sent).
    pub id: String,
    /// Its long-term Ed25519 public key.
    #[serde(with = "b64_32")]
    pub public_key: [u8; 32],
    /// Whether it may add and remove pairings.
    pub admin: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Stored {
    setup_code: String,
    setup_id: String,
    device_id: String,
    /// PKCS#8 of the long-term Ed25519 key, Base64.
    signing_key: String,
    pairings: Vec<Pairing>,
    config_number: u32,
    /// What the attribute database looked like when `config_number` was last counted.
    config_fingerprint: u64,
    /// Wrong setup codes since the last pairing or reset: kept, so a restart does not give a
    /// guesser another hundred tries (pair-setup refuses them after
    /// [`super::pair_setup::MAX_FAILURES`]).
    #[serde(default)]
    setup_failures: u32,
}

#[derive(Debug)]
pub enum IdentityError {
    Io(io::Error),
    /// The file is there but is not an identity: named, never overwritten.
    Corrupt(PathBuf, String),
    /// The pairing list is full ([`MAX_PAIRINGS`]).
    Full,
    /// An unlock while pair-setup is not locked: the wrong setup codes counted so far.
    NotLocked(u32),
}

impl std::fmt::Display for IdentityError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IdentityError::Io(e) => write!(f, "{e}"),
            IdentityError::Corrupt(path, why) => {
                write!(f, "{} is not a HomeKit identity: {why}", path.display())
            }
            IdentityError::Full => write!(f, "{MAX_PAIRINGS} controllers are paired already"),
            IdentityError::NotLocked(failures) => write!(
                f,
                "HomeKit pairing is not locked ({failures} wrong setup code{} of {MAX_FAILURES}): \
                 nothing to unlock",
                if *failures == 1 { "" } else { "s" }
            ),
        }
    }
}

impl std::error::Error for IdentityError {}

impl From<io::Error> for IdentityError {
    fn from(e: io::Error) -> Self {
        IdentityError::Io(e)
    }
}

/// The accessory's identity, shared by the HAP listener, the advertisement, the page and the CLI.
pub struct Identity {
    dir: PathBuf,
    stored: Mutex<Stored>,
    watchers: Mutex<Vec<Sender<()>>>,
}

impl Identity {
    /// Reads `dir/accessory.json`, or makes a new identity there (durably) if there is none.
    pub fn open(dir: &Path) -> Result<Identity, IdentityError> {
        let path = dir.join(FILE);
        let stored = match std::fs::read(&path) {
            Ok(bytes) => {
                let stored: Stored = serde_json::from_slice(&bytes)
                    .map_err(|e| IdentityError::Corrupt(path.clone(), e.to_string()))?;
                signing_pair(&stored.signing_key)
                    .map_err(|why| IdentityError::Corrupt(path.clone(), why))?;
                stored
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let stored = Stored {
                    setup_code: new_setup_code()?,
                    setup_id: new_setup_id()?,
                    device_id: new_device_id()?,
                    signing_key: new_signing_key()?,
                    pairings: Vec::new(),
                    config_number: 1,
                    config_fingerprint: 0,
                    setup_failures: 0,
                };
                save(dir, &stored)?;
                stored
            }
            Err(e) => return Err(e.into()),
        };
        Ok(Identity {
            dir: dir.to_path_buf(),
            stored: Mutex::new(stored),
            watchers: Mutex::new(Vec::new()),
        })
    }

    /// `XXX-XX-XXX`, digits.
    pub fn setup_code(&self) -> String {
        self.stored.lock().setup_code.clone()
    }

    /// Four characters `0-9A-Z`, the end of the setup URI (and of the advertisement's hash).
    pub fn setup_id(&self) -> String {
        self.stored.lock().setup_id.clone()
    }

    /// `AA:BB:CC:DD:EE:FF`: the accessory's pairing identifier and the advertisement's `id`.
    pub fn device_id(&self) -> String {
        self.stored.lock().device_id.clone()
    }

    /// The long-term key pair that signs the accessory's side of pair-setup and pair-verify.
    pub fn signing_key(&self) -> Result<Ed25519KeyPair, IdentityError> {
        let stored = self.stored.lock();
        signing_pair(&stored.signing_key)
            .map_err(|why| IdentityError::Corrupt(self.dir.join(FILE), why))
    }

    pub fn pairings(&self) -> Vec<Pairing> {
        self.stored.lock().pairings.clone()
    }

    pub fn pairing(&self, id: &str) -> Option<Pairing> {
        self.stored
            .lock()
            .pairings
            .iter()
            .find(|p| p.id == id)
            .cloned()
    }

    pub fn is_paired(&self) -> bool {
        !self.stored.lock().pairings.is_empty()
    }

    /// Adds a pairing, or updates the admin flag of one with the same id and key (HAP's "add
    /// pairing" of a known controller). Durable before it returns.
    pub fn add_pairing(&self, pairing: Pairing) -> Result<(), IdentityError> {
        self.change(|s| {
            let full = s.pairings.len() >= MAX_PAIRINGS;
            match s.pairings.iter_mut().find(|p| p.id == pairing.id) {
                Some(known) => *known = pairing,
                None if full => return Err(IdentityError::Full),
                None => s.pairings.push(pairing),
            }
            s.setup_failures = 0;
            Ok(())
        })
    }

    /// Removes a pairing; `false` if there was none with that id.
    pub fn remove_pairing(&self, id: &str) -> Result<bool, IdentityError> {
        let mut removed = false;
        self.change(|s| {
            let before = s.pairings.len();
            s.pairings.retain(|p| p.id != id);
            removed = s.pairings.len() != before;
            Ok(())
        })?;
        Ok(removed)
    }

    /// Removes every pairing and takes a new device id and key (the setup code stays).
    pub fn reset(&self) -> Result<(), IdentityError> {
        let (device_id, signing_key) = (new_device_id()?, new_signing_key()?);
        self.change(|s| {
            s.pairings.clear();
            s.device_id = device_id;
            s.signing_key = signing_key;
            s.config_number = 1;
            s.config_fingerprint = 0;
            s.setup_failures = 0;
            Ok(())
        })
    }

    /// Wrong setup codes since the last pairing or reset.
    pub fn setup_failures(&self) -> u32 {
        self.stored.lock().setup_failures
    }

    /// Whether pair-setup is locked: [`MAX_FAILURES`] wrong setup codes counted, so every
    /// pair-setup is refused (`MaxTries`) until [`Identity::unlock`] (or [`Identity::reset`]).
    /// The one place that decides it, for pair-setup, the page and the command line.
    pub fn is_locked(&self) -> bool {
        self.stored.lock().setup_failures >= MAX_FAILURES
    }

    /// Unlocks pair-setup: clears the count of wrong setup codes and takes a new setup code (so
    /// whoever was guessing starts again from nothing), durably; the pairings, device id and key
    /// stay. Refused, changing nothing, when pair-setup is not locked. The new code.
    pub fn unlock(&self) -> Result<String, IdentityError> {
        let mut code = String::new();
        self.change(|s| {
            if s.setup_failures < MAX_FAILURES {
                return Err(IdentityError::NotLocked(s.setup_failures));
            }
            code = new_setup_code()?;
            while code == s.setup_code {
                code = new_setup_code()?;
            }
            s.setup_failures = 0;
            s.setup_code = code.clone();
            Ok(())
        })?;
        Ok(code)
    }

    /// The identity's file, for error messages.
    pub fn file(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    /// Counts one more wrong setup code, durably; the count after it.
    pub fn count_setup_failure(&self) -> Result<u32, IdentityError> {
        let mut count = 0;
        self.change(|s| {
            s.setup_failures = s.setup_failures.saturating_add(1);
            count = s.setup_failures;
            Ok(())
        })?;
        Ok(count)
    }

    /// The configuration number for an attribute database whose shape is `fingerprint`: the
    /// same number while the shape stays, one more (wrapping 65535 → 1, as HAP's `c#` does)
    /// and stored durably when it changes.
    pub fn config_number(&self, fingerprint: u64) -> Result<u32, IdentityError> {
        {
            let s = self.stored.lock();
            if s.config_fingerprint == fingerprint {
                return Ok(s.config_number);
            }
        }
        let mut number = 0;
        self.change(|s| {
            if s.config_fingerprint != fingerprint {
                s.config_number = if s.config_number >= 65535 {
                    1
                } else {
                    s.config_number + 1
                };
                s.config_fingerprint = fingerprint;
            }
            number = s.config_number;
            Ok(())
        })?;
        Ok(number)
    }

    /// Receives `()` after each change (pairings, reset, configuration number): the
    /// advertisement follows it.
    pub fn watch(&self) -> Receiver<()> {
        let (tx, rx) = unbounded();
        self.watchers.lock().push(tx);
        rx
    }

    /// Applies `edit` to a copy, stores the copy, then makes it current: a failed write
    /// changes nothing.
    fn change(
        &self,
        edit: impl FnOnce(&mut Stored) -> Result<(), IdentityError>,
    ) -> Result<(), IdentityError> {
        let mut stored = self.stored.lock();
        let mut next = stored.clone();
        edit(&mut next)?;
        save(&self.dir, &next)?;
        *stored = next;
        drop(stored);
        self.watchers.lock().retain(|w| w.send(()).is_ok());
        Ok(())
    }
}

fn save(dir: &Path, stored: &Stored) -> io::Result<()> {
    let bytes = serde_json::to_vec_pretty(stored).map_err(io::Error::other)?;
    durable::replace(dir, FILE, &bytes)
}

fn signing_pair(pkcs8_b64: &str) -> Result<Ed25519KeyPair, String> {
    let der = STANDARD
        .decode(pkcs8_b64)
        .map_err(|e| format!("signing_key: {e}"))?;
    Ed25519KeyPair::from_pkcs8(&der).map_err(|e| format!("signing_key: {e}"))
}

fn new_signing_key() -> io::Result<String> {
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&ring::rand::SystemRandom::new())
        .map_err(|_| io::Error::other("no randomness for a key"))?;
    Ok(STANDARD.encode(pkcs8.as_ref()))
}

/// The public half of the long-term key, as pair-setup's M6 and pair-verify send it.
pub fn public_key(pair: &Ed25519KeyPair) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(pair.public_key().as_ref());
    out
}

fn new_setup_code() -> io::Result<String> {
    loop {
        let n = random::below(100_000_000)?;
        let digits = format!("{n:08}");
        let code = format!("{}-{}-{}", &digits[..3], &digits[3..5], &digits[5..]);
        if !FORBIDDEN_CODES.contains(&code.as_str()) {
            return Ok(code);
        }
    }
}

fn new_setup_id() -> io::Result<String> {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    (0..4)
        .map(|_| random::below(36).map(|i| char::from(ALPHABET[i as usize])))
        .collect()
}

fn new_device_id() -> io::Result<String> {
    let mut b = [0u8; 6];
    random::fill(&mut b)?;
    Ok(b.iter()
        .map(|x| format!("{x:02X}"))
        .collect::<Vec<_>>()
        .join(":"))
}

mod b64_32 {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(key: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(key))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
        let text = String::deserialize(d)?;
        let bytes = STANDARD.decode(text).map_err(D::Error::custom)?;
        bytes
            .try_into()
            .map_err(|_| D::Error::custom("a public key is 32 bytes"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("hearth-hap-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn controller(id: &str) -> Pairing {
        Pairing {
            id: id.to_string(),
            public_key: [7; 32],
            admin: true,
        }
    }

    #[test]
    fn made_once_then_read_back() {
        let dir = temp_dir("once");
        let first = Identity::open(&dir).unwrap();
        let code = first.setup_code();
        assert_eq!(code.len(), 10);
        assert!(code.chars().enumerate().all(|(i, c)| if i == 3 || i == 6 {
            c == '-'
        } else {
            c.is_ascii_digit()
        }));
        assert!(!FORBIDDEN_CODES.contains(&code.as_str()));
        assert_eq!(first.setup_id().len(), 4);
        assert_eq!(first.device_id().len(), 17);
        first.add_pairing(controller("ctl")).unwrap();
        let again = Identity::open(&dir).unwrap();
        assert_eq!(again.setup_code(), code);
        assert_eq!(again.device_id(), first.device_id());
        assert_eq!(again.pairings(), vec![controller("ctl")]);
        assert_eq!(
            public_key(&again.signing_key().unwrap()),
            public_key(&first.signing_key().unwrap())
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn reset_forgets_controllers_and_takes_a_new_device_id() {
        let dir = temp_dir("reset");
        let id = Identity::open(&dir).unwrap();
        let changes = id.watch();
        id.add_pairing(controller("a")).unwrap();
        assert!(id.is_paired());
        let (old_device, code) = (id.device_id(), id.setup_code());
        id.reset().unwrap();
        assert!(!id.is_paired());
        assert_ne!(id.device_id(), old_device);
        assert_eq!(id.setup_code(), code);
        assert_eq!(changes.try_iter().count(), 2);
        let again = Identity::open(&dir).unwrap();
        assert!(!again.is_paired());
        assert_eq!(again.device_id(), id.device_id());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn config_number_moves_only_when_the_shape_does() {
        let dir = temp_dir("config");
        let id = Identity::open(&dir).unwrap();
        let n = id.config_number(42).unwrap();
        assert_eq!(id.config_number(42).unwrap(), n);
        assert_eq!(id.config_number(43).unwrap(), n + 1);
        assert_eq!(
            Identity::open(&dir).unwrap().config_number(43).unwrap(),
            n + 1
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn pairings_are_bounded_and_removable() {
        let dir = temp_dir("bounded");
        let id = Identity::open(&dir).unwrap();
        for i in 0..MAX_PAIRINGS {
            id.add_pairing(controller(&format!("c{i}"))).unwrap();
        }
        assert!(matches!(
            id.add_pairing(controller("one-more")),
            Err(IdentityError::Full)
        ));
        // A known controller is updated, not refused.
        let mut c0 = controller("c0");
        c0.admin = false;
        id.add_pairing(c0.clone()).unwrap();
        assert_eq!(id.pairing("c0"), Some(c0));
        assert!(id.remove_pairing("c3").unwrap());
        assert!(!id.remove_pairing("c3").unwrap());
        assert_eq!(id.pairings().len(), MAX_PAIRINGS - 1);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_corrupt_file_is_named_and_kept() {
        let dir = temp_dir("corrupt");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(FILE), b"{not json").unwrap();
        let err = Identity::open(&dir).err().unwrap();
        assert!(err.to_string().contains("accessory.json"), "{err}");
        assert_eq!(std::fs::read(dir.join(FILE)).unwrap(), b"{not json");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
