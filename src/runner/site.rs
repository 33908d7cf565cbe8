//! Where a run happens: the [`Site`] the orchestration drives (services up and down, sessions,
//! execs, the path check), its sampling of resources and counters, and the engine's realisation.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use anyhow::Result;

use futures_util::future::LocalBoxFuture;

use super::guard::*;
use super::prepare::*;
use super::profiler::{EngineProfiler, Profiling};
use crate::accounting::cost;
use crate::accounting::jvm_threads;
use crate::driver::{self, flow, Place, Session, VerifySpec};
use crate::model::{NetworkCeiling, PathCheck, ServiceResources};
use crate::plan::Plan;
use crate::world::compose::Project;
use crate::world::engine::{Deployment, Engine, ExecOutput};
use crate::world::resources;

/// Where the run's TLS material is mounted in the workload container.
pub(super) const TLS_MOUNT: &str = "/tls";

/// Where a run happens, as the orchestration below sees it: services that come up and go down,
/// commands run in them, driver sessions on their network, resource sampling. [`EngineSite`] is
/// the engine's; a test's fake site runs the same orchestration without an engine.
pub(super) trait Site {
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
    /// Opens a driver session on the services' Compose network `network` with these client
    /// properties and, with `tls`, the run's TLS material.
    fn open<'a>(
        &'a self,
        client: &'a BTreeMap<String, String>,
        tls: bool,
        network: &'a str,
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
    /// The network's ceiling on each hop; a hop with a service that has no container in the
    /// run is left out (and said).
    fn ceiling<'a>(
        &'a self,
        hops: &'a [crate::world::ceiling::Hop],
    ) -> LocalBoxFuture<'a, Result<Vec<NetworkCeiling>>>;
    fn watcher(&self) -> Rc<dyn Watcher>;
    /// The machine's online CPUs (what 100% per core of every container adds up to).
    fn cpus(&self) -> usize {
        crate::world::machine::cpus()
    }
    /// Image id per image reference of the containers created so far.
    fn image_ids(&self) -> BTreeMap<String, String>;
    /// How each of `images` was made, for images built here (recipe, artifacts, JDK).
    fn image_sources(&self, images: &BTreeMap<String, String>) -> BTreeMap<String, String>;
    /// The path check: sample records through the endpoint, read back both ways, compared, on
    /// Compose network `network`. Always the native workload's, whatever the driver.
    fn verify<'a>(
        &'a self,
        spec: &'a VerifySpec,
        tls: bool,
        network: &'a str,
    ) -> LocalBoxFuture<'a, Result<PathCheck>>;
    /// With `PROFILE` (`mode`): the profiler loaded into `services` (those that are JVMs,
    /// unless `explicit`ly named), ready for the measured phases of `scenario`; `None` when
    /// there is nothing to profile.
    fn profiler<'a>(
        &'a self,
        _mode: crate::settings::ProfileMode,
        _services: &'a [String],
        _explicit: bool,
        _scenario: &'a str,
    ) -> LocalBoxFuture<'a, Result<Option<Box<dyn Profiling + 'a>>>> {
        Box::pin(async { Ok(None) })
    }
}

/// Resource sampling under way.
pub(super) trait Sampling {
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
pub(super) struct EngineSampling {
    pub(super) sampler: resources::Sampler,
    pub(super) engine: Engine,
    pub(super) targets: Vec<resources::Target>,
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
                let (counters, log) = futures_util::join!(
                    self.engine.counters_by(&t.container, reader_for(t.role())),
                    self.engine
                        .read_file(&t.container, crate::accounting::gc::LOG)
                );
                // Only a JVM (a container with the GC log) has its threads read.
                let log = log.ok().flatten();
                match counters {
                    Ok((counters, threads)) => Some(cost::Reading {
                        service: t.service.clone(),
                        role: t.role(),
                        counters,
                        threads: log
                            .as_ref()
                            .and(threads.as_deref())
                            .and_then(jvm_threads::threads),
                        // A log that cannot be read gives no GC figures, not zeros.
                        gc: log.map(|l| crate::accounting::gc::pauses(&l)),
                    }),
                    Err(e) => {
                        // Its cost is left out, said so rather than shown as nothing.
                        crate::progress::notice(&format!(
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

/// The command that prints a sampled container's counters from inside it: the load
/// generator's image has this executable alone; every other container a shell and `cat`
/// (a container without, its counters come from the engine's stats document). Made once: a
/// phase's edges ask for them every time.
fn reader_for(role: cost::Role) -> &'static [String] {
    static LOAD_GENERATOR: LazyLock<Vec<String>> = LazyLock::new(|| {
        let mut argv = vec![crate::world::images::workload::IMAGE_PATH.to_string()];
        argv.extend(crate::workload::command::WorkloadCommand::Counters.to_args());
        argv
    });
    static SHELL: LazyLock<Vec<String>> = LazyLock::new(|| {
        vec![
            "sh".into(),
            "-c".into(),
            crate::accounting::counters::SCRIPT.clone(),
        ]
    });
    if role == cost::Role::LoadGenerator {
        &LOAD_GENERATOR
    } else {
        &SHELL
    }
}

/// The measured phases' edges: the sampled containers' counters are read there (what each
/// service used over exactly each phase), and they say where the measurement is (for a fault's
/// message).
pub(super) struct PhaseMarks<'a> {
    pub(super) sampling: &'a dyn Sampling,
    /// Started before a phase's counters are read and stopped after, so the profiler's own
    /// control (a JVM of its own in the container) is outside the phase's cost.
    pub(super) profiling: Option<&'a dyn Profiling>,
    pub(super) record_size: u64,
    /// The phase's start (as a moment, and in Unix seconds for the GC log's wall times) and
    /// the counters read then.
    pub(super) started: RefCell<Option<(Instant, f64, cost::Readings)>>,
    pub(super) phases: RefCell<Vec<cost::PhaseCost>>,
    /// The counters read at each question about the JIT compilers during the warm-up, as far
    /// back as the window asked for.
    pub(super) compiling: RefCell<std::collections::VecDeque<(Instant, cost::Readings)>>,
    /// Where the measurement is, for a fault's message: the warm-up, then each measured phase.
    pub(super) stage: RefCell<String>,
}

impl<'a> PhaseMarks<'a> {
    /// Before any measured phase starts.
    pub(super) const WARM_UP: &'static str = "the warm-up before the measurement";

    /// Marks for one measurement, at its warm-up: no phase started yet.
    pub(super) fn new(
        sampling: &'a dyn Sampling,
        profiling: Option<&'a dyn Profiling>,
        record_size: u64,
    ) -> Self {
        PhaseMarks {
            sampling,
            profiling,
            record_size,
            started: RefCell::new(None),
            phases: RefCell::new(Vec::new()),
            compiling: RefCell::new(std::collections::VecDeque::new()),
            stage: RefCell::new(Self::WARM_UP.to_string()),
        }
    }
}

impl flow::Marks for PhaseMarks<'_> {
    fn start(&self, phase: flow::Phase) -> LocalBoxFuture<'_, ()> {
        *self.stage.borrow_mut() = format!(
            "the measurement (its {} phase)",
            phase.name().replace('_', " ")
        );
        Box::pin(async move {
            if let Some(p) = self.profiling {
                p.start(phase.name()).await;
            }
            let counters = self.sampling.counters().await;
            let unix = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64());
            *self.started.borrow_mut() = Some((Instant::now(), unix, counters));
        })
    }

    fn compiling(&self, window: Duration) -> LocalBoxFuture<'_, Option<(String, f64)>> {
        Box::pin(async move {
            let now = self.sampling.counters().await;
            let mut kept = self.compiling.borrow_mut();
            // The newest earlier reading at least `window` old starts the span; older ones go.
            while kept.len() > 1 && kept[1].0.elapsed() >= window {
                kept.pop_front();
            }
            let before = kept.front().map(|(_, r)| r.clone());
            kept.push_back((Instant::now(), now.clone()));
            drop(kept);
            let before = before?;
            now.iter()
                .filter(|r| r.role != cost::Role::LoadGenerator)
                .filter_map(|r| {
                    let earlier = before.iter().find(|b| b.service == r.service)?;
                    let cpu_s = r.counters.since(&earlier.counters).cpu_ns as f64 / 1e9;
                    let jit = jvm_threads::ThreadCpu::between(
                        earlier.threads.as_deref()?,
                        r.threads.as_deref()?,
                    );
                    (cpu_s > 0.0).then(|| (r.service.clone(), jit.jit_s * 100.0 / cpu_s))
                })
                .max_by(|a, b| a.1.total_cmp(&b.1))
        })
    }

    fn end(&self, phase: flow::Phase, records: u64) -> LocalBoxFuture<'_, ()> {
        *self.stage.borrow_mut() = format!(
            "the measurement (after its {} phase)",
            phase.name().replace('_', " ")
        );
        Box::pin(async move {
            let end = self.sampling.counters().await;
            // The phase ends at its counters: the profiler's stop and the copy of its recording
            // after them are not the phase's.
            let ended = Instant::now();
            if let Some(p) = self.profiling {
                p.stop(phase.name()).await;
            }
            let Some((at, unix, start)) = self.started.borrow_mut().take() else {
                return;
            };
            if start.is_empty() {
                return;
            }
            let seconds = ended.duration_since(at).as_secs_f64();
            self.phases.borrow_mut().push(cost::PhaseCost::between(
                phase.name(),
                records,
                self.record_size,
                (unix, seconds),
                &start,
                &end,
            ));
        })
    }
}

/// The run on the Docker engine: the plan's Compose project deployed, the chosen driver.
pub(super) struct EngineSite<'a> {
    pub(super) engine: &'a Engine,
    /// Where each load generator's containers run (`LOAD_GENERATORS`, at least one): the
    /// engine, or on a swarm the load nodes' in turn.
    pub(super) workload_engines: Vec<Engine>,
    pub(super) deployment: Deployment,
    pub(super) plan: &'a Plan,
    pub(super) prepared: &'a Prepared,
    /// The engine's online CPUs.
    pub(super) cpus: usize,
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
        network: &'a str,
    ) -> LocalBoxFuture<'a, Result<Box<dyn Session>>> {
        Box::pin(async move {
            let mut parts: Vec<Box<dyn Session>> = Vec::new();
            for (i, engine) in self.workload_engines.iter().enumerate() {
                let opened = self
                    .prepared
                    .driver
                    .open(self.place_on(engine, client, tls, network))
                    .await;
                match opened {
                    Ok(session) => parts.push(session),
                    Err(e) if self.workload_engines.len() == 1 => return Err(e),
                    Err(e) => {
                        // The parts already open hold containers: closed before the error.
                        for part in &parts {
                            let _ = part.close().await;
                        }
                        return Err(e.context(format!("load generator {}", i + 1)));
                    }
                }
            }
            Ok(match parts.len() {
                1 => parts.remove(0),
                _ => Box::new(driver::spread::Spread::new(parts)) as Box<dyn Session>,
            })
        })
    }

    fn sample(
        &self,
        run_wide: &[String],
        own_broker: bool,
        workload: &[(String, String)],
    ) -> Box<dyn Sampling> {
        let node_of = |id: &str| self.engine.node_of(id);
        let mut targets = sampling_targets(&self.deployment, run_wide, own_broker, &node_of);
        targets.extend(workload_targets(workload, &node_of));
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

    fn ceiling<'a>(
        &'a self,
        hops: &'a [crate::world::ceiling::Hop],
    ) -> LocalBoxFuture<'a, Result<Vec<NetworkCeiling>>> {
        Box::pin(async move {
            let network = self.deployment.network_name("default");
            // Each end through its node's engine (the load generator's place through the load
            // node's): the same engine off a swarm.
            let engine_of = |container: &str| match self.engine.node_of(container) {
                Some(node) => self.engine.on_node(&node),
                None => Ok(self.engine.clone()),
            };
            let container_of =
                |service: &str| self.deployment.container_id(service).map(String::from);
            let mut measured = Vec::new();
            for hop in hops {
                let Some(pair) = hop.with_containers(container_of) else {
                    crate::progress::notice(&format!(
                        "    network ceiling from {} to {} not measured: not a container of \
                         this run",
                        hop.sender(),
                        hop.to
                    ));
                    continue;
                };
                let server = engine_of(&pair.to_container)?;
                let client = match &pair.from_container {
                    Some(container) => engine_of(container)?,
                    None => self.workload_engines[0].clone(),
                };
                let ends = crate::world::ceiling::Ends {
                    server: &server,
                    client: &client,
                };
                let cpuset = self.plan.workload_cpuset.clone();
                measured.push(crate::world::ceiling::measure(ends, &network, cpuset, &pair).await?);
            }
            Ok(measured)
        })
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
        network: &'a str,
    ) -> LocalBoxFuture<'a, Result<PathCheck>> {
        let place = self.place(&BTreeMap::new(), tls, network);
        Box::pin(async move { driver::path_check(&place, spec).await })
    }

    fn profiler<'a>(
        &'a self,
        mode: crate::settings::ProfileMode,
        services: &'a [String],
        explicit: bool,
        scenario: &'a str,
    ) -> LocalBoxFuture<'a, Result<Option<Box<dyn Profiling + 'a>>>> {
        Box::pin(async move {
            let Some((tools, staging)) = &self.prepared.profiling else {
                return Ok(None);
            };
            let candidates: Vec<(String, String)> = services
                .iter()
                .filter_map(|s| Some((s.clone(), self.deployment.container_id(s)?.to_string())))
                .collect();
            let profiler = EngineProfiler::attach(
                self.engine,
                mode,
                tools,
                candidates,
                explicit,
                staging,
                scenario,
            )
            .await?;
            Ok(profiler.map(|p| Box::new(p) as Box<dyn Profiling + 'a>))
        })
    }
}

impl EngineSite<'_> {
    /// Where the path check runs: the first load generator's place.
    fn place<'a>(
        &'a self,
        client: &BTreeMap<String, String>,
        tls: bool,
        network: &str,
    ) -> Place<'a> {
        self.place_on(&self.workload_engines[0], client, tls, network)
    }

    /// Where a driver session runs on `engine`: the services' Compose network `network`, the
    /// run's TLS material when `tls`.
    fn place_on<'a>(
        &'a self,
        engine: &'a Engine,
        client: &BTreeMap<String, String>,
        tls: bool,
        network: &str,
    ) -> Place<'a> {
        let binds = if tls {
            vec![format!("{}:{TLS_MOUNT}:ro", self.plan.tls_dir.display())]
        } else {
            Vec::new()
        };
        Place {
            engine,
            workload_image: &self.prepared.workload_image,
            network: self.deployment.network_name(network),
            client: client.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            binds,
            cpuset: self.plan.workload_cpuset.clone(),
        }
    }
}

/// How long a service may take to become ready (running, healthy, or answering Kafka).
pub(super) const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// Every container of the deployment that is up now: the run-wide services and the scenario's.
/// `node_of` names the swarm node of a container.
pub(super) fn sampling_targets(
    deployment: &Deployment,
    run_wide: &[String],
    own_broker: bool,
    node_of: &dyn Fn(&str) -> Option<String>,
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
                    node: node_of(id),
                })
        })
        .collect()
}

/// The session's own containers (the load generator), sampled like the scenario's services.
pub(super) fn workload_targets(
    workload: &[(String, String)],
    node_of: &dyn Fn(&str) -> Option<String>,
) -> Vec<resources::Target> {
    workload
        .iter()
        .map(|(name, id)| resources::Target {
            service: name.clone(),
            container: id.clone(),
            run_wide: false,
            node: node_of(id),
        })
        .collect()
}
