//! Writing a run's results directory: each format is an [`Exporter`] (JSON records, a long CSV,
//! plain-text tables, Markdown tables, SVG charts, the HTML report), and [`write_run`] writes what
//! every exporter gives.
//!
//! Everything is written into a hidden temporary directory inside the results directory and then
//! renamed into place, so a results directory is either complete or absent. A run never replaces
//! another: when the name is taken, `-2`, `-3`, ... is appended.

pub mod ab;
pub mod csv;
pub mod histograms;
pub mod html;
pub mod json;
pub mod markdown;
pub mod profiles;
pub mod series;
pub mod sizing;
pub mod svg;
pub mod text;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::model::run::RunInfo;
use crate::model::ScenarioResult;
use crate::present::results::run_dir_name;

/// One output format of a run.
pub(crate) trait Exporter {
    /// The files it writes into the run directory: (file name, contents).
    fn files(&self, info: &RunInfo, results: &[ScenarioResult]) -> Result<Vec<(String, String)>>;
}

/// Every format a run directory holds.
pub(crate) fn exporters() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(json::Json),
        Box::new(csv::Csv),
        Box::new(text::Text),
        Box::new(markdown::Markdown),
        Box::new(svg::Svg),
        Box::new(series::Series),
        Box::new(sizing::SizingFiles),
        Box::new(histograms::Histograms),
        Box::new(html::Html),
        Box::new(ab::Ab),
    ]
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

/// Writes the results directory of a run and returns its path.
pub(crate) fn write_run(
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

    for exporter in exporters() {
        for (file, text) in exporter.files(info, results)? {
            let path = tmp.join(&file);
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    // The profiles recorded during the run (PROFILE), kept aside until now, and what they show.
    let staging = crate::present::results::profiles_staging(results_dir, &info.run_id);
    if staging.is_dir() {
        let dir = tmp.join("profiles");
        std::fs::rename(&staging, &dir)
            .with_context(|| format!("cannot move {} to {}", staging.display(), dir.display()))?;
        let rendered = crate::world::profile::tools(std::env::consts::ARCH)
            .and_then(|tools| profiles::render(&dir, results, &tools));
        if let Err(e) = rendered {
            // The recordings are kept: a flame graph can be made of them by hand.
            crate::progress::notice(&format!(
                "warning: profiles: cannot make the flame graphs and the summary: {e:#}; the \
                 recordings are kept in profiles/"
            ));
        }
    }

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
    use crate::present::results::tests::info;

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
        let results = crate::present::report::tests::sample();
        let dir = write_run(&results_dir, &info("abc1234"), &results).unwrap();
        assert_eq!(dir, results_dir.join("20250102T030405Z-abc1234"));
        assert_eq!(entries(&results_dir), ["20250102T030405Z-abc1234"]);
        assert_eq!(
            entries(&dir),
            [
                "01-no-proxy-baseline.json",
                "02-no-filters.json",
                "charts.svg",
                "metrics.csv",
                "report.html",
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
        assert_eq!(run["nodes"][0]["engine_version"], "20.10.0");
        assert_eq!(run["tool_version"], env!("CARGO_PKG_VERSION"));
        let back: ScenarioResult =
            serde_json::from_str(&std::fs::read_to_string(dir.join("02-no-filters.json")).unwrap())
                .unwrap();
        assert_eq!(back, results[1]);
        assert_eq!(
            std::fs::read_to_string(dir.join("tables.txt")).unwrap(),
            text::render(&results, None)
        );
        let md = std::fs::read_to_string(dir.join("tables.md")).unwrap();
        assert!(md.contains("](charts.svg)"), "{md}");
        let svg = std::fs::read_to_string(dir.join("charts.svg")).unwrap();
        roxmltree::Document::parse(&svg).unwrap();
    }

    #[test]
    fn never_overwrites_an_existing_run() {
        let root = tempfile::tempdir().unwrap();
        let results = crate::present::report::tests::sample();
        let first = write_run(root.path(), &info("abc"), &results).unwrap();
        // An empty directory squatting on the next name is not replaced either.
        std::fs::create_dir(root.path().join("20250102T030405Z-abc-2")).unwrap();
        let second = write_run(root.path(), &info("abc"), &results[..1]).unwrap();
        assert_eq!(second, root.path().join("20250102T030405Z-abc-3"));
        assert_eq!(entries(&first).len(), 8);
        assert_eq!(entries(&second).len(), 7);
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
        let mut results = crate::present::report::tests::sample();
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
}
