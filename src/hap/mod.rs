//! The HomeKit Accessory Protocol's parts that know nothing of thermostats: the accessory's
//! durable identity and pairings ([`identity`]), TLV8 ([`tlv`]), SRP-6a ([`srp`]) and the
//! other primitives ([`crypto`]), the pairing exchanges ([`pair_setup`], [`pair_verify`],
//! [`pairings`]) and the encrypted session framing ([`session`]). Each exchange is a function
//! over state, so it is tested without a socket; the surface that speaks HAP to controllers over
//! the thermostats is [`crate::homekit`].

pub mod crypto;
pub mod identity;
pub mod pair_setup;
pub mod pair_verify;
pub mod pairings;
pub mod session;
pub mod setup_uri;
pub mod srp;
pub mod tlv;

pub use identity::{Identity, IdentityError, Pairing};
