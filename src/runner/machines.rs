//! The facts of each machine the run's containers run on ([`NodeFacts`]): the engine's own off
//! a swarm, or each swarm node's that the run places anything on, with the roles the run gave
//! it. The engine reports all but the CPU model, which the workload image, run once on the
//! node, reads from the node's /proc/cpuinfo.

use anyhow::{bail, Context, Result};

use super::placement::Placement;
use crate::model::run::NodeFacts;
use crate::workload::command::{parse_result_line, WorkloadCommand};
use crate::world::engine::{Engine, OneOff};

/// The facts of every machine the run uses; `workload_image` must be on each.
pub(super) async fn node_facts(
    engine: &Engine,
    placement: Option<&Placement>,
    workload_image: &str,
) -> Result<Vec<NodeFacts>> {
    let nodes = match placement {
        None => vec![(engine.clone(), Vec::new())],
        Some(p) => p
            .roles_by_node()
            .into_iter()
            .map(|(node, roles)| Ok((engine.on_node(&node)?, roles)))
            .collect::<Result<Vec<_>>>()?,
    };
    let mut out = Vec::new();
    for (engine, roles) in nodes {
        let facts = engine.facts().await?;
        let name = engine.node().map_or(facts.name, String::from);
        let cpu_model = cpu_model(&engine, workload_image)
            .await
            .with_context(|| format!("reading the CPU model of {name}"))?;
        out.push(NodeFacts {
            name,
            roles,
            cpu_model,
            cpus: facts.cpus,
            memory_bytes: facts.memory_bytes,
            kernel: facts.kernel,
            os: facts.os,
            arch: facts.arch,
            engine_version: facts.version,
        });
    }
    Ok(out)
}

/// The CPU model `engine`'s machine names, read by the workload image in a one-off container.
async fn cpu_model(engine: &Engine, workload_image: &str) -> Result<Option<String>> {
    let out = engine
        .run_oneoff(
            OneOff {
                image: workload_image.to_string(),
                cmd: WorkloadCommand::CpuModel.to_args(),
                name_hint: "node-facts".to_string(),
                ..Default::default()
            },
            |_| {},
        )
        .await?;
    if out.exit_code != 0 {
        bail!(
            "the workload image exited with {}: {}",
            out.exit_code,
            out.stderr.trim()
        );
    }
    parse_result_line(&out.stdout)
}
