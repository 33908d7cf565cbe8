//! Where each service of a run goes on a swarm (`ENGINE=swarm`): its node role, checked
//! against the swarm's nodes before anything starts, and each image put on the nodes that may
//! run it (copied from the manager's engine, or through `REGISTRY`).
//!
//! A node's role is its `perf-tests.role` label. By default the run-wide services (the broker)
//! go on `broker`, every scenario's own services (the path under test: proxy, KMS) on `proxy`
//! and the load generator on `load`; `SWARM_ROLES` moves any of them. The load generator never
//! shares a node with a service of the run: on one machine it would take the cores the path
//! is measured on, and its traffic would not cross the network a deployment's would.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{bail, Context, Result};

use crate::plan::Plan;
use crate::settings::Settings;
use crate::world::engine::{Engine, NodeEngine, ENGINE_LABEL};
use crate::world::swarm::ROLE_LABEL;

/// The name `SWARM_ROLES` gives the load generator.
pub(super) const LOAD: &str = "load";

/// A run's placement on a swarm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Placement {
    /// Service → the role of the nodes it runs on.
    pub(super) roles: BTreeMap<String, String>,
    /// Role → the ready nodes (host names) that carry it.
    pub(super) nodes: BTreeMap<String, Vec<String>>,
    /// The role of the nodes the load generators' containers run on.
    pub(super) load_role: String,
    /// Run-wide services (a cluster's brokers) held to one node each: several sharing a role
    /// that several nodes carry take those nodes in turn, by host name, rather than leaving
    /// Swarm free to stack them on one.
    pub(super) pinned: BTreeMap<String, String>,
}

/// The services a run places: all of them, and the run-wide ones among them.
pub(super) struct Services<'a> {
    pub(super) all: &'a [String],
    pub(super) run_wide: &'a [String],
}

impl Placement {
    /// Each service's Swarm placement constraint: the nodes of its role, or its one node.
    pub(super) fn constraints(&self) -> BTreeMap<String, String> {
        self.roles
            .iter()
            .map(|(s, role)| {
                let constraint = match self.pinned.get(s) {
                    Some(node) => format!("node.hostname=={node}"),
                    None => format!("node.labels.{ROLE_LABEL}=={role}"),
                };
                (s.clone(), constraint)
            })
            .collect()
    }

    /// The node of each run-wide service that shares its role with others, that role's nodes
    /// taken in turn (none where the role has one such service or one node).
    fn spread(&self, run_wide: &[String]) -> BTreeMap<String, String> {
        let mut by_role: BTreeMap<&String, Vec<&String>> = BTreeMap::new();
        for service in run_wide {
            if let Some(role) = self.roles.get(service) {
                by_role.entry(role).or_default().push(service);
            }
        }
        let mut pinned = BTreeMap::new();
        for (role, services) in by_role {
            if services.len() < 2 || self.nodes[role].len() < 2 {
                continue;
            }
            for (i, service) in services.into_iter().enumerate() {
                pinned.insert(service.clone(), self.in_turn(role, i).to_string());
            }
        }
        pinned
    }

    /// The node load generator `i` (from 0) runs on: the load nodes in turn, by host name.
    pub(super) fn load_node(&self, i: usize) -> &str {
        self.in_turn(&self.load_role, i)
    }

    /// The `i`-th (from 0) of several things of `role` goes to that role's nodes in turn.
    fn in_turn(&self, role: &str, i: usize) -> &str {
        let nodes = &self.nodes[role];
        &nodes[i % nodes.len()]
    }

    /// The nodes the load generators may run on, by host name.
    pub(super) fn load_nodes(&self) -> &[String] {
        &self.nodes[&self.load_role]
    }

    /// Every node the run may place anything on, with the roles it carries for the run.
    pub(super) fn roles_by_node(&self) -> BTreeMap<String, Vec<String>> {
        let mut by_node: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (role, nodes) in &self.nodes {
            for node in nodes {
                by_node.entry(node.clone()).or_default().push(role.clone());
            }
        }
        by_node
    }
}

/// Each service's role and the load generator's, with the setting or default that chose it.
fn roles(services: &Services, settings: &Settings) -> Vec<(String, String, &'static str)> {
    let chosen = |name: &str| {
        settings
            .swarm_roles
            .iter()
            .find(|(s, _)| s == name)
            .map(|(_, r)| r.clone())
    };
    let mut roles: Vec<(String, String, &'static str)> = services
        .all
        .iter()
        .map(|s| match chosen(s) {
            Some(r) => (s.clone(), r, "SWARM_ROLES"),
            None if services.run_wide.contains(s) => (
                s.clone(),
                "broker".into(),
                "the default for a run-wide service",
            ),
            None => (
                s.clone(),
                "proxy".into(),
                "the default for a scenario's service",
            ),
        })
        .collect();
    roles.push(match chosen(LOAD) {
        Some(r) => (LOAD.into(), r, "SWARM_ROLES"),
        None => (
            LOAD.into(),
            LOAD.into(),
            "the default for the load generator",
        ),
    });
    roles
}

/// The run's placement on the swarm of `nodes`, or an error naming what cannot be placed: a
/// `SWARM_ROLES` entry naming no service of the run, a role no ready node carries, a node that
/// must be reached without an engine address, the load generator beside a service.
pub(super) fn place(
    services: &Services,
    settings: &Settings,
    nodes: &[NodeEngine],
) -> Result<Placement> {
    for (service, _) in &settings.swarm_roles {
        if service != LOAD && !services.all.contains(service) {
            bail!(
                "SWARM_ROLES names {service}, which is no service of this run (its services: \
                 {}; `{LOAD}` is the load generator)",
                services.all.join(", ")
            );
        }
    }
    let described = || {
        let mut all: Vec<String> = nodes
            .iter()
            .map(|n| {
                let role = n.labels.get(ROLE_LABEL).map_or("no role", String::as_str);
                let ready = if n.ready { "" } else { ", not ready" };
                format!("{} ({role}{ready})", n.hostname)
            })
            .collect();
        all.sort();
        all.join(", ")
    };
    let mut placement = Placement {
        roles: BTreeMap::new(),
        nodes: BTreeMap::new(),
        load_role: String::new(),
        pinned: BTreeMap::new(),
    };
    let all = roles(services, settings);
    for (what, role, why) in &all {
        let mut carrying: Vec<&NodeEngine> = nodes
            .iter()
            .filter(|n| n.ready && n.labels.get(ROLE_LABEL) == Some(role))
            .collect();
        // By name, so that the load generators take the load nodes in a known order.
        carrying.sort_by(|a, b| a.hostname.cmp(&b.hostname));
        let shown = if what == LOAD {
            "the load generator".to_string()
        } else {
            format!("service \"{what}\"")
        };
        if carrying.is_empty() {
            bail!(
                "{shown} is placed on role {role} ({why}), but no ready node of the swarm \
                 carries {ROLE_LABEL}={role} (its nodes: {}); label one (`docker node update \
                 --label-add {ROLE_LABEL}={role} <node>`) or set SWARM_ROLES",
                described()
            );
        }
        if let Some(blind) = carrying.iter().find(|n| n.host.is_none()) {
            bail!(
                "{shown} may run on swarm node {}, whose engine cannot be reached: it has no \
                 {ENGINE_LABEL} label (`docker node update --label-add \
                 {ENGINE_LABEL}=tcp://<address>:2376 {}` on the manager)",
                blind.hostname,
                blind.hostname
            );
        }
        placement.nodes.insert(
            role.clone(),
            carrying.iter().map(|n| n.hostname.clone()).collect(),
        );
        if what != LOAD {
            placement.roles.insert(what.clone(), role.clone());
        }
    }
    placement.load_role = all.last().expect("the load generator has a role").1.clone();
    placement.load_alone()?;
    placement.pinned = placement.spread(services.run_wide);
    Ok(placement)
}

impl Placement {
    /// Refuses a placement where the load generator could run on a node beside a service.
    fn load_alone(&self) -> Result<()> {
        let load_role = &self.load_role;
        let load_nodes: BTreeSet<&String> = self.nodes[load_role].iter().collect();
        for (service, role) in &self.roles {
            if let Some(shared) = self.nodes[role].iter().find(|n| load_nodes.contains(n)) {
                bail!(
                    "the load generator (role {load_role}) could run on swarm node {shared}, \
                     which may also run service \"{service}\" (role {role}): the load generator \
                     needs nodes of its own; give it a role no service of the run has \
                     (SWARM_ROLES=load=<role>, with a node labelled {ROLE_LABEL}=<role>)"
                );
            }
        }
        Ok(())
    }
}

/// The images each node needs, by host name: a service's image in any of `plans` (a matrix's
/// combinations may run other images) on every node of its role, `workload` (the load
/// generators' images) on the load nodes, `everywhere` on every node of the run.
fn wanted(
    plans: &[&Plan],
    placement: &Placement,
    workload: &[String],
    everywhere: &[String],
) -> BTreeMap<String, BTreeSet<String>> {
    let mut wanted: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for node in placement.roles_by_node().into_keys() {
        wanted
            .entry(node)
            .or_default()
            .extend(everywhere.iter().cloned());
    }
    for (service, role) in &placement.roles {
        for plan in plans {
            let image = &plan.project.services[service].image;
            for node in &placement.nodes[role] {
                wanted
                    .entry(node.clone())
                    .or_default()
                    .insert(image.clone());
            }
        }
    }
    for node in placement.load_nodes() {
        wanted
            .entry(node.clone())
            .or_default()
            .extend(workload.iter().cloned());
    }
    wanted
}

/// Refuses a `registry` that the manager's engine (which pushes) or an engine of a node the
/// run places anything on (which pulls) cannot use, naming the setting and the node: before
/// anything is built.
pub(super) async fn check_registry(
    engine: &Engine,
    placement: &Placement,
    registry: &str,
) -> Result<()> {
    engine
        .reaches_registry(registry)
        .await
        .with_context(|| format!("REGISTRY={registry}: the swarm's manager cannot push to it"))?;
    let nodes: BTreeSet<&String> = placement.nodes.values().flatten().collect();
    for node in nodes {
        engine
            .on_node(node)?
            .reaches_registry(registry)
            .await
            .with_context(|| {
                format!("REGISTRY={registry}: swarm node {node} cannot pull from it")
            })?;
    }
    Ok(())
}

/// Puts each image on the nodes that may run it ([`wanted`]), from the manager's engine (where
/// the run built or pulled it): streamed from its engine to theirs, or, with `registry`, pushed
/// there once and pulled by each node. Each image once per node; a node that has the same
/// image id is skipped.
pub(super) async fn deliver_images(
    engine: &Engine,
    plans: &[&Plan],
    placement: &Placement,
    (workload, everywhere): (&[String], &[String]),
    registry: Option<&str>,
) -> Result<()> {
    let wanted = wanted(plans, placement, workload, everywhere);
    let Some(registry) = registry else {
        for (node, images) in &wanted {
            let target = engine.on_node(node)?;
            for image in images {
                crate::progress::phase(&format!("copying image {image} to swarm node {node}"));
                if engine.copy_image_to(&target, image).await? {
                    crate::progress::notice(&format!("copied image {image} to swarm node {node}"));
                }
            }
        }
        return Ok(());
    };
    // Each image's id on the manager, read once.
    let mut ids: BTreeMap<&String, String> = BTreeMap::new();
    for image in wanted.values().flatten() {
        if ids.contains_key(image) {
            continue;
        }
        let Some(id) = engine.image_id(image).await? else {
            bail!(
                "image {image} is not on the swarm's manager ({})",
                engine.host()
            );
        };
        ids.insert(image, id);
    }
    // What each node lacks, so an image every node has is not pushed at all.
    let mut missing: Vec<(Engine, &String, &String, &String)> = Vec::new();
    for (node, images) in &wanted {
        let target = engine.on_node(node)?;
        for image in images {
            let id = &ids[image];
            if target.image_id(image).await?.as_ref() != Some(id) {
                missing.push((target.clone(), node, image, id));
            }
        }
    }
    let mut pushed: BTreeMap<&String, String> = BTreeMap::new();
    for (target, node, image, id) in &missing {
        if !pushed.contains_key(image) {
            crate::progress::phase(&format!("pushing image {image} to {registry}"));
            let remote = engine
                .push_to_registry(registry, image)
                .await
                .with_context(|| format!("REGISTRY={registry}"))?;
            crate::progress::notice(&format!("pushed image {image} as {remote}"));
            pushed.insert(image, remote);
        }
        let remote = &pushed[image];
        crate::progress::phase(&format!("pulling image {remote} on swarm node {node}"));
        target
            .pull_from_registry(remote, image, id)
            .await
            .with_context(|| format!("REGISTRY={registry}: swarm node {node}"))?;
        crate::progress::notice(&format!("pulled image {remote} on swarm node {node}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn node(name: &str, role: Option<&str>, engine: bool) -> NodeEngine {
        NodeEngine {
            id: format!("id-{name}"),
            hostname: name.to_string(),
            ready: true,
            labels: role
                .map(|r| HashMap::from([(ROLE_LABEL.to_string(), r.to_string())]))
                .unwrap_or_default(),
            host: engine.then(|| format!("unix:///{name}.sock")),
        }
    }

    fn three() -> Vec<NodeEngine> {
        vec![
            node("n1", Some("broker"), true),
            node("n2", Some("proxy"), true),
            node("n3", Some("load"), true),
        ]
    }

    fn place(roles: &str, nodes: &[NodeEngine]) -> Result<Placement> {
        let all = [
            "broker1".to_string(),
            "kms".to_string(),
            "proxy".to_string(),
        ];
        let run_wide = ["broker1".to_string()];
        let services = Services {
            all: &all,
            run_wide: &run_wide,
        };
        super::place(&services, &settings(roles), nodes)
    }

    fn settings(roles: &str) -> Settings {
        let mut s = Settings::without_commit();
        s.swarm_roles = crate::settings::parse_roles("SWARM_ROLES", roles).unwrap();
        s
    }

    #[test]
    fn by_default_the_broker_the_path_and_the_load_each_have_a_node() {
        let p = place("", &three()).unwrap();
        assert_eq!(p.roles["broker1"], "broker");
        assert_eq!(p.roles["kms"], "proxy");
        assert_eq!(p.roles["proxy"], "proxy");
        assert_eq!(p.load_node(0), "n3");
        assert_eq!(p.nodes["proxy"], ["n2"]);
        assert_eq!(p.constraints()["kms"], "node.labels.perf-tests.role==proxy");
    }

    #[test]
    fn a_cluster_s_brokers_take_the_broker_nodes_in_turn() {
        let all = ["broker1", "broker2", "broker3", "proxy"].map(String::from);
        let run_wide = ["broker1", "broker2", "broker3"].map(String::from);
        let services = Services {
            all: &all,
            run_wide: &run_wide,
        };
        let mut nodes = three();
        nodes.push(node("n4", Some("broker"), true));
        let p = super::place(&services, &settings(""), &nodes).unwrap();
        let c = p.constraints();
        assert_eq!(c["broker1"], "node.hostname==n1");
        assert_eq!(c["broker2"], "node.hostname==n4");
        assert_eq!(c["broker3"], "node.hostname==n1");
        assert_eq!(c["proxy"], "node.labels.perf-tests.role==proxy");
        // One broker node: the role alone, as for a single broker.
        let p = super::place(&services, &settings(""), &three()).unwrap();
        assert_eq!(
            p.constraints()["broker2"],
            "node.labels.perf-tests.role==broker"
        );
    }

    #[test]
    fn roles_move_services_by_the_setting() {
        let p = place("kms=broker", &three()).unwrap();
        assert_eq!(p.roles["kms"], "broker");
    }

    #[test]
    fn what_cannot_be_placed_is_refused_before_anything_starts() {
        let refused =
            |roles: &str, nodes: &[NodeEngine]| place(roles, nodes).unwrap_err().to_string();
        let e = refused("load=proxy", &three());
        assert!(
            e.starts_with("the load generator (role proxy) could run on swarm node n2"),
            "{e}"
        );
        let e = refused("kms=load", &three());
        assert!(e.contains("service \"kms\" (role load)"), "{e}");
        let e = refused("kms=gpu", &three());
        assert!(
            e.starts_with("service \"kms\" is placed on role gpu (SWARM_ROLES), but no ready node"),
            "{e}"
        );
        assert!(e.contains("n1 (broker), n2 (proxy), n3 (load)"), "{e}");
        let e = refused("vault=proxy", &three());
        assert!(
            e.starts_with("SWARM_ROLES names vault, which is no service"),
            "{e}"
        );
        let mut blind = three();
        blind[2].host = None;
        let e = refused("", &blind);
        assert!(
            e.contains("swarm node n3, whose engine cannot be reached"),
            "{e}"
        );
        let mut down = three();
        down[2].ready = false;
        let e = refused("", &down);
        assert!(e.contains("n3 (load, not ready)"), "{e}");
    }
}
