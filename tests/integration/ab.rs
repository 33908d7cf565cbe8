//! `perf-tests ab`: side B of every selected path derived from the scenario itself (its
//! services again, beside side A's, with B's overrides), both sides measured in the same
//! phases, each repetition a fresh pair measured in `PAIR_PHASES` phases, B over A judged over
//! the pairs. Refusals without an engine; the measurement on the real engine with small counts.

use crate::common;
use common::{engine_lock, leftovers, only_run, perf_tests_command, repo};

use serde_json::Value;

const RECORDS: u64 = 4000;
const RATE: u64 = 2000;
const RECORD_SIZE: u64 = 1024;

/// `perf-tests ab` with small counts and `args` (the sides' overrides), `env` set (an empty
/// value unsets the setting), into `results`.
fn ab(results: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Command {
    let mut cmd = perf_tests_command("ab", results);
    cmd.args(args)
        .env("THROUGHPUT", RATE.to_string())
        .env("NUM_RECORDS", RECORDS.to_string())
        .env("WARM_UP_SECONDS_PRE_TEST", "0");
    for (var, value) in env {
        match value.is_empty() {
            true => cmd.env_remove(var),
            false => cmd.env(var, value),
        };
    }
    cmd
}

fn output(mut cmd: std::process::Command) -> (Option<i32>, String, String) {
    let out = cmd.output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// What cannot be paired is refused before anything starts, naming the setting, the override or
/// the scenario at fault; the paired settings are refused to any other run.
#[test]
fn what_cannot_be_paired_is_refused_before_anything_starts() {
    let results = tempfile::tempdir().unwrap();
    let missing = results.path().join("missing.yaml");
    let missing = missing.to_str().unwrap();
    // The command's arguments, its environment, what its error says.
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 12] = [
        (
            &[],
            &[("MODE", "produce-then-consume")],
            "cannot pair its sides at MODE=produce-then-consume: both sides run at once",
        ),
        (
            &[],
            &[("THROUGHPUT", "-1")],
            "THROUGHPUT=-1: the sides' CPU per MB compares only at one rate",
        ),
        (
            &[],
            &[("DURATION", "30s"), ("NUM_RECORDS", "")],
            "DURATION=30: a run bounded by time is costed with its warm-up",
        ),
        (&[], &[("DRIVER", "kafka-tools")], "needs DRIVER=native"),
        (
            &[],
            &[("RECORD_SIZE", "100,200")],
            "RECORD_SIZE=100,200: a paired run measures one configuration of each side",
        ),
        (&[], &[("TEST", "01.*")], "scenario 01-no-proxy-baseline"),
        (
            &["--b", "KAFKA_IMAGE=x:y"],
            &[],
            "side B's KAFKA_IMAGE=x:y: it sets the run-wide broker1, which both sides share",
        ),
        (
            &["--a", "NO_SUCH_VARIABLE=x"],
            &[],
            "side A's NO_SUCH_VARIABLE=x: no service of the selected scenarios",
        ),
        (
            &["--b", "KROXYLICIOUS_IMAGE=has space"],
            &[],
            "side B's KROXYLICIOUS_IMAGE=has space",
        ),
        (&["--b-config", missing], &[], "missing.yaml"),
        (
            &["--b-env", "NOEQUALS"],
            &[],
            "\"NOEQUALS\": expected VAR=VALUE",
        ),
        (&["--b", "=x"], &[], "\"=x\": expected VAR=VALUE"),
    ];
    for (args, env, message) in cases {
        let (code, _, stderr) = output(ab(results.path(), args, env));
        assert_eq!(code, Some(2), "{args:?} {env:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?} {env:?}: {stderr}");
    }
    // Phases to pair and a threshold to judge by belong to a paired run only; a count of at
    // least one, a percent of at most 100.
    for (env, message) in [
        (
            &[("PAIR_PHASES", "2")][..],
            "PAIR_PHASES=2: only a paired run (`perf-tests ab`) has a use for it",
        ),
        (
            &[("PAIR_THRESHOLD", "3")],
            "PAIR_THRESHOLD=3: only a paired run (`perf-tests ab`) has a use for it",
        ),
    ] {
        let out = common::perf_tests_run(results.path())
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{env:?}: {stderr}");
        assert!(stderr.contains(message), "{env:?}: {stderr}");
    }
    for (env, message) in [
        (
            &[("PAIR_THRESHOLD", "101")][..],
            "PAIR_THRESHOLD=\"101\": a percent is at most 100",
        ),
        (&[("PAIR_PHASES", "0")], "PAIR_PHASES=\"0\""),
        (&[("PAIR_PHASES", "101")], "PAIR_PHASES=\"101\": too large"),
    ] {
        let (code, _, stderr) = output(ab(results.path(), &[], env));
        assert_eq!(code, Some(2), "{env:?}: {stderr}");
        assert!(stderr.contains(message), "{env:?}: {stderr}");
    }
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0);
}

/// The bare command is the recommended measurement: every proxy path of the default suite, its
/// settings the paired defaults; its dry run shows each side, each phase's topics and side B's
/// own steps, says an A/A comparison is one, and counts the phases in its estimate.
#[test]
fn the_bare_command_plans_every_path_of_the_default_suite_paired() {
    let results = tempfile::tempdir().unwrap();
    let plan = |args: &[&str]| {
        let mut cmd = perf_tests_command("ab", results.path());
        cmd.arg("--dry-run").args(args);
        let (code, stdout, stderr) = output(cmd);
        assert_eq!(code, Some(0), "{stdout}\n{stderr}");
        (stdout, stderr)
    };
    let (alike, note) = plan(&[]);
    assert!(
        alike.contains(
            "Selected scenarios (TEST unset: every scenario with services of its own): \
             02-no-filters, 03-transform-filter, 04-envelope-encryption-filter, \
             05-envelope-encryption-filter-no-encrypt\n"
        ),
        "{alike}"
    );
    for setting in [
        "MODE=end-to-end",
        "THROUGHPUT=15000",
        "NUM_RECORDS=300000",
        "PAIR_PHASES=3",
        "REPEAT=4",
        "WARM_UP_SECONDS_PRE_TEST=60",
        "NETWORK_CEILING=0",
    ] {
        assert!(
            alike.contains(&format!("\n  {setting}\n")),
            "{setting}: {alike}"
        );
    }
    assert!(
        note.contains("side B is side A as it is in 02-no-filters, 03-transform-filter"),
        "{note}"
    );
    assert_eq!(
        alike
            .matches("an A/A comparison (no difference is expected)")
            .count(),
        4,
        "{alike}"
    );
    // Scenario 04's key is created for each phase's topic, side B's in side B's KMS.
    let block = alike
        .split("Scenario 04-envelope-encryption-filter:")
        .nth(1)
        .unwrap();
    let block = block.split("\nScenario ").next().unwrap();
    for phase in ["", "-2", "-3"] {
        let a = format!(
            "exec in kms: [\"/opt/perf-tests/kms-key\", \"create\", \
             \"KEK_perf-tests-04-envelope-encryption-filter{phase}\"]"
        );
        let b = format!(
            "exec in kms-b: [\"/opt/perf-tests/kms-key\", \"create\", \
             \"KEK_perf-tests-04-envelope-encryption-filter{phase}-b\"]"
        );
        assert!(block.contains(&a) && block.contains(&b), "{phase}: {block}");
    }
    assert!(
        block.contains(
            "side B kms-b, kroxylicious-envelope-encryption-filter-b at kroxylicious:9092 on \
             network default-b"
        ),
        "{block}"
    );

    let minutes = |plan: &str| -> f64 {
        let line = plan.lines().find(|l| l.starts_with("Estimated")).unwrap();
        let about = line.split("about ").nth(1).unwrap();
        about.split(' ').next().unwrap().parse().unwrap()
    };
    let (one, _) = plan(&["--pair-phases", "1"]);
    assert!(minutes(&alike) > minutes(&one) + 1.0, "{one}\n{alike}");

    // Side B's overrides, named in the plan; its image chosen by them.
    let overlay = repo().join("scenarios/kroxylicious/overlays/transform-twice.yaml");
    let (changed, note) = plan(&[
        "--b",
        "KROXYLICIOUS_IMAGE=perf-tests-test/kroxylicious:b",
        "--b-env",
        "JAVA_OPTIONS=-XX:MaxInlineLevel=6",
        "--b-config",
        overlay.to_str().unwrap(),
        "--test",
        "03.*",
    ]);
    assert!(!note.contains("A/A"), "{note}");
    assert!(
        changed.contains(&format!(
            "side A (as written); side B is them again, named <service>-b on twin networks \
             (<network>-b) where they answer to side A's names \
             (KROXYLICIOUS_IMAGE=perf-tests-test/kroxylicious:b, environment \
             JAVA_OPTIONS=-XX:MaxInlineLevel=6, config {})",
            overlay.display()
        )),
        "{changed}"
    );
    assert!(
        changed.contains(
            "perf-tests-test/kroxylicious:b: from the engine or pulled, chosen by side B's \
             KROXYLICIOUS_IMAGE"
        ),
        "{changed}"
    );
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0);
}

/// A configuration overlay whose proxy applies scenario 03's transform filter pair `n` times.
fn transforms(n: usize) -> String {
    let mut out = String::from("filterDefinitions:\n");
    let mut names = Vec::new();
    for i in 0..n {
        for (name, kind) in [
            ("produce", "ProduceRequestTransformation"),
            ("fetch", "FetchResponseTransformation"),
        ] {
            names.push(format!("{name}-{i}"));
            out.push_str(&format!(
                "  - name: {name}-{i}\n    type: {kind}\n    config:\n      transformation: \
                 UpperCasing\n      transformationConfig:\n        charset: UTF-8\n"
            ));
        }
    }
    out.push_str(&format!("defaultFilters: [{}]\n", names.join(", ")));
    out
}

/// The environment, image and mounts of the running container of `service` in run `run_id`.
fn inspect(run_id: &str, service: &str) -> Value {
    let id = common::running_container(run_id, service)
        .unwrap_or_else(|| panic!("{service} is not running"));
    let out = common::docker_cli(&["inspect", &id]);
    serde_json::from_str::<Value>(&out).unwrap()[0].clone()
}

/// Side B applies the transform filter pair six times (a configuration overlay), from its own
/// image: a change large enough to be certain over three pairs of two phases. Both sides' JVMs
/// stop at the first compiler tier (each side's options): in two-second phases of fresh JVMs
/// the second tier's compiling is most of a proxy's CPU and varies from JVM to JVM, while the
/// first tier's settles within the warm-up. Side B's services run with B's image, options and configuration
/// (inspected on the engine while the run is under way), side A's as written; both sides' path
/// checks hold; every phase costs both sides' proxies; the verdict finds B higher; the results
/// hold the verdict table, its JSON and the pull-request comment; nothing is left.
#[tokio::test]
async fn side_b_is_derived_from_the_scenario_and_measured_against_side_a() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let b_image = "perf-tests-test/kroxylicious:ab";
    common::docker_cli(&["tag", "perf-tests/kroxylicious:0.12.0", b_image]);
    let files = tempfile::tempdir().unwrap();
    let overlay = files.path().join("transform-six-times.yaml");
    std::fs::write(&overlay, transforms(6)).unwrap();
    let image_arg = format!("KROXYLICIOUS_IMAGE={b_image}");
    let cmd = ab(
        results.path(),
        &[
            "--b",
            &image_arg,
            "--a-env",
            "JAVA_OPTIONS=-XX:TieredStopAtLevel=1",
            "--b-env",
            "JAVA_OPTIONS=-XX:TieredStopAtLevel=1",
            "--b-config",
            overlay.to_str().unwrap(),
        ],
        &[("TEST", "03.*"), ("REPEAT", "3"), ("PAIR_PHASES", "2")],
    );
    // Inspected when side B's session opens: both sides' services are up.
    let mut run = common::start_run(cmd, |l| l.contains("paired phase 1 of 2"));
    let (a, b) = (
        inspect(&run.run_id, "kroxylicious-transform-filter"),
        inspect(&run.run_id, "kroxylicious-transform-filter-b"),
    );
    assert_eq!(a["Config"]["Image"], "perf-tests/kroxylicious:0.12.0");
    assert_eq!(b["Config"]["Image"], b_image);
    let env = |c: &Value| -> Vec<String> {
        c["Config"]["Env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap().to_string())
            .collect()
    };
    for side in [&a, &b] {
        assert!(
            env(side).contains(&"JAVA_OPTIONS=-XX:TieredStopAtLevel=1".to_string()),
            "{:?}",
            env(side)
        );
    }
    // Side B's configuration is scenario 03's with the overlay merged; side A's is the file.
    let config = |c: &Value| -> String {
        let mount = c["Mounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["Destination"] == "/opt/kroxylicious/config/config.yaml")
            .unwrap_or_else(|| panic!("no configuration mounted: {c}"))
            .clone();
        std::fs::read_to_string(mount["Source"].as_str().unwrap()).unwrap()
    };
    let merged: yaml_serde::Value = yaml_serde::from_str(&config(&b)).unwrap();
    assert_eq!(merged["defaultFilters"].as_sequence().unwrap().len(), 12);
    assert_eq!(
        merged["virtualClusters"][0]["gateways"][0]["portIdentifiesNode"]["bootstrapAddress"],
        "kroxylicious:9092",
        "side B answers to side A's name on its own network"
    );
    assert_eq!(
        config(&a),
        std::fs::read_to_string(
            repo().join("scenarios/kroxylicious/03-transform-filter/proxy-config.yaml")
        )
        .unwrap()
    );
    // Side B's clients run on side B's network, side A's on side A's.
    let networks = |c: &Value| -> Vec<String> {
        c["NetworkSettings"]["Networks"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    let (net_a, net_b) = (networks(&a), networks(&b));
    assert!(
        net_a.len() == 1 && net_a[0].ends_with("_default"),
        "{net_a:?}"
    );
    assert!(
        net_b.len() == 1 && net_b[0].ends_with("_default-b"),
        "{net_b:?}"
    );
    let broker = networks(&inspect(&run.run_id, "broker1"));
    assert_eq!(
        broker.len(),
        2,
        "the broker on both sides' networks: {broker:?}"
    );

    let rest: Vec<String> = run.lines.by_ref().map(|l| l.unwrap()).collect();
    let status = run.child.wait().unwrap();
    let stderr = rest.join("\n");
    // Side B worse beyond the threshold: exit 1, saying where.
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "side B is worse than side A beyond PAIR_THRESHOLD=5% in: 03-transform-filter (Path \
             mc per MB/s"
        ),
        "{stderr}"
    );
    assert_eq!(leftovers(&run.run_id).await, (0, 0));
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.starts_with("    pair: A "))
            .count(),
        6,
        "each phase shown as it is measured: {stderr}"
    );
    assert!(stderr.contains("    side B's path check holds"), "{stderr}");

    let dir = only_run(results.path());
    let result: Value =
        serde_json::from_slice(&std::fs::read(dir.join("03-transform-filter.json")).unwrap())
            .unwrap();
    let pair = &result["pair"];
    assert_eq!(
        pair["pair"]["a"],
        serde_json::json!(["kroxylicious-transform-filter"])
    );
    assert_eq!(
        pair["pair"]["b"],
        serde_json::json!(["kroxylicious-transform-filter-b"])
    );
    assert_eq!(pair["phases_per_pair"], 2);
    assert!(pair.get("alike").is_none(), "{pair}");
    // Both sides' path checks hold: records upper-cased at the broker and for the consumer,
    // through each side's proxy, on the last phase's topics.
    for check in [&result["path_check"], &pair["path_check_b"]] {
        assert!(check["records"].as_u64().unwrap() > 0, "{check}");
        assert_eq!(check["broker_ok"], check["records"], "{check}");
        assert_eq!(check["consumer_ok"], check["records"], "{check}");
    }
    let reps = result["repetitions"].as_array().unwrap();
    assert_eq!(reps.len(), 6);
    let phases = pair["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 6, "{pair}");
    let owners: Vec<u64> = phases.iter().map(|p| p["pair"].as_u64().unwrap()).collect();
    assert_eq!(owners, [1, 1, 2, 2, 3, 3]);
    for (rep, phase) in reps.iter().zip(phases) {
        // Each side moved its own records through its own proxy, never above the rate.
        for side in [&rep["producer"], &rep["pair"]["producer"]] {
            assert_eq!(side["sent"], RECORDS, "{side}");
            let rate = side["rate_rec_s"].as_f64().unwrap();
            assert!(
                rate > 0.5 * RATE as f64 && rate < 1.05 * RATE as f64,
                "{side}"
            );
        }
        assert_eq!(rep["pair"]["integrity"]["consumed"], RECORDS);
        // The phase's cost holds both proxies and both sides' records, and each side's load
        // generator.
        let cost = &rep["cost"][0];
        assert_eq!(cost["phase"], "produce_and_consume");
        assert_eq!(cost["records"], 2 * RECORDS, "{cost}");
        let cpu_of = |service: &str| {
            common::service_entry(&cost["services"], service)["cpu_s"]
                .as_f64()
                .unwrap()
        };
        assert!(cpu_of("workload (load generator)") > 0.0);
        assert!(cpu_of("workload (load generator) B") > 0.0);
        let get = |k: &str| {
            phase[k]
                .as_f64()
                .unwrap_or_else(|| panic!("{k} in {phase}"))
        };
        assert_eq!(get("cpu_a_s"), cpu_of("kroxylicious-transform-filter"));
        assert_eq!(get("cpu_b_s"), cpu_of("kroxylicious-transform-filter-b"));
        let mb = 2.0 * (RECORDS * RECORD_SIZE) as f64 / 1e6;
        for (cpu, mc) in [("cpu_a_s", "mc_per_mb_s_a"), ("cpu_b_s", "mc_per_mb_s_b")] {
            assert!(
                (get(mc) - get(cpu) * 1000.0 / mb).abs() < 1e-6 * get(mc),
                "{phase}"
            );
        }
        for k in ["p50_a_ms", "p50_b_ms", "p99_a_ms", "p99_b_ms"] {
            assert!(get(k) > 0.0, "{k}: {phase}");
        }
        assert!(get("p50_a_ms") <= get("p99_a_ms") && get("p50_b_ms") <= get("p99_b_ms"));
    }
    // B over A: each pair the geometric mean of its phases, the verdict over the pairs' means.
    let cpu = &pair["cpu"];
    assert_eq!(cpu["pairs"], 3, "{cpu}");
    let logs: Vec<f64> = phases
        .iter()
        .map(|p| p["cpu_ratio"].as_f64().unwrap().ln())
        .collect();
    let means: Vec<f64> = logs.chunks(2).map(|c| (c[0] + c[1]) / 2.0).collect();
    let mean = (means.iter().sum::<f64>() / 3.0).exp();
    assert!(
        (cpu["ratio"].as_f64().unwrap() - mean).abs() < 1e-9 * mean,
        "{cpu}"
    );
    assert!(cpu["low"].as_f64().unwrap() > 1.05, "{cpu}");
    assert_eq!(cpu["verdict"], "higher", "{cpu}");
    for metric in ["p50", "p99"] {
        assert!(
            pair[metric]["ratio"].as_f64().unwrap() > 0.0,
            "{metric}: {pair}"
        );
    }
    // The transform's second pass is the filter's own work, not the compilers': it shows
    // without them too.
    let rest = &pair["cpu_rest"];
    assert!(rest["ratio"].as_f64().unwrap() > 1.0, "{rest}");

    // The verdict table in the tables and the report, and the comment beside them.
    let tables = std::fs::read_to_string(dir.join("tables.txt")).unwrap();
    let rows = tables
        .lines()
        .filter(|l| {
            l.contains("03-transform-filter")
                && perf_tests::analysis::pair::Metric::ALL
                    .iter()
                    .any(|m| l.contains(&format!(" {} ", m.name())))
        })
        .count();
    assert_eq!(
        rows,
        perf_tests::analysis::pair::Metric::ALL.len(),
        "{tables}"
    );
    assert!(tables.contains("A/B Verdicts"), "{tables}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("A/B Verdicts"));
    let comment = std::fs::read_to_string(dir.join("ab.md")).unwrap();
    assert!(
        comment.contains(
            ":red_circle: **Side B is worse** beyond 5%: 03-transform-filter Path mc per MB/s"
        ),
        "{comment}"
    );
    assert!(
        comment.contains(&format!("- Side B: KROXYLICIOUS_IMAGE={b_image}")),
        "{comment}"
    );
    // The pull-request bot's answer from these results, judged again from their phases: side
    // B worse, said first, the commits named, exit 1.
    let answer = common::bin()
        .args(["pr", "comment", "--state", "finished", "--results"])
        .arg(&dir)
        .args(["--base", "1111111111111111", "--head", "2222222222222222"])
        .args(["--settings", "TEST=03.*"])
        .output()
        .unwrap();
    let body = String::from_utf8_lossy(&answer.stdout);
    assert_eq!(answer.status.code(), Some(1), "{body}");
    assert!(body.starts_with("<!-- perf-tests ab -->\nMeasured base `111111111111`, head `222222222222` with `TEST=03.*` in "), "{body}");
    assert!(body.contains(":red_circle: **Side B is worse**"), "{body}");
    let run_json: Value =
        serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(
        run_json["sides"]["b"]["environment"][0][1],
        "-XX:TieredStopAtLevel=1"
    );
    common::docker_cli(&["rmi", b_image]);
}

/// The KMS paths paired as written (an A/A comparison): side B's proxies reach side B's KMS,
/// whose keys side B's setup made for its topics; both sides' path checks hold on the last
/// phase's topics (scenario 04 encrypted on both, so each phase's key was made); one verdict
/// table row per path and metric; nothing is left.
#[tokio::test]
async fn the_kms_paths_pair_with_a_kms_a_side_and_a_key_for_every_phase() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let cmd = ab(
        results.path(),
        &[],
        &[("TEST", "0[45].*"), ("REPEAT", "1"), ("PAIR_PHASES", "2")],
    );
    let (code, stdout, stderr) = output(cmd);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert_eq!(leftovers(&common::run_id(&stderr)).await, (0, 0));
    assert!(stderr.contains("an A/A comparison"), "{stderr}");
    // Each side's key of each phase's topic, made in its own KMS.
    for side in ["setup: kms:", "side B's setup: kms-b:"] {
        assert_eq!(stderr.matches(side).count(), 2, "{side}: {stderr}");
    }
    let dir = only_run(results.path());
    for (scenario, broker) in [
        ("04-envelope-encryption-filter", "encrypted"),
        ("05-envelope-encryption-filter-no-encrypt", "unchanged"),
    ] {
        let result: Value =
            serde_json::from_slice(&std::fs::read(dir.join(format!("{scenario}.json"))).unwrap())
                .unwrap();
        assert_eq!(result["pair"]["alike"], true);
        for check in [&result["path_check"], &result["pair"]["path_check_b"]] {
            assert_eq!(check["expect"]["broker"], broker, "{check}");
            assert!(check["records"].as_u64().unwrap() > 0, "{check}");
            assert_eq!(check["broker_ok"], check["records"], "{scenario}: {check}");
            assert_eq!(
                check["consumer_ok"], check["records"],
                "{scenario}: {check}"
            );
        }
        // Both sides' KMS and proxy costed in each phase.
        let proxy = result["pair"]["pair"]["a"][1].as_str().unwrap().to_string();
        for rep in result["repetitions"].as_array().unwrap() {
            let services = &rep["cost"][0]["services"];
            for s in ["kms", "kms-b"] {
                assert!(common::service_entry(services, s)["cpu_s"].is_number());
            }
            for s in [proxy.clone(), format!("{proxy}-b")] {
                let cpu = common::service_entry(services, &s)["cpu_s"]
                    .as_f64()
                    .unwrap();
                assert!(cpu > 0.0, "{s}: {services}");
            }
        }
        let rows = stdout
            .lines()
            .filter(|l| l.contains(&format!("{scenario} (A/A)")))
            .count();
        // A row per primary metric: the CPU whole and without the JVMs' compilers and
        // collectors (their threads read in every phase), the intended p50 and p99.
        assert_eq!(
            rows,
            perf_tests::analysis::pair::Metric::ALL.len(),
            "{stdout}"
        );
        // The KMS is no JVM: it counts whole in its side's rest, which is still compared.
        let rest = &result["pair"]["cpu_rest"];
        assert!(rest["ratio"].as_f64().is_some_and(|r| r > 0.0), "{rest}");
    }
}

/// Side B's JVM refuses an option it is given: the run stops naming side B's service and
/// quoting its JVM, both sides torn down, nothing left.
#[tokio::test]
async fn a_side_that_fails_to_start_is_named_and_both_sides_go() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let cmd = ab(
        results.path(),
        &["--b-env", "JAVA_OPTIONS=-XX:+NoSuchOption"],
        &[("TEST", "02.*"), ("REPEAT", "1"), ("PAIR_PHASES", "1")],
    );
    let (code, _, stderr) = output(cmd);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("kroxylicious-no-filters-b") && stderr.contains("NoSuchOption"),
        "{stderr}"
    );
    assert_eq!(leftovers(&common::run_id(&stderr)).await, (0, 0));
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0);
}
