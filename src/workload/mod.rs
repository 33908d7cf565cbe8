//! The native workload (librdkafka through rdkafka), with the semantics of Apache Kafka's
//! kafka-producer-perf-test and kafka-consumer-perf-test: the code that runs inside the workload
//! container. It offers primitive steps (probe, create a topic, produce, consume, count end
//! offsets, delete a topic); the measurement flow that orders them runs on the host
//! (`crate::driver`).

pub mod admin;
pub mod args;
pub mod catch_up;
pub mod client;
pub mod command;
pub mod consumer;
pub mod latency;
pub mod probe;
pub mod producer;
pub mod properties;
pub mod queue_waker;
pub mod record_queue;
pub mod soak;
pub mod together;
pub mod verify;

use std::sync::atomic::{AtomicU64, Ordering};

pub use admin::{Admin, TopicSpec};
pub use consumer::{consume, ConsumeConfig};
pub use probe::probe;
pub use producer::{produce, ProduceConfig, Progress};

/// A name suffix unlikely to repeat across processes and calls.
pub fn unique_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mixed = nanos
        ^ (u64::from(std::process::id()) << 40)
        ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    format!("{mixed:016x}")
}

/// "topic `a`" or "topics `a`, `b`", for messages about the topics a step uses.
pub(crate) fn topics_named(topics: &[String]) -> String {
    let quoted: Vec<String> = topics.iter().map(|t| format!("`{t}`")).collect();
    match quoted.as_slice() {
        [one] => format!("topic {one}"),
        many => format!("topics {}", many.join(", ")),
    }
}
