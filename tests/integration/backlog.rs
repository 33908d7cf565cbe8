//! MODE=backlog on the real engine: through the Kroxylicious proxy, a group of two consumers
//! finds a backlog waiting and catches up with it while a producer keeps sending.

use crate::common;
use common::{engine_lock, leftovers, only_run, run_id_of, run_succeeds};

use serde_json::Value;

#[tokio::test(flavor = "multi_thread")]
async fn a_group_catches_up_through_the_proxy_and_every_record_is_counted() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let stderr = run_succeeds(
        results.path(),
        &[
            ("TEST", "02-no-filters"),
            ("MODE", "backlog"),
            ("NUM_RECORDS", "3e4"),
            ("RECORD_SIZE", "100"),
            ("THROUGHPUT", "3000"),
            ("PARTITIONS", "2"),
            ("CONSUMERS", "2"),
        ],
    );
    assert!(stderr.contains("caught up in "), "{stderr}");

    let run = only_run(results.path());
    let result: Value =
        serde_json::from_slice(&std::fs::read(run.join("02-no-filters.json")).unwrap()).unwrap();
    let m = &result["measurement"];
    // The backlog, then what the live producer sent until the group caught up: the broker
    // holds them all and the group read them all (the last few after the catch-up).
    assert_eq!(m["producer"]["sent"], 30_000, "{m}");
    assert_eq!(
        m["producer"]["target_rec_s"], -1.0,
        "the backlog is unthrottled: {m}"
    );
    let acknowledged = m["integrity"]["acknowledged"].as_u64().unwrap();
    assert!(acknowledged > 30_000, "{m}");
    for counter in ["requested", "end_offsets", "consumed"] {
        assert_eq!(m["integrity"][counter], acknowledged, "{counter}: {m}");
    }
    let c = &m["consumer"]["catch_up"];
    assert_eq!(c["backlog"], 30_000, "{c}");
    assert_eq!(c["live_target_rec_s"], 3000.0, "{c}");
    assert_eq!(c["lag_bound"], 1000, "{c}");
    assert!(c["final_lag"].as_u64().unwrap() <= 1000, "{c}");
    let took = c["caught_up_s"].as_f64().unwrap_or_else(|| panic!("{c}"));
    assert!(took > 0.0 && took < 120.0, "{c}");
    let live = c["live_rec_s"].as_f64().unwrap();
    assert!(live > 0.0 && live < 4000.0, "{c}");
    // Together the two members of the group read the backlog, and more.
    let per_client: Vec<u64> = m["consumer"]["per_client"]
        .as_array()
        .unwrap_or_else(|| panic!("per_client in {m}"))
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(per_client.len(), 2, "{per_client:?}");
    assert!(per_client.iter().sum::<u64>() >= 30_000, "{per_client:?}");
    // Costed over its two phases: the backlog's produce, then the catch-up, whose records are
    // those the group read and those the live producer sent in it; the proxy worked in both.
    let cost = m["cost"]
        .as_array()
        .unwrap_or_else(|| panic!("cost in {m}"));
    let phases: Vec<&str> = cost.iter().map(|p| p["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["produce", "catch_up"], "{m}");
    assert_eq!(cost[0]["records"], 30_000, "{m}");
    assert!(cost[1]["records"].as_u64().unwrap() > 30_000, "{m}");
    for phase in cost {
        let proxy = common::service_entry(&phase["services"], "kroxylicious-no-filters");
        assert!(proxy["cpu_s"].as_f64().unwrap() > 0.0, "{phase}");
    }

    let tables = std::fs::read_to_string(run.join("tables.txt")).unwrap();
    assert!(tables.contains("Backlog Catch-Up"), "{tables}");
    // Its THROUGHPUT is the live producer's, not a rate to sustain.
    assert!(!tables.contains("Highest Sustained Rate"), "{tables}");
    assert_eq!(leftovers(&run_id_of(&run)).await, (0, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_group_that_cannot_catch_up_in_time_stops_there_and_reports_its_lag() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    // A million 1 KiB records take the group seconds to read through the proxy (about 300000
    // a second on this kind of machine), far beyond one second.
    let stderr = run_succeeds(
        results.path(),
        &[
            ("TEST", "02-no-filters"),
            ("MODE", "backlog"),
            ("NUM_RECORDS", "1e6"),
            ("THROUGHPUT", "2000"),
            ("CATCH_UP_SECONDS", "1"),
        ],
    );
    assert!(
        stderr.contains("did not catch up within 1 s: lag "),
        "{stderr}"
    );

    let run = only_run(results.path());
    let result: Value =
        serde_json::from_slice(&std::fs::read(run.join("02-no-filters.json")).unwrap()).unwrap();
    let m = &result["measurement"];
    let c = &m["consumer"]["catch_up"];
    assert!(c["caught_up_s"].is_null(), "{c}");
    assert!(c["final_lag"].as_u64().unwrap() > 100_000, "{c}");
    // What the group left was read after, so the counters still agree.
    let acknowledged = m["integrity"]["acknowledged"].as_u64().unwrap();
    assert!(acknowledged > 1_000_000, "{m}");
    for counter in ["requested", "end_offsets", "consumed"] {
        assert_eq!(m["integrity"][counter], acknowledged, "{counter}: {m}");
    }
    let tables = std::fs::read_to_string(run.join("tables.txt")).unwrap();
    let row = tables
        .lines()
        .skip_while(|l| !l.starts_with("Backlog Catch-Up"))
        .find(|l| l.starts_with("02-no-filters"))
        .unwrap_or_else(|| panic!("{tables}"));
    assert!(row.contains("n/a"), "{row}");
    assert_eq!(leftovers(&run_id_of(&run)).await, (0, 0));
}
