//! A run bounded by time (DURATION, with MODE=end-to-end), in one process so that the lag is
//! counted exactly: producers send until the time is up while the group consumes, and once a
//! second a watcher records what happened in that second (records acknowledged and consumed,
//! the lag, the latencies of its records). The first seconds (the warm-up) are in the series but
//! not in the run's figures, which come from the seconds after it until the time was up.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};

use super::args::Seconds;
use super::consumer::consume_until;
use super::latency::Latencies;
use super::producer::{produce_live, Live};
use super::together::Together;
use crate::model::{
    ConsumerResult, LatencySummary, ProducerResult, Second, Span, END_TO_END, SEND,
};

const MIB: f64 = 1024.0 * 1024.0;

/// One run bounded by time: the producers and the group (whose end-to-end latencies give the
/// series its send-to-receipt figures); the `soak` step's parameters, on the command line as
/// they are in memory.
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct SoakConfig {
    #[command(flatten)]
    #[serde(flatten)]
    pub clients: Together,
    /// Seconds the producers send (whole seconds: the series has one entry per second).
    #[arg(long = "duration-s")]
    pub duration: Seconds,
    /// Seconds at the start measured but left out of the figures (kept in the series).
    #[arg(long = "warm-up-s", default_value = "0")]
    pub warm_up: Seconds,
}

/// What a run bounded by time measured: figures of the seconds after the warm-up, the counts of
/// the whole run, and every second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakResult {
    pub producer: ProducerResult,
    pub consumer: ConsumerResult,
    pub series: Vec<Second>,
}

/// A line of progress for second `s`.
pub(crate) fn progress_line(s: &Second) -> String {
    format!(
        "t={} s: produced {} rec/s, consumed {} rec/s, lag {}, produce p99 {:.0} ms, end-to-end p99 {:.0} ms{}",
        s.t_s,
        s.produced,
        s.consumed,
        s.lag,
        s.produce_p99_ms,
        s.e2e_p99_ms,
        if s.warm_up { " (warm-up)" } else { "" }
    )
}

/// Runs `cfg`; `progress` gets every second as it ends.
pub(crate) async fn soak(
    cfg: &SoakConfig,
    progress: impl Fn(&Second) + Send + 'static,
) -> Result<SoakResult> {
    if cfg.warm_up >= cfg.duration {
        bail!("the warm-up must be shorter than the run");
    }
    let live = Arc::new(Live {
        window: Some(Mutex::default()),
        ..Live::default()
    });
    let e2e_window = Arc::new(Mutex::new(Latencies::new()));
    let produced_all = Arc::new(AtomicBool::new(false));
    // The group's count as of its last poll, for the series.
    let consumed = Arc::new(AtomicU64::new(0));
    // The group stops once the producers stopped and it read every record they had acknowledged.
    let done = {
        let (live, produced_all, consumed) = (live.clone(), produced_all.clone(), consumed.clone());
        move |n: u64| {
            consumed.store(n, Ordering::Relaxed);
            produced_all.load(Ordering::SeqCst) && n >= live.acked.load(Ordering::SeqCst)
        }
    };
    let finished = Arc::new(AtomicBool::new(false));
    // Closes a second every second, and stops the producers once the time is up.
    let watcher = {
        let (live, e2e_window, consumed, finished) = (
            live.clone(),
            e2e_window.clone(),
            consumed.clone(),
            finished.clone(),
        );
        let (duration, warm_up) = (cfg.duration.0.as_secs(), cfg.warm_up.0.as_secs());
        let start = tokio::time::Instant::now();
        tokio::spawn(async move {
            let mut watcher = Watcher::new(warm_up, duration, start.into_std());
            let mut tick =
                tokio::time::interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
            while !finished.load(Ordering::SeqCst) {
                tick.tick().await;
                let second = watcher.observe(
                    live.acked.load(Ordering::SeqCst),
                    consumed.load(Ordering::Relaxed),
                    live.window.as_ref().map(take).unwrap_or_default(),
                    take(&e2e_window),
                );
                progress(second);
                if second.t_s == duration {
                    live.stop.store(true, Ordering::SeqCst);
                }
            }
            watcher
        })
    };
    let produce = async {
        let r = produce_live(
            &cfg.clients.produce,
            cfg.clients.producers,
            Some(live.clone()),
            |_| {},
        )
        .await;
        produced_all.store(true, Ordering::SeqCst);
        r
    };
    let group = cfg.clients.consume(true);
    let consume = async {
        let r = consume_until(&group, |_| {}, || {}, done, Some(e2e_window.clone())).await;
        // A group that failed leaves nothing to produce for.
        live.stop.store(true, Ordering::SeqCst);
        r
    };
    let (producer, consumer) = tokio::join!(produce, consume);
    finished.store(true, Ordering::SeqCst);
    let watcher = watcher
        .await
        .context("the watcher of the seconds panicked")?;
    Ok(watcher.result(cfg, producer?, consumer?))
}

/// The latencies tallied into `window` since it was last taken.
fn take(window: &Mutex<Latencies>) -> Latencies {
    std::mem::take(&mut *window.lock().unwrap_or_else(|e| e.into_inner()))
}

/// The seconds seen so far, and the latencies of the measured ones (after the warm-up, until
/// the time was up) merged.
struct Watcher {
    warm_up_s: u64,
    duration_s: u64,
    /// When the first second started.
    start: std::time::Instant,
    acked: u64,
    consumed: u64,
    series: Vec<Second>,
    produce: Latencies,
    end_to_end: Latencies,
}

impl Watcher {
    fn new(warm_up_s: u64, duration_s: u64, start: std::time::Instant) -> Watcher {
        Watcher {
            warm_up_s,
            duration_s,
            start,
            acked: 0,
            consumed: 0,
            series: Vec::new(),
            produce: Latencies::new(),
            end_to_end: Latencies::new(),
        }
    }

    /// Closes the current second: `acked` and `consumed` so far, and the latencies of the
    /// records acknowledged and received in it.
    fn observe(
        &mut self,
        acked: u64,
        consumed: u64,
        produce: Latencies,
        end_to_end: Latencies,
    ) -> &Second {
        let t_s = self.series.len() as u64 + 1;
        let p = produce.summary(produce.count());
        let e = end_to_end.summary(end_to_end.count());
        self.series.push(Second {
            t_s,
            warm_up: t_s <= self.warm_up_s,
            produced: acked - self.acked,
            consumed: consumed - self.consumed,
            lag: acked.saturating_sub(consumed),
            produce_p50_ms: p.p50_ms,
            produce_p99_ms: p.p99_ms,
            produce_max_ms: p.max_lat_ms,
            e2e_p50_ms: e.p50_ms,
            e2e_p99_ms: e.p99_ms,
            e2e_max_ms: e.max_lat_ms,
        });
        (self.acked, self.consumed) = (acked, consumed);
        if self.measured(t_s) {
            self.produce.merge(&produce);
            self.end_to_end.merge(&end_to_end);
        }
        &self.series[self.series.len() - 1]
    }

    /// Whether second `t_s` counts in the figures: after the warm-up, while the producers sent.
    fn measured(&self, t_s: u64) -> bool {
        t_s > self.warm_up_s && t_s <= self.duration_s
    }

    /// The run's figures from the measured seconds; counts from the whole run.
    fn result(
        self,
        cfg: &SoakConfig,
        producer: ProducerResult,
        consumer: ConsumerResult,
    ) -> SoakResult {
        let measured: Vec<&Second> = self
            .series
            .iter()
            .filter(|s| self.measured(s.t_s))
            .collect();
        let secs = measured.len() as f64;
        let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let produced: u64 = measured.iter().map(|s| s.produced).sum();
        let consumed: u64 = measured.iter().map(|s| s.consumed).sum();
        let size = cfg.clients.produce.record_size as f64;
        let p: LatencySummary = self.produce.summary(self.produce.count());
        // The measured seconds: the figures' span, and the histograms' (the clients' own hold
        // the whole run, warm-up and drain too).
        let span = measured.first().map(|first| {
            let from = self.start + Duration::from_secs(first.t_s - 1);
            Span::since(from, Duration::from_secs(measured.len() as u64))
        });
        let histogram = |name: &str, l: &Latencies| -> crate::model::Histograms {
            (l.count() > 0)
                .then(|| (name.to_string(), l.encoded()))
                .into_iter()
                .collect()
        };
        let producer = ProducerResult {
            rate_rec_s: per_s(produced),
            rate_mib_s: per_s(produced) * size / MIB,
            avg_lat_ms: p.avg_lat_ms,
            max_lat_ms: p.max_lat_ms,
            p50_ms: p.p50_ms,
            p95_ms: p.p95_ms,
            p99_ms: p.p99_ms,
            p999_ms: p.p999_ms,
            elapsed_s: secs,
            // From the send call only: the series has no per-second intended-time latencies.
            intended: None,
            histograms: histogram(SEND, &self.produce),
            span,
            ..producer
        };
        let consumed_mib = consumer.consumed_recs as f64 * size / MIB;
        let consumer = ConsumerResult {
            consumed_mib,
            consumed_mib_s: per_s(consumed) * size / MIB,
            consumed_rec_s: per_s(consumed),
            // No fetch phase of its own to time: the group read while the producers sent.
            fetch_ms: None,
            fetch_mib_s: None,
            fetch_rec_s: None,
            // The group of a soak always tallies them (`Together::consume(true)`).
            end_to_end: Some(self.end_to_end.summary(self.end_to_end.count())),
            histograms: histogram(END_TO_END, &self.end_to_end),
            span,
            ..consumer
        };
        SoakResult {
            producer,
            consumer,
            series: self.series,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_count_what_happened_in_them_and_the_warm_up_is_left_out_of_the_figures() {
        let latencies = |us: u64, n: usize| {
            let mut l = Latencies::new();
            for _ in 0..n {
                l.record(us);
            }
            l
        };
        let mut w = Watcher::new(1, 3, std::time::Instant::now());
        // Second 1 (warm-up): 100 acknowledged at 50 ms, 90 consumed.
        let s1 = w
            .observe(100, 90, latencies(50_000, 1), Latencies::new())
            .clone();
        assert!(s1.warm_up);
        assert_eq!((s1.t_s, s1.produced, s1.consumed, s1.lag), (1, 100, 90, 10));
        assert!((s1.produce_p99_ms - 50.0).abs() < 0.1, "{s1:?}");
        // Seconds 2 and 3: 200 more each at 2 ms; second 4 (draining, after the time).
        for (acked, consumed) in [(300, 290), (500, 495), (500, 500)] {
            w.observe(acked, consumed, latencies(2_000, 10), Latencies::new());
        }
        assert_eq!(w.series.len(), 4);
        assert_eq!(w.series[3].lag, 0);
        assert!(!w.series[1].warm_up);
        // Only seconds 2 and 3 are measured: the warm-up's 50 ms is not in the figures.
        assert_eq!(w.produce.count(), 20);
        assert_eq!(w.produce.summary(20).max_lat_ms, 2.0);

        // The clients' own results cover the whole run, warm-up and drain, with an intended
        // histogram the series has no seconds of: the run's result holds the measured ones.
        let start = w.start;
        let whole = latencies(50_000, 100);
        let mut producer: ProducerResult = serde_json::from_value(serde_json::json!({
            "sent": 500, "failed": 0, "rate_rec_s": 100.0, "rate_mib_s": 0.1,
            "avg_lat_ms": 50.0, "max_lat_ms": 50.0, "p50_ms": 50.0, "p95_ms": 50.0,
            "p99_ms": 50.0, "p999_ms": 50.0, "elapsed_s": 5.0, "target_rec_s": 100.0,
        }))
        .unwrap();
        producer.histograms = [(SEND, &whole), (crate::model::INTENDED, &whole)]
            .into_iter()
            .map(|(k, l)| (k.to_string(), l.encoded()))
            .collect();
        let mut consumer: ConsumerResult = serde_json::from_value(serde_json::json!({
            "consumed_mib": 0.5, "consumed_mib_s": 0.1, "consumed_recs": 500,
            "consumed_rec_s": 100.0, "rebalance_ms": 10.0, "fetch_ms": 4990.0,
            "fetch_mib_s": 0.1, "fetch_rec_s": 100.0,
        }))
        .unwrap();
        consumer.histograms = [(END_TO_END.to_string(), whole.encoded())].into();
        let cfg = SoakConfig {
            clients: Together {
                produce: super::super::producer::ProduceConfig {
                    throughput: crate::settings::rate::Rate::per_second(100).unwrap(),
                    ..super::super::producer::ProduceConfig::new(
                        super::super::args::Endpoint::new("broker:9092", &[]),
                        vec!["t".into()],
                    )
                },
                producers: 1,
                group: "g".into(),
                consumers: 1,
                timeout: Seconds(Duration::from_secs(60)),
            },
            duration: Seconds(Duration::from_secs(3)),
            warm_up: Seconds(Duration::from_secs(1)),
        };
        let r = w.result(&cfg, producer, consumer);
        let keys = |h: &crate::model::Histograms| h.keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&r.producer.histograms), [SEND]);
        let send = super::super::latency::decode(&r.producer.histograms[SEND]).unwrap();
        assert_eq!(send.len(), 20);
        assert!(send.max() < 2_010, "{}", send.max());
        // No record was timed end to end in the measured seconds: no histogram.
        assert!(
            r.consumer.histograms.is_empty(),
            "{:?}",
            r.consumer.histograms
        );
        assert_eq!(
            (
                r.consumer.fetch_ms,
                r.consumer.fetch_mib_s,
                r.consumer.fetch_rec_s
            ),
            (None, None, None)
        );
        // Seconds 2 and 3: from a second after the start, two seconds long, on either side.
        let span = r.producer.span.unwrap();
        assert_eq!(r.consumer.span, Some(span));
        assert_eq!(span.length_s, 2.0);
        let started = Span::since(start, Duration::ZERO).start_unix_s;
        assert!(
            (span.start_unix_s - (started + 1.0)).abs() < 0.01,
            "{span:?}"
        );
    }
}
