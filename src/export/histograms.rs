//! `<scenario>.hlog`: every repetition's latency histograms as an HdrHistogram interval log, one
//! interval per distribution and repetition, tagged `<distribution>.rep<n>` (values in µs), so
//! HdrHistogram's own tools (HistogramLogProcessor, the Python and Go readers) read them. Only
//! for scenarios whose driver kept histograms.

use std::time::Duration;

use anyhow::{anyhow, Result};
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;

use super::Exporter;
use crate::model::{Measurement, ScenarioResult};
use crate::results::RunInfo;
use crate::workload::latency::decode;

/// The interval logs.
pub struct Histograms;

/// A repetition's histograms, producer's then consumer's, by distribution.
fn of(m: &Measurement) -> impl Iterator<Item = (&String, &String)> {
    m.producer.histograms.iter().chain(&m.consumer.histograms)
}

/// The interval log of one scenario's repetitions; `None` when none kept a histogram.
pub fn log(r: &ScenarioResult) -> Result<Option<String>> {
    let reps = r.all_measurements();
    if !reps.iter().any(|m| of(m).next().is_some()) {
        return Ok(None);
    }
    let mut out = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let mut writer = IntervalLogWriterBuilder::new()
        .add_comment(&format!(
            "perf-tests latency histograms of {}: values in microseconds; one interval per \
             distribution and repetition, tagged <distribution>.rep<n>",
            r.label()
        ))
        .begin_log_with(&mut out, &mut serializer)?;
    for (i, m) in reps.iter().enumerate() {
        let length = Duration::from_secs_f64(m.producer.elapsed_s.max(0.0));
        for (distribution, encoded) in of(m) {
            let h = decode(encoded)
                .map_err(|e| anyhow!("{}: the {distribution} histogram: {e:#}", r.label()))?;
            let tag = format!("{distribution}.rep{}", i + 1);
            writer
                .write_histogram(&h, Duration::ZERO, length, Tag::new(&tag))
                .map_err(|e| anyhow!("{}: writing the {tag} histogram: {e}", r.label()))?;
        }
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
    fn each_distribution_and_repetition_is_one_tagged_interval() {
        let mut r = crate::report::tests::sample().remove(1);
        assert_eq!(log(&r).unwrap(), None);
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
                m
            })
            .collect();
        let text = log(&r).unwrap().unwrap();
        assert!(text.starts_with("#perf-tests latency histograms of 02-no-filters"));
        let intervals: Vec<(String, u64)> = IntervalLogIterator::new(text.as_bytes())
            .filter_map(|e| match e.unwrap() {
                LogEntry::Interval(i) => Some((
                    i.tag().unwrap().as_str().to_string(),
                    decode(i.encoded_histogram()).unwrap().len(),
                )),
                _ => None,
            })
            .collect();
        assert_eq!(
            intervals,
            [
                ("send.rep1".to_string(), 10),
                ("end-to-end.rep1".to_string(), 10),
                ("send.rep2".to_string(), 20),
                ("end-to-end.rep2".to_string(), 20)
            ]
        );
        // A histogram that does not decode is named.
        r.repetitions[1]
            .producer
            .histograms
            .insert("send".into(), "bad".into());
        let err = log(&r).unwrap_err().to_string();
        assert!(err.contains("02-no-filters: the send histogram"), "{err}");
    }
}
