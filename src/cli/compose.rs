//! `perf-tests compose …`: Compose files realised through the engine, without the docker CLI.

use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::world::compose;
use crate::world::engine::{interruptible, Deployment, Engine, Interrupted};

/// Compose operations on the Docker engine.
#[derive(Debug, clap::Subcommand)]
pub enum ComposeCommand {
    /// Print the services as resolved (interpolated, merged, validated).
    Config {
        /// Compose file (repeat to merge; later files override earlier ones).
        #[arg(short = 'f', long = "file", required = true)]
        files: Vec<PathBuf>,
        /// Interpolation variable KEY=VALUE (overrides the environment).
        #[arg(short = 'e', long = "var", value_parser = parse_var)]
        vars: Vec<(String, String)>,
    },
    /// Bring services and their dependencies up and leave them running.
    Up {
        /// Compose file (repeat to merge; later files override earlier ones).
        #[arg(short = 'f', long = "file", required = true)]
        files: Vec<PathBuf>,
        /// Interpolation variable KEY=VALUE (overrides the environment).
        #[arg(short = 'e', long = "var", value_parser = parse_var)]
        vars: Vec<(String, String)>,
        /// Run id the resources are labelled with (`compose down --run-id` removes them).
        #[arg(long)]
        run_id: Option<String>,
        /// Deployment name (container and network prefix); defaults to the project name.
        #[arg(long)]
        project: Option<String>,
        /// How long services may take to become healthy, e.g. 90s, 2m.
        #[arg(long, default_value = "120s", value_parser = parse_timeout)]
        timeout: std::time::Duration,
        /// Services to bring up (default: all).
        services: Vec<String>,
    },
    /// Remove every container and network labelled with a run id.
    Down {
        /// The run id given to (or printed by) `compose up`.
        #[arg(long)]
        run_id: String,
    },
}

fn parse_var(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("expected KEY=VALUE, got {s:?}"))
}

fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    compose::parse_duration(s).map_err(|e| e.to_string())
}

/// Runs a compose subcommand; returns the process exit code (130 when interrupted).
pub(crate) async fn execute(cmd: ComposeCommand) -> Result<i32> {
    match cmd {
        ComposeCommand::Config { files, vars } => {
            let project = compose::load(&files, &vars.into_iter().collect())?;
            print!("{}", yaml_serde::to_string(&project)?);
            Ok(0)
        }
        ComposeCommand::Up {
            files,
            vars,
            run_id,
            project,
            timeout,
            services,
        } => {
            let vars: BTreeMap<String, String> = vars.into_iter().collect();
            let loaded = compose::load(&files, &vars)?;
            let services = if services.is_empty() {
                loaded.services.keys().cloned().collect()
            } else {
                services
            };
            let run_id = run_id.unwrap_or_else(|| {
                format!("compose-{}", chrono::Utc::now().format("%Y%m%dT%H%M%SZ"))
            });
            let name = project.unwrap_or_else(|| loaded.name_hint.clone());
            let engine = Engine::connect(&run_id).await?;
            let mut deployment = Deployment::new(&engine, loaded, &name);
            let result = interruptible(&engine, async {
                deployment.up(&services, timeout).await?;
                Ok(())
            })
            .await;
            match result {
                Ok(()) => {
                    for svc in deployment.project().service_closure(&services)? {
                        println!("{svc}\t{}", deployment.container_name(&svc));
                    }
                    eprintln!("up; remove with: perf-tests compose down --run-id {run_id}");
                    Ok(0)
                }
                Err(e) if e.is::<Interrupted>() => {
                    eprintln!("{e}");
                    Ok(super::EXIT_INTERRUPTED)
                }
                Err(e) => {
                    // Containers of earlier services in this call are already gone; networks too.
                    let _ = deployment.down_all().await;
                    Err(e)
                }
            }
        }
        ComposeCommand::Down { run_id } => {
            if run_id.is_empty() {
                bail!("--run-id must not be empty");
            }
            let engine = Engine::connect(&run_id).await?;
            let n = engine.remove_run(&run_id).await?;
            eprintln!("removed {n} containers and networks of run {run_id}");
            Ok(0)
        }
    }
}
