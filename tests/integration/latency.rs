//! Latency from intended send times: with a THROUGHPUT target, a path that stalls holds the
//! producer's sends back (its queue fills), so the records that should have been sent during
//! the stall are sent late and, timed from their actual sends, look fast (coordinated omission).
//! Timed from their intended send times they show the stall.

use crate::common;
use common::{engine_lock, leftovers, only_run, perf_tests_run, run_with_a_stall, StallAt};

use serde_json::Value;

#[tokio::test(flavor = "multi_thread")]
async fn a_stall_shows_in_the_latency_from_intended_send_times_only() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let mut cmd = perf_tests_run(results.path());
    // 8 s of sends at 5000 rec/s; a queue of 50 records, so a stalled path stops the sends.
    cmd.env("TEST", "02.*")
        .env("NUM_RECORDS", "4e4")
        .env("THROUGHPUT", "5000")
        .env(
            "PRODUCER_PROPERTIES",
            "acks=all queue.buffering.max.messages=50",
        );
    // The stall starts once the measured producer's first records are acknowledged (its
    // progress counts out of the 40000; the warm-up shows no count).
    let at = StallAt::Through {
        step: "produce",
        of: 40000,
    };
    let (status, stderr, run_id) = run_with_a_stall(cmd, "kroxylicious-no-filters", at);
    assert!(status.success(), "{stderr}");
    let run = only_run(results.path());
    let result: Value =
        serde_json::from_slice(&std::fs::read(run.join("02-no-filters.json")).unwrap()).unwrap();
    let producer = &result["measurement"]["producer"];
    let p99 = producer["p99_ms"].as_f64().unwrap();
    let intended_p99 = producer["intended"]["p99_ms"].as_f64().unwrap();
    let intended_max = producer["intended"]["max_lat_ms"].as_f64().unwrap();
    // About 7500 of the 40000 records were due during or just after the 1.5 s stall: timed from
    // their intended send times, more than 1% waited most of it.
    assert!(intended_p99 >= 700.0, "{producer}");
    assert!(intended_max >= 1200.0, "{producer}");
    // Timed from their actual sends, only the few queued records saw the stall.
    assert!(p99 * 2.0 < intended_p99, "{producer}");
    let tables = std::fs::read_to_string(run.join("tables.txt")).unwrap();
    assert!(
        tables.contains("Producer Latency from Intended Send Times"),
        "{tables}"
    );
    assert_eq!(leftovers(&run_id).await, (0, 0));
}
