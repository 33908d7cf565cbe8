//! `perf-tests compare BASE NEW`: per scenario and metric, the base and new medians, the change,
//! and whether the change is significant (two-sided Mann-Whitney U over the repetitions,
//! p < 0.05) and beyond a threshold. A significant change beyond the threshold in the worse
//! direction is a regression, which makes the command exit 1.
//!
//! BASE and NEW are results directories of single runs (holding `run.json`), directories holding
//! several run directories (their repetitions are pooled), or `latest` / `previous`: the last
//! and second-to-last run directory of RESULTS_DIR by name.

use std::path::{Path, PathBuf};

use crate::metrics::{self, Better, Metric};
use crate::model::Measurement;
use crate::results::{read_run_info, read_scenarios, HostFacts, RunInfo, RUN_FILE};
use crate::settings::Settings;
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
    /// Scenario name -> every repetition, in the order scenarios first appear.
    pub scenarios: Vec<(String, Vec<Measurement>)>,
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

/// Reads one side: a run directory, or a directory of run directories (pooled).
pub fn load(dir: &Path) -> Result<Side> {
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
    let mut side = Side {
        dir: dir.to_path_buf(),
        runs: runs.clone(),
        runs_info: Vec::new(),
        scenarios: Vec::new(),
    };
    for run in &runs {
        side.runs_info.push(read_run_info(run)?);
        let scenarios = read_scenarios(run)?;
        if scenarios.is_empty() {
            bail!(
                "{} holds no scenario results (a <scenario>.json beside run.json)",
                run.display()
            );
        }
        for s in scenarios {
            let reps: Vec<Measurement> = s.all_measurements().into_iter().cloned().collect();
            match side.scenarios.iter_mut().find(|(n, _)| *n == s.name) {
                Some((_, all)) => all.extend(reps),
                None => side.scenarios.push((s.name, reps)),
            }
        }
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
    /// Neither significant nor beyond the threshold in a way that counts.
    Unchanged,
    /// Too few repetitions for any change to be significant.
    Unknown,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::Unchanged => "",
            Verdict::Unknown => "n/a",
        }
    }
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
    /// Median over the base repetitions.
    pub base: f64,
    /// Median over the new repetitions.
    pub new: f64,
    /// (new - base) / base in percent; `None` when base is 0.
    pub change_pct: Option<f64>,
    /// Two-sided p-value; `None` when the repetitions cannot show significance.
    pub p: Option<f64>,
    /// Repetitions on each side.
    pub n: (usize, usize),
    /// The conclusion.
    pub verdict: Verdict,
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
    /// Every metric of every scenario both sides have.
    pub rows: Vec<Row>,
    /// Settings or hosts that differ, scenarios on one side only.
    pub warnings: Vec<String>,
}

/// Compares two sides metric by metric.
pub fn compare(base: &Side, new: &Side, threshold_pct: f64) -> Comparison {
    let mut warnings = differences(base, new);
    let mut rows = Vec::new();
    for (name, b) in &base.scenarios {
        let Some((_, n)) = new.scenarios.iter().find(|(s, _)| s == name) else {
            warnings.push(format!("scenario {name} is only in the base results"));
            continue;
        };
        for m in metrics::compared() {
            rows.push(compare_metric(name, m, b, n, threshold_pct));
        }
    }
    for (name, _) in &new.scenarios {
        if !base.scenarios.iter().any(|(s, _)| s == name) {
            warnings.push(format!("scenario {name} is only in the new results"));
        }
    }
    Comparison {
        base: base.dir.clone(),
        new: new.dir.clone(),
        threshold_pct,
        rows,
        warnings,
    }
}

fn compare_metric(
    scenario: &str,
    m: &Metric,
    base: &[Measurement],
    new: &[Measurement],
    threshold_pct: f64,
) -> Row {
    let better = m.better.unwrap_or(Better::Higher);
    let b: Vec<f64> = base.iter().map(m.get).collect();
    let n: Vec<f64> = new.iter().map(m.get).collect();
    let (bm, nm) = (stats::median(&b), stats::median(&n));
    let change_pct = (bm != 0.0).then(|| (nm - bm) / bm.abs() * 100.0);
    let p = stats::can_be_significant(b.len(), n.len())
        .then(|| stats::mann_whitney_u(&b, &n).map(|r| r.p))
        .flatten();
    let verdict = match (p, change_pct) {
        (None, _) => Verdict::Unknown,
        (Some(p), Some(c)) if p < ALPHA && c.abs() > threshold_pct => {
            let worse = match better {
                Better::Higher => c < 0.0,
                Better::Lower => c > 0.0,
            };
            if worse {
                Verdict::Regression
            } else {
                Verdict::Improvement
            }
        }
        _ => Verdict::Unchanged,
    };
    Row {
        scenario: scenario.to_string(),
        metric: m.name,
        better,
        base: bm,
        new: nm,
        change_pct,
        p,
        n: (b.len(), n.len()),
        verdict,
    }
}

/// A property list as `k=v k=v`.
fn pairs(props: &[(String, String)]) -> String {
    props
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn or_unset<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or("unset".to_string(), T::to_string)
}

/// A named fact of a run record, as a person reads it.
type Fact<T> = (&'static str, fn(&T) -> String);

/// Settings that change what is measured, by their variable names.
const COMPARED_SETTINGS: [Fact<Settings>; 8] = [
    ("NUM_RECORDS", |s| s.num_records.to_string()),
    ("RECORD_SIZE", |s| s.record_size.to_string()),
    ("PRODUCER_PROPERTIES", |s| pairs(&s.producer_properties)),
    ("THROUGHPUT", |s| s.throughput.to_string()),
    ("WARM_UP_NUM_RECORDS_POST_BROKER_START", |s| {
        s.warm_up_post_broker_start.to_string()
    }),
    ("WARM_UP_NUM_RECORDS_PRE_TEST", |s| {
        s.warm_up_pre_test.to_string()
    }),
    ("KAFKA_IMAGE", |s| s.kafka_image.clone()),
    ("KROXYLICIOUS_IMAGE", |s| s.kroxylicious_image.clone()),
];

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
    for (var, get) in COMPARED_SETTINGS {
        let f = |i: &RunInfo| get(&i.settings);
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
    /// The rows judged regressions.
    pub fn regressions(&self) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| r.verdict == Verdict::Regression)
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

    /// The one-line conclusion.
    pub fn summary(&self) -> String {
        let regressions = self.regressions();
        let improvements = self
            .rows
            .iter()
            .filter(|r| r.verdict == Verdict::Improvement)
            .count();
        let (nb, nn) = self
            .rows
            .iter()
            .map(|r| r.n)
            .fold((0, 0), |acc, n| (acc.0.max(n.0), acc.1.max(n.1)));
        let runs = format!("{nb} base vs {nn} new repetitions");
        let undecidable = !self.rows.is_empty() && self.rows.iter().all(|r| r.p.is_none());
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
        } else if undecidable {
            format!(
                "no significance test possible (too few repetitions; at least {} on each side \
                 are needed for p < {ALPHA}), no regression claimed",
                stats::min_repetitions()
            )
        } else {
            format!("no significant regression beyond {}%", self.threshold_pct)
        };
        let improved = if improvements > 0 {
            format!(", {improvements} significant improvement(s)")
        } else {
            String::new()
        };
        format!("{head}{improved} ({runs})")
    }

    /// Every row as a table (title unused: the summary line heads it).
    fn table(&self) -> TableData {
        TableData {
            title: "",
            columns: COLUMNS.to_vec(),
            rows: self.rows.iter().map(|r| self.cells(r)).collect(),
        }
    }

    fn cells(&self, r: &Row) -> Vec<String> {
        vec![
            r.scenario.clone(),
            r.metric.to_string(),
            match r.better {
                Better::Higher => "higher".into(),
                Better::Lower => "lower".into(),
            },
            num(r.base),
            num(r.new),
            pct(r.change_pct),
            r.p.map_or("n/a".into(), |p| format!("{p:.3}")),
            r.verdict.label().to_string(),
        ]
    }

    /// Markdown for a pull-request comment: marker, summary line, warnings, then the details.
    pub fn markdown(&self) -> String {
        let mut out = format!("{MARKER}\n**perf-tests compare**: {}\n\n", self.summary());
        out.push_str(&format!(
            "Base `{}`, new `{}`; a regression is significant (Mann-Whitney U, two-sided, \
             p < {ALPHA}) and beyond {}% in the worse direction.\n\n",
            self.base.display(),
            self.new.display(),
            self.threshold_pct
        ));
        for w in &self.warnings {
            out.push_str(&format!("> **Warning:** {w}\n>\n"));
        }
        if !self.warnings.is_empty() {
            out.push('\n');
        }
        let t = markdown_body(&self.table());
        out.push_str(&format!(
            "<details><summary>All metrics</summary>\n\n{t}\n\n</details>\n"
        ));
        out
    }

    /// A plain table for a terminal: summary line, warnings, table.
    pub fn plain(&self) -> String {
        let mut out = format!("{}\n", self.summary());
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out.push_str(&plain_body(&self.table()));
        out
    }
}

const COLUMNS: [&str; 8] = [
    "Scenario", "Metric", "Better", "Base", "New", "Change", "p", "Verdict",
];

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

/// Runs `compare`: resolves and loads both sides, prints the comparison, returns the exit code
/// (0 no regression, 1 regression); errors are the caller's exit 2.
pub fn run(
    base: &str,
    new: &str,
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
    let b = load(&base_dir).context("BASE")?;
    let n = load(&new_dir).context("NEW")?;
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
        Side {
            dir: PathBuf::from("x"),
            runs: vec![],
            runs_info: vec![info],
            scenarios,
        }
    }

    #[test]
    fn a_slowdown_is_a_regression_in_the_right_direction() {
        let base = side(&[1.0, 1.01, 0.99, 1.02, 0.98]);
        let new = side(&[0.8, 0.81, 0.79, 0.82, 0.78]);
        let c = compare(&base, &new, 5.0);
        let reg: Vec<(&str, &str)> = c
            .regressions()
            .iter()
            .map(|r| (r.scenario.as_str(), r.metric))
            .collect();
        assert_eq!(
            reg,
            [
                ("01-no-proxy-baseline", "Rate rec/s"),
                ("01-no-proxy-baseline", "Percentile99"),
                ("02-no-filters", "Rate rec/s"),
                ("02-no-filters", "Percentile99"),
            ]
        );
        assert_eq!(c.exit_code(), 1);
        // The other way round the same changes are improvements.
        let c = compare(&new, &base, 5.0);
        assert_eq!(c.exit_code(), 0);
        assert_eq!(
            c.rows
                .iter()
                .filter(|r| r.verdict == Verdict::Improvement)
                .count(),
            4
        );
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
        assert!(rate.p.unwrap() < ALPHA);
        assert_eq!(rate.verdict, Verdict::Unchanged);
        // Three against three can never be significant: n/a, never a claim.
        let c = compare(&side(&[1.0, 1.0, 1.0]), &side(&[0.5, 0.5, 0.5]), 5.0);
        assert_eq!(c.exit_code(), 0);
        assert!(c
            .rows
            .iter()
            .all(|r| r.verdict == Verdict::Unknown && r.p.is_none()));
        assert!(
            c.summary().contains("no significance test possible"),
            "{}",
            c.summary()
        );
        assert!(c.plain().contains("n/a"));
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
        assert_eq!(
            md.matches("| 01-no-proxy-baseline |").count(),
            metrics::compared().count()
        );
    }

    #[test]
    fn every_metric_has_a_sensible_direction() {
        assert_eq!(metrics::compared().count(), 14);
        for m in metrics::compared() {
            let expected = if m.name.contains("Lat")
                || m.name.starts_with("Percentile")
                || m.name.ends_with(" ms")
            {
                Better::Lower
            } else {
                Better::Higher
            };
            assert_eq!(m.better, Some(expected), "{}", m.name);
        }
    }
}
