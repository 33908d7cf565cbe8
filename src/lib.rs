//! perf-tests: measures what a Kafka path costs.
//!
//! Data flows one way, and so do the imports (no module imports one that imports it back):
//!
//! - `cli` parses the command line into plain `settings`, whose one table (`settings::table`)
//!   declares every setting once: its field, flag and variable, help, default, whether it may
//!   vary and whether it changes what is measured; the command line, the Compose variables, the
//!   `matrix`, compare's warnings and the tests all read that table. The settings (a producer's
//!   `rate` among them), the results' `model` and a container's `counters` are plain data that
//!   import no engine, image or process code;
//! - `plan` turns the settings, the `scenario` files and the `compose` files into one resolved
//!   plan (scenarios, steps, Compose project, service closures, images and how each is had) per
//!   combination of the settings a `matrix` varies (a `sweep` is a matrix of rates), after one
//!   validation of each combination (`Settings::validate`, the suite's bounds, the driver's
//!   refusals); its `render` is the dry-run text, its `estimate` the time it will take;
//! - `doctor` checks the host against the plan (the engine, the tools the images still to be
//!   made need, Maven's reach, the disk the broker's log takes) before anything is built;
//! - `runner` realises the plan on the `engine` (the Docker Engine API; the only module that
//!   holds a Docker client), builds what `images` says, and measures each scenario through the
//!   `driver` chosen for the run: drivers supply primitive steps and report typed progress
//!   events, and one measurement flow (`driver::flow`) orders the steps; the native driver runs
//!   them with the in-container `workload`, whose protocol is one type per step, the same type
//!   its library runs from (a step's command line is that type rendered and parsed back);
//!   `ceiling` measures the network on each hop of a scenario's path before it (iperf3),
//!   `resources` samples the containers meanwhile, and `cost` turns their counters read at each
//!   measured phase's edges into what the path costs (with `gc`, each JVM's pauses from its GC
//!   log read at the same edges, and `jvm_threads`, its CPU by kind of thread); a paired run's
//!   two sides (`perf-tests ab`, side B derived from each scenario by `plan::sides`) run through
//!   one flow at once (`driver::flow::measure_pair`), and `pair` compares them pair by pair;
//!   `pr` is the pull-request bot's reading of a request and writing of its answer;
//! - the plain `model` records it returns go to `export` (JSON, text and Markdown tables from
//!   `report` and `table`, SVG charts, the HTML report), written into a `results` directory, which `compare`
//!   reads back through the same types; `metrics` names every metric once for all of them.

pub mod ceiling;
pub mod cli;
pub mod compare;

pub mod compose;
pub mod cost;
pub mod counters;
pub mod cpuset;
pub mod doctor;
pub mod driver;
pub mod engine;
pub mod export;
pub mod gc;
pub mod images;
pub mod jvm_threads;
pub mod machine;
pub mod matrix;
pub mod metrics;
pub mod model;
pub mod pair;
pub mod plan;
pub mod pr;
pub mod profile;
pub mod progress;
pub mod rate;
pub mod report;
pub mod resources;
pub mod results;
pub mod runner;
pub mod scenario;
pub mod settings;
pub mod sizing;
pub mod stats;
pub mod swarm;
pub mod sweep;
pub mod table;
pub mod tls;
pub mod workload;
