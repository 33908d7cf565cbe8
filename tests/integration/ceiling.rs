//! The network's ceiling (`NETWORK_CEILING`) on the real engine: iperf3 on every hop of the
//! default suite's first two paths (the broker alone, through the proxy), recorded, shown as
//! the rates' share of it, and nothing left.

use crate::common;
use common::{engine_lock, leftovers, only_run, run_id_of, run_succeeds};

fn scenario(run: &std::path::Path, name: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(run.join(format!("{name}.json"))).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_hop_of_each_path_is_measured_recorded_and_shown_and_nothing_is_left() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let stderr = run_succeeds(
        results.path(),
        &[
            ("TEST", "0[12].*"),
            ("NUM_RECORDS", "2e4"),
            ("NETWORK_CEILING", "1"),
        ],
    );
    let run = only_run(results.path());
    for (name, hops) in [
        ("01-no-proxy-baseline", &[("load generator", "broker1")][..]),
        (
            "02-no-filters",
            &[
                ("load generator", "kroxylicious-no-filters"),
                ("kroxylicious-no-filters", "broker1"),
            ],
        ),
    ] {
        let r = scenario(&run, name);
        let network = r["network"].as_array().expect("a network entry");
        let found: Vec<(&str, &str)> = network
            .iter()
            .map(|n| (n["from"].as_str().unwrap(), n["to"].as_str().unwrap()))
            .collect();
        assert_eq!(found, hops, "{name}");
        // The records crossed each hop at the producer's rate: the hop carries at least that.
        let producer = r["measurement"]["producer"]["rate_mib_s"].as_f64().unwrap();
        for n in network {
            let ceiling = n["mib_s"].as_f64().unwrap();
            assert!(ceiling > producer, "{name}: {n} against {producer} MiB/s");
            assert!(n["seconds"].as_f64().unwrap() >= 1.5, "{n}");
            assert!(n["rtt_ms"].as_f64().is_some_and(|t| t > 0.0), "{n}");
        }
        assert!(
            stderr.contains(&format!("{name}: measuring the network ceiling")),
            "{stderr}"
        );
    }
    // The table: a row per hop, each rate's share of its hop's ceiling.
    let tables = std::fs::read_to_string(run.join("tables.txt")).unwrap();
    let start = tables.find("Network Ceiling\n").expect("the table");
    let rows: Vec<&str> = tables[start..]
        .lines()
        .skip(3)
        .take_while(|l| l.starts_with("0"))
        .collect();
    assert_eq!(rows.len(), 3, "{tables}");
    let r = scenario(&run, "01-no-proxy-baseline");
    let share = 100.0 * r["measurement"]["producer"]["rate_mib_s"].as_f64().unwrap()
        / r["network"][0]["mib_s"].as_f64().unwrap();
    assert_eq!(
        rows[0].split_whitespace().nth(7),
        Some(format!("{share:.1}").as_str()),
        "{}",
        rows[0]
    );
    // The iperf3 servers and clients went with the run.
    assert_eq!(leftovers(&run_id_of(&run)).await, (0, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn network_ceiling_0_skips_it_and_a_value_not_0_or_1_is_refused() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let stderr = run_succeeds(
        results.path(),
        &[
            ("TEST", "01.*"),
            ("NUM_RECORDS", "2e3"),
            ("NETWORK_CEILING", "0"),
        ],
    );
    let run = only_run(results.path());
    assert!(scenario(&run, "01-no-proxy-baseline")
        .get("network")
        .is_none());
    assert!(!stderr.contains("network ceiling"), "{stderr}");
    let tables = std::fs::read_to_string(run.join("tables.txt")).unwrap();
    assert!(!tables.contains("Network Ceiling"), "{tables}");

    let refused = tempfile::tempdir().unwrap();
    let out = common::perf_tests_run(refused.path())
        .env("NETWORK_CEILING", "yes")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("NETWORK_CEILING=\"yes\": expected 0 or 1"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(refused.path()).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_iperf3_that_cannot_listen_names_the_hop_quotes_iperf3_and_leaves_nothing() {
    use perf_tests::world::ceiling::{self, Hop, Pair};
    use perf_tests::world::engine::OneOff;
    let _lock = engine_lock(false);
    let run_id = format!("ceiling-fail-{}", std::process::id());
    let engine = common::engine(&run_id).await;
    perf_tests::world::images::recipe::ensure(&engine, &ceiling::recipe(), false)
        .await
        .unwrap();
    // A "service" already holding iperf3's port in its network namespace.
    let holder = engine
        .start_detached(OneOff {
            image: ceiling::IMAGE.into(),
            cmd: ["-s", "-p", "5201", "--forceflush"]
                .map(String::from)
                .to_vec(),
            env: vec!["TMPDIR=/".into()],
            name_hint: "holder".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let listening = || {
        let logs = common::docker_cli(&["logs", &holder]);
        logs.contains("Server listening")
    };
    common::wait_for(
        "the holder listens",
        std::time::Duration::from_secs(20),
        listening,
    );
    let pair = Pair {
        hop: Hop {
            from: None,
            to: "holder".into(),
            host: "holder".into(),
        },
        from_container: None,
        to_container: holder.clone(),
    };
    let started = std::time::Instant::now();
    let ends = ceiling::Ends {
        server: &engine,
        client: &engine,
    };
    let err = ceiling::measure(ends, "bridge", None, &pair)
        .await
        .unwrap_err();
    let err = format!("{err:#}");
    assert!(
        err.contains("measuring the network ceiling from load generator to holder"),
        "{err}"
    );
    assert!(err.contains("Address already in use"), "{err}");
    // Known at once from the server's end, not after the listening timeout.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "{err}"
    );
    // Only the holder is left: the measurement's own server went with the error.
    assert_eq!(leftovers(&run_id).await, (1, 0));
    engine.remove_run(&run_id).await.unwrap();
    assert_eq!(leftovers(&run_id).await, (0, 0));
}
