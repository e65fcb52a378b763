//! hearth: a self-hosted cloud for Nest Gen1/Gen2 thermostats running No Longer Evil firmware.
//!
//! Map of the crate, top to bottom: a module uses only modules on its own line or below, never
//! one that uses it back (`tests/it/architecture.rs` checks that, and that no surface uses
//! another).
//! - [`cli`], [`server`] (starts and stops everything; tests start it in-process), [`demo`],
//!   and [`process`] (a `hearth serve` child process for the tests and for `hearth-dev`, the
//!   developer tools' binary in `src/bin/hearth-dev`, which the `hearth` binary does not
//!   contain).
//! - [`control_port`]: port 8082, where the control API and the hosted API meet.
//! - The surfaces, each one dialect: [`device`] (the thermostats' protocol, port 8000),
//!   [`control`] (the flat control API, with the [`dashboard`] page at `/`), [`hosted`] (the
//!   hosted service's `/api/v1`) and [`mqtt`] (state, Home Assistant discovery, commands).
//! - What surfaces share: [`history`] (temperature history on disk), [`onboarding`] (finding
//!   and pointing thermostats), [`admin`] (the CLI's account and onboarding commands, the admin
//!   socket), [`migrate`] (imports), [`info`]; [`app`], what every handler is given;
//!   [`browser`], what a web page may do with either port.
//! - [`thermostat`]: the core below every surface. The intents a person can express, the one
//!   planner from an intent and a thermostat's view to bucket writes, its refusals, the one
//!   commit, the status and the hosted document every surface shows. [`accounts`]: users,
//!   ownership, shares, keys, and released thermostats.
//! - [`state`] (buckets, accounts and the one mutation path) over [`store`] (the durable
//!   journal and snapshots) and [`hub`] (held subscribes, pushes and change events);
//!   [`events`] (live event streams), [`presence`], [`weather`], [`config`], [`http`] (the
//!   HTTP/1.1 edge, hearth's own: handlers are plain functions from a parsed request to a reply),
//!   [`service`] (systemd), [`supervisor`] (Home Assistant's, for the add-on), [`simulator`] (a simulated thermostat), [`util`].

pub mod accounts;
pub mod admin;
pub mod app;
pub mod browser;
pub mod cli;
pub mod config;
pub mod control;
pub mod control_port;
pub mod dashboard;
pub mod demo;
pub mod device;
pub mod events;
pub mod history;
pub mod hosted;
pub mod http;
pub mod hub;
pub mod info;
pub mod migrate;
pub mod mqtt;
pub mod onboarding;
pub mod presence;
pub mod process;
pub mod server;
pub mod service;
pub mod simulator;
pub mod state;
pub mod store;
pub mod supervisor;
pub mod thermostat;
pub mod util;
pub mod weather;

pub use config::Config;
pub use server::{Server, StartError};
