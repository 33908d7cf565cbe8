//! A slowdown injected on the path under test is reported as a significant regression: the
//! proxy scenario is run twice with REPEAT=5 (with Holm over the two primary tests, 4 a side could
//! never reach significance), the second time with every proxy container
//! throttled to a twentieth of a core as it starts (the engine's CPU quota; this kernel has no netem
//! for a network delay), and `perf-tests compare` must exit 1. A broker slowed the same way
//! moves the reference scenario, and compare warns that the machine or the broker changed.

use crate::common;
use common::engine_lock;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::models::ContainerUpdateBody;
use bollard::query_parameters::ListContainersOptionsBuilder;

/// Runs the offline suite's scenarios `test` selects into `results`; returns the run directory.
/// The run's id is put in `run_id` as soon as the run announces it.
fn run(test: &str, results: &Path, run_id: Arc<Mutex<Option<String>>>) -> PathBuf {
    let mut cmd = common::bin();
    let mut child = cmd
        .env("SCENARIOS", "scenarios/offline")
        .env("TEST", test)
        .env("NUM_RECORDS", "2e4")
        .env("WARM_UP_NUM_RECORDS_POST_BROKER_START", "200")
        .env("WARM_UP_NUM_RECORDS_PRE_TEST", "200")
        .env("REPEAT", "5")
        .env("RESULTS_DIR", results)
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
                *run_id.lock().unwrap() = Some(id.trim().to_string());
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

/// Until `stop`, limits every new running container of Compose service `service` of the run
/// named in `run_id` to `quota` of a core.
async fn throttle(
    service: &str,
    quota: f64,
    stop: Arc<AtomicBool>,
    run_id: Arc<Mutex<Option<String>>>,
) -> usize {
    let docker = common::docker();
    let mut done = HashSet::new();
    while !stop.load(Ordering::Relaxed) {
        let Some(id) = run_id.lock().unwrap().clone() else {
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
            let limit = ContainerUpdateBody {
                cpu_period: Some(100_000),
                cpu_quota: Some((100_000.0 * quota) as i64),
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

/// Runs `test` twice into a temporary directory, the second time with every container of
/// `service` limited to `quota` of a core as it starts, then compares the two runs; returns
/// compare's output and how many containers were slowed.
async fn base_and_slowed(test: &'static str, service: &'static str, quota: f64) -> (Output, usize) {
    let root = tempfile::tempdir().unwrap();
    let base_dir = root.path().join("base");
    let base = tokio::task::spawn_blocking(move || run(test, &base_dir, Arc::default()))
        .await
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let slow_run_id: Arc<Mutex<Option<String>>> = Arc::default();
    let injector = tokio::spawn(throttle(service, quota, stop.clone(), slow_run_id.clone()));
    let slow_dir = root.path().join("slow");
    let slow = tokio::task::spawn_blocking(move || run(test, &slow_dir, slow_run_id))
        .await
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    let slowed = injector.await.unwrap();
    let out = common::bin()
        .args(["compare", base.to_str().unwrap(), slow.to_str().unwrap()])
        .args(["--format", "plain"])
        .output()
        .unwrap();
    (out, slowed)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_throttled_proxy_is_a_significant_regression() {
    let _lock = engine_lock(false);
    let (out, throttled) = base_and_slowed("02.*", "proxy", 0.05).await;
    assert_eq!(
        throttled, 5,
        "one proxy container per repetition was slowed"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let rate_row = stdout
        .lines()
        .find(|l| l.starts_with("02-kafka-proxy") && l.contains("Rate rec/s"))
        .unwrap_or_else(|| panic!("no producer rate row in\n{stdout}"));
    assert!(rate_row.contains("regression"), "{rate_row}");
    // A slowdown, and the smallest change these repetitions could detect stated beside it. That
    // one comes from the sides' spread, which a busy host widens: the rank test can find a
    // change smaller than it (every slowed repetition below every base one), so it is not
    // compared with the change.
    let pcts: Vec<f64> = rate_row
        .split_whitespace()
        .filter_map(|t| t.strip_suffix('%')?.parse().ok())
        .collect();
    let [change, detectable] = pcts[..] else {
        panic!("a change and a detectable change in {rate_row}");
    };
    assert!(
        change < 0.0 && detectable > 0.0,
        "{change} vs {detectable}: {rate_row}"
    );
}

/// The reference scenario measures none of the path under test: when it moves by itself, the
/// machine or the broker changed between the sides, and compare says so. The run-wide broker of
/// the second side is limited to a twentieth of a core as it starts.
#[tokio::test(flavor = "multi_thread")]
async fn a_slowed_broker_moves_the_reference_and_compare_says_the_machine_changed() {
    let _lock = engine_lock(false);
    let (out, slowed) = base_and_slowed("01.*", "broker", 0.05).await;
    assert_eq!(slowed, 1, "the run-wide broker was slowed");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains(
            "the reference scenario 01-no-proxy-baseline (it measures none of the path under test) moved by itself"
        ),
        "{all}"
    );
}
