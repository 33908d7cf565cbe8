//! `perf-tests workload …`: the workload's primitive steps as a process, so a driver on the host
//! can run each inside a container on the scenario's network and read the result back.
//!
//! [`WorkloadCommand`] is the one description of that command line: the host renders it with
//! [`WorkloadCommand::to_args`], the process parses it back with [`parse_from`], and a test holds
//! the two to each other. Each step prints its progress on stderr and one
//! `PERF-TESTS-RESULT <json>` line on stdout ([`result_line`], [`parse_result_line`]).

use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use serde::de::DeserializeOwned;
use serde::Serialize;

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
#[derive(Debug, Clone, PartialEq, Args)]
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

    fn push_args(&self, args: &mut Vec<String>) {
        push(args, "--bootstrap", &self.bootstrap);
        push_pairs(args, "--client-property", &self.client_properties);
    }
}

/// Producers and a consuming group running at once in one step, so that its lag is counted
/// exactly: the backlog mode's catch-up and a DURATION run.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct Together {
    #[command(flatten)]
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
    fn push_args(&self, args: &mut Vec<String>) {
        self.endpoint.push_args(args);
        push_each(args, "--topic", &self.topics);
        push(args, "--group", &self.group);
        push(args, "--record-size", self.record_size);
        push(args, "--throughput", self.throughput);
        push_pairs(args, "--property", &self.properties);
        push(args, "--producers", self.producers);
        push(args, "--consumers", self.consumers);
        push(args, "--timeout-s", self.timeout_s);
    }

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

/// The workload's steps.
#[derive(Debug, Clone, PartialEq, Subcommand)]
pub enum WorkloadCommand {
    /// Wait until the container is removed; the driver runs the other steps in it with `exec`.
    Serve,
    /// Wait until the endpoint answers a Kafka metadata request.
    Probe {
        #[command(flatten)]
        endpoint: Endpoint,
        /// Seconds to keep trying.
        #[arg(long, default_value_t = 60.0)]
        timeout_s: f64,
    },
    /// Create a topic and wait until it is visible.
    CreateTopic {
        #[command(flatten)]
        endpoint: Endpoint,
        /// Topic to create; repeatable.
        #[arg(long = "topic", required = true)]
        topics: Vec<String>,
        /// Partitions of the topic.
        #[arg(long, default_value_t = 1)]
        partitions: i32,
        /// Replication factor of the topic.
        #[arg(long, default_value_t = 1)]
        replication_factor: i32,
    },
    /// Produce records and report them (kafka-producer-perf-test semantics).
    Produce {
        #[command(flatten)]
        endpoint: Endpoint,
        /// Topic to produce to; repeatable (records go to the topics in turn).
        #[arg(long = "topic", required = true)]
        topics: Vec<String>,
        /// Records to produce.
        #[arg(long)]
        num_records: u64,
        /// Bytes per record value.
        #[arg(long, default_value_t = 1024)]
        record_size: usize,
        /// Target records/s; -1 is unlimited.
        #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
        throughput: i64,
        /// Producer property key=value (Java or librdkafka name); repeatable.
        #[arg(long = "property", value_parser = parse_pair)]
        properties: Vec<(String, String)>,
        /// Producers sharing the records and the rate, their figures merged.
        #[arg(long, default_value_t = 1)]
        producers: u32,
    },
    /// Consume exactly this many records with a consumer group and report them
    /// (kafka-consumer-perf-test semantics); the group commits what it read.
    Consume {
        #[command(flatten)]
        endpoint: Endpoint,
        /// Topic to consume from; repeatable (the group subscribes to all).
        #[arg(long = "topic", required = true)]
        topics: Vec<String>,
        /// Consumer group.
        #[arg(long)]
        group: String,
        /// Records to consume.
        #[arg(long)]
        expected: u64,
        /// Seconds without a record after which the consumer fails.
        #[arg(long, default_value_t = 60.0)]
        timeout_s: f64,
        /// Consumers in the group, together consuming the records.
        #[arg(long, default_value_t = 1)]
        consumers: u32,
        /// Report each record's latency from its send to its receipt.
        #[arg(long)]
        end_to_end: bool,
    },
    /// Resume a consumer group with a backlog waiting while a live producer sends at a fixed
    /// rate, until the group's lag is down to what 100 ms of the rate adds (MODE=backlog).
    CatchUp {
        #[command(flatten)]
        clients: Together,
        /// Records waiting for the group.
        #[arg(long)]
        backlog: u64,
        /// Seconds the group may take to catch up.
        #[arg(long)]
        limit_s: f64,
    },
    /// Produce at a rate for a time while a group consumes, recording every second
    /// (DURATION); the group then reads what is left.
    Soak {
        #[command(flatten)]
        clients: Together,
        /// Seconds the producers send.
        #[arg(long)]
        duration_s: u64,
        /// Seconds at the start left out of the figures (kept in the series).
        #[arg(long, default_value_t = 0)]
        warm_up_s: u64,
    },
    /// Print the number of records in a topic (end offsets minus start offsets).
    EndOffsets {
        #[command(flatten)]
        endpoint: Endpoint,
        /// Topic to count; repeatable (their records summed).
        #[arg(long = "topic", required = true)]
        topics: Vec<String>,
    },
    /// Delete a topic.
    DeleteTopic {
        #[command(flatten)]
        endpoint: Endpoint,
        /// Topic to delete; repeatable.
        #[arg(long = "topic", required = true)]
        topics: Vec<String>,
    },
    /// Check what the path does to records: produce samples through the endpoint, read them
    /// back through it and straight from the broker, compare with the expectation.
    Verify {
        #[command(flatten)]
        endpoint: Endpoint,
        /// The broker behind the endpoint, read without the path, host:port.
        #[arg(long)]
        direct: String,
        /// Topic to create, check on and delete.
        #[arg(long)]
        topic: String,
        /// What the broker must hold: unchanged, upper-cased or encrypted.
        #[arg(long)]
        broker_holds: BrokerHolds,
        /// What the consumer must receive: sent or upper-cased.
        #[arg(long)]
        consumer_receives: ConsumerReceives,
        /// Sample records.
        #[arg(long, default_value_t = super::verify::SAMPLE_RECORDS)]
        records: u64,
        /// Bytes per sample record (at least 64).
        #[arg(long, default_value_t = 1024)]
        record_size: usize,
    },
}

fn push(args: &mut Vec<String>, flag: &str, value: impl ToString) {
    args.push(flag.to_string());
    args.push(value.to_string());
}

fn push_each(args: &mut Vec<String>, flag: &str, values: &[String]) {
    for v in values {
        push(args, flag, v);
    }
}

fn push_pairs(args: &mut Vec<String>, flag: &str, pairs: &[(String, String)]) {
    for (k, v) in pairs {
        push(args, flag, format!("{k}={v}"));
    }
}

impl WorkloadCommand {
    /// The process arguments (after the executable) that [`parse_from`] reads back as `self`.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec!["workload".to_string()];
        match self {
            WorkloadCommand::Serve => args.push("serve".into()),
            WorkloadCommand::Probe {
                endpoint,
                timeout_s,
            } => {
                args.push("probe".into());
                endpoint.push_args(&mut args);
                push(&mut args, "--timeout-s", timeout_s);
            }
            WorkloadCommand::CreateTopic {
                endpoint,
                topics,
                partitions,
                replication_factor,
            } => {
                args.push("create-topic".into());
                endpoint.push_args(&mut args);
                push_each(&mut args, "--topic", topics);
                push(&mut args, "--partitions", partitions);
                push(&mut args, "--replication-factor", replication_factor);
            }
            WorkloadCommand::Produce {
                endpoint,
                topics,
                num_records,
                record_size,
                throughput,
                properties,
                producers,
            } => {
                args.push("produce".into());
                endpoint.push_args(&mut args);
                push_each(&mut args, "--topic", topics);
                push(&mut args, "--num-records", num_records);
                push(&mut args, "--record-size", record_size);
                push(&mut args, "--throughput", throughput);
                push_pairs(&mut args, "--property", properties);
                push(&mut args, "--producers", producers);
            }
            WorkloadCommand::Consume {
                endpoint,
                topics,
                group,
                expected,
                timeout_s,
                consumers,
                end_to_end,
            } => {
                args.push("consume".into());
                endpoint.push_args(&mut args);
                push_each(&mut args, "--topic", topics);
                push(&mut args, "--group", group);
                push(&mut args, "--expected", expected);
                push(&mut args, "--timeout-s", timeout_s);
                push(&mut args, "--consumers", consumers);
                if *end_to_end {
                    args.push("--end-to-end".into());
                }
            }
            WorkloadCommand::CatchUp {
                clients,
                backlog,
                limit_s,
            } => {
                args.push("catch-up".into());
                clients.push_args(&mut args);
                push(&mut args, "--backlog", backlog);
                push(&mut args, "--limit-s", limit_s);
            }
            WorkloadCommand::Soak {
                clients,
                duration_s,
                warm_up_s,
            } => {
                args.push("soak".into());
                clients.push_args(&mut args);
                push(&mut args, "--duration-s", duration_s);
                push(&mut args, "--warm-up-s", warm_up_s);
            }
            WorkloadCommand::EndOffsets { endpoint, topics } => {
                args.push("end-offsets".into());
                endpoint.push_args(&mut args);
                push_each(&mut args, "--topic", topics);
            }
            WorkloadCommand::DeleteTopic { endpoint, topics } => {
                args.push("delete-topic".into());
                endpoint.push_args(&mut args);
                push_each(&mut args, "--topic", topics);
            }
            WorkloadCommand::Verify {
                endpoint,
                direct,
                topic,
                broker_holds,
                consumer_receives,
                records,
                record_size,
            } => {
                args.push("verify".into());
                endpoint.push_args(&mut args);
                push(&mut args, "--direct", direct);
                push(&mut args, "--topic", topic);
                push(&mut args, "--broker-holds", broker_holds.name());
                push(&mut args, "--consumer-receives", consumer_receives.name());
                push(&mut args, "--records", records);
                push(&mut args, "--record-size", record_size);
            }
        }
        args
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
        WorkloadCommand::Probe {
            endpoint,
            timeout_s,
        } => {
            probe(
                &endpoint.bootstrap,
                &endpoint.client_properties,
                seconds("timeout-s", timeout_s)?,
            )
            .await?;
            result_line(&())?
        }
        WorkloadCommand::CreateTopic {
            endpoint,
            topics,
            partitions,
            replication_factor,
        } => {
            let admin = Admin::connect(&endpoint.bootstrap, &endpoint.client_properties)?;
            let specs: Vec<TopicSpec> = topics
                .into_iter()
                .map(|name| TopicSpec {
                    name,
                    partitions,
                    replication_factor,
                })
                .collect();
            admin.create_topics(&specs, TOPIC_VISIBLE_TIMEOUT).await?;
            result_line(&())?
        }
        WorkloadCommand::Produce {
            endpoint,
            topics,
            num_records,
            record_size,
            throughput,
            properties,
            producers,
        } => {
            let cfg = ProduceConfig {
                bootstrap: endpoint.bootstrap,
                topics,
                num_records,
                record_size,
                throughput,
                properties,
                client: endpoint.client_properties,
            };
            let r = super::producer::produce_many(&cfg, producers, |p| eprintln!("{p}")).await?;
            eprintln!("{}", summary_line(&r));
            result_line(&r)?
        }
        WorkloadCommand::Consume {
            endpoint,
            topics,
            group,
            expected,
            timeout_s,
            consumers,
            end_to_end,
        } => {
            let cfg = ConsumeConfig {
                bootstrap: endpoint.bootstrap,
                topics,
                group_id: group,
                expected,
                timeout: seconds("timeout-s", timeout_s)?,
                client: endpoint.client_properties,
                consumers,
                end_to_end,
            };
            let expected = cfg.expected;
            let consumed = super::consumer::consume_reporting(
                &cfg,
                move |n| eprintln!("{}", super::consumer::progress_line(n, expected)),
                || eprintln!("{}", super::consumer::ASSIGNED_LINE),
            )
            .await?;
            result_line(&consumed)?
        }
        WorkloadCommand::CatchUp {
            clients,
            backlog,
            limit_s,
        } => {
            let (produce, producers, consume) = clients.configs(false)?;
            let cfg = CatchUpConfig {
                produce,
                producers,
                consume,
                backlog,
                limit: seconds("limit-s", limit_s)?,
            };
            let r = super::catch_up::catch_up(
                &cfg,
                |p| eprintln!("{p}"),
                |n, lag| eprintln!("{}", super::catch_up::progress_line(n, lag)),
            )
            .await?;
            eprintln!("{}", summary_line(&r.live));
            result_line(&r)?
        }
        WorkloadCommand::Soak {
            clients,
            duration_s,
            warm_up_s,
        } => {
            let (produce, producers, consume) = clients.configs(true)?;
            let cfg = SoakConfig {
                produce,
                producers,
                consume,
                duration: Duration::from_secs(duration_s),
                warm_up: Duration::from_secs(warm_up_s),
            };
            // Every tenth second, and the first ones, so a long run shows it is alive.
            let r = super::soak::soak(&cfg, |s| {
                if s.t_s <= 3 || s.t_s % 10 == 0 {
                    eprintln!("{}", super::soak::progress_line(s));
                }
            })
            .await?;
            result_line(&r)?
        }
        WorkloadCommand::EndOffsets { endpoint, topics } => {
            let admin = Admin::connect(&endpoint.bootstrap, &endpoint.client_properties)?;
            result_line(&admin.end_offsets_sum(&topics).await?)?
        }
        WorkloadCommand::DeleteTopic { endpoint, topics } => {
            let admin = Admin::connect(&endpoint.bootstrap, &endpoint.client_properties)?;
            admin.delete_topics(&topics).await?;
            result_line(&())?
        }
        WorkloadCommand::Verify {
            endpoint,
            direct,
            topic,
            broker_holds,
            consumer_receives,
            records,
            record_size,
        } => {
            let spec = super::verify::VerifySpec {
                bootstrap: endpoint.bootstrap,
                direct,
                topic,
                expect: Expect {
                    broker: broker_holds,
                    consumer: consumer_receives,
                },
                records,
                record_size,
                client: endpoint.client_properties,
            };
            result_line(&super::verify::verify(&spec).await?)?
        }
    };
    println!("{line}");
    Ok(0)
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
        round_trip(WorkloadCommand::Probe {
            endpoint: endpoint.clone(),
            timeout_s: 2.5,
        });
        round_trip(WorkloadCommand::CreateTopic {
            endpoint: endpoint.clone(),
            topics: vec!["t1".into(), "t2".into()],
            partitions: 3,
            replication_factor: 2,
        });
        round_trip(WorkloadCommand::Produce {
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
        });
        round_trip(WorkloadCommand::Consume {
            endpoint: endpoint.clone(),
            topics: vec!["t".into()],
            group: "g".into(),
            expected: 10,
            timeout_s: 60.0,
            consumers: 2,
            end_to_end: true,
        });
        round_trip(WorkloadCommand::Consume {
            endpoint: endpoint.clone(),
            topics: vec!["t1".into(), "t2".into()],
            group: "g".into(),
            expected: 10,
            timeout_s: 60.0,
            consumers: 1,
            end_to_end: false,
        });
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
        round_trip(WorkloadCommand::CatchUp {
            clients: clients.clone(),
            backlog: 50_000,
            limit_s: 300.0,
        });
        round_trip(WorkloadCommand::Soak {
            clients,
            duration_s: 600,
            warm_up_s: 30,
        });
        round_trip(WorkloadCommand::EndOffsets {
            endpoint: Endpoint::new("broker:9092", &[]),
            topics: vec!["t1".into(), "t2".into()],
        });
        round_trip(WorkloadCommand::DeleteTopic {
            endpoint: endpoint.clone(),
            topics: vec!["t".into()],
        });
        round_trip(WorkloadCommand::Verify {
            endpoint,
            direct: "broker1:9092".into(),
            topic: "t".into(),
            broker_holds: BrokerHolds::Encrypted,
            consumer_receives: ConsumerReceives::UpperCased,
            records: 20,
            record_size: 100,
        });
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
