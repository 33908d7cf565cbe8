//! `tables.txt`: the result tables as the run prints them.

use anyhow::Result;

use super::Exporter;
use crate::model::run::RunInfo;
use crate::model::ScenarioResult;
use crate::present::report::{tables, warnings};
use crate::present::table::plain;

/// The plain-text tables.
pub(crate) struct Text;

/// All tables as plain text, then any warnings: what the run prints and `tables.txt` holds
/// (`p99_limit_ms`: the run's P99_LIMIT_MS, for the sweep table).
pub(crate) fn render(results: &[ScenarioResult], p99_limit_ms: Option<u64>) -> String {
    let mut out: String = tables(results, p99_limit_ms).iter().map(plain).collect();
    let warnings = warnings(results);
    if !warnings.is_empty() {
        out.push_str("Warnings\n");
        for w in warnings {
            out.push_str(&format!("{w}\n"));
        }
    }
    out
}

impl Exporter for Text {
    fn files(&self, info: &RunInfo, results: &[ScenarioResult]) -> Result<Vec<(String, String)>> {
        let text = render(results, info.settings.p99_limit_ms);
        Ok(vec![("tables.txt".to_string(), text)])
    }
}
