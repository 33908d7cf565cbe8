//! Runs compared (`perf-tests compare`) against one base of the default suite's baseline and
//! plain proxy (01 and 02): five runs of one repetition, pooled (with Holm over the primary
//! tests, fewer than five a side could never reach significance):
//!
//! - A/A: the reference measured again, five runs of one repetition alternating with the
//!   base's, pooled, must not be a regression beyond half the median, although five a side could
//!   find a smaller one (the comparison states the change it could have detected), and the
//!   sides are interleaved, so a minute of a busier machine falls on both (one side measured
//!   after the other once saw the reference 59% slower all through). Identical sides still differ
//!   significantly by chance (one rate's sides must not overlap but for one pair, when the noise
//!   hits both alike), so it is judged with `--threshold 50`; the campaigns in PERFORMANCE.md
//!   measure the false-alarm rate at the default threshold.
//! - The path itself slowed: 02 again, five repetitions, with every proxy container throttled
//!   to 0.3 of a core in every 10 ms once it listens (the engine's CPU quota; this kernel has
//!   no netem for a network delay; a JVM started at that quota would outlast its health check;
//!   over the default 100 ms period a produce of a tenth of a second would get its share in one
//!   burst or none): a regression, exit 1.
//! - The broker slowed to a quarter of a core once it is warmed and the first scenario begins moves
//!   the reference scenario (01), and compare warns that the machine or the broker changed.
//! - The producer held to 1000 rec/s (THROUGHPUT): a regression, with the setting that differs
//!   named.
//!
//! One test, so the base is measured once; it runs alone (`.config/nextest.toml`): a
//! neighbour's load on some of the base repetitions widens their spread past what five
//! repetitions can tell apart.

use crate::common::{self, json};
use common::engine_lock;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::models::ContainerUpdateBody;
use bollard::query_parameters::ListContainersOptionsBuilder;

/// What the throttle needs to know of a run: its id, once announced, and whether its first
/// scenario has begun (the run-wide broker is then up and warmed: the first round starts it, so
/// the round's own line comes before).
#[derive(Default)]
struct Progress {
    run_id: Option<String>,
    scenarios: bool,
}

/// Records per measurement: a few hundred milliseconds of the plain proxy's produce.
const RECORDS: u64 = 3000;

/// Repetitions of each slowed run; of each base and A/A run (five of each, pooled).
const REPEAT: &str = "5";
const POOLED: &[(&str, &str)] = &[("REPEAT", "1")];

/// The reference scenario (the broker alone) and the plain proxy's.
const REFERENCE: &str = "01-no-proxy-baseline";
const PROXY: &str = "02-no-filters";

/// Runs the default suite's scenarios `test` selects into `results` with `env` beside the
/// test's settings, on a thread of its own (the test's runtime goes on throttling meanwhile);
/// returns the run directory. `progress` follows the run's lines as they come.
async fn run(
    test: &'static str,
    env: &'static [(&'static str, &'static str)],
    results: PathBuf,
    progress: Arc<Mutex<Progress>>,
) -> PathBuf {
    tokio::task::spawn_blocking(move || run_blocking(test, env, &results, progress))
        .await
        .unwrap()
}

fn run_blocking(
    test: &str,
    env: &[(&str, &str)],
    results: &Path,
    progress: Arc<Mutex<Progress>>,
) -> PathBuf {
    let mut cmd = common::bin();
    let mut child = common::small_run(&mut cmd, results)
        .env("SCENARIOS", "scenarios/kroxylicious")
        .env("TEST", test)
        .env("NUM_RECORDS", RECORDS.to_string())
        .env("REPEAT", REPEAT)
        .envs(env.iter().copied())
        .arg("run")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(id) = line.strip_prefix("==> run ") {
                progress.lock().unwrap().run_id = Some(id.trim().to_string());
            }
            if [REFERENCE, PROXY]
                .iter()
                .any(|s| line.starts_with(&format!("==> {s}: ")))
            {
                progress.lock().unwrap().scenarios = true;
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let status = child.wait().unwrap();
    let stderr = reader.join().unwrap();
    assert!(
        status.success(),
        "run failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    PathBuf::from(
        stdout
            .lines()
            .find_map(|l| l.strip_prefix("Results: "))
            .expect("the run names its results directory"),
    )
}

/// Whether container `id` listens on the Kafka port 9092 (0x2384): the suite's health check of
/// the proxy, which the runner runs itself, so the engine knows no health of its containers.
async fn listening(id: &str) -> bool {
    let id = id.to_string();
    tokio::task::spawn_blocking(move || common::listens_on_9092(&id))
        .await
        .unwrap()
}

/// Until `stop`, limits every running container of Compose service `service` of the run in
/// `progress` to `quota` of a core, once the run's first scenario has begun and the container
/// listens for Kafka clients (a JVM started at that quota would outlast the runner's wait for
/// it).
async fn throttle(
    service: &str,
    quota: f64,
    stop: Arc<AtomicBool>,
    progress: Arc<Mutex<Progress>>,
) -> usize {
    let docker = common::docker();
    let mut done = HashSet::new();
    while !stop.load(Ordering::Relaxed) {
        let id = {
            let p = progress.lock().unwrap();
            p.run_id.clone().filter(|_| p.scenarios)
        };
        let Some(id) = id else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let filter = HashMap::from([(
            "label",
            vec![
                format!("io.perf-tests.service={service}"),
                format!("io.perf-tests.run={id}"),
            ],
        )]);
        let listed = docker
            .list_containers(Some(
                ListContainersOptionsBuilder::default()
                    .filters(&filter)
                    .build(),
            ))
            .await
            .unwrap_or_default();
        for c in listed {
            let Some(id) = c.id else { continue };
            if done.contains(&id) {
                continue;
            }
            if !listening(&id).await {
                continue;
            }
            let limit = ContainerUpdateBody {
                cpu_period: Some(PERIOD_US),
                cpu_quota: Some((PERIOD_US as f64 * quota) as i64),
                ..Default::default()
            };
            if docker.update_container(&id, limit).await.is_err() {
                // Gone between listing and update (a repetition ended): nothing to slow.
                continue;
            }
            done.insert(id);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done.len()
}

/// The CPU quota's period: short beside a phase, so the share is even through it.
const PERIOD_US: i64 = 10_000;

/// Runs `test` into `results` with every container of `service` limited to `quota` of a core
/// (see [`throttle`]); returns the run directory and how many containers were slowed.
async fn slowed(
    test: &'static str,
    service: &'static str,
    quota: f64,
    results: PathBuf,
) -> (PathBuf, usize) {
    let stop = Arc::new(AtomicBool::new(false));
    let progress: Arc<Mutex<Progress>> = Arc::default();
    let injector = tokio::spawn(throttle(service, quota, stop.clone(), progress.clone()));
    let dir = run(test, &[], results, progress).await;
    stop.store(true, Ordering::Relaxed);
    (dir, injector.await.unwrap())
}

/// `perf-tests compare base new` with `args`; its output is shown with the test's (on failure,
/// or with --no-capture).
fn compare(base: &Path, new: &Path, args: &[&str]) -> (Option<i32>, String) {
    let (code, all) = common::outcome(common::bin().arg("compare").args([base, new]).args(args));
    eprintln!("{all}");
    (code, all)
}

/// The producer's rate row of `scenario` in compare's plain output; asserts it is a
/// regression, a slowdown, with the smallest change these repetitions could detect stated
/// beside it. That one comes from the sides' spread, which a busy host widens: the rank test
/// can find a change smaller than it (every slowed repetition below every base one), so it is
/// not compared with the change.
fn assert_rate_regression(out: &str, scenario: &str) {
    let row = out
        .lines()
        .find(|l| l.starts_with(scenario) && l.contains("Rate rec/s"))
        .unwrap_or_else(|| panic!("no producer rate row of {scenario} in\n{out}"));
    assert!(row.contains("regression"), "{row}");
    let pcts: Vec<f64> = row
        .split_whitespace()
        .filter_map(|t| t.strip_suffix('%')?.parse().ok())
        .collect();
    let [change, detectable] = pcts[..] else {
        panic!("a change and a detectable change in {row}");
    };
    assert!(
        change < 0.0 && detectable > 0.0,
        "{change} vs {detectable}: {row}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn identical_runs_agree_and_each_slowdown_is_found_where_it_was_made() {
    let _lock = engine_lock(false);
    let root = tempfile::tempdir().unwrap();
    let at = |name: &str| root.path().join(name);
    // The base and the A/A's side, alternated; each side a directory of its runs, pooled.
    let (base, again) = (at("base"), at("again"));
    let mut base_run = PathBuf::new();
    for _ in 0..5 {
        base_run = run("0[12]-.*", POOLED, base.clone(), Arc::default()).await;
        run("01-.*", POOLED, again.clone(), Arc::default()).await;
    }
    // The run-wide broker was sampled while the workload ran, and it worked.
    let result = json(&base_run.join(format!("{REFERENCE}.json")));
    let broker = common::service_entry(&result["resources"], "broker1");
    assert_eq!(broker["run_wide"], true);
    assert!(broker["cpu_pct_mean"].as_f64().unwrap() > 0.0, "{broker}");
    assert!(broker["cpu_pct_peak"].as_f64().unwrap() > 0.0, "{broker}");
    assert!(broker["mem_mib_mean"].as_f64().unwrap() > 0.0, "{broker}");
    // 3000 records of 1 KiB reached the broker.
    assert!(broker["net_rx_mib"].as_f64().unwrap() > 2.0, "{broker}");
    let tables = std::fs::read_to_string(base_run.join("tables.txt")).unwrap();
    let row = tables
        .lines()
        .skip_while(|l| *l != "Resources")
        .find(|l| l.starts_with(REFERENCE))
        .unwrap_or_else(|| panic!("no resources row in\n{tables}"));
    assert!(row.contains("broker1 (run-wide)"), "{row}");
    // One throughput bar for each scenario.
    let svg = std::fs::read_to_string(base_run.join("charts.svg")).unwrap();
    roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(svg.matches(r#"class="bar throughput""#).count(), 2);
    assert!(std::fs::read_to_string(base_run.join("tables.md"))
        .unwrap()
        .contains("](charts.svg)"));

    // A/A on the reference: no regression beyond half the median, though a smaller change
    // could have been found; the sides alternated, so no warning that they were not.
    let (code, out) = compare(&base, &again, &["--format", "plain", "--threshold", "50"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.starts_with("no significant regression beyond 50%"),
        "{out}"
    );
    assert!(
        out.contains("(5 base vs 5 new repetitions; Holm over 2 primary tests)"),
        "{out}"
    );
    assert!(!out.contains("the sides were not interleaved"), "{out}");
    assert!(
        out.contains(&format!("scenario {PROXY} is only in the base results")),
        "{out}"
    );
    for metric in ["Rate rec/s", "Consumed rec/s"] {
        let row = out
            .lines()
            .find(|l| l.starts_with(REFERENCE) && l.contains(metric) && l.contains("primary"))
            .unwrap_or_else(|| panic!("no primary {metric} row in\n{out}"));
        assert!(!row.contains("n/a"), "{row}");
        assert!(row.contains('%'), "a detectable change is stated: {row}");
    }

    // The proxy of 02 slowed: the path's regression.
    let (slow_proxy, throttled) =
        slowed("02-.*", "kroxylicious-no-filters", 0.3, at("proxy")).await;
    assert_eq!(
        throttled, 5,
        "one proxy container per repetition was slowed"
    );
    let (code, out) = compare(&base, &slow_proxy, &["--format", "plain"]);
    assert_eq!(code, Some(1), "{out}");
    assert_rate_regression(&out, PROXY);

    // The run-wide broker slowed: the reference moved, and compare says what that means.
    let (slow_broker, slowed_brokers) = slowed("01-.*", "broker1", 0.25, at("broker")).await;
    assert_eq!(slowed_brokers, 1, "the run-wide broker was slowed");
    // Every repetition is kept; the summary is their median; every one consumed all it sent;
    // the table says how many runs and their spread, the chart draws it.
    let result = json(&slow_broker.join(format!("{REFERENCE}.json")));
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
        assert_eq!(r["integrity"]["consumed"], RECORDS, "{r}");
    }
    let tables = std::fs::read_to_string(slow_broker.join("tables.txt")).unwrap();
    assert!(tables.contains("Runs"), "{tables}");
    let svg = std::fs::read_to_string(slow_broker.join("charts.svg")).unwrap();
    assert!(svg.contains(r#"class="error""#), "{svg}");
    let (code, out) = compare(&base, &slow_broker, &["--format", "plain"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "the reference scenario {REFERENCE} (it measures none of the path under test) moved by itself"
        )),
        "{out}"
    );

    // The producer held to 1000 rec/s: a real, large slowdown of the same path, its setting
    // named; a base that does not exist is refused, naming it.
    let held = run(
        "01-.*",
        &[("THROUGHPUT", "1000")],
        at("held"),
        Arc::default(),
    )
    .await;
    let held_rate = json(&held.join(format!("{REFERENCE}.json")))["measurement"]["producer"]
        ["rate_rec_s"]
        .as_f64()
        .unwrap();
    assert!(held_rate < 1100.0, "{held_rate}");
    let (code, out) = compare(&at("nothing"), &held, &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("nothing does not exist"), "{out}");
    let (code, out) = compare(&base, &held, &["--format", "markdown"]);
    assert_eq!(code, Some(1), "{out}");
    let summary = out.lines().nth(1).unwrap();
    assert!(
        summary.contains(&format!("{REFERENCE} Rate rec/s -")),
        "{summary}"
    );
    assert!(
        summary.contains("(5 base vs 5 new repetitions; Holm over 2 primary tests)"),
        "{summary}"
    );
    assert!(
        out.contains("settings differ: THROUGHPUT is -1 in the base and 1000 in the new results"),
        "{out}"
    );
    assert!(
        out.contains("> **Warning:** the sides were not interleaved"),
        "{out}"
    );
}
