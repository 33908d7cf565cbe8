//! `ab.md`: a paired run (`perf-tests ab`) as a pull-request comment: the verdict in one line,
//! what each side was and how it was measured, the verdict table, and every other table folded.

use std::fmt::Write as _;

use anyhow::Result;

use super::Exporter;
use crate::analysis::pair::Metric;
use crate::model::pair::Verdict;
use crate::model::run::RunInfo;
use crate::model::ScenarioResult;

/// The file a paired run's comment is written to.
pub(crate) const FILE: &str = "ab.md";

/// The comment of a paired run.
pub(crate) struct Ab;

impl Exporter for Ab {
    fn files(&self, info: &RunInfo, results: &[ScenarioResult]) -> Result<Vec<(String, String)>> {
        if !results.iter().any(|r| r.pair.is_some()) {
            return Ok(Vec::new());
        }
        Ok(vec![(FILE.to_string(), render(info, results))])
    }
}

/// The comment: a headline (worse, better, or nothing found, on how many paths), the sides, the
/// settings that make the measurement, the verdict table, each path's detectable change, and
/// every table of the run in a folded section.
pub(crate) fn render(info: &RunInfo, results: &[ScenarioResult]) -> String {
    let paired: Vec<&ScenarioResult> = results.iter().filter(|r| r.pair.is_some()).collect();
    let s = &info.settings;
    let mut out = String::from("### perf-tests ab: side B against side A\n\n");
    let _ = writeln!(out, "{}\n", headline(&paired, s.pair_threshold));
    facts(&mut out, info, &paired);
    out.push('\n');
    if let Some(table) = crate::present::report::pair_table(results) {
        out.push_str(&crate::present::table::markdown_body(&table));
    }
    let _ = write!(
        out,
        "\n<details><summary>Every table of the run</summary>\n\n{}\n</details>\n",
        super::markdown::render(results, s.p99_limit_ms)
    );
    out
}

/// The comment's first line: side B worse, or better, beyond `threshold` percent on which
/// paths and metrics, or no difference found.
fn headline(paired: &[&ScenarioResult], threshold: u64) -> String {
    let verdicts = |wanted: Verdict| -> Vec<String> {
        paired
            .iter()
            .flat_map(|r| {
                let pair = r.pair.as_ref().expect("paired");
                Metric::ALL
                    .into_iter()
                    .filter(move |m| pair.ratio(*m).and_then(|x| x.verdict) == Some(wanted))
                    .map(move |m| format!("{} {}", r.label(), m.name()))
            })
            .collect()
    };
    let (worse, better) = (verdicts(Verdict::Higher), verdicts(Verdict::Lower));
    if !worse.is_empty() {
        format!(
            ":red_circle: **Side B is worse** beyond {}%: {}",
            threshold,
            worse.join(", ")
        )
    } else if !better.is_empty() {
        format!(
            ":green_circle: **Side B is better** beyond {}%: {}",
            threshold,
            better.join(", ")
        )
    } else {
        format!(
            ":white_circle: **No difference found** beyond {}% on {} path{}",
            threshold,
            paired.len(),
            if paired.len() == 1 { "" } else { "s" }
        )
    }
}

/// What the comment's reader needs before the table: the sides, whether one path compared
/// side A with itself, how the pairs were measured, the smallest change they find, and what
/// went wrong (a failed path check, a run ended early).
fn facts(out: &mut String, info: &RunInfo, paired: &[&ScenarioResult]) {
    let s = &info.settings;
    if let Some(sides) = &info.sides {
        let _ = writeln!(out, "- Side A: {}", sides.a.describe());
        let _ = writeln!(out, "- Side B: {}", sides.b.describe());
    }
    let alike: Vec<String> = paired
        .iter()
        .filter(|r| r.pair.as_ref().is_some_and(|p| p.alike))
        .map(|r| r.label())
        .collect();
    if !alike.is_empty() {
        let _ = writeln!(
            out,
            "- Side B is side A as it is in {}: an A/A comparison",
            alike.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "- {} pairs of {} phase{} each, every phase {} records of {} bytes a side at {} rec/s \
         a side; commit `{}`, {} to {}",
        s.repeat,
        s.pair_phases,
        if s.pair_phases == 1 { "" } else { "s" },
        s.num_records,
        s.record_size,
        s.throughput,
        if info.commit_id.is_empty() {
            "unknown"
        } else {
            &info.commit_id
        },
        info.started_at,
        info.ended_at
    );
    let detectable: Vec<String> = paired
        .iter()
        .filter_map(|r| {
            let d = r.pair.as_ref()?.cpu.as_ref()?.detectable_percent?;
            Some(format!("{} {d:.1}%", r.label()))
        })
        .collect();
    if !detectable.is_empty() {
        let _ = writeln!(
            out,
            "- Smallest change of the path's CPU these pairs find (80% power): {}",
            detectable.join(", ")
        );
    }
    let failed: Vec<String> = paired
        .iter()
        .filter(|r| r.path_check_failed())
        .map(|r| r.label())
        .collect();
    if !failed.is_empty() {
        let _ = writeln!(
            out,
            "- :warning: The path check failed in {}: those rows do not measure the path \
             they name",
            failed.join(", ")
        );
    }
    if let Some(why) = &info.incomplete {
        let _ = writeln!(out, "- :warning: The run ended early: {why}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::pair::{Pair, PairPhase, PairResult};

    fn phase(pair: usize, ratio: f64) -> PairPhase {
        PairPhase {
            pair,
            cpu_a_s: 1.0,
            cpu_b_s: ratio,
            mc_per_mb_s_a: 10.0,
            mc_per_mb_s_b: 10.0 * ratio,
            cpu_ratio: ratio,
            rest_mc_per_mb_s_a: 8.0,
            rest_mc_per_mb_s_b: 8.0 * ratio,
            p50_a_ms: 2.0,
            p50_b_ms: 2.0,
            p99_a_ms: 5.0,
            p99_b_ms: 5.0,
            rate_a: 1000.0,
            rate_b: 1000.0,
        }
    }

    /// The sample's second row paired: its CPU `ratios` over four pairs, its latencies alike.
    fn paired(ratios: &[f64], alike: bool) -> Vec<ScenarioResult> {
        let mut results = crate::present::report::tests::sample();
        let phases: Vec<PairPhase> = ratios
            .iter()
            .enumerate()
            .map(|(i, r)| phase(i + 1, *r))
            .collect();
        let pair = Pair {
            bootstrap: "kroxylicious:9092".into(),
            network: "default-b".into(),
            a: vec!["kroxylicious".into()],
            b: vec!["kroxylicious-b".into()],
        };
        let (mut result, _) = PairResult::of(&pair, phases.into_iter().map(Ok).collect(), 1, 5);
        result.alike = alike;
        results[1].pair = Some(result);
        results
    }

    fn info() -> RunInfo {
        let mut info = crate::present::results::tests::info("abc1234");
        info.settings.pair_threshold = 5;
        info.settings.pair_phases = 1;
        info.settings.repeat = 4;
        info.settings.throughput = crate::settings::rate::Rate::per_second(15000).unwrap();
        info.sides = Some(crate::settings::sides::Sides {
            b: crate::settings::sides::Overrides {
                variables: vec![("KROXYLICIOUS_IMAGE".into(), "my/kroxylicious:dev".into())],
                ..Default::default()
            },
            ..Default::default()
        });
        info
    }

    #[test]
    fn a_comment_leads_with_the_verdict_and_folds_the_tables() {
        let worse = render(&info(), &paired(&[1.10, 1.12, 1.09, 1.11], false));
        let lines: Vec<&str> = worse.lines().collect();
        assert_eq!(lines[0], "### perf-tests ab: side B against side A");
        assert_eq!(
            lines[2],
            ":red_circle: **Side B is worse** beyond 5%: 02-no-filters Path mc per MB/s, \
             02-no-filters Path rest mc per MB/s"
        );
        assert!(worse.contains("- Side A: as written\n"), "{worse}");
        assert!(
            worse.contains("- Side B: KROXYLICIOUS_IMAGE=my/kroxylicious:dev\n"),
            "{worse}"
        );
        assert!(
            worse.contains("4 pairs of 1 phase each") && worse.contains("commit `abc1234`"),
            "{worse}"
        );
        // The verdict table is Markdown: a header, its rule, a row per metric of the path.
        let cells = |l: &str| -> Vec<String> {
            let inner = l.trim().trim_start_matches('|').trim_end_matches('|');
            inner.split('|').map(|c| c.trim().to_string()).collect()
        };
        let at = lines
            .iter()
            .position(|l| cells(l) == crate::present::report::PAIR_COLUMNS)
            .expect(&worse);
        assert!(lines[at + 1].starts_with("|---"), "{worse}");
        let rows: Vec<&&str> = lines[at + 2..]
            .iter()
            .take_while(|l| l.starts_with('|'))
            .collect();
        assert_eq!(rows.len(), Metric::ALL.len(), "{worse}");
        let first = cells(rows[0]);
        assert_eq!(first[..2], ["02-no-filters", "Path mc per MB/s"], "{worse}");
        assert_eq!(first[7], "B higher", "{worse}");
        let rest = cells(rows[1]);
        assert_eq!(
            rest[..2],
            ["02-no-filters", "Path rest mc per MB/s"],
            "{worse}"
        );
        assert_eq!(rest[7], "B higher", "{worse}");
        // Every table of the run, folded after it.
        let folded = worse.split("<details>").nth(1).expect(&worse);
        assert!(folded.contains("Producer") && folded.ends_with("</details>\n"));

        let clean = render(&info(), &paired(&[0.99, 1.01, 1.0, 1.02], true));
        assert!(
            clean.contains(":white_circle: **No difference found** beyond 5% on 1 path\n"),
            "{clean}"
        );
        assert!(
            clean.contains("Side B is side A as it is in 02-no-filters: an A/A comparison"),
            "{clean}"
        );
        assert!(clean.contains("| 02-no-filters (A/A) "), "{clean}");
        let better = render(&info(), &paired(&[0.8, 0.82, 0.79, 0.81], false));
        assert!(
            better.contains("**Side B is better** beyond 5%"),
            "{better}"
        );
        // Only a paired run has a comment.
        let unpaired = crate::present::report::tests::sample();
        assert!(Ab.files(&info(), &unpaired).unwrap().is_empty());
    }
}
