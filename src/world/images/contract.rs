//! What a proxy image must offer the suite (docs/guide/your-own-proxy.md), checked before
//! anything starts: the scenarios' Compose files run it with `--config FILE` as its command, its
//! health check runs `grep` through `/bin/sh`, `JAVA_OPTIONS` reaches its JVM, its GC log at
//! `/tmp/perf-tests-gc.log` gives the GC figures (without it they are left out), and `PROFILE`
//! loads the profiler with `jcmd`.
//!
//! What can be seen without starting it is checked: an entrypoint or a command, `/bin/sh`,
//! `grep` on its `PATH`, and with `PROFILE` `jcmd` on its `PATH` or in `$JAVA_HOME/bin`. An
//! image this machine packaged from Java (a Maven recipe, a distribution) holds busybox and the
//! suite's start script, which installs the shell's tools when it starts: it keeps the contract
//! by construction.

use anyhow::{bail, Result};

use super::recipe::JDK_LABEL;
use crate::world::engine::Engine;

/// The `PATH` of an image that sets none (Docker's default).
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Refuses `image` (chosen by `chosen_by`) when it lacks what the suite needs of a proxy,
/// naming the image and everything missing; `profile`: `jcmd` is needed too.
pub(crate) async fn check(
    engine: &Engine,
    image: &str,
    chosen_by: &str,
    profile: bool,
) -> Result<()> {
    let Some(inspect) = engine.local_image(image).await? else {
        bail!("proxy image {image} ({chosen_by}) is not on the engine");
    };
    let config = inspect.config.unwrap_or_default();
    if config.labels.unwrap_or_default().contains_key(JDK_LABEL) {
        return Ok(());
    }
    let mut missing = Vec::new();
    let runs = config.entrypoint.as_ref().is_some_and(|e| !e.is_empty())
        || config.cmd.as_ref().is_some_and(|c| !c.is_empty());
    if !runs {
        missing.push(
            "an entrypoint taking `--config FILE` (it has neither entrypoint nor command)"
                .to_string(),
        );
    }
    let env = config.env.unwrap_or_default();
    let var = |name: &str| {
        env.iter()
            .find_map(|e| e.strip_prefix(&format!("{name}=")).map(str::to_string))
    };
    let path = var("PATH").unwrap_or_else(|| DEFAULT_PATH.to_string());
    let dirs: Vec<String> = path
        .split(':')
        .filter(|d| !d.is_empty())
        .map(str::to_string)
        .collect();
    let mut wanted: Vec<(String, Vec<String>)> = vec![
        (
            "/bin/sh (the health check's shell)".to_string(),
            vec!["/bin/sh".to_string()],
        ),
        (
            format!("grep on its PATH ({path}), which the health check runs"),
            dirs.iter().map(|d| format!("{d}/grep")).collect(),
        ),
    ];
    if profile {
        let mut at: Vec<String> = dirs.iter().map(|d| format!("{d}/jcmd")).collect();
        if let Some(home) = var("JAVA_HOME") {
            at.push(format!("{home}/bin/jcmd"));
        }
        wanted.push((
            "jcmd on its PATH or in $JAVA_HOME/bin, which loads the profiler (PROFILE)".to_string(),
            at,
        ));
    }
    let all: Vec<String> = wanted.iter().flat_map(|(_, at)| at.clone()).collect();
    let found = engine.image_holds(image, &all).await?;
    let mut i = 0;
    for (what, at) in &wanted {
        if !found[i..i + at.len()].iter().any(|f| *f) {
            missing.push(what.clone());
        }
        i += at.len();
    }
    if !missing.is_empty() {
        bail!(
            "proxy image {image} ({chosen_by}) lacks what the suite runs a proxy with: {}; see \
             docs/guide/your-own-proxy.md, \"A proxy image's contract\"",
            missing.join("; ")
        );
    }
    Ok(())
}
