//! A container's cumulative counters (CPU time, network bytes), read at one moment: the cost
//! accounting reads them at the edges of each measured phase and takes the difference, so the
//! figures cover exactly that phase, not the one-second samples around it. The same document
//! carries its host's CPU time apart from what the hypervisor stole, from which the share of the
//! host's CPU stolen over a phase follows (see [`HostClock`]).

use anyhow::{Context, Result};
use bollard::models::ContainerStatsResponse;
use bollard::query_parameters::StatsOptionsBuilder;
use futures_util::StreamExt;

use super::Engine;
use crate::accounting::counters::{parse_proc, Clock, Counters, HostClock};

impl Engine {
    /// `container`'s stats documents as the engine streams them, one a second, until it stops.
    pub(crate) fn stats(
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

    /// Reads `container`'s counters now by running `reader` in it (a command that prints what
    /// [`parse_proc`] reads: its shell running [`struct@crate::accounting::counters::SCRIPT`], or this
    /// executable's `workload counters`), with the threads' stat lines it printed. Through the
    /// engine's stats document when the command cannot run there (no shell in the image), which
    /// answers at its collector's next one-second tick.
    pub(crate) async fn counters_by(
        &self,
        container: &str,
        reader: &[String],
    ) -> Result<(Counters, Option<String>)> {
        // Its exit code is not asked: a process that ends while its threads are listed makes
        // `cat` fail, and what was printed is still whole.
        if let Ok(out) = self.exec_in(container, reader).await {
            if let Ok((counters, threads)) = parse_proc(&out.stdout) {
                return Ok((counters, threads.map(str::to_string)));
            }
        }
        Ok((self.counters(container).await?, None))
    }

    /// Reads `container`'s counters now: one stats document, asked for without the engine's
    /// wait for a previous sample (`one-shot`); it still comes at the collector's next tick.
    async fn counters(&self, container: &str) -> Result<Counters> {
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
            host: host_clock(&stats),
        })
    }
}

/// The host's CPU clock in one stats document; `None` when a field is missing (an engine on
/// another OS) or its time cannot be read.
pub(crate) fn host_clock(stats: &ContainerStatsResponse) -> Option<HostClock> {
    let cpu = stats.cpu_stats.as_ref()?;
    let at = chrono::DateTime::parse_from_rfc3339(stats.read.as_deref()?).ok()?;
    Some(HostClock {
        at_ns: at.timestamp_nanos_opt()?,
        unstolen_ns: cpu.system_cpu_usage?,
        cpus: cpu.online_cpus?,
        clock: Clock::Engine,
    })
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
    use crate::accounting::counters::Usage;

    #[test]
    fn a_difference_is_what_grew() {
        let a = Counters {
            cpu_ns: 10,
            rx_bytes: 100,
            tx_bytes: 1000,
            host: None,
        };
        let b = Counters {
            cpu_ns: 25,
            rx_bytes: 150,
            tx_bytes: 1000,
            host: None,
        };
        assert_eq!(
            b.since(&a),
            Usage {
                cpu_ns: 15,
                rx_bytes: 50,
                tx_bytes: 0,
                stolen_percent: None,
            }
        );
        assert_eq!(a.since(&b).cpu_ns, 0);
    }

    #[test]
    fn the_stolen_share_is_what_the_host_s_clock_lacks_of_its_cpus_wall_time() {
        let clock = |s: i64, unstolen_s: u64, cpus| HostClock {
            at_ns: s * 1_000_000_000,
            unstolen_ns: unstolen_s * 1_000_000_000,
            cpus,
            clock: Clock::Engine,
        };
        // 10 s on 2 CPUs is 20 CPU seconds, of which 15 were the host's own: a quarter stolen.
        let steal = clock(110, 1015, 2).stolen_percent_since(&clock(100, 1000, 2));
        assert_eq!(steal, Some(25.0));
        // Nothing stolen; rounding past the wall time is no negative steal.
        assert_eq!(
            clock(110, 1021, 2).stolen_percent_since(&clock(100, 1000, 2)),
            Some(0.0)
        );
        // Under a second, or with the CPUs changed, there is no figure.
        let near = HostClock {
            at_ns: 100_500_000_000,
            ..clock(100, 1001, 2)
        };
        assert_eq!(near.stolen_percent_since(&clock(100, 1000, 2)), None);
        assert_eq!(
            clock(110, 1015, 4).stolen_percent_since(&clock(100, 1000, 2)),
            None
        );
        // Two clocks are not compared: the kernel's moment is whole seconds off the engine's.
        let kernel = HostClock {
            clock: Clock::Kernel,
            ..clock(110, 1015, 2)
        };
        assert_eq!(kernel.stolen_percent_since(&clock(100, 1000, 2)), None);
        // Counters carry it through their difference.
        let reading = |host| Counters {
            cpu_ns: 0,
            rx_bytes: 0,
            tx_bytes: 0,
            host,
        };
        let u = reading(Some(clock(110, 1015, 2))).since(&reading(Some(clock(100, 1000, 2))));
        assert_eq!(u.stolen_percent, Some(25.0));
        assert_eq!(
            reading(None)
                .since(&reading(Some(clock(100, 1000, 2))))
                .stolen_percent,
            None
        );
    }

    #[test]
    fn a_stats_document_gives_its_host_s_clock() {
        let stats: ContainerStatsResponse = serde_json::from_str(
            r#"{"read":"2026-12-03T17:46:44.544701957Z",
                "cpu_stats":{"system_cpu_usage":23127770000000,"online_cpus":2}}"#,
        )
        .unwrap();
        let c = host_clock(&stats).unwrap();
        assert_eq!(c.unstolen_ns, 23_127_770_000_000);
        assert_eq!(c.cpus, 2);
        assert_eq!(c.at_ns % 1_000_000_000, 544_701_957);
        // No time read, no clock.
        let bare: ContainerStatsResponse =
            serde_json::from_str(r#"{"cpu_stats":{"system_cpu_usage":1,"online_cpus":2}}"#)
                .unwrap();
        assert_eq!(host_clock(&bare), None);
    }
}
