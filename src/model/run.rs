//! The record of a run as a whole, kept as `run.json` beside its scenarios' records: its
//! settings, the machines it ran on, when, and what a sizing or a paired run asked.

use std::path::Path;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use crate::settings::Settings;

/// Facts about the machine perf-tests ran on (the engines' machines are [`NodeFacts`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub(crate) struct HostFacts {
    /// Kernel host name.
    pub hostname: String,
    /// Operating system, e.g. `linux`.
    pub os: String,
    /// CPU architecture, e.g. `x86_64`.
    pub arch: String,
    /// CPU model, from /proc/cpuinfo where available.
    pub cpu_model: Option<String>,
    /// CPUs available to this process.
    pub cpus: usize,
    /// Total memory in bytes, from /proc/meminfo where available.
    pub memory_bytes: Option<u64>,
    /// Kernel release, where available.
    pub kernel: Option<String>,
}

/// Facts about the machine of an engine the run's containers ran on: the engine's own (one off
/// a swarm), or each swarm node's that the run placed anything on. Two runs on different
/// hardware are told apart by these.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub(crate) struct NodeFacts {
    /// The engine host's name (a swarm node's host name).
    pub name: String,
    /// The swarm roles the run gave the node (`perf-tests.role`: broker, proxy, load); empty
    /// off a swarm.
    pub roles: Vec<String>,
    /// CPU model, as the node's /proc/cpuinfo names it; `None` where it names none.
    pub cpu_model: Option<String>,
    /// CPUs of the node, as its engine reports them.
    pub cpus: usize,
    /// Total memory in bytes, as its engine reports it.
    pub memory_bytes: u64,
    /// Kernel release.
    pub kernel: String,
    /// Operating system, e.g. `Debian GNU/Linux 13 (trixie)`.
    pub os: String,
    /// CPU architecture, e.g. `x86_64`.
    pub arch: String,
    /// Docker Engine version.
    pub engine_version: String,
}

/// Everything about a run except its per-scenario results. Written as `run.json` and read back
/// through this same type; `settings` and `host` must be there, the rest (and any setting or
/// host fact a run of an older version did not record) reads back as its default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct RunInfo {
    /// Label value of every engine resource the run created.
    #[serde(default)]
    pub run_id: String,
    /// Every setting of the run.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub settings: Settings,
    /// Version of perf-tests.
    #[serde(default)]
    pub tool_version: String,
    /// The machine perf-tests ran on.
    pub host: HostFacts,
    /// The machines of the engines the run's containers ran on.
    #[serde(default)]
    pub nodes: Vec<NodeFacts>,
    /// RFC 3339, UTC.
    #[serde(default)]
    pub started_at: String,
    /// RFC 3339, UTC.
    #[serde(default)]
    pub ended_at: String,
    /// Commit the measurement belongs to.
    #[serde(default)]
    pub commit_id: String,
    /// Suite directory the scenarios came from.
    #[serde(default)]
    pub suite: String,
    /// Why the run ended before every scenario completed (it holds the ones that did); absent
    /// for a complete run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    /// A sizing run's request (`perf-tests sizing`); absent for any other run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizing: Option<SizingRequest>,
    /// A paired run's sides (`perf-tests ab`): what made each differ from the scenarios;
    /// absent for any other run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sides: Option<crate::settings::sides::Sides>,
}

/// What the user asked of a sizing run (`perf-tests sizing`), kept in `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct SizingRequest {
    /// The traffic (produce + consume MB/s) whose cores are stated.
    pub traffic_mb_s: f64,
    /// The sweep's lowest rate, named when no rate was sustained.
    pub from: u64,
}

impl RunInfo {
    /// A record of run `run_id` of `settings` over `suite` between the two instants.
    pub(crate) fn new(
        run_id: &str,
        settings: &Settings,
        suite: &Path,
        host: HostFacts,
        started_at: DateTime<Utc>,
        ended_at: DateTime<Utc>,
    ) -> RunInfo {
        RunInfo {
            run_id: run_id.to_string(),
            settings: settings.clone(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            host,
            nodes: Vec::new(),
            started_at: rfc3339(started_at),
            ended_at: rfc3339(ended_at),
            commit_id: settings.commit_id.clone(),
            suite: suite.display().to_string(),
            incomplete: None,
            sizing: None,
            sides: None,
        }
    }
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}
