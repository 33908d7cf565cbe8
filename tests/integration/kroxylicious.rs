//! The kroxylicious suites (scenarios/kroxylicious, the default, with an AWS KMS reached over
//! the network; scenarios/kroxylicious-inmemory-kms, record encryption with the in-memory KMS;
//! scenarios/kroxylicious-vault, with HashiCorp Vault) and the kafka-tools driver: dry-run plans, the Compose file, the proxy configurations (Kroxylicious 0.12.0
//! schema) and what each scenario declares its path does; a run whose images cannot be pulled
//! (against the real engine), and the native end-offset count the driver relies on (against a
//! real broker).

use crate::common;
use common::{engine_lock, leftovers, repo, run_id};
use perf_tests::workload::args::Endpoint;

use crate::support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Output;

use perf_tests::model::{BrokerHolds, ConsumerReceives, Expect};
use perf_tests::plan::{self, Plan};
use perf_tests::scenario::Step;
use perf_tests::settings::Settings;
use perf_tests::world::compose::{self, Condition};
use perf_tests::world::images::recipe::{self, Recipe};
use yaml_serde::Value;

/// The default suite: an AWS KMS (local-kms) over the network, no Vault.
const SUITE: &str = "scenarios/kroxylicious";
/// 01, 04 and 05 with the in-memory KMS.
const INMEMORY_SUITE: &str = "scenarios/kroxylicious-inmemory-kms";
/// 04 and 05 with HashiCorp Vault as the KMS.
const VAULT_SUITE: &str = "scenarios/kroxylicious-vault";
/// 01 and 02 beside 02 with TLS from the clients to the proxy.
const TLS_SUITE: &str = "scenarios/kroxylicious-tls";

/// Images no engine has and no registry serves (`.invalid` never resolves), under the settings
/// that choose them. None has a recipe in the suites, so each must be pulled.
const IMAGES: [(&str, &str); 5] = [
    (
        "KAFKA_IMAGE",
        "registry.invalid/perf-tests-test/kafka:absent",
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
        "registry.invalid/perf-tests-test/kafka-tools:absent",
    ),
    ("KMS_IMAGE", "registry.invalid/perf-tests-test/kms:absent"),
];

/// A scenario as the suite names it: the endpoint, its own services (the proxy last, its
/// configuration the scenario's own file) and what it declares its path does to records.
#[derive(Clone, Copy)]
struct Case {
    name: &'static str,
    endpoint: &'static str,
    services: &'static [&'static str],
    broker: BrokerHolds,
    consumer: ConsumerReceives,
}

impl Case {
    fn proxy(&self) -> Option<&'static str> {
        self.services.last().copied()
    }
}

const SCENARIOS: [Case; 5] = [
    Case {
        name: "01-no-proxy-baseline",
        endpoint: "broker1:9092",
        services: &[],
        broker: BrokerHolds::Unchanged,
        consumer: ConsumerReceives::Sent,
    },
    Case {
        name: "02-no-filters",
        endpoint: "kroxylicious:9092",
        services: &["kroxylicious-no-filters"],
        broker: BrokerHolds::Unchanged,
        consumer: ConsumerReceives::Sent,
    },
    Case {
        name: "03-transform-filter",
        endpoint: "kroxylicious:9092",
        services: &["kroxylicious-transform-filter"],
        broker: BrokerHolds::UpperCased,
        consumer: ConsumerReceives::UpperCased,
    },
    Case {
        name: "04-envelope-encryption-filter",
        endpoint: "kroxylicious:9092",
        services: &["kms", "kroxylicious-envelope-encryption-filter"],
        broker: BrokerHolds::Encrypted,
        consumer: ConsumerReceives::Sent,
    },
    Case {
        name: "05-envelope-encryption-filter-no-encrypt",
        endpoint: "kroxylicious:9092",
        services: &["kms", "kroxylicious-envelope-encryption-filter-no-encrypt"],
        broker: BrokerHolds::Unchanged,
        consumer: ConsumerReceives::Sent,
    },
];

const INMEMORY_SCENARIOS: [Case; 3] = [
    Case {
        name: "01-no-proxy-baseline",
        endpoint: "broker1:9092",
        services: &[],
        broker: BrokerHolds::Unchanged,
        consumer: ConsumerReceives::Sent,
    },
    Case {
        name: "04-envelope-encryption-filter",
        endpoint: "kroxylicious:9092",
        services: &["kroxylicious-envelope-encryption-filter-inmemory"],
        broker: BrokerHolds::Encrypted,
        consumer: ConsumerReceives::Sent,
    },
    Case {
        name: "05-envelope-encryption-filter-no-encrypt",
        endpoint: "kroxylicious:9092",
        services: &["kroxylicious-envelope-encryption-filter-no-encrypt-inmemory"],
        broker: BrokerHolds::Unchanged,
        consumer: ConsumerReceives::Sent,
    },
];

const VAULT_SCENARIOS: [Case; 2] = [
    Case {
        name: "04-envelope-encryption-filter",
        endpoint: "kroxylicious:9092",
        services: &["vault", "kroxylicious-envelope-encryption-filter-vault"],
        broker: BrokerHolds::Encrypted,
        consumer: ConsumerReceives::Sent,
    },
    Case {
        name: "05-envelope-encryption-filter-no-encrypt",
        endpoint: "kroxylicious:9092",
        services: &[
            "vault",
            "kroxylicious-envelope-encryption-filter-no-encrypt-vault",
        ],
        broker: BrokerHolds::Unchanged,
        consumer: ConsumerReceives::Sent,
    },
];

const TLS_SCENARIOS: [Case; 3] = [
    SCENARIOS[0],
    SCENARIOS[1],
    Case {
        name: "03-no-filters-tls",
        endpoint: "kroxylicious:9092",
        services: &["kroxylicious-no-filters-tls"],
        broker: BrokerHolds::Unchanged,
        consumer: ConsumerReceives::Sent,
    },
];

/// Each suite with its scenarios.
const SUITES: [(&str, &[Case]); 4] = [
    (SUITE, &SCENARIOS),
    (INMEMORY_SUITE, &INMEMORY_SCENARIOS),
    (VAULT_SUITE, &VAULT_SCENARIOS),
    (TLS_SUITE, &TLS_SCENARIOS),
];

const TOPIC_04: &str = "perf-tests-04-envelope-encryption-filter";
const TOPIC_05: &str = "perf-tests-05-envelope-encryption-filter-no-encrypt";

fn perf_tests(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = common::bin();
    cmd.args(args);
    cmd.envs(env.iter().copied());
    cmd.output().expect("perf-tests starts")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn settings(suite: &str) -> Settings {
    Settings {
        scenarios: repo().join(suite),
        commit_id: "test".into(),
        ..Settings::default()
    }
}

fn load_plan(suite: &str) -> Plan {
    plan::plan(&settings(suite), "test-run").unwrap_or_else(|e| panic!("{suite} plans: {e:#}"))
}

fn load_project(suite: &str) -> compose::Project {
    let plan = load_plan(suite);
    compose::load(&plan.suite.compose, &plan.variables).expect("the Compose file loads")
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

/// The setup steps a dry run lists for a scenario.
fn setup_lines<'a>(plan: &'a str, name: &str) -> Vec<&'a str> {
    let block = scenario_block(plan, name);
    if block.contains("\n    setup: (none)\n") {
        return Vec::new();
    }
    block
        .lines()
        .skip_while(|l| !l.starts_with("    setup:"))
        .skip(1)
        .take_while(|l| l.starts_with("      - "))
        .collect()
}

/// The dry run's "Services" section.
fn services_section(plan: &str) -> &str {
    &plan[plan.find("Services (resolved").expect("services section")..]
}

/// The indented lines of one service's entry in the "Services" section.
fn service_entry<'a>(services: &'a str, service: &str) -> Vec<&'a str> {
    let at = services
        .find(&format!("\n  {service} ["))
        .unwrap_or_else(|| panic!("{service} not in\n{services}"));
    services[at + 1..]
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .collect()
}

fn image_of<'a>(services: &'a str, service: &str) -> &'a str {
    service_entry(services, service)
        .into_iter()
        .find_map(|l| l.strip_prefix("    image: "))
        .unwrap_or_else(|| panic!("no image for {service} in\n{services}"))
}

/// The service names the "Services" section lists, in order.
fn listed_services(services: &str) -> Vec<&str> {
    services
        .lines()
        .filter_map(|l| l.strip_prefix("  "))
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split(" [").next())
        .collect()
}

/// A dry run of a whole suite with the unpullable images and the kafka-tools driver.
fn dry_run_with_images(suite: &str) -> String {
    let mut env: Vec<(&str, &str)> = IMAGES.to_vec();
    env.push(("SCENARIOS", suite));
    env.push(("DRIVER", "kafka-tools"));
    let out = perf_tests(&["run", "--dry-run"], &env);
    let plan = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{plan}\nstderr:\n{}",
        text(&out.stderr)
    );
    plan
}

/// What a dry run says about each scenario of `cases` and its proxy, common to both suites.
fn check_planned_scenarios(plan: &str, suite: &str, cases: &[Case]) {
    assert!(
        plan.contains(
            "  services: broker1\n  bootstrap: broker1:9092\n  ready: broker1 at broker1:9092\n"
        ),
        "{plan}"
    );
    let services = services_section(plan);
    for case in cases {
        let block = scenario_block(plan, case.name);
        assert_eq!(field(block, "bootstrap"), case.endpoint, "{block}");
        assert_eq!(
            field(block, "topic"),
            format!("perf-tests-{}", case.name),
            "{block}"
        );
        assert_eq!(field(block, "run-wide services"), "used", "{block}");
        let expected = if case.services.is_empty() {
            "(none)".to_string()
        } else {
            case.services.join(", ")
        };
        assert_eq!(field(block, "services"), expected, "{block}");
        assert_eq!(field(block, "teardown"), "(none)", "{block}");
        assert_eq!(
            field(block, "path check"),
            format!(
                "broker holds {}, consumer receives {} (read straight from broker1:9092)",
                case.broker.name(),
                case.consumer.name()
            ),
            "{block}"
        );
        let Some(proxy) = case.proxy() else {
            assert_eq!(field(block, "ready"), "(none)", "{block}");
            continue;
        };
        assert_eq!(
            field(block, "ready"),
            format!("{proxy} at kroxylicious:9092"),
            "{block}"
        );
        // Every proxy runs the Kroxylicious image its setting names, answers to the alias the
        // endpoint names, and reads the scenario's own configuration file.
        assert_eq!(image_of(services, proxy), IMAGES[1].1);
        let entry = service_entry(services, proxy);
        assert!(entry.contains(&"    aliases: kroxylicious"), "{entry:?}");
        let mount = format!(
            "    mount: {} -> /opt/kroxylicious/config/config.yaml (read-only)",
            repo()
                .join(suite)
                .join(case.name)
                .join("proxy-config.yaml")
                .display()
        );
        assert!(entry.contains(&mount.as_str()), "{mount} in {entry:?}");
    }
    assert_eq!(image_of(services, "broker1"), IMAGES[0].1);
    assert!(
        services.contains(&format!(
            "Driver: kafka-tools ({}, chosen by KAFKA_TOOL_IMAGE",
            IMAGES[3].1
        )),
        "{services}"
    ); // Every service, in the order the scenarios first need them; each proxy waits for its KMS
       // service (when it has one) to be healthy.
    let mut expected = vec!["broker1"];
    for service in cases.iter().flat_map(|c| c.services) {
        if !expected.contains(service) {
            expected.push(service);
        }
    }
    assert_eq!(listed_services(services), expected, "{services}");
    for case in cases {
        for kms in case.services.iter().filter(|s| Some(**s) != case.proxy()) {
            let entry = service_entry(services, case.proxy().unwrap());
            let healthy = format!("{kms} (ServiceHealthy)");
            assert!(
                entry
                    .iter()
                    .any(|l| l.starts_with("    depends on: ") && l.contains(&healthy)),
                "{entry:?}"
            );
        }
    }
}

#[test]
fn dry_run_plans_all_five_scenarios_with_images_from_the_settings() {
    let plan = dry_run_with_images(SUITE);
    assert!(
        plan.contains("Selected scenarios (TEST=[0-9][0-9]-.*): 01-no-proxy-baseline, 02-no-filters, 03-transform-filter, 04-envelope-encryption-filter, 05-envelope-encryption-filter-no-encrypt"),
        "{plan}"
    );
    check_planned_scenarios(&plan, SUITE, &SCENARIOS);
    // 04's key is created through the KMS's own API before the warm-up; 05 has none.
    for case in &SCENARIOS {
        let expected = if case.name == "04-envelope-encryption-filter" {
            vec![format!(
                r#"      - exec in kms: ["/opt/perf-tests/kms-key", "create", "KEK_{TOPIC_04}"]"#
            )]
        } else {
            Vec::new()
        };
        assert_eq!(setup_lines(&plan, case.name), expected, "{}", case.name);
    }
    assert_eq!(image_of(services_section(&plan), "kms"), IMAGES[4].1);
    // Nothing but the settings mentions Vault.
    let after_settings = &plan[plan.find("\nRun-wide:").unwrap()..];
    assert!(!after_settings.contains("vault"), "{plan}");
}

#[test]
fn dry_run_of_the_inmemory_kms_suite_plans_no_kms_and_no_setup() {
    let plan = dry_run_with_images(INMEMORY_SUITE);
    assert!(
        plan.contains("Selected scenarios (TEST=[0-9][0-9]-.*): 01-no-proxy-baseline, 04-envelope-encryption-filter, 05-envelope-encryption-filter-no-encrypt\n"),
        "{plan}"
    );
    check_planned_scenarios(&plan, INMEMORY_SUITE, &INMEMORY_SCENARIOS);
    // The keys are in the proxy's configuration: no KMS service, no setup.
    for case in &INMEMORY_SCENARIOS {
        assert_eq!(setup_lines(&plan, case.name), Vec::<&str>::new());
    }
}

#[test]
fn dry_run_of_the_vault_suite_plans_vault_and_the_key_of_04() {
    let plan = dry_run_with_images(VAULT_SUITE);
    assert!(
        plan.contains("Selected scenarios (TEST=[0-9][0-9]-.*): 04-envelope-encryption-filter, 05-envelope-encryption-filter-no-encrypt\n"),
        "{plan}"
    );
    check_planned_scenarios(&plan, VAULT_SUITE, &VAULT_SCENARIOS);
    let enable = r#"      - exec in vault: ["vault", "secrets", "enable", "transit"]"#;
    assert_eq!(
        setup_lines(&plan, "04-envelope-encryption-filter"),
        [
            enable.to_string(),
            format!(
                r#"      - exec in vault: ["vault", "write", "-f", "transit/keys/KEK_{TOPIC_04}"]"#
            ),
        ]
    );
    assert_eq!(
        setup_lines(&plan, "05-envelope-encryption-filter-no-encrypt"),
        [enable]
    );
    assert_eq!(image_of(services_section(&plan), "vault"), IMAGES[2].1);
}

#[test]
fn each_scenario_plans_on_its_own() {
    for (suite, cases) in SUITES {
        for case in cases {
            let name = case.name;
            let out = perf_tests(
                &["run", "--dry-run", "--scenarios", suite, "--test", name],
                &[],
            );
            let plan = text(&out.stdout);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{suite} {name}: {}",
                text(&out.stderr)
            );
            assert!(plan.contains(&format!("Selected scenarios (TEST={name}): {name}\n")));
            let section = services_section(&plan);
            let mut expected = vec!["broker1"];
            expected.extend(case.services.iter().copied());
            assert_eq!(
                listed_services(section),
                expected,
                "{suite} {name}:\n{section}"
            );
            assert!(section.contains("Driver: native"), "{section}");
            // The default images: the suite's own recipes (and Vault's published image).
            let defaults = Settings::default();
            assert_eq!(image_of(section, "broker1"), defaults.kafka_image);
            if let Some(proxy) = case.proxy() {
                assert_eq!(image_of(section, proxy), defaults.kroxylicious_image);
            }
            if case.services.contains(&"vault") {
                assert_eq!(image_of(section, "vault"), defaults.vault_image);
            }
            if case.services.contains(&"kms") {
                assert_eq!(image_of(section, "kms"), defaults.kms_image);
            }
        }
    }
}

#[test]
fn default_images_are_the_recipes_the_suites_share() {
    let defaults = Settings::default();
    assert_eq!(defaults.scenarios, PathBuf::from(SUITE));
    assert_eq!(defaults.kafka_image, "perf-tests/kafka:4.4.0");
    assert_eq!(
        defaults.kroxylicious_image,
        "perf-tests/kroxylicious:0.12.0"
    );
    assert_eq!(defaults.kafka_tool_image, "perf-tests/kafka-tools:4.4.0");
    assert_eq!(
        defaults.kms_image,
        "perf-tests/local-kms:v0.0.0-20260228092603-2a5e92d09ab6"
    );
    assert_eq!(defaults.vault_image, "hashicorp/vault:1.15");
    let mut wanted = vec![
        defaults.kafka_image.clone(),
        defaults.kafka_tool_image.clone(),
        defaults.kroxylicious_image.clone(),
        defaults.kms_image.clone(),
    ];
    wanted.sort();
    // One file of recipes for the three suites (Vault has no recipe: it is pulled), so one
    // build serves them all.
    let recipes = |suite: &str| -> Vec<(String, Recipe)> {
        let plan = load_plan(suite);
        assert_eq!(
            plan.suite.images_file,
            repo().join("scenarios/kroxylicious/images/recipes.yaml"),
            "{suite}"
        );
        recipe::parse_recipes(&plan.suite.images_file, &plan.suite.images)
            .unwrap_or_else(|e| panic!("{suite}: {e:#}"))
            .into_iter()
            .map(|r| (r.image, r.recipe))
            .collect()
    };
    let default = recipes(SUITE);
    let images: Vec<String> = default.iter().map(|(i, _)| i.clone()).collect();
    assert_eq!(images, wanted);
    assert_eq!(recipes(INMEMORY_SUITE), default);
    assert_eq!(recipes(VAULT_SUITE), default);
    for (image, recipe) in &default {
        match recipe {
            Recipe::Go(g) => {
                assert_eq!(image, &defaults.kms_image);
                assert_eq!(g.module, "github.com/nsmithuk/local-kms");
                assert_eq!(g.version, image.rsplit(':').next().unwrap());
                assert!(g.files.contains_key("/opt/perf-tests/kms-key"), "{g:?}");
            }
            Recipe::Maven(m) if image == &defaults.kroxylicious_image => {
                // Every KMS provider the suites' configurations name.
                for provider in ["aws-kms", "kroxylicious-inmemory", "hashicorp-vault"] {
                    let artifact =
                        format!("io.kroxylicious:kroxylicious-kms-provider-{provider}:0.12.0");
                    assert!(m.artifacts.contains(&artifact), "{artifact} in {m:?}");
                }
            }
            Recipe::Maven(_) => {}
            other => panic!("{image}: not a Maven or Go recipe: {other:?}"),
        }
    }
}

#[test]
fn scenarios_declare_what_their_path_does_to_records() {
    for (suite, cases) in SUITES {
        let plan = load_plan(suite);
        let names: Vec<&str> = plan
            .scenarios
            .iter()
            .map(|p| p.scenario.name.as_str())
            .collect();
        let wanted: Vec<&str> = cases.iter().map(|c| c.name).collect();
        assert_eq!(names, wanted, "{suite}");
        for (p, case) in plan.scenarios.iter().zip(cases) {
            assert_eq!(
                p.scenario.expect,
                Some(Expect {
                    broker: case.broker,
                    consumer: case.consumer,
                }),
                "{suite} {}",
                case.name
            );
            // The check reads the records straight from the suite's broker.
            assert_eq!(p.direct, "broker1:9092", "{suite} {}", case.name);
        }
    }
}

#[test]
fn compose_file_knows_every_service_the_suites_name() {
    // The suites share the Compose file; together they use every service in it.
    let project = load_project(SUITE);
    for other in [INMEMORY_SUITE, VAULT_SUITE] {
        assert_eq!(
            project.files,
            load_project(other).files,
            "one Compose file for every suite"
        );
    }
    let mut named: Vec<String> = Vec::new();
    for suite in SUITES.map(|(suite, _)| suite) {
        // Every broker of the suites' clusters runs.
        let cluster = perf_tests::settings::Settings {
            brokers: 3,
            ..settings(suite)
        };
        let plan = plan::plan(&cluster, "test-run").unwrap();
        named.extend(plan.suite.services.iter().cloned());
        named.extend(plan.suite.ready.keys().cloned());
        for p in &plan.scenarios {
            named.extend(p.scenario.services.iter().cloned());
            named.extend(p.scenario.ready.keys().cloned());
            for step in p.scenario.setup.iter().chain(&p.scenario.teardown) {
                let Step::Exec { service, .. } = step;
                named.push(service.clone());
            }
        }
    }
    for service in &named {
        assert!(
            project.services.contains_key(service),
            "{service} is named by a suite but not in {:?}",
            project.files
        );
    }
    for service in project.services.keys() {
        assert!(named.contains(service), "{service} is never used");
    }
    // The default suite starts no Vault.
    let default_plan = load_plan(SUITE);
    let mut default_services = default_plan.suite.services.clone();
    for p in &default_plan.scenarios {
        default_services.extend(p.scenario.services.iter().cloned());
    }
    let closure = project.service_closure(&default_services).unwrap();
    assert!(!closure.iter().any(|s| s == "vault"), "{closure:?}");

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

    // The KMS over the network: the KMS image, healthy once it listens on the port the proxies'
    // configurations name, in the region they sign their requests for.
    let kms = &project.services["kms"];
    assert_eq!(kms.image, Settings::default().kms_image);
    assert!(kms
        .environment
        .contains(&"KMS_REGION=us-east-1".to_string()));
    let test = kms.healthcheck.as_ref().map(|h| h.test.join(" "));
    assert!(
        test.as_deref().is_some_and(|t| t.contains(":1F90 ")),
        "listening on 8080: {test:?}"
    );

    // Each proxy: the Kroxylicious image, its own configuration file, the `kroxylicious` alias,
    // a health check, and the broker (and a healthy KMS service, where it has one) started first.
    let mut configs = Vec::new();
    for (suite, cases) in SUITES {
        for case in cases {
            let Some(name) = case.proxy() else { continue };
            let proxy = &project.services[name];
            assert_eq!(proxy.image, Settings::default().kroxylicious_image);
            assert_eq!(proxy.networks["default"], vec!["kroxylicious".to_string()]);
            assert!(proxy.healthcheck.is_some(), "{name}");
            assert!(proxy.depends_on.contains_key("broker1"), "{name}");
            for kms in ["vault", "kms"] {
                assert_eq!(
                    proxy.depends_on.get(kms),
                    case.services
                        .contains(&kms)
                        .then_some(&Condition::ServiceHealthy),
                    "{name}"
                );
            }
            let (config, others): (Vec<_>, Vec<_>) = proxy
                .mounts
                .iter()
                .partition(|m| m.target == "/opt/kroxylicious/config/config.yaml");
            // A TLS proxy also reads the run's certificate; no other proxy mounts anything else.
            let others: Vec<&str> = others.iter().map(|m| m.target.as_str()).collect();
            let tls: &[&str] = if name.ends_with("-tls") {
                &["/tls"]
            } else {
                &[]
            };
            assert_eq!(others, tls, "{name}: {:?}", proxy.mounts);
            let [mount] = config[..] else {
                panic!("{name}: one configuration in {:?}", proxy.mounts)
            };
            assert_eq!(mount.source, config_path(suite, case.name));
            assert!(mount.source.is_file());
            configs.push(mount.source.clone());
        }
    }
    configs.sort();
    configs.dedup();
    assert_eq!(
        configs.len(),
        9,
        "every scenario has its own proxy configuration"
    );
}

/// Where a scenario's proxy configuration is: beside it, but for the TLS suite's plain proxy,
/// which is the default suite's.
fn config_path(suite: &str, scenario: &str) -> PathBuf {
    let home = if suite == TLS_SUITE && scenario == SCENARIOS[1].name {
        SUITE
    } else {
        suite
    };
    repo().join(home).join(scenario).join("proxy-config.yaml")
}

fn proxy_config(suite: &str, scenario: &str) -> Value {
    let path = config_path(suite, scenario);
    let text = std::fs::read_to_string(&path).unwrap();
    yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `filterDefinitions` of a configuration as (name, type) pairs.
fn filter_definitions(config: &Value) -> Vec<(String, String)> {
    match &config["filterDefinitions"] {
        Value::Null => Vec::new(),
        defs => defs
            .as_sequence()
            .expect("filterDefinitions is a list")
            .iter()
            .map(|f| {
                (
                    f["name"].as_str().expect("a filter has a name").to_string(),
                    f["type"].as_str().expect("a filter has a type").to_string(),
                )
            })
            .collect(),
    }
}

fn default_filters(config: &Value) -> Vec<String> {
    config["defaultFilters"]
        .as_sequence()
        .expect("defaultFilters is a list")
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect()
}

/// The configuration of the only filter of a record-encryption scenario.
fn encryption_config(config: &Value) -> &Value {
    let defs = filter_definitions(config);
    assert_eq!(defs, [("encrypt".into(), "RecordEncryption".into())]);
    assert_eq!(default_filters(config), ["encrypt"]);
    &config["filterDefinitions"][0]["config"]
}

/// The topic of a scenario, as the plan names it.
fn topic(plan: &Plan, name: &str) -> String {
    plan.scenarios
        .iter()
        .find(|p| p.scenario.name == name)
        .unwrap_or_else(|| panic!("{name} not planned"))
        .topic
        .clone()
}

#[test]
fn proxy_configurations_have_the_reference_filters() {
    // Every proxy: one virtual cluster in front of broker1, reached at kroxylicious:9092.
    for (suite, cases) in SUITES {
        for case in cases.iter().filter(|c| c.proxy().is_some()) {
            let c = proxy_config(suite, case.name);
            let clusters = c["virtualClusters"]
                .as_sequence()
                .expect("virtualClusters is a list");
            assert_eq!(clusters.len(), 1, "{suite} {}", case.name);
            let cluster = &clusters[0];
            assert_eq!(cluster["name"], "demo");
            assert_eq!(cluster["targetCluster"]["bootstrapServers"], "broker1:9092");
            let gateways = cluster["gateways"].as_sequence().expect("gateways");
            assert_eq!(gateways.len(), 1);
            assert_eq!(
                gateways[0]["portIdentifiesNode"]["bootstrapAddress"],
                "kroxylicious:9092"
            );
            // Every filter the proxy applies is defined, and every definition is applied.
            let defined: Vec<String> = filter_definitions(&c).into_iter().map(|d| d.0).collect();
            assert_eq!(default_filters(&c), defined, "{suite} {}", case.name);
            // No key of the old (0.9) schema is left.
            assert!(c.get("filters").is_none(), "{suite} {}", case.name);
            assert!(
                cluster.get("clusterNetworkAddressConfigProvider").is_none(),
                "{suite} {}",
                case.name
            );
        }
    }

    let none = proxy_config(SUITE, "02-no-filters");
    assert!(filter_definitions(&none).is_empty());
    assert!(default_filters(&none).is_empty());

    // TLS: 02's configuration with the run's certificate on the gateway, where the runner
    // mounts it.
    let mut tls = proxy_config(TLS_SUITE, "03-no-filters-tls");
    let gateway = tls["virtualClusters"][0]["gateways"][0]
        .as_mapping_mut()
        .expect("a gateway");
    let key = gateway.remove("tls").expect("TLS on the gateway");
    let file = |name: &str| format!("/tls/{name}");
    assert_eq!(
        key["key"]["privateKeyFile"],
        file(perf_tests::world::tls::SERVER_KEY_FILE).as_str()
    );
    assert_eq!(
        key["key"]["certificateFile"],
        file(perf_tests::world::tls::SERVER_CERT_FILE).as_str()
    );
    assert_eq!(tls, none);

    let transform = proxy_config(SUITE, "03-transform-filter");
    assert_eq!(
        filter_definitions(&transform),
        [
            ("produce".into(), "ProduceRequestTransformation".into()),
            ("fetch".into(), "FetchResponseTransformation".into()),
        ]
    );
    assert_eq!(default_filters(&transform), ["produce", "fetch"]);
    for f in transform["filterDefinitions"].as_sequence().unwrap() {
        assert_eq!(f["config"]["transformation"], "UpperCasing");
        assert_eq!(f["config"]["transformationConfig"]["charset"], "UTF-8");
    }

    // The in-memory KMS: 04's configuration holds the key the selector picks for 04's topic;
    // 05 is the same filter with no key at all.
    let plan = load_plan(INMEMORY_SUITE);
    let topic04 = topic(&plan, "04-envelope-encryption-filter");
    let topic05 = topic(&plan, "05-envelope-encryption-filter-no-encrypt");
    assert_eq!((topic04.as_str(), topic05.as_str()), (TOPIC_04, TOPIC_05));
    let c04 = proxy_config(INMEMORY_SUITE, "04-envelope-encryption-filter");
    let c05 = proxy_config(INMEMORY_SUITE, "05-envelope-encryption-filter-no-encrypt");
    let (e04, e05) = (encryption_config(&c04), encryption_config(&c05));
    for e in [e04, e05] {
        assert_eq!(e["kms"], "UnitTestingKmsService");
        assert_eq!(e["selector"], "TemplateKekSelector");
        assert_eq!(e["selectorConfig"]["template"], "KEK_$(topicName)");
    }
    let template = e04["selectorConfig"]["template"].as_str().unwrap();
    let alias = |topic: &str| template.replace("$(topicName)", topic);
    let keks04 = e04["kmsConfig"]["existingKeks"]
        .as_sequence()
        .expect("04 provisions keys");
    assert_eq!(keks04.len(), 1, "{keks04:?}");
    assert_eq!(keks04[0]["alias"], alias(&topic04).as_str());
    assert_eq!(alias(&topic04), format!("KEK_{TOPIC_04}"));
    assert_eq!(keks04[0]["algorithm"], "AES");
    assert!(keks04[0]["uuid"].as_str().is_some_and(|u| u.len() == 36));
    assert!(keks04[0]["key"].as_str().is_some_and(|k| !k.is_empty()));
    let keks05 = e05["kmsConfig"]["existingKeks"].as_sequence();
    assert!(
        keks05.is_none_or(|k| k.is_empty()),
        "05 has no key for its topic: {keks05:?}"
    );
    // Apart from the keys, 05 measures the same filter as 04.
    let without_keys = |c: &Value| {
        let mut c = c.clone();
        c["filterDefinitions"][0]["config"]["kmsConfig"]
            .as_mapping_mut()
            .unwrap()
            .remove("existingKeks");
        c
    };
    assert_eq!(without_keys(&c04), without_keys(&c05));

    // The default suite: the filter reaches the AWS KMS service over the network, in the region
    // the KMS runs in; 04's setup step creates the alias the selector picks for its topic, 05's
    // none, and 05 measures the same filter as 04.
    let plan = load_plan(SUITE);
    let a04 = proxy_config(SUITE, "04-envelope-encryption-filter");
    assert_eq!(
        a04,
        proxy_config(SUITE, "05-envelope-encryption-filter-no-encrypt"),
        "05 measures the same filter as 04, with no key for its topic"
    );
    let e = encryption_config(&a04);
    assert_eq!(e["kms"], "AwsKmsService");
    assert_eq!(e["kmsConfig"]["endpointUrl"], "http://kms:8080");
    let region = e["kmsConfig"]["region"].as_str().unwrap();
    assert!(
        load_project(SUITE).services["kms"]
            .environment
            .contains(&format!("KMS_REGION={region}")),
        "the proxy signs for the KMS's region"
    );
    assert!(e["kmsConfig"]["longTermCredentials"]["accessKeyId"]["password"].is_string());
    assert_eq!(e["selectorConfig"]["template"], "KEK_$(topicName)");
    let created = |name: &str| -> Vec<String> {
        let p = plan
            .scenarios
            .iter()
            .find(|p| p.scenario.name == name)
            .unwrap();
        p.scenario
            .setup
            .iter()
            .map(|Step::Exec { service, command }| {
                assert_eq!(service, "kms");
                match command.as_slice() {
                    [tool, verb, alias]
                        if tool == "/opt/perf-tests/kms-key" && verb == "create" =>
                    {
                        alias.clone()
                    }
                    other => panic!("{name}: unexpected setup step {other:?}"),
                }
            })
            .collect()
    };
    assert_eq!(
        created("04-envelope-encryption-filter"),
        [alias(&topic(&plan, "04-envelope-encryption-filter"))]
    );
    assert!(created("05-envelope-encryption-filter-no-encrypt").is_empty());
    // Each scenario's results say which KMS it used.
    for (suite, provider, service) in [
        (SUITE, "AwsKmsService", Some("kms")),
        (INMEMORY_SUITE, "UnitTestingKmsService", None),
        (VAULT_SUITE, "VaultKmsService", Some("vault")),
    ] {
        for p in load_plan(suite)
            .scenarios
            .iter()
            .filter(|p| p.scenario.name.starts_with("04") || p.scenario.name.starts_with("05"))
        {
            let kms = p
                .scenario
                .kms
                .as_ref()
                .expect("an encryption scenario names its KMS");
            assert_eq!(
                (kms.provider.as_str(), kms.service.as_deref()),
                (provider, service),
                "{suite} {}",
                p.scenario.name
            );
            let config = proxy_config(suite, &p.scenario.name);
            assert_eq!(encryption_config(&config)["kms"], provider);
        }
    }

    // The Vault suite: the filter reaches Vault's transit engine with the dev server's root
    // token; 04 creates the key the selector picks for its topic, 05 creates none.
    let plan = load_plan(VAULT_SUITE);
    let v04 = proxy_config(VAULT_SUITE, "04-envelope-encryption-filter");
    assert_eq!(
        v04,
        proxy_config(VAULT_SUITE, "05-envelope-encryption-filter-no-encrypt"),
        "05 measures the same filter as 04, with no key for its topic"
    );
    let e = encryption_config(&v04);
    assert_eq!(e["kms"], "VaultKmsService");
    assert_eq!(
        e["kmsConfig"]["vaultTransitEngineUrl"],
        "http://vault:8200/v1/transit"
    );
    assert_eq!(e["selector"], "TemplateKekSelector");
    assert_eq!(e["selectorConfig"]["template"], "KEK_$(topicName)");
    let vault = &load_project(VAULT_SUITE).services["vault"];
    let token = e["kmsConfig"]["vaultToken"]["password"].as_str().unwrap();
    assert!(
        vault
            .environment
            .contains(&format!("VAULT_DEV_ROOT_TOKEN_ID={token}")),
        "the proxy's token is the dev server's root token: {:?}",
        vault.environment
    );
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
    assert_eq!(
        keys("04-envelope-encryption-filter"),
        [alias(&topic(&plan, "04-envelope-encryption-filter"))]
    );
    assert!(keys("05-envelope-encryption-filter-no-encrypt").is_empty());
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
            "scenarios/kroxylicious-tls",
            "--test",
            "03-no-filters-tls",
        ],
        &[("DRIVER", "kafka-tools")],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("DRIVER=kafka-tools") && err.contains("03-no-filters-tls/scenario.yaml"),
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

/// A run with `env` that must fail before anything starts: exit 1 and one error message, nothing
/// left on the engine and no results written; returns its stderr.
async fn failed_before_starting(env: &[(&str, &str)], results: &std::path::Path) -> String {
    let out = perf_tests(&["run"], env);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{env:?}: {stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "one message: {stderr}");
    assert!(!stderr.contains("==> starting"), "nothing starts: {stderr}");
    assert_eq!(leftovers(&run_id(&stderr)).await, (0, 0), "{env:?}");
    assert_eq!(
        std::fs::read_dir(results).unwrap().count(),
        0,
        "no results are written"
    );
    stderr
}

#[tokio::test(flavor = "multi_thread")]
async fn unpullable_images_stop_the_run_naming_each_image_and_setting() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let results_dir = results.path().to_str().unwrap();
    // The settings whose images a run of the suite with the driver needs. The default suite
    // starts the KMS and no Vault; the in-memory one neither; the Vault suite starts Vault.
    let cases: [(&str, &str, &[&str]); 4] = [
        (
            SUITE,
            "kafka-tools",
            &[
                "KAFKA_IMAGE",
                "KROXYLICIOUS_IMAGE",
                "KAFKA_TOOL_IMAGE",
                "KMS_IMAGE",
            ],
        ),
        (
            SUITE,
            "native",
            &["KAFKA_IMAGE", "KROXYLICIOUS_IMAGE", "KMS_IMAGE"],
        ),
        (
            INMEMORY_SUITE,
            "native",
            &["KAFKA_IMAGE", "KROXYLICIOUS_IMAGE"],
        ),
        (
            VAULT_SUITE,
            "native",
            &["KAFKA_IMAGE", "KROXYLICIOUS_IMAGE", "VAULT_IMAGE"],
        ),
    ];
    for (suite, driver, needed) in cases {
        let mut env: Vec<(&str, &str)> = IMAGES.to_vec();
        env.extend([
            ("SCENARIOS", suite),
            ("DRIVER", driver),
            ("NUM_RECORDS", "100"),
            ("RESULTS_DIR", results_dir),
        ]);
        let stderr = failed_before_starting(&env, results.path()).await;
        let message = &stderr[stderr.find("error:").unwrap()..];
        assert!(
            message.contains(&format!(
                "{} image(s) are not on the engine and cannot be pulled",
                needed.len()
            )),
            "{suite} {driver}: {stderr}"
        );
        for (setting, image) in &IMAGES {
            let line = format!("  {image} (chosen by {setting})");
            assert_eq!(
                message.contains(&line),
                needed.contains(setting),
                "{suite} {driver}: {line:?} in\n{message}"
            );
            assert_eq!(message.contains(setting), needed.contains(setting));
        }
    }
}

/// An image with a recipe of the suite (the default references) is made here, never pulled:
/// with only KAFKA_IMAGE unpullable, the message names that one image alone.
#[tokio::test(flavor = "multi_thread")]
async fn images_with_a_recipe_are_built_not_pulled() {
    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let results_dir = results.path().to_str().unwrap();
    let (setting, image) = IMAGES[0];
    let env = [
        (setting, image),
        ("TEST", "02.*"),
        ("DRIVER", "kafka-tools"),
        ("NUM_RECORDS", "100"),
        ("RESULTS_DIR", results_dir),
    ];
    let stderr = failed_before_starting(&env, results.path()).await;
    let message = &stderr[stderr.find("error:").unwrap()..];
    assert!(
        message.contains("1 image(s) are not on the engine and cannot be pulled"),
        "{stderr}"
    );
    assert!(
        message.contains(&format!("  {image} (chosen by {setting})")),
        "{message}"
    );
    let defaults = Settings::default();
    for made_here in [&defaults.kroxylicious_image, &defaults.kafka_tool_image] {
        assert!(
            !stderr.contains(&format!("pulling {made_here}")),
            "{made_here} is made from its recipe: {stderr}"
        );
        assert!(!message.contains(made_here.as_str()), "{message}");
    }
    assert!(stderr.contains(&format!("pulling {image}")), "{stderr}");
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
        let out = common::bin()
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
            num_records: 1234,
            record_size: 100,
            throughput: perf_tests::settings::rate::Rate::Unlimited,
            properties: vec![("acks".into(), "all".into())],
            ..ProduceConfig::new(Endpoint::new(&broker.bootstrap, &[]), vec![topic.clone()])
        },
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(sent.sent, 1234);
    assert_eq!(count("after producing"), 1234);

    let out = common::bin()
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
