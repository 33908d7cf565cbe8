//! `tables.md`: the result tables as Markdown, linking the charts.

use anyhow::Result;

use super::Exporter;
use crate::model::run::RunInfo;
use crate::model::ScenarioResult;
use crate::present::report::{tables, warnings};
use crate::present::table::markdown;

/// The Markdown tables.
pub(crate) struct Markdown;

/// All tables as Markdown, then any warnings as a list (`p99_limit_ms`: the run's
/// P99_LIMIT_MS, for the sweep table).
pub(crate) fn render(results: &[ScenarioResult], p99_limit_ms: Option<u64>) -> String {
    let mut out = tables(results, p99_limit_ms)
        .iter()
        .map(markdown)
        .collect::<Vec<_>>()
        .join("\n");
    let warnings = warnings(results);
    if !warnings.is_empty() {
        out.push_str("\n**Warnings**\n\n");
        for w in warnings {
            out.push_str(&format!("- {w}\n"));
        }
    }
    out
}

impl Exporter for Markdown {
    fn files(&self, info: &RunInfo, results: &[ScenarioResult]) -> Result<Vec<(String, String)>> {
        let charts = super::svg::FILE;
        let mut md = format!(
            "{}\n[![Throughput and latency per scenario]({charts})]({charts})\n",
            render(results, info.settings.p99_limit_ms)
        );
        if results.iter().any(|r| !r.measurement.series.is_empty()) {
            let series = super::series::FILE;
            md.push_str(&format!(
                "\n[![Every second of the run]({series})]({series})\n"
            ));
        }
        Ok(vec![("tables.md".to_string(), md)])
    }
}
