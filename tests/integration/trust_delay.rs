//! A slowdown injected on the path under test is reported as a significant regression: the
//! default suite's plain proxy scenario (02-no-filters) is run twice with REPEAT=5 (with Holm over
//! the two primary tests, 4 a side could never reach significance), the second time with every
//! proxy container throttled to a fifth of a core once it is healthy (the engine's CPU quota;
//! this kernel has no netem for a network delay; a JVM started at that quota would outlast its
//! health check), and `perf-tests compare` must exit 1. A broker slowed the same way once the
//! rounds begin moves the reference scenario (01), and compare warns that the machine or the
//! broker changed. Both tests run alone (`.config/nextest.toml`): a neighbour's load on some of
//! the base repetitions widens their spread past what five repetitions can tell apart.

use crate::common;
use common::engine_lock;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::models::{ContainerUpdateBody, HealthStatusEnum};
use bollard::query_parameters::ListContainersOptionsBuilder;

/// What the throttle needs to know of a run: its id, once announced, and whether its rounds (the
/// measured scenarios, after the run-wide broker is up and warmed) have begun.
#[derive(Default)]
struct Progress {
    run_id: Option<String>,
    rounds: bool,
}

/// Runs the default suite's scenarios `test` selects into `results`; returns the run directory.
/// `progress` follows the run's lines as they come.
fn run(test: &str, results: &Path, progress: Arc<Mutex<Progress>>) -> PathBuf {
    let mut cmd = common::bin();
    let mut child = common::small_run(&mut cmd, results)
        .env("SCENARIOS", "scenarios/kroxylicious")
        .env("TEST", test)
        .env("NUM_RECORDS", "1e4")
        .env("REPEAT", "5")
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
            if line.starts_with("==> round ") {
                progress.lock().unwrap().rounds = true;
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

/// Until `stop`, limits every running container of Compose service `service` of the run in
/// `progress` to `quota` of a core, once the run's rounds have begun and the container is healthy
/// (where it has a health check).
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
            p.run_id.clone().filter(|_| p.rounds)
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
            let health = docker
                .inspect_container(&id, None)
                .await
                .ok()
                .and_then(|c| c.state?.health?.status);
            if health.is_some_and(|h| h != HealthStatusEnum::HEALTHY) {
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
/// `service` limited to `quota` of a core (see [`throttle`]), then compares the two runs; returns
/// compare's output and how many containers were slowed.
async fn base_and_slowed(test: &'static str, service: &'static str, quota: f64) -> (Output, usize) {
    let root = tempfile::tempdir().unwrap();
    let base_dir = root.path().join("base");
    let base = tokio::task::spawn_blocking(move || run(test, &base_dir, Arc::default()))
        .await
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let slow_progress: Arc<Mutex<Progress>> = Arc::default();
    let injector = tokio::spawn(throttle(
        service,
        quota,
        stop.clone(),
        slow_progress.clone(),
    ));
    let slow_dir = root.path().join("slow");
    let slow = tokio::task::spawn_blocking(move || run(test, &slow_dir, slow_progress))
        .await
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    let slowed = injector.await.unwrap();
    let out = common::bin()
        .args(["compare", base.to_str().unwrap(), slow.to_str().unwrap()])
        .args(["--format", "plain"])
        .output()
        .unwrap();
    // Shown with the test's output (on failure, or with --no-capture).
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    (out, slowed)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_throttled_proxy_is_a_significant_regression() {
    let _lock = engine_lock(false);
    let (out, throttled) = base_and_slowed("02.*", "kroxylicious-no-filters", 0.2).await;
    assert_eq!(
        throttled, 5,
        "one proxy container per repetition was slowed"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let rate_row = stdout
        .lines()
        .find(|l| l.starts_with("02-no-filters") && l.contains("Rate rec/s"))
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
/// the second side is limited to a fifth of a core once the rounds begin.
#[tokio::test(flavor = "multi_thread")]
async fn a_slowed_broker_moves_the_reference_and_compare_says_the_machine_changed() {
    let _lock = engine_lock(false);
    let (out, slowed) = base_and_slowed("01.*", "broker1", 0.2).await;
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
