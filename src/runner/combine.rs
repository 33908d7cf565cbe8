//! Combines a scenario's repetitions into its one result.

use std::collections::BTreeMap;

use crate::model::{
    Measurement, NetworkCeiling, PathCheck, PhaseTimes, ScenarioResult, ServiceResources,
};
use crate::plan::{Cell, PlannedScenario};
use crate::world::resources;

/// What one repetition of one scenario produced.
#[derive(Debug, Clone)]
pub(super) struct Repetition {
    pub(super) measurement: Measurement,
    pub(super) phases: PhaseTimes,
    pub(super) resources: Vec<ServiceResources>,
    pub(super) images: BTreeMap<String, String>,
    pub(super) image_sources: BTreeMap<String, String>,
    pub(super) path_check: Option<PathCheck>,
    /// In a paired run, the path check through side B's endpoint.
    pub(super) path_check_b: Option<PathCheck>,
    /// The network's ceiling on each hop, measured before the scenario's first repetition.
    pub(super) network: Vec<NetworkCeiling>,
}

/// One result from every repetition of a scenario: medians, every repetition, summed phase
/// times, combined resource figures and saturation warnings.
/// `cpus` is the machine's online CPUs, for the load generator's saturation warning.
pub(super) fn combine(
    cell: &Cell,
    planned: &PlannedScenario,
    reps: Vec<Repetition>,
    cpus: usize,
) -> ScenarioResult {
    let sc = &planned.scenario;
    let measurements: Vec<Measurement> = reps.iter().map(|r| r.measurement.clone()).collect();
    let measurement = Measurement::summary(&measurements);
    let mut phases = PhaseTimes::default();
    for r in &reps {
        phases.up_s += r.phases.up_s;
        phases.setup_s += r.phases.setup_s;
        phases.workload_s += r.phases.workload_s;
        phases.down_s += r.phases.down_s;
        phases.total_s += r.phases.total_s;
    }
    let resources = crate::world::resources::combine(
        &reps.iter().map(|r| r.resources.clone()).collect::<Vec<_>>(),
    );
    let mut warnings = measurement.producer.saturation();
    warnings.extend(resources::load_generator_saturation(&resources, cpus));
    let pair = planned.pair.as_ref().map(|planned_pair| {
        let p = &planned_pair.pair;
        let per_pair = planned.phases(&cell.settings);
        // Side A's rate is the scenario's own rows', checked above; side B's is each phase's.
        for (i, m) in measurements.iter().enumerate() {
            let short = m.pair.as_deref().map(|b| b.producer.saturation());
            for w in short.unwrap_or_default() {
                let at = crate::analysis::pair::phase_label(i, per_pair);
                warnings.push(format!("side B, {at}: {w}"));
            }
        }
        let phases = measurements
            .iter()
            .map(|m| crate::analysis::pair::phase_of(m, p))
            .collect();
        let (mut result, left_out) =
            crate::model::pair::PairResult::of(p, phases, per_pair, cell.settings.pair_threshold);
        warnings.extend(left_out);
        result.alike = planned_pair.alike;
        result.path_check_b = worst_check(reps.iter().filter_map(|r| r.path_check_b.clone()));
        result
    });
    let combination = cell.combination.clone();
    for w in &warnings {
        crate::progress::notice(&format!(
            "warning: {}: {w}",
            crate::model::row_label(&sc.name, &combination)
        ));
    }
    ScenarioResult {
        combination,
        name: sc.name.clone(),
        description: sc.description.clone(),
        bootstrap: sc.bootstrap.clone(),
        topic: planned.topic.clone(),
        measurement,
        phases,
        images: reps.last().map(|r| r.images.clone()).unwrap_or_default(),
        repetitions: measurements,
        resources,
        warnings,
        image_sources: reps
            .last()
            .map(|r| r.image_sources.clone())
            .unwrap_or_default(),
        path_check: worst_check(reps.iter().filter_map(|r| r.path_check.clone())),
        reference: sc.reference,
        kms: sc.kms.clone(),
        pair,
        network: reps
            .iter()
            .find(|r| !r.network.is_empty())
            .map(|r| r.network.clone())
            .unwrap_or_default(),
    }
}

/// Of the repetitions' path checks, in the order run: a failure in any stays visible, else the
/// last.
fn worst_check(checks: impl Iterator<Item = PathCheck>) -> Option<PathCheck> {
    let checks: Vec<PathCheck> = checks.collect();
    checks
        .iter()
        .find(|c| !c.holds())
        .or(checks.last())
        .cloned()
}
