//! Realises a plan: images, run-wide services, then each scenario (up, setup, warm, measure,
//! teardown, down), returning plain result records. Everything it creates on the engine carries
//! the run's label, so an error or Ctrl-C at any point tears down exactly what this run made.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::compose::{self, Project};
use crate::driver::{self, flow, Driver, MeasureSpec, Place, Session};
use crate::engine::{self, Deployment, Engine};
use crate::images::{self, recipe};
use crate::model::{Measurement, PhaseTimes, ScenarioResult, ServiceResources};
use crate::plan::{Plan, PlannedScenario};
use crate::resources;
use crate::scenario::Step;
use crate::settings::Settings;

/// How long a service may take to become ready (running, healthy, or answering Kafka).
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// No record for this long while consuming fails the measurement instead of hanging.
const CONSUME_TIMEOUT: Duration = Duration::from_secs(60);
/// Where the run's TLS material is mounted in the workload container.
const TLS_MOUNT: &str = "/tls";

/// Per-run scratch space on the host (generated certificates); removed when the run ends.
struct RunDir(PathBuf);

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Everything a run needs from the outside before its first container starts.
struct Prepared {
    project: Project,
    workload_image: String,
    tls_dir: PathBuf,
    run_wide: Vec<String>,
    /// What produces and consumes, chosen once for the run.
    driver: Box<dyn Driver>,
}

/// What a run produced: its id (the label of everything it created) and one result per scenario.
#[derive(Debug, Clone)]
pub struct RunOutput {
    pub run_id: String,
    /// The engine the run used, as it reports its version (recorded with the host facts).
    pub engine_version: Option<String>,
    pub results: Vec<ScenarioResult>,
}

/// Runs every planned scenario and returns their results (the caller reports and saves them).
pub async fn run(settings: &Settings, plan: &Plan) -> Result<RunOutput> {
    let run_id = engine::new_run_id();
    // Everything the run creates carries this id (what a killed run left, `perf-tests clean`
    // removes).
    phase(&format!("run {run_id}"));
    let engine = Engine::connect(&run_id).await?;
    let engine_version = engine.version().await.ok();
    let results = engine::interruptible(&engine, run_with(&engine, &run_id, settings, plan)).await;
    crate::progress::finish();
    Ok(RunOutput {
        run_id,
        engine_version,
        results: results?,
    })
}

async fn run_with(
    engine: &Engine,
    run_id: &str,
    settings: &Settings,
    plan: &Plan,
) -> Result<Vec<ScenarioResult>> {
    let run_dir = RunDir(std::env::temp_dir().join(format!("perf-tests-{run_id}")));
    let prepared = prepare(engine, settings, plan, &run_dir.0).await?;
    let mut deployment = Deployment::new(engine, prepared.project.clone(), &project_name(run_id));
    let result = run_scenarios(engine, &mut deployment, &prepared, settings, plan).await;
    phase("tearing down");
    let down = deployment.down_all().await;
    crate::progress::finish();
    let results = result?;
    down?;
    Ok(results)
}

fn project_name(run_id: &str) -> String {
    format!("perf-tests-{}", run_id.to_ascii_lowercase())
}

fn phase(what: &str) {
    crate::progress::phase(what);
}

/// Resolves Compose files, makes or finds every image, and packages the workload.
async fn prepare(
    engine: &Engine,
    settings: &Settings,
    plan: &Plan,
    dir: &Path,
) -> Result<Prepared> {
    let driver = driver::for_settings(settings);
    driver.check(plan)?;
    let tls_dir = dir.join("tls");
    std::fs::create_dir_all(&tls_dir).with_context(|| format!("creating {}", tls_dir.display()))?;
    let hosts: BTreeSet<String> = plan
        .scenarios
        .iter()
        .filter_map(|p| p.scenario.tls.as_ref())
        .flat_map(|t| t.hosts.iter().cloned())
        .collect();
    if !hosts.is_empty() {
        crate::tls::generate(&tls_dir, &hosts.into_iter().collect::<Vec<_>>())?;
    }

    let vars = variables(settings, &tls_dir);
    let project = compose::load(&compose_files(plan), &vars)?;

    let (run_wide, services) = services_of(plan);
    let needed = project.service_closure(&services)?;
    let images: BTreeSet<String> = needed
        .iter()
        .filter_map(|s| project.services.get(s).map(|s| s.image.clone()))
        .collect();

    let recipes = recipe::parse_recipes(&plan.suite.file, &plan.suite.images)?;
    for r in recipes.iter().filter(|r| images.contains(&r.image)) {
        match recipe::ensure(engine, r, false).await? {
            recipe::Outcome::Built => {
                crate::progress::println(&format!("built image {}", r.describe()))
            }
            recipe::Outcome::UpToDate => {}
        }
    }
    let with_recipe: BTreeSet<&String> = recipes.iter().map(|r| &r.image).collect();
    let driver_images = driver.images();
    let mut others: Vec<&String> = images.iter().filter(|i| !with_recipe.contains(i)).collect();
    others.extend(driver_images.iter().filter(|i| !images.contains(*i)));
    ensure_pulled(engine, settings, &others).await?;

    phase("packaging the workload");
    let workload_image = images::workload::ensure(engine).await?;
    Ok(Prepared {
        project,
        workload_image,
        tls_dir,
        run_wide,
        driver,
    })
}

/// The Compose side of the plan for `--dry-run`: every service the run would start, its image
/// and command, resolved from the Compose files with the run's variables. Touches no engine.
pub fn describe_services(settings: &Settings, plan: &Plan) -> Result<String> {
    let vars = variables(
        settings,
        &std::env::temp_dir().join("perf-tests-RUN_ID").join("tls"),
    );
    let project = compose::load(&compose_files(plan), &vars)?;
    let (run_wide, services) = services_of(plan);
    let needed = project.service_closure(&services)?;
    let mut out = String::from("Services (resolved from the Compose files):\n");
    for name in &needed {
        let s = &project.services[name];
        let scope = if run_wide.contains(name) {
            "run-wide".to_string()
        } else {
            let users: Vec<&str> = plan
                .scenarios
                .iter()
                .filter(|p| {
                    project
                        .service_closure(&p.scenario.services)
                        .map(|c| c.contains(name))
                        .unwrap_or(false)
                })
                .map(|p| p.scenario.name.as_str())
                .collect();
            users.join(", ")
        };
        out.push_str(&format!("  {name} [{scope}]\n    image: {}\n", s.image));
        if let Some(cmd) = &s.command {
            out.push_str(&format!("    command: {}\n", cmd.join(" ")));
        }
        let aliases: Vec<&str> = s.networks.values().flatten().map(String::as_str).collect();
        if !aliases.is_empty() {
            out.push_str(&format!("    aliases: {}\n", aliases.join(", ")));
        }
        for m in &s.mounts {
            let ro = if m.read_only { " (read-only)" } else { "" };
            out.push_str(&format!(
                "    mount: {} -> {}{ro}\n",
                m.source.display(),
                m.target
            ));
        }
        if !s.depends_on.is_empty() {
            let deps: Vec<String> = s
                .depends_on
                .iter()
                .map(|(d, c)| format!("{d} ({c:?})"))
                .collect();
            out.push_str(&format!("    depends on: {}\n", deps.join(", ")));
        }
    }
    let driver = driver::for_settings(settings);
    driver.check(plan)?;
    out.push_str(&driver.describe());
    out.push('\n');
    Ok(out)
}

/// The run-wide services (when any selected scenario uses them) and every service the run needs.
fn services_of(plan: &Plan) -> (Vec<String>, Vec<String>) {
    let run_wide: Vec<String> = if plan.scenarios.iter().any(|p| !p.scenario.own_broker) {
        plan.suite.services.clone()
    } else {
        Vec::new()
    };
    let mut services = run_wide.clone();
    for p in &plan.scenarios {
        services.extend(p.scenario.services.iter().cloned());
    }
    (run_wide, services)
}

/// The interpolation variables: the settings under their environment names, plus the run's own.
fn variables(settings: &Settings, tls_dir: &Path) -> BTreeMap<String, String> {
    let mut vars = settings.variables();
    vars.insert("TLS_DIR".into(), tls_dir.display().to_string());
    vars
}

fn compose_files(plan: &Plan) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = plan.suite.compose.clone();
    for p in &plan.scenarios {
        for f in &p.scenario.compose {
            if !files.contains(f) {
                files.push(f.clone());
            }
        }
    }
    files
}

/// Checks that images without a recipe are present or pullable; one message names them all.
async fn ensure_pulled(engine: &Engine, settings: &Settings, images: &[&String]) -> Result<()> {
    let mut missing = Vec::new();
    for image in images {
        if engine.image_labels(image).await?.is_some() {
            continue;
        }
        phase(&format!("pulling {image}"));
        if let Err(e) = engine.ensure_image(image).await {
            missing.push(format!("  {image} ({}): {e:#}", chosen_by(settings, image)));
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

/// Names the setting whose value is this image, so the user knows what to change.
fn chosen_by(settings: &Settings, image: &str) -> String {
    settings
        .variables()
        .into_iter()
        .find(|(k, v)| v == image && k.ends_with("_IMAGE"))
        .map(|(k, _)| format!("chosen by {k}"))
        .unwrap_or_else(|| "named in the Compose file".into())
}

async fn run_scenarios(
    engine: &Engine,
    deployment: &mut Deployment,
    prepared: &Prepared,
    settings: &Settings,
    plan: &Plan,
) -> Result<Vec<ScenarioResult>> {
    let suite = &plan.suite;
    if !prepared.run_wide.is_empty() {
        phase(&format!("starting {}", prepared.run_wide.join(", ")));
        deployment.up(&prepared.run_wide, READY_TIMEOUT).await?;
        let session = open(engine, deployment, prepared, &suite.client, false).await?;
        let warmed = ready_and_warm(
            session.as_ref(),
            &suite.ready,
            &suite.bootstrap,
            settings.warm_up_post_broker_start,
        )
        .await;
        let closed = session.close().await;
        warmed?;
        closed?;
    }
    let repeat = settings.repeat.max(1) as usize;
    let n = plan.scenarios.len();
    let mut reps: Vec<Vec<Repetition>> = vec![Vec::new(); n];
    for round in 0..repeat {
        if repeat > 1 {
            phase(&format!("round {} of {repeat}", round + 1));
        }
        // Each round starts one scenario later, so slow drift of a shared machine (thermal,
        // neighbours, a growing broker) spreads over every scenario instead of the last ones.
        for i in round_order(n, round) {
            let rep =
                run_scenario(engine, deployment, prepared, settings, &plan.scenarios[i]).await?;
            reps[i].push(rep);
        }
    }
    Ok(plan
        .scenarios
        .iter()
        .zip(reps)
        .map(|(planned, reps)| combine(planned, reps))
        .collect())
}

/// The scenario indices of round `round` (0-based): `0..n` rotated left by `round`.
pub fn round_order(n: usize, round: usize) -> Vec<usize> {
    (0..n).map(|i| (i + round) % n.max(1)).collect()
}

/// What one repetition of one scenario produced.
#[derive(Debug, Clone)]
struct Repetition {
    measurement: Measurement,
    phases: PhaseTimes,
    resources: Vec<ServiceResources>,
    images: BTreeMap<String, String>,
}

/// One result from every repetition of a scenario: medians, every repetition, summed phase
/// times, combined resource figures and saturation warnings.
fn combine(planned: &PlannedScenario, reps: Vec<Repetition>) -> ScenarioResult {
    let sc = &planned.scenario;
    let measurements: Vec<Measurement> = reps.iter().map(|r| r.measurement.clone()).collect();
    let measurement = Measurement::summary(&measurements);
    let mut phases = PhaseTimes::default();
    for r in &reps {
        phases.up_s += r.phases.up_s;
        phases.setup_s += r.phases.setup_s;
        phases.workload_s += r.phases.workload_s;
        phases.down_s += r.phases.down_s;
        phases.total_s += r.phases.total_s;
    }
    let resources =
        crate::resources::combine(&reps.iter().map(|r| r.resources.clone()).collect::<Vec<_>>());
    let warnings = measurement.producer.saturation();
    for w in &warnings {
        eprintln!("warning: {}: {w}", sc.name);
    }
    ScenarioResult {
        name: sc.name.clone(),
        description: sc.description.clone(),
        bootstrap: sc.bootstrap.clone(),
        topic: planned.topic.clone(),
        measurement,
        phases,
        images: reps.last().map(|r| r.images.clone()).unwrap_or_default(),
        repetitions: measurements,
        resources,
        warnings,
    }
}

/// Every container of the deployment that is up now: the run-wide services and the scenario's.
fn sampling_targets(
    deployment: &Deployment,
    run_wide: &[String],
    own_broker: bool,
) -> Vec<resources::Target> {
    deployment
        .project()
        .services
        .keys()
        // A scenario with its own broker does not touch the run-wide services.
        .filter(|service| !(own_broker && run_wide.contains(service)))
        .filter_map(|service| {
            deployment
                .container_id(service)
                .map(|id| resources::Target {
                    service: service.clone(),
                    container: id.to_string(),
                    run_wide: run_wide.contains(service),
                })
        })
        .collect()
}

async fn run_scenario(
    engine: &Engine,
    deployment: &mut Deployment,
    prepared: &Prepared,
    settings: &Settings,
    planned: &PlannedScenario,
) -> Result<Repetition> {
    let sc = &planned.scenario;
    let started = Instant::now();
    let mut phases = PhaseTimes::default();
    phase(&format!("{}: {}", sc.name, sc.description));

    let t = Instant::now();
    let ctx = |e: anyhow::Error| e.context(format!("scenario {}", sc.name));
    if !sc.services.is_empty() {
        deployment
            .up(&sc.services, READY_TIMEOUT)
            .await
            .map_err(ctx)?;
    }
    let session = open(engine, deployment, prepared, &sc.client, sc.tls.is_some())
        .await
        .map_err(ctx)?;
    phases.up_s = t.elapsed().as_secs_f64();
    let outcome = measure_scenario(
        engine,
        deployment,
        prepared,
        settings,
        planned,
        session.as_ref(),
        &mut phases,
    )
    .await;
    let closed = session.close().await;

    let t = Instant::now();
    let teardown = run_steps(deployment, "teardown", &planned.teardown).await;
    let down = if sc.services.is_empty() {
        Ok(())
    } else {
        deployment.down(&sc.services).await
    };
    phases.down_s = t.elapsed().as_secs_f64();
    phases.total_s = started.elapsed().as_secs_f64();

    let (measurement, used) = outcome.map_err(ctx)?;
    closed.map_err(ctx)?;
    teardown.map_err(ctx)?;
    down.map_err(ctx)?;
    if let Some(problem) = measurement.integrity.problem() {
        crate::progress::println(&format!(
            "warning: {}: record counts disagree: {problem}",
            sc.name
        ));
    }
    Ok(Repetition {
        measurement,
        phases,
        resources: used,
        images: deployment.image_ids(),
    })
}

async fn run_steps(deployment: &Deployment, what: &str, steps: &[Step]) -> Result<()> {
    for step in steps {
        match step {
            Step::Exec { service, command } => {
                crate::progress::detail(&format!(
                    "{what}: exec in {service}: {}",
                    command.join(" ")
                ));
                let out = deployment.exec(service, command).await?;
                if out.exit_code != 0 {
                    bail!(
                        "{what} step `{}` in service {service} exited with {}:\n{}{}",
                        command.join(" "),
                        out.exit_code,
                        out.stdout,
                        out.stderr
                    );
                }
            }
        }
    }
    Ok(())
}

/// Opens a driver session on the deployment's network, with the scenario's client properties and,
/// when it uses TLS, the run's TLS material.
async fn open(
    engine: &Engine,
    deployment: &Deployment,
    prepared: &Prepared,
    client: &BTreeMap<String, String>,
    tls: bool,
) -> Result<Box<dyn Session>> {
    let binds = if tls {
        vec![format!("{}:{TLS_MOUNT}:ro", prepared.tls_dir.display())]
    } else {
        Vec::new()
    };
    prepared
        .driver
        .open(Place {
            engine,
            workload_image: &prepared.workload_image,
            network: deployment.network_name("default"),
            client: client.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            binds,
        })
        .await
}

/// Waits for every `ready` endpoint, then warms the broker at `bootstrap` with `records` records
/// (none when 0). Returns the time each took, as measurement steps.
async fn ready_and_warm(
    session: &dyn Session,
    ready: &BTreeMap<String, String>,
    bootstrap: &str,
    records: u64,
) -> Result<BTreeMap<String, f64>> {
    let mut steps = BTreeMap::new();
    let t = Instant::now();
    for (service, endpoint) in ready {
        flow::ready(session, service, endpoint, READY_TIMEOUT).await?;
    }
    if !ready.is_empty() {
        steps.insert("ready".to_string(), t.elapsed().as_secs_f64());
    }
    if records > 0 {
        phase(&format!("warming the broker with {records} records"));
        let t = Instant::now();
        flow::warm_broker(session, bootstrap, records).await?;
        steps.insert("warm_broker".to_string(), t.elapsed().as_secs_f64());
    }
    Ok(steps)
}

/// A scenario whose services are up: readiness and its own broker's warm-up, setup, then the
/// measurement with its resources sampled.
async fn measure_scenario(
    engine: &Engine,
    deployment: &Deployment,
    prepared: &Prepared,
    settings: &Settings,
    planned: &PlannedScenario,
    session: &dyn Session,
    phases: &mut PhaseTimes,
) -> Result<(Measurement, Vec<ServiceResources>)> {
    let sc = &planned.scenario;
    let warm = if sc.own_broker {
        settings.warm_up_post_broker_start
    } else {
        0
    };
    let before = ready_and_warm(session, &sc.ready, &sc.bootstrap, warm).await?;
    phases.up_s += before.values().sum::<f64>();

    let t = Instant::now();
    run_steps(deployment, "setup", &planned.setup).await?;
    phases.setup_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let sampler = resources::Sampler::start(
        engine.docker(),
        sampling_targets(deployment, &prepared.run_wide, sc.own_broker),
    );
    let mut spec = MeasureSpec::new(&sc.bootstrap, &planned.topic, settings.num_records);
    spec.record_size = settings.record_size as usize;
    spec.throughput = settings.throughput;
    spec.properties = settings.producer_properties.clone();
    spec.warm_up_records = settings.warm_up_pre_test;
    spec.consume_timeout = CONSUME_TIMEOUT;
    let measured = flow::measure(session, &spec).await;
    let used = sampler.finish().await;
    phases.workload_s = t.elapsed().as_secs_f64();
    let mut measurement = measured?;
    measurement.steps_s.extend(before);
    Ok((measurement, used))
}

#[cfg(test)]
mod tests {
    use super::round_order;

    #[test]
    fn rounds_rotate_the_scenario_order() {
        assert_eq!(round_order(3, 0), [0, 1, 2]);
        assert_eq!(round_order(3, 1), [1, 2, 0]);
        assert_eq!(round_order(3, 2), [2, 0, 1]);
        assert_eq!(round_order(3, 3), [0, 1, 2]);
        assert_eq!(round_order(1, 5), [0]);
        assert!(round_order(0, 2).is_empty());
    }
}
