//! The offline suite on the real engine: image recipes, the Tansu broker and proxy images
//! answering a real rdkafka client, and the TLS path.

use crate::common;
use common::{engine_lock, repo};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::time::Duration;

use perf_tests::compose;
use perf_tests::engine::{Deployment, Engine, OneOff};
use perf_tests::images::recipe::{self, DebianRecipe, ImageRecipe, Outcome, Recipe};
use perf_tests::scenario::Suite;

fn run_id(test: &str) -> String {
    format!("test-{test}-{}", std::process::id())
}

/// The suite's own images (built when missing) and the workload image of this build.
async fn images(engine: &Engine) -> String {
    let suite = Suite::load(&repo().join("scenarios/offline")).unwrap();
    for r in recipe::parse_recipes(&suite.images_file, &suite.images).unwrap() {
        recipe::ensure(engine, &r, false).await.unwrap();
    }
    perf_tests::images::workload::ensure_for(engine, Path::new(env!("CARGO_BIN_EXE_perf-tests")))
        .await
        .unwrap()
}

/// Runs `perf-tests workload probe` in a container on the deployment's network.
async fn probe(
    engine: &Engine,
    workload: &str,
    network: &str,
    endpoint: &str,
    client: &[&str],
    binds: Vec<String>,
    timeout_s: u32,
) -> (i64, String) {
    let mut cmd: Vec<String> = vec![
        "workload".into(),
        "probe".into(),
        "--bootstrap".into(),
        endpoint.into(),
        "--timeout-s".into(),
        timeout_s.to_string(),
    ];
    for p in client {
        cmd.push("--client-property".into());
        cmd.push(p.to_string());
    }
    let out = engine
        .run_oneoff(
            OneOff {
                image: workload.to_string(),
                cmd,
                binds,
                network: Some(network.to_string()),
                name_hint: "probe".into(),
                ..Default::default()
            },
            |_| {},
        )
        .await
        .unwrap();
    (out.exit_code, out.stderr)
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

#[test]
fn offline_suite_plan_resolves() {
    let out = common::bin()
        .args(["run", "--dry-run"])
        .env("SCENARIOS", "scenarios/offline")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "01-no-proxy-baseline, 02-kafka-proxy, 03-tls",
        "bootstrap: proxy:9092",
        "bootstrap: terminator:9093",
        "broker [run-wide]\n    image: perf-tests/tansu:0.6.0",
        "proxy [02-kafka-proxy]",
        "terminator [03-tls]\n    image: perf-tests/haproxy:2.6",
        "depends on: broker",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in:\n{stdout}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn broker_and_proxy_answer_a_real_kafka_client() {
    let _lock = engine_lock(false);
    let engine = common::engine(&run_id("tansu")).await;
    let workload = images(&engine).await;
    let project = compose::load(
        &[repo().join("compose/tansu.yaml")],
        &BTreeMap::from([("TLS_DIR".to_string(), "/nonexistent".to_string())]),
    )
    .unwrap();
    let mut d = Deployment::new(&engine, project, &format!("pt-{}", engine.run_id()));
    let outcome = async {
        d.up(&["proxy".to_string()], Duration::from_secs(60))
            .await?;
        let net = d.network_name("default");
        let broker = probe(&engine, &workload, &net, "broker:9092", &[], vec![], 30).await;
        let proxy = probe(&engine, &workload, &net, "proxy:9092", &[], vec![], 30).await;
        anyhow::Ok((broker, proxy))
    }
    .await;
    d.down_all().await.unwrap();
    let (broker, proxy) = outcome.unwrap();
    assert_eq!(broker.0, 0, "broker: {}", broker.1);
    assert_eq!(proxy.0, 0, "proxy: {}", proxy.1);
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_path_refuses_plaintext_and_accepts_the_generated_ca() {
    let _lock = engine_lock(false);
    let engine = common::engine(&run_id("tls")).await;
    let workload = images(&engine).await;
    let tls = tempfile::tempdir().unwrap();
    perf_tests::tls::generate(tls.path(), &["terminator".into()]).unwrap();
    let other_ca = tempfile::tempdir().unwrap();
    perf_tests::tls::generate(other_ca.path(), &["terminator".into()]).unwrap();

    let project = compose::load(
        &[repo().join("compose/tansu.yaml")],
        &BTreeMap::from([("TLS_DIR".to_string(), tls.path().display().to_string())]),
    )
    .unwrap();
    let mut d = Deployment::new(&engine, project, &format!("pt-{}", engine.run_id()));
    let ssl = ["security.protocol=SSL", "ssl.ca.location=/tls/ca.pem"];
    let outcome = async {
        d.up(&["terminator".to_string()], Duration::from_secs(60))
            .await?;
        let net = d.network_name("default");
        let bind = |dir: &Path| vec![format!("{}:/tls:ro", dir.display())];
        let with_ca = probe(
            &engine,
            &workload,
            &net,
            "terminator:9093",
            &ssl,
            bind(tls.path()),
            30,
        )
        .await;
        let plaintext = probe(&engine, &workload, &net, "terminator:9093", &[], vec![], 5).await;
        let wrong_ca = probe(
            &engine,
            &workload,
            &net,
            "terminator:9093",
            &ssl,
            bind(other_ca.path()),
            5,
        )
        .await;
        anyhow::Ok((with_ca, plaintext, wrong_ca))
    }
    .await;
    d.down_all().await.unwrap();
    let (with_ca, plaintext, wrong_ca) = outcome.unwrap();
    assert_eq!(with_ca.0, 0, "TLS with the run's CA: {}", with_ca.1);
    assert_ne!(plaintext.0, 0, "plaintext must be refused: {}", plaintext.1);
    assert_ne!(wrong_ca.0, 0, "another CA must be refused: {}", wrong_ca.1);
    assert!(
        wrong_ca.1.to_lowercase().contains("certificate") || wrong_ca.1.contains("SSL"),
        "the failure names the certificate problem: {}",
        wrong_ca.1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn clean_images_removes_other_builds_workload_images_only() {
    // Exclusive: `clean` also removes the managed containers of runs no longer alive.
    let _lock = engine_lock(true);
    let engine = common::engine(&run_id("clean-images")).await;
    // Any other executable stands in for an older build of perf-tests.
    let stale = perf_tests::images::workload::ensure_for(&engine, Path::new("/usr/bin/env"))
        .await
        .unwrap();
    let current = perf_tests::images::workload::ensure_for(
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
