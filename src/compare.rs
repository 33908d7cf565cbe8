//! `perf-tests compare BASE NEW`: per scenario and metric, the base and new medians, the change,
//! and whether the change is significant (two-sided Mann-Whitney U over the repetitions,
//! p < 0.05) and beyond a threshold. A significant change beyond the threshold in the worse
//! direction is a regression, which makes the command exit 1.
//!
//! BASE and NEW are results directories of single runs (holding `run.json`), directories holding
//! several run directories (their repetitions are pooled; a pooled run of several repetitions is
//! tested as one observation, its median), or `latest` / `previous`: the last and second-to-last
//! run directory of RESULTS_DIR by name.
//!
//! Rows are matched by scenario and combination (runs with a matrix). A side may be one slice of
//! a matrix (`--base-where KROXYLICIOUS_IMAGE=a`): then its rows are matched without that
//! setting, so the two values of one run, measured interleaved, are compared with each other.

use std::path::{Path, PathBuf};

use crate::metrics::{self, Better, Metric};
use crate::model::Measurement;
use crate::results::{read_run_info, read_scenarios, HostFacts, RunInfo, RUN_FILE};
use crate::settings::SETTINGS;
use crate::stats::{self, SIGNIFICANCE as ALPHA};
use crate::table::{markdown_body, plain_body, TableData};
use anyhow::{bail, Context, Result};

/// Default regression threshold in percent.
pub const DEFAULT_THRESHOLD_PCT: f64 = 5.0;
/// First line of every Markdown comparison, so a pull-request comment can be found and updated.
pub const MARKER: &str = "<!-- perf-tests -->";

/// The results of one side of a comparison (one run, or several pooled).
#[derive(Debug, Clone)]
pub struct Side {
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

/// Resolves `latest` / `previous` within `results_dir`; anything else is a path.
pub fn resolve(spec: &str, results_dir: &Path) -> Result<PathBuf> {
    let back = match spec {
        "latest" => 1,
        "previous" => 2,
        _ => return Ok(PathBuf::from(spec)),
    };
    let runs = run_dirs(results_dir).with_context(|| {
        format!(
            "`{spec}` names a run in RESULTS_DIR={}",
            results_dir.display()
        )
    })?;
    if runs.len() < back {
        bail!(
            "`{spec}` needs at least {back} run director{} in RESULTS_DIR={}, which holds {}",
            if back == 1 { "y" } else { "ies" },
            results_dir.display(),
            runs.len()
        );
    }
    Ok(runs[runs.len() - back].clone())
}

/// The run directories (holding run.json) directly inside `dir`, sorted by name.
fn run_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read directory {}", dir.display()))?;
    let mut runs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .filter(|p| p.join(RUN_FILE).is_file())
        .collect();
    runs.sort();
    Ok(runs)
}

/// One slice of a matrix: the results measured at `var=value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    pub var: String,
    pub value: String,
}

impl std::str::FromStr for Slice {
    type Err = anyhow::Error;

    /// `VAR=value`; a value of a setting that may vary is read in its canonical form (`1e3` is
    /// `1000`), as results record it.
    fn from_str(s: &str) -> Result<Slice> {
        let Some((var, value)) = s.split_once('=') else {
            bail!("{s:?}: expected VAR=value, e.g. KROXYLICIOUS_IMAGE=perf-tests/kroxylicious:dev");
        };
        let axis = crate::matrix::axis(var.trim(), &[value.to_string()])?;
        Ok(Slice {
            var: axis.var,
            value: axis.values[0].clone(),
        })
    }
}

/// Reads one side: a run directory, or a directory of run directories (pooled); with `slice`,
/// only the results at that value, matched without the setting.
pub fn load(dir: &Path, slice: Option<&Slice>) -> Result<Side> {
    if !dir.exists() {
        bail!("results directory {} does not exist", dir.display());
    }
    if !dir.is_dir() {
        bail!(
            "{} is not a directory (expected a results directory)",
            dir.display()
        );
    }
    let runs = if dir.join(RUN_FILE).is_file() {
        vec![dir.to_path_buf()]
    } else {
        let runs = run_dirs(dir)?;
        if runs.is_empty() {
            bail!(
                "{} is not a results directory: it holds no run.json, nor run directories that do",
                dir.display()
            );
        }
        runs
    };
    // The values of the slice's setting that other results have, for the error naming them.
    let mut seen: Vec<String> = Vec::new();
    let mut side = Side {
        dir: dir.to_path_buf(),
        runs: runs.clone(),
        runs_info: Vec::new(),
        scenarios: Vec::new(),
        rep_runs: Vec::new(),
        references: Vec::new(),
    };
    for (run_index, run) in runs.iter().enumerate() {
        side.runs_info.push(read_run_info(run)?);
        let scenarios = read_scenarios(run)?;
        if scenarios.is_empty() {
            bail!(
                "{} holds no scenario results (a <scenario>.json beside run.json)",
                run.display()
            );
        }
        for mut s in scenarios {
            if let Some(slice) = slice {
                let value = s.combination.remove(&slice.var);
                if value.as_ref() != Some(&slice.value) {
                    seen.extend(value.filter(|v| !seen.contains(v)));
                    continue;
                }
            }
            let key = s.label();
            if s.reference && !side.references.contains(&key) {
                side.references.push(key.clone());
            }
            let reps: Vec<Measurement> = s.all_measurements().into_iter().cloned().collect();
            let from = vec![run_index; reps.len()];
            match side.scenarios.iter().position(|(n, _)| *n == key) {
                Some(i) => {
                    side.scenarios[i].1.extend(reps);
                    side.rep_runs[i].extend(from);
                }
                None => {
                    side.scenarios.push((key, reps));
                    side.rep_runs.push(from);
                }
            }
        }
    }
    if let (Some(slice), true) = (slice, side.scenarios.is_empty()) {
        bail!(
            "{}: no result was measured at {}={} ({})",
            dir.display(),
            slice.var,
            slice.value,
            if seen.is_empty() {
                format!("{} does not vary there", slice.var)
            } else {
                format!("its values there: {}", seen.join(", "))
            }
        );
    }
    Ok(side)
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
pub struct Row {
    /// Scenario name.
    pub scenario: String,
    /// Metric name.
    pub metric: &'static str,
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
}

impl Row {
    fn verdict_label(&self) -> String {
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
pub struct Comparison {
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
pub fn compare(base: &Side, new: &Side, threshold_pct: f64) -> Comparison {
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
    warnings.extend(drift(base, new, &pairs, &decided));

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
struct Units<'a> {
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
fn run_medians(m: &Metric, reps: &[Measurement], runs: &[usize]) -> Vec<f64> {
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
struct Decides {
    /// Every repetition of both sides had a THROUGHPUT target.
    throttled: bool,
    /// Every repetition of both sides has latencies from the intended send times.
    intended: bool,
}

impl Decides {
    fn of(base: &[Measurement], new: &[Measurement]) -> Decides {
        let all = || base.iter().chain(new);
        Decides {
            throttled: all().all(|m| m.producer.target_rec_s > 0.0),
            intended: all().all(|m| m.producer.intended.is_some()),
        }
    }

    fn primary(self, m: &Metric) -> bool {
        metrics::decides(m, self.throttled, self.intended)
    }
}

/// The values of `m` over `reps`, leaving out repetitions that lack it.
fn values(m: &Metric, reps: &[Measurement]) -> Vec<f64> {
    reps.iter().map(m.get).filter(|v| !v.is_nan()).collect()
}

/// A metric's medians, change and uncorrected p-value, with the two sides' pooled standard
/// deviation; its level, detectable change and verdict are set once every row is known. `None`
/// when a side did not measure it.
fn measure_change(
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
        metric: m.name,
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
    };
    Some((row, pooled_sd(&b, &n)))
}

fn judge(row: &Row, significant: bool, threshold_pct: f64) -> Verdict {
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
struct Shifts(Vec<((usize, usize, u64), Option<f64>)>);

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
fn pooled_sd(a: &[f64], b: &[f64]) -> f64 {
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
fn references_moved(base: &Side, new: &Side, rows: &[Row], threshold_pct: f64) -> Vec<String> {
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
fn interleaving(base: &Side, new: &Side) -> Option<String> {
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
    if be >= ns && ne >= bs {
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

/// Warnings for primary metrics whose repetitions trend with time within a side (Mann-Kendall,
/// Holm over every trend tested, so a warning is itself unlikely to be a false alarm): the
/// machine's state changed while that side was measured.
fn drift(
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
fn or_unset<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or("unset".to_string(), T::to_string)
}

/// A named fact of a run record, as a person reads it.
type Fact<T> = (&'static str, fn(&T) -> String);

/// Host facts that change what is measured.
const COMPARED_HOST: [Fact<HostFacts>; 5] = [
    ("hostname", |h| h.hostname.clone()),
    ("cpus", |h| h.cpus.to_string()),
    ("memory_bytes", |h| or_unset(&h.memory_bytes)),
    ("arch", |h| h.arch.clone()),
    ("docker_engine_version", |h| {
        or_unset(&h.docker_engine_version)
    }),
];

/// One warning per run of `side` that ended early, naming its directory and why.
fn incomplete_runs(side: &Side) -> Vec<String> {
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

/// Warnings for incomplete runs, and for settings and host facts that differ between (or
/// within) the two sides.
fn differences(base: &Side, new: &Side) -> Vec<String> {
    let mut out = incomplete_runs(base);
    out.extend(incomplete_runs(new));
    let all = |side: &Side, f: &dyn Fn(&RunInfo) -> String| -> Vec<String> {
        let mut v: Vec<String> = side.runs_info.iter().map(f).collect();
        v.dedup();
        v
    };
    // Every setting that changes what is measured (the one table says which).
    for setting in SETTINGS.iter().filter(|s| s.measured) {
        let var = setting.var;
        let f = |i: &RunInfo| setting.value(&i.settings);
        let (b, n) = (all(base, &f), all(new, &f));
        if b != n {
            out.push(format!(
                "settings differ: {var} is {} in the base and {} in the new results",
                b.join(" / "),
                n.join(" / ")
            ));
        }
    }
    for (key, get) in COMPARED_HOST {
        let f = |i: &RunInfo| get(&i.host);
        let (b, n) = (all(base, &f), all(new, &f));
        if b != n {
            out.push(format!(
                "hosts differ: {key} is {} in the base and {} in the new results",
                b.join(" / "),
                n.join(" / ")
            ));
        }
    }
    out
}

impl Comparison {
    /// The primary rows judged regressions (secondary ones never fail a comparison).
    pub fn regressions(&self) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| r.primary && r.verdict == Verdict::Regression)
            .collect()
    }

    /// 1 when there is a regression, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.regressions().is_empty() {
            0
        } else {
            1
        }
    }

    fn primary_rows(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.primary)
    }

    /// The one-line conclusion.
    pub fn summary(&self) -> String {
        let regressions = self.regressions();
        let improvements = self
            .primary_rows()
            .filter(|r| r.verdict == Verdict::Improvement)
            .count();
        let (nb, nn) = self
            .rows
            .iter()
            .map(|r| r.n)
            .fold((0, 0), |acc, n| (acc.0.max(n.0), acc.1.max(n.1)));
        let by_run = self.primary_rows().any(|r| r.by_run);
        let unit = if by_run {
            "observations (a pooled run of several repetitions counts once, by its median)"
        } else {
            "repetitions"
        };
        let runs = format!(
            "{nb} base vs {nn} new {unit}; Holm over {} primary test{}",
            self.primary_tests,
            if self.primary_tests == 1 { "" } else { "s" }
        );
        let too_few = self.primary_rows().all(|r| r.verdict == Verdict::TooFew);
        let head = if !regressions.is_empty() {
            let list: Vec<String> = regressions
                .iter()
                .map(|r| format!("{} {} {}", r.scenario, r.metric, pct(r.change_pct)))
                .collect();
            format!(
                "{} significant regression{} beyond {}%: {}",
                regressions.len(),
                if regressions.len() == 1 { "" } else { "s" },
                self.threshold_pct,
                list.join(", ")
            )
        } else if too_few {
            let level = ALPHA / self.primary_tests.max(1) as f64;
            format!(
                "no regression can be claimed: with {} primary tests each side needs at least \
                 {} {} for any change to be significant",
                self.primary_tests,
                stats::repetitions_for(level),
                if by_run {
                    "observations"
                } else {
                    "repetitions"
                }
            )
        } else {
            format!("no significant regression beyond {}%", self.threshold_pct)
        };
        let blind: Vec<String> = self
            .primary_rows()
            .filter(|r| r.verdict == Verdict::NotDetectable)
            .map(|r| {
                format!(
                    "{} {} (needs {})",
                    r.scenario,
                    r.metric,
                    detectable(r.detectable_pct)
                )
            })
            .collect();
        let blind = if blind.is_empty() || too_few {
            String::new()
        } else {
            format!(
                "; a {}% change was not detectable at this spread for {}",
                self.threshold_pct,
                blind.join(", ")
            )
        };
        let improved = if improvements > 0 {
            format!(", {improvements} significant improvement(s)")
        } else {
            String::new()
        };
        format!("{head}{improved}{blind} ({runs})")
    }

    /// How the verdict was reached, in one paragraph.
    fn method(&self) -> String {
        let primary = if self.throttled && self.intended {
            "the producer's 99th latency percentile from the intended send times (where both \
             sides ran at a fixed THROUGHPUT; else its rate) and the consumer's rate"
        } else if self.throttled {
            "the producer's 99th latency percentile (where both sides ran at a fixed \
             THROUGHPUT; else its rate) and the consumer's rate"
        } else {
            "the producer's and the consumer's rate"
        };
        format!(
            "The verdict rests on {primary} per scenario: a regression is a two-sided \
             Mann-Whitney U test significant after Holm's correction over the {} primary tests \
             (at most a {:.0}% chance of any false alarm when nothing changed) and a change \
             beyond {}% in the worse direction. The other metrics are secondary: their p-values \
             are uncorrected and they never fail the comparison. Detectable is the smallest \
             change the repetitions would find 80% of the time at the spread both sides showed.{}",
            self.primary_tests,
            ALPHA * 100.0,
            self.threshold_pct,
            if self.rows.iter().any(|r| r.by_run) {
                " A side pooled runs of several repetitions each: those vary together (one \
                 run's repetitions share its broker), so each run's median is one observation, \
                 not each repetition; more runs of one repetition each give the test the most \
                 observations."
            } else {
                ""
            }
        )
    }

    /// The rows (all, or only the primary ones) as a table (title unused: the summary heads it).
    fn table(&self, primary_only: bool) -> TableData {
        TableData {
            title: "",
            columns: crate::report::strings(&COLUMNS),
            rows: self
                .rows
                .iter()
                .filter(|r| r.primary || !primary_only)
                .map(|r| self.cells(r))
                .collect(),
        }
    }

    fn cells(&self, r: &Row) -> Vec<String> {
        vec![
            r.scenario.clone(),
            r.metric.to_string(),
            if r.primary { "primary" } else { "secondary" }.into(),
            match r.better {
                Better::Higher => "higher".into(),
                Better::Lower => "lower".into(),
            },
            num(r.base),
            num(r.new),
            pct(r.change_pct),
            r.p.map_or("n/a".into(), |p| format!("{p:.3}")),
            detectable(r.detectable_pct),
            r.verdict_label(),
        ]
    }

    /// Markdown for a pull-request comment: marker, summary line, method, warnings, the primary
    /// metrics, then every metric folded.
    pub fn markdown(&self) -> String {
        let mut out = format!("{MARKER}\n**perf-tests compare**: {}\n\n", self.summary());
        out.push_str(&format!(
            "Base `{}`, new `{}`. {}\n\n",
            self.base.display(),
            self.new.display(),
            self.method()
        ));
        for w in &self.warnings {
            out.push_str(&format!("> **Warning:** {w}\n>\n"));
        }
        if !self.warnings.is_empty() {
            out.push('\n');
        }
        out.push_str(&markdown_body(&self.table(true)));
        let t = markdown_body(&self.table(false));
        out.push_str(&format!(
            "\n\n<details><summary>All metrics</summary>\n\n{t}\n\n</details>\n"
        ));
        out
    }

    /// A plain table for a terminal: summary line, warnings, every metric.
    pub fn plain(&self) -> String {
        let mut out = format!("{}\n", self.summary());
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out.push_str(&plain_body(&self.table(false)));
        out
    }
}

const COLUMNS: [&str; 10] = [
    "Scenario",
    "Metric",
    "Role",
    "Better",
    "Base",
    "New",
    "Change",
    "p",
    "Detectable",
    "Verdict",
];

/// A detectable change as the tables show it.
fn detectable(d: Option<f64>) -> String {
    match d {
        None => "none".into(),
        Some(d) if d.is_infinite() => "none".into(),
        Some(d) => format!("{d:.1}%"),
    }
}

fn num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn pct(c: Option<f64>) -> String {
    c.map_or("n/a".into(), |c| format!("{c:+.1}%"))
}

/// Output format of `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Markdown when stdout is not a terminal, else plain.
    Auto,
    /// Markdown for a pull-request comment.
    Markdown,
    /// A plain table.
    Plain,
}

/// Runs `compare`: resolves and loads both sides (each named as BASE and NEW are, with the
/// slice of a matrix it is limited to, if any), prints the comparison, returns the exit code
/// (0 no regression, 1 regression); errors are the caller's exit 2.
pub fn run(
    (base, base_slice): (&str, Option<&Slice>),
    (new, new_slice): (&str, Option<&Slice>),
    results_dir: &Path,
    threshold_pct: f64,
    format: Format,
    out: &mut dyn std::io::Write,
    is_terminal: bool,
) -> Result<i32> {
    if !(threshold_pct.is_finite() && threshold_pct >= 0.0) {
        bail!("--threshold {threshold_pct}: expected a percentage of 0 or more");
    }
    let base_dir = resolve(base, results_dir).context("BASE")?;
    let new_dir = resolve(new, results_dir).context("NEW")?;
    let b = load(&base_dir, base_slice).context("BASE")?;
    let n = load(&new_dir, new_slice).context("NEW")?;
    let c = compare(&b, &n, threshold_pct);
    if c.rows.is_empty() {
        bail!(
            "{} and {} have no scenario in common",
            base_dir.display(),
            new_dir.display()
        );
    }
    let markdown = match format {
        Format::Auto => !is_terminal,
        Format::Markdown => true,
        Format::Plain => false,
    };
    let text = if markdown { c.markdown() } else { c.plain() };
    out.write_all(text.as_bytes())
        .context("cannot write the comparison")?;
    Ok(c.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Settings;

    fn side(scale: &[f64]) -> Side {
        let base = crate::report::tests::sample();
        let scenarios = base
            .iter()
            .map(|r| {
                let reps = scale
                    .iter()
                    .map(|s| {
                        let mut m = r.measurement.clone();
                        m.producer.rate_rec_s *= s;
                        m.producer.p99_ms /= s;
                        m
                    })
                    .collect();
                (r.name.clone(), reps)
            })
            .collect();
        let info = RunInfo {
            settings: Settings {
                num_records: 1000,
                producer_properties: vec![("acks".into(), "all".into())],
                ..Settings::default()
            },
            host: HostFacts {
                hostname: "a".into(),
                cpus: 2,
                ..HostFacts::default()
            },
            ..crate::results::tests::info("c")
        };
        let rep_runs = vec![vec![0; scale.len()]; base.len()];
        Side {
            dir: PathBuf::from("x"),
            runs: vec![],
            runs_info: vec![info],
            scenarios,
            rep_runs,
            references: vec!["01-no-proxy-baseline".into()],
        }
    }

    fn verdicts(c: &Comparison, v: Verdict) -> Vec<(&str, &'static str)> {
        c.rows
            .iter()
            .filter(|r| r.verdict == v)
            .map(|r| (r.scenario.as_str(), r.metric))
            .collect()
    }

    #[test]
    fn a_slowdown_is_a_regression_in_the_right_direction() {
        let base = side(&[1.0, 1.01, 0.99, 1.02, 0.98]);
        let new = side(&[0.8, 0.81, 0.79, 0.82, 0.78]);
        let c = compare(&base, &new, 5.0);
        // Two scenarios, two primary metrics each: Holm over 4 tests, 5 a side suffice.
        assert_eq!(c.primary_tests, 4);
        let reg: Vec<(&str, &str)> = c
            .regressions()
            .iter()
            .map(|r| (r.scenario.as_str(), r.metric))
            .collect();
        assert_eq!(
            reg,
            [
                ("01-no-proxy-baseline", "Rate rec/s"),
                ("02-no-filters", "Rate rec/s"),
            ]
        );
        // The latency moved too: reported, but secondary, so it does not fail the comparison.
        let p99 = c.rows.iter().find(|r| r.metric == "Percentile99").unwrap();
        assert!(!p99.primary);
        assert_eq!(p99.verdict, Verdict::Regression);
        assert!(c.plain().contains("regression (secondary)"));
        assert_eq!(c.exit_code(), 1);
        // The other way round the same changes are improvements.
        let c = compare(&new, &base, 5.0);
        assert_eq!(c.exit_code(), 0);
        assert_eq!(verdicts(&c, Verdict::Improvement).len(), 4);
        assert_eq!(
            c.primary_rows()
                .filter(|r| r.verdict == Verdict::Improvement)
                .count(),
            2
        );
    }

    /// `side(scale)` whose repetitions came from runs `runs` (one per repetition).
    fn side_of_runs(scale: &[f64], runs: &[usize]) -> Side {
        let mut s = side(scale);
        for r in &mut s.rep_runs {
            *r = runs.to_vec();
        }
        s
    }

    #[test]
    fn pooled_runs_of_several_repetitions_are_compared_run_by_run() {
        // Base: 2 runs of 3; new: 2 runs of 3, each of its runs 20% slower as a whole. Six
        // repetitions against six separate completely, but only 2 runs against 2 differ: that
        // is no evidence (it may be each run's broker), so nothing can be claimed.
        let runs = [0, 0, 0, 1, 1, 1];
        let base = side_of_runs(&[1.0, 1.01, 0.99, 1.02, 1.03, 1.01], &runs);
        let new = side_of_runs(&[0.8, 0.81, 0.79, 0.82, 0.83, 0.81], &runs);
        let c = compare(&base, &new, 5.0);
        assert_eq!(c.exit_code(), 0, "{}", c.plain());
        let rate = c.rows.iter().find(|r| r.metric == "Rate rec/s").unwrap();
        assert!(rate.by_run);
        assert_eq!(rate.n, (2, 2));
        assert_eq!(rate.verdict, Verdict::TooFew);
        assert!(
            c.summary()
                .contains("2 base vs 2 new observations (a pooled run of several repetitions counts once, by its median)"),
            "{}",
            c.summary()
        );
        assert!(c
            .markdown()
            .contains("each run's median is one observation"));
        // The same repetitions from one run each: six independent observations a side, and
        // the slowdown is found.
        let runs: Vec<usize> = (0..6).collect();
        let base = side_of_runs(&[1.0, 1.01, 0.99, 1.02, 1.03, 1.01], &runs);
        let new = side_of_runs(&[0.8, 0.81, 0.79, 0.82, 0.83, 0.81], &runs);
        let c = compare(&base, &new, 5.0);
        assert_eq!(c.exit_code(), 1, "{}", c.plain());
        assert!(c.rows.iter().all(|r| !r.by_run));
        // Runs of one repetition on one side and of several on the other: that side by run.
        let new = side_of_runs(&[0.8, 0.81, 0.79, 0.82, 0.83, 0.81], &[0, 0, 1, 1, 2, 2]);
        let c = compare(&base, &new, 5.0);
        assert!(c.rows.iter().all(|r| r.by_run && r.n == (6, 3)));
        // One run a side keeps its repetitions.
        let one = side_of_runs(&[0.8, 0.81, 0.79, 0.82, 0.83, 0.81], &[0; 6]);
        let c = compare(&base, &one, 5.0);
        assert!(c.rows.iter().all(|r| !r.by_run && r.n == (6, 6)));
    }

    #[test]
    fn small_changes_and_few_repetitions_are_not_regressions() {
        // Significant but within the threshold.
        let c = compare(
            &side(&[1.0, 1.001, 0.999, 1.002, 0.998]),
            &side(&[0.97, 0.971, 0.969, 0.972, 0.968]),
            5.0,
        );
        assert_eq!(c.exit_code(), 0);
        let rate = c.rows.iter().find(|r| r.metric == "Rate rec/s").unwrap();
        assert!(rate.p.unwrap() < rate.level);
        assert_eq!(rate.verdict, Verdict::Unchanged);
        // Three against three can never be significant: n/a, never a claim.
        let c = compare(&side(&[1.0, 1.0, 1.0]), &side(&[0.5, 0.5, 0.5]), 5.0);
        assert_eq!(c.exit_code(), 0);
        assert!(c
            .primary_rows()
            .all(|r| r.verdict == Verdict::TooFew && r.detectable_pct.is_none()));
        assert!(
            c.summary().starts_with(
                "no regression can be claimed: with 4 primary tests each side needs at least 5 \
                 repetitions"
            ),
            "{}",
            c.summary()
        );
        assert!(c.plain().contains("n/a: too few repetitions"));
    }

    #[test]
    fn many_tests_at_once_do_not_add_up_to_a_false_alarm() {
        // One producer rate lower in 5 of 6 new repetitions: p = 0.015 on its own, a
        // "regression" at 0.05, but not after Holm over the 4 primary tests (needs < 0.0125).
        let base = side(&[1.0, 1.02, 0.98, 1.01, 0.99, 1.03]);
        let new = side(&[0.9, 0.91, 0.92, 0.93, 0.94, 1.005]);
        let c = compare(&base, &new, 5.0);
        let rate = c.rows.iter().find(|r| r.metric == "Rate rec/s").unwrap();
        let p = rate.p.unwrap();
        assert!(p < ALPHA && p > ALPHA / 4.0, "{p}");
        assert_ne!(rate.verdict, Verdict::Regression);
        assert_eq!(c.exit_code(), 0, "{}", c.plain());
    }

    #[test]
    fn a_spread_wider_than_the_threshold_says_a_change_could_not_be_seen() {
        // Producer rates spread by about 20%: a 5% change would go unseen.
        let noisy = [1.0, 1.3, 0.8, 1.2, 0.7, 1.1];
        let c = compare(&side(&noisy), &side(&noisy), 5.0);
        assert_eq!(c.exit_code(), 0);
        let rate = c.rows.iter().find(|r| r.metric == "Rate rec/s").unwrap();
        assert_eq!(rate.verdict, Verdict::NotDetectable);
        let d = rate.detectable_pct.unwrap();
        assert!(d > 20.0 && d < 100.0, "{d}");
        assert!(
            c.summary()
                .contains("a 5% change was not detectable at this spread for 01-no-proxy-baseline Rate rec/s (needs"),
            "{}",
            c.summary()
        );
        // The consumer rates did not vary at all: any change is detectable there.
        let consumer = c
            .rows
            .iter()
            .find(|r| r.metric == "Consumed rec/s")
            .unwrap();
        assert_eq!(consumer.detectable_pct, Some(0.0));
        assert_eq!(consumer.verdict, Verdict::Unchanged);
        assert!(c.plain().contains("not detectable at this spread"));
    }

    #[test]
    fn sides_measured_one_after_the_other_and_drifting_repetitions_are_warned_about() {
        let base = side(&[1.0; 6]);
        let mut new = side(&[1.0, 0.98, 0.96, 0.94, 0.92, 0.9]);
        new.runs = vec![PathBuf::from("n1")];
        new.runs_info[0].started_at = "2025-01-02T04:00:00Z".into();
        new.runs_info[0].ended_at = "2025-01-02T04:10:00Z".into();
        let c = compare(&base, &new, 5.0);
        let not_interleaved = c
            .warnings
            .iter()
            .find(|w| w.starts_with("the sides were not interleaved"))
            .unwrap_or_else(|| panic!("{:?}", c.warnings));
        assert!(
            not_interleaved.contains("the new from 2025-01-02 04:00:00 to 2025-01-02 04:10:00"),
            "{not_interleaved}"
        );
        let drift: Vec<&String> = c
            .warnings
            .iter()
            .filter(|w| w.starts_with("drift"))
            .collect();
        // The producer rate of both scenarios fell steadily (tau -1, p = 0.0028 each).
        assert_eq!(drift.len(), 2, "{drift:?}");
        assert!(
            drift[0].starts_with(
                "drift: 01-no-proxy-baseline Rate rec/s fell steadily over the new side's 6 \
                 repetitions in time order (1 run; Kendall's tau -1.00"
            ),
            "{}",
            drift[0]
        );
        // The reference scenario's rate fell 5% (median 0.95 against 1.0): it moved by
        // itself.
        let moved = c
            .warnings
            .iter()
            .find(|w| w.starts_with("the reference scenario"))
            .unwrap_or_else(|| panic!("{:?}", c.warnings));
        assert!(
            moved.starts_with(
                "the reference scenario 01-no-proxy-baseline (it measures none of the path under \
                 test) moved by itself: Rate rec/s -5.0%"
            ),
            "{moved}"
        );
        // Overlapping sides (pooled runs alternating in time) are interleaved.
        new.runs_info[0].started_at = base.runs_info[0].started_at.clone();
        let c = compare(&base, &new, 5.0);
        assert!(!c.warnings.iter().any(|w| w.contains("interleaved")));
    }

    #[test]
    fn throttled_runs_are_decided_by_the_latency_from_intended_send_times() {
        let mut base = side(&[1.0, 1.01, 0.99, 1.02, 0.98]);
        let mut new = side(&[1.0, 1.01, 0.99, 1.02, 0.98]);
        for s in [&mut base, &mut new] {
            s.runs_info[0].settings.throughput = 1000;
            for (_, reps) in &mut s.scenarios {
                for m in reps {
                    m.producer.target_rec_s = 1000.0;
                }
            }
        }
        let primary = |c: &Comparison| {
            let mut p: Vec<&str> = c
                .rows
                .iter()
                .filter(|r| r.primary)
                .map(|r| r.metric)
                .collect();
            p.sort();
            p.dedup();
            p
        };
        // Measured by a tool without them: the tool's own 99th percentile decides.
        let c = compare(&base, &new, 5.0);
        assert_eq!(primary(&c), ["Consumed rec/s", "Percentile99"]);
        assert!(c.rows.iter().all(|r| !r.metric.starts_with("Intended")));
        // Both sides have them: a stall only they show is the regression.
        let with = |side: &mut Side, p99: f64| {
            for (_, reps) in &mut side.scenarios {
                for (i, m) in reps.iter_mut().enumerate() {
                    let p = p99 + i as f64;
                    m.producer.intended = Some(crate::model::LatencySummary {
                        avg_lat_ms: p / 2.0,
                        max_lat_ms: p * 1.2,
                        p50_ms: p / 2.0,
                        p95_ms: p * 0.9,
                        p99_ms: p,
                        p999_ms: p * 1.1,
                        p9999_ms: p * 1.15,
                    });
                }
            }
        };
        with(&mut base, 10.0);
        with(&mut new, 1000.0);
        let c = compare(&base, &new, 5.0);
        assert_eq!(primary(&c), ["Consumed rec/s", "Intended P99 ms"]);
        let reg: Vec<&str> = c.regressions().iter().map(|r| r.metric).collect();
        assert_eq!(reg, ["Intended P99 ms", "Intended P99 ms"]);
        assert!(c
            .markdown()
            .contains("99th latency percentile from the intended send times"));
    }

    #[test]
    fn differing_settings_and_hosts_are_warned_about() {
        let base = side(&[1.0]);
        let mut new = side(&[1.0]);
        new.runs_info[0].settings.num_records = 5000;
        new.runs_info[0].settings.producer_properties = vec![("acks".into(), "1".into())];
        new.runs_info[0].host.hostname = "b".into();
        let c = compare(&base, &new, 5.0);
        assert_eq!(
            c.warnings,
            [
                "settings differ: NUM_RECORDS is 1000 in the base and 5000 in the new results",
                "settings differ: PRODUCER_PROPERTIES is acks=all in the base and acks=1 in the new results",
                "hosts differ: hostname is a in the base and b in the new results",
            ]
        );
        assert!(c
            .markdown()
            .contains("> **Warning:** settings differ: NUM_RECORDS"));
    }

    #[test]
    fn a_difference_in_any_setting_that_changes_what_is_measured_is_warned_about() {
        for setting in crate::settings::SETTINGS {
            let base = side(&[1.0]);
            let mut new = side(&[1.0]);
            let other = match setting.var {
                "MODE" => "end-to-end",
                "DRIVER" => "kafka-tools",
                "PRODUCER_PROPERTIES" => "acks=1",
                "SERVICES_CPUSET" | "WORKLOAD_CPUSET" => "0",
                "TEST" | "COMMIT_ID" | "SCENARIOS" | "RESULTS_DIR" => "elsewhere",
                _ if setting.var.ends_with("IMAGE") => "x:y",
                _ => "7",
            };
            setting.set(&mut new.runs_info[0].settings, other).unwrap();
            let warnings = compare(&base, &new, 5.0).warnings;
            let warned: Vec<&String> = warnings
                .iter()
                .filter(|w| w.starts_with("settings differ: "))
                .collect();
            if setting.measured {
                assert_eq!(warned.len(), 1, "{}: {warned:?}", setting.var);
                assert!(
                    warned[0].starts_with(&format!("settings differ: {} is ", setting.var)),
                    "{warned:?}"
                );
            } else {
                assert!(warned.is_empty(), "{}: {warned:?}", setting.var);
            }
        }
    }

    #[test]
    fn markdown_starts_with_the_marker_and_summary_and_folds_the_details() {
        let c = compare(&side(&[1.0; 5]), &side(&[1.0; 5]), 5.0);
        let md = c.markdown();
        let mut lines = md.lines();
        assert_eq!(lines.next(), Some(MARKER));
        assert!(lines
            .next()
            .unwrap()
            .starts_with("**perf-tests compare**: no significant regression beyond 5%"));
        assert!(md.contains("<details><summary>All metrics</summary>"));
        assert!(md.trim_end().ends_with("</details>"));
        // The primary metrics shown, then every metric folded.
        assert_eq!(
            md.matches("| 01-no-proxy-baseline |").count(),
            // (the latencies from intended send times and end to end were not measured: no
            // rows)
            2 + metrics::compared()
                .filter(|m| {
                    !matches!(
                        m.table,
                        metrics::Table::Intended
                            | metrics::Table::EndToEnd
                            | metrics::Table::CatchUp
                    )
                })
                .count()
        );
        assert!(md.contains("Holm's correction over the 4 primary tests"));
    }

    /// A run with a matrix over KROXYLICIOUS_IMAGE (a, b) and RECORD_SIZE (100, 1000), image b
    /// producing at `b_scale` of a's rate, written as a results directory.
    fn matrix_run(root: &Path, b_scale: f64) -> PathBuf {
        let mut results = Vec::new();
        for image in ["a", "b"] {
            for size in ["100", "1000"] {
                for r in crate::report::tests::sample() {
                    let mut r = r.clone();
                    r.combination
                        .insert("KROXYLICIOUS_IMAGE".into(), image.into());
                    r.combination.insert("RECORD_SIZE".into(), size.into());
                    let scale = if image == "b" { b_scale } else { 1.0 };
                    // A little spread, in no order (no trend).
                    r.repetitions = [1.0, 1.004, 0.998, 1.002, 0.996, 1.006]
                        .into_iter()
                        .map(|f| {
                            let mut m = r.measurement.clone();
                            m.producer.rate_rec_s *= scale * f;
                            m.consumer.consumed_rec_s *= f;
                            m
                        })
                        .collect();
                    results.push(r);
                }
            }
        }
        crate::export::write_run(root, &crate::results::tests::info("c"), &results).unwrap()
    }

    #[test]
    fn rows_match_by_scenario_and_combination_and_a_slice_compares_two_values_of_one_run() {
        let root = tempfile::tempdir().unwrap();
        let run = matrix_run(root.path(), 0.5);
        let whole = load(&run, None).unwrap();
        assert_eq!(whole.scenarios.len(), 8);
        assert_eq!(
            whole.scenarios[0].0,
            "01-no-proxy-baseline [KROXYLICIOUS_IMAGE=a, RECORD_SIZE=100]"
        );
        // A run against itself: every row finds its partner.
        let c = compare(&whole, &whole, 5.0);
        assert_eq!(c.rows.iter().filter(|r| r.primary).count(), 16);
        assert!(c.regressions().is_empty());

        let slice = |s: &str| s.parse::<Slice>().unwrap();
        let a = load(&run, Some(&slice("KROXYLICIOUS_IMAGE=a"))).unwrap();
        let b = load(&run, Some(&slice("KROXYLICIOUS_IMAGE=b"))).unwrap();
        let names: Vec<&str> = a.scenarios.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "01-no-proxy-baseline [RECORD_SIZE=100]",
                "01-no-proxy-baseline [RECORD_SIZE=1000]",
                "02-no-filters [RECORD_SIZE=100]",
                "02-no-filters [RECORD_SIZE=1000]"
            ]
        );
        let c = compare(&a, &b, 5.0);
        let regressed: Vec<&str> = c
            .regressions()
            .iter()
            .map(|r| r.scenario.as_str())
            .collect();
        assert_eq!(regressed.len(), 4, "{}", c.plain());
        assert!(c.regressions().iter().all(|r| r.metric == "Rate rec/s"));
        // Both sides are the same run: measured interleaved, no warning says otherwise.
        assert!(
            !c.warnings.iter().any(|w| w.contains("interleaved")),
            "{:?}",
            c.warnings
        );

        // A value given in another form is the value the results hold.
        assert_eq!(slice("RECORD_SIZE=1e2").value, "100");
        let err = load(&run, Some(&slice("KROXYLICIOUS_IMAGE=c")))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no result was measured at KROXYLICIOUS_IMAGE=c")
                && err.contains("its values there: a, b"),
            "{err}"
        );
        let err = load(&run, Some(&slice("NUM_RECORDS=5")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("NUM_RECORDS does not vary there"), "{err}");
        assert!("REPEAT=2".parse::<Slice>().is_err());
        assert!("KROXYLICIOUS_IMAGE".parse::<Slice>().is_err());
    }

    #[test]
    fn every_metric_has_a_sensible_direction() {
        assert_eq!(metrics::compared().count(), 28);
        for m in metrics::compared() {
            let expected = if m.name.contains("Lat")
                || m.name.starts_with("Percentile")
                || m.name.ends_with(" ms")
                || m.name.ends_with(" s")
            {
                Better::Lower
            } else {
                Better::Higher
            };
            assert_eq!(m.better, Some(expected), "{}", m.name);
        }
    }
}
