//! `perf-tests workload …`: the workload's primitive steps as a process, so a driver on the host
//! can run each inside a container on the scenario's network and read the result back.
//!
//! Each step's parameters are one type, the one the workload's library runs from
//! ([`ProduceConfig`], [`ConsumeConfig`], [`CatchUpConfig`], [`SoakConfig`], [`VerifySpec`]),
//! and [`WorkloadCommand`] names the steps: clap parses the command line into them
//! ([`parse_from`]), and [`WorkloadCommand::to_args`] renders them back from the same
//! definitions (clap's flag of each field, serde's value of it), so the two cannot drift and no
//! step copies its arguments into another type; a test holds them to each other. Each step prints its progress on stderr and one
//! `PERF-TESTS-RESULT <json>` line on stdout ([`result_line`], [`parse_result_line`]).

use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

pub(crate) use super::args::{Endpoint, Seconds};
use super::catch_up::CatchUpConfig;
use super::producer::summary_line;
use super::soak::SoakConfig;
pub(crate) use super::together::Together;
use super::verify::VerifySpec;
use super::{probe, ConsumeConfig, ProduceConfig, TopicSpec};

/// Prefix of the one stdout line that carries the structured result.
pub(crate) const RESULT_PREFIX: &str = "PERF-TESTS-RESULT ";

/// How long a freshly created topic may take to appear in the metadata.
const TOPIC_VISIBLE_TIMEOUT: Duration = Duration::from_secs(30);

/// The workload's steps, each with its parameters.
#[derive(Debug, Clone, PartialEq, Subcommand, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadCommand {
    /// Wait until the container is removed; the driver runs the other steps in it with `exec`.
    Serve,
    /// Wait until the endpoint answers a Kafka metadata request.
    Probe(Probe),
    /// Create a topic and wait until it is visible.
    CreateTopic(CreateTopic),
    /// Produce records and report them (kafka-producer-perf-test semantics).
    Produce(Produce),
    /// Consume exactly this many records with a consumer group and report them
    /// (kafka-consumer-perf-test semantics); the group commits what it read.
    Consume(ConsumeConfig),
    /// Resume a consumer group with a backlog waiting while a live producer sends at a fixed
    /// rate, until the group's lag is down to what 100 ms of the rate adds (MODE=backlog).
    CatchUp(CatchUpConfig),
    /// Produce at a rate for a time while a group consumes, recording every second
    /// (DURATION); the group then reads what is left.
    Soak(SoakConfig),
    /// Print the number of records in a topic (end offsets minus start offsets).
    EndOffsets(Topics),
    /// Delete a topic.
    DeleteTopic(Topics),
    /// Check what the path does to records: produce samples through the endpoint, read them
    /// back through it and straight from the broker, compare with the expectation.
    Verify(VerifySpec),
    /// Print the CPU model of the machine the container runs on (its host's, as a container
    /// sees the host's /proc/cpuinfo).
    CpuModel,
    /// Print the container's counters (its cgroup's CPU time, its network's bytes, its host's
    /// CPU clock) as a phase's edge reads them, for an image with no shell.
    Counters,
}

/// `probe`'s parameters.
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct Probe {
    #[command(flatten)]
    #[serde(flatten)]
    pub endpoint: Endpoint,
    /// Seconds to keep trying.
    #[arg(long = "timeout-s", default_value = "60")]
    pub timeout: Seconds,
}

/// `create-topic`'s parameters.
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct CreateTopic {
    #[command(flatten)]
    #[serde(flatten)]
    pub endpoint: Endpoint,
    /// Topic to create; repeatable.
    #[arg(long = "topic", required = true)]
    pub topics: Vec<String>,
    /// Partitions of the topic.
    #[arg(long, default_value_t = 1)]
    pub partitions: i32,
    /// Replication factor of the topic: the step waits until every partition has this many
    /// replicas, all in sync.
    #[arg(long, default_value_t = 1)]
    pub replication_factor: i32,
    /// The topic's `min.insync.replicas` (the broker's default when not given).
    #[arg(long)]
    pub min_insync_replicas: Option<i32>,
}

/// `produce`'s parameters: the records, and how many producers share them and the rate (their
/// figures merged).
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct Produce {
    #[command(flatten)]
    #[serde(flatten)]
    pub records: ProduceConfig,
    /// Producers sharing the records and the rate, their figures merged.
    #[arg(long, default_value_t = 1)]
    pub producers: u32,
}

/// The parameters of a step on topics only (`end-offsets`, `delete-topic`).
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct Topics {
    #[command(flatten)]
    #[serde(flatten)]
    pub endpoint: Endpoint,
    /// Topic to count or delete; repeatable.
    #[arg(long = "topic", required = true)]
    pub topics: Vec<String>,
}

impl WorkloadCommand {
    /// The process arguments (after the executable) that [`parse_from`] reads back as `self`:
    /// each field under the flag clap gives it, with the value serde gives it (a list as the
    /// flag repeated, a pair as `key=value`, a flag alone for `true`).
    pub(crate) fn to_args(&self) -> Vec<String> {
        let (step, fields) = match serde_json::to_value(self).expect("a step serialises") {
            Value::String(step) => (step, serde_json::Map::new()),
            Value::Object(o) => {
                let (step, fields) = o.into_iter().next().expect("one step");
                match fields {
                    Value::Object(fields) => (step, fields),
                    other => panic!("step {step} serialised as {other}"),
                }
            }
            other => panic!("a step serialised as {other}"),
        };
        let steps = WorkloadCommand::augment_subcommands(clap::Command::new("workload"));
        let definition = steps.find_subcommand(&step).expect("a step of the enum");
        let mut args = vec!["workload".to_string(), step.clone()];
        for arg in definition.get_arguments() {
            let (Some(long), Some(value)) = (arg.get_long(), fields.get(arg.get_id().as_str()))
            else {
                continue;
            };
            let flag = format!("--{long}");
            match value {
                Value::Bool(true) => args.push(flag),
                Value::Bool(false) | Value::Null => {}
                Value::Array(items) => {
                    for item in items {
                        args.extend([flag.clone(), text(item)]);
                    }
                }
                value => args.extend([flag, text(value)]),
            }
        }
        args
    }
}

/// A value as its command-line text: a string as it is, a pair (serde's array of two) as
/// `key=value`.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(kv) if kv.len() == 2 => format!("{}={}", text(&kv[0]), text(&kv[1])),
        other => other.to_string(),
    }
}

/// `perf-tests workload …` is parsed on its own, never with the main command line: it takes only
/// its own flags, and some share a name with the run's settings (`--num-records`).
#[derive(Debug, Parser)]
#[command(name = "perf-tests", max_term_width = 100)]
struct WorkloadCli {
    #[command(subcommand)]
    command: Top,
}

#[derive(Debug, Subcommand)]
enum Top {
    /// One workload step against a Kafka endpoint (the driver runs it in a container)
    #[command(subcommand)]
    Workload(WorkloadCommand),
}

/// Parses `perf-tests workload …` (`argv` includes the executable name).
pub fn parse_from<I, T>(argv: I) -> Result<WorkloadCommand, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    WorkloadCli::try_parse_from(argv).map(|cli| match cli.command {
        Top::Workload(cmd) => cmd,
    })
}

/// The stdout line that carries `value` back to the driver.
pub(crate) fn result_line(value: &impl Serialize) -> Result<String> {
    Ok(format!(
        "{RESULT_PREFIX}{}",
        serde_json::to_string(value).context("encoding the workload result")?
    ))
}

/// Reads a step's result back from its stdout (the last `PERF-TESTS-RESULT` line).
pub fn parse_result_line<T: DeserializeOwned>(stdout: &str) -> Result<T> {
    let Some(json) = stdout
        .lines()
        .rev()
        .find_map(|l| l.trim_end().strip_prefix(RESULT_PREFIX))
    else {
        let tail: Vec<&str> = stdout.lines().rev().take(5).collect();
        bail!(
            "the workload printed no `{}` line; its last output lines: {:?}",
            RESULT_PREFIX.trim_end(),
            tail.into_iter().rev().collect::<Vec<_>>()
        );
    };
    serde_json::from_str(json).with_context(|| format!("decoding the workload result `{json}`"))
}

/// Runs the step: progress on stderr, then one `PERF-TESTS-RESULT <json>` line on stdout.
pub(crate) async fn execute(cmd: WorkloadCommand) -> Result<i32> {
    let line = match cmd {
        WorkloadCommand::Serve => loop {
            // Removing the container ends it; there is nothing to clean up.
            tokio::time::sleep(Duration::from_secs(3600)).await;
        },
        WorkloadCommand::Probe(step) => step.run().await?,
        WorkloadCommand::CreateTopic(step) => step.run().await?,
        WorkloadCommand::Produce(step) => produce(step).await?,
        WorkloadCommand::Consume(cfg) => consume(cfg).await?,
        WorkloadCommand::CatchUp(cfg) => catch_up(cfg).await?,
        WorkloadCommand::Soak(cfg) => soak(cfg).await?,
        WorkloadCommand::EndOffsets(step) => {
            result_line(&step.endpoint.admin()?.end_offsets_sum(&step.topics).await?)?
        }
        WorkloadCommand::DeleteTopic(step) => {
            step.endpoint.admin()?.delete_topics(&step.topics).await?;
            result_line(&())?
        }
        WorkloadCommand::Verify(spec) => result_line(&super::verify::verify(&spec).await?)?,
        WorkloadCommand::CpuModel => result_line(&crate::world::machine::cpu_model())?,
        WorkloadCommand::Counters => {
            crate::accounting::counters::proc_text(|p| std::fs::read_to_string(p).ok())
        }
    };
    println!("{line}");
    Ok(0)
}

impl Probe {
    async fn run(self) -> Result<String> {
        probe(
            &self.endpoint.bootstrap,
            &self.endpoint.client_properties,
            self.timeout.0,
        )
        .await?;
        result_line(&())
    }
}

impl CreateTopic {
    async fn run(self) -> Result<String> {
        let specs: Vec<TopicSpec> = self
            .topics
            .into_iter()
            .map(|name| TopicSpec {
                name,
                partitions: self.partitions,
                replication_factor: self.replication_factor,
                min_insync_replicas: self.min_insync_replicas,
            })
            .collect();
        self.endpoint
            .admin()?
            .create_topics(&specs, TOPIC_VISIBLE_TIMEOUT)
            .await?;
        result_line(&())
    }
}

async fn produce(step: Produce) -> Result<String> {
    let r =
        super::producer::produce_many(&step.records, step.producers, |p| eprintln!("{p}")).await?;
    eprintln!("{}", summary_line(&r));
    result_line(&r)
}

async fn consume(cfg: ConsumeConfig) -> Result<String> {
    let expected = cfg.expected;
    let consumed = super::consumer::consume_reporting(
        &cfg,
        move |n| eprintln!("{}", super::consumer::progress_line(n, expected)),
        || eprintln!("{}", super::consumer::ASSIGNED_LINE),
    )
    .await?;
    result_line(&consumed)
}

async fn catch_up(cfg: CatchUpConfig) -> Result<String> {
    let r = super::catch_up::catch_up(
        &cfg,
        |p| eprintln!("{p}"),
        |n, lag| eprintln!("{}", super::catch_up::progress_line(n, lag)),
    )
    .await?;
    eprintln!("{}", summary_line(&r.live));
    result_line(&r)
}

async fn soak(cfg: SoakConfig) -> Result<String> {
    // Every tenth second, and the first ones, so a long run shows it is alive.
    let r = super::soak::soak(&cfg, |s| {
        if s.t_s <= 3 || s.t_s % 10 == 0 {
            eprintln!("{}", super::soak::progress_line(s));
        }
    })
    .await?;
    result_line(&r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(cmd: WorkloadCommand) {
        let mut argv = vec!["perf-tests".to_string()];
        argv.extend(cmd.to_args());
        assert_eq!(parse_from(&argv).unwrap(), cmd, "{argv:?}");
    }

    #[test]
    fn every_step_renders_to_arguments_that_parse_back_to_it() {
        let endpoint = Endpoint::new("proxy:9092", &[("security.protocol".into(), "SSL".into())]);
        let records = |topics: &[&str], num_records| ProduceConfig {
            num_records,
            record_size: 512,
            throughput: crate::settings::rate::Rate::per_second(20_000).unwrap(),
            properties: vec![
                ("linger.ms".into(), "7".into()),
                ("acks".into(), "all".into()),
            ],
            ..ProduceConfig::new(
                endpoint.clone(),
                topics.iter().map(|t| t.to_string()).collect(),
            )
        };
        round_trip(WorkloadCommand::Serve);
        round_trip(WorkloadCommand::CpuModel);
        round_trip(WorkloadCommand::Counters);
        round_trip(WorkloadCommand::Probe(Probe {
            endpoint: endpoint.clone(),
            timeout: Seconds(Duration::from_millis(2500)),
        }));
        round_trip(WorkloadCommand::CreateTopic(CreateTopic {
            endpoint: endpoint.clone(),
            topics: vec!["t1".into(), "t2".into()],
            partitions: 3,
            replication_factor: 2,
            min_insync_replicas: Some(2),
        }));
        round_trip(WorkloadCommand::Produce(Produce {
            records: ProduceConfig {
                throughput: crate::settings::rate::Rate::Unlimited,
                ..records(&["t1", "t2", "t3"], 20_000)
            },
            producers: 3,
        }));
        for (topics, consumers, end_to_end) in [(&["t"][..], 2, true), (&["t1", "t2"], 1, false)] {
            round_trip(WorkloadCommand::Consume(ConsumeConfig {
                timeout: Seconds(Duration::from_secs(61)),
                consumers,
                end_to_end,
                ..ConsumeConfig::new(
                    endpoint.clone(),
                    topics.iter().map(|t| t.to_string()).collect(),
                    "g",
                    10,
                )
            }));
        }
        let clients = Together {
            produce: records(&["t1", "t2"], crate::settings::MAX_COUNT),
            producers: 2,
            group: "g".into(),
            consumers: 3,
            timeout: Seconds(Duration::from_secs(45)),
        };
        round_trip(WorkloadCommand::CatchUp(CatchUpConfig {
            clients: clients.clone(),
            backlog: 50_000,
            limit: Seconds(Duration::from_secs(300)),
        }));
        round_trip(WorkloadCommand::Soak(SoakConfig {
            clients,
            duration: Seconds(Duration::from_secs(600)),
            warm_up: Seconds(Duration::from_secs(30)),
        }));
        round_trip(WorkloadCommand::EndOffsets(Topics {
            endpoint: Endpoint::new("broker:9092", &[]),
            topics: vec!["t1".into(), "t2".into()],
        }));
        round_trip(WorkloadCommand::DeleteTopic(Topics {
            endpoint: endpoint.clone(),
            topics: vec!["t".into()],
        }));
        round_trip(WorkloadCommand::Verify(VerifySpec {
            endpoint,
            direct: "broker1:9092".into(),
            topic: "t".into(),
            expect: crate::model::Expect {
                broker: crate::model::BrokerHolds::Encrypted,
                consumer: crate::model::ConsumerReceives::UpperCased,
            },
            records: 20,
            record_size: 100,
            partitions: 3,
            replication_factor: 3,
        }));
    }

    #[test]
    fn a_group_beside_producers_reads_what_they_write_until_stopped() {
        let clients = Together {
            produce: ProduceConfig {
                record_size: 100,
                throughput: crate::settings::rate::Rate::per_second(5).unwrap(),
                properties: vec![("acks".into(), "1".into())],
                ..ProduceConfig::new(
                    Endpoint::new("proxy:9092", &[("client.id".into(), "c".into())]),
                    vec!["t1".into(), "t2".into()],
                )
            },
            producers: 2,
            group: "g".into(),
            consumers: 3,
            timeout: Seconds(Duration::from_secs(45)),
        };
        let group = clients.consume(true);
        assert_eq!(group.endpoint, clients.produce.endpoint);
        assert_eq!(group.topics, clients.produce.topics);
        assert_eq!(
            (group.group_id.as_str(), group.consumers, group.timeout),
            ("g", 3, clients.timeout)
        );
        assert_eq!(group.expected, crate::settings::MAX_COUNT);
        assert!(group.end_to_end && !clients.consume(false).end_to_end);
    }

    #[test]
    fn a_time_that_is_not_a_duration_is_refused_naming_its_flag() {
        let err = parse_from([
            "perf-tests",
            "workload",
            "probe",
            "--bootstrap",
            "b:9092",
            "--timeout-s=-2",
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("--timeout-s") && err.contains("`-2`"), "{err}");
    }

    #[test]
    fn a_step_needs_a_topic() {
        let err = parse_from([
            "perf-tests",
            "workload",
            "end-offsets",
            "--bootstrap",
            "b:9092",
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("--topic"), "{err}");
    }

    #[test]
    fn missing_result_line_is_reported_with_the_output_tail() {
        let err = parse_result_line::<u64>("starting\nboom: broker gone\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("PERF-TESTS-RESULT") && err.contains("boom: broker gone"),
            "{err}"
        );
    }

    #[test]
    fn malformed_result_line_is_an_error() {
        assert!(parse_result_line::<crate::model::Measurement>(
            "PERF-TESTS-RESULT {\"producer\":1}\n"
        )
        .is_err());
        assert_eq!(
            parse_result_line::<u64>("noise\nPERF-TESTS-RESULT 12\n").unwrap(),
            12
        );
    }
}
