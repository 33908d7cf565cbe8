//! Plain result records handed from the workload to reports, results files and comparison.
//!
//! Field names follow the reference tables; units are in the names so that the JSON
//! files read without a schema.

use serde::{Deserialize, Serialize};

/// What the producer side of one measured scenario did (kafka-producer-perf-test semantics).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// What the consumer side did (kafka-consumer-perf-test semantics).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConsumerResult {
    /// Bytes of record values consumed / 2^20.
    pub consumed_mib: f64,
    pub consumed_mib_s: f64,
    pub consumed_recs: u64,
    pub consumed_rec_s: f64,
    /// Subscribe until partitions are assigned.
    pub rebalance_ms: f64,
    /// Total consume time minus rebalance time.
    pub fetch_ms: f64,
    pub fetch_mib_s: f64,
    pub fetch_rec_s: f64,
}

/// Independent counters of the records of one measurement; they must agree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    pub fn problem(&self) -> Option<String> {
        if self.is_ok() {
            return None;
        }
        Some(format!(
            "requested {} acknowledged {} end-offsets {} consumed {}",
            self.requested, self.acknowledged, self.end_offsets, self.consumed
        ))
    }
}

/// One measurement (produce then consume) of one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub producer: ProducerResult,
    pub consumer: ConsumerResult,
    pub integrity: Integrity,
    /// Wall-clock seconds of each step of the measurement (create topic, warm-up, produce, end
    /// offsets, consume, delete topic), so the harness's own cost is visible.
    #[serde(default)]
    pub steps_s: std::collections::BTreeMap<String, f64>,
}

/// Wall-clock seconds spent in each phase of a scenario, to account for harness overhead.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseTimes {
    pub up_s: f64,
    pub setup_s: f64,
    pub workload_s: f64,
    pub down_s: f64,
    pub total_s: f64,
}

/// Everything recorded about one scenario of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioResult {
    pub name: String,
    pub description: String,
    pub bootstrap: String,
    pub topic: String,
    pub measurement: Measurement,
    pub phases: PhaseTimes,
    /// Image reference -> image id, for every service this scenario ran.
    pub images: std::collections::BTreeMap<String, String>,
}
