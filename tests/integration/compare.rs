//! `perf-tests compare` on synthetic results directories, through the binary.
use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};

const SCENARIOS: [&str; 2] = ["01-no-proxy-baseline", "02-kafka-proxy"];

/// One repetition whose rates are scaled by `speed` and latencies divided by it.
fn measurement(speed: f64) -> Value {
    json!({
        "producer": {
            "sent": 5000, "failed": 0,
            "rate_rec_s": 20000.0 * speed, "rate_mib_s": 19.53 * speed,
            "avg_lat_ms": 12.0 / speed, "max_lat_ms": 40.0 / speed,
            "p50_ms": 10.0 / speed, "p95_ms": 20.0 / speed, "p99_ms": 30.0 / speed,
            "p999_ms": 38.0 / speed, "elapsed_s": 0.25 / speed, "target_rec_s": -1.0
        },
        "consumer": {
            "consumed_mib": 4.88, "consumed_mib_s": 50.0 * speed, "consumed_recs": 5000,
            "consumed_rec_s": 51200.0 * speed, "rebalance_ms": 300.0, "fetch_ms": 90.0 / speed,
            "fetch_mib_s": 54.0 * speed, "fetch_rec_s": 55000.0 * speed
        },
        "integrity": {"requested": 5000, "acknowledged": 5000, "end_offsets": 5000, "consumed": 5000}
    })
}

/// Writes a run directory `root/name` whose scenarios ran at the given speeds, one per repetition.
fn write_run(root: &Path, name: &str, speeds: &[f64], num_records: u64) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let run = json!({
        "run_id": name,
        "settings": {"num_records": num_records, "record_size": 1024, "throughput": -1,
                     "producer_properties": [["acks", "all"]]},
        "host": {"hostname": "perf-host", "cpus": 2, "arch": "x86_64"},
        "started_at": "2025-01-02T03:04:05Z",
    });
    std::fs::write(dir.join("run.json"), run.to_string()).unwrap();
    for s in SCENARIOS {
        let reps: Vec<Value> = speeds.iter().map(|&v| measurement(v)).collect();
        let result = json!({
            "name": s, "description": "d", "bootstrap": "broker:9092", "topic": "t",
            "measurement": measurement(speeds[speeds.len() / 2]),
            "phases": {"up_s": 0.0, "setup_s": 0.0, "workload_s": 0.0, "down_s": 0.0, "total_s": 0.0},
            "images": {},
            "repetitions": reps,
        });
        std::fs::write(dir.join(format!("{s}.json")), result.to_string()).unwrap();
    }
    dir
}

fn compare(args: &[&str], results_dir: &Path) -> Output {
    common::bin()
        .arg("compare")
        .args(args)
        .env("RESULTS_DIR", results_dir)
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const STEADY: [f64; 5] = [1.0, 1.02, 0.98, 1.01, 0.99];

#[test]
fn the_same_data_twice_is_no_regression() {
    let root = tempfile::tempdir().unwrap();
    let a = write_run(root.path(), "a", &STEADY, 5000);
    let out = compare(&[a.to_str().unwrap(), a.to_str().unwrap()], root.path());
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    // Not a terminal: Markdown for a pull-request comment.
    assert!(stdout.starts_with("<!-- perf-tests -->\n**perf-tests compare**: no significant regression beyond 5% (5 base vs 5 new repetitions; Holm over 4 primary tests)"), "{stdout}");
    assert!(!stdout.contains("Warning"), "{stdout}");
    assert!(stdout.contains("<details>"));
    assert!(!stdout.contains("| regression"), "{stdout}");
}

#[test]
fn a_clear_slowdown_over_five_repetitions_is_a_regression() {
    let root = tempfile::tempdir().unwrap();
    let base = write_run(root.path(), "base", &STEADY, 5000);
    let slow: Vec<f64> = STEADY.iter().map(|s| s * 0.8).collect();
    let new = write_run(root.path(), "new", &slow, 5000);
    let out = compare(
        &[
            base.to_str().unwrap(),
            new.to_str().unwrap(),
            "--format",
            "plain",
        ],
        root.path(),
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let first = stdout.lines().next().unwrap();
    assert!(
        first.contains("significant regressions beyond 5%"),
        "{first}"
    );
    assert!(
        first.contains("01-no-proxy-baseline Rate rec/s -20.0%"),
        "{first}"
    );
    // Rebalance time did not change: not a regression.
    let rebalance = stdout
        .lines()
        .find(|l| l.starts_with("01-no-proxy-baseline") && l.contains("Rebalance"))
        .unwrap();
    assert!(!rebalance.contains("regression"), "{rebalance}");
    let p99 = stdout
        .lines()
        .find(|l| l.starts_with("02-kafka-proxy") && l.contains("Percentile99 "))
        .unwrap();
    // The latency moved too: reported as a secondary regression, which alone would not fail.
    assert!(
        p99.contains("+25.0%")
            && p99.contains("0.008")
            && p99.contains("secondary")
            && p99.ends_with("regression (secondary)"),
        "{p99}"
    );
    // A higher threshold forgives it.
    let out = compare(
        &[
            base.to_str().unwrap(),
            new.to_str().unwrap(),
            "--threshold",
            "30",
        ],
        root.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
}

/// Consumer-like spread (CV near 10%) of two sides of identical code, their runs interleaved.
const NOISY_A: [f64; 5] = [1.00, 0.91, 1.08, 0.97, 1.12];
const NOISY_B: [f64; 5] = [0.95, 1.05, 0.89, 1.10, 1.01];

#[test]
fn overlapping_noisy_sides_are_no_regression_and_the_same_shifted_by_a_third_is_one() {
    let root = tempfile::tempdir().unwrap();
    let a = write_run(root.path(), "a", &NOISY_A, 5000);
    let b = write_run(root.path(), "b", &NOISY_B, 5000);
    let compare_plain = |x: &Path, y: &Path| {
        compare(
            &[
                x.to_str().unwrap(),
                y.to_str().unwrap(),
                "--format",
                "plain",
            ],
            root.path(),
        )
    };
    let out = compare_plain(&a, &b);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.starts_with("no significant regression beyond 5%"),
        "{stdout}"
    );
    // Each primary rate states what change five noisy runs a side could have found.
    let row = stdout
        .lines()
        .find(|l| l.starts_with("01-no-proxy-baseline") && l.contains("Rate rec/s"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.contains("primary") && row.contains('%'), "{row}");

    // The same spread a third slower: no run of the new side reaches the base's slowest.
    let slow: Vec<f64> = NOISY_B.iter().map(|s| s * 0.67).collect();
    let c = write_run(root.path(), "c", &slow, 5000);
    let out = compare_plain(&a, &c);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout
            .lines()
            .next()
            .unwrap()
            .contains("01-no-proxy-baseline Rate rec/s -"),
        "{stdout}"
    );
}

#[test]
fn latest_and_previous_are_the_last_runs_by_name() {
    let root = tempfile::tempdir().unwrap();
    write_run(root.path(), "20250101T000000Z-aaa", &STEADY, 5000);
    let out = compare(&["previous", "latest"], root.path());
    assert_eq!(out.status.code(), Some(2));
    let (_, stderr) = text(&out);
    assert!(
        stderr.contains("`previous` needs at least 2 run directories"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&root.path().display().to_string()),
        "{stderr}"
    );

    let slow: Vec<f64> = STEADY.iter().map(|s| s * 0.5).collect();
    write_run(root.path(), "20250102T000000Z-bbb", &slow, 5000);
    // A hidden, half-written directory is not a run.
    std::fs::create_dir(root.path().join(".tmp-x")).unwrap();
    let out = compare(&["previous", "latest"], root.path());
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("20250101T000000Z-aaa") && stdout.contains("20250102T000000Z-bbb"));
}

#[test]
fn a_directory_of_runs_pools_their_repetitions() {
    let root = tempfile::tempdir().unwrap();
    for (i, s) in STEADY.iter().enumerate() {
        write_run(&root.path().join("base"), &format!("run{i}"), &[*s], 5000);
        write_run(
            &root.path().join("new"),
            &format!("run{i}"),
            &[s * 0.7],
            5000,
        );
    }
    let base = root.path().join("base");
    let new = root.path().join("new");
    let out = compare(
        &[base.to_str().unwrap(), new.to_str().unwrap()],
        root.path(),
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("(5 base vs 5 new repetitions; Holm over 4 primary tests)"),
        "{stdout}"
    );
}

#[test]
fn differing_settings_are_warned_about_in_the_output() {
    let root = tempfile::tempdir().unwrap();
    let a = write_run(root.path(), "a", &STEADY, 5000);
    let b = write_run(root.path(), "b", &STEADY, 10000);
    let out = compare(&[a.to_str().unwrap(), b.to_str().unwrap()], root.path());
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout.contains(
        "> **Warning:** settings differ: NUM_RECORDS is 5000 in the base and 10000 in the new results"
    ), "{stdout}");
}

#[test]
fn missing_or_malformed_results_are_refused_naming_the_path() {
    let root = tempfile::tempdir().unwrap();
    let good = write_run(root.path(), "good", &STEADY, 5000);
    let good = good.to_str().unwrap();
    let expect_refusal = |base: &Path, why: &str| {
        let out = compare(&[base.to_str().unwrap(), good], root.path());
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert!(stderr.contains("BASE"), "{stderr}");
        assert!(stderr.contains(why), "{why}: {stderr}");
    };

    let missing = root.path().join("nope");
    expect_refusal(
        &missing,
        &format!("results directory {} does not exist", missing.display()),
    );

    let empty = root.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    expect_refusal(
        &empty,
        &format!("{} is not a results directory", empty.display()),
    );

    let bad_run = write_run(root.path(), "bad-run", &STEADY, 5000);
    std::fs::write(bad_run.join("run.json"), "{ not json").unwrap();
    expect_refusal(
        &bad_run,
        &format!("{}: not valid JSON", bad_run.join("run.json").display()),
    );

    let bad_scenario = write_run(root.path(), "bad-scenario", &STEADY, 5000);
    let file = bad_scenario.join("02-kafka-proxy.json");
    std::fs::write(&file, r#"{"name": "02-kafka-proxy"}"#).unwrap();
    expect_refusal(
        &bad_scenario,
        &format!("{}: not a scenario result", file.display()),
    );
    expect_refusal(&bad_scenario, "missing field");

    let no_scenarios = root.path().join("no-scenarios");
    std::fs::create_dir(&no_scenarios).unwrap();
    std::fs::copy(
        Path::new(good).join("run.json"),
        no_scenarios.join("run.json"),
    )
    .unwrap();
    expect_refusal(&no_scenarios, "holds no scenario results");

    let out = compare(&[good, good, "--threshold", "-1"], root.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("--threshold"));
}
