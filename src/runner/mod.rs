//! Realises a plan: images, run-wide services, then each scenario (up, setup, warm, measure,
//! teardown, down), returning plain result records. Everything it creates on the engine carries
//! the run's label, so an error or Ctrl-C at any point tears down exactly what this run made.
//!
//! Every phase of a scenario (and of the run-wide services) is guarded: a container of the run
//! that dies, or the engine no longer answering, ends the phase at once with that as the reason.
//! The scenarios whose every repetition completed before a failure stay available to the caller.
//!
//! `prepare` makes what a run needs before its first container; `site` is where it runs (the
//! engine's realisation behind the [`Site`] trait the orchestration here drives, and the
//! sampling); `guard` is the fault guard every phase runs under; `combine` makes a scenario's
//! one result of its repetitions.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::analysis::sweep;
use crate::driver::{flow, Endpoint, MeasureSpec, Session, VerifySpec, SAMPLE_RECORDS};
use crate::model::run::NodeFacts;
use crate::model::{Expect, Measurement, PathCheck, PhaseTimes, ScenarioResult, ServiceResources};
use crate::plan::{self, Cell, Plan, PlannedScenario, RunPlan};
use crate::progress::phase;
use crate::scenario::Step;
use crate::settings::Settings;
use crate::world::engine::{self, is_engine_gone, Deployment, Engine};

mod combine;
mod guard;
mod machines;
mod placement;
mod prepare;
mod profiler;
mod schedule;
mod site;

use combine::*;
use guard::*;
use prepare::*;
use site::*;

/// Per-run scratch space on the host (generated certificates); removed when the run ends.
struct RunDir(PathBuf);

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a run produced: its id (the label of everything it created), one result per scenario
/// whose every repetition completed, and what ended it early, if anything did.
#[derive(Debug)]
pub(crate) struct RunOutput {
    pub run_id: String,
    /// The machines of the engines the run used (recorded beside the host's facts); empty when
    /// the run ended before it read them.
    pub nodes: Vec<NodeFacts>,
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
pub(crate) async fn run(run: &RunPlan) -> Result<RunOutput> {
    let run_id = run.first().run_id.clone();
    // Everything the run creates carries this id (what a killed run left, `perf-tests clean`
    // removes).
    phase(&format!("run {run_id}"));
    let mut engine = Engine::connect(&run_id).await?;
    if run.cells[0].settings.engine == crate::settings::EngineKind::Swarm {
        engine = engine.swarm().await?;
    }
    let completed = Completed::default();
    let nodes = RefCell::new(Vec::new());
    let outcome = engine::interruptible(
        &engine,
        run_with(&engine, &run_id, run, (&completed, &nodes)),
    )
    .await;
    crate::progress::finish();
    Ok(RunOutput {
        run_id,
        nodes: nodes.take(),
        results: completed.take(),
        failure: outcome.err().map(|e| completed.name_interrupted(e)),
    })
}

/// [`run`] on `engine`: the scenarios' results go to `completed`, the machines' facts to `nodes`
/// (both kept outside this future, which an interruption drops).
async fn run_with(
    engine: &Engine,
    run_id: &str,
    run: &RunPlan,
    (completed, nodes): (&Completed, &RefCell<Vec<NodeFacts>>),
) -> Result<()> {
    let plan = run.first();
    let _run_dir = plan.tls_dir.parent().map(|d| RunDir(d.to_path_buf()));
    let cpus = engine_cpus(engine).await;
    let placement = swarm_placement(engine, run).await?;
    let (workload_engines, workload_cpus) =
        load_generators(engine, run, placement.as_ref()).await?;
    for cell in &run.cells {
        check_cpusets(&cell.settings, &cell.plan, cpus, &workload_cpus)?;
    }
    let prepared = prepare(engine, run).await?;
    let mut deployment = Deployment::new(engine, plan.project.clone(), &project_name(run_id));
    if let Some(placement) = &placement {
        deliver_images(engine, run, placement, &prepared).await?;
        deployment.set_constraints(placement.constraints());
    }
    phase("reading the machines' facts");
    *nodes.borrow_mut() =
        machines::node_facts(engine, placement.as_ref(), &prepared.workload_image).await?;
    let mut site = EngineSite {
        engine,
        workload_engines,
        deployment,
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

/// On a swarm, where each service goes, checked against its nodes (and the registry they pull
/// from) before anything is built or started; `None` on one engine.
async fn swarm_placement(engine: &Engine, run: &RunPlan) -> Result<Option<placement::Placement>> {
    if !engine.is_swarm() {
        return Ok(None);
    }
    let plan = run.first();
    let services = placement::Services {
        all: &plan.services,
        run_wide: &plan.run_wide,
    };
    let settings = &run.cells[0].settings;
    let placement = placement::place(&services, settings, engine.nodes())?;
    if let Some(registry) = &settings.registry {
        placement::check_registry(engine, &placement, registry).await?;
    }
    Ok(Some(placement))
}

/// Each load generator's engine: on a swarm the load nodes' in turn, so it is pinned to CPUs
/// of its node; and the CPUs of the first of them on each machine (the first ones), to check
/// the pinning against.
async fn load_generators(
    engine: &Engine,
    run: &RunPlan,
    placement: Option<&placement::Placement>,
) -> Result<(Vec<Engine>, Vec<Cpus>)> {
    let generators = run.cells[0].settings.load_generators.max(1) as usize;
    let (engines, machines) = match placement {
        Some(p) => {
            let engines = (0..generators)
                .map(|i| engine.on_node(p.load_node(i)))
                .collect::<Result<Vec<_>>>()?;
            (engines, generators.min(p.load_nodes().len()))
        }
        None => (vec![engine.clone(); generators], 1),
    };
    let mut cpus = Vec::new();
    for (i, on) in engines.iter().take(machines).enumerate() {
        let of = match on.node() {
            Some(node) => format!("swarm node {node}, load generator {}'s,", i + 1),
            None => "the engine".to_string(),
        };
        cpus.push(Cpus {
            count: engine_cpus(on).await,
            of,
        });
    }
    Ok((engines, cpus))
}

/// The images a swarm's nodes need, delivered to them: each service's to its node, and to every
/// node the workload's (it reads each node's CPU model) and iperf3's (it measures between
/// nodes).
async fn deliver_images(
    engine: &Engine,
    run: &RunPlan,
    placement: &placement::Placement,
    prepared: &Prepared,
) -> Result<()> {
    let workload = prepared.driver.images();
    let mut everywhere = vec![prepared.workload_image.clone()];
    if run.cells.iter().any(|c| c.settings.network_ceiling) {
        everywhere.push(crate::world::ceiling::IMAGE.to_string());
    }
    let plans: Vec<&Plan> = run.cells.iter().map(|c| &c.plan).collect();
    let registry = run.cells[0].settings.registry.as_deref();
    let images = (workload.as_slice(), everywhere.as_slice());
    placement::deliver_images(engine, &plans, placement, images, registry).await
}

fn project_name(run_id: &str) -> String {
    format!("perf-tests-{}", run_id.to_ascii_lowercase())
}

/// Tells each repetition as it ends (with a paired scenario's pair), for the live view.
fn show(label: &str, planned: &PlannedScenario, measured: &[Repetition]) {
    for rep in measured {
        crate::progress::emit(crate::progress::Event::Measured {
            label,
            measurement: &rep.measurement,
            pair: planned.pair.as_ref().map(|p| &p.pair),
        });
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
    let mut gathered = schedule::Gathered::new(n, cells.len());
    let mut ceilings = schedule::Ceilings::default();
    // The cell whose project the site deploys, and the one whose run-wide services are up.
    let mut deployed = 0;
    let mut run_wide_of: Option<usize> = None;
    for step in schedule::steps(repeat, cells.len(), n, run.sweep) {
        let (c, i) = match step {
            schedule::Step::Round(round) => {
                if repeat > 1 {
                    phase(&format!("round {} of {repeat}", round + 1));
                }
                continue;
            }
            schedule::Step::Measure { cell, scenario } => (cell, scenario),
        };
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
        let planned = &cell.plan.scenarios[i];
        let rate = cell.settings.throughput;
        let line = (
            i,
            crate::settings::matrix::label(&sweep::line_of(&cell.combination)),
        );
        // Only a sweep records what a line did not sustain.
        if ceilings.skips(&line, rate) {
            continue;
        }
        let label = crate::model::row_label(&planned.scenario.name, &cell.combination);
        completed.measuring(Some(label.clone()));
        let first = gathered.first(i, c);
        let measured = run_scenario(site, &*watcher, cell, planned, first).await?;
        completed.measuring(None);
        show(&label, planned, &measured);
        let limit = cell.settings.p99_limit_ms;
        let shortfall = || {
            measured
                .iter()
                .find_map(|r| sweep::shortfall(&r.measurement, limit))
        };
        if let Some(why) = run.sweep.then(shortfall).flatten() {
            crate::progress::notice(&format!(
                "    {label} does not sustain {rate} rec/s: {why}; its higher rates are not \
                 measured"
            ));
            ceilings.not_sustained(line, rate);
        }
        let all = repeat * planned.phases(&cell.settings);
        if let Some((k, reps)) = gathered.add(i, c, measured, all) {
            completed.push(k, combine(cell, planned, reps, site.cpus()));
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
    let opened = site.open(&suite.client, false, DEFAULT_NETWORK);
    let session = guarded(watcher, open, &[], opened).await?;
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

async fn run_scenario(
    site: &mut impl Site,
    watcher: &dyn Watcher,
    cell: &Cell,
    planned: &PlannedScenario,
    first: bool,
) -> Result<Vec<Repetition>> {
    let (settings, plan) = (&cell.settings, &cell.plan);
    let sc = &planned.scenario;
    let started = Instant::now();
    let mut phases = PhaseTimes::default();
    let name = crate::model::row_label(&sc.name, &cell.combination);
    phase(&format!("{name}: {}", sc.description));

    let t = Instant::now();
    let ctx = |e: anyhow::Error| e.context(format!("scenario {name}"));
    let started_services = planned.started();
    let (session, session_b) = bring_up(&mut *site, watcher, planned, &started_services)
        .await
        .map_err(ctx)?;
    phases.up_s = t.elapsed().as_secs_f64();
    let network = if settings.network_ceiling && first {
        network_ceiling(&*site, watcher, planned, plan, &name)
            .await
            .map_err(ctx)?
    } else {
        Vec::new()
    };
    let sessions = Sessions {
        a: session.as_ref(),
        b: session_b.as_deref(),
    };
    let outcome = measure_scenario(&*site, watcher, cell, planned, &sessions, &mut phases).await;
    // Nothing can be closed or taken down on an engine that does not answer.
    let outcome = match outcome {
        Err(e) if is_engine_gone(&e) => return Err(ctx(e)),
        other => other,
    };
    let closed = session.close().await;
    let closed = match &session_b {
        Some(s) => closed.and(s.close().await),
        None => closed,
    };
    let checks = match (&outcome, sc.expect) {
        (Ok(_), Some(expect)) => path_checks(&*site, watcher, settings, planned, expect)
            .await
            .map_err(ctx)?,
        _ => Vec::new(),
    };
    let t = Instant::now();
    let down = take_down(&mut *site, planned, &started_services).await;
    phases.down_s = t.elapsed().as_secs_f64();
    phases.total_s = started.elapsed().as_secs_f64();

    let (measurements, used) = outcome.map_err(ctx)?;
    let checked = |check: Option<Result<PathCheck>>| {
        check
            .transpose()
            .context("checking what the path does to records")
            .map_err(ctx)
    };
    let mut checks = checks.into_iter();
    let path_check = checked(checks.next())?;
    let path_check_b = checked(checks.next())?;
    closed.map_err(ctx)?;
    down.map_err(ctx)?;
    report_checks(&sc.name, path_check.as_ref(), &measurements);
    if let Some(check) = &path_check_b {
        report_check("side B's path check", check);
    }
    let (images, image_sources) = images_used(&*site, plan);
    let once = BringUp {
        phases,
        resources: used,
        path_check,
        path_check_b,
        network,
    };
    Ok(repetitions(measurements, once, &images, &image_sources))
}

/// A bring-up's teardown steps (side A's, then side B's), then its services taken down; the
/// first failure, once all were tried.
async fn take_down(
    site: &mut impl Site,
    planned: &PlannedScenario,
    started: &[String],
) -> Result<()> {
    let mut teardown = run_steps(&*site, "teardown", &planned.scenario.teardown).await;
    if let Some(p) = &planned.pair {
        let b = run_steps(&*site, "side B's teardown", &p.teardown).await;
        teardown = teardown.and(b);
    }
    let down = if started.is_empty() {
        Ok(())
    } else {
        site.down(started).await
    };
    teardown.and(down)
}

/// The images of `plan` and how each was made (the deployment knows every combination's; a
/// bring-up used its plan's), each by its id.
fn images_used(
    site: &impl Site,
    plan: &Plan,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let images: BTreeMap<String, String> = site
        .image_ids()
        .into_iter()
        .filter(|(image, _)| plan.images.iter().any(|i| i.image == *image))
        .collect();
    let sources = site.image_sources(&images);
    (images, sources)
}

/// What a bring-up measured besides its measurements, counted once.
#[derive(Default)]
struct BringUp {
    phases: PhaseTimes,
    resources: Vec<ServiceResources>,
    path_check: Option<PathCheck>,
    path_check_b: Option<PathCheck>,
    network: Vec<crate::model::NetworkCeiling>,
}

/// A bring-up's measurements as repetitions, each naming the images. A paired bring-up's later
/// phases are repetitions of their own measurements; what the bring-up measured (`once`) is
/// counted with the first.
fn repetitions(
    measurements: Vec<Measurement>,
    once: BringUp,
    images: &BTreeMap<String, String>,
    image_sources: &BTreeMap<String, String>,
) -> Vec<Repetition> {
    let mut once = Some(once);
    measurements
        .into_iter()
        .map(|measurement| {
            let b = once.take().unwrap_or_default();
            Repetition {
                measurement,
                phases: b.phases,
                resources: b.resources,
                images: images.clone(),
                image_sources: image_sources.clone(),
                path_check: b.path_check,
                path_check_b: b.path_check_b,
                network: b.network,
            }
        })
        .collect()
}

/// The scenario's `started` services brought up, then its workload sessions opened.
async fn bring_up(
    site: &mut impl Site,
    watcher: &dyn Watcher,
    planned: &PlannedScenario,
    started: &[String],
) -> Result<(Box<dyn Session>, Option<Box<dyn Session>>)> {
    if !started.is_empty() {
        let up = "bringing up the scenario's services";
        guarded(watcher, up, &[], site.up(started)).await?;
    }
    open_sessions(&*site, watcher, planned).await
}

/// A workload session for side A (the scenario's, on the default network) and, in a paired
/// run, one for side B: its clients run on side B's network, where its services answer to
/// side A's names.
async fn open_sessions(
    site: &impl Site,
    watcher: &dyn Watcher,
    planned: &PlannedScenario,
) -> Result<(Box<dyn Session>, Option<Box<dyn Session>>)> {
    let sc = &planned.scenario;
    let tls = sc.tls.is_some();
    let open = "opening a workload session";
    let opened = site.open(&sc.client, tls, DEFAULT_NETWORK);
    let session = guarded(watcher, open, &[], opened).await?;
    let Some(p) = &planned.pair else {
        return Ok((session, None));
    };
    let open = "opening side B's workload session";
    let opened = site.open(&sc.client, tls, &p.pair.network);
    match guarded(watcher, open, &[], opened).await {
        Ok(b) => Ok((session, Some(b))),
        Err(e) => {
            let _ = session.close().await;
            Err(e)
        }
    }
}

/// The path checks of a measured bring-up: after the measurement (not sampled, not timed with
/// it), on the same topic name so that topic-selected behaviour (the encryption key) applies
/// to it too. In a paired run through each side's endpoint, on its last phase's topic: the
/// first is the scenario's own, set up as in any run, while a later one's holds only if every
/// phase's topic was. Side A's check first; an engine that stopped answering ends them all.
async fn path_checks(
    site: &impl Site,
    watcher: &dyn Watcher,
    settings: &Settings,
    planned: &PlannedScenario,
    expect: Expect,
) -> Result<Vec<Result<PathCheck>>> {
    let last = planned.pair.as_ref().and_then(|p| p.topics.last());
    let a = (
        DEFAULT_NETWORK,
        last.map_or(planned.topic.as_str(), |(a, _)| a.as_str()),
    );
    let b = planned
        .pair
        .as_ref()
        .zip(last)
        .map(|(p, (_, b))| (p.pair.network.as_str(), b.as_str()));
    let mut checks = Vec::new();
    for (network, topic) in std::iter::once(a).chain(b) {
        let check = path_check(site, watcher, settings, planned, expect, network, topic).await;
        match check {
            Err(e) if is_engine_gone(&e) => return Err(e),
            check => checks.push(check),
        }
    }
    Ok(checks)
}

/// The Compose network side A's clients (and any unpaired scenario's) join.
const DEFAULT_NETWORK: &str = "default";

/// The workload sessions of a bring-up: side A's (the scenario's), and side B's in a paired run.
struct Sessions<'a> {
    a: &'a dyn Session,
    b: Option<&'a dyn Session>,
}

impl Sessions<'_> {
    /// Every session's own containers, side B's named as its.
    fn measured_containers(&self) -> Vec<(String, String)> {
        let mut all = self.a.measured_containers();
        if let Some(b) = self.b {
            all.extend(
                b.measured_containers()
                    .into_iter()
                    .map(|(name, id)| (format!("{name} B"), id)),
            );
        }
        all
    }
}

/// The network's ceiling on each hop of `planned`'s path, once its services are up and before
/// anything of it is measured (once per scenario and combination).
async fn network_ceiling(
    site: &impl Site,
    watcher: &dyn Watcher,
    planned: &PlannedScenario,
    plan: &Plan,
    name: &str,
) -> Result<Vec<crate::model::NetworkCeiling>> {
    phase(&format!("{name}: measuring the network ceiling"));
    let hops = hops(planned, plan);
    guarded(
        watcher,
        "measuring the network ceiling",
        &[],
        site.ceiling(&hops),
    )
    .await
}

/// The hops `planned`'s records cross: from the load generator to its endpoint's service and,
/// when that is not the broker's (a proxy in between), from it on to the broker's; each host is
/// the scenario's or a run-wide service it reaches (a host of none is left as it is, and the
/// site says it is not a container of the run).
fn hops(planned: &PlannedScenario, plan: &Plan) -> Vec<crate::world::ceiling::Hop> {
    let service_at = |host: &str| {
        let among = planned.closure.iter().chain(&plan.run_wide);
        plan.project
            .service_at(host, among)
            .cloned()
            .unwrap_or_else(|| host.to_string())
    };
    let front_host = crate::world::ceiling::host(&planned.scenario.bootstrap);
    let broker_host = crate::world::ceiling::host(&planned.direct);
    let (front, broker) = (service_at(front_host), service_at(broker_host));
    let mut hops = vec![crate::world::ceiling::Hop {
        from: None,
        to: front.clone(),
        host: front_host.to_string(),
    }];
    if front != broker {
        hops.push(crate::world::ceiling::Hop {
            from: Some(front),
            to: broker,
            host: broker_host.to_string(),
        });
    }
    hops
}

/// The path check of `planned`: sample records through its endpoint on the measured topic's name
/// (so topic-selected behaviour, the encryption key, applies to it too), guarded like a step.
async fn path_check(
    site: &impl Site,
    watcher: &dyn Watcher,
    settings: &Settings,
    planned: &PlannedScenario,
    expect: Expect,
    network: &str,
    topic: &str,
) -> Result<PathCheck> {
    let sc = &planned.scenario;
    let client: Vec<(String, String)> = sc
        .client
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let spec = VerifySpec {
        endpoint: Endpoint::new(&sc.bootstrap, &client),
        direct: planned.direct.clone(),
        topic: topic.to_string(),
        expect,
        records: SAMPLE_RECORDS,
        record_size: settings.record_size as usize,
        partitions: settings.brokers as i32,
        replication_factor: settings.replication_factor as i32,
    };
    guarded(
        watcher,
        "the path check",
        &[],
        site.verify(&spec, sc.tls.is_some(), network),
    )
    .await
}

/// Prints what the path check found and any disagreement of the record counters.
fn report_checks(scenario: &str, path_check: Option<&PathCheck>, measurements: &[Measurement]) {
    if let Some(check) = path_check {
        report_check("path check", check);
    }
    for problem in measurements.iter().filter_map(|m| m.integrity.problem()) {
        crate::progress::notice(&format!(
            "warning: {scenario}: record counts disagree: {problem}"
        ));
    }
}

/// Tells what one path check found.
fn report_check(what: &str, check: &PathCheck) {
    crate::progress::emit(crate::progress::Event::Checked { what, check });
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
                // What the step made (a key's id, say) stays visible in the log.
                if let Some(last) = out.stdout.lines().rev().find(|l| !l.trim().is_empty()) {
                    crate::progress::notice(&format!("    {what}: {service}: {}", last.trim()));
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

/// A side's spec of a paired bring-up's `phase`th measured phase (from 1) on `topic`: the
/// first is `spec` itself; a later one warms only its own topic, with `spec`'s warm-up records,
/// the JVMs being warm from the first.
fn paired_phase(spec: &MeasureSpec, phase: usize, topic: &str) -> MeasureSpec {
    let spec = MeasureSpec {
        topic: topic.to_string(),
        ..spec.clone()
    };
    if phase <= 1 {
        return spec;
    }
    MeasureSpec {
        warm_up_for: Duration::ZERO,
        warm_up_jit: None,
        ..spec
    }
}

/// The scenario's setup steps, then side B's in a paired run.
async fn set_up(
    site: &impl Site,
    watcher: &dyn Watcher,
    planned: &PlannedScenario,
    workload: &[(String, String)],
) -> Result<()> {
    let setup = run_steps(site, "setup", &planned.scenario.setup);
    guarded(watcher, "the setup steps", workload, setup).await?;
    if let Some(p) = &planned.pair {
        let setup = run_steps(site, "side B's setup", &p.setup);
        guarded(watcher, "side B's setup steps", workload, setup).await?;
    }
    Ok(())
}

/// Each measured phase of `spec` with the costs read at its edges: one, or in a paired run each
/// paired phase on its own topics, side B's through its endpoint.
async fn measure_phases(
    sessions: &Sessions<'_>,
    planned: &PlannedScenario,
    spec: &MeasureSpec,
    marks: &PhaseMarks<'_>,
) -> Result<Vec<(Measurement, Vec<crate::accounting::cost::PhaseCost>)>> {
    let session = sessions.a;
    let (Some(pair), Some(session_b)) = (&planned.pair, sessions.b) else {
        let m = flow::measure_marked(session, spec, marks).await?;
        return Ok(vec![(m, marks.phases.take())]);
    };
    let count = pair.topics.len();
    let mut measured = Vec::new();
    for (i, (topic_a, topic_b)) in pair.topics.iter().enumerate() {
        let a = paired_phase(spec, i + 1, topic_a);
        let b = MeasureSpec {
            bootstrap: pair.pair.bootstrap.clone(),
            ..paired_phase(spec, i + 1, topic_b)
        };
        if count > 1 {
            crate::progress::detail(&format!("paired phase {} of {count}", i + 1));
        }
        let sides = flow::Sides {
            a: (session, &a),
            b: (session_b, &b),
        };
        let m = flow::measure_pair(&sides, marks).await?;
        measured.push((m, marks.phases.take()));
    }
    Ok(measured)
}

/// A scenario whose services are up: readiness and its own broker's warm-up, setup, then the
/// measurement with its resources sampled (each measured phase's, for a paired scenario).
async fn measure_scenario(
    site: &impl Site,
    watcher: &dyn Watcher,
    cell: &Cell,
    planned: &PlannedScenario,
    sessions: &Sessions<'_>,
    phases: &mut PhaseTimes,
) -> Result<(Vec<Measurement>, Vec<ServiceResources>)> {
    let (settings, run_wide) = (&cell.settings, &cell.plan.run_wide);
    let sc = &planned.scenario;
    let session = sessions.a;
    let warm = if sc.own_broker {
        settings.warm_up_post_broker_start
    } else {
        0
    };
    let workload = sessions.measured_containers();
    let before = guarded(
        watcher,
        "the readiness check and warm-up",
        &workload,
        ready_and_warm(session, &sc.ready, &sc.bootstrap, warm),
    )
    .await?;
    phases.up_s += before.values().sum::<f64>();
    if let Some(b) = sessions.b {
        // Side B's services answer on its network to the names side A's do on theirs.
        let t = Instant::now();
        let ready = ready_and_warm(b, &sc.ready, &sc.bootstrap, warm);
        guarded(watcher, "side B's readiness check", &workload, ready).await?;
        phases.up_s += t.elapsed().as_secs_f64();
    }

    let t = Instant::now();
    set_up(site, watcher, planned, &workload).await?;
    phases.setup_s = t.elapsed().as_secs_f64();

    // Loaded before the warm-up, recording only in the measured phases.
    let label = crate::model::row_label(&sc.name, &cell.combination);
    // Unnamed: every JVM of the path, both sides' in a paired run.
    let started = planned.started();
    let profiler = match settings.profile {
        None => None,
        Some(mode) => {
            let explicit = !settings.profile_services.is_empty();
            let services = if explicit {
                &settings.profile_services
            } else {
                &started
            };
            let attach = site.profiler(mode, services, explicit, &label);
            guarded(watcher, "loading the profiler", &workload, attach).await?
        }
    };

    let t = Instant::now();
    let sampler = site.sample(run_wide, sc.own_broker, &workload);
    let spec = MeasureSpec::from_settings(settings, &sc.bootstrap, &planned.topic);
    let marks = PhaseMarks::new(sampler.as_ref(), profiler.as_deref(), settings.record_size);
    let measure = measure_phases(sessions, planned, &spec, &marks);
    let stage = || marks.stage.borrow().clone();
    let measured: Result<Vec<_>> = guarded_where(watcher, &stage, &workload, measure).await;
    // Only a run bounded by time keeps each sample's memory: a soak's growth over time.
    let used = sampler.finish(settings.duration.is_some()).await;
    phases.workload_s = t.elapsed().as_secs_f64();
    let mut measurements: Vec<Measurement> = measured?
        .into_iter()
        .map(|(m, cost)| Measurement { cost, ..m })
        .collect();
    // The bring-up's own figures go with its first phase.
    let first = &mut measurements[0];
    if let Some(p) = profiler {
        first.profiles = p.finish().context("profiling the measured phases")?;
    }
    first.steps_s.extend(before);
    Ok((measurements, used))
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;
    use std::sync::{Arc, Mutex};

    use futures_util::future::LocalBoxFuture;

    use super::*;
    use crate::driver::flow::tests::Fake;
    use crate::world::compose::Project;
    use crate::world::engine::ExecOutput;

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

    /// A network other than the default one, as the fake site's log names it.
    fn on(network: &str) -> String {
        match network {
            DEFAULT_NETWORK => String::new(),
            other => format!(" network={other}"),
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
        fn ceiling<'a>(
            &'a self,
            hops: &'a [crate::world::ceiling::Hop],
        ) -> LocalBoxFuture<'a, Result<Vec<crate::model::NetworkCeiling>>> {
            let pairs: Vec<_> = hops.iter().map(|h| (&h.from, &h.to, &h.host)).collect();
            self.note(format!("ceiling {pairs:?}"));
            let measured = hops
                .iter()
                .map(|hop| crate::model::NetworkCeiling {
                    from: hop.sender().to_string(),
                    to: hop.to.clone(),
                    from_node: None,
                    to_node: None,
                    mib_s: 1000.0,
                    rtt_ms: Some(0.1),
                    retransmits: Some(0),
                    seconds: 2.0,
                })
                .collect();
            Box::pin(async move { Ok(measured) })
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
            network: &'a str,
        ) -> LocalBoxFuture<'a, Result<Box<dyn Session>>> {
            self.note(format!("open client={client:?} tls={tls}{}", on(network)));
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
            let used = workload_targets(workload, &|_| None)
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
            network: &'a str,
        ) -> LocalBoxFuture<'a, Result<PathCheck>> {
            self.note(format!(
                "verify {} via {} direct {} tls={tls}{}",
                spec.topic,
                spec.endpoint.bootstrap,
                spec.direct,
                on(network)
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
                leaders: Vec::new(),
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
                // The network's ceiling on both hops, once the scenario's services are up.
                "ceiling [(None, \"proxy\", \"proxy\"), (Some(\"proxy\"), \"broker\", \"broker\")]"
                    .into(),
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
        let listed = crate::present::report::warnings(&results);
        assert!(
            listed[0].starts_with("01-proxy: the load generator"),
            "{listed:?}"
        );
        let table = crate::present::report::resources_table(&results).expect("a Resources table");
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
        let rendered = crate::present::report::tables(&results, None);
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
        // It dies as the measurement starts: in its warm-up, before any measured phase.
        let mut site = FakeSite {
            dies: Some((
                "the warm-up before the measurement",
                "service \"proxy\" (container c-proxy) exited with code 137 (killed)",
            )),
            ..FakeSite::default()
        };
        let err = run_all(&mut site, &plan).await.unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains("scenario 01-proxy")
                && msg.contains("stopped during the warm-up before the measurement")
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

    #[test]
    fn the_hops_go_to_the_services_behind_the_host_names_and_aliases() {
        let root = tempfile::tempdir().unwrap();
        let run = planned(root.path());
        let suite = run.cells[0].settings.scenarios.clone();
        // The proxy answers as `front` (its host name), the broker as `kafka` (an alias).
        std::fs::write(
            root.path().join("c.yaml"),
            "services:\n  broker: { image: b, networks: { default: { aliases: [kafka] } } }\n  proxy-a: { image: \"proxy:1\", hostname: front, depends_on: [broker] }\n",
        )
        .unwrap();
        std::fs::write(
            suite.join("suite.yaml"),
            "description: s\ncompose: [../c.yaml]\nservices: [broker]\nbootstrap: kafka:9092\nready: { broker: \"kafka:9092\" }\n",
        )
        .unwrap();
        std::fs::write(
            suite.join("01-proxy/scenario.yaml"),
            "description: p\nservices: [proxy-a]\nbootstrap: front:9092\nready: { proxy-a: \"front:9092\" }\n",
        )
        .unwrap();
        let run = crate::plan::plan_run(&run.cells[0].settings, "r").unwrap();
        let plan = &run.cells[0].plan;
        let hop = |from: Option<&str>, to: &str, host: &str| crate::world::ceiling::Hop {
            from: from.map(String::from),
            to: to.into(),
            host: host.into(),
        };
        assert_eq!(
            hops(&plan.scenarios[0], plan),
            [
                hop(None, "proxy-a", "front"),
                hop(Some("proxy-a"), "broker", "kafka")
            ]
        );
    }

    #[tokio::test]
    async fn a_matrix_measures_every_scenario_at_every_combination_interleaved() {
        let root = tempfile::tempdir().unwrap();
        let settings = planned(root.path()).cells[0].settings.clone();
        let settings = Settings {
            repeat: 2,
            matrix: vec![
                crate::settings::matrix::axis("NUM_RECORDS", &["10".into(), "20".into()]).unwrap(),
            ],
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
            .map(|r| {
                (
                    r.name.clone(),
                    crate::settings::matrix::label(&r.combination),
                )
            })
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
        // The network's ceiling once per combination, before its first repetition, and kept.
        assert_eq!(
            log.iter().filter(|l| l.starts_with("ceiling")).count(),
            2,
            "{log:?}"
        );
        assert!(results.iter().all(|r| r.network.len() == 2));
        // Not at all when the run says so.
        let run = crate::plan::plan_run(
            &Settings {
                network_ceiling: false,
                ..settings
            },
            "r",
        )
        .unwrap();
        let mut site = FakeSite::default();
        let results = run_all(&mut site, &run).await.unwrap();
        assert!(!site
            .log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.starts_with("ceiling")));
        assert!(results.iter().all(|r| r.network.is_empty()));
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
            matrix: vec![crate::settings::matrix::axis(
                "KAFKA_IMAGE",
                &["k:1".into(), "k:2".into()],
            )
            .unwrap()],
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
