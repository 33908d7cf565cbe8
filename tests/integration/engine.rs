//! Against the real Docker engine: images built here from host binaries, no registry.

use crate::common;
use common::engine_lock;

use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, ListContainersOptionsBuilder, ListNetworksOptionsBuilder,
    RemoveContainerOptionsBuilder,
};
use futures_util::FutureExt;
use perf_tests::world::compose;
use perf_tests::world::engine::liveness::Owner;
use perf_tests::world::engine::{Deployment, Engine, OneOff};
use perf_tests::world::images::scratch::{build_scratch_image, ScratchFile};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The value of label `key` on local image `tag`, or `None` if the image or label is absent.
async fn image_label(engine: &Engine, tag: &str, key: &str) -> anyhow::Result<Option<String>> {
    Ok(engine
        .image_labels(tag)
        .await?
        .and_then(|mut l| l.remove(key)))
}

const TOOLS_IMAGE: &str = "perf-tests-test/tools:latest";
const CONTENT_LABEL: &str = "io.perf-tests.test-content";
fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}-{}-{:x}", std::process::id(), nanos % 0xffff_ffff)
}

/// Host binaries packaged into the test image: a shell for CMD-SHELL checks and a few tools.
fn tools_files() -> Vec<ScratchFile> {
    let mut files = vec![ScratchFile::new("/bin/dash", "/bin/sh")];
    for p in [
        "/bin/sleep",
        "/bin/cat",
        "/usr/bin/test",
        "/usr/bin/getent",
        "/bin/ls",
    ] {
        files.push(ScratchFile::new(p, p));
    }
    files
}

/// Builds the tools image unless an image with the same content key exists.
async fn tools_image(engine: &Engine) -> String {
    let key = tools_files()
        .iter()
        .map(|f| {
            let m = std::fs::metadata(&f.host_path).unwrap();
            format!("{}:{}:{:?}", f.image_path, m.len(), m.modified().unwrap())
        })
        .collect::<Vec<_>>()
        .join(",");
    let key = format!("{:x}", fnv(&key));
    if image_label(engine, TOOLS_IMAGE, CONTENT_LABEL)
        .await
        .unwrap()
        == Some(key.clone())
    {
        return TOOLS_IMAGE.to_string();
    }
    let labels = BTreeMap::from([(CONTENT_LABEL.to_string(), key)]);
    build_scratch_image(engine, TOOLS_IMAGE, &tools_files(), vec![], labels)
        .await
        .unwrap();
    TOOLS_IMAGE.to_string()
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

/// Runs `body` with an engine for a fresh run id; whatever happens, removes that run's
/// resources afterwards and then asserts none remain.
async fn with_run<F, Fut>(prefix: &str, body: F)
where
    F: FnOnce(Engine) -> Fut,
    Fut: Future<Output = ()>,
{
    let _lock = engine_lock(false);
    let run_id = unique(prefix);
    let engine = common::engine(&run_id).await;
    tools_image(&engine).await;
    let outcome = AssertUnwindSafe(body(engine.clone())).catch_unwind().await;
    engine.remove_run(&run_id).await.unwrap();
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

async fn labelled(label: &str) -> (Vec<String>, Vec<String>) {
    let filters = HashMap::from([("label", vec![label])]);
    let containers = common::docker()
        .list_containers(Some(
            ListContainersOptionsBuilder::default()
                .all(true)
                .filters(&filters)
                .build(),
        ))
        .await
        .unwrap()
        .into_iter()
        .flat_map(|c| c.names.unwrap_or_default())
        .collect();
    let networks = common::docker()
        .list_networks(Some(
            ListNetworksOptionsBuilder::default()
                .filters(&filters)
                .build(),
        ))
        .await
        .unwrap()
        .into_iter()
        .filter_map(|n| n.name)
        .collect();
    (containers, networks)
}

async fn run_resources(engine: &Engine) -> (Vec<String>, Vec<String>) {
    labelled(&format!("io.perf-tests.run={}", engine.run_id())).await
}

fn write_compose(dir: &Path, yaml: &str) -> PathBuf {
    let path = dir.join("compose.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

const TWO_SERVICES: &str = r#"
services:
  broker:
    image: perf-tests-test/tools:latest
    # Becomes healthy only after a delay, so the dependant must really wait.
    command: ["/bin/sh", "-c", "sleep 1; : > /tmp/ready; echo broker ready; exec sleep 600"]
    tmpfs: /tmp
    # Each check leaves a line, so the test can count how often it ran.
    healthcheck:
      test: ["CMD-SHELL", "echo probe >> /tmp/probes; test -f /tmp/ready"]
      interval: 300ms
      timeout: 2s
      retries: 50
  app:
    image: ${APP_IMAGE:?set APP_IMAGE}
    command: ["/bin/sleep", "600"]
    environment:
      GREETING: hello ${WHO:-world}
    depends_on:
      broker:
        condition: service_healthy
"#;

#[tokio::test]
async fn two_services_come_up_in_order_and_go_down_leaving_nothing() {
    with_run("updown", |engine| async move {
        let dir = tempfile::tempdir().unwrap();
        let file = write_compose(dir.path(), TWO_SERVICES);
        let vars = BTreeMap::from([("APP_IMAGE".to_string(), TOOLS_IMAGE.to_string())]);
        let project = compose::load(&[file], &vars).unwrap();
        let name = unique("updown");
        let mut d = Deployment::new(&engine, project, &name);
        d.up(&strings(&["app"]), Duration::from_secs(60))
            .await
            .unwrap();

        let broker = common::docker()
            .inspect_container(d.container_id("broker").unwrap(), None)
            .await
            .unwrap();
        let app = common::docker()
            .inspect_container(d.container_id("app").unwrap(), None)
            .await
            .unwrap();
        // The app started only once the broker's check passed: after its ready file existed.
        let ready = d
            .exec(
                "broker",
                &strings(&["/bin/ls", "-l", "--time-style=+%s.%N", "/tmp/ready"]),
            )
            .await
            .unwrap();
        let ready_at: f64 = ready
            .stdout
            .split_whitespace()
            .find_map(|w| w.parse().ok().filter(|t: &f64| *t > 1e9))
            .unwrap_or_else(|| panic!("{ready:?}"));
        let app_started = app.state.unwrap().started_at.unwrap();
        let started_at = chrono::DateTime::parse_from_rfc3339(&app_started).unwrap();
        let started_at =
            started_at.timestamp() as f64 + started_at.timestamp_subsec_nanos() as f64 / 1e9;
        assert!(
            started_at >= ready_at,
            "app started at {started_at}, before broker was ready at {ready_at}"
        );
        // The check ran in the container until it passed, and never again: the engine has no
        // healthcheck to run, so nothing probes the container while it is measured.
        assert!(
            broker.state.unwrap().health.is_none(),
            "the engine runs no healthcheck"
        );
        let probes = || async {
            let out = d
                .exec("broker", &strings(&["/bin/cat", "/tmp/probes"]))
                .await
                .unwrap();
            out.stdout.lines().count()
        };
        let ran = probes().await;
        assert!(ran >= 2, "the check ran until the broker was ready: {ran}");
        tokio::time::sleep(Duration::from_millis(1200)).await;
        assert_eq!(probes().await, ran, "the check ran again after it passed");
        assert_eq!(app.name.as_deref(), Some(format!("/{name}-app").as_str()));
        let env = app.config.unwrap().env.unwrap();
        assert!(env.contains(&"GREETING=hello world".to_string()), "{env:?}");
        assert_eq!(d.image_ids().len(), 1);

        // exec: exit code and both streams; the service name resolves on the network.
        let out = d
            .exec(
                "app",
                &strings(&["/bin/sh", "-c", "echo out; echo err >&2; exit 3"]),
            )
            .await
            .unwrap();
        assert_eq!(
            (out.exit_code, out.stdout.as_str(), out.stderr.as_str()),
            (3, "out\n", "err\n")
        );
        let out = d
            .exec("app", &strings(&["/usr/bin/getent", "hosts", "broker"]))
            .await
            .unwrap();
        assert_eq!(out.exit_code, 0, "{out:?}");
        assert!(out.stdout.contains("broker"), "{out:?}");
        assert!(d.logs("broker", 10).await.unwrap().contains("broker ready"));

        // A second up keeps running services as they are.
        let broker_id = d.container_id("broker").unwrap().to_string();
        d.up(&strings(&["app"]), Duration::from_secs(30))
            .await
            .unwrap();
        assert_eq!(d.container_id("broker"), Some(broker_id.as_str()));

        // down of one service leaves the other; down_all leaves nothing.
        d.down(&strings(&["app"])).await.unwrap();
        assert!(d.container_id("app").is_none());
        let (containers, networks) = run_resources(&engine).await;
        assert_eq!(containers, vec![format!("/{name}-broker")]);
        assert_eq!(networks, vec![format!("{name}_default")]);
        d.down_all().await.unwrap();
        assert_eq!(run_resources(&engine).await, (vec![], vec![]));
    })
    .await;
}

#[tokio::test]
async fn unhealthy_service_times_out_with_its_logs_and_is_removed() {
    with_run("unhealthy", |engine| async move {
        let dir = tempfile::tempdir().unwrap();
        let file = write_compose(
            dir.path(),
            r#"
services:
  sick:
    image: perf-tests-test/tools:latest
    command: ["/bin/sh", "-c", "echo starting up; echo cannot open port >&2; exec sleep 600"]
    healthcheck:
      test: "echo probe-says-no; exit 1"
      interval: 200ms
      retries: 1000
"#,
        );
        let project = compose::load(&[file], &BTreeMap::new()).unwrap();
        let mut d = Deployment::new(&engine, project, &unique("unhealthy"));
        let started = Instant::now();
        let err = d
            .up(&strings(&["sick"]), Duration::from_secs(3))
            .await
            .unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "took {:?}",
            started.elapsed()
        );
        assert!(msg.contains("service \"sick\""), "{msg}");
        assert!(msg.contains("did not become healthy within 3s"), "{msg}");
        assert!(
            msg.contains("starting up") && msg.contains("cannot open port"),
            "{msg}"
        );
        assert!(msg.contains("probe-says-no"), "{msg}");
        assert!(d.container_id("sick").is_none());
        assert_eq!(run_resources(&engine).await, (vec![], vec![]));
    })
    .await;
}

#[tokio::test]
async fn service_that_exits_fails_fast_and_missing_image_is_named() {
    with_run("exits", |engine| async move {
        let dir = tempfile::tempdir().unwrap();
        let file = write_compose(
            dir.path(),
            r#"
services:
  crash:
    image: perf-tests-test/tools:latest
    command: ["/bin/sh", "-c", "echo bad config; exit 4"]
  ghost:
    image: perf-tests-test/no-such-image:1
"#,
        );
        let project = compose::load(&[file], &BTreeMap::new()).unwrap();
        let mut d = Deployment::new(&engine, project, &unique("exits"));
        let err = format!(
            "{:#}",
            d.up(&strings(&["crash"]), Duration::from_secs(60))
                .await
                .unwrap_err()
        );
        assert!(
            err.contains("exited with code 4") && err.contains("bad config"),
            "{err}"
        );
        let err = format!(
            "{:#}",
            d.up(&strings(&["ghost"]), Duration::from_secs(60))
                .await
                .unwrap_err()
        );
        assert!(err.contains("perf-tests-test/no-such-image:1"), "{err}");
        assert!(err.contains("service \"ghost\""), "{err}");
        assert_eq!(run_resources(&engine).await, (vec![], vec![]));
    })
    .await;
}

#[tokio::test]
async fn oneoff_streams_stderr_captures_stdout_and_resolves_services() {
    with_run("oneoff", |engine| async move {
        let dir = tempfile::tempdir().unwrap();
        let file = write_compose(
            dir.path(),
            r#"
services:
  broker:
    image: perf-tests-test/tools:latest
    command: ["/bin/sleep", "600"]
    networks:
      perfnet:
        aliases: [kafka]
networks:
  perfnet:
    driver: bridge
"#,
        );
        let project = compose::load(&[file], &BTreeMap::new()).unwrap();
        let mut d = Deployment::new(&engine, project, &unique("oneoff"));
        d.up(&strings(&["broker"]), Duration::from_secs(30)).await.unwrap();
        let mounted = dir.path().join("input.txt");
        std::fs::write(&mounted, "from the host\n").unwrap();
        let mut progress = Vec::new();
        let out = engine
            .run_oneoff(
                OneOff {
                    image: TOOLS_IMAGE.to_string(),
                    cmd: strings(&[
                        "/bin/sh",
                        "-c",
                        "getent hosts broker kafka; cat /in/input.txt; echo \"$MODE\"; echo step-1 >&2; sleep 0.2; echo step-2 >&2; exit 7",
                    ]),
                    env: strings(&["MODE=produce"]),
                    binds: vec![format!("{}:/in:ro", dir.path().display())],
                    network: Some(d.network_name("perfnet")),
                    name_hint: "workload".to_string(),
                    ..Default::default()
                },
                |line| progress.push(line.to_string()),
            )
            .await
            .unwrap();
        assert_eq!(out.exit_code, 7, "{out:?}");
        assert_eq!(progress, vec!["step-1", "step-2"]);
        assert_eq!(out.stderr, "step-1\nstep-2\n");
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(lines.len(), 4, "{out:?}");
        assert!(lines[0].ends_with("broker") || lines[0].contains("broker"), "{out:?}");
        assert!(lines[1].contains("kafka"), "{out:?}");
        assert_eq!(&lines[2..], &["from the host", "produce"]);
        // Only the service remains: the one-off container was removed.
        let (containers, _) = run_resources(&engine).await;
        assert_eq!(containers.len(), 1, "{containers:?}");
        d.down_all().await.unwrap();
        assert_eq!(run_resources(&engine).await, (vec![], vec![]));
    })
    .await;
}

#[tokio::test]
async fn scratch_image_carries_labels_and_runs_a_host_binary() {
    with_run("scratch", |engine| async move {
        let labels = image_label(&engine, TOOLS_IMAGE, CONTENT_LABEL)
            .await
            .unwrap();
        assert!(labels.is_some());
        assert_eq!(
            image_label(&engine, TOOLS_IMAGE, "no.such.label")
                .await
                .unwrap(),
            None
        );
        assert_eq!(
            image_label(&engine, "perf-tests-test/absent:1", "x")
                .await
                .unwrap(),
            None
        );
        // ls needs more than libc (libselinux, libpcre2): the closure must be complete.
        let out = engine
            .run_oneoff(
                OneOff {
                    image: TOOLS_IMAGE.to_string(),
                    entrypoint: Some(strings(&["/bin/ls"])),
                    cmd: strings(&["/bin"]),
                    name_hint: "ls".to_string(),
                    ..Default::default()
                },
                |_| {},
            )
            .await
            .unwrap();
        assert_eq!(out.exit_code, 0, "{out:?}");
        let listed: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(listed, vec!["cat", "ls", "sh", "sleep"]);
    })
    .await;
}

#[tokio::test]
async fn remove_all_managed_removes_leftovers_and_nothing_else() {
    let _lock = engine_lock(true);
    let engine = common::engine(&unique("clean")).await;
    tools_image(&engine).await;
    // An unrelated container without labels: must survive.
    let bystander = unique("bystander");
    common::docker()
        .create_container(
            Some(
                CreateContainerOptionsBuilder::default()
                    .name(&bystander)
                    .build(),
            ),
            ContainerCreateBody {
                image: Some(TOOLS_IMAGE.to_string()),
                cmd: Some(strings(&["/bin/sleep", "600"])),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let outcome = AssertUnwindSafe(async {
        // What a killed run would leave: a deployment that was never taken down.
        let dir = tempfile::tempdir().unwrap();
        let file = write_compose(
            dir.path(),
            "services:\n  left:\n    image: perf-tests-test/tools:latest\n    command: [\"/bin/sleep\", \"600\"]\n",
        );
        let project = compose::load(&[file], &BTreeMap::new()).unwrap();
        let mut d = Deployment::new(&engine, project, &unique("leftover"));
        d.up(&strings(&["left"]), Duration::from_secs(30)).await.unwrap();
        std::mem::forget(d);
        let (c, n) = labelled("io.perf-tests.managed=true").await;
        assert!(!c.is_empty() && !n.is_empty());

        let removed = engine.remove_all_managed().await.unwrap();
        assert!(removed >= 2, "removed {removed}");
        assert_eq!(
            labelled("io.perf-tests.managed=true").await,
            (vec![], vec![])
        );
        // Idempotent.
        assert_eq!(engine.remove_all_managed().await.unwrap(), 0);
        common::docker()
            .inspect_container(&bystander, None)
            .await
            .expect("the unlabelled container must survive");
    })
    .catch_unwind()
    .await;
    common::docker()
        .remove_container(
            &bystander,
            Some(RemoveContainerOptionsBuilder::default().force(true).build()),
        )
        .await
        .unwrap();
    if let Err(p) = outcome {
        std::panic::resume_unwind(p);
    }
}

/// Creates a network and a container on it labelled as made by run `run_id` of `owner`, as a
/// run that was killed (or is still going) leaves them.
async fn owned_resources(run_id: &str, owner: &Owner) {
    let mut labels = HashMap::from([
        ("io.perf-tests.managed".to_string(), "true".to_string()),
        ("io.perf-tests.run".to_string(), run_id.to_string()),
    ]);
    labels.extend(owner.labels());
    common::docker()
        .create_network(bollard::models::NetworkCreateRequest {
            name: run_id.to_string(),
            labels: Some(labels.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    common::docker()
        .create_container(
            Some(
                CreateContainerOptionsBuilder::default()
                    .name(run_id)
                    .build(),
            ),
            ContainerCreateBody {
                image: Some(TOOLS_IMAGE.to_string()),
                cmd: Some(strings(&["/bin/sleep", "600"])),
                labels: Some(labels),
                host_config: Some(bollard::models::HostConfig {
                    network_mode: Some(run_id.to_string()),
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
        .await
        .unwrap();
}

/// `perf-tests clean` removes what runs that are no longer alive left, and only that: a live
/// run's resources (this test process is their owner) survive, as do another host's; a gone
/// process's and a reused pid's are removed.
#[tokio::test]
async fn clean_removes_only_what_dead_runs_left() {
    let _lock = engine_lock(true);
    let engine = Engine::connect(&unique("liveness")).await.unwrap();
    tools_image(&engine).await;
    let me = Owner::current().clone();
    assert!(me.start.is_some());
    // No process can have a pid above pid_max.
    let pid_max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let gone = Owner {
        pid: pid_max + 1,
        ..me.clone()
    };
    let reused = Owner {
        start: me.start.map(|s| s + 1),
        ..me.clone()
    };
    let remote = Owner {
        host: "elsewhere.invalid".to_string(),
        ..gone.clone()
    };
    let runs: Vec<(String, &Owner)> = [
        ("live", &me),
        ("gone", &gone),
        ("reused", &reused),
        ("remote", &remote),
    ]
    .into_iter()
    .map(|(name, owner)| (unique(&format!("liveness-{name}")), owner))
    .collect();
    let outcome = AssertUnwindSafe(async {
        for (run_id, owner) in &runs {
            owned_resources(run_id, owner).await;
        }
        let out = common::bin()
            .arg("clean")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let left = |i: usize| {
            let run_id = runs[i].0.clone();
            async move {
                let (c, n) = labelled(&format!("io.perf-tests.run={run_id}")).await;
                (c.len(), n.len())
            }
        };
        assert_eq!(left(0).await, (1, 1), "the live run's resources survive\n{stderr}");
        assert_eq!(left(1).await, (0, 0), "the gone process's are removed\n{stderr}");
        assert_eq!(left(2).await, (0, 0), "the reused pid's are removed\n{stderr}");
        assert_eq!(left(3).await, (1, 1), "another host's are left alone\n{stderr}");
        for expected in [
            format!(
                "keeping 1 container and 1 network of run {}: its process {} on this host is still running",
                runs[0].0, me.pid
            ),
            format!(
                "removing 1 container and 1 network of run {}: its process {} on this host is gone",
                runs[1].0, gone.pid
            ),
            format!("removing 1 container and 1 network of run {}:", runs[2].0),
            format!(
                "leaving 1 container and 1 network of run {} alone: it was made on host elsewhere.invalid",
                runs[3].0
            ),
            "`perf-tests clean --force` removes them".to_string(),
        ] {
            assert!(stderr.contains(&expected), "{expected:?} in\n{stderr}");
        }
    })
    .catch_unwind()
    .await;
    for (run_id, _) in &runs {
        engine.remove_run(run_id).await.unwrap();
    }
    if let Err(p) = outcome {
        std::panic::resume_unwind(p);
    }
}

/// `perf-tests clean --force` removes every managed container and network, those of a live run
/// and of another host's included, naming each; a container it did not make survives.
#[tokio::test]
async fn clean_force_removes_every_managed_resource_and_nothing_else() {
    let _lock = engine_lock(true);
    let engine = Engine::connect(&unique("force")).await.unwrap();
    tools_image(&engine).await;
    let me = Owner::current().clone();
    let remote = Owner {
        host: "elsewhere.invalid".to_string(),
        ..me.clone()
    };
    let runs = [unique("force-live"), unique("force-remote")];
    let stranger = unique("force-unmanaged");
    let outcome = AssertUnwindSafe(async {
        owned_resources(&runs[0], &me).await;
        owned_resources(&runs[1], &remote).await;
        common::docker()
            .create_container(
                Some(
                    CreateContainerOptionsBuilder::default()
                        .name(&stranger)
                        .build(),
                ),
                ContainerCreateBody {
                    image: Some(TOOLS_IMAGE.to_string()),
                    cmd: Some(strings(&["/bin/sleep", "600"])),
                    labels: Some(HashMap::from([(
                        "io.perf-tests.run".to_string(),
                        stranger.clone(),
                    )])),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let out = common::bin().args(["clean", "--force"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        for run_id in &runs {
            let (c, n) = labelled(&format!("io.perf-tests.run={run_id}")).await;
            assert_eq!(
                (c.len(), n.len()),
                (0, 0),
                "{run_id}'s are removed\n{stderr}"
            );
            for kind in ["container", "network"] {
                let named = format!("removing {kind} {run_id} (run {run_id})");
                assert!(stderr.contains(&named), "{named:?} in\n{stderr}");
            }
        }
        assert!(stderr.contains("(--force: every managed one"), "{stderr}");
        // Not labelled as managed: not perf-tests' to remove.
        let (c, _) = labelled(&format!("io.perf-tests.run={stranger}")).await;
        assert_eq!(c.len(), 1, "the unmanaged container survives\n{stderr}");
    })
    .catch_unwind()
    .await;
    let _ = common::docker()
        .remove_container(
            &stranger,
            Some(
                bollard::query_parameters::RemoveContainerOptionsBuilder::default()
                    .force(true)
                    .build(),
            ),
        )
        .await;
    for run_id in &runs {
        engine.remove_run(run_id).await.unwrap();
    }
    if let Err(p) = outcome {
        std::panic::resume_unwind(p);
    }
}

/// Services that never become ready: `up` runs, `never` (after it) fails its health check, so
/// `compose up never` waits for minutes with two containers and a network on the engine.
const NEVER_READY: &str = r#"
services:
  up:
    image: perf-tests-test/tools:latest
    command: ["/bin/sleep", "600"]
  never:
    image: perf-tests-test/tools:latest
    command: ["/bin/sleep", "600"]
    depends_on: [up]
    healthcheck:
      test: ["CMD", "/bin/sh", "-c", "exit 1"]
      interval: 1s
      retries: 1000
"#;

/// Starts `compose up never` for the engine's run under `wrapper` (e.g. `nohup`, or none) and
/// waits until both containers exist, so a signal lands while it waits for health.
async fn up_never_ready(engine: &Engine, dir: &Path, wrapper: &[&str]) -> std::process::Child {
    let file = write_compose(dir, NEVER_READY);
    let bin = env!("CARGO_BIN_EXE_perf-tests");
    let (program, before) = match wrapper.split_first() {
        Some((w, rest)) => (*w, [rest, &[bin]].concat()),
        None => (bin, vec![]),
    };
    let child = std::process::Command::new(program)
        .args(before)
        .args(["compose", "up", "-f"])
        .arg(&file)
        .args(["--run-id", engine.run_id(), "--project"])
        .arg(unique("signal"))
        .args(["--timeout", "5m", "never"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while run_resources(engine).await.0.len() < 2 {
        assert!(Instant::now() < deadline, "the containers never appeared");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    child
}

/// Waits at most `within` for `child` to exit; its status and standard error.
async fn exit_within(
    mut child: std::process::Child,
    within: Duration,
) -> (std::process::ExitStatus, String) {
    let sent = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if sent.elapsed() > within {
            let _ = child.kill();
            panic!("still running {within:?} after the signal");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    (status, stderr)
}

#[tokio::test]
async fn sigint_during_up_exits_promptly_and_leaves_nothing() {
    with_run("sigint", |engine| async move {
        let dir = tempfile::tempdir().unwrap();
        let child = up_never_ready(&engine, dir.path(), &[]).await;
        common::send("INT", &child);
        let (code, stderr) = exit_within(child, Duration::from_secs(10)).await;
        assert_eq!(code.code(), Some(130), "{stderr}");
        assert!(stderr.contains("interrupted"), "{stderr}");
        assert_eq!(run_resources(&engine).await, (vec![], vec![]));
    })
    .await;
}

/// A closed terminal or SSH session: handled as SIGTERM, not the default exit 129 that leaves
/// the containers and the network behind.
#[tokio::test]
async fn sighup_during_up_exits_promptly_and_leaves_nothing() {
    with_run("sighup", |engine| async move {
        let dir = tempfile::tempdir().unwrap();
        let child = up_never_ready(&engine, dir.path(), &[]).await;
        assert_eq!(run_resources(&engine).await.1.len(), 1, "one network");
        common::send("HUP", &child);
        let (code, stderr) = exit_within(child, Duration::from_secs(10)).await;
        assert_eq!(code.code(), Some(130), "{stderr}");
        assert!(
            stderr.contains("interrupted by SIGHUP: removing containers and networks of run"),
            "{stderr}"
        );
        assert_eq!(run_resources(&engine).await, (vec![], vec![]));
    })
    .await;
}

/// Under `nohup` SIGHUP is ignored, as the user asked: the run goes on until SIGTERM.
#[tokio::test]
async fn sighup_under_nohup_is_ignored() {
    with_run("nohup", |engine| async move {
        let dir = tempfile::tempdir().unwrap();
        let mut child = up_never_ready(&engine, dir.path(), &["nohup"]).await;
        common::send("HUP", &child);
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(child.try_wait().unwrap().is_none(), "SIGHUP ended it");
        assert_eq!(run_resources(&engine).await.0.len(), 2);
        common::send("TERM", &child);
        let (code, stderr) = exit_within(child, Duration::from_secs(10)).await;
        assert_eq!(code.code(), Some(130), "{stderr}");
        assert!(stderr.contains("interrupted by SIGTERM"), "{stderr}");
        assert_eq!(run_resources(&engine).await, (vec![], vec![]));
    })
    .await;
}

#[test]
fn unreachable_engine_gives_one_clear_error() {
    let out = common::bin()
        .args(["compose", "down", "--run-id", "nothing"])
        .env("DOCKER_HOST", "tcp://127.0.0.1:1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot reach the Docker engine at tcp://127.0.0.1:1")
            && stderr.contains("DOCKER_HOST"),
        "{stderr}"
    );
}

/// `perf-tests doctor` and the same checks in `run`: the host against the plan.
mod doctor {
    use super::common;
    use std::path::Path;

    fn text(b: &[u8]) -> String {
        String::from_utf8_lossy(b).into_owned()
    }

    /// `perf-tests doctor` with NUM_RECORDS=`records`: its output, and the GiB its disk line
    /// says the broker's log needs.
    fn doctor_at(records: &str) -> (String, f64) {
        let out = common::bin()
            .arg("doctor")
            .env("NUM_RECORDS", records)
            .output()
            .unwrap();
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
        let disk = stdout
            .lines()
            .find(|l| l.starts_with("ok    disk "))
            .unwrap_or_else(|| panic!("{stdout}"));
        let need = disk
            .split_once("the broker's log needs about ")
            .and_then(|(_, n)| n.strip_suffix(" GiB"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{disk}"));
        (stdout, need)
    }

    #[test]
    fn doctor_reports_the_engine_and_the_disk_of_a_ready_host() {
        // Both suites' images are built before the tests, so nothing needs Maven or cargo.
        let (stdout, need) = doctor_at("1e6");
        let engine = stdout
            .lines()
            .find(|l| l.starts_with("ok    engine "))
            .unwrap_or_else(|| panic!("{stdout}"));
        assert!(
            engine.contains("storage driver ") && engine.contains("cgroup v"),
            "{engine}"
        );
        assert!(
            !stdout.contains("FAIL") && !stdout.contains("maven"),
            "{stdout}"
        );
        // A million more records of 1 KiB: about 1 GiB more log, twice (deleted topics linger).
        let (_, more) = doctor_at("2e6");
        assert!(
            (more - need - 2.0).abs() < 0.15,
            "{need} GiB, then {more} GiB"
        );
    }

    #[test]
    fn an_unreachable_engine_fails_the_doctor_naming_it() {
        let out = common::bin()
            .arg("doctor")
            .env("DOCKER_HOST", "tcp://127.0.0.1:1")
            .output()
            .unwrap();
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{stdout}");
        assert!(
            stdout
                .starts_with("FAIL  engine   cannot reach the Docker engine at tcp://127.0.0.1:1"),
            "{stdout}"
        );
    }

    #[test]
    fn a_disk_too_small_for_the_records_stops_the_run_before_anything_starts() {
        let results = tempfile::tempdir().unwrap();
        let out = common::perf_tests_run(results.path())
            .env("TEST", "01.*")
            .env("NUM_RECORDS", "1e11")
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("this host cannot run the plan; nothing was built or started"),
            "{stderr}"
        );
        assert!(
            stderr.contains("disk: ")
                && stderr.contains("NUM_RECORDS=100000000000 of RECORD_SIZE=1024 bytes"),
            "{stderr}"
        );
        assert!(!stderr.contains("==> run "), "no run started: {stderr}");
        assert_eq!(
            std::fs::read_dir(results.path()).map_or(0, |d| d.count()),
            0
        );
    }

    /// A suite whose one image is made with Maven and is not on the engine.
    fn maven_suite(dir: &Path, image: &str) {
        let suite = dir.join("scenarios/doctor");
        std::fs::create_dir_all(suite.join("01-baseline")).unwrap();
        std::fs::write(
            dir.join("broker.yaml"),
            format!("services:\n  broker:\n    image: {image}\n"),
        )
        .unwrap();
        std::fs::write(
            suite.join("suite.yaml"),
            format!(
                "description: Doctor\ncompose: [../../broker.yaml]\nservices: [broker]\nbootstrap: broker:9092\nready: {{ broker: \"broker:9092\" }}\nimages:\n  {image}:\n    maven:\n      artifacts: [junit:junit:4.13.2]\n      jdk: 17\n      entrypoint: [/bin/busybox, 'true']\n"
            ),
        )
        .unwrap();
        std::fs::write(
            suite.join("01-baseline/scenario.yaml"),
            "description: Broker alone\nbootstrap: broker:9092\n",
        )
        .unwrap();
    }

    #[test]
    fn no_route_to_the_maven_repository_is_named_before_an_image_is_built() {
        let dir = tempfile::tempdir().unwrap();
        let image = "perf-tests-test/doctor-maven:absent";
        maven_suite(dir.path(), image);
        // Maven's settings of this HOME send every request to a port nothing listens on.
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".m2")).unwrap();
        std::fs::write(
            home.join(".m2/settings.xml"),
            "<settings><mirrors><mirror><id>none</id><mirrorOf>*</mirrorOf><url>http://127.0.0.1:9/maven2</url></mirror></mirrors></settings>",
        )
        .unwrap();
        let results = dir.path().join("results");
        let run = |command: &str| {
            common::perf_tests_command(command, &results)
                .current_dir(dir.path())
                .env("SCENARIOS", "scenarios/doctor")
                .env("HOME", &home)
                .output()
                .unwrap()
        };
        let doctor = run("doctor");
        let stdout = text(&doctor.stdout);
        assert_eq!(doctor.status.code(), Some(1), "{stdout}");
        assert!(stdout.contains("ok    maven    mvn, a JDK with jlink and busybox, to make perf-tests-test/doctor-maven:absent"), "{stdout}");
        assert!(stdout.contains("FAIL  maven    no route to the Maven repository http://127.0.0.1:9/maven2 (127.0.0.1:9: "), "{stdout}");
        let out = run("run");
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("maven: no route to the Maven repository http://127.0.0.1:9/maven2"),
            "{stderr}"
        );
        assert!(!stderr.contains("building image"), "{stderr}");
        assert_eq!(
            common::docker_cli(&["images", "-q", image]).trim(),
            "",
            "nothing was built"
        );
        assert!(!results.exists(), "no results directory");
    }

    #[test]
    fn the_setup_script_finds_this_host_ready_and_names_what_another_user_lacks() {
        let setup = common::repo().join("scripts/setup");
        let started = std::time::Instant::now();
        let out = std::process::Command::new(&setup)
            .arg("--tests")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        assert!(
            text(&out.stdout).contains("packages present"),
            "{}",
            text(&out.stdout)
        );
        // Idempotent and quick when everything is there.
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
        let bad = std::process::Command::new(&setup)
            .arg("--nope")
            .output()
            .unwrap();
        assert_eq!(bad.status.code(), Some(2));
        assert!(
            text(&bad.stderr).contains("unknown argument `--nope`"),
            "{}",
            text(&bad.stderr)
        );
        // Another user can neither install packages nor reach the engine's socket: the script
        // says what is missing and how to get it, and fails. (Rust is not what is checked: a
        // stand-in `cargo` that has nextest stands for the user's own.)
        let bin = tempfile::tempdir().unwrap();
        let cargo = bin.path().join("cargo");
        std::fs::write(&cargo, "#!/bin/sh\nexit 0\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(bin.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let nobody = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&setup)
            .arg("--tests")
            .current_dir("/")
            .env(
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", bin.path().display()),
            )
            .env("HOME", "/tmp")
            .env_remove("DOCKER_HOST")
            .output()
            .unwrap();
        let stderr = text(&nobody.stderr);
        assert_eq!(nobody.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("scripts/setup cannot install here (not root)"),
            "{stderr}"
        );
        assert!(
            stderr.contains(
                "no Docker engine answers at unix:///var/run/docker.sock: install Docker Engine"
            ),
            "{stderr}"
        );
    }
}
