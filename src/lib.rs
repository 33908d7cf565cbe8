//! perf-tests: measures what a Kafka path costs.
//!
//! Data flows one way, and so do the imports: the crate is fourteen rooms, each importing only
//! rooms declared before it below (`scripts/house` checks it; docs/design.md has the map):
//!
//! - `settings`: the run's inputs as plain data; one table (`settings::table`) declares every
//!   setting once, and the command line, the Compose variables, the matrix and compare's
//!   warnings all read it;
//! - `accounting`: statistics, and what a container's counters, GC log and threads say a
//!   measured phase cost;
//! - `model`: the results' records (a run's own in `model::run`); with `settings` and
//!   `accounting` the ground floor, which imports no engine, image, file or process code;
//! - `progress`: what the run tells as it goes, as events every room below the command line
//!   emits; the command line installs the one listener that shows them (`present::live`), so
//!   no room below it prints;
//! - `analysis`: the metrics by id, two runs compared metric by metric, a paired run's verdict,
//!   a sweep's climb, a sizing;
//! - `world`: the Docker Engine API (`world::engine`, the only module holding a Docker client),
//!   Compose files, the images built here, a local swarm, certificates, this machine, the
//!   profiler, the network's ceiling and the containers' sampling;
//! - `workload`: the in-container load generator, one parameter type per step;
//! - `present`: every table and chart (a run's report, a comparison's), the files a run writes,
//!   the results directory, and the live view of the run's events;
//! - `scenario`: a suite's scenario files;
//! - `driver`: a measurement's primitive steps and the one flow that orders them;
//! - `plan`: the settings, scenarios and Compose files resolved into one plan per combination,
//!   after one validation;
//! - `runner`: the plan realised and measured;
//! - `compare`: `perf-tests compare` (two results directories read, judged and shown), and the
//!   pull-request bot (`compare::pr`);
//! - `cli`: the command line, and `cli::doctor`'s check of the host against the plan.

pub mod settings;

pub mod accounting;

pub mod model;

pub mod progress;

pub mod analysis;

pub mod world;

pub mod workload;

pub mod present;

pub mod scenario;

pub mod driver;

pub mod plan;

pub mod runner;

pub mod compare;

pub mod cli;
