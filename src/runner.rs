//! Placeholder; filled in by its own change.

use crate::model::ScenarioResult;
use crate::plan::Plan;
use crate::settings::Settings;

/// Runs every planned scenario and returns its results.
pub async fn run(_settings: &Settings, _plan: &Plan) -> anyhow::Result<Vec<ScenarioResult>> {
    anyhow::bail!("not implemented")
}
