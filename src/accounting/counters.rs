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
    /// The container's host's CPU clock at the reading; `None` when the reading gave none.
    pub host: Option<HostClock>,
}

/// A host's CPU time at one moment: the sum of the first seven fields of the host's `/proc/stat`
/// (user, nice, system, idle, iowait, irq, softirq; the engine's `system_cpu_usage` is the same
/// sum), all but what the hypervisor stole (`steal`). The stolen share of an interval is what
/// that sum lacks of the CPUs' wall time: a lower bound of the kernel's own `steal` counter,
/// which also counts the wait of an idle vCPU woken by an interrupt that `idle` counts too (so
/// the fields together pass the wall time on a busy host). Each container's reading speaks of
/// the host it runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HostClock {
    /// When the counters were read, in Unix nanoseconds.
    pub at_ns: i64,
    /// The host's CPU time but steal, in nanoseconds since boot.
    pub unstolen_ns: u64,
    /// The host's online CPUs.
    pub cpus: u32,
    /// Whose clock `at_ns` is: two readings are compared on the same one only.
    pub clock: Clock,
}

/// Whose clock gave a reading's moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clock {
    /// The engine's, when it read its stats document.
    Engine,
    /// The kernel's, from inside the container: the boot time (`btime`, whole seconds, the same
    /// for every reading on that host) plus `/proc/uptime` (hundredths).
    Kernel,
}

impl HostClock {
    /// Shortest interval whose stolen share is given: the kernel counts in ticks of 10 ms per CPU
    /// and the read moment is the engine's, so a shorter span is mostly rounding.
    pub(crate) const MIN_SPAN_NS: i64 = 1_000_000_000;

    /// The share of the host's CPU time stolen from `earlier` to `self`, in percent; `None`
    /// over too short a span or when the CPUs changed meanwhile.
    pub(crate) fn stolen_percent_since(&self, earlier: &HostClock) -> Option<f64> {
        let span = self.at_ns - earlier.at_ns;
        if span < Self::MIN_SPAN_NS
            || self.cpus != earlier.cpus
            || self.cpus == 0
            || self.clock != earlier.clock
        {
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

/// Where the cgroup's CPU counter is, first found first: cgroup v2's `cpu.stat`
/// (`usage_usec`), then v1's `cpuacct.usage` (nanoseconds) under either mount name.
const CPU_FILES: [&str; 3] = [
    "/sys/fs/cgroup/cpu.stat",
    "/sys/fs/cgroup/cpuacct/cpuacct.usage",
    "/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage",
];

/// The sections after the CPU counter, each a marker line and a file: the network's bytes,
/// then the host's CPU clock.
const FILES: [(&str, &str); 3] = [
    ("@net", "/proc/net/dev"),
    ("@stat", "/proc/stat"),
    ("@uptime", "/proc/uptime"),
];

/// The shell script (a `sh` and `cat`, as busybox gives them) that prints a container's counters
/// from inside it, for [`parse_proc`]: what [`proc_text`] prints, then the threads' stat lines
/// (for a JVM's compiler and GC threads). One exec, answered at once, where the engine's stats
/// document waits for its collector's next one-second tick. The exec's own few milliseconds of
/// CPU land in the container's counter.
pub(crate) static SCRIPT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let mut script = format!(
        "for f in {}; do if [ -r $f ]; then echo \"@cpu $f\"; cat $f; break; fi; done; ",
        CPU_FILES.join(" ")
    );
    for (marker, file) in FILES {
        script.push_str(&format!("echo {marker}; cat {file}; "));
    }
    script.push_str("echo @threads; cat /proc/[0-9]*/task/[0-9]*/stat 2>/dev/null");
    script
});

/// What [`SCRIPT`] prints but the threads, made by reading the files with `read` (for a
/// container with no shell: the load generator's, which has this executable alone).
pub(crate) fn proc_text(read: impl Fn(&str) -> Option<String>) -> String {
    let mut text = String::new();
    if let Some((path, counter)) = CPU_FILES.iter().find_map(|p| Some((p, read(p)?))) {
        text.push_str(&format!("@cpu {path}\n{counter}"));
    }
    for (marker, file) in FILES {
        text.push_str(&format!("{marker}\n{}", read(file).unwrap_or_default()));
    }
    text
}

/// A container's counters as [`SCRIPT`] (or [`proc_text`]) printed them, with the threads'
/// stat lines when it printed them; an error names what is missing.
pub(crate) fn parse_proc(text: &str) -> Result<(Counters, Option<&str>), String> {
    // Each section starts at a line of its own that starts with `@` (no line of /proc's files
    // does: a thread's stat line starts with its id).
    let mut sections: Vec<(&str, &str)> = Vec::new();
    let mut at = 0;
    let mut open: Option<(&str, usize)> = None;
    for line in text.split_inclusive('\n') {
        if let Some(head) = line.strip_prefix('@') {
            if let Some((name, from)) = open {
                sections.push((name, &text[from..at]));
            }
            open = Some((head.trim_end(), at + line.len()));
        }
        at += line.len();
    }
    if let Some((name, from)) = open {
        sections.push((name, &text[from..]));
    }
    let section = |name: &str| {
        sections
            .iter()
            .find(|(head, _)| head.split(' ').next() == Some(name))
            .copied()
    };
    let (cpu_head, cpu_body) = section("cpu").ok_or("no cgroup CPU counter")?;
    let cpu_ns = if cpu_head.ends_with("cpu.stat") {
        cpu_body
            .lines()
            .find_map(|l| l.strip_prefix("usage_usec "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|us| us * 1000)
    } else {
        cpu_body.trim().parse::<u64>().ok()
    }
    .ok_or_else(|| format!("no CPU time in {}", cpu_head.trim_start_matches("cpu ")))?;
    let (_, net) = section("net").ok_or("no network counters")?;
    let (rx_bytes, tx_bytes) = net
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(iface, _)| iface.trim() != "lo")
        .filter_map(|(_, fields)| {
            let f: Vec<u64> = fields
                .split_whitespace()
                .map(|x| x.parse().ok())
                .collect::<Option<_>>()?;
            Some((*f.first()?, *f.get(8)?))
        })
        .fold((0, 0), |(rx, tx), (r, t)| (rx + r, tx + t));
    let host = section("stat")
        .zip(section("uptime"))
        .and_then(|((_, stat), (_, up))| host_clock_of(stat, up));
    let threads = section("threads").map(|(_, t)| t);
    Ok((
        Counters {
            cpu_ns,
            rx_bytes,
            tx_bytes,
            host,
        },
        threads,
    ))
}

/// The host's CPU clock in `/proc/stat` and `/proc/uptime` (the engine's `system_cpu_usage`
/// and `online_cpus`, counted as the engine counts them: the first seven fields of the `cpu`
/// line at `USER_HZ`, and the `cpuN` lines).
fn host_clock_of(stat: &str, uptime: &str) -> Option<HostClock> {
    const NS_PER_TICK: u64 = 10_000_000;
    let total = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: u64 = total
        .split_whitespace()
        .skip(1)
        .take(7)
        .map(|f| f.parse::<u64>().ok())
        .sum::<Option<u64>>()?;
    let cpus = stat
        .lines()
        .filter(|l| {
            l.strip_prefix("cpu")
                .is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count();
    let btime: i64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // Hundredths of a second since boot, read as an integer so no float rounds them.
    let (whole, hundredths) = uptime.split_whitespace().next()?.split_once('.')?;
    let up_ns = whole.parse::<i64>().ok()? * 1_000_000_000
        + format!("{hundredths:0<2}")[..2].parse::<i64>().ok()? * 10_000_000;
    Some(HostClock {
        at_ns: btime * 1_000_000_000 + up_ns,
        unstolen_ns: ticks * NS_PER_TICK,
        cpus: u32::try_from(cpus).ok().filter(|&c| c > 0)?,
        clock: Clock::Kernel,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NET: &str = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     500       5    0    0    0     0          0         0      500       5    0    0    0     0       0          0
  eth0: 1000000     700    0    0    0     0          0         0   250000     300    0    0    0     0       0          0
  eth1:    2000      20    0    0    0     0          0         0      100       1    0    0    0     0       0          0
";
    const STAT: &str = "cpu  100 1 50 800 10 0 5 40 0 0
cpu0 50 1 25 400 5 0 3 20 0 0
cpu1 50 0 25 400 5 0 2 20 0 0
intr 12345
btime 1796615895
";

    #[test]
    fn cgroup_v1_counts_the_network_but_loopback_and_the_host_s_clock() {
        let text = format!(
            "@cpu /sys/fs/cgroup/cpuacct/cpuacct.usage\n33253660\n@net\n{NET}@stat\n{STAT}\
             @uptime\n30474.89 19845.65\n@threads\n7 (java) S 1\n8 (VM Thread) S 1\n"
        );
        let (c, threads) = parse_proc(&text).unwrap();
        assert_eq!(c.cpu_ns, 33_253_660);
        assert_eq!((c.rx_bytes, c.tx_bytes), (1_002_000, 250_100));
        let host = c.host.unwrap();
        // user..softirq: 100 + 1 + 50 + 800 + 10 + 0 + 5 ticks of 10 ms; steal (40) left out.
        assert_eq!(host.unstolen_ns, 966 * 10_000_000);
        assert_eq!(host.cpus, 2);
        assert_eq!(host.at_ns, 1_796_615_895_000_000_000 + 30_474_890_000_000);
        assert_eq!(host.clock, Clock::Kernel);
        assert_eq!(threads, Some("7 (java) S 1\n8 (VM Thread) S 1\n"));
    }

    #[test]
    fn cgroup_v2_counts_microseconds_and_a_missing_counter_is_named() {
        let text = format!(
            "@cpu /sys/fs/cgroup/cpu.stat\nusage_usec 1500\nuser_usec 1000\n@net\n{NET}@stat\n\
             {STAT}@uptime\n12.5 3.00\n"
        );
        let (c, threads) = parse_proc(&text).unwrap();
        assert_eq!(c.cpu_ns, 1_500_000);
        assert_eq!(c.host.unwrap().at_ns % 1_000_000_000, 500_000_000);
        assert_eq!(threads, None);
        assert_eq!(
            parse_proc(&format!("@net\n{NET}")).unwrap_err(),
            "no cgroup CPU counter"
        );
        assert_eq!(
            parse_proc("@cpu /sys/fs/cgroup/cpu.stat\nuser_usec 1\n@net\n").unwrap_err(),
            "no CPU time in /sys/fs/cgroup/cpu.stat"
        );
        // No shell: the exec printed nothing of this.
        assert!(parse_proc("").is_err());
    }

    #[test]
    fn the_script_and_this_executable_print_the_same_sections_here() {
        let out = std::process::Command::new("sh")
            .args(["-c", &SCRIPT])
            .output()
            .unwrap();
        let by_shell = String::from_utf8(out.stdout).unwrap();
        let by_rust = proc_text(|p| std::fs::read_to_string(p).ok());
        let heads = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| l.starts_with('@'))
                .map(str::to_string)
                .collect()
        };
        let (shell, rust) = (heads(&by_shell), heads(&by_rust));
        assert_eq!(shell[..shell.len() - 1], rust[..], "{by_shell}");
        assert_eq!(shell.last().map(String::as_str), Some("@threads"));
        let (a, _) = parse_proc(&by_shell).unwrap();
        let (b, _) = parse_proc(&by_rust).unwrap();
        // Read one after the other: the later reading's counters and clock are not behind.
        assert!(b.cpu_ns >= a.cpu_ns && a.cpu_ns > 0, "{a:?} {b:?}");
        let (ha, hb) = (a.host.unwrap(), b.host.unwrap());
        assert!(hb.at_ns >= ha.at_ns && hb.unstolen_ns >= ha.unstolen_ns);
        assert_eq!(ha.cpus, hb.cpus);
    }
}
