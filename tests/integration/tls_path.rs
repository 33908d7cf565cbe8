//! TLS from clients to the proxy (`scenarios/kroxylicious-tls`, 03) on the real engine: the
//! proxy's gateway, given the certificate the runner makes, answers a real rdkafka client that
//! trusts the run's CA, and refuses a plaintext client and one that trusts another CA.

use crate::common;
use common::{engine_lock, repo};

use std::path::Path;
use std::time::Duration;

use perf_tests::settings::Settings;
use perf_tests::world::compose;
use perf_tests::world::engine::{Deployment, Engine, OneOff};

/// The TLS proxy's Compose service.
const PROXY: &str = "kroxylicious-no-filters-tls";

/// Runs `perf-tests workload probe` in a container on the deployment's network; returns its exit
/// code and stderr.
async fn probe(
    engine: &Engine,
    workload: &str,
    network: &str,
    client: &[&str],
    binds: Vec<String>,
    timeout_s: u32,
) -> (i64, String) {
    let mut cmd: Vec<String> = ["workload", "probe", "--bootstrap", "kroxylicious:9092"]
        .map(String::from)
        .to_vec();
    cmd.extend(["--timeout-s".into(), timeout_s.to_string()]);
    for p in client {
        cmd.extend(["--client-property".into(), p.to_string()]);
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
async fn the_tls_proxy_refuses_plaintext_and_another_ca_and_accepts_the_runs_ca() {
    let _lock = engine_lock(false);
    let engine = common::engine(&format!("test-tls-{}", std::process::id())).await;
    let workload = perf_tests::world::images::workload::ensure_for(
        &engine,
        Path::new(env!("CARGO_BIN_EXE_perf-tests")),
    )
    .await
    .unwrap();
    let tls = tempfile::tempdir().unwrap();
    perf_tests::world::tls::generate(tls.path(), &["kroxylicious".into()]).unwrap();
    let other_ca = tempfile::tempdir().unwrap();
    perf_tests::world::tls::generate(other_ca.path(), &["kroxylicious".into()]).unwrap();

    // The suite's own variables (images, settings), the certificates from here.
    let settings = Settings {
        scenarios: repo().join("scenarios/kroxylicious-tls"),
        test: "03.*".into(),
        commit_id: "test".into(),
        ..Settings::default()
    };
    let plan = perf_tests::plan::plan(&settings, "test-tls").unwrap();
    let mut variables = plan.variables.clone();
    variables.insert("TLS_DIR".into(), tls.path().display().to_string());
    let project = compose::load(&plan.suite.compose, &variables).unwrap();

    let mut d = Deployment::new(&engine, project, &format!("pt-{}", engine.run_id()));
    let ssl = ["security.protocol=SSL", "ssl.ca.location=/tls/ca.pem"];
    let bind = |dir: &Path| vec![format!("{}:/tls:ro", dir.display())];
    let outcome = async {
        d.up(&[PROXY.to_string()], Duration::from_secs(120)).await?;
        let net = d.network_name("default");
        let with_ca = probe(&engine, &workload, &net, &ssl, bind(tls.path()), 60).await;
        let plaintext = probe(&engine, &workload, &net, &[], vec![], 5).await;
        let wrong_ca = probe(&engine, &workload, &net, &ssl, bind(other_ca.path()), 5).await;
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
