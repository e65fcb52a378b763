//! Every way an account operation can fail. Each surface maps these to its own wire shape
//! (the control API keeps the Python server's claim messages; the CLI prints the text).

use std::fmt;

use crate::store::StoreError;

#[derive(Debug)]
pub enum AccountsError {
    InvalidUserName,
    UnknownUser(String),
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
    /// Unlinking, in open mode, a thermostat nobody claimed: it belongs to the default user by
    /// rule and would stay theirs.
    OpenModeOwner(String),
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
            AccountsError::OpenModeOwner(s) => write!(
                f,
                "Device {s} belongs to the default user because nobody claimed it (open mode); \
                 it cannot be unlinked from that user. Claim it for another user, or turn on \
                 REQUIRE_DEVICE_PAIRING"
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
