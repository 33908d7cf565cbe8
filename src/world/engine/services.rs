//! Compose services as Swarm services: the spec a service becomes (refusing what Swarm cannot
//! do, naming the key), its task followed until its container runs on a node, and the
//! services and configs a run leaves, found by label.
//!
//! Each service is one replica that is never restarted (a death stays visible to the death
//! watch), reached by name through DNS round robin (`dnsrr`: Swarm's virtual IPs need the
//! kernel's IPVS), with no health check of the engine's (the deployment probes readiness
//! itself, once, as on one engine). A read-only file a service mounts becomes a Swarm config,
//! which the swarm carries to whichever node runs it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use bollard::models::{
    ConfigSpec, EndpointSpec, EndpointSpecModeEnum, Mount, MountType, NetworkAttachmentConfig,
    ServiceSpec, ServiceSpecMode, ServiceSpecModeReplicated, TaskSpec, TaskSpecContainerSpec,
    TaskSpecContainerSpecConfigs, TaskSpecContainerSpecFile1, TaskSpecPlacement,
    TaskSpecRestartPolicy, TaskSpecRestartPolicyConditionEnum, TaskState,
};
use bollard::query_parameters::{
    ListConfigsOptionsBuilder, ListServicesOptionsBuilder, ListTasksOptionsBuilder,
};

use super::{is_gone, Engine, Labelled, CONFIG, LABEL_PROJECT, LABEL_SERVICE, SERVICE};
use crate::world::compose::Service;

/// How often a task's state is asked while it is being placed and started.
const POLL: Duration = Duration::from_millis(200);

/// A file a service mounts, carried as a Swarm config: where it goes and the config's id and
/// name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConfigMount {
    pub target: String,
    pub id: String,
    pub name: String,
}

/// What a service spec is made of besides the Compose service: its name on the swarm, the
/// labels of the run and deployment, the engine network of each Compose network, the node
/// constraint and the configs its files were stored in.
pub(crate) struct SpecParts<'a> {
    pub name: &'a str,
    pub run_labels: HashMap<String, String>,
    pub project: &'a str,
    pub network: &'a dyn Fn(&str) -> String,
    pub constraint: &'a str,
    pub configs: &'a [ConfigMount],
}

/// The files of `service` that travel as Swarm configs (read-only regular files), and an
/// error naming the first mount that cannot travel at all: a directory or a writable file
/// exists only on the host that runs the runner.
pub(crate) fn config_files(service: &Service) -> Result<Vec<(&std::path::Path, &str)>> {
    let svc = &service.name;
    service
        .mounts
        .iter()
        .map(|m| {
            if !m.read_only || !m.source.is_file() {
                bail!(
                    "service \"{svc}\": volumes: {} cannot be carried to a swarm node (ENGINE=swarm \
                     carries read-only files as Swarm configs; a directory or a writable mount \
                     exists only on this host)",
                    m.source.display()
                );
            }
            Ok((m.source.as_path(), m.target.as_str()))
        })
        .collect()
}

/// The Swarm service spec of Compose service `service`; an error names the key Swarm cannot
/// honour. Touches no engine.
pub(crate) fn service_spec(service: &Service, parts: &SpecParts) -> Result<ServiceSpec> {
    let svc = &service.name;
    let mounts = swarm_mounts(service)?;
    let mut labels: HashMap<String, String> = service.labels.clone().into_iter().collect();
    labels.extend(parts.run_labels.clone());
    labels.insert(LABEL_SERVICE.to_string(), svc.clone());
    labels.insert(LABEL_PROJECT.to_string(), parts.project.to_string());
    let networks = service
        .networks
        .iter()
        .map(|(net, aliases)| NetworkAttachmentConfig {
            target: Some((parts.network)(net)),
            aliases: Some(
                std::iter::once(svc.clone())
                    .chain(aliases.iter().cloned())
                    .collect(),
            ),
            ..Default::default()
        })
        .collect();
    let configs = parts
        .configs
        .iter()
        .map(|c| TaskSpecContainerSpecConfigs {
            file: Some(TaskSpecContainerSpecFile1 {
                name: Some(c.target.clone()),
                uid: Some("0".into()),
                gid: Some("0".into()),
                mode: Some(0o444),
            }),
            config_id: Some(c.id.clone()),
            config_name: Some(c.name.clone()),
            ..Default::default()
        })
        .collect();
    Ok(ServiceSpec {
        name: Some(parts.name.to_string()),
        labels: Some(labels.clone()),
        mode: Some(ServiceSpecMode {
            replicated: Some(ServiceSpecModeReplicated { replicas: Some(1) }),
            ..Default::default()
        }),
        endpoint_spec: Some(EndpointSpec {
            mode: Some(EndpointSpecModeEnum::DNSRR),
            ..Default::default()
        }),
        task_template: Some(TaskSpec {
            container_spec: Some(TaskSpecContainerSpec {
                image: Some(service.image.clone()),
                labels: Some(labels),
                // Compose's entrypoint is Swarm's command, Compose's command its args.
                command: service.entrypoint.clone(),
                args: service.command.clone(),
                hostname: Some(service.hostname.clone().unwrap_or_else(|| svc.clone())),
                env: Some(service.environment.clone()),
                dir: service.working_dir.clone(),
                user: service.user.clone(),
                mounts: Some(mounts),
                configs: Some(configs),
                ..Default::default()
            }),
            restart_policy: Some(TaskSpecRestartPolicy {
                condition: Some(TaskSpecRestartPolicyConditionEnum::NONE),
                ..Default::default()
            }),
            placement: Some(TaskSpecPlacement {
                constraints: Some(vec![parts.constraint.to_string()]),
                ..Default::default()
            }),
            networks: Some(networks),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// Refuses the keys of Compose service `service` Swarm cannot honour, naming them; its tmpfs
/// mounts as Swarm's.
fn swarm_mounts(service: &Service) -> Result<Vec<Mount>> {
    let svc = &service.name;
    let refuse = |key: &str, why: &str| -> Result<()> {
        bail!("service \"{svc}\": {key}: not supported with ENGINE=swarm ({why})")
    };
    if !service.ports.is_empty() {
        refuse(
            "ports",
            "Swarm publishes ports through its routing mesh; clients run on the run's network",
        )?;
    }
    if service.cpuset.is_some() {
        refuse("cpuset", "a Swarm service cannot be pinned to CPUs")?;
    }
    if !service.security_opt.is_empty() {
        refuse("security_opt", "a Swarm service takes no --security-opt")?;
    }
    if service.container_name.is_some() {
        refuse("container_name", "Swarm names a service's containers")?;
    }
    let mut mounts = Vec::new();
    for t in &service.tmpfs {
        let (target, options) = t.split_once(':').unwrap_or((t, ""));
        if !options.is_empty() {
            refuse(
                "tmpfs",
                &format!("{t}: a Swarm tmpfs mount takes no options"),
            )?;
        }
        mounts.push(Mount {
            target: Some(target.to_string()),
            typ: Some(MountType::TMPFS),
            ..Default::default()
        });
    }
    Ok(mounts)
}

impl Engine {
    /// Stores `file` as a Swarm config named `name`, labelled with the run; returns its id.
    pub(crate) async fn create_config(
        &self,
        name: &str,
        file: &std::path::Path,
        labels: HashMap<String, String>,
    ) -> Result<String> {
        let data = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
        let created = self
            .manager()
            .create_config(ConfigSpec {
                name: Some(name.to_string()),
                labels: Some(labels),
                data: Some(base64::engine::general_purpose::STANDARD.encode(data)),
                ..Default::default()
            })
            .await
            .with_context(|| format!("cannot store {} as Swarm config {name}", file.display()))?;
        Ok(created.id)
    }

    /// Creates a service from `spec`; returns its id.
    pub(crate) async fn create_service(&self, spec: ServiceSpec) -> Result<String> {
        let name = spec.name.clone().unwrap_or_default();
        let created = self
            .manager()
            .create_service(spec, None)
            .await
            .with_context(|| format!("cannot create Swarm service {name}"))?;
        created
            .id
            .with_context(|| format!("the swarm gave Swarm service {name} no id"))
    }

    /// Waits until the task of service `id` runs and returns its container, now reached through
    /// its node's engine; fails with the swarm's own reason when the task fails or is rejected
    /// (a node without the image, a constraint no node meets), or by `deadline`.
    pub(crate) async fn service_container(
        &self,
        id: &str,
        svc: &str,
        deadline: Instant,
    ) -> Result<String> {
        let filters = HashMap::from([("service", vec![id])]);
        let mut last = String::from("not yet scheduled");
        loop {
            let tasks = self
                .manager()
                .list_tasks(Some(
                    ListTasksOptionsBuilder::default().filters(&filters).build(),
                ))
                .await
                .with_context(|| format!("cannot list the tasks of service \"{svc}\""))?;
            for task in tasks {
                let status = task.status.unwrap_or_default();
                let state = status.state.unwrap_or(TaskState::NEW);
                let why = status
                    .err
                    .clone()
                    .or(status.message.clone())
                    .unwrap_or_default();
                last = format!("{state}: {why}");
                match state {
                    TaskState::RUNNING | TaskState::COMPLETE => {
                        let container = status
                            .container_status
                            .and_then(|c| c.container_id)
                            .with_context(|| format!("service \"{svc}\" runs no container"))?;
                        if let Some(node) = &task.node_id {
                            self.placed_on(&container, node);
                        }
                        return Ok(container);
                    }
                    TaskState::FAILED | TaskState::REJECTED | TaskState::ORPHANED => {
                        bail!("service \"{svc}\": its Swarm task {state}: {why}")
                    }
                    _ => {}
                }
            }
            if Instant::now() >= deadline {
                bail!(
                    "service \"{svc}\" was not running on a swarm node in time (its task: {last})"
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Removes a service (its task's container goes with it); `false` if it was already gone.
    pub(crate) async fn remove_service(&self, id: &str) -> Result<bool> {
        match self.manager().delete_service(id).await {
            Ok(()) => Ok(true),
            Err(e) if is_gone(&e) => Ok(false),
            Err(e) => Err(anyhow::Error::new(e).context(format!("cannot remove service {id}"))),
        }
    }

    /// Removes a config; `false` if it was already gone.
    pub(crate) async fn remove_config(&self, id: &str) -> Result<bool> {
        match self.manager().delete_config(id).await {
            Ok(()) => Ok(true),
            Err(e) if is_gone(&e) => Ok(false),
            Err(e) => Err(anyhow::Error::new(e).context(format!("cannot remove config {id}"))),
        }
    }

    /// The services matching a `key=value` label filter (none off a swarm).
    pub(crate) async fn labelled_services(&self, label: &str) -> Result<Vec<Labelled>> {
        if self.swarm.is_none() {
            return Ok(Vec::new());
        }
        let filters = HashMap::from([("label", vec![label])]);
        let services = self
            .manager()
            .list_services(Some(
                ListServicesOptionsBuilder::default()
                    .filters(&filters)
                    .build(),
            ))
            .await
            .context("cannot list the swarm's services")?;
        Ok(services
            .into_iter()
            .filter_map(|s| {
                let spec = s.spec.unwrap_or_default();
                Labelled::listed(SERVICE, s.id, spec.name, spec.labels)
            })
            .collect())
    }

    /// The configs matching a `key=value` label filter (none off a swarm).
    pub(crate) async fn labelled_configs(&self, label: &str) -> Result<Vec<Labelled>> {
        if self.swarm.is_none() {
            return Ok(Vec::new());
        }
        let filters = HashMap::from([("label", vec![label])]);
        let configs = self
            .manager()
            .list_configs(Some(
                ListConfigsOptionsBuilder::default()
                    .filters(&filters)
                    .build(),
            ))
            .await
            .context("cannot list the swarm's configs")?;
        Ok(configs
            .into_iter()
            .filter_map(|c| {
                let spec = c.spec.unwrap_or_default();
                Labelled::listed(CONFIG, c.id, spec.name, spec.labels)
            })
            .collect())
    }
}

/// A Swarm service's name from the deployment's and the Compose service's: at most 63
/// characters (Swarm's limit, a DNS label); a longer one is cut and ends in a hash of the
/// whole, so two services that share a long prefix keep apart.
pub(crate) fn service_name(project: &str, svc: &str) -> String {
    const MAX: usize = 63;
    let name = format!("{project}-{svc}");
    if name.len() <= MAX {
        return name;
    }
    // FNV-1a: stable across builds, unlike the standard library's hasher.
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let suffix = format!("-{:08x}", hash & 0xffff_ffff);
    let head = name[..MAX - suffix.len()].trim_end_matches('-');
    format!("{head}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::super::deployment::tests::service;
    use super::*;

    fn parts<'a>(configs: &'a [ConfigMount], net: &'a dyn Fn(&str) -> String) -> SpecParts<'a> {
        SpecParts {
            name: "pt-proxy",
            run_labels: HashMap::from([(super::super::LABEL_RUN.to_string(), "r1".to_string())]),
            project: "pt",
            network: net,
            constraint: "node.labels.perf-tests.role==proxy",
            configs,
        }
    }

    #[test]
    fn a_compose_service_becomes_one_unrestarted_replica_placed_by_its_role() {
        let s = service(
            "services:
  proxy:
    image: proxy:1
    entrypoint: [/bin/run]
    command: [--port, \"9092\"]
    environment: { MODE: fast }
    tmpfs: [/run]
    labels: { team: kafka }
    networks: { default: { aliases: [kroxylicious] } }
",
        );
        let net = |n: &str| format!("pt_{n}");
        let configs = [ConfigMount {
            target: "/config.yaml".into(),
            id: "c1".into(),
            name: "pt-proxy-0".into(),
        }];
        let spec = service_spec(&s, &parts(&configs, &net)).unwrap();
        assert_eq!(spec.name.as_deref(), Some("pt-proxy"));
        assert_eq!(spec.mode.unwrap().replicated.unwrap().replicas, Some(1));
        assert_eq!(
            spec.endpoint_spec.unwrap().mode,
            Some(EndpointSpecModeEnum::DNSRR)
        );
        let task = spec.task_template.unwrap();
        assert_eq!(
            task.restart_policy.unwrap().condition,
            Some(TaskSpecRestartPolicyConditionEnum::NONE)
        );
        assert_eq!(
            task.placement.unwrap().constraints.unwrap(),
            ["node.labels.perf-tests.role==proxy"]
        );
        let nets = task.networks.unwrap();
        assert_eq!(nets[0].target.as_deref(), Some("pt_default"));
        assert_eq!(nets[0].aliases.clone().unwrap(), ["proxy", "kroxylicious"]);
        let c = task.container_spec.unwrap();
        assert_eq!(c.command, Some(vec!["/bin/run".to_string()]));
        assert_eq!(c.args, Some(vec!["--port".to_string(), "9092".to_string()]));
        assert_eq!(c.env, Some(vec!["MODE=fast".to_string()]));
        let labels = c.labels.unwrap();
        assert_eq!(labels["team"], "kafka");
        assert_eq!(labels[super::super::LABEL_RUN], "r1");
        assert_eq!(labels[LABEL_SERVICE], "proxy");
        assert_eq!(labels[LABEL_PROJECT], "pt");
        assert_eq!(c.mounts.unwrap()[0].typ, Some(MountType::TMPFS));
        let file = c.configs.unwrap()[0].clone();
        assert_eq!(file.config_id.as_deref(), Some("c1"));
        assert_eq!(file.file.unwrap().name.as_deref(), Some("/config.yaml"));
        // The deployment probes readiness itself.
        assert!(c.health_check.is_none());
    }

    #[test]
    fn what_swarm_cannot_do_is_refused_by_its_key() {
        let net = |n: &str| n.to_string();
        for (yaml, key) in [
            ("ports: [\"9092:9092\"]", "ports"),
            ("cpuset: \"0\"", "cpuset"),
            ("security_opt: [\"seccomp=unconfined\"]", "security_opt"),
            ("container_name: fixed", "container_name"),
            ("tmpfs: [\"/run:size=1m\"]", "tmpfs"),
        ] {
            let s = service(&format!("services:\n  proxy:\n    image: p\n    {yaml}\n"));
            let e = service_spec(&s, &parts(&[], &net)).unwrap_err().to_string();
            assert!(
                e.contains(&format!(
                    "service \"proxy\": {key}: not supported with ENGINE=swarm"
                )),
                "{e}"
            );
        }
    }

    #[test]
    fn only_read_only_files_travel_to_the_nodes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.yaml");
        std::fs::write(&file, "x: 1").unwrap();
        let yaml = |volume: &str| {
            format!("services:\n  proxy:\n    image: p\n    volumes: [\"{volume}\"]\n")
        };
        let ro = service(&yaml(&format!("{}:/c.yaml:ro", file.display())));
        assert_eq!(config_files(&ro).unwrap(), [(file.as_path(), "/c.yaml")]);
        let rw = service(&yaml(&format!("{}:/c.yaml", file.display())));
        let e = config_files(&rw).unwrap_err().to_string();
        assert!(
            e.contains("volumes:") && e.contains("cannot be carried"),
            "{e}"
        );
        let directory = service(&yaml(&format!("{}:/d:ro", dir.path().display())));
        assert!(config_files(&directory).is_err());
    }

    #[test]
    fn a_service_name_fits_a_dns_label() {
        let project = "perf-tests-20261202t173059z-abcdef";
        let encrypt = service_name(project, "kroxylicious-envelope-encryption-filter");
        let no_encrypt = service_name(
            project,
            "kroxylicious-envelope-encryption-filter-no-encrypt",
        );
        assert!(encrypt.len() <= 63 && no_encrypt.len() <= 63);
        assert_ne!(encrypt, no_encrypt);
        assert_eq!(service_name("pt", "broker1"), "pt-broker1");
    }
}
