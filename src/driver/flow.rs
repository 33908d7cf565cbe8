//! The measurement flow, the same for every driver: create the topic, warm the path up with the
//! measuring consumer group, read the end offsets, produce, read them again, consume exactly what
//! was acknowledged, delete the topic (also after a failure). In the end-to-end mode the consumer
//! starts first and the producer once the consumer's partitions are assigned, both running at
//! once. It checks the counters against each other, times every step (`steps_s`) and reports
//! progress.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use futures_util::future::LocalBoxFuture;

use super::{Event, MeasureSpec, Progress, Session};
use crate::model::{ConsumerResult, Integrity, Measurement, ProducerResult};
use crate::settings::Mode;
use crate::workload::producer::summary_line;
use crate::workload::{topics_named, unique_suffix};

fn show(line: &str) {
    crate::progress::detail(line);
}

/// Counts the records a step's events report and shows its other lines. A producer's own
/// summary is dropped: the flow prints the summary itself, once, from the result.
fn count(counted: &crate::progress::Step, event: Event<'_>) {
    match event {
        Event::Sent(n) => counted.add(n),
        Event::Consumed(n) => counted.set(n),
        Event::Line(line) => show(line),
        Event::Assigned | Event::Summary => {}
    }
}

/// Wall time of each step, in the order run.
struct Steps {
    times: BTreeMap<String, f64>,
    since: Instant,
}

impl Steps {
    fn new() -> Steps {
        Steps {
            times: BTreeMap::new(),
            since: Instant::now(),
        }
    }

    /// Ends the step `name` now (it began when the previous one ended).
    fn done(&mut self, name: &str) {
        self.times
            .insert(name.to_string(), self.since.elapsed().as_secs_f64());
        self.since = Instant::now();
    }
}

/// A measured phase whose edges are told to [`Marks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Produce,
    Consume,
    /// The end-to-end mode's producer and consumer, running at once.
    ProduceAndConsume,
    /// The backlog mode's group catching up while a live producer sends.
    CatchUp,
}

impl Phase {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Phase::Produce => "produce",
            Phase::Consume => "consume",
            Phase::ProduceAndConsume => crate::accounting::cost::PRODUCE_AND_CONSUME,
            Phase::CatchUp => "catch_up",
        }
    }
}

/// Told as each measured phase starts and ends (and awaited, so that the teller can read
/// counters exactly there): the cost accounting's edges. Warm-ups and counting at the broker
/// lie outside every phase.
pub(crate) trait Marks {
    fn start(&self, phase: Phase) -> LocalBoxFuture<'_, ()>;
    /// The phase ended, having moved `records` records.
    fn end(&self, phase: Phase, records: u64) -> LocalBoxFuture<'_, ()>;
    /// The sampled JVM whose JIT compilers used the largest share of its CPU over the last
    /// `window` (from the newest earlier call at least that old, else the first), with that
    /// share in percent; the first call starts the count and says `None`, as does every call
    /// when no JVM's threads are read.
    fn compiling(&self, _window: Duration) -> LocalBoxFuture<'_, Option<(String, f64)>> {
        Box::pin(async { None })
    }
}

/// Marks that nobody reads.
pub(crate) struct NoMarks;

impl Marks for NoMarks {
    fn start(&self, _: Phase) -> LocalBoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn end(&self, _: Phase, _: u64) -> LocalBoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Runs one measurement through `session`.
pub async fn measure(session: &dyn Session, spec: &MeasureSpec) -> Result<Measurement> {
    measure_marked(session, spec, &NoMarks).await
}

/// Runs one measurement through `session`, telling `marks` the edges of its measured phases.
pub(crate) async fn measure_marked(
    session: &dyn Session,
    spec: &MeasureSpec,
    marks: &dyn Marks,
) -> Result<Measurement> {
    // Refuse what cannot work before touching the broker.
    session.check(spec)?;
    let mut steps = Steps::new();
    session
        .create_topic(spec)
        .await
        .with_context(|| format!("creating {}", topics_named(&spec.topic_names())))?;
    steps.done("create_topic");
    let mut outcome = on_topic(session, spec, marks, &mut steps).await;
    if spec.delete_topic {
        steps.since = Instant::now();
        let deleted = session
            .delete_topic(spec)
            .await
            .with_context(|| format!("deleting {}", topics_named(&spec.topic_names())));
        steps.done("delete_topic");
        // A failed measurement's error matters more than a failed clean-up.
        match (&outcome, deleted) {
            (Ok(_), Err(e)) => outcome = Err(e),
            (Err(_), Err(e)) => crate::progress::notice(&format!("warning: {e:#}")),
            (_, Ok(())) => {}
        }
    }
    let mut m = outcome?;
    m.steps_s = steps.times;
    Ok(m)
}

/// A paired run's two sides in one phase: each side's session (on the side's own network) and
/// its measurement (its endpoint and topic).
pub struct Sides<'a> {
    pub a: (&'a dyn Session, &'a MeasureSpec),
    pub b: (&'a dyn Session, &'a MeasureSpec),
}

/// Two measurements at once, side A's and side B's, whose measured phases share their edges:
/// each side waits at a phase's start and end for the other, and `marks` is told once, with
/// both sides' records. So the counters read there cover both sides' whole phases and nothing
/// of either's warm-up. Returns side A's measurement holding side B's as its pair.
pub(crate) async fn measure_pair(sides: &Sides<'_>, marks: &dyn Marks) -> Result<Measurement> {
    let ((session_a, a), (session_b, b)) = (sides.a, sides.b);
    let joint = Joint {
        marks,
        barrier: tokio::sync::Barrier::new(2),
        records: std::cell::Cell::new(0),
    };
    // A side that fails ends both: the other's wait at an edge is dropped with it.
    let (mut ma, mb) = futures_util::future::try_join(
        async { measure_marked(session_a, a, &joint).await.context("side A") },
        async { measure_marked(session_b, b, &joint).await.context("side B") },
    )
    .await?;
    ma.pair = Some(Box::new(mb));
    Ok(ma)
}

/// Two flows' phase edges as one (see [`measure_pair`]).
struct Joint<'a> {
    marks: &'a dyn Marks,
    barrier: tokio::sync::Barrier,
    /// The records of the sides that reached a phase's end so far.
    records: std::cell::Cell<u64>,
}

impl Marks for Joint<'_> {
    fn start(&self, phase: Phase) -> LocalBoxFuture<'_, ()> {
        Box::pin(async move {
            if self.barrier.wait().await.is_leader() {
                self.marks.start(phase).await;
            }
            // Neither side starts before the counters are read.
            self.barrier.wait().await;
        })
    }
    fn end(&self, phase: Phase, records: u64) -> LocalBoxFuture<'_, ()> {
        Box::pin(async move {
            self.records.set(self.records.get() + records);
            if self.barrier.wait().await.is_leader() {
                self.marks.end(phase, self.records.replace(0)).await;
            }
            self.barrier.wait().await;
        })
    }
    fn compiling(&self, window: Duration) -> LocalBoxFuture<'_, Option<(String, f64)>> {
        self.marks.compiling(window)
    }
}

async fn on_topic(
    session: &dyn Session,
    spec: &MeasureSpec,
    marks: &dyn Marks,
    steps: &mut Steps,
) -> Result<Measurement> {
    let group = format!("perf-tests-{}-{}", spec.topic, unique_suffix());
    warm_up(session, spec, marks, &group, steps).await?;
    let before = end_offsets(session, spec).await?;
    steps.done("end_offsets_before");
    match (spec.mode, spec.duration) {
        (Mode::EndToEnd, Some(duration)) => {
            return timed(session, spec, marks, duration, &group, before, steps).await
        }
        (Mode::EndToEnd, None) => {
            return end_to_end(session, spec, marks, &group, before, steps).await
        }
        (Mode::Backlog, _) => return backlog(session, spec, marks, &group, before, steps).await,
        (Mode::ProduceThenConsume, _) => {}
    }
    let counted = crate::progress::records("produce", spec.num_records);
    marks.start(Phase::Produce).await;
    let producer = session
        .produce(spec, spec.num_records, &|e| count(&counted, e))
        .await
        .context("produce")?;
    marks.end(Phase::Produce, producer.sent).await;
    drop(counted);
    show(&summary_line(&producer));
    steps.done("produce");
    let after = end_offsets(session, spec).await?;
    steps.done("end_offsets_after");
    let counted = crate::progress::records("consume", producer.sent);
    marks.start(Phase::Consume).await;
    let consumer = session
        .consume(spec, producer.sent, &group, &|e| count(&counted, e))
        .await
        .context("consume")?;
    marks.end(Phase::Consume, consumer.consumed_recs).await;
    drop(counted);
    steps.done("consume");
    Ok(checked(
        spec,
        producer,
        consumer,
        after.saturating_sub(before),
    ))
}

/// How long the producer of an end-to-end measurement waits for the consumer's partitions to
/// be assigned before it starts anyway.
const ASSIGNMENT_WAIT: Duration = Duration::from_secs(30);

/// The end-to-end mode: the consumer subscribes, the producer starts once its partitions are
/// assigned (so no record waits for the group to form), and both run at once; the consumer
/// expects every record requested.
async fn end_to_end(
    session: &dyn Session,
    spec: &MeasureSpec,
    marks: &dyn Marks,
    group: &str,
    before: u64,
    steps: &mut Steps,
) -> Result<Measurement> {
    let produced = crate::progress::records("produce", spec.num_records);
    let consumed = crate::progress::records("consume", spec.num_records);
    marks.start(Phase::ProduceAndConsume).await;
    let (producer, consumer) = together(
        session,
        spec,
        spec.num_records,
        group,
        &|e| count(&produced, e),
        &|e| count(&consumed, e),
    )
    .await?;
    marks.end(Phase::ProduceAndConsume, producer.sent).await;
    drop((produced, consumed));
    show(&summary_line(&producer));
    steps.done("produce_and_consume");
    let after = end_offsets(session, spec).await?;
    steps.done("end_offsets_after");
    Ok(checked(
        spec,
        producer,
        consumer,
        after.saturating_sub(before),
    ))
}

/// The consumer subscribes, the producer starts once its partitions are assigned (so no record
/// waits for the group to form), and both run at once, `records` records at the spec's rate.
async fn together(
    session: &dyn Session,
    spec: &MeasureSpec,
    records: u64,
    group: &str,
    produced: Progress<'_>,
    consumed: Progress<'_>,
) -> Result<(ProducerResult, ConsumerResult)> {
    let assigned = tokio::sync::Notify::new();
    let consume = async {
        session
            .consume(spec, records, group, &|e| {
                if e == Event::Assigned {
                    assigned.notify_one();
                }
                consumed(e)
            })
            .await
            .context("consume")
    };
    let produce = async {
        // A consumer that never says so (another driver) is waited for a bounded time.
        let _ = tokio::time::timeout(ASSIGNMENT_WAIT, assigned.notified()).await;
        session
            .produce(spec, records, produced)
            .await
            .context("produce")
    };
    futures_util::future::try_join(produce, consume).await
}

/// A run bounded by time (DURATION): producers send for `spec.duration` while the group reads,
/// and every second is recorded; the group then reads what is left, so that every acknowledged
/// record is counted as consumed.
async fn timed(
    session: &dyn Session,
    spec: &MeasureSpec,
    marks: &dyn Marks,
    duration: Duration,
    group: &str,
    before: u64,
    steps: &mut Steps,
) -> Result<Measurement> {
    crate::progress::detail(&format!(
        "producing and consuming for {} s (the first {} s a warm-up)",
        duration.as_secs(),
        spec.duration_warm_up.as_secs()
    ));
    // Costed over the whole run, its warm-up included: the counters can be read only around the
    // one workload process, and the records counted are the whole run's too.
    marks.start(Phase::ProduceAndConsume).await;
    let r = session
        .soak(spec, group, &|e| {
            if let Event::Line(l) = e {
                show(l)
            }
        })
        .await
        .context("produce and consume for the DURATION")?;
    marks.end(Phase::ProduceAndConsume, r.producer.sent).await;
    steps.done("produce_and_consume");
    let after = end_offsets(session, spec).await?;
    steps.done("end_offsets_after");
    let integrity = Integrity {
        requested: r.producer.sent + r.producer.failed,
        acknowledged: r.producer.sent,
        end_offsets: after.saturating_sub(before),
        consumed: r.consumer.consumed_recs,
    };
    Ok(Measurement {
        series: r.series,
        ..with_integrity(integrity, r.producer, r.consumer)
    })
}

/// The backlog mode: with the group stopped since the warm-up, `num_records` records are
/// produced at full speed; then the group resumes while a live producer sends at
/// `spec.throughput`, until its lag is down (or the limit passed). What the live producer sent
/// beyond that is read after, so that every acknowledged record is counted as consumed. The
/// backlog's produce and the catch-up are the measured phases (the catch-up's records: those the
/// group read and those the live producer sent in it).
async fn backlog(
    session: &dyn Session,
    spec: &MeasureSpec,
    marks: &dyn Marks,
    group: &str,
    before: u64,
    steps: &mut Steps,
) -> Result<Measurement> {
    let counted = crate::progress::records("produce the backlog", spec.num_records);
    marks.start(Phase::Produce).await;
    let producer = session
        .produce(&spec.at_full_speed(), spec.num_records, &|e| {
            count(&counted, e)
        })
        .await
        .context("produce the backlog")?;
    marks.end(Phase::Produce, producer.sent).await;
    drop(counted);
    show(&summary_line(&producer));
    steps.done("produce");
    let counted = crate::progress::records("catch up", producer.sent);
    marks.start(Phase::CatchUp).await;
    let caught = session
        .catch_up(spec, producer.sent, group, &|e| match e {
            // The live producer's windows are not the group's records.
            Event::Consumed(n) => counted.set(n),
            Event::Line(l) => show(l),
            _ => {}
        })
        .await
        .context("catch-up")?;
    marks
        .end(
            Phase::CatchUp,
            caught.consumer.consumed_recs + caught.live.sent,
        )
        .await;
    drop(counted);
    let Some(catch_up) = &caught.consumer.catch_up else {
        anyhow::bail!("the catch-up reported no catch-up figures");
    };
    show(&match catch_up.caught_up_s {
        Some(s) => format!(
            "caught up in {s:.1} s: lag {} of at most {}",
            catch_up.final_lag, catch_up.lag_bound
        ),
        None => format!(
            "did not catch up within {} s: lag {} left",
            spec.catch_up_limit.as_secs(),
            catch_up.final_lag
        ),
    });
    steps.done("catch_up");
    let acknowledged = producer.sent + caught.live.sent;
    let left = acknowledged.saturating_sub(caught.consumer.consumed_recs);
    let rest = if left == 0 {
        0
    } else {
        let counted = crate::progress::records("consume the rest", left);
        let rest = session
            .consume(spec, left, group, &|e| count(&counted, e))
            .await
            .context("consuming what the live producer sent after the catch-up")?;
        rest.consumed_recs
    };
    steps.done("consume_rest");
    let after = end_offsets(session, spec).await?;
    steps.done("end_offsets_after");
    let integrity = Integrity {
        requested: spec.num_records + caught.live.sent + caught.live.failed,
        acknowledged,
        end_offsets: after.saturating_sub(before),
        consumed: caught.consumer.consumed_recs + rest,
    };
    Ok(with_integrity(integrity, producer, caught.consumer))
}

/// A measurement from the producer's and the consumer's results and the records the broker
/// gained, its counters checked against each other.
fn checked(
    spec: &MeasureSpec,
    producer: crate::model::ProducerResult,
    consumer: crate::model::ConsumerResult,
    end_offsets: u64,
) -> Measurement {
    let integrity = Integrity {
        requested: spec.num_records,
        acknowledged: producer.sent,
        end_offsets,
        consumed: consumer.consumed_recs,
    };
    with_integrity(integrity, producer, consumer)
}

/// A measurement whose counters were checked against each other: a disagreement is shown.
fn with_integrity(
    integrity: Integrity,
    producer: crate::model::ProducerResult,
    consumer: crate::model::ConsumerResult,
) -> Measurement {
    if let Some(problem) = integrity.problem() {
        show(&format!("integrity: counts disagree: {problem}"));
    }
    Measurement {
        steps_s: BTreeMap::new(),
        series: Vec::new(),
        cost: Vec::new(),
        profiles: Vec::new(),
        pair: None,
        integrity,
        producer,
        consumer,
    }
}

/// Records per warm-up round when the warm-up is by time alone (`warm_up_records` is 0).
const WARM_UP_ROUND_RECORDS: u64 = 10_000;

/// The least time a warm-up round in the measured phase's shape lasts when the warm-up is timed
/// or waits for the compilers: each round forms the group anew, which short rounds would repeat
/// all through the warm-up.
const SHAPED_ROUND: Duration = Duration::from_secs(10);

/// The topic's end offsets at the broker, shown while they are counted.
async fn end_offsets(session: &dyn Session, spec: &MeasureSpec) -> Result<u64> {
    let _counting =
        crate::progress::task("counting the topic's records at the broker (end offsets)");
    session.end_offsets(spec).await.context("end offsets")
}

/// Produces and consumes warm-up records through the measured path, in rounds until
/// `spec.warm_up_for` has passed (one round when it is zero): a just-started JVM (broker or
/// proxy) compiles its hot paths during the first seconds of load, which would otherwise land
/// in the measurement. With `spec.warm_up_jit`, rounds go on until no sampled JVM's compilers
/// used its share of the JVM's CPU over its window, for at most its limit more. The measuring
/// group reads them, so the measured consumer starts after.
///
/// When the measured phase is an end-to-end one at a fixed rate, each round has its shape
/// (producer and group at once, at that rate): a JVM compiles for the code paths and batch sizes
/// it sees, and a full-speed produce then a backlog's consume leave the phase's own to compile
/// inside the measurement.
async fn warm_up(
    session: &dyn Session,
    spec: &MeasureSpec,
    marks: &dyn Marks,
    group: &str,
    steps: &mut Steps,
) -> Result<()> {
    let shaped =
        spec.mode == Mode::EndToEnd && spec.duration.is_none() && spec.throughput.is_limited();
    let Some(records) = round_records(spec, shaped) else {
        return Ok(());
    };
    let started = Instant::now();
    let (mut produced, mut consumed) = (0.0, 0.0);
    let mut compiling = None;
    if let Some(quiet) = &spec.warm_up_jit {
        marks.compiling(quiet.window).await;
    }
    let full_speed = spec.at_full_speed();
    for round in 1.. {
        announce_round(round, started, compiling.as_ref(), spec);
        let (p, c) = warm_round(session, spec, &full_speed, records, group, shaped).await?;
        produced += p;
        consumed += c;
        // Without the setting the warm-up is by time (or one round) alone.
        let Some(quiet) = &spec.warm_up_jit else {
            if started.elapsed() >= spec.warm_up_for {
                break;
            }
            continue;
        };
        compiling = marks.compiling(quiet.window).await;
        // The compilers are judged over a whole window, so that long at least.
        if started.elapsed() < spec.warm_up_for.max(quiet.window) {
            continue;
        }
        if compilers_done(started, spec.warm_up_for, quiet, compiling.as_ref()) {
            break;
        }
    }
    if shaped {
        steps
            .times
            .insert("warm_up_produce_and_consume".into(), produced);
    } else {
        steps.times.insert("warm_up_produce".into(), produced);
        steps.times.insert("warm_up_consume".into(), consumed);
    }
    steps.since = Instant::now();
    Ok(())
}

/// The records of one warm-up round, `None` when there is no warm-up. A shaped round by time
/// lasts at least [`SHAPED_ROUND`] at the phase's rate.
fn round_records(spec: &MeasureSpec, shaped: bool) -> Option<u64> {
    let by_time = !spec.warm_up_for.is_zero() || spec.warm_up_jit.is_some();
    let records = match spec.warm_up_records {
        0 if !by_time => return None,
        0 => WARM_UP_ROUND_RECORDS,
        n => n,
    };
    Some(match spec.throughput.limit() {
        Some(rate) if shaped && by_time => records.max(rate * SHAPED_ROUND.as_secs()),
        _ => records,
    })
}

/// Says where a warm-up by time or by the JIT compilers is, as round `round` starts.
fn announce_round(
    round: u32,
    started: Instant,
    compiling: Option<&(String, f64)>,
    spec: &MeasureSpec,
) {
    let elapsed = started.elapsed().as_secs_f64();
    match (compiling, &spec.warm_up_jit) {
        (Some((service, share)), Some(quiet)) => crate::progress::detail(&format!(
            "warm-up round {round}: {elapsed:.0} s; the JIT compilers of {service} used \
             {share:.1}% of its CPU in the last {} s (until under {}%)",
            quiet.window.as_secs(),
            quiet.percent
        )),
        _ if !spec.warm_up_for.is_zero() => crate::progress::detail(&format!(
            "warm-up round {round}: {elapsed:.0} of at least {} s",
            spec.warm_up_for.as_secs()
        )),
        _ => {}
    }
}

/// One warm-up round of `records`: in the phase's shape (producer and group at once), or
/// produced at full speed (`full_speed`, `spec` unlimited) and then consumed. Returns the
/// seconds spent producing and consuming (a shaped round's all count as producing).
async fn warm_round(
    session: &dyn Session,
    spec: &MeasureSpec,
    full_speed: &MeasureSpec,
    records: u64,
    group: &str,
    shaped: bool,
) -> Result<(f64, f64)> {
    let shown = |e: Event<'_>| {
        if let Event::Line(l) = e {
            show(l)
        }
    };
    let t = Instant::now();
    if shaped {
        together(session, spec, records, group, &|_| {}, &shown)
            .await
            .context("warm-up produce and consume")?;
        return Ok((t.elapsed().as_secs_f64(), 0.0));
    }
    let warm = session
        .produce(full_speed, records, &|_| {})
        .await
        .context("warm-up produce")?;
    let produced = t.elapsed().as_secs_f64();
    let t = Instant::now();
    session
        .consume(spec, warm.sent, group, &shown)
        .await
        .context("warm-up consume")?;
    Ok((produced, t.elapsed().as_secs_f64()))
}

/// Whether a warm-up by the JIT compilers ends after a round: they went quiet, or no JVM's
/// threads could be read, or the limit beyond `warm_up_for` passed (each but the first said).
fn compilers_done(
    started: Instant,
    warm_up_for: Duration,
    quiet: &super::JitQuiet,
    compiling: Option<&(String, f64)>,
) -> bool {
    let Some((service, share)) = compiling else {
        crate::progress::notice(&format!(
            "note: WARM_UP_JIT_PERCENT={}: no sampled JVM's threads could be read (see JVM \
             threads in docs/guide/profiles-and-report.md), so the warm-up ended after {:.0} s",
            quiet.percent,
            started.elapsed().as_secs_f64()
        ));
        return true;
    };
    if *share < quiet.percent as f64 {
        return true;
    }
    if started.elapsed() >= warm_up_for + quiet.limit {
        crate::progress::notice(&format!(
            "warning: after {:.0} s of warm-up the JIT compilers of {service} still used \
             {share:.1}% of its CPU in the last {} s (WARM_UP_JIT_PERCENT={}); measuring \
             anyway",
            started.elapsed().as_secs_f64(),
            quiet.window.as_secs(),
            quiet.percent
        ));
        return true;
    }
    false
}

/// Warms a broker: produces and consumes `records` records on a throw-away topic, then deletes
/// it.
pub async fn warm_broker(session: &dyn Session, bootstrap: &str, records: u64) -> Result<()> {
    let topic = format!("perf-tests-warm-up-{}", unique_suffix());
    let mut spec = MeasureSpec::new(bootstrap, topic, records);
    spec.warm_up_records = 0;
    measure(session, &spec)
        .await
        .with_context(|| format!("warming the broker at {bootstrap}"))?;
    Ok(())
}

/// Waits until `service` answers Kafka requests at `endpoint`.
pub(crate) async fn ready(
    session: &dyn Session,
    service: &str,
    endpoint: &str,
    timeout: Duration,
) -> Result<()> {
    session
        .probe(endpoint, timeout)
        .await
        .with_context(|| format!("service {service} did not answer Kafka requests at {endpoint}"))
}

#[cfg(test)]
mod counting_tests {
    use super::{count, Event};

    #[test]
    fn events_count_the_records_of_a_step() {
        let produced = crate::progress::records("produce", 5000);
        count(&produced, Event::Sent(1000));
        count(&produced, Event::Sent(2000));
        count(&produced, Event::Line("a line that counts nothing"));
        // The summary repeats the whole count; it is not added again.
        count(&produced, Event::Summary);
        assert_eq!(produced.done(), 3000);
        let consumed = crate::progress::records("consume", 5000);
        count(&consumed, Event::Consumed(4000));
        count(&consumed, Event::Consumed(4200));
        assert_eq!(consumed.done(), 4200);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::{Arc, Mutex};

    use anyhow::bail;
    use futures_util::future::BoxFuture;

    use super::*;
    use crate::driver::Progress;
    use crate::model::{ConsumerResult, ProducerResult};
    use crate::settings::rate::Rate;

    /// A session that records the steps asked of it and answers from a tiny in-memory topic.
    #[derive(Default)]
    pub(crate) struct Fake {
        /// Every step asked of it, in order (shareable with whoever else records).
        pub calls: Arc<Mutex<Vec<String>>>,
        /// Records in the topic.
        pub records: Mutex<u64>,
        /// Committed position of each group.
        pub committed: Mutex<BTreeMap<String, u64>>,
        /// Records the producer loses (acknowledged but never stored).
        pub lose: u64,
        /// Step names that fail.
        pub fail: Vec<&'static str>,
        /// The container id it reports measuring from, if any.
        pub container: Option<String>,
    }

    impl Fake {
        fn step(&self, call: String, name: &str) -> Result<()> {
            self.calls.lock().unwrap().push(call);
            if self.fail.contains(&name) {
                bail!("{name} failed");
            }
            Ok(())
        }
    }

    pub(crate) fn producer(sent: u64) -> ProducerResult {
        ProducerResult {
            histograms: Default::default(),
            sent,
            failed: 0,
            rate_rec_s: 1000.0,
            rate_mib_s: 1.0,
            avg_lat_ms: 1.0,
            max_lat_ms: 2.0,
            p50_ms: 1.0,
            p95_ms: 1.0,
            p99_ms: 2.0,
            p999_ms: 2.0,
            elapsed_s: sent as f64 / 1000.0,
            target_rec_s: -1.0,
            intended: None,
            span: None,
            derived: Vec::new(),
        }
    }

    impl Session for Fake {
        fn probe<'a>(&'a self, endpoint: &'a str, _: Duration) -> BoxFuture<'a, Result<()>> {
            Box::pin(async move { self.step(format!("probe {endpoint}"), "probe") })
        }
        fn create_topic<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<()>> {
            Box::pin(async move { self.step(format!("create {}", spec.topic), "create") })
        }
        fn produce<'a>(
            &'a self,
            spec: &'a MeasureSpec,
            records: u64,
            progress: Progress<'a>,
        ) -> BoxFuture<'a, Result<ProducerResult>> {
            Box::pin(async move {
                let throughput = spec.throughput;
                self.step(format!("produce {records} at {throughput}"), "produce")?;
                progress(Event::Line("window"));
                *self.records.lock().unwrap() += records.saturating_sub(self.lose);
                Ok(producer(records))
            })
        }
        fn consume<'a>(
            &'a self,
            _spec: &'a MeasureSpec,
            records: u64,
            group: &'a str,
            progress: Progress<'a>,
        ) -> BoxFuture<'a, Result<ConsumerResult>> {
            Box::pin(async move {
                let at = *self
                    .committed
                    .lock()
                    .unwrap()
                    .entry(group.into())
                    .or_default();
                self.step(format!("consume {records} from {at}"), "consume")?;
                progress(Event::Assigned);
                // An end-to-end step's producer sends while the group reads.
                for _ in 0..100 {
                    if *self.records.lock().unwrap() >= at + records {
                        break;
                    }
                    tokio::task::yield_now().await;
                }
                let got = records.min(*self.records.lock().unwrap() - at);
                *self.committed.lock().unwrap().get_mut(group).unwrap() += got;
                Ok(ConsumerResult {
                    histograms: Default::default(),
                    consumed_mib: 0.0,
                    consumed_mib_s: 0.0,
                    consumed_recs: got,
                    consumed_rec_s: 0.0,
                    rebalance_ms: 0.0,
                    fetch_ms: None,
                    first_record_ms: None,
                    fetch_mib_s: None,
                    fetch_rec_s: None,
                    end_to_end: None,
                    per_client: Vec::new(),
                    catch_up: None,
                    span: None,
                })
            })
        }
        fn end_offsets<'a>(&'a self, _spec: &'a MeasureSpec) -> BoxFuture<'a, Result<u64>> {
            Box::pin(async move {
                self.step("end-offsets".into(), "end-offsets")?;
                Ok(*self.records.lock().unwrap())
            })
        }
        fn delete_topic<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<()>> {
            Box::pin(async move { self.step(format!("delete {}", spec.topic), "delete") })
        }
        fn close(&self) -> BoxFuture<'_, Result<()>> {
            Box::pin(async move { self.step("close".into(), "close") })
        }
        fn measured_containers(&self) -> Vec<(String, String)> {
            self.container
                .iter()
                .map(|id| {
                    (
                        crate::world::resources::LOAD_GENERATOR.to_string(),
                        id.clone(),
                    )
                })
                .collect()
        }
    }

    fn spec() -> MeasureSpec {
        let mut spec = MeasureSpec::new("proxy:9092", "t", 5000);
        spec.warm_up_records = 700;
        spec.throughput = Rate::per_second(2000).unwrap();
        spec
    }

    async fn calls(fake: &Fake) -> Vec<String> {
        fake.calls.lock().unwrap().clone()
    }

    #[tokio::test]
    async fn a_warm_up_by_time_repeats_its_rounds_until_the_time_has_passed() {
        let fake = Fake::default();
        let mut spec = spec();
        spec.warm_up_for = Duration::from_millis(30);
        let started = Instant::now();
        let m = measure(&fake, &spec).await.unwrap();
        assert!(started.elapsed() >= spec.warm_up_for);
        let asked = calls(&fake).await;
        let rounds = asked.iter().filter(|c| *c == "produce 700 at -1").count();
        assert!(rounds >= 2, "{asked:?}");
        // Every warm-up record was read by the measuring group: only the measured ones count.
        assert!(
            asked.contains(&format!("consume 5000 from {}", 700 * rounds)),
            "{asked:?}"
        );
        assert!(m.integrity.is_ok(), "{:?}", m.integrity);
        assert_eq!(m.consumer.consumed_recs, 5000);
        // By time alone (no record count), rounds of the default size.
        let fake = Fake::default();
        spec.warm_up_records = 0;
        spec.warm_up_for = Duration::from_millis(1);
        measure(&fake, &spec).await.unwrap();
        assert_eq!(
            calls(&fake).await[1],
            format!("produce {WARM_UP_ROUND_RECORDS} at -1")
        );
    }

    #[tokio::test]
    async fn an_end_to_end_phase_at_a_rate_is_warmed_up_in_its_shape() {
        let fake = Fake::default();
        let mut spec = spec();
        spec.mode = Mode::EndToEnd;
        spec.warm_up_for = Duration::from_millis(1);
        let m = measure(&fake, &spec).await.unwrap();
        let asked = calls(&fake).await;
        // A timed warm-up's round lasts 10 s at the rate: the group subscribes, the producer
        // sends at the measured rate, and the measured group starts after the round's records.
        let round = 2000 * SHAPED_ROUND.as_secs();
        assert_eq!(
            asked[1..3],
            [
                format!("consume {round} from 0"),
                format!("produce {round} at 2000")
            ],
            "{asked:?}"
        );
        let rounds = asked
            .iter()
            .filter(|c| **c == format!("produce {round} at 2000"))
            .count() as u64;
        assert!(
            asked.contains(&format!("consume 5000 from {}", round * rounds)),
            "{asked:?}"
        );
        assert!(m.integrity.is_ok(), "{:?}", m.integrity);
        assert!(m.steps_s.contains_key("warm_up_produce_and_consume"));
        assert!(!m.steps_s.contains_key("warm_up_produce"));
        // Counted alone (no time), a round is the warm-up's records, in the same shape.
        let fake = Fake::default();
        spec.warm_up_for = Duration::ZERO;
        measure(&fake, &spec).await.unwrap();
        assert_eq!(calls(&fake).await[2], "produce 700 at 2000");
        // Without a rate the phase has no shape to copy: full speed, then the backlog.
        let fake = Fake::default();
        spec.throughput = Rate::Unlimited;
        let m = measure(&fake, &spec).await.unwrap();
        assert_eq!(
            calls(&fake).await[1..3],
            ["produce 700 at -1", "consume 700 from 0"]
        );
        assert!(m.steps_s.contains_key("warm_up_consume"));
    }

    /// Marks whose JVM's compilers used, after each warm-up round, the next of `shares`.
    struct Compiling {
        shares: std::cell::RefCell<Vec<Option<f64>>>,
        asked: std::cell::Cell<usize>,
    }

    impl Compiling {
        fn new(shares: &[Option<f64>]) -> Compiling {
            Compiling {
                shares: std::cell::RefCell::new(shares.to_vec()),
                asked: std::cell::Cell::new(0),
            }
        }
    }

    impl Marks for Compiling {
        fn start(&self, _: Phase) -> LocalBoxFuture<'_, ()> {
            Box::pin(async {})
        }
        fn end(&self, _: Phase, _: u64) -> LocalBoxFuture<'_, ()> {
            Box::pin(async {})
        }
        fn compiling(&self, _: Duration) -> LocalBoxFuture<'_, Option<(String, f64)>> {
            self.asked.set(self.asked.get() + 1);
            let mut shares = self.shares.borrow_mut();
            let next = if shares.is_empty() {
                None
            } else {
                shares.remove(0)
            };
            Box::pin(async move { next.map(|s| ("proxy".to_string(), s)) })
        }
    }

    #[tokio::test]
    async fn a_warm_up_until_the_jit_is_quiet_goes_on_while_the_compilers_are_busy() {
        let rounds = |fake: &Fake| {
            let asked = fake.calls.lock().unwrap().clone();
            asked.iter().filter(|c| *c == "produce 700 at -1").count()
        };
        let mut spec = spec();
        let quiet = |limit: u64| {
            Some(crate::driver::JitQuiet {
                percent: 5,
                window: Duration::ZERO,
                limit: Duration::from_secs(limit),
            })
        };
        spec.warm_up_jit = quiet(600);
        // The first question starts the count; then 40%, 12%, 4%: three rounds, the last quiet.
        let fake = Fake::default();
        let marks = Compiling::new(&[None, Some(40.0), Some(12.0), Some(4.0), Some(50.0)]);
        let m = measure_marked(&fake, &spec, &marks).await.unwrap();
        assert_eq!((rounds(&fake), marks.asked.get()), (3, 4));
        assert_eq!(m.consumer.consumed_recs, 5000);
        // At its limit the warm-up measures anyway.
        spec.warm_up_jit = quiet(0);
        let fake = Fake::default();
        let marks = Compiling::new(&[None, Some(40.0), Some(30.0)]);
        measure_marked(&fake, &spec, &marks).await.unwrap();
        assert_eq!(rounds(&fake), 1);
        // With no JVM whose threads are read, the warm-up is by time (one round) alone.
        spec.warm_up_jit = quiet(600);
        let fake = Fake::default();
        let marks = Compiling::new(&[]);
        measure_marked(&fake, &spec, &marks).await.unwrap();
        assert_eq!(rounds(&fake), 1);
        // Without the setting nobody is asked, and no window lengthens a warm-up by time: one
        // round here.
        spec.warm_up_jit = None;
        let marks = Compiling::new(&[None, Some(40.0)]);
        let fake = Fake::default();
        measure_marked(&fake, &spec, &marks).await.unwrap();
        assert_eq!((rounds(&fake), marks.asked.get()), (1, 0));
    }

    /// Marks that log each edge into the session's calls, where the steps are logged too.
    struct Logged(Arc<Mutex<Vec<String>>>);

    impl Marks for Logged {
        fn start(&self, phase: Phase) -> LocalBoxFuture<'_, ()> {
            self.0
                .lock()
                .unwrap()
                .push(format!("start {}", phase.name()));
            Box::pin(async {})
        }
        fn end(&self, phase: Phase, records: u64) -> LocalBoxFuture<'_, ()> {
            let line = format!("end {} {records}", phase.name());
            self.0.lock().unwrap().push(line);
            Box::pin(async {})
        }
    }

    #[tokio::test]
    async fn a_pairs_two_sides_share_each_edge_of_their_phase() {
        let fake = Fake::default();
        let mut a = spec();
        a.mode = Mode::EndToEnd;
        let b = MeasureSpec {
            bootstrap: "proxy-b:9092".into(),
            topic: "t-b".into(),
            ..a.clone()
        };
        // Both sides on one fake session: the calls of both in one log.
        let sides = Sides {
            a: (&fake, &a),
            b: (&fake, &b),
        };
        let m = measure_pair(&sides, &Logged(fake.calls.clone()))
            .await
            .unwrap();
        let asked = calls(&fake).await;
        let at =
            |line: &str| -> Vec<usize> { (0..asked.len()).filter(|&i| asked[i] == line).collect() };
        // One start and one end for both sides, with both sides' records.
        let (start, end) = (
            at("start produce_and_consume"),
            at("end produce_and_consume 10000"),
        );
        assert_eq!((start.len(), end.len()), (1, 1), "{asked:?}");
        // Both sides' measured steps lie within the edges, both warm-ups before them.
        let measured = at("produce 5000 at 2000");
        assert_eq!(measured.len(), 2, "{asked:?}");
        assert!(
            measured.iter().all(|&i| start[0] < i && i < end[0]),
            "{asked:?}"
        );
        let warm = at("produce 700 at 2000");
        assert_eq!(warm.len(), 2, "{asked:?}");
        assert!(warm.iter().all(|&i| i < start[0]), "{asked:?}");
        assert!(
            at("create t").len() == 1 && at("create t-b").len() == 1,
            "{asked:?}"
        );
        let side_b = m.pair.expect("side B's measurement");
        assert_eq!((m.producer.sent, side_b.producer.sent), (5000, 5000));

        // A side that fails ends both, named.
        let fake = Fake {
            fail: vec!["produce"],
            ..Fake::default()
        };
        let sides = Sides {
            a: (&fake, &a),
            b: (&fake, &b),
        };
        let err = measure_pair(&sides, &NoMarks).await.unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.starts_with("side ") && text.contains("produce failed"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn one_flow_orders_the_steps_and_skips_the_warm_up_records() {
        let fake = Fake::default();
        let m = measure(&fake, &spec()).await.unwrap();
        assert_eq!(
            calls(&fake).await,
            [
                "create t",
                "produce 700 at -1",
                "consume 700 from 0",
                "end-offsets",
                "produce 5000 at 2000",
                "end-offsets",
                "consume 5000 from 700",
                "delete t",
            ]
        );
        assert!(m.integrity.is_ok(), "{:?}", m.integrity);
        assert_eq!(m.integrity.end_offsets, 5000);
        assert_eq!(m.consumer.consumed_recs, 5000);
        let steps: Vec<&str> = m.steps_s.keys().map(String::as_str).collect();
        assert_eq!(
            steps,
            [
                "consume",
                "create_topic",
                "delete_topic",
                "end_offsets_after",
                "end_offsets_before",
                "produce",
                "warm_up_consume",
                "warm_up_produce",
            ]
        );
    }

    #[tokio::test]
    async fn counters_that_disagree_are_reported_not_hidden() {
        let fake = Fake {
            lose: 3,
            ..Fake::default()
        };
        let mut spec = spec();
        spec.warm_up_records = 0;
        let m = measure(&fake, &spec).await.unwrap();
        assert_eq!(m.integrity.acknowledged, 5000);
        assert_eq!(m.integrity.end_offsets, 4997);
        assert_eq!(m.integrity.consumed, 4997);
        assert!(!m.integrity.is_ok());
    }

    #[tokio::test]
    async fn the_topic_is_deleted_after_a_failure_and_the_failure_wins() {
        let fake = Fake {
            fail: vec!["consume", "delete"],
            ..Fake::default()
        };
        let err = measure(&fake, &spec()).await.unwrap_err();
        assert!(format!("{err:#}").contains("warm-up consume"), "{err:#}");
        assert_eq!(calls(&fake).await.last().unwrap(), "delete t");

        let fake = Fake {
            fail: vec!["delete"],
            ..Fake::default()
        };
        let err = measure(&fake, &spec()).await.unwrap_err();
        assert!(format!("{err:#}").contains("deleting topic `t`"), "{err:#}");
    }

    #[tokio::test]
    async fn warming_a_broker_measures_a_throw_away_topic_without_a_warm_up() {
        let fake = Fake::default();
        warm_broker(&fake, "broker:9092", 300).await.unwrap();
        let calls = calls(&fake).await;
        assert_eq!(calls.len(), 6, "{calls:?}");
        assert!(
            calls[0].starts_with("create perf-tests-warm-up-"),
            "{calls:?}"
        );
        assert_eq!(calls[1], "end-offsets");
        assert!(
            calls[5].starts_with("delete perf-tests-warm-up-"),
            "{calls:?}"
        );
    }
}
