//! What produces and consumes, seen from the host.
//!
//! A [`Driver`] is chosen once per run ([`for_settings`]); for each place it measures in (the
//! run-wide services, then each scenario) it opens a [`Session`] that offers primitive steps:
//! probe an endpoint, create a topic, produce N records, consume N records, count end offsets,
//! delete a topic. The one measurement flow ([`flow`]) puts them in order, checks the counters
//! and times every step, whichever driver supplies them.
//!
//! - [`native`]: the built-in librdkafka workload (`crate::workload`), one long-lived container
//!   per session on the scenario network, each step an `exec` of `perf-tests workload <step>`;
//! - [`kafka_tools`]: Apache Kafka's perf-test scripts in one-off containers.
//!
//! [`spread::Spread`] makes several sessions (`LOAD_GENERATORS`) one.

pub mod flow;
pub mod kafka_tools;
pub mod native;
mod path_check;
pub mod spread;

pub(crate) use path_check::path_check;

use std::time::Duration;

use anyhow::Result;
use futures_util::future::BoxFuture;

use crate::model::{ConsumerResult, ProducerResult};
use crate::scenario::{Scenario, Suite};
use crate::settings::rate::Rate;
use crate::settings::{Mode, Settings};
use crate::world::engine::Engine;

pub(crate) use crate::workload::args::Endpoint;
pub(crate) use crate::workload::catch_up::CatchUpResult;
pub(crate) use crate::workload::soak::SoakResult;
pub(crate) use crate::workload::verify::{VerifySpec, SAMPLE_RECORDS};

/// A warm-up that goes on while a sampled JVM's JIT compilers used at least `percent` of its
/// CPU over the last `window`, for at most `limit` longer than the warm-up by time.
#[derive(Debug, Clone, PartialEq)]
pub struct JitQuiet {
    pub percent: u64,
    pub window: Duration,
    pub limit: Duration,
}

/// No record for this long while consuming fails the measurement instead of hanging.
pub(crate) const CONSUME_TIMEOUT: Duration = Duration::from_secs(60);

/// Everything one measurement needs.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasureSpec {
    pub bootstrap: String,
    /// The topic's name, or with several topics the stem of their names ([`Self::topic_names`]).
    pub topic: String,
    /// Topics the records are spread over, each with `partitions` partitions.
    pub topics: u32,
    pub num_records: u64,
    pub record_size: usize,
    pub throughput: Rate,
    /// Producer properties (Java or librdkafka names).
    pub properties: Vec<(String, String)>,
    /// Records produced and consumed through the same path before measuring; not reported.
    pub warm_up_records: u64,
    /// The warm-up is repeated, round after round, until this much time has passed.
    pub warm_up_for: Duration,
    /// Then, if set, until the JIT compilers have gone quiet.
    pub warm_up_jit: Option<JitQuiet>,
    /// The consumer fails when no record arrives for this long.
    pub consume_timeout: Duration,
    /// Delete the topic at the end (also after a failure).
    pub delete_topic: bool,
    /// How producer and consumer run: one after the other, at once (end-to-end latencies
    /// kept), or a group catching up with a backlog while a producer keeps sending.
    pub mode: Mode,
    /// How long a group catching up with a backlog may take (MODE=backlog).
    pub catch_up_limit: Duration,
    /// With MODE=end-to-end: produce for this long instead of `num_records` records (DURATION).
    pub duration: Option<Duration>,
    /// The first part of `duration`, in the series but not in the figures.
    pub duration_warm_up: Duration,
    pub partitions: i32,
    pub replication_factor: i32,
    /// The measured topics' `min.insync.replicas`.
    pub min_insync_replicas: i32,
    /// Producers sharing the records and the rate (their figures merged).
    pub producers: u32,
    /// Consumers of the one consumer group (their figures merged).
    pub consumers: u32,
}

impl MeasureSpec {
    /// What the workload is asked to measure under `settings`, in the topic (or the stem of
    /// the topics) `topic` at `bootstrap`: every measured setting that reaches the workload goes
    /// through here, once.
    pub(crate) fn from_settings(settings: &Settings, bootstrap: &str, topic: &str) -> Self {
        let secs = Duration::from_secs;
        MeasureSpec {
            bootstrap: bootstrap.to_string(),
            topic: topic.to_string(),
            topics: settings.topics,
            num_records: settings.num_records,
            record_size: settings.record_size as usize,
            throughput: settings.throughput,
            properties: settings.producer_properties.clone(),
            warm_up_records: settings.warm_up_pre_test,
            warm_up_for: settings.warm_up_for_pre_test,
            warm_up_jit: (settings.warm_up_jit_percent > 0).then(|| JitQuiet {
                percent: settings.warm_up_jit_percent,
                window: secs(crate::settings::WARM_UP_JIT_WINDOW_SECONDS),
                limit: secs(crate::settings::WARM_UP_JIT_LIMIT_SECONDS),
            }),
            consume_timeout: CONSUME_TIMEOUT,
            delete_topic: true,
            mode: settings.mode,
            catch_up_limit: settings.catch_up_limit,
            duration: settings.duration,
            duration_warm_up: settings.duration_warm_up,
            partitions: settings.partitions as i32,
            replication_factor: settings.replication_factor as i32,
            min_insync_replicas: settings.min_insync_replicas as i32,
            producers: settings.producers,
            consumers: settings.consumers,
        }
    }

    /// `num_records` records measured as the default settings measure them (1 KiB records at
    /// full speed, `acks=all`, 1000 warm-up records, one topic of one partition, deleted at the
    /// end).
    pub fn new(bootstrap: impl Into<String>, topic: impl Into<String>, num_records: u64) -> Self {
        MeasureSpec {
            num_records,
            ..MeasureSpec::from_settings(
                &Settings::without_commit(),
                &bootstrap.into(),
                &topic.into(),
            )
        }
    }

    /// This measurement with its producers unlimited: a warm-up's or a backlog's records go
    /// out at full speed.
    pub(crate) fn at_full_speed(&self) -> MeasureSpec {
        MeasureSpec {
            throughput: Rate::Unlimited,
            ..self.clone()
        }
    }

    /// What the built-in workload produces for this measurement: `records` of it (`MAX_COUNT`
    /// for producers a step stops itself), every client with `client`.
    pub fn produce_config(
        &self,
        client: &[(String, String)],
        records: u64,
    ) -> crate::workload::ProduceConfig {
        crate::workload::ProduceConfig {
            endpoint: Endpoint::new(&self.bootstrap, client),
            topics: self.topic_names(),
            num_records: records,
            record_size: self.record_size,
            throughput: self.throughput,
            properties: self.properties.clone(),
        }
    }

    /// The built-in workload's group `group` reading exactly `records` of this measurement.
    pub fn consume_config(
        &self,
        client: &[(String, String)],
        records: u64,
        group: &str,
    ) -> crate::workload::ConsumeConfig {
        crate::workload::ConsumeConfig {
            endpoint: Endpoint::new(&self.bootstrap, client),
            topics: self.topic_names(),
            group_id: group.to_string(),
            expected: records,
            timeout: self.consume_timeout.into(),
            consumers: self.consumers,
            end_to_end: self.mode == Mode::EndToEnd,
        }
    }

    /// The topics measured: `topic` itself, or `topic-1` … `topic-N` with several.
    pub fn topic_names(&self) -> Vec<String> {
        match self.topics {
            0 | 1 => vec![self.topic.clone()],
            n => (1..=n).map(|i| format!("{}-{i}", self.topic)).collect(),
        }
    }
}

/// Where a session measures: on which engine and network, with which client properties.
#[derive(Debug, Clone)]
pub(crate) struct Place<'a> {
    pub engine: &'a Engine,
    /// The workload image (this executable, packaged).
    pub workload_image: &'a str,
    /// The network the session's containers join (a deployment's network).
    pub network: String,
    /// Client properties of every client (security and the like).
    pub client: Vec<(String, String)>,
    /// Bind mounts of the session's containers, `host:container[:ro]` (TLS material).
    pub binds: Vec<String>,
    /// CPUs the session's containers may run on; all when unset.
    pub cpuset: Option<String>,
}

/// What a step reports while it runs; each driver reads its own output into these, so the flow
/// counts records without knowing any driver's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// A producer's window: this many more records sent.
    Sent(u64),
    /// A consumer's count: this many records consumed so far by the step.
    Consumed(u64),
    /// The consumer's partitions are assigned: a producer started now loses no record to the
    /// group forming.
    Assigned,
    /// A producer's own summary (the flow prints its own, once, from the result).
    Summary,
    /// Any other line the step printed, shown as it is.
    Line(&'a str),
}

/// Receives a step's [`Event`]s while it runs.
pub type Progress<'a> = &'a (dyn Fn(Event<'_>) + Send + Sync);

/// The records of a producer window line, in the format of Apache Kafka's producer perf tool
/// (`N records sent, …`), which the native workload prints too.
pub(crate) fn window_records(line: &str) -> Option<u64> {
    line.trim()
        .split_once(" records sent, ")
        .and_then(|(n, _)| n.parse::<u64>().ok())
}

/// Whether `line` is a producer's final summary in that format (it ends with the 99.9th
/// percentile).
pub(crate) fn is_summary(line: &str) -> bool {
    line.contains(" ms 99.9th.")
}

/// A way to produce and consume, chosen once per run.
pub(crate) trait Driver: Send + Sync {
    /// Refuses a combination of the run's settings, with the suite and the scenarios it
    /// selected, that it cannot run faithfully; called by the plan, before anything starts.
    fn check(&self, _settings: &Settings, _suite: &Suite, _scenarios: &[&Scenario]) -> Result<()> {
        Ok(())
    }
    /// Images it runs besides the workload image and the Compose services' (had before the
    /// first container starts).
    fn images(&self) -> Vec<String> {
        Vec::new()
    }
    /// One line for `--dry-run`: what measures, from which image.
    fn describe(&self) -> String;
    /// Opens a session at `place`; close it with [`Session::close`].
    fn open<'a>(&'a self, place: Place<'a>) -> BoxFuture<'a, Result<Box<dyn Session>>>;
}

/// Primitive steps against Kafka endpoints at one place; [`flow`] orders them.
pub trait Session: Send + Sync {
    /// Refuses a measurement before any request is made (an unknown property, say).
    fn check(&self, _spec: &MeasureSpec) -> Result<()> {
        Ok(())
    }
    /// Waits until `endpoint` answers a Kafka metadata request.
    fn probe<'a>(&'a self, endpoint: &'a str, timeout: Duration) -> BoxFuture<'a, Result<()>>;
    /// Creates the topics of `spec` (partitions, replication factor) and waits until they are
    /// visible.
    fn create_topic<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<()>>;
    /// Produces `records` records of `spec.record_size` bytes at `spec.throughput` with
    /// `spec.properties`, and reports them.
    fn produce<'a>(
        &'a self,
        spec: &'a MeasureSpec,
        records: u64,
        progress: Progress<'a>,
    ) -> BoxFuture<'a, Result<ProducerResult>>;
    /// Consumes exactly `records` records of the topics of `spec` in consumer group `group` (which
    /// commits what it read) and reports them.
    fn consume<'a>(
        &'a self,
        spec: &'a MeasureSpec,
        records: u64,
        group: &'a str,
        progress: Progress<'a>,
    ) -> BoxFuture<'a, Result<ConsumerResult>>;
    /// Resumes group `group` with `backlog` records waiting while a live producer sends at
    /// `spec.throughput`, until the group's lag is down or `spec.catch_up_limit` passed
    /// (MODE=backlog); reports the live producer and the group, its `catch_up` set.
    fn catch_up<'a>(
        &'a self,
        _spec: &'a MeasureSpec,
        _backlog: u64,
        _group: &'a str,
        _progress: Progress<'a>,
    ) -> BoxFuture<'a, Result<CatchUpResult>> {
        Box::pin(async { anyhow::bail!("this driver cannot run a catch-up (MODE=backlog)") })
    }
    /// Produces at `spec.throughput` for `spec.duration` while group `group` consumes, then
    /// lets the group read what is left (DURATION); reports the figures after the warm-up and
    /// every second.
    fn soak<'a>(
        &'a self,
        _spec: &'a MeasureSpec,
        _group: &'a str,
        _progress: Progress<'a>,
    ) -> BoxFuture<'a, Result<SoakResult>> {
        Box::pin(async { anyhow::bail!("this driver cannot run for a DURATION") })
    }
    /// Records in the topics (end offsets minus start offsets, summed).
    fn end_offsets<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<u64>>;
    /// Deletes the topics of `spec`.
    fn delete_topic<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<()>>;
    /// Releases what the session holds (its containers).
    fn close(&self) -> BoxFuture<'_, Result<()>>;
    /// The containers the session measures from that live as long as it does, as
    /// `(name in the Resources table, container id)`, so they are sampled like the services.
    /// None by default (a driver whose steps run in one-off containers).
    fn measured_containers(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// The last few lines of `text`, for errors about output that lacks what was expected.
pub(crate) fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(5);
    if lines.is_empty() {
        "(no output)".to_string()
    } else {
        lines[start..]
            .iter()
            .map(|l| format!("  | {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// How a driver is made for a run's settings.
type MakeDriver = fn(&Settings) -> Box<dyn Driver>;

/// Every driver under its `DRIVER` name: a new driver is its own module and one entry here.
pub(crate) const DRIVERS: &[(&str, MakeDriver)] = &[
    ("native", |_| Box::new(native::Native)),
    ("kafka-tools", |settings| {
        Box::new(kafka_tools::KafkaToolsDriver {
            tool_image: settings.kafka_tool_image.clone(),
        })
    }),
];

/// The driver `settings.driver` names; the one place a driver is chosen. An unknown name is
/// refused with the names there are.
pub(crate) fn for_settings(settings: &Settings) -> Result<Box<dyn Driver>> {
    let name = settings.driver.as_str();
    match DRIVERS.iter().find(|(n, _)| *n == name) {
        Some((_, make)) => Ok(make(settings)),
        None => {
            let names: Vec<&str> = DRIVERS.iter().map(|(n, _)| *n).collect();
            anyhow::bail!(
                "DRIVER={name:?}: unknown driver (expected {})",
                names.join(" or ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drivers_are_chosen_by_name_and_an_unknown_one_is_refused() {
        let mut settings = Settings::without_commit();
        assert_eq!(settings.driver, "native");
        assert!(for_settings(&settings)
            .unwrap()
            .describe()
            .contains("native"));
        settings.driver = "kafka-tools".into();
        assert!(for_settings(&settings)
            .unwrap()
            .describe()
            .contains("perf-tests/kafka-tools:4.4.0"));
        settings.driver = "rdkafka".into();
        let err = for_settings(&settings).err().unwrap().to_string();
        assert_eq!(
            err,
            "DRIVER=\"rdkafka\": unknown driver (expected native or kafka-tools)"
        );
    }

    #[test]
    fn one_topic_keeps_its_name_and_several_are_numbered_from_it() {
        let mut spec = MeasureSpec::new("b:9092", "perf-tests-02-proxy", 10);
        assert_eq!(spec.topic_names(), ["perf-tests-02-proxy"]);
        spec.topics = 3;
        assert_eq!(
            spec.topic_names(),
            [
                "perf-tests-02-proxy-1",
                "perf-tests-02-proxy-2",
                "perf-tests-02-proxy-3"
            ]
        );
    }
}
