//! A paired run's results: a scenario's two sides, each pair's phases, and B over A of each
//! primary metric with its verdict (computed by `crate::analysis::pair`).

use serde::{Deserialize, Serialize};

/// A scenario's two sides: which services make each, and where side B is reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pair {
    /// Side B's endpoint, reached on side B's `network`.
    pub bootstrap: String,
    /// The Compose network side B's clients join (side A's join `default`); empty in results
    /// written when both sides' clients shared one network.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub network: String,
    /// The services whose CPU is side A's cost (its proxy, say).
    pub a: Vec<String>,
    /// The services whose CPU is side B's cost.
    pub b: Vec<String>,
}

/// A pair of sides over one measured phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairPhase {
    /// The pair (bring-up) it was measured in, from 1; 0 in results written before a pair could
    /// have several phases (each phase its own pair).
    #[serde(default)]
    pub pair: usize,
    /// Each side's services' CPU seconds.
    pub cpu_a_s: f64,
    pub cpu_b_s: f64,
    /// Each side's millicores per MB/s of its records, produced and consumed counted (the
    /// sizing guide's unit).
    pub mc_per_mb_s_a: f64,
    pub mc_per_mb_s_b: f64,
    /// B's CPU per MB over A's.
    pub cpu_ratio: f64,
    /// Each side's millicores per MB/s without its JVMs' JIT compilers and GC threads (see
    /// [`crate::accounting::cost::path_rest_coefficient`]); 0 where a side's threads were not read, and in
    /// results written before it was compared.
    #[serde(default)]
    pub rest_mc_per_mb_s_a: f64,
    #[serde(default)]
    pub rest_mc_per_mb_s_b: f64,
    /// Each side's producer's median and 99th percentile from the intended send times; the
    /// median is 0 in results written before it was compared.
    #[serde(default)]
    pub p50_a_ms: f64,
    #[serde(default)]
    pub p50_b_ms: f64,
    pub p99_a_ms: f64,
    pub p99_b_ms: f64,
    /// Each side's producer's rate, records/s.
    pub rate_a: f64,
    pub rate_b: f64,
}

/// Whether side B's figure differs from side A's, by the ratio's interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The whole interval lies above 1.
    Higher,
    /// The whole interval lies below 1.
    Lower,
    /// The interval holds 1.
    NoDifference,
    /// The interval is clear of 1, but B/A lies within the smallest change that counts
    /// (`PAIR_THRESHOLD`).
    WithinThreshold,
}

impl Verdict {
    pub(crate) fn text(self) -> &'static str {
        match self {
            Verdict::Higher => "B higher",
            Verdict::Lower => "B lower",
            Verdict::NoDifference => "no difference found",
            Verdict::WithinThreshold => "within PAIR_THRESHOLD",
        }
    }
}

/// B over A over every pair: the geometric mean of the pairs' ratios (each pair's the geometric
/// mean of its phases'), with (from two pairs on) its 95% interval, the pairs' spread, the
/// spread of phases within a pair, the change the pairs could find and the verdict: a
/// difference only when the interval is clear of 1 and the ratio beyond the smallest change that
/// counts (as `compare` calls a change only when significant and beyond its threshold: with
/// four pairs of equal means the interval is narrow enough to call a 0.5% difference no pair
/// could find again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    pub ratio: f64,
    pub pairs: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<f64>,
    /// The pairs' ratios' coefficient of variation, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cv_percent: Option<f64>,
    /// The phases' ratios' spread around their own pair's, pooled over the pairs with more than
    /// one phase, in percent: the noise more phases per pair average out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_pair_cv_percent: Option<f64>,
    /// The smallest change of the ratio, in percent, these pairs find with 80% power (two-sided
    /// 5%) at their spread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detectable_percent: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
}

/// A paired scenario's result: its sides, every pair's phases, and B over A of the path's CPU
/// per MB/s (whole and without the JVMs' compilers and collectors) and of the intended p50 and
/// p99.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairResult {
    pub pair: Pair,
    /// Side B's services were side A's: an A/A comparison.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub alike: bool,
    /// The check of the scenario's `expect:` through side B's endpoint (the worst bring-up's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_check_b: Option<super::PathCheck>,
    /// Measured phases of each pair (`PAIR_PHASES`).
    #[serde(default = "one")]
    pub phases_per_pair: usize,
    /// The smallest change, in percent, the verdicts call a difference (`PAIR_THRESHOLD`); 0 in
    /// results written before it existed.
    #[serde(default)]
    pub threshold_percent: u64,
    /// Every phase that could be compared, in the order run, each naming its pair.
    pub phases: Vec<PairPhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Ratio>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_rest: Option<Ratio>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50: Option<Ratio>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<Ratio>,
}

fn one() -> usize {
    1
}
