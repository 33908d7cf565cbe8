//! The records of a run directory `results/<UTC timestamp>-<commit>/`: `run.json` ([`RunInfo`])
//! beside one `<scenario>.json` per scenario (`crate::model::ScenarioResult`), and its name.
//! `crate::present::export` writes them; readers (`compare`) read them back through the same types.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::run::RunInfo;
use crate::model::ScenarioResult;

/// The file of a run directory that describes the run (readers find run directories by it).
pub(crate) const RUN_FILE: &str = "run.json";

/// A sizing run's statement beside its scenarios' records (not one of them).
pub(crate) const SIZING_FILE: &str = "sizing.json";
/// Where run `run_id`'s profile recordings are kept (inside `results_dir`, hidden) until its
/// results directory is written, which takes them in as `profiles/`.
pub(crate) fn profiles_staging(results_dir: &Path, run_id: &str) -> PathBuf {
    results_dir.join(format!(".profiles-{run_id}"))
}

/// The layout of the results' JSON files: raised whenever a field changes its meaning or its
/// shape, or goes, so that a reader knows which layout a file has. Files written before the
/// version was recorded have none: they are version 1.
pub const SCHEMA_VERSION: u32 = 3;

/// A record as it is written: its layout's version beside its own fields.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Versioned<T> {
    /// The layout's version ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    #[serde(flatten)]
    pub record: T,
}

impl<T> Versioned<T> {
    /// `record` in the layout of this build.
    pub(crate) fn new(record: T) -> Versioned<T> {
        Versioned {
            schema_version: SCHEMA_VERSION,
            record,
        }
    }
}

/// The record in a results file's `text`, refused when a newer layout than this build's wrote
/// it (a field may have changed its meaning).
fn read_versioned<T: serde::de::DeserializeOwned>(
    path: &Path,
    text: &str,
    what: &str,
) -> Result<T> {
    let value: serde_json::Value = serde_json::from_str(text)
        .with_context(|| format!("{}: not valid JSON", path.display()))?;
    let version = value
        .get("schema_version")
        .and_then(|v| v.as_u64())
        .unwrap_or(1);
    if version > u64::from(SCHEMA_VERSION) {
        bail!(
            "{}: written in layout {version} of the results (schema_version), newer than the \
             {SCHEMA_VERSION} this perf-tests {} reads; read it with a newer perf-tests",
            path.display(),
            env!("CARGO_PKG_VERSION")
        );
    }
    serde_json::from_value(value).with_context(|| format!("{}: not {what}", path.display()))
}

/// Reads a run's `run.json` (`run` is its directory).
pub(crate) fn read_run_info(run: &Path) -> Result<RunInfo> {
    let path = run.join(RUN_FILE);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    read_versioned(&path, &text, "a run record")
}

/// Reads every `<scenario>.json` of a run directory, by file name.
pub(crate) fn read_scenarios(run: &Path) -> Result<Vec<ScenarioResult>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(run)
        .with_context(|| format!("cannot read directory {}", run.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && p.file_name()
                    .is_some_and(|n| n != RUN_FILE && n != SIZING_FILE)
        })
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f)
                .with_context(|| format!("cannot read {}", f.display()))?;
            read_versioned::<ScenarioResult>(f, &text, "a scenario result")
        })
        .collect()
}

/// The directory name of a run: `<YYYYMMDDTHHMMSSZ>-<commit>`, from `started_at`.
pub(crate) fn run_dir_name(info: &RunInfo) -> Result<String> {
    let started = DateTime::parse_from_rfc3339(&info.started_at)
        .with_context(|| format!("started_at {:?} is not RFC 3339", info.started_at))?
        .with_timezone(&Utc);
    // The commit id comes from the environment; keep it to characters safe in a file name.
    let commit: String = info
        .commit_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let commit = if commit.is_empty() {
        crate::settings::UNKNOWN_COMMIT.to_string()
    } else {
        commit
    };
    Ok(format!("{}-{commit}", started.format("%Y%m%dT%H%M%SZ")))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::run::NodeFacts;
    use crate::settings::Settings;
    use chrono::TimeZone;

    pub(crate) fn info(commit: &str) -> RunInfo {
        let settings = Settings {
            commit_id: commit.to_string(),
            ..Settings::default()
        };
        let start = Utc.with_ymd_and_hms(2025, 1, 2, 3, 4, 5).unwrap();
        let mut info = RunInfo::new(
            "20250102T030405Z-000000",
            &settings,
            Path::new("scenarios/kroxylicious"),
            crate::world::machine::host_facts(),
            start,
            start + chrono::Duration::seconds(90),
        );
        info.nodes = vec![NodeFacts {
            name: "engine-host".into(),
            engine_version: "20.10.0".into(),
            ..NodeFacts::default()
        }];
        info
    }

    #[test]
    fn unsafe_commit_ids_are_made_file_name_safe() {
        assert_eq!(
            run_dir_name(&info("feature/x y")).unwrap(),
            "20250102T030405Z-feature_x_y"
        );
        assert_eq!(run_dir_name(&info("")).unwrap(), "20250102T030405Z-unknown");
    }

    #[test]
    fn a_run_is_complete_unless_run_json_says_why_not() {
        let dir = tempfile::tempdir().unwrap();
        let mut run = info("abc");
        let text = serde_json::to_string(&run).unwrap();
        assert!(!text.contains("incomplete"), "{text}");
        std::fs::write(dir.path().join(RUN_FILE), text).unwrap();
        assert_eq!(read_run_info(dir.path()).unwrap().incomplete, None);
        run.incomplete = Some("interrupted".into());
        std::fs::write(
            dir.path().join(RUN_FILE),
            serde_json::to_string(&run).unwrap(),
        )
        .unwrap();
        assert_eq!(
            read_run_info(dir.path()).unwrap().incomplete.as_deref(),
            Some("interrupted")
        );
    }

    /// The JSON Schema of each JSON file a run directory can hold, made from the types the files
    /// are written from, by file: `run.json`, `<scenario>.json`, `sizing.json`. The repository ships
    /// them under `schemas/`.
    fn schemas() -> Vec<(&'static str, serde_json::Value)> {
        fn of<T: JsonSchema>(title: &str, description: &str) -> serde_json::Value {
            let mut schema = serde_json::to_value(schemars::schema_for!(Versioned<T>))
                .expect("a schema is JSON");
            schema["title"] = title.into();
            schema["description"] = description.into();
            // A file of another layout is not one this schema describes.
            schema["properties"]["schema_version"]["const"] = SCHEMA_VERSION.into();
            schema
        }
        vec![
            (
                "run.schema.json",
                of::<RunInfo>(
                    "perf-tests run.json",
                    "One run: its settings, the tool's version, the host, its times.",
                ),
            ),
            (
                "scenario.schema.json",
                of::<ScenarioResult>(
                    "perf-tests <scenario>.json",
                    "Everything recorded about one scenario of a run (at one combination of its \
                     matrix): every repetition's measurement and their median summary.",
                ),
            ),
            (
                "sizing.schema.json",
                of::<crate::analysis::sizing::Sizing>(
                    "perf-tests sizing.json",
                    "A sizing run's statement, computed from its scenarios' results.",
                ),
            ),
        ]
    }

    /// The schemas under `schemas/` are what the types make; `UPDATE_SCHEMAS=1 cargo test --lib
    /// schemas` writes them anew after a change of the types (then raise [`SCHEMA_VERSION`]
    /// where a field changed its meaning or shape).
    #[test]
    fn the_shipped_schemas_are_those_the_types_make() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
        let update = std::env::var_os("UPDATE_SCHEMAS").is_some();
        for (file, schema) in schemas() {
            let made = serde_json::to_string_pretty(&schema).unwrap() + "\n";
            let path = dir.join(file);
            if update {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &made).unwrap();
            }
            let shipped = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                shipped == made,
                "{} differs from the schema the types make: UPDATE_SCHEMAS=1 cargo test --lib schemas",
                path.display()
            );
        }
    }

    #[test]
    fn a_file_of_a_newer_layout_is_refused_and_an_older_one_read() {
        let dir = tempfile::tempdir().unwrap();
        let run = info("abc");
        let mut value = serde_json::to_value(Versioned::new(&run)).unwrap();
        assert_eq!(value["schema_version"], SCHEMA_VERSION);
        value["schema_version"] = (SCHEMA_VERSION + 1).into();
        std::fs::write(dir.path().join(RUN_FILE), value.to_string()).unwrap();
        let err = format!("{:#}", read_run_info(dir.path()).unwrap_err());
        assert!(
            err.contains(&format!("layout {} of the results", SCHEMA_VERSION + 1)),
            "{err}"
        );
        // Before the version was recorded: read as it was.
        value.as_object_mut().unwrap().remove("schema_version");
        std::fs::write(dir.path().join(RUN_FILE), value.to_string()).unwrap();
        assert_eq!(read_run_info(dir.path()).unwrap(), run);
    }
}
