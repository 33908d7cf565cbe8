//! The kroxylicious suite for real: Apache Kafka 4.4.0 and Kroxylicious 0.12.0 from the images
//! built here (`perf-tests images build`), on the real engine with small counts. The whole
//! default suite with the native driver and its transform and encryption paths with the
//! kafka-tools driver, a path check that fails, a proxy that rejects its
//! configuration and an image recipe whose Maven artifact does not resolve; each run must leave
//! nothing on the engine.

use crate::common::{self, json};
use common::{copy_tree, engine_lock, kill_during, leftovers, repo};

use std::path::{Path, PathBuf};
use std::process::Output;

use yaml_serde::Value as Yaml;

/// Records per measurement: enough for every counter and rate, small enough for a quick run.
const RECORDS: u64 = 3000;

/// The default suite's scenarios, with what each declares the broker holds and the consumer
/// receives.
const SCENARIOS: [(&str, &str, &str); 5] = [
    ("01-no-proxy-baseline", "unchanged", "sent"),
    ("02-no-filters", "unchanged", "sent"),
    ("03-transform-filter", "upper-cased", "upper-cased"),
    ("04-envelope-encryption-filter", "encrypted", "sent"),
    (
        "05-envelope-encryption-filter-no-encrypt",
        "unchanged",
        "sent",
    ),
];

/// Sample records of every path check.
const SAMPLE: u64 = 20;

/// Runs `perf-tests run` from the repository with only `env` set among the settings, a small
/// run's (`common::small_run`) and `RECORDS` unless `env` sets them.
fn run(env: &[(&str, &str)], results: &Path) -> Output {
    let mut cmd = common::bin();
    cmd.arg("run");
    common::small_run(&mut cmd, results).env("NUM_RECORDS", RECORDS.to_string());
    cmd.envs(env.iter().copied());
    cmd.output().expect("perf-tests starts")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The outcome of a run, for assertion messages.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn of(out: Output) -> Ran {
        Ran {
            code: out.status.code(),
            stdout: text(&out.stdout),
            stderr: text(&out.stderr),
        }
    }

    fn run_id(&self) -> String {
        common::run_id(&self.stderr)
    }

    /// A run that stopped before it measured anything: exit 1, no table, no results in
    /// `results`; returns its error (from `error:` on).
    fn stopped(&self, results: &Path) -> &str {
        assert_eq!(self.code, Some(1), "{self}");
        assert!(!self.stdout.contains("Producer Results"), "{self}");
        assert_eq!(
            std::fs::read_dir(results).unwrap().count(),
            0,
            "no results are written"
        );
        &self.stderr[self
            .stderr
            .find("error:")
            .unwrap_or_else(|| panic!("no error in\n{self}"))..]
    }

    /// The rows of the table titled `title` in stdout, each row's cells by column name.
    fn table(&self, title: &str) -> Vec<Vec<(String, String)>> {
        let mut lines = self.stdout.lines().skip_while(|l| *l != title);
        assert!(lines.next().is_some(), "no {title} table in\n{self}");
        let header = cells(lines.next().unwrap());
        let dashes = lines.next().unwrap();
        assert!(dashes.starts_with("----"), "{title}: {dashes}");
        lines
            .take_while(|l| l.starts_with(|c: char| c.is_ascii_digit()))
            .map(|l| {
                let row = cells(l);
                assert_eq!(row.len(), header.len(), "{title}: {l:?}");
                header.iter().cloned().zip(row).collect()
            })
            .collect()
    }

    /// The first cell of every row of a table.
    fn names(&self, title: &str) -> Vec<String> {
        self.table(title)
            .into_iter()
            .map(|row| row[0].1.clone())
            .collect()
    }

    /// The results directory the run printed.
    fn results_dir(&self) -> PathBuf {
        self.stdout
            .lines()
            .find_map(|l| l.strip_prefix("Results: "))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("no results directory in\n{self}"))
    }
}

impl std::fmt::Display for Ran {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// The cells of a plain table line: columns are separated by two or more spaces.
fn cells(line: &str) -> Vec<String> {
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect()
}

fn cell<'a>(row: &'a [(String, String)], column: &str) -> &'a str {
    row.iter()
        .find(|(c, _)| c == column)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no column {column:?} in {row:?}"))
}

fn number(row: &[(String, String)], column: &str) -> f64 {
    let v = cell(row, column);
    v.parse()
        .unwrap_or_else(|e| panic!("{column} = {v:?} is not a number ({e}) in {row:?}"))
}

/// Asserts that nothing of the run is left on the engine.
async fn assert_nothing_left(ran: &Ran) {
    assert_eq!(
        leftovers(&ran.run_id()).await,
        (0, 0),
        "containers/networks left behind by\n{ran}"
    );
}

/// A successful run of `scenarios` (names with their expectations): the producer and consumer
/// tables have a row for each with the records sent and consumed at non-zero rates, every path
/// check holds as declared, in the tables, on stderr and in `<scenario>.json`; nothing is left.
async fn assert_measured_and_proven(ran: &Ran, results: &Path, scenarios: &[(&str, &str, &str)]) {
    assert_eq!(ran.code, Some(0), "{ran}");
    let names: Vec<&str> = scenarios.iter().map(|s| s.0).collect();
    for title in ["Producer Results", "Consumer Results", "Path checks"] {
        assert_eq!(ran.names(title), names, "{title}\n{ran}");
    }
    for row in ran.table("Producer Results") {
        assert_eq!(cell(&row, "Sent"), RECORDS.to_string(), "{row:?}");
        assert!(number(&row, "Rate rec/s") > 0.0, "{row:?}");
        assert!(number(&row, "Rate Mi/s") > 0.0, "{row:?}");
    }
    for row in ran.table("Consumer Results") {
        assert_eq!(cell(&row, "Consumed recs"), RECORDS.to_string(), "{row:?}");
        assert!(number(&row, "Consumed rec/s") > 0.0, "{row:?}");
        assert!(number(&row, "Fetch rec/s") > 0.0, "{row:?}");
    }
    // Each rate in records agrees with the same rate in MiB (1024-byte records, two decimals):
    // catches a rate read from the wrong line or column without depending on timing.
    for (table, records, mib) in [
        ("Producer Results", "Rate rec/s", "Rate Mi/s"),
        ("Consumer Results", "Consumed rec/s", "Consumed Mi/s"),
    ] {
        for row in ran.table(table) {
            let expected = number(&row, records) * 1024.0 / (1024.0 * 1024.0);
            assert!(
                (number(&row, mib) - expected).abs() <= 0.006,
                "{table}: {mib} is not {records} x 1024 B ({expected:.3}): {row:?}"
            );
        }
    }
    // Each rate is its records over its own span, and that span lies within the phase the
    // runner costed (read by another process at the phase's edges, on the host's one clock), in
    // which the engine counted the records' bytes leaving and reaching the load generator: so
    // the rate is of the records the path carried then, not over a longer or shorter time.
    let dir = ran.results_dir();
    for (name, _, _) in scenarios {
        let v = json(&dir.join(format!("{name}.json")));
        let reps = v["repetitions"].as_array().unwrap();
        for m in reps {
            for (side, phase, count, rate, bytes) in [
                ("producer", "produce", "sent", "rate_rec_s", "tx_bytes"),
                (
                    "consumer",
                    "consume",
                    "consumed_recs",
                    "consumed_rec_s",
                    "rx_bytes",
                ),
            ] {
                let records = m[side][count].as_f64().unwrap();
                let cost = m["cost"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|c| c["phase"] == phase)
                    .unwrap_or_else(|| panic!("{name}: no {phase} phase in {m}"));
                // The kafka-tools driver's one-off containers are not sampled, and its tools do
                // not say when they measured.
                let Some(length) = m[side]["span"]["length_s"].as_f64() else {
                    continue;
                };
                let load = common::service_entry(&cost["services"], "workload (load generator)");
                let moved = load[bytes].as_f64().unwrap();
                assert!(
                    moved >= records * 1024.0,
                    "{name} {phase}: the load generator moved {moved} bytes for {records} records"
                );
                let start = m[side]["span"]["start_unix_s"].as_f64().unwrap();
                let from = cost["start_unix_s"].as_f64().unwrap();
                let to = from + cost["seconds"].as_f64().unwrap();
                assert!(
                    from <= start && start + length <= to,
                    "{name} {phase}: measured {start}..{} outside the phase {from}..{to}",
                    start + length
                );
                let got = m[side][rate].as_f64().unwrap();
                assert!(
                    (got - records / length).abs() <= got * 1e-6,
                    "{name} {phase}: {got} rec/s for {records} records in {length} s"
                );
            }
        }
    }
    let sample = SAMPLE.to_string();
    for (row, (name, broker, consumer)) in ran.table("Path checks").iter().zip(scenarios) {
        assert_eq!(cell(row, "Broker holds"), *broker, "{name}: {row:?}");
        assert_eq!(cell(row, "Consumer receives"), *consumer, "{name}: {row:?}");
        assert_eq!(cell(row, "Records"), sample, "{row:?}");
        assert_eq!(cell(row, "Broker as expected"), sample, "{row:?}");
        assert_eq!(cell(row, "Consumer as expected"), sample, "{row:?}");
        assert_eq!(cell(row, "Result"), "holds", "{row:?}");
        let said = format!(
            "path check holds: broker holds {broker} {SAMPLE}/{SAMPLE}, consumer receives \
             {consumer} {SAMPLE}/{SAMPLE}"
        );
        assert!(ran.stderr.contains(&said), "{said:?} for {name} in\n{ran}");
    }
    assert!(!ran.stdout.contains("FAILED"), "{ran}");

    assert_eq!(dir.parent(), Some(results), "{}", dir.display());
    let info = json(&dir.join("run.json"));
    assert_eq!(info["run_id"].as_str(), Some(ran.run_id().as_str()));
    let tables = std::fs::read_to_string(dir.join("tables.txt")).unwrap();
    assert!(tables.contains("Path checks\n"), "{tables}");
    for (name, broker, consumer) in scenarios {
        let v = json(&dir.join(format!("{name}.json")));
        let check = &v["path_check"];
        assert_eq!(check["expect"]["broker"], *broker, "{name}: {check}");
        assert_eq!(check["expect"]["consumer"], *consumer, "{name}: {check}");
        assert_eq!(check["records"], SAMPLE, "{name}: {check}");
        assert_eq!(check["broker_ok"], check["records"], "{name}: {check}");
        assert_eq!(check["consumer_ok"], check["records"], "{name}: {check}");
        assert_eq!(check["direct"], "broker1:9092", "{name}: {check}");
        assert!(check["first_mismatch"].is_null(), "{name}: {check}");
        let m = &v["measurement"];
        for counter in ["requested", "acknowledged", "end_offsets", "consumed"] {
            assert_eq!(m["integrity"][counter], RECORDS, "{name} {counter}: {m}");
        }
    }
    assert_nothing_left(ran).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn default_suite_runs_every_scenario_and_proves_each_path() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    // As a user runs it: the network's ceiling measured too.
    let ran = Ran::of(run(&[("NETWORK_CEILING", "1")], results.path()));
    assert_measured_and_proven(&ran, results.path(), &SCENARIOS).await;
    // The default suite is the kroxylicious one, and one run directory holds everything.
    let runs: Vec<_> = std::fs::read_dir(results.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs, [ran.results_dir()]);
    let info = json(&runs[0].join("run.json"));
    let suite = info["suite"].as_str().expect("run.json names the suite");
    assert!(suite.ends_with("scenarios/kroxylicious"), "{suite}");
    assert_load_generator_sampled(&ran);
    assert_the_kms_served_over_the_network(&ran);
}

/// 04 and 05 used the KMS service: the results say so, 04's setup step created its topic's key
/// through the KMS's API (and the path check, which found every record encrypted at the broker,
/// shows the proxy found that key there: it has no other), and the KMS was sampled.
fn assert_the_kms_served_over_the_network(ran: &Ran) {
    let created = "setup: kms: created key arn:aws:kms:us-east-1:111122223333:key/";
    let line = ran
        .stderr
        .lines()
        .find(|l| l.contains(created))
        .unwrap_or_else(|| panic!("no key created in\n{ran}"));
    assert!(
        line.ends_with(" as alias/KEK_perf-tests-04-envelope-encryption-filter"),
        "{line}"
    );
    assert_eq!(
        ran.stderr.matches(created).count(),
        1,
        "one key, 04's: {ran}"
    );
    let rows = ran.table("Resources");
    for (name, _, _) in SCENARIOS {
        let v = json(&ran.results_dir().join(format!("{name}.json")));
        let sampled = rows
            .iter()
            .any(|r| cell(r, "Name") == name && cell(r, "Service") == "kms");
        if name.starts_with("04") || name.starts_with("05") {
            assert_eq!(
                v["kms"]["provider"], "AwsKmsService",
                "{name}: {}",
                v["kms"]
            );
            assert_eq!(v["kms"]["service"], "kms", "{name}");
            let kms_image = perf_tests::settings::Settings::default().kms_image;
            assert!(
                v["images"][&kms_image].is_string(),
                "{name}: {}",
                v["images"]
            );
            assert!(sampled, "{name}: no kms row in Resources\n{ran}");
        } else {
            assert!(v["kms"].is_null(), "{name}: {}", v["kms"]);
            assert!(!sampled, "{name}");
        }
    }
}

/// Every scenario has a Resources row for its workload container, sampled and kept in
/// `<scenario>.json`, and the load generator used CPU. (One scenario's few thousand records can
/// fall between two once-a-second samples, so CPU is asserted over the whole suite.)
fn assert_load_generator_sampled(ran: &Ran) {
    const LOAD_GENERATOR: &str = "workload (load generator)";
    let rows = ran.table("Resources");
    let mut cpu = 0.0;
    for (name, _, _) in SCENARIOS {
        let row = rows
            .iter()
            .find(|r| cell(r, "Name") == name && cell(r, "Service") == LOAD_GENERATOR)
            .unwrap_or_else(|| panic!("no {LOAD_GENERATOR} row for {name} in\n{ran}"));
        cpu += number(row, "CPU % peak");
        let v = json(&ran.results_dir().join(format!("{name}.json")));
        let kept = common::service_entry(&v["resources"], LOAD_GENERATOR);
        assert!(kept["samples"].as_u64().unwrap_or(0) > 0, "{name}: {kept}");
        assert!(
            kept["mem_mib_peak"].as_f64().unwrap_or(0.0) > 0.0,
            "{name}: {kept}"
        );
    }
    assert!(
        cpu > 0.0,
        "the load generator used no CPU in any scenario:\n{ran}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kafka_tools_driver_measures_and_the_native_path_check_proves() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    // The Java tools through the proxy where it changes the records both ways: 03's transform
    // (seen at the broker and by the consumer) and 04's encryption (at the broker only). The
    // other paths add nothing the driver does differently, and each scenario is four JVMs.
    let scenarios = &SCENARIOS[2..4];
    let ran = Ran::of(run(
        &[("DRIVER", "kafka-tools"), ("TEST", "0[34]-.*")],
        results.path(),
    ));
    assert_measured_and_proven(&ran, results.path(), scenarios).await;
    // The Java producer tool prints neither its failures nor its time: the results say those
    // two are worked out, not measured.
    for (name, _, _) in scenarios {
        let v = json(&ran.results_dir().join(format!("{name}.json")));
        for m in v["repetitions"].as_array().unwrap() {
            assert_eq!(
                m["producer"]["derived"],
                serde_json::json!(["failed", "elapsed_s"]),
                "{name}"
            );
        }
    }
}

/// The kroxylicious suites and their Compose file, copied into a temporary directory in the
/// repository's layout (the suite names the Compose file as `../../compose/kroxylicious.yaml`,
/// the Compose file names the proxy configurations as `../scenarios/...`, and the recipes name
/// their files relative to `images/recipes.yaml`). Returns the directory and the copied default suite.
fn copied_suite() -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    for suite in [
        "scenarios/kroxylicious",
        "scenarios/kroxylicious-inmemory-kms",
        "scenarios/kroxylicious-vault",
    ] {
        copy_tree(&repo().join(suite), &root.path().join(suite));
    }
    std::fs::create_dir_all(root.path().join("compose")).unwrap();
    std::fs::copy(
        repo().join("compose/kroxylicious.yaml"),
        root.path().join("compose/kroxylicious.yaml"),
    )
    .unwrap();
    let suite = root.path().join("scenarios/kroxylicious");
    (root, suite)
}

/// Replaces `from` (which must occur) with `to` in a file.
fn edit(file: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains(from), "{from:?} not in {}", file.display());
    std::fs::write(file, text.replace(from, to)).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_path_that_does_not_do_what_its_scenario_declares_fails_the_run() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let (_root, suite) = copied_suite();
    // 05 has no key for its topic: its records pass the filter unencrypted.
    let name = "05-envelope-encryption-filter-no-encrypt";
    edit(
        &suite.join(name).join("scenario.yaml"),
        "expect: { broker: unchanged, consumer: sent }",
        "expect: { broker: encrypted, consumer: sent }",
    );
    let ran = Ran::of(run(
        &[("SCENARIOS", suite.to_str().unwrap()), ("TEST", "05.*")],
        results.path(),
    ));
    assert_eq!(ran.code, Some(1), "{ran}");
    assert!(
        ran.stderr.contains(&format!(
            "error: the path does not do what the scenario declares (path check failed) in: {name}"
        )),
        "{ran}"
    );
    assert!(
        ran.stderr.contains(&format!(
            "path check FAILED: broker holds encrypted 0/{SAMPLE}, consumer receives sent \
             {SAMPLE}/{SAMPLE}"
        )),
        "{ran}"
    );
    assert!(
        ran.stderr
            .contains("the broker holds the record as sent (not encrypted)"),
        "{ran}"
    );
    // The measured rows say that they do not measure what the scenario claims.
    let failed = format!("{name} (path check FAILED)");
    for title in ["Producer Results", "Consumer Results"] {
        assert_eq!(ran.names(title), [failed.as_str()], "{title}\n{ran}");
    }
    let checks = ran.table("Path checks");
    assert_eq!(checks.len(), 1, "{ran}");
    assert_eq!(cell(&checks[0], "Broker holds"), "encrypted");
    assert_eq!(cell(&checks[0], "Broker as expected"), "0");
    assert_eq!(cell(&checks[0], "Consumer as expected"), SAMPLE.to_string());
    assert!(
        cell(&checks[0], "Result").starts_with("FAILED: "),
        "{:?}",
        checks[0]
    );
    // The results are still saved, with the failed check.
    let v = json(&ran.results_dir().join(format!("{name}.json")));
    assert_eq!(v["path_check"]["broker_ok"], 0, "{v}");
    assert_eq!(v["path_check"]["consumer_ok"], SAMPLE, "{v}");
    assert_nothing_left(&ran).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_that_rejects_its_configuration_stops_the_run_with_its_reason() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let (_root, suite) = copied_suite();
    edit(
        &suite.join("02-no-filters/proxy-config.yaml"),
        "defaultFilters: []",
        "filterDefinitions:\n  - name: broken\n    type: NoSuchFilter\n    config: {}\n\
         defaultFilters: [broken]",
    );
    let ran = Ran::of(run(
        &[("SCENARIOS", suite.to_str().unwrap()), ("TEST", "02.*")],
        results.path(),
    ));
    assert_eq!(ran.code, Some(1), "{ran}");
    let error = &ran.stderr[ran
        .stderr
        .find("error:")
        .unwrap_or_else(|| panic!("no error in\n{ran}"))..];
    // Found by the bring-up or by the watch over every phase, whichever sees the exit first.
    assert!(
        error.starts_with("error: scenario 02-no-filters: ")
            && error.contains("service \"kroxylicious-no-filters\" (container "),
        "{error}"
    );
    // The proxy's own log says why: Kroxylicious does not know the filter type.
    assert!(error.contains("log lines ---"), "{error}");
    assert!(
        error.contains("Couldn't parse configuration")
            && error.contains("plugin instance for name 'NoSuchFilter'"),
        "{error}"
    );
    assert!(!ran.stdout.contains("Producer Results"), "{ran}");
    assert_eq!(
        std::fs::read_dir(results.path()).unwrap().count(),
        0,
        "no results are written"
    );
    assert_nothing_left(&ran).await;
}

/// Runs `01` of a copy of the default suite whose broker image is `image`, made by the Maven
/// recipe `recipe`; the run must stop before anything starts, and its error (from `error:` on)
/// is returned.
async fn run_with_broken_recipe(image: &str, recipe: &str) -> String {
    let results = tempfile::tempdir().unwrap();
    let (_root, suite) = copied_suite();
    let file = suite.join("images/recipes.yaml");
    let mut doc: Yaml = yaml_serde::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    doc.as_mapping_mut()
        .expect("the suite's recipes are a map")
        .insert(image.into(), yaml_serde::from_str(recipe).unwrap());
    std::fs::write(&file, yaml_serde::to_string(&doc).unwrap()).unwrap();

    let ran = Ran::of(run(
        &[
            ("SCENARIOS", suite.to_str().unwrap()),
            ("TEST", "01.*"),
            ("KAFKA_IMAGE", image),
        ],
        results.path(),
    ));
    assert_eq!(ran.code, Some(1), "{ran}");
    let error = ran.stderr[ran
        .stderr
        .find("error:")
        .unwrap_or_else(|| panic!("no error in\n{ran}"))..]
        .to_string();
    assert!(
        error.starts_with(&format!("error: image recipe {image} ")),
        "{error}"
    );
    assert!(
        !ran.stderr.contains("==> starting"),
        "nothing starts: {ran}"
    );
    assert!(!ran.stdout.contains("Producer Results"), "{ran}");
    assert_eq!(
        std::fs::read_dir(results.path()).unwrap().count(),
        0,
        "no results are written"
    );
    assert_nothing_left(&ran).await;
    let docker = bollard::Docker::connect_with_defaults().unwrap();
    assert!(
        docker.inspect_image(image).await.is_err(),
        "{image} must not exist"
    );
    error
}

#[tokio::test(flavor = "multi_thread")]
async fn a_maven_artifact_that_does_not_resolve_stops_the_run_before_anything_starts() {
    let _lock = engine_lock(false);
    let error = run_with_broken_recipe(
        "perf-tests-test/broken:1",
        "maven:\n  artifacts: [org.apache.kafka:kafka_2.13:0.0.404]\n  jdk: 17\n  \
         entrypoint: [/bin/busybox, 'true']\n",
    )
    .await;
    // Maven's own error names the artifact it could not find, without its generic advice or
    // terminal colour codes.
    assert!(
        error.contains("[ERROR]") && error.contains("kafka_2.13") && error.contains("0.0.404"),
        "{error}"
    );
    assert!(
        !error.contains("-X switch") && !error.contains('\x1b'),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_jdk_older_than_the_artifact_stops_the_run_before_anything_starts() {
    let _lock = engine_lock(false);
    // Lucene 10 is compiled for Java 21 (class file version 65); the recipe names JDK 17.
    let error = run_with_broken_recipe(
        "perf-tests-test/too-new:1",
        "maven:\n  artifacts: [org.apache.lucene:lucene-core:10.3.2]\n  jdk: 17\n  \
         entrypoint: [/bin/busybox, 'true']\n",
    )
    .await;
    assert!(
        error.contains("org.apache.lucene:lucene-core:10.3.2 is compiled for Java 21")
            && error.contains("class file version 65")
            && error.contains("set `jdk: 21` or later"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_killed_mid_measurement_ends_the_run_at_once_naming_it() {
    // Far more records than the test waits for: only the kill can end the measurement early.
    let env = [("NUM_RECORDS", "1e7")];
    kill_during(
        "02.*",
        "kroxylicious-no-filters",
        &env,
        ("10000000", "the measurement (its produce phase)"),
        |_| {},
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_killed_during_the_warm_up_ends_the_run_at_once_naming_it_and_the_warm_up() {
    // A warm-up far longer than the test waits for: only the kill can end it early.
    let env = [
        ("NUM_RECORDS", "1000"),
        ("WARM_UP_NUM_RECORDS_PRE_TEST", "1e7"),
    ];
    kill_during(
        "02.*",
        "kroxylicious-no-filters",
        &env,
        ("10000000", "the warm-up before the measurement"),
        |_| {},
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kms_that_goes_down_before_the_measurement_ends_the_run_naming_it() {
    // The KMS dies while the proxy encrypts the warm-up's records through it.
    let env = [
        ("NUM_RECORDS", "1000"),
        ("WARM_UP_NUM_RECORDS_PRE_TEST", "1e7"),
    ];
    kill_during(
        "04.*",
        "kms",
        &env,
        ("10000000", "the warm-up before the measurement"),
        |_| {},
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kms_that_is_down_when_its_scenario_starts_stops_the_run_before_measuring() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    // An image that is no KMS: its entrypoint prints its environment and exits at once, so the
    // KMS never listens and the proxy that needs it never starts.
    let ran = Ran::of(run(
        &[
            ("TEST", "04.*"),
            ("KMS_IMAGE", "perf-tests/kafka-tools:4.4.0"),
        ],
        results.path(),
    ));
    let error = ran.stopped(results.path());
    assert!(
        error.starts_with("error: scenario 04-envelope-encryption-filter: ")
            && error.contains("depends on \"kms\": service \"kms\" (container ")
            && error.contains("exited with code 0"),
        "{error}"
    );
    // The KMS's own last lines are quoted (this image's: its environment).
    assert!(error.contains("KMS_REGION=us-east-1"), "{error}");
    let scenario = &ran.stderr[ran.stderr.find("==> 04-").unwrap()..];
    assert!(
        !scenario.contains("produce ["),
        "nothing was measured: {ran}"
    );
    assert!(!ran.stdout.contains("Producer Results"), "{ran}");
    assert_eq!(
        std::fs::read_dir(results.path()).unwrap().count(),
        0,
        "no results are written"
    );
    assert_nothing_left(&ran).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kms_setup_step_that_fails_stops_the_run_quoting_the_kms() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let (_root, suite) = copied_suite();
    // The same alias twice: the KMS refuses the second.
    let step =
        r#"  - exec: { service: kms, command: [/opt/perf-tests/kms-key, create, "KEK_${TOPIC}"] }"#;
    edit(
        &suite.join("04-envelope-encryption-filter/scenario.yaml"),
        step,
        &format!("{step}\n{step}"),
    );
    let ran = Ran::of(run(
        &[("SCENARIOS", suite.to_str().unwrap()), ("TEST", "04.*")],
        results.path(),
    ));
    let error = ran.stopped(results.path());
    assert!(
        error.contains(
            "setup step `/opt/perf-tests/kms-key create KEK_perf-tests-04-envelope-encryption-filter` \
             in service kms exited with 1"
        ),
        "{error}"
    );
    // The KMS's own answer.
    assert!(
        error.contains("CreateAlias failed (HTTP 400)")
            && error.contains("AlreadyExistsException")
            && error.contains("alias/KEK_perf-tests-04-envelope-encryption-filter already exists"),
        "{error}"
    );
    assert_nothing_left(&ran).await;
}

/// The cost of each measured phase comes from counters read at its edges: the records crossed
/// the proxy within the phase, and the warm-up before it (as many records again) is not in it.
#[tokio::test(flavor = "multi_thread")]
async fn the_cost_of_each_phase_is_exact_to_it() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let n: u64 = 20_000;
    let size: u64 = 1024;
    let ran = Ran::of(run(
        &[
            ("TEST", "0[12].*"),
            ("NUM_RECORDS", "2e4"),
            ("WARM_UP_NUM_RECORDS_PRE_TEST", "2e4"),
            ("THROUGHPUT", "1e4"),
        ],
        results.path(),
    ));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let dir = ran.results_dir();
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    for (scenario, proxy) in [
        ("01-no-proxy-baseline", None),
        ("02-no-filters", Some("kroxylicious-no-filters")),
    ] {
        let result = json(&dir.join(format!("{scenario}.json")));
        let cost = result["measurement"]["cost"]
            .as_array()
            .unwrap_or_else(|| panic!("{result}"));
        let phases: Vec<&str> = cost.iter().map(|p| p["phase"].as_str().unwrap()).collect();
        assert_eq!(phases, ["produce", "consume"], "{scenario}");
        for p in cost {
            assert_eq!(p["records"], n, "{p}");
            assert_eq!(p["record_bytes"], n * size, "{p}");
            let seconds = p["seconds"].as_f64().unwrap();
            // 2e4 records at 1e4 rec/s: two seconds of producing at least.
            if p["phase"] == "produce" {
                assert!(seconds >= 2.0, "{p}");
            }
            // The engine's host clock gives the share of the host's CPU stolen over a phase
            // of a second or more (under that it is mostly rounding, and left out).
            match p["host_steal_percent"].as_f64() {
                Some(steal) => assert!((0.0..=100.0).contains(&steal), "{p}"),
                None => assert!(seconds < 1.5, "no steal figure over {seconds} s: {p}"),
            }
            let service = |name: &str| common::service_entry(&p["services"], name).clone();
            let load = service("workload (load generator)");
            assert_eq!(load["role"], "load-generator");
            let broker = service("broker1");
            assert_eq!(broker["role"], "run-wide");
            for s in [&load, &broker] {
                let cpu = s["cpu_s"].as_f64().unwrap();
                // No container uses more CPU than the machine has over the phase.
                assert!(cpu > 0.0 && cpu <= seconds * cpus, "{s} in {p}");
            }
            let Some(proxy) = proxy else { continue };
            let proxy = service(proxy);
            assert_eq!(proxy["role"], "path");
            // Every record crossed the proxy once in the phase (received from the producer
            // and sent to the consumer); the warm-up's as many records are not counted.
            let bytes = (n * size) as f64;
            let crossed = if p["phase"] == "produce" {
                proxy["rx_bytes"].as_f64().unwrap()
            } else {
                proxy["tx_bytes"].as_f64().unwrap()
            };
            assert!(
                (bytes..1.5 * bytes).contains(&crossed),
                "{crossed} bytes for {bytes} in {p}"
            );
        }
    }
    let tables = std::fs::read_to_string(dir.join("tables.txt")).unwrap();
    let row = tables
        .lines()
        .skip_while(|l| *l != "Cost")
        .find(|l| l.starts_with("02-no-filters") && l.contains("path (own services)"))
        .unwrap_or_else(|| panic!("no path cost row in\n{tables}"));
    assert!(row.contains("produce"), "{row}");
    let header = tables
        .lines()
        .skip_while(|l| *l != "Cost")
        .nth(1)
        .unwrap_or_default();
    assert!(header.contains("Host steal %"), "{tables}");
    assert_nothing_left(&ran).await;
}

/// Each JVM's CPU in a phase is split by kind of thread, read in its container at the phase's
/// edges, and WARM_UP_JIT_PERCENT reads the same between the warm-up's rounds: the progress
/// names the JVM whose compilers were busiest and the share they took.
#[tokio::test]
async fn each_jvm_s_cpu_is_split_by_thread_and_the_warm_up_reads_its_compilers() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let ran = Ran::of(run(
        &[
            ("TEST", "02-.*"),
            ("NUM_RECORDS", "5000"),
            ("WARM_UP_SECONDS_PRE_TEST", "2"),
            // Any share is under 100%: the warm-up asks after every round and ends once its
            // window of 10 s has passed.
            ("WARM_UP_JIT_PERCENT", "100"),
        ],
        results.path(),
    ));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let asked = regex::Regex::new(
        r"warm-up round \d+: \d+ s; the JIT compilers of (broker1|kroxylicious-no-filters) used (\d+\.\d)% of its CPU in the last 10 s \(until under 100%\)",
    )
    .unwrap();
    let shares: Vec<f64> = asked
        .captures_iter(&ran.stderr)
        .map(|c| c[2].parse().unwrap())
        .collect();
    assert!(!shares.is_empty(), "{}", ran.stderr);
    let dir = ran.results_dir();
    let result = json(&dir.join("02-no-filters.json"));
    for p in result["measurement"]["cost"].as_array().unwrap() {
        for jvm in ["broker1", "kroxylicious-no-filters"] {
            let s = common::service_entry(&p["services"], jvm);
            let cpu = s["cpu_s"].as_f64().unwrap();
            let (jit, gc) = (
                s["threads"]["jit_s"]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{s}")),
                s["threads"]["gc_s"].as_f64().unwrap(),
            );
            // Threads' ticks are 10 ms: their sum may pass the cgroup's by a tick or two each.
            // (That a JVM which compiled has JIT seconds, and that GC figures are its log's, is
            // checked against the JVM's own logs in gc_figures_are_the_pauses_the_jvm_logged…)
            assert!(jit + gc <= cpu + 0.05, "{s} in {p}");
        }
        // The load generator is no JVM.
        let load = common::service_entry(&p["services"], "workload (load generator)");
        assert!(load.get("threads").is_none(), "{load}");
    }
    let tables = std::fs::read_to_string(dir.join("tables.txt")).unwrap();
    let rows: Vec<&str> = tables
        .lines()
        .skip_while(|l| *l != "JVM Threads")
        .take_while(|l| !l.is_empty() && *l != "Path checks")
        .filter(|l| l.starts_with("02-no-filters"))
        .collect();
    assert_eq!(rows.len(), 4, "{tables}");
    assert!(
        rows.iter().any(|r| r.contains("kroxylicious-no-filters")),
        "{tables}"
    );
    assert_nothing_left(&ran).await;
}

/// WARM_UP_SECONDS_PRE_TEST: the pre-test warm-up repeats its rounds through the scenario's path
/// until the time has passed, and none of it is in the measurement.
#[tokio::test]
async fn a_timed_warm_up_repeats_its_rounds_for_its_seconds_and_is_not_measured() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let ran = Ran::of(run(
        &[("TEST", "01-.*"), ("WARM_UP_SECONDS_PRE_TEST", "3")],
        results.path(),
    ));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    // 200 records a round take far less than 3 s on any machine: several rounds ran.
    assert!(ran.stderr.contains("warm-up round 2: "), "{}", ran.stderr);
    let result = json(&ran.results_dir().join("01-no-proxy-baseline.json"));
    let m = &result["measurement"];
    let steps = |k: &str| {
        m["steps_s"][k]
            .as_f64()
            .unwrap_or_else(|| panic!("{k} in {m}"))
    };
    let warm = steps("warm_up_produce") + steps("warm_up_consume");
    assert!(warm >= 3.0, "the warm-up lasted {warm} s");
    assert_eq!(m["producer"]["sent"], RECORDS, "{m}");
    assert_eq!(m["integrity"]["consumed"], RECORDS, "{m}");
    assert_eq!(leftovers(&ran.run_id()).await, (0, 0), "{}", ran.stderr);
}

/// One pause of a JVM's unified GC log (`-Xlog:gc:…:utctime,level,tags`): when it was logged
/// (Unix seconds) and how long it stood, from lines such as `[2026-12-06T05:44:15.123+0000]
/// [info][gc] GC(3) Pause Young (Normal) (G1 Evacuation Pause) 3M->1M(64M) 2.345ms`.
fn gc_log_pauses(log: &str) -> Vec<(f64, f64)> {
    let line = regex::Regex::new(
        r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4})\].*\bGC\(\d+\) Pause .* (\d+(?:\.\d+)?)ms$",
    )
    .unwrap();
    log.lines()
        .filter_map(|l| {
            let c = line.captures(l)?;
            let at = chrono::DateTime::parse_from_str(&c[1], "%Y-%m-%dT%H:%M:%S%.3f%z").ok()?;
            Some((at.timestamp_millis() as f64 / 1000.0, c[2].parse().ok()?))
        })
        .collect()
}

/// The GC table's figures are a real JVM's own, and its JIT seconds those of a JVM that compiled: the proxy, given a young generation of 2 MB so
/// that it collects several times in a phase, also writes its GC log to a directory of this
/// test's; the pauses it logged within each measured phase are the phase's. The runner reads its
/// own copy of the log at the phase's edges, while reading the counters, which takes a moment
/// before each edge's time: a pause logged then may fall on either side, so the figures must lie
/// between those of the pauses logged well within the phase and those of the pauses logged from
/// a margin before it to its end.
#[tokio::test(flavor = "multi_thread")]
async fn gc_figures_are_the_pauses_the_jvm_logged_in_each_phase() {
    let _lock = engine_lock(false);
    let root = tempfile::tempdir().unwrap();
    for dir in [
        "scenarios/kroxylicious",
        "scenarios/kroxylicious-inmemory-kms",
        "scenarios/kroxylicious-vault",
        "compose",
    ] {
        copy_tree(&repo().join(dir), &root.path().join(dir));
    }
    let logs = root.path().join("gc");
    std::fs::create_dir(&logs).unwrap();
    // Whatever user the proxy runs as writes there.
    std::fs::set_permissions(&logs, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let compose = root.path().join("compose/kroxylicious.yaml");
    let text = std::fs::read_to_string(&compose).unwrap();
    let from = "  kroxylicious-no-filters:\n    <<: *kroxylicious\n";
    assert!(text.contains(from));
    let with = format!(
        "{from}    environment:\n      KROXYLICIOUS_HEAP_OPTS: -Xmx256m -Xmn2m\n      \
         JAVA_OPTIONS: -Xlog:gc:file=/gc/gc.log:utctime,level,tags \
         -Xlog:jit+compilation=debug:file=/gc/jit.log:utctime,level,tags\n    volumes:\n      - \
         {}:/gc\n",
        logs.display()
    );
    std::fs::write(&compose, text.replace(from, &with)).unwrap();
    let results = tempfile::tempdir().unwrap();
    let suite = root.path().join("scenarios/kroxylicious");
    let ran = Ran::of(run(
        &[
            ("TEST", "02-.*"),
            ("SCENARIOS", suite.to_str().unwrap()),
            ("NUM_RECORDS", "60000"),
            ("THROUGHPUT", "6000"),
            ("NETWORK_CEILING", "0"),
        ],
        results.path(),
    ));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let pauses = gc_log_pauses(&std::fs::read_to_string(logs.join("gc.log")).unwrap());
    // Each method the JIT compilers compiled, when (the JVM's own log, one line a method).
    let compiled: Vec<f64> = std::fs::read_to_string(logs.join("jit.log"))
        .unwrap()
        .lines()
        .filter_map(|l| {
            let at = l.strip_prefix('[')?.split_once(']')?.0;
            let at = chrono::DateTime::parse_from_str(at, "%Y-%m-%dT%H:%M:%S%.3f%z").ok()?;
            Some(at.timestamp_millis() as f64 / 1000.0)
        })
        .collect();
    let result = json(&ran.results_dir().join("02-no-filters.json"));
    // The repetition's own phases (a summary of repetitions has no start).
    let phases = result["repetitions"][0]["cost"].as_array().unwrap();
    let names: Vec<&str> = phases
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["produce", "consume"]);
    // The counters' read before each edge's time (engine stats, an exec in each JVM, the GC
    // log's copy) takes well under this on any machine the tests run on.
    const MARGIN_S: f64 = 2.0;
    for p in phases {
        let start = p["start_unix_s"].as_f64().unwrap_or_else(|| panic!("{p}"));
        let end = start + p["seconds"].as_f64().unwrap();
        let proxy = common::service_entry(&p["services"], "kroxylicious-no-filters");
        let gc = &proxy["gc"];
        let counted = ["young", "full", "other"]
            .iter()
            .map(|k| gc[k].as_u64().unwrap_or_else(|| panic!("{k} in {gc}")))
            .sum::<u64>() as usize;
        let (pause_ms, max_ms) = (
            gc["pause_ms"].as_f64().unwrap(),
            gc["max_pause_ms"].as_f64().unwrap(),
        );
        let within = |from: f64, to: f64| -> Vec<f64> {
            pauses
                .iter()
                .filter(|(at, _)| from <= *at && *at <= to)
                .map(|(_, ms)| *ms)
                .collect()
        };
        let (inner, outer) = (within(start, end - MARGIN_S), within(start - MARGIN_S, end));
        let sum = |v: &[f64]| v.iter().sum::<f64>();
        let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        let phase = p["phase"].as_str().unwrap();
        // A young generation of 2 MB collects every couple of seconds while 6000 records of
        // 1 KiB a second pass: the 10 s of producing hold several well within them (the
        // consume, unthrottled, may be over too soon for one).
        if phase == "produce" {
            assert!(inner.len() >= 2, "{phase}: {inner:?} of {pauses:?}");
            // A proxy 200 warm-up records old compiles much of its path under load, each method
            // taking its compiler thread's CPU: the JIT seconds cannot be none, nor more than
            // the container's.
            let methods = compiled
                .iter()
                .filter(|at| start <= **at && **at <= end - MARGIN_S)
                .count();
            assert!(methods >= 20, "{phase}: {methods} methods compiled");
            let (jit, cpu) = (
                proxy["threads"]["jit_s"].as_f64().unwrap(),
                proxy["cpu_s"].as_f64().unwrap(),
            );
            assert!(
                jit > 0.0 && jit <= cpu,
                "{phase}: {methods} methods, {proxy}"
            );
        }
        assert!(
            inner.len() <= counted && counted <= outer.len(),
            "{phase}: {counted} pauses counted, the JVM logged {} within it and {} around it",
            inner.len(),
            outer.len()
        );
        // The log's durations have three decimals, as the runner reads them.
        assert!(
            sum(&inner) - 0.01 <= pause_ms && pause_ms <= sum(&outer) + 0.01,
            "{phase}: {pause_ms} ms against {} and {} ms",
            sum(&inner),
            sum(&outer)
        );
        assert!(
            max(&inner) <= max_ms && max_ms <= max(&outer),
            "{phase}: longest {max_ms} ms against {} and {} ms",
            max(&inner),
            max(&outer)
        );
    }
    assert_nothing_left(&ran).await;
}
