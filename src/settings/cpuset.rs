//! CPU lists as Linux and the engine write them (`0`, `0-1`, `0,2-3`): where a container may run.

use anyhow::{bail, Result};

/// Whether `text` is a CPU list (`0`, `0-3`, `0,2-3`).
pub(crate) fn is_cpu_list(text: &str) -> bool {
    text.split(',').all(|part| {
        let number = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        match part.split_once('-') {
            Some((lo, hi)) => number(lo) && number(hi),
            None => number(part),
        }
    })
}

/// The highest CPU a list names; `None` for a malformed list.
pub(crate) fn highest(text: &str) -> Option<usize> {
    if !is_cpu_list(text) {
        return None;
    }
    text.split([',', '-']).filter_map(|n| n.parse().ok()).max()
}

/// Checks that every CPU `text` names exists on `machine` (say `the engine`), which has `cpus`
/// CPUs (numbered from 0).
pub(crate) fn check_exists(var: &str, text: &str, cpus: usize, machine: &str) -> Result<()> {
    match highest(text) {
        Some(top) if top < cpus => Ok(()),
        Some(top) => bail!(
            "{var}={text:?}: CPU {top} does not exist; {machine} has {cpus} CPUs (0-{})",
            cpus.saturating_sub(1)
        ),
        None => bail!("{var}={text:?}: expected CPU numbers and ranges such as 0, 0-1 or 0,2"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        for good in ["0", "1", "0-1", "0,2", "0-3,8,10-11"] {
            assert!(is_cpu_list(good), "{good}");
        }
        for bad in ["", "a", "0-", "-1", "0,,1", "0-1-2", " 0", "1.5"] {
            assert!(!is_cpu_list(bad), "{bad}");
        }
        assert_eq!(highest("0-3,8,10-11"), Some(11));
        assert_eq!(highest("x"), None);
    }

    #[test]
    fn cpus_the_engine_lacks_are_named() {
        assert!(check_exists("WORKLOAD_CPUSET", "1", 2, "the engine").is_ok());
        let err = check_exists("WORKLOAD_CPUSET", "0,3", 2, "the engine")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "WORKLOAD_CPUSET=\"0,3\": CPU 3 does not exist; the engine has 2 CPUs (0-1)"
        );
    }
}
