//! Ctrl-C / SIGTERM: stop the work, remove this run's resources, report `Interrupted`.

use anyhow::Result;
use std::future::Future;
use std::time::Duration;

use super::Engine;

/// The run was interrupted by SIGINT or SIGTERM; the caller should exit with status 130.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted; this run's containers and networks were removed")
    }
}

impl std::error::Error for Interrupted {}

/// Runs `fut`; on SIGINT or SIGTERM drops it, removes everything labelled with the engine's
/// run id (giving up after 10 s) and returns an [`Interrupted`] error.
pub async fn interruptible<T>(engine: &Engine, fut: impl Future<Output = Result<T>>) -> Result<T> {
    tokio::select! {
        r = fut => r,
        _ = shutdown_signal() => {
            eprintln!("interrupted: removing containers and networks of run {}", engine.run_id());
            match tokio::time::timeout(Duration::from_secs(10), engine.remove_run_completely(engine.run_id())).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => eprintln!("warning: cleanup after interrupt failed: {e:#}"),
                Err(_) => eprintln!("warning: cleanup after interrupt did not finish within 10 s; run `perf-tests clean`"),
            }
            Err(Interrupted.into())
        }
    }
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
