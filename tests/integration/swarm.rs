//! `perf-tests swarm local` and `down` for real: three Docker daemons in network namespaces of
//! this machine made into a swarm, labelled by role, the images copied onto each with no
//! registry or carried through the registry `--with-registry` serves, traffic between two nodes
//! over an overlay network, runs across the nodes, every refusal, Ctrl-C while the swarm is being
//! made, and nothing of it left afterwards.

use crate::common;
use common::engine_lock;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use perf_tests::world::engine::Engine;
use perf_tests::world::swarm::local::{self, Node};

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

/// The environment that reaches the engine at `host` as the docker CLI reads it: a local
/// swarm's node (`tcp://`) over TLS with the swarm's client certificate.
fn engine_env(host: &str) -> Vec<(&'static str, String)> {
    let mut env = vec![("DOCKER_HOST", host.to_string())];
    if host.starts_with("tcp://") {
        env.push(("DOCKER_TLS_VERIFY", "1".into()));
        env.push((
            "DOCKER_CERT_PATH",
            local::client_certs().display().to_string(),
        ));
    }
    env
}

/// The `docker` CLI against the engine at `host`; its stdout, the command having succeeded.
fn docker_at(host: &str, args: &[&str]) -> String {
    let out = Command::new("docker")
        .args(args)
        .envs(engine_env(host))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "docker {args:?} at {host}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The `docker` CLI against the swarm's manager.
fn manager(args: &[&str]) -> String {
    docker_at(&local::manager_host(), args)
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

/// A test's turn at the engine and the swarm: a test that fails takes its swarm down before the
/// next test's turn, so one failure stays one (the next would find a swarm up).
struct Turn {
    _locks: [std::fs::File; 2],
}

impl Drop for Turn {
    fn drop(&mut self) {
        if std::thread::panicking() && !remains().is_empty() {
            let out = swarm(&["down"]);
            eprintln!("after the failure, swarm down: {}", text(&out.stderr));
        }
    }
}

/// This test's turn at the engine and the swarm, with no local swarm up, the host's engine and
/// on it the small image the swarm gets (iperf3's).
async fn no_swarm_yet() -> (Turn, Engine) {
    let turn = Turn {
        _locks: [engine_lock(false), swarm_lock()],
    };
    let found = remains();
    if !found.is_empty() {
        // Not this test's swarm: left as found for whoever made it.
        std::mem::forget(turn);
        panic!("a local swarm was already up: {found:?}");
    }
    let host = Engine::connect("swarm-test").await.unwrap();
    perf_tests::world::images::recipe::ensure(&host, &perf_tests::world::ceiling::recipe(), false)
        .await
        .unwrap();
    (turn, host)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_local_swarm_of_three_nodes_answers_only_over_tls_carries_traffic_and_goes_away_whole() {
    let (_locks, host) = no_swarm_yet().await;
    let image = perf_tests::world::ceiling::IMAGE;

    // Refusals before anything is made.
    let out = swarm(&["local", "--nodes", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--nodes 2"),
        "{}",
        text(&out.stderr)
    );
    // Copying images and serving them from a registry exclude each other; the registry flag is
    // the subcommand's own, not the REGISTRY setting's `--registry`.
    let out = swarm(&["local", "--with-registry", "--image", image]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let said = text(&out.stderr);
    assert!(
        said.contains("--with-registry") && said.contains("--image"),
        "{said}"
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
    let manager_engine = Engine::connect_to(&Node(1).engine_address(), "swarm-test")
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
                n.labels.get(perf_tests::world::swarm::ROLE_LABEL).cloned(),
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
        perf_tests::world::images::recipe::parse_recipes(&suite.images_file, &suite.images)
            .unwrap();
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
        let node = Engine::connect_to(&Node(i).engine_address(), "swarm-test")
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

    // The nodes' engines answer on the network with TLS both ways, and nothing else gets in:
    // each way in that fails is named with the address or the file at fault.
    let doctor = |env: &[(&str, String)]| -> String {
        let mut cmd = common::bin();
        cmd.arg("doctor")
            .env_remove("DOCKER_TLS_VERIFY")
            .env_remove("DOCKER_CERT_PATH")
            .env_remove("ENGINE_PLAIN_TCP");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        format!("{}{}", text(&out.stdout), text(&out.stderr))
    };
    let node_1 = local::manager_host();
    let at = ("DOCKER_HOST", node_1.clone());
    let said = doctor(std::slice::from_ref(&at));
    assert!(
        said.contains(&format!(
            "DOCKER_HOST={node_1}: a plain TCP engine address that is not loopback"
        )) && said.contains("ENGINE_PLAIN_TCP=1"),
        "{said}"
    );
    let said = doctor(&[at.clone(), ("ENGINE_PLAIN_TCP", "1".into())]);
    assert!(
        said.contains(&format!("the engine at {node_1} speaks TLS")),
        "{said}"
    );
    // Another CA's files: the engine's certificate is not vouched for; with the swarm's CA but
    // another CA's client certificate, the engine refuses the client.
    let other_ca = perf_tests::world::tls::Ca::new("another CA", 1).unwrap();
    let other = tempfile::tempdir().unwrap();
    perf_tests::world::tls::write_engine_dir(
        other.path(),
        &other_ca,
        perf_tests::world::tls::Usage::Client,
        "intruder",
        &[],
        &[],
    )
    .unwrap();
    let tls = |dir: &std::path::Path| {
        [
            at.clone(),
            ("DOCKER_TLS_VERIFY", "1".to_string()),
            ("DOCKER_CERT_PATH", dir.display().to_string()),
        ]
    };
    let said = doctor(&tls(other.path()));
    assert!(
        said.contains(&format!(
            "presented a certificate {} does not vouch for",
            other.path().join("ca.pem").display()
        )),
        "{said}"
    );
    std::fs::copy(
        local::client_certs().join("ca.pem"),
        other.path().join("ca.pem"),
    )
    .unwrap();
    let said = doctor(&tls(other.path()));
    assert!(
        said.contains(&format!(
            "refused the client certificate {}",
            other.path().join("cert.pem").display()
        )),
        "{said}"
    );
    let said = doctor(&tls(&local::client_certs()));
    assert!(
        said.contains(&node_1) && !said.contains("cannot reach"),
        "{said}"
    );

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
        let constraint = format!(
            "node.labels.{}=={role}",
            perf_tests::world::swarm::ROLE_LABEL
        );
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
        .args([
            "swarm",
            "local",
            "--image",
            perf_tests::world::ceiling::IMAGE,
        ])
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

/// `perf-tests run` of the default suite against the local swarm's manager (or `host`), with
/// `env`; its outcome.
fn run_on(host: &str, results: &std::path::Path, env: &[(&str, &str)]) -> Output {
    common::perf_tests_run(results)
        .envs(engine_env(host))
        .env("NUM_RECORDS", "5000")
        .env("NETWORK_CEILING", "1")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// The nodes of the swarm the default suite's test makes: one each for the broker and the
/// proxy, two for load generators.
const NODES: usize = 4;

/// What the runner made that is still on the swarm: every node's managed containers, the
/// manager's managed services, configs and networks.
fn left_on_the_swarm() -> Vec<String> {
    let on = |host: &str, args: &[&str]| -> Vec<String> {
        let mut args = args.to_vec();
        args.extend(["--filter", "label=io.perf-tests.managed=true", "-q"]);
        docker_at(host, &args)
            .lines()
            .map(|l| format!("{host} {} {l}", args[0]))
            .collect()
    };
    let manager = local::manager_host();
    let mut left = Vec::new();
    // Every node the swarm has (a node's engine socket is there while it runs).
    for i in (1..=local::MAX_NODES).filter(|&i| Node(i).socket().exists()) {
        left.extend(on(&Node(i).host(), &["ps", "-a"]));
    }
    for what in ["service", "config", "network"] {
        left.extend(on(&manager, &[what, "ls"]));
    }
    left
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_suite_runs_across_a_local_swarm_with_the_load_generator_on_a_node_of_its_own()
{
    let (_locks, _host) = no_swarm_yet().await;
    let results = tempfile::tempdir().unwrap();
    let engine_host = "unix:///var/run/docker.sock";

    // An engine in no swarm is refused, naming the setting and what to do.
    let out = run_on(engine_host, results.path(), &[("ENGINE", "swarm")]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(
            "ENGINE=swarm: the engine at unix:///var/run/docker.sock (DOCKER_HOST) is in no swarm"
        ),
        "{}",
        text(&out.stderr)
    );

    let out = swarm(&["local", "--nodes", &NODES.to_string(), "--with-registry"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let registry = local::registry_address();
    assert!(
        text(&out.stdout).contains(&format!("REGISTRY={registry}")),
        "{}",
        text(&out.stdout)
    );
    // The fourth node a second load node, labelled as an operator would.
    manager(&[
        "node",
        "update",
        "--label-add",
        "perf-tests.role=load",
        "pt-swarm-4",
    ]);
    let manager = local::manager_host();

    // Refused before anything starts, with nothing left on any node: a worker, the load
    // generator beside the path, a role no node carries.
    // (DOCKER_HOST, settings, what the error says)
    type Refusal<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
    let refusals: [Refusal; 3] = [
        (
            &Node(2).host(),
            &[("ENGINE", "swarm")],
            "(DOCKER_HOST) is a swarm worker",
        ),
        (
            &manager,
            &[("ENGINE", "swarm"), ("SWARM_ROLES", "load=proxy")],
            "the load generator (role proxy) could run on swarm node pt-swarm-2, which may also \
             run service",
        ),
        (
            &manager,
            &[("ENGINE", "swarm"), ("SWARM_ROLES", "kms=gpu")],
            "service \"kms\" is placed on role gpu (SWARM_ROLES), but no ready node of the swarm \
             carries perf-tests.role=gpu",
        ),
    ];
    for (host, env, said) in refusals {
        let out = run_on(host, results.path(), env);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{env:?}: {stderr}");
        assert!(stderr.contains(said), "{env:?}: {stderr}");
        assert!(!stderr.contains("==> starting"), "{env:?}: {stderr}");
        assert_eq!(left_on_the_swarm(), Vec::<String>::new(), "{env:?}");
    }
    for entry in std::fs::read_dir(results.path()).unwrap() {
        std::fs::remove_dir_all(entry.unwrap().path()).unwrap();
    }

    // The default suite, every scenario, across the three nodes.
    let out = run_on(&manager, results.path(), &[("ENGINE", "swarm")]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let run = common::only_run(results.path());
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(info["settings"]["engine"], "swarm");
    // Each node's machine with the role the run gave it, as the node's engine and this
    // machine's own tools (the local swarm's nodes share this machine) describe it.
    let nodes = info["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 4, "{nodes:?}");
    for (i, role) in [(1, "broker"), (2, "proxy"), (3, "load"), (4, "load")] {
        let node = &nodes[i - 1];
        assert_eq!(node["name"], format!("pt-swarm-{i}"), "{nodes:?}");
        let version = docker_at(
            &Node(i).host(),
            &["version", "--format", "{{.Server.Version}}"],
        );
        common::assert_node_is_this_machine(node, version.trim(), &[role]);
    }
    let scenarios = [
        ("01-no-proxy-baseline", None),
        ("02-no-filters", Some("kroxylicious-no-filters")),
        ("03-transform-filter", Some("kroxylicious-transform-filter")),
        (
            "04-envelope-encryption-filter",
            Some("kroxylicious-envelope-encryption-filter"),
        ),
        (
            "05-envelope-encryption-filter-no-encrypt",
            Some("kroxylicious-envelope-encryption-filter-no-encrypt"),
        ),
    ];
    for (scenario, proxy) in scenarios {
        let result: serde_json::Value =
            serde_json::from_slice(&std::fs::read(run.join(format!("{scenario}.json"))).unwrap())
                .unwrap();
        let check = &result["path_check"];
        assert!(
            check["records"].as_u64().unwrap() > 0,
            "{scenario}: {check}"
        );
        assert_eq!(check["broker_ok"], check["records"], "{scenario}: {check}");
        // The network's ceiling on each hop, between the nodes each end ran on.
        let hops: Vec<(&str, &str, &str, &str)> = match proxy {
            None => vec![("load generator", "pt-swarm-3", "broker1", "pt-swarm-1")],
            Some(proxy) => vec![
                ("load generator", "pt-swarm-3", proxy, "pt-swarm-2"),
                (proxy, "pt-swarm-2", "broker1", "pt-swarm-1"),
            ],
        };
        let network = result["network"].as_array().unwrap();
        let measured: Vec<(&str, &str, &str, &str)> = network
            .iter()
            .map(|n| {
                assert!(n["mib_s"].as_f64().unwrap() > 0.0, "{scenario}: {n}");
                let s = |k: &str| n[k].as_str().unwrap();
                (s("from"), s("from_node"), s("to"), s("to_node"))
            })
            .collect();
        assert_eq!(measured, hops, "{scenario}");
        assert_eq!(
            check["consumer_ok"], check["records"],
            "{scenario}: {check}"
        );
        // Each service on its role's node, the load generator on the load node alone.
        let resources = &result["resources"];
        let node = |service: &str| common::service_entry(resources, service)["node"].clone();
        assert_eq!(node("broker1"), "pt-swarm-1", "{scenario}: {resources}");
        assert_eq!(
            node("workload (load generator)"),
            "pt-swarm-3",
            "{scenario}: {resources}"
        );
        if let Some(proxy) = proxy {
            assert_eq!(node(proxy), "pt-swarm-2", "{scenario}: {resources}");
        }
        for service in resources.as_array().unwrap() {
            if service["service"] != "workload (load generator)" {
                assert_ne!(service["node"], "pt-swarm-3", "{scenario}: {resources}");
                assert_ne!(service["node"], "pt-swarm-4", "{scenario}: {resources}");
            }
        }
    }
    assert!(
        std::fs::read_to_string(run.join("tables.txt"))
            .unwrap()
            .contains("pt-swarm-2"),
        "the Resources table names the nodes"
    );
    let tables = std::fs::read_to_string(run.join("tables.txt")).unwrap();
    assert!(
        tables.contains("load generator on pt-swarm-3"),
        "the Network Ceiling table names each end's node: {tables}"
    );
    let report = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(
        report.contains("<td class=\"name\">pt-swarm-2</td><td>containers (proxy)</td>"),
        "report.html lists the machines with their roles"
    );
    assert_eq!(left_on_the_swarm(), Vec::<String>::new());

    // The proxy profiled on its node, two load generators on the two load nodes, each pinned to
    // a CPU of its node, their figures merged; a CPU a load node lacks refused naming it,
    // before anything starts.
    let cpus = text(&Command::new("nproc").output().unwrap().stdout);
    let missing = cpus.trim().to_string();
    let out = run_on(
        &manager,
        results.path(),
        &[
            ("ENGINE", "swarm"),
            ("TEST", "02-.*"),
            ("WORKLOAD_CPUSET", &missing),
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "WORKLOAD_CPUSET=\"{missing}\": CPU {missing} does not exist; swarm node \
             pt-swarm-3, load generator 1's, has {missing} CPUs"
        )),
        "{stderr}"
    );
    assert_eq!(left_on_the_swarm(), Vec::<String>::new());
    let profiled = tempfile::tempdir().unwrap();
    let mut run = common::perf_tests_run(profiled.path());
    run.envs(engine_env(&manager)).envs([
        ("ENGINE", "swarm"),
        ("TEST", "02-.*"),
        ("NUM_RECORDS", "5000"),
        ("NETWORK_CEILING", "0"),
        ("PROFILE", "cpu"),
        ("WORKLOAD_CPUSET", "1"),
        ("LOAD_GENERATORS", "2"),
        ("PRODUCERS", "2"),
        ("CONSUMERS", "2"),
        ("PARTITIONS", "2"),
    ]);
    let started = common::start_run(run, |l| l.starts_with("==> 02-no-filters"));
    let pinned = |node: usize| {
        let label = "label=io.perf-tests.service=workload";
        let host = Node(node).host();
        docker_at(&host, &["ps", "-q", "--filter", label])
            .lines()
            .any(|id| {
                let format = "{{.HostConfig.CpusetCpus}}";
                docker_at(&host, &["inspect", "--format", format, id]).trim() == "1"
            })
    };
    common::wait_for(
        "a load generator pinned to CPU 1 on each load node",
        Duration::from_secs(120),
        || pinned(3) && pinned(4),
    );
    let said: Vec<String> = started.lines.map(|l| l.unwrap()).collect();
    let mut child = started.child;
    assert_eq!(child.wait().unwrap().code(), Some(0), "{said:?}");
    let run = common::only_run(profiled.path());
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("02-no-filters.json")).unwrap()).unwrap();
    // Each load generator on its load node; every record counted once across them, the
    // latencies of all of them in one histogram.
    let resources = &result["resources"];
    let node = |service: &str| common::service_entry(resources, service)["node"].clone();
    assert_eq!(
        node("workload (load generator) 1"),
        "pt-swarm-3",
        "{resources}"
    );
    assert_eq!(
        node("workload (load generator) 2"),
        "pt-swarm-4",
        "{resources}"
    );
    let rep = &result["repetitions"][0];
    assert_eq!(rep["producer"]["sent"], 5000, "{}", rep["producer"]);
    assert_eq!(
        rep["consumer"]["consumed_recs"], 5000,
        "{}",
        rep["consumer"]
    );
    assert_eq!(
        rep["consumer"]["per_client"].as_array().unwrap().len(),
        2,
        "{}",
        rep["consumer"]
    );
    assert_eq!(
        rep["integrity"]["end_offsets"], 5000,
        "{}",
        rep["integrity"]
    );
    let send = rep["producer"]["histograms"]["send"].as_str().unwrap();
    assert_eq!(
        perf_tests::workload::latency::decode(send).unwrap().len(),
        5000
    );
    let recorded = result["repetitions"][0]["profiles"].as_array().unwrap();
    let phases: Vec<(&str, &str)> = recorded
        .iter()
        .map(|r| (r["service"].as_str().unwrap(), r["phase"].as_str().unwrap()))
        .collect();
    assert_eq!(
        phases,
        [
            ("kroxylicious-no-filters", "produce"),
            ("kroxylicious-no-filters", "consume")
        ]
    );
    for r in recorded {
        // A JFR recording ("FLR\0"), brought back from the proxy's node.
        let bytes = std::fs::read(run.join("profiles").join(r["file"].as_str().unwrap())).unwrap();
        assert!(bytes.starts_with(b"FLR\0"), "{r}");
    }
    assert!(run
        .join("profiles/02-no-filters.kroxylicious-no-filters.produce.html")
        .is_file());
    assert_eq!(left_on_the_swarm(), Vec::<String>::new(), "{said:?}");

    // A registry no engine reaches is refused before any image is built or service made,
    // naming the setting; nothing is left.
    let unreachable = "10.213.0.1:5999";
    let refused = tempfile::tempdir().unwrap();
    let out = run_on(
        &manager,
        refused.path(),
        &[
            ("ENGINE", "swarm"),
            ("REGISTRY", unreachable),
            ("TEST", "02-.*"),
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "REGISTRY={unreachable}: the swarm's manager cannot push to it"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("==> building"), "{stderr}");
    assert!(!stderr.contains("==> starting"), "{stderr}");
    assert_eq!(left_on_the_swarm(), Vec::<String>::new());
    assert_eq!(std::fs::read_dir(refused.path()).unwrap().count(), 0);

    // Through the registry, with the proxy's image gone from its node: pushed once from the
    // manager and pulled by that node alone (the others have every image they need); nothing
    // exported and imported. The proxy killed on its node during the measurement ends the
    // phase, naming it.
    let proxy_image = "perf-tests/kroxylicious:0.12.0";
    docker_at(&Node(2).host(), &["rmi", proxy_image]);
    let mut run = common::perf_tests_run(results.path());
    run.envs(engine_env(&manager))
        .env("ENGINE", "swarm")
        .env("REGISTRY", &registry)
        .env("TEST", "02-.*")
        .env("NUM_RECORDS", "1000000")
        .env("THROUGHPUT", "20000");
    let started = common::start_run(run, |l| l.starts_with("==> 02-"));
    let proxy_node = Node(2).host();
    let proxy = || {
        let label = "label=io.perf-tests.service=kroxylicious-no-filters";
        docker_at(&proxy_node, &["ps", "-q", "--filter", label])
            .trim()
            .to_string()
    };
    // The measured phase's producer (its count names it) runs on the load node.
    common::wait_for(
        "the measured produce phase",
        Duration::from_secs(120),
        || {
            let out = Command::new("docker")
                .args([
                    "ps",
                    "-q",
                    "--filter",
                    "label=io.perf-tests.service=workload",
                ])
                .envs(engine_env(&Node(3).host()))
                .output()
                .unwrap();
            text(&out.stdout).lines().any(|id| {
                let top = Command::new("docker")
                    .args(["top", id, "-eo", "pid,args"])
                    .envs(engine_env(&Node(3).host()))
                    .output()
                    .unwrap();
                text(&top.stdout)
                    .lines()
                    .any(|l| l.contains("workload produce ") && l.contains("--num-records 1000000"))
            })
        },
    );
    docker_at(&proxy_node, &["kill", &proxy()]);
    let mut said = started.before;
    said.extend(started.lines.map(|l| l.unwrap()));
    let mut child = started.child;
    assert_eq!(child.wait().unwrap().code(), Some(1), "{said:?}");
    let error = said.join("\n");
    assert!(
        error.contains("stopped during the measurement")
            && error.contains("service \"kroxylicious-no-filters\"")
            && error.contains("exited with code 137"),
        "{error}"
    );
    assert_eq!(left_on_the_swarm(), Vec::<String>::new(), "{said:?}");
    let remote = format!("{registry}/{proxy_image}");
    let pushed: Vec<&String> = said.iter().filter(|l| l.contains("pushed image")).collect();
    assert_eq!(pushed.len(), 1, "{said:?}");
    assert!(
        pushed[0].ends_with(&format!("pushed image {proxy_image} as {remote}")),
        "{said:?}"
    );
    let pulled: Vec<&String> = said.iter().filter(|l| l.contains("pulled image")).collect();
    assert_eq!(pulled.len(), 1, "{said:?}");
    assert!(
        pulled[0].ends_with(&format!("pulled image {remote} on swarm node pt-swarm-2")),
        "{said:?}"
    );
    assert!(!error.contains("copied image"), "{error}");
    // The proxy node's image is the manager's, by id, and came from the registry.
    let id = |host: &str| docker_at(host, &["image", "inspect", "-f", "{{.Id}}", proxy_image]);
    assert_eq!(id(&Node(2).host()), id(&manager));
    let digests = docker_at(
        &Node(2).host(),
        &[
            "image",
            "inspect",
            "-f",
            "{{json .RepoDigests}}",
            proxy_image,
        ],
    );
    assert!(
        digests.contains(&format!("{registry}/perf-tests/kroxylicious@sha256:")),
        "{digests}"
    );

    // Ctrl-C while the proxy's service is being made: exit 130 and nothing left on any node.
    // Its images were on the nodes already: the registry moved none.
    let mut run = common::perf_tests_run(results.path());
    run.envs(engine_env(&manager))
        .env("ENGINE", "swarm")
        .env("REGISTRY", &registry)
        .env("TEST", "02-.*")
        .env("NUM_RECORDS", "5000");
    let started = common::start_run(run, |l| l.starts_with("==> 02-no-filters"));
    common::send("INT", &started.child);
    let mut said = started.before;
    said.extend(started.lines.map(|l| l.unwrap()));
    let mut child = started.child;
    assert_eq!(child.wait().unwrap().code(), Some(130), "{said:?}");
    assert_eq!(left_on_the_swarm(), Vec::<String>::new(), "{said:?}");
    let moved = |l: &&String| l.contains("pulled image") || l.contains("pushed image");
    assert_eq!(said.iter().filter(moved).count(), 0, "{said:?}");

    let out = swarm(&["down"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(remains(), Vec::<String>::new());
}
