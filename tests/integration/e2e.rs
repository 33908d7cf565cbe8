//! The TLS suite (`scenarios/kroxylicious-tls`: Apache Kafka alone, through Kroxylicious, and
//! through Kroxylicious with TLS from the clients) run whole on the real engine with small
//! counts, its tables and records checked and nothing left behind (03's proxy accepts only TLS,
//! so its records crossed TLS); and a run of the default suite's baseline and proxy
//! stopped by SIGINT, SIGTERM or SIGHUP in a measured produce or consume, which removes what it
//! made and keeps what completed before the signal.

use crate::common;
use common::{engine_lock, leftovers, perf_tests_run, start_run, wait_for, workload_runs, Started};

const RECORDS: u64 = 20_000;

#[tokio::test(flavor = "multi_thread")]
async fn the_tls_suite_runs_end_to_end_and_leaves_nothing() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let out = common::bin()
        .env("NUM_RECORDS", "2e4")
        .env("WARM_UP_NUM_RECORDS_POST_BROKER_START", "500")
        .env("WARM_UP_NUM_RECORDS_PRE_TEST", "500")
        .env("RESULTS_DIR", results.path())
        .env("SCENARIOS", "scenarios/kroxylicious-tls")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "run failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );

    // Both tables, one row per scenario, in order.
    let producer = stdout.find("Producer Results").expect("producer table");
    let consumer = stdout.find("Consumer Results").expect("consumer table");
    assert!(producer < consumer);
    let resources = stdout.find("Resources").expect("resources table");
    assert!(consumer < resources);
    for table in [&stdout[producer..consumer], &stdout[consumer..resources]] {
        let rows: Vec<&str> = table
            .lines()
            .filter(|l| l.starts_with("0"))
            .map(|l| l.split_whitespace().next().unwrap())
            .collect();
        assert_eq!(
            rows,
            ["01-no-proxy-baseline", "02-no-filters", "03-no-filters-tls"],
            "{table}"
        );
    }
    let sent_column: Vec<&str> = stdout[producer..consumer]
        .lines()
        .filter(|l| l.starts_with("0"))
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert!(
        sent_column.iter().all(|s| *s == RECORDS.to_string()),
        "{sent_column:?}"
    );

    // One run directory holding the run and every scenario, with counts that agree.
    let runs: Vec<_> = std::fs::read_dir(results.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = &runs[0];
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("run.json")).unwrap()).unwrap();
    for name in ["01-no-proxy-baseline", "02-no-filters", "03-no-filters-tls"] {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(run.join(format!("{name}.json"))).unwrap())
                .unwrap();
        let m = &v["measurement"];
        for counter in ["requested", "acknowledged", "end_offsets", "consumed"] {
            assert_eq!(m["integrity"][counter], RECORDS, "{name} {counter}: {v}");
        }
        assert!(m["producer"]["rate_rec_s"].as_f64().unwrap() > 0.0);
        assert!(m["consumer"]["fetch_rec_s"].as_f64().unwrap() > 0.0);
        let p = &m["producer"];
        assert!(p["p50_ms"].as_f64() <= p["p99_ms"].as_f64());
        assert!(p["p99_ms"].as_f64() <= p["max_lat_ms"].as_f64().map(|m| m * 1.001 + 1.0));
    }
    // The resources table names the services each scenario ran, with their figures.
    let resources_end = stdout.find("Warnings").unwrap_or(stdout.len());
    let services: Vec<(&str, &str)> = stdout[resources..resources_end]
        .lines()
        .filter(|l| l.starts_with("0"))
        .map(|l| {
            let mut cells = l.split("  ").map(str::trim).filter(|c| !c.is_empty());
            (cells.next().unwrap(), cells.next().unwrap())
        })
        .collect();
    for needed in [
        ("01-no-proxy-baseline", "broker1 (run-wide)"),
        ("02-no-filters", "kroxylicious-no-filters"),
        ("03-no-filters-tls", "kroxylicious-no-filters-tls"),
    ] {
        assert!(services.contains(&needed), "{needed:?} in {services:?}");
    }
    for f in ["tables.txt", "tables.md", "charts.svg"] {
        assert!(run.join(f).is_file(), "{f}");
    }

    let run_id = info["run_id"].as_str().expect("run.json names its run id");
    assert_eq!(
        leftovers(run_id).await,
        (0, 0),
        "containers/networks left behind"
    );
}

// The three signals a run is stopped by share one handler and one teardown: each is sent once,
// and each measured step gets at least one of them (a step's own teardown is what differs).

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_during_a_measured_produce_removes_the_run_and_keeps_what_completed() {
    signal_during(Phase::Produce, "INT").await;
}

/// A closed terminal or SSH session sends SIGHUP: handled as Ctrl-C, not exit 129 with the
/// containers and the network left behind.
#[tokio::test(flavor = "multi_thread")]
async fn sighup_during_a_measured_produce_removes_the_run_and_keeps_what_completed() {
    signal_during(Phase::Produce, "HUP").await;
}

/// What `kill`, a service manager or a container runtime sends to stop a process.
#[tokio::test(flavor = "multi_thread")]
async fn sigterm_during_a_measured_consume_removes_the_run_and_saves_nothing() {
    signal_during(Phase::Consume, "TERM").await;
}

/// The measured step a signal is sent in.
#[derive(Clone, Copy, PartialEq)]
enum Phase {
    /// `02-no-filters`' produce, paced, after `01` completed.
    Produce,
    /// `02-no-filters`' consume of 3e6 small records, alone.
    Consume,
}

/// Sends `signal` (a `kill` name) to a run of the default suite once the load generator runs
/// `02-no-filters`'s measured `phase` (seen in its container, not guessed from a time); the
/// run must end within 10 s with 130, naming the signal and the scenario, leaving no container,
/// network or scratch directory, and keeping (marked incomplete) what completed before.
async fn signal_during(phase: Phase, signal: &str) {
    use std::time::{Duration, Instant};

    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let mut cmd = perf_tests_run(results.path());
    let (step, with) = match phase {
        // 3000 records at 500 rec/s: six seconds of producing in each scenario.
        Phase::Produce => {
            cmd.env("TEST", "0[12].*")
                .env("NUM_RECORDS", "3000")
                .env("THROUGHPUT", "500");
            ("produce", "--num-records 3000")
        }
        Phase::Consume => {
            cmd.env("TEST", "02.*")
                .env("NUM_RECORDS", "3e6")
                .env("RECORD_SIZE", "100");
            ("consume", "--expected 3000000")
        }
    };
    let Started {
        mut child,
        lines,
        run_id,
        ..
    } = start_run(cmd, |line| line.starts_with("==> 02-"));
    wait_for(
        &format!("02's measured {step}"),
        Duration::from_secs(180),
        || workload_runs(&run_id, step, with),
    );
    let sent = Instant::now();
    common::send(signal, &child);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    let stderr = rest.join("\n");
    assert!(
        sent.elapsed() < Duration::from_secs(10),
        "took {:?}:\n{stderr}",
        sent.elapsed()
    );
    assert_eq!(status.code(), Some(130), "{stderr}");
    let named = format!("interrupted by SIG{signal}: removing containers and networks of run");
    assert!(stderr.contains(&named), "{named:?} in {stderr}");
    let why = format!(
        "scenario 02-no-filters: interrupted by SIG{signal}; this run's containers and networks \
         were removed"
    );
    assert!(stderr.contains(&format!("error: {why}")), "{stderr}");
    assert_eq!(leftovers(&run_id).await, (0, 0), "{stderr}");
    let scratch = std::env::temp_dir().join(format!("perf-tests-{run_id}"));
    assert!(!scratch.exists(), "{} left behind", scratch.display());
    let runs: Vec<_> = std::fs::read_dir(results.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    if phase == Phase::Consume {
        assert!(runs.is_empty(), "nothing completed, so nothing is saved");
        return;
    }
    // 01 completed: kept, in a run marked incomplete that names the interrupted scenario.
    assert_eq!(runs.len(), 1, "{runs:?}");
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(runs[0].join("run.json")).unwrap()).unwrap();
    assert_eq!(info["incomplete"], why.as_str(), "{info}");
    let first: serde_json::Value =
        serde_json::from_slice(&std::fs::read(runs[0].join("01-no-proxy-baseline.json")).unwrap())
            .unwrap();
    assert_eq!(first["measurement"]["integrity"]["consumed"], 3000);
    assert!(!runs[0].join("02-no-filters.json").exists());
}
