//! Pinning: SERVICES_CPUSET and WORKLOAD_CPUSET reach the engine for every container of a run,
//! and a CPU the engine lacks is refused before anything starts.

use crate::common;
use common::{engine_lock, leftovers, perf_tests_run, start_run, Started};

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

use bollard::query_parameters::{InspectContainerOptions, ListContainersOptionsBuilder};

fn command(envs: &[(&str, &str)], results: &std::path::Path) -> Command {
    let mut cmd = perf_tests_run(results);
    cmd.env("TEST", "01.*");
    cmd.envs(envs.iter().copied());
    cmd
}

/// Service label -> CPU list of every running container of `run_id`.
async fn pinned(run_id: &str) -> HashMap<String, String> {
    let docker = common::docker();
    let filter = HashMap::from([("label", vec![format!("io.perf-tests.run={run_id}")])]);
    let listed = docker
        .list_containers(Some(
            ListContainersOptionsBuilder::default()
                .filters(&filter)
                .build(),
        ))
        .await
        .unwrap_or_default();
    let mut out = HashMap::new();
    for c in listed {
        let Some(id) = c.id else { continue };
        let Ok(info) = docker
            .inspect_container(&id, None::<InspectContainerOptions>)
            .await
        else {
            continue;
        };
        let service = info
            .config
            .and_then(|c| c.labels)
            .and_then(|l| l.get("io.perf-tests.service").cloned())
            .unwrap_or_default();
        let cpus = info
            .host_config
            .and_then(|h| h.cpuset_cpus)
            .unwrap_or_default();
        out.insert(service, cpus);
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn services_and_the_load_generator_run_on_the_cpus_they_are_given() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    // Enough records that the measurement is still going while the test looks.
    let cmd = command(
        &[
            ("SERVICES_CPUSET", "0"),
            ("WORKLOAD_CPUSET", "1"),
            ("NUM_RECORDS", "3e6"),
        ],
        results.path(),
    );
    let Started {
        mut child,
        lines,
        run_id,
        ..
    } = start_run(cmd, |l| l.starts_with("==> 01-"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = HashMap::new();
    while Instant::now() < deadline
        && !(seen.contains_key("broker1") && seen.contains_key("workload"))
    {
        seen.extend(pinned(&run_id).await);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    child.wait().unwrap();
    assert_eq!(
        seen.get("broker1").map(String::as_str),
        Some("0"),
        "{seen:?}\n{}",
        rest.join("\n")
    );
    assert_eq!(
        seen.get("workload").map(String::as_str),
        Some("1"),
        "{seen:?}"
    );
    assert_eq!(leftovers(&run_id).await, (0, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cpu_the_engine_lacks_is_refused_before_anything_starts() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let out = command(&[("WORKLOAD_CPUSET", "0,4095")], results.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("WORKLOAD_CPUSET=\"0,4095\": CPU 4095 does not exist; the engine has"),
        "{stderr}"
    );
    let run_id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("==> run "))
        .expect("the run announces its id")
        .trim()
        .to_string();
    assert_eq!(leftovers(&run_id).await, (0, 0));
    assert!(!stderr.contains("starting"), "{stderr}");
    assert_eq!(
        std::fs::read_dir(results.path())
            .map(|d| d.count())
            .unwrap_or(0),
        0
    );
}
