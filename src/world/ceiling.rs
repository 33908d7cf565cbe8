//! The network's own ceiling (`NETWORK_CEILING`): before a scenario is measured, iperf3 sends
//! TCP traffic over the run's network from where the load generator runs to the scenario's
//! endpoint service, and from that service to the broker when they differ (a proxy), so each
//! rate can be read against what the network it crossed allows (as the reference measured its
//! cluster network before any Kafka figure).
//!
//! The server runs in the receiving service's own network namespace (`container:<id>`), so the
//! traffic crosses that container's interface, not a stand-in's; the client runs in the sending
//! service's namespace, or for the load generator as a container on the run's network with the
//! load generator's CPUs. On a swarm each end runs through the engine of its node (the load
//! generator's on the load node), so a hop between nodes crosses the network between them.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::model::NetworkCeiling;
use crate::world::engine::{Engine, OneOff};
use crate::world::images::recipe::{DebianRecipe, ImageRecipe, Recipe};

/// The iperf3 image, made here from Debian's package like any `debian:` recipe.
pub const IMAGE: &str = "perf-tests/iperf3:3";
/// Where the load generator sends from, in a ceiling's `from`.
pub(crate) const LOAD_GENERATOR: &str = "load generator";
/// Seconds of traffic per pair (after one second left out while TCP's window opens).
const SECONDS: u32 = 2;
const PORT: &str = "5201";
/// How long the server may take to listen.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(20);

/// The recipe of [`IMAGE`]; every run that measures the ceiling needs it, whatever its suite.
pub fn recipe() -> ImageRecipe {
    ImageRecipe {
        image: IMAGE.to_string(),
        recipe: Recipe::Debian(DebianRecipe {
            package: "iperf3".to_string(),
            bin: "/usr/bin/iperf3".into(),
        }),
    }
}

/// One hop of a scenario's path, by service names: the sender (`None`: the load generator's
/// place), the receiver, and the host name the sender reaches it by (its alias on the network).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    pub from: Option<String>,
    pub to: String,
    pub host: String,
}

impl Hop {
    /// Who sends: the service, or the load generator's place.
    pub(crate) fn sender(&self) -> &str {
        self.from.as_deref().unwrap_or(LOAD_GENERATOR)
    }

    /// The hop with its services' containers (`container_of` a service), ready to measure;
    /// `None` when a service of it has no container in the run.
    pub(crate) fn with_containers(
        &self,
        container_of: impl Fn(&str) -> Option<String>,
    ) -> Option<Pair> {
        let from_container = match &self.from {
            Some(service) => Some(container_of(service)?),
            None => None,
        };
        Some(Pair {
            to_container: container_of(&self.to)?,
            from_container,
            hop: self.clone(),
        })
    }
}

/// A hop with its services' containers, ready to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    pub hop: Hop,
    /// The sending service's container, `None` for the load generator's place.
    pub from_container: Option<String>,
    pub to_container: String,
}

/// The host part of a `host:port` endpoint.
pub(crate) fn host(endpoint: &str) -> &str {
    endpoint
        .rsplit_once(':')
        .map(|(h, _)| h)
        .unwrap_or(endpoint)
}

/// The engines a pair is measured through: the receiver's and the sender's (on a swarm, the
/// engines of the nodes they run on; the same engine otherwise).
pub struct Ends<'a> {
    pub server: &'a Engine,
    pub client: &'a Engine,
}

/// Measures `pair` on `network` through `ends`; the load generator's position runs on `cpuset`.
/// On a swarm the ceiling names the nodes of both ends.
pub async fn measure(
    ends: Ends<'_>,
    network: &str,
    cpuset: Option<String>,
    pair: &Pair,
) -> Result<NetworkCeiling> {
    let (from, to) = (pair.hop.sender(), pair.hop.to.as_str());
    let what = format!("the network ceiling from {from} to {to}");
    let Ends {
        server: engine,
        client,
    } = ends;
    let server = engine
        .start_detached(OneOff {
            image: IMAGE.to_string(),
            // Flushed at once, so its "listening" line is in its log when it listens.
            cmd: ["-s", "-1", "-p", PORT, "--forceflush"]
                .map(String::from)
                .to_vec(),
            // iperf3 keeps its send buffer in a temporary file; the image has no /tmp.
            env: vec!["TMPDIR=/".to_string()],
            network: Some(format!("container:{}", pair.to_container)),
            name_hint: "network-ceiling-server".to_string(),
            ..Default::default()
        })
        .await
        .with_context(|| format!("starting the iperf3 server for {what}"))?;
    let result = async {
        wait_listening(engine, &server).await?;
        let out = client
            .run_oneoff(iperf_client(pair, network, cpuset), |_| {})
            .await?;
        parse(&out.stdout, from, to).with_context(|| {
            format!(
                "iperf3 exited with {}{}",
                out.exit_code,
                Some(out.stderr.trim())
                    .filter(|e| !e.is_empty())
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            )
        })
    }
    .await;
    let removed = engine.remove_container(&server).await;
    let ceiling = result.with_context(|| format!("measuring {what}"))?;
    removed.with_context(|| format!("removing the iperf3 server of {what}"))?;
    Ok(NetworkCeiling {
        from_node: client.node().map(String::from),
        to_node: engine.node().map(String::from),
        ..ceiling
    })
}

/// The iperf3 client of `pair`: from the sending service's container, or for the load
/// generator's position on `network` and its `cpuset`; JSON out, the first second left out.
fn iperf_client(pair: &Pair, network: &str, cpuset: Option<String>) -> OneOff {
    OneOff {
        image: IMAGE.to_string(),
        cmd: [
            "-c",
            &pair.hop.host,
            "-p",
            PORT,
            "-t",
            &SECONDS.to_string(),
            "-O",
            "1",
            "-J",
        ]
        .map(String::from)
        .to_vec(),
        env: vec!["TMPDIR=/".to_string()],
        network: Some(match &pair.from_container {
            Some(id) => format!("container:{id}"),
            None => network.to_string(),
        }),
        name_hint: "network-ceiling-client".to_string(),
        cpuset: if pair.from_container.is_none() {
            cpuset
        } else {
            None
        },
        ..Default::default()
    }
}

/// Waits for the server's own "listening" line, so the client never races its start; a server
/// that ended instead (it could not listen) is an error quoting it at once.
async fn wait_listening(engine: &Engine, server: &str) -> Result<()> {
    let start = Instant::now();
    loop {
        let running = engine.is_running(server).await?;
        let logs = engine.container_logs(server, 20).await?;
        if logs.contains("Server listening") {
            return Ok(());
        }
        if !running {
            bail!("the iperf3 server ended: {:?}", logs.trim());
        }
        if start.elapsed() > LISTEN_TIMEOUT {
            bail!(
                "the iperf3 server did not listen within {} s; its output: {:?}",
                LISTEN_TIMEOUT.as_secs(),
                logs.trim()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[derive(Deserialize)]
struct Report {
    error: Option<String>,
    end: Option<End>,
}

#[derive(Deserialize)]
struct End {
    sum_received: Sum,
    sum_sent: Option<Sent>,
    #[serde(default)]
    streams: Vec<Stream>,
}

#[derive(Deserialize)]
struct Sum {
    bits_per_second: f64,
    seconds: f64,
}

#[derive(Deserialize)]
struct Sent {
    retransmits: Option<u64>,
}

#[derive(Deserialize)]
struct Stream {
    sender: StreamSender,
}

#[derive(Deserialize)]
struct StreamSender {
    /// Microseconds, from the kernel's TCP info (Linux).
    mean_rtt: Option<f64>,
}

/// Reads iperf3's JSON report (`-J`) as the ceiling from `from` to `to`: what the receiver got,
/// the sender's mean round-trip time and retransmissions.
pub(crate) fn parse(json: &str, from: &str, to: &str) -> Result<NetworkCeiling> {
    let report: Report = serde_json::from_str(json.trim()).with_context(|| {
        format!(
            "iperf3 printed no JSON report: {:?}",
            json.chars().take(300).collect::<String>()
        )
    })?;
    if let Some(e) = report.error {
        bail!("iperf3: {e}");
    }
    let end = report.end.context("iperf3's report has no `end` section")?;
    let received = end.sum_received.bits_per_second;
    if received.is_nan() || received <= 0.0 {
        bail!("iperf3 received nothing");
    }
    let rtts: Vec<f64> = end
        .streams
        .iter()
        .filter_map(|s| s.sender.mean_rtt)
        .collect();
    Ok(NetworkCeiling {
        from: from.to_string(),
        to: to.to_string(),
        from_node: None,
        to_node: None,
        mib_s: end.sum_received.bits_per_second / 8.0 / (1024.0 * 1024.0),
        rtt_ms: (!rtts.is_empty()).then(|| rtts.iter().sum::<f64>() / rtts.len() as f64 / 1000.0),
        retransmits: end.sum_sent.and_then(|s| s.retransmits),
        seconds: end.sum_received.seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = r#"{"start": {}, "intervals": [],
        "end": {"streams": [{"sender": {"mean_rtt": 250, "bits_per_second": 1}}],
                "sum_sent": {"bits_per_second": 8.5e9, "retransmits": 3, "seconds": 2.0},
                "sum_received": {"bits_per_second": 8388608000, "seconds": 2.0}}}"#;

    #[test]
    fn a_report_gives_the_received_rate_the_round_trip_and_the_retransmissions() {
        let c = parse(REPORT, LOAD_GENERATOR, "broker1").unwrap();
        assert_eq!(
            (c.from.as_str(), c.to.as_str()),
            (LOAD_GENERATOR, "broker1")
        );
        assert!((c.mib_s - 1000.0).abs() < 1e-9, "{}", c.mib_s);
        assert_eq!(c.rtt_ms, Some(0.25));
        assert_eq!((c.retransmits, c.seconds), (Some(3), 2.0));
    }

    #[test]
    fn iperf3s_own_error_is_quoted_and_an_empty_transfer_refused() {
        let err = parse(
            r#"{"start": {}, "error": "unable to connect to server: Connection refused"}"#,
            "proxy",
            "broker1",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("unable to connect to server"), "{err}");
        let none = REPORT.replace("8388608000", "0");
        assert!(parse(&none, "proxy", "broker1").is_err());
        let err = parse("iperf3: parameter error", "proxy", "b").unwrap_err();
        assert!(format!("{err:#}").contains("parameter error"), "{err:#}");
    }

    #[test]
    fn a_hop_is_measured_only_when_each_of_its_services_has_a_container() {
        let container_of = |s: &str| (s != "gone").then(|| format!("c-{s}"));
        let hop = |from: Option<&str>, to: &str| Hop {
            from: from.map(String::from),
            to: to.into(),
            host: "h".into(),
        };
        let pair = hop(Some("proxy"), "broker")
            .with_containers(container_of)
            .unwrap();
        assert_eq!(
            (pair.from_container.as_deref(), pair.to_container.as_str()),
            (Some("c-proxy"), "c-broker")
        );
        assert_eq!(pair.hop.sender(), "proxy");
        let load = hop(None, "proxy").with_containers(container_of).unwrap();
        assert_eq!(
            (load.from_container, load.hop.sender()),
            (None, LOAD_GENERATOR)
        );
        assert!(hop(Some("gone"), "broker")
            .with_containers(container_of)
            .is_none());
        assert!(hop(None, "gone").with_containers(container_of).is_none());
    }

    #[test]
    fn the_host_of_an_endpoint_is_its_service_name() {
        assert_eq!(host("proxy:9192"), "proxy");
        assert_eq!(host("broker1"), "broker1");
    }
}
