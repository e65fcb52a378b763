//! hearth: a self-hosted cloud for Nest Gen1/Gen2 thermostats running No Longer Evil firmware.
//!
//! The library behind two programs: `hearth` ([`cli::main`]) and the developer tools'
//! `hearth-dev` (`src/bin/hearth-dev`). What it offers them and the tests is small: a [`Server`]
//! started from a [`Config`] (in-process, on port 0 in the tests) and stopped with
//! [`Server::shutdown`]; the command line ([`cli`]); and the clock the tests drive
//! ([`util::clock::ManualClock`]).
//!
//! The modules hidden from this page (`#[doc(hidden)]`) are public only because the
//! integration tests and `hearth-dev` reach into them (the simulated thermostat, a child
//! server process, the HTTP client, the store's types); they are not an interface. Everything
//! else is `pub(crate)`. The map of the modules, their layers (checked by
//! `tests/it/architecture.rs`), the threads and the HTTP edge: `docs/architecture.md`. The
//! internals, hidden modules included:
//! `RUSTDOCFLAGS="--cfg hearth_internals" cargo doc --document-private-items`.

// Internal documentation links to crate-private items, read with the command above.
#![allow(rustdoc::private_intra_doc_links)]

#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod accounts;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod admin;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod alerts;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod app;
pub(crate) mod browser;
pub mod cli;
pub mod config;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod control;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod control_port;
pub(crate) mod dashboard;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod demo;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod device;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod energy;
pub(crate) mod events;
#[cfg(feature = "homekit")]
pub mod hap;
pub(crate) mod history;
#[cfg(feature = "homekit")]
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod homekit;
pub(crate) mod hosted;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod http;
pub mod hub;
pub(crate) mod info;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod metrics;
pub(crate) mod migrate;
pub(crate) mod mqtt;
pub(crate) mod onboarding;
pub mod people;
pub(crate) mod presence;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod process;
pub(crate) mod server;
pub(crate) mod service;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod simulator;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod state;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod store;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod supervisor;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod thermostat;
pub mod util;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod weather;
#[cfg_attr(not(hearth_internals), doc(hidden))]
pub mod zone;

pub use config::Config;
pub use server::{Server, StartError};
