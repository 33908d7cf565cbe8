//! Many clients on the real engine: several producers sharing the records and the rate, several
//! consumers of one group sharing the partitions (of one topic or several), their figures merged
//! into one row.

use crate::common;
use common::{engine_lock, leftovers, only_run, run_id_of, run_succeeds};

use serde_json::Value;

/// The measurement of `02-no-filters` in the run's results.
fn measurement(run: &std::path::Path) -> Value {
    let result: Value =
        serde_json::from_slice(&std::fs::read(run.join("02-no-filters.json")).unwrap()).unwrap();
    result["measurement"].clone()
}

/// The records each member of the group read.
fn per_client(m: &Value) -> Vec<u64> {
    m["consumer"]["per_client"]
        .as_array()
        .unwrap_or_else(|| panic!("per_client in {m}"))
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn producers_and_consumers_share_the_work_and_their_figures_are_merged() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    // Records spread over the 3 partitions at random, so every consumer has some to read.
    run_succeeds(
        results.path(),
        &[
            ("TEST", "02-no-filters"),
            ("NUM_RECORDS", "2e4"),
            ("THROUGHPUT", "4000"),
            ("PARTITIONS", "3"),
            ("PRODUCERS", "2"),
            ("CONSUMERS", "3"),
            (
                "PRODUCER_PROPERTIES",
                "acks=all partitioner=random sticky.partitioning.linger.ms=0",
            ),
        ],
    );

    let run = only_run(results.path());
    let m = &measurement(&run);
    for counter in ["requested", "acknowledged", "end_offsets", "consumed"] {
        assert_eq!(m["integrity"][counter], 20_000, "{counter}: {m}");
    }
    // Two producers at 2000 rec/s each: the merged rate is the sum (one producer's alone could
    // not pass 2000; a loaded machine may keep the pair below 4000), their target the whole.
    let producer = &m["producer"];
    let rate = producer["rate_rec_s"].as_f64().unwrap();
    assert!((2400.0..4400.0).contains(&rate), "{producer}");
    assert_eq!(producer["target_rec_s"], 4000.0);
    assert!(
        producer["intended"]["p99_ms"].as_f64().is_some(),
        "{producer}"
    );
    // Three consumers of one group together read every record once, and each read some: no
    // member drained the backlog before the others joined (each held its partitions until the
    // group formed), and the reading came after that.
    let per_client = per_client(m);
    assert_eq!(per_client.len(), 3, "{per_client:?}");
    assert_eq!(per_client.iter().sum::<u64>(), 20_000);
    // Records went to random partitions: every member had about a third to read.
    assert!(per_client.iter().all(|&n| n > 3000), "{per_client:?}");
    let consumer = &m["consumer"];
    assert!(consumer["fetch_ms"].as_f64().unwrap() > 0.0, "{consumer}");

    assert_eq!(leftovers(&run_id_of(&run)).await, (0, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn records_spread_over_several_topics_that_one_group_reads() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    // Three topics of one partition each: three consumers are allowed only because the
    // partitions of all topics count, and each can own one only if the group reads every topic.
    run_succeeds(
        results.path(),
        &[
            ("TEST", "02-no-filters"),
            ("NUM_RECORDS", "6000"),
            ("TOPICS", "3"),
            ("PARTITIONS", "1"),
            ("PRODUCERS", "2"),
            ("CONSUMERS", "3"),
        ],
    );

    let run = only_run(results.path());
    let m = &measurement(&run);
    for counter in ["requested", "acknowledged", "end_offsets", "consumed"] {
        assert_eq!(m["integrity"][counter], 6000, "{counter}: {m}");
    }
    // Each producer sends its 3000 records to the topics in turn, so every topic holds exactly
    // 2000, and each member, owning one topic's partition, read exactly those.
    let mut per_client = per_client(m);
    per_client.sort_unstable();
    assert_eq!(per_client, [2000, 2000, 2000], "{m}");

    assert_eq!(leftovers(&run_id_of(&run)).await, (0, 0));
}
