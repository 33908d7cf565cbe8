//! Paired scenarios in the runner (`scenarios/kroxylicious-paired`): two Kroxylicious proxies in
//! front of the one broker, each side with its own producer and end-to-end consumer at
//! `THROUGHPUT`, measured in the same phases; each repetition a fresh pair measured in
//! `PAIR_PHASES` phases, B over A compared pair by pair. On the real engine with small counts.

use crate::common;
use common::{engine_lock, leftovers, only_run, perf_tests_run};

use serde_json::Value;

const RECORDS: u64 = 4000;
const RATE: u64 = 2000;
const RECORD_SIZE: u64 = 1024;

fn paired(results: &std::path::Path, env: &[(&str, &str)]) -> std::process::Output {
    let (records, rate) = (RECORDS.to_string(), RATE.to_string());
    let mut cmd = perf_tests_run(results);
    cmd.env("SCENARIOS", "scenarios/kroxylicious-paired")
        .env("MODE", "end-to-end")
        .env("THROUGHPUT", &rate)
        .env("NUM_RECORDS", &records)
        .env("NETWORK_CEILING", "0");
    // An empty value unsets the setting.
    for (var, value) in env {
        match value.is_empty() {
            true => cmd.env_remove(var),
            false => cmd.env(var, value),
        };
    }
    cmd.output().unwrap()
}

/// Settings that cannot compare two sides in one phase at one rate are refused before anything
/// starts, naming the setting and the scenario.
#[test]
fn a_paired_scenario_refuses_settings_that_cannot_pair_its_sides() {
    let results = tempfile::tempdir().unwrap();
    for (env, message) in [
        (
            &[("MODE", "produce-then-consume")][..],
            "MODE=produce-then-consume: its sides run at once, in MODE=end-to-end",
        ),
        (
            &[("THROUGHPUT", "-1")],
            "THROUGHPUT=-1: its sides' CPU per MB compares only at one rate",
        ),
        (
            &[("DURATION", "30s"), ("NUM_RECORDS", "")],
            "DURATION=30: a run bounded by time is costed with its warm-up",
        ),
    ] {
        let out = paired(results.path(), env);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{env:?}: {stderr}");
        assert!(
            stderr.contains("scenario 01-transform-filter is paired") && stderr.contains(message),
            "{env:?}: {stderr}"
        );
    }
    // Phases to pair and a threshold to judge only where a scenario is paired; a count of at
    // least one, a percent of at most 100.
    for (env, message) in [
        (
            &[
                ("PAIR_PHASES", "2"),
                ("SCENARIOS", "scenarios/kroxylicious"),
            ][..],
            "PAIR_PHASES=2: none of the selected scenarios is paired",
        ),
        (
            &[
                ("PAIR_THRESHOLD", "3"),
                ("SCENARIOS", "scenarios/kroxylicious"),
            ],
            "PAIR_THRESHOLD=3: none of the selected scenarios is paired",
        ),
        (
            &[("PAIR_THRESHOLD", "101")],
            "PAIR_THRESHOLD=\"101\": a percent is at most 100",
        ),
        (&[("PAIR_PHASES", "0")], "PAIR_PHASES=\"0\""),
        (&[("PAIR_PHASES", "101")], "PAIR_PHASES=\"101\": too large"),
    ] {
        let out = paired(results.path(), env);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{env:?}: {stderr}");
        assert!(stderr.contains(message), "{env:?}: {stderr}");
    }
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0);
}

/// The dry run shows each bring-up's phases and counts them in its estimate.
#[test]
fn a_paired_dry_run_shows_its_phases_and_counts_them_in_the_estimate() {
    let results = tempfile::tempdir().unwrap();
    let plan = |phases: &str| {
        let out = perf_tests_run(results.path())
            .arg("--dry-run")
            .env("SCENARIOS", "scenarios/kroxylicious-paired")
            .env("MODE", "end-to-end")
            .env("THROUGHPUT", "15000")
            .env("NUM_RECORDS", "3e5")
            .env("PAIR_PHASES", phases)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{stdout}");
        stdout
    };
    let minutes = |plan: &str| -> f64 {
        let line = plan.lines().find(|l| l.starts_with("Estimated")).unwrap();
        let about = line.split("about ").nth(1).unwrap();
        about.split(' ').next().unwrap().parse().unwrap()
    };
    let (one, four) = (plan("1"), plan("4"));
    assert!(
        one.contains("in the same phases, 1 to each bring-up"),
        "{one}"
    );
    assert!(!one.contains("each paired one's"), "{one}");
    assert!(
        four.contains("in the same phases, 4 to each bring-up"),
        "{four}"
    );
    assert!(
        four.contains("REPEAT=1, each paired one's in PAIR_PHASES=4 phases;"),
        "{four}"
    );
    // Three more phases of 20 s for each of the two scenarios: over two minutes more (both
    // estimates are in minutes, rounded).
    assert!(four.contains(" min ("), "{four}");
    assert!(minutes(&four) > minutes(&one) + 1.0, "{one}\n{four}");
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0);
}

/// Side B applies the transform pair twice, two pairs of two phases each: both sides' proxies
/// costed over each phase, each side's own records and rate, B over A per phase, per pair (its
/// phases' geometric mean) and over the pairs with an interval, in the tables and the results;
/// side B's JVM options reach its JVM (one it refuses stops the run, naming the service);
/// nothing left on the engine either way.
#[tokio::test]
async fn a_paired_scenario_measures_both_sides_in_one_phase_pair_by_pair() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let env = [("TEST", "02.*"), ("REPEAT", "2"), ("PAIR_PHASES", "2")];
    let out = paired(results.path(), &env);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let run_id = common::run_id(&stderr);
    assert_eq!(leftovers(&run_id).await, (0, 0));
    // Each phase is shown as it is measured; each bring-up has its two.
    let shown = stderr
        .lines()
        .filter(|l| l.starts_with("    pair: A "))
        .count();
    assert_eq!(shown, 4, "{stderr}");
    assert_eq!(stderr.matches("paired phase 2 of 2").count(), 2, "{stderr}");
    for row in [
        "Paired Sides",
        "Path mc per MB/s",
        "Intended P99 ms",
        "2 x 2 phases",
    ] {
        assert!(stdout.contains(row), "{row}: {stdout}");
    }

    let run = only_run(results.path());
    let json = std::fs::read(run.join("02-transform-filter-twice.json")).unwrap();
    let result: Value = serde_json::from_slice(&json).unwrap();
    let reps = result["repetitions"].as_array().unwrap();
    assert_eq!(reps.len(), 4);
    assert_eq!(result["pair"]["phases_per_pair"], 2);
    assert_eq!(result["pair"]["threshold_percent"], 5);
    let phases = result["pair"]["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 4, "{}", result["pair"]);
    let owners: Vec<u64> = phases.iter().map(|p| p["pair"].as_u64().unwrap()).collect();
    assert_eq!(owners, [1, 1, 2, 2]);
    // A later phase warms only its own topic: the first phase of each bring-up has the timed
    // warm-up's step, both have a measured phase of their own.
    for (i, rep) in reps.iter().enumerate() {
        let steps = &rep["steps_s"];
        assert!(
            steps["produce_and_consume"].as_f64().unwrap() > 0.0,
            "{steps}"
        );
        assert_eq!(steps["ready"].is_number(), i % 2 == 0, "phase {i}: {steps}");
    }
    for (rep, phase) in reps.iter().zip(phases) {
        // Each side moved its own records through its own proxy, held to the rate (never above
        // it; the lower bound is loose because a stall near a phase's end on a busy host lowers
        // the rate of a two-second phase without anything being wrong).
        for side in [&rep["producer"], &rep["pair"]["producer"]] {
            assert_eq!(side["sent"], RECORDS, "{side}");
            let rate = side["rate_rec_s"].as_f64().unwrap();
            assert!(
                rate > 0.5 * RATE as f64 && rate < 1.05 * RATE as f64,
                "{side}"
            );
        }
        assert_eq!(rep["pair"]["integrity"]["consumed"], RECORDS);
        // The one phase's cost holds both proxies and both sides' records.
        let cost = &rep["cost"][0];
        assert_eq!(cost["phase"], "produce_and_consume");
        assert_eq!(cost["records"], 2 * RECORDS, "{cost}");
        let cpu_of = |service: &str| {
            common::service_entry(&cost["services"], service)["cpu_s"]
                .as_f64()
                .unwrap()
        };
        let get = |k: &str| {
            phase[k]
                .as_f64()
                .unwrap_or_else(|| panic!("{k} in {phase}"))
        };
        assert_eq!(get("cpu_a_s"), cpu_of("kroxylicious-pair-a"));
        assert_eq!(get("cpu_b_s"), cpu_of("kroxylicious-pair-b-twice"));
        // Millicores per MB/s of each side's own traffic, produced and consumed.
        let mb = 2.0 * (RECORDS * RECORD_SIZE) as f64 / 1e6;
        for (cpu, mc) in [("cpu_a_s", "mc_per_mb_s_a"), ("cpu_b_s", "mc_per_mb_s_b")] {
            assert!(get(cpu) > 0.0, "{phase}");
            assert!(
                (get(mc) - get(cpu) * 1000.0 / mb).abs() < 1e-6 * get(mc),
                "{phase}"
            );
        }
        let ratio = get("mc_per_mb_s_b") / get("mc_per_mb_s_a");
        assert!((get("cpu_ratio") - ratio).abs() < 1e-9 * ratio, "{phase}");
        assert!(get("p99_a_ms") > 0.0 && get("p99_b_ms") > 0.0, "{phase}");
    }
    // Each pair is the geometric mean of its two phases; over the two pairs, the geometric mean
    // of theirs, inside its interval; the phases' spread within their pairs beside it.
    let cpu = &result["pair"]["cpu"];
    assert_eq!(cpu["pairs"], 2, "{cpu}");
    let logs: Vec<f64> = phases
        .iter()
        .map(|p| p["cpu_ratio"].as_f64().unwrap().ln())
        .collect();
    let pairs = [(logs[0] + logs[1]) / 2.0, (logs[2] + logs[3]) / 2.0];
    let mean = ((pairs[0] + pairs[1]) / 2.0).exp();
    let within = ((logs[0] - pairs[0]).powi(2)
        + (logs[1] - pairs[0]).powi(2)
        + (logs[2] - pairs[1]).powi(2)
        + (logs[3] - pairs[1]).powi(2))
        / 2.0;
    let within = (within.sqrt().exp() - 1.0) * 100.0;
    let got = cpu["within_pair_cv_percent"].as_f64().unwrap();
    assert!((got - within).abs() < 1e-9 * within.max(1.0), "{cpu}");
    let (low, high) = (cpu["low"].as_f64().unwrap(), cpu["high"].as_f64().unwrap());
    assert!(
        (cpu["ratio"].as_f64().unwrap() - mean).abs() < 1e-9 * mean,
        "{cpu}"
    );
    assert!(low <= mean && mean <= high, "{cpu}");
    assert!(cpu["verdict"].is_string(), "{cpu}");
    // Side A's path check holds: the transform's records through side A's endpoint.
    let check = &result["path_check"];
    assert!(check["records"].as_u64().unwrap() > 0, "{check}");
    assert_eq!(check["broker_ok"], check["records"], "{check}");
    assert_eq!(check["consumer_ok"], check["records"], "{check}");

    // Side B's JVM refuses the option it is given: the run stops naming side B's service.
    let results = tempfile::tempdir().unwrap();
    let out = paired(
        results.path(),
        &[
            ("TEST", "01.*"),
            ("PAIR_B_JAVA_OPTIONS", "-XX:+NoSuchOption"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("kroxylicious-pair-b") && stderr.contains("NoSuchOption"),
        "{stderr}"
    );
    assert_eq!(leftovers(&common::run_id(&stderr)).await, (0, 0));
}
