//! `tables.txt`: the result tables as the run prints them.

use anyhow::Result;

use super::Exporter;
use crate::model::ScenarioResult;
use crate::report::{tables_with, warnings};
use crate::results::RunInfo;
use crate::table::plain;

/// The plain-text tables.
pub struct Text;

/// All tables as plain text, then any warnings.
pub fn render(results: &[ScenarioResult]) -> String {
    render_with(results, None)
}

/// What the run prints and `tables.txt` holds: [`render`] with the run's P99_LIMIT_MS.
pub fn render_with(results: &[ScenarioResult], p99_limit_ms: Option<u64>) -> String {
    let mut out: String = tables_with(results, p99_limit_ms)
        .iter()
        .map(plain)
        .collect();
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
        let text = render_with(results, info.settings.p99_limit_ms);
        Ok(vec![("tables.txt".to_string(), text)])
    }
}
