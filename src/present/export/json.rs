//! `run.json` and one `<scenario>.json` per scenario: every recorded value, read back by
//! `crate::present::results` through the same types, each file with its layout's version
//! (`crate::present::results::SCHEMA_VERSION`).

use anyhow::{Context, Result};
use serde::Serialize;

use super::Exporter;
use crate::model::run::RunInfo;
use crate::model::ScenarioResult;
use crate::present::results::{Versioned, RUN_FILE};

/// The machine-readable records.
pub(crate) struct Json;

/// `value` as the file `name`, with its layout's version.
pub(super) fn pretty<T: Serialize>(name: String, value: &T) -> Result<(String, String)> {
    let mut text = serde_json::to_string_pretty(&Versioned::new(value))
        .with_context(|| format!("cannot serialise {name}"))?;
    text.push('\n');
    Ok((name, text))
}

impl Exporter for Json {
    fn files(&self, info: &RunInfo, results: &[ScenarioResult]) -> Result<Vec<(String, String)>> {
        let mut files = vec![pretty(RUN_FILE.to_string(), info)?];
        for (r, stem) in results.iter().zip(file_stems(results)) {
            files.push(pretty(format!("{stem}.json"), r)?);
        }
        Ok(files)
    }
}

/// `<scenario>`, or with a matrix `<scenario>@<n>`, n numbering the run's distinct combinations
/// in order (the values themselves, such as image references, may not be file names; the record
/// inside holds them): the names of each scenario's files, `.json` and others.
pub(super) fn file_stems(results: &[ScenarioResult]) -> Vec<String> {
    let mut combinations: Vec<&crate::settings::matrix::Combination> = Vec::new();
    for r in results {
        if !combinations.contains(&&r.combination) {
            combinations.push(&r.combination);
        }
    }
    let width = combinations.len().to_string().len().max(2);
    results
        .iter()
        .map(|r| {
            if r.combination.is_empty() {
                r.name.clone()
            } else {
                let n = combinations
                    .iter()
                    .position(|c| *c == &r.combination)
                    .unwrap_or(0)
                    + 1;
                format!("{}@{n:0width$}", r.name)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_matrix_numbers_its_combinations_in_the_file_names() {
        let mut results = crate::present::report::tests::sample();
        assert_eq!(
            file_stems(&results),
            ["01-no-proxy-baseline", "02-no-filters"]
        );
        let mut more = results.clone();
        for (r, size) in results.iter_mut().zip(["100", "100"]) {
            r.combination.insert("RECORD_SIZE".into(), size.into());
        }
        for (r, size) in more.iter_mut().zip(["1000", "1000"]) {
            r.combination.insert("RECORD_SIZE".into(), size.into());
        }
        results.extend(more);
        assert_eq!(
            file_stems(&results),
            [
                "01-no-proxy-baseline@01",
                "02-no-filters@01",
                "01-no-proxy-baseline@02",
                "02-no-filters@02"
            ]
        );
    }
}
