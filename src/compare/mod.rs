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

use std::path::Path;

use anyhow::{bail, Context, Result};

mod load;
pub mod pr;

use crate::analysis::compare::compare;
use crate::present::compare as view;
pub(crate) use load::Slice;
use load::{load, resolve};

/// Default regression threshold in percent.
pub(crate) const DEFAULT_THRESHOLD_PCT: f64 = 5.0;

/// Output format of `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Markdown when stdout is not a terminal, else plain.
    Auto,
    /// Markdown for a pull-request comment.
    Markdown,
    /// A plain table.
    Plain,
}

/// What `compare` is asked: both sides (each named as BASE and NEW are, with the slice of a
/// matrix it is limited to, if any), where `latest` and `previous` are looked for, the
/// threshold, the format, and where to write the HTML report, if anywhere.
pub(crate) struct Request<'a> {
    pub base: (&'a str, Option<&'a Slice>),
    pub new: (&'a str, Option<&'a Slice>),
    pub results_dir: &'a Path,
    pub threshold_pct: f64,
    pub format: Format,
    pub report: Option<&'a Path>,
}

/// Runs `compare`: resolves and loads both sides, prints the comparison (and writes its report
/// when asked), returns the exit code (0 no regression, 1 regression); errors are the caller's
/// exit 2.
pub(crate) fn run(req: &Request, out: &mut dyn std::io::Write, is_terminal: bool) -> Result<i32> {
    let ((base, base_slice), (new, new_slice)) = (req.base, req.new);
    let (results_dir, threshold_pct, format) = (req.results_dir, req.threshold_pct, req.format);
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
    if let Some(path) = req.report {
        view::report::write(&c, path)?;
    }
    let text = if markdown {
        view::markdown(&c)
    } else {
        view::plain(&c)
    };
    out.write_all(text.as_bytes())
        .context("cannot write the comparison")?;
    Ok(c.exit_code())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::accounting::stats::SIGNIFICANCE as ALPHA;
    use crate::analysis::compare::{Comparison, Side, Verdict};
    use crate::analysis::metrics::{self, Better, Id};
    use crate::model::run::{HostFacts, NodeFacts, RunInfo};
    use crate::present::compare::MARKER;
    use crate::settings::Settings;

    fn side(scale: &[f64]) -> Side {
        let base = crate::present::report::tests::sample();
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
            nodes: vec![node("a", &[])],
            ..crate::present::results::tests::info("c")
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

    /// A machine named `name` with `roles`, of one kind of hardware.
    fn node(name: &str, roles: &[&str]) -> NodeFacts {
        NodeFacts {
            name: name.into(),
            roles: roles.iter().map(|r| r.to_string()).collect(),
            cpu_model: Some("AMD EPYC 7763 64-Core Processor".into()),
            cpus: 2,
            memory_bytes: 25_000_000_000,
            kernel: "6.12.48+deb13-amd64".into(),
            os: "Debian GNU/Linux 13 (trixie)".into(),
            arch: "x86_64".into(),
            engine_version: "26.1.5+dfsg1".into(),
        }
    }

    fn verdicts(c: &Comparison, v: Verdict) -> Vec<(&str, &'static str)> {
        c.rows
            .iter()
            .filter(|r| r.verdict == v)
            .map(|r| (r.scenario.as_str(), r.metric.name()))
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
            .map(|r| (r.scenario.as_str(), r.metric.name()))
            .collect();
        assert_eq!(
            reg,
            [
                ("01-no-proxy-baseline", "Rate rec/s"),
                ("02-no-filters", "Rate rec/s"),
            ]
        );
        // The latency moved too: reported, but secondary, so it does not fail the comparison.
        let p99 = c.rows.iter().find(|r| r.metric == Id::P99Ms).unwrap();
        assert!(!p99.primary);
        assert_eq!(p99.verdict, Verdict::Regression);
        assert!(view::plain(&c).contains("regression (secondary)"));
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

    /// `side(&[1.0; n])` at a fixed `rate`, the proxy of 02 using `cpu_s[i]` CPU seconds in
    /// each phase of repetition i (01 has no path of its own).
    fn costly(rate: f64, cpu_s: &[f64]) -> Side {
        use crate::accounting::cost::{PhaseCost, Role, ServiceCost};
        let mut s = side(&vec![1.0; cpu_s.len()]);
        for (name, reps) in &mut s.scenarios {
            for (m, cpu) in reps.iter_mut().zip(cpu_s) {
                m.producer.target_rec_s = rate;
                m.producer.rate_rec_s = rate;
                let service = |name: &str, role, cpu_s| ServiceCost {
                    service: name.into(),
                    role,
                    cpu_s,
                    rx_bytes: 0,
                    tx_bytes: 0,
                    gc: None,
                    threads: None,
                };
                let mut services = vec![service("kafka", Role::RunWide, 5.0)];
                if name.as_str() == "02-no-filters" {
                    services.push(service("proxy", Role::Path, *cpu));
                }
                m.cost = ["produce", "consume"]
                    .map(|phase| PhaseCost {
                        phase: phase.into(),
                        records: 100_000,
                        record_bytes: 100_000_000,
                        seconds: 20.0,
                        start_unix_s: None,
                        host_steal_percent: None,
                        services: services.clone(),
                    })
                    .to_vec();
            }
        }
        s
    }

    #[test]
    fn a_host_that_stole_more_under_one_side_is_warned_of() {
        let spread = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0];
        let stolen = |steal: Option<f64>| {
            let mut s = costly(5000.0, &spread);
            for (_, reps) in &mut s.scenarios {
                for m in reps {
                    for p in &mut m.cost {
                        p.host_steal_percent = steal;
                    }
                }
            }
            s
        };
        let warned = |b, n| {
            compare(&stolen(b), &stolen(n), 5.0)
                .warnings
                .into_iter()
                .filter(|w| w.starts_with("the hosts' CPU was stolen unevenly"))
                .collect::<Vec<_>>()
        };
        let w = warned(Some(5.0), Some(30.0));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("5% of it under the base's") && w[0].contains("30% under the new's"));
        // Within the gap, or without figures on a side, nothing to say.
        assert!(warned(Some(20.0), Some(28.0)).is_empty());
        assert!(warned(None, Some(30.0)).is_empty());
    }

    #[test]
    fn at_one_fixed_rate_the_paths_cpu_per_mb_s_decides() {
        let spread = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0];
        let base = costly(5000.0, &spread);
        // The proxy burns 10% more CPU at the rate it still holds.
        let dearer: Vec<f64> = spread.iter().map(|c| c * 1.1).collect();
        let c = compare(&base, &costly(5000.0, &dearer), 5.0);
        let reg: Vec<(&str, &str)> = c
            .regressions()
            .iter()
            .map(|r| (r.scenario.as_str(), r.metric.name()))
            .collect();
        assert_eq!(reg, [("02-no-filters", Id::PathCost.name())]);
        let row = c.rows.iter().find(|r| r.metric == Id::PathCost).unwrap();
        // 1 s over 100 MB each phase: 10 millicores per MB/s, then 11.
        assert!(
            (row.base - 10.0).abs() < 1e-9 && (row.new - 11.0).abs() < 1e-9,
            "{row:?}"
        );
        // The baseline has no path of its own: no cost row.
        assert!(!c
            .rows
            .iter()
            .any(|r| r.scenario == "01-no-proxy-baseline" && r.metric == Id::PathCost));
        // The same CPU is no regression.
        assert_eq!(compare(&base, &costly(5000.0, &spread), 5.0).exit_code(), 0);
        // At another rate the cost is reported, not judged, and the warning names THROUGHPUT.
        let c = compare(&base, &costly(6000.0, &dearer), 5.0);
        let row = c.rows.iter().find(|r| r.metric == Id::PathCost).unwrap();
        assert!(!row.primary);
        assert!(
            c.warnings.iter().any(|w| w.starts_with(
                "02-no-filters: THROUGHPUT is 5000 in the \
                 base and 6000 in the new results"
            )),
            "{:?}",
            c.warnings
        );
        // Unthrottled, the cost is secondary (it depends on the rate reached).
        let mut free = costly(5000.0, &dearer);
        for (_, reps) in &mut free.scenarios {
            reps.iter_mut().for_each(|m| m.producer.target_rec_s = -1.0);
        }
        let c = compare(&free, &free.clone(), 5.0);
        assert!(c
            .rows
            .iter()
            .filter(|r| r.metric == Id::PathCost)
            .all(|r| !r.primary));
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
        assert_eq!(c.exit_code(), 0, "{}", view::plain(&c));
        let rate = c.rows.iter().find(|r| r.metric == Id::RateRecS).unwrap();
        assert!(rate.by_run);
        assert_eq!(rate.n, (2, 2));
        assert_eq!(rate.verdict, Verdict::TooFew);
        assert!(
            view::summary(&c)
                .contains("2 base vs 2 new observations (a pooled run of several repetitions counts once, by its median)"),
            "{}",
            view::summary(&c)
        );
        assert!(view::markdown(&c).contains("each run's median is one observation"));
        // The same repetitions from one run each: six independent observations a side, and
        // the slowdown is found.
        let runs: Vec<usize> = (0..6).collect();
        let base = side_of_runs(&[1.0, 1.01, 0.99, 1.02, 1.03, 1.01], &runs);
        let new = side_of_runs(&[0.8, 0.81, 0.79, 0.82, 0.83, 0.81], &runs);
        let c = compare(&base, &new, 5.0);
        assert_eq!(c.exit_code(), 1, "{}", view::plain(&c));
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
        let rate = c.rows.iter().find(|r| r.metric == Id::RateRecS).unwrap();
        assert!(rate.p.unwrap() < rate.level);
        assert_eq!(rate.verdict, Verdict::Unchanged);
        // Three against three can never be significant: n/a, never a claim.
        let c = compare(&side(&[1.0, 1.0, 1.0]), &side(&[0.5, 0.5, 0.5]), 5.0);
        assert_eq!(c.exit_code(), 0);
        assert!(c
            .primary_rows()
            .all(|r| r.verdict == Verdict::TooFew && r.detectable_pct.is_none()));
        assert!(
            view::summary(&c).starts_with(
                "no regression can be claimed: with 4 primary tests each side needs at least 5 \
                 repetitions"
            ),
            "{}",
            view::summary(&c)
        );
        assert!(view::plain(&c).contains("n/a: too few repetitions"));
    }

    #[test]
    fn many_tests_at_once_do_not_add_up_to_a_false_alarm() {
        // One producer rate lower in 5 of 6 new repetitions: p = 0.015 on its own, a
        // "regression" at 0.05, but not after Holm over the 4 primary tests (needs < 0.0125).
        let base = side(&[1.0, 1.02, 0.98, 1.01, 0.99, 1.03]);
        let new = side(&[0.9, 0.91, 0.92, 0.93, 0.94, 1.005]);
        let c = compare(&base, &new, 5.0);
        let rate = c.rows.iter().find(|r| r.metric == Id::RateRecS).unwrap();
        let p = rate.p.unwrap();
        assert!(p < ALPHA && p > ALPHA / 4.0, "{p}");
        assert_ne!(rate.verdict, Verdict::Regression);
        assert_eq!(c.exit_code(), 0, "{}", view::plain(&c));
    }

    #[test]
    fn a_spread_wider_than_the_threshold_says_a_change_could_not_be_seen() {
        // Producer rates spread by about 20%: a 5% change would go unseen.
        let noisy = [1.0, 1.3, 0.8, 1.2, 0.7, 1.1];
        let c = compare(&side(&noisy), &side(&noisy), 5.0);
        assert_eq!(c.exit_code(), 0);
        let rate = c.rows.iter().find(|r| r.metric == Id::RateRecS).unwrap();
        assert_eq!(rate.verdict, Verdict::NotDetectable);
        let d = rate.detectable_pct.unwrap();
        assert!(d > 20.0 && d < 100.0, "{d}");
        assert!(
            view::summary(&c)
                .contains("a 5% change was not detectable at this spread for 01-no-proxy-baseline Rate rec/s (needs"),
            "{}",
            view::summary(&c)
        );
        // The consumer rates did not vary at all: any change is detectable there.
        let consumer = c
            .rows
            .iter()
            .find(|r| r.metric == Id::ConsumedRecS)
            .unwrap();
        assert_eq!(consumer.detectable_pct, Some(0.0));
        assert_eq!(consumer.verdict, Verdict::Unchanged);
        assert!(view::plain(&c).contains("not detectable at this spread"));
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
        // Back to back: the new side starting in the second the base ended (times are whole
        // seconds) is one after the other too.
        let mut touching = side(&[1.0; 6]);
        touching.runs_info[0].started_at = base.runs_info[0].ended_at.clone();
        touching.runs_info[0].ended_at = "2025-01-02T03:10:00Z".into();
        assert!(
            compare(&base, &touching, 5.0)
                .warnings
                .iter()
                .any(|w| w.starts_with("the sides were not interleaved")),
            "{} then {}",
            base.runs_info[0].ended_at,
            touching.runs_info[0].started_at
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
            s.runs_info[0].settings.throughput =
                crate::settings::rate::Rate::per_second(1000).unwrap();
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
                .map(|r| r.metric.name())
                .collect();
            p.sort();
            p.dedup();
            p
        };
        // Measured by a tool without them: the tool's own 99th percentile decides.
        let c = compare(&base, &new, 5.0);
        assert_eq!(primary(&c), ["Consumed rec/s", "Percentile99"]);
        assert!(c
            .rows
            .iter()
            .all(|r| !r.metric.name().starts_with("Intended")));
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
        let reg: Vec<Id> = c.regressions().iter().map(|r| r.metric).collect();
        assert_eq!(reg, [Id::IntendedP99Ms, Id::IntendedP99Ms]);
        assert!(view::markdown(&c).contains("99th latency percentile from the intended send times"));
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
        assert!(view::markdown(&c).contains("> **Warning:** settings differ: NUM_RECORDS"));
    }

    #[test]
    fn containers_on_other_machines_or_hardware_are_warned_about_by_role() {
        let swarm = |names: [&str; 3]| {
            let mut side = side(&[1.0]);
            side.runs_info[0].nodes = vec![
                node(names[0], &["broker"]),
                node(names[1], &["proxy"]),
                node(names[2], &["load"]),
            ];
            side
        };
        // Like machines under other names: only where the containers ran differs.
        let c = compare(&swarm(["a1", "a2", "a3"]), &swarm(["b1", "b2", "b3"]), 5.0);
        assert_eq!(
            c.warnings,
            [
                "machines differ: the containers ran on a1 (broker), a2 (proxy), a3 (load) in the \
              base and on b1 (broker), b2 (proxy), b3 (load) in the new results"
            ]
        );
        // Another CPU on the proxy's node, another kernel on every node.
        let base = swarm(["a1", "a2", "a3"]);
        let mut new = swarm(["a1", "a2", "a3"]);
        new.runs_info[0].nodes[1].cpu_model = Some("Intel(R) Xeon(R) Platinum 8370C".into());
        for n in &mut new.runs_info[0].nodes {
            n.kernel = "6.1.0-40-amd64".into();
        }
        assert_eq!(
            compare(&base, &new, 5.0).warnings,
            [
                "machines differ: cpu_model is AMD EPYC 7763 64-Core Processor in the base and \
                 AMD EPYC 7763 64-Core Processor (broker), Intel(R) Xeon(R) Platinum 8370C \
                 (proxy), AMD EPYC 7763 64-Core Processor (load) in the new results",
                "machines differ: kernel is 6.12.48+deb13-amd64 in the base and \
                 6.1.0-40-amd64 in the new results",
            ]
        );
        // One engine against a swarm of its like: only where the containers ran differs.
        let c = compare(&side(&[1.0]), &swarm(["a1", "a2", "a3"]), 5.0);
        assert_eq!(
            c.warnings,
            [
                "machines differ: the containers ran on a in the base and on a1 (broker), a2 \
              (proxy), a3 (load) in the new results"
            ]
        );
        // One engine against another with fewer CPUs.
        let mut new = side(&[1.0]);
        new.runs_info[0].nodes[0].cpus = 4;
        assert_eq!(
            compare(&side(&[1.0]), &new, 5.0).warnings,
            ["machines differ: cpus is 2 in the base and 4 in the new results"]
        );
        // Results that did not record them: said once.
        let mut old = side(&[1.0]);
        old.runs_info[0].nodes.clear();
        old.runs = vec![PathBuf::from("results/old")];
        assert_eq!(
            compare(&old, &side(&[1.0]), 5.0).warnings,
            [
                "the machines the containers ran on are not recorded in results/old (results of \
              an older layout), so a difference of hardware cannot be told"
            ]
        );
        // Results that all lack them compare as results of that layout always did.
        assert_eq!(compare(&old, &old, 5.0).warnings, Vec::<String>::new());
    }

    #[test]
    fn a_difference_in_any_setting_that_changes_what_is_measured_is_warned_about() {
        for setting in crate::settings::SETTINGS {
            let base = side(&[1.0]);
            let mut new = side(&[1.0]);
            let other = crate::settings::table::another_value(setting);
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
        let md = view::markdown(&c);
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
                            | metrics::Table::Cost
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
                for r in crate::present::report::tests::sample() {
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
        crate::present::export::write_run(
            root,
            &crate::present::results::tests::info("c"),
            &results,
        )
        .unwrap()
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
        assert_eq!(regressed.len(), 4, "{}", view::plain(&c));
        assert!(c.regressions().iter().all(|r| r.metric == Id::RateRecS));
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
        assert_eq!(metrics::compared().count(), 32);
        for m in metrics::compared() {
            // Latencies, times and costs: less is better.
            let expected = if m.name.contains("Lat")
                || m.name.contains(" mc per ")
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
