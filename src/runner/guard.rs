//! The fault guard: a phase runs while the run's containers are watched, and a container that
//! dies or an engine that stops answering ends the phase at once, with that as the reason.

use std::future::Future;
use std::time::Duration;

use anyhow::Result;

use futures_util::future::LocalBoxFuture;

use crate::engine::{self, Engine, EngineGone};

/// How often a phase checks the run's containers for one that died. A death ends the phase
/// within this plus one check (a listing and an inspect per container, a few ms); an engine that
/// stops answering within this plus twice [`engine::ANSWER_WITHIN`] (the check, then a ping): at
/// most 11 s.
pub(super) const WATCH_EVERY: Duration = Duration::from_secs(1);

/// A fault that ends a phase: a container of the run that died, or the engine gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Fault {
    /// What died: the service or workload, its container, exit code and last log lines.
    Died(String),
    /// The engine at this host stopped answering.
    EngineGone(String),
}

impl Fault {
    /// The error that ends phase `phase`.
    fn into_error(self, phase: &str) -> anyhow::Error {
        match self {
            Fault::Died(dead) => anyhow::anyhow!("{dead}")
                .context(format!("a container of the run stopped during {phase}")),
            Fault::EngineGone(host) => EngineGone {
                host,
                phase: phase.to_string(),
            }
            .into(),
        }
    }
}

/// Checks the run for a [`Fault`].
pub(super) trait Watcher {
    /// The fault now, if any: a service of the run, or one of `workload` (`(name, container
    /// id)`), stopped with a non-zero code, or the engine not answering. `phase` is what the
    /// run is doing.
    fn check<'a>(
        &'a self,
        phase: &'a str,
        workload: &'a [(String, String)],
    ) -> LocalBoxFuture<'a, Option<Fault>>;

    /// The fault that caused work of phase `phase` to fail just now, if any; by default what
    /// [`Watcher::check`] finds at once.
    fn explain<'a>(
        &'a self,
        phase: &'a str,
        workload: &'a [(String, String)],
    ) -> LocalBoxFuture<'a, Option<Fault>> {
        self.check(phase, workload)
    }
}

/// Runs `work`, phase `phase` of the run, and ends it as soon as the watcher finds a fault
/// (checked at once, then every [`WATCH_EVERY`]), so a dead broker, proxy or load generator, or
/// a gone engine, stops the phase at once instead of leaving a client retrying until its
/// timeout. When `work` fails first, a fault the watcher finds to explain it is reported instead:
/// it is the cause, and what the client saw (a closed connection, a timeout) only its consequence.
pub(super) async fn guarded<T>(
    watcher: &dyn Watcher,
    phase: &str,
    workload: &[(String, String)],
    work: impl Future<Output = Result<T>>,
) -> Result<T> {
    guarded_where(watcher, &|| phase.to_string(), workload, work).await
}

/// [`guarded`] for work whose phase moves on while it runs (the warm-up, then each measured
/// phase): `phase` says where it is when a fault is found.
pub(super) async fn guarded_where<T>(
    watcher: &dyn Watcher,
    phase: &dyn Fn() -> String,
    workload: &[(String, String)],
    work: impl Future<Output = Result<T>>,
) -> Result<T> {
    // Checked at once too: a container that died between phases (while the previous scenario
    // came down) ends this one before it starts.
    let watch = async {
        loop {
            if let Some(fault) = watcher.check(&phase(), workload).await {
                return fault;
            }
            tokio::time::sleep(WATCH_EVERY).await;
        }
    };
    let outcome = tokio::select! {
        // The watch first, so a fault found on its first check wins over work that is ready.
        biased;
        fault = watch => Err(fault),
        r = work => Ok(r),
    };
    match outcome {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => match watcher.explain(&phase(), workload).await {
            Some(fault) => Err(fault.into_error(&phase())),
            None => Err(e),
        },
        Err(fault) => Err(fault.into_error(&phase())),
    }
}

/// How long a failure is given to show as a dead container: a killed container's processes end
/// first (an exec in it fails at once), and the engine records the container as exited a moment
/// later, tens of ms on a quiet machine, longer on a busy one.
const SETTLES_WITHIN: Duration = Duration::from_secs(3);
/// How often the engine is asked while a failure settles.
const SETTLE_EVERY: Duration = Duration::from_millis(100);

/// The engine's watcher: the deployment's services by their label, and the engine's answer.
pub(super) struct EngineWatcher {
    pub(super) engine: Engine,
    pub(super) project: String,
}

impl Watcher for EngineWatcher {
    fn check<'a>(
        &'a self,
        _phase: &'a str,
        workload: &'a [(String, String)],
    ) -> LocalBoxFuture<'a, Option<Fault>> {
        Box::pin(async move {
            let found = tokio::time::timeout(
                engine::ANSWER_WITHIN,
                self.engine.first_dead(&self.project, workload),
            )
            .await;
            match found {
                Ok(Ok(dead)) => dead.map(Fault::Died),
                // A slow or failed listing alone is not a verdict: the ping is.
                _ if self.engine.answers().await => None,
                _ => Some(Fault::EngineGone(self.engine.host().to_string())),
            }
        })
    }

    /// Asks again until the engine has had [`SETTLES_WITHIN`] to record a death the failure
    /// came from, so the cause is named rather than what the client saw of it.
    fn explain<'a>(
        &'a self,
        phase: &'a str,
        workload: &'a [(String, String)],
    ) -> LocalBoxFuture<'a, Option<Fault>> {
        Box::pin(async move {
            let until = tokio::time::Instant::now() + SETTLES_WITHIN;
            loop {
                let fault = self.check(phase, workload).await;
                if fault.is_some() || tokio::time::Instant::now() >= until {
                    return fault;
                }
                tokio::time::sleep(SETTLE_EVERY).await;
            }
        })
    }
}
