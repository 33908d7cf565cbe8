//! The native produce/consume workload (librdkafka through rdkafka), with the semantics of
//! Apache Kafka's kafka-producer-perf-test and kafka-consumer-perf-test.
//!
//! `measure` runs one measurement end to end: create topic, warm the path up, produce,
//! count end offsets, consume exactly what was acknowledged, delete the topic.

pub mod admin;
pub mod cli;
pub mod client;
pub mod consumer;
pub mod kafka_tools;
pub mod probe;
pub mod producer;
pub mod properties;
pub mod verify;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

pub use admin::{Admin, TopicSpec};
pub use consumer::{consume, ConsumeConfig};
pub use probe::probe;
pub use producer::{produce, ProduceConfig, Progress};

use crate::model::{Integrity, Measurement};

/// How long a freshly created topic may take to appear in the metadata.
const TOPIC_VISIBLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Everything one measurement needs.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasureSpec {
    pub bootstrap: String,
    pub topic: String,
    pub num_records: u64,
    pub record_size: usize,
    /// Target records/s; any negative value is unlimited.
    pub throughput: i64,
    /// Producer properties (Java or librdkafka names).
    pub properties: Vec<(String, String)>,
    /// Client properties shared by producer, consumer and admin clients.
    pub client: Vec<(String, String)>,
    /// Records produced and consumed through the same path before measuring; not reported.
    pub warm_up_records: u64,
    /// The consumer fails when no record arrives for this long.
    pub consume_timeout: Duration,
    /// Delete the topic at the end (also after a failure).
    pub delete_topic: bool,
    pub partitions: i32,
    pub replication_factor: i32,
}

impl MeasureSpec {
    /// A spec with the reference defaults: 1 KiB records, unlimited rate, `acks=all`,
    /// 1000 warm-up records, 60 s consume timeout, one partition and replica, topic deleted.
    pub fn new(bootstrap: impl Into<String>, topic: impl Into<String>, num_records: u64) -> Self {
        MeasureSpec {
            bootstrap: bootstrap.into(),
            topic: topic.into(),
            num_records,
            record_size: 1024,
            throughput: -1,
            properties: vec![("acks".to_string(), "all".to_string())],
            client: Vec::new(),
            warm_up_records: 1000,
            consume_timeout: Duration::from_secs(60),
            delete_topic: true,
            partitions: 1,
            replication_factor: 1,
        }
    }
}

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

/// Runs one measurement, printing producer progress lines to stderr.
pub async fn measure(spec: &MeasureSpec) -> Result<Measurement> {
    measure_with_progress(spec, |p| eprintln!("{p}")).await
}

/// Runs one measurement, handing producer progress windows to `progress`.
pub async fn measure_with_progress(
    spec: &MeasureSpec,
    progress: impl FnMut(Progress),
) -> Result<Measurement> {
    // Refuse bad properties before touching the broker.
    properties::client_config(&spec.bootstrap, &[], &[&spec.client, &spec.properties])?;
    let admin = Admin::connect(&spec.bootstrap, &spec.client)?;
    let topic = TopicSpec {
        name: spec.topic.clone(),
        partitions: spec.partitions,
        replication_factor: spec.replication_factor,
    };
    let t = Instant::now();
    admin.create_topic(&topic, TOPIC_VISIBLE_TIMEOUT).await?;
    let created_s = t.elapsed().as_secs_f64();
    let mut outcome = measure_on_topic(spec, &admin, progress).await;
    if let Ok(m) = &mut outcome {
        m.steps_s.insert("create_topic".into(), created_s);
    }
    if spec.delete_topic {
        let t = Instant::now();
        let deleted = admin.delete_topic(&spec.topic).await;
        if let Ok(m) = &mut outcome {
            m.steps_s
                .insert("delete_topic".into(), t.elapsed().as_secs_f64());
        }
        // A failed measurement's error matters more than a failed clean-up.
        if outcome.is_ok() {
            deleted?;
        } else if let Err(e) = deleted {
            eprintln!("warning: {e:#}");
        }
    }
    outcome
}

async fn measure_on_topic(
    spec: &MeasureSpec,
    admin: &Admin,
    progress: impl FnMut(Progress),
) -> Result<Measurement> {
    let group_id = format!("perf-tests-{}-{}", spec.topic, unique_suffix());
    let produce_cfg = |num_records: u64, throughput: i64| ProduceConfig {
        bootstrap: spec.bootstrap.clone(),
        topic: spec.topic.clone(),
        num_records,
        record_size: spec.record_size,
        throughput,
        properties: spec.properties.clone(),
        client: spec.client.clone(),
    };
    let consume_cfg = |expected: u64| ConsumeConfig {
        bootstrap: spec.bootstrap.clone(),
        topic: spec.topic.clone(),
        group_id: group_id.clone(),
        expected,
        timeout: spec.consume_timeout,
        client: spec.client.clone(),
    };

    let mut steps = BTreeMap::new();
    let mut t = Instant::now();
    let mut step = |name: &str| {
        steps.insert(name.to_string(), t.elapsed().as_secs_f64());
        t = Instant::now();
    };
    if spec.warm_up_records > 0 {
        let warm = produce(&produce_cfg(spec.warm_up_records, -1), |_| {})
            .await
            .context("warm-up produce")?;
        step("warm_up_produce");
        // The group commits what it read, so the measured consumer starts after it.
        consume(&consume_cfg(warm.sent))
            .await
            .context("warm-up consume")?;
        step("warm_up_consume");
    }
    let before = admin.end_offsets(&spec.topic).await?;
    step("end_offsets_before");
    let producer = produce(&produce_cfg(spec.num_records, spec.throughput), progress)
        .await
        .context("produce")?;
    step("produce");
    let after = admin.end_offsets(&spec.topic).await?;
    step("end_offsets_after");
    let consumer = consume(&consume_cfg(producer.sent))
        .await
        .context("consume")?;
    step("consume");
    Ok(Measurement {
        steps_s: steps,
        integrity: Integrity {
            requested: spec.num_records,
            acknowledged: producer.sent,
            end_offsets: after.saturating_sub(before),
            consumed: consumer.consumed_recs,
        },
        producer,
        consumer,
    })
}

/// Warms a broker: produces and consumes `n` records on a throw-away topic, then deletes it.
pub async fn warm_broker(bootstrap: &str, n: u64, client: &[(String, String)]) -> Result<()> {
    let topic = format!("perf-tests-warm-up-{}", unique_suffix());
    let mut spec = MeasureSpec::new(bootstrap, topic, n);
    spec.client = client.to_vec();
    spec.warm_up_records = 0;
    measure_with_progress(&spec, |_| {})
        .await
        .with_context(|| format!("warming the broker at {bootstrap}"))?;
    Ok(())
}
