//! hearth's black-box tests, in one test binary: each module was once a binary of its own,
//! and every one linked the whole crate. One binary links it once and runs every test in one
//! pool (`cargo test --test it transport::` runs one module's tests).
//!
//! Tests in different modules now share a process, so a test that measures the process itself
//! (its threads, descriptors or memory) takes [`common::alone`], and every server or fake a
//! test starts first takes its thread's share of the process ([`common::share_process`]),
//! waiting while such a test runs.

mod common;

mod addon;
mod admission;
mod alerts;
mod alerts_settings;
mod architecture;
mod bad_input;
mod browser;
mod claim;
mod cli_accounts;
mod control_accounts;
mod control_bad_input;
mod control_commands;
mod control_routes;
mod dashboard;
mod demo;
mod device_routes;
mod docs_examples;
mod docs_links;
mod energy;
mod history;
mod homekit_bridge;
mod homekit_controller;
mod homekit_mdns;
mod homekit_pairing;
mod homekit_setup;
mod hosted_api;
mod hosted_lock;
mod hosted_status;
mod hostile_clients;
mod identity;
mod import_nle;
mod limits;
mod live_events;
mod metrics;
mod minted;
mod mqtt;
mod mqtt_alerts;
mod onboarding;
mod outbound;
mod pairing;
mod people;
mod persistence;
mod properties;
mod release;
mod removal;
mod simulator;
mod state_limits;
mod system_service;
mod taken;
mod tls;
mod transport;
mod visibility;
mod weather;
mod workflows;
