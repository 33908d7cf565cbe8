//! What makes the two sides of `perf-tests ab` differ from the scenarios as written: each
//! side's overrides, as the command line gives them (`--a`, `--b-env`, `--b-config`, …). How the
//! sides are derived from the scenarios is the plan's (`crate::plan::sides`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What makes one side differ from the scenarios as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Overrides {
    /// Compose variables the side's services are interpolated with, each usually a setting
    /// (`KROXYLICIOUS_IMAGE=my/kroxylicious:dev`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variables: Vec<(String, String)>,
    /// Environment variables set in each of the side's services (`JAVA_OPTIONS`, which a proxy
    /// image's start script passes to its JVM).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub environment: Vec<(String, String)>,
    /// A YAML file merged into each YAML file the side's services mount (the proxy's
    /// configuration): its maps merge key by key, anything else replaces what is there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<PathBuf>,
}

impl Overrides {
    /// One line: `KROXYLICIOUS_IMAGE=x, environment JAVA_OPTIONS=y, config overlay.yaml`, or
    /// `as written`.
    pub(crate) fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .variables
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        parts.extend(
            self.environment
                .iter()
                .map(|(k, v)| format!("environment {k}={v}")),
        );
        if let Some(c) = &self.config {
            parts.push(format!("config {}", c.display()));
        }
        if parts.is_empty() {
            "as written".to_string()
        } else {
            parts.join(", ")
        }
    }
}

/// Both sides' overrides.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Sides {
    pub a: Overrides,
    pub b: Overrides,
}
