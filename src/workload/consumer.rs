//! The consume side, with kafka-consumer-perf-test semantics: a group subscription, rebalance
//! time until partitions are assigned, fetch time for the rest; stops at exactly the expected
//! count and commits what it consumed so a later consumer of the group resumes after it. When the
//! producer runs at the same time (MODE=end-to-end) it also tallies each record's latency from
//! its timestamp (set by the producer when it sent it) to its receipt.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::{KafkaError, KafkaResult};
use rdkafka::types::RDKafkaErrorCode;
use serde::Serialize;

use super::args::{Endpoint, Seconds};
use super::client::LastError;
use super::latency::Latencies;
use super::properties::client_config;
use super::record_queue::{self, Offsets, RecordQueue};
use crate::model::ConsumerResult;

const MIB: f64 = 1024.0 * 1024.0;

/// What to consume and from where: the `consume` step's parameters, on the command line as they
/// are in memory.
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct ConsumeConfig {
    #[command(flatten)]
    #[serde(flatten)]
    pub endpoint: Endpoint,
    /// Topic to consume from; repeatable (the group subscribes to all).
    #[arg(long = "topic", required = true)]
    pub topics: Vec<String>,
    /// Consumer group.
    #[arg(long = "group")]
    pub group_id: String,
    /// Records to consume; consumption stops at exactly this many.
    #[arg(long)]
    pub expected: u64,
    /// Seconds without a record after which the consumer fails.
    #[arg(long = "timeout-s", default_value = "60")]
    pub timeout: Seconds,
    /// Consumers in the group, each in its own thread; the group stops once they have consumed
    /// `expected` records together.
    #[arg(long, default_value_t = 1)]
    pub consumers: u32,
    /// Tally each record's latency from its send to its receipt (the producer runs at the same
    /// time); otherwise the clock is not read per record.
    #[arg(long)]
    pub end_to_end: bool,
}

impl ConsumeConfig {
    /// Group `group` reading `expected` records of `topics` at `endpoint`, every other parameter
    /// at its flag's default.
    pub fn new(endpoint: Endpoint, topics: Vec<String>, group: &str, expected: u64) -> Self {
        // The required flags' values are placeholders: the fields are set here.
        ConsumeConfig {
            endpoint,
            topics,
            group_id: group.to_string(),
            expected,
            ..super::args::from_flags(&[
                "--bootstrap",
                "-",
                "--topic",
                "-",
                "--group",
                "-",
                "--expected",
                "0",
            ])
        }
    }
}

struct Assigning {
    assigned_at: Mutex<Option<Instant>>,
    last_error: LastError,
    /// Hold each new assignment (paused) until the member lets go: in a group of several, so
    /// that the first member assigned does not drain partitions before the others join.
    hold: bool,
    /// Partitions this member owns now.
    owned: AtomicUsize,
    /// Its assignment is paused, waiting for the group to form.
    held: AtomicBool,
    /// The member's [`RecordQueue`], which each assigned partition is forwarded to.
    records: AtomicPtr<rdkafka::bindings::rd_kafka_queue_t>,
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
    /// Commits what this member read before its partitions go to another member of the group
    /// (offsets are only committed by hand): else the new owner would read them again, and the
    /// group would count records twice and leave others unread. Nothing read: nothing to commit.
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(_) = rebalance {
            self.owned.store(0, Ordering::SeqCst);
            if let Err(e) = commit(consumer) {
                self.last_error
                    .error(e, "committing offsets before a rebalance");
            }
        }
    }

    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(list) = rebalance {
            self.owned.store(list.count(), Ordering::SeqCst);
            for p in list.elements() {
                let (topic, partition) = (p.topic(), p.partition());
                if let Err(e) = record_queue::forward(consumer, &self.records, topic, partition) {
                    self.last_error.set(format!("{e:#}"));
                }
            }
            // Paused here, before any of its records is returned.
            if self.hold && list.count() > 0 && consumer.pause(list).is_ok() {
                self.held.store(true, Ordering::SeqCst);
            }
            if list.count() > 0 {
                let mut at = self.assigned_at.lock().unwrap_or_else(|e| e.into_inner());
                at.get_or_insert_with(Instant::now);
            }
        }
    }
}

/// Commits the offsets stored for the member's partitions; none stored (nothing read since they
/// were last committed) is nothing to do, not an error.
fn commit(consumer: &BaseConsumer<Assigning>) -> KafkaResult<()> {
    match consumer.commit_consumer_state(CommitMode::Sync) {
        Err(KafkaError::ConsumerCommit(RDKafkaErrorCode::NoOffset)) => Ok(()),
        r => r,
    }
}

/// Consumes exactly `expected` records of the topic with the group and measures it.
pub async fn consume(cfg: &ConsumeConfig) -> Result<ConsumerResult> {
    consume_reporting(cfg, |_| {}, || {}).await
}

/// The line a consuming workload prints once its partitions are assigned (read back by the
/// host's flow, which starts an end-to-end measurement's producer then).
pub(crate) const ASSIGNED_LINE: &str = "partitions assigned";

/// How often [`consume_reporting`] reports the count so far.
pub(crate) const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// Longest wait for a record or an event before the member looks at its timeout, the group's
/// state and its progress again.
const IDLE_WAIT: Duration = Duration::from_millis(100);

/// [`consume`], calling `progress` with the records consumed so far every [`PROGRESS_EVERY`],
/// and `assigned` once when the group's partitions are assigned.
pub(crate) async fn consume_reporting(
    cfg: &ConsumeConfig,
    progress: impl FnMut(u64) + Send + 'static,
    assigned: impl FnMut() + Send + 'static,
) -> Result<ConsumerResult> {
    let expected = cfg.expected;
    consume_until(
        cfg,
        progress,
        assigned,
        move |consumed| consumed >= expected,
        None,
    )
    .await
}

/// [`consume_reporting`] that stops once `done(records the group consumed)` holds, asked after
/// every poll, rather than at `cfg.expected` records. With `end_to_end`, `window`, when given,
/// also gets every record's send-to-receipt latency, for a watcher in the same process to take
/// (a DURATION run's time series).
pub(crate) async fn consume_until(
    cfg: &ConsumeConfig,
    progress: impl FnMut(u64) + Send + 'static,
    assigned: impl FnMut() + Send + 'static,
    done: impl Fn(u64) -> bool + Send + Sync + 'static,
    window: Option<Arc<Mutex<Latencies>>>,
) -> Result<ConsumerResult> {
    let cfg = cfg.clone();
    tokio::task::spawn_blocking(move || {
        consume_blocking(&cfg, progress, assigned, &done, window.as_deref())
    })
    .await
    .context("consumer task panicked")?
}

/// Milliseconds since the Unix epoch on this host's clock (the records' timestamps' clock).
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The line a consuming workload prints for its progress (read back by the host's flow).
pub(crate) fn progress_line(consumed: u64, expected: u64) -> String {
    format!("consumed {consumed} of {expected} records")
}

/// The count in a [`progress_line`].
pub(crate) fn parse_progress_line(line: &str) -> Option<u64> {
    line.trim()
        .strip_prefix("consumed ")?
        .split(' ')
        .next()?
        .parse()
        .ok()
}

/// What the members of one consuming group share while they consume.
struct Shared {
    /// Records consumed by every member together.
    consumed: AtomicU64,
    /// Members whose partitions are assigned.
    assigned: AtomicUsize,
    /// Nanoseconds after `since` of the group's last record.
    last_record_ns: AtomicU64,
    /// Nanoseconds after `since` of the group's first record (`u64::MAX`: none yet).
    first_record_ns: AtomicU64,
    since: Instant,
    /// A member failed: the others stop.
    abort: AtomicBool,
    /// Partitions each member owns, as it last said; the group has formed once every member
    /// owns some (there are no more members than partitions).
    owned: Vec<AtomicUsize>,
    /// Nanoseconds after `since` when the group first formed (0: not yet).
    formed_ns: AtomicU64,
}

impl Shared {
    fn formed(&self) -> bool {
        self.owned.iter().all(|o| o.load(Ordering::SeqCst) > 0)
    }

    fn last_record(&self) -> Instant {
        self.since + Duration::from_nanos(self.last_record_ns.load(Ordering::Relaxed))
    }
}

/// What one member of the group consumed.
struct Member {
    count: u64,
    bytes: u64,
    start: Instant,
    assigned_at: Instant,
    end_to_end: Latencies,
    stamped: u64,
}

impl Member {
    fn new(start: Instant) -> Member {
        Member {
            count: 0,
            bytes: 0,
            start,
            assigned_at: start,
            end_to_end: Latencies::new(),
            stamped: 0,
        }
    }
}

fn consume_blocking(
    cfg: &ConsumeConfig,
    mut progress: impl FnMut(u64),
    on_assigned: impl FnMut() + Send,
    done: &(dyn Fn(u64) -> bool + Sync),
    window: Option<&Mutex<Latencies>>,
) -> Result<ConsumerResult> {
    if done(0) {
        return Ok(result(0, 0, Duration::ZERO, Duration::ZERO));
    }
    let members = cfg.consumers.max(1) as usize;
    let shared = Shared {
        consumed: AtomicU64::new(0),
        assigned: AtomicUsize::new(0),
        last_record_ns: AtomicU64::new(0),
        first_record_ns: AtomicU64::new(u64::MAX),
        since: Instant::now(),
        abort: AtomicBool::new(false),
        owned: (0..members).map(|_| AtomicUsize::new(0)).collect(),
        formed_ns: AtomicU64::new(0),
    };
    // Called by the member whose assignment completes the group's.
    let on_assigned = Mutex::new(on_assigned);
    let announce = || {
        if shared.assigned.fetch_add(1, Ordering::SeqCst) + 1 == members {
            let mut f = on_assigned.lock().unwrap_or_else(|e| e.into_inner());
            (*f)();
        }
    };
    let group = Group {
        cfg,
        shared: &shared,
        announce: &announce,
        done,
        window,
    };
    let outcomes: Vec<Result<Member>> = if members == 1 {
        vec![consume_member(group, 0, Some(&mut progress))]
    } else {
        std::thread::scope(|scope| {
            let others: Vec<_> = (1..members)
                .map(|i| scope.spawn(move || consume_member(group, i, None)))
                .collect();
            let mut all = vec![consume_member(group, 0, Some(&mut progress))];
            all.extend(others.into_iter().map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a consumer thread panicked")))
            }));
            all
        })
    };
    let members: Vec<Member> = outcomes.into_iter().collect::<Result<_>>()?;
    Ok(group_result(&members, &shared))
}

/// The group's figures from its members': from the first member's start to the last record,
/// the rebalance until the group formed, and the end-to-end latencies merged.
fn group_result(members: &[Member], shared: &Shared) -> ConsumerResult {
    let start = members
        .iter()
        .map(|m| m.start)
        .min()
        .unwrap_or(shared.since);
    // A group of several reads once it has formed (each member held its partitions until then).
    let assigned = match shared.formed_ns.load(Ordering::SeqCst) {
        0 => members.iter().map(|m| m.assigned_at).max().unwrap_or(start),
        ns => shared.since + Duration::from_nanos(ns),
    };
    let end = shared.last_record().max(start);
    let total = end.duration_since(start);
    let rebalance = assigned.saturating_duration_since(start).min(total);
    let count: u64 = members.iter().map(|m| m.count).sum();
    let bytes: u64 = members.iter().map(|m| m.bytes).sum();
    let stamped: u64 = members.iter().map(|m| m.stamped).sum();
    let mut end_to_end = Latencies::new();
    for m in members {
        end_to_end.merge(&m.end_to_end);
    }
    let mut r = result(count, bytes, total, rebalance);
    r.span = Some(crate::model::Span::since(start, total));
    r.first_record_ms = match shared.first_record_ns.load(Ordering::SeqCst) {
        u64::MAX => None,
        ns => Some(
            (shared.since + Duration::from_nanos(ns))
                .saturating_duration_since(start)
                .as_secs_f64()
                * 1000.0,
        ),
    };
    r.end_to_end = (stamped > 0).then(|| end_to_end.summary(stamped));
    if stamped > 0 {
        r.histograms
            .insert(crate::model::END_TO_END.to_string(), end_to_end.encoded());
    }
    if members.len() > 1 {
        r.per_client = members.iter().map(|m| m.count).collect();
    }
    r
}

/// How one member counts the records it takes.
struct Counting<'a, 'm> {
    group: Group<'a>,
    offsets: Offsets,
    member: &'m mut Member,
    /// The error of the last message that carried one rather than a record.
    last_failure: Option<String>,
}

impl Counting<'_, '_> {
    /// Counts what the consumer's own poll returned: a record, or an error noted as the last
    /// failure. Whether it counted one.
    fn polled(
        &mut self,
        polled: Option<KafkaResult<rdkafka::message::BorrowedMessage<'_>>>,
    ) -> Result<bool> {
        match polled {
            // SAFETY: the message is valid while `message` lives.
            Some(Ok(message)) => self.count([unsafe { &*message.ptr() }].into_iter()),
            Some(Err(e)) => {
                self.last_failure = Some(e.to_string());
                Ok(false)
            }
            None => Ok(false),
        }
    }

    /// Counts `messages` (taken together, so all received now) until the group is done, a
    /// message that carries an error noted as the last failure, then stores the offsets of
    /// those counted so that a commit covers exactly them. Whether it counted any.
    fn count<'r>(
        &mut self,
        messages: impl Iterator<Item = &'r rdkafka::bindings::rd_kafka_message_t>,
    ) -> Result<bool> {
        let Group {
            cfg,
            shared,
            done,
            window,
            ..
        } = self.group;
        let now = Instant::now();
        // The records' timestamps' clock, read once for those taken together.
        let now_ms = cfg.end_to_end.then(now_ms);
        let mut counted = false;
        let first = self.member.count == 0;
        for message in messages {
            if done(shared.consumed.load(Ordering::SeqCst)) {
                break;
            }
            if let Some(error) = record_queue::error_of(message) {
                self.last_failure = Some(error);
                continue;
            }
            counted = true;
            self.offsets.counted(message);
            self.member.count += 1;
            self.member.bytes += message.len as u64;
            shared.consumed.fetch_add(1, Ordering::SeqCst);
            let sent =
                now_ms.and_then(|now_ms| Some((now_ms, record_queue::timestamp_ms(message)?)));
            if let Some((now_ms, sent)) = sent {
                let us = (now_ms - sent).max(0) as u64 * 1000;
                self.member.stamped += 1;
                self.member.end_to_end.record(us);
                if let Some(window) = window {
                    window.lock().unwrap_or_else(|e| e.into_inner()).record(us);
                }
            }
        }
        if counted {
            let ns = now.duration_since(shared.since).as_nanos() as u64;
            shared.last_record_ns.fetch_max(ns, Ordering::Relaxed);
            if first {
                shared.first_record_ns.fetch_min(ns, Ordering::Relaxed);
            }
        }
        self.offsets.store()?;
        Ok(counted)
    }
}

/// What every member of one consuming group is given.
#[derive(Clone, Copy)]
struct Group<'a> {
    cfg: &'a ConsumeConfig,
    shared: &'a Shared,
    /// Called once by each member when its partitions are assigned.
    announce: &'a (dyn Fn() + Sync),
    /// Whether the group is done, from the records it consumed.
    done: &'a (dyn Fn(u64) -> bool + Sync),
    /// Also gets each send-to-receipt latency.
    window: Option<&'a Mutex<Latencies>>,
}

/// One member of the group: subscribes, consumes until `done` says the group is done, commits
/// what it read. The member given `progress` reports the group's count.
fn consume_member(
    group: Group<'_>,
    index: usize,
    mut progress: Option<&mut dyn FnMut(u64)>,
) -> Result<Member> {
    let failed = |e: anyhow::Error| {
        group.shared.abort.store(true, Ordering::SeqCst);
        e
    };
    consume_member_inner(group, index, &mut progress).map_err(failed)
}

fn consume_member_inner(
    group: Group<'_>,
    index: usize,
    progress: &mut Option<&mut dyn FnMut(u64)>,
) -> Result<Member> {
    let Group {
        cfg,
        shared,
        announce,
        done,
        ..
    } = group;
    let consumer = group_member(cfg, shared.owned.len() > 1)?;
    // Declared after the consumer: dropped before it.
    let mut queue = RecordQueue::new(&consumer, &consumer.context().records)?;
    let start = Instant::now();
    let topics: Vec<&str> = cfg.topics.iter().map(String::as_str).collect();
    consumer
        .subscribe(&topics)
        .with_context(|| format!("subscribing to {}", super::topics_named(&cfg.topics)))?;
    let mut member = Member::new(start);
    let mut counting = Counting {
        group,
        offsets: Offsets::default(),
        member: &mut member,
        last_failure: None,
    };
    let mut reporter = Reporter {
        at: start,
        any: false,
    };
    let mut announced = false;
    while !done(shared.consumed.load(Ordering::SeqCst)) {
        if shared.abort.load(Ordering::SeqCst) {
            bail!("another consumer of the group failed");
        }
        // The group's events (rebalances, errors) and any record that reached the consumer's
        // own queue before its partition was forwarded.
        let polled = consumer.poll(Duration::ZERO);
        let context = consumer.context();
        shared.owned[index].store(context.owned.load(Ordering::SeqCst), Ordering::SeqCst);
        if context.held.load(Ordering::SeqCst) && shared.formed() {
            resume(&consumer, shared)?;
        }
        if !announced && consumer_assigned(&consumer) {
            announced = true;
            announce();
        }
        let mut counted = counting.polled(polled)?;
        let batch = queue.take();
        if !batch.is_empty() {
            counted |= counting.count(batch.iter())?;
        }
        drop(batch);
        let consumed = shared.consumed.load(Ordering::SeqCst);
        if let Some(progress) = progress.as_mut() {
            reporter.report(consumed, &mut **progress);
        }
        if counted || done(consumed) {
            continue;
        }
        // The group's last record, so a member whose partitions hold none does not time out
        // while the others read.
        let quiet = shared.last_record().max(start).elapsed();
        if quiet >= cfg.timeout.0 {
            let why = counting
                .last_failure
                .map(|f| format!(" (last consumer error: {f})"))
                .unwrap_or_else(|| consumer.context().last_error.suffix());
            return Err(starved(cfg, consumed, &why));
        }
        queue.wait(IDLE_WAIT.min(cfg.timeout.0 - quiet));
    }
    drop(queue);
    finish(&consumer, cfg, member, start)
}

/// When the group's count was last reported, and whether any record was.
struct Reporter {
    at: Instant,
    any: bool,
}

impl Reporter {
    /// Reports `consumed` every [`PROGRESS_EVERY`], and the first records at once: whoever
    /// watches learns then that the group's fetches go through.
    fn report(&mut self, consumed: u64, progress: &mut dyn FnMut(u64)) {
        let first = consumed > 0 && !self.any;
        if first || self.at.elapsed() >= PROGRESS_EVERY {
            self.at = Instant::now();
            self.any |= consumed > 0;
            progress(consumed);
        }
    }
}

/// The error of a member that waited `cfg.timeout` for a record, having consumed `consumed`;
/// `why` names the last error seen.
fn starved(cfg: &ConsumeConfig, consumed: u64, why: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "consumed {} of {} records from {} through {}: no record for {:.1} s{why}",
        consumed,
        cfg.expected,
        super::topics_named(&cfg.topics),
        cfg.endpoint.bootstrap,
        cfg.timeout.0.as_secs_f64()
    )
}

/// Resumes a member's held partitions once the whole group has formed, and notes when it did.
fn resume(consumer: &BaseConsumer<Assigning>, shared: &Shared) -> Result<()> {
    let assignment = consumer.assignment().context("reading the assignment")?;
    consumer
        .resume(&assignment)
        .context("resuming the assignment once the group formed")?;
    consumer.context().held.store(false, Ordering::SeqCst);
    let now = shared.since.elapsed().as_nanos().max(1) as u64;
    let _ = shared
        .formed_ns
        .compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst);
    Ok(())
}

/// Commits what `member` counted (when it counted anything) and notes when it was assigned.
fn finish(
    consumer: &BaseConsumer<Assigning>,
    cfg: &ConsumeConfig,
    mut member: Member,
    start: Instant,
) -> Result<Member> {
    // A member whose partitions held no record, or who read records only from partitions it
    // has since handed over (committed then), has no position to commit.
    if member.count > 0 {
        commit(consumer).with_context(|| {
            format!(
                "committing the offsets of group `{}` on {}",
                cfg.group_id,
                super::topics_named(&cfg.topics)
            )
        })?;
    }
    member.assigned_at = consumer
        .context()
        .assigned_at
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .unwrap_or(start);
    Ok(member)
}

/// One member of `cfg`'s group: offsets stored by hand as records are counted,
/// partitions of every topic spread round robin; with `hold`, it holds its partitions until the
/// group formed.
fn group_member(cfg: &ConsumeConfig, hold: bool) -> Result<BaseConsumer<Assigning>> {
    let (config, warnings) = client_config(
        &cfg.endpoint.bootstrap,
        &[
            ("group.id", &cfg.group_id),
            ("auto.offset.reset", "earliest"),
            ("enable.auto.commit", "false"),
            ("enable.partition.eof", "false"),
            // Offsets are stored by hand as each record is counted, so what the group commits is
            // exactly what it counted (librdkafka's own store, enable.auto.offset.store, let a
            // catch-up group commit hundreds of records beyond those it counted).
            ("enable.auto.offset.store", "false"),
            // The range assignor hands out each topic's partitions on its own, so with several
            // one-partition topics every topic would go to the same member; round robin spreads
            // the partitions of all topics over the members.
            ("partition.assignment.strategy", "roundrobin"),
        ],
        &[&cfg.endpoint.client_properties],
    )?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    config
        .create_with_context(Assigning {
            assigned_at: Mutex::new(None),
            last_error: LastError::default(),
            hold,
            owned: AtomicUsize::new(0),
            held: AtomicBool::new(false),
            records: AtomicPtr::new(std::ptr::null_mut()),
        })
        .context("creating the Kafka consumer")
}

/// Whether the consumer's group has assigned it partitions yet.
fn consumer_assigned(consumer: &BaseConsumer<Assigning>) -> bool {
    consumer
        .context()
        .assigned_at
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .is_some()
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
        histograms: Default::default(),
        consumed_mib: mib,
        consumed_mib_s: per(mib, total),
        consumed_recs: count,
        consumed_rec_s: per(count as f64, total),
        rebalance_ms: rebalance.as_secs_f64() * 1000.0,
        fetch_ms: Some(fetch.as_secs_f64() * 1000.0),
        first_record_ms: None,
        fetch_mib_s: Some(per(mib, fetch)),
        fetch_rec_s: Some(per(count as f64, fetch)),
        end_to_end: None,
        per_client: Vec::new(),
        catch_up: None,
        span: None,
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
        assert_eq!(r.fetch_ms, Some(1500.0));
        assert!((r.fetch_rec_s.unwrap() - 2048.0 / 1.5).abs() < 1e-9);
        assert!((r.fetch_mib_s.unwrap() - 2.0 / 1.5).abs() < 1e-9);
    }
}
