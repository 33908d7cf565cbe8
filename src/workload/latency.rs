//! Every record's latency, tallied: a histogram in microseconds with the sum and the maximum,
//! summarised in milliseconds. The producer tallies its latencies with it (from the send call,
//! and from the intended send time), the consumer its end-to-end latencies.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::model::LatencySummary;

/// Every record's latency: a histogram with the sum and maximum, in µs.
pub(crate) struct Latencies {
    histogram: Histogram<u64>,
    sum_us: u64,
    max_us: u64,
}

impl Latencies {
    pub(crate) fn new() -> Self {
        Latencies {
            histogram: latency_histogram(),
            sum_us: 0,
            max_us: 0,
        }
    }

    pub(crate) fn record(&mut self, us: u64) {
        self.histogram.saturating_record(us);
        self.sum_us += us;
        self.max_us = self.max_us.max(us);
    }

    /// Records tallied.
    pub(crate) fn count(&self) -> u64 {
        self.histogram.len()
    }

    /// Adds another tally's records to this one (several clients' into one).
    pub(crate) fn merge(&mut self, other: &Latencies) {
        // Same bounds on both sides: the addition cannot fail.
        let _ = self.histogram.add(&other.histogram);
        self.sum_us += other.sum_us;
        self.max_us = self.max_us.max(other.max_us);
    }

    /// The figures in milliseconds, over `count` records.
    pub(crate) fn summary(&self, count: u64) -> LatencySummary {
        let ms = |us: u64| us as f64 / 1000.0;
        // A quantile is its bucket's highest value, which can lie above every latency tallied;
        // the exact maximum bounds it.
        let at = |q: f64| ms(self.histogram.value_at_quantile(q).min(self.max_us));
        LatencySummary {
            avg_lat_ms: if count == 0 {
                0.0
            } else {
                self.sum_us as f64 / count as f64 / 1000.0
            },
            max_lat_ms: ms(self.max_us),
            p50_ms: at(0.50),
            p95_ms: at(0.95),
            p99_ms: at(0.99),
            p999_ms: at(0.999),
            p9999_ms: at(0.9999),
        }
    }
}

/// The histogram of a string [`Latencies::encoded`] wrote.
pub fn decode(text: &str) -> anyhow::Result<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| anyhow::anyhow!("not base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .map_err(|e| anyhow::anyhow!("not an HdrHistogram: {e:?}"))
}

impl Latencies {
    /// Every latency tallied in HdrHistogram's compressed form (V2, deflated, base64), as its
    /// Java, C, Go, Python and Rust implementations read it
    /// (`Histogram.decodeFromCompressedByteBuffer`).
    pub(crate) fn encoded(&self) -> String {
        let mut bytes = Vec::new();
        // Writing into memory fails only on a histogram too large to encode, which these
        // bounds cannot hold.
        V2DeflateSerializer::new()
            .serialize(&self.histogram, &mut bytes)
            .expect("a bounded histogram serialises");
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }
}

/// One tally of several, each given as [`Latencies::encoded`] wrote it with its mean and
/// maximum in ms (which a histogram keeps only to its resolution): the merged histogram,
/// encoded, and its summary. Several load generators' latencies become one this way.
pub(crate) fn merge_encoded(
    parts: &[(&str, f64, f64)],
) -> anyhow::Result<(String, LatencySummary)> {
    let mut all = Latencies::new();
    for (text, avg_ms, max_ms) in parts {
        let h = decode(text)?;
        all.histogram
            .add(&h)
            .map_err(|e| anyhow::anyhow!("a histogram beyond the bounds of latencies: {e:?}"))?;
        all.sum_us += (avg_ms * 1000.0 * h.len() as f64).round() as u64;
        all.max_us = all.max_us.max((max_ms * 1000.0).round() as u64);
    }
    let count = all.count();
    Ok((all.encoded(), all.summary(count)))
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies::new()
    }
}

/// Latencies in µs, 3 significant figures, up to an hour. Fixed bounds: an auto-resizing
/// histogram's `saturating_record` clamps to its initial tiny range.
fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_from_intended_times_summarise_in_milliseconds() {
        let mut l = Latencies::new();
        for us in [1_000u64, 2_000, 3_000, 1_000_000] {
            l.record(us);
        }
        let s = l.summary(4);
        assert_eq!(s.avg_lat_ms, 251.5);
        assert_eq!(s.max_lat_ms, 1000.0);
        assert!((1.99..2.01).contains(&s.p50_ms), "{s:?}");
        assert!((999.0..1001.0).contains(&s.p99_ms), "{s:?}");
    }

    #[test]
    fn no_quantile_lies_above_the_exact_maximum() {
        let mut l = Latencies::new();
        // 67 823 µs falls in a bucket 64 µs wide whose highest value is above it.
        for us in [60_000u64, 65_000, 67_823] {
            l.record(us);
        }
        assert!(l.histogram.value_at_quantile(1.0) > 67_823);
        let s = l.summary(3);
        assert_eq!(s.max_lat_ms, 67.823);
        for p in [s.p50_ms, s.p95_ms, s.p99_ms, s.p999_ms, s.p9999_ms] {
            assert!(p <= s.max_lat_ms, "{p} above {s:?}");
        }
        assert_eq!(s.p99_ms, 67.823);
    }

    #[test]
    fn latency_histogram_keeps_millisecond_values() {
        let mut h = latency_histogram();
        for us in [100u64, 3_000, 3_500, 4_000, 250_000] {
            h.saturating_record(us);
        }
        let p50 = h.value_at_quantile(0.5);
        assert!((3_500..3_505).contains(&p50), "{p50}");
        assert!(h.max() >= 250_000 && h.max() < 250_300, "{}", h.max());
        assert!(h.min() <= 100);
    }

    #[test]
    fn tallies_merge_as_if_one_had_recorded_every_latency() {
        let (mut a, mut b, mut one) = (Latencies::new(), Latencies::new(), Latencies::new());
        for us in [1_000u64, 2_000, 3_000] {
            a.record(us);
            one.record(us);
        }
        for us in [10_000u64, 20_000] {
            b.record(us);
            one.record(us);
        }
        let part = |l: &Latencies| {
            let s = l.summary(l.count());
            (l.encoded(), s.avg_lat_ms, s.max_lat_ms)
        };
        let (pa, pb) = (part(&a), part(&b));
        let (encoded, summary) =
            merge_encoded(&[(&pa.0, pa.1, pa.2), (&pb.0, pb.1, pb.2)]).unwrap();
        assert_eq!(summary, one.summary(5));
        assert_eq!(summary.avg_lat_ms, 7.2);
        assert_eq!(decode(&encoded).unwrap().len(), 5);
        assert!(merge_encoded(&[("not base64!", 1.0, 1.0)]).is_err());
    }

    #[test]
    fn the_compressed_form_reads_back_as_the_same_histogram() {
        let mut l = Latencies::new();
        for us in [120u64, 950, 4_000, 4_100, 1_200_000] {
            l.record(us);
        }
        let back = decode(&l.encoded()).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(
            back.value_at_quantile(0.5),
            l.histogram.value_at_quantile(0.5)
        );
        assert_eq!(back.max(), l.histogram.max());
        assert!(decode("not a histogram").is_err());
        assert!(decode("aGVsbG8=").is_err());
    }
}
