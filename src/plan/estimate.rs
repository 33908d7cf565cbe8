//! The run-time estimate `--dry-run` prints: assumed rates, not measured ones.

use super::{run_wide_differs, PlannedScenario, RunPlan};
use crate::settings::Settings;

/// Run-time estimate: records per second each way, when neither THROUGHPUT nor the byte rate
/// below bounds it (what a proxied path reaches on a small machine; a direct broker is faster).
pub(super) const ASSUMED_REC_S: f64 = 100_000.0;
/// Run-time estimate: MiB per second each way.
pub(super) const ASSUMED_MIB_S: f64 = 100.0;
/// Run-time estimate: seconds to start, check and stop a scenario's own services.
pub(super) const ASSUMED_SERVICES_S: f64 = 15.0;
/// Run-time estimate: seconds to start and warm the run-wide services.
pub(super) const ASSUMED_RUN_WIDE_S: f64 = 30.0;

impl RunPlan {
    /// A rough run time in seconds from assumed rates (see the `ASSUMED_` constants), for
    /// `--dry-run`; image builds are not included.
    pub(crate) fn estimate_s(&self) -> f64 {
        let repeat = self.cells[0].settings.repeat.max(1) as f64;
        let run_wide_differs = self
            .cells
            .windows(2)
            .any(|w| run_wide_differs(&w[0].plan, &w[1].plan));
        let starts = if self.first().run_wide.is_empty() {
            0.0
        } else if run_wide_differs {
            self.cells.len() as f64 * repeat
        } else {
            1.0
        };
        let per_round: f64 = self
            .cells
            .iter()
            .flat_map(|c| c.plan.scenarios.iter().map(move |p| (c, p)))
            .map(|(c, p)| measurement_s(&c.settings, p))
            .sum();
        starts * ASSUMED_RUN_WIDE_S + repeat * per_round
    }
}

/// The assumed seconds of one measurement of `planned` at `settings`.
fn measurement_s(settings: &Settings, planned: &PlannedScenario) -> f64 {
    let bytes_rate = ASSUMED_MIB_S * 1024.0 * 1024.0 / settings.record_size.max(1) as f64;
    let rate = ASSUMED_REC_S.min(bytes_rate);
    let produce_rate = settings
        .throughput
        .limit()
        .map_or(rate, |limit| rate.min(limit as f64));
    let records = settings.num_records as f64;
    let warm = (settings.warm_up_pre_test as f64 / produce_rate)
        .max(settings.warm_up_for_pre_test.as_secs_f64());
    let services = if planned.scenario.services.is_empty() {
        0.0
    } else {
        ASSUMED_SERVICES_S
    };
    let measured = match settings.duration {
        // Producer and consumer run together for the time; the group then reads what is left.
        Some(d) => d.as_secs_f64(),
        None => records / produce_rate + records / rate,
    };
    // A paired bring-up's later phases each warm only their own topic.
    let later = (planned.phases(settings) - 1) as f64
        * (settings.warm_up_pre_test as f64 / produce_rate + measured);
    services + warm + measured + later
}
