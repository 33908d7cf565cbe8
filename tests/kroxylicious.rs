//! The kroxylicious suite (scenarios/kroxylicious) and the kafka-tools driver: dry-run plans,
//! the Compose file and proxy configurations, a run whose images cannot be pulled (against the
//! real engine), and the native end-offset count the driver relies on (against a real broker).

mod common;
use common::{engine_lock, leftovers, repo, SETTING_VARS};

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};

use perf_tests::compose;
use perf_tests::plan::{self, Plan};
use perf_tests::scenario::Step;
use perf_tests::settings::Settings;
use serde_yaml::Value;

const SUITE: &str = "scenarios/kroxylicious";

/// Images no engine has and no registry serves (`.invalid` never resolves).
const IMAGES: [(&str, &str); 4] = [
    (
        "KAFKA_IMAGE",
        "registry.invalid/perf-tests-test/kafka-native:absent",
    ),
    (
        "KROXYLICIOUS_IMAGE",
        "registry.invalid/perf-tests-test/kroxylicious:absent",
    ),
    (
        "VAULT_IMAGE",
        "registry.invalid/perf-tests-test/vault:absent",
    ),
    (
        "KAFKA_TOOL_IMAGE",
        "registry.invalid/perf-tests-test/strimzi-kafka:absent",
    ),
];

/// The scenarios as the reference names them, with the endpoint, the per-scenario services and
/// the proxy service whose configuration is the scenario's own file.
const SCENARIOS: [(&str, &str, &[&str]); 5] = [
    ("01-no-proxy-baseline", "broker1:9092", &[]),
    (
        "02-no-filters",
        "kroxylicious:9092",
        &["kroxylicious-no-filters"],
    ),
    (
        "03-transform-filter",
        "kroxylicious:9092",
        &["kroxylicious-transform-filter"],
    ),
    (
        "04-envelope-encryption-filter",
        "kroxylicious:9092",
        &["vault", "kroxylicious-envelope-encryption-filter"],
    ),
    (
        "05-envelope-encryption-filter-no-encrypt",
        "kroxylicious:9092",
        &[
            "vault",
            "kroxylicious-envelope-encryption-filter-no-encrypt",
        ],
    ),
];

fn perf_tests(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_perf-tests"));
    cmd.args(args).current_dir(repo());
    for var in SETTING_VARS {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied());
    cmd.output().expect("perf-tests starts")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn settings() -> Settings {
    Settings {
        scenarios: repo().join(SUITE),
        commit_id: "test".into(),
        ..Settings::default()
    }
}

fn load_plan() -> Plan {
    plan::plan(&settings(), "test-run").expect("the suite plans")
}

fn load_project() -> compose::Project {
    let plan = load_plan();
    compose::load(&plan.suite.compose, &settings().variables()).expect("the Compose file loads")
}

/// The lines of a dry run's block for one scenario.
fn scenario_block<'a>(plan: &'a str, name: &str) -> &'a str {
    let start = plan
        .find(&format!("Scenario {name}:"))
        .unwrap_or_else(|| panic!("{name} not in plan:\n{plan}"));
    let rest = &plan[start..];
    let end = rest[1..]
        .find("\nScenario ")
        .or_else(|| rest.find("\nServices"))
        .map(|i| i + 1)
        .unwrap_or(rest.len());
    &rest[..end]
}

fn field<'a>(block: &'a str, key: &str) -> &'a str {
    let prefix = format!("    {key}: ");
    block
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("{key} not in\n{block}"))
}

#[test]
fn dry_run_plans_all_five_scenarios_with_images_from_the_settings() {
    let mut env: Vec<(&str, &str)> = IMAGES.to_vec();
    env.push(("SCENARIOS", SUITE));
    env.push(("DRIVER", "kafka-tools"));
    let out = perf_tests(&["run", "--dry-run"], &env);
    let plan = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{plan}\nstderr:\n{}",
        text(&out.stderr)
    );
    assert!(
        plan.contains("Selected scenarios (TEST=[0-9][0-9]-.*): 01-no-proxy-baseline, 02-no-filters, 03-transform-filter, 04-envelope-encryption-filter, 05-envelope-encryption-filter-no-encrypt"),
        "{plan}"
    );
    assert!(
        plan.contains(
            "  services: broker1\n  bootstrap: broker1:9092\n  ready: broker1 at broker1:9092\n"
        ),
        "{plan}"
    );

    for (name, endpoint, services) in SCENARIOS {
        let block = scenario_block(&plan, name);
        assert_eq!(field(block, "bootstrap"), endpoint, "{block}");
        assert_eq!(
            field(block, "topic"),
            format!("perf-tests-{name}"),
            "{block}"
        );
        assert_eq!(field(block, "run-wide services"), "used", "{block}");
        let expected = if services.is_empty() {
            "(none)".to_string()
        } else {
            services.join(", ")
        };
        assert_eq!(field(block, "services"), expected, "{block}");
        if let Some(proxy) = services.last() {
            assert_eq!(
                field(block, "ready"),
                format!("{proxy} at kroxylicious:9092"),
                "{block}"
            );
        }
    }
    let setup = |name: &str| -> Vec<&str> {
        scenario_block(&plan, name)
            .lines()
            .skip_while(|l| !l.starts_with("    setup:"))
            .skip(1)
            .take_while(|l| l.starts_with("      - "))
            .collect()
    };
    assert_eq!(
        setup("04-envelope-encryption-filter"),
        [
            r#"      - exec in vault: ["vault", "secrets", "enable", "transit"]"#,
            r#"      - exec in vault: ["vault", "write", "-f", "transit/keys/KEK_perf-tests-04-envelope-encryption-filter"]"#,
        ]
    );
    assert_eq!(
        setup("05-envelope-encryption-filter-no-encrypt"),
        [r#"      - exec in vault: ["vault", "secrets", "enable", "transit"]"#]
    );
    for name in [
        "01-no-proxy-baseline",
        "02-no-filters",
        "03-transform-filter",
    ] {
        assert_eq!(field(scenario_block(&plan, name), "setup"), "(none)");
    }

    // Every service resolves to the image its setting names.
    let services = &plan[plan.find("Services (resolved").expect("services section")..];
    let image_of = |service: &str| -> &str {
        let at = services
            .find(&format!("\n  {service} ["))
            .unwrap_or_else(|| panic!("{service} not in\n{services}"));
        services[at..]
            .lines()
            .find_map(|l| l.strip_prefix("    image: "))
            .unwrap()
    };
    assert_eq!(image_of("broker1"), IMAGES[0].1);
    assert_eq!(image_of("vault"), IMAGES[2].1);
    for (name, _, scenario_services) in &SCENARIOS[1..] {
        let proxy = scenario_services.last().unwrap();
        assert_eq!(image_of(proxy), IMAGES[1].1);
        let at = services.find(&format!("\n  {proxy} [")).unwrap();
        let entry: Vec<&str> = services[at + 1..]
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("    "))
            .collect();
        assert!(entry.contains(&"    aliases: kroxylicious"), "{entry:?}");
        let mount = format!(
            "    mount: {} -> /opt/kroxylicious/config/config.yaml (read-only)",
            repo()
                .join(SUITE)
                .join(name)
                .join("proxy-config.yaml")
                .display()
        );
        assert!(entry.contains(&mount.as_str()), "{mount} in {entry:?}");
    }
    assert!(
        services.contains(&format!(
            "Driver: kafka-tools ({}, chosen by KAFKA_TOOL_IMAGE",
            IMAGES[3].1
        )),
        "{services}"
    );
}

#[test]
fn each_scenario_plans_on_its_own() {
    for (name, _, services) in SCENARIOS {
        let out = perf_tests(
            &["run", "--dry-run", "--scenarios", SUITE, "--test", name],
            &[],
        );
        let plan = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
        assert!(plan.contains(&format!("Selected scenarios (TEST={name}): {name}\n")));
        let section = &plan[plan.find("Services (resolved").unwrap()..];
        let listed: Vec<&str> = section
            .lines()
            .filter_map(|l| l.strip_prefix("  "))
            .filter(|l| !l.starts_with(' '))
            .filter_map(|l| l.split(" [").next())
            .collect();
        let mut expected = vec!["broker1"];
        expected.extend(services.iter().copied());
        assert_eq!(listed, expected, "{name}:\n{section}");
        assert!(section.contains("Driver: native"), "{section}");
    }
}

#[test]
fn compose_file_knows_every_service_the_suite_names() {
    let plan = load_plan();
    let project = load_project();
    let mut named: Vec<String> = plan.suite.services.clone();
    for p in &plan.scenarios {
        named.extend(p.scenario.services.iter().cloned());
        named.extend(p.scenario.ready.keys().cloned());
        for step in p.scenario.setup.iter().chain(&p.scenario.teardown) {
            let Step::Exec { service, .. } = step;
            named.push(service.clone());
        }
    }
    named.extend(plan.suite.ready.keys().cloned());
    for service in &named {
        assert!(
            project.services.contains_key(service),
            "{service} is named by the suite but not in {:?}",
            project.files
        );
    }
    // Nothing in the file is unused.
    for service in project.services.keys() {
        assert!(named.contains(service), "{service} is never used");
    }

    let broker = &project.services["broker1"];
    assert_eq!(broker.image, Settings::default().kafka_image);
    let env: BTreeMap<&str, &str> = broker
        .environment
        .iter()
        .filter_map(|kv| kv.split_once('='))
        .collect();
    assert_eq!(env["KAFKA_NODE_ID"], "1");
    assert_eq!(env["KAFKA_PROCESS_ROLES"], "broker,controller");
    assert_eq!(env["KAFKA_CONTROLLER_QUORUM_VOTERS"], "1@broker1:9094");
    assert_eq!(env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"], "1");
    assert!(
        env["KAFKA_ADVERTISED_LISTENERS"]
            .split(',')
            .any(|l| l == "PLAINTEXT://broker1:9092"),
        "{env:?}"
    );

    let vault = &project.services["vault"];
    assert_eq!(vault.image, Settings::default().vault_image);
    assert!(vault
        .environment
        .contains(&"VAULT_DEV_ROOT_TOKEN_ID=token".to_string()));
    assert_eq!(
        vault.healthcheck.as_ref().map(|h| h.test.clone()),
        Some(vec!["CMD".into(), "vault".into(), "status".into()])
    );

    // Each proxy: the Kroxylicious image, its own configuration file, the `kroxylicious` alias,
    // a health check, and the broker (and Vault, for encryption) started first.
    let mut configs = Vec::new();
    for (name, _, services) in &SCENARIOS[1..] {
        let proxy = &project.services[*services.last().unwrap()];
        assert_eq!(proxy.image, Settings::default().kroxylicious_image);
        assert_eq!(proxy.networks["default"], vec!["kroxylicious".to_string()]);
        assert!(proxy.healthcheck.is_some());
        assert!(proxy.depends_on.contains_key("broker1"));
        assert_eq!(proxy.depends_on.contains_key("vault"), services.len() == 2);
        assert_eq!(proxy.mounts.len(), 1, "{:?}", proxy.mounts);
        let mount = &proxy.mounts[0];
        assert_eq!(mount.target, "/opt/kroxylicious/config/config.yaml");
        assert_eq!(
            mount.source,
            repo().join(SUITE).join(name).join("proxy-config.yaml")
        );
        assert!(mount.source.is_file());
        configs.push(mount.source.clone());
    }
    configs.dedup();
    assert_eq!(
        configs.len(),
        4,
        "every scenario has its own proxy configuration"
    );
}

fn proxy_config(scenario: &str) -> Value {
    let path: PathBuf = repo().join(SUITE).join(scenario).join("proxy-config.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn filter_types(config: &Value) -> Vec<String> {
    config["filters"]
        .as_sequence()
        .expect("filters is a list")
        .iter()
        .map(|f| f["type"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn proxy_configurations_have_the_reference_filters() {
    for (name, _, _) in &SCENARIOS[1..] {
        let c = proxy_config(name);
        let cluster = &c["virtualClusters"]["demo"];
        assert_eq!(
            cluster["targetCluster"]["bootstrap_servers"],
            "broker1:9092"
        );
        let provider = &cluster["clusterNetworkAddressConfigProvider"];
        assert_eq!(
            provider["type"],
            "PortPerBrokerClusterNetworkAddressConfigProvider"
        );
        assert_eq!(provider["config"]["bootstrapAddress"], "kroxylicious:9092");
    }

    assert!(filter_types(&proxy_config("02-no-filters")).is_empty());

    let transform = proxy_config("03-transform-filter");
    assert_eq!(
        filter_types(&transform),
        [
            "ProduceRequestTransformationFilterFactory",
            "FetchResponseTransformationFilterFactory"
        ]
    );
    for f in transform["filters"].as_sequence().unwrap() {
        assert_eq!(f["config"]["transformation"], "UpperCasing");
        assert_eq!(f["config"]["transformationConfig"]["charset"], "UTF-8");
    }

    let encrypt = proxy_config("04-envelope-encryption-filter");
    assert_eq!(
        encrypt,
        proxy_config("05-envelope-encryption-filter-no-encrypt"),
        "05 measures the same filter as 04, with no key for its topic"
    );
    assert_eq!(filter_types(&encrypt), ["RecordEncryption"]);
    let config = &encrypt["filters"][0]["config"];
    assert_eq!(config["kms"], "VaultKmsService");
    assert_eq!(
        config["kmsConfig"]["vaultTransitEngineUrl"],
        "http://vault:8200/v1/transit"
    );
    assert_eq!(config["kmsConfig"]["vaultToken"]["password"], "token");
    assert_eq!(config["selector"], "TemplateKekSelector");
    let template = config["selectorConfig"]["template"].as_str().unwrap();
    assert_eq!(template, "KEK_${topicName}");

    // The key 04 creates is the one the selector picks for 04's topic; 05 creates none.
    let plan = load_plan();
    let keys = |name: &str| -> Vec<String> {
        let p = plan
            .scenarios
            .iter()
            .find(|p| p.scenario.name == name)
            .unwrap();
        p.scenario
            .setup
            .iter()
            .filter_map(|Step::Exec { command, .. }| {
                command
                    .iter()
                    .find_map(|a| a.strip_prefix("transit/keys/").map(String::from))
            })
            .collect()
    };
    let topic04 = "perf-tests-04-envelope-encryption-filter";
    assert_eq!(
        keys("04-envelope-encryption-filter"),
        [template.replace("${topicName}", topic04)]
    );
    assert!(keys("05-envelope-encryption-filter-no-encrypt").is_empty());
    // The Vault token of the proxy is the dev server's root token.
    let vault = &load_project().services["vault"];
    assert!(vault
        .environment
        .contains(&"VAULT_DEV_ROOT_TOKEN_ID=token".to_string()));
}

#[test]
fn driver_is_a_flag_and_a_variable() {
    let out = perf_tests(&["--help"], &[]);
    let help = text(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(help.contains("--driver <DRIVER>"), "{help}");
    assert!(help.contains("[env: DRIVER=] [default: native]"), "{help}");
    let out = perf_tests(
        &[
            "run",
            "--dry-run",
            "--scenarios",
            SUITE,
            "--driver",
            "kafka-tools",
        ],
        &[("DRIVER", "native")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plan = text(&out.stdout);
    assert!(
        plan.contains("  DRIVER=kafka-tools\n"),
        "the flag beats the variable:\n{plan}"
    );
}

#[test]
fn kafka_tools_refuses_client_properties() {
    let out = perf_tests(
        &[
            "run",
            "--dry-run",
            "--scenarios",
            "scenarios/offline",
            "--test",
            "03-tls",
        ],
        &[("DRIVER", "kafka-tools")],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("DRIVER=kafka-tools") && err.contains("03-tls/scenario.yaml"),
        "{err}"
    );
    let out = perf_tests(&["run", "--dry-run"], &[("DRIVER", "jmeter")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("DRIVER=\"jmeter\""),
        "{}",
        text(&out.stderr)
    );
}

fn run_id(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("==> run "))
        .unwrap_or_else(|| panic!("no run id in\n{stderr}"))
        .trim()
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn unpullable_images_stop_the_run_naming_each_image_and_setting() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let results_dir = results.path().to_str().unwrap();
    for (driver, expected) in [("kafka-tools", 4), ("native", 3)] {
        let mut env: Vec<(&str, &str)> = IMAGES.to_vec();
        env.extend([
            ("SCENARIOS", SUITE),
            ("DRIVER", driver),
            ("NUM_RECORDS", "100"),
            ("RESULTS_DIR", results_dir),
        ]);
        let out = perf_tests(&["run"], &env);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{driver}: {stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "one message: {stderr}");
        assert!(
            errors[0].contains(&format!("{expected} image(s) are not on the engine")),
            "{stderr}"
        );
        let message = &stderr[stderr.find("error:").unwrap()..];
        for (setting, image) in &IMAGES[..expected] {
            assert!(
                message.contains(&format!("  {image} (chosen by {setting})")),
                "{driver}: {image} / {setting} in\n{message}"
            );
        }
        if driver == "native" {
            assert!(!message.contains("KAFKA_TOOL_IMAGE"), "{message}");
        }
        assert!(!stderr.contains("==> starting"), "nothing starts: {stderr}");
        assert_eq!(leftovers(&run_id(&stderr)).await, (0, 0), "{driver}");
        assert_eq!(
            std::fs::read_dir(results.path()).unwrap().count(),
            0,
            "no results are written"
        );
    }
}

/// The count the kafka-tools driver takes its end offsets from, against a real broker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workload_end_offsets_counts_the_records_of_a_topic() {
    use perf_tests::driver::native::parse_end_offsets;
    use perf_tests::workload::{produce, unique_suffix, Admin, ProduceConfig, TopicSpec};

    let broker = support::Broker::start().await;
    let topic = format!("end-offsets-{}", unique_suffix());
    let admin = Admin::connect(&broker.bootstrap, &[]).unwrap();
    admin
        .create_topic(&TopicSpec::new(&topic), std::time::Duration::from_secs(20))
        .await
        .unwrap();
    let count = |what: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_perf-tests"))
            .args(["workload", "end-offsets", "--bootstrap", &broker.bootstrap])
            .args(["--topic", &topic])
            .output()
            .unwrap();
        assert!(out.status.success(), "{what}: {}", text(&out.stderr));
        parse_end_offsets(&text(&out.stdout)).unwrap()
    };
    assert_eq!(count("empty topic"), 0);
    let sent = produce(
        &ProduceConfig {
            bootstrap: broker.bootstrap.clone(),
            topic: topic.clone(),
            num_records: 1234,
            record_size: 100,
            throughput: -1,
            properties: vec![("acks".into(), "all".into())],
            client: Vec::new(),
        },
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(sent.sent, 1234);
    assert_eq!(count("after producing"), 1234);

    let out = Command::new(env!("CARGO_BIN_EXE_perf-tests"))
        .args(["workload", "end-offsets", "--bootstrap", &broker.bootstrap])
        .args(["--topic", "no-such-topic-here"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no-such-topic-here"),
        "{}",
        text(&out.stderr)
    );
}
