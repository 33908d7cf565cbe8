//! The integration tests, one binary: each module is one area (its name is the first part of
//! every test's name, e.g. `end_to_end::a_stall_shows_in_the_end_to_end_latencies`). One binary
//! links the library and its dependencies once instead of once per area; nextest still runs
//! every test in a process of its own, so no test shares state with another.

mod common;
mod support;

mod ab;
mod backlog;
mod builds;
mod ceiling;
mod cli;
mod clients;
mod cluster;
mod compare;
mod compose;
mod cpuset;
mod docs;
mod duration;
mod e2e;
mod end_to_end;
mod engine;
mod faults;
mod house;
mod images;
mod kroxylicious;
mod kroxylicious_run;
mod latency;
mod matrix;
mod paired;
mod profiles;
mod report;
mod results_files;
mod swarm;
mod tls_path;
mod trust_delay;
mod trust_engine;
mod trust_resources;
mod trust_workflow;
mod workload;
