//! The produce side, with kafka-producer-perf-test semantics: a fixed random payload, no key,
//! latency from the send call to the delivery report for every record, optional fixed rate.

use std::ffi::CString;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use rdkafka::bindings as rdsys;
use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::DeliveryResult;
use rdkafka::producer::{BaseProducer, Producer, ProducerContext};
use serde::Serialize;

use super::args::Endpoint;
use super::client::LastError;
use super::latency::Latencies;
use super::properties::{client_config, parse_pair};
use super::queue_waker::QueueWaker;
use crate::model::{ProducerResult, INTENDED, SEND};
use crate::settings::rate::Rate;

const MIB: f64 = 1024.0 * 1024.0;

// Send instants travel as nanoseconds in a usize; 32 bits would wrap after 4 s.
const _: () = assert!(usize::BITS >= 64);
/// How often a progress line is emitted, as the Java tool does.
pub(crate) const REPORT_INTERVAL: Duration = Duration::from_secs(5);

/// What to produce and where: the `produce` step's records, and the producers of a step that
/// runs them beside a group (`soak`, `catch-up`), on the command line as they are in memory.
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct ProduceConfig {
    #[command(flatten)]
    #[serde(flatten)]
    pub endpoint: Endpoint,
    /// Topic to produce to; repeatable (record i goes to topic i mod n).
    #[arg(long = "topic", required = true)]
    pub topics: Vec<String>,
    /// Records to produce; a step that stops its producers itself (soak, catch-up) leaves it
    /// at its default, which is no limit.
    #[arg(long, default_value_t = crate::settings::MAX_COUNT)]
    pub num_records: u64,
    /// Bytes per record value.
    #[arg(long, default_value_t = 1024)]
    pub record_size: usize,
    /// Target records/s, or -1 for unlimited.
    #[arg(long, default_value_t = Rate::Unlimited, allow_negative_numbers = true)]
    pub throughput: Rate,
    /// Producer property key=value (Java or librdkafka name); repeatable.
    #[arg(long = "property", value_parser = parse_pair)]
    pub properties: Vec<(String, String)>,
}

impl ProduceConfig {
    /// Producing to `topics` at `endpoint`, every other parameter at its flag's default.
    pub fn new(endpoint: Endpoint, topics: Vec<String>) -> Self {
        // The required flags' values are placeholders: the fields are set here.
        ProduceConfig {
            endpoint,
            topics,
            ..super::args::from_flags(&["--bootstrap", "-", "--topic", "-"])
        }
    }
}

/// One reporting window of the producer.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Records acknowledged in the window.
    pub records: u64,
    pub rec_s: f64,
    pub mib_s: f64,
    pub avg_lat_ms: f64,
    pub max_lat_ms: f64,
}

impl fmt::Display for Progress {
    /// The Java tool's progress line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} records sent, {:.1} records/sec ({:.2} MB/sec), {:.1} ms avg latency, {:.1} ms max latency.",
            self.records, self.rec_s, self.mib_s, self.avg_lat_ms, self.max_lat_ms
        )
    }
}

/// The Java tool's summary line for a finished run.
pub(crate) fn summary_line(r: &ProducerResult) -> String {
    format!(
        "{} records sent, {:.1} records/sec ({:.2} MB/sec), {:.2} ms avg latency, {:.2} ms max latency, \
         {:.0} ms 50th, {:.0} ms 95th, {:.0} ms 99th, {:.0} ms 99.9th.{}",
        r.sent,
        r.rate_rec_s,
        r.rate_mib_s,
        r.avg_lat_ms,
        r.max_lat_ms,
        r.p50_ms,
        r.p95_ms,
        r.p99_ms,
        r.p999_ms,
        if r.failed > 0 {
            format!(" {} records FAILED.", r.failed)
        } else {
            String::new()
        }
    )
}

/// Produces `num_records` records and measures them; `progress` gets a window every ~5 s.
pub async fn produce(
    cfg: &ProduceConfig,
    progress: impl FnMut(Progress),
) -> Result<ProducerResult> {
    produce_many(cfg, 1, progress).await
}

/// Lets another thread of the workload watch producers' acknowledgements and stop them before
/// their records run out (the backlog mode's live producer runs until the group caught up, a
/// DURATION run's until the time is up).
#[derive(Default)]
pub(crate) struct Live {
    /// Set to stop sending; records already sent are still awaited.
    pub stop: AtomicBool,
    /// Records acknowledged so far, by every producer sharing it.
    pub acked: AtomicU64,
    /// When given: the latencies (from the send call) of the records acknowledged since a
    /// watcher last took them, for a time series.
    pub window: Option<Mutex<Latencies>>,
}

/// [`produce`] with `producers` producers at once, each in its own thread with its share of the
/// records and of the rate; their figures are merged: the rate is every acknowledged record over
/// the time from the first start to the last acknowledgement, the latencies are one histogram.
/// `progress` gets every producer's windows.
pub(crate) async fn produce_many(
    cfg: &ProduceConfig,
    producers: u32,
    progress: impl FnMut(Progress),
) -> Result<ProducerResult> {
    produce_live(cfg, producers, None, progress).await
}

/// [`produce_many`] whose producers count their acknowledgements in `live` and stop sending once
/// it says so.
pub(crate) async fn produce_live(
    cfg: &ProduceConfig,
    producers: u32,
    live: Option<Arc<Live>>,
    mut progress: impl FnMut(Progress),
) -> Result<ProducerResult> {
    let shares = shares(cfg, producers.max(1));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let tasks: Vec<_> = shares
        .into_iter()
        .map(|share| {
            let tx = tx.clone();
            let live = live.clone();
            tokio::task::spawn_blocking(move || {
                produce_blocking(&share, live, |p| {
                    let _ = tx.send(p);
                })
            })
        })
        .collect();
    drop(tx);
    while let Some(p) = rx.recv().await {
        progress(p);
    }
    let mut parts = Vec::with_capacity(tasks.len());
    for task in tasks {
        parts.push(task.await.context("producer task panicked")??);
    }
    Ok(summarise(cfg, parts))
}

/// Each producer's configuration: the records, and a positive rate, split as evenly as whole
/// numbers allow (the first ones get the remainders); producers with nothing to send are left
/// out.
fn shares(cfg: &ProduceConfig, producers: u32) -> Vec<ProduceConfig> {
    let n = u64::from(producers);
    (0..n)
        .map(|i| ProduceConfig {
            num_records: crate::settings::rate::share(cfg.num_records, n, i),
            throughput: cfg.throughput.share(n, i),
            ..cfg.clone()
        })
        .filter(|share| share.num_records > 0)
        .collect()
}

/// One producer's outcome, before the figures of several are merged.
struct Produced {
    acked: u64,
    failed: u64,
    start: Instant,
    /// When its last delivery report came.
    last_report: Option<Instant>,
    sent: Latencies,
    intended: Latencies,
}

/// The figures of one or more producers of `cfg` (their shares of it) as one result.
fn summarise(cfg: &ProduceConfig, parts: Vec<Produced>) -> ProducerResult {
    let acked: u64 = parts.iter().map(|p| p.acked).sum();
    let failed: u64 = parts.iter().map(|p| p.failed).sum();
    let start = parts.iter().map(|p| p.start).min();
    let last = parts.iter().filter_map(|p| p.last_report).max();
    let elapsed_s = match (start, last) {
        (Some(start), Some(last)) => last.saturating_duration_since(start).as_secs_f64(),
        _ => 0.0,
    };
    let mut sent = Latencies::new();
    let mut intended = Latencies::new();
    for p in &parts {
        sent.merge(&p.sent);
        intended.merge(&p.intended);
    }
    let per_s = |x: f64| if elapsed_s > 0.0 { x / elapsed_s } else { 0.0 };
    let latency = sent.summary(acked);
    let throttled = cfg.throughput.is_limited();
    ProducerResult {
        sent: acked,
        failed,
        rate_rec_s: per_s(acked as f64),
        rate_mib_s: per_s(acked as f64 * cfg.record_size as f64 / MIB),
        avg_lat_ms: latency.avg_lat_ms,
        max_lat_ms: latency.max_lat_ms,
        p50_ms: latency.p50_ms,
        p95_ms: latency.p95_ms,
        p99_ms: latency.p99_ms,
        p999_ms: latency.p999_ms,
        elapsed_s,
        target_rec_s: cfg.throughput.as_target(),
        intended: throttled.then(|| intended.summary(acked)),
        span: start.map(|start| {
            crate::model::Span::since(start, std::time::Duration::from_secs_f64(elapsed_s))
        }),
        derived: Vec::new(),
        histograms: [(SEND, &sent)]
            .into_iter()
            .chain(throttled.then_some((INTENDED, &intended)))
            .filter(|(_, l)| l.count() > 0)
            .map(|(k, l)| (k.to_string(), l.encoded()))
            .collect(),
    }
}

/// Delivery bookkeeping shared between the send loop and the delivery callback.
struct Tally {
    /// Latency from each record's send call, as the Kafka tools time it.
    sent: Latencies,
    /// Latency from each record's intended send time (with a THROUGHPUT target).
    intended: Latencies,
    acked: u64,
    failed: u64,
    first_failure: Option<String>,
    last_report: Option<Instant>,
    window: Window,
}

/// What travels with each record to its delivery report (librdkafka's per-message opaque, one
/// machine word): when it was sent, in µs since the producer's origin (the low 40 bits: 12
/// days, compared modulo that), and how far behind its intended send time on the THROUGHPUT
/// schedule, in whole ms (the high 24 bits: 4.6 hours, saturating).
const SENT_BITS: u32 = 40;
const SENT_MASK: u64 = (1 << SENT_BITS) - 1;
const LATE_MAX_MS: u64 = (1 << (64 - SENT_BITS)) - 1;
const _: () = assert!(usize::BITS == 64, "the delivery stamp needs a 64-bit word");

fn stamp(sent_us: u64, late_ms: u64) -> usize {
    ((late_ms.min(LATE_MAX_MS) << SENT_BITS) | (sent_us & SENT_MASK)) as usize
}

/// The send time (µs, low 40 bits) and the lateness (ms) of a stamp.
fn unstamp(stamp: usize) -> (u64, u64) {
    let s = stamp as u64;
    (s & SENT_MASK, s >> SENT_BITS)
}

struct Window {
    start: Instant,
    count: u64,
    lat_sum_us: u64,
    lat_max_us: u64,
}

impl Window {
    fn new(start: Instant) -> Self {
        Window {
            start,
            count: 0,
            lat_sum_us: 0,
            lat_max_us: 0,
        }
    }
}

struct Measuring {
    /// Send instants travel as microseconds since this origin in the delivery opaque.
    origin: Instant,
    /// Records have intended send times (a THROUGHPUT target): measure from them too.
    scheduled: bool,
    record_size: usize,
    tally: Mutex<Tally>,
    last_error: LastError,
    live: Option<Arc<Live>>,
}

impl ClientContext for Measuring {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        self.last_error.log(level, fac, message);
    }
    fn error(&self, error: KafkaError, reason: &str) {
        self.last_error.error(error, reason);
    }
}

impl ProducerContext for Measuring {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, stamp: usize) {
        let now = Instant::now();
        let (sent_us, late_ms) = unstamp(stamp);
        let now_us = now.duration_since(self.origin).as_micros() as u64;
        let latency_us = now_us.wrapping_sub(sent_us) & SENT_MASK;
        let mut t = self.tally.lock().unwrap_or_else(|e| e.into_inner());
        t.last_report = Some(now);
        match result {
            Ok(_) => {
                t.acked += 1;
                if let Some(live) = &self.live {
                    live.acked.fetch_add(1, Ordering::Relaxed);
                    if let Some(window) = &live.window {
                        window
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .record(latency_us);
                    }
                }
                t.sent.record(latency_us);
                t.window.count += 1;
                t.window.lat_sum_us += latency_us;
                t.window.lat_max_us = t.window.lat_max_us.max(latency_us);
                if self.scheduled {
                    // Sent late: the wait for the send counts too (coordinated omission).
                    t.intended.record(latency_us + late_ms * 1000);
                }
            }
            Err((e, _)) => {
                t.failed += 1;
                if t.first_failure.is_none() {
                    t.first_failure = Some(e.to_string());
                }
            }
        }
    }
}

impl Measuring {
    fn new(origin: Instant, scheduled: bool, record_size: usize, live: Option<Arc<Live>>) -> Self {
        Measuring {
            origin,
            scheduled,
            record_size,
            tally: Mutex::new(Tally {
                sent: Latencies::new(),
                intended: Latencies::new(),
                acked: 0,
                failed: 0,
                first_failure: None,
                last_report: None,
                window: Window::new(origin),
            }),
            last_error: LastError::default(),
            live,
        }
    }

    fn reported(&self) -> u64 {
        let t = self.tally.lock().unwrap_or_else(|e| e.into_inner());
        t.acked + t.failed
    }

    /// Closes the current window if it is old enough, or if it holds the step's first
    /// acknowledgements (so whoever watches learns at once that the path carries records, not
    /// up to 5 s later), and returns its numbers.
    fn take_window(&self, now: Instant) -> Option<Progress> {
        let mut t = self.tally.lock().unwrap_or_else(|e| e.into_inner());
        let secs = now.duration_since(t.window.start).as_secs_f64();
        let first = t.window.count > 0 && t.window.count == t.acked;
        if secs < REPORT_INTERVAL.as_secs_f64() && !first {
            return None;
        }
        let w = std::mem::replace(&mut t.window, Window::new(now));
        Some(Progress {
            records: w.count,
            rec_s: w.count as f64 / secs,
            mib_s: w.count as f64 * self.record_size as f64 / MIB / secs,
            avg_lat_ms: if w.count == 0 {
                0.0
            } else {
                w.lat_sum_us as f64 / w.count as f64 / 1000.0
            },
            max_lat_ms: w.lat_max_us as f64 / 1000.0,
        })
    }
}

/// The Java tool's ThroughputThrottler: once the average rate since the start exceeds the
/// target, wait one record's worth of time, batching waits below 2 ms.
pub(crate) struct Throttler {
    target: Option<u64>,
    start: Instant,
    per_record: Duration,
    deficit: Duration,
}

const MIN_SLEEP: Duration = Duration::from_millis(2);

impl Throttler {
    pub(crate) fn new(target: Rate, start: Instant) -> Self {
        let per_record = target.limit().map_or(Duration::ZERO, |rate| {
            Duration::from_nanos(1_000_000_000 / rate)
        });
        Throttler {
            target: target.limit(),
            start,
            per_record,
            deficit: Duration::ZERO,
        }
    }

    pub(crate) fn should_throttle(&self, so_far: u64, now: Instant) -> bool {
        let Some(target) = self.target else {
            return false;
        };
        let secs = now.duration_since(self.start).as_secs_f64();
        secs > 0.0 && so_far as f64 / secs > target as f64
    }

    /// Waits off the accumulated deficit, spending the time in `wait` (which serves callbacks).
    pub(crate) fn throttle(&mut self, mut wait: impl FnMut(Duration)) {
        self.deficit += self.per_record;
        if self.deficit < MIN_SLEEP {
            return;
        }
        let until = Instant::now() + self.deficit;
        loop {
            let now = Instant::now();
            if now >= until {
                break;
            }
            wait(until - now);
        }
        self.deficit = Duration::ZERO;
    }
}

/// librdkafka's handle of the measured topic, looked up once. `BaseProducer::send` names the
/// topic for every record (a C-string allocation and a locked lookup inside librdkafka), which
/// costs a measurable share of throughput at several hundred thousand records per second.
struct TopicHandle(*mut rdsys::rd_kafka_topic_t);

impl TopicHandle {
    fn new(producer: &BaseProducer<Measuring>, topic: &str) -> Result<TopicHandle> {
        let name = CString::new(topic).with_context(|| format!("topic name `{topic}`"))?;
        // SAFETY: the client pointer is valid while `producer` lives, and the handle is dropped
        // before it (it is declared after the producer).
        let ptr = unsafe {
            rdsys::rd_kafka_topic_new(
                producer.client().native_ptr(),
                name.as_ptr(),
                std::ptr::null_mut(),
            )
        };
        if ptr.is_null() {
            // SAFETY: reads librdkafka's thread-local last error.
            let code: RDKafkaErrorCode = unsafe { rdsys::rd_kafka_last_error() }.into();
            bail!("opening topic `{topic}`: {code}");
        }
        Ok(TopicHandle(ptr))
    }

    /// Enqueues a copy of `payload` to any partition; `opaque` comes back with its delivery
    /// report, as the `usize` delivery opaque `BaseProducer` hands to `Measuring::delivery`.
    fn produce(&self, payload: &[u8], opaque: usize) -> std::result::Result<(), RDKafkaErrorCode> {
        // SAFETY: the handle is valid; librdkafka copies the payload (F_COPY) before returning.
        let rc = unsafe {
            rdsys::rd_kafka_produce(
                self.0,
                -1, // RD_KAFKA_PARTITION_UA: the partitioner chooses
                rdsys::RD_KAFKA_MSG_F_COPY,
                payload.as_ptr() as *mut std::ffi::c_void,
                payload.len(),
                std::ptr::null(),
                0,
                opaque as *mut std::ffi::c_void,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            // SAFETY: reads librdkafka's thread-local last error.
            Err(unsafe { rdsys::rd_kafka_last_error() }.into())
        }
    }
}

impl Drop for TopicHandle {
    fn drop(&mut self) {
        // SAFETY: created by rd_kafka_topic_new and destroyed once.
        unsafe { rdsys::rd_kafka_topic_destroy(self.0) };
    }
}

/// Waits that still serve each delivery report as it comes: a throttled producer waits 2 ms at
/// a time, which through rust-rdkafka's `poll` burned about half a core at any rate.
struct Reports(QueueWaker);

impl Reports {
    fn new(producer: &BaseProducer<Measuring>) -> Result<Reports> {
        // SAFETY: the client pointer is valid while `producer` lives; the handle is released
        // before it (declared after it).
        let queue = unsafe { rdsys::rd_kafka_queue_get_main(producer.client().native_ptr()) };
        Ok(Reports(QueueWaker::new(vec![queue])?))
    }

    /// Serves delivery reports for `d`.
    fn wait(&self, producer: &BaseProducer<Measuring>, d: Duration) {
        let until = Instant::now() + d;
        loop {
            // SAFETY: the queue handle is valid while the waker lives.
            while unsafe { rdsys::rd_kafka_queue_length(self.0.queue(0)) } > 0 {
                producer.poll(Duration::ZERO);
            }
            let now = Instant::now();
            if now >= until {
                return;
            }
            self.0.wait(until - now);
        }
    }
}

/// A payload of uppercase letters, as the Java tool makes when given no payload file.
fn payload(size: usize) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
    (0..size)
        .map(|_| {
            // xorshift64*
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            b'A' + (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u8 % 26
        })
        .collect()
}

fn produce_blocking(
    cfg: &ProduceConfig,
    live: Option<Arc<Live>>,
    mut progress: impl FnMut(Progress),
) -> Result<Produced> {
    let (producer, origin) = measuring_producer(cfg, live.clone())?;
    let throttled = cfg.throughput.is_limited();
    let payload = payload(cfg.record_size);

    let start = Instant::now();
    producer.context().tally.lock().unwrap().window = Window::new(start);
    let mut throttler = Throttler::new(cfg.throughput, start);
    // Record i's intended send time: the start plus i periods of the target rate.
    let start_ns = start.duration_since(origin).as_nanos() as u64;
    let period_ns = cfg.throughput.limit().map_or(0.0, |rate| 1e9 / rate as f64);
    let report = |now: Instant, progress: &mut dyn FnMut(Progress)| {
        if let Some(p) = producer.context().take_window(now) {
            progress(p);
        }
    };

    let handles = topic_handles(&producer, &cfg.topics)?;
    let reports = Reports::new(&producer)?;
    let mut next_topic = 0;
    let mut sent = 0;
    for i in 0..cfg.num_records {
        if live
            .as_ref()
            .is_some_and(|l| l.stop.load(Ordering::Relaxed))
        {
            break;
        }
        sent = i + 1;
        let sent_ns = Instant::now().duration_since(origin).as_nanos() as u64;
        let late_ms = if throttled {
            let intended_ns = start_ns + (i as f64 * period_ns) as u64;
            sent_ns.saturating_sub(intended_ns) / 1_000_000
        } else {
            0
        };
        let opaque = stamp(sent_ns / 1000, late_ms);
        // Records go to the topics in turn, so each gets an even share.
        let topic = next_topic;
        next_topic = if next_topic + 1 == handles.len() {
            0
        } else {
            next_topic + 1
        };
        if let Err(e) = send(&handles[topic], &payload, opaque, &reports, &producer) {
            return Err(anyhow!(
                "sending record {} of {} to topic `{}` through {}: {e}{}",
                i + 1,
                cfg.num_records,
                cfg.topics[topic],
                cfg.endpoint.bootstrap,
                producer.context().last_error.suffix()
            ));
        }
        // Serving delivery reports every few records rather than after each one saves a
        // queue round trip per record; a report waits at most a few microseconds longer.
        if i % 8 == 0 {
            producer.poll(Duration::ZERO);
        }
        // Reading the clock and the progress window for every record costs throughput when
        // unthrottled; every 1024th record is often enough for 5 s progress windows.
        if throttled || i % 1024 == 0 {
            let now = Instant::now();
            report(now, &mut progress);
            if throttled && throttler.should_throttle(i + 1, now) {
                throttler.throttle(|d| reports.wait(&producer, d));
            }
        }
    }
    while producer.context().reported() < sent {
        reports.wait(&producer, Duration::from_millis(50));
        report(Instant::now(), &mut progress);
    }

    produced(&producer, cfg, start)
}

/// A handle of each of `topics`, in their order; none is an error.
fn topic_handles(
    producer: &BaseProducer<Measuring>,
    topics: &[String],
) -> Result<Vec<TopicHandle>> {
    let handles = topics
        .iter()
        .map(|t| TopicHandle::new(producer, t))
        .collect::<Result<Vec<_>>>()?;
    if handles.is_empty() {
        bail!("no topic to produce to");
    }
    Ok(handles)
}

/// Sends one record; while the local queue is full, serves delivery reports and retries.
#[inline]
fn send(
    handle: &TopicHandle,
    payload: &[u8],
    opaque: usize,
    reports: &Reports,
    producer: &BaseProducer<Measuring>,
) -> std::result::Result<(), RDKafkaErrorCode> {
    loop {
        match handle.produce(payload, opaque) {
            Err(RDKafkaErrorCode::QueueFull) => reports.wait(producer, Duration::from_millis(1)),
            sent => return sent,
        }
    }
}

/// The producer with its measuring context (latencies, delivery counts, windows), and the
/// instant its clock counts from.
fn measuring_producer(
    cfg: &ProduceConfig,
    live: Option<Arc<Live>>,
) -> Result<(BaseProducer<Measuring>, Instant)> {
    let (config, warnings) = client_config(
        &cfg.endpoint.bootstrap,
        &[],
        &[&cfg.endpoint.client_properties, &cfg.properties],
    )?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    let origin = Instant::now();
    let context = Measuring::new(origin, cfg.throughput.is_limited(), cfg.record_size, live);
    let producer: BaseProducer<Measuring> = config
        .create_with_context(context)
        .context("creating the Kafka producer")?;
    Ok((producer, origin))
}

/// What `producer` delivered, once every report is in; an error when nothing was.
fn produced(
    producer: &BaseProducer<Measuring>,
    cfg: &ProduceConfig,
    start: Instant,
) -> Result<Produced> {
    let mut t = producer
        .context()
        .tally
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if t.acked == 0 && t.failed > 0 {
        bail!(
            "no record of {} was delivered to {} through {}: {}{}",
            cfg.num_records,
            super::topics_named(&cfg.topics),
            cfg.endpoint.bootstrap,
            t.first_failure.clone().unwrap_or_default(),
            producer.context().last_error.suffix()
        );
    }
    if let Some(f) = &t.first_failure {
        eprintln!(
            "warning: {} records failed delivery; first failure: {f}",
            t.failed
        );
    }
    Ok(Produced {
        acked: t.acked,
        failed: t.failed,
        start,
        last_report: t.last_report,
        sent: std::mem::take(&mut t.sent),
        intended: std::mem::take(&mut t.intended),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_is_uppercase_letters_of_the_size() {
        let p = payload(1000);
        assert_eq!(p.len(), 1000);
        assert!(p.iter().all(|b| b.is_ascii_uppercase()));
        assert!(p.iter().collect::<std::collections::HashSet<_>>().len() > 10);
    }

    #[test]
    fn throttler_holds_the_target_rate() {
        // 3000 records at 5000 rec/s: the last is due at 0.5998 s. The throttler never runs
        // ahead of the target by more than its smallest sleep (`MIN_SLEEP`); a sleep that overshoots on a loaded machine is made up by the records after it (it
        // compares the average so far), so only the last sleep's overshoot can add to the
        // time: a throttler that waited twice as long per record would take 1.2 s.
        let start = Instant::now();
        let mut t = Throttler::new(Rate::per_second(5000).unwrap(), start);
        for sent in 1..=3000u64 {
            if t.should_throttle(sent, Instant::now()) {
                t.throttle(std::thread::sleep);
            }
        }
        let took = start.elapsed().as_secs_f64();
        let earliest = 0.5998 - MIN_SLEEP.as_secs_f64();
        assert!(
            (earliest..0.9).contains(&took),
            "3000 records took {took} s"
        );
    }

    #[test]
    fn a_stamp_carries_the_send_time_and_the_lateness() {
        let sent_us = 3 * 86_400 * 1_000_000 + 123_456; // three days in
        assert_eq!(unstamp(stamp(sent_us, 0)), (sent_us, 0));
        assert_eq!(unstamp(stamp(sent_us, 1500)), (sent_us, 1500));
        // A lateness beyond 4.6 hours saturates instead of corrupting the send time.
        assert_eq!(unstamp(stamp(sent_us, u64::MAX)), (sent_us, LATE_MAX_MS));
        // Past 12 days the send time wraps; a latency is still right modulo 2^40 µs.
        let late = SENT_MASK + 10;
        let (sent, _) = unstamp(stamp(late, 0));
        assert_eq!((late + 250).wrapping_sub(sent) & SENT_MASK, 250);
    }

    fn config(num_records: u64, throughput: Rate) -> ProduceConfig {
        ProduceConfig {
            num_records,
            throughput,
            ..ProduceConfig::new(Endpoint::new("broker:9092", &[]), vec!["t".into()])
        }
    }

    #[test]
    fn producers_share_the_records_and_the_rate() {
        let s = shares(&config(10, Rate::per_second(7).unwrap()), 3);
        let records: Vec<u64> = s.iter().map(|c| c.num_records).collect();
        let rates: Vec<Option<u64>> = s.iter().map(|c| c.throughput.limit()).collect();
        assert_eq!(
            (records, rates),
            (vec![4, 3, 3], vec![Some(3), Some(2), Some(2)])
        );
        // More producers than records: the idle ones are left out; unlimited stays unlimited.
        let few = shares(&config(2, Rate::Unlimited), 3);
        assert_eq!(few.len(), 2);
        assert!(few
            .iter()
            .all(|c| c.throughput == Rate::Unlimited && c.num_records == 1));
    }

    #[test]
    fn merged_figures_count_every_record_over_the_whole_time() {
        let start = Instant::now();
        let part = |acked: u64, ms: u64, us: u64| {
            let mut sent = Latencies::new();
            for _ in 0..acked {
                sent.record(us);
            }
            Produced {
                acked,
                failed: 0,
                start,
                last_report: Some(start + Duration::from_millis(ms)),
                sent,
                intended: Latencies::new(),
            }
        };
        let r = summarise(
            &config(2000, Rate::Unlimited),
            vec![part(1000, 1000, 2_000), part(1000, 2000, 4_000)],
        );
        assert_eq!(r.sent, 2000);
        // 2000 records from the first start to the last acknowledgement, 2 s (not the sum of
        // each producer's own rate, 1500 rec/s).
        assert!((r.rate_rec_s - 1000.0).abs() < 1e-6, "{r:?}");
        assert!((r.avg_lat_ms - 3.0).abs() < 0.01, "{r:?}");
        assert!((r.max_lat_ms - 4.0).abs() < 0.01, "{r:?}");
        assert!((r.p99_ms - 4.0).abs() < 0.01, "{r:?}");
        assert!(r.intended.is_none());
    }

    #[test]
    fn unlimited_never_throttles() {
        let start = Instant::now() - Duration::from_secs(1);
        assert!(
            !Throttler::new(Rate::Unlimited, start).should_throttle(u64::MAX / 2, Instant::now())
        );
    }

    #[test]
    fn the_window_of_the_first_acknowledgements_closes_at_once_the_others_after_5_s() {
        let origin = Instant::now();
        let m = Measuring::new(origin, false, 100, None);
        let ack = |n: u64| {
            let mut t = m.tally.lock().unwrap();
            t.acked += n;
            t.window.count += n;
        };
        assert_eq!(m.take_window(origin + Duration::from_millis(10)), None);
        ack(3);
        let first = m.take_window(origin + Duration::from_millis(20)).unwrap();
        assert_eq!(first.records, 3);
        ack(5);
        assert_eq!(m.take_window(origin + Duration::from_secs(1)), None);
        let next = m.take_window(origin + Duration::from_secs(6)).unwrap();
        assert_eq!(next.records, 5);
    }

    #[test]
    fn progress_line_has_the_java_format() {
        let p = Progress {
            records: 100,
            rec_s: 20.0,
            mib_s: 0.02,
            avg_lat_ms: 1.26,
            max_lat_ms: 3.0,
        };
        assert_eq!(
            p.to_string(),
            "100 records sent, 20.0 records/sec (0.02 MB/sec), 1.3 ms avg latency, 3.0 ms max latency."
        );
    }
}
