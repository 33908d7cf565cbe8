//! Matrices: settings given as lists of values, and the combinations a run measures.
//!
//! A setting given as a list (`RECORD_SIZE=100,1024`, a repeated flag, or an entry of
//! `matrix:` in suite.yaml) is an axis; a run measures every selected scenario at every
//! combination of the axes' values. Only the settings a scenario's measurement reads may vary
//! ([`table::varying`]); the others (REPEAT, DRIVER, the cpusets, ...) hold for the whole run.

use std::collections::BTreeMap;

use anyhow::{bail, Result};

pub(crate) use crate::settings::Axis;
use crate::settings::{table, Settings};

/// Most combinations one run may have: far beyond a sensible run, and a guard against a
/// mistyped list multiplying into days of measurement.
pub(crate) const MAX_COMBINATIONS: usize = 1000;

/// One combination of the axes' values: setting name -> value. Empty without a matrix.
pub(crate) type Combination = BTreeMap<String, String>;

/// `VAR=value, VAR=value`, the way tables and progress lines name a combination.
pub(crate) fn label(combination: &Combination) -> String {
    combination
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Sets one varying setting from its text, with the same parsing and errors as the flag.
pub(crate) fn set(settings: &mut Settings, var: &str, value: &str) -> Result<()> {
    match table::find(var) {
        Some(setting) if setting.varies() => setting.set(settings, value),
        _ => bail!("{}", table::cannot_vary(var)),
    }
}

/// An axis of `var` over `values`: each value parsed as the setting parses it and kept in its
/// canonical form; a repeated value, an empty list or a setting that cannot vary is refused.
pub(crate) fn axis(var: &str, values: &[String]) -> Result<Axis> {
    let setting = match table::find(var) {
        Some(setting) if setting.varies() => setting,
        _ => bail!("{}", table::cannot_vary(var)),
    };
    if values.is_empty() {
        bail!("{var}: an empty list of values");
    }
    let mut canonical: Vec<String> = Vec::with_capacity(values.len());
    for value in values {
        let c = setting.canonical(value)?;
        if canonical.contains(&c) {
            bail!("{var} lists the value {c:?} twice");
        }
        canonical.push(c);
    }
    Ok(Axis {
        var: var.to_string(),
        values: canonical,
    })
}

/// The run's axes: the suite's (`matrix:` in suite.yaml), except those of settings given on the
/// command line or in the environment, then the given lists of more than one value. A given
/// single value pins its setting, replacing the suite's list.
pub(crate) fn merge(suite: &[Axis], given: &[Axis]) -> Vec<Axis> {
    let mut axes: Vec<Axis> = suite
        .iter()
        .filter(|a| !given.iter().any(|g| g.var == a.var))
        .cloned()
        .collect();
    axes.extend(given.iter().filter(|a| a.values.len() > 1).cloned());
    axes
}

/// Every combination of the axes' values, the first axis varying slowest; one empty
/// combination without axes. More than [`MAX_COMBINATIONS`] is refused, naming the axes.
pub(crate) fn combinations(axes: &[Axis]) -> Result<Vec<Combination>> {
    let count = axes
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()));
    match count {
        Some(n) if n <= MAX_COMBINATIONS => {}
        _ => {
            let sizes: Vec<String> = axes
                .iter()
                .map(|a| format!("{} ({} values)", a.var, a.values.len()))
                .collect();
            bail!(
                "the matrix has more than {MAX_COMBINATIONS} combinations: {}",
                sizes.join(" x ")
            );
        }
    }
    let mut all = vec![Combination::new()];
    for a in axes {
        all = all
            .into_iter()
            .flat_map(|c| {
                a.values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.insert(a.var.clone(), v.clone());
                    c
                })
            })
            .collect();
    }
    Ok(all)
}

/// The settings of one combination: `base` with the combination's values and no axes left.
pub(crate) fn apply(base: &Settings, combination: &Combination) -> Result<Settings> {
    let mut s = Settings {
        matrix: Vec::new(),
        ..base.clone()
    };
    for (var, value) in combination {
        set(&mut s, var, value)?;
    }
    Ok(s)
}

/// The varying settings of a run's results, in the order of the first result naming each.
pub(crate) fn varying<'a>(combinations: impl IntoIterator<Item = &'a Combination>) -> Vec<String> {
    let mut vars: Vec<String> = Vec::new();
    for c in combinations {
        for var in c.keys() {
            if !vars.contains(var) {
                vars.push(var.clone());
            }
        }
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn values_are_parsed_as_the_setting_parses_them_and_kept_canonical() {
        let a = axis("RECORD_SIZE", &strings(&["100", "1e3", "10_240"])).unwrap();
        assert_eq!(a.values, ["100", "1000", "10240"]);
        let a = axis("THROUGHPUT", &strings(&["2e4", "-1"])).unwrap();
        assert_eq!(a.values, ["20000", "-1"]);
        let a = axis(
            "PRODUCER_PROPERTIES",
            &strings(&["acks=all", "acks=1  linger.ms=5"]),
        )
        .unwrap();
        assert_eq!(a.values, ["acks=all", "acks=1 linger.ms=5"]);
    }

    #[test]
    fn bad_lists_are_refused_naming_the_setting() {
        let err = axis("REPEAT", &strings(&["1", "2"]))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("REPEAT cannot take a list"), "{err}");
        assert!(err.contains("RECORD_SIZE"), "{err}");
        let err = axis("RECORD_SIZE", &strings(&["1000", "1e3"]))
            .unwrap_err()
            .to_string();
        assert_eq!(err, "RECORD_SIZE lists the value \"1000\" twice");
        let err = axis("RECORD_SIZE", &strings(&["100", "big"]))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("RECORD_SIZE=\"big\""), "{err}");
        let err = axis("KROXYLICIOUS_IMAGE", &strings(&["a", " "]))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("KROXYLICIOUS_IMAGE="), "{err}");
        assert!(axis("NUM_RECORDS", &[]).is_err());
    }

    #[test]
    fn combinations_are_the_product_with_the_first_axis_slowest() {
        let axes = [
            axis("RECORD_SIZE", &strings(&["100", "1000"])).unwrap(),
            axis("THROUGHPUT", &strings(&["10", "20", "-1"])).unwrap(),
        ];
        let all = combinations(&axes).unwrap();
        assert_eq!(all.len(), 6);
        assert_eq!(label(&all[0]), "RECORD_SIZE=100, THROUGHPUT=10");
        assert_eq!(label(&all[2]), "RECORD_SIZE=100, THROUGHPUT=-1");
        assert_eq!(label(&all[3]), "RECORD_SIZE=1000, THROUGHPUT=10");
        assert_eq!(combinations(&[]).unwrap(), [Combination::new()]);
        let big = axis(
            "NUM_RECORDS",
            &(1..=40).map(|n| n.to_string()).collect::<Vec<_>>(),
        )
        .unwrap();
        let err = combinations(&[big.clone(), big.clone()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than 1000 combinations"), "{err}");
        assert!(
            err.contains("NUM_RECORDS (40 values) x NUM_RECORDS"),
            "{err}"
        );
    }

    #[test]
    fn given_settings_replace_the_suites_lists() {
        let suite = [
            axis("RECORD_SIZE", &strings(&["100", "1000"])).unwrap(),
            axis("THROUGHPUT", &strings(&["10", "20"])).unwrap(),
        ];
        // A single given value pins the setting; a given list replaces the suite's.
        let given = [
            axis("RECORD_SIZE", &strings(&["512"])).unwrap(),
            axis("NUM_RECORDS", &strings(&["1", "2"])).unwrap(),
        ];
        let vars: Vec<String> = merge(&suite, &given).into_iter().map(|a| a.var).collect();
        assert_eq!(vars, ["THROUGHPUT", "NUM_RECORDS"]);
    }

    #[test]
    fn a_combination_sets_its_values_over_the_base() {
        let base = Settings {
            matrix: vec![axis("RECORD_SIZE", &strings(&["1", "2"])).unwrap()],
            ..Settings::default()
        };
        let c: Combination = [
            ("RECORD_SIZE".to_string(), "2".to_string()),
            ("KROXYLICIOUS_IMAGE".to_string(), "proxy:b".to_string()),
        ]
        .into();
        let s = apply(&base, &c).unwrap();
        assert_eq!(s.record_size, 2);
        assert_eq!(s.kroxylicious_image, "proxy:b");
        assert!(s.matrix.is_empty());
        assert_eq!(s.num_records, base.num_records);
    }
}
