//! Compose loading: validation, interpolation from settings / environment / `.env`, merging.

use perf_tests::world::compose::{self, Condition};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn load_err(yaml: &str, v: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "x.yaml", yaml);
    format!("{:#}", compose::load(&[f], &vars(v)).unwrap_err())
}

#[test]
fn unsupported_service_key_names_file_service_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "x.yaml",
        "services:\n  proxy:\n    image: p\n    deploy:\n      replicas: 2\n",
    );
    let err = format!(
        "{:#}",
        compose::load(std::slice::from_ref(&f), &BTreeMap::new()).unwrap_err()
    );
    assert_eq!(
        err,
        format!(
            "{}: service \"proxy\": unsupported key \"deploy\"",
            f.display()
        )
    );
}

#[test]
fn cpuset_pins_a_service_and_an_empty_one_pins_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "x.yaml",
        "services:\n  a:\n    image: i\n    cpuset: ${A_CPUS:-}\n",
    );
    let load = |v: &[(&str, &str)]| compose::load(std::slice::from_ref(&f), &vars(v)).unwrap();
    assert_eq!(
        load(&[("A_CPUS", "0-1")]).services["a"].cpuset.as_deref(),
        Some("0-1")
    );
    assert_eq!(load(&[]).services["a"].cpuset, None);
    let e = load_err(
        "services:\n  a:\n    image: i\n    cpuset: ${A_CPUS}\n",
        &[("A_CPUS", "first")],
    );
    assert!(
        e.contains("service \"a\": cpuset \"first\": expected CPU numbers and ranges"),
        "{e}"
    );
}

#[test]
fn other_invalid_input_is_refused_with_its_location() {
    let e = load_err("services: {}\nvolumes:\n  data: {}\n", &[]);
    assert!(e.contains("unsupported top-level key \"volumes\""), "{e}");
    let e = load_err("services:\n  a:\n    image: i\n    healthcheck:\n      test: [CMD, x]\n      intervall: 1s\n", &[]);
    assert!(
        e.contains("service \"a\": key \"healthcheck\"") && e.contains("intervall"),
        "{e}"
    );
    let e = load_err("services:\n  a:\n    image: i\n    healthcheck:\n      test: [CMD, x]\n      interval: soon\n", &[]);
    assert!(
        e.contains("service \"a\": healthcheck: invalid duration \"soon\""),
        "{e}"
    );
    let e = load_err(
        "services:\n  a:\n    image: i\n    volumes: [data:/data]\n",
        &[],
    );
    assert!(e.contains("named volumes are not supported"), "{e}");
    let e = load_err("services:\n  a:\n    image: i\n    depends_on: [b]\n", &[]);
    assert!(
        e.contains("depends_on unknown service \"b\" (known: a)"),
        "{e}"
    );
    let e = load_err("services:\n  a:\n    image: i\n    networks: [back]\n", &[]);
    assert!(e.contains("network \"back\" is not declared"), "{e}");
    let e = load_err("services:\n  a:\n    command: x\n", &[]);
    assert!(e.contains("service \"a\": \"image\" is required"), "{e}");
    let e = load_err("services:\n  a:\n    image: i\n    depends_on:\n      a2:\n        condition: service_done\n  a2:\n    image: i\n", &[]);
    assert!(e.contains("unknown condition \"service_done\""), "{e}");
}

#[test]
fn missing_required_variable_names_file_variable_and_message() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "x.yaml",
        "services:\n  kafka:\n    image: ${PERF_TESTS_UNSET_IMAGE:?set KAFKA_IMAGE to a Kafka image}\n",
    );
    let err = format!(
        "{:#}",
        compose::load(std::slice::from_ref(&f), &BTreeMap::new()).unwrap_err()
    );
    assert!(err.contains(&f.display().to_string()), "{err}");
    assert!(err.contains("services.kafka.image"), "{err}");
    assert!(err.contains("PERF_TESTS_UNSET_IMAGE"), "{err}");
    assert!(err.contains("set KAFKA_IMAGE to a Kafka image"), "{err}");
}

#[test]
fn interpolation_forms_with_settings_environment_and_dotenv() {
    let dir = tempfile::tempdir().unwrap();
    // .env has the lowest precedence: the process environment and the settings override it.
    write(
        dir.path(),
        ".env",
        "# comment\nFROM_DOTENV=dotenv\nPERF_TESTS_CT_OVERRIDDEN=dotenv\nexport QUOTED=\"a b\"\n",
    );
    std::env::set_var("PERF_TESTS_CT_OVERRIDDEN", "environment");
    std::env::set_var("PERF_TESTS_CT_ENV_ONLY", "environment");
    std::env::set_var("PERF_TESTS_CT_BOTH", "environment");
    let f = write(
        dir.path(),
        "x.yaml",
        r#"
x-common: &common
  image: tools
services:
  s:
    <<: *common
    x-note: ignored
    environment:
      BRACED: ${SETTING}
      PLAIN: $SETTING/x
      DEFAULT_COLON: ${PERF_TESTS_CT_NOPE:-fallback}
      EMPTY_COLON: ${EMPTY:-fallback}
      EMPTY_DASH: ${EMPTY-fallback}
      UNSET_DASH: ${PERF_TESTS_CT_NOPE-fallback}
      REQUIRED: ${SETTING:?needed}
      REQUIRED_DASH: ${EMPTY?needed}
      DOLLARS: cost $$5 and $${SETTING}
      UNSET_PLAIN: "[${PERF_TESTS_CT_NOPE}]"
      DOTENV: ${FROM_DOTENV}
      ENV_OVER_DOTENV: ${PERF_TESTS_CT_OVERRIDDEN}
      ENV_ONLY: ${PERF_TESTS_CT_ENV_ONLY}
      SETTING_OVER_ENV: ${PERF_TESTS_CT_BOTH}
      QUOTED: ${QUOTED}
      NUMBER: 3
      FROM_ENV_BY_NAME:
"#,
    );
    let v = vars(&[
        ("SETTING", "set"),
        ("EMPTY", ""),
        ("PERF_TESTS_CT_BOTH", "setting"),
        ("FROM_ENV_BY_NAME", "by-name"),
    ]);
    let p = compose::load(&[f], &v).unwrap();
    let env = &p.services["s"].environment;
    let want = [
        "BRACED=set",
        "DEFAULT_COLON=fallback",
        "DOLLARS=cost $5 and ${SETTING}",
        "DOTENV=dotenv",
        "EMPTY_COLON=fallback",
        "EMPTY_DASH=",
        "ENV_ONLY=environment",
        "ENV_OVER_DOTENV=environment",
        "FROM_ENV_BY_NAME=by-name",
        "NUMBER=3",
        "PLAIN=set/x",
        "QUOTED=a b",
        "REQUIRED=set",
        "REQUIRED_DASH=",
        "SETTING_OVER_ENV=setting",
        "UNSET_DASH=fallback",
        "UNSET_PLAIN=[]",
    ];
    assert_eq!(env, &want.map(String::from).to_vec());
    assert_eq!(p.services["s"].image, "tools");
}

#[test]
fn services_are_typed_with_paths_resolved_against_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("conf")).unwrap();
    let f = write(
        dir.path().join("conf").as_path(),
        "c.yaml",
        r#"
name: My_Project
services:
  broker:
    image: kafka
    command: bin/kafka-server-start.sh "/opt/config/server properties"
    entrypoint: [/bin/sh, -c]
    environment: [A=1, B=two=2]
    hostname: kafka-host
    container_name: broker-1
    ports: ["9092", "19092:9092", "127.0.0.1:8080:80/udp"]
    volumes:
      - ./data:/data:ro
      - type: bind
        source: ../shared
        target: /shared
    configs:
      - proxy_config
      - source: proxy_config
        target: /etc/proxy.yaml
    healthcheck:
      test: ["CMD-SHELL", "nc -z localhost 9092"]
      interval: 500ms
      timeout: 1m30s
      retries: 3
      start_period: 2s
    labels: {team: perf}
    security_opt: [no-new-privileges:true]
    user: 1000
    working_dir: /opt
    restart: "no"
    tmpfs: [/tmp, "/run:size=1m"]
    networks:
      back:
        aliases: [kafka]
  proxy:
    image: proxy
    depends_on:
      broker: {condition: service_healthy}
      init: {condition: service_completed_successfully}
    networks: [back]
    healthcheck:
      disable: true
  init:
    image: tools
    depends_on: [broker]
    networks: [back]
configs:
  proxy_config:
    file: ./proxy.yaml
networks:
  back:
    driver: bridge
"#,
    );
    let p = compose::load(&[f], &BTreeMap::new()).unwrap();
    assert_eq!(p.name_hint, "my_project");
    let b = &p.services["broker"];
    assert_eq!(
        b.command.as_deref().unwrap(),
        ["bin/kafka-server-start.sh", "/opt/config/server properties"]
    );
    assert_eq!(b.entrypoint.as_deref().unwrap(), ["/bin/sh", "-c"]);
    assert_eq!(b.environment, ["A=1", "B=two=2"]);
    assert_eq!(b.ports.len(), 3);
    assert_eq!(b.ports[1].host_port, Some(19092));
    let conf = dir.path().join("conf");
    let mounts: Vec<(PathBuf, &str, bool)> = b
        .mounts
        .iter()
        .map(|m| (m.source.clone(), m.target.as_str(), m.read_only))
        .collect();
    assert_eq!(
        mounts,
        vec![
            (conf.join("data"), "/data", true),
            (dir.path().join("shared"), "/shared", false),
            (conf.join("proxy.yaml"), "/proxy_config", true),
            (conf.join("proxy.yaml"), "/etc/proxy.yaml", true),
        ]
    );
    let h = b.healthcheck.as_ref().unwrap();
    assert_eq!(h.test, ["CMD-SHELL", "nc -z localhost 9092"]);
    assert_eq!(h.interval, Some(Duration::from_millis(500)));
    assert_eq!(h.timeout, Some(Duration::from_secs(90)));
    assert_eq!(h.retries, Some(3));
    assert_eq!(h.start_period, Some(Duration::from_secs(2)));
    assert_eq!(b.networks["back"], ["kafka"]);
    assert_eq!(b.user.as_deref(), Some("1000"));
    assert_eq!(b.tmpfs, ["/tmp", "/run:size=1m"]);
    let proxy = &p.services["proxy"];
    // Switched off (`disable: true` or `test: ["NONE"]`).
    assert_eq!(proxy.healthcheck.as_ref().unwrap().test, ["NONE"]);
    assert_eq!(proxy.depends_on["broker"], Condition::ServiceHealthy);
    assert_eq!(
        proxy.depends_on["init"],
        Condition::ServiceCompletedSuccessfully
    );
    assert_eq!(
        p.services["init"].depends_on["broker"],
        Condition::ServiceStarted
    );
    assert_eq!(
        p.images().into_iter().collect::<Vec<_>>(),
        ["kafka", "proxy", "tools"]
    );
    assert_eq!(
        p.service_closure(&["proxy".to_string()]).unwrap(),
        ["broker", "init", "proxy"]
    );
    let e = p
        .service_closure(&["nope".to_string()])
        .unwrap_err()
        .to_string();
    assert_eq!(e, "unknown service \"nope\" (known: broker, init, proxy)");
}

#[test]
fn later_files_override_earlier_ones_per_key() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(
        dir.path(),
        "base.yaml",
        "services:\n  a:\n    image: one\n    command: [x]\n    environment: [K=base]\n  b:\n    image: b\n",
    );
    let over = write(
        dir.path(),
        "over.yaml",
        "services:\n  a:\n    image: two\n  c:\n    image: c\n    depends_on: [a]\n",
    );
    let p = compose::load(&[base, over], &BTreeMap::new()).unwrap();
    assert_eq!(p.services["a"].image, "two");
    assert_eq!(p.services["a"].command.as_deref().unwrap(), ["x"]);
    assert_eq!(p.services["a"].environment, ["K=base"]);
    assert_eq!(p.services.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
}

#[test]
fn dependency_cycles_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "x.yaml",
        "services:\n  a:\n    image: i\n    depends_on: [b]\n  b:\n    image: i\n    depends_on: [a]\n",
    );
    let p = compose::load(&[f], &BTreeMap::new()).unwrap();
    let e = p
        .service_closure(&["a".to_string()])
        .unwrap_err()
        .to_string();
    assert_eq!(e, "dependency cycle: a -> b -> a");
}
