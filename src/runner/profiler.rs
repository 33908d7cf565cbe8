//! The profiler on the engine (`PROFILE`, see `crate::world::profile`): the agent put into each JVM
//! service's container and loaded before the warm-up (so an attach that fails stops the
//! scenario before anything is measured, quoting the tool), then started and stopped at each
//! measured phase's edges, its recording copied out into the run's staging directory.
//!
//! The agent is driven with the JDK's `jcmd`, itself a JVM that runs in the container: it is
//! started before the phase's counters are read and stopped after, so its own CPU is not in the
//! phase's cost (the sampling's is: the profiler's overhead, see PERFORMANCE.md).

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use futures_util::future::LocalBoxFuture;

use crate::model::Recording;
use crate::settings::ProfileMode;
use crate::world::engine::Engine;
use crate::world::profile::{self, Tools};

/// Profiling under way in one measurement.
pub(super) trait Profiling {
    /// Starts recording `phase` in every profiled service.
    fn start<'a>(&'a self, phase: &'a str) -> LocalBoxFuture<'a, ()>;
    /// Stops it and keeps each service's recording.
    fn stop<'a>(&'a self, phase: &'a str) -> LocalBoxFuture<'a, ()>;
    /// The recordings kept, or what went wrong while recording.
    fn finish(self: Box<Self>) -> Result<Vec<Recording>>;
}

pub(super) struct EngineProfiler<'a> {
    engine: &'a Engine,
    mode: ProfileMode,
    /// (service, container) of every JVM profiled.
    targets: Vec<(String, String)>,
    /// Where the recordings go on this host, and the scenario (row label) they are of.
    staging: PathBuf,
    scenario: String,
    recordings: RefCell<Vec<Recording>>,
    errors: RefCell<Vec<String>>,
}

impl<'a> EngineProfiler<'a> {
    /// Puts the agent into each of `candidates` (service, container) and loads it. A service
    /// that is not a JVM the agent can be loaded into is an error when it was named
    /// (`explicit`), else left out (a scenario's KMS); `None` when no service is left.
    pub(super) async fn attach(
        engine: &'a Engine,
        mode: ProfileMode,
        tools: &Tools,
        candidates: Vec<(String, String)>,
        explicit: bool,
        staging: &Path,
        scenario: &str,
    ) -> Result<Option<EngineProfiler<'a>>> {
        let mut targets = Vec::new();
        for (service, container) in candidates {
            if !engine.exists(&container, profile::JCMD).await? {
                if explicit {
                    bail!(
                        "PROFILE_SERVICES: service \"{service}\" is not a JVM the profiler can \
                         be loaded into: its container has no {} (the images built here have it)",
                        profile::JCMD
                    );
                }
                continue;
            }
            let mut files = vec![(tools.agent.clone(), profile::AGENT.to_string())];
            // The agent's shared libraries the image lacks (it needs librt, libdl, ...).
            for lib in crate::world::images::scratch::library_closure(&tools.agent)? {
                if !engine.exists(&container, &lib.image_path).await? {
                    files.push((lib.host_path, lib.image_path));
                }
            }
            let upload: Vec<(&Path, &str)> = files
                .iter()
                .map(|(h, t)| (h.as_path(), t.as_str()))
                .collect();
            engine.upload(&container, &upload).await.with_context(|| {
                format!("PROFILE: putting the profiler into service \"{service}\"")
            })?;
            agent(engine, &container, &service, "status").await?;
            targets.push((service, container));
        }
        if targets.is_empty() {
            return Ok(None);
        }
        std::fs::create_dir_all(staging)
            .with_context(|| format!("creating {}", staging.display()))?;
        Ok(Some(EngineProfiler {
            engine,
            mode,
            targets,
            staging: staging.to_path_buf(),
            scenario: scenario.to_string(),
            recordings: RefCell::new(Vec::new()),
            errors: RefCell::new(Vec::new()),
        }))
    }

    /// The next free repetition number of a recording (the staging directory holds the earlier
    /// repetitions').
    fn next_file(&self, service: &str, phase: &str) -> String {
        (1..)
            .map(|n| profile::recording_file(&self.scenario, service, phase, n))
            .find(|f| !self.staging.join(f).exists())
            .expect("a free name")
    }
}

/// Runs the agent command `command` in `service`'s JVM; an error quotes jcmd and the agent's
/// own log.
async fn agent(engine: &Engine, container: &str, service: &str, command: &str) -> Result<()> {
    let out = engine
        .exec_in(container, &profile::jcmd(command))
        .await
        .with_context(|| format!("PROFILE: running jcmd in service \"{service}\""))?;
    // jcmd prints the agent's return code; it exits 0 even when the agent refused.
    if out.exit_code == 0 && out.stdout.contains("return code: 0") {
        return Ok(());
    }
    let log = engine
        .read_file(container, profile::LOG)
        .await
        .ok()
        .flatten()
        .unwrap_or_default();
    bail!(
        "PROFILE: the profiler in service \"{service}\" refused `{command}` (jcmd exited with {}):\n{}{}{}",
        out.exit_code,
        out.stdout,
        out.stderr,
        log
    )
}

impl Profiling for EngineProfiler<'_> {
    fn start<'b>(&'b self, phase: &'b str) -> LocalBoxFuture<'b, ()> {
        Box::pin(async move {
            let command = profile::start_command(self.mode, phase);
            for (service, container) in &self.targets {
                if let Err(e) = agent(self.engine, container, service, &command).await {
                    self.errors.borrow_mut().push(format!("{e:#}"));
                }
            }
        })
    }

    fn stop<'b>(&'b self, phase: &'b str) -> LocalBoxFuture<'b, ()> {
        Box::pin(async move {
            for (service, container) in &self.targets {
                let kept = async {
                    agent(self.engine, container, service, &profile::stop_command()).await?;
                    let path = profile::recording(phase);
                    let bytes = self
                        .engine
                        .read_bytes(container, &path)
                        .await?
                        .with_context(|| format!("service \"{service}\" wrote no {path}"))?;
                    let file = self.next_file(service, phase);
                    std::fs::write(self.staging.join(&file), bytes).with_context(|| {
                        format!("writing {}", self.staging.join(&file).display())
                    })?;
                    self.recordings.borrow_mut().push(Recording {
                        service: service.clone(),
                        phase: phase.to_string(),
                        mode: self.mode,
                        event: self.mode.event().to_string(),
                        file,
                    });
                    anyhow::Ok(())
                };
                if let Err(e) = kept.await {
                    self.errors.borrow_mut().push(format!("{e:#}"));
                }
            }
        })
    }

    fn finish(self: Box<Self>) -> Result<Vec<Recording>> {
        let errors = self.errors.take();
        if !errors.is_empty() {
            bail!("{}", errors.join("\n"));
        }
        Ok(self.recordings.take())
    }
}
