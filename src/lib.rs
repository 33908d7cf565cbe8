//! perf-tests: measures what a Kafka path costs.
//!
//! Data flows one way: `settings` + `scenario` discovery produce a `plan`;
//! `runner` realises each planned scenario through `compose` + `engine`, drives
//! the `workload`, and hands plain `model` records to `report` and `results`.

pub mod cli;
pub mod compare;
pub mod compose;
pub mod driver;
pub mod engine;
pub mod export;
pub mod images;
pub mod metrics;
pub mod model;
pub mod plan;
pub mod progress;
pub mod report;
pub mod resources;
pub mod results;
pub mod runner;
pub mod scenario;
pub mod settings;
pub mod stats;
pub mod table;
pub mod tls;
pub mod workload;
