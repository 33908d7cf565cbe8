//! Faults during a run of the default suite, on the real engine: a container killed in each
//! phase, the results directory on a full disk, the engine going away, a second scenario failing
//! (or a SIGTERM) after a first completed. Each run must end at once with exit 1 (130 after a
//! signal), naming what failed, leave nothing on the engine and keep the results of the
//! scenarios that completed.

use crate::common;
use common::{
    docker_cli, engine_lock, leftovers, perf_tests_run, running_container, start_run, wait_for,
    workload_runs, Started,
};

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

/// More records than any of these runs gets through: only the fault ends the measurement (and
/// few enough that the broker's log would fit on the disk, which the run checks first).
const ENDLESS: &str = "10000000";
/// How long a run may take to end once its fault happened: the watch's second, the teardown.
const ENDS_WITHIN: Duration = Duration::from_secs(30);

/// `perf-tests run` of the default suite with only `env` set among the settings, small warm-ups.
fn perf_tests(env: &[(&str, &str)], results: &Path) -> Command {
    let mut cmd = perf_tests_run(results);
    cmd.env_remove("DOCKER_HOST");
    cmd.envs(env.iter().copied());
    cmd
}

/// Kills the running container of `service` in the run.
fn kill(run_id: &str, service: &str) {
    let id = running_container(run_id, service).unwrap_or_else(|| panic!("{service} is running"));
    docker_cli(&["kill", &id]);
}

/// A run started in the background; one the test gives up on (a failed assertion) is stopped
/// as Ctrl-C would, so it does not run on, endless, under the next test.
struct Running(Option<Started>);

impl Running {
    fn start(cmd: Command, until: impl Fn(&str) -> bool) -> Running {
        Running(Some(start_run(cmd, until)))
    }

    fn run_id(&self) -> String {
        self.0.as_ref().unwrap().run_id.clone()
    }

    /// Its exit status, the rest of its stderr, and how long it took from now to end.
    fn ends(mut self) -> (ExitStatus, String, Duration) {
        let Started {
            mut child, lines, ..
        } = self.0.take().unwrap();
        let from = Instant::now();
        let rest: Vec<String> = lines.map_while(Result::ok).collect();
        let status = child.wait().unwrap();
        (status, rest.join("\n"), from.elapsed())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut started) = self.0.take() {
            let pid = started.child.id().to_string();
            let _ = Command::new("kill").args(["-TERM", &pid]).status();
            let _ = started.child.wait();
        }
    }
}

/// Asserts a failed run: exit 1 within the bound, each of `named` in its stderr, nothing left
/// on the engine and, nothing having completed, no results.
async fn assert_failed_naming(
    ended: (ExitStatus, String, Duration),
    run_id: &str,
    results: &Path,
    named: &[&str],
) -> String {
    let (status, stderr, took) = ended;
    assert!(took < ENDS_WITHIN, "took {took:?}:\n{stderr}");
    assert_eq!(status.code(), Some(1), "{stderr}");
    for n in named {
        assert!(stderr.contains(n), "{n:?} in:\n{stderr}");
    }
    assert_eq!(leftovers(run_id).await, (0, 0), "{stderr}");
    assert_eq!(
        std::fs::read_dir(results).unwrap().count(),
        0,
        "no scenario completed, so nothing is saved:\n{stderr}"
    );
    stderr
}

#[tokio::test(flavor = "multi_thread")]
async fn the_broker_killed_mid_produce_ends_the_run_naming_it() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let cmd = perf_tests(
        &[("TEST", "01.*"), ("NUM_RECORDS", ENDLESS)],
        results.path(),
    );
    let started = Running::start(cmd, |l| l.starts_with("==> 01-"));
    let run_id = started.run_id();
    let with = format!("--num-records {ENDLESS}");
    wait_for("the measured produce", Duration::from_secs(120), || {
        workload_runs(&run_id, "produce", &with)
    });
    std::thread::sleep(Duration::from_secs(1));
    kill(&run_id, "broker1");
    assert_failed_naming(
        started.ends(),
        &run_id,
        results.path(),
        &[
            "error: scenario 01-no-proxy-baseline: a container of the run stopped during the measurement (its produce phase)",
            "service \"broker1\" (container ",
            "exited with code 137 (killed)",
            "log lines ---",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_killed_mid_consume_ends_the_run_naming_it() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    // Enough small records that consuming them takes a few seconds.
    let cmd = perf_tests(
        &[
            ("TEST", "02.*"),
            ("NUM_RECORDS", "3e6"),
            ("RECORD_SIZE", "100"),
        ],
        results.path(),
    );
    let started = Running::start(cmd, |l| l.contains("records sent"));
    let run_id = started.run_id();
    // A guard, not a timing bound: producing 3e6 records takes 15 s alone and twice that beside
    // another test on two cores.
    wait_for("the measured consume", Duration::from_secs(120), || {
        workload_runs(&run_id, "consume", "--expected 3000000")
    });
    kill(&run_id, "kroxylicious-no-filters");
    assert_failed_naming(
        started.ends(),
        &run_id,
        results.path(),
        &[
            "error: scenario 02-no-filters: a container of the run stopped during the measurement (its consume phase)",
            "service \"kroxylicious-no-filters\" (container ",
            "exited with code 137 (killed)",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_workload_container_killed_ends_the_run_naming_it() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let cmd = perf_tests(
        &[("TEST", "01.*"), ("NUM_RECORDS", ENDLESS)],
        results.path(),
    );
    let started = Running::start(cmd, |l| l.starts_with("==> 01-"));
    let run_id = started.run_id();
    let with = format!("--num-records {ENDLESS}");
    wait_for("the measured produce", Duration::from_secs(120), || {
        workload_runs(&run_id, "produce", &with)
    });
    kill(&run_id, "workload");
    assert_failed_naming(
        started.ends(),
        &run_id,
        results.path(),
        &[
            "error: scenario 01-no-proxy-baseline: a container of the run stopped during the measurement (its produce phase)",
            "workload (load generator) (container ",
            "exited with code 137 (killed)",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_broker_killed_during_the_warm_up_names_it_not_a_client_timeout() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let cmd = perf_tests(
        &[
            ("TEST", "01.*"),
            ("NUM_RECORDS", "3000"),
            ("WARM_UP_NUM_RECORDS_POST_BROKER_START", ENDLESS),
        ],
        results.path(),
    );
    let started = Running::start(cmd, |l| l.starts_with("==> warming the broker"));
    let run_id = started.run_id();
    let with = format!("--num-records {ENDLESS}");
    wait_for("the warm-up produce", Duration::from_secs(60), || {
        workload_runs(&run_id, "produce", &with)
    });
    kill(&run_id, "broker1");
    let stderr = assert_failed_naming(
        started.ends(),
        &run_id,
        results.path(),
        &[
            "error: a container of the run stopped during the run-wide services' readiness check and warm-up",
            "service \"broker1\" (container ",
            "exited with code 137 (killed)",
        ],
    )
    .await;
    assert!(!stderr.contains("timed out"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn results_on_a_full_disk_fail_the_run_naming_the_path_and_leave_no_half_written_run() {
    let _lock = engine_lock(false);
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    std::fs::create_dir(&full).unwrap();
    struct Mounted(PathBuf);
    impl Drop for Mounted {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8k", "tmpfs"])
        .arg(&full)
        .status()
        .unwrap();
    assert!(
        mounted.success(),
        "mounting a tmpfs (this test runs as root)"
    );
    let _mounted = Mounted(full.clone());
    let started = Instant::now();
    let cmd = perf_tests(&[("TEST", "01.*"), ("NUM_RECORDS", "3000")], &full);
    let run = Running::start(cmd, |l| l.starts_with("==> 01-"));
    let run_id = run.run_id();
    let (status, stderr, _) = run.ends();
    assert!(
        started.elapsed() < Duration::from_secs(180),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(status.code(), Some(1), "{stderr}");
    let error = &stderr[stderr.find("error: cannot write results: ").unwrap_or(0)..];
    assert!(
        error.starts_with("error: cannot write results: ")
            && error.contains(&full.display().to_string())
            && error.contains("No space left on device"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(&full).unwrap().count(),
        0,
        "nothing half-written is left"
    );
    assert_eq!(leftovers(&run_id).await, (0, 0), "{stderr}");
}

/// A unix socket that forwards every connection to the engine's, until cut.
struct Forwarder {
    path: PathBuf,
    accepting: tokio::task::JoinHandle<()>,
    connections: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Forwarder {
    fn start(path: PathBuf) -> Forwarder {
        let _ = std::fs::remove_file(&path);
        let listener = tokio::net::UnixListener::bind(&path).unwrap();
        let connections = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let held = connections.clone();
        let accepting = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let forward = tokio::spawn(async move {
                    if let Ok(mut engine) =
                        tokio::net::UnixStream::connect("/var/run/docker.sock").await
                    {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut engine).await;
                    }
                });
                held.lock().unwrap().push(forward);
            }
        });
        Forwarder {
            path,
            accepting,
            connections,
        }
    }

    /// The engine goes away: no new connection, every open one closed.
    fn cut(&self) {
        self.accepting.abort();
        for c in self.connections.lock().unwrap().drain(..) {
            c.abort();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

// Workers to spare for the forwarder while the test blocks on the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_engine_going_away_ends_the_run_and_clean_removes_what_it_left() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let socket =
        std::env::temp_dir().join(format!("perf-tests-faults-{}.sock", std::process::id()));
    let forwarder = Forwarder::start(socket.clone());
    let host = format!("unix://{}", socket.display());
    let cmd = perf_tests(
        &[
            ("TEST", "01.*"),
            ("NUM_RECORDS", ENDLESS),
            ("DOCKER_HOST", &host),
        ],
        results.path(),
    );
    let started = Running::start(cmd, |l| l.starts_with("==> 01-"));
    let run_id = started.run_id();
    let with = format!("--num-records {ENDLESS}");
    wait_for("the measured produce", Duration::from_secs(120), || {
        workload_runs(&run_id, "produce", &with)
    });
    forwarder.cut();
    let (status, stderr, took) = started.ends();
    // Found within the watch's second plus twice the engine's 5 s to answer; nothing to tear down.
    assert!(took < Duration::from_secs(15), "took {took:?}:\n{stderr}");
    assert_eq!(status.code(), Some(1), "{stderr}");
    let gone = format!(
        "the Docker engine at {host} stopped answering during the measurement (its produce \
         phase); this run's \
         containers and networks could not be removed: `perf-tests clean` removes them once the \
         engine answers again"
    );
    assert!(stderr.contains(&gone), "{gone:?} in:\n{stderr}");
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0);
    assert_ne!(
        leftovers(&run_id).await,
        (0, 0),
        "the engine could remove nothing"
    );

    // The engine answers again (the real socket): clean removes the dead run's resources.
    let cleaned = common::bin()
        .arg("clean")
        .env_remove("DOCKER_HOST")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&cleaned.stderr);
    assert!(cleaned.status.success(), "{said}");
    assert_eq!(leftovers(&run_id).await, (0, 0), "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_scenario_that_fails_keeps_the_first_ones_results_marked_incomplete() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    // Paced so that `02` is still producing when the proxy dies, however loaded the machine.
    let cmd = perf_tests(
        &[
            ("TEST", "0[12].*"),
            ("NUM_RECORDS", "3000"),
            ("THROUGHPUT", "500"),
        ],
        results.path(),
    );
    // The first workload line of `02` comes after its bring-up: the proxy's death is then the
    // watch's to find, not the bring-up's (which reports a death in its own words).
    let in_02 = std::cell::Cell::new(false);
    let started = Running::start(cmd, |l| {
        in_02.set(in_02.get() || l.starts_with("==> 02-"));
        in_02.get() && l.starts_with("    ")
    });
    let run_id = started.run_id();
    // 01 is done once 02 prints its first workload line: the measured produce now is 02's.
    wait_for("02's measured produce", Duration::from_secs(60), || {
        workload_runs(&run_id, "produce", "--num-records 3000")
    });
    kill(&run_id, "kroxylicious-no-filters");
    let (status, stderr, took) = started.ends();
    assert!(took < ENDS_WITHIN, "took {took:?}:\n{stderr}");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error: scenario 02-no-filters: a container of the run stopped during")
            && stderr.contains("service \"kroxylicious-no-filters\" (container ")
            && stderr.contains("exited with code 137 (killed)")
            && stderr.contains(
                "the run ended early; reporting the scenarios it completed: 01-no-proxy-baseline"
            ),
        "{stderr}"
    );
    assert_eq!(leftovers(&run_id).await, (0, 0), "{stderr}");

    // The first scenario's results, as a complete run would have them, in a run marked incomplete.
    let runs: Vec<PathBuf> = std::fs::read_dir(results.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = &runs[0];
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("run.json")).unwrap()).unwrap();
    let why = info["incomplete"]
        .as_str()
        .expect("run.json says why it is incomplete");
    assert!(
        why.starts_with("scenario 02-no-filters: a container of the run stopped during"),
        "{why}"
    );
    let first: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("01-no-proxy-baseline.json")).unwrap())
            .unwrap();
    assert_eq!(
        first["measurement"]["integrity"]["consumed"], 3000,
        "{first}"
    );
    assert!(!run.join("02-no-filters.json").exists());
    let tables = std::fs::read_to_string(run.join("tables.txt")).unwrap();
    assert!(
        tables.contains("Producer Results") && tables.contains("01-no-proxy-baseline"),
        "{tables}"
    );
    assert!(!tables.contains("02-no-filters"), "{tables}");

    // Comparing against it warns, once, naming the run and the reason.
    let compared = common::bin()
        .args(["compare", "--format", "plain"])
        .arg(run)
        .arg(run)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&compared.stdout);
    let warning = format!("warning: {} is an incomplete run ({why})", run.display());
    assert_eq!(out.matches(&warning).count(), 2, "{warning:?} in:\n{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_in_a_second_scenario_keeps_the_first_ones_results_marked_incomplete() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    // Paced: six seconds of producing in each scenario, and the signal in 02's.
    let cmd = perf_tests(
        &[
            ("TEST", "0[12].*"),
            ("NUM_RECORDS", "3000"),
            ("THROUGHPUT", "500"),
        ],
        results.path(),
    );
    let started = Running::start(cmd, |l| l.starts_with("==> 02-"));
    let run_id = started.run_id();
    wait_for("02's measured produce", Duration::from_secs(120), || {
        workload_runs(&run_id, "produce", "--num-records 3000")
    });
    let pid = started.0.as_ref().unwrap().child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let (status, stderr, took) = started.ends();
    assert!(took < ENDS_WITHIN, "took {took:?}:\n{stderr}");
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains(
            "the run ended early; reporting the scenarios it completed: 01-no-proxy-baseline"
        ),
        "{stderr}"
    );
    assert_eq!(leftovers(&run_id).await, (0, 0), "{stderr}");
    let runs: Vec<PathBuf> = std::fs::read_dir(results.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(runs[0].join("run.json")).unwrap()).unwrap();
    assert_eq!(
        info["incomplete"],
        "scenario 02-no-filters: interrupted by SIGTERM; this run's containers and networks were \
         removed"
    );
    assert!(runs[0].join("01-no-proxy-baseline.json").is_file());
    assert!(!runs[0].join("02-no-filters.json").exists());
}
