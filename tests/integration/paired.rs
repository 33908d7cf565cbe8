//! `benches/paired-cost.py`: two Kroxylicious proxies in front of one broker, each with its own
//! producer and end-to-end consumer at one rate, measured in the same phases, so each phase's
//! ratio of their CPU per MB has the host's speed cancelled from it.

use crate::common;
use common::engine_lock;

use std::process::{Command, Output};

fn bench(vars: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(common::repo().join("benches/paired-cost.py"));
    cmd.env("PERF_TESTS_BIN", env!("CARGO_BIN_EXE_perf-tests"))
        .env("RATE", "500")
        .env("SECONDS", "1")
        .env("REPS", "2")
        .env("WARM_UP_SECONDS", "0");
    cmd.envs(vars.iter().copied()).output().unwrap()
}

fn containers(filter: &str) -> String {
    let out = Command::new("docker")
        .args(["ps", "-aq", "--filter", filter])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The label the bench put on its containers, from its first line.
fn label_of(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .split("containers labelled ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no label in {stdout}"))
        .to_string()
}

/// At its smallest, as a user runs it: a proxy without filters against one applying the transform
/// pair, each phase's two CPU figures, their ratio and the VM's steal, the campaign's interval;
/// bad settings refused before anything starts; a side whose proxy JVM will not start named with
/// the JVM's own words; nothing left running either way.
#[test]
fn the_paired_bench_measures_two_proxies_in_the_same_phases() {
    let _lock = engine_lock(false);
    for (vars, message) in [
        (&[("RATE", "fast")][..], "RATE=fast: write a whole number"),
        (
            &[("REPS", "1")],
            "REPS=1: write a whole number of at least 2",
        ),
        (
            &[("B_IMAGE", "perf-tests-test/no-such-proxy:1")],
            "B_IMAGE=perf-tests-test/no-such-proxy:1: no such image here",
        ),
        (
            &[("PERF_TESTS_BIN", "/nonexistent/perf-tests")],
            "PERF_TESTS_BIN=/nonexistent/perf-tests: not an executable file",
        ),
    ] {
        let refused = bench(vars);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{vars:?}: {stderr}");
        assert!(stderr.contains(message), "{vars:?}: {stderr}");
    }

    // Side B's JVM refuses the option and exits: the bench says so at once, with its log.
    let out = bench(&[("B_JAVA_OPTIONS", "-XX:+NoSuchOption")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("side B's proxy (perf-tests/kroxylicious:0.12.0) exited")
            && stderr.contains("NoSuchOption"),
        "{stderr}"
    );
    assert_eq!(
        containers(&format!("label={}", label_of(&out))),
        "",
        "a failed side left containers"
    );

    let out = bench(&[("A_TRANSFORMS", "0"), ("B_TRANSFORMS", "1")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(
            "transform pair x0; side B: perf-tests/kroxylicious:0.12.0, transform pair x1"
        ),
        "{stdout}"
    );
    let phases: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("campaign 1 phase "))
        .collect();
    assert_eq!(phases.len(), 2, "{stdout}");
    for line in &phases {
        // `A <cpu> CPU s <mc> mc per MB/s  B <cpu> CPU s <mc> mc per MB/s  B/A <ratio> ... steal <n>%`
        let words: Vec<&str> = line
            .split(": ")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .collect();
        let after = |key: &str| -> f64 {
            let at = words.iter().position(|w| *w == key);
            let word = at
                .and_then(|i| words.get(i + 1))
                .unwrap_or_else(|| panic!("{key} in {line}"));
            word.trim_end_matches('%')
                .parse()
                .unwrap_or_else(|_| panic!("{key} in {line}"))
        };
        // Each proxy carried its side's records in the phase, so each spent CPU on them.
        let (cpu_a, cpu_b) = (after("A"), after("B"));
        assert!(cpu_a > 0.0 && cpu_b > 0.0, "{line}");
        let (mc_a, mc_b): (f64, f64) = (words[4].parse().unwrap(), words[12].parse().unwrap());
        // Both sides carried the same megabytes: the costs are in the CPU's proportion.
        assert!(
            (mc_b / mc_a - cpu_b / cpu_a).abs() < 0.02 * cpu_b / cpu_a + 0.01,
            "{line}"
        );
        assert!(
            (after("B/A") - mc_b / mc_a).abs() < 0.01 * mc_b / mc_a + 0.005,
            "{line}"
        );
        assert!((0.0..=100.0).contains(&after("steal")), "{line}");
    }
    assert!(
        stdout.contains("campaign 1: B/A ") && stdout.contains("95% interval"),
        "{stdout}"
    );
    assert_eq!(
        containers(&format!("label={}", label_of(&out))),
        "",
        "the bench left containers"
    );
}
