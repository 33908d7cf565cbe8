//! The settings: the record a run is parameterised by ([`Settings`]) and the one list of them
//! ([`SETTINGS`]). Each entry says everything about one setting: its variable (the flag is the
//! same name in lower case with dashes), its help, its default, whether it may take a list of
//! values, whether it changes what is measured, and how its text is read into its field and
//! written back. The command line, the Compose variables, the matrix, compare's warnings and the
//! tests' clean environment are all derived from [`SETTINGS`]; a new setting is a field, its
//! zero in `blank`, and an entry, all here.

use std::time::Duration;

use std::path::PathBuf;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use super::parse::*;
use super::{Axis, EngineKind, Mode, ProfileMode};
use crate::settings::rate::Rate;

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
    /// The pre-test warm-up goes on, in rounds, for at least this long.
    #[serde(rename = "warm_up_seconds_pre_test", with = "super::whole_seconds")]
    pub warm_up_for_pre_test: Duration,
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
    /// Producer throughput limit.
    pub throughput: Rate,
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
    #[serde(default = "super::one")]
    pub load_generators: u32,
    /// Brokers of the run-wide cluster: the first this many of the suite's `brokers`.
    #[serde(default = "super::one")]
    pub brokers: u32,
    /// Replicas of each measured topic's partitions.
    #[serde(default = "super::one")]
    pub replication_factor: u32,
    /// `min.insync.replicas` of each measured topic.
    #[serde(default = "super::one")]
    pub min_insync_replicas: u32,
    /// A rate is sustained (sweeps) only while the producer's p99 stays within this many ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_limit_ms: Option<u64>,
    /// How long a group may take to catch up with its backlog (MODE=backlog).
    #[serde(rename = "catch_up_seconds", with = "super::whole_seconds")]
    pub catch_up_limit: Duration,
    /// With MODE=end-to-end: produce for this long instead of NUM_RECORDS records.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "super::whole_seconds::optional"
    )]
    pub duration: Option<Duration>,
    /// The first part of a DURATION run, in its series but not in its figures.
    #[serde(default, with = "super::whole_seconds")]
    pub duration_warm_up: Duration,
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
    #[serde(default = "super::one")]
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
    /// (`crate::world::ceiling`); results written before it existed did not.
    #[serde(default)]
    pub network_ceiling: bool,
    /// What the JVM services are profiled for over the measured phases (`crate::world::profile`);
    /// none by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileMode>,
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
    /// Settings measured at several values (see `crate::settings::matrix`); the fields above hold each
    /// one's first value. Empty: every setting has one value.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub matrix: Vec<Axis>,
}

impl Settings {
    /// Every field empty or zero: only what the table's defaults are written over.
    pub(super) fn blank() -> Self {
        Settings {
            engine: EngineKind::Local,
            swarm_roles: Vec::new(),
            registry: None,
            test: String::new(),
            num_records: 0,
            record_size: 0,
            warm_up_post_broker_start: 0,
            warm_up_pre_test: 0,
            warm_up_for_pre_test: Duration::ZERO,
            warm_up_jit_percent: 0,
            services_cpuset: String::new(),
            workload_cpuset: String::new(),
            producer_properties: Vec::new(),
            throughput: Rate::Unlimited,
            repeat: 0,
            partitions: 0,
            topics: 0,
            producers: 0,
            consumers: 0,
            load_generators: 1,
            brokers: 1,
            replication_factor: 1,
            min_insync_replicas: 1,
            p99_limit_ms: None,
            catch_up_limit: Duration::ZERO,
            duration: None,
            duration_warm_up: Duration::ZERO,
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
}

/// How a setting takes several values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lists {
    /// May vary: a comma-separated list (flag or variable) measures each value.
    Commas,
    /// May vary: the flag repeated measures each value; the variable is one value, commas
    /// included.
    Repeated,
    /// Holds for the whole run: a comma is refused as an attempt at a list.
    Refused,
    /// Holds for the whole run: commas are part of the value (a regular expression, a CPU
    /// list, a path).
    Text,
}

/// One setting.
pub struct Setting {
    /// The environment and Compose variable.
    pub var: &'static str,
    /// What it does, for `--help`.
    pub help: &'static str,
    /// Its default as text; empty for a setting that is unset by default.
    pub default: &'static str,
    /// What `--help` says for an empty default (computed or absent), if anything.
    pub default_help: Option<&'static str>,
    /// Its default in a paired run (`perf-tests ab`), where that differs: the recommended
    /// paired measurement, so that the bare command is it.
    pub ab_default: Option<&'static str>,
    pub lists: Lists,
    /// Whether two runs that differ in it measured different things (compare warns).
    pub measured: bool,
    /// The `Settings` field it is held in (serde's name), so a field without an entry is seen.
    pub field: &'static str,
    put: fn(&mut Settings, &str, &str) -> Result<()>,
    get: fn(&Settings) -> String,
}

impl std::fmt::Debug for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.var)
    }
}

impl Setting {
    /// Sets the setting in `settings` from its text, with the errors every way of giving it
    /// shares (naming the variable and the value).
    pub(crate) fn set(&self, settings: &mut Settings, text: &str) -> Result<()> {
        if self.lists == Lists::Refused && text.contains(',') {
            bail!("{}={text:?}: {}", self.var, cannot_vary(self.var));
        }
        (self.put)(settings, self.var, text)
    }

    /// The setting's value in `settings` as text (canonical: `1e3` reads back as `1000`).
    pub(crate) fn value(&self, settings: &Settings) -> String {
        (self.get)(settings)
    }

    /// `text` parsed as the setting parses it and written back canonically.
    pub(crate) fn canonical(&self, text: &str) -> Result<String> {
        let mut s = Settings::without_commit();
        self.set(&mut s, text)?;
        Ok(self.value(&s))
    }

    /// Whether the setting may take a list of values (a matrix axis).
    pub(crate) fn varies(&self) -> bool {
        matches!(self.lists, Lists::Commas | Lists::Repeated)
    }

    /// The command-line flag: `NUM_RECORDS` is `--num-records`.
    pub fn flag(&self) -> String {
        self.var.to_ascii_lowercase().replace('_', "-")
    }
}

/// The entry of `var`.
pub fn find(var: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.var == var)
}

/// The variables of the settings that may take a list of values, in the table's order.
pub fn varying() -> Vec<&'static str> {
    SETTINGS
        .iter()
        .filter(|s| s.varies())
        .map(|s| s.var)
        .collect()
}

/// The message for a list given to a setting that holds for the whole run.
pub(crate) fn cannot_vary(var: &str) -> String {
    format!(
        "{var} cannot take a list of values: it holds for the whole run (settings that may \
         vary: {})",
        varying().join(", ")
    )
}

fn image(var: &str, text: &str) -> Result<String> {
    let v = text.trim();
    if v.is_empty() || v.contains(char::is_whitespace) {
        bail!("{var}={text:?}: expected an image reference such as name:tag");
    }
    Ok(v.to_string())
}

/// An unset optional reads as the empty text, and the empty text unsets it.
fn optional<T>(text: &str, parse: impl FnOnce(&str) -> Result<T>) -> Result<Option<T>> {
    if text.trim().is_empty() {
        Ok(None)
    } else {
        parse(text).map(Some)
    }
}

fn shown<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(T::to_string).unwrap_or_default()
}

/// Every setting. The settings that may vary come in the order a run's axes take (the first
/// varies slowest).
pub static SETTINGS: &[Setting] = &[
    Setting {
        var: "TEST",
        help: "Scenarios to run: a regular expression that must match the whole directory name",
        default: "[0-9][0-9]-.*",
        default_help: None,
        ab_default: Some(""),
        lists: Lists::Text,
        measured: false,
        field: "test",
        put: |s, _, v| {
            s.test = v.to_string();
            Ok(())
        },
        get: |s| s.test.clone(),
    },
    Setting {
        var: "KAFKA_IMAGE",
        help: "Apache Kafka (native) broker image",
        default: "perf-tests/kafka:4.4.0",
        default_help: None,
        ab_default: None,
        lists: Lists::Commas,
        measured: true,
        field: "kafka_image",
        put: |s, var, v| {
            s.kafka_image = image(var, v)?;
            Ok(())
        },
        get: |s| s.kafka_image.clone(),
    },
    Setting {
        var: "KROXYLICIOUS_IMAGE",
        help: "Kroxylicious proxy image, or a build of the proxy made into one here: a path \
               (starting with /, ./, ../ or ~/) to a distribution (a directory, .tar.gz or .zip \
               whose top folder holds bin/, libs/*.jar, config/) or to a directory with a \
               Dockerfile",
        default: "perf-tests/kroxylicious:0.12.0",
        default_help: None,
        ab_default: None,
        lists: Lists::Commas,
        measured: true,
        field: "kroxylicious_image",
        put: |s, var, v| {
            s.kroxylicious_image = image(var, v)?;
            Ok(())
        },
        get: |s| s.kroxylicious_image.clone(),
    },
    Setting {
        var: "KROXYLICIOUS_PLUGINS",
        help: "A directory of jars (a user's own filters) added to the class path of the proxy \
               that KROXYLICIOUS_IMAGE makes from a distribution",
        default: "",
        default_help: None,
        ab_default: None,
        lists: Lists::Text,
        measured: true,
        field: "kroxylicious_plugins",
        put: |s, _, v| {
            s.kroxylicious_plugins = v.trim().to_string();
            Ok(())
        },
        get: |s| s.kroxylicious_plugins.clone(),
    },
    Setting {
        var: "KMS_IMAGE",
        help: "KMS image of the record-encryption scenarios (an AWS KMS API, local-kms)",
        default: "perf-tests/local-kms:v0.0.0-20260228092603-2a5e92d09ab6",
        default_help: None,
        ab_default: None,
        lists: Lists::Commas,
        measured: true,
        field: "kms_image",
        put: |s, var, v| {
            s.kms_image = image(var, v)?;
            Ok(())
        },
        get: |s| s.kms_image.clone(),
    },
    Setting {
        var: "VAULT_IMAGE",
        help: "HashiCorp Vault image",
        default: "hashicorp/vault:1.15",
        default_help: None,
        ab_default: None,
        lists: Lists::Commas,
        measured: true,
        field: "vault_image",
        put: |s, var, v| {
            s.vault_image = image(var, v)?;
            Ok(())
        },
        get: |s| s.vault_image.clone(),
    },
    Setting {
        var: "PAIR_PHASES",
        help: "Measured phases of each bring-up of a paired scenario's sides, one after the \
               other after one warm-up; the pair's B/A is their geometric mean",
        default: "1",
        default_help: None,
        ab_default: Some("3"),
        lists: Lists::Refused,
        measured: false,
        field: "pair_phases",
        put: |s, var, v| {
            s.pair_phases = parse_bounded(var, v, crate::settings::MAX_PAIR_PHASES)?;
            Ok(())
        },
        get: |s| s.pair_phases.to_string(),
    },
    Setting {
        var: "PAIR_THRESHOLD",
        help: "Smallest change of a paired scenario's B/A, in percent, that its verdict calls \
               a difference (when the 95% interval is also clear of 1), as compare's \
               --threshold",
        default: "5",
        default_help: None,
        ab_default: None,
        lists: Lists::Refused,
        measured: false,
        field: "pair_threshold",
        put: |s, var, v| {
            s.pair_threshold = parse_percent(var, v)?;
            Ok(())
        },
        get: |s| s.pair_threshold.to_string(),
    },
    Setting {
        var: "NUM_RECORDS",
        help: "Records produced and consumed per scenario (10000000, 1_000_000 and 1e6 forms)",
        default: "10000000",
        default_help: None,
        ab_default: Some("300000"),
        lists: Lists::Commas,
        measured: true,
        field: "num_records",
        put: |s, var, v| {
            s.num_records = parse_count(var, v, false)?;
            Ok(())
        },
        get: |s| s.num_records.to_string(),
    },
    Setting {
        var: "RECORD_SIZE",
        help: "Record size in bytes",
        default: "1024",
        default_help: None,
        ab_default: None,
        lists: Lists::Commas,
        measured: true,
        field: "record_size",
        put: |s, var, v| {
            s.record_size = parse_count(var, v, false)?;
            Ok(())
        },
        get: |s| s.record_size.to_string(),
    },
    Setting {
        var: "THROUGHPUT",
        help: "Producer throughput limit in records/s; -1 is unlimited",
        default: "-1",
        default_help: None,
        ab_default: Some("15000"),
        lists: Lists::Commas,
        measured: true,
        field: "throughput",
        put: |s, _, v| {
            s.throughput = parse_throughput(v)?;
            Ok(())
        },
        get: |s| s.throughput.to_string(),
    },
    Setting {
        var: "PRODUCER_PROPERTIES",
        help: "Producer properties: space-separated key=value entries",
        default: "acks=all",
        default_help: None,
        ab_default: None,
        lists: Lists::Repeated,
        measured: true,
        field: "producer_properties",
        put: |s, _, v| {
            s.producer_properties = parse_properties(v)?;
            Ok(())
        },
        get: |s| format_properties(&s.producer_properties),
    },
    Setting {
        var: "WARM_UP_NUM_RECORDS_PRE_TEST",
        help: "Warm-up records sent through each scenario's endpoint before it is measured",
        default: "1000",
        default_help: None,
        ab_default: None,
        lists: Lists::Commas,
        measured: true,
        field: "warm_up_pre_test",
        put: |s, var, v| {
            s.warm_up_pre_test = parse_count(var, v, true)?;
            Ok(())
        },
        get: |s| s.warm_up_pre_test.to_string(),
    },
    Setting {
        var: "PARTITIONS",
        help: "Partitions of each measured topic",
        default: "1",
        default_help: None,
        ab_default: None,
        lists: Lists::Commas,
        measured: true,
        field: "partitions",
        put: |s, var, v| {
            s.partitions = parse_clients(var, v)?;
            Ok(())
        },
        get: |s| s.partitions.to_string(),
    },
    Setting {
        var: "BROKERS",
        help: "Brokers of the run-wide cluster (KRaft, each also a controller): the first this \
               many of the suite's `brokers`, each reached through the proxy at its own port",
        default: "1",
        default_help: None,
        ab_default: None,
        lists: Lists::Refused,
        measured: true,
        field: "brokers",
        put: |s, var, v| {
            s.brokers = parse_bounded(var, v, crate::settings::MAX_BROKERS)?;
            Ok(())
        },
        get: |s| s.brokers.to_string(),
    },
    Setting {
        var: "REPLICATION_FACTOR",
        help: "Replicas of each measured topic's partitions, at most BROKERS; checked in sync \
               at the brokers before each measured phase",
        default: "1",
        default_help: None,
        ab_default: None,
        lists: Lists::Commas,
        measured: true,
        field: "replication_factor",
        put: |s, var, v| {
            s.replication_factor = parse_bounded(var, v, crate::settings::MAX_BROKERS)?;
            Ok(())
        },
        get: |s| s.replication_factor.to_string(),
    },
    Setting {
        var: "MIN_INSYNC_REPLICAS",
        help: "min.insync.replicas of each measured topic, at most REPLICATION_FACTOR: with \
               acks=all, the replicas a write waits for",
        default: "1",
        default_help: None,
        ab_default: None,
        lists: Lists::Commas,
        measured: true,
        field: "min_insync_replicas",
        put: |s, var, v| {
            s.min_insync_replicas = parse_bounded(var, v, crate::settings::MAX_BROKERS)?;
            Ok(())
        },
        get: |s| s.min_insync_replicas.to_string(),
    },
    Setting {
        var: "TOPICS",
        help: "Topics the records are spread over in turn, one consumer group reading them all",
        default: "1",
        default_help: None,
        ab_default: None,
        lists: Lists::Commas,
        measured: true,
        field: "topics",
        put: |s, var, v| {
            s.topics = parse_clients(var, v)?;
            Ok(())
        },
        get: |s| s.topics.to_string(),
    },
    Setting {
        var: "PRODUCERS",
        help: "Producers sharing the records and the rate, their figures merged",
        default: "1",
        default_help: None,
        ab_default: None,
        lists: Lists::Commas,
        measured: true,
        field: "producers",
        put: |s, var, v| {
            s.producers = parse_clients(var, v)?;
            Ok(())
        },
        get: |s| s.producers.to_string(),
    },
    Setting {
        var: "CONSUMERS",
        help: "Consumers of the one consumer group, at most PARTITIONS x TOPICS",
        default: "1",
        default_help: None,
        ab_default: None,
        lists: Lists::Commas,
        measured: true,
        field: "consumers",
        put: |s, var, v| {
            s.consumers = parse_clients(var, v)?;
            Ok(())
        },
        get: |s| s.consumers.to_string(),
    },
    Setting {
        var: "LOAD_GENERATORS",
        help: "Load generators the producers and consumers are spread over, each a workload \
               container with its own topics (on a swarm, on the load nodes in turn), their \
               figures merged",
        default: "1",
        default_help: None,
        ab_default: None,
        lists: Lists::Refused,
        measured: true,
        field: "load_generators",
        put: |s, var, v| {
            s.load_generators = parse_bounded(var, v, crate::settings::MAX_LOAD_GENERATORS)?;
            Ok(())
        },
        get: |s| s.load_generators.to_string(),
    },
    Setting {
        var: "WARM_UP_SECONDS_PRE_TEST",
        help: "Seconds the pre-test warm-up goes on for at least, in rounds of its records \
               (0: one round); with MODE=end-to-end and a THROUGHPUT, rounds of at least 10 s \
               in the phase's shape",
        default: "0",
        default_help: None,
        ab_default: Some("60"),
        lists: Lists::Commas,
        measured: true,
        field: "warm_up_seconds_pre_test",
        put: |s, _, v| {
            s.warm_up_for_pre_test = Duration::from_secs(parse_warm_up_seconds(v)?);
            Ok(())
        },
        get: |s| s.warm_up_for_pre_test.as_secs().to_string(),
    },
    Setting {
        var: "WARM_UP_JIT_PERCENT",
        help: "After WARM_UP_SECONDS_PRE_TEST, warm-up rounds go on until the JIT compilers of \
               each sampled JVM (broker, proxy) used less than this percent of its CPU over \
               the last 10 s, for at most 600 s more (0: no such wait)",
        default: "0",
        default_help: None,
        ab_default: None,
        lists: Lists::Commas,
        measured: true,
        field: "warm_up_jit_percent",
        put: |s, var, v| {
            s.warm_up_jit_percent = parse_percent(var, v)?;
            Ok(())
        },
        get: |s| s.warm_up_jit_percent.to_string(),
    },
    Setting {
        var: "WARM_UP_NUM_RECORDS_POST_BROKER_START",
        help: "Warm-up records sent after the broker is started, before the first scenario",
        default: "1000",
        default_help: None,
        ab_default: None,
        lists: Lists::Refused,
        measured: true,
        field: "warm_up_post_broker_start",
        put: |s, var, v| {
            s.warm_up_post_broker_start = parse_count(var, v, true)?;
            Ok(())
        },
        get: |s| s.warm_up_post_broker_start.to_string(),
    },
    Setting {
        var: "SERVICES_CPUSET",
        help: "CPUs every service container may run on, e.g. 0 or 0-1 (empty: not pinned)",
        default: "",
        default_help: None,
        ab_default: None,
        lists: Lists::Text,
        measured: true,
        field: "services_cpuset",
        put: |s, var, v| {
            s.services_cpuset = parse_cpuset(var, v)?;
            Ok(())
        },
        get: |s| s.services_cpuset.clone(),
    },
    Setting {
        var: "WORKLOAD_CPUSET",
        help: "CPUs the load generator's containers may run on, e.g. 1 (empty: not pinned)",
        default: "",
        default_help: None,
        ab_default: None,
        lists: Lists::Text,
        measured: true,
        field: "workload_cpuset",
        put: |s, var, v| {
            s.workload_cpuset = parse_cpuset(var, v)?;
            Ok(())
        },
        get: |s| s.workload_cpuset.clone(),
    },
    Setting {
        var: "P99_LIMIT_MS",
        help: "A rate counts as sustained (sweeps, THROUGHPUT lists) only while the producer's \
               p99 (from the intended send times) stays within this many ms",
        default: "",
        default_help: Some("no limit"),
        ab_default: None,
        lists: Lists::Refused,
        measured: true,
        field: "p99_limit_ms",
        put: |s, var, v| {
            s.p99_limit_ms = optional(v, |v| parse_count(var, v, false))?;
            Ok(())
        },
        get: |s| shown(&s.p99_limit_ms),
    },
    Setting {
        var: "DURATION",
        help: "With MODE=end-to-end: produce and consume for this long (90s, 10m, 2h, 3d) \
               instead of NUM_RECORDS records, recording every second",
        default: "",
        default_help: Some("by NUM_RECORDS"),
        ab_default: None,
        lists: Lists::Refused,
        measured: true,
        field: "duration",
        put: |s, var, v| {
            s.duration = optional(v, |v| {
                let d = parse_duration(var, v)?;
                if d == 0 {
                    bail!("{var}={v:?}: a run needs some time (expected at least 1s)");
                }
                Ok(Duration::from_secs(d))
            })?;
            Ok(())
        },
        get: |s| shown(&s.duration.map(|d| d.as_secs())),
    },
    Setting {
        var: "DURATION_WARM_UP",
        help: "The first part of a DURATION run, in its series but left out of its figures",
        default: "0",
        default_help: None,
        ab_default: None,
        lists: Lists::Refused,
        measured: true,
        field: "duration_warm_up",
        put: |s, var, v| {
            s.duration_warm_up = Duration::from_secs(parse_duration(var, v)?);
            Ok(())
        },
        get: |s| s.duration_warm_up.as_secs().to_string(),
    },
    Setting {
        var: "CATCH_UP_SECONDS",
        help: "With MODE=backlog: seconds the group may take to catch up; it stops then, and \
               the lag it left is reported",
        default: "300",
        default_help: None,
        ab_default: None,
        lists: Lists::Refused,
        measured: true,
        field: "catch_up_seconds",
        put: |s, var, v| {
            s.catch_up_limit = Duration::from_secs(parse_count(var, v, false)?);
            Ok(())
        },
        get: |s| s.catch_up_limit.as_secs().to_string(),
    },
    Setting {
        var: "REPEAT",
        help: "Times each scenario is measured; rounds interleave the scenarios, tables show \
               medians",
        default: "1",
        default_help: None,
        ab_default: Some("4"),
        lists: Lists::Refused,
        measured: false,
        field: "repeat",
        put: |s, _, v| {
            s.repeat = parse_repeat(v)?;
            Ok(())
        },
        get: |s| s.repeat.to_string(),
    },
    Setting {
        var: "COMMIT_ID",
        help: "Commit id recorded with the results and naming their directory",
        default: "",
        default_help: Some("`git rev-parse --short HEAD` in SCENARIOS, else unknown"),
        ab_default: None,
        lists: Lists::Text,
        measured: false,
        field: "commit_id",
        put: |s, _, v| {
            s.commit_id = v.trim().to_string();
            Ok(())
        },
        get: |s| s.commit_id.clone(),
    },
    Setting {
        var: "KAFKA_TOOL_IMAGE",
        help: "Kafka tooling image",
        default: "perf-tests/kafka-tools:4.4.0",
        default_help: None,
        ab_default: None,
        lists: Lists::Refused,
        measured: true,
        field: "kafka_tool_image",
        put: |s, var, v| {
            s.kafka_tool_image = image(var, v)?;
            Ok(())
        },
        get: |s| s.kafka_tool_image.clone(),
    },
    Setting {
        var: "DRIVER",
        help: "Workload driver: native (built-in librdkafka client) or kafka-tools (Apache \
               Kafka's perf-test scripts from KAFKA_TOOL_IMAGE)",
        default: "native",
        default_help: None,
        ab_default: None,
        lists: Lists::Refused,
        measured: true,
        field: "driver",
        // The names are the drivers' own (`crate::driver::DRIVERS`), checked when the run is
        // planned.
        put: |s, var, v| {
            if v.trim().is_empty() {
                bail!("{var}={v:?}: expected a driver's name such as native");
            }
            s.driver = v.trim().to_string();
            Ok(())
        },
        get: |s| s.driver.clone(),
    },
    Setting {
        var: "MODE",
        help: "How producer and consumer run: produce-then-consume (the reference's way), \
               end-to-end (at once; the consumer measures each record's latency from send to \
               receipt) or backlog (a stopped group catches up with NUM_RECORDS while a \
               producer keeps sending at THROUGHPUT); the last two with the native driver only",
        default: "produce-then-consume",
        default_help: None,
        ab_default: Some("end-to-end"),
        lists: Lists::Refused,
        measured: true,
        field: "mode",
        put: |s, _, v| {
            s.mode = super::parse_mode(v)?;
            Ok(())
        },
        get: |s| s.mode.to_string(),
    },
    Setting {
        var: "SCENARIOS",
        help: "Suite directory: suite.yaml and the numbered scenario directories",
        default: "scenarios/kroxylicious",
        default_help: None,
        ab_default: None,
        lists: Lists::Text,
        measured: false,
        field: "scenarios",
        put: |s, _, v| {
            s.scenarios = v.into();
            Ok(())
        },
        get: |s| s.scenarios.display().to_string(),
    },
    Setting {
        var: "NETWORK_CEILING",
        help: "1: before each scenario, measure with iperf3 what the network carries from the \
               load generator to the scenario's endpoint and from a proxy on to the broker, \
               printed beside the tables as each rate's share; 0: skip it",
        default: "1",
        default_help: None,
        ab_default: Some("0"),
        lists: Lists::Refused,
        measured: false,
        field: "network_ceiling",
        put: |s, var, v| {
            s.network_ceiling = match v.trim() {
                "1" => true,
                "0" => false,
                other => bail!("{var}={other:?}: expected 0 or 1"),
            };
            Ok(())
        },
        get: |s| u8::from(s.network_ceiling).to_string(),
    },
    Setting {
        var: "PROFILE",
        help: "Profile the scenarios' JVM services over each measured phase with async-profiler \
               (never the warm-up): off, cpu (timer-based CPU time), alloc, lock or wall; \
               flame graphs and a summary are kept with the results",
        default: "off",
        default_help: None,
        ab_default: None,
        lists: Lists::Refused,
        measured: true,
        field: "profile",
        put: |s, var, v| {
            s.profile = super::ProfileMode::parse(var, v)?;
            Ok(())
        },
        get: |s| s.profile.map_or("off", |m| m.name()).to_string(),
    },
    Setting {
        var: "PROFILE_SERVICES",
        help: "With PROFILE: the services to profile, comma-separated (each must be a JVM every \
               selected scenario runs, e.g. broker1); empty: each scenario's own JVM services",
        default: "",
        default_help: Some("each scenario's own JVM services (its proxy)"),
        ab_default: None,
        lists: Lists::Text,
        measured: true,
        field: "profile_services",
        put: |s, var, v| {
            let names: Vec<String> = v
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(String::from)
                .collect();
            if let Some(bad) = names.iter().find(|n| n.contains(char::is_whitespace)) {
                bail!("{var}={v:?}: {bad:?} is not a service name");
            }
            s.profile_services = names;
            Ok(())
        },
        get: |s| s.profile_services.join(","),
    },
    Setting {
        var: "ENGINE",
        help: "Where the services run: local (containers on the engine DOCKER_HOST reaches) or \
               swarm (services on the swarm whose manager DOCKER_HOST reaches, each placed on \
               the nodes labelled perf-tests.role=<role>, the load generator on a node of its \
               own; `perf-tests swarm local` makes one on this machine)",
        default: "local",
        default_help: None,
        ab_default: None,
        lists: Lists::Refused,
        measured: true,
        field: "engine",
        put: |s, var, v| {
            s.engine = match v.trim() {
                "local" => super::EngineKind::Local,
                "swarm" => super::EngineKind::Swarm,
                other => bail!("{var}={other:?}: expected local or swarm"),
            };
            Ok(())
        },
        get: |s| s.engine.as_str().to_string(),
    },
    Setting {
        var: "SWARM_ROLES",
        help: "With ENGINE=swarm: service=role pairs, comma-separated, placing each named \
               service on the nodes labelled perf-tests.role=<role>; `load` names the load \
               generator. Unnamed: run-wide services on broker, a scenario's own on proxy, the \
               load generator on load",
        default: "",
        default_help: Some(
            "run-wide services on broker, each scenario's own on proxy, load on load",
        ),
        ab_default: None,
        lists: Lists::Text,
        measured: true,
        field: "swarm_roles",
        put: |s, var, v| {
            s.swarm_roles = parse_roles(var, v)?;
            Ok(())
        },
        get: |s| {
            s.swarm_roles
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        },
    },
    Setting {
        var: "REGISTRY",
        help: "With ENGINE=swarm: a registry (host[:port][/path], no scheme) the images travel \
               through: pushed from the manager's engine, pulled by each node that may run \
               them. Every node's engine must reach it (checked before anything is built)",
        default: "",
        default_help: Some("none: each image streamed from the manager's engine to the nodes"),
        ab_default: None,
        lists: Lists::Refused,
        measured: false,
        field: "registry",
        put: |s, var, v| {
            s.registry = optional(v, |v| parse_registry(var, v))?;
            Ok(())
        },
        get: |s| s.registry.clone().unwrap_or_default(),
    },
    Setting {
        var: "RESULTS_DIR",
        help: "Directory each run's results directory is created in",
        default: "results",
        default_help: None,
        ab_default: None,
        lists: Lists::Text,
        measured: false,
        field: "results_dir",
        put: |s, _, v| {
            s.results_dir = v.into();
            Ok(())
        },
        get: |s| s.results_dir.display().to_string(),
    },
];

/// A valid value of `setting` other than its default, for tests that change each setting.
#[cfg(test)]
pub(crate) fn another_value(setting: &Setting) -> &'static str {
    match setting.var {
        "MODE" => "end-to-end",
        "DRIVER" => "kafka-tools",
        "PRODUCER_PROPERTIES" => "acks=1",
        "SERVICES_CPUSET" | "WORKLOAD_CPUSET" => "0",
        "TEST" | "COMMIT_ID" | "SCENARIOS" | "RESULTS_DIR" => "elsewhere",
        "NETWORK_CEILING" => "0",
        "ENGINE" => "swarm",
        "SWARM_ROLES" => "load=load",
        "REGISTRY" => "registry.example:5000",
        "PROFILE" => "cpu",
        "PROFILE_SERVICES" => "broker1",
        _ if setting.var.ends_with("IMAGE") => "x:y",
        _ => "7",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_of_the_settings_has_one_entry() {
        let mut s = Settings::without_commit();
        // Optional fields and the matrix are serialised only when set.
        s.p99_limit_ms = Some(1);
        s.duration = Some(std::time::Duration::from_secs(1));
        s.profile = Some(crate::settings::ProfileMode::Cpu);
        s.profile_services = vec!["broker1".into()];
        s.swarm_roles = vec![("load".into(), "load".into())];
        s.registry = Some("registry.example:5000".into());
        s.matrix = vec![super::super::Axis {
            var: "TOPICS".into(),
            values: vec!["1".into(), "2".into()],
        }];
        let json = serde_json::to_value(&s).unwrap();
        let mut fields: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        fields.sort_unstable();
        let mut entries: Vec<&str> = SETTINGS.iter().map(|e| e.field).collect();
        entries.push("matrix");
        entries.sort_unstable();
        assert_eq!(
            fields, entries,
            "a field without an entry, or an entry without a field"
        );
        let mut vars: Vec<&str> = SETTINGS.iter().map(|e| e.var).collect();
        vars.sort_unstable();
        vars.dedup();
        assert_eq!(vars.len(), SETTINGS.len(), "a variable named twice");
    }

    #[test]
    fn each_entry_reads_its_default_back_and_writes_only_its_own_field() {
        for e in SETTINGS {
            let defaults = Settings::without_commit();
            // The commit id's default is found when the settings are given, not written.
            if e.var != "COMMIT_ID" {
                assert_eq!(e.value(&defaults), e.default, "{}", e.var);
            }
            assert_eq!(e.canonical(e.default).unwrap(), e.default, "{}", e.var);
            let mut changed = defaults.clone();
            let other = another_value(e);
            e.set(&mut changed, other).unwrap();
            assert_eq!(e.value(&changed), other, "{}", e.var);
            let differ: Vec<&str> = SETTINGS
                .iter()
                .filter(|o| o.value(&changed) != o.value(&defaults))
                .map(|o| o.var)
                .collect();
            assert_eq!(differ, [e.var], "setting {} wrote another field", e.var);
        }
    }

    #[test]
    fn a_paired_verdict_counts_the_change_compare_counts() {
        // The two verdicts on one path's change agree on the smallest that matters.
        let paired = Settings::without_commit().pair_threshold as f64;
        assert_eq!(paired, crate::compare::DEFAULT_THRESHOLD_PCT);
    }

    #[test]
    fn a_list_given_to_a_run_wide_setting_is_refused_naming_it() {
        let mut s = Settings::without_commit();
        let err = find("REPEAT").unwrap().set(&mut s, "1,2").unwrap_err();
        let err = err.to_string();
        assert!(
            err.starts_with("REPEAT=\"1,2\": REPEAT cannot take a list"),
            "{err}"
        );
        assert!(err.contains("NUM_RECORDS"), "{err}");
        // Commas belong to a CPU list.
        find("SERVICES_CPUSET").unwrap().set(&mut s, "0,1").unwrap();
        assert_eq!(s.services_cpuset, "0,1");
    }
}
