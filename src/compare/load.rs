//! One side of a comparison: a results directory named as BASE or NEW is, read back, its runs
//! pooled and, with a slice, limited to one value of a setting a matrix varied.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::analysis::compare::Side;
use crate::model::Measurement;
use crate::present::results::{read_run_info, read_scenarios, RUN_FILE};

/// Resolves `latest` / `previous` within `results_dir`; anything else is a path.
pub(crate) fn resolve(spec: &str, results_dir: &Path) -> Result<PathBuf> {
    let back = match spec {
        "latest" => 1,
        "previous" => 2,
        _ => return Ok(PathBuf::from(spec)),
    };
    let runs = run_dirs(results_dir).with_context(|| {
        format!(
            "`{spec}` names a run in RESULTS_DIR={}",
            results_dir.display()
        )
    })?;
    if runs.len() < back {
        bail!(
            "`{spec}` needs at least {back} run director{} in RESULTS_DIR={}, which holds {}",
            if back == 1 { "y" } else { "ies" },
            results_dir.display(),
            runs.len()
        );
    }
    Ok(runs[runs.len() - back].clone())
}

/// The run directories (holding run.json) directly inside `dir`, sorted by name.
pub(super) fn run_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read directory {}", dir.display()))?;
    let mut runs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .filter(|p| p.join(RUN_FILE).is_file())
        .collect();
    runs.sort();
    Ok(runs)
}

/// One slice of a matrix: the results measured at `var=value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    pub var: String,
    pub value: String,
}

impl std::str::FromStr for Slice {
    type Err = anyhow::Error;

    /// `VAR=value`; a value of a setting that may vary is read in its canonical form (`1e3` is
    /// `1000`), as results record it.
    fn from_str(s: &str) -> Result<Slice> {
        let Some((var, value)) = s.split_once('=') else {
            bail!("{s:?}: expected VAR=value, e.g. KROXYLICIOUS_IMAGE=perf-tests/kroxylicious:dev");
        };
        let axis = crate::settings::matrix::axis(var.trim(), &[value.to_string()])?;
        Ok(Slice {
            var: axis.var,
            value: axis.values[0].clone(),
        })
    }
}

/// The run directories of `dir`: itself when it is one, else the run directories it holds; an
/// error says what it is instead.
fn runs_of(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.exists() {
        bail!("results directory {} does not exist", dir.display());
    }
    if !dir.is_dir() {
        bail!(
            "{} is not a directory (expected a results directory)",
            dir.display()
        );
    }
    if dir.join(RUN_FILE).is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let runs = run_dirs(dir)?;
    if runs.is_empty() {
        bail!(
            "{} is not a results directory: it holds no run.json, nor run directories that do",
            dir.display()
        );
    }
    Ok(runs)
}

/// Reads one side: a run directory, or a directory of run directories (pooled); with `slice`,
/// only the results at that value, matched without the setting.
pub(crate) fn load(dir: &Path, slice: Option<&Slice>) -> Result<Side> {
    let runs = runs_of(dir)?;
    // The values of the slice's setting that other results have, for the error naming them.
    let mut seen: Vec<String> = Vec::new();
    let mut side = Side {
        dir: dir.to_path_buf(),
        runs: runs.clone(),
        runs_info: Vec::new(),
        scenarios: Vec::new(),
        rep_runs: Vec::new(),
        references: Vec::new(),
    };
    for (run_index, run) in runs.iter().enumerate() {
        side.runs_info.push(read_run_info(run)?);
        let scenarios = read_scenarios(run)?;
        if scenarios.is_empty() {
            bail!(
                "{} holds no scenario results (a <scenario>.json beside run.json)",
                run.display()
            );
        }
        for mut s in scenarios {
            if let Some(slice) = slice {
                let value = s.combination.remove(&slice.var);
                if value.as_ref() != Some(&slice.value) {
                    seen.extend(value.filter(|v| !seen.contains(v)));
                    continue;
                }
            }
            let key = s.label();
            if s.reference && !side.references.contains(&key) {
                side.references.push(key.clone());
            }
            let reps: Vec<Measurement> = s.all_measurements().into_iter().cloned().collect();
            let from = vec![run_index; reps.len()];
            match side.scenarios.iter().position(|(n, _)| *n == key) {
                Some(i) => {
                    side.scenarios[i].1.extend(reps);
                    side.rep_runs[i].extend(from);
                }
                None => {
                    side.scenarios.push((key, reps));
                    side.rep_runs.push(from);
                }
            }
        }
    }
    if let (Some(slice), true) = (slice, side.scenarios.is_empty()) {
        bail!(
            "{}: no result was measured at {}={} ({})",
            dir.display(),
            slice.var,
            slice.value,
            if seen.is_empty() {
                format!("{} does not vary there", slice.var)
            } else {
                format!("its values there: {}", seen.join(", "))
            }
        );
    }
    Ok(side)
}
