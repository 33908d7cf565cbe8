//! Scenario discovery and the suite / scenario files.
//!
//! A suite is a directory holding `suite.yaml` and numbered scenario directories `NN-name/`,
//! each holding a `scenario.yaml`. `TEST` selects scenarios by their whole directory name.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use regex::Regex;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use crate::world::compose::absolute;

/// File name of the suite description inside a suite directory.
pub(crate) const SUITE_FILE: &str = "suite.yaml";
/// File name of the scenario description inside a scenario directory.
pub(crate) const SCENARIO_FILE: &str = "scenario.yaml";

/// Kafka's default `message.max.bytes`: the largest record batch a broker accepts.
pub(crate) const KAFKA_DEFAULT_MESSAGE_MAX_BYTES: u64 = 1_048_588;
/// What a record batch holding one record without key or headers adds to the record's value, at
/// most: the batch header (61 bytes) and the record's own framing (its length, attributes,
/// timestamp and offset deltas, key and value lengths, header count: 15 bytes).
pub(crate) const RECORD_BATCH_OVERHEAD: u64 = 61 + 15;
/// The largest `RECORD_SIZE` a broker with Kafka's defaults accepts.
pub(crate) const DEFAULT_MAX_RECORD_SIZE: u64 =
    KAFKA_DEFAULT_MESSAGE_MAX_BYTES - RECORD_BATCH_OVERHEAD;

/// A suite: the run-wide services and the defaults its scenarios share.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    /// Absolute suite directory.
    pub dir: PathBuf,
    /// Absolute path of `suite.yaml`.
    pub file: PathBuf,
    /// One line saying what the suite is.
    pub description: String,
    /// Default Compose files of every scenario, resolved to absolute paths.
    pub compose: Vec<PathBuf>,
    /// Services brought up once for the whole run.
    pub services: Vec<String>,
    /// Endpoint for the warm-up after the run-wide services start.
    pub bootstrap: String,
    /// Kafka-level readiness probe endpoint per service.
    pub ready: BTreeMap<String, String>,
    /// Extra client properties for the run-wide endpoint.
    pub client: BTreeMap<String, String>,
    /// Image recipes keyed by image reference, kept opaque here.
    pub images: BTreeMap<String, yaml_serde::Value>,
    /// The file the recipes are written in (`suite.yaml`, or the file its `images:` names):
    /// their paths are relative to it.
    pub images_file: PathBuf,
    /// The largest record size in bytes the suite's brokers accept, when they were configured to
    /// accept more (or less) than Kafka's default; see [`Suite::max_record_size`].
    pub max_record_size: Option<u64>,
    /// Settings the suite measures at several values (`matrix:`), unless the command line or
    /// the environment gives them.
    pub matrix: Vec<crate::settings::matrix::Axis>,
    /// The run-wide cluster's brokers in order (`brokers:`): `BROKERS` of them run, the first
    /// one of `services`; empty when the suite runs only the broker of its `services`.
    pub brokers: Vec<Broker>,
}

/// One numbered scenario of a suite.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Directory name, e.g. `02-no-filters`.
    pub name: String,
    /// Absolute scenario directory.
    pub dir: PathBuf,
    /// Absolute path of `scenario.yaml`.
    pub file: PathBuf,
    /// One line saying what the scenario measures.
    pub description: String,
    /// Compose files (absolute); the suite's when the scenario names none.
    pub compose: Vec<PathBuf>,
    /// Services brought up for this scenario only.
    pub services: Vec<String>,
    /// True when the scenario brings its own broker and does not use the run-wide services.
    pub own_broker: bool,
    /// Endpoint the workload uses.
    pub bootstrap: String,
    /// Kafka-level readiness probe endpoint per service.
    pub ready: BTreeMap<String, String>,
    /// Extra client properties for this scenario's endpoint.
    pub client: BTreeMap<String, String>,
    /// Certificates to generate for this scenario, if any.
    pub tls: Option<TlsSpec>,
    /// Steps run after the services are up, before the warm-up.
    pub setup: Vec<Step>,
    /// Steps run before the services go down.
    pub teardown: Vec<Step>,
    /// What the path does to records, checked on sample records after the measurement.
    pub expect: Option<crate::model::Expect>,
    /// The scenario measures none of the path under test (the broker alone): `compare` warns
    /// when it moves, since then the machine or the broker changed, not the path.
    pub reference: bool,
    /// The KMS the path's record encryption uses, kept in the results.
    pub kms: Option<crate::model::Kms>,
}

/// Host names a per-run CA and server certificate are generated for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsSpec {
    /// Host names the server certificate is valid for.
    pub hosts: Vec<String>,
}

/// One setup or teardown step, written as a map with one key naming its kind
/// (`- exec: { service: vault, command: [...] }`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "StepFile", into = "StepFile")]
pub enum Step {
    /// Runs `command` inside the running container of `service`.
    Exec {
        service: String,
        command: Vec<String>,
    },
}

/// The file form of a step. yaml_serde reads enums only from `!tag` syntax, so the
/// one-key map form goes through this struct: one optional field per step kind.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exec: Option<ExecStep>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecStep {
    service: String,
    command: Vec<String>,
}

impl TryFrom<StepFile> for Step {
    type Error = String;
    fn try_from(f: StepFile) -> std::result::Result<Step, String> {
        match f.exec {
            Some(ExecStep { service, command }) => Ok(Step::Exec { service, command }),
            None => Err("a step needs one of the keys: exec".to_string()),
        }
    }
}

impl From<Step> for StepFile {
    fn from(step: Step) -> StepFile {
        match step {
            Step::Exec { service, command } => StepFile {
                exec: Some(ExecStep { service, command }),
            },
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Exec { service, command } => write!(f, "exec in {service}: {command:?}"),
        }
    }
}

/// A numbered directory found in a suite, before its file is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScenarioDir {
    /// Directory name, e.g. `01-baseline`.
    pub name: String,
    /// Path of the directory.
    pub dir: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFile {
    description: String,
    compose: Vec<PathBuf>,
    services: Vec<String>,
    bootstrap: String,
    #[serde(default)]
    ready: BTreeMap<String, String>,
    #[serde(default)]
    client: BTreeMap<String, Scalar>,
    #[serde(default)]
    images: Images,
    #[serde(default)]
    max_record_size: Option<u64>,
    #[serde(default)]
    matrix: BTreeMap<String, Vec<Scalar>>,
    #[serde(default)]
    brokers: Vec<Broker>,
}

/// One broker of a suite's run-wide cluster (`brokers:`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Broker {
    /// Its Compose service.
    pub service: String,
    /// Its entry in the cluster's controller quorum (KRaft's `node id@host:port`): the running
    /// brokers' entries, joined by commas, are the Compose variable `BROKER_VOTERS`.
    pub voter: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    description: String,
    #[serde(default)]
    compose: Option<Vec<PathBuf>>,
    #[serde(default)]
    services: Vec<String>,
    #[serde(default)]
    own_broker: bool,
    bootstrap: String,
    #[serde(default)]
    ready: BTreeMap<String, String>,
    #[serde(default)]
    client: BTreeMap<String, Scalar>,
    #[serde(default)]
    tls: Option<TlsSpec>,
    #[serde(default)]
    setup: Vec<Step>,
    #[serde(default)]
    teardown: Vec<Step>,
    #[serde(default)]
    expect: Option<crate::model::Expect>,
    #[serde(default)]
    reference: bool,
    #[serde(default)]
    kms: Option<crate::model::Kms>,
}

/// `images:` of a suite file: the recipes themselves, or a file holding them, so that suites
/// of the same systems share one list.
enum Images {
    Here(BTreeMap<String, yaml_serde::Value>),
    File(PathBuf),
}

impl Default for Images {
    fn default() -> Images {
        Images::Here(BTreeMap::new())
    }
}

impl<'de> Deserialize<'de> for Images {
    // By hand rather than `untagged`, so that a wrong type keeps yaml_serde's line and key.
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Images;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of image recipes, or the path of a file holding them")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Images, E> {
                Ok(Images::File(PathBuf::from(v)))
            }
            fn visit_map<A: de::MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<Images, A::Error> {
                Deserialize::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(Images::Here)
            }
        }
        d.deserialize_any(V)
    }
}

impl Images {
    /// The recipes and the file they are written in (`suite` when they are in it).
    fn load(self, suite: &Path) -> Result<(BTreeMap<String, yaml_serde::Value>, PathBuf)> {
        match self {
            Images::Here(map) => Ok((map, suite.to_path_buf())),
            Images::File(path) => {
                let file = absolute(&suite.parent().unwrap_or(Path::new(".")).join(&path))?;
                if !file.is_file() {
                    bail!(
                        "{}: images: file {} not found (looked for {})",
                        suite.display(),
                        path.display(),
                        file.display()
                    );
                }
                Ok((read_yaml(&file)?, file))
            }
        }
    }
}

/// A suite's `brokers:` start with a broker of its `services`, and each has a readiness probe.
fn check_brokers(file: &Path, raw: &SuiteFile) -> Result<()> {
    let Some(first) = raw.brokers.first().map(|b| &b.service) else {
        return Ok(());
    };
    if !raw.services.contains(first) {
        bail!(
            "{}: brokers: the first broker, {first}, is not one of the suite's services ({})",
            file.display(),
            raw.services.join(", ")
        );
    }
    let mut seen = BTreeSet::new();
    for broker in raw.brokers.iter().map(|b| &b.service) {
        if !seen.insert(broker) {
            bail!("{}: brokers: {broker} is listed twice", file.display());
        }
        if !raw.ready.contains_key(broker) {
            bail!(
                "{}: brokers: {broker} has no readiness probe (add `ready.{broker}`)",
                file.display()
            );
        }
    }
    Ok(())
}

/// A client property value: YAML writes `linger.ms: 5` as a number, Kafka wants a string.
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, number or boolean")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

fn scalars(map: BTreeMap<String, Scalar>) -> BTreeMap<String, String> {
    map.into_iter().map(|(k, v)| (k, v.0)).collect()
}

/// Reads and parses a YAML file; errors name the file, and yaml_serde's message names the key
/// and the line.
fn read_yaml<T: for<'de> Deserialize<'de>>(file: &Path) -> Result<T> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    yaml_serde::from_str(&text).map_err(|e| match e.location() {
        Some(loc) => anyhow::anyhow!("{}:{}:{}: {e}", file.display(), loc.line(), loc.column()),
        None => anyhow::anyhow!("{}: {e}", file.display()),
    })
}

/// Resolves Compose paths relative to the file naming them and checks they exist.
fn resolve_compose(file: &Path, paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let base = file.parent().unwrap_or(Path::new("."));
    paths
        .iter()
        .map(|p| {
            let resolved = absolute(&base.join(p))?;
            if !resolved.is_file() {
                bail!(
                    "{}: compose file {} not found (looked for {})",
                    file.display(),
                    p.display(),
                    resolved.display()
                );
            }
            Ok(resolved)
        })
        .collect()
}

fn check_endpoint(file: &Path, key: &str, value: &str) -> Result<()> {
    let ok = value
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    if !ok {
        bail!(
            "{}: {key}: {value:?} is not a host:port endpoint",
            file.display()
        );
    }
    Ok(())
}

impl Suite {
    /// Loads `<dir>/suite.yaml`.
    pub fn load(dir: &Path) -> Result<Suite> {
        let dir = absolute(dir)?;
        if !dir.is_dir() {
            bail!(
                "suite directory {} (SCENARIOS) does not exist",
                dir.display()
            );
        }
        let file = dir.join(SUITE_FILE);
        if !file.is_file() {
            bail!("suite file {} is missing", file.display());
        }
        let raw: SuiteFile = read_yaml(&file)?;
        check_endpoint(&file, "bootstrap", &raw.bootstrap)?;
        for (service, endpoint) in &raw.ready {
            check_endpoint(&file, &format!("ready.{service}"), endpoint)?;
        }
        check_brokers(&file, &raw)?;
        if raw.max_record_size == Some(0) {
            bail!(
                "{}: max_record_size: must be at least 1 byte",
                file.display()
            );
        }
        let matrix = raw
            .matrix
            .into_iter()
            .map(|(var, values)| {
                let values: Vec<String> = values.into_iter().map(|v| v.0).collect();
                crate::settings::matrix::axis(&var, &values)
                    .with_context(|| format!("{}: matrix.{var}", file.display()))
            })
            .collect::<Result<Vec<_>>>()?;
        let (images, images_file) = raw.images.load(&file)?;
        Ok(Suite {
            brokers: raw.brokers,
            matrix,
            images,
            images_file,
            compose: resolve_compose(&file, &raw.compose)?,
            dir,
            file,
            description: raw.description,
            services: raw.services,
            bootstrap: raw.bootstrap,
            ready: raw.ready,
            client: scalars(raw.client),
            max_record_size: raw.max_record_size,
        })
    }

    /// The suite as a run of `BROKERS=n` starts it: the first `n` of its brokers run-wide, and
    /// only their readiness probes.
    pub(crate) fn with_brokers(&self, n: u32) -> Result<Suite> {
        let n = n as usize;
        let most = self.brokers.len().max(1);
        if n > most {
            let why = match self.brokers.len() {
                0 => "it declares no `brokers:`, so it runs the one broker of its `services`"
                    .to_string(),
                k => format!(
                    "its `brokers:` lists {k}: {}",
                    self.broker_names().join(", ")
                ),
            };
            bail!(
                "BROKERS={n}: suite {} runs at most {most} ({why})",
                self.file.display()
            );
        }
        let mut suite = self.clone();
        let names = self.broker_names();
        let (on, off) = names.split_at(n.min(names.len()));
        for broker in on {
            if !suite.services.contains(broker) {
                suite.services.push(broker.clone());
            }
        }
        suite.ready.retain(|service, _| !off.contains(service));
        suite.brokers.truncate(n);
        Ok(suite)
    }

    fn broker_names(&self) -> Vec<String> {
        self.brokers.iter().map(|b| b.service.clone()).collect()
    }

    /// `BROKER_VOTERS`: the running brokers' quorum entries, joined by commas.
    pub(crate) fn broker_voters(&self) -> String {
        let voters: Vec<&str> = self.brokers.iter().map(|b| b.voter.as_str()).collect();
        voters.join(",")
    }

    /// The largest `RECORD_SIZE` the suite's brokers accept: `max_record_size` from
    /// `suite.yaml`, else what Kafka's default `message.max.bytes` leaves for one record.
    pub(crate) fn max_record_size(&self) -> u64 {
        self.max_record_size.unwrap_or(DEFAULT_MAX_RECORD_SIZE)
    }

    /// Refuses a record size larger than [`Suite::max_record_size`], naming `RECORD_SIZE`, the
    /// value, the limit and where the limit comes from.
    pub(crate) fn check_record_size(&self, record_size: u64) -> Result<()> {
        let limit = self.max_record_size();
        if record_size <= limit {
            return Ok(());
        }
        match self.max_record_size {
            Some(_) => bail!(
                "RECORD_SIZE={record_size} is larger than the suite's brokers accept: at most \
                 {limit} bytes (max_record_size in {})",
                self.file.display()
            ),
            None => bail!(
                "RECORD_SIZE={record_size} is larger than a broker accepts: at most {limit} bytes \
                 (Kafka's default message.max.bytes, {KAFKA_DEFAULT_MESSAGE_MAX_BYTES}, less \
                 {RECORD_BATCH_OVERHEAD} bytes of record batch overhead); a suite whose brokers \
                 accept more says so with max_record_size in {}",
                self.file.display()
            ),
        }
    }
}

impl Scenario {
    /// Loads `<dir>/scenario.yaml` of a scenario of `suite`.
    pub(crate) fn load(suite: &Suite, found: &ScenarioDir) -> Result<Scenario> {
        let dir = absolute(&found.dir)?;
        let file = dir.join(SCENARIO_FILE);
        if !file.is_file() {
            bail!(
                "scenario {}: file {} is missing",
                found.name,
                file.display()
            );
        }
        let raw: ScenarioFile = read_yaml(&file)?;
        check_endpoint(&file, "bootstrap", &raw.bootstrap)?;
        for (service, endpoint) in &raw.ready {
            check_endpoint(&file, &format!("ready.{service}"), endpoint)?;
        }
        if let Some(tls) = &raw.tls {
            if tls.hosts.is_empty() {
                bail!("{}: tls.hosts must name at least one host", file.display());
            }
        }
        for (i, step) in raw.setup.iter().chain(&raw.teardown).enumerate() {
            let Step::Exec { service, command } = step;
            if service.is_empty() || command.is_empty() {
                bail!(
                    "{}: step {} ({step}) needs a service and a non-empty command",
                    file.display(),
                    i + 1
                );
            }
        }
        if let Some(crate::model::Kms {
            service: Some(kms), ..
        }) = &raw.kms
        {
            if !raw.services.contains(kms) {
                bail!(
                    "{}: kms.service: {kms:?} is not one of the scenario's services ({})",
                    file.display(),
                    raw.services.join(", ")
                );
            }
        }
        let compose = match &raw.compose {
            Some(paths) => resolve_compose(&file, paths)?,
            None => suite.compose.clone(),
        };
        Ok(Scenario {
            name: found.name.clone(),
            dir,
            file,
            description: raw.description,
            compose,
            services: raw.services,
            own_broker: raw.own_broker,
            bootstrap: raw.bootstrap,
            ready: raw.ready,
            client: scalars(raw.client),
            tls: raw.tls,
            setup: raw.setup,
            teardown: raw.teardown,
            expect: raw.expect,
            reference: raw.reference,
            kms: raw.kms,
        })
    }
}

/// True for a scenario directory name: two digits, a dash, and a non-empty rest.
pub(crate) fn is_numbered(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() > 3 && b[0].is_ascii_digit() && b[1].is_ascii_digit() && b[2] == b'-'
}

/// Numbered directories directly under `suite_dir`, sorted by name; everything else is ignored.
pub(crate) fn discover(suite_dir: &Path) -> Result<Vec<ScenarioDir>> {
    let entries = std::fs::read_dir(suite_dir).with_context(|| {
        format!(
            "cannot read suite directory {} (SCENARIOS)",
            suite_dir.display()
        )
    })?;
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry
            .with_context(|| format!("cannot read suite directory {}", suite_dir.display()))?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if is_numbered(&name) && entry.path().is_dir() {
            found.push(ScenarioDir {
                name,
                dir: entry.path(),
            });
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// The `TEST` pattern anchored to match a whole directory name.
pub(crate) fn test_regex(test: &str) -> Result<Regex> {
    Regex::new(&format!("^(?:{test})$"))
        .map_err(|e| anyhow::anyhow!("TEST={test:?} is not a valid regular expression: {e}"))
}

/// The scenarios whose whole name matches `test`; an error when none does.
pub(crate) fn select(found: &[ScenarioDir], test: &str) -> Result<Vec<ScenarioDir>> {
    let re = test_regex(test)?;
    let selected: Vec<ScenarioDir> = found
        .iter()
        .filter(|s| re.is_match(&s.name))
        .cloned()
        .collect();
    if selected.is_empty() {
        let names: Vec<&str> = found.iter().map(|s| s.name.as_str()).collect();
        if names.is_empty() {
            bail!(
                "TEST={test:?} selects no scenario: the suite has no numbered scenario directories"
            );
        }
        bail!(
            "TEST={test:?} selects no scenario (the pattern must match the whole name); scenarios: {}",
            names.join(", ")
        );
    }
    Ok(selected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    /// A suite with a shared Compose file and the given scenario files.
    fn suite(scenarios: &[(&str, &str)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        write(&root.path().join("compose/base.yaml"), "services: {}\n");
        write(
            &root.path().join("suite/suite.yaml"),
            "description: Test suite\ncompose: [../compose/base.yaml]\nservices: [broker]\nbootstrap: broker:9092\n",
        );
        for (name, text) in scenarios {
            write(
                &root.path().join("suite").join(name).join(SCENARIO_FILE),
                text,
            );
        }
        root
    }

    fn names(found: &[ScenarioDir]) -> Vec<&str> {
        found.iter().map(|s| s.name.as_str()).collect()
    }

    const MINIMAL: &str = "description: d\nbootstrap: broker:9092\n";

    #[test]
    fn the_record_size_limit_is_kafkas_default_unless_the_suite_sets_one() {
        let root = suite(&[]);
        let dir = root.path().join("suite");
        let default = Suite::load(&dir).unwrap();
        assert_eq!(default.max_record_size(), 1_048_512);
        default.check_record_size(1_048_512).unwrap();
        let err = default
            .check_record_size(1_048_513)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("RECORD_SIZE=1048513") && err.contains("1048512 bytes"),
            "{err}"
        );
        assert!(err.contains("max_record_size"), "{err}");

        let file = dir.join(SUITE_FILE);
        let text = fs::read_to_string(&file).unwrap();
        fs::write(&file, format!("{text}max_record_size: 8388608\n")).unwrap();
        let raised = Suite::load(&dir).unwrap();
        assert_eq!(raised.max_record_size(), 8_388_608);
        raised.check_record_size(2_000_000).unwrap();
        let err = raised.check_record_size(8_388_609).unwrap_err().to_string();
        assert!(
            err.contains("RECORD_SIZE=8388609") && err.contains("8388608 bytes"),
            "{err}"
        );

        fs::write(&file, format!("{text}max_record_size: 0\n")).unwrap();
        let err = Suite::load(&dir).unwrap_err().to_string();
        assert!(err.contains("max_record_size"), "{err}");
        fs::write(&file, format!("{text}max_record_size: lots\n")).unwrap();
        let err = Suite::load(&dir).unwrap_err().to_string();
        assert!(err.contains("max_record_size"), "{err}");
    }

    #[test]
    fn discovery_sorts_numbered_directories_and_ignores_the_rest() {
        let root = suite(&[("02-b", MINIMAL), ("01-a", MINIMAL), ("10-c", MINIMAL)]);
        let dir = root.path().join("suite");
        fs::create_dir(dir.join("notes")).unwrap();
        fs::create_dir(dir.join("1-short")).unwrap();
        fs::create_dir(dir.join("03-")).unwrap();
        fs::write(dir.join("04-file"), "").unwrap();
        assert_eq!(names(&discover(&dir).unwrap()), ["01-a", "02-b", "10-c"]);
    }

    #[test]
    fn selection_matches_whole_names() {
        let root = suite(&[("01-x", MINIMAL), ("02-y", MINIMAL), ("10-x", MINIMAL)]);
        let found = discover(&root.path().join("suite")).unwrap();
        assert_eq!(names(&select(&found, "01.*").unwrap()), ["01-x"]);
        assert_eq!(names(&select(&found, ".*-x").unwrap()), ["01-x", "10-x"]);
        assert_eq!(
            names(&select(&found, "[0-9][0-9]-.*").unwrap()),
            ["01-x", "02-y", "10-x"]
        );
        // Alternation stays inside the anchors.
        assert_eq!(
            names(&select(&found, "01-x|02-y").unwrap()),
            ["01-x", "02-y"]
        );
        let err = select(&found, "0").unwrap_err().to_string();
        assert!(err.contains("TEST=\"0\""), "{err}");
        assert!(err.contains("01-x, 02-y, 10-x"), "{err}");
        let err = select(&found, "x").unwrap_err().to_string();
        assert!(err.contains("selects no scenario"), "{err}");
    }

    #[test]
    fn invalid_regex_names_test_and_pattern() {
        let err = select(&[], "0[").unwrap_err().to_string();
        assert!(err.contains("TEST=\"0[\""), "{err}");
        assert!(err.contains("not a valid regular expression"), "{err}");
    }

    #[test]
    fn missing_suite_directory_is_named() {
        let root = tempfile::tempdir().unwrap();
        let err = Suite::load(&root.path().join("nope"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("nope"), "{err}");
        assert!(err.contains("does not exist"), "{err}");
        let err = discover(&root.path().join("nope")).unwrap_err().to_string();
        assert!(err.contains("nope"), "{err}");
    }

    #[test]
    fn suite_and_scenario_load_with_defaults_and_resolved_paths() {
        let full = r#"description: Through the proxy
compose: [../../compose/base.yaml, extra.yaml]
services: [proxy, vault]
own_broker: true
bootstrap: proxy:9092
ready: { proxy: "proxy:9092" }
client: { security.protocol: SSL, linger.ms: 5, enable.idempotence: false }
tls: { hosts: [terminator] }
setup:
  - exec: { service: vault, command: [vault, write, "transit/keys/${TOPIC}"] }
teardown:
  - exec: { service: vault, command: [vault, list] }
"#;
        let root = suite(&[("01-min", MINIMAL), ("02-full", full)]);
        write(
            &root.path().join("suite/02-full/extra.yaml"),
            "services: {}\n",
        );
        let s = Suite::load(&root.path().join("suite")).unwrap();
        assert_eq!(s.description, "Test suite");
        assert_eq!(s.compose, [root.path().join("compose/base.yaml")]);
        assert_eq!(s.services, ["broker"]);
        assert!(s.ready.is_empty() && s.client.is_empty() && s.images.is_empty());

        let found = discover(&s.dir).unwrap();
        let min = Scenario::load(&s, &found[0]).unwrap();
        assert_eq!(min.name, "01-min");
        assert_eq!(min.compose, s.compose);
        assert!(min.services.is_empty() && !min.own_broker && min.tls.is_none());
        assert!(min.setup.is_empty() && min.teardown.is_empty());

        let full = Scenario::load(&s, &found[1]).unwrap();
        assert_eq!(
            full.compose,
            [
                root.path().join("compose/base.yaml"),
                root.path().join("suite/02-full/extra.yaml")
            ]
        );
        assert!(full.own_broker);
        assert_eq!(full.ready["proxy"], "proxy:9092");
        assert_eq!(full.client["linger.ms"], "5");
        assert_eq!(full.client["enable.idempotence"], "false");
        assert_eq!(full.tls.as_ref().unwrap().hosts, ["terminator"]);
        assert_eq!(
            full.setup,
            [Step::Exec {
                service: "vault".into(),
                command: vec![
                    "vault".into(),
                    "write".into(),
                    "transit/keys/${TOPIC}".into()
                ]
            }]
        );
        assert_eq!(full.teardown.len(), 1);
    }

    fn load_err(text: &str) -> String {
        let root = suite(&[("01-bad", text)]);
        let s = Suite::load(&root.path().join("suite")).unwrap();
        let found = discover(&s.dir).unwrap();
        format!("{:#}", Scenario::load(&s, &found[0]).unwrap_err())
    }

    #[test]
    fn unknown_key_names_file_line_and_key() {
        let err = load_err("description: d\nbootstrap: broker:9092\nservice: [proxy]\n");
        assert!(err.contains("01-bad/scenario.yaml:3:"), "{err}");
        assert!(err.contains("unknown field `service`"), "{err}");
    }

    #[test]
    fn missing_key_names_file_and_key() {
        let err = load_err("description: d\nservices: [proxy]\n");
        assert!(err.contains("01-bad/scenario.yaml:1:"), "{err}");
        assert!(err.contains("missing field `bootstrap`"), "{err}");
    }

    #[test]
    fn wrong_type_names_file_line_and_key() {
        let err = load_err("description: d\nbootstrap: broker:9092\nservices: proxy\n");
        assert!(err.contains("01-bad/scenario.yaml:3:"), "{err}");
        assert!(err.contains("services"), "{err}");
        assert!(err.contains("invalid type"), "{err}");
        let err = load_err("description: d\nbootstrap: b:1\nown_broker: maybe\n");
        assert!(err.contains("own_broker"), "{err}");
    }

    #[test]
    fn bad_steps_are_errors() {
        let err = load_err(
            "description: d\nbootstrap: b:1\nsetup:\n  - exec: { service: v, cmd: [x] }\n",
        );
        assert!(err.contains("scenario.yaml:4:"), "{err}");
        assert!(err.contains("cmd"), "{err}");
        let err = load_err("description: d\nbootstrap: b:1\nsetup:\n  - shell: x\n");
        assert!(
            err.contains("unknown field `shell`, expected `exec`"),
            "{err}"
        );
        let err = load_err("description: d\nbootstrap: b:1\nsetup:\n  - {}\n");
        assert!(
            err.contains("scenario.yaml:4:") && err.contains("one of the keys: exec"),
            "{err}"
        );
        let err = load_err(
            "description: d\nbootstrap: b:1\nsetup:\n  - exec: { service: v, command: [] }\n",
        );
        assert!(err.contains("non-empty command"), "{err}");
    }

    #[test]
    fn bad_endpoint_and_missing_compose_file_are_named() {
        let err = load_err("description: d\nbootstrap: broker\n");
        assert!(
            err.contains("bootstrap") && err.contains("\"broker\""),
            "{err}"
        );
        let err = load_err("description: d\nbootstrap: b:1\ncompose: [nope.yaml]\n");
        assert!(
            err.contains("nope.yaml") && err.contains("not found"),
            "{err}"
        );
    }

    #[test]
    fn missing_scenario_file_names_the_expected_path() {
        let root = suite(&[]);
        fs::create_dir(root.path().join("suite/01-empty")).unwrap();
        let s = Suite::load(&root.path().join("suite")).unwrap();
        let found = discover(&s.dir).unwrap();
        let err = Scenario::load(&s, &found[0]).unwrap_err().to_string();
        assert!(err.contains("01-empty/scenario.yaml"), "{err}");
        assert!(err.contains("missing"), "{err}");
    }

    #[test]
    fn a_cluster_runs_the_first_brokers_of_its_list_with_their_voters() {
        let root = suite(&[]);
        let file = root.path().join("suite/suite.yaml");
        let head = "description: d\ncompose: [../compose/base.yaml]\nservices: [b1, kms]\n\
                    bootstrap: b1:9092\n";
        let brokers = "brokers:\n  - { service: b1, voter: 1@b1:9094 }\n  \
                       - { service: b2, voter: 2@b2:9094 }\n  - { service: b3, voter: 3@b3:9094 }\n";
        let ready = "ready: { b1: 'b1:9092', b2: 'b2:9092', b3: 'b3:9092' }\n";
        fs::write(&file, format!("{head}{ready}{brokers}")).unwrap();
        let dir = root.path().join("suite");
        let all = Suite::load(&dir).unwrap();
        let two = all.with_brokers(2).unwrap();
        assert_eq!(two.services, ["b1", "kms", "b2"]);
        assert_eq!(two.ready.keys().collect::<Vec<_>>(), ["b1", "b2"]);
        assert_eq!(two.broker_voters(), "1@b1:9094,2@b2:9094");
        let one = all.with_brokers(1).unwrap();
        assert_eq!(
            (one.services.len(), one.broker_voters()),
            (2, "1@b1:9094".into())
        );
        let err = all.with_brokers(4).unwrap_err().to_string();
        assert!(
            err.contains("runs at most 3 (its `brokers:` lists 3: b1, b2, b3)"),
            "{err}"
        );
        // The file's own mistakes, each named.
        for (text, says) in [
            (format!("{head}{brokers}"), "brokers: b1 has no readiness probe (add `ready.b1`)"),
            (
                format!("{head}{ready}brokers: [{{ service: b2, voter: 2@b2:9094 }}]\n"),
                "the first broker, b2, is not one of the suite's services (b1, kms)",
            ),
            (
                format!("{head}{ready}brokers: [{{ service: b1, voter: v }}, {{ service: b1, voter: v }}]\n"),
                "brokers: b1 is listed twice",
            ),
        ] {
            fs::write(&file, text).unwrap();
            let err = Suite::load(&dir).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
        // A suite without the key runs its one broker.
        let plain = Suite::load(&suite(&[]).path().join("suite")).unwrap();
        let err = plain.with_brokers(2).unwrap_err().to_string();
        assert!(err.contains("it declares no `brokers:`"), "{err}");
        assert_eq!(plain.with_brokers(1).unwrap().broker_voters(), "");
    }

    #[test]
    fn suite_file_errors_are_named() {
        let root = suite(&[]);
        let file = root.path().join("suite/suite.yaml");
        fs::write(
            &file,
            "description: d\ncompose: []\nservices: []\nbootstrap: b:1\nimages: 3\n",
        )
        .unwrap();
        let err = Suite::load(&root.path().join("suite"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("suite.yaml:5:") && err.contains("images"),
            "{err}"
        );
        fs::remove_file(&file).unwrap();
        let err = Suite::load(&root.path().join("suite"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("suite.yaml") && err.contains("missing"),
            "{err}"
        );
    }

    #[test]
    fn suite_images_are_kept_opaque() {
        let root = suite(&[]);
        fs::write(
            root.path().join("suite/suite.yaml"),
            "description: d\ncompose: []\nservices: []\nbootstrap: b:1\nimages:\n  iperf3:local: { debian: { package: iperf3, bin: /usr/bin/iperf3 } }\n",
        )
        .unwrap();
        let s = Suite::load(&root.path().join("suite")).unwrap();
        assert_eq!(s.images["iperf3:local"]["debian"]["package"], "iperf3");
        assert_eq!(s.images_file, root.path().join("suite/suite.yaml"));
    }

    #[test]
    fn suite_images_may_live_in_a_file_that_suites_share() {
        let root = suite(&[]);
        fs::create_dir(root.path().join("shared")).unwrap();
        fs::write(
            root.path().join("shared/images.yaml"),
            "iperf3:local: { debian: { package: iperf3, bin: /usr/bin/iperf3 } }\n",
        )
        .unwrap();
        let file = root.path().join("suite/suite.yaml");
        fs::write(
            &file,
            "description: d\ncompose: []\nservices: []\nbootstrap: b:1\nimages: ../shared/images.yaml\n",
        )
        .unwrap();
        let s = Suite::load(&root.path().join("suite")).unwrap();
        assert_eq!(s.images["iperf3:local"]["debian"]["package"], "iperf3");
        // Paths inside the recipes are relative to the file that holds them.
        assert_eq!(s.images_file, root.path().join("shared/images.yaml"));

        fs::write(
            &file,
            "description: d\ncompose: []\nservices: []\nbootstrap: b:1\nimages: ../none.yaml\n",
        )
        .unwrap();
        let err = format!("{:#}", Suite::load(&root.path().join("suite")).unwrap_err());
        assert!(
            err.contains("suite.yaml") && err.contains("images") && err.contains("none.yaml"),
            "{err}"
        );
    }
}
