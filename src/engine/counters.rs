//! A container's cumulative counters (CPU time, network bytes), read at one moment: the cost
//! accounting reads them at the edges of each measured phase and takes the difference, so the
//! figures cover exactly that phase, not the one-second samples around it.

use anyhow::{Context, Result};
use bollard::models::ContainerStatsResponse;
use bollard::query_parameters::StatsOptionsBuilder;
use futures_util::StreamExt;

use super::Engine;

/// Cumulative counters of one container since it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// CPU time of every process in the container (user + system), in nanoseconds: the
    /// cgroup's own counter (`cpuacct.usage` on cgroup v1, `cpu.stat` on v2).
    pub cpu_ns: u64,
    /// Bytes received over every network interface.
    pub rx_bytes: u64,
    /// Bytes sent over every network interface.
    pub tx_bytes: u64,
}

impl Counters {
    /// What grew from `earlier` to `self` (a counter never goes back while the container runs).
    pub fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
            rx_bytes: self.rx_bytes.saturating_sub(earlier.rx_bytes),
            tx_bytes: self.tx_bytes.saturating_sub(earlier.tx_bytes),
        }
    }
}

impl Engine {
    /// `container`'s stats documents as the engine streams them, one a second, until it stops.
    pub fn stats(
        &self,
        container: &str,
    ) -> impl futures_util::Stream<Item = Result<ContainerStatsResponse, bollard::errors::Error>> + Unpin
    {
        let options = StatsOptionsBuilder::default()
            .stream(true)
            .one_shot(false)
            .build();
        self.docker_of(container).stats(container, Some(options))
    }

    /// Reads `container`'s counters now: one stats document, asked for without the engine's
    /// one-second wait for a previous sample (`one-shot`).
    pub async fn counters(&self, container: &str) -> Result<Counters> {
        let options = StatsOptionsBuilder::default()
            .stream(false)
            .one_shot(true)
            .build();
        let stats = self
            .docker_of(container)
            .stats(container, Some(options))
            .next()
            .await
            .with_context(|| format!("no stats from container {container}"))?
            .with_context(|| format!("reading the counters of container {container}"))?;
        let cpu_ns = stats
            .cpu_stats
            .as_ref()
            .and_then(|c| c.cpu_usage.as_ref())
            .and_then(|u| u.total_usage)
            .with_context(|| format!("container {container} reports no CPU counter"))?;
        let (rx_bytes, tx_bytes) = network_bytes(&stats);
        Ok(Counters {
            cpu_ns,
            rx_bytes,
            tx_bytes,
        })
    }
}

/// Bytes received and sent over every network interface, as one stats document counts them.
pub fn network_bytes(stats: &ContainerStatsResponse) -> (u64, u64) {
    stats
        .networks
        .as_ref()
        .map(|nets| {
            nets.values().fold((0, 0), |(rx, tx), n| {
                (rx + n.rx_bytes.unwrap_or(0), tx + n.tx_bytes.unwrap_or(0))
            })
        })
        .unwrap_or((0, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_difference_is_what_grew() {
        let a = Counters {
            cpu_ns: 10,
            rx_bytes: 100,
            tx_bytes: 1000,
        };
        let b = Counters {
            cpu_ns: 25,
            rx_bytes: 150,
            tx_bytes: 1000,
        };
        assert_eq!(
            b.since(&a),
            Counters {
                cpu_ns: 15,
                rx_bytes: 50,
                tx_bytes: 0
            }
        );
        assert_eq!(a.since(&b).cpu_ns, 0);
    }
}
