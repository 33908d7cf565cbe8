//! MODE=end-to-end: producer and consumer run at once and the consumer measures each record's
//! latency from its send to its receipt. A path that stalls for 1.5 s shows in those latencies:
//! the records sent during the stall arrive late.

use crate::common;
use common::{engine_lock, leftovers, only_run, perf_tests_run, run_with_a_stall, StallAt};

use serde_json::Value;

#[tokio::test(flavor = "multi_thread")]
async fn a_stall_shows_in_the_end_to_end_latencies() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let mut cmd = perf_tests_run(results.path());
    // 8 s of sends at 1000 rec/s through the Kroxylicious proxy, received as they are sent: a
    // rate far below what the path carries even on a loaded machine, so the records held back
    // by the stall are soon through and the ones after it are not queued behind them.
    cmd.env("TEST", "02-no-filters")
        .env("NUM_RECORDS", "8000")
        .env("THROUGHPUT", "1000")
        .env("MODE", "end-to-end");
    // The stall starts once the measured consumer has its first records (its progress counts
    // out of the 8000; the warm-up shows no count): then both clients' connections are set up,
    // the consumer's fetch connection last. The records sent in the next 1.5 s wait.
    let at = StallAt::Through {
        step: "consume",
        of: 8000,
    };
    let (status, stderr, run_id) = run_with_a_stall(cmd, "kroxylicious-no-filters", at);
    assert!(status.success(), "{stderr}");
    let run = only_run(results.path());
    let result: Value =
        serde_json::from_slice(&std::fs::read(run.join("02-no-filters.json")).unwrap()).unwrap();
    let m = &result["measurement"];
    for counter in ["requested", "acknowledged", "end_offsets", "consumed"] {
        assert_eq!(m["integrity"][counter], 8000, "{counter}: {m}");
    }
    // The warm-up had the measured phase's shape: producer and group at once, at the rate.
    for step in ["warm_up_produce_and_consume", "produce_and_consume"] {
        assert!(m["steps_s"][step].as_f64().unwrap() > 0.0, "{step}: {m}");
    }
    assert!(m["steps_s"].get("warm_up_produce").is_none(), "{m}");
    let e2e = &m["consumer"]["end_to_end"];
    let get = |k: &str| e2e[k].as_f64().unwrap_or_else(|| panic!("{k} in {e2e}"));
    let (p50, p99, p9999, max) = (
        get("p50_ms"),
        get("p99_ms"),
        get("p9999_ms"),
        get("max_lat_ms"),
    );
    // A percentile is its histogram bucket's top, up to 0.1% above the largest value recorded.
    assert!(
        p50 <= p99 && p99 <= p9999 && p9999 <= max * 1.001 + 1.0,
        "{e2e}"
    );
    // About 1500 of the 8000 records were sent during the stall: more than 1% waited for most
    // of it, while the median record did not.
    assert!(max >= 1200.0, "{e2e}");
    assert!(p99 >= 700.0, "{e2e}");
    // How soon the path clears the stall's backlog depends on the machine's load; the median
    // waited far less than the 1% that waited longest, however loaded.
    assert!(p50 < p99 / 2.0, "{e2e}");
    let tables = std::fs::read_to_string(run.join("tables.txt")).unwrap();
    assert!(
        tables.contains("End-to-End Latency (send to receipt)"),
        "{tables}"
    );
    assert_eq!(leftovers(&run_id).await, (0, 0));
}
