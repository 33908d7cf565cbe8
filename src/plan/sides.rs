//! The two sides of `perf-tests ab`, derived from the scenarios as written: side A is each
//! scenario's own services (with A's overrides), side B the same services started a second time
//! under their own names (`<service>-b`) with B's overrides. No scenario is written twice.
//!
//! Side B's services join twins of side A's networks (`default-b` beside `default`) and answer
//! there to the same host names and aliases as side A's do on theirs; the run-wide services (the
//! broker) join both. So a proxy's configuration that names `kroxylicious:9092` and `kms:8080`
//! means side A's proxy and KMS to side A's clients and side B's to side B's, whose clients run
//! on the twin network; no configuration, command or address is rewritten.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::model::pair::Pair;
use crate::settings::sides::{Overrides, Sides};
use crate::world::compose::{Project, Service};

/// The name of side B's copy of `service`.
pub(crate) fn b_name(service: &str) -> String {
    format!("{service}-b")
}

/// The twin of Compose network `net` that side B's services join.
pub(crate) fn twin(net: &str) -> String {
    format!("{net}-b")
}

/// Each measured phase's topics, side A's and side B's: the first phase on `topic`, a later one
/// on `<topic>-<phase>`; side B's is side A's with `-b`.
pub(crate) fn phase_topics(topic: &str, phases: usize) -> Vec<(String, String)> {
    (1..=phases.max(1))
        .map(|i| {
            let a = if i == 1 {
                topic.to_string()
            } else {
                format!("{topic}-{i}")
            };
            let b = format!("{a}-b");
            (a, b)
        })
        .collect()
}

/// A file the run writes before its first container starts (a side's merged configuration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    pub path: PathBuf,
    pub contents: String,
}

/// The run's Compose files interpolated with more variables than the run's.
pub(super) type Load<'a> = dyn Fn(&[(String, String)]) -> Result<Project> + 'a;

/// What the derivation adds to a plan.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Derived {
    /// Per scenario (in the order given): its sides' services and side B's network, and
    /// whether side B came out as side A (an A/A comparison).
    pub(super) pairs: Vec<(Pair, bool)>,
    /// Side B's services, every scenario's, in start order.
    pub(super) services_b: Vec<String>,
    pub(super) files: Vec<GeneratedFile>,
}

/// One selected scenario as the derivation sees it.
pub(super) struct Scenario<'a> {
    pub(super) name: &'a str,
    pub(super) file: &'a Path,
    pub(super) bootstrap: &'a str,
    /// Its services with their dependencies.
    pub(super) closure: &'a [String],
}

/// Derives both sides of every scenario in `project` (the Compose files interpolated with the
/// run's variables), where `load` interpolates the same files with more variables. `run_dir`
/// is where the sides' merged configurations are written.
pub(super) fn derive(
    sides: &Sides,
    project: &mut Project,
    load: &Load,
    run_wide: &[String],
    scenarios: &[Scenario],
    run_dir: &Path,
) -> Result<Derived> {
    let own = own_services(scenarios, run_wide)?;
    let all_own: BTreeSet<&String> = own.iter().flatten().collect();
    for (label, side) in [("A", &sides.a), ("B", &sides.b)] {
        check_variables(label, side, project, load, run_wide, &all_own)?;
        check_environment(label, side)?;
    }
    let project_a = with_variables(project, load, &sides.a.variables)?;
    let project_b = with_variables(project, load, &sides.b.variables)?;
    let mut files = Vec::new();
    let mut side_a: BTreeMap<String, Service> = BTreeMap::new();
    let mut side_b: BTreeMap<String, Service> = BTreeMap::new();
    for name in &all_own {
        let dir = |side: &str| run_dir.join("sides").join(side).join(name.as_str());
        let a = project_a.services[*name].clone();
        let a = apply("A", &sides.a, a, &dir("a"), &mut files)?;
        let b = project_b.services[*name].clone();
        let b = apply("B", &sides.b, b, &dir("b"), &mut files)?;
        side_a.insert(name.to_string(), a);
        side_b.insert(name.to_string(), b);
    }
    overlays_taken(sides, project, scenarios, &own)?;
    twin_networks(project, &all_own, run_wide)?;
    let mut services_b = Vec::new();
    for name in &all_own {
        let b_name = b_name(name);
        if project.services.contains_key(&b_name) {
            bail!(
                "service \"{b_name}\" is in the Compose files, but side B's copy of service \
                 \"{name}\" takes that name"
            );
        }
        let copy = rename(side_b[*name].clone(), name, &all_own);
        project.services.insert(b_name.clone(), copy);
        project
            .services
            .insert(name.to_string(), side_a[*name].clone());
        services_b.push(b_name);
    }
    let pairs = scenarios
        .iter()
        .zip(&own)
        .map(|(s, own)| {
            let alike = own.iter().all(|n| side_a[n] == side_b[n]);
            let pair = Pair {
                bootstrap: s.bootstrap.to_string(),
                network: twin("default"),
                a: own.clone(),
                b: own.iter().map(|n| b_name(n)).collect(),
            };
            (pair, alike)
        })
        .collect();
    // In the order the services start: side B's after side A's, dependencies first.
    let services_b = project.service_closure(&services_b)?;
    let services_b = services_b
        .into_iter()
        .filter(|s| !run_wide.contains(s) && !all_own.contains(s))
        .collect();
    Ok(Derived {
        pairs,
        services_b,
        files,
    })
}

/// Each scenario's own services: its closure without the run-wide ones both sides share; a
/// scenario with none has no path to pair.
fn own_services(scenarios: &[Scenario], run_wide: &[String]) -> Result<Vec<Vec<String>>> {
    scenarios
        .iter()
        .map(|s| {
            let own: Vec<String> = s
                .closure
                .iter()
                .filter(|x| !run_wide.contains(x))
                .cloned()
                .collect();
            if own.is_empty() {
                bail!(
                    "scenario {} ({}) runs no service of its own, only the run-wide ones both \
                     sides share: it has no path to pair; select the scenarios of a path with \
                     TEST",
                    s.name,
                    s.file.display()
                );
            }
            Ok(own)
        })
        .collect::<Result<_>>()
}

/// Refuses a side's configuration overlay that some scenario would not take: none of its own
/// services mounts a YAML file to merge it into, so it would change nothing there.
fn overlays_taken(
    sides: &Sides,
    project: &Project,
    scenarios: &[Scenario],
    own: &[Vec<String>],
) -> Result<()> {
    for (label, side) in [("A", &sides.a), ("B", &sides.b)] {
        let Some(config) = &side.config else { continue };
        for (s, own) in scenarios.iter().zip(own) {
            if !own
                .iter()
                .any(|name| yaml_mounts(&project.services[name]).next().is_some())
            {
                bail!(
                    "side {label}'s config {}: scenario {} mounts no YAML file in its services \
                     ({}), so it has nothing to merge it into",
                    config.display(),
                    s.name,
                    own.join(", ")
                );
            }
        }
    }
    Ok(())
}

/// Side B's twin of every network the pair's own services join (and of the default one), and
/// the run-wide services on both sides' networks, answering to the same names.
fn twin_networks(
    project: &mut Project,
    all_own: &BTreeSet<&String>,
    run_wide: &[String],
) -> Result<()> {
    let mut nets: BTreeSet<String> = BTreeSet::from(["default".to_string()]);
    for name in all_own {
        nets.extend(project.services[*name].networks.keys().cloned());
    }
    for net in &nets {
        let twin = twin(net);
        if project.networks.contains_key(&twin) {
            bail!(
                "network \"{twin}\" is declared in the Compose files, but side B's twin of \
                 network \"{net}\" takes that name"
            );
        }
        let declared = project.networks.get(net).cloned().unwrap_or_default();
        project.networks.insert(twin, declared);
    }
    for name in run_wide {
        let service = project
            .services
            .get_mut(name)
            .with_context(|| format!("run-wide service \"{name}\" is not in the Compose files"))?;
        let twins: Vec<(String, Vec<String>)> = service
            .networks
            .iter()
            .filter(|(net, _)| nets.contains(*net))
            .map(|(net, aliases)| (twin(net), aliases.clone()))
            .collect();
        service.networks.extend(twins);
    }
    Ok(())
}

/// `project` interpolated with `variables` too (itself without any).
fn with_variables(
    project: &Project,
    load: &Load,
    variables: &[(String, String)],
) -> Result<Project> {
    if variables.is_empty() {
        Ok(project.clone())
    } else {
        load(variables)
    }
}

/// Refuses a side's variable that is not one (a setting's value it would refuse), that no
/// selected scenario's own service uses, or that changes a run-wide service both sides share.
fn check_variables(
    label: &str,
    side: &Overrides,
    project: &Project,
    load: &Load,
    run_wide: &[String],
    own: &BTreeSet<&String>,
) -> Result<()> {
    for (var, value) in &side.variables {
        let named = format!("side {label}'s {var}={value}");
        if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            bail!("{named}: a Compose variable is named by letters, digits and _");
        }
        if let Some(setting) = crate::settings::table::find(var) {
            setting.canonical(value).with_context(|| named.clone())?;
        }
        // Which services the variable reaches: those that change when it takes a value no
        // file holds.
        let probe = load(&[(var.clone(), format!("perf-tests-probe-{var}"))])
            .with_context(|| format!("{named}: interpolating the Compose files"))?;
        let changed = |among: &mut dyn Iterator<Item = &String>| -> Vec<String> {
            among
                .filter(|s| probe.services.get(*s) != project.services.get(*s))
                .cloned()
                .collect()
        };
        let shared = changed(&mut run_wide.iter());
        if !shared.is_empty() {
            bail!(
                "{named}: it sets the run-wide {}, which both sides share; a side changes only \
                 its scenarios' own services ({})",
                shared.join(", "),
                own.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if changed(&mut own.iter().copied()).is_empty() {
            bail!(
                "{named}: no service of the selected scenarios ({}) uses ${{{var}}} in the \
                 Compose files",
                own.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    Ok(())
}

fn check_environment(label: &str, side: &Overrides) -> Result<()> {
    for (var, value) in &side.environment {
        if var.is_empty() || var.contains(['=', ' ']) {
            bail!(
                "side {label}'s environment {var}={value}: an environment variable's name \
                 holds no = or space"
            );
        }
    }
    Ok(())
}

/// `service` with the side's environment and configuration overlay; a merged configuration is
/// planned under `dir` and mounted instead of the file.
fn apply(
    label: &str,
    side: &Overrides,
    mut service: Service,
    dir: &Path,
    files: &mut Vec<GeneratedFile>,
) -> Result<Service> {
    if !side.environment.is_empty() {
        for (var, value) in &side.environment {
            let prefix = format!("{var}=");
            service.environment.retain(|e| !e.starts_with(&prefix));
            service.environment.push(format!("{var}={value}"));
        }
        // Sorted by key, as the Compose loader keeps them.
        service
            .environment
            .sort_by(|x, y| x.split('=').next().cmp(&y.split('=').next()));
    }
    if let Some(overlay) = &side.config {
        let patch = read_yaml(overlay)
            .with_context(|| format!("side {label}'s config {}", overlay.display()))?;
        if !patch.is_mapping() {
            bail!(
                "side {label}'s config {}: expected a YAML map at the top (the keys to merge)",
                overlay.display()
            );
        }
        let targets: Vec<usize> = service
            .mounts
            .iter()
            .enumerate()
            .filter(|(_, m)| is_yaml_file(&m.source))
            .map(|(i, _)| i)
            .collect();
        for (n, i) in targets.into_iter().enumerate() {
            let source = service.mounts[i].source.clone();
            let mut doc = read_yaml(&source)?;
            merge(&mut doc, &patch);
            let file_name = source.file_name().map_or_else(
                || "config.yaml".into(),
                |f| f.to_string_lossy().into_owned(),
            );
            let path = dir.join(format!("{n}-{file_name}"));
            let contents = format!(
                "# {} merged with {} (side {label})\n{}",
                source.display(),
                overlay.display(),
                yaml_serde::to_string(&doc)?
            );
            files.push(GeneratedFile {
                path: path.clone(),
                contents,
            });
            service.mounts[i].source = path;
        }
    }
    Ok(service)
}

/// Side B's copy of `service` (named `name`): its own name and container name, every network
/// its twin with the same aliases and its service name as one more, its dependencies on other
/// own services their copies.
fn rename(mut service: Service, name: &str, own: &BTreeSet<&String>) -> Service {
    service.name = b_name(name);
    service.container_name = service.container_name.map(|c| b_name(&c));
    if service.hostname.is_none() {
        // The copy answers to the service's name, as side A's does by default.
        service.hostname = Some(name.to_string());
    }
    service.networks = service
        .networks
        .into_iter()
        .map(|(net, mut aliases)| {
            if !aliases.iter().any(|a| a == name) {
                aliases.push(name.to_string());
            }
            (twin(&net), aliases)
        })
        .collect();
    service.depends_on = service
        .depends_on
        .into_iter()
        .map(|(dep, condition)| {
            if own.contains(&dep) {
                (b_name(&dep), condition)
            } else {
                (dep, condition)
            }
        })
        .collect();
    service
}

fn yaml_mounts(service: &Service) -> impl Iterator<Item = &crate::world::compose::BindMount> {
    service.mounts.iter().filter(|m| is_yaml_file(&m.source))
}

fn is_yaml_file(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    ) && path.is_file()
}

fn read_yaml(path: &Path) -> Result<yaml_serde::Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    yaml_serde::from_str(&text).with_context(|| format!("{}: invalid YAML", path.display()))
}

/// `patch` merged into `doc`: maps key by key, recursively; any other value replaces.
fn merge(doc: &mut yaml_serde::Value, patch: &yaml_serde::Value) {
    match (doc, patch) {
        (yaml_serde::Value::Mapping(d), yaml_serde::Value::Mapping(p)) => {
            for (k, v) in p {
                match d.get_mut(k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        d.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (d, p) => *d = p.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> yaml_serde::Value {
        yaml_serde::from_str(text).unwrap()
    }

    #[test]
    fn an_overlay_merges_maps_and_replaces_everything_else() {
        let mut doc = yaml("a: {x: 1, y: [1, 2]}\nb: keep\nl: [p, q]\n");
        merge(&mut doc, &yaml("a: {y: [3], z: new}\nl: [r]\nc: 5\n"));
        assert_eq!(
            doc,
            yaml("a: {x: 1, y: [3], z: new}\nb: keep\nl: [r]\nc: 5\n")
        );
    }

    #[test]
    fn each_phase_has_a_topic_per_side() {
        assert_eq!(
            phase_topics("t", 3),
            [
                ("t".to_string(), "t-b".to_string()),
                ("t-2".to_string(), "t-2-b".to_string()),
                ("t-3".to_string(), "t-3-b".to_string())
            ]
        );
        assert_eq!(phase_topics("t", 0).len(), 1);
    }

    /// A project of a broker and a proxy that depends on it and on a KMS, the proxy mounting a
    /// YAML configuration and taking its image from `${PROXY_IMAGE}`.
    fn project(dir: &Path, vars: &[(String, String)]) -> Result<Project> {
        let compose = dir.join("c.yaml");
        std::fs::write(
            &compose,
            "services:\n  broker: { image: k }\n  kms: { image: kms }\n  proxy:\n    image: \
             ${PROXY_IMAGE:-proxy:1}\n    hostname: proxy\n    networks: { default: { aliases: \
             [front] } }\n    volumes: [./proxy.yaml:/etc/proxy.yaml:ro]\n    depends_on: [broker, kms]\n",
        )
        .unwrap();
        std::fs::write(dir.join("proxy.yaml"), "filters: [a]\nport: 9092\n").unwrap();
        let vars: BTreeMap<String, String> = vars.iter().cloned().collect();
        crate::world::compose::load(&[compose], &vars)
    }

    fn derived(dir: &Path, sides: &Sides, closure: &[&str]) -> Result<(Project, Derived)> {
        let mut p = project(dir, &[])?;
        let load = |v: &[(String, String)]| project(dir, v);
        let closure: Vec<String> = closure.iter().map(|s| s.to_string()).collect();
        let scenario = Scenario {
            name: "02-proxy",
            file: Path::new("02-proxy/scenario.yaml"),
            bootstrap: "front:9092",
            closure: &closure,
        };
        let d = derive(
            sides,
            &mut p,
            &load,
            &["broker".to_string()],
            &[scenario],
            &dir.join("run"),
        )?;
        Ok((p, d))
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn side_b_is_the_scenarios_services_again_on_a_twin_network() {
        let dir = tempfile::tempdir().unwrap();
        let sides = Sides {
            a: Overrides::default(),
            b: Overrides {
                variables: pairs(&[("PROXY_IMAGE", "proxy:dev")]),
                environment: pairs(&[("JAVA_OPTIONS", "-XX:MaxInlineLevel=6")]),
                config: None,
            },
        };
        let (p, d) = derived(dir.path(), &sides, &["broker", "kms", "proxy"]).unwrap();
        let (pair, alike) = &d.pairs[0];
        assert!(!alike);
        assert_eq!(pair.a, ["kms", "proxy"]);
        assert_eq!(pair.b, ["kms-b", "proxy-b"]);
        assert_eq!(pair.network, "default-b");
        assert_eq!(d.services_b, ["kms-b", "proxy-b"]);
        let (a, b) = (&p.services["proxy"], &p.services["proxy-b"]);
        assert_eq!(
            (a.image.as_str(), b.image.as_str()),
            ("proxy:1", "proxy:dev")
        );
        assert!(a.environment.is_empty());
        assert_eq!(b.environment, ["JAVA_OPTIONS=-XX:MaxInlineLevel=6"]);
        // Side B answers on its network to side A's names; the broker is on both.
        assert_eq!(b.networks.keys().collect::<Vec<_>>(), ["default-b"]);
        assert_eq!(b.networks["default-b"], ["front", "proxy"]);
        assert_eq!(b.hostname.as_deref(), Some("proxy"));
        assert_eq!(p.services["kms-b"].networks["default-b"], ["kms"]);
        let deps: Vec<&String> = b.depends_on.keys().collect();
        assert_eq!(deps, ["broker", "kms-b"]);
        let broker_nets: Vec<&String> = p.services["broker"].networks.keys().collect();
        assert_eq!(broker_nets, ["default", "default-b"]);
        assert!(p.networks.contains_key("default-b"));
    }

    #[test]
    fn a_config_overlay_is_merged_into_each_sides_yaml_mounts() {
        let dir = tempfile::tempdir().unwrap();
        let overlay = dir.path().join("twice.yaml");
        std::fs::write(&overlay, "filters: [a, a]\n").unwrap();
        let sides = Sides {
            b: Overrides {
                config: Some(overlay.clone()),
                ..Overrides::default()
            },
            ..Sides::default()
        };
        let (p, d) = derived(dir.path(), &sides, &["broker", "kms", "proxy"]).unwrap();
        assert_eq!(d.files.len(), 1);
        let file = &d.files[0];
        assert_eq!(p.services["proxy-b"].mounts[0].source, file.path);
        assert!(file.path.starts_with(dir.path().join("run/sides/b/proxy")));
        let merged: yaml_serde::Value = yaml_serde::from_str(&file.contents).unwrap();
        assert_eq!(merged, yaml("filters: [a, a]\nport: 9092\n"));
        assert_eq!(
            p.services["proxy"].mounts[0].source,
            dir.path().join("proxy.yaml")
        );
    }

    #[test]
    fn sides_alike_are_said_to_be_and_overrides_that_cannot_apply_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (_, d) = derived(dir.path(), &Sides::default(), &["broker", "proxy"]).unwrap();
        assert!(d.pairs[0].1, "no overrides: an A/A comparison");
        let same = Sides {
            b: Overrides {
                variables: pairs(&[("PROXY_IMAGE", "proxy:1")]),
                ..Overrides::default()
            },
            ..Sides::default()
        };
        let (_, d) = derived(dir.path(), &same, &["broker", "proxy"]).unwrap();
        assert!(d.pairs[0].1, "the image side A runs: an A/A comparison");

        let refused = |b: Overrides, closure: &[&str]| {
            let sides = Sides {
                b,
                ..Sides::default()
            };
            format!("{:#}", derived(dir.path(), &sides, closure).unwrap_err())
        };
        let var = |k: &str, v: &str| Overrides {
            variables: pairs(&[(k, v)]),
            ..Overrides::default()
        };
        let err = refused(var("NOT_USED", "x"), &["broker", "proxy"]);
        assert!(
            err.contains("side B's NOT_USED=x: no service of the selected scenarios (proxy)"),
            "{err}"
        );
        let err = refused(var("KROXYLICIOUS_IMAGE", "has space"), &["broker", "proxy"]);
        assert!(
            err.contains("side B's KROXYLICIOUS_IMAGE=has space"),
            "{err}"
        );
        let err = refused(Overrides::default(), &["broker"]);
        assert!(
            err.contains("scenario 02-proxy") && err.contains("no path to pair"),
            "{err}"
        );
        let err = refused(
            Overrides {
                config: Some(dir.path().join("missing.yaml")),
                ..Overrides::default()
            },
            &["broker", "proxy"],
        );
        assert!(err.contains("missing.yaml"), "{err}");
        let err = refused(
            Overrides {
                environment: pairs(&[("A B", "x")]),
                ..Overrides::default()
            },
            &["broker", "proxy"],
        );
        assert!(err.contains("side B's environment A B=x"), "{err}");
    }
}
