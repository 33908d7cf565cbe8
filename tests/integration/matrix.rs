//! Matrices on the real engine: every selected scenario at every combination of the settings
//! given as lists, one row each in the tables and the results, a varying proxy image and a
//! varying broker image each really used, and one run's two images compared with each other;
//! rate sweeps and sizing runs.

use crate::common;
use common::{engine_lock, leftovers, only_run, perf_tests_command, perf_tests_run, run_id_of};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use perf_tests::model::ScenarioResult;

const PROXY_A: &str = "perf-tests/kroxylicious:0.12.0";
/// The same proxy whose JVM stops at its first compiler tier (C1): another build, another
/// image id, and more CPU per record.
const PROXY_B: &str = "perf-tests-test/kroxylicious:c1";
const KAFKA_A: &str = "perf-tests/kafka:4.4.0";
const KAFKA_B: &str = "perf-tests-test/kafka:b";

/// A second name for a built image, so that a matrix can tell two "images" apart.
fn tag(from: &str, to: &str) {
    let ok = Command::new("docker")
        .args(["tag", from, to])
        .env_remove("DOCKER_HOST")
        .status()
        .unwrap();
    assert!(ok.success(), "docker tag {from} {to}");
}

/// `to`: `from` with `JAVA_OPTIONS` (which the proxy's start script passes to its JVM) baked
/// in, built from a Dockerfile on stdin by the local engine; returns its image id.
fn with_jvm_options(from: &str, to: &str, options: &str) -> String {
    use std::io::Write;
    let mut build = Command::new("docker")
        .args(["build", "-q", "-t", to, "-"])
        .env_remove("DOCKER_HOST")
        .env("DOCKER_BUILDKIT", "0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    write!(
        build.stdin.take().unwrap(),
        "FROM {from}\nENV JAVA_OPTIONS=\"{options}\"\n"
    )
    .unwrap();
    let out = build.wait_with_output().unwrap();
    assert!(out.status.success(), "docker build {to}");
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(id.starts_with("sha256:"), "{id}");
    id
}

fn image_id(image: &str) -> String {
    let out = Command::new("docker")
        .args(["image", "inspect", "-f", "{{.Id}}", image])
        .env_remove("DOCKER_HOST")
        .output()
        .unwrap();
    assert!(out.status.success(), "docker image inspect {image}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The run directory of a results directory holding one run, and its scenario records.
fn the_run(results: &Path) -> (PathBuf, Vec<(String, ScenarioResult)>) {
    let run = only_run(results);
    let mut records: Vec<(String, ScenarioResult)> = std::fs::read_dir(&run)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| e.file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".json") && n != "run.json" && n != "sizing.json")
        .map(|n| {
            let r = serde_json::from_slice(&std::fs::read(run.join(&n)).unwrap()).unwrap();
            (n, r)
        })
        .collect();
    records.sort_by(|a, b| a.0.cmp(&b.0));
    (run, records)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_matrix_over_record_size_and_the_proxy_image_measures_every_combination() {
    let _lock = engine_lock(false);
    let ids = [
        (PROXY_A, image_id(PROXY_A)),
        (
            PROXY_B,
            with_jvm_options(PROXY_A, PROXY_B, "-XX:TieredStopAtLevel=1"),
        ),
    ];
    assert_ne!(ids[0].1, ids[1].1);
    let results = tempfile::tempdir().unwrap();
    let out = perf_tests_run(results.path())
        .env("TEST", "0[12]-.*")
        .env("NUM_RECORDS", "2e3")
        .env("RECORD_SIZE", "100,1000")
        .env("KROXYLICIOUS_IMAGE", format!("{PROXY_A},{PROXY_B}"))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");

    // One row per scenario and combination, the varying settings as columns.
    let producer =
        &stdout[stdout.find("Producer Results").unwrap()..stdout.find("Consumer Results").unwrap()];
    let header = producer.lines().find(|l| l.starts_with("Name")).unwrap();
    assert!(
        header.starts_with("Name")
            && header.contains("KROXYLICIOUS_IMAGE")
            && header.contains("RECORD_SIZE"),
        "{header}"
    );
    let rows: Vec<&str> = producer.lines().filter(|l| l.starts_with('0')).collect();
    assert_eq!(rows.len(), 8, "{producer}");

    let (run, records) = the_run(results.path());
    assert_eq!(records.len(), 8);
    for (file, r) in &records {
        let size: u64 = r.combination["RECORD_SIZE"].parse().unwrap();
        let image = &r.combination["KROXYLICIOUS_IMAGE"];
        assert!(file.starts_with(&format!("{}@", r.name)), "{file}");
        let i = &r.measurement.integrity;
        assert!(i.is_ok() && i.consumed == 2000, "{file}: {i:?}");
        // The record size of the combination is what was sent.
        let expected_mib = 2000.0 * size as f64 / 1048576.0;
        assert!(
            (r.measurement.consumer.consumed_mib - expected_mib).abs() < 0.01,
            "{file}: {} MiB",
            r.measurement.consumer.consumed_mib
        );
        // The proxy scenario ran the combination's image (by its id), and only that one.
        if r.name.starts_with("02") {
            let other = if image == PROXY_A { PROXY_B } else { PROXY_A };
            let id = &ids.iter().find(|(i, _)| i == image).unwrap().1;
            assert_eq!(
                r.images.get(image.as_str()),
                Some(id),
                "{file}: {:?}",
                r.images
            );
            assert!(!r.images.contains_key(other), "{file}: {:?}", r.images);
        }
    }
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("run.json")).unwrap()).unwrap();
    let axes: Vec<&str> = info["settings"]["matrix"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["var"].as_str().unwrap())
        .collect();
    assert_eq!(axes, ["KROXYLICIOUS_IMAGE", "RECORD_SIZE"]);
    let svg = std::fs::read_to_string(run.join("charts.svg")).unwrap();
    assert!(svg.contains("by RECORD_SIZE") && svg.contains("by KROXYLICIOUS_IMAGE"));

    // The run's two images compared with each other, rows matched by scenario and record size.
    let cmp = common::bin()
        .arg("compare")
        .arg(&run)
        .arg(&run)
        .arg("--base-where")
        .arg(format!("KROXYLICIOUS_IMAGE={PROXY_A}"))
        .arg("--new-where")
        .arg(format!("KROXYLICIOUS_IMAGE={PROXY_B}"))
        .args(["--format", "plain"])
        .output()
        .unwrap();
    let (cmp_out, cmp_err) = text(&cmp);
    assert_eq!(cmp.status.code(), Some(0), "{cmp_out}\n{cmp_err}");
    for row in [
        "01-no-proxy-baseline [RECORD_SIZE=100]",
        "02-no-filters [RECORD_SIZE=1000]",
    ] {
        assert!(cmp_out.contains(row), "{row} in\n{cmp_out}");
    }
    assert!(!cmp_out.contains("only in the"), "{cmp_out}");
    let bad = common::bin()
        .arg("compare")
        .arg(&run)
        .arg(&run)
        .args(["--new-where", "KROXYLICIOUS_IMAGE=nothing:here"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad)
        .1
        .contains("no result was measured at KROXYLICIOUS_IMAGE=nothing:here"));

    assert_eq!(leftovers(&run_id_of(&run)).await, (0, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_varying_broker_image_restarts_the_run_wide_broker_between_combinations() {
    let _lock = engine_lock(false);
    tag(KAFKA_A, KAFKA_B);
    let results = tempfile::tempdir().unwrap();
    let out = perf_tests_run(results.path())
        .env("TEST", "01-.*")
        .env("NUM_RECORDS", "2e3")
        .env("KAFKA_IMAGE", format!("{KAFKA_A},{KAFKA_B}"))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stderr.contains("stopping broker1 for the next combination"),
        "{stderr}"
    );
    let (run, records) = the_run(results.path());
    assert_eq!(records.len(), 2);
    for (file, r) in &records {
        let image = &r.combination["KAFKA_IMAGE"];
        let other = if image == KAFKA_A { KAFKA_B } else { KAFKA_A };
        assert!(
            r.images.contains_key(image.as_str()),
            "{file}: {:?}",
            r.images
        );
        assert!(!r.images.contains_key(other), "{file}: {:?}", r.images);
        assert_eq!(r.measurement.integrity.consumed, 2000, "{file}");
    }
    assert_eq!(leftovers(&run_id_of(&run)).await, (0, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sweep_stops_raising_the_rate_at_the_first_the_path_does_not_sustain() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    // 1000 rec/s is easy; no path here sustains 2.5 million, so 5 million is never measured.
    let out = perf_tests_command("sweep", results.path())
        .args(["--from", "1000", "--to", "5e6", "--steps", "3"])
        .env("TEST", "01-.*")
        .env("NUM_RECORDS", "3e3")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stderr.contains("01-no-proxy-baseline [THROUGHPUT=2500500] does not sustain 2500500 rec/s"),
        "{stderr}"
    );
    let sweep = &stdout[stdout
        .find("Highest Sustained Rate")
        .expect("a sweep table")..];
    let row = sweep.lines().find(|l| l.starts_with("01-")).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[..2], ["01-no-proxy-baseline", "1000"], "{sweep}");
    // The baseline has no path of its own to cost.
    assert_eq!(cells[3..5], ["n/a", "2500500"], "{sweep}");
    assert!(row.contains("reached"), "{row}");
    let (run, records) = the_run(results.path());
    let rates: Vec<&str> = records
        .iter()
        .map(|(_, r)| r.combination["THROUGHPUT"].as_str())
        .collect();
    assert_eq!(rates, ["1000", "2500500"]);
    assert_eq!(leftovers(&run_id_of(&run)).await, (0, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sweep_stops_at_the_first_rate_whose_p99_passes_p99_limit_ms() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    // Every rate here is easy for the baseline; a round trip through the broker with acks=all
    // takes more than a millisecond at the 99th percentile, so the limit stops the climb.
    let out = perf_tests_command("sweep", results.path())
        .args(["--from", "500", "--to", "1500", "--steps", "3"])
        .env("TEST", "01-.*")
        .env("NUM_RECORDS", "2e3")
        .env("P99_LIMIT_MS", "1")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let (run, records) = the_run(results.path());
    // Which rates the limit should have stopped, from what was measured: the climb ends at the
    // first whose p99 (from the intended send times) passed 1 ms, and nothing above it is
    // measured.
    let p99_at: Vec<(u64, f64)> = records
        .iter()
        .map(|(_, r)| {
            let m = &r.measurement;
            assert!(
                m.producer.rate_rec_s >= 0.95 * m.producer.target_rec_s,
                "{m:?}"
            );
            (
                r.combination["THROUGHPUT"].parse().unwrap(),
                m.producer.intended.as_ref().unwrap().p99_ms,
            )
        })
        .collect();
    let (stop, p99) = *p99_at
        .iter()
        .find(|(_, p99)| *p99 > 1.0)
        .unwrap_or_else(|| panic!("no rate had a p99 over 1 ms: {p99_at:?}"));
    assert_eq!(p99_at.last().unwrap().0, stop, "{p99_at:?}");
    assert!(
        stderr.contains(&format!(
            "does not sustain {stop} rec/s: p99 {p99:.1} ms over P99_LIMIT_MS=1"
        )),
        "{stderr}"
    );
    let row = stdout
        .lines()
        .skip_while(|l| !l.starts_with("Highest Sustained Rate"))
        .find(|l| l.starts_with("01-"))
        .unwrap();
    assert!(row.contains("over P99_LIMIT_MS=1"), "{row}");
    assert_eq!(leftovers(&run_id_of(&run)).await, (0, 0));
}

/// The path's CPU seconds over every phase of a repetition, and the MB of traffic they moved,
/// read from the record's raw counters.
fn path_cpu_and_mb(m: &perf_tests::model::Measurement) -> (f64, f64) {
    let cpu: f64 = m
        .cost
        .iter()
        .flat_map(|p| &p.services)
        .filter(|s| s.role == perf_tests::accounting::cost::Role::Path)
        .map(|s| s.cpu_s)
        .sum();
    let mb: f64 = m.cost.iter().map(|p| p.traffic_bytes() as f64).sum::<f64>() / 1e6;
    (cpu, mb)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sizing_run_states_each_paths_coefficient_with_its_interval_and_the_latency_it_adds() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    // 1000 rec/s is easy; no path here sustains 2.5 million.
    let out = perf_tests_command("sizing", results.path())
        .args([
            "--from",
            "1000",
            "--to",
            "5e6",
            "--steps",
            "3",
            "--traffic",
            "50",
        ])
        .env("TEST", "0[12]-.*")
        .env("NUM_RECORDS", "3e3")
        .env("REPEAT", "2")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let (run, records) = the_run(results.path());
    let sizing: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("sizing.json")).unwrap()).unwrap();
    let line = |name: &str| {
        sizing["lines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {sizing}"))
            .clone()
    };
    let proxy = line("02-no-filters");
    assert_eq!(proxy["sustained_rec_s"], 1000, "{proxy}");
    assert_eq!(proxy["ceiling"][0], 2500500, "{proxy}");
    // The coefficient is the mean over the two repetitions at 1000 rec/s of the path's CPU over
    // its traffic, each from the raw counters kept in the results.
    let at_1000 = records
        .iter()
        .map(|(_, r)| r)
        .find(|r| r.name == "02-no-filters" && r.combination["THROUGHPUT"] == "1000")
        .unwrap();
    assert_eq!(at_1000.repetitions.len(), 2);
    let each: Vec<f64> = at_1000
        .repetitions
        .iter()
        .map(|m| {
            let (cpu, mb) = path_cpu_and_mb(m);
            assert!(cpu > 0.0 && mb > 0.0, "{:?}", m.cost);
            cpu * 1000.0 / mb
        })
        .collect();
    // Every repetition kept its latency histograms, each counting the records acknowledged.
    for m in &at_1000.repetitions {
        let keys: Vec<&str> = m.producer.histograms.keys().map(String::as_str).collect();
        assert_eq!(keys, ["intended", "send"]);
        for h in m.producer.histograms.values() {
            let h = perf_tests::workload::latency::decode(h).unwrap();
            assert_eq!(h.len(), m.producer.sent);
        }
    }
    let logs = std::fs::read_dir(&run)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "hlog")
        })
        .count();
    assert_eq!(logs, records.len());
    let c = &proxy["coefficient"];
    assert_eq!(c["n"], 2, "{c}");
    let mean = c["mean"].as_f64().unwrap();
    assert!(
        (mean - (each[0] + each[1]) / 2.0).abs() < 1e-6 * mean,
        "{c} vs {each:?}"
    );
    assert!(c["low"].as_f64().unwrap() <= mean && mean <= c["high"].as_f64().unwrap());
    // Two points at one rate fit no line: the cores of 50 MB/s follow from the coefficient.
    assert_eq!(proxy["by_fit"], false, "{proxy}");
    let cores = proxy["cores"]["mean"].as_f64().unwrap();
    assert!((cores - mean * 50.0 / 1000.0).abs() < 1e-9, "{proxy}");
    // The latency it adds at 1000 rec/s, against the reference measured in the same rounds.
    let rate = &proxy["rates"][0];
    assert_eq!(rate["rate_rec_s"], 1000);
    assert_eq!(rate["against"], "01-no-proxy-baseline");
    assert_eq!(rate["added_p99_ms"]["n"], 2, "{rate}");
    // Its produce phases (3e3 records at 1000 rec/s) are long enough for the hosts' steal.
    let steal = rate["host_steal_percent"]
        .as_f64()
        .unwrap_or_else(|| panic!("{rate}"));
    assert!((0.0..=100.0).contains(&steal), "{rate}");
    // The reference has no path of its own to size.
    assert!(line("01-no-proxy-baseline")["coefficient"].is_null());
    // Printed and kept in Markdown as well.
    let table = &stdout[stdout.find("Sizing").expect("a sizing table")..];
    let row = table.lines().find(|l| l.starts_with("02-")).unwrap();
    assert!(row.contains(&format!("{mean:.2} [")), "{row}");
    assert!(table.contains("Cores at 50 MB/s"), "{table}");
    assert!(table.contains("Sizing by Rate"), "{table}");
    let md = std::fs::read_to_string(run.join("sizing.md")).unwrap();
    assert!(md.contains("| 02-no-filters "), "{md}");
    // The charts draw the cost per scenario and over the rates.
    let svg = std::fs::read_to_string(run.join("charts.svg")).unwrap();
    assert!(svg.contains(r#"class="bar cost""#), "no cost bars");
    assert!(
        svg.contains("Path CPU (millicores per MB/s of produce + consume, median) by THROUGHPUT")
    );
    // The run reads back as any other (its sizing is no scenario record).
    let cmp = common::bin()
        .arg("compare")
        .arg(&run)
        .arg(&run)
        .args(["--format", "plain"])
        .output()
        .unwrap();
    let (cmp_out, cmp_err) = text(&cmp);
    assert_eq!(cmp.status.code(), Some(0), "{cmp_out}\n{cmp_err}");
    assert!(cmp_out.contains("Path mc per MB/s"), "{cmp_out}");
    assert_eq!(leftovers(&run_id_of(&run)).await, (0, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sizing_run_with_no_rate_below_the_ceiling_fails_and_names_from() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let out = perf_tests_command("sizing", results.path())
        .args(["--from", "5e6", "--to", "5e6", "--steps", "1"])
        .env("TEST", "01-.*")
        .env("NUM_RECORDS", "3e3")
        .env("REPEAT", "2")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stderr.contains(
            "no scenario sustained any rate of the sizing run: lower --from (now 5000000)"
        ),
        "{stderr}"
    );
    assert!(stdout.contains("no rate below the ceiling"), "{stdout}");
    // The saturation warning says so too, printed and kept.
    let saturated = "01-no-proxy-baseline: producer reached ";
    assert!(
        stdout.contains(saturated)
            && stdout
                .contains("of THROUGHPUT=5000000: the path is saturated below the requested rate"),
        "{stdout}"
    );
    // What was measured is kept.
    let (run, records) = the_run(results.path());
    assert_eq!(records.len(), 1);
    assert!(run.join("sizing.json").is_file());
    assert_eq!(leftovers(&run_id_of(&run)).await, (0, 0));
}

/// `benches/ab-campaign.sh` with the campaign's sides as two proxy images, `env` added.
fn image_campaign(out_dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(common::repo().join("benches/ab-campaign.sh"));
    for var in common::setting_vars() {
        cmd.env_remove(var);
    }
    cmd.env("PERF_TESTS_BIN", env!("CARGO_BIN_EXE_perf-tests"))
        .env("CAMPAIGNS", "1")
        .env("RUNS_PER_SIDE", "2")
        .env("TEST", "02-.*")
        .env("NUM_RECORDS", "2e3")
        .env("THROUGHPUT", "2e3")
        .env("WARM_UP_NUM_RECORDS_POST_BROKER_START", "200")
        .env("WARM_UP_NUM_RECORDS_PRE_TEST", "200")
        .env("OUT", out_dir)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_image_campaign_alternates_two_names_of_one_image_in_one_run_and_counts_it_a_a() {
    let _lock = engine_lock(false);
    const AGAIN: &str = "perf-tests-test/kroxylicious:again";
    tag(PROXY_A, AGAIN);
    let out_dir = tempfile::tempdir().unwrap();

    // Refused before any run, naming the setting at fault, with nothing written.
    for (env, says) in [
        (
            vec![("A_IMAGE", PROXY_A)],
            "A_IMAGE and B_IMAGE go together",
        ),
        (
            vec![("A_IMAGE", PROXY_A), ("B_IMAGE", PROXY_A)],
            "a matrix lists a name once",
        ),
        (
            vec![
                ("A_IMAGE", PROXY_A),
                ("B_IMAGE", "perf-tests-test/none:here"),
            ],
            "image perf-tests-test/none:here (from B_IMAGE) not found",
        ),
        (
            vec![("A_IMAGE", PROXY_A), ("B_IMAGE", AGAIN), ("B_ENV", "X=1")],
            "unset A_BIN, B_BIN, A_ENV and B_ENV",
        ),
    ] {
        let bad = image_campaign(&out_dir.path().join("refused"), &env);
        let (_, err) = text(&bad);
        assert_eq!(bad.status.code(), Some(2), "{env:?}: {err}");
        assert!(err.contains(says), "{env:?}: {err}");
        assert!(!out_dir.path().join("refused").exists(), "{env:?}");
    }

    let out = image_campaign(out_dir.path(), &[("A_IMAGE", PROXY_A), ("B_IMAGE", AGAIN)]);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "==> campaign 1 of 1: one run, {PROXY_A} and {AGAIN}, 2 repetitions each"
        )),
        "{stderr}"
    );
    // One run holds both sides, each measured twice and costed.
    let (run, records) = the_run(&out_dir.path().join("campaign-1").join("run"));
    assert_eq!(records.len(), 2);
    for (file, r) in &records {
        assert_eq!(r.repetitions.len(), 2, "{file}");
        let image = &r.combination["KROXYLICIOUS_IMAGE"];
        assert!(image == PROXY_A || image == AGAIN, "{file}: {image}");
        assert!(r.images.contains_key(image.as_str()), "{file}");
        for m in &r.repetitions {
            assert_eq!(m.integrity.consumed, 2000, "{file}");
            assert!(
                perf_tests::accounting::cost::path_coefficient(&m.cost).is_some(),
                "{file}"
            );
        }
    }
    let summary = common::clean_a_a_campaign(out_dir.path(), "02-no-filters", "path mc per MB/s");
    let ratio = summary
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                "path mc per MB/s, side b's median over side a's, per campaign: 02-no-filters: ",
            )
        })
        .unwrap_or_else(|| panic!("{summary}"));
    let ratio: f64 = ratio.trim().parse().unwrap();
    // The script's ratio (its own Python) is the median of B's repetitions' path cost over A's,
    // as the crate computes each repetition's from the same records.
    let median_cost = |image: &str| {
        let costs: Vec<f64> = records
            .iter()
            .filter(|(_, r)| r.combination["KROXYLICIOUS_IMAGE"] == image)
            .flat_map(|(_, r)| &r.repetitions)
            .map(|m| perf_tests::accounting::cost::path_coefficient(&m.cost).unwrap())
            .collect();
        assert_eq!(costs.len(), 2, "{image}");
        perf_tests::accounting::stats::median(&costs)
    };
    let expected = median_cost(AGAIN) / median_cost(PROXY_A);
    assert!(
        (ratio - expected).abs() <= 0.0005 + 1e-9,
        "the campaign's {ratio} against {expected:.4} from the records"
    );
    assert_eq!(leftovers(&run_id_of(&run)).await, (0, 0));
}
