//! A Compose project realised on the engine for one run: networks, containers, health.
//!
//! A service's `healthcheck` is run by the deployment itself (an exec of its test in the
//! container at its interval) until the service is healthy, and then never again, rather than
//! handed to the engine: the engine would go on running it every interval for the container's
//! whole life, and each check's process counts in the container's CPU (a check a second of
//! `busybox grep` measured about 28 millicores), so the harness's probes would be measured as
//! the path's cost.

use anyhow::{bail, Context, Result};
use bollard::models::{
    ContainerCreateBody, ContainerStateStatusEnum, EndpointSettings, HostConfig,
    NetworkConnectRequest, NetworkCreateRequest, NetworkingConfig, PortBinding,
};
use bollard::query_parameters::CreateContainerOptionsBuilder;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use super::{is_not_found, Engine, ExecOutput, LABEL_PROJECT, LABEL_RUN, LABEL_SERVICE};
use crate::world::compose::{Condition, Healthcheck, Project, Service};

/// How many log lines a failure report shows.
const LOG_TAIL: usize = 40;
/// How often container state is polled while waiting.
const POLL: Duration = Duration::from_millis(200);
/// A service without a healthcheck counts as up once it has kept running this long, so a
/// container that dies right after starting is reported instead of passed.
const SETTLE: Duration = Duration::from_millis(600);
/// Compose's defaults for a healthcheck that leaves them out.
const HEALTH_INTERVAL: Duration = Duration::from_secs(30);
const HEALTH_TIMEOUT: Duration = Duration::from_secs(30);
const HEALTH_RETRIES: u32 = 3;
/// How many of a service's last checks a failure report shows.
const HEALTH_LOG: usize = 5;

/// A project's containers and networks on the engine, created for one run.
#[derive(Debug)]
pub struct Deployment {
    engine: Engine,
    project: Project,
    name: String,
    /// Compose network name → engine network name, for networks this deployment created.
    networks: BTreeMap<String, String>,
    /// Service → container id, for containers this deployment created and still has.
    containers: BTreeMap<String, String>,
    /// Image reference → image id, for every image used.
    image_ids: BTreeMap<String, String>,
    /// Services whose healthcheck has passed (it is not run again).
    healthy: BTreeSet<String>,
    /// On a swarm: the placement constraint of each service (`node.labels.…==…`).
    constraints: BTreeMap<String, String>,
    /// On a swarm: what each service was made of, for its removal.
    swarm_services: BTreeMap<String, SwarmService>,
}

/// A service's objects on a swarm, recorded as they are made so that a failure part-way
/// removes what was made.
#[derive(Debug, Default)]
struct SwarmService {
    /// The Swarm service, once created.
    id: Option<String>,
    /// The configs holding its files.
    configs: Vec<String>,
}

/// What `up` created in one call, so a failure can undo exactly that.
#[derive(Default)]
struct Created {
    networks: Vec<String>,
    services: Vec<String>,
}

impl Deployment {
    /// A deployment of `project` named `name` (the prefix of its containers and networks).
    pub fn new(engine: &Engine, project: Project, name: &str) -> Deployment {
        Deployment {
            engine: engine.clone(),
            project,
            name: crate::world::compose::sanitize_name(name),
            networks: BTreeMap::new(),
            containers: BTreeMap::new(),
            image_ids: BTreeMap::new(),
            healthy: BTreeSet::new(),
            constraints: BTreeMap::new(),
            swarm_services: BTreeMap::new(),
        }
    }

    /// On a swarm: places each service by its Swarm placement constraint.
    pub(crate) fn set_constraints(&mut self, constraints: BTreeMap<String, String>) {
        self.constraints = constraints;
    }

    /// The project being deployed.
    pub(crate) fn project(&self) -> &Project {
        &self.project
    }

    /// Deploys `project` from now on (another combination of a matrix): services started
    /// later are made from its definitions; those up keep running as they were made.
    pub(crate) fn set_project(&mut self, project: Project) {
        self.project = project;
    }

    /// The deployment name (prefix of container and network names).
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Engine name of a Compose network, e.g. `default` → `<name>_default`.
    pub fn network_name(&self, compose_network: &str) -> String {
        format!("{}_{compose_network}", self.name)
    }

    /// Engine name of the container of `service`.
    pub(crate) fn container_name(&self, service: &str) -> String {
        self.project
            .services
            .get(service)
            .and_then(|s| s.container_name.clone())
            .unwrap_or_else(|| format!("{}-{service}", self.name))
    }

    /// Container id of a running service of this deployment.
    pub fn container_id(&self, service: &str) -> Option<&str> {
        self.containers.get(service).map(String::as_str)
    }

    /// Image reference → image id of every image this deployment has used.
    pub fn image_ids(&self) -> BTreeMap<String, String> {
        self.image_ids.clone()
    }

    /// Brings up `services` and their dependencies in dependency order, honouring `depends_on`
    /// conditions, and waits until each is healthy (or running, without a healthcheck) within
    /// `timeout`. Services already up in this deployment are kept. On failure the error carries
    /// the failing service's logs and health-check output, and what this call created is removed.
    pub async fn up(&mut self, services: &[String], timeout: Duration) -> Result<()> {
        let closure = self.project.service_closure(services)?;
        let deadline = Instant::now() + timeout;
        let mut created = Created::default();
        let result = self
            .up_inner(&closure, deadline, timeout, &mut created)
            .await;
        if result.is_err() {
            for svc in created.services.iter().rev() {
                let _ = self.remove(svc).await;
            }
            for net in &created.networks {
                if let Some(engine_name) = self.networks.remove(net) {
                    let _ = self.engine.remove_network(&engine_name).await;
                }
            }
        }
        result
    }

    async fn up_inner(
        &mut self,
        closure: &[String],
        deadline: Instant,
        timeout: Duration,
        created: &mut Created,
    ) -> Result<()> {
        for net in self.project.networks_of(closure) {
            if self.ensure_network(&net).await? {
                created.networks.push(net);
            }
        }
        for svc in closure {
            if self.containers.contains_key(svc) {
                continue;
            }
            let service = self.project.services[svc].clone();
            for (dep, cond) in &service.depends_on {
                self.wait_for(dep, *cond, deadline, timeout, Duration::ZERO)
                    .await
                    .with_context(|| format!("service \"{svc}\" depends on \"{dep}\""))?;
            }
            if self.engine.is_swarm() {
                created.services.push(svc.clone());
                let id = self.create_swarm_service(&service, deadline).await?;
                self.containers.insert(svc.clone(), id);
                continue;
            }
            let id = self.create_container(&service).await?;
            self.containers.insert(svc.clone(), id.clone());
            created.services.push(svc.clone());
            self.engine
                .docker
                .start_container(&id, None)
                .await
                .with_context(|| format!("cannot start service \"{svc}\""))?;
        }
        for svc in &created.services {
            let needs_completion = closure.iter().any(|other| {
                self.project.services[other].depends_on.get(svc)
                    == Some(&Condition::ServiceCompletedSuccessfully)
            });
            let cond = if needs_completion {
                Condition::ServiceCompletedSuccessfully
            } else {
                Condition::ServiceHealthy
            };
            self.wait_for(svc, cond, deadline, timeout, SETTLE).await?;
        }
        Ok(())
    }

    /// Creates the engine network for a Compose network unless it exists. Returns true if created.
    async fn ensure_network(&mut self, net: &str) -> Result<bool> {
        if self.networks.contains_key(net) {
            return Ok(false);
        }
        let engine_name = self.network_name(net);
        match self.engine.docker.inspect_network(&engine_name, None).await {
            Ok(existing) => {
                let labels = existing.labels.unwrap_or_default();
                if labels.get(LABEL_RUN).map(String::as_str) == Some(self.engine.run_id()) {
                    // Shared with another deployment of the same run: use it, leave it to its owner.
                    return Ok(false);
                }
                bail!(
                    "network {engine_name} already exists and was not created by this run; remove it (`perf-tests clean` removes networks left by earlier runs)"
                );
            }
            Err(e) if is_not_found(&e) => {}
            Err(e) => {
                return Err(
                    anyhow::Error::new(e).context(format!("cannot inspect network {engine_name}"))
                )
            }
        }
        let mut labels: HashMap<String, String> = self
            .project
            .networks
            .get(net)
            .map(|n| n.labels.clone().into_iter().collect())
            .unwrap_or_default();
        labels.extend(self.engine.run_labels());
        labels.insert(LABEL_PROJECT.to_string(), self.name.clone());
        let swarm = self.engine.is_swarm();
        self.engine
            .docker
            .create_network(NetworkCreateRequest {
                name: engine_name.clone(),
                // On a swarm, one network across the nodes, which the load generator's own
                // containers join too.
                driver: Some(if swarm { "overlay" } else { "bridge" }.to_string()),
                attachable: swarm.then_some(true),
                labels: Some(labels),
                ..Default::default()
            })
            .await
            .with_context(|| format!("cannot create network {engine_name}"))?;
        self.networks.insert(net.to_string(), engine_name);
        Ok(true)
    }

    /// Has the image of `service` on the engine and records its id.
    async fn ensure_image(&mut self, service: &Service) -> Result<()> {
        let image_id = self
            .engine
            .ensure_image(&service.image)
            .await
            .with_context(|| format!("service \"{}\"", service.name))?;
        self.image_ids.insert(service.image.clone(), image_id);
        Ok(())
    }

    async fn create_container(&mut self, service: &Service) -> Result<String> {
        let svc = &service.name;
        self.ensure_image(service).await?;

        let body = container_body(service, self.engine.run_labels(), &self.name, &|net| {
            self.network_name(net)
        });
        let nets = service.networks.iter().skip(1);
        let name = self.container_name(svc);
        let created = match self
            .engine
            .docker
            .create_container(
                Some(CreateContainerOptionsBuilder::default().name(&name).build()),
                body,
            )
            .await
        {
            Ok(c) => c,
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 409,
                message,
            }) => bail!(
                "cannot create container {name} for service \"{svc}\": {message}; a container of that name is left from an earlier run? `perf-tests clean` removes those"
            ),
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("cannot create container {name} for service \"{svc}\"")))
            }
        };
        for (net, aliases) in nets {
            let connect = self
                .engine
                .docker
                .connect_network(
                    &self.network_name(net),
                    NetworkConnectRequest {
                        container: created.id.clone(),
                        endpoint_config: Some(endpoint(svc, aliases)),
                    },
                )
                .await;
            if let Err(e) = connect {
                let _ = self.engine.remove_container(&created.id).await;
                return Err(anyhow::Error::new(e)
                    .context(format!("cannot connect service \"{svc}\" to network {net}")));
            }
        }
        Ok(created.id)
    }

    /// Creates the Swarm service of `service` (its files stored as configs first) and waits
    /// until its task runs; returns the task's container.
    async fn create_swarm_service(
        &mut self,
        service: &Service,
        deadline: Instant,
    ) -> Result<String> {
        let svc = &service.name;
        let Some(constraint) = self.constraints.get(svc).cloned() else {
            bail!("service \"{svc}\" has no placement on the swarm");
        };
        let files = super::services::config_files(service)?;
        self.ensure_image(service).await?;
        let name = super::services::service_name(&self.name, svc);
        let mut labels = self.engine.run_labels();
        labels.insert(LABEL_PROJECT.to_string(), self.name.clone());
        let mut configs = Vec::new();
        self.swarm_services
            .insert(svc.clone(), SwarmService::default());
        for (i, (file, target)) in files.into_iter().enumerate() {
            // Unique and within a config name's 64 characters; its labels say whose it is.
            let config_name = format!("perf-tests-{}-{i}", super::oneoff::unique_suffix());
            let id = self
                .engine
                .create_config(&config_name, file, labels.clone())
                .await?;
            if let Some(made) = self.swarm_services.get_mut(svc) {
                made.configs.push(id.clone());
            }
            configs.push(super::services::ConfigMount {
                target: target.to_string(),
                id,
                name: config_name,
            });
        }
        let spec = super::services::service_spec(
            service,
            &super::services::SpecParts {
                name: &name,
                run_labels: self.engine.run_labels(),
                project: &self.name,
                network: &|net| self.network_name(net),
                constraint: &constraint,
                configs: &configs,
            },
        )?;
        let id = self.engine.create_service(spec).await?;
        if let Some(made) = self.swarm_services.get_mut(svc) {
            made.id = Some(id.clone());
        }
        self.engine.service_container(&id, svc, deadline).await
    }

    /// Takes `svc` down: its container, and on a swarm its service and configs.
    async fn remove(&mut self, svc: &str) -> Result<()> {
        self.healthy.remove(svc);
        let made = self.swarm_services.remove(svc).unwrap_or_default();
        if let Some(service) = &made.id {
            self.engine
                .remove_service(service)
                .await
                .with_context(|| format!("cannot remove service \"{svc}\""))?;
        }
        // On a swarm the task's container would stop in the swarm's own time, and a container
        // of the project seen stopping counts as a death: removed now, on its node.
        if let Some(id) = self.containers.remove(svc) {
            self.engine
                .remove_container(&id)
                .await
                .with_context(|| format!("cannot remove service \"{svc}\""))?;
        }
        for config in made.configs {
            self.engine.remove_config(&config).await?;
        }
        Ok(())
    }

    /// Waits until `svc` satisfies `cond`. `ServiceHealthy` on a container without a
    /// healthcheck means running for at least `settle`; with one, its test passing once.
    async fn wait_for(
        &mut self,
        svc: &str,
        cond: Condition,
        deadline: Instant,
        timeout: Duration,
        settle: Duration,
    ) -> Result<()> {
        let Some(id) = self.containers.get(svc).cloned() else {
            bail!("service \"{svc}\" is not up");
        };
        let check = self.project.services[svc]
            .healthcheck
            .clone()
            .filter(|h| h.test.first().map(String::as_str) != Some("NONE"));
        let mut probe = match (&check, cond) {
            (Some(h), Condition::ServiceHealthy) if !self.healthy.contains(svc) => {
                Some(Probe::new(h))
            }
            _ => None,
        };
        let mut running_since: Option<Instant> = None;
        loop {
            let (running, exited, exit_code) = self.state_of(svc, &id).await?;
            let failure = match cond {
                Condition::ServiceCompletedSuccessfully if exited => {
                    if exit_code == 0 {
                        return Ok(());
                    }
                    Some(format!("exited with code {exit_code}"))
                }
                Condition::ServiceCompletedSuccessfully => None,
                Condition::ServiceStarted if exited && exit_code == 0 => return Ok(()),
                _ if exited => Some(format!("exited with code {exit_code}")),
                Condition::ServiceStarted => {
                    if running {
                        return Ok(());
                    }
                    None
                }
                Condition::ServiceHealthy => match probe.as_mut() {
                    None if running => {
                        let since = *running_since.get_or_insert_with(Instant::now);
                        if since.elapsed() >= settle {
                            return Ok(());
                        }
                        None
                    }
                    None => None,
                    Some(p) if running && p.due() => {
                        if p.check(&self.engine, &id).await {
                            self.healthy.insert(svc.to_string());
                            return Ok(());
                        }
                        p.failed_out().then(|| "became unhealthy".to_string())
                    }
                    Some(_) => None,
                },
            };
            let failure = failure.or_else(|| {
                (Instant::now() >= deadline).then(|| {
                    let goal = match cond {
                        Condition::ServiceHealthy if probe.is_some() => "become healthy",
                        Condition::ServiceStarted | Condition::ServiceHealthy => "start",
                        Condition::ServiceCompletedSuccessfully => "complete",
                    };
                    format!("did not {goal} within {timeout:?}")
                })
            });
            if let Some(reason) = failure {
                let checks = probe.map(|p| p.log).unwrap_or_default();
                return Err(self.failure(svc, &id, &reason, &checks).await);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Whether `svc`'s container `id` runs, whether it has exited (or died), and its exit code.
    async fn state_of(&self, svc: &str, id: &str) -> Result<(bool, bool, i64)> {
        let info = self
            .engine
            .docker_of(id)
            .inspect_container(id, None)
            .await
            .with_context(|| format!("cannot inspect service \"{svc}\""))?;
        let state = info.state.unwrap_or_default();
        let status = state.status.unwrap_or(ContainerStateStatusEnum::EMPTY);
        let exited = matches!(
            status,
            ContainerStateStatusEnum::EXITED | ContainerStateStatusEnum::DEAD
        );
        let running = status == ContainerStateStatusEnum::RUNNING;
        Ok((running, exited, state.exit_code.unwrap_or(0)))
    }

    /// Why `svc` (container `id`) is not what it was waited for: the reason, its last log lines
    /// and its last health checks.
    async fn failure(
        &self,
        svc: &str,
        id: &str,
        reason: &str,
        health_log: &[String],
    ) -> anyhow::Error {
        let logs = self
            .engine
            .container_logs(id, LOG_TAIL)
            .await
            .unwrap_or_else(|e| format!("(logs unavailable: {e})"));
        let mut msg = format!(
            "service \"{svc}\" (container {}) {reason}\n--- last {LOG_TAIL} log lines ---\n{}",
            self.container_name(svc),
            logs.trim_end()
        );
        if !health_log.is_empty() {
            msg.push_str("\n--- last health checks ---\n");
            msg.push_str(&health_log.join("\n"));
        }
        anyhow::anyhow!(msg)
    }

    /// Stops and removes the containers of `services` (those this deployment has).
    pub async fn down(&mut self, services: &[String]) -> Result<()> {
        for svc in services {
            self.remove(svc).await?;
        }
        Ok(())
    }

    /// Removes every container and network this deployment created.
    pub async fn down_all(&mut self) -> Result<()> {
        let services: BTreeSet<String> = self
            .containers
            .keys()
            .chain(self.swarm_services.keys())
            .cloned()
            .collect();
        for svc in &services {
            self.remove(svc).await?;
        }
        let networks = std::mem::take(&mut self.networks);
        for engine_name in networks.values() {
            self.engine.remove_network(engine_name).await?;
        }
        Ok(())
    }

    /// The last `tail` log lines of a service.
    pub async fn logs(&self, service: &str, tail: usize) -> Result<String> {
        let Some(id) = self.containers.get(service) else {
            bail!(
                "service \"{service}\" is not up in deployment {}",
                self.name
            );
        };
        self.engine.container_logs(id, tail).await
    }

    /// Runs `cmd` inside the running container of `service`.
    pub async fn exec(&self, service: &str, cmd: &[String]) -> Result<ExecOutput> {
        let Some(id) = self.containers.get(service) else {
            bail!(
                "service \"{service}\" is not up in deployment {}",
                self.name
            );
        };
        self.engine
            .exec_in(id, cmd)
            .await
            .with_context(|| format!("exec in service \"{service}\""))
    }
}

/// A healthcheck run by the deployment: its test exec'd in the container every interval, the
/// service unhealthy after `retries` failures in a row once its start period is over.
struct Probe {
    command: Vec<String>,
    interval: Duration,
    timeout: Duration,
    retries: u32,
    /// Failures before this moment do not count.
    counts_from: Instant,
    next: Instant,
    failures: u32,
    /// The last checks, `exit <code>: <output>`.
    log: Vec<String>,
}

impl Probe {
    fn new(h: &Healthcheck) -> Probe {
        let now = Instant::now();
        Probe {
            command: probe_command(&h.test),
            interval: h.interval.unwrap_or(HEALTH_INTERVAL),
            timeout: h.timeout.unwrap_or(HEALTH_TIMEOUT),
            retries: h.retries.unwrap_or(HEALTH_RETRIES).max(1),
            counts_from: now + h.start_period.unwrap_or(Duration::ZERO),
            next: now,
            failures: 0,
            log: Vec::new(),
        }
    }

    fn due(&self) -> bool {
        Instant::now() >= self.next
    }

    /// Runs the test once; true when it passed.
    async fn check(&mut self, engine: &Engine, container: &str) -> bool {
        self.next = Instant::now() + self.interval;
        let ran =
            tokio::time::timeout(self.timeout, engine.exec_in(container, &self.command)).await;
        let (passed, line) = match ran {
            Ok(Ok(out)) => (
                out.exit_code == 0,
                format!(
                    "exit {}: {}",
                    out.exit_code,
                    format!("{}{}", out.stdout, out.stderr).trim_end()
                ),
            ),
            Ok(Err(e)) => (false, format!("exec failed: {e:#}")),
            Err(_) => (false, format!("timed out after {:?}", self.timeout)),
        };
        self.log.push(line);
        if self.log.len() > HEALTH_LOG {
            self.log.remove(0);
        }
        if !passed && Instant::now() >= self.counts_from {
            self.failures += 1;
        } else if passed {
            self.failures = 0;
        }
        passed
    }

    /// Failed `retries` times in a row after its start period.
    fn failed_out(&self) -> bool {
        self.failures >= self.retries
    }
}

/// The command a healthcheck's test runs: `["CMD", args...]` as it is, `["CMD-SHELL", cmd]`
/// (and a test written as one string) through `/bin/sh -c`, as the engine runs them.
fn probe_command(test: &[String]) -> Vec<String> {
    match test.split_first() {
        Some((kind, rest)) if kind == "CMD" => rest.to_vec(),
        Some((kind, rest)) if kind == "CMD-SHELL" => {
            vec!["/bin/sh".into(), "-c".into(), rest.join(" ")]
        }
        _ => vec!["/bin/sh".into(), "-c".into(), test.join(" ")],
    }
}

/// The engine's creation body of the container of a Compose service: its labels (the service's,
/// the run's, the service and deployment names), ports, bind mounts, tmpfs, healthcheck and the
/// first of its networks (`network` names a Compose network on the engine) with its aliases; the
/// other networks are connected before the container starts. Touches no engine.
pub(crate) fn container_body(
    service: &Service,
    run_labels: HashMap<String, String>,
    project: &str,
    network: &dyn Fn(&str) -> String,
) -> ContainerCreateBody {
    let svc = &service.name;
    let mut labels: HashMap<String, String> = service.labels.clone().into_iter().collect();
    labels.extend(run_labels);
    labels.insert(LABEL_SERVICE.to_string(), svc.clone());
    labels.insert(LABEL_PROJECT.to_string(), project.to_string());

    let port_bindings = port_bindings(service);
    let binds: Vec<String> = service.mounts.iter().map(bind).collect();
    let tmpfs: HashMap<String, String> = service
        .tmpfs
        .iter()
        .map(|t| match t.split_once(':') {
            Some((p, o)) => (p.to_string(), o.to_string()),
            None => (t.clone(), String::new()),
        })
        .collect();

    // The engine attaches one network at creation; the others are connected before start.
    let (first_net, first_aliases) = service
        .networks
        .iter()
        .next()
        .map(|(n, a)| (n.clone(), a.clone()))
        .unwrap_or_else(|| ("default".to_string(), Vec::new()));
    let first_engine_net = network(&first_net);

    ContainerCreateBody {
        image: Some(service.image.clone()),
        hostname: Some(service.hostname.clone().unwrap_or_else(|| svc.clone())),
        user: service.user.clone(),
        env: Some(service.environment.clone()),
        cmd: service.command.clone(),
        entrypoint: service.entrypoint.clone(),
        working_dir: service.working_dir.clone(),
        labels: Some(labels),
        // The deployment runs the healthcheck itself, only until healthy (see the module).
        healthcheck: None,
        exposed_ports: if port_bindings.is_empty() {
            None
        } else {
            Some(port_bindings.keys().cloned().collect())
        },
        host_config: Some(HostConfig {
            binds: Some(binds),
            port_bindings: Some(port_bindings),
            security_opt: if service.security_opt.is_empty() {
                None
            } else {
                Some(service.security_opt.clone())
            },
            tmpfs: if tmpfs.is_empty() { None } else { Some(tmpfs) },
            cpuset_cpus: service.cpuset.clone(),
            network_mode: Some(first_engine_net.clone()),
            ..Default::default()
        }),
        networking_config: Some(NetworkingConfig {
            endpoints_config: Some(HashMap::from([(
                first_engine_net,
                endpoint(svc, &first_aliases),
            )])),
        }),
        ..Default::default()
    }
}

/// A service's published ports, by container port and protocol.
fn port_bindings(service: &Service) -> HashMap<String, Option<Vec<PortBinding>>> {
    let mut bindings: HashMap<String, Option<Vec<PortBinding>>> = HashMap::new();
    for p in &service.ports {
        bindings
            .entry(format!("{}/{}", p.container_port, p.protocol))
            .or_insert_with(|| Some(Vec::new()))
            .get_or_insert_with(Vec::new)
            .push(PortBinding {
                host_ip: p.host_ip.clone(),
                host_port: Some(p.host_port.map(|h| h.to_string()).unwrap_or_default()),
            });
    }
    bindings
}

/// A bind mount as the engine takes it: `source:target`, `:ro` when read-only.
fn bind(m: &crate::world::compose::BindMount) -> String {
    let mut b = format!("{}:{}", m.source.display(), m.target);
    if m.read_only {
        b.push_str(":ro");
    }
    b
}

/// A container's endpoint on a network: reachable by its service name and the aliases.
fn endpoint(svc: &str, aliases: &[String]) -> EndpointSettings {
    EndpointSettings {
        aliases: Some(
            std::iter::once(svc.to_string())
                .chain(aliases.iter().cloned())
                .collect(),
        ),
        ..Default::default()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The one service of a Compose file written as `yaml`.
    pub(in crate::world::engine) fn service(yaml: &str) -> Service {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("compose.yaml");
        std::fs::write(&file, yaml).unwrap();
        let project = crate::world::compose::load(&[file], &Default::default()).unwrap();
        project.services.into_values().next().unwrap()
    }

    #[test]
    fn a_compose_service_becomes_a_labelled_container_body() {
        let s = service(
            "services:
  proxy:
    image: proxy:1
    command: [serve, --port, \"9092\"]
    environment: { MODE: fast }
    ports: [\"127.0.0.1:19092:9092\"]
    volumes: [\"/etc/hosts:/config/hosts:ro\"]
    tmpfs: [\"/run:size=1m\"]
    cpuset: 1
    labels: { team: kafka }
    networks: { front: { aliases: [kroxylicious] }, back: {} }
    healthcheck: { test: [CMD, probe], interval: 500ms, retries: 3 }
networks: { front: {}, back: {} }
",
        );
        let run = HashMap::from([(super::super::LABEL_RUN.to_string(), "r1".to_string())]);
        let body = container_body(&s, run, "perf-tests-r1", &|net| format!("p_{net}"));
        assert_eq!(body.image.as_deref(), Some("proxy:1"));
        assert_eq!(body.hostname.as_deref(), Some("proxy"));
        assert_eq!(
            body.cmd,
            Some(vec!["serve".into(), "--port".into(), "9092".into()])
        );
        assert_eq!(body.env, Some(vec!["MODE=fast".to_string()]));
        let labels = body.labels.unwrap();
        assert_eq!(labels["team"], "kafka");
        assert_eq!(labels[super::super::LABEL_RUN], "r1");
        assert_eq!(labels[LABEL_SERVICE], "proxy");
        assert_eq!(labels[LABEL_PROJECT], "perf-tests-r1");
        // The deployment runs the healthcheck itself; the engine never does.
        assert!(body.healthcheck.is_none());
        let probe = Probe::new(s.healthcheck.as_ref().unwrap());
        assert_eq!(probe.command, ["probe"]);
        assert_eq!(
            (probe.interval, probe.retries),
            (Duration::from_millis(500), 3)
        );
        let host = body.host_config.unwrap();
        assert_eq!(
            host.binds,
            Some(vec!["/etc/hosts:/config/hosts:ro".to_string()])
        );
        assert_eq!(host.tmpfs.unwrap()["/run"], "size=1m");
        assert_eq!(host.cpuset_cpus.as_deref(), Some("1"));
        let ports = host.port_bindings.unwrap();
        let bound = ports["9092/tcp"].as_ref().unwrap();
        assert_eq!(bound[0].host_ip.as_deref(), Some("127.0.0.1"));
        assert_eq!(bound[0].host_port.as_deref(), Some("19092"));
        // One network at creation (the first), reachable by the service name and its aliases.
        let first = host.network_mode.unwrap();
        let endpoints = body.networking_config.unwrap().endpoints_config.unwrap();
        assert_eq!(endpoints.len(), 1);
        let aliases = endpoints[&first].aliases.clone().unwrap();
        assert_eq!(aliases[0], "proxy");
        assert!(first == "p_front" || first == "p_back", "{first}");
        if first == "p_front" {
            assert_eq!(aliases, ["proxy", "kroxylicious"]);
        }
    }

    #[test]
    fn a_test_runs_as_the_engine_would_run_it() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<String>>();
        assert_eq!(probe_command(&v(&["CMD", "grep", "x"])), ["grep", "x"]);
        assert_eq!(
            probe_command(&v(&["CMD-SHELL", "test -f /tmp/ready"])),
            ["/bin/sh", "-c", "test -f /tmp/ready"]
        );
    }

    #[test]
    fn a_service_without_networks_joins_the_default_one() {
        let s = service("services:\n  broker:\n    image: b\n");
        let body = container_body(&s, HashMap::new(), "p", &|net| format!("p_{net}"));
        assert_eq!(
            body.host_config.unwrap().network_mode.as_deref(),
            Some("p_default")
        );
        assert!(body.healthcheck.is_none());
        assert_eq!(body.exposed_ports, None);
    }
}
