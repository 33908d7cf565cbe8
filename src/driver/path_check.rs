//! The path check (`perf-tests workload verify`): the native workload's whatever the run's
//! driver, so every driver's rows are proven alike.

use anyhow::{bail, Result};

use super::{tail, Place, VerifySpec};
use crate::model::PathCheck;
use crate::workload::command::{parse_result_line, WorkloadCommand};
use crate::world::engine::OneOff;

/// The path check (`perf-tests workload verify`) in a container of its own at `place`: sample
/// records through the endpoint, read back through it and straight from the broker. It is the
/// native workload's whatever the run's driver, so every driver's rows are proven alike.
pub(crate) async fn path_check(place: &Place<'_>, spec: &VerifySpec) -> Result<PathCheck> {
    let cmd = WorkloadCommand::Verify(spec.clone());
    let out = place
        .engine
        .run_oneoff(
            OneOff {
                image: place.workload_image.to_string(),
                cmd: cmd.to_args(),
                binds: place.binds.clone(),
                network: Some(place.network.clone()),
                name_hint: "path-check".to_string(),
                cpuset: place.cpuset.clone(),
                ..Default::default()
            },
            crate::progress::detail,
        )
        .await?;
    if out.exit_code != 0 {
        bail!(
            "the path check exited with {}: {}",
            out.exit_code,
            tail(&out.stderr)
        );
    }
    parse_result_line(&out.stdout)
}
