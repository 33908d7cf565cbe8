//! Realises a plan: images, run-wide services, then each scenario (up, setup, warm, measure,
//! teardown, down), returning plain result records. Everything it creates on the engine carries
//! the run's label, so an error or Ctrl-C at any point tears down exactly what this run made.
//!
//! Every phase of a scenario (and of the run-wide services) is guarded: a container of the run
//! that dies, or the engine no longer answering, ends the phase at once with that as the reason.
//! The scenarios whose every repetition completed before a failure stay available to the caller.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use futures_util::future::LocalBoxFuture;

use crate::compose::Project;
use crate::cost;
use crate::driver::{self, flow, Driver, MeasureSpec, Place, Session, VerifySpec, SAMPLE_RECORDS};
use crate::engine::{self, is_engine_gone, Deployment, Engine, EngineGone, ExecOutput};
use crate::images::{self, recipe};
use crate::model::{Expect, Measurement, PathCheck, PhaseTimes, ScenarioResult, ServiceResources};
use crate::plan::{self, Cell, ImageSource, Plan, PlannedScenario, RunPlan};
use crate::resources;
use crate::scenario::Step;
use crate::settings::Settings;
use crate::sweep;

/// How long a service may take to become ready (running, healthy, or answering Kafka).
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// How often a phase checks the run's containers for one that died. A death ends the phase
/// within this plus one check (a listing and an inspect per container, a few ms); an engine that
/// stops answering within this plus twice [`engine::ANSWER_WITHIN`] (the check, then a ping): at
/// most 11 s.
const WATCH_EVERY: Duration = Duration::from_secs(1);
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
    /// Image reference -> how it was made, for every image of the run built here.
    image_sources: BTreeMap<String, String>,
    /// What produces and consumes, chosen once for the run.
    driver: Box<dyn Driver>,
}

/// What a run produced: its id (the label of everything it created), one result per scenario
/// whose every repetition completed, and what ended it early, if anything did.
#[derive(Debug)]
pub struct RunOutput {
    pub run_id: String,
    /// The engine the run used, as it reports its version (recorded with the host facts).
    pub engine_version: Option<String>,
    pub results: Vec<ScenarioResult>,
    /// The failure or interruption that ended the run before every scenario completed.
    pub failure: Option<anyhow::Error>,
}

/// The results of the scenarios whose every repetition has completed, in plan order once taken.
/// Kept outside the run's future, so an interruption, which drops that future, keeps them.
/// It also knows the scenario being measured, so that an interruption can name it.
#[derive(Default)]
struct Completed {
    done: RefCell<Vec<(usize, ScenarioResult)>>,
    current: RefCell<Option<String>>,
}

impl Completed {
    fn push(&self, index: usize, result: ScenarioResult) {
        self.done.borrow_mut().push((index, result));
    }

    fn take(&self) -> Vec<ScenarioResult> {
        let mut done = self.done.take();
        done.sort_by_key(|(i, _)| *i);
        done.into_iter().map(|(_, r)| r).collect()
    }

    /// The scenario (row label) now measured, if any.
    fn measuring(&self, row: Option<String>) {
        *self.current.borrow_mut() = row;
    }

    /// `e`, naming the scenario it interrupted when it is an interruption during one.
    fn name_interrupted(&self, e: anyhow::Error) -> anyhow::Error {
        match self.current.borrow().as_ref() {
            Some(row) if e.is::<engine::Interrupted>() => e.context(format!("scenario {row}")),
            _ => e,
        }
    }
}

/// Runs every planned scenario and returns their results (the caller reports and saves them).
/// Fails only when the engine cannot be reached; any later failure is in
/// [`RunOutput::failure`], beside the results completed before it.
pub async fn run(run: &RunPlan) -> Result<RunOutput> {
    let run_id = run.first().run_id.clone();
    // Everything the run creates carries this id (what a killed run left, `perf-tests clean`
    // removes).
    phase(&format!("run {run_id}"));
    let engine = Engine::connect(&run_id).await?;
    let engine_version = engine.version().await.ok();
    let completed = Completed::default();
    let outcome = engine::interruptible(&engine, run_with(&engine, &run_id, run, &completed)).await;
    crate::progress::finish();
    Ok(RunOutput {
        run_id,
        engine_version,
        results: completed.take(),
        failure: outcome.err().map(|e| completed.name_interrupted(e)),
    })
}

async fn run_with(
    engine: &Engine,
    run_id: &str,
    run: &RunPlan,
    completed: &Completed,
) -> Result<()> {
    let plan = run.first();
    let _run_dir = plan.tls_dir.parent().map(|d| RunDir(d.to_path_buf()));
    let cpus = engine_cpus(engine).await;
    for cell in &run.cells {
        check_cpusets(&cell.settings, &cell.plan, cpus)?;
    }
    let prepared = prepare(engine, run).await?;
    let mut site = EngineSite {
        engine,
        deployment: Deployment::new(engine, plan.project.clone(), &project_name(run_id)),
        plan,
        prepared: &prepared,
        cpus,
    };
    let result = run_scenarios(&mut site, run, completed).await;
    if let Err(e) = &result {
        // Nothing can be removed from an engine that does not answer: the error says so.
        if is_engine_gone(e) {
            return result;
        }
    }
    phase("tearing down");
    let mut down = site.deployment.down_all().await;
    if result.is_err() {
        // A phase a fault ended was dropped mid-way: a container it was creating (a service, a
        // workload) is not the deployment's yet, and holds the network. The run's label finds it.
        down = engine.sweep_run().await;
    }
    crate::progress::finish();
    result?;
    down
}

/// The engine's CPUs as it reports them, else this machine's.
async fn engine_cpus(engine: &Engine) -> usize {
    match engine.cpus().await {
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// Refuses, before anything starts, a pinning to CPUs the engine does not have (the engine's
/// own error would come only when the container is created, mid-run).
fn check_cpusets(settings: &Settings, plan: &Plan, cpus: usize) -> Result<()> {
    if let Some(w) = &plan.workload_cpuset {
        crate::cpuset::check_exists("WORKLOAD_CPUSET", w, cpus)?;
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
        crate::cpuset::check_exists(&what, set, cpus)?;
    }
    Ok(())
}

fn project_name(run_id: &str) -> String {
    format!("perf-tests-{}", run_id.to_ascii_lowercase())
}

fn phase(what: &str) {
    crate::progress::phase(what);
}

/// Chooses the driver, generates the TLS material, makes or finds every image the plan names
/// at any combination, and packages the workload.
async fn prepare(engine: &Engine, run: &RunPlan) -> Result<Prepared> {
    let plan = run.first();
    let driver = driver::for_settings(&run.cells[0].settings)?;
    let tls_dir = &plan.tls_dir;
    std::fs::create_dir_all(tls_dir).with_context(|| format!("creating {}", tls_dir.display()))?;
    if !plan.tls_hosts.is_empty() {
        crate::tls::generate(tls_dir, &plan.tls_hosts)?;
    }
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
                    crate::progress::println(&format!("built image {}", r.describe()))
                }
                recipe::Outcome::UpToDate => {}
            },
            ImageSource::Pull { chosen_by } => pulled.push((image.clone(), chosen_by.clone())),
        }
    }
    ensure_pulled(engine, &pulled).await?;
    // Read once: an image does not change during the run.
    let mut image_sources = BTreeMap::new();
    for (image, _) in &images {
        if let Some(made) = engine
            .image_labels(image)
            .await?
            .as_ref()
            .and_then(recipe::made_from)
        {
            image_sources.insert(image.clone(), made);
        }
    }

    phase("packaging the workload");
    let workload_image = images::workload::ensure(engine).await?;
    Ok(Prepared {
        workload_image,
        image_sources,
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

/// Where a run happens, as the orchestration below sees it: services that come up and go down,
/// commands run in them, driver sessions on their network, resource sampling. [`EngineSite`] is
/// the engine's; a test's fake site runs the same orchestration without an engine.
trait Site {
    /// Brings `services` (and their dependencies) up and waits until they are ready.
    fn up<'a>(&'a mut self, services: &'a [String]) -> LocalBoxFuture<'a, Result<()>>;
    /// Takes `services` down.
    fn down<'a>(&'a mut self, services: &'a [String]) -> LocalBoxFuture<'a, Result<()>>;
    /// Services started from now on are made from `project` (another combination's images);
    /// those up keep running as they were made.
    fn switch(&mut self, project: &Project);
    /// Runs `command` in the container of `service`.
    fn exec<'a>(
        &'a self,
        service: &'a str,
        command: &'a [String],
    ) -> LocalBoxFuture<'a, Result<ExecOutput>>;
    /// Opens a driver session on the services' network with these client properties and, with
    /// `tls`, the run's TLS material.
    fn open<'a>(
        &'a self,
        client: &'a BTreeMap<String, String>,
        tls: bool,
    ) -> LocalBoxFuture<'a, Result<Box<dyn Session>>>;
    /// Starts sampling every container that is up (not the run-wide ones when `own_broker`) and
    /// the session's own containers `workload` (`(name, container id)`, the load generator).
    fn sample(
        &self,
        run_wide: &[String],
        own_broker: bool,
        workload: &[(String, String)],
    ) -> Box<dyn Sampling>;
    /// What guards each phase (see [`guarded`]): it outlives borrows of the site, so a phase
    /// that changes the site (bringing services up) is guarded too.
    fn watcher(&self) -> Rc<dyn Watcher>;
    /// The machine's online CPUs (what 100% per core of every container adds up to).
    fn cpus(&self) -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
    /// Image id per image reference of the containers created so far.
    fn image_ids(&self) -> BTreeMap<String, String>;
    /// How each of `images` was made, for images built here (recipe, artifacts, JDK).
    fn image_sources(&self, images: &BTreeMap<String, String>) -> BTreeMap<String, String>;
    /// The path check: sample records through the endpoint, read back both ways, compared.
    /// Always the native workload's, whatever the driver.
    fn verify<'a>(
        &'a self,
        spec: &'a VerifySpec,
        tls: bool,
    ) -> LocalBoxFuture<'a, Result<PathCheck>>;
}

/// A fault that ends a phase: a container of the run that died, or the engine gone.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fault {
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
trait Watcher {
    /// The fault now, if any: a service of the run, or one of `workload` (`(name, container
    /// id)`), stopped with a non-zero code, or the engine not answering. `phase` is what the
    /// run is doing.
    fn check<'a>(
        &'a self,
        phase: &'a str,
        workload: &'a [(String, String)],
    ) -> LocalBoxFuture<'a, Option<Fault>>;
}

/// Runs `work`, phase `phase` of the run, and ends it as soon as the watcher finds a fault
/// (checked at once, then every [`WATCH_EVERY`]), so a dead broker, proxy or load generator, or
/// a gone engine, stops the phase at once instead of leaving a client retrying until its
/// timeout. When `work` fails first, a fault found right then is reported instead: it is the
/// cause, and what the client saw (a closed connection, a timeout) only its consequence.
async fn guarded<T>(
    watcher: &dyn Watcher,
    phase: &str,
    workload: &[(String, String)],
    work: impl Future<Output = Result<T>>,
) -> Result<T> {
    // Checked at once too: a container that died between phases (while the previous scenario
    // came down) ends this one before it starts.
    let watch = async {
        loop {
            if let Some(fault) = watcher.check(phase, workload).await {
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
        Ok(Err(e)) => match watcher.check(phase, workload).await {
            Some(fault) => Err(fault.into_error(phase)),
            None => Err(e),
        },
        Err(fault) => Err(fault.into_error(phase)),
    }
}

/// The engine's watcher: the deployment's services by their label, and the engine's answer.
struct EngineWatcher {
    engine: Engine,
    project: String,
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
}

/// Resource sampling under way.
trait Sampling {
    /// Ends the sampling and returns the figures per service, with each sample's memory when
    /// `keep_series`.
    fn finish(self: Box<Self>, keep_series: bool)
        -> LocalBoxFuture<'static, Vec<ServiceResources>>;
    /// The cumulative counters of every sampled container, read now (a phase's edge); one
    /// that cannot be read is left out.
    fn counters(&self) -> LocalBoxFuture<'_, cost::Readings> {
        Box::pin(async { Vec::new() })
    }
}

/// The engine's sampling: its stats streams, and its containers' counters read on demand.
struct EngineSampling {
    sampler: resources::Sampler,
    engine: Engine,
    targets: Vec<resources::Target>,
}

impl Sampling for EngineSampling {
    fn finish(
        self: Box<Self>,
        keep_series: bool,
    ) -> LocalBoxFuture<'static, Vec<ServiceResources>> {
        Box::pin(resources::Sampler::finish(self.sampler, keep_series))
    }

    fn counters(&self) -> LocalBoxFuture<'_, cost::Readings> {
        Box::pin(async move {
            let reads = self.targets.iter().map(|t| async move {
                match self.engine.counters(&t.container).await {
                    Ok(c) => Some((t.service.clone(), t.role(), c)),
                    Err(e) => {
                        // Its cost is left out, said so rather than shown as nothing.
                        crate::progress::println(&format!(
                            "warning: no cost for service \"{}\": {e:#}",
                            t.service
                        ));
                        None
                    }
                }
            });
            futures_util::future::join_all(reads)
                .await
                .into_iter()
                .flatten()
                .collect()
        })
    }
}

/// The measured phases' edges, at which the sampled containers' counters are read: what each
/// service used over exactly each phase.
struct CostMarks<'a> {
    sampling: &'a dyn Sampling,
    record_size: u64,
    started: RefCell<Option<(Instant, cost::Readings)>>,
    phases: RefCell<Vec<cost::PhaseCost>>,
}

impl flow::Marks for CostMarks<'_> {
    fn start(&self, _: flow::Phase) -> LocalBoxFuture<'_, ()> {
        Box::pin(async move {
            let counters = self.sampling.counters().await;
            *self.started.borrow_mut() = Some((Instant::now(), counters));
        })
    }

    fn end(&self, phase: flow::Phase, records: u64) -> LocalBoxFuture<'_, ()> {
        Box::pin(async move {
            let end = self.sampling.counters().await;
            let Some((at, start)) = self.started.borrow_mut().take() else {
                return;
            };
            if start.is_empty() {
                return;
            }
            let seconds = at.elapsed().as_secs_f64();
            self.phases.borrow_mut().push(cost::PhaseCost::between(
                phase.name(),
                records,
                self.record_size,
                seconds,
                &start,
                &end,
            ));
        })
    }
}

/// The run on the Docker engine: the plan's Compose project deployed, the chosen driver.
struct EngineSite<'a> {
    engine: &'a Engine,
    deployment: Deployment,
    plan: &'a Plan,
    prepared: &'a Prepared,
    /// The engine's online CPUs.
    cpus: usize,
}

impl Site for EngineSite<'_> {
    fn up<'a>(&'a mut self, services: &'a [String]) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(self.deployment.up(services, READY_TIMEOUT))
    }

    fn down<'a>(&'a mut self, services: &'a [String]) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(self.deployment.down(services))
    }

    fn switch(&mut self, project: &Project) {
        self.deployment.set_project(project.clone());
    }

    fn exec<'a>(
        &'a self,
        service: &'a str,
        command: &'a [String],
    ) -> LocalBoxFuture<'a, Result<ExecOutput>> {
        Box::pin(self.deployment.exec(service, command))
    }

    fn open<'a>(
        &'a self,
        client: &'a BTreeMap<String, String>,
        tls: bool,
    ) -> LocalBoxFuture<'a, Result<Box<dyn Session>>> {
        self.prepared.driver.open(self.place(client, tls))
    }

    fn sample(
        &self,
        run_wide: &[String],
        own_broker: bool,
        workload: &[(String, String)],
    ) -> Box<dyn Sampling> {
        let mut targets = sampling_targets(&self.deployment, run_wide, own_broker);
        targets.extend(workload_targets(workload));
        Box::new(EngineSampling {
            sampler: resources::Sampler::start(self.engine, targets.clone()),
            engine: self.engine.clone(),
            targets,
        })
    }

    fn cpus(&self) -> usize {
        self.cpus
    }

    fn image_ids(&self) -> BTreeMap<String, String> {
        self.deployment.image_ids()
    }

    fn watcher(&self) -> Rc<dyn Watcher> {
        Rc::new(EngineWatcher {
            engine: self.engine.clone(),
            project: self.deployment.name().to_string(),
        })
    }

    fn image_sources(&self, images: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        images
            .keys()
            .filter_map(|i| Some((i.clone(), self.prepared.image_sources.get(i)?.clone())))
            .collect()
    }

    fn verify<'a>(
        &'a self,
        spec: &'a VerifySpec,
        tls: bool,
    ) -> LocalBoxFuture<'a, Result<PathCheck>> {
        let place = self.place(&BTreeMap::new(), tls);
        Box::pin(async move { driver::path_check(&place, spec).await })
    }
}

impl EngineSite<'_> {
    /// Where driver sessions and the path check run: the services' network, the run's TLS
    /// material when `tls`.
    fn place<'a>(&'a self, client: &BTreeMap<String, String>, tls: bool) -> Place<'a> {
        let binds = if tls {
            vec![format!("{}:{TLS_MOUNT}:ro", self.plan.tls_dir.display())]
        } else {
            Vec::new()
        };
        Place {
            engine: self.engine,
            workload_image: &self.prepared.workload_image,
            network: self.deployment.network_name("default"),
            client: client.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            binds,
            cpuset: self.plan.workload_cpuset.clone(),
        }
    }
}

/// Runs the run-wide services and every scenario at every combination, adding each (scenario,
/// combination) to `completed` once its last repetition is done. Each round goes through the
/// combinations and, within each, the scenarios, both rotated by the round, so that drift of
/// the machine spreads over all of them.
async fn run_scenarios(site: &mut impl Site, run: &RunPlan, completed: &Completed) -> Result<()> {
    let watcher = site.watcher();
    let cells = &run.cells;
    let repeat = cells[0].settings.repeat.max(1) as usize;
    let n = run.first().scenarios.len();
    let mut reps: Vec<Vec<Repetition>> = vec![Vec::new(); n * cells.len()];
    // The cell whose project the site deploys, and the one whose run-wide services are up.
    let mut deployed = 0;
    let mut run_wide_of: Option<usize> = None;
    // A sweep's lowest rate each line (scenario, other settings) did not sustain.
    let mut ceiling: BTreeMap<(usize, String), i64> = BTreeMap::new();
    for round in 0..repeat {
        if repeat > 1 {
            phase(&format!("round {} of {repeat}", round + 1));
        }
        // A sweep climbs its rates in order; anything else rotates, against drift.
        let order = if run.sweep {
            (0..cells.len()).collect()
        } else {
            round_order(cells.len(), round)
        };
        for c in order {
            let cell = &cells[c];
            if c != deployed {
                // Only an image of a run-wide service varying restarts them.
                if let Some(w) =
                    run_wide_of.filter(|&w| plan::run_wide_differs(&cells[w].plan, &cell.plan))
                {
                    phase(&format!(
                        "stopping {} for the next combination",
                        cells[w].plan.run_wide.join(", ")
                    ));
                    site.down(&cells[w].plan.run_wide).await?;
                    run_wide_of = None;
                }
                site.switch(&cell.plan.project);
                deployed = c;
            }
            if run_wide_of.is_none() {
                start_run_wide(site, &*watcher, cell).await?;
                run_wide_of = Some(c);
            }
            for i in round_order(n, round) {
                let planned = &cell.plan.scenarios[i];
                let rate = cell.settings.throughput;
                let line = (i, crate::matrix::label(&sweep::line_of(&cell.combination)));
                if run.sweep && ceiling.get(&line).is_some_and(|&max| rate > max) {
                    continue;
                }
                completed.measuring(Some(crate::model::row_label(
                    &planned.scenario.name,
                    &cell.combination,
                )));
                let rep = run_scenario(site, &*watcher, cell, planned).await?;
                completed.measuring(None);
                if let Some(why) = run
                    .sweep
                    .then(|| sweep::shortfall(&rep.measurement, cell.settings.p99_limit_ms))
                    .flatten()
                {
                    crate::progress::println(&format!(
                        "    {} does not sustain {rate} rec/s: {why}; its higher rates are not \
                         measured",
                        crate::model::row_label(&planned.scenario.name, &cell.combination)
                    ));
                    let max = ceiling.entry(line).or_insert(rate);
                    *max = (*max).min(rate);
                }
                // Results are kept scenario by scenario, each scenario's combinations in order.
                let k = i * cells.len() + c;
                reps[k].push(rep);
                if reps[k].len() == repeat {
                    let all = std::mem::take(&mut reps[k]);
                    completed.push(k, combine(cell, planned, all, site.cpus()));
                }
            }
        }
    }
    Ok(())
}

/// Starts and warms a cell's run-wide services (none: nothing to do).
async fn start_run_wide(site: &mut impl Site, watcher: &dyn Watcher, cell: &Cell) -> Result<()> {
    let plan = &cell.plan;
    if plan.run_wide.is_empty() {
        return Ok(());
    }
    let suite = &plan.suite;
    phase(&format!("starting {}", plan.run_wide.join(", ")));
    let up = "bringing up the run-wide services";
    guarded(watcher, up, &[], site.up(&plan.run_wide)).await?;
    let open = "opening a workload session";
    let session = guarded(watcher, open, &[], site.open(&suite.client, false)).await?;
    let warmed = guarded(
        watcher,
        "the run-wide services' readiness check and warm-up",
        &session.measured_containers(),
        ready_and_warm(
            session.as_ref(),
            &suite.ready,
            &suite.bootstrap,
            cell.settings.warm_up_post_broker_start,
        ),
    )
    .await;
    let warmed = match warmed {
        Err(e) if is_engine_gone(&e) => return Err(e),
        other => other,
    };
    let closed = session.close().await;
    warmed?;
    closed?;
    Ok(())
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
    image_sources: BTreeMap<String, String>,
    path_check: Option<PathCheck>,
}

/// One result from every repetition of a scenario: medians, every repetition, summed phase
/// times, combined resource figures and saturation warnings.
/// `cpus` is the machine's online CPUs, for the load generator's saturation warning.
fn combine(
    cell: &Cell,
    planned: &PlannedScenario,
    reps: Vec<Repetition>,
    cpus: usize,
) -> ScenarioResult {
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
    let mut warnings = measurement.producer.saturation();
    warnings.extend(resources::load_generator_saturation(&resources, cpus));
    let combination = cell.combination.clone();
    for w in &warnings {
        eprintln!(
            "warning: {}: {w}",
            crate::model::row_label(&sc.name, &combination)
        );
    }
    ScenarioResult {
        combination,
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
        image_sources: reps
            .last()
            .map(|r| r.image_sources.clone())
            .unwrap_or_default(),
        // A failure in any repetition stays visible.
        path_check: reps
            .iter()
            .filter_map(|r| r.path_check.clone())
            .find(|c| !c.holds())
            .or_else(|| reps.iter().rev().find_map(|r| r.path_check.clone())),
        reference: sc.reference,
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

/// The session's own containers (the load generator), sampled like the scenario's services.
fn workload_targets(workload: &[(String, String)]) -> Vec<resources::Target> {
    workload
        .iter()
        .map(|(name, id)| resources::Target {
            service: name.clone(),
            container: id.clone(),
            run_wide: false,
        })
        .collect()
}

async fn run_scenario(
    site: &mut impl Site,
    watcher: &dyn Watcher,
    cell: &Cell,
    planned: &PlannedScenario,
) -> Result<Repetition> {
    let (settings, plan) = (&cell.settings, &cell.plan);
    let sc = &planned.scenario;
    let started = Instant::now();
    let mut phases = PhaseTimes::default();
    let name = crate::model::row_label(&sc.name, &cell.combination);
    phase(&format!("{name}: {}", sc.description));

    let t = Instant::now();
    let ctx = |e: anyhow::Error| e.context(format!("scenario {name}"));
    if !sc.services.is_empty() {
        let up = "bringing up the scenario's services";
        guarded(watcher, up, &[], site.up(&sc.services))
            .await
            .map_err(ctx)?;
    }
    let open = "opening a workload session";
    let session = guarded(watcher, open, &[], site.open(&sc.client, sc.tls.is_some()))
        .await
        .map_err(ctx)?;
    phases.up_s = t.elapsed().as_secs_f64();
    let outcome = measure_scenario(
        &*site,
        watcher,
        &plan.run_wide,
        settings,
        planned,
        session.as_ref(),
        &mut phases,
    )
    .await;
    // Nothing can be closed or taken down on an engine that does not answer.
    let outcome = match outcome {
        Err(e) if is_engine_gone(&e) => return Err(ctx(e)),
        other => other,
    };
    let closed = session.close().await;
    // The path check runs after the measurement (not sampled, not timed with it), on the same
    // topic name so that topic-selected behaviour (the encryption key) applies to it too.
    let path_check = match (&outcome, sc.expect) {
        (Ok(_), Some(expect)) => Some(path_check(&*site, watcher, settings, planned, expect).await),
        _ => None,
    };
    let path_check = match path_check {
        Some(Err(e)) if is_engine_gone(&e) => return Err(ctx(e)),
        other => other,
    };

    let t = Instant::now();
    let teardown = run_steps(&*site, "teardown", &sc.teardown).await;
    let down = if sc.services.is_empty() {
        Ok(())
    } else {
        site.down(&sc.services).await
    };
    phases.down_s = t.elapsed().as_secs_f64();
    phases.total_s = started.elapsed().as_secs_f64();

    let (measurement, used) = outcome.map_err(ctx)?;
    let path_check = path_check
        .transpose()
        .context("checking what the path does to records")
        .map_err(ctx)?;
    closed.map_err(ctx)?;
    teardown.map_err(ctx)?;
    down.map_err(ctx)?;
    report_checks(&sc.name, path_check.as_ref(), &measurement);
    // The deployment knows every combination's images; this one used its plan's.
    let images: BTreeMap<String, String> = site
        .image_ids()
        .into_iter()
        .filter(|(image, _)| plan.images.iter().any(|i| i.image == *image))
        .collect();
    Ok(Repetition {
        measurement,
        phases,
        resources: used,
        image_sources: site.image_sources(&images),
        images,
        path_check,
    })
}

/// The path check of `planned`: sample records through its endpoint on the measured topic's name
/// (so topic-selected behaviour, the encryption key, applies to it too), guarded like a step.
async fn path_check(
    site: &impl Site,
    watcher: &dyn Watcher,
    settings: &Settings,
    planned: &PlannedScenario,
    expect: Expect,
) -> Result<PathCheck> {
    let sc = &planned.scenario;
    let spec = VerifySpec {
        bootstrap: sc.bootstrap.clone(),
        direct: planned.direct.clone(),
        topic: planned.topic.clone(),
        expect,
        records: SAMPLE_RECORDS,
        record_size: settings.record_size as usize,
        client: sc
            .client
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    };
    guarded(
        watcher,
        "the path check",
        &[],
        site.verify(&spec, sc.tls.is_some()),
    )
    .await
}

/// Prints what the path check found and any disagreement of the record counters.
fn report_checks(scenario: &str, path_check: Option<&PathCheck>, measurement: &Measurement) {
    if let Some(check) = path_check {
        let verdict = if check.holds() { "holds" } else { "FAILED" };
        crate::progress::println(&format!(
            "    path check {verdict}: {}{}",
            check.summary(),
            check
                .first_mismatch
                .as_ref()
                .map(|m| format!("; {m}"))
                .unwrap_or_default()
        ));
    }
    if let Some(problem) = measurement.integrity.problem() {
        crate::progress::println(&format!(
            "warning: {scenario}: record counts disagree: {problem}"
        ));
    }
}

async fn run_steps(site: &impl Site, what: &str, steps: &[Step]) -> Result<()> {
    for step in steps {
        match step {
            Step::Exec { service, command } => {
                crate::progress::detail(&format!(
                    "{what}: exec in {service}: {}",
                    command.join(" ")
                ));
                let out = site.exec(service, command).await?;
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
    site: &impl Site,
    watcher: &dyn Watcher,
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
    let workload = session.measured_containers();
    let before = guarded(
        watcher,
        "the readiness check and warm-up",
        &workload,
        ready_and_warm(session, &sc.ready, &sc.bootstrap, warm),
    )
    .await?;
    phases.up_s += before.values().sum::<f64>();

    let t = Instant::now();
    let setup = run_steps(site, "setup", &sc.setup);
    guarded(watcher, "the setup steps", &workload, setup).await?;
    phases.setup_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let sampler = site.sample(run_wide, sc.own_broker, &session.measured_containers());
    let mut spec = MeasureSpec::new(&sc.bootstrap, &planned.topic, settings.num_records);
    spec.record_size = settings.record_size as usize;
    spec.throughput = settings.throughput;
    spec.properties = settings.producer_properties.clone();
    spec.warm_up_records = settings.warm_up_pre_test;
    spec.warm_up_for = Duration::from_secs(settings.warm_up_seconds_pre_test);
    spec.consume_timeout = CONSUME_TIMEOUT;
    spec.mode = settings.mode;
    spec.catch_up_limit = Duration::from_secs(settings.catch_up_seconds);
    spec.duration = settings.duration.map(Duration::from_secs);
    spec.duration_warm_up = Duration::from_secs(settings.duration_warm_up);
    spec.partitions = settings.partitions as i32;
    spec.topics = settings.topics;
    spec.producers = settings.producers;
    spec.consumers = settings.consumers;
    let marks = CostMarks {
        sampling: sampler.as_ref(),
        record_size: settings.record_size,
        started: RefCell::new(None),
        phases: RefCell::new(Vec::new()),
    };
    let measure = flow::measure_marked(session, &spec, &marks);
    let measured = guarded(watcher, "the measurement", &workload, measure).await;
    let costs = marks.phases.take();
    // Only a run bounded by time keeps each sample's memory: a soak's growth over time.
    let used = sampler.finish(settings.duration.is_some()).await;
    phases.workload_s = t.elapsed().as_secs_f64();
    let mut measurement = measured?;
    measurement.cost = costs;
    measurement.steps_s.extend(before);
    Ok((measurement, used))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::driver::flow::tests::Fake;

    #[test]
    fn rounds_rotate_the_scenario_order() {
        assert_eq!(round_order(3, 0), [0, 1, 2]);
        assert_eq!(round_order(3, 1), [1, 2, 0]);
        assert_eq!(round_order(3, 2), [2, 0, 1]);
        assert_eq!(round_order(3, 3), [0, 1, 2]);
        assert_eq!(round_order(1, 5), [0]);
        assert!(round_order(0, 2).is_empty());
    }

    /// A site that records what the orchestration asks of it; its sessions are fake drivers
    /// recording into the same log.
    #[derive(Default)]
    struct FakeSite {
        log: Arc<Mutex<Vec<String>>>,
        /// Steps the sessions fail.
        fail: Vec<&'static str>,
        /// The sessions opened so far, and the first (1-based) whose steps fail; 0: every one.
        sessions: std::cell::Cell<usize>,
        fail_from_session: usize,
        /// The path check finds the broker holding records as sent.
        path_unchanged: bool,
        /// Mean CPU % its sampling reports for the session's workload container.
        workload_cpu: f64,
        /// A container that dies during a phase: (phase, what the watcher reports).
        dies: Option<(&'static str, &'static str)>,
    }

    /// Finds the site's death in its phase, from the phase's first check on.
    struct FakeWatcher(Option<(&'static str, &'static str)>);

    impl Watcher for FakeWatcher {
        fn check<'a>(
            &'a self,
            phase: &'a str,
            _workload: &'a [(String, String)],
        ) -> LocalBoxFuture<'a, Option<Fault>> {
            let fault = self
                .0
                .filter(|(during, _)| *during == phase)
                .map(|(_, dead)| Fault::Died(dead.to_string()));
            Box::pin(async move { fault })
        }
    }

    impl FakeSite {
        fn note(&self, what: String) {
            self.log.lock().unwrap().push(what);
        }
    }

    /// Reports the workload targets it was given, at the site's workload CPU.
    struct FakeSampling(Arc<Mutex<Vec<String>>>, Vec<ServiceResources>);

    impl Sampling for FakeSampling {
        fn finish(
            self: Box<Self>,
            _keep_series: bool,
        ) -> LocalBoxFuture<'static, Vec<ServiceResources>> {
            self.0.lock().unwrap().push("sampled".into());
            Box::pin(async move { self.1 })
        }
    }

    impl Site for FakeSite {
        fn watcher(&self) -> Rc<dyn Watcher> {
            Rc::new(FakeWatcher(self.dies))
        }
        fn up<'a>(&'a mut self, services: &'a [String]) -> LocalBoxFuture<'a, Result<()>> {
            self.note(format!("up {}", services.join(" ")));
            Box::pin(async { Ok(()) })
        }
        fn down<'a>(&'a mut self, services: &'a [String]) -> LocalBoxFuture<'a, Result<()>> {
            self.note(format!("down {}", services.join(" ")));
            Box::pin(async { Ok(()) })
        }
        fn switch(&mut self, project: &Project) {
            let images: Vec<&str> = project
                .services
                .values()
                .map(|s| s.image.as_str())
                .collect();
            self.note(format!("switch to {}", images.join(" ")));
        }
        fn exec<'a>(
            &'a self,
            service: &'a str,
            command: &'a [String],
        ) -> LocalBoxFuture<'a, Result<ExecOutput>> {
            self.note(format!("exec in {service}: {}", command.join(" ")));
            Box::pin(async { Ok(ExecOutput::default()) })
        }
        fn open<'a>(
            &'a self,
            client: &'a BTreeMap<String, String>,
            tls: bool,
        ) -> LocalBoxFuture<'a, Result<Box<dyn Session>>> {
            self.note(format!("open client={client:?} tls={tls}"));
            self.sessions.set(self.sessions.get() + 1);
            let failing = self.sessions.get() >= self.fail_from_session;
            let session: Box<dyn Session> = Box::new(Fake {
                calls: self.log.clone(),
                fail: if failing {
                    self.fail.clone()
                } else {
                    Vec::new()
                },
                container: Some("c-workload".into()),
                ..Fake::default()
            });
            Box::pin(async { Ok(session) })
        }
        fn sample(
            &self,
            run_wide: &[String],
            own_broker: bool,
            workload: &[(String, String)],
        ) -> Box<dyn Sampling> {
            self.note(format!(
                "sample run-wide={run_wide:?} own_broker={own_broker} workload={workload:?}"
            ));
            let used = workload_targets(workload)
                .into_iter()
                .map(|t| ServiceResources {
                    service: t.service,
                    samples: 3,
                    cpu_pct_mean: self.workload_cpu,
                    cpu_pct_peak: self.workload_cpu,
                    ..Default::default()
                })
                .collect();
            Box::new(FakeSampling(self.log.clone(), used))
        }
        fn cpus(&self) -> usize {
            2
        }
        fn image_ids(&self) -> BTreeMap<String, String> {
            BTreeMap::from([("proxy:1".to_string(), "sha256:p".to_string())])
        }
        fn image_sources(&self, images: &BTreeMap<String, String>) -> BTreeMap<String, String> {
            images
                .keys()
                .map(|i| (i.clone(), format!("recipe of {i}")))
                .collect()
        }
        fn verify<'a>(
            &'a self,
            spec: &'a VerifySpec,
            tls: bool,
        ) -> LocalBoxFuture<'a, Result<PathCheck>> {
            self.note(format!(
                "verify {} via {} direct {} tls={tls}",
                spec.topic, spec.bootstrap, spec.direct
            ));
            let broker_ok = if self.path_unchanged { 0 } else { spec.records };
            let check = PathCheck {
                expect: spec.expect,
                direct: spec.direct.clone(),
                records: spec.records,
                broker_ok,
                consumer_ok: spec.records,
                first_mismatch: (broker_ok == 0)
                    .then(|| "record 0: the broker holds the record as sent".to_string()),
            };
            Box::pin(async { Ok(check) })
        }
    }

    /// A suite of one scenario through a proxy, with setup and teardown steps, planned.
    fn planned(root: &std::path::Path) -> RunPlan {
        use std::fs;
        let suite = root.join("suite");
        fs::create_dir_all(suite.join("01-proxy")).unwrap();
        fs::write(
            root.join("c.yaml"),
            "services:\n  broker: { image: b }\n  proxy: { image: \"proxy:1\", depends_on: [broker] }\n  vault: { image: v }\n",
        )
        .unwrap();
        fs::write(
            suite.join("suite.yaml"),
            "description: s\ncompose: [../c.yaml]\nservices: [broker]\nbootstrap: broker:9092\nready: { broker: \"broker:9092\" }\n",
        )
        .unwrap();
        fs::write(
            suite.join("01-proxy/scenario.yaml"),
            "description: p\nservices: [proxy, vault]\nbootstrap: proxy:9092\nready: { proxy: \"proxy:9092\" }\nclient: { client.id: x }\nexpect: { broker: encrypted, consumer: sent }\nsetup:\n  - exec: { service: vault, command: [key, \"${TOPIC}\"] }\nteardown:\n  - exec: { service: vault, command: [unkey, \"${TOPIC}\"] }\n",
        )
        .unwrap();
        let settings = Settings {
            scenarios: suite,
            commit_id: "c".into(),
            num_records: 10,
            warm_up_post_broker_start: 0,
            warm_up_pre_test: 0,
            ..Settings::default()
        };
        crate::plan::plan_run(&settings, "r").unwrap()
    }

    /// Runs the plan on `site`; the scenarios completed, or the failure.
    async fn run_all(site: &mut FakeSite, run: &RunPlan) -> Result<Vec<ScenarioResult>> {
        let completed = Completed::default();
        run_scenarios(site, run, &completed).await?;
        Ok(completed.take())
    }

    #[tokio::test]
    async fn the_runner_orders_a_scenario_around_the_measurement() {
        let root = tempfile::tempdir().unwrap();
        let plan = planned(root.path());
        let mut site = FakeSite::default();
        let results = run_all(&mut site, &plan).await.unwrap();
        let log = site.log.lock().unwrap().clone();
        let topic = "perf-tests-01-proxy";
        assert_eq!(
            log,
            [
                "up broker".to_string(),
                "open client={} tls=false".into(),
                "probe broker:9092".into(),
                "close".into(),
                "up proxy vault".into(),
                "open client={\"client.id\": \"x\"} tls=false".into(),
                "probe proxy:9092".into(),
                format!("exec in vault: key {topic}"),
                "sample run-wide=[\"broker\"] own_broker=false workload=[(\"workload (load generator)\", \"c-workload\")]".into(),
                format!("create {topic}"),
                "end-offsets".into(),
                "produce 10 at -1".into(),
                "end-offsets".into(),
                "consume 10 from 0".into(),
                format!("delete {topic}"),
                "sampled".into(),
                "close".into(),
                format!("verify {topic} via proxy:9092 direct broker:9092 tls=false"),
                format!("exec in vault: unkey {topic}"),
                "down proxy vault".into(),
            ]
        );
        assert_eq!(results.len(), 1);
        let r = &results[0];
        assert_eq!((r.name.as_str(), r.topic.as_str()), ("01-proxy", topic));
        assert!(r.measurement.integrity.is_ok());
        assert!(r.measurement.steps_s.contains_key("ready"));
        assert_eq!(r.images["proxy:1"], "sha256:p");
        assert_eq!(r.image_sources["proxy:1"], "recipe of proxy:1");
        let check = r.path_check.as_ref().expect("the scenario declares expect");
        assert!(check.holds() && !r.path_check_failed(), "{check:?}");
        // The session's container was sampled as the load generator, below saturation.
        let services: Vec<&str> = r.resources.iter().map(|s| s.service.as_str()).collect();
        assert_eq!(services, ["workload (load generator)"]);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    #[tokio::test]
    async fn a_saturated_load_generator_warns_that_the_row_may_measure_the_client() {
        let root = tempfile::tempdir().unwrap();
        let plan = planned(root.path());
        let mut site = FakeSite {
            workload_cpu: 97.0,
            ..FakeSite::default()
        };
        let results = run_all(&mut site, &plan).await.unwrap();
        let r = &results[0];
        assert_eq!(r.resources[0].cpu_pct_mean, 97.0);
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
        assert!(
            r.warnings[0].contains("load generator is saturated")
                && r.warnings[0].contains("97% CPU"),
            "{:?}",
            r.warnings
        );
        let listed = crate::report::warnings(&results);
        assert!(
            listed[0].starts_with("01-proxy: the load generator"),
            "{listed:?}"
        );
        let table = crate::report::resources_table(&results).expect("a Resources table");
        assert_eq!(table.rows[0][1], "workload (load generator)");
    }

    #[tokio::test]
    async fn a_path_that_does_not_do_what_it_declares_marks_the_result() {
        let root = tempfile::tempdir().unwrap();
        let plan = planned(root.path());
        let mut site = FakeSite {
            path_unchanged: true,
            ..FakeSite::default()
        };
        let results = run_all(&mut site, &plan).await.unwrap();
        let r = &results[0];
        assert!(r.path_check_failed(), "{:?}", r.path_check);
        let rendered = crate::report::tables(&results, None);
        let producer = &rendered[0];
        assert_eq!(producer.rows[0][0], "01-proxy (path check FAILED)");
        let checks = rendered
            .iter()
            .find(|t| t.title == "Path checks")
            .expect("a path check table");
        assert!(
            checks.rows[0][6].starts_with("FAILED: record 0"),
            "{checks:?}"
        );
    }

    #[tokio::test]
    async fn a_container_that_dies_ends_the_measurement_naming_it_and_everything_comes_down() {
        let root = tempfile::tempdir().unwrap();
        let plan = planned(root.path());
        let mut site = FakeSite {
            dies: Some((
                "the measurement",
                "service \"proxy\" (container c-proxy) exited with code 137 (killed)",
            )),
            ..FakeSite::default()
        };
        let err = run_all(&mut site, &plan).await.unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains("scenario 01-proxy")
                && msg.contains("stopped during the measurement")
                && msg.contains("service \"proxy\" (container c-proxy) exited with code 137"),
            "{msg}"
        );
        let log = site.log.lock().unwrap().clone();
        assert!(!log.iter().any(|l| l.starts_with("produce")), "{log:?}");
        let tail: Vec<&str> = log.iter().rev().take(3).rev().map(String::as_str).collect();
        assert_eq!(
            tail,
            [
                "close",
                "exec in vault: unkey perf-tests-01-proxy",
                "down proxy vault"
            ]
        );
    }

    #[tokio::test]
    async fn a_failed_measurement_still_closes_tears_down_and_takes_the_services_down() {
        let root = tempfile::tempdir().unwrap();
        let plan = planned(root.path());
        let mut site = FakeSite {
            fail: vec!["produce"],
            ..FakeSite::default()
        };
        let err = run_all(&mut site, &plan).await.unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains("scenario 01-proxy") && msg.contains("produce"),
            "{msg}"
        );
        let log = site.log.lock().unwrap().clone();
        let tail: Vec<&str> = log.iter().rev().take(4).rev().map(String::as_str).collect();
        assert_eq!(
            tail,
            [
                "sampled",
                "close",
                "exec in vault: unkey perf-tests-01-proxy",
                "down proxy vault"
            ]
        );
        assert!(
            log.contains(&"delete perf-tests-01-proxy".to_string()),
            "{log:?}"
        );
    }

    #[tokio::test]
    async fn a_container_that_dies_before_the_measurement_ends_that_phase_naming_it() {
        let root = tempfile::tempdir().unwrap();
        let plan = planned(root.path());
        let mut site = FakeSite {
            dies: Some((
                "the setup steps",
                "service \"broker\" (container c-broker) exited with code 137 (killed)",
            )),
            ..FakeSite::default()
        };
        let completed = Completed::default();
        let err = run_scenarios(&mut site, &plan, &completed)
            .await
            .unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains(
                "scenario 01-proxy: a container of the run stopped during the setup steps"
            ) && msg.contains("service \"broker\" (container c-broker) exited with code 137"),
            "{msg}"
        );
        // Nothing was measured, nothing completed; the scenario still came down.
        let log = site.log.lock().unwrap().clone();
        assert!(!log.iter().any(|l| l.starts_with("sample")), "{log:?}");
        assert_eq!(log.last().map(String::as_str), Some("down proxy vault"));
        assert!(completed.take().is_empty());
    }

    #[tokio::test]
    async fn a_failure_keeps_the_scenarios_completed_before_it() {
        let root = tempfile::tempdir().unwrap();
        let plan = planned(root.path());
        let settings = plan.cells[0].settings.clone();
        let suite = &settings.scenarios;
        std::fs::create_dir_all(suite.join("02-again")).unwrap();
        std::fs::copy(
            suite.join("01-proxy/scenario.yaml"),
            suite.join("02-again/scenario.yaml"),
        )
        .unwrap();
        let plan = crate::plan::plan_run(&settings, &plan.first().run_id).unwrap();
        // Sessions: the run-wide one, 01's, then 02's, whose produce fails.
        let mut site = FakeSite {
            fail: vec!["produce"],
            fail_from_session: 3,
            ..FakeSite::default()
        };
        let completed = Completed::default();
        let err = run_scenarios(&mut site, &plan, &completed)
            .await
            .unwrap_err();
        assert!(format!("{err:#}").contains("scenario 02-again"), "{err:#}");
        let done = completed.take();
        let names: Vec<&str> = done.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["01-proxy"]);
    }

    #[tokio::test]
    async fn a_matrix_measures_every_scenario_at_every_combination_interleaved() {
        let root = tempfile::tempdir().unwrap();
        let settings = planned(root.path()).cells[0].settings.clone();
        let settings = Settings {
            repeat: 2,
            matrix: vec![crate::matrix::axis("NUM_RECORDS", &["10".into(), "20".into()]).unwrap()],
            ..settings
        };
        let run = crate::plan::plan_run(&settings, "r").unwrap();
        let mut site = FakeSite::default();
        let results = run_all(&mut site, &run).await.unwrap();
        let log = site.log.lock().unwrap().clone();
        let produced: Vec<&str> = log
            .iter()
            .filter(|l| l.starts_with("produce"))
            .map(String::as_str)
            .collect();
        // Round 1 goes 10 then 20, round 2 starts one combination later.
        assert_eq!(
            produced,
            [
                "produce 10 at -1",
                "produce 20 at -1",
                "produce 20 at -1",
                "produce 10 at -1"
            ]
        );
        // Neither combination changes the run-wide broker: it starts once.
        assert_eq!(
            log.iter().filter(|l| *l == "up broker").count(),
            1,
            "{log:?}"
        );
        let rows: Vec<(String, String)> = results
            .iter()
            .map(|r| (r.name.clone(), crate::matrix::label(&r.combination)))
            .collect();
        assert_eq!(
            rows,
            [
                ("01-proxy".to_string(), "NUM_RECORDS=10".to_string()),
                ("01-proxy".to_string(), "NUM_RECORDS=20".to_string())
            ]
        );
        assert!(results.iter().all(|r| r.repetitions.len() == 2));
        assert_eq!(results[1].measurement.integrity.requested, 20);
    }

    #[tokio::test]
    async fn a_varying_image_of_a_run_wide_service_restarts_it_between_combinations() {
        let root = tempfile::tempdir().unwrap();
        let settings = planned(root.path()).cells[0].settings.clone();
        // The broker's image comes from KAFKA_IMAGE, which varies.
        std::fs::write(
            root.path().join("c.yaml"),
            "services:\n  broker: { image: \"${KAFKA_IMAGE}\" }\n  proxy: { image: \"proxy:1\", depends_on: [broker] }\n  vault: { image: v }\n",
        )
        .unwrap();
        let settings = Settings {
            matrix: vec![
                crate::matrix::axis("KAFKA_IMAGE", &["k:1".into(), "k:2".into()]).unwrap(),
            ],
            ..settings
        };
        let run = crate::plan::plan_run(&settings, "r").unwrap();
        let mut site = FakeSite::default();
        let results = run_all(&mut site, &run).await.unwrap();
        let log = site.log.lock().unwrap().clone();
        let run_wide: Vec<&str> = log
            .iter()
            .filter(|l| *l == "up broker" || *l == "down broker" || l.starts_with("switch"))
            .map(String::as_str)
            .collect();
        assert_eq!(
            run_wide,
            [
                "up broker",
                "down broker",
                "switch to k:2 proxy:1 v",
                "up broker"
            ]
        );
        assert_eq!(results.len(), 2);
        assert_eq!(results[1].combination["KAFKA_IMAGE"], "k:2");
    }
}
