//! The `kafka-tools` driver: Apache Kafka's own perf-test scripts, as the reference script ran
//! them, in one-off containers from `KAFKA_TOOL_IMAGE` on the scenario network.
//!
//! `kafka-topics.sh` creates and deletes the topic, `kafka-producer-perf-test.sh` produces,
//! `kafka-consumer-perf-test.sh` consumes; their stdout is parsed into the same records the
//! native driver returns, and the one measurement flow (`super::flow`) orders the steps. The
//! topic's end offsets, which the tools do not report, come from the native workload
//! (`perf-tests workload end-offsets`) so the integrity check has an independent counter.
//!
//! The tools count MB as 1024 x 1024 bytes, the unit of the result tables (Mi).

use std::sync::LazyLock;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use regex::Regex;

use futures_util::future::BoxFuture;

use super::native::NativeSession;
use super::{
    is_summary, tail, window_records, Driver, Event, MeasureSpec, Place, Progress, Session,
};
use crate::model::{ConsumerResult, ProducerResult};
use crate::scenario::{Scenario, Suite};
use crate::settings::rate::Rate;
use crate::settings::{Mode, Settings};
use crate::world::engine::{Engine, OneOff};

/// Where the scripts live in the Strimzi Kafka image.
pub(crate) const BIN_DIR: &str = "/opt/kafka/bin";

/// A number as the tools print it with `%f`/`%.Nf`, including Java's non-finite spellings.
const NUM: &str = r"-?(?:\d+(?:\.\d+)?|NaN|Infinity)";

/// One periodic line of kafka-producer-perf-test (a five-second window).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProducerWindow {
    pub records: u64,
    pub rec_s: f64,
    pub mib_s: f64,
    pub avg_lat_ms: f64,
    pub max_lat_ms: f64,
}

/// The final line of kafka-producer-perf-test: the whole run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProducerTotal {
    /// Records acknowledged without error.
    pub sent: u64,
    pub rec_s: f64,
    pub mib_s: f64,
    pub avg_lat_ms: f64,
    pub max_lat_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
}

/// Everything kafka-producer-perf-test printed that this driver reads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProducerOutput {
    pub windows: Vec<ProducerWindow>,
    pub total: ProducerTotal,
}

/// The summary line of kafka-consumer-perf-test (without `--show-detailed-stats`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ConsumerLine {
    pub start_time: String,
    pub end_time: String,
    pub consumed_mib: f64,
    pub mib_s: f64,
    pub records: u64,
    pub rec_s: f64,
    pub rebalance_ms: i64,
    pub fetch_ms: i64,
    pub fetch_mib_s: f64,
    pub fetch_rec_s: f64,
    /// The tool's warning when it stopped before the requested count, if it did.
    pub warning: Option<String>,
}

static WINDOW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^(\d+) records sent, ({NUM}) records/sec \(({NUM}) MB/sec\), ({NUM}) ms avg latency, ({NUM}) ms max latency\.$"
    ))
    .expect("window pattern")
});

static TOTAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^(\d+)( steady state)? records sent, ({NUM}) records/sec \(({NUM}) MB/sec\), ({NUM}) ms avg latency, ({NUM}) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.$"
    ))
    .expect("total pattern")
});

const DATE: &str = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}:\d{3}";

static CONSUMER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^({DATE}), ({DATE}), ({NUM}), ({NUM}), (\d+), ({NUM}), (-?\d+), (-?\d+), ({NUM}), ({NUM})$"
    ))
    .expect("consumer pattern")
});

static STARTS_WITH_DATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\d{4}-\d{2}-\d{2}[ T]").expect("date prefix pattern"));

fn num(s: &str) -> f64 {
    // The patterns only let through what f64 parses ("NaN" and "Infinity" included).
    s.parse().unwrap_or(f64::NAN)
}

/// A line a tool printed as the event it reports: the producer tool's windows and summary.
fn event(line: &str) -> Event<'_> {
    if is_summary(line) {
        Event::Summary
    } else if let Some(n) = window_records(line) {
        Event::Sent(n)
    } else {
        Event::Line(line)
    }
}

/// Parses kafka-producer-perf-test's stdout: periodic window lines and exactly one final line.
///
/// Lines that do not report records (warnings, "In steady state.") are skipped; a line that
/// reports records in any other shape is an error quoting it.
pub(crate) fn parse_producer_output(stdout: &str) -> Result<ProducerOutput> {
    let mut windows = Vec::new();
    let mut total: Option<ProducerTotal> = None;
    for (i, raw) in stdout.lines().enumerate() {
        let line = raw.trim();
        if !line.contains(" records sent") {
            continue;
        }
        if let Some(c) = WINDOW.captures(line) {
            windows.push(ProducerWindow {
                records: c[1]
                    .parse()
                    .with_context(|| format!("producer output line {}: `{line}`", i + 1))?,
                rec_s: num(&c[2]),
                mib_s: num(&c[3]),
                avg_lat_ms: num(&c[4]),
                max_lat_ms: num(&c[5]),
            });
        } else if let Some(c) = TOTAL.captures(line) {
            if c.get(2).is_some() {
                // Only printed with --warmup-records, which this driver never passes.
                continue;
            }
            if total.is_some() {
                bail!(
                    "kafka-producer-perf-test printed a second final line (line {}): `{line}`",
                    i + 1
                );
            }
            total = Some(ProducerTotal {
                sent: c[1]
                    .parse()
                    .with_context(|| format!("producer output line {}: `{line}`", i + 1))?,
                rec_s: num(&c[3]),
                mib_s: num(&c[4]),
                avg_lat_ms: num(&c[5]),
                max_lat_ms: num(&c[6]),
                p50_ms: num(&c[7]),
                p95_ms: num(&c[8]),
                p99_ms: num(&c[9]),
                p999_ms: num(&c[10]),
            });
        } else {
            bail!(
                "malformed kafka-producer-perf-test output (line {}): `{line}` (expected \
                 `N records sent, X records/sec (Y MB/sec), Z ms avg latency, W ms max latency.` \
                 or the final line with `… ms 50th, … ms 95th, … ms 99th, … ms 99.9th.`)",
                i + 1
            );
        }
    }
    let Some(total) = total else {
        bail!(
            "kafka-producer-perf-test printed no final line (`N records sent, …, D ms 99.9th.`); \
             its last output lines:\n{}",
            tail(stdout)
        );
    };
    Ok(ProducerOutput { windows, total })
}

/// Parses kafka-consumer-perf-test's stdout (`--hide-header`, no `--show-detailed-stats`):
/// exactly one CSV summary line, optionally the header and the tool's early-exit warning.
pub(crate) fn parse_consumer_output(stdout: &str) -> Result<ConsumerLine> {
    let mut found: Option<ConsumerLine> = None;
    let mut warning = None;
    for (i, raw) in stdout.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with("start.time,") || line.is_empty() {
            continue;
        }
        if line.starts_with("WARNING:") {
            warning = Some(line.to_string());
            continue;
        }
        if !STARTS_WITH_DATE.is_match(line) {
            continue;
        }
        let Some(c) = CONSUMER.captures(line) else {
            bail!(
                "malformed kafka-consumer-perf-test output (line {}): `{line}` (expected `start.time, \
                 end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, \
                 rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec`)",
                i + 1
            );
        };
        if found.is_some() {
            bail!(
                "kafka-consumer-perf-test printed a second summary line (line {}): `{line}` \
                 (detailed statistics are not supported)",
                i + 1
            );
        }
        let int = |s: &str| -> Result<i64> {
            s.parse()
                .with_context(|| format!("consumer output line {}: `{line}`", i + 1))
        };
        found = Some(ConsumerLine {
            start_time: c[1].to_string(),
            end_time: c[2].to_string(),
            consumed_mib: num(&c[3]),
            mib_s: num(&c[4]),
            records: c[5]
                .parse()
                .with_context(|| format!("consumer output line {}: `{line}`", i + 1))?,
            rec_s: num(&c[6]),
            rebalance_ms: int(&c[7])?,
            fetch_ms: int(&c[8])?,
            fetch_mib_s: num(&c[9]),
            fetch_rec_s: num(&c[10]),
            warning: None,
        });
    }
    let Some(mut line) = found else {
        bail!(
            "kafka-consumer-perf-test printed no summary line (`start.time, end.time, \
             data.consumed.in.MB, …`); its last output lines:\n{}",
            tail(stdout)
        );
    };
    line.warning = warning;
    Ok(line)
}

/// The producer record of a run from its final line.
pub(crate) fn producer_result(
    total: &ProducerTotal,
    requested: u64,
    throughput: Rate,
) -> ProducerResult {
    ProducerResult {
        histograms: Default::default(),
        sent: total.sent,
        // The tool counts only successful sends and waits for every callback before its final
        // line, so the rest failed.
        failed: requested.saturating_sub(total.sent),
        rate_rec_s: total.rec_s,
        rate_mib_s: total.mib_s,
        avg_lat_ms: total.avg_lat_ms,
        max_lat_ms: total.max_lat_ms,
        p50_ms: total.p50_ms,
        p95_ms: total.p95_ms,
        p99_ms: total.p99_ms,
        p999_ms: total.p999_ms,
        elapsed_s: if total.rec_s > 0.0 {
            total.sent as f64 / total.rec_s
        } else {
            0.0
        },
        target_rec_s: throughput.as_target(),
        intended: None,
        span: None,
        // Its tool prints neither: they follow from what it does print.
        derived: vec!["failed".into(), "elapsed_s".into()],
    }
}

/// The consumer record of a run from its summary line.
pub(crate) fn consumer_result(line: &ConsumerLine) -> ConsumerResult {
    ConsumerResult {
        histograms: Default::default(),
        consumed_mib: line.consumed_mib,
        consumed_mib_s: line.mib_s,
        consumed_recs: line.records,
        consumed_rec_s: line.rec_s,
        rebalance_ms: line.rebalance_ms as f64,
        fetch_ms: Some(line.fetch_ms as f64),
        first_record_ms: None,
        fetch_mib_s: Some(line.fetch_mib_s),
        fetch_rec_s: Some(line.fetch_rec_s),
        end_to_end: None,
        per_client: Vec::new(),
        catch_up: None,
        span: None,
    }
}

fn script(name: &str) -> String {
    format!("{BIN_DIR}/{name}")
}

/// `kafka-topics.sh --create` for a single-partition, single-replica topic.
pub(crate) fn create_topic_command(bootstrap: &str, topic: &str) -> Vec<String> {
    [
        script("kafka-topics.sh").as_str(),
        "--create",
        "--if-not-exists",
        "--topic",
        topic,
        "--partitions",
        "1",
        "--replication-factor",
        "1",
        "--bootstrap-server",
        bootstrap,
    ]
    .map(String::from)
    .to_vec()
}

/// `kafka-topics.sh --delete`.
pub(crate) fn delete_topic_command(bootstrap: &str, topic: &str) -> Vec<String> {
    [
        script("kafka-topics.sh").as_str(),
        "--delete",
        "--topic",
        topic,
        "--bootstrap-server",
        bootstrap,
    ]
    .map(String::from)
    .to_vec()
}

/// `kafka-producer-perf-test.sh` as the reference ran it: the producer properties, then
/// `bootstrap.servers`.
pub(crate) fn producer_command(
    bootstrap: &str,
    topic: &str,
    num_records: u64,
    record_size: u64,
    throughput: Rate,
    properties: &[(String, String)],
) -> Vec<String> {
    let mut cmd: Vec<String> = [
        script("kafka-producer-perf-test.sh").as_str(),
        "--topic",
        topic,
        "--throughput",
        &throughput.to_string(),
        "--num-records",
        &num_records.to_string(),
        "--record-size",
        &record_size.to_string(),
        "--producer-props",
    ]
    .map(String::from)
    .to_vec();
    cmd.extend(properties.iter().map(|(k, v)| format!("{k}={v}")));
    cmd.push(format!("bootstrap.servers={bootstrap}"));
    cmd
}

/// `kafka-consumer-perf-test.sh` reading `messages` records in consumer group `group`.
pub(crate) fn consumer_command(
    bootstrap: &str,
    topic: &str,
    messages: u64,
    group: &str,
    timeout: Duration,
) -> Vec<String> {
    [
        script("kafka-consumer-perf-test.sh").as_str(),
        "--topic",
        topic,
        "--messages",
        &messages.to_string(),
        "--group",
        group,
        "--timeout",
        &timeout.as_millis().to_string(),
        "--hide-header",
        "--bootstrap-server",
        bootstrap,
    ]
    .map(String::from)
    .to_vec()
}

/// Refuses a plan this driver cannot run faithfully: client properties (TLS and the like) are
/// librdkafka settings the Java tools do not understand.
fn check_clients(suite: &Suite, scenarios: &[&Scenario]) -> Result<()> {
    let mut offenders = Vec::new();
    if !suite.client.is_empty() {
        offenders.push(format!("{} (client)", suite.file.display()));
    }
    for scenario in scenarios {
        if !scenario.client.is_empty() {
            offenders.push(format!("{} (client)", scenario.file.display()));
        }
    }
    if !offenders.is_empty() {
        bail!(
            "DRIVER=kafka-tools cannot pass client properties to Apache Kafka's tools; use \
             DRIVER=native for: {}",
            offenders.join(", ")
        );
    }
    Ok(())
}

/// Apache Kafka's perf-test scripts from `tool_image`.
pub(crate) struct KafkaToolsDriver {
    pub tool_image: String,
}

/// Refuses settings the reference's tool commands cannot follow: they run one producer, then
/// one consumer, on one partition, and report no per-record latency.
fn check_settings(settings: &Settings) -> Result<()> {
    match settings.mode {
        Mode::EndToEnd => bail!(
            "MODE=end-to-end needs DRIVER=native: Kafka's consumer perf tool reports no \
             per-record latency"
        ),
        Mode::Backlog => bail!(
            "MODE=backlog needs DRIVER=native: Kafka's perf tools cannot run a producer until a \
             consumer group has caught up"
        ),
        Mode::ProduceThenConsume => {}
    }
    for (var, n) in [
        ("PARTITIONS", settings.partitions),
        ("TOPICS", settings.topics),
        ("PRODUCERS", settings.producers),
        ("CONSUMERS", settings.consumers),
        ("REPLICATION_FACTOR", settings.replication_factor),
        ("MIN_INSYNC_REPLICAS", settings.min_insync_replicas),
    ] {
        if n != 1 {
            bail!(
                "{var}={n} needs DRIVER=native: the reference's tool commands run one producer \
                 and one consumer on one topic of one partition and one replica"
            );
        }
    }
    Ok(())
}

impl Driver for KafkaToolsDriver {
    fn check(&self, settings: &Settings, suite: &Suite, scenarios: &[&Scenario]) -> Result<()> {
        check_settings(settings)?;
        check_clients(suite, scenarios)
    }

    fn images(&self) -> Vec<String> {
        vec![self.tool_image.clone()]
    }

    fn describe(&self) -> String {
        format!(
            "Driver: kafka-tools ({}, chosen by KAFKA_TOOL_IMAGE; end offsets counted by the \
             workload image)",
            self.tool_image
        )
    }

    fn open<'a>(&'a self, place: Place<'a>) -> BoxFuture<'a, Result<Box<dyn Session>>> {
        Box::pin(async move {
            let session: Box<dyn Session> = Box::new(KafkaTools {
                engine: place.engine.clone(),
                tool_image: self.tool_image.clone(),
                network: place.network.clone(),
                cpuset: place.cpuset.clone(),
                workload: NativeSession::start(&place).await?,
            });
            Ok(session)
        })
    }
}

/// Runs the tools in one-off containers on one network; probes and end offsets come from the
/// native workload, which the tools do not offer.
pub(crate) struct KafkaTools {
    engine: Engine,
    tool_image: String,
    network: String,
    /// CPUs the tools' containers may run on (those of the load generator).
    cpuset: Option<String>,
    workload: NativeSession,
}

impl KafkaTools {
    /// Runs one script to completion and returns its stdout; a non-zero exit is an error with
    /// the end of its stderr.
    async fn tool(&self, name: &str, cmd: Vec<String>, progress: Progress<'_>) -> Result<String> {
        let spec = OneOff {
            image: self.tool_image.clone(),
            cmd: cmd.clone(),
            network: Some(self.network.clone()),
            name_hint: name.to_string(),
            // The producer tool reports its windows on stdout.
            stream_stdout: true,
            cpuset: self.cpuset.clone(),
            ..Default::default()
        };
        let out = self
            .engine
            .run_oneoff(spec, |line| progress(event(line)))
            .await
            .with_context(|| format!("running {name} from {}", self.tool_image))?;
        if out.exit_code != 0 {
            bail!(
                "`{}` exited with {}; its last output lines:\n{}",
                cmd.join(" "),
                out.exit_code,
                tail(&format!("{}\n{}", out.stdout, out.stderr))
            );
        }
        Ok(out.stdout)
    }
}

impl Session for KafkaTools {
    fn probe<'a>(&'a self, endpoint: &'a str, timeout: Duration) -> BoxFuture<'a, Result<()>> {
        self.workload.probe(endpoint, timeout)
    }

    fn create_topic<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            self.tool(
                "kafka-topics-create",
                create_topic_command(&spec.bootstrap, &spec.topic),
                &|_| {},
            )
            .await
            .map(|_| ())
        })
    }

    fn produce<'a>(
        &'a self,
        spec: &'a MeasureSpec,
        records: u64,
        progress: Progress<'a>,
    ) -> BoxFuture<'a, Result<ProducerResult>> {
        Box::pin(async move {
            let stdout = self
                .tool(
                    "kafka-producer-perf-test",
                    producer_command(
                        &spec.bootstrap,
                        &spec.topic,
                        records,
                        spec.record_size as u64,
                        spec.throughput,
                        &spec.properties,
                    ),
                    progress,
                )
                .await?;
            // Its windows were streamed to `progress` as the tool printed them.
            let produced = parse_producer_output(&stdout)?;
            Ok(producer_result(&produced.total, records, spec.throughput))
        })
    }

    fn consume<'a>(
        &'a self,
        spec: &'a MeasureSpec,
        records: u64,
        group: &'a str,
        progress: Progress<'a>,
    ) -> BoxFuture<'a, Result<ConsumerResult>> {
        Box::pin(async move {
            let stdout = self
                .tool(
                    "kafka-consumer-perf-test",
                    consumer_command(
                        &spec.bootstrap,
                        &spec.topic,
                        records,
                        group,
                        spec.consume_timeout,
                    ),
                    progress,
                )
                .await?;
            let consumed = parse_consumer_output(&stdout)?;
            if let Some(w) = &consumed.warning {
                progress(Event::Line(&format!("kafka-consumer-perf-test: {w}")));
            }
            Ok(consumer_result(&consumed))
        })
    }

    fn end_offsets<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<u64>> {
        self.workload.end_offsets(spec)
    }

    fn delete_topic<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            self.tool(
                "kafka-topics-delete",
                delete_topic_command(&spec.bootstrap, &spec.topic),
                &|_| {},
            )
            .await
            .map(|_| ())
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<()>> {
        self.workload.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // In the exact format of kafka-producer-perf-test (Kafka 3.9): periodic windows, then the
    // final line.
    const PRODUCER: &str = "\
243121 records sent, 48614.5 records/sec (47.47 MB/sec), 615.4 ms avg latency, 1354.0 ms max latency.
250272 records sent, 50054.4 records/sec (48.88 MB/sec), 627.9 ms avg latency, 759.0 ms max latency.
10000000 records sent, 48671.274214 records/sec (47.53 MB/sec), 628.71 ms avg latency, 1354.00 ms max latency, 625 ms 50th, 669 ms 95th, 692 ms 99th, 1326 ms 99.9th.
";

    // The line the reference script quotes from kafka-consumer-perf-test --hide-header.
    const CONSUMER: &str = "2024-02-21 19:36:23:839, 2024-02-21 19:36:24:256, 0.9766, 2.3419, 1000, 2398.0815, 364, 53, 18.4257, 18867.9245\n";

    #[test]
    fn producer_windows_and_final_line() {
        let out = parse_producer_output(PRODUCER).unwrap();
        assert_eq!(out.windows.len(), 2);
        assert_eq!(
            out.windows[1],
            ProducerWindow {
                records: 250272,
                rec_s: 50054.4,
                mib_s: 48.88,
                avg_lat_ms: 627.9,
                max_lat_ms: 759.0,
            }
        );
        assert_eq!(
            out.total,
            ProducerTotal {
                sent: 10_000_000,
                rec_s: 48671.274214,
                mib_s: 47.53,
                avg_lat_ms: 628.71,
                max_lat_ms: 1354.0,
                p50_ms: 625.0,
                p95_ms: 669.0,
                p99_ms: 692.0,
                p999_ms: 1326.0,
            }
        );
        let r = producer_result(&out.total, 10_000_000, Rate::Unlimited);
        assert_eq!((r.sent, r.failed), (10_000_000, 0));
        assert_eq!(r.rate_mib_s, 47.53);
        assert!((r.elapsed_s - 10_000_000.0 / 48671.274214).abs() < 1e-9);
        assert_eq!(r.target_rec_s, -1.0);
    }

    #[test]
    fn producer_final_line_alone_and_among_log_lines() {
        let text = "[2024-05-01 10:00:00,000] WARN something (org.apache.kafka.clients.NetworkClient)\n\
                    1000 records sent, 2398.081535 records/sec (2.34 MB/sec), 12.50 ms avg latency, 300.00 ms max latency, 8 ms 50th, 40 ms 95th, 290 ms 99th, 300 ms 99.9th.\n";
        let out = parse_producer_output(text).unwrap();
        assert!(out.windows.is_empty());
        assert_eq!(out.total.sent, 1000);
        assert_eq!(out.total.p999_ms, 300.0);
        // Fewer acknowledged than requested: the rest failed.
        assert_eq!(
            producer_result(&out.total, 1200, Rate::per_second(500).unwrap()).failed,
            200
        );
    }

    #[test]
    fn producer_steady_state_total_is_not_the_run_total() {
        let text = format!(
            "{PRODUCER}In steady state.\n9000000 steady state records sent, 49000.000000 records/sec (47.85 MB/sec), 600.00 ms avg latency, 900.00 ms max latency, 600 ms 50th, 650 ms 95th, 690 ms 99th, 800 ms 99.9th.\n"
        );
        assert_eq!(parse_producer_output(&text).unwrap().total.sent, 10_000_000);
    }

    #[test]
    fn malformed_producer_line_is_quoted() {
        let bad = "1000 records sent, 2398,08 records/sec (2,34 MB/sec), 12,50 ms avg latency, 300,00 ms max latency.";
        let err = parse_producer_output(&format!("{bad}\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("malformed") && err.contains(bad), "{err}");
        let truncated = "10000000 records sent, 48671.274214 records/sec (47.53 MB/sec), 628.71 ms avg latency, 1354.00 ms max latency, 625 ms 50th";
        let err = parse_producer_output(truncated).unwrap_err().to_string();
        assert!(err.contains(truncated), "{err}");
    }

    #[test]
    fn missing_producer_final_line_names_the_output_tail() {
        let text = "243121 records sent, 48614.5 records/sec (47.47 MB/sec), 615.4 ms avg latency, 1354.0 ms max latency.\n\
                    org.apache.kafka.common.errors.TimeoutException: Topic t not present in metadata after 60000 ms.\n";
        let err = parse_producer_output(text).unwrap_err().to_string();
        assert!(
            err.contains("no final line") && err.contains("TimeoutException"),
            "{err}"
        );
        let err = parse_producer_output("").unwrap_err().to_string();
        assert!(err.contains("(no output)"), "{err}");
    }

    #[test]
    fn second_producer_final_line_is_an_error() {
        let text = format!("{PRODUCER}{PRODUCER}");
        let err = parse_producer_output(&text).unwrap_err().to_string();
        assert!(err.contains("second final line"), "{err}");
    }

    #[test]
    fn consumer_line() {
        let line = parse_consumer_output(CONSUMER).unwrap();
        assert_eq!(
            line,
            ConsumerLine {
                start_time: "2024-02-21 19:36:23:839".into(),
                end_time: "2024-02-21 19:36:24:256".into(),
                consumed_mib: 0.9766,
                mib_s: 2.3419,
                records: 1000,
                rec_s: 2398.0815,
                rebalance_ms: 364,
                fetch_ms: 53,
                fetch_mib_s: 18.4257,
                fetch_rec_s: 18867.9245,
                warning: None,
            }
        );
        let r = consumer_result(&line);
        assert_eq!(r.consumed_recs, 1000);
        assert_eq!((r.rebalance_ms, r.fetch_ms), (364.0, Some(53.0)));
        assert_eq!(r.fetch_rec_s, Some(18867.9245));
    }

    #[test]
    fn consumer_header_warning_and_non_finite_rates() {
        let text = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n\
                    WARNING: Exiting before consuming the expected number of messages: timeout (10000 ms) exceeded. You can use the --timeout option to increase the timeout.\n\
                    2024-02-21 19:36:23:839, 2024-02-21 19:36:33:839, 0.0000, 0.0000, 0, 0.0000, 300, 0, NaN, NaN\n";
        let line = parse_consumer_output(text).unwrap();
        assert_eq!(line.records, 0);
        assert!(line.fetch_mib_s.is_nan());
        assert!(line
            .warning
            .unwrap()
            .contains("timeout (10000 ms) exceeded"));
    }

    #[test]
    fn malformed_consumer_line_is_quoted() {
        let bad = "2024-02-21 19:36:23:839, 2024-02-21 19:36:24:256, 0.9766, 2.3419, 1000";
        let err = parse_consumer_output(bad).unwrap_err().to_string();
        assert!(err.contains("malformed") && err.contains(bad), "{err}");
        let detailed = "2024-02-21 19:36:28:839, 0, 4.8828, 0.9766, 5000, 1000.0000, 364, 4636, 1.0532, 1078.5159";
        let err = parse_consumer_output(detailed).unwrap_err().to_string();
        assert!(err.contains(detailed), "{err}");
    }

    #[test]
    fn missing_or_repeated_consumer_line_is_an_error() {
        let err = parse_consumer_output("Exception in thread \"main\" java.lang.IllegalArgumentException: Missing required option(s) [bootstrap-server]\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no summary line") && err.contains("Missing required option"),
            "{err}"
        );
        let err = parse_consumer_output(&format!("{CONSUMER}{CONSUMER}"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("second summary line"), "{err}");
    }

    #[test]
    fn commands_are_the_reference_invocations() {
        let props = vec![
            ("acks".to_string(), "all".to_string()),
            ("linger.ms".to_string(), "5".to_string()),
        ];
        assert_eq!(
            producer_command("kroxylicious:9092", "t", 1000, 1024, Rate::Unlimited, &props).join(" "),
            "/opt/kafka/bin/kafka-producer-perf-test.sh --topic t --throughput -1 --num-records 1000 \
             --record-size 1024 --producer-props acks=all linger.ms=5 bootstrap.servers=kroxylicious:9092"
        );
        assert_eq!(
            consumer_command("broker1:9092", "t", 1000, "g", Duration::from_secs(60)).join(" "),
            "/opt/kafka/bin/kafka-consumer-perf-test.sh --topic t --messages 1000 --group g \
             --timeout 60000 --hide-header --bootstrap-server broker1:9092"
        );
        assert_eq!(
            create_topic_command("broker1:9092", "t").join(" "),
            "/opt/kafka/bin/kafka-topics.sh --create --if-not-exists --topic t --partitions 1 \
             --replication-factor 1 --bootstrap-server broker1:9092"
        );
        assert_eq!(
            delete_topic_command("broker1:9092", "t").join(" "),
            "/opt/kafka/bin/kafka-topics.sh --delete --topic t --bootstrap-server broker1:9092"
        );
    }
}
