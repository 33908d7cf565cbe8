//! `sizing.json` and `sizing.md`: a sizing run's statement (see `crate::sizing`), computed from
//! its results; nothing for any other run.

use anyhow::Result;

use super::Exporter;
use crate::model::ScenarioResult;
use crate::results::RunInfo;
use crate::sizing::{analyse, Sizing};
use crate::table::{markdown, plain};

/// The sizing files.
pub struct SizingFiles;

/// The sizing of a sizing run; `None` for any other run.
pub fn of_run(info: &RunInfo, results: &[ScenarioResult]) -> Option<Sizing> {
    let request = info.sizing.as_ref()?;
    Some(analyse(results, request, info.settings.p99_limit_ms))
}

/// The sizing tables as plain text, then its warnings: what a sizing run prints.
pub fn render(sizing: &Sizing) -> String {
    let mut out: String = sizing.tables().iter().map(plain).collect();
    for w in &sizing.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

impl Exporter for SizingFiles {
    fn files(&self, info: &RunInfo, results: &[ScenarioResult]) -> Result<Vec<(String, String)>> {
        let Some(sizing) = of_run(info, results) else {
            return Ok(Vec::new());
        };
        let mut md = sizing
            .tables()
            .iter()
            .map(markdown)
            .collect::<Vec<_>>()
            .join("\n");
        for w in &sizing.warnings {
            md.push_str(&format!("\n- {w}"));
        }
        Ok(vec![
            super::json::pretty(crate::results::SIZING_FILE.into(), &sizing)?,
            ("sizing.md".into(), md + "\n"),
        ])
    }
}
