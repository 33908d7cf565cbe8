//! A comparison (`crate::analysis::compare`) as Markdown (for a pull-request comment), as a
//! plain table, and as an HTML page with a chart of each primary metric (`report`).

use crate::analysis::compare::{pct, Comparison, Row, Verdict};
pub(crate) mod report;

use crate::accounting::stats::{self, SIGNIFICANCE as ALPHA};
use crate::analysis::metrics::Better;
use crate::present::table::{markdown_body, plain_body, TableData};

/// First line of every Markdown comparison, so a pull-request comment can be found and updated.
pub(crate) const MARKER: &str = "<!-- perf-tests -->";

// The comparison's views: the data and its judgement are `analysis::compare`'s.

/// The one-line conclusion.
pub(crate) fn summary(c: &Comparison) -> String {
    let regressions = c.regressions();
    let improvements = c
        .primary_rows()
        .filter(|r| r.verdict == Verdict::Improvement)
        .count();
    let (nb, nn) = c
        .rows
        .iter()
        .map(|r| r.n)
        .fold((0, 0), |acc, n| (acc.0.max(n.0), acc.1.max(n.1)));
    let by_run = c.primary_rows().any(|r| r.by_run);
    let unit = if by_run {
        "observations (a pooled run of several repetitions counts once, by its median)"
    } else {
        "repetitions"
    };
    let runs = format!(
        "{nb} base vs {nn} new {unit}; Holm over {} primary test{}",
        c.primary_tests,
        if c.primary_tests == 1 { "" } else { "s" }
    );
    let too_few = c.primary_rows().all(|r| r.verdict == Verdict::TooFew);
    let head = if !regressions.is_empty() {
        let list: Vec<String> = regressions
            .iter()
            .map(|r| format!("{} {} {}", r.scenario, r.metric, pct(r.change_pct)))
            .collect();
        format!(
            "{} significant regression{} beyond {}%: {}",
            regressions.len(),
            if regressions.len() == 1 { "" } else { "s" },
            c.threshold_pct,
            list.join(", ")
        )
    } else if too_few {
        let level = ALPHA / c.primary_tests.max(1) as f64;
        format!(
            "no regression can be claimed: with {} primary tests each side needs at least \
             {} {} for any change to be significant",
            c.primary_tests,
            stats::repetitions_for(level),
            if by_run {
                "observations"
            } else {
                "repetitions"
            }
        )
    } else {
        format!("no significant regression beyond {}%", c.threshold_pct)
    };
    let blind: Vec<String> = c
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
            c.threshold_pct,
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
pub(crate) fn method(c: &Comparison) -> String {
    let primary = if c.throttled && c.intended {
        "the producer's 99th latency percentile from the intended send times (where both \
         sides ran at a fixed THROUGHPUT; else its rate) and the consumer's rate"
    } else if c.throttled {
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
        c.primary_tests,
        ALPHA * 100.0,
        c.threshold_pct,
        if c.rows.iter().any(|r| r.by_run) {
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
fn table(c: &Comparison, primary_only: bool) -> TableData {
    TableData {
        title: "",
        columns: crate::present::report::strings(&COLUMNS),
        rows: c
            .rows
            .iter()
            .filter(|r| r.primary || !primary_only)
            .map(cells)
            .collect(),
    }
}

pub(crate) fn cells(r: &Row) -> Vec<String> {
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
pub(crate) fn markdown(c: &Comparison) -> String {
    let mut out = format!("{MARKER}\n**perf-tests compare**: {}\n\n", summary(c));
    out.push_str(&format!(
        "Base `{}`, new `{}`. {}\n\n",
        c.base.display(),
        c.new.display(),
        method(c)
    ));
    for w in &c.warnings {
        out.push_str(&format!("> **Warning:** {w}\n>\n"));
    }
    if !c.warnings.is_empty() {
        out.push('\n');
    }
    out.push_str(&markdown_body(&table(c, true)));
    let t = markdown_body(&table(c, false));
    out.push_str(&format!(
        "\n\n<details><summary>All metrics</summary>\n\n{t}\n\n</details>\n"
    ));
    out
}

/// A plain table for a terminal: summary line, warnings, every metric.
pub(crate) fn plain(c: &Comparison) -> String {
    let mut out = format!("{}\n", summary(c));
    for w in &c.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out.push_str(&plain_body(&table(c, false)));
    out
}

pub(crate) const COLUMNS: [&str; 10] = [
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
pub(crate) fn detectable(d: Option<f64>) -> String {
    match d {
        None => "none".into(),
        Some(d) if d.is_infinite() => "none".into(),
        Some(d) => format!("{d:.1}%"),
    }
}

pub(crate) fn num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}
