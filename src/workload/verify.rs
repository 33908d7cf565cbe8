//! The path check: proves the path under test does to records what its scenario declares
//! (`expect:`). Sample records with lower-case text are produced through the endpoint, then
//! read back through the endpoint (what a consumer receives) and straight from the broker (what
//! the path stored), and each is compared with what was sent. A filter that silently does
//! nothing, or encryption that leaves records readable, fails here.
//!
//! The measured records cannot show this: like Kafka's perf tool they are upper-case letters,
//! which an upper-casing transform leaves unchanged.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use clap::Args;
use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::{Offset, TopicPartitionList};
use serde::Serialize;

use super::admin::TopicSpec;
use super::args::Endpoint;
use super::client::{LastError, Quiet};
use super::properties::client_config;
use crate::model::{BrokerHolds, ConsumerReceives, Expect, PathCheck};

/// Sample records checked per scenario.
pub(crate) const SAMPLE_RECORDS: u64 = 20;
/// How long producing, and each read-back, may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// What to check and where: the `verify` step's parameters, on the command line as they are in
/// memory.
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct VerifySpec {
    /// The scenario's endpoint (the path under test).
    #[command(flatten)]
    #[serde(flatten)]
    pub endpoint: Endpoint,
    /// The broker behind the endpoint, read without the path, host:port.
    #[arg(long)]
    pub direct: String,
    /// Topic to create, check on and delete.
    #[arg(long)]
    pub topic: String,
    #[command(flatten)]
    #[serde(flatten)]
    pub expect: Expect,
    /// Sample records.
    #[arg(long, default_value_t = SAMPLE_RECORDS)]
    pub records: u64,
    /// Bytes per sample record (at least 64).
    #[arg(long, default_value_t = 1024)]
    pub record_size: usize,
    /// Partitions of the check's topic, the sample sent to them in turn: one per broker of a
    /// cluster, so that every broker leads one and the sample crosses the path to each.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i32).range(1..))]
    pub partitions: i32,
    /// Replicas of each of the check's partitions.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i32).range(1..))]
    pub replication_factor: i32,
}

/// Sample record `i`: its number, then lower-case prose, `size` bytes (at least 64).
pub(crate) fn sample(i: u64, size: usize) -> Vec<u8> {
    const TEXT: &str = "the quick brown fox jumps over the lazy dog; ";
    let mut v = format!("perf-tests path check record {i:06}: ").into_bytes();
    let size = size.max(64);
    while v.len() < size {
        let take = (size - v.len()).min(TEXT.len());
        v.extend_from_slice(&TEXT.as_bytes()[..take]);
    }
    v.truncate(size);
    v
}

/// Whether `stored` is what the broker must hold for `sent`; `Err` describes how it is not.
pub(crate) fn broker_holds(expect: BrokerHolds, sent: &[u8], stored: &[u8]) -> Result<(), String> {
    match expect {
        BrokerHolds::Unchanged if stored == sent => Ok(()),
        BrokerHolds::UpperCased if stored == sent.to_ascii_uppercase() => Ok(()),
        BrokerHolds::Encrypted => {
            if stored == sent {
                return Err("the broker holds the record as sent (not encrypted)".into());
            }
            // Any 16 bytes of the record, as sent or upper-cased, readable at the broker.
            let upper = sent.to_ascii_uppercase();
            for plain in [sent, upper.as_slice()] {
                if let Some(w) = plain.windows(16).find(|w| contains(stored, w)) {
                    return Err(format!(
                        "the broker holds readable text of the record ({:?})",
                        String::from_utf8_lossy(w)
                    ));
                }
            }
            Ok(())
        }
        _ => Err(format!(
            "the broker holds {} where {} was expected",
            preview(stored),
            expect.name()
        )),
    }
}

/// Whether `received` is what the consumer must receive for `sent`.
pub(crate) fn consumer_receives(
    expect: ConsumerReceives,
    sent: &[u8],
    received: &[u8],
) -> Result<(), String> {
    let ok = match expect {
        ConsumerReceives::Sent => received == sent,
        ConsumerReceives::UpperCased => received == sent.to_ascii_uppercase(),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the consumer received {} where {} was expected",
            preview(received),
            expect.name()
        ))
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn preview(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(&bytes[..bytes.len().min(48)]);
    format!("{s:?}{}", if bytes.len() > 48 { "…" } else { "" })
}

/// Produces the sample, reads it back both ways, compares, deletes the topic.
pub(crate) async fn verify(spec: &VerifySpec) -> Result<PathCheck> {
    let admin = spec.endpoint.admin()?;
    let topic = TopicSpec {
        partitions: spec.partitions,
        replication_factor: spec.replication_factor,
        ..TopicSpec::new(&spec.topic)
    };
    admin
        .create_topic(&topic, TIMEOUT)
        .await
        .context("creating the path check's topic")?;
    let result = check(spec).await;
    let deleted = admin.delete_topic(&spec.topic).await;
    let check = result?;
    deleted.context("deleting the path check's topic")?;
    Ok(check)
}

async fn check(spec: &VerifySpec) -> Result<PathCheck> {
    let sent: Vec<Vec<u8>> = (0..spec.records)
        .map(|i| sample(i, spec.record_size))
        .collect();
    let (bootstrap, client, topic) = (
        spec.endpoint.bootstrap.clone(),
        spec.endpoint.client_properties.clone(),
        spec.topic.clone(),
    );
    let to_send = sent.clone();
    let partitions = spec.partitions;
    tokio::task::spawn_blocking(move || produce(&bootstrap, &client, &topic, partitions, &to_send))
        .await
        .context("path check producer task")??;

    let read = |bootstrap: String, client: Vec<(String, String)>, what: &'static str| {
        let topic = spec.topic.clone();
        let n = spec.records as usize;
        tokio::task::spawn_blocking(move || {
            read_back(&bootstrap, &client, &topic, partitions, n)
                .with_context(|| format!("reading {what}"))
        })
    };
    let received = read(
        spec.endpoint.bootstrap.clone(),
        spec.endpoint.client_properties.clone(),
        "through the endpoint",
    )
    .await
    .context("path check consumer task")??;
    let stored = read(spec.direct.clone(), Vec::new(), "straight from the broker")
        .await
        .context("path check consumer task")??;
    // Who led each partition, as the brokers say (not the path, which may rewrite it).
    let leaders = super::admin::Admin::connect(&spec.direct, &[])?
        .layout(&spec.topic)
        .await
        .context("reading the path check topic's leaders straight from the broker")?
        .iter()
        .map(|p| p.leader)
        .collect();

    let mut check = PathCheck {
        expect: spec.expect,
        direct: spec.direct.clone(),
        records: spec.records,
        broker_ok: 0,
        consumer_ok: 0,
        first_mismatch: None,
        leaders,
    };
    for (i, s) in sent.iter().enumerate() {
        match broker_holds(spec.expect.broker, s, &stored[i]) {
            Ok(()) => check.broker_ok += 1,
            Err(e) => {
                check
                    .first_mismatch
                    .get_or_insert(format!("record {i}: {e}"));
            }
        }
        match consumer_receives(spec.expect.consumer, s, &received[i]) {
            Ok(()) => check.consumer_ok += 1,
            Err(e) => {
                check
                    .first_mismatch
                    .get_or_insert(format!("record {i}: {e}"));
            }
        }
    }
    Ok(check)
}

/// Counts failed deliveries and keeps the client's last error.
#[derive(Default)]
struct Deliveries {
    last_error: LastError,
    failed: AtomicU64,
    first_failure: Mutex<Option<String>>,
}

impl ClientContext for Deliveries {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        self.last_error.log(level, fac, message);
    }
    fn error(&self, error: KafkaError, reason: &str) {
        self.last_error.error(error, reason);
    }
}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if let Err((e, _)) = result {
            self.failed.fetch_add(1, Ordering::Relaxed);
            let mut first = self.first_failure.lock().unwrap_or_else(|p| p.into_inner());
            first.get_or_insert_with(|| e.to_string());
        }
    }
}

/// Sends record `i` to partition `i % partitions`, each acknowledged by all in-sync replicas.
fn produce(
    bootstrap: &str,
    client: &[(String, String)],
    topic: &str,
    partitions: i32,
    records: &[Vec<u8>],
) -> Result<()> {
    let (config, _) = client_config(bootstrap, &[("acks", "all")], &[client])?;
    let producer: BaseProducer<Deliveries> = config
        .create_with_context(Deliveries::default())
        .context("creating the path check producer")?;
    for (i, r) in records.iter().enumerate() {
        let partition = (i % partitions as usize) as i32;
        producer
            .send(
                BaseRecord::<(), [u8]>::to(topic)
                    .partition(partition)
                    .payload(r.as_slice()),
            )
            .map_err(|(e, _)| e)
            .context("sending a path check record")?;
    }
    let ctx = producer.context();
    producer.flush(TIMEOUT).with_context(|| {
        format!(
            "path check records not acknowledged{}",
            ctx.last_error.suffix()
        )
    })?;
    let failed = ctx.failed.load(Ordering::Relaxed);
    if failed > 0 {
        let first = ctx.first_failure.lock().unwrap_or_else(|p| p.into_inner());
        bail!(
            "{failed} of {} path check records failed delivery: {}",
            records.len(),
            first.as_deref().unwrap_or("unknown error")
        );
    }
    Ok(())
}

/// The `n` records [`produce`] sent over `partitions` partitions, from the beginning, back in
/// the order they were sent (record `i` the `i / partitions`-th of partition `i % partitions`).
fn read_back(
    bootstrap: &str,
    client: &[(String, String)],
    topic: &str,
    partitions: i32,
    n: usize,
) -> Result<Vec<Vec<u8>>> {
    let (config, _) = client_config(
        bootstrap,
        &[
            ("group.id", "perf-tests-path-check"),
            ("enable.auto.commit", "false"),
            // Offset 0 is the start of the check's own fresh topic; should a path ever move
            // it, the read starts at the earliest it has instead of waiting for new records.
            ("auto.offset.reset", "earliest"),
        ],
        &[client],
    )?;
    let consumer: BaseConsumer<Quiet> = config
        .create_with_context(Quiet::default())
        .context("creating the path check consumer")?;
    let mut tpl = TopicPartitionList::new();
    // From offset 0 rather than the logical beginning: librdkafka first asks the partition's
    // log start for that, which held each read half a second.
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Offset(0))?;
    }
    consumer.assign(&tpl)?;
    let deadline = Instant::now() + TIMEOUT;
    let mut by_partition: Vec<Vec<Vec<u8>>> = vec![Vec::new(); partitions as usize];
    let mut read = 0;
    while read < n {
        if Instant::now() > deadline {
            bail!(
                "{read} of {n} records read within {}s{}",
                TIMEOUT.as_secs(),
                consumer.context().last_error.suffix()
            );
        }
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(m)) => {
                let part = by_partition
                    .get_mut(m.partition() as usize)
                    .with_context(|| format!("a record of partition {}", m.partition()))?;
                part.push(m.payload().unwrap_or_default().to_vec());
                read += 1;
            }
            Some(Err(e)) => bail!("{e}{}", consumer.context().last_error.suffix()),
            None => {}
        }
    }
    Ok(in_sent_order(by_partition, n))
}

/// Record `i` is the `i / k`-th of partition `i % k` (`k` partitions), as [`produce`] sent it.
fn in_sent_order(mut by_partition: Vec<Vec<Vec<u8>>>, n: usize) -> Vec<Vec<u8>> {
    let k = by_partition.len().max(1);
    for part in &mut by_partition {
        part.reverse();
    }
    (0..n)
        .map_while(|i| by_partition.get_mut(i % k).and_then(Vec::pop))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_by_partition_come_back_in_the_order_they_were_sent() {
        let r = |i: u8| vec![i];
        let parts = vec![vec![r(0), r(3), r(6)], vec![r(1), r(4)], vec![r(2), r(5)]];
        let back = in_sent_order(parts, 7);
        assert_eq!(back, (0..7).map(r).collect::<Vec<_>>());
        assert_eq!(in_sent_order(vec![vec![r(0), r(1)]], 2), vec![r(0), r(1)]);
    }

    #[test]
    fn samples_are_numbered_lower_case_text_of_the_size() {
        let s = sample(7, 100);
        assert_eq!(s.len(), 100);
        assert!(s.starts_with(b"perf-tests path check record 000007: the quick"));
        assert_eq!(sample(1, 10).len(), 64, "at least 64 bytes");
        assert_ne!(s, s.to_ascii_uppercase());
    }

    #[test]
    fn broker_expectations() {
        let sent = sample(1, 128);
        let upper = sent.to_ascii_uppercase();
        assert!(broker_holds(BrokerHolds::Unchanged, &sent, &sent).is_ok());
        assert!(broker_holds(BrokerHolds::Unchanged, &sent, &upper).is_err());
        assert!(broker_holds(BrokerHolds::UpperCased, &sent, &upper).is_ok());
        assert!(broker_holds(BrokerHolds::UpperCased, &sent, &sent).is_err());
        // Encrypted: neither the record nor any readable stretch of it.
        let cipher: Vec<u8> = (0..200u32).map(|i| (i * 37 % 251) as u8).collect();
        assert!(broker_holds(BrokerHolds::Encrypted, &sent, &cipher).is_ok());
        let e = broker_holds(BrokerHolds::Encrypted, &sent, &sent).unwrap_err();
        assert!(e.contains("not encrypted"), "{e}");
        let mut wrapped = b"header".to_vec();
        wrapped.extend_from_slice(&sent);
        let e = broker_holds(BrokerHolds::Encrypted, &sent, &wrapped).unwrap_err();
        assert!(e.contains("readable"), "{e}");
        assert!(broker_holds(BrokerHolds::Encrypted, &sent, &upper).is_err());
    }

    #[test]
    fn consumer_expectations() {
        let sent = sample(2, 80);
        let upper = sent.to_ascii_uppercase();
        assert!(consumer_receives(ConsumerReceives::Sent, &sent, &sent).is_ok());
        let e = consumer_receives(ConsumerReceives::Sent, &sent, &upper).unwrap_err();
        assert!(e.contains("where sent was expected"), "{e}");
        assert!(consumer_receives(ConsumerReceives::UpperCased, &sent, &upper).is_ok());
        assert!(consumer_receives(ConsumerReceives::UpperCased, &sent, &sent).is_err());
    }
}
