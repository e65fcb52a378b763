//! Every way an account operation can fail. Each surface maps these to its own wire shape
//! (the control API keeps the Python server's claim messages; the CLI prints the text).

use std::fmt;

use crate::store::StoreError;

#[derive(Debug)]
pub enum AccountsError {
    InvalidUserName,
    UnknownUser(String),
    /// As many users or API keys as hearth keeps already (`what`: "users", "API keys").
    TooMany {
        what: &'static str,
        limit: usize,
    },
    /// Removing the default user `owner`, which always exists.
    DefaultUserStays,
    /// Removing a user who owns thermostats: they must be unlinked first.
    UserOwns {
        user: String,
        serials: Vec<String>,
    },
    InvalidSerial(String),
    /// A thermostat the server has never seen (no state and no owner).
    UnknownDevice(String),
    /// An entry code that is not 7 letters and digits.
    CodeFormat,
    /// Unknown, expired or already used entry key.
    CodeNotValid,
    /// The thermostat belongs to another user, who must unlink it first.
    OwnedByOther {
        serial: String,
        owner: String,
    },
    /// Unlinking a thermostat that is not linked (to that user).
    NotLinked(String),
    /// Adopting a thermostat that is not released: `owner` has it.
    NotReleased {
        serial: String,
        owner: String,
    },
    /// Adopting a thermostat with pairing required: only a claim with its entry key links it.
    ClaimRequired(String),
    /// Sharing a thermostat nobody owns (unclaimed with pairing required, or removed): nobody
    /// may see it, so nobody may be given it.
    NoOwner(String),
    /// Sharing a thermostat with the user who owns it.
    ShareWithOwner {
        serial: String,
        user: String,
    },
    NotShared {
        serial: String,
        user: String,
    },
    InvalidAccess(String),
    InvalidScopes(String),
    InvalidExpiry,
    UnknownKey(String),
    /// The kernel's random source could not be read.
    RandomUnavailable,
    Storage(StoreError),
}

impl fmt::Display for AccountsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccountsError::InvalidUserName => write!(
                f,
                "Invalid user name: use 1 to 64 letters, digits, '_', '-', '.' or '@'"
            ),
            AccountsError::UnknownUser(u) => {
                write!(f, "No user named {u} (add it with: hearth users add {u})")
            }
            AccountsError::TooMany { what, limit } => {
                write!(
                    f,
                    "Too many {what}: hearth keeps at most {limit}; remove some first"
                )
            }
            AccountsError::DefaultUserStays => write!(
                f,
                "The default user owner cannot be removed: it always exists"
            ),
            AccountsError::UserOwns { user, serials } => write!(
                f,
                "{user} owns {}; remove those thermostats from {user} first",
                serials.join(", ")
            ),
            AccountsError::InvalidSerial(s) => write!(
                f,
                "Invalid serial {s:?}: expected 10 to 64 letters and digits"
            ),
            AccountsError::UnknownDevice(s) => write!(f, "Device {s} not found"),
            AccountsError::CodeFormat => write!(
                f,
                "Invalid entry code format. Must be exactly 7 alphanumeric characters."
            ),
            AccountsError::CodeNotValid => {
                write!(f, "Invalid, expired, or already claimed entry key")
            }
            AccountsError::OwnedByOther { serial, owner } => write!(
                f,
                "Device {serial} is linked to user {owner}; that user must unlink it before it can be claimed"
            ),
            AccountsError::NotLinked(s) => write!(f, "Device {s} not found"),
            AccountsError::NotReleased { serial, owner } => write!(
                f,
                "Device {serial} is not waiting to be added: it belongs to {owner}"
            ),
            AccountsError::ClaimRequired(s) => write!(
                f,
                "Device {s} cannot be added without its entry code: pairing is required, so \
                 claim it with the entry code shown on the thermostat"
            ),
            AccountsError::NoOwner(s) => write!(
                f,
                "Device {s} has no owner: add it (or claim it with its entry code) before sharing it"
            ),
            AccountsError::ShareWithOwner { serial, user } => {
                write!(
                    f,
                    "{user} owns {serial}; a thermostat is not shared with its owner"
                )
            }
            AccountsError::NotShared { serial, user } => {
                write!(f, "{serial} is not shared with {user}")
            }
            AccountsError::InvalidAccess(a) => {
                write!(f, "Invalid access {a:?}: use read or control")
            }
            AccountsError::InvalidScopes(s) => {
                write!(f, "Invalid scopes {s:?}: use read, write, or read,write")
            }
            AccountsError::InvalidExpiry => {
                write!(
                    f,
                    "Invalid expiry: use a whole number of days from 1 to 3650"
                )
            }
            AccountsError::UnknownKey(id) => write!(f, "No API key with id {id}"),
            AccountsError::RandomUnavailable => {
                write!(f, "The system's random number source is unavailable")
            }
            AccountsError::Storage(e) => write!(f, "Storage unavailable; nothing was saved: {e}"),
        }
    }
}

impl std::error::Error for AccountsError {}

impl From<StoreError> for AccountsError {
    fn from(e: StoreError) -> Self {
        AccountsError::Storage(e)
    }
}
