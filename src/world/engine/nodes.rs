//! A swarm seen as one engine: its manager creates services, networks and configs, and each
//! container is reached through the engine of the node that runs it (exec, logs, counters,
//! files, removal), so the code that works on a container serves both a single engine and a
//! swarm.
//!
//! A node's engine address is the node label [`ENGINE_LABEL`] (`perf-tests swarm local` sets
//! it; on a real cluster the operator does, e.g. `tcp://10.0.0.5:2376`): the swarm's API knows
//! its nodes but not how to reach their engines. A TCP address is reached over TLS with the
//! node's own files ([`CERTS_LABEL`]) or the manager's (`DOCKER_CERT_PATH`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use bollard::Docker;

use super::address::{Address, CERTS_LABEL};
use super::Engine;

/// The node label holding the address of the node's own engine (a `DOCKER_HOST` value).
pub const ENGINE_LABEL: &str = "perf-tests.engine";

/// A node of the swarm and its engine.
#[derive(Debug, Clone)]
pub struct NodeEngine {
    pub id: String,
    pub hostname: String,
    pub ready: bool,
    pub labels: HashMap<String, String>,
    /// Its engine's address, from [`ENGINE_LABEL`] (the manager's is `DOCKER_HOST`).
    pub host: Option<String>,
}

/// Every node, its engine connection and the node each known container runs on.
pub(super) struct Nodes {
    pub(super) list: Vec<NodeEngine>,
    /// Each node's engine connection and how it was reached, where it is.
    reached: Vec<Option<(Docker, Address)>>,
    /// The manager's index: services, networks and configs are its.
    manager: usize,
    /// Container id → index in `list`.
    placed: Mutex<HashMap<String, usize>>,
}

impl Nodes {
    /// Node `at`'s engine connection, where it is reached.
    fn docker(&self, at: usize) -> Option<Docker> {
        self.reached[at].as_ref().map(|(d, _)| d.clone())
    }
}

/// Which swarm an engine belongs to and which node's engine it is.
#[derive(Clone)]
pub(super) struct SwarmView {
    pub(super) nodes: Arc<Nodes>,
    pub(super) at: usize,
}

impl Engine {
    /// This engine as the manager of its swarm, with a connection to each node's engine. Fails
    /// when the engine is in no swarm or is a worker, and when a node's labelled engine does
    /// not answer; a node without the label is kept without an engine (an error names it when
    /// something must run there).
    pub(crate) async fn swarm(&self) -> Result<Engine> {
        self.swarm_from(self.swarm_state().await?).await
    }

    /// [`Engine::swarm`] from the engine's swarm state, as [`Engine::swarm_state`] reads it.
    async fn swarm_from(&self, (state, manager, me): (String, bool, String)) -> Result<Engine> {
        if state != "active" {
            bail!(
                "ENGINE=swarm: the engine at {} (DOCKER_HOST) is in no swarm (its swarm state: \
                 {}); `perf-tests swarm local` makes one on this machine, or point DOCKER_HOST \
                 at a swarm manager",
                self.host(),
                if state.is_empty() { "inactive" } else { &state }
            );
        }
        if !manager {
            bail!(
                "ENGINE=swarm: the engine at {} (DOCKER_HOST) is a swarm worker; point \
                 DOCKER_HOST at a manager (`docker node ls` on it lists the managers)",
                self.address.host
            );
        }
        let mut list = Vec::new();
        let mut reached = Vec::new();
        let mut at = 0;
        for node in self.swarm_nodes().await? {
            let engine = if node.id == me {
                at = list.len();
                Some((self.docker.clone(), self.address.clone()))
            } else if let Some(host) = node.labels.get(ENGINE_LABEL) {
                let address = Address::node(
                    &node.hostname,
                    host,
                    node.labels.get(CERTS_LABEL).map(String::as_str),
                    &self.address,
                );
                let engine = Engine::connect_to(&address, &self.run_id)
                    .await
                    .with_context(|| {
                        format!(
                            "swarm node {} has {ENGINE_LABEL}={host}, an engine that does not \
                             answer",
                            node.hostname
                        )
                    })?;
                Some((engine.docker, address))
            } else {
                None
            };
            list.push(NodeEngine {
                id: node.id,
                hostname: node.hostname,
                ready: node.ready,
                labels: node.labels,
                host: engine.as_ref().map(|(_, a)| a.host.clone()),
            });
            reached.push(engine);
        }
        let mut engine = self.clone();
        engine.swarm = Some(SwarmView {
            nodes: Arc::new(Nodes {
                list,
                reached,
                manager: at,
                placed: Mutex::new(HashMap::new()),
            }),
            at,
        });
        Ok(engine)
    }

    /// This engine as its swarm ([`Engine::swarm`]) when it is a swarm's manager, else itself.
    pub(crate) async fn whole_swarm(&self) -> Result<Engine> {
        match self.swarm_state().await? {
            state @ (_, true, _) if state.0 == "active" => self.swarm_from(state).await,
            _ => Ok(self.clone()),
        }
    }

    /// This engine's swarm state (`active`, `inactive`, …), whether it is a manager, and its
    /// node id.
    async fn swarm_state(&self) -> Result<(String, bool, String)> {
        let info = self
            .docker
            .info()
            .await
            .with_context(|| format!("cannot query the Docker engine at {}", self.host()))?;
        let swarm = info.swarm.unwrap_or_default();
        Ok((
            swarm
                .local_node_state
                .map(|s| s.to_string())
                .unwrap_or_default(),
            swarm.control_available == Some(true),
            swarm.node_id.unwrap_or_default(),
        ))
    }

    /// Whether this engine is a swarm's: services rather than containers.
    pub(crate) fn is_swarm(&self) -> bool {
        self.swarm.is_some()
    }

    /// The host name of the swarm node this engine is, when it is a swarm's.
    pub(crate) fn node(&self) -> Option<&str> {
        let view = self.swarm.as_ref()?;
        Some(&view.nodes.list[view.at].hostname)
    }

    /// The swarm's nodes, when this engine is a swarm's ([`Engine::swarm`]).
    pub(crate) fn nodes(&self) -> &[NodeEngine] {
        self.swarm.as_ref().map_or(&[], |s| &s.nodes.list)
    }

    /// The same swarm through the engine of the node named `hostname`: one-off containers it
    /// creates run there. An error names a node that has no reachable engine.
    pub(crate) fn on_node(&self, hostname: &str) -> Result<Engine> {
        let Some(view) = &self.swarm else {
            return Ok(self.clone());
        };
        let Some(at) = view.nodes.list.iter().position(|n| n.hostname == hostname) else {
            bail!("the swarm has no node named {hostname}");
        };
        let Some((docker, address)) = view.nodes.reached[at].clone() else {
            bail!(
                "swarm node {hostname} has no {ENGINE_LABEL} label, so its engine cannot be \
                 reached (`docker node update --label-add {ENGINE_LABEL}=tcp://<address>:2376 \
                 {hostname}` on the manager)"
            );
        };
        Ok(Engine {
            docker,
            address,
            run_id: self.run_id.clone(),
            swarm: Some(SwarmView {
                nodes: view.nodes.clone(),
                at,
            }),
        })
    }

    /// The manager's connection (this one off a swarm): services, networks and configs.
    pub(super) fn manager(&self) -> Docker {
        self.swarm
            .as_ref()
            .and_then(|v| v.nodes.docker(v.nodes.manager))
            .unwrap_or_else(|| self.docker.clone())
    }

    /// Each reachable node's connection and its index (this one alone off a swarm).
    pub(super) fn each_node(&self) -> Vec<(Option<usize>, Docker)> {
        match &self.swarm {
            None => vec![(None, self.docker.clone())],
            Some(view) => view
                .nodes
                .reached
                .iter()
                .enumerate()
                .filter_map(|(i, r)| Some((Some(i), r.as_ref()?.0.clone())))
                .collect(),
        }
    }

    /// Records that `container` runs on node `at` (an index of [`Engine::each_node`]).
    pub(super) fn placed_at(&self, container: &str, at: Option<usize>) {
        if let (Some(view), Some(at)) = (&self.swarm, at) {
            if let Ok(mut placed) = view.nodes.placed.lock() {
                placed.insert(container.to_string(), at);
            }
        }
    }

    /// Records that `container` runs on this engine's node, so the other engines of the swarm
    /// reach it through this one.
    pub(super) fn placed_here(&self, container: &str) {
        self.placed_at(container, self.swarm.as_ref().map(|v| v.at));
    }

    /// Records that `container` runs on the node with swarm id `node`.
    pub(super) fn placed_on(&self, container: &str, node: &str) {
        let at = self
            .swarm
            .as_ref()
            .and_then(|v| v.nodes.list.iter().position(|n| n.id == node));
        self.placed_at(container, at);
    }

    /// The host name of the node that runs `container`, on a swarm.
    pub(crate) fn node_of(&self, container: &str) -> Option<String> {
        let view = self.swarm.as_ref()?;
        let at = *view.nodes.placed.lock().ok()?.get(container)?;
        Some(view.nodes.list[at].hostname.clone())
    }

    /// The engine connection that reaches `container`: its node's, or this one.
    pub(super) fn docker_of(&self, container: &str) -> Docker {
        let Some(view) = &self.swarm else {
            return self.docker.clone();
        };
        view.nodes
            .placed
            .lock()
            .ok()
            .and_then(|p| p.get(container).copied())
            .and_then(|at| view.nodes.docker(at))
            .unwrap_or_else(|| self.docker.clone())
    }
}
