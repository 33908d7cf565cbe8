//! Image recipes on the real engine: a Debian package's program packaged into an image that
//! runs, is not rebuilt while up to date and is rebuilt when forced; the default suite's broker
//! and proxy started from their images map the classes archived as the images were built, and a
//! recipe whose class-data command fails is not built; `clean --images` removes the workload
//! images of other builds and keeps this build's.

use crate::common;
use common::engine_lock;

use std::path::{Path, PathBuf};
use std::time::Duration;

use perf_tests::world::engine::OneOff;
use perf_tests::world::images::maven::{ClassData, MavenRecipe};
use perf_tests::world::images::recipe::{self, DebianRecipe, ImageRecipe, Outcome, Recipe};

fn run_id(test: &str) -> String {
    format!("test-{test}-{}", std::process::id())
}

#[tokio::test(flavor = "multi_thread")]
async fn debian_recipe_builds_runs_and_is_not_rebuilt() {
    let _lock = engine_lock(false);
    let engine = common::engine(&run_id("recipe")).await;
    let image = format!("perf-tests-test/recipe-env:{}", std::process::id());
    let r = ImageRecipe {
        image: image.clone(),
        recipe: Recipe::Debian(DebianRecipe {
            package: "coreutils".into(),
            bin: PathBuf::from("/usr/bin/env"),
        }),
    };
    assert_eq!(
        recipe::ensure(&engine, &r, false).await.unwrap(),
        Outcome::Built
    );
    let started = std::time::Instant::now();
    assert_eq!(
        recipe::ensure(&engine, &r, false).await.unwrap(),
        Outcome::UpToDate
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "warm check is quick"
    );

    let out = engine
        .run_oneoff(
            OneOff {
                image: image.clone(),
                cmd: vec!["PROBE=from-scratch".into()],
                name_hint: "recipe".into(),
                ..Default::default()
            },
            |_| {},
        )
        .await
        .unwrap();
    assert_eq!(out.exit_code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("PROBE=from-scratch"), "{}", out.stdout);

    assert_eq!(
        recipe::ensure(&engine, &r, true).await.unwrap(),
        Outcome::Built,
        "forced"
    );
    common::docker()
        .remove_image(
            &image,
            None::<bollard::query_parameters::RemoveImageOptions>,
            None,
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn clean_images_removes_other_builds_workload_images_only() {
    // Exclusive: `clean` also removes the managed containers of runs no longer alive.
    let _lock = engine_lock(true);
    let engine = common::engine(&run_id("clean-images")).await;
    // Any other executable stands in for an older build of perf-tests.
    let stale = perf_tests::world::images::workload::ensure_for(&engine, Path::new("/usr/bin/env"))
        .await
        .unwrap();
    let current = perf_tests::world::images::workload::ensure_for(
        &engine,
        Path::new(env!("CARGO_BIN_EXE_perf-tests")),
    )
    .await
    .unwrap();
    let out = common::bin().args(["clean", "--images"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("workload images of other builds"),
        "{stderr}"
    );
    assert!(
        engine.image_labels(&stale).await.unwrap().is_none(),
        "{stale} is still there"
    );
    assert!(
        engine.image_labels(&current).await.unwrap().is_some(),
        "{current} was removed"
    );
}

/// A container started with `docker run -d`, removed when the test ends however it ends.
struct Removed(String);

impl Drop for Removed {
    fn drop(&mut self) {
        common::docker_cli(&["rm", "-f", &self.0]);
    }
}

/// Starts `image` as the suite starts it (`options` of `docker run`, then `command`), with
/// `-Xshare:on` in the JVM options variable `opts`, so that a JVM that could not map the image's
/// class-data archive would not start at all; waits until it listens on 9092 and returns what
/// its JVM (pid 1) has mapped.
fn maps_once_listening(image: &str, opts: &str, options: &[&str], command: &[&str]) -> String {
    let name = format!("perf-tests-test-class-data-{}-{}", std::process::id(), opts);
    let setting = format!("{opts}=-Xshare:on");
    let mut run = vec!["run", "-d", "--name", &name, "-e", &setting];
    run.extend_from_slice(options);
    run.push(image);
    run.extend_from_slice(command);
    let _removed = Removed(name.clone());
    assert!(
        !common::docker_cli(&run).trim().is_empty(),
        "docker run {run:?}"
    );
    common::wait_for(
        &format!("{image} listening on 9092"),
        Duration::from_secs(60),
        || {
            let state = common::docker_cli(&["inspect", "-f", "{{.State.Running}}", &name]);
            assert_eq!(
                state.trim(),
                "true",
                "{image} exited: {}",
                common::docker_cli(&["logs", &name])
            );
            common::listens_on_9092(&name)
        },
    );
    common::docker_cli(&["exec", &name, "cat", "/proc/1/maps"])
}

/// The default suite's broker and proxy, each from its image as a run starts it, map the class
/// archive the image was built with (the JVM's own memory map says so); `-Xshare:on` makes a JVM
/// that cannot use it fail instead of starting without it.
#[test]
fn the_broker_and_the_proxy_start_from_the_classes_archived_in_their_images() {
    let _lock = engine_lock(false);
    let broker = [
        "--hostname",
        "broker1",
        "-e",
        "KAFKA_PROCESS_ROLES=broker,controller",
        "-e",
        "KAFKA_NODE_ID=1",
        "-e",
        "KAFKA_CONTROLLER_QUORUM_VOTERS=1@broker1:9094",
        "-e",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "-e",
        "KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
        "-e",
        "KAFKA_LISTENERS=PLAINTEXT://:9092,CONTROLLER://broker1:9094",
        "-e",
        "KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://broker1:9092",
        "-e",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=1",
        "-e",
        "KAFKA_LOG_DIRS=/var/lib/kafka/data",
    ];
    let maps = maps_once_listening("perf-tests/kafka:4.4.0", "KAFKA_JVM_OPTS", &broker, &[]);
    assert!(maps.contains("/opt/perf-tests/classes.jsa"), "{maps}");
    let config = common::repo().join("scenarios/kroxylicious/02-no-filters/proxy-config.yaml");
    let mount = format!(
        "{}:/opt/kroxylicious/config/config.yaml:ro",
        config.display()
    );
    let maps = maps_once_listening(
        "perf-tests/kroxylicious:0.12.0",
        "JAVA_OPTIONS",
        &["--hostname", "kroxylicious", "-v", &mount],
        &["--config", "/opt/kroxylicious/config/config.yaml"],
    );
    assert!(maps.contains("/opt/perf-tests/classes.jsa"), "{maps}");
}

/// A recipe whose class-data command fails is not built: the error quotes the command's own
/// output and its exit status, and no image is left under the tag.
#[tokio::test(flavor = "multi_thread")]
async fn a_class_data_command_that_fails_stops_the_build_quoting_it() {
    let _lock = engine_lock(false);
    let engine = common::engine(&run_id("class-data")).await;
    let image = format!("perf-tests-test/class-data:{}", std::process::id());
    let r = ImageRecipe {
        image: image.clone(),
        recipe: Recipe::Maven(MavenRecipe {
            artifacts: vec!["org.slf4j:slf4j-api:2.0.17".into()],
            jdk: "17".into(),
            modules: vec!["java.base".into()],
            sources: vec![],
            files: Default::default(),
            entrypoint: vec!["/opt/java/bin/java".into()],
            class_data: Some(ClassData {
                command: [
                    "/bin/busybox",
                    "sh",
                    "-c",
                    "echo no broker here >&2; exit 3",
                ]
                .map(String::from)
                .to_vec(),
                port: Some(9092),
            }),
        }),
    };
    let err = format!(
        "{:#}",
        recipe::ensure(&engine, &r, false).await.unwrap_err()
    );
    assert!(
        err.contains("class data: the command failed (exit 3)") && err.contains("no broker here"),
        "{err}"
    );
    assert!(
        engine.image_labels(&image).await.unwrap().is_none(),
        "{image} is left"
    );
}
