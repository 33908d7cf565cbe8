//! The Compose file as written: typed serde structs that refuse unknown keys.

use serde::Deserialize;
use std::collections::BTreeMap;

/// Top-level keys this runner understands (`x-*` extensions are also accepted and ignored).
pub(crate) const TOP_LEVEL_KEYS: &[&str] = &["version", "name", "services", "networks", "configs"];

/// Service keys this runner understands (`x-*` extensions are also accepted and ignored).
pub(crate) const SERVICE_KEYS: &[&str] = &[
    "image",
    "command",
    "entrypoint",
    "environment",
    "hostname",
    "container_name",
    "ports",
    "volumes",
    "configs",
    "healthcheck",
    "depends_on",
    "networks",
    "labels",
    "security_opt",
    "user",
    "working_dir",
    "restart",
    "tmpfs",
    "cpuset",
];

/// A string or a list of strings (`command`, `entrypoint`, `tmpfs`, healthcheck `test`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub(crate) enum StringOrList {
    /// Single string form.
    String(String),
    /// List form.
    List(Vec<String>),
}

/// A scalar YAML value as Compose allows in maps (`FOO: 1`, `FOO: true`, `FOO:`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub(crate) enum Scalar {
    /// A string.
    String(String),
    /// A number.
    Number(yaml_serde::Number),
    /// A boolean.
    Bool(bool),
}

impl Scalar {
    /// The value as Compose passes it on: its textual form.
    pub(crate) fn to_text(&self) -> String {
        match self {
            Scalar::String(s) => s.clone(),
            Scalar::Number(n) => n.to_string(),
            Scalar::Bool(b) => b.to_string(),
        }
    }
}

/// `environment` / `labels`: map form or `KEY=VALUE` list form.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub(crate) enum MapOrList {
    /// `KEY: value` (a null value means "take it from the environment").
    Map(BTreeMap<String, Option<Scalar>>),
    /// `- KEY=value` or `- KEY`.
    List(Vec<String>),
}

/// A port in short (`"8080:80"`) or number form.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub(crate) enum PortSpec {
    /// `"H:C"`, `"C"`, `"IP:H:C"`, optionally with `/tcp` or `/udp`.
    Short(String),
    /// A bare container port number.
    Number(u16),
}

/// A volume in short (`"src:dst[:ro]"`) or long form.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub(crate) enum VolumeSpec {
    /// `"src:dst[:ro|rw]"`.
    Short(String),
    /// `{type: bind, source, target, read_only}`.
    Long(LongVolume),
}

/// The long volume form; only `type: bind` is supported.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct LongVolume {
    /// Must be `bind`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Host path (relative to the Compose file's directory).
    pub source: String,
    /// Path inside the container.
    pub target: String,
    /// Mount read-only.
    #[serde(default)]
    pub read_only: bool,
}

/// A service's reference to a top-level config.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub(crate) enum ServiceConfigRef {
    /// Just the config name; mounted at `/<name>`.
    Short(String),
    /// `{source, target}`.
    Long(LongConfigRef),
}

/// Long form of a service config reference.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct LongConfigRef {
    /// Name of the top-level config.
    pub source: String,
    /// Path inside the container (default `/<source>`).
    pub target: Option<String>,
}

/// A top-level config: a file mounted read-only into services.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConfigDef {
    /// Host path (relative to the Compose file's directory).
    pub file: String,
}

/// `healthcheck:` as written.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHealthcheck {
    /// `["CMD", ...]`, `["CMD-SHELL", "..."]`, `["NONE"]` or a shell string.
    pub test: Option<StringOrList>,
    /// Time between checks, e.g. `1s`, `500ms`, `1m30s`.
    pub interval: Option<String>,
    /// Time a check may take.
    pub timeout: Option<String>,
    /// Consecutive failures before unhealthy.
    pub retries: Option<u32>,
    /// Grace period after start during which failures do not count.
    pub start_period: Option<String>,
    /// Turn off any healthcheck the image defines.
    #[serde(default)]
    pub disable: bool,
}

/// `depends_on:` as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub(crate) enum RawDependsOn {
    /// `[a, b]`: condition service_started.
    List(Vec<String>),
    /// `{a: {condition: service_healthy}}`.
    Map(BTreeMap<String, RawDependency>),
}

/// One entry of the map form of `depends_on`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDependency {
    /// `service_started` (default), `service_healthy` or `service_completed_successfully`.
    pub condition: Option<String>,
}

/// A service's `networks:` as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub(crate) enum RawServiceNetworks {
    /// `[net1, net2]`.
    List(Vec<String>),
    /// `{net1: {aliases: [...]}}` (the value may be empty).
    Map(BTreeMap<String, Option<RawServiceNetwork>>),
}

/// Per-network settings of a service.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServiceNetwork {
    /// Extra DNS names of the service on that network.
    #[serde(default)]
    pub aliases: Vec<String>,
}

/// A top-level network definition.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNetwork {
    /// Only `bridge` is supported.
    pub driver: Option<String>,
    /// Labels added to the network.
    pub labels: Option<MapOrList>,
}

/// A service as written; every key optional so that later files can override earlier ones.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawService {
    pub image: Option<String>,
    pub command: Option<StringOrList>,
    pub entrypoint: Option<StringOrList>,
    pub environment: Option<MapOrList>,
    pub hostname: Option<String>,
    pub container_name: Option<String>,
    pub ports: Option<Vec<PortSpec>>,
    pub volumes: Option<Vec<VolumeSpec>>,
    pub configs: Option<Vec<ServiceConfigRef>>,
    pub healthcheck: Option<RawHealthcheck>,
    pub depends_on: Option<RawDependsOn>,
    pub networks: Option<RawServiceNetworks>,
    pub labels: Option<MapOrList>,
    pub security_opt: Option<Vec<String>>,
    pub user: Option<Scalar>,
    pub working_dir: Option<String>,
    pub restart: Option<String>,
    pub tmpfs: Option<StringOrList>,
    pub cpuset: Option<Scalar>,
}

impl RawService {
    /// Compose merge: each key set in `later` replaces the same key here.
    pub(crate) fn merge(&mut self, later: RawService) {
        macro_rules! take {
            ($($f:ident),*) => { $( if later.$f.is_some() { self.$f = later.$f; } )* };
        }
        take!(
            image,
            command,
            entrypoint,
            environment,
            hostname,
            container_name,
            ports,
            volumes,
            configs,
            healthcheck,
            depends_on,
            networks,
            labels,
            security_opt,
            user,
            working_dir,
            restart,
            tmpfs,
            cpuset
        );
    }
}
