//! A container's cumulative counters (CPU time, network bytes) and its host's CPU clock, as
//! read at one moment (`crate::world::engine` reads them), and what grew between two readings: the
//! cost accounting (`crate::accounting::cost`) takes the difference at the edges of each measured phase.

/// Cumulative counters of one container since it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Counters {
    /// CPU time of every process in the container (user + system), in nanoseconds: the
    /// cgroup's own counter (`cpuacct.usage` on cgroup v1, `cpu.stat` on v2).
    pub cpu_ns: u64,
    /// Bytes received over every network interface.
    pub rx_bytes: u64,
    /// Bytes sent over every network interface.
    pub tx_bytes: u64,
    /// The container's host's CPU clock at the reading; `None` when the engine gave none.
    pub host: Option<HostClock>,
}

/// A host's CPU time at one moment, as the engine's stats document gives it: its
/// `system_cpu_usage` sums the first seven fields of the host's `/proc/stat` (user, nice,
/// system, idle, iowait, irq, softirq), all but what the hypervisor stole (`steal`). The stolen
/// share of an interval is what that sum lacks of the CPUs' wall time: a lower bound of the
/// kernel's own `steal` counter, which also counts the wait of an idle vCPU woken by an interrupt
/// that `idle` counts too (so the fields together pass the wall time on a busy host). It needs
/// no command in any container, and each container's document speaks of the host it runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HostClock {
    /// When the engine read the document, in Unix nanoseconds.
    pub at_ns: i64,
    /// The host's CPU time but steal, in nanoseconds since boot.
    pub unstolen_ns: u64,
    /// The host's online CPUs.
    pub cpus: u32,
}

impl HostClock {
    /// Shortest interval whose stolen share is given: the kernel counts in ticks of 10 ms per CPU
    /// and the read moment is the engine's, so a shorter span is mostly rounding.
    pub(crate) const MIN_SPAN_NS: i64 = 1_000_000_000;

    /// The share of the host's CPU time stolen from `earlier` to `self`, in percent; `None`
    /// over too short a span or when the CPUs changed meanwhile.
    pub(crate) fn stolen_percent_since(&self, earlier: &HostClock) -> Option<f64> {
        let span = self.at_ns - earlier.at_ns;
        if span < Self::MIN_SPAN_NS || self.cpus != earlier.cpus || self.cpus == 0 {
            return None;
        }
        let wall = span as f64 * f64::from(self.cpus);
        let unstolen = self.unstolen_ns.saturating_sub(earlier.unstolen_ns) as f64;
        Some(((1.0 - unstolen / wall) * 100.0).clamp(0.0, 100.0))
    }
}

/// What a container used between two readings, and the share of its host's CPU stolen meanwhile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Usage {
    pub cpu_ns: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub stolen_percent: Option<f64>,
}

impl Counters {
    /// What grew from `earlier` to `self` (a counter never goes back while the container runs).
    pub(crate) fn since(&self, earlier: &Counters) -> Usage {
        Usage {
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
            rx_bytes: self.rx_bytes.saturating_sub(earlier.rx_bytes),
            tx_bytes: self.tx_bytes.saturating_sub(earlier.tx_bytes),
            stolen_percent: match (&self.host, &earlier.host) {
                (Some(now), Some(then)) => now.stolen_percent_since(then),
                _ => None,
            },
        }
    }
}
