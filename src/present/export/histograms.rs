//! `<scenario>.hlog`: every repetition's latency histograms as an HdrHistogram interval log, one
//! interval per distribution and repetition, tagged `<distribution>.rep<n>` (values in µs), so
//! HdrHistogram's own tools (HistogramLogProcessor, the Python and Go readers) read them. Each
//! interval is where and as long as its records were measured (the producer's span for its
//! distributions, the consumer's for the end-to-end one), in order of their starts. Only for
//! scenarios whose driver kept histograms.

use std::time::{Duration, UNIX_EPOCH};

use anyhow::{anyhow, Result};
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;

use super::Exporter;
use crate::model::run::RunInfo;
use crate::model::{ScenarioResult, Span};
use crate::workload::latency::decode;

/// The interval logs.
pub(crate) struct Histograms;

/// One interval of the log: its tag, its histogram, and when it was measured.
struct Interval<'a> {
    tag: String,
    encoded: &'a str,
    span: Span,
}

/// The interval log of one scenario's repetitions; `None` when none kept a histogram.
pub(crate) fn log(r: &ScenarioResult) -> Result<Option<String>> {
    let mut intervals = Vec::new();
    for (i, m) in r.all_measurements().iter().enumerate() {
        // A span not recorded (results of an older version) puts its interval at the log's base.
        let at = |span: Option<Span>| {
            span.unwrap_or(Span {
                start_unix_s: 0.0,
                length_s: 0.0,
            })
        };
        let producer = m.producer.histograms.iter().map(|h| (h, m.producer.span));
        let consumer = m.consumer.histograms.iter().map(|h| (h, m.consumer.span));
        for ((distribution, encoded), span) in producer.chain(consumer) {
            intervals.push(Interval {
                tag: format!("{distribution}.rep{}", i + 1),
                encoded,
                span: at(span),
            });
        }
    }
    if intervals.is_empty() {
        return Ok(None);
    }
    // Readers take the intervals to come in order of time.
    intervals.sort_by(|a, b| a.span.start_unix_s.total_cmp(&b.span.start_unix_s));
    let base = intervals[0].span.start_unix_s;
    let base_time = UNIX_EPOCH + Duration::from_secs_f64(base.max(0.0));
    let mut out = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let mut writer = IntervalLogWriterBuilder::new()
        .add_comment(&format!(
            "perf-tests latency histograms of {}: values in microseconds; one interval per \
             distribution and repetition, tagged <distribution>.rep<n>",
            r.label()
        ))
        .with_start_time(base_time)
        .with_base_time(base_time)
        .begin_log_with(&mut out, &mut serializer)?;
    for interval in &intervals {
        let h = decode(interval.encoded)
            .map_err(|e| anyhow!("{}: the {} histogram: {e:#}", r.label(), interval.tag))?;
        let since_base = Duration::from_secs_f64((interval.span.start_unix_s - base).max(0.0));
        let length = Duration::from_secs_f64(interval.span.length_s.max(0.0));
        writer
            .write_histogram(&h, since_base, length, Tag::new(&interval.tag))
            .map_err(|e| anyhow!("{}: writing the {} histogram: {e}", r.label(), interval.tag))?;
    }
    drop(writer);
    Ok(Some(String::from_utf8(out)?))
}

impl Exporter for Histograms {
    fn files(&self, _: &RunInfo, results: &[ScenarioResult]) -> Result<Vec<(String, String)>> {
        let mut files = Vec::new();
        for (r, stem) in results.iter().zip(super::json::file_stems(results)) {
            if let Some(text) = log(r)? {
                files.push((format!("{stem}.hlog"), text));
            }
        }
        Ok(files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::latency::Latencies;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    #[test]
    fn each_distribution_and_repetition_is_one_tagged_interval_where_it_was_measured() {
        let mut r = crate::present::report::tests::sample().remove(1);
        assert_eq!(log(&r).unwrap(), None);
        let span = |start_unix_s, length_s| {
            Some(Span {
                start_unix_s,
                length_s,
            })
        };
        r.repetitions = (1..=2u64)
            .map(|rep| {
                let mut m = r.measurement.clone();
                let (mut send, mut e2e) = (Latencies::new(), Latencies::new());
                for us in 0..10 * rep {
                    send.record(1000 + us);
                    e2e.record(5000 + us);
                }
                m.producer.histograms.insert("send".into(), send.encoded());
                m.consumer
                    .histograms
                    .insert("end-to-end".into(), e2e.encoded());
                // The group subscribes half a second before the producer sends, and reads on
                // for a second after its last acknowledgement.
                let at = 1_700_000_000.0 + 100.0 * rep as f64;
                m.producer.span = span(at, 2.0 * rep as f64);
                m.consumer.span = span(at - 0.5, 2.0 * rep as f64 + 1.5);
                m
            })
            .collect();
        let text = log(&r).unwrap().unwrap();
        assert!(text.starts_with("#perf-tests latency histograms of 02-no-filters"));
        let mut base = None;
        let mut intervals: Vec<(String, u64, f64, f64)> = Vec::new();
        for entry in IntervalLogIterator::new(text.as_bytes()) {
            match entry.unwrap() {
                LogEntry::BaseTime(t) => base = Some(t.as_secs_f64()),
                LogEntry::Interval(i) => intervals.push((
                    i.tag().unwrap().as_str().to_string(),
                    decode(i.encoded_histogram()).unwrap().len(),
                    i.start_timestamp().as_secs_f64(),
                    i.duration().as_secs_f64(),
                )),
                _ => {}
            }
        }
        // The first interval's start is the base; each interval is at its side's own start and
        // as long as its span, in order of time.
        assert_eq!(base, Some(1_700_000_099.5));
        let expected = [
            ("end-to-end.rep1", 10, 0.0, 3.5),
            ("send.rep1", 10, 0.5, 2.0),
            ("end-to-end.rep2", 20, 100.0, 5.5),
            ("send.rep2", 20, 100.5, 4.0),
        ];
        assert_eq!(intervals.len(), expected.len(), "{intervals:?}");
        for (got, want) in intervals.iter().zip(expected) {
            assert_eq!((got.0.as_str(), got.1), (want.0, want.1), "{intervals:?}");
            // The log writes times to the millisecond.
            assert!((got.2 - want.2).abs() < 0.0011, "{intervals:?}");
            assert!((got.3 - want.3).abs() < 0.0011, "{intervals:?}");
        }
        // A histogram that does not decode is named.
        r.repetitions[1]
            .producer
            .histograms
            .insert("send".into(), "bad".into());
        let err = log(&r).unwrap_err().to_string();
        assert!(
            err.contains("02-no-filters: the send.rep2 histogram"),
            "{err}"
        );
    }
}
