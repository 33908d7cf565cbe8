//! `tables.md`: the result tables as Markdown, linking the charts.

use anyhow::Result;

use super::Exporter;
use crate::model::ScenarioResult;
use crate::report::{tables, warnings};
use crate::results::RunInfo;
use crate::table::markdown;

/// The Markdown tables.
pub struct Markdown;

/// All tables as Markdown, then any warnings as a list.
pub fn render(results: &[ScenarioResult]) -> String {
    let mut out = tables(results)
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
    fn files(&self, _info: &RunInfo, results: &[ScenarioResult]) -> Result<Vec<(String, String)>> {
        let charts = super::svg::FILE;
        let md = format!(
            "{}\n[![Throughput and latency per scenario]({charts})]({charts})\n",
            render(results)
        );
        Ok(vec![("tables.md".to_string(), md)])
    }
}
