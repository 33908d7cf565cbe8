//! Run settings: plain data, independent of how they were given (flags, environment, defaults).
//!
//! The names, meanings and defaults follow the reference perf-test script so that a command line
//! such as `TEST=03.* NUM_RECORDS=1e6 perf-tests` means the same thing here. Every setting is
//! one entry of [`table::SETTINGS`]: its variable, help, default, whether it may vary and
//! whether it changes what is measured; the command line, the Compose variables, the matrix and
//! compare all read that one list.

mod parse;
pub mod table;
mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

pub use parse::*;
pub use table::{Lists, Setting, SETTINGS};

/// Largest `WARM_UP_SECONDS_PRE_TEST` accepted: an hour of warm-up per scenario is a mistake.
pub const MAX_WARM_UP_SECONDS_PRE_TEST: u64 = 3600;
/// How much longer than `WARM_UP_SECONDS_PRE_TEST` a warm-up waits for the JIT compilers to go
/// quiet (`WARM_UP_JIT_PERCENT`) before it measures anyway, saying so.
pub const WARM_UP_JIT_LIMIT_SECONDS: u64 = 600;
/// The span over which `WARM_UP_JIT_PERCENT` judges the compilers' share: a round of the
/// warm-up lasts about a second, 10 ms clock ticks make its share coarse, and a compiler
/// thread waits idle between bursts of work, so one quiet round says little.
pub const WARM_UP_JIT_WINDOW_SECONDS: u64 = 10;
/// Largest `REPEAT` accepted.
pub const MAX_REPEAT: u32 = 1000;

/// The most measured phases a paired bring-up may have (`PAIR_PHASES`).
pub const MAX_PAIR_PHASES: u32 = 100;

/// Results written before `PAIR_PHASES` existed measured one phase per bring-up.
fn one() -> u32 {
    1
}
/// Largest `PARTITIONS` accepted.
pub const MAX_PARTITIONS: u32 = 10_000;
/// Largest `TOPICS` accepted: each is created, produced to and deleted on its own.
pub const MAX_TOPICS: u32 = 1000;
/// Largest `PRODUCERS` or `CONSUMERS` accepted: each is a thread of the one workload container.
pub const MAX_CLIENTS: u32 = 64;
/// Most load generators a run spreads its clients over (`LOAD_GENERATORS`).
pub const MAX_LOAD_GENERATORS: u32 = 8;
/// Longest DURATION accepted: 30 days.
pub const MAX_DURATION_S: u64 = 30 * 24 * 3600;
/// `COMMIT_ID` when the suite is not inside a git checkout.
pub const UNKNOWN_COMMIT: &str = "unknown";

/// Largest count accepted: far beyond any sensible run, small enough that products such as
/// records x record size cannot overflow a u64.
pub const MAX_COUNT: u64 = 1_000_000_000_000_000;

/// How a measurement's producer and consumer run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The producer sends every record, then the consumer reads them (the reference's way).
    #[default]
    ProduceThenConsume,
    /// Producer and consumer run at once, and the consumer measures each record's latency from
    /// its send to its receipt.
    EndToEnd,
    /// The group finds a backlog waiting and catches up with it while a producer keeps sending
    /// at `THROUGHPUT`.
    Backlog,
}

impl Mode {
    /// The value as written in `MODE`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Mode::ProduceThenConsume => "produce-then-consume",
            Mode::EndToEnd => "end-to-end",
            Mode::Backlog => "backlog",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where the run's services run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EngineKind {
    /// Containers on the one engine `DOCKER_HOST` reaches.
    #[default]
    Local,
    /// Services on the swarm whose manager `DOCKER_HOST` reaches, placed on its nodes by role.
    Swarm,
}

impl EngineKind {
    /// The value as written in `ENGINE`.
    pub const fn as_str(self) -> &'static str {
        match self {
            EngineKind::Local => "local",
            EngineKind::Swarm => "swarm",
        }
    }
}

/// Parses `MODE`: `produce-then-consume`, `end-to-end` or `backlog`.
pub fn parse_mode(s: &str) -> Result<Mode> {
    match s.trim() {
        "produce-then-consume" => Ok(Mode::ProduceThenConsume),
        "end-to-end" => Ok(Mode::EndToEnd),
        "backlog" => Ok(Mode::Backlog),
        other => bail!(
            "MODE={other:?}: unknown mode (expected produce-then-consume, end-to-end or backlog)"
        ),
    }
}

/// One setting that varies over a run, and its values in the order they were given (each in
/// the setting's canonical form: `1e3` is `1000`). See `crate::matrix`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Axis {
    pub var: String,
    pub values: Vec<String>,
}

/// Everything a run is parameterised by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default = "Settings::without_commit")]
pub struct Settings {
    /// Regular expression selecting scenario directories by their whole name.
    pub test: String,
    /// Records produced and consumed per measurement.
    pub num_records: u64,
    /// Record value size in bytes.
    pub record_size: u64,
    /// Warm-up records sent once the run-wide broker is up.
    pub warm_up_post_broker_start: u64,
    /// Warm-up records sent through each scenario's endpoint before it is measured.
    pub warm_up_pre_test: u64,
    /// The pre-test warm-up goes on, in rounds, for at least this many seconds.
    pub warm_up_seconds_pre_test: u64,
    /// Then on, until the JIT compilers of every sampled JVM used less than this percent of its
    /// CPU in a round (0: no such wait).
    #[serde(default)]
    pub warm_up_jit_percent: u64,
    /// CPUs every service container may run on (a CPU list); empty: not pinned.
    pub services_cpuset: String,
    /// CPUs the load generator's containers may run on; empty: not pinned.
    pub workload_cpuset: String,
    /// Extra producer properties, in the order given.
    pub producer_properties: Vec<(String, String)>,
    /// Producer throughput limit in records/s; -1 is unlimited.
    pub throughput: i64,
    /// Times each scenario is measured, in interleaved rounds.
    pub repeat: u32,
    /// Partitions of each measured topic.
    pub partitions: u32,
    /// Topics the records are spread over (one consumer group reads them all).
    pub topics: u32,
    /// Producers sharing the records and the rate.
    pub producers: u32,
    /// Consumers of the one consumer group, sharing the partitions.
    pub consumers: u32,
    /// Load generators the producers and consumers are spread over, each a workload container
    /// of its own (on a swarm, on the load nodes in turn), their figures merged.
    #[serde(default = "one")]
    pub load_generators: u32,
    /// A rate is sustained (sweeps) only while the producer's p99 stays within this many ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_limit_ms: Option<u64>,
    /// How long a group may take to catch up with its backlog (MODE=backlog), seconds.
    pub catch_up_seconds: u64,
    /// With MODE=end-to-end: produce for this many seconds instead of NUM_RECORDS records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<u64>,
    /// The first seconds of a DURATION run, in its series but not in its figures.
    #[serde(default)]
    pub duration_warm_up: u64,
    /// Commit the measured code is at; names the results directory.
    pub commit_id: String,
    /// Apache Kafka (native) broker image.
    pub kafka_image: String,
    /// Kroxylicious proxy image, or a path to a build of it.
    pub kroxylicious_image: String,
    /// Jars added to a proxy made from a distribution (empty: none).
    #[serde(default)]
    pub kroxylicious_plugins: String,
    /// Kafka tooling image.
    pub kafka_tool_image: String,
    /// KMS image (an AWS KMS API).
    pub kms_image: String,
    /// HashiCorp Vault image.
    pub vault_image: String,
    /// Measured phases of each bring-up of a paired run's sides (the first after the
    /// warm-up, the others right after it).
    #[serde(default = "one")]
    pub pair_phases: u32,
    /// The smallest change of a paired run's B/A, in percent, its verdict calls a
    /// difference; 0 in results written before it existed (any change clear of 1 was one).
    #[serde(default)]
    pub pair_threshold: u64,
    /// What produces and consumes the measured records: a name `crate::driver` registers.
    pub driver: String,
    /// Whether the producer and the consumer run one after the other or at once.
    pub mode: Mode,
    /// Suite directory holding `suite.yaml` and the numbered scenario directories.
    pub scenarios: PathBuf,
    /// Directory the run's results directory is created in.
    pub results_dir: PathBuf,
    /// Whether the network's ceiling on each hop is measured before each scenario
    /// (`crate::ceiling`); results written before it existed did not.
    #[serde(default)]
    pub network_ceiling: bool,
    /// What the JVM services are profiled for over the measured phases (`crate::profile`);
    /// none by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::Mode>,
    /// The services profiled; empty: each scenario's own JVM services (its proxy).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profile_services: Vec<String>,
    /// Where the services run: one engine, or a swarm's nodes.
    #[serde(default)]
    pub engine: EngineKind,
    /// On a swarm: `(service, role)` placements over the defaults (run-wide services on
    /// `broker`, a scenario's own on `proxy`, the load generator, `load`, on `load`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub swarm_roles: Vec<(String, String)>,
    /// On a swarm: the registry (`host[:port][/path]`) the images travel through to the nodes;
    /// none: each node gets them streamed from the manager's engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    /// Settings measured at several values (see `crate::matrix`); the fields above hold each
    /// one's first value. Empty: every setting has one value.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub matrix: Vec<Axis>,
}

impl Default for Settings {
    /// The documented defaults; `commit_id` is detected from the default suite directory.
    fn default() -> Self {
        let defaults = Settings::without_commit();
        Settings {
            commit_id: detect_commit_id(&defaults.scenarios),
            ..defaults
        }
    }
}

impl Settings {
    /// The documented defaults (each entry's default in [`SETTINGS`]) with the commit id
    /// [`UNKNOWN_COMMIT`] (nothing is run to find it).
    pub fn without_commit() -> Self {
        // Parsed once: every value read from the command line starts from these.
        static DEFAULTS: std::sync::LazyLock<Settings> = std::sync::LazyLock::new(|| {
            let mut s = Settings::blank();
            for setting in SETTINGS {
                setting
                    .set(&mut s, setting.default)
                    .unwrap_or_else(|e| panic!("the default of {}: {e:#}", setting.var));
            }
            s.commit_id = UNKNOWN_COMMIT.to_string();
            s
        });
        DEFAULTS.clone()
    }

    /// Every field empty or zero: only what the table's defaults are written over.
    fn blank() -> Self {
        Settings {
            engine: EngineKind::Local,
            swarm_roles: Vec::new(),
            registry: None,
            test: String::new(),
            num_records: 0,
            record_size: 0,
            warm_up_post_broker_start: 0,
            warm_up_pre_test: 0,
            warm_up_seconds_pre_test: 0,
            warm_up_jit_percent: 0,
            services_cpuset: String::new(),
            workload_cpuset: String::new(),
            producer_properties: Vec::new(),
            throughput: 0,
            repeat: 0,
            partitions: 0,
            topics: 0,
            producers: 0,
            consumers: 0,
            load_generators: 1,
            p99_limit_ms: None,
            catch_up_seconds: 0,
            duration: None,
            duration_warm_up: 0,
            commit_id: String::new(),
            kafka_image: String::new(),
            kroxylicious_image: String::new(),
            kroxylicious_plugins: String::new(),
            kafka_tool_image: String::new(),
            kms_image: String::new(),
            pair_phases: 1,
            pair_threshold: 0,
            vault_image: String::new(),
            driver: String::new(),
            mode: Mode::default(),
            scenarios: PathBuf::new(),
            results_dir: PathBuf::new(),
            network_ceiling: false,
            profile: None,
            profile_services: Vec::new(),
            matrix: Vec::new(),
        }
    }

    /// Every setting under its environment-variable name, as Compose interpolation sees them.
    pub fn variables(&self) -> BTreeMap<String, String> {
        SETTINGS
            .iter()
            .map(|s| (s.var.to_string(), s.value(self)))
            .collect()
    }
}

/// `git rev-parse --short HEAD` in `dir` when it is inside a git checkout, else `unknown`.
pub fn detect_commit_id(dir: &Path) -> String {
    // A relative suite directory that does not exist yet still belongs to the current checkout.
    let dir = if dir.is_dir() { dir } else { Path::new(".") };
    let output = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .output();
    match output {
        Ok(out) if out.status.success() => {
            let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if id.is_empty() {
                UNKNOWN_COMMIT.to_string()
            } else {
                id
            }
        }
        _ => UNKNOWN_COMMIT.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_name_every_setting() {
        let s = Settings {
            commit_id: "abc1234".into(),
            producer_properties: parse_properties("acks=1 linger.ms=5").unwrap(),
            ..Settings::default()
        };
        let v = s.variables();
        let mut keys: Vec<&str> = v.keys().map(String::as_str).collect();
        let mut vars: Vec<&str> = SETTINGS.iter().map(|s| s.var).collect();
        keys.sort_unstable();
        vars.sort_unstable();
        assert_eq!(keys, vars);
        assert_eq!(v["PRODUCER_PROPERTIES"], "acks=1 linger.ms=5");
        assert_eq!(v["NUM_RECORDS"], "10000000");
        assert_eq!(v["THROUGHPUT"], "-1");
        assert_eq!(v["COMMIT_ID"], "abc1234");
        assert_eq!(v["SCENARIOS"], "scenarios/kroxylicious");
        assert_eq!(v["DRIVER"], "native");
    }

    #[test]
    fn commit_id_outside_a_checkout_is_unknown() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(detect_commit_id(dir.path()), UNKNOWN_COMMIT);
    }

    #[test]
    fn commit_id_inside_a_checkout_is_the_short_head() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.com")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.com")
                .output()
                .unwrap();
            assert!(ok.status.success(), "git {args:?}: {ok:?}");
            String::from_utf8(ok.stdout).unwrap()
        };
        git(&["init", "-q"]);
        git(&["commit", "-q", "--allow-empty", "-m", "x"]);
        let head = git(&["rev-parse", "--short", "HEAD"]);
        std::fs::create_dir(dir.path().join("suite")).unwrap();
        assert_eq!(detect_commit_id(&dir.path().join("suite")), head.trim());
    }
}
