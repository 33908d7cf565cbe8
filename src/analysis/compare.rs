//! The judgement: each scenario's metrics on both sides, their change, its significance and its
//! verdict against the threshold, and the warnings about what makes the two sides unlike.

use std::path::PathBuf;

use crate::accounting::stats::{self, SIGNIFICANCE as ALPHA};
use crate::analysis::metrics::{self, Better, Metric};
use crate::model::run::{HostFacts, NodeFacts, RunInfo};
use crate::model::Measurement;
use crate::settings::SETTINGS;

/// The results of one side of a comparison (one run, or several pooled).
#[derive(Debug, Clone)]
pub(crate) struct Side {
    /// What the user named (a path, `latest`, `previous`), resolved to a directory.
    pub dir: PathBuf,
    /// The run directories read (one, or several when pooled).
    pub runs: Vec<PathBuf>,
    /// Each run's `run.json`.
    pub runs_info: Vec<RunInfo>,
    /// Row (scenario name, with its combination under a matrix) -> every repetition, in the
    /// order rows first appear.
    pub scenarios: Vec<(String, Vec<Measurement>)>,
    /// For each row of `scenarios`, the run (an index into `runs`) each repetition came from.
    pub rep_runs: Vec<Vec<usize>>,
    /// The scenarios marked as their suite's reference (`reference: true`).
    pub references: Vec<String>,
}

/// How a metric changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Significantly worse, beyond the threshold.
    Regression,
    /// Significantly better, beyond the threshold.
    Improvement,
    /// No significant change beyond the threshold, and one of the threshold's size would
    /// probably have been found.
    Unchanged,
    /// No significant change, but the spread is so wide that a change of the threshold's size
    /// would probably have gone unseen.
    NotDetectable,
    /// Too few repetitions for any change to reach significance at this metric's level.
    TooFew,
}

/// One metric of one scenario, compared.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// Scenario name.
    pub scenario: String,
    /// The metric.
    pub metric: metrics::Id,
    /// Which direction is better.
    pub better: Better,
    /// Whether the metric decides the verdict (see [`metrics::decides`]); the others are
    /// reported with uncorrected p-values and never fail the comparison.
    pub primary: bool,
    /// Median over the base repetitions.
    pub base: f64,
    /// Median over the new repetitions.
    pub new: f64,
    /// (new - base) / base in percent; `None` when base is 0.
    pub change_pct: Option<f64>,
    /// Two-sided Mann-Whitney p-value, uncorrected; `None` without repetitions on a side.
    pub p: Option<f64>,
    /// The significance level this metric is held to: 0.05 / (primary tests) for a primary
    /// metric (Holm's strictest step), 0.05 for a secondary one.
    pub level: f64,
    /// The smallest change, in percent of the base median, these repetitions would find with
    /// 80% probability at `level` given the spread observed on both sides; `None` when no
    /// change could reach `level` with so few repetitions.
    pub detectable_pct: Option<f64>,
    /// Observations on each side: repetitions, or runs for a side counted by run.
    pub n: (usize, usize),
    /// A side pooled runs of several repetitions each (which vary together), so its
    /// observations are its runs' medians, not its repetitions.
    pub by_run: bool,
    /// The conclusion.
    pub verdict: Verdict,
    /// The observations tested on each side (repetitions, or runs' medians), in order.
    pub observations: (Vec<f64>, Vec<f64>),
}

impl Row {
    pub(crate) fn verdict_label(&self) -> String {
        let secondary = if self.primary { "" } else { " (secondary)" };
        match self.verdict {
            Verdict::Regression => format!("regression{secondary}"),
            Verdict::Improvement => format!("improvement{secondary}"),
            Verdict::Unchanged => String::new(),
            Verdict::NotDetectable => "not detectable at this spread".into(),
            Verdict::TooFew => "n/a: too few repetitions".into(),
        }
    }
}

/// A whole comparison.
#[derive(Debug, Clone)]
pub(crate) struct Comparison {
    /// Base directory.
    pub base: PathBuf,
    /// New directory.
    pub new: PathBuf,
    /// Regression threshold in percent.
    pub threshold_pct: f64,
    /// Some scenario ran at a fixed THROUGHPUT on both sides (there the producer's latency
    /// decides, not its rate).
    pub throttled: bool,
    /// Some such scenario measured latency from the intended send times on both sides (there
    /// that latency decides).
    pub intended: bool,
    /// How many tests decide the verdict (Holm's family).
    pub primary_tests: usize,
    /// Every metric of every scenario both sides have.
    pub rows: Vec<Row>,
    /// Settings or hosts that differ, scenarios on one side only, sides measured one after the
    /// other, repetitions that drift.
    pub warnings: Vec<String>,
}

/// Compares two sides metric by metric.
pub(crate) fn compare(base: &Side, new: &Side, threshold_pct: f64) -> Comparison {
    let mut warnings = differences(base, new);
    let mut pairs = Vec::new();
    let mut by_run = Vec::new();
    for ((name, b), b_runs) in base.scenarios.iter().zip(&base.rep_runs) {
        match new.scenarios.iter().position(|(s, _)| s == name) {
            Some(i) => {
                let (n, n_runs) = (&new.scenarios[i].1, &new.rep_runs[i]);
                pairs.push((name.as_str(), b.as_slice(), n.as_slice()));
                by_run.push(Units::of(b_runs, n_runs));
            }
            None => warnings.push(format!("scenario {name} is only in the base results")),
        }
    }
    let decided: Vec<Decides> = pairs.iter().map(|&(_, b, n)| Decides::of(b, n)).collect();
    for (name, _) in &new.scenarios {
        if !base.scenarios.iter().any(|(s, _)| s == name) {
            warnings.push(format!("scenario {name} is only in the new results"));
        }
    }
    warnings.extend(interleaving(base, new));
    warnings.extend(stolen(base, new));
    warnings.extend(drift(base, new, &pairs, &decided));
    warnings.extend(
        pairs
            .iter()
            .zip(&decided)
            .filter_map(|(&(name, b, n), d)| unlike_rates(name, b, n, *d)),
    );

    let (mut rows, spreads): (Vec<Row>, Vec<f64>) = pairs
        .iter()
        .zip(&decided)
        .zip(&by_run)
        .flat_map(|((&(name, b, n), &decides), &units)| {
            metrics::compared().filter_map(move |m| measure_change(name, m, (b, n), units, decides))
        })
        .unzip();
    let primary: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].primary).collect();
    let m = primary.len().max(1);
    let p: Vec<f64> = primary.iter().map(|&i| rows[i].p.unwrap_or(1.0)).collect();
    let mut significant: Vec<bool> = rows
        .iter()
        .map(|r| r.p.is_some_and(|p| p < ALPHA))
        .collect();
    for (&i, reject) in primary.iter().zip(stats::holm(&p, ALPHA)) {
        significant[i] = reject;
    }
    let mut shifts = Shifts::default();
    for ((row, significant), sd) in rows.iter_mut().zip(significant).zip(spreads) {
        if row.primary {
            row.level = ALPHA / m as f64;
        }
        row.detectable_pct = shifts.detectable_pct(row, sd);
        row.verdict = judge(row, significant, threshold_pct);
    }
    warnings.extend(references_moved(base, new, &rows, threshold_pct));
    Comparison {
        base: base.dir.clone(),
        new: new.dir.clone(),
        threshold_pct,
        throttled: decided.iter().any(|d| d.throttled),
        intended: decided.iter().any(|d| d.throttled && d.intended),
        primary_tests: primary.len(),
        rows,
        warnings,
    }
}

/// What a row's test counts as one observation on each side. Repetitions of one run share its
/// broker (and its state: page cache, log segments, JIT), so they vary together: when a side
/// pools several runs and some run gave several repetitions, counting those as independent
/// overstates the evidence (an A/A campaign raised a false regression that way, 2 slower runs
/// of 3 repetitions reading as 6 of 6). Then each of that side's runs is one observation, its
/// median. A side of one run keeps its repetitions (the not-interleaved warning covers it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Units<'a> {
    /// Per side: the run of each repetition, when that side is counted by run.
    base: Option<&'a [usize]>,
    new: Option<&'a [usize]>,
}

impl<'a> Units<'a> {
    fn of(base_runs: &'a [usize], new_runs: &'a [usize]) -> Units<'a> {
        let by_run = |runs: &'a [usize]| {
            let distinct: std::collections::BTreeSet<&usize> = runs.iter().collect();
            (distinct.len() > 1 && distinct.len() < runs.len()).then_some(runs)
        };
        Units {
            base: by_run(base_runs),
            new: by_run(new_runs),
        }
    }

    fn by_run(&self) -> bool {
        self.base.is_some() || self.new.is_some()
    }

    /// The observations of `m` on each side.
    fn values(
        &self,
        m: &Metric,
        base: &[Measurement],
        new: &[Measurement],
    ) -> (Vec<f64>, Vec<f64>) {
        let side = |reps: &[Measurement], runs: Option<&[usize]>| match runs {
            Some(runs) => run_medians(m, reps, runs),
            None => values(m, reps),
        };
        (side(base, self.base), side(new, self.new))
    }
}

/// Each run's median of `m` over its repetitions (`runs[i]` is repetition i's run), in run
/// order, leaving out runs that lack it.
pub(crate) fn run_medians(m: &Metric, reps: &[Measurement], runs: &[usize]) -> Vec<f64> {
    let mut by_run: std::collections::BTreeMap<usize, Vec<f64>> = Default::default();
    for (rep, run) in reps.iter().zip(runs) {
        let v = (m.get)(rep);
        if !v.is_nan() {
            by_run.entry(*run).or_default().push(v);
        }
    }
    by_run.values().map(|v| stats::median(v)).collect()
}

/// Which metrics decide a row's verdict, from what both sides measured of its scenario (see
/// [`metrics::decides`]); per row, since a matrix may vary THROUGHPUT.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Decides {
    /// Every repetition of both sides had a THROUGHPUT target.
    throttled: bool,
    /// Every repetition of both sides has latencies from the intended send times.
    intended: bool,
    /// Every repetition of both sides had the same THROUGHPUT target.
    same_rate: bool,
}

impl Decides {
    fn of(base: &[Measurement], new: &[Measurement]) -> Decides {
        let all = || base.iter().chain(new);
        let first = base.first().map(|m| m.producer.target_rec_s);
        Decides {
            throttled: all().all(|m| m.producer.target_rec_s > 0.0),
            intended: all().all(|m| m.producer.intended.is_some()),
            same_rate: all().all(|m| Some(m.producer.target_rec_s) == first),
        }
    }

    fn primary(self, m: &Metric) -> bool {
        metrics::decides(m, self.throttled, self.intended, self.same_rate)
    }
}

/// The warning for a scenario whose path cost both sides measured at fixed rates that differ:
/// CPU per MB/s depends on the rate (batching), so its cost is reported there, not judged.
fn unlike_rates(
    name: &str,
    base: &[Measurement],
    new: &[Measurement],
    d: Decides,
) -> Option<String> {
    let cost = metrics::Id::PathCost.metric();
    let measured = |reps: &[Measurement]| reps.iter().any(|m| !(cost.get)(m).is_nan());
    if !d.throttled || d.same_rate || !measured(base) || !measured(new) {
        return None;
    }
    let rates = |reps: &[Measurement]| {
        let mut v: Vec<String> = reps
            .iter()
            .map(|m| format!("{:.0}", m.producer.target_rec_s))
            .collect();
        v.sort();
        v.dedup();
        v.join(" / ")
    };
    Some(format!(
        "{name}: THROUGHPUT is {} in the base and {} in the new results: CPU per MB/s depends on \
         the rate, so its {} is reported, not judged",
        rates(base),
        rates(new),
        cost.name
    ))
}

/// The values of `m` over `reps`, leaving out repetitions that lack it.
pub(crate) fn values(m: &Metric, reps: &[Measurement]) -> Vec<f64> {
    reps.iter().map(m.get).filter(|v| !v.is_nan()).collect()
}

/// A metric's medians, change and uncorrected p-value, with the two sides' pooled standard
/// deviation; its level, detectable change and verdict are set once every row is known. `None`
/// when a side did not measure it.
pub(crate) fn measure_change(
    scenario: &str,
    m: &Metric,
    (base, new): (&[Measurement], &[Measurement]),
    units: Units<'_>,
    decides: Decides,
) -> Option<(Row, f64)> {
    let (b, n) = units.values(m, base, new);
    if b.is_empty() || n.is_empty() {
        return None;
    }
    let (bm, nm) = (stats::median(&b), stats::median(&n));
    let row = Row {
        scenario: scenario.to_string(),
        metric: m.id,
        better: m.better.unwrap_or(Better::Higher),
        primary: decides.primary(m),
        base: bm,
        new: nm,
        change_pct: (bm != 0.0).then(|| (nm - bm) / bm.abs() * 100.0),
        p: stats::mann_whitney_u(&b, &n).map(|r| r.p),
        level: ALPHA,
        detectable_pct: None,
        n: (b.len(), n.len()),
        by_run: units.by_run(),
        verdict: Verdict::TooFew,
        observations: (b.clone(), n.clone()),
    };
    Some((row, pooled_sd(&b, &n)))
}

pub(crate) fn judge(row: &Row, significant: bool, threshold_pct: f64) -> Verdict {
    let Some(detectable) = row.detectable_pct else {
        return Verdict::TooFew;
    };
    match row.change_pct {
        Some(c) if significant && c.abs() > threshold_pct => {
            let worse = match row.better {
                Better::Higher => c < 0.0,
                Better::Lower => c > 0.0,
            };
            if worse {
                Verdict::Regression
            } else {
                Verdict::Improvement
            }
        }
        _ if detectable > threshold_pct => Verdict::NotDetectable,
        _ => Verdict::Unchanged,
    }
}

/// Detectable shifts in standard deviations, by sample sizes and level: the simulation behind
/// each depends on nothing else, so a comparison runs it once per distinct case.
#[derive(Default)]
pub(crate) struct Shifts(Vec<((usize, usize, u64), Option<f64>)>);

impl Shifts {
    /// The detectable change of `row`, whose two sides' pooled standard deviation is `sd`.
    fn detectable_pct(&mut self, row: &Row, sd: f64) -> Option<f64> {
        let key = (row.n.0, row.n.1, row.level.to_bits());
        let shift = match self.0.iter().find(|(k, _)| *k == key) {
            Some((_, s)) => *s,
            None => {
                let s = stats::detectable_shift(row.n.0, row.n.1, row.level);
                self.0.push((key, s));
                s
            }
        }?;
        if row.base == 0.0 || !row.base.is_finite() {
            return Some(if sd == 0.0 { 0.0 } else { f64::INFINITY });
        }
        Some(shift * sd / row.base.abs() * 100.0)
    }
}

/// The pooled sample standard deviation of two samples (0 with fewer than two values in all).
pub(crate) fn pooled_sd(a: &[f64], b: &[f64]) -> f64 {
    let df = (a.len() + b.len()).saturating_sub(2);
    if df == 0 {
        return 0.0;
    }
    let ss = |v: &[f64]| stats::std_dev(v).powi(2) * v.len().saturating_sub(1) as f64;
    ((ss(a) + ss(b)) / df as f64).sqrt()
}

/// Warnings for reference scenarios (they measure none of the path under test) whose primary
/// metrics moved beyond the threshold at p < 0.05 (uncorrected: for a warning, missing a moved
/// reference costs more than a spurious note).
pub(crate) fn references_moved(
    base: &Side,
    new: &Side,
    rows: &[Row],
    threshold_pct: f64,
) -> Vec<String> {
    rows.iter()
        .filter(|r| r.primary)
        .filter(|r| base.references.contains(&r.scenario) || new.references.contains(&r.scenario))
        .filter(|r| {
            r.p.is_some_and(|p| p < ALPHA) && r.change_pct.is_some_and(|c| c.abs() > threshold_pct)
        })
        .map(|r| {
            format!(
                "the reference scenario {} (it measures none of the path under test) moved by \
                 itself: {} {} (p = {:.3}); the machine or the broker changed between the \
                 sides, and the other scenarios' changes may be that too",
                r.scenario,
                r.metric,
                pct(r.change_pct),
                r.p.unwrap_or(1.0)
            )
        })
        .collect()
}

/// A warning when one side was measured entirely before the other: then any drift of the
/// machine between the two (other work, thermal state, a grown page cache) reads as a change,
/// and a test over repetitions within each side cannot tell the difference.
pub(crate) fn interleaving(base: &Side, new: &Side) -> Option<String> {
    let span = |side: &Side| {
        let times: Vec<chrono::DateTime<chrono::FixedOffset>> = side
            .runs_info
            .iter()
            .flat_map(|i| [&i.started_at, &i.ended_at])
            .filter_map(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .collect();
        Some((*times.iter().min()?, *times.iter().max()?))
    };
    let ((bs, be), (ns, ne)) = (span(base)?, span(new)?);
    // Times are whole seconds: one side ending in the second the other starts is back to back,
    // not interleaved (sides that start together, such as one run compared with itself, are).
    let after = |(s1, e1), s2| e1 <= s2 && s1 < s2;
    if !after((bs, be), ns) && !after((ns, ne), bs) {
        return None;
    }
    let at = |t: chrono::DateTime<chrono::FixedOffset>| t.format("%Y-%m-%d %H:%M:%S").to_string();
    Some(format!(
        "the sides were not interleaved: the base was measured from {} to {}, the new from {} \
         to {}, so drift of the machine between them counts as a change; alternate base and \
         new runs and pool each side (as the /perf workflow does) to cancel it",
        at(bs),
        at(be),
        at(ns),
        at(ne)
    ))
}

/// Percentage points of the hosts' CPU stolen by which the sides' medians may differ before the
/// comparison warns: a few points come and go within one run on a shared host.
pub(crate) const STEAL_GAP_POINTS: f64 = 10.0;

/// A warning when the hypervisor stole a markedly larger share of the hosts' CPU under one side's
/// measured phases than under the other's: the host's other guests then slowed one side more
/// (through caches and memory, not only the stolen time), so a cost or a rate may have moved
/// with them rather than with the change.
pub(crate) fn stolen(base: &Side, new: &Side) -> Option<String> {
    let median = |side: &Side| {
        crate::accounting::cost::median_steal(
            side.scenarios
                .iter()
                .flat_map(|(_, reps)| reps)
                .flat_map(|m| &m.cost),
        )
    };
    let (b, n) = (median(base)?, median(new)?);
    ((b - n).abs() > STEAL_GAP_POINTS).then(|| {
        format!(
            "the hosts' CPU was stolen unevenly: {b:.0}% of it under the base's measured phases, \
             {n:.0}% under the new's (medians; the engine's host clock): a busier host slows \
             what runs on it, so costs and rates may differ for that rather than for the \
             change; compare runs interleaved on a quieter host"
        )
    })
}

/// Warnings for primary metrics whose repetitions trend with time within a side (Mann-Kendall,
/// Holm over every trend tested, so a warning is itself unlikely to be a false alarm): the
/// machine's state changed while that side was measured.
pub(crate) fn drift(
    base: &Side,
    new: &Side,
    pairs: &[(&str, &[Measurement], &[Measurement])],
    decided: &[Decides],
) -> Vec<String> {
    let mut tested = Vec::new();
    for (&(scenario, b, n), decides) in pairs.iter().zip(decided) {
        for m in metrics::compared().filter(|m| decides.primary(m)) {
            for (side, reps, runs) in [("base", b, base.runs.len()), ("new", n, new.runs.len())] {
                let values = values(m, reps);
                // Fewer than 5 values cannot show a trend at p < 0.05.
                if values.len() < 5 {
                    continue;
                }
                if let Some(t) = stats::trend(&values) {
                    tested.push((scenario, m.name, side, values.len(), runs, t));
                }
            }
        }
    }
    let p: Vec<f64> = tested.iter().map(|t| t.5.p).collect();
    let m = tested.len();
    tested
        .iter()
        .zip(stats::holm(&p, ALPHA))
        .filter(|(_, reject)| *reject)
        .map(|(&(scenario, metric, side, n, runs, t), _)| {
            format!(
                "drift: {scenario} {metric} {} steadily over the {side} side's {n} repetitions \
                 in time order ({runs} run{}; Kendall's tau {:+.2}, p = {:.4}, Holm over {m} \
                 trend tests): the machine changed while it was measured, so a difference \
                 between the sides may be drift",
                if t.tau > 0.0 { "rose" } else { "fell" },
                if runs == 1 { "" } else { "s" },
                t.tau,
                t.p
            )
        })
        .collect()
}

/// A property list as `k=v k=v`.
pub(crate) fn or_unset<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or("unset".to_string(), T::to_string)
}

/// A named fact of a run record, as a person reads it.
pub(crate) type Fact<T> = (&'static str, fn(&T) -> String);

/// Facts of perf-tests' machine that change what is measured.
pub(crate) const COMPARED_HOST: [Fact<HostFacts>; 5] = [
    ("hostname", |h| h.hostname.clone()),
    ("cpu_model", |h| or_unset(&h.cpu_model)),
    ("cpus", |h| h.cpus.to_string()),
    ("memory_bytes", |h| or_unset(&h.memory_bytes)),
    ("arch", |h| h.arch.clone()),
];

/// Facts of the containers' machines that change what is measured, each swarm node's with its
/// roles.
pub(crate) const COMPARED_NODE: [Fact<NodeFacts>; 6] = [
    ("cpu_model", |n| or_unset(&n.cpu_model)),
    ("cpus", |n| n.cpus.to_string()),
    ("memory_bytes", |n| n.memory_bytes.to_string()),
    ("kernel", |n| n.kernel.clone()),
    ("arch", |n| n.arch.clone()),
    ("engine_version", |n| n.engine_version.clone()),
];

/// One warning per run of `side` that ended early, naming its directory and why.
pub(crate) fn incomplete_runs(side: &Side) -> Vec<String> {
    side.runs
        .iter()
        .zip(&side.runs_info)
        .filter_map(|(dir, info)| {
            let why = info.incomplete.as_ref()?;
            Some(format!(
                "{} is an incomplete run ({why}): it holds only the scenarios it completed",
                dir.display()
            ))
        })
        .collect()
}

/// Warnings for incomplete runs, and for settings, host facts and the containers' machines that
/// differ between (or within) the two sides.
pub(crate) fn differences(base: &Side, new: &Side) -> Vec<String> {
    let mut out = incomplete_runs(base);
    out.extend(incomplete_runs(new));
    // Every setting that changes what is measured (the one table says which).
    for setting in SETTINGS.iter().filter(|s| s.measured) {
        let f = |i: &RunInfo| setting.value(&i.settings);
        out.extend(differ((base, new), "settings", setting.var, &f));
    }
    for (key, get) in COMPARED_HOST {
        out.extend(differ((base, new), "hosts", key, &|i| get(&i.host)));
    }
    out.extend(machines_differ(base, new));
    out
}

/// `"{what} differ: {key} is …"` when `f` reads other values of the base's runs than of the
/// new ones'.
fn differ(
    (base, new): (&Side, &Side),
    what: &str,
    key: &str,
    f: &dyn Fn(&RunInfo) -> String,
) -> Option<String> {
    let (b, n) = (run_values(base, f), run_values(new, f));
    (b != n).then(|| {
        format!(
            "{what} differ: {key} is {} in the base and {} in the new results",
            b.join(" / "),
            n.join(" / ")
        )
    })
}

/// What `f` reads of each run of `side`, runs in a row alike said once.
fn run_values(side: &Side, f: &dyn Fn(&RunInfo) -> String) -> Vec<String> {
    let mut v: Vec<String> = side.runs_info.iter().map(f).collect();
    v.dedup();
    v
}

/// Warnings for the containers' machines of the two sides: their names and roles, then each
/// fact of [`COMPARED_NODE`], node by node (a fact alike on every node said once, as one
/// engine's); one warning instead for runs that did not record them beside runs that did.
fn machines_differ(base: &Side, new: &Side) -> Vec<String> {
    let infos = || [base, new].into_iter().flat_map(|s| &s.runs_info);
    // Results that all lack them (all of an older layout) compare as they always did.
    if infos().all(|info| info.nodes.is_empty()) {
        return Vec::new();
    }
    let mut unrecorded: Vec<String> = [base, new]
        .into_iter()
        .flat_map(|side| side.runs.iter().zip(&side.runs_info))
        .filter(|(_, info)| info.nodes.is_empty())
        .map(|(dir, _)| dir.display().to_string())
        .collect();
    unrecorded.dedup();
    if !unrecorded.is_empty() {
        return vec![format!(
            "the machines the containers ran on are not recorded in {} (results of an older \
             layout), so a difference of hardware cannot be told",
            unrecorded.join(", ")
        )];
    }
    let each = |info: &RunInfo, f: &dyn Fn(&NodeFacts) -> String| -> String {
        let values: Vec<String> = info.nodes.iter().map(f).collect();
        // Alike on every machine: one value, so one engine and a swarm of its like agree.
        if values.iter().all(|v| *v == values[0]) && !values.is_empty() {
            values[0].clone()
        } else {
            // By role, not by name: two swarms of like machines under other names agree.
            let by_role = info.nodes.iter().zip(values);
            by_role
                .map(|(n, v)| match n.roles.as_slice() {
                    [] => v,
                    roles => format!("{v} ({})", roles.join(", ")),
                })
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let mut out = Vec::new();
    let layout = |i: &RunInfo| {
        let nodes = i.nodes.iter().map(|n| match n.roles.as_slice() {
            [] => n.name.clone(),
            roles => format!("{} ({})", n.name, roles.join(", ")),
        });
        nodes.collect::<Vec<_>>().join(", ")
    };
    let (b, n) = (run_values(base, &layout), run_values(new, &layout));
    if b != n {
        out.push(format!(
            "machines differ: the containers ran on {} in the base and on {} in the new results",
            b.join(" / "),
            n.join(" / ")
        ));
    }
    for (key, get) in COMPARED_NODE {
        out.extend(differ((base, new), "machines", key, &|i| each(i, &get)));
    }
    out
}

impl Comparison {
    /// The rows of the metrics that decide the verdict.
    pub(crate) fn primary_rows(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.primary)
    }

    /// The primary rows judged regressions (secondary ones never fail a comparison).
    pub(crate) fn regressions(&self) -> Vec<&Row> {
        self.primary_rows()
            .filter(|r| r.verdict == Verdict::Regression)
            .collect()
    }

    /// 1 when there is a regression, else 0.
    pub(crate) fn exit_code(&self) -> i32 {
        if self.regressions().is_empty() {
            0
        } else {
            1
        }
    }
}

pub(crate) fn pct(c: Option<f64>) -> String {
    c.map_or("n/a".into(), |c| format!("{c:+.1}%"))
}
