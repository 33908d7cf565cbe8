//! A cluster of three brokers (`BROKERS=3`) with replication factor 3, on the real engine with
//! the default suite's images and small counts: every default path carried through the proxy to
//! each broker, the replicas in sync as Kafka's own topic tool reads them, a broker killed
//! mid-phase named, each broker costed, nothing left; and what a cluster cannot be refused.

use crate::common::{self, json};
use common::{docker_cli, engine_lock, leftovers, only_run, perf_tests_run, running_container};

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::Value as Json;

/// The cluster every test here runs: three brokers, each partition on all three, a write
/// acknowledged by two, a partition led by each broker.
const CLUSTER: [(&str, &str); 4] = [
    ("BROKERS", "3"),
    ("REPLICATION_FACTOR", "3"),
    ("MIN_INSYNC_REPLICAS", "2"),
    ("PARTITIONS", "3"),
];

const SCENARIOS: [&str; 5] = [
    "01-no-proxy-baseline",
    "02-no-filters",
    "03-transform-filter",
    "04-envelope-encryption-filter",
    "05-envelope-encryption-filter-no-encrypt",
];

/// `perf-tests run --dry-run` of the default suite with `env`: its exit code and its output.
fn dry_run(env: &[(&str, &str)]) -> (Option<i32>, String) {
    common::outcome(
        common::bin()
            .args(["run", "--dry-run"])
            .envs(env.iter().copied()),
    )
}

#[test]
fn a_cluster_the_suite_or_the_settings_cannot_hold_is_refused_before_anything_starts() {
    let (code, plan) = dry_run(&CLUSTER);
    assert_eq!(code, Some(0), "{plan}");
    assert!(
        plan.contains("services: broker1, broker2, broker3")
            && plan.contains("broker3 at broker3:9092"),
        "{plan}"
    );
    let suite = "scenarios/kroxylicious/suite.yaml runs at most 3 (its `brokers:` lists 3: \
                 broker1, broker2, broker3)";
    for (env, says) in [
        (&[("BROKERS", "4")][..], suite),
        (&[("BROKERS", "0")][..], "BROKERS=\"0\": must be at least 1"),
        (
            &[("BROKERS", "1,3")][..],
            "BROKERS cannot take a list of values",
        ),
        (
            &[("BROKERS", "2"), ("REPLICATION_FACTOR", "3")][..],
            "REPLICATION_FACTOR=3 is more than BROKERS=2",
        ),
        (
            &[
                ("BROKERS", "3"),
                ("REPLICATION_FACTOR", "2"),
                ("MIN_INSYNC_REPLICAS", "3"),
            ][..],
            "MIN_INSYNC_REPLICAS=3 is more than REPLICATION_FACTOR=2",
        ),
        (
            &[("BROKERS", "3"), ("PARTITIONS", "2"), ("CONSUMERS", "3")][..],
            "CONSUMERS=3 is more than PARTITIONS=2",
        ),
        (
            &[
                ("BROKERS", "3"),
                ("REPLICATION_FACTOR", "3"),
                ("DRIVER", "kafka-tools"),
            ][..],
            "REPLICATION_FACTOR=3 needs DRIVER=native",
        ),
    ] {
        let (code, text) = dry_run(env);
        assert_eq!(code, Some(2), "{env:?}: {text}");
        assert!(text.contains(says), "{env:?}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn three_brokers_carry_every_default_path_through_the_proxy_to_each_broker() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let out = perf_tests_run(results.path())
        .envs(CLUSTER)
        .env("NUM_RECORDS", "3000")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("==> starting broker1, broker2, broker3"),
        "{stderr}"
    );
    let run = only_run(results.path());
    let settings = &json(&run.join("run.json"))["settings"];
    assert_eq!(
        (&settings["brokers"], &settings["replication_factor"]),
        (&Json::from(3), &Json::from(3)),
        "{settings}"
    );
    for scenario in SCENARIOS {
        let r = json(&run.join(format!("{scenario}.json")));
        // The check's three partitions were led by three different brokers, and every sample
        // record crossed the path to its leader and back as the scenario declares.
        let check = &r["path_check"];
        let leaders: BTreeSet<i64> = check["leaders"]
            .as_array()
            .unwrap_or_else(|| panic!("{scenario}: {check}"))
            .iter()
            .map(|l| l.as_i64().unwrap())
            .collect();
        assert_eq!(leaders, BTreeSet::from([1, 2, 3]), "{scenario}: {check}");
        assert_eq!(
            (&check["broker_ok"], &check["consumer_ok"]),
            (&Json::from(20), &Json::from(20)),
            "{scenario}: {check}"
        );
        // Every record acknowledged by the cluster is in its partitions and was consumed.
        let integrity = &r["measurement"]["integrity"];
        for count in ["acknowledged", "end_offsets", "consumed"] {
            assert_eq!(integrity[count], 3000, "{scenario}: {integrity}");
        }
        // Each broker is costed in each phase, and each did work in it: with three replicas
        // every broker receives every record, as leader or follower.
        for phase in r["measurement"]["cost"].as_array().unwrap() {
            for broker in ["broker1", "broker2", "broker3"] {
                let s = common::service_entry(&phase["services"], broker);
                assert_eq!(s["role"], "run-wide", "{scenario}: {s}");
                assert!(s["cpu_s"].as_f64().unwrap() > 0.0, "{scenario}: {s}");
            }
        }
        let produce = &r["measurement"]["cost"][0];
        assert_eq!(produce["phase"], "produce");
        for broker in ["broker1", "broker2", "broker3"] {
            let s = common::service_entry(&produce["services"], broker);
            // 3000 records of 1 KiB reached every broker (about 3 MB; more with encryption).
            assert!(
                s["rx_bytes"].as_u64().unwrap() > 3000 * 1024,
                "{scenario}: {s}"
            );
        }
    }
    // The tables sum the cluster in a row of its own beside each broker's.
    let tables = std::fs::read_to_string(run.join("tables.txt")).unwrap();
    let cost = tables.split("\nCost\n").nth(1).expect("a Cost table");
    for row in ["broker3 (run-wide)", "cluster (run-wide)"] {
        assert!(cost.contains(row), "{tables}");
    }
    let run_id = common::run_id_of(&run);
    assert_eq!(leftovers(&run_id).await, (0, 0));
}

/// The measured topic as Kafka's own topic tool describes it, asked of broker1 on the run's
/// network from the kafka-tools image: (replication factor, its configs, each partition's
/// leader and in-sync replicas).
fn describe(network: &str, topic: &str) -> (String, String, Vec<(String, String)>) {
    let out = Command::new("docker")
        .args(["run", "--rm", "--network", network])
        .args([
            "perf-tests/kafka-tools:4.4.0",
            "/opt/kafka/bin/kafka-topics.sh",
        ])
        .args([
            "--bootstrap-server",
            "broker1:9092",
            "--describe",
            "--topic",
            topic,
        ])
        .env_remove("DOCKER_HOST")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |line: &str, name: &str| -> String {
        line.split('\t')
            .find_map(|f| f.trim().strip_prefix(&format!("{name}: ")))
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let head = text.lines().next().unwrap_or_default();
    let partitions = text
        .lines()
        .filter(|l| l.contains("Partition: "))
        .map(|l| (field(l, "Leader"), field(l, "Isr")))
        .collect();
    (
        field(head, "ReplicationFactor"),
        field(head, "Configs"),
        partitions,
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_replicas_are_in_sync_at_the_brokers_and_a_broker_killed_mid_phase_is_named() {
    // Far more records than the test waits for: only the kill can end the measurement early.
    // Two replicas stay in sync after it, so the producer could go on: the run ends because a
    // broker of the cluster it measures died, and says which.
    let mut env = CLUSTER.to_vec();
    env.extend([("NUM_RECORDS", "1e7"), ("THROUGHPUT", "2e4")]);
    let phase = "the measurement (its produce phase)";
    common::kill_during("02.*", "broker3", &env, ("10000000", phase), |run_id| {
        let (factor, configs, partitions) = measured_topic(run_id);
        // Before the phase ended, each of the measured topic's partitions had three replicas,
        // all in sync, under the topic's own min.insync.replicas, and each broker led one.
        assert_eq!(factor, "3", "{configs} {partitions:?}");
        assert!(configs.contains("min.insync.replicas=2"), "{configs}");
        assert_eq!(partitions.len(), 3, "{partitions:?}");
        let leaders: BTreeSet<&str> = partitions.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(leaders, BTreeSet::from(["1", "2", "3"]), "{partitions:?}");
        for (_, isr) in &partitions {
            let isr: BTreeSet<&str> = isr.split(',').collect();
            assert_eq!(isr, BTreeSet::from(["1", "2", "3"]), "{partitions:?}");
        }
    })
    .await;
}

/// The topic the load generator of run `run_id` produces to, described at the brokers.
fn measured_topic(run_id: &str) -> (String, String, Vec<(String, String)>) {
    let workload = running_container(run_id, "workload").expect("the load generator runs");
    let args = docker_cli(&["top", &workload, "-eo", "pid,args"]);
    let topic = args
        .lines()
        .find(|l| l.contains("workload produce "))
        .and_then(|l| l.split("--topic ").nth(1))
        .and_then(|t| t.split_whitespace().next())
        .unwrap_or_else(|| panic!("the produce step names its topic: {args}"))
        .to_string();
    let network = docker_cli(&[
        "inspect",
        "-f",
        "{{range $k, $v := .NetworkSettings.Networks}}{{$k}}{{end}}",
        &workload,
    ]);
    describe(network.trim(), &topic)
}
