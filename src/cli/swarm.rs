//! `perf-tests swarm …`: a swarm of Docker engines on this machine, for multi-host runs
//! exercised without a cluster.

use anyhow::{bail, Result};
use clap::Subcommand;

use crate::scenario::Suite;
use crate::settings::Settings;
use crate::world::engine::{self, shutdown_signal, Engine, Interrupted};
use crate::world::images::recipe;
use crate::world::swarm::local::{self, MIN_NODES};
use crate::world::swarm::ROLE_LABEL;

/// Swarm commands.
#[derive(Debug, Subcommand)]
pub enum SwarmCommand {
    /// Make a swarm of Docker engines on this machine (each in a network namespace of its own,
    /// joined by a bridge; root), label its first nodes broker, proxy and load, copy the images
    /// onto every node and print the manager's DOCKER_HOST
    Local {
        /// How many nodes
        #[arg(long, default_value_t = MIN_NODES, value_parser = nodes)]
        nodes: usize,
        /// An image to copy onto every node (repeat); default: the suite's images, the network
        /// ceiling's and the workload image, built first where missing
        #[arg(long = "image", conflicts_with = "registry")]
        images: Vec<String>,
        /// Also start a registry on the swarm's bridge (Debian's docker-registry), which every
        /// node trusts over plain HTTP, and print its REGISTRY; no image is copied (a run with
        /// that REGISTRY pushes and pulls its own)
        // Not `--registry`: that is the REGISTRY setting's flag, which every command takes.
        #[arg(long = "with-registry")]
        registry: bool,
    },
    /// Remove the local swarm: its daemons and everything they ran, its namespaces, bridge and
    /// directories
    Down,
}

fn nodes(s: &str) -> Result<usize, String> {
    let n: usize = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of nodes"))?;
    local::check_nodes(n).map_err(|e| e.to_string())?;
    Ok(n)
}

/// Runs a swarm command; `settings.scenarios` names the suite whose images a local swarm gets.
pub(crate) async fn execute(cmd: SwarmCommand, settings: &Settings) -> Result<i32> {
    let mut say = |line: &str| eprintln!("swarm: {line}");
    match cmd {
        SwarmCommand::Local {
            nodes,
            images,
            registry,
        } => {
            // Before any image is built: root, the tools, no swarm already up.
            let checked = local::check(nodes, registry)?;
            let source = Engine::connect(&engine::new_run_id()).await?;
            let images = if registry {
                Vec::new()
            } else if images.is_empty() {
                suite_images(&source, settings).await?
            } else {
                for image in &images {
                    if source.image_id(image).await?.is_none() {
                        bail!(
                            "--image {image}: no such image on the engine at {}",
                            source.host()
                        );
                    }
                }
                images
            };
            // The handlers first: making the nodes blocks between its awaits.
            let interrupted = shutdown_signal();
            let mut made = tokio::select! {
                made = local::up(checked, &source, &images, &mut say) => made?,
                signal = interrupted => {
                    say(&format!("interrupted by {signal}: removing the local swarm"));
                    local::down(&mut say)?;
                    return Err(Interrupted { signal }.into());
                }
            };
            made.sort_by(|a, b| a.hostname.cmp(&b.hostname));
            println!(
                "{:<12} {:<14} {:<8} {:<8} ENGINE",
                "NODE", "ADDRESS", "MANAGER", "ROLE"
            );
            for n in &made {
                let host = local::Node::named(&n.hostname).map_or_else(String::new, |n| n.host());
                println!(
                    "{:<12} {:<14} {:<8} {:<8} {host}",
                    n.hostname,
                    n.addr,
                    if n.manager { "yes" } else { "no" },
                    n.labels.get(ROLE_LABEL).map_or("-", String::as_str),
                );
            }
            // What reaches the manager as the docker CLI would: `export` these lines.
            for (var, value) in local::manager_env() {
                println!("{var}={value}");
            }
            if registry {
                println!("REGISTRY={}", local::registry_address());
            }
        }
        SwarmCommand::Down => {
            let removed = local::down(&mut say)?;
            if removed == 0 {
                say("no local swarm on this host");
            } else {
                say("removed");
            }
        }
    }
    Ok(0)
}

/// The suite's images and the network ceiling's (built where missing), and the workload image.
async fn suite_images(engine: &Engine, settings: &Settings) -> Result<Vec<String>> {
    let suite = Suite::load(&settings.scenarios)?;
    let mut recipes = recipe::parse_recipes(&suite.images_file, &suite.images)?;
    recipes.push(crate::world::ceiling::recipe());
    let mut images = Vec::new();
    for r in &recipes {
        recipe::ensure(engine, r, false).await?;
        images.push(r.image.clone());
    }
    images.push(crate::world::images::workload::ensure(engine).await?);
    Ok(images)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_node_count_is_checked_when_parsed() {
        assert_eq!(super::nodes("4"), Ok(4));
        assert!(super::nodes("x").unwrap_err().contains("\"x\""));
        assert!(super::nodes("2").unwrap_err().starts_with("--nodes 2:"));
        assert!(super::nodes(&(super::local::MAX_NODES + 1).to_string()).is_err());
    }
}
