//! `PROFILE` for real: the default suite's plain proxy and record encryption profiled with
//! async-profiler over each measured phase (recordings that cover the phase and not the
//! warm-up, flame graphs, what encryption adds, the summary's shares), and every refusal: bad
//! settings before anything starts, a service that is no JVM and a JVM that refuses the agent
//! before anything is measured, with nothing left behind.

use crate::common::{self, json};
use common::{copy_tree, engine_lock, leftovers, perf_tests_run, repo, run_id};

use std::path::{Path, PathBuf};
use std::process::Output;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A run of the default suite (or `suite`) with `env` into `results`.
fn run(results: &Path, env: &[(&str, &str)]) -> Output {
    perf_tests_run(results)
        .env("NETWORK_CEILING", "0")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// The wall-clock span a JFR recording covers, from its first chunk's header (magic `FLR\0`,
/// then the versions, the chunk's size and two offsets, its start in nanoseconds since the epoch
/// and its duration in nanoseconds): (start, end) in Unix seconds.
fn jfr_span(bytes: &[u8]) -> (f64, f64) {
    assert!(bytes.starts_with(b"FLR\0"), "not a JFR recording");
    let ns = |at: usize| u64::from_be_bytes(bytes[at..at + 8].try_into().unwrap()) as f64 / 1e9;
    (ns(32), ns(32) + ns(40))
}

/// The CPU samples in a recording as the JDK's own `jfr summary` counts its events.
fn jfr_samples(jfr: &Path) -> u64 {
    let tool = std::fs::read_dir("/usr/lib/jvm")
        .unwrap()
        .map(|e| e.unwrap().path().join("bin/jfr"))
        .find(|p| p.is_file())
        .expect("a JDK's jfr under /usr/lib/jvm (scripts/setup installs one)");
    let out = std::process::Command::new(tool)
        .arg("summary")
        .arg(jfr)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "jfr summary {}: {text}",
        jfr.display()
    );
    text.lines()
        .find_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some("jdk.ExecutionSample")).then(|| words.next()?.parse().ok())?
        })
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn each_measured_phase_is_profiled_and_encryption_shows_what_it_adds() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    // A warm-up of 6 s, then phases of about 3 s: a recording that held the warm-up would be
    // longer than its phase.
    let out = run(
        results.path(),
        &[
            ("TEST", "0[24]-.*"),
            ("PROFILE", "cpu"),
            ("NUM_RECORDS", "30000"),
            ("THROUGHPUT", "10000"),
            ("WARM_UP_SECONDS_PRE_TEST", "6"),
            ("REPEAT", "2"),
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(leftovers(&run_id(&stderr)).await, (0, 0));
    let runs: Vec<PathBuf> = std::fs::read_dir(results.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    // The recordings were taken into the run's directory: nothing else is left beside it.
    assert_eq!(runs.len(), 1, "{runs:?}");
    let profiles = runs[0].join("profiles");
    // A repetition's recording's stacks, collapsed by the converter the runner uses.
    let tools = perf_tests::world::profile::tools(std::env::consts::ARCH).unwrap();
    let stacks_of = |scenario: &str, proxy: &str, phase: &str, rep: usize| -> String {
        let out = results
            .path()
            .join(format!("{scenario}.{phase}.{rep}.collapsed"));
        let jfr = profiles.join(format!("{scenario}.{proxy}.{phase}.rep{rep}.jfr"));
        perf_tests::world::profile::convert(
            &tools,
            perf_tests::settings::ProfileMode::Cpu,
            &jfr,
            &out,
            "t",
        )
        .unwrap();
        std::fs::read_to_string(out).unwrap()
    };
    let stacks = |scenario: &str, proxy: &str, phase: &str| stacks_of(scenario, proxy, phase, 1);
    let proxies = [
        ("02-no-filters", "kroxylicious-no-filters"),
        (
            "04-envelope-encryption-filter",
            "kroxylicious-envelope-encryption-filter",
        ),
    ];
    for (scenario, proxy) in proxies {
        let v = json(&runs[0].join(format!("{scenario}.json")));
        let rep = &v["repetitions"][0];
        let recorded = rep["profiles"].as_array().unwrap();
        // The proxy only (04's KMS is no JVM), in each phase, by the timer-based CPU event.
        let phases: Vec<&str> = recorded
            .iter()
            .map(|r| r["phase"].as_str().unwrap())
            .collect();
        assert_eq!(phases, ["produce", "consume"], "{scenario}: {recorded:?}");
        for r in recorded {
            assert_eq!(r["service"], proxy);
            assert_eq!(
                (r["mode"].as_str(), r["event"].as_str()),
                (Some("cpu"), Some("ctimer"))
            );
            let phase = r["phase"].as_str().unwrap();
            let bytes = std::fs::read(profiles.join(r["file"].as_str().unwrap())).unwrap();
            let (from, to) = jfr_span(&bytes);
            let covered = to - from;
            let cost = rep["cost"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["phase"] == phase)
                .unwrap();
            let seconds = cost["seconds"].as_f64().unwrap();
            let phase_start = cost["start_unix_s"].as_f64().unwrap();
            // The profiler starts before the phase's counters are read and stops after: the
            // phase, from its first counters to its last (the profiler's stop and the copy of
            // the recording after them not its own), lies within the recording as the JVM's
            // clock dated it. A recording that held the warm-up would cover its 6 s too.
            assert!(
                from <= phase_start + 0.001 && phase_start + seconds <= to + 0.001,
                "{scenario} {phase}: the phase {phase_start}..{}, the recording {from}..{to}",
                phase_start + seconds
            );
            assert!(
                covered < seconds + 6.0,
                "{scenario} {phase}: the recording covers {covered} s, the phase {seconds} s"
            );
            // The records were sent and read within the recording, on the host's one clock.
            let side = if phase == "produce" {
                "producer"
            } else {
                "consumer"
            };
            let span = &rep[side]["span"];
            let start = span["start_unix_s"].as_f64().unwrap();
            let end = start + span["length_s"].as_f64().unwrap();
            assert!(
                from <= start && end <= to,
                "{scenario} {phase}: the {side} measured {start}..{end}, the recording {from}..{to}"
            );
            // The flame graph is the converter's, titled by what it shows (its frames are
            // stored prefix-compressed, so they are read from the recording's stacks).
            let flame = profiles.join(format!("{scenario}.{proxy}.{phase}.html"));
            let html = std::fs::read_to_string(&flame)
                .unwrap_or_else(|e| panic!("{}: {e}", flame.display()));
            let title = format!("<h1>{scenario} {proxy} {phase} (cpu: ctimer)</h1>");
            assert!(html.contains(&title), "{title} in {}", flame.display());
            let stacks = stacks(scenario, proxy, phase);
            assert!(
                stacks.contains("io/kroxylicious") || stacks.contains("io/netty"),
                "{scenario} {phase}: no frame of the proxy in\n{stacks}"
            );
        }
    }
    // What encryption adds to the plain proxy, and the shares that say so.
    let diff = profiles.join(
        "04-envelope-encryption-filter.kroxylicious-envelope-encryption-filter.produce.diff.html",
    );
    assert!(diff.is_file(), "{}", diff.display());
    assert!(!profiles
        .join("02-no-filters.kroxylicious-no-filters.produce.diff.html")
        .exists());
    let summary = std::fs::read_to_string(profiles.join("summary.txt")).unwrap();
    // Each profile holds every repetition's samples (the summary's count is their sum), and
    // each repetition's own count and shares are listed under it; the counts are the JDK's.
    for (scenario, proxy) in proxies {
        for phase in ["produce", "consume"] {
            let samples = |rep| {
                jfr_samples(&profiles.join(format!("{scenario}.{proxy}.{phase}.rep{rep}.jfr")))
            };
            let (one, two) = (samples(1), samples(2));
            assert!(one > 0 && two > 0, "{scenario} {phase}: {one} {two}");
            let head = format!(
                "{scenario} / {proxy} / {phase} (cpu, event ctimer): {} samples over 2 recording(s)",
                one + two
            );
            let at = summary
                .find(&head)
                .unwrap_or_else(|| panic!("{head} in\n{summary}"));
            let section = &summary[at..];
            let section = &section[..section.find("top frames").unwrap()];
            for (n, count) in [(1, one), (2, two)] {
                let line = format!("    repetition {n}: {count} samples, crypto ");
                assert!(section.contains(&line), "{line} in\n{section}");
            }
        }
    }
    // The encryption filter's own frames are in 04's produce profile and not in 02's: the
    // recordings are of the path that ran.
    let filter = "io/kroxylicious/filter/encryption";
    assert!(stacks(proxies[1].0, proxies[1].1, "produce").contains(filter));
    assert!(!stacks(proxies[0].0, proxies[0].1, "produce").contains(filter));
    assert!(
        summary.contains("04-envelope-encryption-filter / kroxylicious-envelope-encryption-filter / produce against 02-no-filters / kroxylicious-no-filters"),
        "{summary}"
    );
    let report = std::fs::read_to_string(runs[0].join("report.html")).unwrap();
    assert!(report.contains("href=\"profiles/04-envelope-encryption-filter.kroxylicious-envelope-encryption-filter.produce.diff.html\""));
}

#[test]
fn bad_profile_settings_are_refused_before_anything_starts() {
    let cases: [(&[(&str, &str)], &str); 4] = [
        (&[("PROFILE", "cycles")], "PROFILE=\"cycles\""),
        (&[("PROFILE_SERVICES", "broker1")], "PROFILE is off"),
        (
            &[("PROFILE", "cpu"), ("PROFILE_SERVICES", "workload")],
            "the load generator",
        ),
        (
            &[
                ("PROFILE", "cpu"),
                ("PROFILE_SERVICES", "kroxylicious-no-filters"),
            ],
            "scenario 01-no-proxy-baseline runs no service \"kroxylicious-no-filters\"",
        ),
    ];
    for (env, said) in cases {
        let out = common::bin()
            .args(["run", "--dry-run"])
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{env:?}: {stderr}");
        assert!(stderr.contains(said), "{env:?}: {said} in {stderr}");
    }
}

/// A run that must stop before measuring: exit 1, the error containing each of `said`, no
/// results and nothing of it left.
async fn stops_before_measuring(suite: Option<&Path>, env: &[(&str, &str)], said: &[&str]) {
    let results = tempfile::tempdir().unwrap();
    let mut env = env.to_vec();
    let dir;
    if let Some(s) = suite {
        dir = s.to_str().unwrap().to_string();
        env.push(("SCENARIOS", &dir));
    }
    let out = run(results.path(), &env);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let error = &stderr[stderr.find("error:").unwrap_or_else(|| panic!("{stderr}"))..];
    for s in said {
        assert!(error.contains(s), "{s} in {error}");
    }
    let scenario = &stderr[stderr.find("==> 0").unwrap_or(0)..];
    assert!(
        !scenario.contains("produce ["),
        "nothing was measured: {stderr}"
    );
    assert_eq!(leftovers(&run_id(&stderr)).await, (0, 0));
    assert_eq!(
        std::fs::read_dir(results.path()).unwrap().count(),
        0,
        "no results, no recordings left"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_that_is_no_jvm_is_refused_before_measuring() {
    let _lock = engine_lock(false);
    stops_before_measuring(
        None,
        &[
            ("TEST", "04.*"),
            ("PROFILE", "cpu"),
            ("PROFILE_SERVICES", "kms"),
        ],
        &[
            "PROFILE_SERVICES: service \"kms\" is not a JVM",
            "/opt/java/bin/jcmd",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_jvm_that_refuses_the_profiler_stops_the_run_quoting_jcmd() {
    let _lock = engine_lock(false);
    // The proxy's JVM started with its attach mechanism off: jcmd cannot load the agent.
    let root = tempfile::tempdir().unwrap();
    for dir in [
        "scenarios/kroxylicious",
        "scenarios/kroxylicious-inmemory-kms",
        "scenarios/kroxylicious-vault",
        "compose",
    ] {
        copy_tree(&repo().join(dir), &root.path().join(dir));
    }
    let compose = root.path().join("compose/kroxylicious.yaml");
    let text = std::fs::read_to_string(&compose).unwrap();
    let from = "  kroxylicious-no-filters:\n    <<: *kroxylicious\n";
    assert!(text.contains(from));
    std::fs::write(
        &compose,
        text.replace(
            from,
            &format!("{from}    environment:\n      JAVA_OPTIONS: -XX:+DisableAttachMechanism\n"),
        ),
    )
    .unwrap();
    stops_before_measuring(
        Some(&root.path().join("scenarios/kroxylicious")),
        &[("TEST", "02.*"), ("PROFILE", "cpu")],
        &["service \"kroxylicious-no-filters\"", "jcmd"],
    )
    .await;
}
