//! `perf-tests workload …`: the workload's primitive steps as a process, so a driver on the host
//! can run each inside a container on the scenario's network and read the result back.
//!
//! Each step's parameters are one type, and [`WorkloadCommand`] names the steps: clap parses the
//! command line into them ([`parse_from`]), and [`WorkloadCommand::to_args`] renders them back
//! from the same definitions (clap's flag of each field, serde's value of it), so the two cannot
//! drift; a test holds them to each other. Each step prints its progress on stderr and one
//! `PERF-TESTS-RESULT <json>` line on stdout ([`result_line`], [`parse_result_line`]).

use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::catch_up::CatchUpConfig;
use super::producer::summary_line;
use super::properties::parse_pair;
use super::soak::SoakConfig;
use super::{probe, Admin, ConsumeConfig, ProduceConfig, TopicSpec};
use crate::model::{BrokerHolds, ConsumerReceives, Expect};

/// Prefix of the one stdout line that carries the structured result.
pub const RESULT_PREFIX: &str = "PERF-TESTS-RESULT ";

/// How long a freshly created topic may take to appear in the metadata.
const TOPIC_VISIBLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a step connects, and how.
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct Endpoint {
    /// Kafka bootstrap endpoint, host:port.
    #[arg(long)]
    pub bootstrap: String,
    /// Property for every client of the step, key=value; repeatable.
    #[arg(long = "client-property", value_parser = parse_pair)]
    pub client_properties: Vec<(String, String)>,
}

impl Endpoint {
    /// An endpoint with no extra client properties.
    pub fn new(bootstrap: impl Into<String>, client: &[(String, String)]) -> Endpoint {
        Endpoint {
            bootstrap: bootstrap.into(),
            client_properties: client.to_vec(),
        }
    }

    fn admin(&self) -> Result<Admin> {
        Admin::connect(&self.bootstrap, &self.client_properties)
    }
}

/// Producers and a consuming group running at once in one step, so that its lag is counted
/// exactly: the backlog mode's catch-up and a DURATION run.
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct Together {
    #[command(flatten)]
    #[serde(flatten)]
    pub endpoint: Endpoint,
    /// Topic to produce to (records go to the topics in turn) and consume from; repeatable.
    #[arg(long = "topic", required = true)]
    pub topics: Vec<String>,
    /// Consumer group.
    #[arg(long)]
    pub group: String,
    /// Bytes per record value.
    #[arg(long, default_value_t = 1024)]
    pub record_size: usize,
    /// Target records/s; -1 is unlimited.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub throughput: i64,
    /// Producer property key=value (Java or librdkafka name); repeatable.
    #[arg(long = "property", value_parser = parse_pair)]
    pub properties: Vec<(String, String)>,
    /// Producers sharing the rate.
    #[arg(long, default_value_t = 1)]
    pub producers: u32,
    /// Consumers in the group.
    #[arg(long, default_value_t = 1)]
    pub consumers: u32,
    /// Seconds without a record after which the group fails.
    #[arg(long, default_value_t = 60.0)]
    pub timeout_s: f64,
}

impl Together {
    /// The producers' configuration, their count, and the group's (which tallies end-to-end
    /// latencies when asked). Neither has a count: the step decides when they stop.
    fn configs(self, end_to_end: bool) -> Result<(ProduceConfig, u32, ConsumeConfig)> {
        let produce = ProduceConfig {
            bootstrap: self.endpoint.bootstrap.clone(),
            topics: self.topics.clone(),
            num_records: crate::settings::MAX_COUNT,
            record_size: self.record_size,
            throughput: self.throughput,
            properties: self.properties,
            client: self.endpoint.client_properties.clone(),
        };
        let consume = ConsumeConfig {
            bootstrap: self.endpoint.bootstrap,
            topics: self.topics,
            group_id: self.group,
            expected: crate::settings::MAX_COUNT,
            timeout: seconds("timeout-s", self.timeout_s)?,
            client: self.endpoint.client_properties,
            consumers: self.consumers,
            end_to_end,
        };
        Ok((produce, self.producers, consume))
    }
}

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
    Consume(Consume),
    /// Resume a consumer group with a backlog waiting while a live producer sends at a fixed
    /// rate, until the group's lag is down to what 100 ms of the rate adds (MODE=backlog).
    CatchUp(CatchUp),
    /// Produce at a rate for a time while a group consumes, recording every second
    /// (DURATION); the group then reads what is left.
    Soak(Soak),
    /// Print the number of records in a topic (end offsets minus start offsets).
    EndOffsets(Topics),
    /// Delete a topic.
    DeleteTopic(Topics),
    /// Check what the path does to records: produce samples through the endpoint, read them
    /// back through it and straight from the broker, compare with the expectation.
    Verify(Verify),
}

/// `probe`'s parameters.
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct Probe {
    #[command(flatten)]
    #[serde(flatten)]
    pub endpoint: Endpoint,
    /// Seconds to keep trying.
    #[arg(long, default_value_t = 60.0)]
    pub timeout_s: f64,
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
    /// Replication factor of the topic.
    #[arg(long, default_value_t = 1)]
    pub replication_factor: i32,
}

/// `produce`'s parameters.
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct Produce {
    #[command(flatten)]
    #[serde(flatten)]
    pub endpoint: Endpoint,
    /// Topic to produce to; repeatable (records go to the topics in turn).
    #[arg(long = "topic", required = true)]
    pub topics: Vec<String>,
    /// Records to produce.
    #[arg(long)]
    pub num_records: u64,
    /// Bytes per record value.
    #[arg(long, default_value_t = 1024)]
    pub record_size: usize,
    /// Target records/s; -1 is unlimited.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub throughput: i64,
    /// Producer property key=value (Java or librdkafka name); repeatable.
    #[arg(long = "property", value_parser = parse_pair)]
    pub properties: Vec<(String, String)>,
    /// Producers sharing the records and the rate, their figures merged.
    #[arg(long, default_value_t = 1)]
    pub producers: u32,
}

/// `consume`'s parameters.
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct Consume {
    #[command(flatten)]
    #[serde(flatten)]
    pub endpoint: Endpoint,
    /// Topic to consume from; repeatable (the group subscribes to all).
    #[arg(long = "topic", required = true)]
    pub topics: Vec<String>,
    /// Consumer group.
    #[arg(long)]
    pub group: String,
    /// Records to consume.
    #[arg(long)]
    pub expected: u64,
    /// Seconds without a record after which the consumer fails.
    #[arg(long, default_value_t = 60.0)]
    pub timeout_s: f64,
    /// Consumers in the group, together consuming the records.
    #[arg(long, default_value_t = 1)]
    pub consumers: u32,
    /// Report each record's latency from its send to its receipt.
    #[arg(long)]
    pub end_to_end: bool,
}

/// `catch-up`'s parameters.
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct CatchUp {
    #[command(flatten)]
    #[serde(flatten)]
    pub clients: Together,
    /// Records waiting for the group.
    #[arg(long)]
    pub backlog: u64,
    /// Seconds the group may take to catch up.
    #[arg(long)]
    pub limit_s: f64,
}

/// `soak`'s parameters.
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct Soak {
    #[command(flatten)]
    #[serde(flatten)]
    pub clients: Together,
    /// Seconds the producers send.
    #[arg(long)]
    pub duration_s: u64,
    /// Seconds at the start left out of the figures (kept in the series).
    #[arg(long, default_value_t = 0)]
    pub warm_up_s: u64,
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

/// `verify`'s parameters.
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct Verify {
    #[command(flatten)]
    #[serde(flatten)]
    pub endpoint: Endpoint,
    /// The broker behind the endpoint, read without the path, host:port.
    #[arg(long)]
    pub direct: String,
    /// Topic to create, check on and delete.
    #[arg(long)]
    pub topic: String,
    /// What the broker must hold: unchanged, upper-cased or encrypted.
    #[arg(long)]
    pub broker_holds: BrokerHolds,
    /// What the consumer must receive: sent or upper-cased.
    #[arg(long)]
    pub consumer_receives: ConsumerReceives,
    /// Sample records.
    #[arg(long, default_value_t = super::verify::SAMPLE_RECORDS)]
    pub records: u64,
    /// Bytes per sample record (at least 64).
    #[arg(long, default_value_t = 1024)]
    pub record_size: usize,
}

impl WorkloadCommand {
    /// The process arguments (after the executable) that [`parse_from`] reads back as `self`:
    /// each field under the flag clap gives it, with the value serde gives it (a list as the
    /// flag repeated, a pair as `key=value`, a flag alone for `true`).
    pub fn to_args(&self) -> Vec<String> {
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

fn seconds(name: &str, s: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(s).with_context(|| format!("--{name} {s}: not a duration"))
}

/// The stdout line that carries `value` back to the driver.
pub fn result_line(value: &impl Serialize) -> Result<String> {
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
pub async fn execute(cmd: WorkloadCommand) -> Result<i32> {
    let line = match cmd {
        WorkloadCommand::Serve => loop {
            // Removing the container ends it; there is nothing to clean up.
            tokio::time::sleep(Duration::from_secs(3600)).await;
        },
        WorkloadCommand::Probe(step) => step.run().await?,
        WorkloadCommand::CreateTopic(step) => step.run().await?,
        WorkloadCommand::Produce(step) => step.run().await?,
        WorkloadCommand::Consume(step) => step.run().await?,
        WorkloadCommand::CatchUp(step) => step.run().await?,
        WorkloadCommand::Soak(step) => step.run().await?,
        WorkloadCommand::EndOffsets(step) => {
            result_line(&step.endpoint.admin()?.end_offsets_sum(&step.topics).await?)?
        }
        WorkloadCommand::DeleteTopic(step) => {
            step.endpoint.admin()?.delete_topics(&step.topics).await?;
            result_line(&())?
        }
        WorkloadCommand::Verify(step) => step.run().await?,
    };
    println!("{line}");
    Ok(0)
}

impl Probe {
    async fn run(self) -> Result<String> {
        let timeout = seconds("timeout-s", self.timeout_s)?;
        probe(
            &self.endpoint.bootstrap,
            &self.endpoint.client_properties,
            timeout,
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
            })
            .collect();
        self.endpoint
            .admin()?
            .create_topics(&specs, TOPIC_VISIBLE_TIMEOUT)
            .await?;
        result_line(&())
    }
}

impl Produce {
    async fn run(self) -> Result<String> {
        let cfg = ProduceConfig {
            bootstrap: self.endpoint.bootstrap,
            topics: self.topics,
            num_records: self.num_records,
            record_size: self.record_size,
            throughput: self.throughput,
            properties: self.properties,
            client: self.endpoint.client_properties,
        };
        let r = super::producer::produce_many(&cfg, self.producers, |p| eprintln!("{p}")).await?;
        eprintln!("{}", summary_line(&r));
        result_line(&r)
    }
}

impl Consume {
    async fn run(self) -> Result<String> {
        let cfg = ConsumeConfig {
            bootstrap: self.endpoint.bootstrap,
            topics: self.topics,
            group_id: self.group,
            expected: self.expected,
            timeout: seconds("timeout-s", self.timeout_s)?,
            client: self.endpoint.client_properties,
            consumers: self.consumers,
            end_to_end: self.end_to_end,
        };
        let expected = cfg.expected;
        let consumed = super::consumer::consume_reporting(
            &cfg,
            move |n| eprintln!("{}", super::consumer::progress_line(n, expected)),
            || eprintln!("{}", super::consumer::ASSIGNED_LINE),
        )
        .await?;
        result_line(&consumed)
    }
}

impl CatchUp {
    async fn run(self) -> Result<String> {
        let (produce, producers, consume) = self.clients.configs(false)?;
        let cfg = CatchUpConfig {
            produce,
            producers,
            consume,
            backlog: self.backlog,
            limit: seconds("limit-s", self.limit_s)?,
        };
        let r = super::catch_up::catch_up(
            &cfg,
            |p| eprintln!("{p}"),
            |n, lag| eprintln!("{}", super::catch_up::progress_line(n, lag)),
        )
        .await?;
        eprintln!("{}", summary_line(&r.live));
        result_line(&r)
    }
}

impl Soak {
    async fn run(self) -> Result<String> {
        let (produce, producers, consume) = self.clients.configs(true)?;
        let cfg = SoakConfig {
            produce,
            producers,
            consume,
            duration: Duration::from_secs(self.duration_s),
            warm_up: Duration::from_secs(self.warm_up_s),
        };
        // Every tenth second, and the first ones, so a long run shows it is alive.
        let r = super::soak::soak(&cfg, |s| {
            if s.t_s <= 3 || s.t_s % 10 == 0 {
                eprintln!("{}", super::soak::progress_line(s));
            }
        })
        .await?;
        result_line(&r)
    }
}

impl Verify {
    async fn run(self) -> Result<String> {
        let spec = super::verify::VerifySpec {
            bootstrap: self.endpoint.bootstrap,
            direct: self.direct,
            topic: self.topic,
            expect: Expect {
                broker: self.broker_holds,
                consumer: self.consumer_receives,
            },
            records: self.records,
            record_size: self.record_size,
            client: self.endpoint.client_properties,
        };
        result_line(&super::verify::verify(&spec).await?)
    }
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
        round_trip(WorkloadCommand::Serve);
        round_trip(WorkloadCommand::Probe(Probe {
            endpoint: endpoint.clone(),
            timeout_s: 2.5,
        }));
        round_trip(WorkloadCommand::CreateTopic(CreateTopic {
            endpoint: endpoint.clone(),
            topics: vec!["t1".into(), "t2".into()],
            partitions: 3,
            replication_factor: 2,
        }));
        round_trip(WorkloadCommand::Produce(Produce {
            endpoint: endpoint.clone(),
            topics: vec!["t1".into(), "t2".into(), "t3".into()],
            num_records: 20_000,
            record_size: 512,
            throughput: -1,
            properties: vec![
                ("linger.ms".into(), "7".into()),
                ("acks".into(), "all".into()),
            ],
            producers: 3,
        }));
        round_trip(WorkloadCommand::Consume(Consume {
            endpoint: endpoint.clone(),
            topics: vec!["t".into()],
            group: "g".into(),
            expected: 10,
            timeout_s: 60.0,
            consumers: 2,
            end_to_end: true,
        }));
        round_trip(WorkloadCommand::Consume(Consume {
            endpoint: endpoint.clone(),
            topics: vec!["t1".into(), "t2".into()],
            group: "g".into(),
            expected: 10,
            timeout_s: 60.0,
            consumers: 1,
            end_to_end: false,
        }));
        let clients = Together {
            endpoint: endpoint.clone(),
            topics: vec!["t1".into(), "t2".into()],
            group: "g".into(),
            record_size: 100,
            throughput: 20_000,
            properties: vec![("acks".into(), "1".into())],
            producers: 2,
            consumers: 3,
            timeout_s: 60.0,
        };
        round_trip(WorkloadCommand::CatchUp(CatchUp {
            clients: clients.clone(),
            backlog: 50_000,
            limit_s: 300.0,
        }));
        round_trip(WorkloadCommand::Soak(Soak {
            clients,
            duration_s: 600,
            warm_up_s: 30,
        }));
        round_trip(WorkloadCommand::EndOffsets(Topics {
            endpoint: Endpoint::new("broker:9092", &[]),
            topics: vec!["t1".into(), "t2".into()],
        }));
        round_trip(WorkloadCommand::DeleteTopic(Topics {
            endpoint: endpoint.clone(),
            topics: vec!["t".into()],
        }));
        round_trip(WorkloadCommand::Verify(Verify {
            endpoint,
            direct: "broker1:9092".into(),
            topic: "t".into(),
            broker_holds: BrokerHolds::Encrypted,
            consumer_receives: ConsumerReceives::UpperCased,
            records: 20,
            record_size: 100,
        }));
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
