//! The Docker engine behind a narrow interface: connect, deploy a Compose project, exec,
//! one-off containers, label-based cleanup and Ctrl-C handling.
//!
//! Every container and network created here carries `io.perf-tests.run=<run id>` and
//! `io.perf-tests.managed=true`, so teardown, interruption and `perf-tests clean` remove exactly
//! what the runner made, and the host, pid and process start time of the process that made it
//! ([`liveness`]), so `perf-tests clean` leaves live runs alone.

pub mod address;
mod counters;
mod deployment;
mod files;
mod images;
mod interrupt;
pub mod liveness;
mod nodes;
mod oneoff;
mod services;
mod swarm;
mod watch;

pub(crate) use address::Address;
pub use counters::network_bytes;
pub use deployment::Deployment;
pub(crate) use interrupt::{interruptible, shutdown_signal, Interrupted};
pub use nodes::{NodeEngine, ENGINE_LABEL};
pub use oneoff::{ExecOutput, OneOff};
pub(crate) use swarm::{SwarmNode, SWARM_PORT};
pub(crate) use watch::{is_engine_gone, EngineGone, ANSWER_WITHIN};

use anyhow::{bail, Context, Result};
use bollard::models::ContainerSummaryStateEnum;
use bollard::query_parameters::{
    CreateImageOptionsBuilder, ListContainersOptionsBuilder, ListNetworksOptionsBuilder,
    LogsOptionsBuilder, RemoveContainerOptionsBuilder,
};
use bollard::Docker;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::time::Duration;

/// Label carrying the run id on every container and network the runner creates.
pub(crate) const LABEL_RUN: &str = "io.perf-tests.run";
/// Label marking every resource the runner creates (for `perf-tests clean`).
pub(crate) const LABEL_MANAGED: &str = "io.perf-tests.managed";
/// Label carrying the Compose service name of a container.
pub(crate) const LABEL_SERVICE: &str = "io.perf-tests.service";
/// Label carrying the deployment (project) name.
pub(crate) const LABEL_PROJECT: &str = "io.perf-tests.project";

/// A unique, sortable id for one run; it labels every engine resource the run creates.
pub(crate) fn new_run_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    format!(
        "{}-{:06x}",
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
        h.finish() & 0xff_ffff
    )
}

/// What [`Engine::labelled`] lists: a container or a network, with its name and labels.
#[derive(Debug, Clone)]
pub(crate) struct Labelled {
    /// [`SERVICE`], [`CONTAINER`], [`CONFIG`] or [`NETWORK`].
    pub kind: &'static str,
    pub id: String,
    pub name: String,
    pub labels: HashMap<String, String>,
    /// A container that has stopped (exited or dead) by the listing; never anything else.
    pub stopped: bool,
}

impl Labelled {
    /// A service, config or network as the engine lists it (never stopped); `None` without
    /// an id.
    fn listed(
        kind: &'static str,
        id: Option<String>,
        name: Option<String>,
        labels: Option<HashMap<String, String>>,
    ) -> Option<Labelled> {
        Some(Labelled {
            kind,
            id: id?,
            name: name.unwrap_or_default(),
            labels: labels.unwrap_or_default(),
            stopped: false,
        })
    }
}

pub(crate) const CONTAINER: &str = "container";
pub(crate) const NETWORK: &str = "network";
/// A swarm service (its tasks' containers go with it).
pub(crate) const SERVICE: &str = "service";
/// A swarm config (a file a service mounts).
pub(crate) const CONFIG: &str = "config";

/// How long a swarm's network may stay in use by the tasks of services just removed.
const NETWORK_RELEASE: Duration = Duration::from_secs(10);

/// How long removing a run's containers and networks may take after a failure or a signal.
pub(crate) const SWEEP_WITHIN: Duration = Duration::from_secs(10);

/// The engine's own account of itself.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EngineFacts {
    /// The engine host's name.
    pub name: String,
    pub version: String,
    pub storage_driver: String,
    /// `1` or `2`.
    pub cgroup_version: String,
    /// Where the engine keeps images and containers' writable layers.
    pub root_dir: String,
    pub cpus: usize,
    pub memory_bytes: u64,
    /// The engine host's architecture, e.g. `x86_64`.
    pub arch: String,
    /// The engine host's kernel release, e.g. `6.12.48+deb13-amd64`.
    pub kernel: String,
    /// The engine host's operating system, e.g. `Debian GNU/Linux 13 (trixie)`.
    pub os: String,
}

/// A connection to the Docker engine, tied to one run id.
#[derive(Clone)]
pub struct Engine {
    docker: Docker,
    run_id: String,
    /// How it was reached (its `host` is what messages name); a swarm's nodes are reached with
    /// the manager's TLS files by default.
    address: Address,
    /// On a swarm ([`Engine::swarm`]): every node's engine, and which runs each container.
    swarm: Option<nodes::SwarmView>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("host", &self.address.host)
            .field("run_id", &self.run_id)
            .finish()
    }
}

impl Engine {
    /// Connects as the environment says (`DOCKER_HOST`, `DOCKER_TLS_VERIFY`,
    /// `DOCKER_CERT_PATH`: [`address`]) and negotiates the API version.
    pub async fn connect(run_id: &str) -> Result<Engine> {
        Engine::connect_to(&Address::from_env(), run_id).await
    }

    /// Connects to the engine at `address` and negotiates the API version. A failure says what
    /// it most likely means (TLS on one side only, a certificate refused) when it can tell.
    pub async fn connect_to(address: &Address, run_id: &str) -> Result<Engine> {
        let docker = address.client()?;
        let unreachable = |text: String| {
            let hint = address.explain(&text).unwrap_or_else(|| {
                "is it running? set DOCKER_HOST to use another engine".to_string()
            });
            anyhow::anyhow!(
                "cannot reach the Docker engine at {}: {text}; {hint}",
                address.describe()
            )
        };
        let docker = match tokio::time::timeout(Duration::from_secs(15), docker.negotiate_version())
            .await
        {
            Ok(Ok(d)) => d,
            // The whole chain: a TLS failure's cause is only in the sources.
            Ok(Err(e)) => {
                let mut text = format!("{:#}", anyhow::Error::new(e));
                if address.tls.is_some() && address.explain(&text).is_none() {
                    let probed = address.clone();
                    let failure =
                        tokio::task::spawn_blocking(move || address::handshake_failure(&probed))
                            .await
                            .ok()
                            .flatten();
                    if let Some(failure) = failure {
                        text = format!("{text}; a TLS handshake alone: {failure}");
                    }
                }
                return Err(unreachable(text));
            }
            Err(_) => return Err(unreachable("no answer within 15 s".into())),
        };
        Ok(Engine {
            docker,
            run_id: run_id.to_string(),
            address: address.clone(),
            swarm: None,
        })
    }

    /// The run id every resource is labelled with.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Where the engine is (`DOCKER_HOST` or the default socket).
    pub(crate) fn host(&self) -> &str {
        &self.address.host
    }

    /// What `perf-tests doctor` reports of the engine and checks against the run.
    pub(crate) async fn facts(&self) -> Result<EngineFacts> {
        let info = self
            .docker
            .info()
            .await
            .context("cannot query the Docker engine's facts")?;
        let unknown = || "unknown".to_string();
        Ok(EngineFacts {
            name: info.name.unwrap_or_else(unknown),
            version: info.server_version.unwrap_or_else(unknown),
            storage_driver: info.driver.unwrap_or_else(unknown),
            cgroup_version: info
                .cgroup_version
                .map(|v| v.to_string())
                .unwrap_or_else(unknown),
            root_dir: info.docker_root_dir.unwrap_or_default(),
            cpus: info.ncpu.unwrap_or(0).max(0) as usize,
            memory_bytes: info.mem_total.unwrap_or(0).max(0) as u64,
            arch: info.architecture.unwrap_or_else(unknown),
            kernel: info.kernel_version.unwrap_or_else(unknown),
            os: info.operating_system.unwrap_or_else(unknown),
        })
    }

    /// Whether the engine runs on this host (its socket is local), so that its disk is this
    /// host's.
    pub(crate) fn is_local(&self) -> bool {
        self.host().starts_with("unix://") || self.host().starts_with("npipe://")
    }

    /// The labels every resource of this run carries: the run id, the managed mark and this
    /// process as the owner.
    pub fn run_labels(&self) -> HashMap<String, String> {
        let mut labels = HashMap::from([
            (LABEL_RUN.to_string(), self.run_id.clone()),
            (LABEL_MANAGED.to_string(), "true".to_string()),
        ]);
        labels.extend(liveness::Owner::current().labels());
        labels
    }

    /// The labels of local image `image`, or `None` when the engine does not have it.
    pub async fn image_labels(&self, image: &str) -> Result<Option<HashMap<String, String>>> {
        Ok(self
            .local_image(image)
            .await?
            .map(|i| i.config.and_then(|c| c.labels).unwrap_or_default()))
    }

    /// Local image `image` as the engine describes it, or `None` when it does not have it.
    pub(crate) async fn local_image(
        &self,
        image: &str,
    ) -> Result<Option<bollard::models::ImageInspect>> {
        match self.docker.inspect_image(image).await {
            Ok(i) => Ok(Some(i)),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(anyhow::Error::new(e).context(format!("cannot inspect image {image}"))),
        }
    }

    /// The image id of `image`: the local image if present, else pulled. The error names the
    /// image; callers add which setting chose it.
    pub(crate) async fn ensure_image(&self, image: &str) -> Result<String> {
        if let Ok(found) = self.docker.inspect_image(image).await {
            return Ok(found.id.unwrap_or_default());
        }
        let opts = CreateImageOptionsBuilder::default()
            .from_image(image)
            .build();
        let mut pull = self.docker.create_image(Some(opts), None, None);
        while let Some(item) = pull.next().await {
            if let Err(e) = item {
                bail!("image {image} is not available locally and could not be pulled: {e}");
            }
        }
        let found = self
            .docker
            .inspect_image(image)
            .await
            .with_context(|| format!("image {image} was pulled but cannot be inspected"))?;
        Ok(found.id.unwrap_or_default())
    }

    /// The last `tail` lines of a container's stdout and stderr, interleaved.
    pub(crate) async fn container_logs(&self, container: &str, tail: usize) -> Result<String> {
        let opts = LogsOptionsBuilder::default()
            .stdout(true)
            .stderr(true)
            .tail(&tail.to_string())
            .build();
        let docker = self.docker_of(container);
        let mut stream = docker.logs(container, Some(opts));
        let mut out = String::new();
        while let Some(item) = stream.next().await {
            out.push_str(&item?.to_string());
        }
        Ok(out)
    }

    /// Whether a container is running (not yet exited, nor removed).
    pub(crate) async fn is_running(&self, container: &str) -> Result<bool> {
        match self
            .docker_of(container)
            .inspect_container(container, None)
            .await
        {
            Ok(info) => Ok(info.state.and_then(|s| s.running).unwrap_or(false)),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(false),
            Err(e) => {
                Err(anyhow::Error::new(e).context(format!("inspecting container {container}")))
            }
        }
    }

    /// Removes every container and network labelled with `run_id`. Returns how many were removed.
    pub async fn remove_run(&self, run_id: &str) -> Result<usize> {
        self.remove_labelled(&format!("{LABEL_RUN}={run_id}")).await
    }

    /// Removes every container and network the runner ever created (`io.perf-tests.managed=true`),
    /// whatever run left them. Nothing without that label is touched.
    pub async fn remove_all_managed(&self) -> Result<usize> {
        self.remove_labelled(&format!("{LABEL_MANAGED}=true")).await
    }

    /// The services, containers, configs and networks matching a `key=value` label filter, in
    /// the order they can be removed (on a swarm: the manager's services, every node's
    /// containers, the manager's configs and networks).
    pub(crate) async fn labelled(&self, label: &str) -> Result<Vec<Labelled>> {
        let mut all = self.labelled_services(label).await?;
        all.extend(self.labelled_containers(label).await?);
        all.extend(self.labelled_configs(label).await?);
        all.extend(self.labelled_networks(label).await?);
        Ok(all)
    }

    /// The networks matching a `key=value` label filter (on a swarm, the manager's).
    async fn labelled_networks(&self, label: &str) -> Result<Vec<Labelled>> {
        let filters = HashMap::from([("label", vec![label])]);
        let networks = self
            .manager()
            .list_networks(Some(
                ListNetworksOptionsBuilder::default()
                    .filters(&filters)
                    .build(),
            ))
            .await
            .context("cannot list networks")?;
        Ok(networks
            .into_iter()
            .filter_map(|n| Labelled::listed(NETWORK, n.id, n.name, n.labels))
            .collect())
    }

    /// The containers, running or not, matching a `key=value` label filter (on a swarm, on
    /// every node whose engine is reachable; each is then reached through its node's).
    pub(crate) async fn labelled_containers(&self, label: &str) -> Result<Vec<Labelled>> {
        let filters = HashMap::from([("label", vec![label])]);
        let mut all = Vec::new();
        for (at, docker) in self.each_node() {
            let containers = docker
                .list_containers(Some(
                    ListContainersOptionsBuilder::default()
                        .all(true)
                        .filters(&filters)
                        .build(),
                ))
                .await
                .context("cannot list containers")?;
            for c in containers {
                let Some(id) = c.id else { continue };
                self.placed_at(&id, at);
                all.push(Labelled {
                    kind: CONTAINER,
                    name: c
                        .names
                        .and_then(|n| n.into_iter().next())
                        .map(|n| n.trim_start_matches('/').to_string())
                        .unwrap_or_default(),
                    id,
                    labels: c.labels.unwrap_or_default(),
                    stopped: matches!(
                        c.state,
                        Some(ContainerSummaryStateEnum::EXITED | ContainerSummaryStateEnum::DEAD)
                    ),
                });
            }
        }
        Ok(all)
    }

    /// Removes what `item` names; `false` if it was already gone.
    pub(crate) async fn remove_labelled_item(&self, item: &Labelled) -> Result<bool> {
        match item.kind {
            SERVICE => self.remove_service(&item.id).await,
            CONTAINER => self.remove_container(&item.id).await,
            CONFIG => self.remove_config(&item.id).await,
            _ => self.remove_network(&item.id).await,
        }
    }

    /// Removes services, containers, configs, then networks matching a `key=value` label filter.
    pub(crate) async fn remove_labelled(&self, label: &str) -> Result<usize> {
        let mut removed = 0;
        for item in self.labelled(label).await? {
            if item.kind != NETWORK {
                removed += usize::from(self.remove_labelled_item(&item).await?);
            }
        }
        // Listed after the containers are gone, so none is still attached.
        for item in self.labelled_networks(label).await? {
            removed += usize::from(self.remove_labelled_item(&item).await?);
        }
        Ok(removed)
    }

    /// Removes everything labelled with this engine's run id, giving up after
    /// [`SWEEP_WITHIN`] (an error then says what to run).
    pub(crate) async fn sweep_run(&self) -> Result<()> {
        match tokio::time::timeout(SWEEP_WITHIN, self.remove_run_completely(&self.run_id)).await {
            Ok(removed) => removed,
            Err(_) => bail!(
                "the containers and networks of run {} were not all removed within \
                 {SWEEP_WITHIN:?}; `perf-tests clean` removes them",
                self.run_id
            ),
        }
    }

    /// Removes everything labelled with `run_id` and checks until nothing is left: a removal
    /// another task had under way, or a create the engine was still answering when the work
    /// that asked for it was dropped (an interruption, a phase a fault ended), may otherwise
    /// outlive this process. Such a container, created after the listing, holds its network, so
    /// a failed removal is tried again (for up to 2 s) before it counts.
    pub(crate) async fn remove_run_completely(&self, run_id: &str) -> Result<()> {
        let label = format!("{LABEL_RUN}={run_id}");
        let mut failures = 0;
        loop {
            let left = match self.remove_labelled(&label).await {
                Ok(_) => self.labelled(&label).await,
                Err(e) => Err(e),
            };
            match left {
                Ok(left) if left.is_empty() => return Ok(()),
                Ok(_) => {}
                Err(_) if failures < 20 => failures += 1,
                Err(e) => return Err(e),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Force-removes a container; `false` if it was already gone.
    pub(crate) async fn remove_container(&self, id: &str) -> Result<bool> {
        let opts = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        match self.docker_of(id).remove_container(id, Some(opts)).await {
            Ok(()) => Ok(true),
            Err(e) if is_gone(&e) => Ok(false),
            Err(e) => Err(anyhow::Error::new(e).context(format!("cannot remove container {id}"))),
        }
    }

    /// Removes a network; `false` if it was already gone. On a swarm, a network whose last
    /// tasks were just removed is still in use until their nodes report them gone, and is
    /// deleted a moment after it is removed: tried again, then waited for, for up to
    /// [`NETWORK_RELEASE`].
    pub(crate) async fn remove_network(&self, id: &str) -> Result<bool> {
        let deadline = std::time::Instant::now() + NETWORK_RELEASE;
        loop {
            match self.manager().remove_network(id).await {
                Ok(()) if self.is_swarm() => {
                    // The swarm deletes a network once its allocator lets it go: waited for, so
                    // that nothing of the run outlasts it.
                    while std::time::Instant::now() < deadline {
                        match self.manager().inspect_network(id, None).await {
                            Err(e) if is_not_found(&e) => break,
                            _ => tokio::time::sleep(Duration::from_millis(200)).await,
                        }
                    }
                    return Ok(true);
                }
                Ok(()) => return Ok(true),
                Err(e) if is_gone(&e) => return Ok(false),
                Err(e)
                    if self.is_swarm()
                        && e.to_string().contains("active endpoints")
                        && std::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(200)).await
                }
                Err(e) => {
                    return Err(anyhow::Error::new(e).context(format!("cannot remove network {id}")))
                }
            }
        }
    }
}

/// "No such container", or a removal already under way elsewhere.
fn is_gone(e: &bollard::errors::Error) -> bool {
    match e {
        bollard::errors::Error::DockerResponseServerError {
            status_code,
            message,
        } => {
            *status_code == 404 || (*status_code == 409 && message.contains("already in progress"))
        }
        _ => false,
    }
}

/// True when the engine answered 404 (no such object).
fn is_not_found(e: &bollard::errors::Error) -> bool {
    matches!(
        e,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}
