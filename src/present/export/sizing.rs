//! `sizing.json` and `sizing.md`: a sizing run's statement (see `crate::analysis::sizing`), computed from
//! its results; nothing for any other run.

use anyhow::Result;

use super::Exporter;
use crate::accounting::stats::Interval;
use crate::analysis::metrics::Id;
use crate::analysis::sizing::{analyse, Sizing};
use crate::analysis::sweep;
use crate::model::run::RunInfo;
use crate::model::ScenarioResult;
use crate::present::report::strings;
use crate::present::table::{markdown, plain, TableData};

/// The sizing files.
pub(crate) struct SizingFiles;

/// The sizing of a sizing run; `None` for any other run.
pub(crate) fn of_run(info: &RunInfo, results: &[ScenarioResult]) -> Option<Sizing> {
    let request = info.sizing.as_ref()?;
    Some(analyse(results, request, info.settings.p99_limit_ms))
}

/// The sizing tables as plain text, then its warnings: what a sizing run prints.
pub(crate) fn render(sizing: &Sizing) -> String {
    let mut out: String = tables(sizing).iter().map(plain).collect();
    for w in &sizing.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

/// A sizing's summary table and its table by rate.
pub(crate) fn tables(sizing: &Sizing) -> Vec<TableData> {
    let cores = format!("Cores at {} MB/s", sizing.request.traffic_mb_s);
    let summary = TableData {
        title: "Sizing",
        columns: strings(&[
            "Name",
            Id::PathCost.name(),
            "n",
            "Produce mc per MB/s",
            "Consume mc per MB/s",
            "Marginal mc per MB/s",
            "Idle cores",
            &cores,
            "Highest sustained rec/s",
            "Not sustained rec/s",
        ]),
        rows: sizing
            .lines
            .iter()
            .map(|l| {
                vec![
                    l.name.clone(),
                    interval(l.coefficient, 2),
                    l.coefficient.map_or(String::new(), |c| c.n.to_string()),
                    interval(l.produce, 2),
                    interval(l.consume, 2),
                    interval(l.marginal, 2),
                    interval(l.idle_cores, 3),
                    interval(l.cores, 3),
                    l.sustained_rec_s.map_or("none".into(), |r| r.to_string()),
                    l.ceiling
                        .as_ref()
                        .map_or("none measured (raise --to)".into(), |(r, _)| r.to_string()),
                ]
            })
            .collect(),
    };
    let by_rate = TableData {
        title: "Sizing by Rate",
        columns: strings(&[
            "Name",
            sweep::VAR,
            Id::PathCost.name(),
            "Against",
            "+P50 ms",
            "+P99 ms",
            "Host steal %",
        ]),
        rows: sizing
            .lines
            .iter()
            .flat_map(|l| {
                l.rates.iter().map(|r| {
                    vec![
                        l.name.clone(),
                        r.rate_rec_s.to_string(),
                        interval(r.coefficient, 2),
                        r.against.clone().unwrap_or_default(),
                        interval(r.added_p50_ms, 2),
                        interval(r.added_p99_ms, 2),
                        r.host_steal_percent
                            .map_or("n/a".into(), |v| format!("{v:.1}")),
                    ]
                })
            })
            .collect(),
    };
    vec![summary, by_rate]
}

/// `mean [low, high]`, or `n/a`.
fn interval(i: Option<Interval>, decimals: usize) -> String {
    i.map_or("n/a".into(), |i| {
        format!(
            "{:.d$} [{:.d$}, {:.d$}]",
            i.mean,
            i.low,
            i.high,
            d = decimals
        )
    })
}

impl Exporter for SizingFiles {
    fn files(&self, info: &RunInfo, results: &[ScenarioResult]) -> Result<Vec<(String, String)>> {
        let Some(sizing) = of_run(info, results) else {
            return Ok(Vec::new());
        };
        let mut md = tables(&sizing)
            .iter()
            .map(markdown)
            .collect::<Vec<_>>()
            .join("\n");
        for w in &sizing.warnings {
            md.push_str(&format!("\n- {w}"));
        }
        Ok(vec![
            super::json::pretty(crate::present::results::SIZING_FILE.into(), &sizing)?,
            ("sizing.md".into(), md + "\n"),
        ])
    }
}
