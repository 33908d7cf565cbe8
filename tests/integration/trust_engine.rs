//! Repetitions, resources, charts and `compare` on real runs of the default suite's baseline
//! (`scenarios/kroxylicious`, 01: the broker alone).
//!
//! A/A: the same scenario measured in two runs of five repetitions, one after the other, must
//! not be reported as a regression beyond half its median, although five a side are enough for
//! a smaller one to be found (the comparison states the change it could have detected), and the
//! comparison must say that the sides were not interleaved. A run whose producer is limited to
//! 1000 rec/s (THROUGHPUT) really is slower; against the first it must be a significant
//! regression, with the settings that differ named. Pooled runs alternated in time are the
//! campaign script's test below.
//!
//! Identical sides still give a significant difference by chance: with 5 a side and Holm over
//! the two primary rates, one rate's sides must not overlap but for one pair (U ≤ 1, one-sided
//! 2/252), at most 1.6% of pairs of sides when the noise hits both alike. So the A/A here is
//! judged with `--threshold 50`: a regression must also be a change of the median by more than
//! half, which identical code on an idle machine does not make (the campaigns in PERFORMANCE.md
//! measure the false-alarm rate at the default threshold; `compare.rs` beside this checks the
//! statistics on fixed samples). The A/A test runs alone (`.config/nextest.toml`) so that other
//! tests' load does not fall on one side.

use crate::common;
use common::engine_lock;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

const SCENARIO: &str = "01-no-proxy-baseline";

fn perf_tests(results: &Path, envs: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = common::bin();
    cmd.args(args)
        .env("TEST", "01.*")
        .env("NUM_RECORDS", "3e3")
        .env("WARM_UP_NUM_RECORDS_POST_BROKER_START", "200")
        .env("WARM_UP_NUM_RECORDS_PRE_TEST", "200")
        .env("REPEAT", "5")
        // Three runs: the iperf3 ceiling before each is not what this test checks.
        .env("NETWORK_CEILING", "0")
        .env("RESULTS_DIR", results)
        .env("SCENARIOS", "scenarios/kroxylicious");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// Runs the baseline into `results` and returns the run directory.
fn run(results: &Path, envs: &[(&str, &str)]) -> PathBuf {
    let out = perf_tests(results, envs, &["run"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "run failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Results: "))
        .expect("the run names its results directory");
    PathBuf::from(dir)
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn same_runs_agree_and_a_throttled_producer_is_a_regression() {
    let _lock = engine_lock(false);
    let root = tempfile::tempdir().unwrap();
    let (a, b, slow) = (
        root.path().join("a"),
        root.path().join("b"),
        root.path().join("slow"),
    );
    let run_a = run(&a, &[]);
    run(&b, &[]);

    // Every repetition is kept; the summary is their median.
    let result = json(&run_a.join(format!("{SCENARIO}.json")));
    let reps = result["repetitions"].as_array().unwrap();
    assert_eq!(reps.len(), 5, "{result}");
    let mut rates: Vec<f64> = reps
        .iter()
        .map(|r| r["producer"]["rate_rec_s"].as_f64().unwrap())
        .collect();
    rates.sort_by(f64::total_cmp);
    assert_eq!(
        result["measurement"]["producer"]["rate_rec_s"].as_f64(),
        Some(rates[2])
    );
    for r in reps {
        assert_eq!(r["integrity"]["consumed"], 3000, "{r}");
    }

    // The run-wide broker was sampled while the workload ran, and it worked.
    let broker = common::service_entry(&result["resources"], "broker1");
    assert_eq!(broker["run_wide"], true);
    assert!(broker["cpu_pct_mean"].as_f64().unwrap() > 0.0, "{broker}");
    assert!(broker["cpu_pct_peak"].as_f64().unwrap() > 0.0, "{broker}");
    assert!(broker["mem_mib_mean"].as_f64().unwrap() > 0.0, "{broker}");
    // 3000 records of 1 KiB reached the broker in every repetition.
    assert!(broker["net_rx_mib"].as_f64().unwrap() > 2.0, "{broker}");
    let tables = std::fs::read_to_string(run_a.join("tables.txt")).unwrap();
    let row = tables
        .lines()
        .skip_while(|l| *l != "Resources")
        .find(|l| l.starts_with(SCENARIO))
        .unwrap_or_else(|| panic!("no resources row in\n{tables}"));
    assert!(row.contains("broker1 (run-wide)"), "{row}");
    assert!(tables.contains("Runs"), "{tables}");

    // One throughput bar for the one scenario, with its error bar.
    let svg = std::fs::read_to_string(run_a.join("charts.svg")).unwrap();
    roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(svg.matches(r#"class="bar throughput""#).count(), 1);
    assert!(svg.contains(r#"class="error""#));
    assert!(std::fs::read_to_string(run_a.join("tables.md"))
        .unwrap()
        .contains("](charts.svg)"));

    // A/A: no regression beyond half the median, though a smaller change could have been found;
    // one side measured after the other is said.
    let out = perf_tests(
        root.path(),
        &[],
        &[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--format",
            "plain",
            "--threshold",
            "50",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.starts_with("no significant regression beyond 50%"),
        "{stdout}"
    );
    assert!(
        stdout.contains("(5 base vs 5 new repetitions; Holm over 2 primary tests)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the sides were not interleaved"),
        "{stdout}"
    );
    for metric in ["Rate rec/s", "Consumed rec/s"] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(SCENARIO) && l.contains(metric) && l.contains("primary"))
            .unwrap_or_else(|| panic!("no primary {metric} row in\n{stdout}"));
        assert!(!row.contains("n/a"), "{row}");
        assert!(row.contains('%'), "a detectable change is stated: {row}");
    }

    // The producer limited to 1000 rec/s: a real, large slowdown of the same path.
    let run_slow = run(&slow, &[("THROUGHPUT", "1000")]);
    let slow_result = json(&run_slow.join(format!("{SCENARIO}.json")));
    let slow_rate = slow_result["measurement"]["producer"]["rate_rec_s"]
        .as_f64()
        .unwrap();
    assert!(slow_rate < 1100.0, "{slow_rate}");
    let out = perf_tests(
        root.path(),
        &[],
        &[
            "compare",
            root.path().join("base").to_str().unwrap(),
            run_slow.to_str().unwrap(),
        ],
    );
    // `base` does not exist yet: refused, naming it.
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("base does not exist"));

    // The first run is the base.
    let base = root.path().join("base");
    std::fs::rename(&a, &base).unwrap();
    let out = perf_tests(
        root.path(),
        &[],
        &[
            "compare",
            base.to_str().unwrap(),
            run_slow.to_str().unwrap(),
            "--format",
            "markdown",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let summary = stdout.lines().nth(1).unwrap();
    assert!(
        summary.contains(&format!("{SCENARIO} Rate rec/s -")),
        "{summary}"
    );
    assert!(
        summary.contains("(5 base vs 5 new repetitions; Holm over 2 primary tests)"),
        "{summary}"
    );
    assert!(
        stdout
            .contains("settings differ: THROUGHPUT is -1 in the base and 1000 in the new results"),
        "{stdout}"
    );
    assert!(
        stdout.contains("> **Warning:** the sides were not interleaved"),
        "{stdout}"
    );
}

/// The last lines of each run's log the campaign kept in `dir`, for a failure's message: the
/// directory goes with the test.
fn failed_runs(dir: &std::path::Path) -> String {
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    logs.iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(30)..].join("\n");
            format!("\n--- {}:\n{tail}", p.display())
        })
        .collect()
}

/// `benches/ab-campaign.sh` as a user runs it, at its smallest certain verdict: one campaign of
/// five runs a side of the default suite's baseline, side b's producer held to 500 rec/s (B_ENV), which
/// the comparison must find: five a side are the fewest with which it can find any change (Holm
/// over two primary rates), and five that do not overlap are significant (one-sided 1/252); a
/// rate a quarter or less of the other is beyond any threshold. The sides' runs alternate in
/// time, each side's runs are pooled (one repetition a run), and the summary counts the
/// regression found. It need not run alone: a slowdown to a quarter is beyond any neighbour's.
#[test]
fn the_ab_campaign_script_alternates_the_sides_and_counts_what_it_finds() {
    let _lock = engine_lock(false);
    let out_dir = tempfile::tempdir().unwrap();
    let script = common::repo().join("benches/ab-campaign.sh");
    let campaign = |bin: &str| {
        let mut cmd = std::process::Command::new(&script);
        for var in common::setting_vars() {
            cmd.env_remove(var);
        }
        cmd.env("PERF_TESTS_BIN", bin)
            .env("CAMPAIGNS", "1")
            .env("RUNS_PER_SIDE", "5")
            .env("B_ENV", "THROUGHPUT=500")
            .env("NUM_RECORDS", "1000")
            .env("SCENARIOS", "scenarios/kroxylicious")
            .env("TEST", "01.*")
            .env("NETWORK_CEILING", "0")
            .env("WARM_UP_NUM_RECORDS_POST_BROKER_START", "200")
            .env("WARM_UP_NUM_RECORDS_PRE_TEST", "200")
            .env("OUT", out_dir.path())
            .output()
            .unwrap()
    };
    let missing = campaign("/nonexistent/perf-tests");
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .contains("/nonexistent/perf-tests not found; run cargo build --release"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );

    let out = campaign(env!("CARGO_BIN_EXE_perf-tests"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{stderr}{}",
        failed_runs(out_dir.path())
    );
    let order: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("==> campaign 1 of 1: "))
        .collect();
    let expected: Vec<String> = (1..=5)
        .flat_map(|r| ["a", "b"].map(|side| format!("run {r} of 5, side {side}")))
        .collect();
    assert_eq!(order, expected);
    // The runs' own clocks say the same: a, b, a, b, ...; and side b ran at its setting.
    let runs = |side: &str| -> Vec<(String, i64)> {
        let dir = out_dir.path().join("campaign-1").join(side);
        let mut t: Vec<(String, i64)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| {
                let info: Value = serde_json::from_slice(
                    &std::fs::read(e.unwrap().path().join("run.json")).unwrap(),
                )
                .unwrap();
                (
                    info["started_at"].as_str().unwrap().to_string(),
                    info["settings"]["throughput"].as_i64().unwrap(),
                )
            })
            .collect();
        t.sort();
        t
    };
    let (a, b) = (runs("a"), runs("b"));
    assert_eq!((a.len(), b.len()), (5, 5));
    for i in 0..5 {
        assert!(a[i].0 < b[i].0, "{a:?} {b:?}");
        if i < 4 {
            assert!(b[i].0 < a[i + 1].0, "{a:?} {b:?}");
        }
        assert_eq!((a[i].1, b[i].1), (-1, 500));
    }
    let summary = std::fs::read_to_string(out_dir.path().join("summary.txt")).unwrap();
    assert!(summary.contains("campaign 1: exit 1: "), "{summary}");
    assert!(
        summary.contains("regressions found in 1 of 1 comparisons"),
        "{summary}"
    );
    let compare =
        std::fs::read_to_string(out_dir.path().join("campaign-1").join("compare.txt")).unwrap();
    assert!(
        compare.contains(&format!("{SCENARIO} Rate rec/s -")),
        "{compare}"
    );
    // Each run is one repetition: the pooled sides count five each.
    assert!(
        compare.contains("(5 base vs 5 new repetitions; Holm over 2 primary tests)"),
        "{compare}"
    );
    assert!(!compare.contains("not interleaved"), "{compare}");
    let spread = summary
        .lines()
        .find(|l| l.contains(SCENARIO) && l.contains("producer rec/s"))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(spread.trim_end().ends_with("%)"), "{spread}");
}
