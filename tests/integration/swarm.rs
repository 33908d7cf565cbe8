//! `perf-tests swarm local` and `down` for real: three Docker daemons in network namespaces of
//! this machine made into a swarm, labelled by role, the images copied onto each with no
//! registry, traffic between two nodes over an overlay network, every refusal, Ctrl-C while the
//! swarm is being made, and nothing of it left afterwards.

use crate::common;
use common::engine_lock;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use perf_tests::engine::Engine;
use perf_tests::swarm::local::{self, Node};

/// One local swarm at a time on a host: these tests take turns.
fn swarm_lock() -> std::fs::File {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open("/tmp/perf-tests-swarm-tests.lock")
        .unwrap();
    f.lock().unwrap();
    f
}

fn swarm(args: &[&str]) -> Output {
    common::bin()
        .arg("swarm")
        .args(args)
        .env_remove("DOCKER_HOST")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The `docker` CLI against the swarm's manager.
fn manager(args: &[&str]) -> String {
    let out = Command::new("docker")
        .args(args)
        .env("DOCKER_HOST", local::manager_host())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// What of a local swarm is on this host: namespaces, the bridge, the directories, the forward
/// rule, daemons.
fn remains() -> Vec<String> {
    // The lines `program args` prints that mention `mark`, each as `what`.
    let lines = |program: &str, args: &[&str], mark: &str, what: &str| -> Vec<String> {
        let out = Command::new(program).args(args).output().unwrap();
        text(&out.stdout)
            .lines()
            .filter(|l| l.contains(mark))
            .map(|l| format!("{what}{l}"))
            .collect()
    };
    let mut found = lines("ip", &["netns", "list"], local::PREFIX, "netns ");
    if Command::new("ip")
        .args(["link", "show", local::PREFIX])
        .stderr(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .unwrap()
        .success()
    {
        found.push(format!("bridge {}", local::PREFIX));
    }
    for dir in [local::RUN_DIR, local::DATA_DIR] {
        if std::path::Path::new(dir).exists() {
            found.push(dir.to_string());
        }
    }
    found.extend(lines("iptables", &["-S", "FORWARD"], local::PREFIX, ""));
    found.extend(lines("ps", &["-eo", "args"], local::RUN_DIR, "process "));
    found
}

/// This test's turn at the engine and the swarm, with no local swarm up, the host's engine and
/// on it the small image the swarm gets (iperf3's).
async fn no_swarm_yet() -> ([std::fs::File; 2], Engine) {
    let locks = [engine_lock(false), swarm_lock()];
    assert_eq!(
        remains(),
        Vec::<String>::new(),
        "a local swarm was already up"
    );
    let host = Engine::connect("swarm-test").await.unwrap();
    perf_tests::images::recipe::ensure(&host, &perf_tests::ceiling::recipe(), false)
        .await
        .unwrap();
    (locks, host)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_local_swarm_of_three_nodes_carries_traffic_between_nodes_and_goes_away_whole() {
    let (_locks, host) = no_swarm_yet().await;
    let image = perf_tests::ceiling::IMAGE;

    // Refusals before anything is made.
    let out = swarm(&["local", "--nodes", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--nodes 2"),
        "{}",
        text(&out.stderr)
    );
    let out = swarm(&["local", "--image", "perf-tests/no-such-image:1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("--image perf-tests/no-such-image:1: no such image"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(remains(), Vec::<String>::new());

    // The default images: the suite's, the network ceiling's and the workload's.
    let out = swarm(&["local", "--nodes", "3"]);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!("DOCKER_HOST={}", local::manager_host())),
        "{stdout}"
    );

    // Three ready nodes, the first the manager, labelled in order.
    let manager_engine = Engine::connect_at(&local::manager_host(), "swarm-test")
        .await
        .unwrap();
    let mut nodes = manager_engine.swarm_nodes().await.unwrap();
    nodes.sort_by(|a, b| a.hostname.cmp(&b.hostname));
    let seen: Vec<(String, bool, bool, Option<String>)> = nodes
        .iter()
        .map(|n| {
            (
                n.hostname.clone(),
                n.manager,
                n.ready,
                n.labels.get(perf_tests::swarm::ROLE_LABEL).cloned(),
            )
        })
        .collect();
    let expected: Vec<(String, bool, bool, Option<String>)> = (1..=3)
        .map(|i| {
            (
                Node(i).name(),
                i == 1,
                true,
                Node(i).role().map(str::to_string),
            )
        })
        .collect();
    assert_eq!(seen, expected);

    // Each image on each node with the host's image id, said once per node; copying again
    // finds it there.
    let suite =
        perf_tests::scenario::Suite::load(&common::repo().join("scenarios/kroxylicious")).unwrap();
    let recipes =
        perf_tests::images::recipe::parse_recipes(&suite.images_file, &suite.images).unwrap();
    let mut images: Vec<String> = recipes.into_iter().map(|r| r.image).collect();
    images.push(image.to_string());
    let said: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("swarm: ")?.split(" on ").next())
        .filter(|i| i.starts_with("perf-tests/workload:"))
        .collect();
    assert_eq!(said.len(), 3, "the workload image once per node: {stderr}");
    images.push(said[0].to_string());
    let mut ids = Vec::new();
    for image in &images {
        let id = host.image_id(image).await.unwrap();
        assert!(id.is_some(), "{image} on the host");
        ids.push(id);
    }
    for i in 1..=3 {
        let node = Engine::connect_at(&Node(i).host(), "swarm-test")
            .await
            .unwrap();
        for (image, id) in images.iter().zip(&ids) {
            assert_eq!(
                &node.image_id(image).await.unwrap(),
                id,
                "{image} on node {i}"
            );
            let line = format!("swarm: {image} on {}: copied", Node(i).name());
            assert!(stderr.contains(&line), "{line} in {stderr}");
        }
        assert!(!host.copy_image_to(&node, image).await.unwrap());
    }

    // A second swarm is refused while this one is up, and this one is untouched.
    let out = swarm(&["local", "--image", image]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("a local swarm is already up"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(manager_engine.swarm_nodes().await.unwrap().len(), 3);

    // iperf3 from the load node to the broker node across an overlay network, by name.
    manager(&["network", "create", "-d", "overlay", "--attachable", "net"]);
    let service = |name: &str, role: &str, args: &[&str]| {
        let mut a = vec![
            "service",
            "create",
            "-d",
            "-q",
            // The image is each node's own: there is no registry to resolve it at.
            "--no-resolve-image",
            "--name",
            name,
            "--network",
            "net",
            "--endpoint-mode",
            "dnsrr",
            "--restart-condition",
            "none",
            "-e",
            "TMPDIR=/",
        ];
        let constraint = format!("node.labels.{}=={role}", perf_tests::swarm::ROLE_LABEL);
        a.extend(["--constraint", &constraint, image]);
        a.extend(args);
        manager(&a);
    };
    service("server", "broker", &["-s"]);
    service("client", "load", &["-c", "server", "-t", "1", "-J"]);
    let since = Instant::now();
    let state = loop {
        let state = manager(&["service", "ps", "client", "--format", "{{.CurrentState}}"]);
        if ["Complete", "Failed", "Rejected"]
            .iter()
            .any(|s| state.starts_with(s))
        {
            break state;
        }
        assert!(
            since.elapsed() < Duration::from_secs(120),
            "the client did not finish: {state}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(state.starts_with("Complete"), "{state}");
    let placed = manager(&[
        "service",
        "ps",
        "server",
        "client",
        "--format",
        "{{.Name}} {{.Node}}",
    ]);
    let mut placed: Vec<&str> = placed.lines().collect();
    placed.sort();
    assert_eq!(placed, ["client.1 pt-swarm-3", "server.1 pt-swarm-1"]);
    let logs = manager(&["service", "logs", "--raw", "client"]);
    let report: serde_json::Value =
        serde_json::from_str(&logs).unwrap_or_else(|e| panic!("{e}: {logs}"));
    let received = report["end"]["sum_received"]["bytes"].as_f64().unwrap();
    assert!(received > 0.0, "{logs}");

    // Down takes everything, the services' containers with their daemons; a second down finds
    // nothing.
    let out = swarm(&["down"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(remains(), Vec::<String>::new());
    let out = swarm(&["down"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stderr).contains("no local swarm on this host"));
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_while_the_swarm_is_made_removes_what_was_made() {
    let _locks = no_swarm_yet().await;
    let mut child = common::bin()
        .args(["swarm", "local", "--image", perf_tests::ceiling::IMAGE])
        .env_remove("DOCKER_HOST")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once the second node's daemon is being started.
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
    let mut said = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        said.push(line.clone());
        if line.contains(&format!("starting node {}", Node(2).name())) {
            break;
        }
    }
    assert!(said.last().unwrap().contains("starting node"), "{said:?}");
    common::send("INT", &child);
    said.extend(lines.map(|l| l.unwrap()));
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{said:?}");
    assert!(
        said.iter().any(|l| l.contains("interrupted by SIGINT")),
        "{said:?}"
    );
    assert_eq!(remains(), Vec::<String>::new(), "{said:?}");
}
