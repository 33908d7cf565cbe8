//! The fault guard: a phase runs while the run's containers are watched, and a container that
//! dies or an engine that stops answering ends the phase at once, with that as the reason.

use std::future::Future;
use std::time::Duration;

use anyhow::Result;

use futures_util::future::LocalBoxFuture;

use crate::world::engine::{self, Engine, EngineGone};

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

    /// How long after a phase's work failed a fault that caused it may take to show: the
    /// failure is explained by a fault found within it (checked every [`SETTLE_EVERY`]).
    fn settles_within(&self) -> Duration {
        Duration::ZERO
    }
}

/// How often a failure that has not yet shown its cause is checked again.
const SETTLE_EVERY: Duration = Duration::from_millis(100);

/// The fault that caused work of phase `phase` to fail just now, if one shows within the
/// watcher's [`Watcher::settles_within`].
async fn explain(
    watcher: &dyn Watcher,
    phase: &str,
    workload: &[(String, String)],
) -> Option<Fault> {
    let until = tokio::time::Instant::now() + watcher.settles_within();
    loop {
        let fault = watcher.check(phase, workload).await;
        if fault.is_some() || tokio::time::Instant::now() >= until {
            return fault;
        }
        tokio::time::sleep(SETTLE_EVERY).await;
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
        Ok(Err(e)) => match explain(watcher, &phase(), workload).await {
            Some(fault) => Err(fault.into_error(&phase())),
            None => Err(e),
        },
        Err(fault) => Err(fault.into_error(&phase())),
    }
}

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

    /// A killed container's processes end first (an exec in it fails at once), and the engine
    /// records the container as exited a moment later: tens of ms on a quiet machine, longer on
    /// a busy one.
    fn settles_within(&self) -> Duration {
        Duration::from_secs(3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// Finds a death from its `from`th check on (1-based), and gives failures `settle` to show one.
    struct LateDeath {
        checks: Cell<usize>,
        from: usize,
        settle: Duration,
    }

    impl Watcher for LateDeath {
        fn check<'a>(
            &'a self,
            _phase: &'a str,
            _workload: &'a [(String, String)],
        ) -> LocalBoxFuture<'a, Option<Fault>> {
            self.checks.set(self.checks.get() + 1);
            let dead = self.checks.get() >= self.from;
            Box::pin(async move { dead.then(|| Fault::Died("service \"proxy\" exited".into())) })
        }
        fn settles_within(&self) -> Duration {
            self.settle
        }
    }

    /// What `guarded` reports of work that fails at once, the death showing on check `from`.
    async fn failed_work(from: usize, settle: Duration) -> (String, usize) {
        let watcher = LateDeath {
            checks: Cell::new(0),
            from,
            settle,
        };
        let failed = async { Err::<(), _>(anyhow::anyhow!("workload `produce` exited with 137")) };
        let e = guarded(&watcher, "the produce", &[], failed)
            .await
            .unwrap_err();
        (format!("{e:#}"), watcher.checks.get())
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_is_explained_by_a_death_that_shows_after_it() {
        // The watch's first check finds nothing, the work fails, the death shows two checks on.
        let (error, checks) = failed_work(4, Duration::from_secs(3)).await;
        assert_eq!(
            error,
            "a container of the run stopped during the produce: service \"proxy\" exited"
        );
        assert_eq!(checks, 4);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_with_no_death_within_the_settling_time_is_reported_as_it_is() {
        let (error, checks) = failed_work(usize::MAX, Duration::from_millis(250)).await;
        assert_eq!(error, "workload `produce` exited with 137");
        // The watch's check, then the failure's at 0, 100, 200 and 300 ms (the first past 250).
        assert_eq!(checks, 1 + 4);
        let (error, checks) = failed_work(3, Duration::ZERO).await;
        assert_eq!(error, "workload `produce` exited with 137");
        assert_eq!(checks, 2);
    }
}
