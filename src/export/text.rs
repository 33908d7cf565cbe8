//! `tables.txt`: the result tables as the run prints them.

use anyhow::Result;

use super::Exporter;
use crate::model::ScenarioResult;
use crate::report::{tables, warnings};
use crate::results::RunInfo;
use crate::table::plain;

/// The plain-text tables.
pub struct Text;

/// All tables as plain text (what the run prints and `tables.txt` holds), then any warnings.
pub fn render(results: &[ScenarioResult]) -> String {
    let mut out: String = tables(results).iter().map(plain).collect();
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
    fn files(&self, _info: &RunInfo, results: &[ScenarioResult]) -> Result<Vec<(String, String)>> {
        Ok(vec![("tables.txt".to_string(), render(results))])
    }
}
