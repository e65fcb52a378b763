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
//! `tests/architecture.rs`), the threads and the HTTP edge: `docs/architecture.md`; read the
//! internals with `cargo doc --document-private-items`.

// Internal documentation links to crate-private items, read with `--document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

#[doc(hidden)]
pub mod accounts;
#[doc(hidden)]
pub mod admin;
#[doc(hidden)]
pub mod app;
pub(crate) mod browser;
pub mod cli;
pub mod config;
#[doc(hidden)]
pub mod control;
#[doc(hidden)]
pub mod control_port;
pub(crate) mod dashboard;
#[doc(hidden)]
pub mod demo;
#[doc(hidden)]
pub mod device;
pub(crate) mod events;
pub(crate) mod history;
pub(crate) mod hosted;
#[doc(hidden)]
pub mod http;
#[doc(hidden)]
pub mod hub;
pub(crate) mod info;
pub(crate) mod migrate;
pub(crate) mod mqtt;
pub(crate) mod onboarding;
pub(crate) mod presence;
#[doc(hidden)]
pub mod process;
pub(crate) mod server;
pub(crate) mod service;
#[doc(hidden)]
pub mod simulator;
#[doc(hidden)]
pub mod state;
#[doc(hidden)]
pub mod store;
#[doc(hidden)]
pub mod supervisor;
#[doc(hidden)]
pub mod thermostat;
pub mod util;
#[doc(hidden)]
pub mod weather;

pub use config::Config;
pub use server::{Server, StartError};
