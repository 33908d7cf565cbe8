//! Ctrl-C / SIGTERM / SIGHUP: stop the work, remove this run's resources, report `Interrupted`.

use anyhow::Result;
use std::future::Future;
use std::io::Write as _;

use super::Engine;

/// The run was interrupted by SIGINT, SIGTERM or SIGHUP; the caller should exit with status 130.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Interrupted {
    /// The signal's name, e.g. `SIGTERM`.
    pub signal: &'static str,
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "interrupted by {}; this run's containers and networks were removed",
            self.signal
        )
    }
}

impl std::error::Error for Interrupted {}

/// Runs `fut`; on SIGINT, SIGTERM or SIGHUP drops it, removes everything labelled with the
/// engine's run id (giving up after [`super::SWEEP_WITHIN`]) and returns an [`Interrupted`]
/// error.
pub(crate) async fn interruptible<T>(
    engine: &Engine,
    fut: impl Future<Output = Result<T>>,
) -> Result<T> {
    let interrupted = shutdown_signal();
    tokio::select! {
        r = fut => r,
        signal = interrupted => {
            // After SIGHUP the terminal may be gone: a failed write must not stop the cleanup.
            let say = |line: String| { let _ = writeln!(std::io::stderr(), "{line}"); };
            say(format!("interrupted by {signal}: removing containers and networks of run {}", engine.run_id()));
            if let Err(e) = engine.sweep_run().await {
                say(format!("warning: cleanup after interrupt failed: {e:#}"));
            }
            Err(Interrupted { signal }.into())
        }
    }
}

/// Waits for the first of SIGINT, SIGTERM and SIGHUP (a closed terminal or SSH session) and names
/// it. SIGHUP is left alone when the process started with it ignored (`nohup`). The handlers are
/// in place when this returns, before the future is first polled: a signal that arrives while the
/// caller still works before its first await is kept, not left to kill the process.
pub(crate) fn shutdown_signal() -> impl Future<Output = &'static str> + Send {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, Signal, SignalKind};
        /// A signal that could not be registered is never received.
        async fn received(signal: Option<Signal>) {
            if let Some(mut s) = signal {
                if s.recv().await.is_some() {
                    return;
                }
            }
            std::future::pending().await
        }
        let interrupt = signal(SignalKind::interrupt()).ok();
        let term = signal(SignalKind::terminate()).ok();
        let hangup = if hangup_ignored() {
            None
        } else {
            signal(SignalKind::hangup()).ok()
        };
        async move {
            tokio::select! {
                _ = received(interrupt) => "SIGINT",
                _ = received(term) => "SIGTERM",
                _ = received(hangup) => "SIGHUP",
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}

/// True when SIGHUP is ignored (bit 0 of `SigIgn` in `/proc/self/status`), as under `nohup`.
#[cfg(unix)]
fn hangup_ignored() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| sighup_ignored_in(&status))
        .unwrap_or(false)
}

#[cfg(unix)]
fn sighup_ignored_in(status: &str) -> Option<bool> {
    let mask = status.lines().find_map(|l| l.strip_prefix("SigIgn:"))?;
    u64::from_str_radix(mask.trim(), 16)
        .ok()
        .map(|m| m & 1 == 1)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn sighup_is_bit_0_of_the_ignored_mask() {
        let status = |mask: &str| format!("Name:\tx\nSigBlk:\t0000000000000001\nSigIgn:\t{mask}\n");
        assert_eq!(sighup_ignored_in(&status("0000000000000001")), Some(true));
        assert_eq!(sighup_ignored_in(&status("0000000000001000")), Some(false));
        assert_eq!(sighup_ignored_in(&status("0000000000000000")), Some(false));
        assert_eq!(sighup_ignored_in("Name:\tx\n"), None);
    }
}
