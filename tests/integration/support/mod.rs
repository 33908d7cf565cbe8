//! A real broker for tests: the default suite's Apache Kafka image (the one users run), one
//! KRaft node in a container on the host's network listening on free loopback ports, removed
//! when the handle is dropped.

#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The label every test broker carries, so a leftover one can be found by it.
pub const LABEL: &str = "perf-tests-test=broker";

/// The broker image: KAFKA_IMAGE's default (`perf-tests images build` makes it).
pub fn kafka_image() -> String {
    perf_tests::settings::Settings::without_commit().kafka_image
}

/// A free TCP port on 127.0.0.1 (free when asked; the broker binds it right after).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("binding an ephemeral loopback port")
        .port()
}

/// The default suite's broker configuration (`broker1`'s environment, as the suite's plan
/// reads it from compose/kroxylicious.yaml), one combined broker and controller with clients at
/// `host:port` and the controller at `host:controller`; a small heap, since tests send few
/// records.
pub fn kafka_env(host: &str, port: u16, controller: u16) -> Vec<String> {
    let settings = perf_tests::settings::Settings {
        scenarios: std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/kroxylicious"),
        ..perf_tests::settings::Settings::without_commit()
    };
    let plan = perf_tests::plan::plan(&settings, "test-broker").expect("the default suite plans");
    let ours = [
        format!("KAFKA_LISTENERS=PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller}"),
        format!("KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://{host}:{port}"),
        format!("KAFKA_CONTROLLER_QUORUM_VOTERS=1@{host}:{controller}"),
        // No listener of its own for replication: a broker alone has none.
        "KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT".to_string(),
        "KAFKA_HEAP_OPTS=-Xmx256m -Xms256m".to_string(),
    ];
    let name = |var: &str| var.split('=').next().unwrap_or_default().to_string();
    let overridden: Vec<String> = ours.iter().map(|v| name(v)).collect();
    let mut vars: Vec<String> = plan.project.services["broker1"]
        .environment
        .iter()
        .filter(|v| !overridden.contains(&name(v)))
        .cloned()
        .collect();
    vars.extend(ours);
    vars
}

/// A running broker.
pub struct Broker {
    container: String,
    /// host:port clients connect to (also what the broker advertises).
    pub bootstrap: String,
}

impl Broker {
    /// Starts a broker and waits until it answers a metadata request. Its ports are free when
    /// chosen but not held until the broker binds them, so another process on the host may
    /// take one in between: a broker that exits saying its address is in use is started again
    /// on other ports; any other exit fails at once with its log.
    pub async fn start() -> Broker {
        const ATTEMPTS: u32 = 3;
        for attempt in 1..=ATTEMPTS {
            let broker = Broker::launch();
            let probe =
                perf_tests::workload::probe(&broker.bootstrap, &[], Duration::from_secs(90));
            let why = tokio::select! {
                ready = probe => match ready {
                    Ok(()) => return broker,
                    Err(e) => format!("{e:#}"),
                },
                _ = broker.exited() => {
                    let log = broker.log_text();
                    if attempt < ATTEMPTS && log.contains("Address already in use") {
                        eprintln!(
                            "broker at {} lost a port to another process; starting it again",
                            broker.bootstrap
                        );
                        continue;
                    }
                    "its container exited".to_string()
                }
            };
            panic!(
                "broker at {} not ready: {why}\nbroker log:\n{}",
                broker.bootstrap,
                broker.log_text()
            );
        }
        unreachable!("the last attempt returns or panics")
    }

    /// Creates the broker's container on fresh ports, without waiting for it. It is not
    /// started with --rm, so an early exit leaves its log to read; Drop removes it.
    fn launch() -> Broker {
        let image = kafka_image();
        let port = free_port();
        let controller = loop {
            let p = free_port();
            if p != port {
                break p;
            }
        };
        let container = format!("perf-tests-test-broker-{}-{port}", std::process::id());
        let mut cmd = Command::new("docker");
        cmd.args(["run", "--detach", "--network", "host"])
            .args(["--name", &container, "--label", LABEL]);
        for var in kafka_env("127.0.0.1", port, controller) {
            cmd.args(["--env", &var]);
        }
        let out = cmd
            .arg(&image)
            .stdin(Stdio::null())
            .output()
            .expect("running the docker CLI");
        assert!(
            out.status.success(),
            "starting a broker from {image} (`perf-tests images build` makes it): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Broker {
            container,
            bootstrap: format!("127.0.0.1:{port}"),
        }
    }

    /// Returns once the broker's container has exited (`docker wait` blocks until it does);
    /// never, if the engine cannot be asked.
    async fn exited(&self) {
        let waited = tokio::process::Command::new("docker")
            .args(["wait", &self.container])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .status()
            .await;
        if !waited.is_ok_and(|s| s.success()) {
            std::future::pending::<()>().await;
        }
    }

    /// The broker's output so far.
    pub fn log_text(&self) -> String {
        Command::new("docker")
            .args(["logs", &self.container])
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout).into_owned()
                    + &String::from_utf8_lossy(&o.stderr)
            })
            .unwrap_or_default()
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .args(["rm", "--force", &self.container])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
