//! hearth: a self-hosted cloud for Nest Gen1/Gen2 thermostats running No Longer Evil firmware.
//!
//! Map of the crate:
//! - [`server`]: starts and stops everything (two listeners, the hub's notifier, snapshots, the
//!   watchdog); tests start it in-process.
//! - [`device`]: the thermostats' cloud protocol on port 8000.
//! - [`control`]: the control API on port 8082; [`dashboard`]: the page it serves at `/`.
//! - [`state`]: buckets, accounts, and the one mutation path; [`store`]: the durable journal
//!   and snapshots; [`hub`]: held subscribes, pushes and change events; [`events`]: the
//!   control API's live event streams.
//! - [`http`]: the tiny_http edge (handlers are plain functions from a parsed request to a reply).
//! - [`simulator`]: a simulated thermostat, used by tests and `hearth simulate`; [`demo`]:
//!   `hearth demo`, the server with three simulated thermostats in simulated rooms.
//! - [`bench`]: `hearth bench`, the measured figures in the README; [`process`]: a `hearth serve`
//!   child process for it and for tests of the real binary.
//! - [`accounts`]: users, ownership, shares and API keys; [`admin`]: the CLI's account commands
//!   and the running server's admin socket; [`hosted`]: the hosted service's `/api/v1`.
//! - [`thermostat`]: what a thermostat accepts (modes, fan, schedules, bounds), for both APIs.
//! - [`history`]: each thermostat's temperature history on disk (`/api/history`).
//! - [`mqtt`]: state, Home Assistant discovery and command topics on an MQTT broker.
//! - [`config`], [`cli`]: settings and the command line; [`service`]: systemd notifications.

pub mod accounts;
pub mod admin;
pub mod app;
pub mod bench;
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
pub mod thermostat;
pub mod util;
pub mod weather;

pub use config::Config;
pub use server::{Server, StartError};
