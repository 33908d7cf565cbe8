//! Swarm mode through the engine: making a swarm, joining one, its nodes and their labels.

use std::collections::HashMap;

use anyhow::{bail, Context, Result};
use bollard::models::{NodeSpec, NodeState, SwarmInitRequest, SwarmJoinRequest};
use bollard::query_parameters::UpdateNodeOptionsBuilder;

use super::Engine;

/// The port managers listen on for joining nodes and for each other.
pub(crate) const SWARM_PORT: u16 = 2377;

/// One node of a swarm as its manager sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct SwarmNode {
    pub id: String,
    pub hostname: String,
    pub manager: bool,
    pub ready: bool,
    /// The address other nodes reach it at.
    pub addr: String,
    pub labels: HashMap<String, String>,
}

impl Engine {
    /// Makes this engine the first manager of a new swarm, reached at `addr` (an IP address of
    /// this engine's host), with overlay networks carved from `pool` (a CIDR).
    pub(crate) async fn init_swarm(&self, addr: &str, pool: &str) -> Result<()> {
        self.docker
            .init_swarm(SwarmInitRequest {
                listen_addr: Some(format!("{addr}:{SWARM_PORT}")),
                advertise_addr: Some(addr.to_string()),
                default_addr_pool: Some(vec![pool.to_string()]),
                subnet_size: Some(24),
                ..Default::default()
            })
            .await
            .with_context(|| format!("the engine at {} cannot start a swarm", self.host()))?;
        Ok(())
    }

    /// The token a worker joins this manager's swarm with.
    pub(crate) async fn worker_token(&self) -> Result<String> {
        let swarm = self
            .docker
            .inspect_swarm()
            .await
            .with_context(|| format!("the engine at {} is no swarm manager", self.host()))?;
        swarm
            .join_tokens
            .and_then(|t| t.worker)
            .context("the swarm manager gave no worker token")
    }

    /// Joins this engine, reached at `addr`, to the swarm whose manager listens at `manager`
    /// (`address:port`) as a worker.
    pub(crate) async fn join_swarm(&self, addr: &str, manager: &str, token: &str) -> Result<()> {
        self.docker
            .join_swarm(SwarmJoinRequest {
                listen_addr: Some(format!("{addr}:{SWARM_PORT}")),
                advertise_addr: Some(addr.to_string()),
                remote_addrs: Some(vec![manager.to_string()]),
                join_token: Some(token.to_string()),
                ..Default::default()
            })
            .await
            .with_context(|| {
                format!(
                    "the engine at {} cannot join the swarm managed at {manager}",
                    self.host()
                )
            })?;
        Ok(())
    }

    /// The swarm's nodes, as this manager sees them.
    pub async fn swarm_nodes(&self) -> Result<Vec<SwarmNode>> {
        let nodes = self
            .docker
            .list_nodes(None)
            .await
            .with_context(|| format!("the engine at {} is no swarm manager", self.host()))?;
        Ok(nodes
            .into_iter()
            .map(|n| {
                let status = n.status.unwrap_or_default();
                SwarmNode {
                    id: n.id.unwrap_or_default(),
                    hostname: n.description.and_then(|d| d.hostname).unwrap_or_default(),
                    manager: n.manager_status.is_some(),
                    ready: status.state == Some(NodeState::READY),
                    addr: status.addr.unwrap_or_default(),
                    labels: n.spec.and_then(|s| s.labels).unwrap_or_default(),
                }
            })
            .collect())
    }

    /// Sets label `key=value` on node `id`, keeping the node's other settings.
    pub(crate) async fn label_node(&self, id: &str, key: &str, value: &str) -> Result<()> {
        let node = self
            .docker
            .inspect_node(id)
            .await
            .with_context(|| format!("cannot inspect swarm node {id}"))?;
        let version = node.version.and_then(|v| v.index).unwrap_or(0);
        let mut spec: NodeSpec = node.spec.unwrap_or_default();
        spec.labels
            .get_or_insert_with(HashMap::new)
            .insert(key.to_string(), value.to_string());
        let Ok(version) = i64::try_from(version) else {
            bail!("swarm node {id} has version {version}, beyond what the API takes");
        };
        self.docker
            .update_node(
                id,
                spec,
                UpdateNodeOptionsBuilder::default().version(version).build(),
            )
            .await
            .with_context(|| format!("cannot label swarm node {id} with {key}={value}"))?;
        Ok(())
    }
}
