//! The HomeKit Accessory Protocol's parts that know nothing of thermostats: the accessory's
//! durable identity and pairings ([`identity`]), and (as issue 40 adds them) TLV8, SRP-6a,
//! the pairing exchanges, the encrypted session framing and the setup URI. The surface that
//! speaks HAP to controllers over the thermostats is [`crate::homekit`].

pub mod identity;
pub mod setup_uri;

pub use identity::{Identity, IdentityError, Pairing};
