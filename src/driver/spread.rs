//! Several load generators as one session (`LOAD_GENERATORS`). Each part is a session of its
//! own (a workload container; on a swarm, on a load node of its own) that measures its own
//! topics with its share of the records, the rate, the producers and the consumers, so every
//! part's counts stay exact. The flow drives them as one: each step runs in every part at once,
//! and their figures are merged as several producers' are in one workload, latencies from the
//! parts' histograms.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use futures_util::future::{try_join_all, BoxFuture};

use super::{Event, MeasureSpec, Progress, Session};
use crate::model::{
    ConsumerResult, Histograms, LatencySummary, ProducerResult, Span, END_TO_END, INTENDED, SEND,
};
use crate::workload::latency::merge_encoded;

/// Several sessions measuring as one.
pub(crate) struct Spread {
    parts: Vec<Box<dyn Session>>,
    /// Each part's records acknowledged by the last produce step, so that the consume step
    /// reads from each part what it acknowledged.
    sent: Mutex<Vec<u64>>,
}

impl Spread {
    /// The parts, in load generator order (at least two).
    pub(crate) fn new(parts: Vec<Box<dyn Session>>) -> Spread {
        let sent = Mutex::new(vec![0; parts.len()]);
        Spread { parts, sent }
    }

    /// Part `i`'s measurement: its own topics, its share of the records and of the clients.
    fn part_spec(&self, spec: &MeasureSpec, i: usize) -> MeasureSpec {
        let n = self.parts.len();
        MeasureSpec {
            topic: format!("{}-lg{}", spec.topic, i + 1),
            num_records: share(spec.num_records, n, i),
            throughput: spec.throughput.share(n as u64, i as u64),
            warm_up_records: share(spec.warm_up_records, n, i),
            producers: share(spec.producers.into(), n, i) as u32,
            consumers: share(spec.consumers.into(), n, i) as u32,
            ..spec.clone()
        }
    }

    /// `step` in every part at once, each with its own spec for `spec`; the results in part
    /// order, an error naming the load generator it came from.
    async fn in_each<T, F>(&self, spec: &MeasureSpec, step: F) -> Result<Vec<T>>
    where
        F: for<'p> Fn(&'p dyn Session, &'p MeasureSpec) -> BoxFuture<'p, Result<T>> + Sync,
        T: Send,
    {
        let specs = self.specs(spec);
        let step = &step;
        let runs = self
            .parts
            .iter()
            .zip(&specs)
            .enumerate()
            .map(|(i, (part, s))| async move {
                step(part.as_ref(), s).await.with_context(part_error(i))
            });
        try_join_all(runs).await
    }

    /// Every part's spec for `spec`.
    fn specs(&self, spec: &MeasureSpec) -> Vec<MeasureSpec> {
        (0..self.parts.len())
            .map(|i| self.part_spec(spec, i))
            .collect()
    }
}

/// Part `i` of `n`'s share of `total`: the first `total % n` parts one more.
fn share(total: u64, n: usize, i: usize) -> u64 {
    crate::settings::rate::share(total, n as u64, i as u64)
}

/// Which load generator an error came from.
fn part_error(i: usize) -> impl Fn() -> String {
    move || format!("load generator {}", i + 1)
}

impl Session for Spread {
    fn check(&self, spec: &MeasureSpec) -> Result<()> {
        for (i, (part, s)) in self.parts.iter().zip(self.specs(spec)).enumerate() {
            part.check(&s).with_context(part_error(i))?;
        }
        Ok(())
    }

    fn probe<'a>(&'a self, endpoint: &'a str, timeout: Duration) -> BoxFuture<'a, Result<()>> {
        // Each from its own place: every load generator must reach the endpoint.
        Box::pin(async move {
            let probes = self.parts.iter().enumerate().map(|(i, part)| async move {
                part.probe(endpoint, timeout)
                    .await
                    .with_context(part_error(i))
            });
            try_join_all(probes).await.map(drop)
        })
    }

    fn create_topic<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let made = self.in_each(spec, |part, s| part.create_topic(s)).await;
            made.map(drop)
        })
    }

    fn produce<'a>(
        &'a self,
        spec: &'a MeasureSpec,
        records: u64,
        progress: Progress<'a>,
    ) -> BoxFuture<'a, Result<ProducerResult>> {
        Box::pin(async move {
            let n = self.parts.len();
            let specs = self.specs(spec);
            // Each window's count is the records sent since the last: theirs add up.
            let runs = self
                .parts
                .iter()
                .zip(&specs)
                .enumerate()
                .filter(|(i, _)| share(records, n, *i) > 0)
                .map(|(i, (part, s))| async move {
                    let r = part
                        .produce(s, share(records, n, i), progress)
                        .await
                        .with_context(part_error(i))?;
                    anyhow::Ok((i, r))
                });
            let done = try_join_all(runs).await?;
            let mut sent = vec![0; n];
            for (i, r) in &done {
                sent[*i] = r.sent;
            }
            *self.sent.lock().unwrap_or_else(|e| e.into_inner()) = sent;
            merged_producer(done.into_iter().map(|(_, r)| r).collect())
        })
    }

    fn consume<'a>(
        &'a self,
        spec: &'a MeasureSpec,
        records: u64,
        group: &'a str,
        progress: Progress<'a>,
    ) -> BoxFuture<'a, Result<ConsumerResult>> {
        Box::pin(async move {
            let n = self.parts.len();
            let specs = self.specs(spec);
            // What each part acknowledged when the records are those of the last produce step;
            // else (a consumer started beside its producer) each part's share.
            let sent = self.sent.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let expected: Vec<u64> = if sent.iter().sum::<u64>() == records {
                sent
            } else {
                (0..n).map(|i| share(records, n, i)).collect()
            };
            let active = expected.iter().filter(|&&e| e > 0).count();
            // A part counts its records so far; the flow is told the sum. Assigned once every
            // part's group is.
            let counts = Mutex::new(vec![0u64; n]);
            let assigned = AtomicUsize::new(0);
            let relays: Vec<_> = (0..n)
                .map(|i| {
                    let (counts, assigned) = (&counts, &assigned);
                    move |e: Event<'_>| match e {
                        Event::Consumed(c) => {
                            let total = {
                                let mut counts = counts.lock().unwrap_or_else(|e| e.into_inner());
                                counts[i] = c;
                                counts.iter().sum()
                            };
                            progress(Event::Consumed(total));
                        }
                        Event::Assigned => {
                            if assigned.fetch_add(1, Ordering::SeqCst) + 1 == active {
                                progress(Event::Assigned);
                            }
                        }
                        other => progress(other),
                    }
                })
                .collect();
            let groups: Vec<String> = (0..n).map(|i| format!("{group}-lg{}", i + 1)).collect();
            let runs = self
                .parts
                .iter()
                .enumerate()
                .filter(|(i, _)| expected[*i] > 0)
                .map(|(i, part)| {
                    let (s, relay, group) = (&specs[i], &relays[i], groups[i].as_str());
                    let records = expected[i];
                    async move {
                        part.consume(s, records, group, relay)
                            .await
                            .with_context(part_error(i))
                    }
                });
            merged_consumer(try_join_all(runs).await?)
        })
    }

    fn end_offsets<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let counted = self.in_each(spec, |part, s| part.end_offsets(s)).await?;
            Ok(counted.into_iter().sum())
        })
    }

    fn delete_topic<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let deleted = self.in_each(spec, |part, s| part.delete_topic(s)).await;
            deleted.map(drop)
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            // Every part closed, whatever one of them says.
            let closed = futures_util::future::join_all(self.parts.iter().map(|p| p.close())).await;
            let errors: Vec<String> = closed
                .into_iter()
                .enumerate()
                .filter_map(|(i, r)| Some(format!("load generator {}: {:#}", i + 1, r.err()?)))
                .collect();
            if !errors.is_empty() {
                bail!("{}", errors.join("\n"));
            }
            Ok(())
        })
    }

    fn measured_containers(&self) -> Vec<(String, String)> {
        self.parts
            .iter()
            .enumerate()
            .flat_map(|(i, part)| {
                part.measured_containers()
                    .into_iter()
                    .map(move |(name, id)| (numbered(&name, i + 1), id))
            })
            .collect()
    }
}

/// `workload (load generator)` as load generator `i`'s: `workload (load generator) i` (its
/// name first, as every load generator's).
fn numbered(name: &str, i: usize) -> String {
    format!("{name} {i}")
}

/// The span from the earliest start to the latest end of `spans`; `None` unless each has one.
fn union(spans: &[Option<Span>]) -> Option<Span> {
    let spans: Vec<Span> = spans.iter().copied().collect::<Option<_>>()?;
    let start = spans
        .iter()
        .map(|s| s.start_unix_s)
        .fold(f64::INFINITY, f64::min);
    let end = spans
        .iter()
        .map(|s| s.start_unix_s + s.length_s)
        .fold(f64::NEG_INFINITY, f64::max);
    (!spans.is_empty()).then_some(Span {
        start_unix_s: start,
        length_s: end - start,
    })
}

/// The distribution `key` of every part merged into `into`, with its summary; `None` when no
/// part has it, an error when only some do.
fn merged_latency(
    key: &str,
    parts: &[(&Histograms, Option<(f64, f64)>)],
    into: &mut Histograms,
) -> Result<Option<LatencySummary>> {
    let having: Vec<(&str, f64, f64)> = parts
        .iter()
        .filter_map(|(h, figures)| {
            let (avg, max) = (*figures)?;
            Some((h.get(key)?.as_str(), avg, max))
        })
        .collect();
    if having.is_empty() {
        return Ok(None);
    }
    if having.len() != parts.len() {
        bail!(
            "{} of {} load generators reported {key} latencies: they cannot be merged",
            having.len(),
            parts.len()
        );
    }
    let (encoded, summary) =
        merge_encoded(&having).with_context(|| format!("merging the {key} latencies"))?;
    into.insert(key.to_string(), encoded);
    Ok(Some(summary))
}

/// Several load generators' producers as one: every record counted over the whole time, from
/// the first send to the last acknowledgement, latencies from the merged histograms.
fn merged_producer(parts: Vec<ProducerResult>) -> Result<ProducerResult> {
    let span = union(&parts.iter().map(|p| p.span).collect::<Vec<_>>());
    let elapsed_s = span.map_or_else(
        || parts.iter().map(|p| p.elapsed_s).fold(0.0, f64::max),
        |s| s.length_s,
    );
    let sent: u64 = parts.iter().map(|p| p.sent).sum();
    let mib: f64 = parts.iter().map(|p| p.rate_mib_s * p.elapsed_s).sum();
    let per_second = |x: f64| if elapsed_s > 0.0 { x / elapsed_s } else { 0.0 };
    let mut histograms = Histograms::new();
    let figures = |f: fn(&ProducerResult) -> Option<(f64, f64)>| -> Vec<_> {
        parts.iter().map(|p| (&p.histograms, f(p))).collect()
    };
    let send = merged_latency(
        SEND,
        &figures(|p| Some((p.avg_lat_ms, p.max_lat_ms))),
        &mut histograms,
    )?
    .context("the load generators reported no send latencies")?;
    let intended = merged_latency(
        INTENDED,
        &figures(|p| p.intended.as_ref().map(|i| (i.avg_lat_ms, i.max_lat_ms))),
        &mut histograms,
    )?;
    let target_rec_s = if parts.iter().all(|p| p.target_rec_s >= 0.0) {
        parts.iter().map(|p| p.target_rec_s).sum()
    } else {
        -1.0
    };
    let mut derived: Vec<String> = parts.iter().flat_map(|p| p.derived.clone()).collect();
    derived.sort();
    derived.dedup();
    Ok(ProducerResult {
        sent,
        failed: parts.iter().map(|p| p.failed).sum(),
        rate_rec_s: per_second(sent as f64),
        rate_mib_s: per_second(mib),
        avg_lat_ms: send.avg_lat_ms,
        max_lat_ms: send.max_lat_ms,
        p50_ms: send.p50_ms,
        p95_ms: send.p95_ms,
        p99_ms: send.p99_ms,
        p999_ms: send.p999_ms,
        elapsed_s,
        target_rec_s,
        intended,
        histograms,
        span,
        derived,
    })
}

/// Several load generators' consumer groups as one: every record over the whole time, the
/// slowest group's assignment and fetch, each consumer's count, end-to-end latencies from the
/// merged histograms.
fn merged_consumer(parts: Vec<ConsumerResult>) -> Result<ConsumerResult> {
    let span = union(&parts.iter().map(|p| p.span).collect::<Vec<_>>());
    let consumed_mib: f64 = parts.iter().map(|p| p.consumed_mib).sum();
    let consumed_recs: u64 = parts.iter().map(|p| p.consumed_recs).sum();
    let seconds = span.map(|s| s.length_s);
    let max = |f: fn(&ConsumerResult) -> Option<f64>| -> Option<f64> {
        parts
            .iter()
            .map(f)
            .collect::<Option<Vec<f64>>>()?
            .into_iter()
            .reduce(f64::max)
    };
    let fetch_ms = max(|p| p.fetch_ms);
    let over_fetch = |x: f64| fetch_ms.filter(|&ms| ms > 0.0).map(|ms| x / (ms / 1000.0));
    let mut histograms = Histograms::new();
    let figures: Vec<_> = parts
        .iter()
        .map(|p| {
            let e2e = p.end_to_end.as_ref().map(|e| (e.avg_lat_ms, e.max_lat_ms));
            (&p.histograms, e2e)
        })
        .collect();
    let end_to_end = merged_latency(END_TO_END, &figures, &mut histograms)?;
    Ok(ConsumerResult {
        consumed_mib,
        consumed_mib_s: seconds.map_or_else(
            || parts.iter().map(|p| p.consumed_mib_s).sum(),
            |s| if s > 0.0 { consumed_mib / s } else { 0.0 },
        ),
        consumed_recs,
        consumed_rec_s: seconds.map_or_else(
            || parts.iter().map(|p| p.consumed_rec_s).sum(),
            |s| {
                if s > 0.0 {
                    consumed_recs as f64 / s
                } else {
                    0.0
                }
            },
        ),
        rebalance_ms: parts.iter().map(|p| p.rebalance_ms).fold(0.0, f64::max),
        fetch_ms,
        first_record_ms: parts
            .iter()
            .map(|p| p.first_record_ms)
            .collect::<Option<Vec<f64>>>()
            .and_then(|v| v.into_iter().reduce(f64::min)),
        fetch_mib_s: over_fetch(consumed_mib),
        fetch_rec_s: over_fetch(consumed_recs as f64),
        end_to_end,
        per_client: parts
            .iter()
            .flat_map(|p| {
                if p.per_client.is_empty() {
                    vec![p.consumed_recs]
                } else {
                    p.per_client.clone()
                }
            })
            .collect(),
        catch_up: None,
        histograms,
        span,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::rate::Rate;
    use crate::workload::latency::{decode, Latencies};

    #[test]
    fn parts_share_the_records_the_rate_and_the_clients() {
        let shares: Vec<u64> = (0..3).map(|i| share(10, 3, i)).collect();
        assert_eq!(shares, [4, 3, 3]);
        let spread = Spread::new(vec![Box::new(Quiet), Box::new(Quiet)]);
        let mut spec = MeasureSpec::new("proxy:9092", "perf-tests-02", 1001);
        spec.throughput = Rate::per_second(1001).unwrap();
        spec.producers = 3;
        spec.consumers = 2;
        let second = spread.part_spec(&spec, 1);
        assert_eq!(second.topic, "perf-tests-02-lg2");
        assert_eq!(
            (second.num_records, second.producers, second.consumers),
            (500, 1, 1)
        );
        assert_eq!(spread.part_spec(&spec, 0).producers, 2);
        assert_eq!(second.throughput.limit(), Some(500));
        assert_eq!(
            spread.part_spec(&spec.at_full_speed(), 0).throughput,
            Rate::Unlimited
        );
        assert_eq!(
            numbered("workload (load generator)", 2),
            "workload (load generator) 2"
        );
    }

    /// A session that is never asked anything.
    struct Quiet;

    impl Session for Quiet {
        fn probe<'a>(&'a self, _: &'a str, _: Duration) -> BoxFuture<'a, Result<()>> {
            unreachable!()
        }
        fn create_topic<'a>(&'a self, _: &'a MeasureSpec) -> BoxFuture<'a, Result<()>> {
            unreachable!()
        }
        fn produce<'a>(
            &'a self,
            _: &'a MeasureSpec,
            _: u64,
            _: Progress<'a>,
        ) -> BoxFuture<'a, Result<ProducerResult>> {
            unreachable!()
        }
        fn consume<'a>(
            &'a self,
            _: &'a MeasureSpec,
            _: u64,
            _: &'a str,
            _: Progress<'a>,
        ) -> BoxFuture<'a, Result<ConsumerResult>> {
            unreachable!()
        }
        fn end_offsets<'a>(&'a self, _: &'a MeasureSpec) -> BoxFuture<'a, Result<u64>> {
            unreachable!()
        }
        fn delete_topic<'a>(&'a self, _: &'a MeasureSpec) -> BoxFuture<'a, Result<()>> {
            unreachable!()
        }
        fn close(&self) -> BoxFuture<'_, Result<()>> {
            unreachable!()
        }
    }

    /// A producer that acknowledged `latencies` (µs) over `span`.
    fn producer(latencies: &[u64], start: f64, length: f64) -> ProducerResult {
        let mut l = Latencies::new();
        for &us in latencies {
            l.record(us);
        }
        let s = l.summary(l.count());
        let sent = latencies.len() as u64;
        ProducerResult {
            sent,
            failed: 0,
            rate_rec_s: sent as f64 / length,
            rate_mib_s: sent as f64 / 1024.0 / length,
            avg_lat_ms: s.avg_lat_ms,
            max_lat_ms: s.max_lat_ms,
            p50_ms: s.p50_ms,
            p95_ms: s.p95_ms,
            p99_ms: s.p99_ms,
            p999_ms: s.p999_ms,
            elapsed_s: length,
            target_rec_s: -1.0,
            intended: None,
            histograms: Histograms::from([(SEND.to_string(), l.encoded())]),
            span: Some(Span {
                start_unix_s: start,
                length_s: length,
            }),
            derived: Vec::new(),
        }
    }

    #[test]
    fn producers_merge_over_the_whole_time_with_every_latency() {
        let a = producer(&[1_000, 2_000, 3_000, 4_000], 100.0, 2.0);
        let b = producer(&[10_000, 20_000], 101.0, 2.0);
        let m = merged_producer(vec![a, b]).unwrap();
        assert_eq!(m.sent, 6);
        // From the first start (100) to the last end (103): 3 s, not either's 2 s.
        assert_eq!(m.elapsed_s, 3.0);
        assert!((m.rate_rec_s - 2.0).abs() < 1e-9, "{m:?}");
        assert!((m.rate_mib_s - 6.0 / 1024.0 / 3.0).abs() < 1e-12, "{m:?}");
        assert!((m.avg_lat_ms - 40.0 / 6.0).abs() < 1e-9, "{m:?}");
        assert_eq!(m.max_lat_ms, 20.0);
        assert_eq!(decode(&m.histograms[SEND]).unwrap().len(), 6);
        assert!(m.intended.is_none());
    }

    /// A group that read `records` from `start` for `length` s, fetching for `fetch_ms`.
    fn consumer(records: u64, start: f64, length: f64, fetch_ms: f64) -> ConsumerResult {
        ConsumerResult {
            consumed_mib: records as f64 / 1024.0,
            consumed_mib_s: records as f64 / 1024.0 / length,
            consumed_recs: records,
            consumed_rec_s: records as f64 / length,
            rebalance_ms: length * 1000.0 - fetch_ms,
            fetch_ms: Some(fetch_ms),
            first_record_ms: Some(length * 1000.0 - fetch_ms + 5.0),
            fetch_mib_s: None,
            fetch_rec_s: None,
            end_to_end: None,
            per_client: Vec::new(),
            catch_up: None,
            histograms: Histograms::new(),
            span: Some(Span {
                start_unix_s: start,
                length_s: length,
            }),
        }
    }

    #[test]
    fn consumer_groups_merge_over_the_whole_time_with_each_ones_count() {
        let m = merged_consumer(vec![
            consumer(3000, 200.0, 3.0, 2000.0),
            consumer(1000, 200.5, 1.5, 1000.0),
        ])
        .unwrap();
        assert_eq!(m.consumed_recs, 4000);
        assert_eq!(m.per_client, [3000, 1000]);
        // 4000 records from 200 to 203 s; fetching as long as the slowest group fetched.
        assert!((m.consumed_rec_s - 4000.0 / 3.0).abs() < 1e-9, "{m:?}");
        assert_eq!(m.fetch_ms, Some(2000.0));
        assert!((m.fetch_rec_s.unwrap() - 2000.0).abs() < 1e-9, "{m:?}");
        assert_eq!(m.rebalance_ms, 1000.0);
        assert_eq!(m.first_record_ms, Some(505.0));
        assert!(m.end_to_end.is_none());
    }

    #[test]
    fn latencies_only_some_parts_kept_are_refused() {
        let a = producer(&[1_000], 100.0, 1.0);
        let mut b = producer(&[2_000], 100.0, 1.0);
        b.histograms.clear();
        let err = merged_producer(vec![a, b]).unwrap_err().to_string();
        assert_eq!(
            err,
            "1 of 2 load generators reported send latencies: they cannot be merged"
        );
    }
}
