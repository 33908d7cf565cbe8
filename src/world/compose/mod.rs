//! Compose files: loading, interpolation and the typed project the engine realises.
//!
//! Supported (anything else is an error naming the file, service and key):
//! - top level: `name`, `version` (ignored), `services`, `networks` (driver `bridge`, `labels`),
//!   `configs` (`file:`), and `x-*` extension keys (ignored);
//! - service: `image`, `command`, `entrypoint` (string or list), `environment` (map or list),
//!   `hostname`, `container_name`, `ports` (`"C"`, `"H:C"`, `"IP:H:C"`, `/tcp`, `/udp`),
//!   `volumes` (bind mounts only: short `src:dst[:ro]` or long `type: bind`), `configs` (short
//!   or `{source, target}`; read-only bind mounts, default target `/<name>`), `healthcheck`
//!   (`test`, `interval`, `timeout`, `retries`, `start_period`, `disable`), `depends_on` (list or
//!   map with `condition`), `networks` (list or map with `aliases`), `labels`, `security_opt`,
//!   `user`, `working_dir`, `tmpfs`, `restart` (accepted and ignored: the runner owns the
//!   container lifecycle, so a restarting container would hide failures), `x-*` (ignored).
//!
//! Interpolation (`${VAR}`, `$VAR`, `${VAR:-d}`, `${VAR-d}`, `${VAR:?msg}`, `${VAR?msg}`, `$$`)
//! is applied to string values before typing. Values come from the runner's settings, then the
//! process environment, then a `.env` file beside the first Compose file. Several files merge
//! as Compose does: services by name, a key set in a later file replaces the earlier one.

mod file;
pub mod interpolate;
mod normalize;

pub(crate) use normalize::parse_duration;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use file::{ConfigDef, RawNetwork, RawService, SERVICE_KEYS, TOP_LEVEL_KEYS};
use interpolate::Variables;

/// A loaded, interpolated and validated set of Compose files.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Project {
    /// `name:` from the files, else the first file's directory name (sanitised).
    pub name_hint: String,
    /// The files this project was loaded from, in order.
    pub files: Vec<PathBuf>,
    /// Services by name.
    pub services: BTreeMap<String, Service>,
    /// Declared networks by name (`default` is implied when a service names none).
    pub networks: BTreeMap<String, Network>,
}

/// One service, ready to become a container.
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct Service {
    /// Service name (its DNS name on its networks).
    pub name: String,
    /// Image reference.
    pub image: String,
    /// Overrides the image's CMD.
    pub command: Option<Vec<String>>,
    /// Overrides the image's ENTRYPOINT.
    pub entrypoint: Option<Vec<String>>,
    /// `KEY=VALUE` pairs, sorted by key.
    pub environment: Vec<String>,
    /// Container hostname (defaults to the service name).
    pub hostname: Option<String>,
    /// Explicit container name.
    pub container_name: Option<String>,
    /// Published ports.
    pub ports: Vec<PortMapping>,
    /// Bind mounts (volumes and configs).
    pub mounts: Vec<BindMount>,
    /// Health check, if any (a disabled one is `test: ["NONE"]`).
    pub healthcheck: Option<Healthcheck>,
    /// Services this one waits for, with the condition.
    pub depends_on: BTreeMap<String, Condition>,
    /// Networks joined, with extra aliases (the `default` network when none were named).
    pub networks: BTreeMap<String, Vec<String>>,
    /// Container labels.
    pub labels: BTreeMap<String, String>,
    /// `--security-opt` values.
    pub security_opt: Vec<String>,
    /// User to run as.
    pub user: Option<String>,
    /// Working directory.
    pub working_dir: Option<String>,
    /// tmpfs mounts (`/path[:options]`).
    pub tmpfs: Vec<String>,
    /// CPUs the container may run on (`0`, `0-1`, `0,2`); all when unset.
    pub cpuset: Option<String>,
}

/// A published port.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PortMapping {
    /// Host address to bind, if restricted.
    pub host_ip: Option<String>,
    /// Host port (None: an ephemeral port).
    pub host_port: Option<u16>,
    /// Container port.
    pub container_port: u16,
    /// `tcp` or `udp`.
    pub protocol: String,
}

/// A host path mounted into the container.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct BindMount {
    /// Absolute host path.
    pub source: PathBuf,
    /// Path inside the container.
    pub target: String,
    /// Mounted read-only.
    pub read_only: bool,
}

/// A container health check.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Healthcheck {
    /// `["CMD", ...]`, `["CMD-SHELL", cmd]` or `["NONE"]`.
    pub test: Vec<String>,
    /// Time between checks.
    #[serde(serialize_with = "human_duration")]
    pub interval: Option<Duration>,
    /// Time a check may take.
    #[serde(serialize_with = "human_duration")]
    pub timeout: Option<Duration>,
    /// Consecutive failures before unhealthy.
    pub retries: Option<u32>,
    /// Grace period after start.
    #[serde(serialize_with = "human_duration")]
    pub start_period: Option<Duration>,
}

/// Durations print as written in Compose files (`300ms`, `1.5s`) in `compose config`.
fn human_duration<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_str(&format!("{d:?}")),
        None => s.serialize_none(),
    }
}

/// A `depends_on` condition.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Condition {
    /// The dependency's container is running.
    ServiceStarted,
    /// The dependency's health check reports healthy.
    ServiceHealthy,
    /// The dependency ran to completion with exit code 0.
    ServiceCompletedSuccessfully,
}

/// A declared network.
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct Network {
    /// Labels added to the network.
    pub labels: BTreeMap<String, String>,
}

/// Loads Compose `files` (merged in order), interpolating with `vars` over the environment.
pub fn load(files: &[PathBuf], vars: &BTreeMap<String, String>) -> Result<Project> {
    let Some(first) = files.first() else {
        bail!("no Compose file given");
    };
    let project_dir = parent_dir(first);
    let variables = Variables::new(vars, &project_dir)?;
    load_with(files, &variables)
}

/// Like [`load`], with the variable sources given explicitly.
pub(crate) fn load_with(files: &[PathBuf], variables: &Variables) -> Result<Project> {
    let mut name: Option<String> = None;
    let mut raw_services: BTreeMap<String, RawService> = BTreeMap::new();
    let mut raw_networks: BTreeMap<String, RawNetwork> = BTreeMap::new();
    let mut configs: BTreeMap<String, PathBuf> = BTreeMap::new();

    for path in files {
        let parsed = parse_file(path, variables)?;
        if parsed.name.is_some() {
            name = parsed.name;
        }
        for (svc, raw) in parsed.services {
            raw_services.entry(svc).or_default().merge(raw);
        }
        raw_networks.extend(parsed.networks);
        configs.extend(parsed.configs);
    }

    let display = files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let mut networks: BTreeMap<String, Network> = BTreeMap::new();
    for (net, raw) in raw_networks {
        networks.insert(net.clone(), normalize::network(&display, &net, raw)?);
    }
    let mut services = BTreeMap::new();
    for (svc, raw) in raw_services {
        let service = normalize::service(&display, &svc, raw, &configs, variables)?;
        for net in service.networks.keys() {
            if net != "default" && !networks.contains_key(net) {
                bail!("{display}: service \"{svc}\": network \"{net}\" is not declared under top-level networks");
            }
        }
        services.insert(svc, service);
    }
    for (svc, service) in &services {
        for dep in service.depends_on.keys() {
            if !services.contains_key(dep) {
                bail!(
                    "{display}: service \"{svc}\": depends_on unknown service \"{dep}\" (known: {})",
                    services.keys().cloned().collect::<Vec<_>>().join(", ")
                );
            }
        }
    }
    let name_hint = sanitize_name(&name.unwrap_or_else(|| {
        parent_dir(&files[0])
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "perf-tests".to_string())
    }));
    Ok(Project {
        name_hint,
        files: files.to_vec(),
        services,
        networks,
    })
}

impl Project {
    /// The one of `among` that `host` reaches on its networks: the service of that name, or
    /// the one whose host name or network alias it is.
    pub(crate) fn service_at<'a>(
        &self,
        host: &str,
        mut among: impl Iterator<Item = &'a String>,
    ) -> Option<&'a String> {
        among.find(|name| {
            *name == host
                || self.services.get(*name).is_some_and(|s| {
                    s.hostname.as_deref() == Some(host)
                        || s.networks.values().flatten().any(|a| a == host)
                })
        })
    }

    /// `services` plus everything they depend on, dependencies first.
    pub fn service_closure(&self, services: &[String]) -> Result<Vec<String>> {
        let mut order = Vec::new();
        let mut done = BTreeSet::new();
        let mut stack = Vec::new();
        for s in services {
            self.visit(s, &mut done, &mut stack, &mut order)?;
        }
        Ok(order)
    }

    fn visit(
        &self,
        name: &str,
        done: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
        order: &mut Vec<String>,
    ) -> Result<()> {
        if done.contains(name) {
            return Ok(());
        }
        if let Some(pos) = stack.iter().position(|s| s == name) {
            let mut cycle = stack[pos..].to_vec();
            cycle.push(name.to_string());
            bail!("dependency cycle: {}", cycle.join(" -> "));
        }
        let Some(service) = self.services.get(name) else {
            bail!(
                "unknown service \"{name}\" (known: {})",
                self.services.keys().cloned().collect::<Vec<_>>().join(", ")
            );
        };
        stack.push(name.to_string());
        for dep in service.depends_on.keys() {
            self.visit(dep, done, stack, order)?;
        }
        stack.pop();
        done.insert(name.to_string());
        order.push(name.to_string());
        Ok(())
    }

    /// Every image the services use, deduplicated.
    pub fn images(&self) -> BTreeSet<String> {
        self.services.values().map(|s| s.image.clone()).collect()
    }

    /// Networks used by `services` (declared ones plus the implied `default`).
    pub(crate) fn networks_of(&self, services: &[String]) -> BTreeSet<String> {
        services
            .iter()
            .filter_map(|s| self.services.get(s))
            .flat_map(|s| s.networks.keys().cloned())
            .collect()
    }
}

/// One file, parsed, interpolated and typed; paths already absolute.
struct ParsedFile {
    name: Option<String>,
    services: BTreeMap<String, RawService>,
    networks: BTreeMap<String, RawNetwork>,
    configs: BTreeMap<String, PathBuf>,
}

fn parse_file(path: &Path, variables: &Variables) -> Result<ParsedFile> {
    let f = path.display();
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read Compose file {f}"))?;
    let mut doc: yaml_serde::Value =
        yaml_serde::from_str(&text).with_context(|| format!("{f}: invalid YAML"))?;
    // YAML merge keys (`<<: *anchor`), common with `x-` extension blocks.
    doc.apply_merge()
        .with_context(|| format!("{f}: invalid YAML merge key"))?;
    let mut unset = Vec::new();
    interpolate::interpolate_value(&mut doc, variables, &mut Vec::new(), &mut unset)
        .with_context(|| format!("{f}: interpolation failed"))?;
    for var in &unset {
        crate::progress::notice(&format!(
            "warning: {f}: variable {var} is not set; using an empty string"
        ));
    }
    let yaml_serde::Value::Mapping(top) = doc else {
        bail!("{f}: expected a mapping at the top level");
    };
    let dir = parent_dir(path);
    let mut parsed = ParsedFile {
        name: None,
        services: BTreeMap::new(),
        networks: BTreeMap::new(),
        configs: BTreeMap::new(),
    };
    for (key, value) in top {
        let key = key_str(&key, &f.to_string())?;
        if key.starts_with("x-") || key == "version" {
            continue;
        }
        match key.as_str() {
            "name" => {
                parsed.name = Some(
                    yaml_serde::from_value(value)
                        .with_context(|| format!("{f}: \"name\" must be a string"))?,
                )
            }
            "services" => {
                let yaml_serde::Value::Mapping(services) = value else {
                    bail!("{f}: \"services\" must be a mapping");
                };
                for (svc, body) in services {
                    let svc = key_str(&svc, &f.to_string())?;
                    let raw = parse_service(&f.to_string(), &svc, body, &dir)?;
                    parsed.services.insert(svc, raw);
                }
            }
            "networks" => {
                let map: BTreeMap<String, Option<RawNetwork>> = yaml_serde::from_value(value)
                    .with_context(|| format!("{f}: top-level \"networks\""))?;
                for (n, raw) in map {
                    parsed.networks.insert(n, raw.unwrap_or_default());
                }
            }
            "configs" => {
                let map: BTreeMap<String, ConfigDef> =
                    yaml_serde::from_value(value).with_context(|| {
                        format!(
                            "{f}: top-level \"configs\" (only `name: {{file: path}}` is supported)"
                        )
                    })?;
                for (n, def) in map {
                    parsed.configs.insert(n, resolve(&dir, &def.file));
                }
            }
            other => bail!(
                "{f}: unsupported top-level key \"{other}\" (supported: {}, x-*)",
                TOP_LEVEL_KEYS.join(", ")
            ),
        }
    }
    Ok(parsed)
}

/// Types a service one key at a time so that an error names the exact key.
fn parse_service(f: &str, svc: &str, body: yaml_serde::Value, dir: &Path) -> Result<RawService> {
    let map = match body {
        yaml_serde::Value::Mapping(m) => m,
        yaml_serde::Value::Null => yaml_serde::Mapping::new(),
        _ => bail!("{f}: service \"{svc}\": expected a mapping"),
    };
    let mut raw = RawService::default();
    for (key, value) in map {
        let key = key_str(&key, f)?;
        if key.starts_with("x-") {
            continue;
        }
        if !SERVICE_KEYS.contains(&key.as_str()) {
            bail!("{f}: service \"{svc}\": unsupported key \"{key}\"");
        }
        let mut single = yaml_serde::Mapping::new();
        single.insert(yaml_serde::Value::String(key.clone()), value);
        let one: RawService = yaml_serde::from_value(yaml_serde::Value::Mapping(single))
            .map_err(|e| anyhow::anyhow!("{f}: service \"{svc}\": key \"{key}\": {e}"))?;
        raw.merge(one);
    }
    normalize::absolutize_volumes(f, svc, &mut raw, dir)?;
    Ok(raw)
}

fn key_str(key: &yaml_serde::Value, f: &str) -> Result<String> {
    match key {
        yaml_serde::Value::String(s) => Ok(s.clone()),
        other => bail!("{f}: keys must be strings, found {other:?}"),
    }
}

fn parent_dir(path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    abs.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// `p` made absolute against `dir`, with `.` and `..` components folded.
fn resolve(dir: &Path, p: &str) -> PathBuf {
    fold(&dir.join(p))
}

/// Makes `path` absolute against the current directory and removes `.` and `..` lexically, as
/// paths in Compose files, scenario files and settings are read.
pub(crate) fn absolute(path: &Path) -> Result<PathBuf> {
    let abs = std::path::absolute(path)
        .with_context(|| format!("cannot make {} absolute", path.display()))?;
    Ok(fold(&abs))
}

/// `path` without `.` components, each `..` taking the component before it away.
fn fold(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Lower-case letters, digits, `-` and `_`, as Docker names and Compose project names allow.
pub(crate) fn sanitize_name(name: &str) -> String {
    let s: String = name
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches(|c| c == '-' || c == '_').to_string();
    if s.is_empty() {
        "perf-tests".to_string()
    } else {
        s
    }
}
