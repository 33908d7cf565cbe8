//! A real Kafka-compatible broker for tests: Tansu 0.6.0 with in-memory storage, run as a host
//! process on a free loopback port and killed when the handle is dropped.

#![allow(dead_code)]

use std::io::Read;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Where the offline suite's Tansu recipe puts the broker binary (`perf-tests images build`).
pub fn default_tansu_bin() -> PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let suite = perf_tests::scenario::Suite::load(&root.join("scenarios/offline")).unwrap();
    perf_tests::images::recipe::parse_recipes(&suite.images_file, &suite.images)
        .unwrap()
        .into_iter()
        .find(|r| r.image.starts_with("perf-tests/tansu:"))
        .expect("the offline suite has a Tansu recipe")
        .binary_path()
}

/// The broker binary (`TANSU_BIN`, else the recipe's); a missing one fails the test with the
/// way to build it.
pub fn tansu_bin() -> PathBuf {
    let path = std::env::var_os("TANSU_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(default_tansu_bin);
    assert!(
        path.is_file(),
        "Tansu broker binary not found at {} (set TANSU_BIN or build it with \
         `perf-tests images build`)",
        path.display()
    );
    path
}

/// A free TCP port on 127.0.0.1 (free when asked; the broker binds it right after).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("binding an ephemeral loopback port")
        .port()
}

/// A running broker.
pub struct Broker {
    child: Child,
    /// host:port clients connect to (also what the broker advertises).
    pub bootstrap: String,
    log: tempfile::NamedTempFile,
}

impl Broker {
    /// Starts a broker and waits until it answers a metadata request.
    pub async fn start() -> Broker {
        let bin = tansu_bin();
        let port = free_port();
        let url = format!("tcp://127.0.0.1:{port}");
        let log = tempfile::NamedTempFile::new().expect("creating the broker log file");
        let child = Command::new(&bin)
            .arg("broker")
            .args(["--listener-url", &url])
            .args(["--advertised-listener-url", &url])
            .args(["--storage-engine", "memory://tansu/"])
            .env_remove("STORAGE_ENGINE")
            .env_remove("LISTENER_URL")
            .env_remove("ADVERTISED_LISTENER_URL")
            .stdin(Stdio::null())
            .stdout(log.reopen().expect("broker log"))
            .stderr(log.reopen().expect("broker log"))
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        let mut broker = Broker {
            child,
            bootstrap: format!("127.0.0.1:{port}"),
            log,
        };
        let ready =
            perf_tests::workload::probe(&broker.bootstrap, &[], Duration::from_secs(30)).await;
        if let Err(e) = ready {
            let exited = broker.child.try_wait().ok().flatten();
            panic!(
                "broker at {} not ready (process exit: {exited:?}): {e:#}\nbroker log:\n{}",
                broker.bootstrap,
                broker.log_text()
            );
        }
        broker
    }

    /// The broker's output so far.
    pub fn log_text(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = self.log.reopen() {
            let _ = f.read_to_string(&mut text);
        }
        text
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
