//! The results as other tools read them, from a real run of the default suite's baseline
//! (end-to-end, throttled, twice, so every kind of histogram is kept): every JSON file is valid
//! against the schema shipped for it (Python's `jsonschema`, not this crate's types), the
//! `.hlog` read by PyPI's `hdrhistogram` holds each repetition's histograms with the counts and
//! percentiles the JSON states, each interval where its side was measured, and `metrics.csv`
//! holds every repetition's figures.

use crate::common::{self, json};
use common::{engine_lock, only_run, repo, run_succeeds};

use std::path::Path;
use std::process::Command;

use serde_json::Value as Json;

const SCENARIO: &str = "01-no-proxy-baseline";
const RECORDS: u64 = 2000;

/// Runs `script` with Python 3 on `args`; its stdout, as JSON.
fn python(script: &str, args: &[&Path]) -> Json {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect(
            "python3 runs (scripts/setup --tests installs it with jsonschema and hdrhistogram)",
        );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// Every error of each file against its schema, by jsonschema's validator of the schema's own
/// draft; `{file: [errors]}`.
const VALIDATE: &str = r#"
import json, sys, jsonschema
schemas, files = sys.argv[1], sys.argv[2:]
out = {}
for f in files:
    name = f.rsplit("/", 1)[-1]
    kind = {"run.json": "run", "sizing.json": "sizing"}.get(name, "scenario")
    schema = json.load(open(f"{schemas}/{kind}.schema.json"))
    validator = jsonschema.validators.validator_for(schema)
    validator.check_schema(schema)
    out[name] = [f"{list(e.path)}: {e.message}" for e in validator(schema).iter_errors(json.load(open(f)))]
print(json.dumps(out))
"#;

/// Each interval of an HdrHistogram log as HdrHistogram's Python reader reads it: its tag,
/// count, percentiles and maximum (µs), and its absolute start and end (ms since the epoch).
const READ_LOG: &str = r#"
import json, sys
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader
reader = HistogramLogReader(sys.argv[1], HdrHistogram(1, 3_600_000_000, 3))
out = []
while True:
    h = reader.get_next_interval_histogram()
    if h is None:
        break
    out.append({"tag": h.get_tag(), "count": h.get_total_count(),
                "p50": h.get_value_at_percentile(50), "p99": h.get_value_at_percentile(99),
                "p999": h.get_value_at_percentile(99.9), "max": h.get_max_value(),
                "start_ms": h.get_start_time_stamp(), "end_ms": h.get_end_time_stamp()})
print(json.dumps(out))
"#;

/// The rows of a CSV file as Python's csv module reads them.
const READ_CSV: &str = r#"
import csv, json, sys
print(json.dumps(list(csv.DictReader(open(sys.argv[1], newline="")))))
"#;

/// Whether `got` (µs, HdrHistogram's Python reader) is the value `ms` (ms, the results) within
/// the histogram's resolution: three significant digits, a bucket of at most 1/1024 of the value,
/// and the results' millisecond figure printed from whole µs.
fn same_value(got: f64, ms: f64) -> bool {
    let want = ms * 1000.0;
    (got - want).abs() <= want / 1024.0 + 1.0
}

#[test]
fn results_files_read_back_through_their_schemas_and_independent_readers() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let records = RECORDS.to_string();
    run_succeeds(
        results.path(),
        &[
            ("TEST", "01-.*"),
            ("NUM_RECORDS", &records),
            ("MODE", "end-to-end"),
            ("THROUGHPUT", "2000"),
            ("REPEAT", "2"),
            ("NETWORK_CEILING", "0"),
        ],
    );
    let dir = only_run(results.path());

    // Every JSON file of the run is valid against its shipped schema, and says its layout.
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(files.len(), 2, "run.json and the scenario's: {files:?}");
    let schemas = repo().join("schemas");
    let mut args: Vec<&Path> = vec![&schemas];
    args.extend(files.iter().map(|f| f.as_path()));
    let errors = python(VALIDATE, &args);
    for (file, errs) in errors.as_object().unwrap() {
        assert_eq!(errs.as_array().unwrap().len(), 0, "{file}: {errs}");
    }
    let info = json(&dir.join("run.json"));
    let result = json(&dir.join(format!("{SCENARIO}.json")));
    for v in [&info, &result] {
        assert_eq!(
            v["schema_version"],
            perf_tests::present::results::SCHEMA_VERSION,
            "{v}"
        );
    }
    // The crate's own version (Cargo.toml's, read here as text, not through the crate).
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("version = "))
        .unwrap()
        .trim_matches('"');
    assert_eq!(info["tool_version"], version);
    // The engine's machine, as this machine's own tools describe it (the engine runs here).
    let nodes = info["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1, "{nodes:?}");
    let engine_version = common::docker_cli(&["version", "--format", "{{.Server.Version}}"]);
    common::assert_node_is_this_machine(&nodes[0], engine_version.trim(), &[]);
    assert_eq!(
        nodes[0]["name"],
        common::docker_cli(&["info", "--format", "{{.Name}}"]).trim(),
        "{nodes:?}"
    );

    // The interval log, as HdrHistogram's Python implementation reads it.
    let intervals = python(READ_LOG, &[&dir.join(format!("{SCENARIO}.hlog"))]);
    let intervals = intervals.as_array().unwrap();
    let reps = result["repetitions"].as_array().unwrap();
    assert_eq!(reps.len(), 2);
    assert_eq!(intervals.len(), 3 * reps.len(), "{intervals:#?}");
    let run_start = chrono::DateTime::parse_from_rfc3339(info["started_at"].as_str().unwrap())
        .unwrap()
        .timestamp() as f64;
    let run_end = chrono::DateTime::parse_from_rfc3339(info["ended_at"].as_str().unwrap())
        .unwrap()
        .timestamp() as f64
        + 1.0;
    let mut last_start = 0.0;
    for interval in intervals {
        let tag = interval["tag"].as_str().unwrap();
        let (distribution, rep) = tag.rsplit_once(".rep").unwrap();
        let m = &reps[rep.parse::<usize>().unwrap() - 1];
        let (side, summary, count) = match distribution {
            "send" => ("producer", &m["producer"], &m["producer"]["sent"]),
            "intended" => (
                "producer",
                &m["producer"]["intended"],
                &m["producer"]["sent"],
            ),
            "end-to-end" => (
                "consumer",
                &m["consumer"]["end_to_end"],
                &m["consumer"]["consumed_recs"],
            ),
            other => panic!("an interval of {other}: {interval}"),
        };
        assert_eq!(&interval["count"], count, "{tag}: {interval}");
        assert_eq!(count.as_u64(), Some(RECORDS), "{tag}");
        for (q, field) in [("p50", "p50_ms"), ("p99", "p99_ms"), ("p999", "p999_ms")] {
            let (got, ms) = (
                interval[q].as_f64().unwrap(),
                summary[field].as_f64().unwrap(),
            );
            assert!(same_value(got, ms), "{tag} {q}: {got} µs against {ms} ms");
        }
        let max = interval["max"].as_f64().unwrap();
        let max_ms = summary["max_lat_ms"].as_f64().unwrap();
        assert!(
            same_value(max, max_ms),
            "{tag} max: {max} µs against {max_ms} ms"
        );
        // At its side's span, within the run, in order of time.
        let span = &m[side]["span"];
        let (start, end) = (
            interval["start_ms"].as_f64().unwrap() / 1000.0,
            interval["end_ms"].as_f64().unwrap() / 1000.0,
        );
        let (span_start, span_length) = (
            span["start_unix_s"].as_f64().unwrap(),
            span["length_s"].as_f64().unwrap(),
        );
        assert!(
            (start - span_start).abs() < 0.002,
            "{tag}: {start} against {span}"
        );
        assert!(
            (end - start - span_length).abs() < 0.002,
            "{tag}: {end} against {span}"
        );
        assert!(
            run_start <= start && end <= run_end,
            "{tag}: {start}..{end} outside the run"
        );
        assert!(start >= last_start, "{tag} out of order");
        last_start = start;
        if side == "producer" {
            // 2000 records at 2000 rec/s: about a second of sending, as the producer timed it.
            let elapsed = m["producer"]["elapsed_s"].as_f64().unwrap();
            assert!(
                (span_length - elapsed).abs() < 0.002,
                "{tag}: {span_length} {elapsed}"
            );
        }
    }

    // metrics.csv holds each repetition's figures as its JSON states them.
    let rows = python(READ_CSV, &[&dir.join("metrics.csv")]);
    let rows = rows.as_array().unwrap();
    for (i, m) in reps.iter().enumerate() {
        let rep = (i + 1).to_string();
        for (metric, value) in [
            ("Rate rec/s", &m["producer"]["rate_rec_s"]),
            ("Consumed rec/s", &m["consumer"]["consumed_rec_s"]),
            ("E2E P99 ms", &m["consumer"]["end_to_end"]["p99_ms"]),
            ("Intended P99 ms", &m["producer"]["intended"]["p99_ms"]),
        ] {
            let row = rows
                .iter()
                .find(|r| {
                    r["scenario"] == SCENARIO
                        && r["repetition"] == rep.as_str()
                        && r["metric"] == metric
                })
                .unwrap_or_else(|| panic!("no {metric} of repetition {rep} in {rows:?}"));
            let got: f64 = row["value"].as_str().unwrap().parse().unwrap();
            assert_eq!(Some(got), value.as_f64(), "{metric} {rep}: {row}");
        }
    }
}
