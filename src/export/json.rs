//! `run.json` and one `<scenario>.json` per scenario: every recorded value, read back by
//! `crate::results` through the same types.

use anyhow::{Context, Result};
use serde::Serialize;

use super::Exporter;
use crate::model::ScenarioResult;
use crate::results::{RunInfo, RUN_FILE};

/// The machine-readable records.
pub struct Json;

fn pretty<T: Serialize>(name: String, value: &T) -> Result<(String, String)> {
    let mut text =
        serde_json::to_string_pretty(value).with_context(|| format!("cannot serialise {name}"))?;
    text.push('\n');
    Ok((name, text))
}

impl Exporter for Json {
    fn files(&self, info: &RunInfo, results: &[ScenarioResult]) -> Result<Vec<(String, String)>> {
        let mut files = vec![pretty(RUN_FILE.to_string(), info)?];
        for r in results {
            files.push(pretty(format!("{}.json", r.name), r)?);
        }
        Ok(files)
    }
}
