//! The consume side, with kafka-consumer-perf-test semantics: a group subscription, rebalance
//! time until partitions are assigned, fetch time for the rest; stops at exactly the expected
//! count and commits what it consumed so a later consumer of the group resumes after it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::KafkaError;

use super::client::LastError;
use super::properties::client_config;
use crate::model::ConsumerResult;

const MIB: f64 = 1024.0 * 1024.0;

/// What to consume and from where.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumeConfig {
    pub bootstrap: String,
    pub topic: String,
    pub group_id: String,
    /// Records to consume; consumption stops at exactly this many.
    pub expected: u64,
    /// Fail when no record arrives for this long.
    pub timeout: Duration,
    /// Client properties shared by every client of the workload.
    pub client: Vec<(String, String)>,
}

struct Assigning {
    assigned_at: Mutex<Option<Instant>>,
    last_error: LastError,
}

impl ClientContext for Assigning {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        self.last_error.log(level, fac, message);
    }
    fn error(&self, error: KafkaError, reason: &str) {
        self.last_error.error(error, reason);
    }
}

impl ConsumerContext for Assigning {
    fn post_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(list) = rebalance {
            if list.count() > 0 {
                let mut at = self.assigned_at.lock().unwrap_or_else(|e| e.into_inner());
                at.get_or_insert_with(Instant::now);
            }
        }
    }
}

/// Consumes exactly `expected` records of the topic with the group and measures it.
pub async fn consume(cfg: &ConsumeConfig) -> Result<ConsumerResult> {
    consume_with_progress(cfg, |_| {}).await
}

/// How often [`consume_with_progress`] reports the count so far.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// [`consume`], calling `progress` with the records consumed so far every [`PROGRESS_EVERY`].
pub async fn consume_with_progress(
    cfg: &ConsumeConfig,
    progress: impl FnMut(u64) + Send + 'static,
) -> Result<ConsumerResult> {
    let cfg = cfg.clone();
    tokio::task::spawn_blocking(move || consume_blocking(&cfg, progress))
        .await
        .context("consumer task panicked")?
}

/// The line a consuming workload prints for its progress (read back by the host's flow).
pub fn progress_line(consumed: u64, expected: u64) -> String {
    format!("consumed {consumed} of {expected} records")
}

/// The count in a [`progress_line`].
pub fn parse_progress_line(line: &str) -> Option<u64> {
    line.trim()
        .strip_prefix("consumed ")?
        .split(' ')
        .next()?
        .parse()
        .ok()
}

fn consume_blocking(cfg: &ConsumeConfig, mut progress: impl FnMut(u64)) -> Result<ConsumerResult> {
    let (config, warnings) = client_config(
        &cfg.bootstrap,
        &[
            ("group.id", &cfg.group_id),
            ("auto.offset.reset", "earliest"),
            ("enable.auto.commit", "false"),
            ("enable.partition.eof", "false"),
        ],
        &[&cfg.client],
    )?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    let consumer: BaseConsumer<Assigning> = config
        .create_with_context(Assigning {
            assigned_at: Mutex::new(None),
            last_error: LastError::default(),
        })
        .context("creating the Kafka consumer")?;
    if cfg.expected == 0 {
        return Ok(result(0, 0, Duration::ZERO, Duration::ZERO));
    }

    let start = Instant::now();
    consumer
        .subscribe(&[&cfg.topic])
        .with_context(|| format!("subscribing to topic `{}`", cfg.topic))?;
    let mut count = 0u64;
    let mut bytes = 0u64;
    let mut last_record = start;
    let mut last_failure: Option<String> = None;
    let mut reported = start;
    while count < cfg.expected {
        if reported.elapsed() >= PROGRESS_EVERY {
            reported = Instant::now();
            progress(count);
        }
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(message)) => {
                count += 1;
                bytes += message.payload_len() as u64;
                last_record = Instant::now();
            }
            Some(Err(e)) => last_failure = Some(e.to_string()),
            None => {}
        }
        if last_record.elapsed() >= cfg.timeout {
            let why = last_failure
                .map(|f| format!(" (last consumer error: {f})"))
                .unwrap_or_else(|| consumer.context().last_error.suffix());
            bail!(
                "consumed {count} of {} records from topic `{}` through {}: no record for {:.1} s{why}",
                cfg.expected,
                cfg.topic,
                cfg.bootstrap,
                cfg.timeout.as_secs_f64()
            );
        }
    }
    let end = last_record;
    consumer
        .commit_consumer_state(CommitMode::Sync)
        .with_context(|| {
            format!(
                "committing the offsets of group `{}` on topic `{}`",
                cfg.group_id, cfg.topic
            )
        })?;
    let assigned = consumer
        .context()
        .assigned_at
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .unwrap_or(start);
    let total = end.duration_since(start);
    let rebalance = assigned.saturating_duration_since(start).min(total);
    Ok(result(count, bytes, total, rebalance))
}

fn result(count: u64, bytes: u64, total: Duration, rebalance: Duration) -> ConsumerResult {
    let fetch = total.saturating_sub(rebalance);
    let mib = bytes as f64 / MIB;
    let per = |x: f64, d: Duration| {
        let s = d.as_secs_f64();
        if s > 0.0 {
            x / s
        } else {
            0.0
        }
    };
    ConsumerResult {
        consumed_mib: mib,
        consumed_mib_s: per(mib, total),
        consumed_recs: count,
        consumed_rec_s: per(count as f64, total),
        rebalance_ms: rebalance.as_secs_f64() * 1000.0,
        fetch_ms: fetch.as_secs_f64() * 1000.0,
        fetch_mib_s: per(mib, fetch),
        fetch_rec_s: per(count as f64, fetch),
    }
}

#[cfg(test)]
mod progress_tests {
    use super::*;

    #[test]
    fn progress_lines_read_back() {
        assert_eq!(parse_progress_line(&progress_line(1234, 5000)), Some(1234));
        assert_eq!(
            parse_progress_line("1000 records sent, 1.0 records/sec"),
            None
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_follow_consumer_perf_test_definitions() {
        let r = result(
            2048,
            2048 * 1024,
            Duration::from_secs(2),
            Duration::from_millis(500),
        );
        assert_eq!(r.consumed_mib, 2.0);
        assert_eq!(r.consumed_mib_s, 1.0);
        assert_eq!(r.consumed_rec_s, 1024.0);
        assert_eq!(r.rebalance_ms, 500.0);
        assert_eq!(r.fetch_ms, 1500.0);
        assert!((r.fetch_rec_s - 2048.0 / 1.5).abs() < 1e-9);
        assert!((r.fetch_mib_s - 2.0 / 1.5).abs() < 1e-9);
    }
}
