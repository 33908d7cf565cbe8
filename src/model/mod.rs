//! Plain result records handed from the workload to reports, results files and comparison.
//!
//! Field names follow the reference tables; units are in the names so that the JSON
//! files read without a schema.

use serde::{Deserialize, Serialize};

pub mod pair;
pub mod run;

/// What the producer side of one measured scenario did (kafka-producer-perf-test semantics).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProducerResult {
    /// Acknowledged records.
    pub sent: u64,
    /// Records that failed delivery (never hidden).
    pub failed: u64,
    /// Records / seconds from the first send to the last acknowledgement.
    pub rate_rec_s: f64,
    /// Records x record size / 2^20 / seconds.
    pub rate_mib_s: f64,
    pub avg_lat_ms: f64,
    pub max_lat_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    /// Seconds from the first send to the last acknowledgement.
    pub elapsed_s: f64,
    /// Requested throughput in records/s (-1 is unlimited).
    pub target_rec_s: f64,
    /// With a THROUGHPUT target: latency measured from each record's intended send time on the
    /// schedule, not from when the producer got to send it, so a stall that held sends back
    /// cannot hide behind them (coordinated omission). `None` unthrottled, or from a tool that
    /// does not measure it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intended: Option<LatencySummary>,
    /// Every record's latency in HdrHistogram's compressed form (see
    /// `crate::workload::latency::Latencies::encoded`), by distribution ([`SEND`], [`INTENDED`]); empty
    /// from a tool that keeps none, and in a summary of repetitions (each repetition has its
    /// own).
    #[serde(default, skip_serializing_if = "Histograms::is_empty")]
    pub histograms: Histograms,
    /// When the producer's figures were measured (the span `elapsed_s` is: first send to last
    /// acknowledgement; a run bounded by time's measured seconds), which its `histograms` hold;
    /// `None` from a tool that does not say, and in a summary of repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<Span>,
    /// The figures above that were worked out from others rather than measured, by field name:
    /// the kafka-tools driver's `failed` (the records asked for less those its tool reports
    /// sent) and `elapsed_s` (sent / its rate). Empty when every figure was measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub derived: Vec<String>,
}

/// Latency histograms by distribution, each in HdrHistogram's compressed form (µs).
pub(crate) type Histograms = std::collections::BTreeMap<String, String>;

/// A stretch of wall-clock time on the host's clock.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Span {
    /// Its start, in Unix seconds.
    pub start_unix_s: f64,
    /// Its length in seconds.
    pub length_s: f64,
}

impl Span {
    /// From `start` for `length` (a span measured on a monotonic clock, dated by the wall clock
    /// now).
    pub(crate) fn since(start: std::time::Instant, length: std::time::Duration) -> Span {
        let now = std::time::Instant::now();
        let unix_now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let start_unix_s = match now.checked_duration_since(start) {
            Some(ago) => unix_now - ago.as_secs_f64(),
            None => unix_now + start.duration_since(now).as_secs_f64(),
        };
        Span {
            start_unix_s,
            length_s: length.as_secs_f64(),
        }
    }
}

/// The distribution of latencies from each send call to its acknowledgement.
pub(crate) const SEND: &str = "send";
/// The distribution of latencies from each record's intended send time to its acknowledgement.
pub(crate) const INTENDED: &str = "intended";
/// The distribution of latencies from each record's send to its receipt by the consumer.
pub(crate) const END_TO_END: &str = "end-to-end";

/// The latencies of records, in milliseconds: a producer's from each record's intended send
/// time to its acknowledgement (`intended`), a consumer's from each record's send to its receipt
/// (`end_to_end`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencySummary {
    pub avg_lat_ms: f64,
    pub max_lat_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    /// The 99.99th percentile (0 in results recorded before it was).
    #[serde(default)]
    pub p9999_ms: f64,
}

/// What the consumer side did (kafka-consumer-perf-test semantics).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConsumerResult {
    /// Bytes of record values consumed / 2^20.
    pub consumed_mib: f64,
    pub consumed_mib_s: f64,
    pub consumed_recs: u64,
    pub consumed_rec_s: f64,
    /// Subscribe until partitions are assigned.
    pub rebalance_ms: f64,
    /// Total consume time minus rebalance time; absent where the group had no fetch of its own
    /// to time (a run bounded by time, whose group reads while the producers send).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch_ms: Option<f64>,
    /// Subscribe until the group's first record arrived (native driver). Fetch time counts from
    /// the assignment, so it includes fetching the committed offsets and the first fetch;
    /// librdkafka's `rdkafka_performance` counts its consumer's rate from the first record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_record_ms: Option<f64>,
    /// The consumed MiB and records over the fetch time; absent with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch_mib_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch_rec_s: Option<f64>,
    /// With MODE=end-to-end: each record's latency from its send (the record's timestamp, set
    /// by the producer) to its receipt by the consumer, both on the host's clock. `None` in the
    /// produce-then-consume mode, where it would measure the wait for the consumer to start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_to_end: Option<LatencySummary>,
    /// With several consumers (CONSUMERS): the records each consumed, so a skew between them
    /// shows; empty with one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_client: Vec<u64>,
    /// With MODE=backlog: how the group, stopped while a backlog was produced, caught up while a
    /// producer kept sending. The rates above are then those of the catch-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<CatchUp>,
    /// The end-to-end latencies in HdrHistogram's compressed form ([`END_TO_END`]), as the
    /// producer's `histograms`.
    #[serde(default, skip_serializing_if = "Histograms::is_empty")]
    pub histograms: Histograms,
    /// When the consumer's figures were measured (subscribe to the last record; a run bounded
    /// by time's measured seconds), which its `histograms` hold; `None` from a tool that does
    /// not say, and in a summary of repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<Span>,
}

/// How a consumer group caught up with a backlog while a live producer kept sending at a fixed
/// rate (MODE=backlog). Its lag is counted as OMB's backlog test counts it: records acknowledged
/// (the backlog's and the live producer's) minus records consumed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CatchUp {
    /// Records waiting for the group when it resumed.
    pub backlog: u64,
    /// The live producer's target rate and the rate it reached meanwhile, records/s.
    pub live_target_rec_s: f64,
    pub live_rec_s: f64,
    /// The lag the group had to come down to (records the live producer sends in 100 ms, at
    /// least 1000, as OMB's).
    pub lag_bound: u64,
    /// Seconds from the group's resumption (its subscription) until its lag first came down to
    /// `lag_bound`; `None` when it did not within the limit.
    pub caught_up_s: Option<f64>,
    /// The lag when the catch-up ended: at most `lag_bound` once caught up.
    pub final_lag: u64,
}

/// Independent counters of the records of one measurement; they must agree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Integrity {
    /// Records the producer was asked to send.
    pub requested: u64,
    /// Records acknowledged by the broker.
    pub acknowledged: u64,
    /// Sum over partitions of (end offset - start offset) attributable to the measurement.
    pub end_offsets: u64,
    /// Records the consumer received.
    pub consumed: u64,
}

impl Integrity {
    pub fn is_ok(&self) -> bool {
        self.requested == self.acknowledged
            && self.acknowledged == self.end_offsets
            && self.end_offsets == self.consumed
    }

    /// A short human description of the disagreement, if any.
    pub(crate) fn problem(&self) -> Option<String> {
        if self.is_ok() {
            return None;
        }
        Some(format!(
            "requested {} acknowledged {} end-offsets {} consumed {}",
            self.requested, self.acknowledged, self.end_offsets, self.consumed
        ))
    }
}

/// What the broker must hold for a record the workload sent through the path under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BrokerHolds {
    /// The record as sent.
    Unchanged,
    /// The record with its ASCII letters upper-cased.
    UpperCased,
    /// Not the record, and no stretch of it readable.
    Encrypted,
}

/// What the consumer must receive for a record it sent through the path under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ConsumerReceives {
    /// The record as sent.
    Sent,
    /// The record with its ASCII letters upper-cased.
    UpperCased,
}

/// A scenario's declaration of what its path does to records (`expect:` in scenario.yaml).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::Args, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// What the broker must hold: unchanged, upper-cased or encrypted.
    #[arg(long = "broker-holds")]
    pub broker: BrokerHolds,
    /// What the consumer must receive: sent or upper-cased.
    #[arg(long = "consumer-receives")]
    pub consumer: ConsumerReceives,
}

macro_rules! kebab_names {
    ($t:ty { $($v:ident => $n:literal),* $(,)? }) => {
        impl $t {
            pub(crate) const NAMES: &'static [&'static str] = &[$($n),*];
            pub fn name(self) -> &'static str {
                match self { $(Self::$v => $n),* }
            }
        }
        impl std::str::FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($n => Ok(Self::$v),)*
                    _ => Err(format!("{s:?} is not one of {}", Self::NAMES.join(", "))),
                }
            }
        }
    };
}
kebab_names!(BrokerHolds { Unchanged => "unchanged", UpperCased => "upper-cased", Encrypted => "encrypted" });
kebab_names!(ConsumerReceives { Sent => "sent", UpperCased => "upper-cased" });

/// The outcome of checking a scenario's `expect:` on sample records: each was read back
/// through the scenario's endpoint and straight from the broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PathCheck {
    pub expect: Expect,
    /// Where the records were read straight from.
    pub direct: String,
    /// Records sent through the endpoint.
    pub records: u64,
    /// Records the broker held as expected.
    pub broker_ok: u64,
    /// Records the consumer received as expected.
    pub consumer_ok: u64,
    /// The first record that was not as expected, described.
    pub first_mismatch: Option<String>,
    /// The broker that led each of the check's partitions (one per broker of a cluster), as
    /// the brokers say: each took its share of the sample through the path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leaders: Vec<i32>,
}

impl PathCheck {
    /// Every record as expected both ways, and no broker leading two of the check's partitions
    /// (so the sample crossed the path to as many brokers as it has partitions).
    pub(crate) fn holds(&self) -> bool {
        self.records > 0
            && self.broker_ok == self.records
            && self.consumer_ok == self.records
            && self.leaders_distinct()
    }

    fn leaders_distinct(&self) -> bool {
        let distinct: std::collections::BTreeSet<i32> = self.leaders.iter().copied().collect();
        distinct.len() == self.leaders.len()
    }

    /// "broker holds encrypted 20/20, consumer receives sent 20/20", and with several
    /// partitions ", through leaders 1, 2, 3".
    pub(crate) fn summary(&self) -> String {
        let mut s = format!(
            "broker holds {} {}/{}, consumer receives {} {}/{}",
            self.expect.broker.name(),
            self.broker_ok,
            self.records,
            self.expect.consumer.name(),
            self.consumer_ok,
            self.records
        );
        if self.leaders.len() > 1 {
            let ids: Vec<String> = self.leaders.iter().map(i32::to_string).collect();
            s.push_str(&format!(", through partition leaders {}", ids.join(", ")));
            if !self.leaders_distinct() {
                s.push_str(" (a broker led two partitions: not every broker was reached)");
            }
        }
        s
    }
}

/// One measurement (produce then consume) of one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Measurement {
    pub producer: ProducerResult,
    pub consumer: ConsumerResult,
    pub integrity: Integrity,
    /// Wall-clock seconds of each step of the measurement (create topic, warm-up, produce, end
    /// offsets, consume, delete topic), so the harness's own cost is visible.
    #[serde(default)]
    pub steps_s: std::collections::BTreeMap<String, f64>,
    /// With DURATION: what happened in each second of the run, warm-up included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<Second>,
    /// What each sampled service used over exactly each measured phase (see `crate::accounting::cost`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cost: Vec<crate::accounting::cost::PhaseCost>,
    /// The profiles recorded over each measured phase (`PROFILE`, see `crate::world::profile`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<Recording>,
    /// In a paired run, side B's measurement, made in the same phase as this one (side A's);
    /// its cost is in this one's (see `crate::analysis::pair`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<Box<Measurement>>,
}

/// One second of a DURATION run: what the producers had acknowledged and the group had
/// consumed in it, the lag at its end, and the latencies of its records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Second {
    /// Seconds since the start, at the end of this one.
    pub t_s: u64,
    /// Within the warm-up: shown, but left out of the run's figures.
    pub warm_up: bool,
    /// Records acknowledged to the producers in this second.
    pub produced: u64,
    /// Records the group consumed in this second.
    pub consumed: u64,
    /// Records acknowledged but not yet consumed at the end of this second.
    pub lag: u64,
    /// Latency from the send call to the acknowledgement of this second's records (0 without any).
    pub produce_p50_ms: f64,
    pub produce_p99_ms: f64,
    pub produce_max_ms: f64,
    /// Latency from the send to the receipt of the records received in this second.
    pub e2e_p50_ms: f64,
    pub e2e_p99_ms: f64,
    pub e2e_max_ms: f64,
}

impl Measurement {
    /// The median summary of repetitions: every rate, latency and time is the median over the
    /// repetitions; the counters come from the worst repetition (one whose counters disagree or
    /// whose sends failed, else the first), so a problem in any repetition stays visible.
    pub(crate) fn summary(reps: &[Measurement]) -> Measurement {
        assert!(!reps.is_empty(), "a summary needs at least one measurement");
        let med = |f: fn(&Measurement) -> f64| {
            crate::accounting::stats::median(&reps.iter().map(f).collect::<Vec<_>>())
        };
        let worst = reps
            .iter()
            .find(|m| !m.integrity.is_ok() || m.producer.failed > 0)
            .unwrap_or(&reps[0]);
        Measurement {
            producer: ProducerResult {
                histograms: Default::default(),
                sent: worst.producer.sent,
                failed: worst.producer.failed,
                rate_rec_s: med(|m| m.producer.rate_rec_s),
                rate_mib_s: med(|m| m.producer.rate_mib_s),
                avg_lat_ms: med(|m| m.producer.avg_lat_ms),
                max_lat_ms: med(|m| m.producer.max_lat_ms),
                p50_ms: med(|m| m.producer.p50_ms),
                p95_ms: med(|m| m.producer.p95_ms),
                p99_ms: med(|m| m.producer.p99_ms),
                p999_ms: med(|m| m.producer.p999_ms),
                elapsed_s: med(|m| m.producer.elapsed_s),
                target_rec_s: worst.producer.target_rec_s,
                intended: latency_summary(reps, |m| m.producer.intended.as_ref()),
                span: None,
                derived: worst.producer.derived.clone(),
            },
            consumer: ConsumerResult {
                histograms: Default::default(),
                consumed_mib: med(|m| m.consumer.consumed_mib),
                consumed_mib_s: med(|m| m.consumer.consumed_mib_s),
                consumed_recs: worst.consumer.consumed_recs,
                consumed_rec_s: med(|m| m.consumer.consumed_rec_s),
                rebalance_ms: med(|m| m.consumer.rebalance_ms),
                fetch_ms: median_of(reps, |m| m.consumer.fetch_ms),
                first_record_ms: median_of(reps, |m| m.consumer.first_record_ms),
                fetch_mib_s: median_of(reps, |m| m.consumer.fetch_mib_s),
                fetch_rec_s: median_of(reps, |m| m.consumer.fetch_rec_s),
                end_to_end: latency_summary(reps, |m| m.consumer.end_to_end.as_ref()),
                per_client: worst.consumer.per_client.clone(),
                catch_up: catch_up_summary(reps),
                span: None,
            },
            integrity: worst.integrity.clone(),
            steps_s: worst
                .steps_s
                .keys()
                .map(|k| {
                    let v: Vec<f64> = reps
                        .iter()
                        .filter_map(|m| m.steps_s.get(k).copied())
                        .collect();
                    (k.clone(), crate::accounting::stats::median(&v))
                })
                .collect(),
            // A series is one repetition's story; each repetition keeps its own.
            series: worst.series.clone(),
            cost: crate::accounting::cost::summary(
                &reps.iter().map(|m| m.cost.as_slice()).collect::<Vec<_>>(),
            ),
            // Each repetition keeps its own recordings.
            profiles: Vec::new(),
            pair: None,
        }
    }
}

/// The median of a figure over the repetitions when every one measured it, else none.
fn median_of(reps: &[Measurement], get: fn(&Measurement) -> Option<f64>) -> Option<f64> {
    let all: Vec<f64> = reps.iter().map(get).collect::<Option<_>>()?;
    Some(crate::accounting::stats::median(&all))
}

/// The medians of the repetitions' catch-ups, when every repetition has one; caught up only when
/// every repetition was, the lag the worst one left.
fn catch_up_summary(reps: &[Measurement]) -> Option<CatchUp> {
    let all: Vec<&CatchUp> = reps
        .iter()
        .map(|m| m.consumer.catch_up.as_ref())
        .collect::<Option<_>>()?;
    let med = |f: fn(&CatchUp) -> f64| {
        crate::accounting::stats::median(&all.iter().map(|c| f(c)).collect::<Vec<_>>())
    };
    let times: Option<Vec<f64>> = all.iter().map(|c| c.caught_up_s).collect();
    Some(CatchUp {
        backlog: all[0].backlog,
        live_target_rec_s: all[0].live_target_rec_s,
        live_rec_s: med(|c| c.live_rec_s),
        lag_bound: all[0].lag_bound,
        caught_up_s: times.map(|t| crate::accounting::stats::median(&t)),
        final_lag: all.iter().map(|c| c.final_lag).max().unwrap_or(0),
    })
}

/// The medians of the repetitions' latencies that `get` picks, when every repetition has them.
fn latency_summary(
    reps: &[Measurement],
    get: fn(&Measurement) -> Option<&LatencySummary>,
) -> Option<LatencySummary> {
    let all: Vec<&LatencySummary> = reps.iter().map(get).collect::<Option<_>>()?;
    let med = |f: fn(&LatencySummary) -> f64| {
        crate::accounting::stats::median(&all.iter().map(|l| f(l)).collect::<Vec<_>>())
    };
    Some(LatencySummary {
        avg_lat_ms: med(|l| l.avg_lat_ms),
        max_lat_ms: med(|l| l.max_lat_ms),
        p50_ms: med(|l| l.p50_ms),
        p95_ms: med(|l| l.p95_ms),
        p99_ms: med(|l| l.p99_ms),
        p999_ms: med(|l| l.p999_ms),
        p9999_ms: med(|l| l.p9999_ms),
    })
}

/// Wall-clock seconds spent in each phase of a scenario, to account for harness overhead.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseTimes {
    pub up_s: f64,
    pub setup_s: f64,
    pub workload_s: f64,
    pub down_s: f64,
    pub total_s: f64,
}

/// Everything recorded about one scenario of a run (at one combination of its matrix).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScenarioResult {
    pub name: String,
    /// The values of the settings the run varied (`crate::settings::matrix`), empty without a matrix: a
    /// row is a scenario at a combination.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub combination: crate::settings::matrix::Combination,
    pub description: String,
    pub bootstrap: String,
    pub topic: String,
    pub measurement: Measurement,
    pub phases: PhaseTimes,
    /// Image reference -> image id, for every service this scenario ran.
    pub images: std::collections::BTreeMap<String, String>,
    /// Every repetition in the order run; `measurement` is their median summary. Empty in
    /// results written before repetitions existed (then `measurement` is the only one).
    #[serde(default)]
    pub repetitions: Vec<Measurement>,
    /// Resource use of every container sampled while the workload ran, one entry per service.
    #[serde(default)]
    pub resources: Vec<ServiceResources>,
    /// Reasons the numbers may not measure the path (saturation), empty when none.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Image reference -> how it was made, for images built here (recipe, artifacts, JDK).
    #[serde(default)]
    pub image_sources: std::collections::BTreeMap<String, String>,
    /// The check of the scenario's `expect:` (the worst repetition's), when it declares one.
    #[serde(default)]
    pub path_check: Option<PathCheck>,
    /// The scenario is its suite's reference (it measures none of the path under test).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reference: bool,
    /// The network's ceiling on each hop of the path (`NETWORK_CEILING`), measured before the
    /// first repetition; empty when not measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<NetworkCeiling>,
    /// The KMS of the path's record encryption, as the scenario declares it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kms: Option<Kms>,
    /// A paired scenario's sides compared, pair by pair (`crate::analysis::pair`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub pair: Option<pair::PairResult>,
}

/// The KMS of a scenario's record encryption: the proxy's provider and, when the KMS is reached
/// over the network, the service that runs it (one of the scenario's services).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Kms {
    /// The proxy's KMS provider, e.g. `AwsKmsService`.
    pub provider: String,
    /// The service running the KMS; none when it lives in the proxy (an in-memory KMS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
}

/// What the network between two places of a scenario carries at most (`crate::world::ceiling`):
/// iperf3's TCP throughput from `from` to `to` over the run's network, measured before the
/// scenario's measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NetworkCeiling {
    /// The sending service, or `load generator` for where the workload runs.
    pub from: String,
    /// The receiving service.
    pub to: String,
    /// The swarm node the sender ran on; absent off a swarm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_node: Option<String>,
    /// The swarm node the receiver ran on; absent off a swarm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_node: Option<String>,
    /// What the receiver got, MiB/s.
    pub mib_s: f64,
    /// The sender's mean TCP round-trip time, when the kernel reports it.
    pub rtt_ms: Option<f64>,
    pub retransmits: Option<u64>,
    /// Seconds measured.
    pub seconds: f64,
}

/// A scenario's name with its combination, `01-x [RECORD_SIZE=100]`; the name alone without a
/// matrix.
pub(crate) fn row_label(name: &str, combination: &crate::settings::matrix::Combination) -> String {
    if combination.is_empty() {
        name.to_string()
    } else {
        format!("{name} [{}]", crate::settings::matrix::label(combination))
    }
}

/// The reference scenario (`reference: true`) that `r` stands against: its suite's at the same
/// combination of settings in the same run; `None` for a reference itself or without one.
pub(crate) fn reference_of<'a>(
    results: &'a [ScenarioResult],
    r: &ScenarioResult,
) -> Option<&'a ScenarioResult> {
    if r.reference {
        return None;
    }
    results
        .iter()
        .find(|b| b.reference && b.combination == r.combination)
}

/// One scenario at one combination of the varying settings other than a line's setting, and
/// its results at each value of that setting.
#[derive(Debug)]
pub(crate) struct Line<'a> {
    /// The scenario's name.
    pub name: String,
    /// The values of the other varying settings.
    pub rest: crate::settings::matrix::Combination,
    /// (the line's setting's value, the result there), in the order of the results.
    pub points: Vec<(&'a str, &'a ScenarioResult)>,
}

impl Line<'_> {
    /// The line's name: the scenario's, with the other settings' values.
    pub(crate) fn label(&self) -> String {
        row_label(&self.name, &self.rest)
    }
}

/// The results that vary `var`, as lines over its values (charts, sweeps), in the order their
/// scenario and other settings first appear.
pub(crate) fn lines_over<'a>(results: &'a [ScenarioResult], var: &str) -> Vec<Line<'a>> {
    let mut lines: Vec<Line<'a>> = Vec::new();
    for r in results {
        let Some(value) = r.combination.get(var) else {
            continue;
        };
        let mut rest = r.combination.clone();
        rest.remove(var);
        match lines
            .iter_mut()
            .find(|l| l.name == r.name && l.rest == rest)
        {
            Some(l) => l.points.push((value, r)),
            None => lines.push(Line {
                name: r.name.clone(),
                rest,
                points: vec![(value, r)],
            }),
        }
    }
    lines
}

impl ScenarioResult {
    /// The row's name: the scenario's, with its combination when the run has a matrix.
    pub(crate) fn label(&self) -> String {
        row_label(&self.name, &self.combination)
    }

    /// The path check failed: the row measures a path that does not do what it claims.
    pub(crate) fn path_check_failed(&self) -> bool {
        let side_b = self.pair.as_ref().and_then(|p| p.path_check_b.as_ref());
        self.path_check.iter().chain(side_b).any(|c| !c.holds())
    }

    /// The measurements of every repetition: `repetitions`, or `measurement` when that is empty.
    pub(crate) fn all_measurements(&self) -> Vec<&Measurement> {
        if self.repetitions.is_empty() {
            vec![&self.measurement]
        } else {
            self.repetitions.iter().collect()
        }
    }
}

/// Resource use of one service's container while the workload ran, from the engine's stats.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ServiceResources {
    /// Compose service name.
    pub service: String,
    /// Whether the service is run-wide (shared by scenarios) rather than the scenario's own.
    #[serde(default)]
    pub run_wide: bool,
    /// The swarm node it ran on (`ENGINE=swarm`); none on one engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Stats samples the figures are computed from (about one per second per repetition).
    pub samples: u64,
    /// Mean CPU use in percent of one core (200 = two cores busy), as `docker stats` computes it.
    pub cpu_pct_mean: f64,
    /// Highest CPU use in percent of one core between two samples.
    pub cpu_pct_peak: f64,
    /// Mean memory use in MiB (usage minus page cache).
    pub mem_mib_mean: f64,
    /// Highest memory use in MiB (usage minus page cache).
    pub mem_mib_peak: f64,
    /// MiB received over the network during the workload.
    pub net_rx_mib: f64,
    /// MiB sent over the network during the workload.
    pub net_tx_mib: f64,
    /// With DURATION: the memory use of every sample in MiB, in order (about one a second from
    /// the start of the scenario's workload), so growth over a long run shows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mem_series_mib: Vec<f64>,
}

/// A producer that did not reach at least this share of its THROUGHPUT target is saturated.
pub(crate) const TARGET_SHARE: f64 = 0.95;
/// Records in flight (rate x mean latency, Little's law) from which latency counts as queueing.
pub(crate) const QUEUED_RECORDS: f64 = 1000.0;
/// p50 / max latency from which latency is uniformly high rather than a few slow outliers.
pub(crate) const UNIFORM_LATENCY: f64 = 0.25;

impl ProducerResult {
    /// Warnings when the numbers measure a saturated producer rather than the path:
    /// - THROUGHPUT was set and the achieved rate is below 95% of it;
    /// - unthrottled, and latency is client-side queueing: by Little's law the producer held
    ///   `rate x mean latency` >= 1000 records in flight on average, and the median latency is at
    ///   least a quarter of the maximum (every record waited, not a few outliers). Such latency
    ///   is the producer's buffer divided by the rate the path sustains, not the path's delay.
    pub(crate) fn saturation(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.target_rec_s > 0.0 && self.rate_rec_s < TARGET_SHARE * self.target_rec_s {
            out.push(format!(
                "producer reached {:.0} rec/s, {:.0}% of THROUGHPUT={:.0}: the path is saturated \
                 below the requested rate",
                self.rate_rec_s,
                self.rate_rec_s / self.target_rec_s * 100.0,
                self.target_rec_s
            ));
        }
        let in_flight = self.rate_rec_s * self.avg_lat_ms / 1000.0;
        if self.target_rec_s <= 0.0
            && in_flight >= QUEUED_RECORDS
            && self.max_lat_ms > 0.0
            && self.p50_ms >= UNIFORM_LATENCY * self.max_lat_ms
        {
            out.push(format!(
                "latency is dominated by client-side queueing: about {in_flight:.0} records were \
                 waiting in the producer on average (rate x mean latency); set THROUGHPUT below \
                 {:.0} rec/s to measure the path's latency",
                self.rate_rec_s
            ));
        }
        out
    }
}

/// One recording kept with the results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Recording {
    pub service: String,
    pub phase: String,
    /// `PROFILE`'s mode and the agent's event that ran it.
    pub mode: crate::settings::ProfileMode,
    pub event: String,
    /// The recording's file, relative to the run's `profiles/`.
    pub file: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn producer(rate: f64, target: f64, avg: f64, p50: f64, max: f64) -> ProducerResult {
        ProducerResult {
            histograms: Default::default(),
            sent: 1000,
            failed: 0,
            rate_rec_s: rate,
            rate_mib_s: rate / 1024.0,
            avg_lat_ms: avg,
            max_lat_ms: max,
            p50_ms: p50,
            p95_ms: max,
            p99_ms: max,
            p999_ms: max,
            elapsed_s: 1.0,
            target_rec_s: target,
            intended: None,
            span: None,
            derived: Vec::new(),
        }
    }

    #[test]
    fn a_producer_below_its_target_is_saturated() {
        let w = producer(900.0, 1000.0, 2.0, 2.0, 5.0).saturation();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("90% of THROUGHPUT=1000"), "{w:?}");
        assert!(producer(960.0, 1000.0, 2.0, 2.0, 5.0)
            .saturation()
            .is_empty());
    }

    #[test]
    fn the_reference_run_is_dominated_by_client_side_queueing() {
        // The reference baseline: 48671 rec/s at 628.71 ms mean, p50 625, max 1354 ms, i.e.
        // about 30600 records waiting in the producer's buffer.
        let w = producer(48671.27, -1.0, 628.71, 625.0, 1354.0).saturation();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("about 30600 records"), "{w:?}");
        // Low latency at the same rate: few records in flight, no warning.
        assert!(producer(48671.27, -1.0, 3.0, 2.0, 40.0)
            .saturation()
            .is_empty());
        // A few slow outliers (p50 far below max) are not queueing.
        assert!(producer(48671.27, -1.0, 60.0, 5.0, 2000.0)
            .saturation()
            .is_empty());
        // Throttled runs are judged by the target instead.
        assert!(producer(1000.0, 1000.0, 1500.0, 1500.0, 2000.0)
            .saturation()
            .is_empty());
    }

    #[test]
    fn the_summary_is_the_median_and_keeps_the_worst_counters() {
        let m = |rate: f64, consumed: u64| Measurement {
            steps_s: Default::default(),
            series: Vec::new(),
            cost: Vec::new(),
            profiles: Vec::new(),
            pair: None,
            producer: producer(rate, -1.0, 1.0, 1.0, 2.0),
            consumer: ConsumerResult {
                histograms: Default::default(),
                consumed_mib: 1.0,
                consumed_mib_s: rate / 1024.0,
                consumed_recs: consumed,
                consumed_rec_s: rate,
                rebalance_ms: 1.0,
                fetch_ms: Some(1.0),
                first_record_ms: None,
                fetch_mib_s: Some(1.0),
                fetch_rec_s: Some(rate),
                end_to_end: None,
                per_client: Vec::new(),
                catch_up: None,
                span: None,
            },
            integrity: Integrity {
                requested: 1000,
                acknowledged: 1000,
                end_offsets: 1000,
                consumed,
            },
        };
        let s = Measurement::summary(&[m(10.0, 1000), m(30.0, 999), m(20.0, 1000)]);
        assert_eq!(s.producer.rate_rec_s, 20.0);
        assert_eq!(s.consumer.fetch_rec_s, Some(20.0));
        assert_eq!(s.integrity.consumed, 999);
        assert!(!s.integrity.is_ok());
    }
}
