//! Realises a plan: images, run-wide services, then each scenario (up, setup, warm, measure,
//! teardown, down), returning plain result records. Everything it creates on the engine carries
//! the run's label, so an error or Ctrl-C at any point tears down exactly what this run made.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::driver::{self, flow, Driver, MeasureSpec, Place, Session};
use crate::engine::{self, Deployment, Engine};
use crate::images::{self, recipe};
use crate::model::{Measurement, PhaseTimes, ScenarioResult, ServiceResources};
use crate::plan::{self, ImageSource, Plan, PlannedScenario};
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

/// What a run needs from the engine before its first container starts.
struct Prepared {
    workload_image: String,
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
    let run_id = plan.run_id.clone();
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
    let _run_dir = plan.tls_dir.parent().map(|d| RunDir(d.to_path_buf()));
    let prepared = prepare(engine, settings, plan).await?;
    let mut deployment = Deployment::new(engine, plan.project.clone(), &project_name(run_id));
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

/// Chooses the driver, generates the TLS material, makes or finds every image the plan names,
/// and packages the workload.
async fn prepare(engine: &Engine, settings: &Settings, plan: &Plan) -> Result<Prepared> {
    let driver = driver::for_settings(settings);
    driver.check(plan)?;
    let tls_dir = &plan.tls_dir;
    std::fs::create_dir_all(tls_dir).with_context(|| format!("creating {}", tls_dir.display()))?;
    if !plan.tls_hosts.is_empty() {
        crate::tls::generate(tls_dir, &plan.tls_hosts)?;
    }
    let mut pulled: Vec<(String, String)> = Vec::new();
    for planned in &plan.images {
        match &planned.source {
            ImageSource::Recipe(r) => match recipe::ensure(engine, r, false).await? {
                recipe::Outcome::Built => {
                    crate::progress::println(&format!("built image {}", r.describe()))
                }
                recipe::Outcome::UpToDate => {}
            },
            ImageSource::Pull { chosen_by } => {
                pulled.push((planned.image.clone(), chosen_by.clone()))
            }
        }
    }
    for image in driver.images() {
        if !plan.images.iter().any(|i| i.image == image) {
            let chosen_by = plan::chosen_by(&plan.variables, &image);
            pulled.push((image, chosen_by));
        }
    }
    ensure_pulled(engine, &pulled).await?;

    phase("packaging the workload");
    let workload_image = images::workload::ensure(engine).await?;
    Ok(Prepared {
        workload_image,
        driver,
    })
}

/// Checks that images without a recipe are present or pullable; one message names them all.
async fn ensure_pulled(engine: &Engine, images: &[(String, String)]) -> Result<()> {
    let mut missing = Vec::new();
    for (image, chosen_by) in images {
        if engine.image_labels(image).await?.is_some() {
            continue;
        }
        phase(&format!("pulling {image}"));
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

async fn run_scenarios(
    engine: &Engine,
    deployment: &mut Deployment,
    prepared: &Prepared,
    settings: &Settings,
    plan: &Plan,
) -> Result<Vec<ScenarioResult>> {
    let suite = &plan.suite;
    if !plan.run_wide.is_empty() {
        phase(&format!("starting {}", plan.run_wide.join(", ")));
        deployment.up(&plan.run_wide, READY_TIMEOUT).await?;
        let session = open(engine, deployment, plan, prepared, &suite.client, false).await?;
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
            let rep = run_scenario(
                engine,
                deployment,
                plan,
                prepared,
                settings,
                &plan.scenarios[i],
            )
            .await?;
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
    plan: &Plan,
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
    let session = open(
        engine,
        deployment,
        plan,
        prepared,
        &sc.client,
        sc.tls.is_some(),
    )
    .await
    .map_err(ctx)?;
    phases.up_s = t.elapsed().as_secs_f64();
    let outcome = measure_scenario(
        engine,
        deployment,
        &plan.run_wide,
        settings,
        planned,
        session.as_ref(),
        &mut phases,
    )
    .await;
    let closed = session.close().await;

    let t = Instant::now();
    let teardown = run_steps(deployment, "teardown", &sc.teardown).await;
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
    plan: &Plan,
    prepared: &Prepared,
    client: &BTreeMap<String, String>,
    tls: bool,
) -> Result<Box<dyn Session>> {
    let binds = if tls {
        vec![format!("{}:{TLS_MOUNT}:ro", plan.tls_dir.display())]
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
    run_wide: &[String],
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
    run_steps(deployment, "setup", &sc.setup).await?;
    phases.setup_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let sampler = resources::Sampler::start(
        engine.docker(),
        sampling_targets(deployment, run_wide, sc.own_broker),
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
