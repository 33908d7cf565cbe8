//! Two sides of a path measured in the same phase. A paired run (`perf-tests ab`) runs side A
//! (the scenario's services) and side B (the same services again, derived by
//! `crate::plan::sides`), each with its own producer and end-to-end consumer at `THROUGHPUT`,
//! at once in front of the one broker, and reads their services' CPU at the same phase edges. On a shared VM the CPU time any process spends on fixed
//! work moves with the host by about 10% between phases, so two sides measured one after the
//! other differ by that much with nothing changed; in the ratio of two sides measured together
//! the host's speed cancels.
//!
//! Each bring-up of both sides is one pair of JVMs and one observation: the geometric mean of
//! B/A over its measured phases (`PAIR_PHASES`, one after the other after one warm-up). More
//! phases of one pair average out the phase-to-phase noise of both JVMs (JIT, GC, the
//! neighbours' bursts), not the offset two JVMs started alike keep for as long as they run (each
//! compiles its own code), so the verdict is over pairs; the spread within pairs is reported
//! beside it, to show which of the two dominates.

use crate::accounting::cost::{PhaseCost, PRODUCE_AND_CONSUME};
use crate::model::pair::{Pair, PairPhase, PairResult, Ratio, Verdict};
use crate::model::Measurement;

/// What one side's producer did in a pair's phase, as far as the pair needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Side {
    /// Records it sent (and its consumer read) in the phase.
    pub sent: u64,
    pub rate_rec_s: f64,
    /// Its median and 99th percentile from the intended send times; 0 when not measured.
    pub p50_ms: f64,
    pub p99_ms: f64,
}

impl PairPhase {
    /// From a repetition's measured phases `cost` (both sides' services, in the
    /// produce-and-consume phase) and what each side's producer did; `Err` says what is missing.
    pub(crate) fn of(
        pair: &Pair,
        cost: &[PhaseCost],
        a: Side,
        b: Side,
    ) -> Result<PairPhase, String> {
        let phase = cost
            .iter()
            .find(|p| p.phase == PRODUCE_AND_CONSUME)
            .ok_or("no cost of the produce-and-consume phase")?;
        let cpu = |services: &[String]| -> Result<f64, String> {
            services
                .iter()
                .map(|name| {
                    phase
                        .services
                        .iter()
                        .find(|s| s.service == *name)
                        .map(|s| s.cpu_s)
                        .ok_or(format!("service {name} was not costed"))
                })
                .sum()
        };
        let (cpu_a_s, cpu_b_s) = (cpu(&pair.a)?, cpu(&pair.b)?);
        // A side's CPU seconds less its JVMs' compilers and collectors, as the path's rest
        // coefficient counts them.
        let rest = |services: &[String], cpu_s: f64| -> Option<f64> {
            let side = phase
                .services
                .iter()
                .filter(|s| services.contains(&s.service));
            let apart = crate::accounting::cost::compilers_and_collectors(side)?;
            Some((cpu_s - apart).max(0.0))
        };
        // Each side's share of the phase's traffic (counted as the sizing guide counts it, by
        // the phase) is its share of the phase's records.
        let mc = |cpu_s: f64, records: u64| {
            let share = records as f64 / phase.records.max(1) as f64;
            cpu_s * 1000.0 / (phase.traffic_bytes() as f64 * share / 1e6)
        };
        let (mc_a, mc_b) = (mc(cpu_a_s, a.sent), mc(cpu_b_s, b.sent));
        if !(mc_a > 0.0 && mc_b.is_finite() && mc_b > 0.0) {
            return Err(format!(
                "no CPU per MB to compare (A {cpu_a_s:.3} CPU s over {} records, B {cpu_b_s:.3} \
                 over {})",
                a.sent, b.sent
            ));
        }
        Ok(PairPhase {
            pair: 0,
            cpu_a_s,
            cpu_b_s,
            mc_per_mb_s_a: mc_a,
            mc_per_mb_s_b: mc_b,
            cpu_ratio: mc_b / mc_a,
            rest_mc_per_mb_s_a: rest(&pair.a, cpu_a_s).map_or(0.0, |r| mc(r, a.sent)),
            rest_mc_per_mb_s_b: rest(&pair.b, cpu_b_s).map_or(0.0, |r| mc(r, b.sent)),
            p50_a_ms: a.p50_ms,
            p50_b_ms: b.p50_ms,
            p99_a_ms: a.p99_ms,
            p99_b_ms: b.p99_ms,
            rate_a: a.rate_rec_s,
            rate_b: b.rate_rec_s,
        })
    }
}

/// Repetition `m` of a paired scenario as a pair: side A's (`m`) and side B's (its
/// [`Measurement::pair`]) producers and the phase's cost; `Err` says what is missing.
pub(crate) fn phase_of(m: &Measurement, pair: &Pair) -> Result<PairPhase, String> {
    let b = m.pair.as_deref().ok_or("side B has no measurement")?;
    let side = |m: &Measurement| Side {
        sent: m.producer.sent,
        rate_rec_s: m.producer.rate_rec_s,
        p50_ms: m.producer.intended.as_ref().map_or(0.0, |l| l.p50_ms),
        p99_ms: m.producer.intended.as_ref().map_or(0.0, |l| l.p99_ms),
    };
    PairPhase::of(pair, &m.cost, side(m), side(b))
}

impl Ratio {
    /// Over `pairs`, each its phases' ratios (each > 0), in logarithms so that B/A and A/B are
    /// symmetric; a pair without a phase is no pair; `None` without any. A difference is a ratio
    /// above `1 + threshold_percent / 100` or below its inverse.
    pub(crate) fn of(pairs: &[Vec<f64>], threshold_percent: f64) -> Option<Ratio> {
        let logs: Vec<Vec<f64>> = pairs
            .iter()
            .filter(|p| !p.is_empty())
            .map(|p| p.iter().map(|r| r.ln()).collect())
            .collect();
        if logs.is_empty() {
            return None;
        }
        let means: Vec<f64> = logs
            .iter()
            .map(|l| crate::accounting::stats::mean(l))
            .collect();
        let ratios: Vec<f64> = means.iter().map(|m| m.exp()).collect();
        let interval = crate::accounting::stats::Interval::of_mean(&means);
        let detectable = crate::accounting::stats::detectable_mean(
            crate::accounting::stats::std_dev(&means),
            means.len(),
        );
        // Pooled: each phase's deviation from its own pair's mean, over the degrees of freedom.
        let (squares, freedom) = logs.iter().zip(&means).fold((0.0, 0), |(sq, df), (l, m)| {
            let own: f64 = l.iter().map(|x| (x - m).powi(2)).sum();
            (sq + own, df + l.len() - 1)
        });
        let mean = crate::accounting::stats::mean(&means);
        let smallest = (1.0 + threshold_percent / 100.0).ln();
        Some(Ratio {
            ratio: mean.exp(),
            pairs: means.len(),
            low: interval.map(|i| i.low.exp()),
            high: interval.map(|i| i.high.exp()),
            cv_percent: (ratios.len() > 1).then(|| crate::accounting::stats::cv_percent(&ratios)),
            within_pair_cv_percent: (freedom > 0)
                .then(|| ((squares / freedom as f64).sqrt().exp() - 1.0) * 100.0),
            detectable_percent: detectable.map(|d| (d.exp() - 1.0) * 100.0),
            verdict: interval.map(|i| {
                if i.low <= 0.0 && i.high >= 0.0 {
                    Verdict::NoDifference
                } else if mean.abs() <= smallest {
                    Verdict::WithinThreshold
                } else if mean > 0.0 {
                    Verdict::Higher
                } else {
                    Verdict::Lower
                }
            }),
        })
    }
}

/// A primary metric of a pair: what the verdict table shows and the exit code judges. Higher
/// is worse for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// The side's services' millicores per MB/s of its records produced and consumed.
    Cpu,
    /// The same without their JVMs' JIT compilers and GC threads: the work the path's code
    /// does. A fresh JVM's compilers still run after the warm-up, at a pace that varies from
    /// one bring-up to the next, so this figure varies less between pairs than the whole and
    /// tells a smaller change of the code's own cost; the whole is judged beside it, so work
    /// moved into the compilers or the collector is still found.
    CpuRest,
    /// The producer's median latency from the intended send times.
    P50,
    /// Its 99th percentile.
    P99,
}

impl Metric {
    pub const ALL: [Metric; 4] = [Metric::Cpu, Metric::CpuRest, Metric::P50, Metric::P99];

    /// The registry's metric it is the paired form of, whose name it is shown by.
    pub(crate) fn id(self) -> crate::analysis::metrics::Id {
        use crate::analysis::metrics::Id;
        match self {
            Metric::Cpu => Id::PathCost,
            Metric::CpuRest => Id::PathRestCost,
            Metric::P50 => Id::IntendedP50Ms,
            Metric::P99 => Id::IntendedP99Ms,
        }
    }

    pub fn name(self) -> &'static str {
        self.id().name()
    }

    /// Each side's figure in a phase.
    pub(crate) fn sides(self, p: &PairPhase) -> (f64, f64) {
        match self {
            Metric::Cpu => (p.mc_per_mb_s_a, p.mc_per_mb_s_b),
            Metric::CpuRest => (p.rest_mc_per_mb_s_a, p.rest_mc_per_mb_s_b),
            Metric::P50 => (p.p50_a_ms, p.p50_b_ms),
            Metric::P99 => (p.p99_a_ms, p.p99_b_ms),
        }
    }

    /// Decimals its figures are shown with.
    pub(crate) fn decimals(self) -> usize {
        match self {
            Metric::Cpu | Metric::CpuRest => 1,
            Metric::P50 | Metric::P99 => 2,
        }
    }
}

impl PairResult {
    /// B over A of `metric`, when any pair compared it.
    pub(crate) fn ratio(&self, metric: Metric) -> Option<&Ratio> {
        match metric {
            Metric::Cpu => self.cpu.as_ref(),
            Metric::CpuRest => self.cpu_rest.as_ref(),
            Metric::P50 => self.p50.as_ref(),
            Metric::P99 => self.p99.as_ref(),
        }
    }

    /// The primary metrics on which side B is worse than side A beyond the threshold.
    pub(crate) fn worse(&self) -> Vec<Metric> {
        Metric::ALL
            .into_iter()
            .filter(|m| self.ratio(*m).and_then(|r| r.verdict) == Some(Verdict::Higher))
            .collect()
    }
}

/// The pair (from 1) and its phase (from 1) of the `index`th phase run (from 0).
fn position(index: usize, per_pair: usize) -> (usize, usize) {
    let per_pair = per_pair.max(1);
    (index / per_pair + 1, index % per_pair + 1)
}

/// How warnings name the `index`th phase run (from 0) with `per_pair` phases to a pair:
/// `pair n`, or `pair n, phase j` when pairs have several phases.
pub(crate) fn phase_label(index: usize, per_pair: usize) -> String {
    let (n, j) = position(index, per_pair);
    if per_pair > 1 {
        format!("pair {n}, phase {j}")
    } else {
        format!("pair {n}")
    }
}

impl PairResult {
    /// Over every measured phase of a scenario with `pair`, in the order run, `per_pair` phases
    /// to a pair, with verdicts beyond `threshold_percent`; a phase that cannot be compared is
    /// left out, with a warning naming it.
    pub(crate) fn of(
        pair: &Pair,
        phases: Vec<Result<PairPhase, String>>,
        per_pair: usize,
        threshold_percent: u64,
    ) -> (PairResult, Vec<String>) {
        let per_pair = per_pair.max(1);
        let mut warnings = Vec::new();
        let mut kept = Vec::new();
        for (i, phase) in phases.into_iter().enumerate() {
            match phase {
                Ok(p) => kept.push(PairPhase {
                    pair: position(i, per_pair).0,
                    ..p
                }),
                Err(why) => warnings.push(format!("{} left out: {why}", phase_label(i, per_pair))),
            }
        }
        let pairs = kept.last().map_or(0, |p| p.pair);
        let of_pairs = |f: &dyn Fn(&PairPhase) -> Option<f64>| -> Vec<Vec<f64>> {
            (1..=pairs)
                .map(|n| kept.iter().filter(|p| p.pair == n).filter_map(f).collect())
                .collect()
        };
        let threshold = threshold_percent as f64;
        let ratio = |metric: Metric| {
            let pairs = of_pairs(&|p| {
                let (a, b) = metric.sides(p);
                (a > 0.0 && b > 0.0).then(|| b / a)
            });
            Ratio::of(&pairs, threshold)
        };
        let result = PairResult {
            pair: pair.clone(),
            alike: false,
            path_check_b: None,
            phases_per_pair: per_pair,
            threshold_percent,
            cpu: ratio(Metric::Cpu),
            cpu_rest: ratio(Metric::CpuRest),
            p50: ratio(Metric::P50),
            p99: ratio(Metric::P99),
            phases: kept,
        };
        (result, warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::cost::{Role, ServiceCost};

    fn pair() -> Pair {
        Pair {
            bootstrap: "proxy:9092".into(),
            network: "default-b".into(),
            a: vec!["proxy-a".into()],
            b: vec!["proxy-b".into()],
        }
    }

    fn service(name: &str, cpu_s: f64) -> ServiceCost {
        ServiceCost {
            service: name.into(),
            role: Role::Path,
            cpu_s,
            rx_bytes: 0,
            tx_bytes: 0,
            gc: None,
            threads: None,
        }
    }

    /// A repetition's phase: each side sent `sent` records of 1000 bytes at once.
    fn cost(cpu_a: f64, cpu_b: f64, sent: u64) -> Vec<PhaseCost> {
        vec![PhaseCost {
            phase: PRODUCE_AND_CONSUME.into(),
            records: 2 * sent,
            record_bytes: 2 * sent * 1000,
            seconds: 10.0,
            services: vec![
                service("broker", 3.0),
                service("proxy-a", cpu_a),
                service("proxy-b", cpu_b),
            ],
            start_unix_s: None,
            host_steal_percent: None,
        }]
    }

    fn side(sent: u64, p99_ms: f64) -> Side {
        Side {
            sent,
            rate_rec_s: 1000.0,
            p50_ms: p99_ms / 4.0,
            p99_ms,
        }
    }

    #[test]
    fn a_pair_is_each_sides_cpu_per_mb_and_their_ratio() {
        // 10^4 records of 1000 bytes each way: 20 MB of traffic per side.
        let (a, b) = (side(10_000, 4.0), side(10_000, 6.0));
        let p = PairPhase::of(&pair(), &cost(2.0, 2.5, 10_000), a, b).unwrap();
        assert!((p.mc_per_mb_s_a - 100.0).abs() < 1e-9, "{p:?}");
        assert!((p.mc_per_mb_s_b - 125.0).abs() < 1e-9, "{p:?}");
        assert!((p.cpu_ratio - 1.25).abs() < 1e-12);
        assert_eq!((p.p99_a_ms, p.p99_b_ms), (4.0, 6.0));
        let mut uncosted = cost(2.0, 2.0, 10_000);
        uncosted[0].services.retain(|s| s.service != "proxy-b");
        let err = PairPhase::of(&pair(), &uncosted, a, b).unwrap_err();
        assert_eq!(err, "service proxy-b was not costed");
        let err = PairPhase::of(&pair(), &[], a, b).unwrap_err();
        assert_eq!(err, "no cost of the produce-and-consume phase");
    }

    #[test]
    fn the_rest_leaves_each_sides_compilers_and_collector_out_when_both_were_read() {
        let (a, b) = (side(10_000, 4.0), side(10_000, 4.0));
        // Without threads read, no rest to compare.
        let p = PairPhase::of(&pair(), &cost(2.0, 2.5, 10_000), a, b).unwrap();
        assert_eq!((p.rest_mc_per_mb_s_a, p.rest_mc_per_mb_s_b), (0.0, 0.0));
        let mut read = cost(2.0, 2.5, 10_000);
        for (s, (jit_s, gc_s)) in read[0].services[1..]
            .iter_mut()
            .zip([(0.4, 0.1), (1.0, 0.0)])
        {
            s.threads = Some(crate::accounting::jvm_threads::ThreadCpu { jit_s, gc_s });
        }
        let p = PairPhase::of(&pair(), &read, a, b).unwrap();
        // 1.5 and 1.5 CPU s left over 20 MB each: 75 millicores per MB/s, B/A 1 while the
        // whole is 1.25.
        assert!((p.rest_mc_per_mb_s_a - 75.0).abs() < 1e-9, "{p:?}");
        assert!((p.rest_mc_per_mb_s_b - 75.0).abs() < 1e-9, "{p:?}");
        assert!((p.cpu_ratio - 1.25).abs() < 1e-12);
        // A service that is no JVM (a KMS) counts whole in its side's rest.
        let mut with_kms = pair();
        with_kms.a.push("kms".into());
        let mut kms = read.clone();
        kms[0].services.push(service("kms", 0.5));
        let k = PairPhase::of(&with_kms, &kms, a, b).unwrap();
        assert!((k.rest_mc_per_mb_s_a - 100.0).abs() < 1e-9, "{k:?}");
        let (r, _) = PairResult::of(&pair(), vec![Ok(p.clone()), Ok(p)], 1, 5);
        assert!((r.cpu_rest.unwrap().ratio - 1.0).abs() < 1e-12);
        assert!((r.cpu.unwrap().ratio - 1.25).abs() < 1e-12);
    }

    #[test]
    fn a_repetition_that_cannot_be_compared_is_named_and_left_out() {
        let one = PairPhase::of(
            &pair(),
            &cost(2.0, 2.2, 10_000),
            side(10_000, 4.0),
            side(10_000, 4.0),
        );
        let reps = vec![one, Err("side B has no measurement".to_string())];
        let (result, warnings) = PairResult::of(&pair(), reps, 1, 5);
        assert_eq!(result.phases.len(), 1);
        assert_eq!(warnings, ["pair 2 left out: side B has no measurement"]);
        // One pair: its ratio, no interval and no verdict.
        let cpu = result.cpu.unwrap();
        assert!((cpu.ratio - 1.1).abs() < 1e-9);
        assert_eq!((cpu.low, cpu.verdict), (None, None));
    }

    #[test]
    fn the_verdict_is_the_geometric_means_interval_over_pairs() {
        let found = Ratio::of(&singles(&[1.08, 1.10, 1.12, 1.09, 1.11]), 5.0).unwrap();
        assert_eq!(found.verdict, Some(Verdict::Higher));
        assert!(
            found.low.unwrap() > 1.0 && found.high.unwrap() < 1.13,
            "{found:?}"
        );
        let clean = Ratio::of(&singles(&[0.97, 1.03, 1.01, 0.99, 1.0]), 5.0).unwrap();
        assert_eq!(clean.verdict, Some(Verdict::NoDifference));
        // Symmetric in B and A: the inverse ratios give the inverse mean and the other verdict.
        let inverse = Ratio::of(
            &singles(&[1.0 / 1.08, 1.0 / 1.10, 1.0 / 1.12, 1.0 / 1.09, 1.0 / 1.11]),
            5.0,
        )
        .unwrap();
        assert!((inverse.ratio * found.ratio - 1.0).abs() < 1e-12);
        assert_eq!(inverse.verdict, Some(Verdict::Lower));
        // A spread of ~2% over 5 pairs finds about 3%; the same over 10 about 2%.
        let d5 = clean.detectable_percent.unwrap();
        assert!(d5 > 2.0 && d5 < 6.0, "{d5}");
        let ten: Vec<f64> = [0.97, 1.03, 1.01, 0.99, 1.0].repeat(2);
        assert!(
            Ratio::of(&singles(&ten), 5.0)
                .unwrap()
                .detectable_percent
                .unwrap()
                < d5
        );
        // One phase per pair: no spread within pairs.
        assert_eq!(found.within_pair_cv_percent, None);
    }

    #[test]
    fn a_difference_clear_of_one_but_within_the_threshold_is_named_so() {
        // Four pairs' means within 0.1% of each other, B 0.6% below A: the interval is clear of
        // 1, the change too small to count at 5%, and counted with no threshold.
        let tight = singles(&[0.9935, 0.9940, 0.9945, 0.9940]);
        let verdict = |pairs: &[Vec<f64>], threshold| Ratio::of(pairs, threshold)?.verdict;
        let r = Ratio::of(&tight, 5.0).unwrap();
        assert!(r.high.unwrap() < 1.0, "{r:?}");
        assert_eq!(r.verdict, Some(Verdict::WithinThreshold));
        assert_eq!(Verdict::WithinThreshold.text(), "within PAIR_THRESHOLD");
        assert_eq!(verdict(&tight, 0.0), Some(Verdict::Lower));
        // Beyond the threshold either way (symmetric: 1/1.06 is as far below as 1.06 above).
        let above = singles(&[1.059, 1.061, 1.060, 1.060]);
        let below: Vec<Vec<f64>> = above.iter().map(|p| vec![1.0 / p[0]]).collect();
        assert_eq!(verdict(&above, 5.0), Some(Verdict::Higher));
        assert_eq!(verdict(&above, 7.0), Some(Verdict::WithinThreshold));
        assert_eq!(verdict(&below, 5.0), Some(Verdict::Lower));
        // A wide interval holding 1 is no difference, whatever the threshold.
        let wide = singles(&[0.9, 1.2, 1.0, 1.1]);
        assert_eq!(verdict(&wide, 0.0), Some(Verdict::NoDifference));
    }

    /// Each ratio its own pair's one phase.
    fn singles(ratios: &[f64]) -> Vec<Vec<f64>> {
        ratios.iter().map(|&r| vec![r]).collect()
    }

    #[test]
    fn a_pair_of_several_phases_is_one_observation_their_geometric_mean() {
        // Three pairs of two phases, each phase 10% above or below its pair's mean; the pairs'
        // means 1.1, 1.2 and 1.3.
        let pairs = vec![
            vec![1.1 * 1.1, 1.1 / 1.1],
            vec![1.2 * 1.1, 1.2 / 1.1],
            vec![1.3 * 1.1, 1.3 / 1.1],
        ];
        let r = Ratio::of(&pairs, 5.0).unwrap();
        assert_eq!(r.pairs, 3);
        let mean = (1.1f64 * 1.2 * 1.3).cbrt();
        assert!((r.ratio - mean).abs() < 1e-12, "{r:?}");
        // Each phase lies ln(1.1) from its pair's mean; two phases: one degree of freedom each.
        let within = ((2.0 * 1.1f64.ln().powi(2)).sqrt().exp() - 1.0) * 100.0;
        assert!(
            (r.within_pair_cv_percent.unwrap() - within).abs() < 1e-9,
            "{r:?}"
        );
        // The pairs' spread is of their means only.
        let between = crate::accounting::stats::cv_percent(&[1.1, 1.2, 1.3]);
        assert!((r.cv_percent.unwrap() - between).abs() < 1e-9, "{r:?}");

        // Phases in the order run, two to a pair; one that cannot be compared is named by its
        // pair and phase, and its pair is the other phase alone.
        let phase = |a: f64, b: f64| {
            PairPhase::of(
                &pair(),
                &cost(a, b, 10_000),
                side(10_000, 4.0),
                side(10_000, 4.0),
            )
        };
        let run = vec![
            phase(2.0, 2.2),
            phase(2.0, 2.4),
            Err("side B has no measurement".to_string()),
            phase(2.0, 2.3),
        ];
        let (result, warnings) = PairResult::of(&pair(), run, 2, 5);
        assert_eq!(
            warnings,
            ["pair 2, phase 1 left out: side B has no measurement"]
        );
        assert_eq!(result.phases_per_pair, 2);
        let owners: Vec<usize> = result.phases.iter().map(|p| p.pair).collect();
        assert_eq!(owners, [1, 1, 2]);
        let cpu = result.cpu.unwrap();
        assert_eq!(cpu.pairs, 2);
        let expected = ((1.1f64 * 1.2).sqrt() * 1.15).sqrt();
        assert!((cpu.ratio - expected).abs() < 1e-9, "{cpu:?}");
    }
}
