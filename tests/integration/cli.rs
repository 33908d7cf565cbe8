//! The `perf-tests` binary as a user runs it: flags, environment, defaults, `list`, `run --dry-run`
//! and exit codes, against suites created in temporary directories.

use crate::common;

use std::fs;
use std::path::Path;
use std::process::Output;

fn perf_tests(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = common::bin();
    cmd.args(args).current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("perf-tests starts")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A suite at `<tmp>/scenarios/kroxylicious` (the default SCENARIOS) with three scenarios, a
/// non-numbered directory and a stray file.
fn suite() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let p = root.path();
    write(
        &p.join("compose/base.yaml"),
        "services:\n  broker:\n    image: ${KAFKA_IMAGE}\n  broker2:\n    image: ${KAFKA_IMAGE}\n",
    );
    write(
        &p.join("compose/proxy.yaml"),
        "services:\n  proxy:\n    image: ${KROXYLICIOUS_IMAGE}\n    depends_on: [broker, vault]\n  vault:\n    image: ${VAULT_IMAGE}\n",
    );
    write(
        &p.join("scenarios/kroxylicious/suite.yaml"),
        "description: Temp suite\ncompose: [../../compose/base.yaml]\nservices: [broker]\nbootstrap: broker:9092\nready: { broker: \"broker:9092\" }\n",
    );
    write(
        &p.join("scenarios/kroxylicious/01-baseline/scenario.yaml"),
        "description: Broker alone\nbootstrap: broker:9092\n",
    );
    write(
        &p.join("scenarios/kroxylicious/02-proxy/scenario.yaml"),
        r#"description: Through the proxy
compose: [../../../compose/base.yaml, ../../../compose/proxy.yaml]
services: [proxy, vault]
bootstrap: proxy:9092
client: { security.protocol: SSL }
tls: { hosts: [proxy] }
setup:
  - exec: { service: vault, command: [vault, write, "transit/keys/${TOPIC}"] }
teardown:
  - exec: { service: vault, command: [vault, delete, "transit/keys/${TOPIC}"] }
"#,
    );
    write(
        &p.join("scenarios/kroxylicious/10-own-broker/scenario.yaml"),
        "description: Its own broker\nservices: [broker2]\nown_broker: true\nbootstrap: broker2:9092\n",
    );
    fs::create_dir_all(p.join("scenarios/kroxylicious/templates")).unwrap();
    write(
        &p.join("scenarios/kroxylicious/03-file"),
        "not a directory\n",
    );
    root
}

/// The value a dry run reports for a setting.
fn setting(plan: &str, var: &str) -> String {
    let prefix = format!("  {var}=");
    plan.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("{var} not in plan:\n{plan}"))
        .to_string()
}

#[test]
fn help_shows_every_setting_with_env_name_and_default() {
    let dir = tempfile::tempdir().unwrap();
    let out = perf_tests(dir.path(), &["--help"], &[]);
    assert_eq!(out.status.code(), Some(0));
    // Help wraps lines; compare with whitespace runs collapsed.
    let help = stdout(&out)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for var in common::setting_vars() {
        assert!(help.contains(&format!("[env: {var}=")), "{var} in\n{help}");
    }
    for default in [
        "[default: [0-9][0-9]-.*]",
        "[default: 10000000]",
        "[default: 1024]",
        "[default: acks=all]",
        "[default: -1]",
        "[default: perf-tests/kafka:4.4.0]",
        "[default: perf-tests/kroxylicious:0.12.0]",
        "[default: perf-tests/kafka-tools:4.4.0]",
        "[default: hashicorp/vault:1.15]",
        "[default: scenarios/kroxylicious]",
        "[default: results]",
    ] {
        assert!(help.contains(default), "{default} in\n{help}");
    }
    assert!(help.contains("run") && help.contains("list"), "{help}");
}

#[test]
fn flag_beats_env_beats_default() {
    let root = suite();
    let dry = |args: &[&str], env: &[(&str, &str)]| {
        let mut all = vec!["run", "--dry-run"];
        all.extend_from_slice(args);
        let out = perf_tests(root.path(), &all, env);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
    };
    let plan = dry(&[], &[]);
    assert_eq!(setting(&plan, "NUM_RECORDS"), "10000000");
    assert_eq!(setting(&plan, "RECORD_SIZE"), "1024");
    assert_eq!(setting(&plan, "PRODUCER_PROPERTIES"), "acks=all");
    assert_eq!(setting(&plan, "THROUGHPUT"), "-1");
    assert_eq!(setting(&plan, "WARM_UP_NUM_RECORDS_PRE_TEST"), "1000");
    // The temporary directory is not a git checkout.
    assert_eq!(setting(&plan, "COMMIT_ID"), "unknown");

    let env = [
        ("NUM_RECORDS", "1e6"),
        ("RECORD_SIZE", "2_048"),
        ("PRODUCER_PROPERTIES", "acks=1 linger.ms=5"),
        ("THROUGHPUT", "2.5e4"),
        ("WARM_UP_NUM_RECORDS_PRE_TEST", "0"),
        ("COMMIT_ID", "feedbee"),
        ("KAFKA_IMAGE", "kafka:env"),
    ];
    let plan = dry(&[], &env);
    assert_eq!(setting(&plan, "NUM_RECORDS"), "1000000");
    assert_eq!(setting(&plan, "RECORD_SIZE"), "2048");
    assert_eq!(setting(&plan, "PRODUCER_PROPERTIES"), "acks=1 linger.ms=5");
    assert_eq!(setting(&plan, "THROUGHPUT"), "25000");
    assert_eq!(setting(&plan, "WARM_UP_NUM_RECORDS_PRE_TEST"), "0");
    assert_eq!(setting(&plan, "COMMIT_ID"), "feedbee");
    assert_eq!(setting(&plan, "KAFKA_IMAGE"), "kafka:env");

    let plan = dry(
        &[
            "--num-records",
            "1E3",
            "--commit-id",
            "c0ffee",
            "--throughput",
            "-1",
        ],
        &env,
    );
    assert_eq!(setting(&plan, "NUM_RECORDS"), "1000");
    assert_eq!(setting(&plan, "COMMIT_ID"), "c0ffee");
    assert_eq!(setting(&plan, "THROUGHPUT"), "-1");
    // Untouched by flags: still from the environment.
    assert_eq!(setting(&plan, "RECORD_SIZE"), "2048");

    // Settings may also precede the command.
    let out = perf_tests(
        root.path(),
        &["--num-records", "7", "run", "--dry-run"],
        &env,
    );
    assert_eq!(setting(&stdout(&out), "NUM_RECORDS"), "7");
}

#[test]
fn bad_settings_are_usage_errors_naming_variable_and_value() {
    let root = suite();
    for (var, value) in [
        ("NUM_RECORDS", "1.5"),
        ("NUM_RECORDS", "0"),
        ("RECORD_SIZE", "-1"),
        ("RECORD_SIZE", "abc"),
        ("NUM_RECORDS", "1e30"),
        ("WARM_UP_NUM_RECORDS_POST_BROKER_START", "x"),
        ("THROUGHPUT", "0"),
        ("WARM_UP_SECONDS_PRE_TEST", "3601"),
        ("WORKLOAD_CPUSET", "one"),
        ("SERVICES_CPUSET", "0;1"),
        ("MODE", "concurrent"),
    ] {
        let out = perf_tests(root.path(), &["run", "--dry-run"], &[(var, value)]);
        assert_eq!(out.status.code(), Some(2), "{var}={value}");
        let err = stderr(&out);
        assert!(
            err.contains(var) && err.contains(value),
            "{var}={value}: {err}"
        );
    }
    let out = perf_tests(
        root.path(),
        &["list"],
        &[("PRODUCER_PROPERTIES", "acks=all nonsense")],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("PRODUCER_PROPERTIES") && err.contains("nonsense"),
        "{err}"
    );

    let out = perf_tests(root.path(), &["no-such-command"], &[]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_record_size_no_broker_accepts_is_refused_before_anything_starts() {
    let root = suite();
    // Kafka's default message.max.bytes (1048588) less the record batch overhead.
    let limit = "1048512";
    for args in [&["run", "--dry-run"][..], &["run"][..], &[][..]] {
        let out = perf_tests(root.path(), args, &[("RECORD_SIZE", "1e12")]);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("RECORD_SIZE=1000000000000") && err.contains(limit),
            "{args:?}: {err}"
        );
        assert!(err.contains("max_record_size"), "{err}");
        assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    }
    // Nothing was started, so nothing was written either.
    assert!(!root.path().join("results").exists());
    let out = perf_tests(
        root.path(),
        &["run", "--dry-run"],
        &[("RECORD_SIZE", limit)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = perf_tests(
        root.path(),
        &["run", "--dry-run"],
        &[("RECORD_SIZE", "1048513")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));

    // A suite whose brokers accept more says so, and its limit is the one enforced.
    let file = root.path().join("scenarios/kroxylicious/suite.yaml");
    let text = fs::read_to_string(&file).unwrap();
    write(&file, &format!("{text}max_record_size: 4194304\n"));
    let out = perf_tests(
        root.path(),
        &["run", "--dry-run"],
        &[("RECORD_SIZE", "2e6")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = perf_tests(root.path(), &["run"], &[("RECORD_SIZE", "1e12")]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("RECORD_SIZE=1000000000000")
            && err.contains("4194304")
            && err.contains("suite.yaml"),
        "{err}"
    );
}

#[test]
fn list_marks_what_test_selects() {
    let root = suite();
    let out = perf_tests(root.path(), &["list"], &[("TEST", "0.*")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let suite_dir = root.path().join("scenarios/kroxylicious");
    assert_eq!(
        stdout(&out),
        format!(
            "Suite {}: Temp suite\n\
             TEST=0.* selects 2 of 3 scenarios (marked *)\n\
             * 01-baseline    Broker alone\n\
             * 02-proxy       Through the proxy\n\
             \x20 10-own-broker  Its own broker\n",
            suite_dir.display()
        )
    );
    // A pattern that selects nothing still lists the suite.
    let out = perf_tests(root.path(), &["list"], &[("TEST", "0")]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("selects 0 of 3"), "{}", stdout(&out));
}

#[test]
fn selection_is_by_whole_name() {
    let root = suite();
    let selected = |test: &str| {
        let out = perf_tests(root.path(), &["run", "--dry-run"], &[("TEST", test)]);
        (out.status.code(), stdout(&out), stderr(&out))
    };
    let (code, plan, _) = selected("01.*");
    assert_eq!(code, Some(0));
    assert!(
        plan.contains("Selected scenarios (TEST=01.*): 01-baseline\n"),
        "{plan}"
    );
    let (_, plan, _) = selected(".*-.*o.*");
    assert!(plan.contains("): 02-proxy, 10-own-broker\n"), "{plan}");
    let (code, _, err) = selected("0");
    assert_eq!(code, Some(2));
    assert!(err.contains("TEST=\"0\" selects no scenario"), "{err}");
    assert!(
        err.contains("01-baseline, 02-proxy, 10-own-broker"),
        "{err}"
    );
    let (code, _, err) = selected("(");
    assert_eq!(code, Some(2));
    assert!(
        err.contains("TEST=\"(\"") && err.contains("regular expression"),
        "{err}"
    );
}

#[test]
fn dry_run_prints_the_resolved_plan() {
    let root = suite();
    let out = perf_tests(
        root.path(),
        &["run", "--dry-run"],
        &[("TEST", "02-proxy|10-.*"), ("COMMIT_ID", "abc")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let plan = stdout(&out);
    let base = root.path().join("compose/base.yaml");
    let proxy = root.path().join("compose/proxy.yaml");
    for expected in [
        "Selected scenarios (TEST=02-proxy|10-.*): 02-proxy, 10-own-broker".to_string(),
        format!("Run-wide:\n  compose: {}\n  services: broker\n  bootstrap: broker:9092\n  ready: broker at broker:9092\n", base.display()),
        format!("Scenario 02-proxy: Through the proxy\n    compose: {}, {}\n    services: proxy, vault\n    run-wide services: used\n    bootstrap: proxy:9092\n    topic: perf-tests-02-proxy\n", base.display(), proxy.display()),
        "    client: security.protocol=SSL\n    tls hosts: proxy\n".to_string(),
        "      - exec in vault: [\"vault\", \"write\", \"transit/keys/perf-tests-02-proxy\"]".to_string(),
        "      - exec in vault: [\"vault\", \"delete\", \"transit/keys/perf-tests-02-proxy\"]".to_string(),
        "Scenario 10-own-broker: Its own broker\n".to_string(),
        "    run-wide services: not used (own broker)\n".to_string(),
    ] {
        assert!(plan.contains(&expected), "missing {expected:?} in\n{plan}");
    }
    assert!(!plan.contains("01-baseline"), "{plan}");
    // A dry run writes no results.
    assert!(!root.path().join("results").exists());
}

#[test]
fn bare_form_means_run() {
    let root = suite();
    // A configuration error proves the bare form plans a run: exit 2 and the selection error.
    let out = perf_tests(root.path(), &[], &[("TEST", "99.*")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("TEST=\"99.*\" selects no scenario"),
        "{}",
        stderr(&out)
    );
    let out = perf_tests(root.path(), &[], &[("NUM_RECORDS", "1.5")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("NUM_RECORDS=\"1.5\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn scenario_file_errors_name_file_line_and_key() {
    let root = suite();
    write(
        &root
            .path()
            .join("scenarios/kroxylicious/02-proxy/scenario.yaml"),
        "description: d\nbootstrap: proxy:9092\nservics: [proxy]\n",
    );
    let out = perf_tests(root.path(), &["run", "--dry-run"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("02-proxy/scenario.yaml:3:"), "{err}");
    assert!(err.contains("unknown field `servics`"), "{err}");

    write(
        &root.path().join("scenarios/kroxylicious/02-proxy/scenario.yaml"),
        "description: d\nbootstrap: proxy:9092\nsetup:\n  - exec: { service: v, command: [\"${NOPE}\"] }\n",
    );
    let out = perf_tests(root.path(), &["run", "--dry-run"], &[("TEST", "02.*")]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("02-proxy/scenario.yaml") && err.contains("${NOPE}"),
        "{err}"
    );

    fs::remove_file(
        root.path()
            .join("scenarios/kroxylicious/02-proxy/scenario.yaml"),
    )
    .unwrap();
    let out = perf_tests(root.path(), &["list"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("02-proxy/scenario.yaml is missing"),
        "{}",
        stderr(&out)
    );

    let out = perf_tests(root.path(), &["list"], &[("SCENARIOS", "nowhere")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("nowhere"), "{}", stderr(&out));
}

#[test]
fn a_matrix_dry_run_lists_every_combination_and_estimates_the_run_time() {
    let root = suite();
    let out = perf_tests(
        root.path(),
        &[
            "run",
            "--dry-run",
            "--throughput",
            "5e3",
            "--throughput",
            "-1",
        ],
        &[
            ("TEST", "01-.*"),
            ("RECORD_SIZE", "100,1e3"),
            ("REPEAT", "2"),
            ("NUM_RECORDS", "1e4"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let plan = stdout(&out);
    for expected in [
        "Matrix: 4 combinations of RECORD_SIZE (100, 1000) x THROUGHPUT (5000, -1)",
        "  1. RECORD_SIZE=100, THROUGHPUT=5000\n",
        "  2. RECORD_SIZE=100, THROUGHPUT=-1\n",
        "  4. RECORD_SIZE=1000, THROUGHPUT=-1\n",
        "Estimated run time: about ",
        "(8 measurements: 1 scenarios x 4 combinations x REPEAT=2;",
    ] {
        assert!(plan.contains(expected), "missing {expected:?} in\n{plan}");
    }
    // The settings shown are the first combination's.
    assert_eq!(setting(&plan, "RECORD_SIZE"), "100");
    assert_eq!(setting(&plan, "THROUGHPUT"), "5000");

    // A longer run is estimated longer.
    let minutes = |plan: &str| -> f64 {
        let line = plan.lines().find(|l| l.starts_with("Estimated")).unwrap();
        let about = line.split("about ").nth(1).unwrap();
        let (n, unit) = about.split_once(' ').unwrap();
        let n: f64 = n.parse().unwrap();
        if unit.starts_with("min") {
            n
        } else {
            n / 60.0
        }
    };
    let long = perf_tests(
        root.path(),
        &["run", "--dry-run"],
        &[
            ("TEST", "01-.*"),
            ("RECORD_SIZE", "100,1e3"),
            ("NUM_RECORDS", "1e8"),
        ],
    );
    assert!(
        minutes(&stdout(&long)) > minutes(&plan) * 10.0,
        "{}",
        stdout(&long)
    );

    // An image that varies: the other combination's image is listed too.
    let out = perf_tests(
        root.path(),
        &["run", "--dry-run"],
        &[("TEST", "02-.*"), ("KROXYLICIOUS_IMAGE", "proxy:a,proxy:b")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let plan = stdout(&out);
    assert!(
        plan.contains("Matrix: 2 combinations of KROXYLICIOUS_IMAGE (proxy:a, proxy:b)"),
        "{plan}"
    );
    assert!(
        plan.contains("  - proxy:a: from the engine or pulled"),
        "{plan}"
    );
    assert!(plan.contains("  also image proxy:b\n"), "{plan}");
}

#[test]
fn bad_matrices_are_refused_naming_the_setting() {
    let root = suite();
    for (var, value, expected) in [
        ("REPEAT", "1,2", "REPEAT cannot take a list"),
        ("DRIVER", "native,kafka-tools", "DRIVER cannot take a list"),
        ("WARM_UP_NUM_RECORDS_POST_BROKER_START", "1,2", "cannot take a list"),
        ("RECORD_SIZE", "100,1e2", "RECORD_SIZE lists the value \"100\" twice"),
        ("RECORD_SIZE", "100,x", "RECORD_SIZE=\"x\""),
        ("RECORD_SIZE", "100,2e6", "at RECORD_SIZE=2000000: RECORD_SIZE=2000000 is larger"),
        ("NUM_RECORDS", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32", "more than 1000 combinations"),
    ] {
        let env: Vec<(&str, &str)> = if var == "NUM_RECORDS" {
            vec![(var, value), ("RECORD_SIZE", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32")]
        } else {
            vec![(var, value)]
        };
        let out = perf_tests(root.path(), &["run", "--dry-run"], &env);
        assert_eq!(out.status.code(), Some(2), "{var}={value}: {}", stdout(&out));
        let err = stderr(&out);
        assert!(err.contains(expected), "{var}={value}: {err}");
        assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    }
    assert!(!root.path().join("results").exists());
}

#[test]
fn a_suite_matrix_applies_unless_the_setting_is_given() {
    let root = suite();
    let file = root.path().join("scenarios/kroxylicious/suite.yaml");
    let text = fs::read_to_string(&file).unwrap();
    write(&file, &format!("{text}matrix:\n  NUM_RECORDS: [10, 2e1]\n"));
    let out = perf_tests(root.path(), &["run", "--dry-run"], &[("TEST", "01-.*")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Matrix: 2 combinations of NUM_RECORDS (10, 20)"),
        "{}",
        stdout(&out)
    );
    // Given, one value pins it.
    let out = perf_tests(
        root.path(),
        &["run", "--dry-run"],
        &[("TEST", "01-.*"), ("NUM_RECORDS", "7")],
    );
    assert!(!stdout(&out).contains("Matrix:"), "{}", stdout(&out));
    assert_eq!(setting(&stdout(&out), "NUM_RECORDS"), "7");

    write(&file, &format!("{text}matrix:\n  REPEAT: [1, 2]\n"));
    let out = perf_tests(root.path(), &["run", "--dry-run"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("suite.yaml: matrix.REPEAT") && err.contains("REPEAT cannot take a list"),
        "{err}"
    );
}

#[test]
fn a_sweep_dry_run_lists_its_rates_and_bad_sweeps_are_refused() {
    let root = suite();
    let out = perf_tests(
        root.path(),
        &[
            "sweep",
            "--from",
            "1e4",
            "--to",
            "5e4",
            "--steps",
            "5",
            "--dry-run",
        ],
        &[("TEST", "01-.*"), ("RECORD_SIZE", "100,1000")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let plan = stdout(&out);
    for expected in [
        "Matrix: 10 combinations of RECORD_SIZE (100, 1000) x THROUGHPUT (10000, 20000, 30000, 40000, 50000)",
        "  2. RECORD_SIZE=100, THROUGHPUT=20000\n",
        "Sweep: each scenario's THROUGHPUT rises through the rates above in order",
    ] {
        assert!(plan.contains(expected), "missing {expected:?} in\n{plan}");
    }
    let out = perf_tests(
        root.path(),
        &["sweep", "--to", "5e4", "--dry-run"],
        &[("P99_LIMIT_MS", "50")],
    );
    assert!(
        stdout(&out).contains("THROUGHPUT (5000, 10000,"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("or its p99 over P99_LIMIT_MS=50"),
        "{}",
        stdout(&out)
    );

    for (args, env, expected) in [
        (&["sweep", "--dry-run"][..], &[][..], "--to"),
        (
            &["sweep", "--to", "10", "--from", "20", "--dry-run"][..],
            &[][..],
            "--to 10 is below --from 20",
        ),
        (
            &["sweep", "--to", "1e5", "--steps", "500", "--dry-run"][..],
            &[][..],
            "--steps 500",
        ),
        (
            &["sweep", "--to", "1e5", "--dry-run"][..],
            &[("THROUGHPUT", "5")][..],
            "THROUGHPUT cannot be given to a sweep",
        ),
        (
            &["sweep", "--to", "1e5", "--dry-run"][..],
            &[("P99_LIMIT_MS", "0")][..],
            "P99_LIMIT_MS=\"0\"",
        ),
    ] {
        let out = perf_tests(root.path(), args, env);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stdout(&out));
        assert!(
            stderr(&out).contains(expected),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn end_to_end_needs_the_native_driver() {
    let root = suite();
    let out = perf_tests(
        root.path(),
        &["run", "--dry-run"],
        &[("MODE", "end-to-end"), ("DRIVER", "kafka-tools")],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("MODE=end-to-end needs DRIVER=native"),
        "{}",
        stderr(&out)
    );
    let out = perf_tests(
        root.path(),
        &["run", "--dry-run"],
        &[("MODE", "end-to-end")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(setting(&stdout(&out), "MODE"), "end-to-end");
}

#[test]
fn the_backlog_mode_needs_a_live_rate_and_the_native_driver_and_is_not_swept() {
    let root = suite();
    let refused = |args: &[&str], env: &[(&str, &str)], says: &str| {
        let out = perf_tests(root.path(), args, env);
        assert_eq!(out.status.code(), Some(2), "{env:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{env:?}: {}", stderr(&out));
    };
    let dry = &["run", "--dry-run"][..];
    refused(dry, &[("MODE", "backlog")], "MODE=backlog needs THROUGHPUT");
    refused(
        dry,
        &[("MODE", "backlog"), ("THROUGHPUT", "-1")],
        "THROUGHPUT=-1 is unlimited",
    );
    refused(
        dry,
        &[
            ("MODE", "backlog"),
            ("THROUGHPUT", "5000"),
            ("DRIVER", "kafka-tools"),
        ],
        "MODE=backlog needs DRIVER=native",
    );
    refused(
        &["sweep", "--to", "5e4", "--dry-run"],
        &[("MODE", "backlog")],
        "MODE=backlog cannot be swept",
    );
    // Within a list, the combination at fault is named.
    refused(
        dry,
        &[("MODE", "backlog"), ("THROUGHPUT", "5000,-1")],
        "at THROUGHPUT=-1",
    );
    let out = perf_tests(
        root.path(),
        dry,
        &[("MODE", "backlog"), ("THROUGHPUT", "5000")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(setting(&stdout(&out), "MODE"), "backlog");
}

#[test]
fn client_counts_are_checked_before_anything_starts() {
    let root = suite();
    for (env, expected) in [
        (
            &[("CONSUMERS", "2")][..],
            "CONSUMERS=2 is more than PARTITIONS=1",
        ),
        (&[("PARTITIONS", "0")][..], "PARTITIONS=\"0\""),
        (
            &[("PRODUCERS", "65")][..],
            "PRODUCERS=\"65\": too large (the limit is 64)",
        ),
        (
            &[
                ("DRIVER", "kafka-tools"),
                ("TEST", "01-.*"),
                ("PRODUCERS", "2"),
            ][..],
            "PRODUCERS=2 needs DRIVER=native",
        ),
        (
            &[
                ("DRIVER", "kafka-tools"),
                ("TEST", "01-.*"),
                ("PARTITIONS", "1,2"),
            ][..],
            "PARTITIONS=2 needs DRIVER=native",
        ),
        (&[("TOPICS", "0")][..], "TOPICS=\"0\""),
        (
            &[("TOPICS", "1001")][..],
            "TOPICS=\"1001\": too large (the limit is 1000)",
        ),
        (
            &[("TOPICS", "3"), ("CONSUMERS", "4")][..],
            "CONSUMERS=4 is more than the 3 partitions of TOPICS=3 topics of PARTITIONS=1 each",
        ),
        // Within a matrix, the combination at fault is named.
        (&[("TOPICS", "1,2"), ("CONSUMERS", "2")][..], "at TOPICS=1"),
        (
            &[
                ("DRIVER", "kafka-tools"),
                ("TEST", "01-.*"),
                ("TOPICS", "2"),
            ][..],
            "TOPICS=2 needs DRIVER=native",
        ),
    ] {
        let out = perf_tests(root.path(), &["run", "--dry-run"], env);
        assert_eq!(out.status.code(), Some(2), "{env:?}: {}", stdout(&out));
        assert!(stderr(&out).contains(expected), "{env:?}: {}", stderr(&out));
    }
    let out = perf_tests(
        root.path(),
        &["run", "--dry-run"],
        &[("PARTITIONS", "4"), ("PRODUCERS", "2"), ("CONSUMERS", "4")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let plan = stdout(&out);
    assert_eq!(setting(&plan, "PARTITIONS"), "4");
    assert_eq!(setting(&plan, "CONSUMERS"), "4");
    // Consumers count against the partitions of every topic together.
    let out = perf_tests(
        root.path(),
        &["run", "--dry-run"],
        &[("TOPICS", "3"), ("CONSUMERS", "3")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(setting(&stdout(&out), "TOPICS"), "3");
}

#[test]
fn a_duration_is_refused_with_a_count_without_end_to_end_or_when_malformed() {
    let root = suite();
    let refused = |env: &[(&str, &str)], says: &str| {
        let out = perf_tests(root.path(), &["run", "--dry-run"], env);
        assert_eq!(out.status.code(), Some(2), "{env:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{env:?}: {}", stderr(&out));
    };
    let e2e = ("MODE", "end-to-end");
    refused(
        &[e2e, ("DURATION", "10m"), ("NUM_RECORDS", "1e6")],
        "DURATION and NUM_RECORDS are both set",
    );
    refused(&[("DURATION", "10m")], "DURATION=600 needs MODE=end-to-end");
    refused(
        &[
            ("MODE", "backlog"),
            ("THROUGHPUT", "1000"),
            ("DURATION", "10m"),
        ],
        "needs MODE=end-to-end",
    );
    refused(
        &[e2e, ("DURATION", "10x")],
        "DURATION=\"10x\": unknown unit `x`",
    );
    refused(
        &[e2e, ("DURATION", "0s")],
        "DURATION=\"0s\": a run needs some time",
    );
    refused(&[e2e, ("DURATION", "1m,2m")], "DURATION");
    refused(
        &[e2e, ("DURATION", "1m"), ("DURATION_WARM_UP", "1m")],
        "DURATION_WARM_UP=60 is not shorter than DURATION=60",
    );
    refused(
        &[e2e, ("DURATION_WARM_UP", "30s")],
        "DURATION_WARM_UP=30 without DURATION",
    );
    // A good one: planned, and its time is what the estimate counts.
    let out = perf_tests(
        root.path(),
        &["run", "--dry-run"],
        &[e2e, ("DURATION", "2h"), ("DURATION_WARM_UP", "5m")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(setting(&stdout(&out), "DURATION"), "7200");
    assert_eq!(setting(&stdout(&out), "DURATION_WARM_UP"), "300");
}

#[test]
fn a_sizing_run_that_cannot_state_an_interval_or_a_cost_is_refused_before_anything_starts() {
    let root = suite();
    let sizing = ["sizing", "--to", "1e4", "--steps", "2"];
    for (env, names) in [
        (&[("REPEAT", "1")][..], "REPEAT=1"),
        (
            &[("REPEAT", "2"), ("MODE", "end-to-end"), ("DURATION", "10s")][..],
            "DURATION=10",
        ),
        (&[("REPEAT", "2"), ("MODE", "backlog")][..], "MODE=backlog"),
    ] {
        let out = perf_tests(root.path(), &sizing, env);
        assert_eq!(out.status.code(), Some(2), "{env:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(names), "{env:?}: {}", stderr(&out));
    }
    for traffic in ["0", "-5", "lots"] {
        let flag = format!("--traffic={traffic}");
        let mut args = sizing.to_vec();
        args.push(&flag);
        let out = perf_tests(root.path(), &args, &[("REPEAT", "2")]);
        assert_eq!(out.status.code(), Some(2), "--traffic {traffic}");
        assert!(stderr(&out).contains("--traffic"), "{}", stderr(&out));
    }
    assert!(!root.path().join("results").exists());
    // What it would do, said before it does it.
    let mut args = sizing.to_vec();
    args.extend(["--dry-run", "--traffic", "40"]);
    let out = perf_tests(root.path(), &args, &[("REPEAT", "2")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("the cores of 40 MB/s of produce + consume traffic"),
        "{}",
        stdout(&out)
    );
}

/// The manual page and the shells' completions are made from the command line's definition: each
/// holds every command and every setting's flag, so neither can drift from what it accepts.
#[test]
fn the_manual_page_and_the_completions_hold_every_command_and_setting() {
    let run = |args: &[&str]| {
        String::from_utf8(common::succeeds(common::bin().args(args)).stdout).unwrap()
    };
    let man = run(&["man"]);
    assert!(
        man.starts_with(".ie") || man.contains(".TH perf-tests "),
        "{}",
        &man[..200]
    );
    let cli = <perf_tests::cli::Cli as clap::CommandFactory>::command();
    let commands: Vec<&str> = cli
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
        .map(|c| c.get_name())
        .collect();
    assert!(commands.len() > 10, "{commands:?}");
    for command in commands {
        assert!(
            man.contains(&format!(".TH perf-tests-{command} ")),
            "no page for {command}"
        );
    }
    let bash = run(&["completions", "bash"]);
    for setting in perf_tests::settings::SETTINGS {
        let flag = format!("--{}", setting.flag());
        // roff writes a flag's dashes escaped.
        assert!(
            man.contains(&flag.replace('-', "\\-")),
            "{flag} not in the manual page"
        );
        assert!(bash.contains(&flag), "{flag} not in the bash completions");
    }
    for flag in ["--b-config", "--a-env", "--dry-run"] {
        assert!(bash.contains(flag), "{flag} not in the bash completions");
    }
    assert!(run(&["completions", "zsh"]).contains("#compdef perf-tests"));
    let err = common::bin()
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(err.status.code(), Some(2));
}
