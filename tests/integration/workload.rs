//! The workload against a real broker (the default suite's Apache Kafka image).
use crate::common;
use perf_tests::workload::args::Endpoint;

use crate::support;

use std::time::{Duration, Instant};

use anyhow::Result;
use futures_util::future::BoxFuture;
use perf_tests::driver::{flow, Event, MeasureSpec, Progress, Session};
use perf_tests::model::{ConsumerResult, Measurement, ProducerResult};
use perf_tests::settings::rate::Rate;
use perf_tests::workload::command::parse_result_line;
use perf_tests::workload::{
    consume, probe, produce, unique_suffix, Admin, ConsumeConfig, ProduceConfig, TopicSpec,
};
use support::{free_port, Broker};

/// The workload's steps called in this process: a session of the driver interface that needs
/// no engine (the broker runs on the host).
struct InProcess;

impl Session for InProcess {
    fn check(&self, spec: &MeasureSpec) -> Result<()> {
        perf_tests::workload::properties::client_config(&spec.bootstrap, &[], &[&spec.properties])
            .map(|_| ())
    }
    fn probe<'a>(&'a self, endpoint: &'a str, timeout: Duration) -> BoxFuture<'a, Result<()>> {
        Box::pin(probe(endpoint, &[], timeout))
    }
    fn create_topic<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let topics: Vec<TopicSpec> = spec
                .topic_names()
                .into_iter()
                .map(|name| TopicSpec {
                    name,
                    partitions: spec.partitions,
                    replication_factor: spec.replication_factor,
                    min_insync_replicas: Some(spec.min_insync_replicas),
                })
                .collect();
            Admin::connect(&spec.bootstrap, &[])?
                .create_topics(&topics, Duration::from_secs(30))
                .await
        })
    }
    fn produce<'a>(
        &'a self,
        spec: &'a MeasureSpec,
        records: u64,
        progress: Progress<'a>,
    ) -> BoxFuture<'a, Result<ProducerResult>> {
        let cfg = spec.produce_config(&[], records);
        Box::pin(async move { produce(&cfg, |p| progress(Event::Sent(p.records))).await })
    }
    fn consume<'a>(
        &'a self,
        spec: &'a MeasureSpec,
        records: u64,
        group: &'a str,
        _progress: Progress<'a>,
    ) -> BoxFuture<'a, Result<ConsumerResult>> {
        let cfg = spec.consume_config(&[], records, group);
        Box::pin(async move { consume(&cfg).await })
    }
    fn end_offsets<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            Admin::connect(&spec.bootstrap, &[])?
                .end_offsets_sum(&spec.topic_names())
                .await
        })
    }
    fn delete_topic<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            Admin::connect(&spec.bootstrap, &[])?
                .delete_topics(&spec.topic_names())
                .await
        })
    }
    fn close(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async { Ok(()) })
    }
}

/// Names of all topics the endpoint reports.
async fn topic_names(bootstrap: &str) -> Vec<String> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    tokio::task::spawn_blocking(move || {
        let metadata = consumer
            .fetch_metadata(None, Duration::from_secs(10))
            .unwrap();
        metadata
            .topics()
            .iter()
            .map(|t| t.name().to_string())
            .collect()
    })
    .await
    .unwrap()
}

async fn measure(spec: &MeasureSpec) -> Result<Measurement> {
    flow::measure(&InProcess, spec).await
}

fn topic(prefix: &str) -> String {
    format!("{prefix}-{}", unique_suffix())
}

fn produce_cfg(bootstrap: &str, topic: &str, num_records: u64, throughput: Rate) -> ProduceConfig {
    ProduceConfig {
        num_records,
        record_size: 256,
        throughput,
        properties: vec![("acks".into(), "all".into())],
        ..ProduceConfig::new(Endpoint::new(bootstrap, &[]), vec![topic.to_string()])
    }
}

fn consume_cfg(
    bootstrap: &str,
    topic: &str,
    group: &str,
    expected: u64,
    timeout_s: u64,
) -> ConsumeConfig {
    ConsumeConfig {
        timeout: Duration::from_secs(timeout_s).into(),
        ..ConsumeConfig::new(
            Endpoint::new(bootstrap, &[]),
            vec![topic.to_string()],
            group,
            expected,
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn measurement_counts_agree_and_skip_the_warm_up() {
    let broker = Broker::start().await;
    let mut spec = MeasureSpec::new(&broker.bootstrap, topic("measure"), 5000);
    spec.record_size = 512;
    spec.warm_up_records = 700;
    spec.consume_timeout = Duration::from_secs(20);
    let m = measure(&spec).await.expect("measurement");

    assert!(m.integrity.is_ok(), "{:?}", m.integrity);
    // End offsets count only the measured records, not the 700 warm-up ones.
    assert_eq!(m.integrity.end_offsets, 5000);
    assert_eq!(m.integrity.requested, 5000);
    assert_eq!(m.producer.sent, 5000);
    assert_eq!(m.producer.failed, 0);
    assert_eq!(m.consumer.consumed_recs, 5000);
    assert!((m.consumer.consumed_mib - 5000.0 * 512.0 / 1048576.0).abs() < 1e-9);
    assert!(m.producer.rate_rec_s > 0.0 && m.producer.elapsed_s > 0.0);
    assert!(
        m.producer.p50_ms <= m.producer.p99_ms && m.producer.p99_ms <= m.producer.max_lat_ms + 0.01
    );
    assert!(m.producer.avg_lat_ms > 0.0 && m.producer.avg_lat_ms <= m.producer.max_lat_ms);
    // A broker round trip takes well over 50 µs; a collapsed histogram would report less.
    assert!(m.producer.p50_ms > 0.05, "{:?}", m.producer);
    assert!(m.producer.p999_ms >= m.producer.p50_ms);
    assert!(m.consumer.rebalance_ms > 0.0 && m.consumer.fetch_ms.unwrap() > 0.0);
    assert_eq!(m.producer.target_rec_s, -1.0);

    // The topic was deleted at the end.
    let admin = Admin::connect(&broker.bootstrap, &[]).unwrap();
    let gone = admin
        .wait_visible(&spec.topic, Duration::from_millis(500))
        .await;
    assert!(
        gone.is_err(),
        "topic {} still visible after the measurement",
        spec.topic
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_go_to_the_topics_in_turn_and_one_group_reads_them_all() {
    let broker = Broker::start().await;
    let b = broker.bootstrap.as_str();
    let mut spec = MeasureSpec::new(b, topic("spread"), 1000);
    spec.topics = 3;
    spec.consumers = 3;
    spec.warm_up_records = 0;
    let names = spec.topic_names();
    assert_eq!(names.len(), 3);
    InProcess.create_topic(&spec).await.unwrap();
    let mut cfg = produce_cfg(b, &names[0], 1000, Rate::Unlimited);
    cfg.topics = names.clone();
    assert_eq!(produce(&cfg, |_| {}).await.unwrap().sent, 1000);
    let admin = Admin::connect(b, &[]).unwrap();
    let mut held = Vec::new();
    for t in &names {
        held.push(admin.end_offsets(t).await.unwrap());
    }
    assert_eq!(held, [334, 333, 333]);
    // Counted together, with one reader for the three topics' partitions 0.
    assert_eq!(admin.end_offsets_sum(&names).await.unwrap(), 1000);

    // Three members, three one-partition topics: round robin gives each member one topic.
    let mut group = consume_cfg(b, &names[0], &format!("g-{}", unique_suffix()), 1000, 20);
    group.topics = names.clone();
    group.consumers = 3;
    let consumed = consume(&group).await.unwrap();
    assert_eq!(consumed.consumed_recs, 1000);
    let mut per_client = consumed.per_client.clone();
    per_client.sort_unstable();
    assert_eq!(per_client, [333, 333, 334]);
    InProcess.delete_topic(&spec).await.unwrap();
    let left = topic_names(b).await;
    assert!(names.iter().all(|n| !left.contains(n)), "{left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_resumes_after_the_records_it_consumed() {
    let broker = Broker::start().await;
    let b = broker.bootstrap.as_str();
    let t = topic("resume");
    let admin = Admin::connect(b, &[]).unwrap();
    admin
        .create_topic(&TopicSpec::new(&t), Duration::from_secs(20))
        .await
        .unwrap();
    let group = format!("group-{}", unique_suffix());

    let warm = produce(&produce_cfg(b, &t, 300, Rate::Unlimited), |_| {})
        .await
        .unwrap();
    assert_eq!(warm.sent, 300);
    let first = consume(&consume_cfg(b, &t, &group, 300, 20)).await.unwrap();
    assert_eq!(first.consumed_recs, 300);
    // Its first record came after the assignment and no later than its last.
    let at = first
        .first_record_ms
        .expect("the native consumer times its first record");
    let (assigned, last) = (
        first.rebalance_ms,
        first.rebalance_ms + first.fetch_ms.unwrap(),
    );
    // One nanosecond of slack: when every record came in one batch the first is the last, and
    // the sum of two rounded milliseconds can fall a rounding step short of it.
    const NS: f64 = 1e-6;
    assert!(assigned - NS <= at && at <= last + NS, "{first:?}");

    let measured = produce(&produce_cfg(b, &t, 1000, Rate::Unlimited), |_| {})
        .await
        .unwrap();
    assert_eq!(measured.sent, 1000);
    assert_eq!(admin.end_offsets(&t).await.unwrap(), 1300);

    // Had the group re-read the first 300, a 1001st record would be found.
    let err = consume(&consume_cfg(b, &t, &group, 1001, 3))
        .await
        .expect_err("only 1000 records follow the committed offsets");
    assert!(
        format!("{err:#}").contains("consumed 1000 of 1001"),
        "{err:#}"
    );
    admin.delete_topic(&t).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_throughput_sends_on_schedule() {
    let broker = Broker::start().await;
    let t = topic("rate");
    let admin = Admin::connect(&broker.bootstrap, &[]).unwrap();
    admin
        .create_topic(&TopicSpec::new(&t), Duration::from_secs(20))
        .await
        .unwrap();
    let r = produce(
        &produce_cfg(&broker.bootstrap, &t, 7000, Rate::per_second(2000).unwrap()),
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(r.sent, 7000);
    assert_eq!(r.target_rec_s, 2000.0);
    // The rate's time runs from the schedule's start to the last acknowledgement: the sends'
    // span (6999 periods of 0.5 ms, 3.4995 s) plus the last record's latency, which is at most
    // the largest measured. Like kafka-producer-perf-test's, the throttle sleeps only once the
    // time it owes reaches 2 ms, so it runs ahead by less than that; it falls behind by no more
    // than the last sleep's overshoot; a throttle 10% slow would take 3.85 s.
    let sends = r.elapsed_s - r.max_lat_ms / 1000.0;
    let ran = r.elapsed_s;
    assert!(
        ran >= 3.4995 - 0.002 && sends < 3.75,
        "sends took {sends:.3} s ({ran:.3} s to the last acknowledgement, the largest latency \
         {} ms) at {} rec/s",
        r.max_lat_ms,
        r.rate_rec_s
    );
    admin.delete_topic(&t).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_progress_is_reported_in_windows() {
    let broker = Broker::start().await;
    let t = topic("progress");
    let admin = Admin::connect(&broker.bootstrap, &[]).unwrap();
    admin
        .create_topic(&TopicSpec::new(&t), Duration::from_secs(20))
        .await
        .unwrap();
    let mut windows = Vec::new();
    // 5.5 s at 2000 rec/s: the window of the first acknowledgements, closed as they come, then
    // one full 5 s window.
    let r = produce(
        &produce_cfg(
            &broker.bootstrap,
            &t,
            11000,
            Rate::per_second(2000).unwrap(),
        ),
        |p| windows.push(p),
    )
    .await
    .unwrap();
    assert_eq!(r.sent, 11000);
    assert!(windows.len() >= 2, "{windows:?}");
    let first = &windows[0];
    assert!(first.records > 0 && first.records < 1000, "{first}");
    let w = &windows[1];
    assert!((w.rec_s - 2000.0).abs() < 200.0, "{w}");
    assert!(w.max_lat_ms >= w.avg_lat_ms && w.avg_lat_ms > 0.0, "{w}");
    assert!(w.to_string().ends_with("ms max latency."));
    admin.delete_topic(&t).await.unwrap();
}

#[tokio::test]
async fn unknown_producer_property_is_refused_by_name_before_any_request() {
    // Nothing listens there: a refusal this fast means no topic creation was attempted.
    let bootstrap = format!("127.0.0.1:{}", free_port());
    let mut spec = MeasureSpec::new(&bootstrap, topic("badprop"), 10);
    spec.properties.push(("linger.msec".into(), "5".into()));
    let started = Instant::now();
    let err = measure(&spec).await.expect_err("unknown property");
    assert!(format!("{err:#}").contains("linger.msec"), "{err:#}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_times_out_cleanly_on_an_empty_topic() {
    let broker = Broker::start().await;
    let t = topic("empty");
    let admin = Admin::connect(&broker.bootstrap, &[]).unwrap();
    admin
        .create_topic(&TopicSpec::new(&t), Duration::from_secs(20))
        .await
        .unwrap();
    let started = Instant::now();
    let err = consume(&consume_cfg(&broker.bootstrap, &t, "empty-group", 10, 3))
        .await
        .expect_err("nothing to consume");
    let took = started.elapsed();
    let msg = format!("{err:#}");
    assert!(msg.contains("consumed 0 of 10"), "{msg}");
    assert!(msg.contains(&t) && msg.contains(&broker.bootstrap), "{msg}");
    assert!(took >= Duration::from_secs(3), "gave up after {took:?}");
    assert!(
        took < Duration::from_secs(10),
        "took {took:?} for a 3 s timeout"
    );
    admin.delete_topic(&t).await.unwrap();
}

#[tokio::test]
async fn probe_fails_cleanly_on_a_closed_port() {
    let bootstrap = format!("127.0.0.1:{}", free_port());
    let started = Instant::now();
    let err = probe(&bootstrap, &[], Duration::from_secs(2))
        .await
        .expect_err("nothing listens there");
    let took = started.elapsed();
    let msg = format!("{err:#}");
    assert!(msg.contains(&bootstrap), "{msg}");
    assert!(
        took < Duration::from_secs(5),
        "took {took:?} for a 2 s timeout"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_broker_leaves_no_topic_behind() {
    let broker = Broker::start().await;
    flow::warm_broker(&InProcess, &broker.bootstrap, 500)
        .await
        .unwrap();
    let left = topic_names(&broker.bootstrap).await;
    assert!(
        !left.iter().any(|t| t.starts_with("perf-tests-warm-up-")),
        "{left:?}"
    );
}

/// Runs `perf-tests workload <args>` to completion: (success, stdout, stderr).
async fn workload_process(args: Vec<String>) -> (bool, String, String) {
    let output = tokio::task::spawn_blocking(move || {
        common::bin()
            .args(args)
            .output()
            .expect("running perf-tests workload")
    })
    .await
    .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workload_process_result_line_round_trips() {
    let broker = Broker::start().await;
    let t = topic("process");
    let b = broker.bootstrap.as_str();
    let (ok, stdout, stderr) = workload_process(args(&[
        "workload",
        "create-topic",
        "--bootstrap",
        b,
        "--topic",
        &t,
    ]))
    .await;
    assert!(ok, "stdout: {stdout}\nstderr: {stderr}");
    let (ok, stdout, stderr) = workload_process(args(&[
        "workload",
        "produce",
        "--bootstrap",
        b,
        "--topic",
        &t,
        "--num-records",
        "2000",
        "--record-size",
        "100",
        "--property",
        "acks=-1",
        "--property",
        "linger.ms=2",
    ]))
    .await;
    assert!(ok, "stdout: {stdout}\nstderr: {stderr}");
    assert_eq!(
        stdout.lines().count(),
        1,
        "stdout carries only the result: {stdout}"
    );
    let produced: ProducerResult = parse_result_line(&stdout).expect("result line");
    assert_eq!(produced.sent, 2000);
    assert!(stderr.contains("2000 records sent"), "{stderr}");
    let (ok, stdout, stderr) = workload_process(args(&[
        "workload",
        "consume",
        "--bootstrap",
        b,
        "--topic",
        &t,
        "--group",
        "process-group",
        "--expected",
        "2000",
        "--timeout-s",
        "20",
    ]))
    .await;
    assert!(ok, "stdout: {stdout}\nstderr: {stderr}");
    let m: ConsumerResult = parse_result_line(&stdout).expect("result line");
    assert_eq!(m.consumed_recs, 2000);
    assert!((m.consumed_mib - 2000.0 * 100.0 / 1048576.0).abs() < 1e-9);

    let again = format!(
        "noise\nPERF-TESTS-RESULT {}\n",
        serde_json::to_string(&m).unwrap()
    );
    assert_eq!(parse_result_line::<ConsumerResult>(&again).unwrap(), m);
    let (ok, _, stderr) = workload_process(args(&[
        "workload",
        "delete-topic",
        "--bootstrap",
        b,
        "--topic",
        &t,
    ]))
    .await;
    assert!(ok, "{stderr}");
}

#[tokio::test]
async fn workload_process_fails_with_a_message_on_a_closed_port() {
    let bootstrap = format!("127.0.0.1:{}", free_port());
    let output = tokio::task::spawn_blocking(move || {
        common::bin()
            .args([
                "workload",
                "probe",
                "--bootstrap",
                &bootstrap,
                "--timeout-s",
                "1",
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("did not answer a metadata request"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&output.stdout).contains("PERF-TESTS-RESULT"));
}

/// `benches/vs-rdkafka-performance.sh` as a user runs it, at its smallest: perf-tests,
/// `rdkafka_performance`, Kafka's perf-test tools and another perf-tests build (here the same
/// one, as a before-and-after comparison runs it) against one Kafka broker, unthrottled and at
/// a fixed rate, each run's rate and CPU per record (the JVM's above C's), the first tool
/// rotating by round, the ratios summarised; bad settings refused before anything starts;
/// nothing left running.
#[test]
fn the_client_tools_bench_measures_every_tool_in_rotating_order_with_its_cpu() {
    let script = common::repo().join("benches/vs-rdkafka-performance.sh");
    let bench = |vars: &[(&str, &str)]| {
        let mut cmd = std::process::Command::new(&script);
        cmd.env("PERF_TESTS_BIN", env!("CARGO_BIN_EXE_perf-tests"))
            .env("ROUNDS", "2")
            .env("RATES", "5000")
            .env("FIXED_SECONDS", "1")
            .env("NUM_RECORDS", "20000");
        cmd.envs(vars.iter().copied()).output().unwrap()
    };
    let leftovers = || {
        let out = std::process::Command::new("docker")
            .args(["ps", "-aq", "--filter", "label=io.perf-tests.bench"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    for (vars, message) in [
        (
            &[("NUM_RECORDS", "2e5")][..],
            "NUM_RECORDS=2e5: write the count out in digits",
        ),
        (&[("ROUNDS", "two")], "ROUNDS=two: write a whole number"),
        (&[("RATES", "5000 fast")], "RATES: `fast` is not a rate"),
        (
            &[("TOOLS", "rdkafka_performance jmeter")],
            "TOOLS: unknown tool `jmeter`",
        ),
        (&[("BROKER", "redpanda")], "BROKER=redpanda: expected kafka"),
        (
            &[("TOOLS", "perf-tests-before")],
            "TOOLS names perf-tests-before exactly when PERF_TESTS_BEFORE_BIN gives its binary \
             (PERF_TESTS_BEFORE_BIN=unset)",
        ),
        (
            &[
                ("TOOLS", "perf-tests-before"),
                ("PERF_TESTS_BEFORE_BIN", "/nonexistent/perf-tests"),
            ],
            "PERF_TESTS_BEFORE_BIN=/nonexistent/perf-tests: not an executable file",
        ),
    ] {
        let refused = bench(vars);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{vars:?}: {stderr}");
        assert!(stderr.contains(message), "{vars:?}: {stderr}");
    }
    assert_eq!(leftovers(), "", "a refused bench left containers");

    let out = bench(&[
        (
            "TOOLS",
            "rdkafka_performance kafka-perf-test perf-tests-before",
        ),
        ("PERF_TESTS_BEFORE_BIN", env!("CARGO_BIN_EXE_perf-tests")),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.len() == 7 && (w[0] == "1" || w[0] == "2"))
        .collect();
    let order: Vec<(&str, &str, &str)> = rows.iter().map(|w| (w[0], w[1], w[2])).collect();
    let (pt, rp, java, before) = (
        "perf-tests",
        "rdkafka_performance",
        "kafka-perf-test",
        "perf-tests-before",
    );
    assert_eq!(
        order,
        [
            ("1", "max", pt),
            ("1", "max", rp),
            ("1", "max", java),
            ("1", "max", before),
            ("1", "5000", pt),
            ("1", "5000", rp),
            ("1", "5000", java),
            ("1", "5000", before),
            ("2", "max", rp),
            ("2", "max", java),
            ("2", "max", before),
            ("2", "max", pt),
            ("2", "5000", rp),
            ("2", "5000", java),
            ("2", "5000", before),
            ("2", "5000", pt),
        ],
        "{stdout}"
    );
    for w in &rows {
        let unthrottled = w[1] == "max";
        for (i, value) in w[3..].iter().enumerate() {
            if i >= 2 && !unthrottled {
                // Consumers run once per round, after the unthrottled producers.
                assert_eq!(*value, "-", "{w:?} in {stdout}");
            } else {
                assert!(
                    value.parse::<f64>().is_ok_and(|v| v > 0.0),
                    "{w:?} in {stdout}"
                );
            }
        }
        if !unthrottled {
            // A tool that keeps the rate sends 5000 records in about a second, never faster.
            let rate: f64 = w[3].parse().unwrap();
            assert!(rate <= 5000.0 * 1.05, "{w:?} in {stdout}");
        }
    }
    // The CPU figures are each process's own: Kafka's tools start a JVM (class loading, the
    // JIT compiling the client) to send or read the records that librdkafka's C tool sends or
    // reads with a fraction of that, so in every round and load the Java tool's CPU per record
    // is the higher, producing and (unthrottled) consuming.
    let cell = |round: &str, load: &str, tool: &str, column: usize| -> f64 {
        let w = rows
            .iter()
            .find(|w| (w[0], w[1], w[2]) == (round, load, tool))
            .unwrap_or_else(|| panic!("{round} {load} {tool} in {stdout}"));
        w[column].parse().unwrap()
    };
    for round in ["1", "2"] {
        for (load, columns) in [("max", &[4, 6][..]), ("5000", &[4][..])] {
            for &column in columns {
                let (jvm_us, c_us) = (
                    cell(round, load, java, column),
                    cell(round, load, rp, column),
                );
                assert!(
                    jvm_us > c_us,
                    "round {round} {load}: {jvm_us} µs a record for the JVM, {c_us} for C, in {stdout}"
                );
            }
        }
    }
    for line in [
        "unthrottled: median produce cpu us/rec: perf-tests ",
        "unthrottled: median consume cpu us/rec: perf-tests ",
        "unthrottled: produce cpu per record, perf-tests / rdkafka_performance: ",
        "unthrottled: consume rate, perf-tests / kafka-perf-test: ",
        "at 5000 rec/s: produce cpu per record, perf-tests / kafka-perf-test: ",
        "unthrottled: consume cpu per record, perf-tests / perf-tests-before: ",
        "unthrottled: consume rate from the first record, perf-tests / rdkafka_performance: ",
        "2 rounds, 6 or more give a 95% interval",
    ] {
        assert!(stdout.contains(line), "{line} missing in {stdout}");
    }
    assert_eq!(leftovers(), "", "the bench left containers");
}
