//! Resource sampling against real containers: figures arrive, and sampling costs the runner
//! under 1% of a core.

use crate::common;
use crate::support;
use common::engine_lock;

use std::time::{Duration, Instant};

use bollard::models::ContainerCreateBody;
use bollard::query_parameters::CreateContainerOptionsBuilder;
use perf_tests::world::engine::Engine;
use perf_tests::world::resources::{Sampler, Target};

const SAMPLING: Duration = Duration::from_secs(6);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_reads_real_containers_for_under_one_percent_of_a_core() {
    let _lock = engine_lock(false);
    let run_id = format!("trust-resources-{}", std::process::id());
    let engine = common::engine(&run_id).await;
    // The body runs in its own task so the containers are removed even when it panics.
    let body = tokio::spawn(sample_two_brokers(engine.clone(), run_id.clone()));
    let outcome = body.await;
    engine.remove_run(&run_id).await.unwrap();
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}

async fn sample_two_brokers(engine: Engine, run_id: String) {
    let docker = common::docker();
    let image = support::kafka_image();
    let mut targets = Vec::new();
    for name in ["broker-a", "broker-b"] {
        let body = ContainerCreateBody {
            image: Some(image.clone()),
            env: Some(support::kafka_env("localhost", 9092, 9093)),
            labels: Some(engine.run_labels()),
            ..Default::default()
        };
        let container = format!("{run_id}-{name}");
        let opts = CreateContainerOptionsBuilder::default()
            .name(&container)
            .build();
        let id = docker
            .create_container(Some(opts), body)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "creating {container} from {image} (`perf-tests images build` makes it): {e}"
                )
            })
            .id;
        docker.start_container(&id, None).await.unwrap();
        targets.push(Target {
            service: name.to_string(),
            container: id,
            run_wide: false,
            node: None,
        });
    }

    let cpu_before = own_cpu_time().expect("/proc/self/stat");
    let started = Instant::now();
    let sampler = Sampler::start(&engine, targets);
    tokio::time::sleep(SAMPLING).await;
    let summaries = sampler.finish(false).await;
    let wall = started.elapsed();
    let cpu = own_cpu_time().unwrap() - cpu_before;

    let services: Vec<&str> = summaries.iter().map(|s| s.service.as_str()).collect();
    assert_eq!(services, ["broker-a", "broker-b"]);
    for s in &summaries {
        // About one sample a second per container.
        assert!(s.samples >= 4, "{s:?}");
        assert!(s.mem_mib_peak > 0.0 && s.mem_mib_mean > 0.0, "{s:?}");
        assert!(s.mem_mib_mean <= s.mem_mib_peak, "{s:?}");
        assert!(s.cpu_pct_mean <= s.cpu_pct_peak, "{s:?}");
    }
    let share = cpu.as_secs_f64() / wall.as_secs_f64() * 100.0;
    eprintln!(
        "sampling 2 containers for {wall:.1?} cost the runner {cpu:?} of CPU ({share:.2}% of a core)"
    );
    assert!(
        share < 1.0,
        "sampling cost {share:.2}% of a core ({cpu:?} over {wall:?})"
    );
}

/// CPU time (user + system) this process has used so far, from /proc/self/stat; `None` where
/// that file does not exist. Used to show that sampling is cheap.
fn own_cpu_time() -> Option<std::time::Duration> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name may hold spaces; fields after it are space-separated.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // USER_HZ is 100 on every Linux ABI.
    Some(std::time::Duration::from_millis(ticks * 10))
}

#[test]
fn own_cpu_time_grows_with_work() {
    // Work until the counter shows 100 ms more: on a loaded machine the thread gets less of a
    // core, so the wall time it takes varies, but a counter that does not count this process's
    // work never gets there.
    let before = own_cpu_time().unwrap();
    let t = std::time::Instant::now();
    let mut x = 0u64;
    let target = before + std::time::Duration::from_millis(100);
    while own_cpu_time().unwrap() < target {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(60),
            "60 s of busy work did not add 100 ms to {before:?}"
        );
        for _ in 0..100_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
    }
}
