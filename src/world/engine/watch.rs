//! Faults that end a run's phase early: a container of the run that died, or the engine itself
//! no longer answering.

use anyhow::{Context, Result};
use bollard::models::ContainerStateStatusEnum;
use std::time::Duration;

use super::{Engine, LABEL_PROJECT, LABEL_SERVICE};

/// How many log lines the report of a dead container shows.
const LOG_TAIL: usize = 40;
/// How long the engine has to answer a ping before it counts as gone.
pub(crate) const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// The Docker engine stopped answering during a run; its containers are left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EngineGone {
    /// `DOCKER_HOST` or the default socket.
    pub host: String,
    /// What the run was doing.
    pub phase: String,
}

impl std::fmt::Display for EngineGone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the Docker engine at {} stopped answering during {}; this run's containers and \
             networks could not be removed: `perf-tests clean` removes them once the engine \
             answers again",
            self.host, self.phase
        )
    }
}

impl std::error::Error for EngineGone {}

/// True when the error, or one it was caused by, is [`EngineGone`].
pub(crate) fn is_engine_gone(e: &anyhow::Error) -> bool {
    e.downcast_ref::<EngineGone>().is_some()
}

impl Engine {
    /// Whether the engine answers a ping within [`ANSWER_WITHIN`].
    pub(crate) async fn answers(&self) -> bool {
        matches!(
            tokio::time::timeout(ANSWER_WITHIN, self.docker.ping()).await,
            Ok(Ok(_))
        )
    }

    /// The first container found stopped with a non-zero exit code, among the services of
    /// deployment `project` and `others` (`(what, id)`), described with its code and last log
    /// lines; `None` while every one runs. Services are found by their deployment label, so the
    /// ones a phase is still bringing up are covered too; one-off containers (which end by
    /// design) carry no deployment label. One listing, and an inspect only of a service the
    /// listing shows stopped and of each of `others`: cheap enough to poll every second. An
    /// error means the engine did not answer.
    pub(crate) async fn first_dead(
        &self,
        project: &str,
        others: &[(String, String)],
    ) -> Result<Option<String>> {
        let services = self
            .labelled_containers(&format!("{LABEL_PROJECT}={project}"))
            .await
            .context("cannot list the run's containers")?;
        let services = services.into_iter().filter(|c| c.stopped).filter_map(|c| {
            let service = c.labels.get(LABEL_SERVICE)?;
            Some((format!("service \"{service}\""), c.id))
        });
        for (what, id) in services.chain(others.iter().cloned()) {
            let info = match self.docker_of(&id).inspect_container(&id, None).await {
                Ok(info) => info,
                // Removed between the listing and now: taken down, not dead.
                Err(e) if super::is_not_found(&e) => continue,
                Err(e) => return Err(anyhow::Error::new(e).context("cannot inspect a container")),
            };
            let state = info.state.unwrap_or_default();
            let exited = matches!(
                state.status,
                Some(ContainerStateStatusEnum::EXITED | ContainerStateStatusEnum::DEAD)
            );
            let code = state.exit_code.unwrap_or(0);
            if exited && code != 0 {
                let name = info
                    .name
                    .map(|n| n.trim_start_matches('/').to_string())
                    .unwrap_or_else(|| id[..id.len().min(12)].to_string());
                let logs = self
                    .container_logs(&id, LOG_TAIL)
                    .await
                    .unwrap_or_else(|e| format!("(logs unavailable: {e})"));
                return Ok(Some(format!(
                    "{what} (container {name}) exited with code {code}{}\n--- last {LOG_TAIL} log lines ---\n{}",
                    if code == 137 { " (killed)" } else { "" },
                    logs.trim_end()
                )));
            }
        }
        Ok(None)
    }
}
