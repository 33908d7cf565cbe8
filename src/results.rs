//! The results directory of a run: `results/<UTC timestamp>-<commit>/` holding `run.json`, one
//! `<scenario>.json` per scenario, `tables.txt`, `tables.md` and `charts.svg` (linked from
//! `tables.md`).
//!
//! Everything is written into a hidden temporary directory inside the results directory and then
//! renamed into place, so a results directory is either complete or absent. A run never replaces
//! another: when the name is taken, `-2`, `-3`, ... is appended.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use crate::model::ScenarioResult;
use crate::settings::Settings;
use crate::{charts, report};

/// Facts about the machine a run was measured on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostFacts {
    /// Kernel host name.
    pub hostname: String,
    /// Operating system, e.g. `linux`.
    pub os: String,
    /// CPU architecture, e.g. `x86_64`.
    pub arch: String,
    /// CPUs available to this process.
    pub cpus: usize,
    /// Total memory in bytes, from /proc/meminfo where available.
    pub memory_bytes: Option<u64>,
    /// Docker Engine version, when the engine answered.
    pub docker_engine_version: Option<String>,
}

impl HostFacts {
    /// Collects the facts of this machine; the engine version is supplied by the caller.
    pub fn collect(docker_engine_version: Option<String>) -> HostFacts {
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_string())
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "unknown".to_string());
        HostFacts {
            hostname,
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes: std::fs::read_to_string("/proc/meminfo")
                .ok()
                .and_then(|text| mem_total_bytes(&text)),
            docker_engine_version,
        }
    }
}

/// `MemTotal` of a /proc/meminfo text, in bytes.
fn mem_total_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut parts = line["MemTotal:".len()..].split_whitespace();
    let value: u64 = parts.next()?.parse().ok()?;
    match parts.next() {
        Some("kB") => Some(value * 1024),
        None => Some(value),
        _ => None,
    }
}

/// The file of a run directory that describes the run (readers find run directories by it).
pub const RUN_FILE: &str = "run.json";

/// Everything about a run except its per-scenario results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunInfo {
    /// Label value of every engine resource the run created.
    pub run_id: String,
    /// Every setting of the run.
    pub settings: Settings,
    /// Version of perf-tests.
    pub tool_version: String,
    /// The machine measured on.
    pub host: HostFacts,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// RFC 3339, UTC.
    pub ended_at: String,
    /// Commit the measurement belongs to.
    pub commit_id: String,
    /// Suite directory the scenarios came from.
    pub suite: String,
}

impl RunInfo {
    /// A record of run `run_id` of `settings` over `suite` between the two instants.
    pub fn new(
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
            started_at: rfc3339(started_at),
            ended_at: rfc3339(ended_at),
            commit_id: settings.commit_id.clone(),
            suite: suite.display().to_string(),
        }
    }
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The directory name of a run: `<YYYYMMDDTHHMMSSZ>-<commit>`, from `started_at`.
pub fn run_dir_name(info: &RunInfo) -> Result<String> {
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

/// Removes the temporary directory unless the write completed.
struct TempDirGuard(Option<PathBuf>);

impl Drop for TempDirGuard {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn write_json<T: Serialize>(dir: &Path, name: &str, value: &T) -> Result<()> {
    let path = dir.join(name);
    let mut text =
        serde_json::to_string_pretty(value).with_context(|| format!("cannot serialise {name}"))?;
    text.push('\n');
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// Writes the results directory of a run and returns its path.
pub fn write_run(
    results_dir: &Path,
    info: &RunInfo,
    results: &[ScenarioResult],
) -> Result<PathBuf> {
    std::fs::create_dir_all(results_dir).with_context(|| {
        format!(
            "cannot create results directory {} (RESULTS_DIR)",
            results_dir.display()
        )
    })?;
    let name = run_dir_name(info)?;
    let tmp = results_dir.join(format!(".tmp-{name}-{}", std::process::id()));
    std::fs::create_dir(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let mut guard = TempDirGuard(Some(tmp.clone()));

    write_json(&tmp, RUN_FILE, info)?;
    for r in results {
        write_json(&tmp, &format!("{}.json", r.name), r)?;
    }
    let text = report::render_text(results);
    std::fs::write(tmp.join("tables.txt"), text).context("cannot write tables.txt")?;
    let md = format!(
        "{}\n[![Throughput and latency per scenario](charts.svg)](charts.svg)\n",
        report::render_markdown(results)
    );
    std::fs::write(tmp.join("tables.md"), md).context("cannot write tables.md")?;
    std::fs::write(tmp.join("charts.svg"), charts::render(results))
        .context("cannot write charts.svg")?;

    for n in 1.. {
        let candidate = if n == 1 {
            results_dir.join(&name)
        } else {
            results_dir.join(format!("{name}-{n}"))
        };
        // rename(2) would replace an empty directory, so never rename onto an existing name.
        if candidate.exists() {
            continue;
        }
        match std::fs::rename(&tmp, &candidate) {
            Ok(()) => {
                guard.0 = None;
                return Ok(candidate);
            }
            // Another run took the name between the check and the rename.
            Err(_) if candidate.exists() => continue,
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("cannot move {} to {}", tmp.display(), candidate.display())
                })
            }
        }
    }
    unreachable!("the suffix loop only ends by returning")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn info(commit: &str) -> RunInfo {
        let settings = Settings {
            commit_id: commit.to_string(),
            ..Settings::default()
        };
        let start = Utc.with_ymd_and_hms(2025, 1, 2, 3, 4, 5).unwrap();
        RunInfo::new(
            "20250102T030405Z-000000",
            &settings,
            Path::new("scenarios/offline"),
            HostFacts::collect(Some("20.10.0".into())),
            start,
            start + chrono::Duration::seconds(90),
        )
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn writes_every_file_and_leaves_no_temp_dir() {
        let root = tempfile::tempdir().unwrap();
        let results_dir = root.path().join("results");
        let results = crate::report::tests::sample();
        let dir = write_run(&results_dir, &info("abc1234"), &results).unwrap();
        assert_eq!(dir, results_dir.join("20250102T030405Z-abc1234"));
        assert_eq!(entries(&results_dir), ["20250102T030405Z-abc1234"]);
        assert_eq!(
            entries(&dir),
            [
                "01-no-proxy-baseline.json",
                "02-no-filters.json",
                "charts.svg",
                "run.json",
                "tables.md",
                "tables.txt"
            ]
        );
        let run: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(run["commit_id"], "abc1234");
        assert_eq!(run["started_at"], "2025-01-02T03:04:05Z");
        assert_eq!(run["ended_at"], "2025-01-02T03:05:35Z");
        assert_eq!(run["settings"]["num_records"], 10_000_000);
        assert_eq!(run["host"]["docker_engine_version"], "20.10.0");
        assert_eq!(run["tool_version"], env!("CARGO_PKG_VERSION"));
        let back: ScenarioResult =
            serde_json::from_str(&std::fs::read_to_string(dir.join("02-no-filters.json")).unwrap())
                .unwrap();
        assert_eq!(back, results[1]);
        assert_eq!(
            std::fs::read_to_string(dir.join("tables.txt")).unwrap(),
            report::render_text(&results)
        );
        let md = std::fs::read_to_string(dir.join("tables.md")).unwrap();
        assert!(md.contains("](charts.svg)"), "{md}");
        let svg = std::fs::read_to_string(dir.join("charts.svg")).unwrap();
        crate::charts::check_well_formed(&svg).unwrap();
    }

    #[test]
    fn never_overwrites_an_existing_run() {
        let root = tempfile::tempdir().unwrap();
        let results = crate::report::tests::sample();
        let first = write_run(root.path(), &info("abc"), &results).unwrap();
        // An empty directory squatting on the next name is not replaced either.
        std::fs::create_dir(root.path().join("20250102T030405Z-abc-2")).unwrap();
        let second = write_run(root.path(), &info("abc"), &results[..1]).unwrap();
        assert_eq!(second, root.path().join("20250102T030405Z-abc-3"));
        assert_eq!(entries(&first).len(), 6);
        assert_eq!(entries(&second).len(), 5);
        assert!(entries(&root.path().join("20250102T030405Z-abc-2")).is_empty());
        assert_eq!(
            entries(root.path()),
            [
                "20250102T030405Z-abc",
                "20250102T030405Z-abc-2",
                "20250102T030405Z-abc-3"
            ]
        );
    }

    #[test]
    fn a_failed_write_leaves_nothing_behind() {
        let root = tempfile::tempdir().unwrap();
        let mut results = crate::report::tests::sample();
        // A scenario name that cannot be a file name makes the write fail midway.
        results[1].name = "no/such/dir".to_string();
        let err = write_run(root.path(), &info("abc"), &results).unwrap_err();
        assert!(format!("{err:#}").contains("no/such/dir.json"), "{err:#}");
        assert!(
            entries(root.path()).is_empty(),
            "{:?}",
            entries(root.path())
        );
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
    fn meminfo_total_is_read_in_bytes() {
        let text = "MemTotal:        8040292 kB\nMemFree:  1 kB\n";
        assert_eq!(mem_total_bytes(text), Some(8040292 * 1024));
        assert_eq!(mem_total_bytes("nothing"), None);
    }
}
