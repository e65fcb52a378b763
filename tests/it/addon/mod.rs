//! The Home Assistant add-on: its folder against the Supervisor's rules and hearth's settings,
//! what hearth asks the Supervisor, and the image run the way Home Assistant runs it.

mod container;
mod fake_supervisor;
mod form;
mod healthcheck;
mod image;
mod linter;
mod manifest;
mod repository;
mod startup;
mod supervisor;
