//! What a run needs before its first container starts: the driver, the TLS material, every
//! image made or found, the workload packaged, and the CPUs it pins checked against the engine's.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};

use crate::driver::{self, Driver};
use crate::plan::{ImageSource, Plan, RunPlan};
use crate::settings::Settings;
use crate::world::engine::Engine;
use crate::world::images::{self, recipe};

/// What a run needs from the engine before its first container starts.
pub(super) struct Prepared {
    pub(super) workload_image: String,
    /// Image reference -> how it was made, for every image of the run built here.
    pub(super) image_sources: BTreeMap<String, String>,
    /// What produces and consumes, chosen once for the run.
    pub(super) driver: Box<dyn Driver>,
    /// With PROFILE: the profiler's tools, and where the recordings are kept until the results
    /// directory is written.
    pub(super) profiling: Option<(crate::world::profile::Tools, std::path::PathBuf)>,
}

/// The engine's CPUs as it reports them, else this machine's.
pub(super) async fn engine_cpus(engine: &Engine) -> usize {
    match engine.cpus().await {
        Some(n) => n,
        None => crate::world::machine::cpus(),
    }
}

/// The CPUs of the machine a container runs on, and which machine that is.
pub(super) struct Cpus {
    pub(super) count: usize,
    pub(super) of: String,
}

/// Refuses, before anything starts, a pinning to CPUs the engine (`cpus`), or for the load
/// generators each one's machine (`workload`), does not have (the engine's own error would
/// come only when the container is created, mid-run).
pub(super) fn check_cpusets(
    settings: &Settings,
    plan: &Plan,
    cpus: usize,
    workload: &[Cpus],
) -> Result<()> {
    if let Some(w) = &plan.workload_cpuset {
        for machine in workload {
            crate::settings::cpuset::check_exists(
                "WORKLOAD_CPUSET",
                w,
                machine.count,
                &machine.of,
            )?;
        }
    }
    for name in &plan.services {
        let Some(set) = plan
            .project
            .services
            .get(name)
            .and_then(|s| s.cpuset.as_ref())
        else {
            continue;
        };
        let what = if *set == settings.services_cpuset {
            "SERVICES_CPUSET".to_string()
        } else {
            format!("service \"{name}\" cpuset")
        };
        crate::settings::cpuset::check_exists(&what, set, cpus, "the engine")?;
    }
    Ok(())
}

/// Chooses the driver, generates the TLS material, makes or finds every image the plan names
/// at any combination, and packages the workload.
pub(super) async fn prepare(engine: &Engine, run: &RunPlan) -> Result<Prepared> {
    let plan = run.first();
    let driver = driver::for_settings(&run.cells[0].settings)?;
    write_run_files(run)?;
    // The services' images, then those the driver runs besides them, each had the same way.
    let mut images: Vec<(String, ImageSource)> = Vec::new();
    for i in run.cells.iter().flat_map(|c| &c.plan.images) {
        if !images.iter().any(|(image, _)| *image == i.image) {
            images.push((i.image.clone(), i.source.clone()));
        }
    }
    for image in driver.images() {
        if !images.iter().any(|(i, _)| *i == image) {
            let source = plan.source_of(&image);
            images.push((image, source));
        }
    }
    let mut pulled: Vec<(String, String)> = Vec::new();
    for (image, source) in &images {
        match source {
            ImageSource::Recipe(r) => match recipe::ensure(engine, r, false).await? {
                recipe::Outcome::Built => {
                    crate::progress::notice(&format!("built image {}", r.describe()))
                }
                recipe::Outcome::UpToDate => {}
            },
            ImageSource::Pull { chosen_by } => pulled.push((image.clone(), chosen_by.clone())),
        }
    }
    ensure_pulled(engine, &pulled).await?;
    // What the suite runs a proxy with, checked before any container of the run starts.
    let profile = run.cells[0].settings.profile.is_some();
    let mut checked: Vec<&str> = Vec::new();
    for (image, chosen_by) in run.cells.iter().flat_map(|c| &c.plan.proxy_images) {
        if !checked.contains(&image.as_str()) {
            crate::world::images::contract::check(engine, image, chosen_by, profile).await?;
            checked.push(image);
        }
    }
    let image_sources = made_from(engine, &images).await?;

    let settings = &run.cells[0].settings;
    let profiling = match settings.profile {
        None => None,
        Some(_) => {
            crate::progress::phase("resolving the profiler (async-profiler, jfr-converter)");
            let arch = engine.facts().await?.arch;
            let tools = tokio::task::spawn_blocking(move || crate::world::profile::tools(&arch))
                .await
                .context("resolving the profiler")??;
            let staging =
                crate::present::results::profiles_staging(&settings.results_dir, &plan.run_id);
            Some((tools, staging))
        }
    };

    crate::progress::phase("packaging the workload");
    let workload_image = images::workload::ensure(engine).await?;
    Ok(Prepared {
        workload_image,
        image_sources,
        driver,
        profiling,
    })
}

/// The run's scratch files: the TLS material for the scenarios' hosts, and the sides' merged
/// configurations beside it.
fn write_run_files(run: &RunPlan) -> Result<()> {
    let plan = run.first();
    let tls_dir = &plan.tls_dir;
    std::fs::create_dir_all(tls_dir).with_context(|| format!("creating {}", tls_dir.display()))?;
    if !plan.tls_hosts.is_empty() {
        crate::world::tls::generate(tls_dir, &plan.tls_hosts)?;
    }
    for f in run.cells.iter().flat_map(|c| &c.plan.files) {
        if let Some(dir) = f.path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(&f.path, &f.contents)
            .with_context(|| format!("writing {}", f.path.display()))?;
    }
    Ok(())
}

/// How each of `images` built here was made (from its labels), read once: an image does not
/// change during the run.
async fn made_from(
    engine: &Engine,
    images: &[(String, ImageSource)],
) -> Result<BTreeMap<String, String>> {
    let mut sources = BTreeMap::new();
    for (image, _) in images {
        if let Some(made) = engine
            .image_labels(image)
            .await?
            .as_ref()
            .and_then(recipe::made_from)
        {
            sources.insert(image.clone(), made);
        }
    }
    Ok(sources)
}

/// Checks that images without a recipe are present or pullable; one message names them all.
pub(super) async fn ensure_pulled(engine: &Engine, images: &[(String, String)]) -> Result<()> {
    let mut missing = Vec::new();
    for (image, chosen_by) in images {
        if engine.image_labels(image).await?.is_some() {
            continue;
        }
        crate::progress::phase(&format!("pulling {image}"));
        if let Err(e) = engine.ensure_image(image).await {
            missing.push(format!("  {image} ({chosen_by}): {e:#}"));
        }
    }
    if !missing.is_empty() {
        bail!(
            "{} image(s) are not on the engine and cannot be pulled; nothing was started:\n{}",
            missing.len(),
            missing.join("\n")
        );
    }
    Ok(())
}
