//! `benches/ab-campaign.sh` on real runs of the default suite's baseline
//! (`scenarios/kroxylicious`, 01: the broker alone): the sides' runs alternate in time, are
//! pooled, and the comparison's verdict is counted. Two runs compared one after the other (A/A,
//! and slowdowns injected into the path, the broker and the producer) are `trust_delay.rs`.

use crate::common;
use common::engine_lock;

use serde_json::Value;

const SCENARIO: &str = "01-no-proxy-baseline";

/// The last lines of each run's log the campaign kept in `dir`, for a failure's message: the
/// directory goes with the test.
fn failed_runs(dir: &std::path::Path) -> String {
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    logs.iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(30)..].join("\n");
            format!("\n--- {}:\n{tail}", p.display())
        })
        .collect()
}

/// `benches/ab-campaign.sh` as a user runs it, at its smallest certain verdict: one campaign of
/// five runs a side of the default suite's baseline, side b's producer held to 500 rec/s (B_ENV), which
/// the comparison must find: five a side are the fewest with which it can find any change (Holm
/// over two primary rates), and five that do not overlap are significant (one-sided 1/252); a
/// rate a quarter or less of the other is beyond any threshold. The sides' runs alternate in
/// time, each side's runs are pooled (one repetition a run), and the summary counts the
/// regression found. It need not run alone: a slowdown to a quarter is beyond any neighbour's.
#[test]
fn the_ab_campaign_script_alternates_the_sides_and_counts_what_it_finds() {
    let _lock = engine_lock(false);
    let out_dir = tempfile::tempdir().unwrap();
    let script = common::repo().join("benches/ab-campaign.sh");
    let campaign = |bin: &str| {
        let mut cmd = std::process::Command::new(&script);
        for var in common::setting_vars() {
            cmd.env_remove(var);
        }
        cmd.env("PERF_TESTS_BIN", bin)
            .env("CAMPAIGNS", "1")
            .env("RUNS_PER_SIDE", "5")
            .env("B_ENV", "THROUGHPUT=500")
            .env("NUM_RECORDS", "1000")
            .env("SCENARIOS", "scenarios/kroxylicious")
            .env("TEST", "01.*")
            .env("NETWORK_CEILING", "0")
            .env("WARM_UP_NUM_RECORDS_POST_BROKER_START", "200")
            .env("WARM_UP_NUM_RECORDS_PRE_TEST", "200")
            .env("OUT", out_dir.path())
            .output()
            .unwrap()
    };
    let missing = campaign("/nonexistent/perf-tests");
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .contains("/nonexistent/perf-tests not found; run cargo build --release"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );

    let out = campaign(env!("CARGO_BIN_EXE_perf-tests"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{stderr}{}",
        failed_runs(out_dir.path())
    );
    let order: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("==> campaign 1 of 1: "))
        .collect();
    let expected: Vec<String> = (1..=5)
        .flat_map(|r| ["a", "b"].map(|side| format!("run {r} of 5, side {side}")))
        .collect();
    assert_eq!(order, expected);
    // The runs' own clocks say the same: a, b, a, b, ...; and side b ran at its setting.
    let runs = |side: &str| -> Vec<(String, i64)> {
        let dir = out_dir.path().join("campaign-1").join(side);
        let mut t: Vec<(String, i64)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| {
                let info: Value = serde_json::from_slice(
                    &std::fs::read(e.unwrap().path().join("run.json")).unwrap(),
                )
                .unwrap();
                (
                    info["started_at"].as_str().unwrap().to_string(),
                    info["settings"]["throughput"].as_i64().unwrap(),
                )
            })
            .collect();
        t.sort();
        t
    };
    let (a, b) = (runs("a"), runs("b"));
    assert_eq!((a.len(), b.len()), (5, 5));
    for i in 0..5 {
        assert!(a[i].0 < b[i].0, "{a:?} {b:?}");
        if i < 4 {
            assert!(b[i].0 < a[i + 1].0, "{a:?} {b:?}");
        }
        assert_eq!((a[i].1, b[i].1), (-1, 500));
    }
    let summary = std::fs::read_to_string(out_dir.path().join("summary.txt")).unwrap();
    assert!(summary.contains("campaign 1: exit 1: "), "{summary}");
    assert!(
        summary.contains("regressions found in 1 of 1 comparisons"),
        "{summary}"
    );
    let compare =
        std::fs::read_to_string(out_dir.path().join("campaign-1").join("compare.txt")).unwrap();
    assert!(
        compare.contains(&format!("{SCENARIO} Rate rec/s -")),
        "{compare}"
    );
    // Each run is one repetition: the pooled sides count five each.
    assert!(
        compare.contains("(5 base vs 5 new repetitions; Holm over 2 primary tests)"),
        "{compare}"
    );
    assert!(!compare.contains("not interleaved"), "{compare}");
    let spread = summary
        .lines()
        .find(|l| l.contains(SCENARIO) && l.contains("producer rec/s"))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(spread.trim_end().ends_with("%)"), "{spread}");
}
