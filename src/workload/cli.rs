//! `perf-tests workload …`: the workload as a process, so a runner can launch it inside a
//! container on the scenario's network and read the result back from its stdout.

use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::producer::summary_line;
use super::properties::parse_pair;
use super::{measure, probe, warm_broker, MeasureSpec};
use crate::model::Measurement;

/// Prefix of the one stdout line that carries the structured result.
pub const RESULT_PREFIX: &str = "PERF-TESTS-RESULT ";

/// Workload steps.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum WorkloadCommand {
    /// Create a topic, warm the path up, produce, consume, check the counts, delete the topic.
    Measure {
        /// Kafka bootstrap endpoint, host:port.
        #[arg(long)]
        bootstrap: String,
        /// Topic to create, measure on and delete.
        #[arg(long)]
        topic: String,
        /// Records to produce and consume.
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
        /// Property for every client (producer, consumer, admin), key=value; repeatable.
        #[arg(long = "client-property", value_parser = parse_pair)]
        client_properties: Vec<(String, String)>,
        /// Records produced and consumed before measuring (not reported).
        #[arg(long, default_value_t = 1000)]
        warm_up_records: u64,
        /// Seconds without a record after which the consumer fails.
        #[arg(long, default_value_t = 60.0)]
        consume_timeout_s: f64,
        /// Partitions of the created topic.
        #[arg(long, default_value_t = 1)]
        partitions: i32,
        /// Replication factor of the created topic.
        #[arg(long, default_value_t = 1)]
        replication_factor: i32,
        /// Leave the topic in place at the end.
        #[arg(long)]
        keep_topic: bool,
        /// Endpoint that must answer a Kafka metadata request before anything else; repeatable.
        /// (Done here rather than in a container of its own, to keep the harness's cost low.)
        #[arg(long = "ready")]
        ready: Vec<String>,
        /// Seconds each --ready endpoint may take to answer.
        #[arg(long, default_value_t = 120.0)]
        ready_timeout_s: f64,
        /// Records to warm a freshly started broker with (throw-away topic) before measuring.
        #[arg(long, default_value_t = 0)]
        warm_broker_records: u64,
    },
    /// Produce and consume records on a throw-away topic to warm a broker.
    WarmBroker {
        /// Kafka bootstrap endpoint, host:port.
        #[arg(long)]
        bootstrap: String,
        /// Records to produce and consume.
        #[arg(long, default_value_t = 1000)]
        num_records: u64,
        /// Property for every client, key=value; repeatable.
        #[arg(long = "client-property", value_parser = parse_pair)]
        client_properties: Vec<(String, String)>,
    },
    /// Print the number of records in a topic (end offsets minus start offsets).
    EndOffsets {
        /// Kafka bootstrap endpoint, host:port.
        #[arg(long)]
        bootstrap: String,
        /// Topic to count.
        #[arg(long)]
        topic: String,
        /// Property for the client, key=value; repeatable.
        #[arg(long = "client-property", value_parser = parse_pair)]
        client_properties: Vec<(String, String)>,
    },
    /// Check what the path does to records: produce samples through the endpoint, read them
    /// back through it and straight from the broker, compare with the expectation.
    Verify {
        /// The scenario's endpoint, host:port.
        #[arg(long)]
        bootstrap: String,
        /// The broker behind the endpoint, read without the path, host:port.
        #[arg(long)]
        direct: String,
        /// Topic to create, check on and delete.
        #[arg(long)]
        topic: String,
        /// What the broker must hold: unchanged, upper-cased or encrypted.
        #[arg(long)]
        broker_holds: crate::model::BrokerHolds,
        /// What the consumer must receive: sent or upper-cased.
        #[arg(long)]
        consumer_receives: crate::model::ConsumerReceives,
        /// Sample records.
        #[arg(long, default_value_t = super::verify::SAMPLE_RECORDS)]
        records: u64,
        /// Bytes per sample record (at least 64).
        #[arg(long, default_value_t = 1024)]
        record_size: usize,
        /// Property for the endpoint's clients, key=value; repeatable.
        #[arg(long = "client-property", value_parser = parse_pair)]
        client_properties: Vec<(String, String)>,
    },
    /// Wait until the endpoint answers a Kafka metadata request.
    Probe {
        /// Kafka bootstrap endpoint, host:port.
        #[arg(long)]
        bootstrap: String,
        /// Property for the probing client, key=value; repeatable.
        #[arg(long = "client-property", value_parser = parse_pair)]
        client_properties: Vec<(String, String)>,
        /// Seconds to keep trying.
        #[arg(long, default_value_t = 60.0)]
        timeout_s: f64,
    },
}

/// The `verify` command line that runs `spec` (the inverse of what `execute` reads).
pub fn verify_args(spec: &super::verify::VerifySpec) -> Vec<String> {
    let mut args: Vec<String> = [
        "verify",
        "--bootstrap",
        &spec.bootstrap,
        "--direct",
        &spec.direct,
        "--topic",
        &spec.topic,
        "--broker-holds",
        spec.expect.broker.name(),
        "--consumer-receives",
        spec.expect.consumer.name(),
        "--records",
        &spec.records.to_string(),
        "--record-size",
        &spec.record_size.to_string(),
    ]
    .map(String::from)
    .to_vec();
    for (k, v) in &spec.client {
        args.push("--client-property".into());
        args.push(format!("{k}={v}"));
    }
    args
}

/// The `measure` command line that runs `spec` (the inverse of what `execute` reads).
pub fn measure_args(spec: &MeasureSpec) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "measure".into(),
        "--bootstrap".into(),
        spec.bootstrap.clone(),
        "--topic".into(),
        spec.topic.clone(),
        "--num-records".into(),
        spec.num_records.to_string(),
        "--record-size".into(),
        spec.record_size.to_string(),
        "--throughput".into(),
        spec.throughput.to_string(),
        "--warm-up-records".into(),
        spec.warm_up_records.to_string(),
        "--consume-timeout-s".into(),
        spec.consume_timeout.as_secs_f64().to_string(),
        "--partitions".into(),
        spec.partitions.to_string(),
        "--replication-factor".into(),
        spec.replication_factor.to_string(),
    ];
    for (flag, pairs) in [
        ("--property", &spec.properties),
        ("--client-property", &spec.client),
    ] {
        for (k, v) in pairs {
            args.push(flag.into());
            args.push(format!("{k}={v}"));
        }
    }
    if !spec.delete_topic {
        args.push("--keep-topic".into());
    }
    args
}

fn seconds(name: &str, s: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(s).with_context(|| format!("--{name} {s}: not a duration"))
}

/// Runs the step: progress on stderr, then one `PERF-TESTS-RESULT <json>` line on stdout.
pub async fn execute(cmd: WorkloadCommand) -> Result<i32> {
    let json = match cmd {
        WorkloadCommand::Measure {
            bootstrap,
            topic,
            num_records,
            record_size,
            throughput,
            properties,
            client_properties,
            warm_up_records,
            consume_timeout_s,
            partitions,
            replication_factor,
            keep_topic,
            ready,
            ready_timeout_s,
            warm_broker_records,
        } => {
            let ready_timeout = seconds("ready-timeout-s", ready_timeout_s)?;
            let t = std::time::Instant::now();
            for endpoint in &ready {
                probe(endpoint, &client_properties, ready_timeout)
                    .await
                    .with_context(|| format!("{endpoint} is not ready"))?;
            }
            let ready_s = t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            if warm_broker_records > 0 {
                warm_broker(&bootstrap, warm_broker_records, &client_properties).await?;
            }
            let warm_broker_s = t.elapsed().as_secs_f64();
            let mut spec = MeasureSpec::new(bootstrap, topic, num_records);
            spec.record_size = record_size;
            spec.throughput = throughput;
            if !properties.is_empty() {
                spec.properties = properties;
            }
            spec.client = client_properties;
            spec.warm_up_records = warm_up_records;
            spec.consume_timeout = seconds("consume-timeout-s", consume_timeout_s)?;
            spec.partitions = partitions;
            spec.replication_factor = replication_factor;
            spec.delete_topic = !keep_topic;
            let mut m = measure(&spec).await?;
            if !ready.is_empty() {
                m.steps_s.insert("ready".into(), ready_s);
            }
            if warm_broker_records > 0 {
                m.steps_s.insert("warm_broker".into(), warm_broker_s);
            }
            eprintln!("{}", summary_line(&m.producer));
            if let Some(problem) = m.integrity.problem() {
                eprintln!("integrity: counts disagree: {problem}");
            }
            serde_json::to_string(&m).context("encoding the measurement")?
        }
        WorkloadCommand::WarmBroker {
            bootstrap,
            num_records,
            client_properties,
        } => {
            warm_broker(&bootstrap, num_records, &client_properties).await?;
            "{}".to_string()
        }
        WorkloadCommand::EndOffsets {
            bootstrap,
            topic,
            client_properties,
        } => {
            let admin = super::Admin::connect(&bootstrap, &client_properties)?;
            admin.end_offsets(&topic).await?.to_string()
        }
        WorkloadCommand::Verify {
            bootstrap,
            direct,
            topic,
            broker_holds,
            consumer_receives,
            records,
            record_size,
            client_properties,
        } => {
            let spec = super::verify::VerifySpec {
                bootstrap,
                direct,
                topic,
                expect: crate::model::Expect {
                    broker: broker_holds,
                    consumer: consumer_receives,
                },
                records,
                record_size,
                client: client_properties,
            };
            let check = super::verify::verify(&spec).await?;
            serde_json::to_string(&check).context("encoding the path check")?
        }
        WorkloadCommand::Probe {
            bootstrap,
            client_properties,
            timeout_s,
        } => {
            probe(
                &bootstrap,
                &client_properties,
                seconds("timeout-s", timeout_s)?,
            )
            .await?;
            "{}".to_string()
        }
    };
    println!("{RESULT_PREFIX}{json}");
    Ok(0)
}

/// Reads the measurement back from a `perf-tests workload measure` process's stdout.
pub fn parse_result_line(stdout: &str) -> Result<Measurement> {
    parse_result(stdout)
}

/// Reads the result a `perf-tests workload …` process printed on its stdout.
pub fn parse_result<T: serde::de::DeserializeOwned>(stdout: &str) -> Result<T> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Wrapper {
        #[command(subcommand)]
        cmd: WorkloadCommand,
    }

    #[test]
    fn measure_args_parse_back_to_the_spec() {
        use clap::Parser;
        let mut spec = MeasureSpec::new("proxy:9092", "t", 20_000);
        spec.record_size = 512;
        spec.throughput = 3000;
        spec.properties = vec![("linger.ms".into(), "7".into())];
        spec.client = vec![("security.protocol".into(), "SSL".into())];
        spec.warm_up_records = 10;
        spec.consume_timeout = Duration::from_millis(2500);
        spec.delete_topic = false;
        let mut argv = vec!["perf-tests".to_string()];
        argv.extend(measure_args(&spec));
        let WorkloadCommand::Measure {
            bootstrap,
            topic,
            num_records,
            record_size,
            throughput,
            properties,
            client_properties,
            warm_up_records,
            consume_timeout_s,
            partitions,
            replication_factor,
            keep_topic,
            ..
        } = Wrapper::try_parse_from(argv).unwrap().cmd
        else {
            panic!("not a measure command");
        };
        assert_eq!((bootstrap, topic), (spec.bootstrap, spec.topic));
        assert_eq!((num_records, record_size, throughput), (20_000, 512, 3000));
        assert_eq!(
            (properties, client_properties),
            (spec.properties, spec.client)
        );
        assert_eq!((warm_up_records, consume_timeout_s), (10, 2.5));
        assert_eq!((partitions, replication_factor, keep_topic), (1, 1, true));
    }

    #[test]
    fn missing_result_line_is_reported_with_the_output_tail() {
        let err = parse_result_line("starting\nboom: broker gone\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("PERF-TESTS-RESULT") && err.contains("boom: broker gone"),
            "{err}"
        );
    }

    #[test]
    fn malformed_result_line_is_an_error() {
        assert!(parse_result_line("PERF-TESTS-RESULT {\"producer\":1}\n").is_err());
    }
}
